//! `echo [-neE] [arg ...]`: write arguments to standard output (bash's builtin semantics;
//! like bash's, it has no `--help`). What it writes is [`forkbox_commands::cmd::echo::render`]:
//! one implementation, which launchers without a shell use too.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if io.is_unwritable(1) {
        return super::fail(sh, io, "echo: write error: Bad file descriptor".into(), 1).await;
    }
    // `shopt -s xpg_echo`: escapes are interpreted unless `-E` says otherwise; in POSIX
    // mode too, and no word is an option then.
    let xpg = sh.shopts.on("xpg_echo");
    let c_locale = sh.byte_locale();
    let out = if xpg && sh.opts.posix {
        forkbox_commands::cmd::echo::render_posix_xpg(&args, c_locale)
    } else if xpg {
        let args: Vec<String> = std::iter::once("-e".to_string()).chain(args).collect();
        forkbox_commands::cmd::echo::render_in(&args, c_locale)
    } else {
        forkbox_commands::cmd::echo::render_in(&args, c_locale)
    };
    match io.stdout().write_all(&out).await {
        Ok(()) => Ok(0),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(forkbox_commands::STATUS_BROKEN_PIPE)
        }
        Err(_) => Ok(1),
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn echo_joins_args() {
        let script = "echo a  b 'c  d'";
        let expected = (0, "a b c  d\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn echo_n_no_newline() {
        let script = "echo -n x; echo y";
        let expected = (0, "xy\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn echo_e_escapes() {
        let script = "echo -e 'a\\tb\\nc'; echo -E 'a\\tb'";
        let expected = (0, "a\tb\nc\na\\tb\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn echo_c_stops_output() {
        let script = "echo -e 'a\\cb'; echo z";
        let expected = (0, "az\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn echo_unknown_option_is_text() {
        let script = "echo -x --help -";
        let expected = (0, "-x --help -\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn echo_combined_flags() {
        let script = "echo -ne 'q\\n'";
        let expected = (0, "q\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn echo_no_args() {
        let script = "echo; echo $?";
        let expected = (0, "\n0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

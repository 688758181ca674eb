//! `command [-vV] name [arg ...]`: run a command bypassing shell functions, or say what
//! a name would run.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut i = 0;
    let mut describe = None;
    let mut default_path = false;
    while i < args.len() && args[i].starts_with('-') && args[i] != "-" {
        match args[i].as_str() {
            "--" => {
                i += 1;
                break;
            }
            "--help" => {
                let _ = io
                    .stdout()
                    .write_str("command: command [-pVv] command [arg ...]\n    Run COMMAND with ARGS suppressing shell function lookup, or display\n    information about the specified COMMANDs.\n")
                    .await;
                return Ok(0);
            }
            // Letters together (`-pv`, `-vV`): the last of `-v` and `-V` counts.
            letters => {
                for c in letters[1..].chars() {
                    match c {
                        'v' => describe = Some(false),
                        'V' => describe = Some(true),
                        'p' => default_path = true,
                        c => {
                            let opt = format!("-{c}");
                            return super::invalid_option(sh, io, "command", &opt).await;
                        }
                    }
                }
            }
        }
        i += 1;
    }
    let rest = &args[i..];
    let Some(name) = rest.first() else {
        return Ok(0);
    };
    if let Some(verbose) = describe {
        // `-p`: names are looked up in bash's standard PATH (glibc's `_CS_PATH`).
        let saved =
            default_path.then(|| sh.push_temp_env(&[("PATH".into(), STANDARD_PATH.into())]));
        let status = describe_names(sh, rest, verbose, io).await;
        if let Some(saved) = saved {
            sh.pop_temp_env(saved);
        }
        return status;
    }
    // Functions are bypassed; builtins and commands resolve as anywhere else.
    sh.run_external(name, rest[1..].to_vec(), &[], io).await
}

/// The PATH `command -p` searches: glibc's `confstr(_CS_PATH)`.
const STANDARD_PATH: &str = "/bin:/usr/bin";

/// `command -v`/`-V NAME…`: what each name would run; success when any was found.
async fn describe_names(sh: &mut Shell, rest: &[String], verbose: bool, io: &Fds) -> Exec<i32> {
    let mut status = 1;
    for n in rest {
        match super::type_::resolve(sh, n).await {
            Some((kind, path)) => {
                let line = if verbose {
                    super::type_::verbose(sh, n, kind, &path)
                } else {
                    path
                };
                let _ = io.stdout().write_str(&format!("{line}\n")).await;
                status = 0;
            }
            None => {
                if verbose {
                    super::fail(sh, io, format!("command: {n}: not found"), 1).await?;
                }
            }
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn command_bypasses_function() {
        let script = "echo() { printf 'fn\\n'; }; echo x; command echo y";
        let expected = (0, "fn\ny\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn command_big_v_describes() {
        let script = "f() { :; }; command -V echo; command -V nope; echo $?";
        let expected = (
            0,
            "echo is a shell builtin\n1\n".to_string(),
            "bash: line 1: command: nope: not found\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn command_not_found() {
        let script = "command nope; echo $?";
        let expected = (
            0,
            "127\n".to_string(),
            "bash: line 1: nope: command not found\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn command_without_args() {
        let script = "command; echo $?";
        let expected = (0, "0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

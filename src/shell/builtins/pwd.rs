//! `pwd`: print the name of the current working directory.

use clap::Parser;

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// Print the name of the current working directory.
#[derive(Parser, Debug)]
#[command(name = "pwd", disable_version_flag = true)]
struct Args {
    /// Print the value of $PWD (default unless `set -o physical`).
    #[arg(short = 'L', overrides_with = "physical")]
    logical: bool,
    /// Print the physical directory, without any symbolic links.
    #[arg(short = 'P', overrides_with = "logical")]
    physical: bool,
    /// Operands are ignored, as bash ignores them.
    #[arg(hide = true)]
    _operands: Vec<String>,
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let a: Args = match super::parse(sh, io, "pwd", &args).await {
        Ok(a) => a,
        Err(s) => return Ok(s),
    };
    let mut dir = sh.logical_cwd();
    if a.physical || (sh.opts.physical && !a.logical) {
        // bash keeps a leading `//` here too.
        let double = if sh.cwd_double_slash { "/" } else { "" };
        match sh.fs.canonicalize(&sh.cwd).await {
            Ok(d) => dir = format!("{double}{d}"),
            Err(e) => return super::fail(sh, io, format!("pwd: {e}"), 1).await,
        }
    }
    let _ = io.stdout().write_str(&format!("{dir}\n")).await;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn pwd_prints_cwd() {
        let script = "mkdir -p /a/b; cd /a/b; pwd";
        let expected = (0, "/a/b\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn pwd_logical_vs_physical() {
        let script = "mkdir /r; ln -s /r /l; cd /l; pwd; pwd -L; pwd -P";
        let expected = (0, "/l\n/l\n/r\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

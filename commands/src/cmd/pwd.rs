//! `/usr/bin/pwd`, GNU coreutils' program, what `env pwd`, `xargs pwd` and `find -exec
//! pwd` run (the shell's `pwd` is its builtin): `-P` (the default) prints the directory
//! with every symlink resolved; `-L` prints `$PWD` when it is absolute, free of `.` and
//! `..` and names the same directory, else falls back to `-P`. Operands are ignored with
//! GNU's warning.

use async_trait::async_trait;

use crate::{CmdResult, Command, Context};

const HELP: &str = "Usage: pwd [OPTION]...
Print the full filename of the current working directory.

  -L, --logical   use PWD from environment, even if it contains symlinks
  -P, --physical  avoid all symlinks
      --help        display this help and exit
      --version     output version information and exit

If no option is specified, -P is assumed.

NOTE: your shell may have its own version of pwd, which usually supersedes
the version described here.  Please refer to your shell's documentation
for details about the options it supports.
";

pub struct GnuPwd;

async fn usage(ctx: &Context, msg: String) -> CmdResult {
    ctx.err(format!(
        "pwd: {msg}\nTry 'pwd --help' for more information.\n"
    ))
    .await;
    Ok(1)
}

#[async_trait]
impl Command for GnuPwd {
    fn name(&self) -> &'static str {
        "pwd"
    }
    fn summary(&self) -> &'static str {
        "print the current directory (GNU coreutils' program)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut logical = false;
        let mut operands = false;
        let mut options_done = false;
        for a in &args {
            if options_done || !a.starts_with('-') || a == "-" {
                operands = true;
                continue;
            }
            match a.as_str() {
                "--" => options_done = true,
                "--help" => {
                    ctx.out(HELP).await?;
                    return Ok(0);
                }
                "--version" => {
                    ctx.out("pwd (GNU coreutils) 9.1\n").await?;
                    return Ok(0);
                }
                "--logical" => logical = true,
                "--physical" => logical = false,
                long if long.starts_with("--") => {
                    return usage(ctx, format!("unrecognized option '{long}'")).await;
                }
                short => {
                    for c in short[1..].chars() {
                        match c {
                            'L' => logical = true,
                            'P' => logical = false,
                            _ => return usage(ctx, format!("invalid option -- '{c}'")).await,
                        }
                    }
                }
            }
        }
        if operands {
            ctx.warn("pwd", "ignoring non-option arguments").await;
        }
        let physical = match ctx.fs.canonicalize(&ctx.cwd).await {
            Ok(p) => p,
            Err(e) => {
                ctx.warn(
                    "pwd",
                    format!("couldn't find directory entry in '..' with matching i-node: {e}"),
                )
                .await;
                return Ok(1);
            }
        };
        if logical
            && let Some(pwd) = ctx.env.get("PWD")
            && pwd.starts_with('/')
            && !pwd.split('/').any(|c| c == "." || c == "..")
            && ctx.fs.canonicalize(pwd).await.is_ok_and(|p| p == physical)
        {
            ctx.out(format!("{pwd}\n")).await?;
            return Ok(0);
        }
        ctx.out(format!("{physical}\n")).await?;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn physical_logical_and_gnus_warnings() {
        let mut inv = Invocation {
            fs: MemFs::with_files(&[("/d/f", "x")]),
            cwd: "/d".into(),
            ..Invocation::default()
        };
        inv.env.insert("PWD".into(), "/d".into());
        assert_eq!(
            inv.run(&GnuPwd, &[]).await,
            (0, "/d\n".into(), String::new())
        );
        assert_eq!(inv.run(&GnuPwd, &["-L"]).await.1, "/d\n");
        assert_eq!(
            inv.run(&GnuPwd, &["x"]).await,
            (
                0,
                "/d\n".into(),
                "pwd: ignoring non-option arguments\n".into()
            )
        );
        assert_eq!(inv.run(&GnuPwd, &["-x"]).await.0, 1);
        inv.env.insert("PWD".into(), "/d/../d".into());
        assert_eq!(inv.run(&GnuPwd, &["-L"]).await.1, "/d\n");
    }
}

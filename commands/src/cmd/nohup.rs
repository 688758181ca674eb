//! `nohup` and `stdbuf` (GNU coreutils): run a command with hangups ignored, or with its
//! streams' buffering changed. A session's commands get no hangup signal and write
//! through forkbox's own pipes, so both check their options and run the command through
//! the shell's launcher. `nohup` redirects output to `nohup.out` when it is a terminal,
//! as GNU's does.

use async_trait::async_trait;

use super::util::{quote, usage_error};
use crate::fs::WriteMode;
use crate::{CmdResult, Command, Context};

/// GNU's status when nohup or stdbuf itself fails, distinct from the command's.
const FAILED: i32 = 125;

pub struct Nohup;
pub struct Stdbuf;

/// Runs `argv` as nohup/stdbuf do: a command that isn't there is GNU's 127 message.
async fn launch(ctx: &Context, name: &str, child: Context, argv: Vec<String>) -> i32 {
    if !ctx.launcher.resolves(&argv[0]) {
        let what = quote(&argv[0]);
        ctx.warn(
            name,
            format!("failed to run command {what}: No such file or directory"),
        )
        .await;
        return 127;
    }
    ctx.launcher.launch(child, argv).await
}

#[async_trait]
impl Command for Nohup {
    fn name(&self) -> &'static str {
        "nohup"
    }
    fn summary(&self) -> &'static str {
        "run a command immune to hangups"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut args = args.as_slice();
        match args.first().map(String::as_str) {
            Some("--help") => {
                ctx.out(
                    "Usage: nohup COMMAND [ARG]...\n  or:  nohup OPTION\n\
                     Run COMMAND, ignoring hangup signals.\n\n\
                     \x20     --help        display this help and exit\n\
                     \x20     --version     output version information and exit\n\n\
                     If standard input is a terminal, redirect it from an unreadable file.\n\
                     If standard output is a terminal, append output to 'nohup.out' if possible,\n\
                     '$HOME/nohup.out' otherwise.\n\
                     If standard error is a terminal, redirect it to standard output.\n",
                )
                .await?;
                return Ok(0);
            }
            Some("--version") => {
                ctx.out("nohup (forkbox) 9.1\n").await?;
                return Ok(0);
            }
            Some("--") => args = &args[1..],
            Some(a) if a.starts_with('-') && a.len() > 1 => {
                let msg = match a.strip_prefix("--") {
                    Some(_) => format!("unrecognized option {}", quote(a)),
                    None => format!("invalid option -- '{}'", &a[1..2]),
                };
                usage_error(ctx, "nohup", &msg).await;
                return Ok(FAILED);
            }
            _ => {}
        }
        if args.is_empty() {
            usage_error(ctx, "nohup", "missing operand").await;
            return Ok(FAILED);
        }
        if ctx.tty.is_none() {
            return Ok(launch(ctx, "nohup", ctx.clone(), args.to_vec()).await);
        }
        // Output to the terminal goes to nohup.out instead, through a pipe the command
        // writes and this copies into the file as it comes.
        let path = ctx.path("nohup.out");
        let mut file = match ctx.fs.open_write(&path, WriteMode::Append).await {
            Ok(file) => file,
            Err(e) => {
                ctx.warn("nohup", format!("failed to open 'nohup.out': {e}"))
                    .await;
                return Ok(FAILED);
            }
        };
        ctx.warn(
            "nohup",
            "ignoring input and appending output to 'nohup.out'",
        )
        .await;
        let (tx, rx) = crate::io::pipe_in(&ctx.budget);
        let mut child = ctx.clone();
        child.stdout = tx;
        child.tty = None;
        child.terminal = None;
        let copy = async {
            let mut failed = None;
            while let Ok(Some(chunk)) = rx.read_chunk().await {
                if failed.is_none()
                    && let Err(e) = file.write(&chunk).await
                {
                    failed = Some(e);
                }
            }
            match failed {
                Some(e) => Err(e),
                None => file.close().await,
            }
        };
        let run = launch(ctx, "nohup", child, args.to_vec());
        let (status, copied) = tokio::join!(run, copy);
        if let Err(e) = copied {
            ctx.warn("nohup", format!("nohup.out: {e}")).await;
            return Ok(FAILED);
        }
        Ok(status)
    }
}

/// A stdbuf mode: `L` (line) for output, or a size with an optional suffix.
fn valid_mode(stream: char, mode: &str) -> bool {
    if mode == "L" {
        return stream != 'i';
    }
    let digits = mode.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &mode[digits.len()..];
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && matches!(
            suffix,
            "" | "b" | "k" | "K" | "KB" | "KiB" | "M" | "MB" | "MiB" | "G" | "GB" | "GiB"
        )
}

#[async_trait]
impl Command for Stdbuf {
    fn name(&self) -> &'static str {
        "stdbuf"
    }
    fn summary(&self) -> &'static str {
        "run a command with modified buffering for its standard streams"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut i = 0;
        let mut modes = 0;
        // Options come before the command; the first operand starts it.
        while i < args.len() {
            let a = args[i].as_str();
            if a == "--" {
                i += 1;
                break;
            }
            if a == "--help" {
                ctx.out(
                    "Usage: stdbuf OPTION... COMMAND\n\
                     Run COMMAND, with modified buffering operations for its standard streams.\n\n\
                     \x20 -i, --input=MODE   adjust standard input stream buffering\n\
                     \x20 -o, --output=MODE  adjust standard output stream buffering\n\
                     \x20 -e, --error=MODE   adjust standard error stream buffering\n",
                )
                .await?;
                return Ok(0);
            }
            let (stream, value) = if let Some(long) = a.strip_prefix("--") {
                let (key, val) = long
                    .split_once('=')
                    .map_or((long, None), |(k, v)| (k, Some(v)));
                let stream = match key {
                    "input" => 'i',
                    "output" => 'o',
                    "error" => 'e',
                    _ => {
                        let msg = format!("unrecognized option {}", quote(a));
                        usage_error(ctx, "stdbuf", &msg).await;
                        return Ok(FAILED);
                    }
                };
                match val {
                    Some(v) => (stream, v.to_string()),
                    None => match args.get(i + 1) {
                        Some(v) => {
                            i += 1;
                            (stream, v.clone())
                        }
                        None => {
                            let msg = format!("option '--{key}' requires an argument");
                            usage_error(ctx, "stdbuf", &msg).await;
                            return Ok(FAILED);
                        }
                    },
                }
            } else if let Some(short) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
                let stream = short.chars().next().unwrap_or('?');
                if !matches!(stream, 'i' | 'o' | 'e') {
                    let msg = format!("invalid option -- '{stream}'");
                    usage_error(ctx, "stdbuf", &msg).await;
                    return Ok(FAILED);
                }
                let rest = &short[stream.len_utf8()..];
                if rest.is_empty() {
                    match args.get(i + 1) {
                        Some(v) => {
                            i += 1;
                            (stream, v.clone())
                        }
                        None => {
                            let msg = format!("option requires an argument -- '{stream}'");
                            usage_error(ctx, "stdbuf", &msg).await;
                            return Ok(FAILED);
                        }
                    }
                } else {
                    (stream, rest.to_string())
                }
            } else {
                break;
            };
            if stream == 'i' && value == "L" {
                usage_error(ctx, "stdbuf", "line buffering stdin is meaningless").await;
                return Ok(FAILED);
            }
            if !valid_mode(stream, &value) {
                ctx.warn("stdbuf", format!("invalid mode {}", quote(&value)))
                    .await;
                return Ok(FAILED);
            }
            modes += 1;
            i += 1;
        }
        let argv = args[i..].to_vec();
        if argv.is_empty() {
            usage_error(ctx, "stdbuf", "missing operand").await;
            return Ok(FAILED);
        }
        if modes == 0 {
            usage_error(ctx, "stdbuf", "you must specify a buffering mode option").await;
            return Ok(FAILED);
        }
        Ok(launch(ctx, "stdbuf", ctx.clone(), argv).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn nohup_runs_or_refuses() {
        let inv = Invocation::default();
        let (st, _, err) = inv.run(&Nohup, &[]).await;
        assert_eq!(st, 125);
        assert!(err.starts_with("nohup: missing operand\n"));
        let (st, _, err) = inv.run(&Nohup, &["nosuch"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                127,
                "nohup: failed to run command 'nosuch': No such file or directory\n"
            )
        );
    }

    #[tokio::test]
    async fn stdbuf_checks_modes() {
        let inv = Invocation::default();
        assert_eq!(inv.run(&Stdbuf, &["-oX", "x"]).await.0, 125);
        assert_eq!(inv.run(&Stdbuf, &["x"]).await.0, 125);
        assert_eq!(inv.run(&Stdbuf, &["-iL", "x"]).await.0, 125);
        assert!(valid_mode('o', "L") && valid_mode('o', "0") && valid_mode('e', "1K"));
        assert!(!valid_mode('o', "") && !valid_mode('o', "1Q"));
    }
}

//! `tty` and `clear`: the terminal, when stdout is the session's PTY.
//!
//! A command knows only whether its stdout is the terminal ([`Context::tty`]); `tty`
//! asks about stdin in GNU, and in a session stdin and stdout are the terminal together
//! or not at all in the common cases, so stdout's state answers for both.

use async_trait::async_trait;
use clap::Parser;

use crate::{CmdResult, Command, Context, parse_args};

/// The name `tty` prints for the session's terminal.
const PTY_NAME: &str = "/dev/pts/0";

/// The escape `clear` writes: cursor home, erase the screen and the scroll-back.
const CLEAR: &str = "\x1b[H\x1b[2J\x1b[3J";

/// Print the file name of the terminal connected to standard input.
#[derive(Parser, Debug)]
#[command(name = "tty")]
struct TtyArgs {
    /// Print nothing, only return an exit status.
    #[arg(short = 's', long = "silent", visible_alias = "quiet")]
    silent: bool,
}

pub struct Tty;

#[async_trait]
impl Command for Tty {
    fn name(&self) -> &'static str {
        "tty"
    }
    fn summary(&self) -> &'static str {
        "print the file name of the terminal"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let a: TtyArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let on_tty = ctx.tty.is_some();
        if !a.silent {
            let text = if on_tty { PTY_NAME } else { "not a tty" };
            ctx.out(format!("{text}\n")).await?;
        }
        Ok(if on_tty { 0 } else { 1 })
    }
}

/// Clear the terminal screen: write the escape that clears it, for the terminal type
/// in TERM (a VT100-compatible one).
#[derive(Parser, Debug)]
#[command(name = "clear")]
struct ClearArgs {
    /// Do not clear the scroll-back buffer.
    #[arg(short = 'x')]
    keep_scrollback: bool,
}

pub struct Clear;

#[async_trait]
impl Command for Clear {
    fn name(&self) -> &'static str {
        "clear"
    }
    fn summary(&self) -> &'static str {
        "clear the terminal screen"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let a: ClearArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        // ncurses' clear goes by TERM, not by whether stdout is a terminal.
        let term = ctx.env.get("TERM").map(String::as_str).unwrap_or("");
        if term.is_empty() {
            ctx.err("TERM environment variable not set.\n").await;
            return Ok(1);
        }
        if term == "dumb" {
            return Ok(1);
        }
        {
            let seq = if a.keep_scrollback {
                CLEAR.trim_end_matches("\x1b[3J")
            } else {
                CLEAR
            };
            ctx.out(seq).await?;
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TermSize;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn terminal_or_not() {
        let inv = Invocation::default();
        assert_eq!(
            inv.run(&Tty, &[]).await,
            (1, "not a tty\n".into(), String::new())
        );
        assert_eq!(inv.run(&Tty, &["-s"]).await.1, "");
        assert_eq!(
            inv.run(&Clear, &[]).await,
            (
                1,
                String::new(),
                "TERM environment variable not set.\n".into()
            )
        );
        let mut on = Invocation {
            tty: Some(TermSize { cols: 80, rows: 24 }),
            ..Invocation::default()
        };
        on.env.insert("TERM".into(), "xterm".into());
        assert_eq!(
            on.run(&Tty, &[]).await,
            (0, "/dev/pts/0\n".into(), String::new())
        );
        assert_eq!(on.run(&Clear, &[]).await.1, CLEAR);
    }
}

//! `help`: list every command the shell knows, or show one command's summary.

use async_trait::async_trait;
use clap::Parser;

use super::util::quote;
use crate::{CmdResult, Command, Context, parse_args};

/// Width used when stdout is not a terminal.
const DEFAULT_COLS: usize = 80;

/// List the commands this shell runs with a one-line summary each, or show the summary
/// of the named ones. Run `NAME --help` for a command's full help.
#[derive(Parser, Debug)]
#[command(name = "help")]
struct Args {
    /// Commands to describe.
    names: Vec<String>,
}

pub struct Help;

#[async_trait]
impl Command for Help {
    fn name(&self) -> &'static str {
        "help"
    }
    fn summary(&self) -> &'static str {
        "list commands, or describe one"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let commands = ctx.launcher.commands();
        if !args.names.is_empty() {
            let mut status = 0;
            for n in &args.names {
                match commands.iter().find(|c| &c.name == n) {
                    Some(c) => ctx.out(format!("{}: {}\n", c.name, c.summary)).await?,
                    None => {
                        ctx.warn("help", format!("no help topics match {}", quote(n)))
                            .await;
                        status = 1;
                    }
                }
            }
            return Ok(status);
        }
        let cols = ctx
            .tty
            .map(|t| usize::from(t.cols))
            .filter(|c| *c > 20)
            .unwrap_or(DEFAULT_COLS);
        let name_w = commands
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(0);
        let mut out = String::from("forkbox shell commands. Type 'NAME --help' for details.\n\n");
        for c in &commands {
            let mut line = format!("  {:<name_w$}  {}", c.name, c.summary);
            if line.chars().count() > cols {
                line = line
                    .chars()
                    .take(cols.saturating_sub(1))
                    .collect::<String>()
                    + "…";
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        ctx.out(out).await?;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, TestLauncher};
    use std::sync::Arc;

    fn inv() -> Invocation {
        let launcher = TestLauncher::with(vec![
            Arc::new(super::super::truefalse::True),
            Arc::new(Help),
        ]);
        Invocation {
            launcher,
            ..Invocation::default()
        }
    }

    #[tokio::test]
    async fn lists_and_describes() {
        let (st, out, _) = inv().run(&Help, &[]).await;
        assert_eq!(st, 0);
        assert!(
            out.ends_with(
                "  help  list commands, or describe one\n  true  do nothing, successfully\n"
            ),
            "{out}"
        );
        assert_eq!(
            inv().run(&Help, &["true"]).await.1,
            "true: do nothing, successfully\n"
        );
        let (st, _, err) = inv().run(&Help, &["nope"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "help: no help topics match 'nope'\n")
        );
    }
}

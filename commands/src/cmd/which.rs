//! `which`: tell whether a command exists. Commands are not files here, so it prints the
//! name itself for each command the shell knows.

use async_trait::async_trait;
use clap::Parser;

use crate::{CmdResult, Command, Context, parse_args};

/// For each NAME, print it if it is a command this shell can run (builtins, native
/// commands and tools); commands are not files in forkbox, so no path is printed.
/// Exit status is 1 if any NAME is unknown.
#[derive(Parser, Debug)]
#[command(name = "which")]
struct Args {
    /// Accepted for compatibility (every match is printed anyway).
    #[arg(short = 'a')]
    all: bool,
    /// Command names.
    names: Vec<String>,
}

pub struct Which;

#[async_trait]
impl Command for Which {
    fn name(&self) -> &'static str {
        "which"
    }
    fn summary(&self) -> &'static str {
        "show whether commands exist"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.names.is_empty() {
            return Ok(1);
        }
        let known = ctx.launcher.commands();
        let mut status = 0;
        let mut out = String::new();
        for n in &args.names {
            // A path names itself when it is a command's file; a builtin that is no file
            // (`cd`) is not found, as on a real system.
            let found = known
                .iter()
                .filter_map(|c| c.path.as_deref().map(|p| (c.name.as_str(), p)))
                .find(|(name, path)| name == n || path == n);
            match found {
                Some((_, path)) => {
                    out.push_str(path);
                    out.push('\n');
                }
                None => status = 1,
            }
        }
        ctx.out(out).await?;
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn finds_known_commands() {
        let inv = Invocation::default();
        assert_eq!(
            inv.run(&Which, &["which", "ls"]).await,
            (0, "/usr/bin/which\n/usr/bin/ls\n".into(), String::new())
        );
        assert_eq!(
            inv.run(&Which, &["nope", "/usr/bin/which"]).await,
            (1, "/usr/bin/which\n".into(), String::new())
        );
        assert_eq!(inv.run(&Which, &[]).await.0, 1);
    }
}

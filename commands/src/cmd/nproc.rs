//! `nproc`: the processing units a session may use. A session is a share of the
//! server, not a machine: it reports [`SESSION_CPUS`], whatever the host has.

use async_trait::async_trait;
use clap::Parser;

use super::util::quote;
use crate::{CmdResult, Command, Context, parse_args};

/// Processing units a session reports: its commands run as tasks on a shared runtime,
/// and one session's fair share of it is one unit.
const SESSION_CPUS: u64 = 1;

/// Print the number of processing units available to the session.
#[derive(Parser, Debug)]
#[command(name = "nproc")]
struct Args {
    /// Print the number of installed processors (the same here).
    #[arg(long)]
    all: bool,
    /// If possible, exclude N processing units.
    #[arg(long, value_name = "N")]
    ignore: Option<String>,
}

pub struct Nproc;

#[async_trait]
impl Command for Nproc {
    fn name(&self) -> &'static str {
        "nproc"
    }
    fn summary(&self) -> &'static str {
        "print the number of processing units available"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let a: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let ignore = match a.ignore.as_deref().map(str::parse::<u64>) {
            None => 0,
            Some(Ok(n)) => n,
            Some(Err(_)) => {
                let v = a.ignore.clone().unwrap_or_default();
                ctx.warn("nproc", format!("invalid number: {}", quote(&v)))
                    .await;
                return Ok(1);
            }
        };
        let n = SESSION_CPUS.saturating_sub(ignore).max(1);
        ctx.out(format!("{n}\n")).await?;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn the_sessions_share() {
        let inv = Invocation::default();
        assert_eq!(inv.run(&Nproc, &[]).await.1, "1\n");
        assert_eq!(inv.run(&Nproc, &["--ignore=5"]).await.1, "1\n");
        assert_eq!(inv.run(&Nproc, &["--ignore=x"]).await.0, 1);
    }
}

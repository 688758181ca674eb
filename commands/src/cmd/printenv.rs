//! `printenv`: print the exported environment, or the values of named variables.

use async_trait::async_trait;
use clap::Parser;

use crate::{CmdResult, Command, Context, parse_args};

/// Print the values of the specified environment VARIABLE(s). If no VARIABLE is
/// specified, print name and value pairs for them all.
#[derive(Parser, Debug)]
#[command(name = "printenv")]
struct Args {
    /// End each output line with NUL, not newline.
    #[arg(short = '0', long)]
    null: bool,
    /// VARIABLE
    names: Vec<String>,
}

pub struct Printenv;

#[async_trait]
impl Command for Printenv {
    fn name(&self) -> &'static str {
        "printenv"
    }
    fn summary(&self) -> &'static str {
        "print all or part of the environment"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let end = if args.null { '\0' } else { '\n' };
        let mut out = String::new();
        if args.names.is_empty() {
            ctx.out_text(super::env::listing(&ctx.env, &ctx.env_last, end))
                .await?;
            return Ok(0);
        }
        let mut missing = false;
        for n in &args.names {
            match ctx.env.get(n).filter(|_| !n.contains('=')) {
                Some(v) => out.push_str(&format!("{v}{end}")),
                None => missing = true,
            }
        }
        ctx.out_text(out).await?;
        Ok(i32::from(missing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn prints_values() {
        let mut inv = Invocation::default();
        inv.env.insert("A".into(), "1".into());
        inv.env.insert("B".into(), "two".into());
        assert_eq!(inv.run(&Printenv, &[]).await.1, "B=two\nA=1\n");
        assert_eq!(inv.run(&Printenv, &["B", "A"]).await.1, "two\n1\n");
        let (st, out, _) = inv.run(&Printenv, &["A", "NOPE"]).await;
        assert_eq!((st, out.as_str()), (1, "1\n"));
        assert_eq!(inv.run(&Printenv, &["-0", "A"]).await.1, "1\0");
    }
}

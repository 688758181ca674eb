//! `yes`: repeat a line until the reader goes away.

use async_trait::async_trait;
use clap::Parser;

use crate::{CmdResult, Command, Context, parse_args};

/// Bytes of repeated lines `yes` sends per write: one pipe chunk, so the loop costs one
/// message per 64 KiB instead of one per line.
const YES_BATCH: usize = 64 * 1024;

/// Repeatedly output a line with all specified STRING(s), or 'y'.
#[derive(Parser, Debug)]
#[command(name = "yes")]
struct Args {
    /// The words to repeat (default: y).
    strings: Vec<String>,
}

pub struct Yes;

#[async_trait]
impl Command for Yes {
    fn name(&self) -> &'static str {
        "yes"
    }
    fn summary(&self) -> &'static str {
        "output a string repeatedly until killed"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mut line = if args.strings.is_empty() {
            "y".to_string()
        } else {
            args.strings.join(" ")
        };
        line.push('\n');
        let reps = (YES_BATCH / line.len()).max(1);
        let batch = bytes::Bytes::from(line.repeat(reps));
        loop {
            // Fails with BrokenPipe once the reader is gone, which ends the loop.
            ctx.stdout.write_bytes(batch.clone()).await?;
            ctx.checkpoint().await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::pipe;
    use crate::testing::{Invocation, MemFs, NullLauncher};
    use crate::{Input, Output, exit_status};
    use tokio_util::sync::CancellationToken;

    fn ctx(stdout: Output) -> Context {
        Context {
            stdin: Input::empty(),
            stdout,
            stderr: Output::null(),
            env: Default::default(),
            env_last: Vec::new(),
            cwd: "/".into(),
            fs: MemFs::new(),
            cancel: CancellationToken::new(),
            tty: None,
            terminal: None,
            launcher: NullLauncher::new(&[]),
            budget: crate::Budget::default(),
        }
    }

    #[tokio::test]
    async fn stops_when_reader_goes_away() {
        let (out, input) = pipe();
        let c = ctx(out);
        let task = tokio::spawn(async move {
            let r = Yes.run(&c, vec!["hi".into(), "there".into()]).await;
            exit_status("yes", r, &Output::null()).await
        });
        let line = input.read_line(100).await.unwrap().unwrap();
        assert_eq!(line, b"hi there\n");
        drop(input);
        assert_eq!(task.await.unwrap(), 141);
    }

    #[tokio::test]
    async fn stops_when_cancelled() {
        let c = ctx(Output::null());
        c.cancel.cancel();
        let r = Yes.run(&c, vec![]).await;
        assert_eq!(exit_status("yes", r, &Output::null()).await, 130);
    }

    #[tokio::test]
    async fn bad_flag_is_usage_error() {
        let (st, out, err) = Invocation::default().run(&Yes, &["--bogus"]).await;
        assert_eq!((st, out.as_str()), (1, ""));
        assert!(
            err.starts_with("yes: unrecognized option '--bogus'"),
            "{err}"
        );
    }
}

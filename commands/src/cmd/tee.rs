//! `tee`: copy stdin to stdout and files. A file that fails is reported and dropped;
//! the others keep receiving data. Files are closed (and close errors reported) on every
//! exit path.

use async_trait::async_trait;
use clap::Parser;

use super::util::{Reader, quotef};
use crate::fs::{WriteHandle, WriteMode};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Copy standard input to each FILE, and also to standard output.
#[derive(Parser, Debug)]
#[command(name = "tee")]
struct Args {
    /// Append to the given FILEs, do not overwrite.
    #[arg(short = 'a', long)]
    append: bool,
    /// Ignore interrupt signals (accepted; there are none to ignore).
    #[arg(short = 'i', long = "ignore-interrupts")]
    ignore_interrupts: bool,
    /// Files to write.
    files: Vec<String>,
}

pub struct Tee;

async fn close_all(ctx: &Context, handles: &mut Vec<(String, Box<dyn WriteHandle>)>) -> i32 {
    let mut status = 0;
    for (name, h) in handles.drain(..) {
        if let Err(e) = h.close().await {
            ctx.warn("tee", format!("{}: {e}", quotef(&name))).await;
            status = 1;
        }
    }
    status
}

#[async_trait]
impl Command for Tee {
    fn name(&self) -> &'static str {
        "tee"
    }
    fn summary(&self) -> &'static str {
        "read from standard input and write to standard output and files"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mode = if args.append {
            WriteMode::Append
        } else {
            WriteMode::Truncate
        };
        let mut status = 0;
        let mut handles: Vec<(String, Box<dyn WriteHandle>)> = Vec::new();
        for f in &args.files {
            match ctx.fs.open_write(&ctx.path(f), mode).await {
                Ok(h) => handles.push((f.clone(), h)),
                Err(e) => {
                    ctx.warn("tee", format!("{}: {e}", quotef(f))).await;
                    status = 1;
                }
            }
        }
        let mut reader = Reader::stdin(ctx);
        let result: Result<(), Interrupt> = async {
            while let Some(chunk) = reader.chunk().await.unwrap_or(None) {
                let mut i = 0;
                while i < handles.len() {
                    if let Err(e) = handles[i].1.write(&chunk).await {
                        let (name, h) = handles.remove(i);
                        ctx.warn("tee", format!("{}: {e}", quotef(&name))).await;
                        let _ = h.close().await;
                        status = 1;
                    } else {
                        i += 1;
                    }
                }
                ctx.stdout.write_bytes(chunk).await?;
                ctx.checkpoint().await?;
            }
            Ok(())
        }
        .await;
        let close_status = close_all(ctx, &mut handles).await;
        result?;
        Ok(status.max(close_status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn writes_files_and_stdout() {
        let fs = MemFs::with_files(&[("/old", "1\n")]);
        let inv = Invocation {
            fs: fs.clone(),
            stdin: b"data\n".to_vec(),
            ..Invocation::default()
        };
        assert_eq!(
            inv.run(&Tee, &["a", "b"]).await,
            (0, "data\n".into(), String::new())
        );
        assert_eq!(fs.text("/a").unwrap(), "data\n");
        assert_eq!(fs.text("/b").unwrap(), "data\n");
        inv.run(&Tee, &["-a", "old"]).await;
        assert_eq!(fs.text("/old").unwrap(), "1\ndata\n");
    }

    #[tokio::test]
    async fn keeps_going_on_a_broken_file() {
        let fs = MemFs::new();
        fs.fail_close_on("/full");
        let inv = Invocation {
            fs: fs.clone(),
            stdin: b"x".to_vec(),
            ..Invocation::default()
        };
        let (st, out, err) = inv.run(&Tee, &["/nodir/f", "full", "ok"]).await;
        assert_eq!((st, out.as_str()), (1, "x"));
        assert_eq!(
            err,
            "tee: /nodir/f: No such file or directory\ntee: full: No space left on device\n"
        );
        assert_eq!(fs.text("/ok").unwrap(), "x");
    }
}

//! `rev`: reverse the characters of every line (util-linux), streaming line by line. In
//! the C locale a character is a byte.

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, MAX_LINE, Pacer, Reader};
use crate::{CmdResult, Command, Context, parse_args};

/// Reverse lines characterwise: copy the files (or standard input) to standard output,
/// reversing the order of characters in every line.
#[derive(Parser, Debug)]
#[command(name = "rev")]
struct Args {
    /// Use the zero byte as the line separator.
    #[arg(short = '0', long = "zero")]
    zero: bool,
    /// Files to read.
    files: Vec<String>,
}

pub struct Rev;

#[async_trait]
impl Command for Rev {
    fn name(&self) -> &'static str {
        "rev"
    }
    fn summary(&self) -> &'static str {
        "reverse lines characterwise"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let delim = if args.zero { 0 } else { b'\n' };
        let mut status = 0;
        let mut out = BufOut::new(ctx);
        let mut pacer = Pacer::default();
        // util-linux's rev reads stdin only without operands: `-` is a file name.
        let stdin = args.files.is_empty();
        let files = if stdin {
            vec!["-".to_string()]
        } else {
            args.files.clone()
        };
        for f in files {
            let opened = if stdin {
                Ok(Reader::stdin(ctx))
            } else {
                Reader::open(ctx, if f == "-" { "./-" } else { &f }).await
            };
            let mut reader = match opened {
                Ok(r) => r,
                Err(e) => {
                    out.flush().await?;
                    ctx.warn("rev", format!("cannot open {f}: {e}")).await;
                    status = 1;
                    continue;
                }
            };
            loop {
                let mut line = match reader.record(delim, MAX_LINE).await? {
                    Ok(Some(l)) => l,
                    Ok(None) => break,
                    Err(e) => {
                        out.flush().await?;
                        ctx.warn("rev", format!("{f}: {e}")).await;
                        status = 1;
                        break;
                    }
                };
                let ended = line.last() == Some(&delim);
                if ended {
                    line.pop();
                }
                line.reverse();
                if ended {
                    line.push(delim);
                }
                out.write(&line).await?;
                pacer.tick(ctx).await?;
            }
        }
        out.flush().await?;
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn reverses_each_line() {
        let inv = Invocation {
            stdin: b"abc\n12\nlast".to_vec(),
            ..Invocation::default()
        };
        assert_eq!(inv.run(&Rev, &[]).await.1, "cba\n21\ntsal");
        let (st, _, err) = inv.run(&Rev, &["none"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "rev: cannot open none: No such file or directory\n")
        );
    }
}

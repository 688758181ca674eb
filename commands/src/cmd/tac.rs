//! `tac`: concatenate and print files in reverse, record by record. Each file is read
//! whole (charged to the session's budget), as reversing needs its end first.

use async_trait::async_trait;
use clap::Parser;
use regex::bytes::Regex;

use super::textin::{operands_or_stdin, slurp};
use super::util::{BufOut, Pacer, quote};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Write each FILE to standard output, last line first. With no FILE, or when FILE is -,
/// read standard input.
#[derive(Parser, Debug)]
#[command(name = "tac")]
struct Args {
    /// Attach the separator before instead of after.
    #[arg(short = 'b', long)]
    before: bool,
    /// Interpret the separator as a regular expression.
    #[arg(short = 'r', long)]
    regex: bool,
    /// Use STRING as the separator instead of newline.
    #[arg(short = 's', long, value_name = "STRING")]
    separator: Option<String>,
    /// Files to read.
    files: Vec<String>,
}

/// Where the separators of `data` are, as (start, end) pairs, in order.
enum Finder {
    Plain(Vec<u8>),
    Regex(Regex),
}

impl Finder {
    /// The separators, found the way GNU tac finds them: from the end backwards, each
    /// search limited to the text before the previous separator's start.
    fn find_all(&self, data: &[u8]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        match self {
            Finder::Plain(sep) => {
                let mut limit = data.len();
                while limit >= sep.len() {
                    match data[..limit]
                        .windows(sep.len())
                        .rposition(|w| w == sep.as_slice())
                    {
                        Some(p) => {
                            out.push((p, p + sep.len()));
                            limit = p;
                        }
                        None => break,
                    }
                }
            }
            Finder::Regex(re) => {
                let mut limit = data.len();
                let mut p = limit;
                while p > 0 {
                    p -= 1;
                    if let Some(m) = re.find(&data[p..limit])
                        && m.start() == 0
                        && m.end() > 0
                    {
                        out.push((p, p + m.end()));
                        limit = p;
                    }
                }
            }
        }
        out.reverse();
        out
    }
}

/// The records of `data` in reverse order, each with its separator attached after (or
/// before, with `before`).
fn reversed<'d>(data: &'d [u8], seps: &[(usize, usize)], before: bool) -> Vec<&'d [u8]> {
    let mut pieces = Vec::with_capacity(seps.len() + 1);
    let mut start = 0;
    for &(s, e) in seps {
        let cut = if before { s } else { e };
        pieces.push(&data[start..cut]);
        start = cut;
    }
    pieces.push(&data[start..]);
    pieces.retain(|p| !p.is_empty());
    pieces.reverse();
    pieces
}

pub struct Tac;

#[async_trait]
impl Command for Tac {
    fn name(&self) -> &'static str {
        "tac"
    }
    fn summary(&self) -> &'static str {
        "concatenate and print files in reverse"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let sep = args.separator.clone().unwrap_or_else(|| "\n".into());
        if sep.is_empty() {
            ctx.warn("tac", "separator cannot be empty").await;
            return Ok(1);
        }
        let finder = if args.regex {
            match Regex::new(&format!("^(?:{sep})")) {
                Ok(re) => Finder::Regex(re),
                Err(_) => {
                    ctx.warn("tac", format!("invalid regular expression {}", quote(&sep)))
                        .await;
                    return Ok(1);
                }
            }
        } else {
            Finder::Plain(sep.into_bytes())
        };
        let mut status = 0;
        let mut out = BufOut::new(ctx);
        let mut pacer = Pacer::default();
        for f in operands_or_stdin(&args.files) {
            let mut charge = ctx.budget.empty_charge();
            let data = match read(ctx, &f, &mut charge).await? {
                Some(d) => d,
                None => {
                    status = 1;
                    continue;
                }
            };
            ctx.checkpoint().await?;
            let seps = finder.find_all(&data);
            for piece in reversed(&data, &seps, args.before) {
                out.write(piece).await?;
                pacer.tick(ctx).await?;
            }
        }
        out.flush().await?;
        Ok(status)
    }
}

/// Reads a file whole, worded as GNU tac words a failure to open.
async fn read(
    ctx: &Context,
    f: &str,
    charge: &mut crate::Charge,
) -> Result<Option<Vec<u8>>, Interrupt> {
    if f != "-"
        && let Err(e) = ctx.fs.stat(&ctx.path(f)).await
    {
        ctx.warn(
            "tac",
            format!("failed to open {} for reading: {e}", quote(f)),
        )
        .await;
        return Ok(None);
    }
    let name = if f == "-" { "-" } else { f };
    let got = slurp(ctx, "tac", name, charge).await?;
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    async fn tac(stdin: &str, args: &[&str]) -> (i32, String, String) {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            fs: MemFs::with_files(&[("/f", "1\n2\n")]),
            ..Invocation::default()
        }
        .run(&Tac, args)
        .await
    }

    #[tokio::test]
    async fn reverses_like_gnu() {
        assert_eq!(tac("a\nb", &[]).await.1, "ba\n");
        assert_eq!(tac("a\nb\n", &["-b"]).await.1, "\n\nba");
        assert_eq!(tac("a,b,c", &["-s", ","]).await.1, "cb,a,");
        assert_eq!(tac("a1b22c", &["-r", "-s", "[0-9]+"]).await.1, "c2b2a1");
        assert_eq!(tac("x\n", &["f", "-"]).await.1, "2\n1\nx\n");
    }

    #[tokio::test]
    async fn errors() {
        let (st, out, err) = tac("", &["nope", "f"]).await;
        assert_eq!(st, 1);
        assert_eq!(out, "2\n1\n");
        assert_eq!(
            err,
            "tac: failed to open 'nope' for reading: No such file or directory\n"
        );
        assert_eq!(tac("", &["-s", ""]).await.0, 1);
    }
}

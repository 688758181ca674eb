//! `fold`: wrap input lines to fit a width, streaming line by line.

use async_trait::async_trait;
use clap::Parser;

use super::textin::each_line;
use super::util::quote;
use crate::{CmdResult, Command, Context, parse_args};

/// Wrap input lines in each FILE, writing to standard output. With no FILE, or when
/// FILE is -, read standard input.
#[derive(Parser, Debug)]
#[command(name = "fold")]
struct Args {
    /// Count bytes rather than columns.
    #[arg(short = 'b', long)]
    bytes: bool,
    /// Break at spaces.
    #[arg(short = 's', long)]
    spaces: bool,
    /// Use WIDTH columns instead of 80.
    #[arg(short = 'w', long, value_name = "WIDTH")]
    width: Option<String>,
    /// Files to read.
    files: Vec<String>,
}

/// The column after `c` at `col`.
fn advance(col: usize, c: u8, bytes: bool) -> usize {
    if bytes {
        return col + 1;
    }
    match c {
        b'\x08' => col.saturating_sub(1),
        b'\r' => 0,
        b'\t' => col + 8 - col % 8,
        _ => col + 1,
    }
}

/// Folds one line (without its newline) to `width`.
fn fold_line(line: &[u8], width: usize, bytes: bool, spaces: bool, out: &mut Vec<u8>) {
    let mut buf: Vec<u8> = Vec::new();
    let mut col = 0usize;
    let mut i = 0;
    while i < line.len() {
        let c = line[i];
        let next = advance(col, c, bytes);
        if next > width {
            if spaces && let Some(p) = buf.iter().rposition(|b| *b == b' ' || *b == b'\t') {
                out.extend_from_slice(&buf[..=p]);
                out.push(b'\n');
                buf.drain(..=p);
                col = buf.iter().fold(0, |c, b| advance(c, *b, bytes));
                continue;
            }
            if buf.is_empty() {
                buf.push(c);
                col = next;
                i += 1;
                continue;
            }
            out.extend_from_slice(&buf);
            out.push(b'\n');
            buf.clear();
            col = 0;
            continue;
        }
        buf.push(c);
        col = next;
        i += 1;
    }
    out.extend_from_slice(&buf);
}

pub struct Fold;

#[async_trait]
impl Command for Fold {
    fn name(&self) -> &'static str {
        "fold"
    }
    fn summary(&self) -> &'static str {
        "wrap each input line to fit in specified width"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        // `fold -20` is `fold -w 20`.
        let args: Vec<String> = args
            .into_iter()
            .map(|a| match a.strip_prefix('-') {
                Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    format!("-w{n}")
                }
                _ => a,
            })
            .collect();
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let width = match args.width.as_deref().map(str::parse::<usize>) {
            None => 80,
            Some(Ok(w)) if w > 0 => w,
            Some(r) => {
                let w = args.width.clone().unwrap_or_default();
                let why = if r.is_ok() {
                    ": Numerical result out of range"
                } else {
                    ""
                };
                ctx.warn(
                    "fold",
                    format!("invalid number of columns: {}{why}", quote(&w)),
                )
                .await;
                return Ok(1);
            }
        };
        each_line(ctx, "fold", &args.files, |body, buf| {
            fold_line(body, width, args.bytes, args.spaces, buf)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn fold(stdin: &str, args: &[&str]) -> String {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(&Fold, args)
        .await
        .1
    }

    #[tokio::test]
    async fn folds_like_gnu() {
        assert_eq!(fold("abcdefgh\n", &["-w", "3"]).await, "abc\ndef\ngh\n");
        assert_eq!(
            fold("hello big world\n", &["-s", "-w7"]).await,
            "hello \nbig \nworld\n"
        );
        assert_eq!(fold("a\tbc\n", &["-w", "9"]).await, "a\tb\nc\n");
        assert_eq!(fold("a\tbc\n", &["-b", "-w", "2"]).await, "a\t\nbc\n");
        assert_eq!(fold("abcd", &["-2"]).await, "ab\ncd");
    }
}

//! `comm`: compare two sorted files line by line, streaming both. Lines compare as bytes
//! (the C locale's order).

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, MAX_LINE, Pacer, Reader, quotef};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Compare sorted files FILE1 and FILE2 line by line. With no options, produce three
/// columns: lines unique to FILE1, lines unique to FILE2, and lines common to both.
#[derive(Parser, Debug)]
#[command(name = "comm")]
struct Args {
    /// Suppress column 1 (lines unique to FILE1).
    #[arg(short = '1')]
    no1: bool,
    /// Suppress column 2 (lines unique to FILE2).
    #[arg(short = '2')]
    no2: bool,
    /// Suppress column 3 (lines that appear in both files).
    #[arg(short = '3')]
    no3: bool,
    /// Check that the input is correctly sorted, even if all input lines are pairable.
    #[arg(long = "check-order")]
    check_order: bool,
    /// Do not check that the input is correctly sorted.
    #[arg(long = "nocheck-order")]
    nocheck_order: bool,
    /// Separate columns with STR.
    #[arg(long = "output-delimiter", value_name = "STR")]
    output_delimiter: Option<String>,
    /// Output a summary.
    #[arg(long)]
    total: bool,
    /// Line delimiter is NUL, not newline.
    #[arg(short = 'z', long = "zero-terminated")]
    zero: bool,
    /// FILE1 FILE2
    files: Vec<String>,
}

/// One input: its reader, the current line and the one before it.
struct Side {
    name: String,
    reader: Reader,
    cur: Option<Vec<u8>>,
    prev: Option<Vec<u8>>,
    reported: bool,
}

impl Side {
    async fn advance(&mut self, ctx: &Context, eol: u8) -> Result<bool, Interrupt> {
        self.prev = self.cur.take();
        match self.reader.record(eol, MAX_LINE).await? {
            Ok(Some(mut l)) => {
                if l.last() == Some(&eol) {
                    l.pop();
                }
                self.cur = Some(l);
                Ok(true)
            }
            Ok(None) => Ok(true),
            Err(e) => {
                ctx.warn("comm", format!("{}: {e}", quotef(&self.name)))
                    .await;
                Ok(false)
            }
        }
    }

    fn disordered(&self) -> bool {
        matches!((&self.prev, &self.cur), (Some(p), Some(c)) if c < p)
    }
}

pub struct Comm;

#[async_trait]
impl Command for Comm {
    fn name(&self) -> &'static str {
        "comm"
    }
    fn summary(&self) -> &'static str {
        "compare two sorted files line by line"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        match args.files.as_slice() {
            [] => {
                ctx.err("comm: missing operand\nTry 'comm --help' for more information.\n")
                    .await;
                return Ok(1);
            }
            [one] => {
                ctx.err(format!(
                    "comm: missing operand after '{one}'\nTry 'comm --help' for more information.\n"
                ))
                .await;
                return Ok(1);
            }
            [_, _] => {}
            [_, _, extra, ..] => {
                ctx.err(format!(
                    "comm: extra operand '{extra}'\nTry 'comm --help' for more information.\n"
                ))
                .await;
                return Ok(1);
            }
        }
        let eol = if args.zero { 0u8 } else { b'\n' };
        let delim = match args.output_delimiter.as_deref() {
            None => b"\t".to_vec(),
            Some("") => vec![0],
            Some(d) => d.as_bytes().to_vec(),
        };
        let mut sides = Vec::with_capacity(2);
        for f in &args.files {
            match Reader::open(ctx, f).await {
                Ok(reader) => sides.push(Side {
                    name: f.clone(),
                    reader,
                    cur: None,
                    prev: None,
                    reported: false,
                }),
                Err(e) => {
                    ctx.warn("comm", format!("{}: {e}", quotef(f))).await;
                    return Ok(1);
                }
            }
        }
        for s in sides.iter_mut() {
            if !s.advance(ctx, eol).await? {
                return Ok(1);
            }
        }
        // Prefixes of the three columns.
        let col2: Vec<u8> = if args.no1 { Vec::new() } else { delim.clone() };
        let mut col3: Vec<u8> = Vec::new();
        if !args.no1 {
            col3.extend_from_slice(&delim);
        }
        if !args.no2 {
            col3.extend_from_slice(&delim);
        }
        let mut totals = [0u64; 3];
        let mut seen_unpairable = false;
        let mut disorder = false;
        let mut out = BufOut::new(ctx);
        let mut pacer = Pacer::default();
        loop {
            let (a, b) = (&sides[0].cur, &sides[1].cur);
            let (col, advance): (usize, &[usize]) = match (a, b) {
                (None, None) => break,
                (Some(_), None) => (0, &[0]),
                (None, Some(_)) => (1, &[1]),
                (Some(x), Some(y)) => match x.cmp(y) {
                    std::cmp::Ordering::Less => (0, &[0]),
                    std::cmp::Ordering::Greater => (1, &[1]),
                    std::cmp::Ordering::Equal => (2, &[0, 1]),
                },
            };
            if col != 2 {
                seen_unpairable = true;
            }
            totals[col] += 1;
            let shown = [!args.no1, !args.no2, !args.no3][col];
            if shown {
                let line = if col == 1 { b } else { a };
                let mut buf = match col {
                    0 => Vec::new(),
                    1 => col2.clone(),
                    _ => col3.clone(),
                };
                buf.extend_from_slice(line.as_deref().unwrap_or_default());
                buf.push(eol);
                out.write(&buf).await?;
            }
            for &i in advance {
                if !sides[i].advance(ctx, eol).await? {
                    out.flush().await?;
                    return Ok(1);
                }
                let checking = !args.nocheck_order && (args.check_order || seen_unpairable);
                if checking && sides[i].disordered() && !sides[i].reported {
                    out.flush().await?;
                    ctx.warn("comm", format!("file {} is not in sorted order", i + 1))
                        .await;
                    if args.check_order {
                        return Ok(1);
                    }
                    sides[i].reported = true;
                    disorder = true;
                }
            }
            pacer.tick(ctx).await?;
        }
        if args.total {
            let mut buf = Vec::new();
            for t in totals {
                buf.extend_from_slice(t.to_string().as_bytes());
                buf.extend_from_slice(&delim);
            }
            buf.extend_from_slice(b"total");
            buf.push(eol);
            out.write(&buf).await?;
        }
        out.flush().await?;
        if disorder {
            ctx.warn("comm", "input is not in sorted order").await;
            return Ok(1);
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    async fn comm(args: &[&str]) -> (i32, String, String) {
        Invocation {
            fs: MemFs::with_files(&[
                ("/a", "a\nc\nd\n"),
                ("/b", "b\nc\n"),
                ("/u", "b\na\n"),
                ("/s", "a\nb\n"),
            ]),
            ..Invocation::default()
        }
        .run(&Comm, args)
        .await
    }

    #[tokio::test]
    async fn three_columns() {
        assert_eq!(comm(&["a", "b"]).await.1, "a\n\tb\n\t\tc\nd\n");
        assert_eq!(comm(&["-12", "a", "b"]).await.1, "c\n");
        assert_eq!(comm(&["-3", "a", "b"]).await.1, "a\n\tb\nd\n");
        assert_eq!(
            comm(&["--total", "--output-delimiter=:", "-1", "a", "b"])
                .await
                .1,
            "b\n:c\n2:1:1:total\n"
        );
    }

    #[tokio::test]
    async fn order_warnings() {
        let (st, out, err) = comm(&["u", "s"]).await;
        assert_eq!(st, 1);
        assert_eq!(out, "\ta\n\t\tb\na\n");
        assert_eq!(
            err,
            "comm: file 1 is not in sorted order\ncomm: input is not in sorted order\n"
        );
        assert_eq!(comm(&["u", "u"]).await.0, 0);
        assert_eq!(comm(&["--nocheck-order", "u", "s"]).await.0, 0);
        assert_eq!(comm(&["a"]).await.0, 1);
    }
}

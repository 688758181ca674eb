//! `head`: the first part of files. Streams: never reads past what it prints, except for
//! the `-n -N`/`-c -N` forms, which hold the last N lines or bytes, charged to the
//! session's budget (past it, `forkbox: head: out of memory`). What it read ahead of the
//! end of what it printed goes back to a file on standard input, as GNU head seeks back.

use std::collections::VecDeque;

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, MAX_LINE, Pacer, Reader, quote};
use crate::fs::{FsError, READ_CHUNK};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Bytes one held line's entry takes besides the line itself (`head -n -N`, `tail -n N`
/// on a stream).
pub(crate) const HELD_ENTRY: usize = std::mem::size_of::<Vec<u8>>();

/// Print the first 10 lines of each FILE to standard output.
/// With more than one FILE, precede each with a header giving the file name.
/// With no FILE, or when FILE is -, read standard input.
///
/// NUM may have a multiplier suffix: b 512, kB 1000, K 1024, MB 1000*1000, M 1024*1024,
/// GB, G, and so on.
#[derive(Parser, Debug)]
#[command(name = "head")]
struct Args {
    /// Print the first NUM bytes of each file; with the leading '-', print all but the
    /// last NUM bytes of each file.
    #[arg(
        short = 'c',
        long = "bytes",
        value_name = "[-]NUM",
        allow_hyphen_values = true
    )]
    bytes: Option<String>,
    /// Print the first NUM lines instead of the first 10; with the leading '-', print all
    /// but the last NUM lines of each file.
    #[arg(
        short = 'n',
        long = "lines",
        value_name = "[-]NUM",
        allow_hyphen_values = true
    )]
    lines: Option<String>,
    /// Never print headers giving file names.
    #[arg(short = 'q', long = "quiet", visible_alias = "silent")]
    quiet: bool,
    /// Always print headers giving file names.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Line delimiter is NUL, not newline.
    #[arg(short = 'z', long = "zero-terminated")]
    zero: bool,
    /// Files to read.
    files: Vec<String>,
}

/// Parses a count with GNU's multiplier suffixes.
pub(crate) fn parse_count(s: &str) -> Option<u64> {
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if digits_end == 0 {
        return None;
    }
    let n: u64 = s[..digits_end].parse().ok()?;
    let mult: u64 = match &s[digits_end..] {
        "" => 1,
        "b" => 512,
        "kB" | "KB" => 1000,
        "K" | "k" | "KiB" => 1024,
        "MB" => 1000 * 1000,
        "M" | "MiB" => 1024 * 1024,
        "GB" => 1000 * 1000 * 1000,
        "G" | "GiB" => 1024 * 1024 * 1024,
        "T" | "TiB" => 1 << 40,
        _ => return None,
    };
    Some(n.saturating_mul(mult))
}

/// Rewrites the obsolete `-N` / `-Nc` forms as `-n N` / `-c N`.
pub(crate) fn obsolete(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len() + 1);
    if let Some(first) = args.first()
        && first.len() > 1
        && first.starts_with('-')
        && first.as_bytes()[1].is_ascii_digit()
    {
        let body = &first[1..];
        let (num, kind) = match body.strip_suffix('c') {
            Some(n) => (n, "-c"),
            None => (body.strip_suffix('l').unwrap_or(body), "-n"),
        };
        out.push(kind.to_string());
        out.push(num.to_string());
        out.extend_from_slice(&args[1..]);
        return out;
    }
    args.to_vec()
}

enum Mode {
    Lines(u64),
    Bytes(u64),
    AllButLines(u64),
    AllButBytes(u64),
}

async fn head_one(
    ctx: &Context,
    reader: &mut Reader,
    mode: &Mode,
    delim: u8,
) -> Result<Result<(), FsError>, Interrupt> {
    let mut out = BufOut::new(ctx);
    let mut pacer = Pacer::default();
    let mut unused = 0usize;
    let res = async {
        match *mode {
            Mode::Lines(n) => {
                let mut left = n;
                while left > 0 {
                    let Some(line) = reader.record(delim, MAX_LINE).await.map_err(Err)?? else {
                        break;
                    };
                    if line.last() == Some(&delim) {
                        left -= 1;
                    }
                    out.write(&line).await.map_err(Err)?;
                    pacer.tick(ctx).await.map_err(Err)?;
                }
            }
            Mode::Bytes(n) => {
                let mut left = n;
                while left > 0 {
                    let want = usize::try_from(left).unwrap_or(usize::MAX).min(READ_CHUNK);
                    let Some(chunk) = reader.chunk_up_to(want).await? else {
                        break;
                    };
                    out.write(&chunk).await.map_err(Err)?;
                    left -= chunk.len() as u64;
                    pacer.tick(ctx).await.map_err(Err)?;
                }
            }
            Mode::AllButLines(n) => {
                let mut held: VecDeque<Vec<u8>> = VecDeque::new();
                let mut held_bytes = 0usize;
                let mut charge = ctx.budget.empty_charge();
                while let Some(line) = reader.record(delim, MAX_LINE).await.map_err(Err)?? {
                    held_bytes += line.capacity() + HELD_ENTRY;
                    charge.resize(held_bytes).map_err(oom)?;
                    held.push_back(line);
                    if held.len() as u64 > n
                        && let Some(l) = held.pop_front()
                    {
                        held_bytes -= l.capacity() + HELD_ENTRY;
                        out.write(&l).await.map_err(Err)?;
                        drop(l);
                        charge.resize(held_bytes).map_err(oom)?;
                    }
                    pacer.tick(ctx).await.map_err(Err)?;
                }
                unused = held.iter().map(Vec::len).sum();
            }
            Mode::AllButBytes(n) => {
                let mut held: VecDeque<u8> = VecDeque::new();
                let mut charge = ctx.budget.empty_charge();
                while let Some(chunk) = reader.chunk().await? {
                    // Held at most: N bytes and one chunk.
                    let need = held.len() + chunk.len();
                    if need > held.capacity() {
                        charge.resize(need).map_err(oom)?;
                        held.reserve_exact(chunk.len());
                        charge.resize(held.capacity()).map_err(oom)?;
                    }
                    held.extend(chunk.iter());
                    if held.len() as u64 > n {
                        let emit = held.len() - n as usize;
                        let v: Vec<u8> = held.drain(..emit).collect();
                        out.write(&v).await.map_err(Err)?;
                    }
                    pacer.tick(ctx).await.map_err(Err)?;
                }
                unused = held.len();
            }
        }
        Ok::<(), Result<FsError, Interrupt>>(())
    }
    .await;
    out.flush().await?;
    // What was read ahead, or held back unprinted, stays for the next reader of a file
    // on standard input.
    reader.give_back(unused).await;
    match res {
        Ok(()) => Ok(Ok(())),
        Err(Ok(e)) => Ok(Err(e)),
        Err(Err(i)) => Err(i),
    }
}

/// A charge over the budget, as the error of [`head_one`]'s body.
fn oom(e: crate::OutOfMemory) -> Result<FsError, Interrupt> {
    Err(e.into())
}

impl From<FsError> for Result<FsError, Interrupt> {
    fn from(e: FsError) -> Self {
        Ok(e)
    }
}

pub struct Head;

#[async_trait]
impl Command for Head {
    fn name(&self) -> &'static str {
        "head"
    }
    fn summary(&self) -> &'static str {
        "output the first part of files"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &obsolete(&args)).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mode = match (&args.bytes, &args.lines) {
            (Some(c), _) => {
                let (neg, num) = match c.strip_prefix('-') {
                    Some(n) => (true, n),
                    None => (false, c.strip_prefix('+').unwrap_or(c)),
                };
                let Some(n) = parse_count(num) else {
                    ctx.warn("head", format!("invalid number of bytes: {}", quote(c)))
                        .await;
                    return Ok(1);
                };
                if neg {
                    Mode::AllButBytes(n)
                } else {
                    Mode::Bytes(n)
                }
            }
            (None, Some(l)) => {
                let (neg, num) = match l.strip_prefix('-') {
                    Some(n) => (true, n),
                    None => (false, l.strip_prefix('+').unwrap_or(l)),
                };
                let Some(n) = parse_count(num) else {
                    ctx.warn("head", format!("invalid number of lines: {}", quote(l)))
                        .await;
                    return Ok(1);
                };
                if neg {
                    Mode::AllButLines(n)
                } else {
                    Mode::Lines(n)
                }
            }
            (None, None) => Mode::Lines(10),
        };
        let files = if args.files.is_empty() {
            vec!["-".to_string()]
        } else {
            args.files.clone()
        };
        let headers = args.verbose || (files.len() > 1 && !args.quiet);
        let delim = if args.zero { b'\0' } else { b'\n' };
        let mut status = 0;
        let mut first = true;
        for f in &files {
            let mut reader = match Reader::open(ctx, f).await {
                Ok(r) => r,
                Err(e) => {
                    ctx.warn("head", format!("cannot open {} for reading: {e}", quote(f)))
                        .await;
                    status = 1;
                    continue;
                }
            };
            if headers {
                let name = if f == "-" { "standard input" } else { f };
                ctx.out_text(format!("{}==> {name} <==\n", if first { "" } else { "\n" }))
                    .await?;
            }
            first = false;
            if let Err(e) = head_one(ctx, &mut reader, &mode, delim).await? {
                ctx.warn("head", format!("error reading {}: {e}", quote(f)))
                    .await;
                status = 1;
            }
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs, TINY_BUDGET};

    fn inv(stdin: &str) -> Invocation {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            fs: MemFs::with_files(&[("/a", "hello world\nfoo\n"), ("/b", "x"), ("/d/", "")]),
            ..Invocation::default()
        }
    }

    #[tokio::test]
    async fn lines_bytes_and_headers() {
        let nums: String = (1..=20).map(|i| format!("{i}\n")).collect();
        assert_eq!(inv(&nums).run(&Head, &[]).await.1, nums[..21]);
        assert_eq!(inv(&nums).run(&Head, &["-n", "2"]).await.1, "1\n2\n");
        assert_eq!(inv(&nums).run(&Head, &["-3"]).await.1, "1\n2\n3\n");
        assert_eq!(inv("1\n2\n3").run(&Head, &["-n", "-1"]).await.1, "1\n2\n");
        assert_eq!(inv("abcdef").run(&Head, &["-c", "-2"]).await.1, "abcd");
        assert_eq!(inv("").run(&Head, &["-c", "3", "a"]).await.1, "hel");
        assert_eq!(inv("").run(&Head, &["-c", "1K", "b"]).await.1, "x");
        let (st, out, _) = inv("in\n").run(&Head, &["-n", "1", "a", "b", "-"]).await;
        assert_eq!(st, 0);
        assert_eq!(
            out,
            "==> a <==\nhello world\n\n==> b <==\nx\n==> standard input <==\nin\n"
        );
        assert_eq!(
            inv("").run(&Head, &["-q", "-n1", "a", "b"]).await.1,
            "hello world\nx"
        );
    }

    #[tokio::test]
    async fn errors() {
        let (st, out, err) = inv("").run(&Head, &["nofile", "d", "b"]).await;
        assert_eq!(st, 1);
        assert_eq!(out, "==> d <==\n\n==> b <==\nx");
        assert_eq!(
            err,
            "head: cannot open 'nofile' for reading: No such file or directory\nhead: error reading 'd': Is a directory\n"
        );
        let (st, _, err) = inv("").run(&Head, &["-n", "abc"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "head: invalid number of lines: 'abc'\n")
        );
        assert_eq!(inv("").run(&Head, &["--nope"]).await.0, 1);
    }

    #[tokio::test]
    async fn binary_and_long_lines_do_not_break_it() {
        let fs = MemFs::new();
        let data: Vec<u8> = (0..=255u8)
            .cycle()
            .take(300_000)
            .filter(|b| *b != b'\n')
            .collect();
        fs.put("/bin", &data);
        let inv = Invocation {
            fs,
            ..Invocation::default()
        };
        let (st, out, _) = inv.run_bytes(&Head, &["-n", "1", "bin"]).await;
        assert_eq!((st, out.len()), (0, data.len()));
    }

    #[tokio::test]
    async fn what_head_holds_is_charged() {
        let lines: String = (0..8)
            .map(|i| format!("{i}{}\n", "x".repeat(300)))
            .collect();
        // -n -N holds N lines, -c -N holds N bytes: over the budget, out of memory.
        inv(&lines)
            .out_of_memory(&Head, &["-n", "-5"], TINY_BUDGET)
            .await;
        inv(&lines)
            .out_of_memory(&Head, &["-c", "-2000"], TINY_BUDGET)
            .await;
        // A line longer than the budget cannot be read at all.
        let long = format!("{}\n", "y".repeat(4 * TINY_BUDGET));
        inv(&long)
            .out_of_memory(&Head, &["-n", "1"], TINY_BUDGET)
            .await;
        // Streaming forms hold nothing; the held forms work within the default budget.
        let small = Invocation {
            budget: crate::Budget::new(TINY_BUDGET, 16),
            ..inv(&long)
        };
        assert_eq!(small.run(&Head, &["-c", "3"]).await.1, "yyy");
        assert_eq!(
            inv("1\n2\n3\n4\n5\n").run(&Head, &["-n", "-2"]).await.1,
            "1\n2\n3\n"
        );
        let (st, out, _) = inv(&lines).run(&Head, &["-c", "-2000"]).await;
        assert_eq!(
            (st, out.as_bytes()),
            (0, &lines.as_bytes()[..lines.len() - 2000])
        );
    }
}

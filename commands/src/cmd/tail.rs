//! `tail`: the last part of files. On a file it reads backwards from the end in ranged
//! chunks; on a stream it holds the last lines or bytes, charged to the session's budget
//! (past it, `forkbox: tail: out of memory`). No `-f`.

use std::collections::VecDeque;

use async_trait::async_trait;
use clap::Parser;

use super::head::parse_count;
use super::util::{BufOut, MAX_LINE, Pacer, Reader, quote};
use crate::fs::{FsError, READ_CHUNK};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Print the last 10 lines of each FILE to standard output.
/// With more than one FILE, precede each with a header giving the file name.
/// With no FILE, or when FILE is -, read standard input.
#[derive(Parser, Debug)]
#[command(name = "tail")]
struct Args {
    /// Output the last NUM bytes; or use -c +NUM to output starting with byte NUM.
    #[arg(
        short = 'c',
        long = "bytes",
        value_name = "[+]NUM",
        allow_hyphen_values = true
    )]
    bytes: Option<String>,
    /// Output the last NUM lines, instead of the last 10; or use -n +NUM to skip NUM-1
    /// lines at the start.
    #[arg(
        short = 'n',
        long = "lines",
        value_name = "[+]NUM",
        allow_hyphen_values = true
    )]
    lines: Option<String>,
    /// Never output headers giving file names.
    #[arg(short = 'q', long = "quiet", visible_alias = "silent")]
    quiet: bool,
    /// Always output headers giving file names.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Line delimiter is NUL, not newline.
    #[arg(short = 'z', long = "zero-terminated")]
    zero: bool,
    /// Files to read.
    files: Vec<String>,
}

#[derive(Clone, Copy)]
enum Mode {
    LastLines(u64),
    LastBytes(u64),
    FromLine(u64),
    FromByte(u64),
}

/// Rewrites obsolete `-N`, `+N`, `-Nc` into `-n`/`-c` forms.
fn obsolete(args: &[String]) -> Vec<String> {
    if let Some(first) = args.first()
        && first.len() > 1
        && (first.starts_with('-') || first.starts_with('+'))
        && first.as_bytes()[1].is_ascii_digit()
    {
        let sign = if first.starts_with('+') { "+" } else { "" };
        let body = &first[1..];
        let (num, kind) = match body.strip_suffix('c') {
            Some(n) => (n, "-c"),
            None => (body.strip_suffix('l').unwrap_or(body), "-n"),
        };
        let mut out = vec![kind.to_string(), format!("{sign}{num}")];
        out.extend_from_slice(&args[1..]);
        return out;
    }
    args.to_vec()
}

type Res = Result<Result<(), FsError>, Interrupt>;

/// Last `n` lines of a file: scans backwards for the start offset, then streams.
async fn last_lines_of_file(
    ctx: &Context,
    path: &str,
    len: u64,
    n: u64,
    delim: u8,
) -> Result<Result<u64, FsError>, Interrupt> {
    if n == 0 {
        return Ok(Ok(len));
    }
    let mut end = len;
    let mut seen = 0u64;
    let mut pacer = Pacer::default();
    // A final newline ends the last line rather than starting a new one.
    let mut skip_last = true;
    while end > 0 {
        let start = end.saturating_sub(READ_CHUNK as u64);
        let chunk = match ctx.fs.read_at(path, start, (end - start) as usize).await {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        for (i, &b) in chunk.iter().enumerate().rev() {
            if b == delim {
                if skip_last && start + i as u64 == len - 1 {
                    continue;
                }
                seen += 1;
                if seen == n {
                    return Ok(Ok(start + i as u64 + 1));
                }
            }
        }
        skip_last = false;
        end = start;
        pacer.tick(ctx).await?;
    }
    Ok(Ok(0))
}

/// Where the last `n` lines of `data` start (a final delimiter ends the last line).
fn last_lines_start(data: &[u8], n: u64, delim: u8) -> usize {
    if n == 0 {
        return data.len();
    }
    let body = data.strip_suffix(&[delim]).unwrap_or(data);
    let mut seen = 0;
    for i in memchr::memrchr_iter(delim, body) {
        seen += 1;
        if seen == n {
            return i + 1;
        }
    }
    0
}

async fn stream_from(ctx: &Context, path: &str, mut off: u64) -> Res {
    let mut pacer = Pacer::default();
    loop {
        let chunk = match ctx.fs.read_at(path, off, READ_CHUNK).await {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        if chunk.is_empty() {
            return Ok(Ok(()));
        }
        off += chunk.len() as u64;
        ctx.stdout.write_bytes(chunk).await?;
        pacer.tick(ctx).await?;
    }
}

async fn tail_stream(ctx: &Context, reader: &mut Reader, mode: Mode, delim: u8) -> Res {
    let mut out = BufOut::new(ctx);
    let mut pacer = Pacer::default();
    match mode {
        Mode::FromLine(n) => {
            let mut lineno = 1u64;
            loop {
                let line = match reader.record(delim, MAX_LINE).await? {
                    Ok(Some(l)) => l,
                    Ok(None) => break,
                    Err(e) => return Ok(Err(e)),
                };
                if lineno >= n {
                    out.write(&line).await?;
                }
                if line.last() == Some(&delim) {
                    lineno += 1;
                }
                pacer.tick(ctx).await?;
            }
        }
        Mode::FromByte(n) => {
            let mut pos = 1u64;
            loop {
                let chunk = match reader.chunk().await {
                    Ok(Some(c)) => c,
                    Ok(None) => break,
                    Err(e) => return Ok(Err(e)),
                };
                let len = chunk.len() as u64;
                if pos + len > n {
                    let skip = n.saturating_sub(pos) as usize;
                    out.write(&chunk[skip..]).await?;
                }
                pos += len;
                pacer.tick(ctx).await?;
            }
        }
        Mode::LastLines(n) => {
            // Whole chunks are held, never lines: a chunk goes once the chunks after it
            // hold more than N line ends, and the last N lines are cut out at the end.
            let mut held: VecDeque<(bytes::Bytes, u64)> = VecDeque::new();
            let (mut bytes, mut ends) = (0usize, 0u64);
            let mut charge = ctx.budget.empty_charge();
            loop {
                let chunk = match reader.chunk().await {
                    Ok(Some(c)) => c,
                    Ok(None) => break,
                    Err(e) => return Ok(Err(e)),
                };
                if n == 0 {
                    continue;
                }
                let count = memchr::memchr_iter(delim, &chunk).count() as u64;
                bytes += chunk.len();
                ends += count;
                charge.resize(bytes)?;
                held.push_back((chunk, count));
                while let Some((first, c)) = held.front()
                    && held.len() > 1
                    && ends - c > n
                {
                    bytes -= first.len();
                    ends -= c;
                    held.pop_front();
                }
                charge.resize(bytes)?;
                pacer.tick(ctx).await?;
            }
            let all: Vec<u8> = held.iter().flat_map(|(c, _)| c.iter().copied()).collect();
            out.write(&all[last_lines_start(&all, n, delim)..]).await?;
        }
        Mode::LastBytes(n) => {
            let mut held: VecDeque<u8> = VecDeque::new();
            let mut charge = ctx.budget.empty_charge();
            loop {
                let chunk = match reader.chunk().await {
                    Ok(Some(c)) => c,
                    Ok(None) => break,
                    Err(e) => return Ok(Err(e)),
                };
                // Held at most: N bytes and one chunk.
                let need = held.len() + chunk.len();
                if need > held.capacity() {
                    charge.resize(need)?;
                    held.reserve_exact(chunk.len());
                    charge.resize(held.capacity())?;
                }
                held.extend(chunk.iter());
                let excess = held.len().saturating_sub(n as usize);
                held.drain(..excess);
                pacer.tick(ctx).await?;
            }
            let (a, b) = held.as_slices();
            out.write(a).await?;
            out.write(b).await?;
        }
    }
    out.flush().await?;
    Ok(Ok(()))
}

pub struct Tail;

#[async_trait]
impl Command for Tail {
    fn name(&self) -> &'static str {
        "tail"
    }
    fn summary(&self) -> &'static str {
        "output the last part of files"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &obsolete(&args)).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let (spec, bytes) = match (&args.bytes, &args.lines) {
            (Some(c), _) => (c.clone(), true),
            (None, Some(l)) => (l.clone(), false),
            (None, None) => ("10".to_string(), false),
        };
        let (from, num) = match spec.strip_prefix('+') {
            Some(n) => (true, n),
            None => (false, spec.strip_prefix('-').unwrap_or(&spec)),
        };
        let Some(n) = parse_count(num) else {
            let what = if bytes { "bytes" } else { "lines" };
            ctx.warn(
                "tail",
                format!("invalid number of {what}: {}", quote(&spec)),
            )
            .await;
            return Ok(1);
        };
        let mode = match (from, bytes) {
            (true, true) => Mode::FromByte(n.max(1)),
            (true, false) => Mode::FromLine(n.max(1)),
            (false, true) => Mode::LastBytes(n),
            (false, false) => Mode::LastLines(n),
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
                    ctx.warn("tail", format!("cannot open {} for reading: {e}", quote(f)))
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
            let path = ctx.path(f);
            let file_meta = if f == "-" {
                None
            } else {
                ctx.fs.stat(&path).await.ok().filter(|m| m.is_file())
            };
            let res = match (file_meta, mode) {
                (Some(m), Mode::LastBytes(n)) => {
                    stream_from(ctx, &path, m.len.saturating_sub(n)).await?
                }
                (Some(m), Mode::LastLines(n)) => {
                    match last_lines_of_file(ctx, &path, m.len, n, delim).await? {
                        Ok(off) => stream_from(ctx, &path, off).await?,
                        Err(e) => Err(e),
                    }
                }
                _ => tail_stream(ctx, &mut reader, mode, delim).await?,
            };
            if let Err(e) = res {
                ctx.warn("tail", format!("error reading {}: {e}", quote(f)))
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
        let nums: String = (1..=100_000).map(|i| format!("{i}\n")).collect();
        let fs = MemFs::with_files(&[("/a", "hello world\nfoo\n"), ("/b", "x"), ("/d/", "")]);
        fs.put("/big", nums.as_bytes());
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            fs,
            ..Invocation::default()
        }
    }

    #[tokio::test]
    async fn files_from_the_end() {
        assert_eq!(
            inv("").run(&Tail, &["-n", "2", "big"]).await.1,
            "99999\n100000\n"
        );
        assert_eq!(
            inv("").run(&Tail, &["-3", "big"]).await.1,
            "99998\n99999\n100000\n"
        );
        assert_eq!(inv("").run(&Tail, &["-c", "3", "a"]).await.1, "oo\n");
        assert_eq!(inv("").run(&Tail, &["-n", "+2", "a"]).await.1, "foo\n");
        assert_eq!(
            inv("").run(&Tail, &["-c", "+3", "a"]).await.1,
            "llo world\nfoo\n"
        );
        assert_eq!(
            inv("").run(&Tail, &["-n", "5", "a"]).await.1,
            "hello world\nfoo\n"
        );
        assert_eq!(inv("").run(&Tail, &["-n", "0", "a"]).await.1, "");
        let (_, out, _) = inv("").run(&Tail, &["-n", "1", "a", "b"]).await;
        assert_eq!(out, "==> a <==\nfoo\n\n==> b <==\nx");
    }

    #[tokio::test]
    async fn streams() {
        assert_eq!(inv("1\n2\n3\n").run(&Tail, &["-n", "2"]).await.1, "2\n3\n");
        assert_eq!(inv("a\nb").run(&Tail, &["-n", "1"]).await.1, "b");
        assert_eq!(inv("1\n2\n3\n").run(&Tail, &["+2"]).await.1, "2\n3\n");
        assert_eq!(inv("abcdef").run(&Tail, &["-c", "2"]).await.1, "ef");
        assert_eq!(inv("abcdef").run(&Tail, &["-c", "+5"]).await.1, "ef");
    }

    #[tokio::test]
    async fn errors() {
        let (st, _, err) = inv("").run(&Tail, &["nofile", "d"]).await;
        assert_eq!(st, 1);
        assert_eq!(
            err,
            "tail: cannot open 'nofile' for reading: No such file or directory\ntail: error reading 'd': Is a directory\n"
        );
        let (st, _, err) = inv("").run(&Tail, &["-n", "x"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "tail: invalid number of lines: 'x'\n")
        );
        assert_eq!(inv("").run(&Tail, &["-f"]).await.0, 1);
    }

    #[tokio::test]
    async fn what_tail_holds_on_a_stream_is_charged() {
        let lines: String = (0..8)
            .map(|i| format!("{i}{}\n", "x".repeat(300)))
            .collect();
        inv(&lines)
            .out_of_memory(&Tail, &["-n", "5"], TINY_BUDGET)
            .await;
        inv(&lines)
            .out_of_memory(&Tail, &["-c", "2000"], TINY_BUDGET)
            .await;
        // A file is read backwards from its end: nothing of it is held.
        let small = Invocation {
            budget: crate::Budget::new(TINY_BUDGET, 16),
            ..inv("")
        };
        assert_eq!(
            small.run(&Tail, &["-n", "2", "big"]).await.1,
            "99999\n100000\n"
        );
        assert_eq!(
            inv("1\n2\n3\n4\n5\n").run(&Tail, &["-n", "2"]).await.1,
            "4\n5\n"
        );
        assert_eq!(inv("abcdef").run(&Tail, &["-c", "3"]).await.1, "def");
        let (st, out, _) = inv(&lines).run(&Tail, &["-c", "2000"]).await;
        assert_eq!(
            (st, out.as_bytes()),
            (0, &lines.as_bytes()[lines.len() - 2000..])
        );
    }
}

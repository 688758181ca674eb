//! `dd`: copy a file block by block, GNU-style: `if= of= bs= ibs= obs= count= skip= seek=`,
//! `conv=notrunc,ucase,lcase,sync,noerror`, `iflag=skip_bytes,count_bytes`,
//! `status=none|noxfer|progress`, and the `N+M records in/out` report on stderr.
//!
//! A file is read with ranged reads of a whole input block; standard input gives what one
//! chunk of the pipe holds, as a read of a pipe does (so short reads count as partial
//! records, as they do for GNU dd).

use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;

use super::util::{Pacer, quote, quotef};
use crate::fs::{FsError, WriteHandle, WriteMode};
use crate::io::Input;
use crate::{CmdResult, Command, Context};

const HELP: &str = "Usage: dd [OPERAND]...
  or:  dd OPTION
Copy a file, converting and formatting according to the operands.

  bs=BYTES        read and write up to BYTES bytes at a time (default: 512);
                  overrides ibs and obs
  count=N         copy only N input blocks
  ibs=BYTES       read up to BYTES bytes at a time (default: 512)
  if=FILE         read from FILE instead of stdin
  iflag=FLAGS     read as per the comma separated symbol list
  obs=BYTES       write BYTES bytes at a time (default: 512)
  of=FILE         write to FILE instead of stdout
  seek=N          skip N obs-sized blocks at start of output
  skip=N          skip N ibs-sized blocks at start of input
  status=LEVEL    The LEVEL of information to print to stderr;
                  'none' suppresses everything but error messages,
                  'noxfer' suppresses the final transfer statistics,
                  'progress' shows periodic transfer statistics

N and BYTES may be followed by the following multiplicative suffixes:
c=1, w=2, b=512, kB=1000, K=1024, MB=1000*1000, M=1024*1024, xM=M,
GB=1000*1000*1000, G=1024*1024*1024, and so on for T, P, E, Z, Y.
Binary prefixes can be used, too: KiB=K, MiB=M, and so on.

Each CONV symbol may be:

  lcase     change upper case to lower case
  ucase     change lower case to upper case
  sync      pad every input block with NULs to ibs-size
  noerror   continue after read errors
  notrunc   do not truncate the output file

Each FLAG symbol may be:

  count_bytes  treat 'count=N' as a byte count (iflag only)
  skip_bytes  treat 'skip=N' as a byte count (iflag only)
";

/// Block size when none is given, as GNU's.
const DEFAULT_BS: u64 = 512;

/// Largest block size accepted: what one buffer may hold (it is also charged to the
/// session's budget).
const MAX_BS: u64 = 1 << 30;

/// `N` with dd's multipliers (`c w b kB K MB M xM GB G …`, `KiB`…) and `AxB` products.
fn parse_number(s: &str) -> Option<u64> {
    let mut total: u64 = 1;
    for part in s.split('x') {
        let end = part
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(part.len());
        if end == 0 {
            return None;
        }
        let n: u64 = part[..end].parse().ok()?;
        let suffix = &part[end..];
        let mult: u64 = match suffix {
            "" | "c" => 1,
            "w" => 2,
            "b" => 512,
            _ => {
                let mut it = suffix.chars();
                let letter = it.next()?;
                // GNU takes `k` for K (1k is 1024, 1kB 1000) but no other lower case.
                let power = match letter {
                    'k' | 'K' => 1,
                    'M' => 2,
                    'G' => 3,
                    'T' => 4,
                    'P' => 5,
                    'E' => 6,
                    _ => return None,
                };
                let base: u64 = match it.as_str() {
                    "" | "iB" => 1024,
                    "B" => 1000,
                    _ => return None,
                };
                base.checked_pow(power)?
            }
        };
        total = total.checked_mul(n.checked_mul(mult)?)?;
    }
    Some(total)
}

#[derive(Default)]
struct Opts {
    input: Option<String>,
    output: Option<String>,
    ibs: Option<u64>,
    obs: Option<u64>,
    bs: Option<u64>,
    count: Option<u64>,
    skip: u64,
    seek: u64,
    notrunc: bool,
    ucase: bool,
    lcase: bool,
    sync: bool,
    noerror: bool,
    skip_bytes: bool,
    count_bytes: bool,
    /// 0 default, 1 noxfer, 2 none.
    quiet: u8,
}

pub struct Dd;

/// Reports a bad operand; `true` adds GNU's `Try` hint.
async fn bad(ctx: &Context, msg: String, hint: bool) -> CmdResult {
    let hint = if hint {
        "Try 'dd --help' for more information.\n"
    } else {
        ""
    };
    ctx.err(format!("dd: {msg}\n{hint}")).await;
    Ok(1)
}

#[async_trait]
impl Command for Dd {
    fn name(&self) -> &'static str {
        "dd"
    }
    fn summary(&self) -> &'static str {
        "convert and copy a file"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut o = Opts::default();
        for a in &args {
            if a == "--help" {
                ctx.out(HELP).await?;
                return Ok(0);
            }
            let Some((key, val)) = a.split_once('=') else {
                if a.starts_with("--") && a.len() > 2 {
                    return bad(ctx, format!("unrecognized option '{a}'"), true).await;
                }
                return bad(ctx, format!("unrecognized operand {}", quote(a)), true).await;
            };
            let number = |v: &str| parse_number(v);
            match key {
                "if" => o.input = Some(val.to_string()),
                "of" => o.output = Some(val.to_string()),
                "bs" | "ibs" | "obs" | "count" | "skip" | "seek" => {
                    let n = match number(val) {
                        Some(n) if !(n == 0 && matches!(key, "bs" | "ibs" | "obs")) => n,
                        _ => {
                            return bad(ctx, format!("invalid number: {}", quote(val)), false)
                                .await;
                        }
                    };
                    if matches!(key, "bs" | "ibs" | "obs") && n > MAX_BS {
                        return bad(ctx, format!("invalid number: {}", quote(val)), false).await;
                    }
                    match key {
                        "bs" => o.bs = Some(n),
                        "ibs" => o.ibs = Some(n),
                        "obs" => o.obs = Some(n),
                        "count" => o.count = Some(n),
                        "skip" => o.skip = n,
                        _ => o.seek = n,
                    }
                }
                "conv" => {
                    for c in val.split(',') {
                        match c {
                            "notrunc" => o.notrunc = true,
                            "ucase" => o.ucase = true,
                            "lcase" => o.lcase = true,
                            "sync" => o.sync = true,
                            "noerror" => o.noerror = true,
                            _ => {
                                return bad(ctx, format!("invalid conversion: {}", quote(c)), true)
                                    .await;
                            }
                        }
                    }
                }
                "iflag" => {
                    for c in val.split(',') {
                        match c {
                            "skip_bytes" => o.skip_bytes = true,
                            "count_bytes" => o.count_bytes = true,
                            _ => {
                                return bad(ctx, format!("invalid input flag: {}", quote(c)), true)
                                    .await;
                            }
                        }
                    }
                }
                "status" => match val {
                    "none" => o.quiet = 2,
                    "noxfer" => o.quiet = 1,
                    "progress" => o.quiet = 0,
                    _ => {
                        return bad(ctx, format!("invalid status level: {}", quote(val)), true)
                            .await;
                    }
                },
                _ => return bad(ctx, format!("unrecognized operand {}", quote(a)), true).await,
            }
        }
        if o.ucase && o.lcase {
            return bad(ctx, "cannot combine lcase and ucase".into(), false).await;
        }
        copy(ctx, o).await
    }
}

/// Where blocks come from.
enum Source {
    File {
        path: String,
        off: u64,
    },
    /// Read as `read(0, buf, n)` does: never more than a block, so what dd does not
    /// copy stays for the next reader (`{ dd bs=2 count=1; cat; } < f`).
    Stdin(Input),
}

impl Source {
    /// One read of up to `n` bytes (empty at end of file).
    async fn read(&mut self, ctx: &Context, n: usize) -> Result<Bytes, FsError> {
        match self {
            Source::File { path, off } => read_file(ctx, path, off, n).await,
            Source::Stdin(input) => Ok(input
                .read_up_to(n)
                .await
                .map_err(|_| FsError::Io)?
                .unwrap_or_default()),
        }
    }
}

/// Reads a whole block of a file (shorter only at its end).
async fn read_file(ctx: &Context, path: &str, off: &mut u64, n: usize) -> Result<Bytes, FsError> {
    let mut got: Vec<u8> = Vec::new();
    while got.len() < n {
        let chunk = ctx.fs.read_at(path, *off, n - got.len()).await?;
        if chunk.is_empty() {
            break;
        }
        *off += chunk.len() as u64;
        if got.is_empty() && chunk.len() == n {
            return Ok(chunk);
        }
        got.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(got))
}

/// Where blocks go.
enum Dest<'a> {
    Stdout(&'a Context),
    File {
        handle: Box<dyn WriteHandle>,
        off: u64,
    },
}

impl Dest<'_> {
    async fn write(&mut self, data: &[u8]) -> Result<Result<(), FsError>, crate::Interrupt> {
        match self {
            Dest::Stdout(ctx) => {
                ctx.out(data).await?;
                Ok(Ok(()))
            }
            Dest::File { handle, off } => {
                let r = handle.write_at(*off, data).await;
                *off += data.len() as u64;
                Ok(r)
            }
        }
    }
}

#[derive(Default)]
struct Counts {
    in_full: u64,
    in_part: u64,
    out_full: u64,
    out_part: u64,
    bytes: u64,
}

async fn copy(ctx: &Context, o: Opts) -> CmdResult {
    let start = Instant::now();
    let ibs = o.bs.or(o.ibs).unwrap_or(DEFAULT_BS) as usize;
    let obs = o.bs.or(o.obs).unwrap_or(DEFAULT_BS) as usize;
    let reblock = o.bs.is_none();
    let _charge = ctx.budget.charge(ibs + if reblock { 2 * obs } else { 0 })?;
    let in_name = o.input.clone().unwrap_or_else(|| "standard input".into());
    let mut source = match o.input.as_deref() {
        Some(name) => {
            let path = ctx.path(name);
            match ctx.fs.stat(&path).await {
                Ok(_) => Source::File { path, off: 0 },
                Err(e) => {
                    ctx.warn("dd", format!("failed to open {}: {e}", quote(name)))
                        .await;
                    return Ok(1);
                }
            }
        }
        None => Source::Stdin(ctx.stdin.clone()),
    };
    // Output: opened (and truncated at seek unless notrunc) before anything is read.
    let obs64 = obs as u64;
    let seek_bytes = o.seek.saturating_mul(obs64);
    let out_name = o.output.clone();
    let mut dest = match out_name.as_deref() {
        None => {
            if o.seek > 0 {
                ctx.warn("dd", "'standard output': cannot seek: Illegal seek")
                    .await;
                return Ok(1);
            }
            Dest::Stdout(ctx)
        }
        Some(name) => {
            let path = ctx.path(name);
            let opened = if !o.notrunc && o.seek == 0 {
                ctx.fs.open_write(&path, WriteMode::Truncate).await
            } else {
                match ctx.fs.open_write(&path, WriteMode::Update).await {
                    Ok(h) => match h.close().await {
                        Ok(()) => {
                            let cut = if o.notrunc {
                                Ok(())
                            } else {
                                ctx.fs.truncate(&path, seek_bytes).await
                            };
                            match cut {
                                Ok(()) => ctx.fs.open_write(&path, WriteMode::Update).await,
                                Err(e) => Err(e),
                            }
                        }
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                }
            };
            match opened {
                Ok(handle) => Dest::File {
                    handle,
                    off: seek_bytes,
                },
                Err(e) => {
                    ctx.warn("dd", format!("failed to open {}: {e}", quote(name)))
                        .await;
                    return Ok(1);
                }
            }
        }
    };
    let mut pacer = Pacer::default();
    let mut counts = Counts::default();
    let mut status = 0;
    let read_err = |e: FsError| format!("error reading {}: {e}", quote(&in_name));
    // Skip.
    let skip_total = if o.skip_bytes {
        o.skip
    } else {
        o.skip.saturating_mul(ibs as u64)
    };
    if skip_total > 0 {
        let reached = match &mut source {
            Source::File { path, off } => {
                let len = ctx.fs.stat(path).await.map(|m| m.len).unwrap_or(0);
                *off = skip_total;
                len >= skip_total
            }
            Source::Stdin { .. } => {
                let mut left = skip_total;
                while left > 0 {
                    pacer.tick(ctx).await?;
                    let want = usize::try_from(left).unwrap_or(usize::MAX).min(ibs);
                    match source.read(ctx, want).await {
                        Ok(b) if b.is_empty() => break,
                        Ok(b) => left -= b.len() as u64,
                        Err(e) => {
                            ctx.warn("dd", read_err(e)).await;
                            return Ok(1);
                        }
                    }
                }
                left == 0
            }
        };
        if !reached {
            ctx.warn(
                "dd",
                format!("{}: cannot skip to specified offset", quotef(&in_name)),
            )
            .await;
        }
    }
    let mut left_bytes = if o.count_bytes { o.count } else { None };
    let mut left_blocks = if o.count_bytes { None } else { o.count };
    let mut outbuf: Vec<u8> = Vec::new();
    loop {
        if left_blocks == Some(0) || left_bytes == Some(0) {
            break;
        }
        pacer.tick(ctx).await?;
        let want = match left_bytes {
            Some(b) => usize::try_from(b).unwrap_or(usize::MAX).min(ibs),
            None => ibs,
        };
        let got = source.read(ctx, want).await;
        let block = match got {
            Ok(b) => b,
            Err(e) => {
                let e_kind = e.clone();
                ctx.warn("dd", read_err(e)).await;
                status = 1;
                // With noerror a file's bad block is stepped over; a failing pipe or a
                // failure that does not move on ends the copy.
                match &mut source {
                    Source::File { path, off } if o.noerror && e_kind != FsError::IsADirectory => {
                        let len = ctx.fs.stat(path).await.map(|m| m.len).unwrap_or(0);
                        *off = off.saturating_add(want as u64);
                        if *off >= len {
                            break;
                        }
                        continue;
                    }
                    _ => break,
                }
            }
        };
        if block.is_empty() {
            break;
        }
        if let Some(b) = left_blocks.as_mut() {
            *b -= 1;
        }
        if let Some(b) = left_bytes.as_mut() {
            *b -= block.len() as u64;
        }
        if block.len() == ibs {
            counts.in_full += 1;
        } else {
            counts.in_part += 1;
        }
        let mut data = block.to_vec();
        if o.sync && data.len() < ibs {
            data.resize(ibs, 0);
        }
        if o.ucase {
            data.make_ascii_uppercase();
        } else if o.lcase {
            data.make_ascii_lowercase();
        }
        if !reblock {
            if let Err(e) = dest.write(&data).await? {
                status = write_failed(ctx, &out_name, e).await;
                break;
            }
            counts.bytes += data.len() as u64;
            if data.len() == obs {
                counts.out_full += 1;
            } else {
                counts.out_part += 1;
            }
            continue;
        }
        outbuf.extend_from_slice(&data);
        while outbuf.len() >= obs {
            let rest = outbuf.split_off(obs);
            if let Err(e) = dest.write(&outbuf).await? {
                status = write_failed(ctx, &out_name, e).await;
                outbuf.clear();
                break;
            }
            counts.bytes += obs as u64;
            counts.out_full += 1;
            outbuf = rest;
        }
        if status != 0 {
            break;
        }
    }
    if status == 0 && !outbuf.is_empty() {
        match dest.write(&outbuf).await? {
            Ok(()) => {
                counts.bytes += outbuf.len() as u64;
                counts.out_part += 1;
            }
            Err(e) => status = write_failed(ctx, &out_name, e).await,
        }
    }
    if let Dest::File { handle, .. } = dest
        && let Err(e) = handle.close().await
    {
        status = write_failed(ctx, &out_name, e).await;
    }
    if o.quiet < 2 {
        let mut report = format!(
            "{}+{} records in\n{}+{} records out\n",
            counts.in_full, counts.in_part, counts.out_full, counts.out_part
        );
        if o.quiet == 0 {
            report.push_str(&transfer_line(counts.bytes, start.elapsed().as_secs_f64()));
        }
        ctx.err(report).await;
    }
    Ok(status)
}

async fn write_failed(ctx: &Context, out: &Option<String>, e: FsError) -> i32 {
    let name = out.as_deref().unwrap_or("standard output");
    ctx.warn("dd", format!("error writing {}: {e}", quote(name)))
        .await;
    1
}

/// `N bytes (1.0 kB, 1.0 KiB) copied, T s, R kB/s`, as GNU words it.
fn transfer_line(bytes: u64, secs: f64) -> String {
    let si = human(bytes as f64, 1000.0, false);
    let iec = human(bytes as f64, 1024.0, true);
    let rate = if secs > 0.0 {
        format!("{}/s", human(bytes as f64 / secs, 1000.0, false))
    } else {
        "Infinity B/s".into()
    };
    let secs = super::od::format_g(secs, 5);
    let plural = if bytes == 1 { "byte" } else { "bytes" };
    if bytes < 1000 {
        format!("{bytes} {plural} copied, {secs} s, {rate}\n")
    } else if bytes < 1024 {
        format!("{bytes} bytes ({si}) copied, {secs} s, {rate}\n")
    } else {
        format!("{bytes} bytes ({si}, {iec}) copied, {secs} s, {rate}\n")
    }
}

/// A size with one unit prefix: one decimal below 10, whole numbers above.
fn human(mut v: f64, base: f64, iec: bool) -> String {
    const SI: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    const IEC: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut unit = 0;
    while v >= base && unit < 6 {
        v /= base;
        unit += 1;
    }
    let name = if iec { IEC[unit] } else { SI[unit] };
    if unit == 0 {
        // Rates below 1 kB/s read as 0.x kB/s in GNU's output.
        if !iec {
            return format!("{:.1} kB", v / 1000.0);
        }
        return format!("{v:.0} {name}");
    }
    if v < 10.0 {
        format!("{v:.1} {name}")
    } else {
        format!("{v:.0} {name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[test]
    fn numbers() {
        assert_eq!(parse_number("512"), Some(512));
        assert_eq!(parse_number("2x3"), Some(6));
        assert_eq!(parse_number("1K"), Some(1024));
        assert_eq!(parse_number("1kB"), Some(1000));
        assert_eq!(parse_number("1k"), Some(1024));
        assert_eq!(parse_number("1m"), None);
        assert_eq!(parse_number("2b"), Some(1024));
        assert_eq!(parse_number("x"), None);
        assert_eq!(parse_number("-1"), None);
    }

    #[tokio::test]
    async fn copies_blocks() {
        let inv = Invocation {
            stdin: b"hello world\n".to_vec(),
            ..Invocation::default()
        };
        let (st, out, err) = inv.run(&Dd, &["bs=4", "count=2"]).await;
        assert_eq!((st, out.as_str()), (0, "hello wo"));
        assert!(err.starts_with("2+0 records in\n2+0 records out\n8 bytes copied, "));
        let (_, out, err) = inv.run(&Dd, &["conv=ucase", "status=none"]).await;
        assert_eq!((out.as_str(), err.as_str()), ("HELLO WORLD\n", ""));
        let (st, _, err) = inv.run(&Dd, &["bs=x"]).await;
        assert_eq!((st, err.as_str()), (1, "dd: invalid number: 'x'\n"));
    }
}

//! `split`: split a file into pieces by lines, bytes or a number of chunks, streaming
//! the input in chunks and writing each piece through the filesystem port.

use async_trait::async_trait;
use bytes::Bytes;
use clap::Parser;

use super::textin::slurp;
use super::util::{Pacer, Reader, quote, quotef};
use crate::fs::{WriteHandle, WriteMode};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Output pieces of FILE to PREFIXaa, PREFIXab, ...; default size is 1000 lines, and
/// default PREFIX is 'x'. With no FILE, or when FILE is -, read standard input.
#[derive(Parser, Debug)]
#[command(name = "split")]
struct Args {
    /// Generate suffixes of length N (default 2).
    #[arg(short = 'a', long = "suffix-length", value_name = "N")]
    suffix_length: Option<String>,
    /// Append an additional SUFFIX to file names.
    #[arg(long = "additional-suffix", value_name = "SUFFIX")]
    additional_suffix: Option<String>,
    /// Put SIZE bytes per output file.
    #[arg(short = 'b', long, value_name = "SIZE")]
    bytes: Option<String>,
    /// Put at most SIZE bytes of records per output file.
    #[arg(short = 'C', long = "line-bytes", value_name = "SIZE")]
    line_bytes: Option<String>,
    /// Use numeric suffixes starting at 0, not alphabetic.
    #[arg(short = 'd')]
    numeric: bool,
    /// Same as -d, but start the suffixes at FROM.
    #[arg(long = "numeric-suffixes", value_name = "FROM", num_args = 0..=1,
          require_equals = true, default_missing_value = "0")]
    numeric_from: Option<String>,
    /// Use hex suffixes starting at 0, not alphabetic.
    #[arg(short = 'x')]
    hex: bool,
    /// Do not generate empty output files with '-n'.
    #[arg(short = 'e', long = "elide-empty-files")]
    elide_empty: bool,
    /// Put NUMBER lines/records per output file.
    #[arg(short = 'l', long, value_name = "NUMBER")]
    lines: Option<String>,
    /// Generate CHUNKS output files: N, K/N (chunk K of N to stdout), l/N and l/K/N (lines
    /// kept whole), r/N and r/K/N (lines dealt round robin).
    #[arg(short = 'n', long = "number", value_name = "CHUNKS")]
    number: Option<String>,
    /// Print a diagnostic just before each output file is opened.
    #[arg(long)]
    verbose: bool,
    /// [FILE [PREFIX]]
    operands: Vec<String>,
}

/// Most chunks `-n` makes: more files than the longest suffixes name are refused by
/// then anyway, and each chunk is a buffer.
const MAX_CHUNKS: u64 = 1 << 16;

/// `10`, `2K`, `1MB`: a size with GNU's suffixes (K=1024, KB=1000, and b=512).
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: u64 = s[..digits].parse().ok()?;
    let suffix = &s[digits..];
    let mult: u64 = match suffix {
        "" => 1,
        "b" => 512,
        "KB" | "kB" => 1000,
        "K" | "k" | "KiB" | "kiB" => 1024,
        _ => {
            let units = ["K", "M", "G", "T", "P", "E"];
            let (unit, rest) = suffix.split_at(1);
            let pos = units.iter().position(|u| *u == unit)? as u32 + 1;
            match rest {
                "" | "iB" => 1024u64.checked_pow(pos)?,
                "B" => 1000u64.checked_pow(pos)?,
                _ => return None,
            }
        }
    };
    n.checked_mul(mult)
}

/// File names PREFIX + suffix + additional suffix, in order.
struct Names {
    prefix: String,
    extra: String,
    len: usize,
    radix: u32,
    next: u64,
}

impl Names {
    fn next(&mut self) -> Option<String> {
        let max = u64::from(self.radix).checked_pow(u32::try_from(self.len).ok()?);
        if max.is_some_and(|m| self.next >= m) {
            return None;
        }
        let mut n = self.next;
        self.next += 1;
        let mut digits = vec![0u8; self.len];
        for d in digits.iter_mut().rev() {
            let v = (n % u64::from(self.radix)) as u8;
            n /= u64::from(self.radix);
            *d = match self.radix {
                26 => b'a' + v,
                _ if v < 10 => b'0' + v,
                _ => b'a' + v - 10,
            };
        }
        Some(format!(
            "{}{}{}",
            self.prefix,
            String::from_utf8_lossy(&digits),
            self.extra
        ))
    }
}

/// The piece being written.
struct Piece {
    name: String,
    handle: Box<dyn WriteHandle>,
}

struct Writer<'a> {
    ctx: &'a Context,
    names: Names,
    cur: Option<Piece>,
    verbose: bool,
}

impl Writer<'_> {
    /// Closes the current piece and opens the next; `Ok(false)` after a reported error.
    async fn open_next(&mut self) -> Result<bool, Interrupt> {
        if !self.close().await? {
            return Ok(false);
        }
        let Some(name) = self.names.next() else {
            self.ctx
                .warn("split", "output file suffixes exhausted")
                .await;
            return Ok(false);
        };
        if self.verbose {
            self.ctx
                .out(format!("creating file {}\n", quote(&name)))
                .await?;
        }
        match self
            .ctx
            .fs
            .open_write(&self.ctx.path(&name), WriteMode::Truncate)
            .await
        {
            Ok(handle) => {
                self.cur = Some(Piece { name, handle });
                Ok(true)
            }
            Err(e) => {
                self.ctx
                    .warn("split", format!("{}: {e}", quotef(&name)))
                    .await;
                Ok(false)
            }
        }
    }

    async fn write(&mut self, data: &[u8]) -> Result<bool, Interrupt> {
        if let Some(p) = self.cur.as_mut()
            && let Err(e) = p.handle.write(data).await
        {
            self.ctx
                .warn("split", format!("{}: {e}", quotef(&p.name)))
                .await;
            return Ok(false);
        }
        Ok(true)
    }

    async fn close(&mut self) -> Result<bool, Interrupt> {
        if let Some(p) = self.cur.take()
            && let Err(e) = p.handle.close().await
        {
            self.ctx
                .warn("split", format!("{}: {e}", quotef(&p.name)))
                .await;
            return Ok(false);
        }
        Ok(true)
    }
}

enum Mode {
    Lines(u64),
    Bytes(u64),
    /// `-C SIZE`: at most SIZE bytes of whole lines per piece (a longer line is cut).
    LineBytes(u64),
    /// `-n [l/|r/][K/]N`: N chunks, of bytes, whole lines or lines dealt round robin; with
    /// K, only chunk K, to standard output.
    Chunks {
        how: ChunkKind,
        k: Option<u64>,
        n: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkKind {
    Bytes,
    Lines,
    RoundRobin,
}

/// Parses `-n`'s CHUNKS; `Err(status)` after reporting a bad one as GNU does.
async fn parse_chunks(ctx: &Context, text: &str) -> Result<Mode, crate::Status> {
    let (how, rest) = if let Some(r) = text.strip_prefix("l/") {
        (ChunkKind::Lines, r)
    } else if let Some(r) = text.strip_prefix("r/") {
        (ChunkKind::RoundRobin, r)
    } else {
        (ChunkKind::Bytes, text)
    };
    let (k_text, n_text) = match rest.split_once('/') {
        Some((k, n)) => (Some(k), n),
        None => (None, rest),
    };
    let n = match n_text.parse::<u64>() {
        Ok(n) if n > 0 => n,
        n => return Err(invalid_count(ctx, "chunks", n_text, n.is_ok()).await),
    };
    let k = match k_text.map(str::parse::<u64>) {
        None => None,
        Some(Ok(k)) if k > 0 && k <= n => Some(k),
        Some(k) => {
            let why = if k.is_ok() {
                ": Numerical result out of range"
            } else {
                ""
            };
            let k_text = k_text.unwrap_or_default();
            ctx.warn(
                "split",
                format!("invalid chunk number: {}{why}", quote(k_text)),
            )
            .await;
            return Err(1);
        }
    };
    Ok(Mode::Chunks { how, k, n })
}

/// `split: invalid number of WHAT: 'TEXT'`; a number that is one (0) is also out of
/// range, in GNU's words. Status 1.
async fn invalid_count(ctx: &Context, what: &str, text: &str, number: bool) -> crate::Status {
    let why = if number {
        ": Numerical result out of range"
    } else {
        ""
    };
    ctx.warn(
        "split",
        format!("invalid number of {what}: {}{why}", quote(text)),
    )
    .await;
    1
}

pub struct Split;

#[async_trait]
impl Command for Split {
    fn name(&self) -> &'static str {
        "split"
    }
    fn summary(&self) -> &'static str {
        "split a file into pieces"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if let Some(extra) = args.operands.get(2) {
            ctx.err(format!(
                "split: extra operand {}\nTry 'split --help' for more information.\n",
                quote(extra)
            ))
            .await;
            return Ok(1);
        }
        let ways = [
            args.lines.is_some(),
            args.bytes.is_some(),
            args.line_bytes.is_some(),
            args.number.is_some(),
        ];
        if ways.iter().filter(|w| **w).count() > 1 {
            let msg = "cannot split in more than one way";
            return Ok(super::util::usage_error(ctx, "split", msg).await);
        }
        let mode = if let Some(l) = &args.lines {
            match l.parse::<u64>() {
                Ok(n) if n > 0 => Mode::Lines(n),
                n => return Ok(invalid_count(ctx, "lines", l, n.is_ok()).await),
            }
        } else if let Some(b) = &args.bytes {
            match parse_size(b) {
                Some(n) if n > 0 => Mode::Bytes(n),
                n => return Ok(invalid_count(ctx, "bytes", b, n.is_some()).await),
            }
        } else if let Some(b) = &args.line_bytes {
            match parse_size(b) {
                Some(n) if n > 0 => Mode::LineBytes(n),
                n => return Ok(invalid_count(ctx, "bytes", b, n.is_some()).await),
            }
        } else if let Some(n) = &args.number {
            match parse_chunks(ctx, n).await {
                Ok(m) => m,
                Err(st) => return Ok(st),
            }
        } else {
            Mode::Lines(1000)
        };
        let len = match args.suffix_length.as_deref().map(str::parse::<usize>) {
            None => 2,
            Some(Ok(n)) if n > 0 && n <= 64 => n,
            Some(_) => {
                let v = args.suffix_length.clone().unwrap_or_default();
                ctx.warn("split", format!("invalid suffix length: {}", quote(&v)))
                    .await;
                return Ok(1);
            }
        };
        let from = match args.numeric_from.as_deref().map(str::parse::<u64>) {
            None => None,
            Some(Ok(n)) => Some(n),
            Some(Err(_)) => {
                let v = args.numeric_from.clone().unwrap_or_default();
                let msg = format!("{}: invalid start value for numerical suffix", quote(&v));
                return Ok(super::util::usage_error(ctx, "split", &msg).await);
            }
        };
        let input = args.operands.first().cloned().unwrap_or_else(|| "-".into());
        let names = Names {
            prefix: args.operands.get(1).cloned().unwrap_or_else(|| "x".into()),
            extra: args.additional_suffix.clone().unwrap_or_default(),
            len,
            radix: if args.hex {
                16
            } else if args.numeric || from.is_some() {
                10
            } else {
                26
            },
            next: from.unwrap_or(0),
        };
        let mut reader = match Reader::open(ctx, &input).await {
            Ok(r) => r,
            Err(e) => {
                ctx.warn(
                    "split",
                    format!("cannot open {} for reading: {e}", quote(&input)),
                )
                .await;
                return Ok(1);
            }
        };
        let mut w = Writer {
            ctx,
            names,
            cur: None,
            verbose: args.verbose,
        };
        let ok = match mode {
            Mode::Lines(n) => by_lines(ctx, &mut reader, &mut w, &input, n).await?,
            Mode::Bytes(n) => by_bytes(ctx, &mut reader, &mut w, &input, n).await?,
            Mode::LineBytes(n) | Mode::Chunks { n, .. } => {
                let mut charge = ctx.budget.empty_charge();
                let Some(data) = slurp(ctx, "split", &input, &mut charge).await? else {
                    return Ok(1);
                };
                // The pieces are a second copy of the input.
                let _copy = ctx.budget.charge(data.len())?;
                let pieces = match mode {
                    Mode::Chunks { how, .. } => chunk_pieces(&data, how, n),
                    _ => line_bytes_pieces(&data, n),
                };
                let k = match mode {
                    Mode::Chunks { k, .. } => k,
                    _ => None,
                };
                let elide = args.elide_empty || matches!(mode, Mode::LineBytes(_));
                match k {
                    Some(k) => {
                        let i = usize::try_from(k - 1).unwrap_or(usize::MAX);
                        let piece = pieces.get(i).map(Vec::as_slice).unwrap_or_default();
                        ctx.out(piece.to_vec()).await?;
                        true
                    }
                    None => write_pieces(ctx, &mut w, &pieces, elide).await?,
                }
            }
        };
        let closed = w.close().await?;
        Ok(if ok && closed { 0 } else { 1 })
    }
}

async fn next_chunk(
    ctx: &Context,
    reader: &mut Reader,
    input: &str,
) -> Result<Result<Option<Bytes>, ()>, Interrupt> {
    match reader.chunk().await {
        Ok(c) => Ok(Ok(c)),
        Err(e) => {
            ctx.warn("split", format!("{}: {e}", quotef(input))).await;
            Ok(Err(()))
        }
    }
}

async fn by_lines(
    ctx: &Context,
    reader: &mut Reader,
    w: &mut Writer<'_>,
    input: &str,
    n: u64,
) -> Result<bool, Interrupt> {
    let mut in_piece = n;
    let mut pacer = Pacer::default();
    loop {
        let Ok(chunk) = next_chunk(ctx, reader, input).await? else {
            return Ok(false);
        };
        let Some(mut chunk) = chunk else {
            return Ok(true);
        };
        while !chunk.is_empty() {
            if in_piece == n {
                if !w.open_next().await? {
                    return Ok(false);
                }
                in_piece = 0;
            }
            // Up to the end of the piece's last line, or all of the chunk.
            let mut cut = chunk.len();
            let mut seen = in_piece;
            for (i, b) in chunk.iter().enumerate() {
                if *b == b'\n' {
                    seen += 1;
                    if seen == n {
                        cut = i + 1;
                        break;
                    }
                }
            }
            let piece = chunk.split_to(cut);
            in_piece += piece.iter().filter(|b| **b == b'\n').count() as u64;
            if !w.write(&piece).await? {
                return Ok(false);
            }
            pacer.tick(ctx).await?;
        }
    }
}

async fn by_bytes(
    ctx: &Context,
    reader: &mut Reader,
    w: &mut Writer<'_>,
    input: &str,
    n: u64,
) -> Result<bool, Interrupt> {
    let mut in_piece = n;
    let mut pacer = Pacer::default();
    loop {
        let Ok(chunk) = next_chunk(ctx, reader, input).await? else {
            return Ok(false);
        };
        let Some(mut chunk) = chunk else {
            return Ok(true);
        };
        while !chunk.is_empty() {
            if in_piece == n {
                if !w.open_next().await? {
                    return Ok(false);
                }
                in_piece = 0;
            }
            let room = usize::try_from(n - in_piece).unwrap_or(usize::MAX);
            let piece = chunk.split_to(room.min(chunk.len()));
            in_piece += piece.len() as u64;
            if !w.write(&piece).await? {
                return Ok(false);
            }
            pacer.tick(ctx).await?;
        }
    }
}

/// `-C SIZE`: pieces of at most `size` bytes that end after the last newline they can
/// hold; a piece that holds none is cut at `size` bytes; what is left when less than
/// `size` bytes remain is the last piece (GNU's `line_bytes_split`).
fn line_bytes_pieces(data: &[u8], size: u64) -> Vec<Vec<u8>> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let mut pieces = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let rest = data.len() - pos;
        let end = if rest < size {
            data.len()
        } else {
            match data[pos..pos + size].iter().rposition(|b| *b == b'\n') {
                Some(p) => pos + p + 1,
                None => pos + size,
            }
        };
        pieces.push(data[pos..end].to_vec());
        pos = end;
    }
    pieces
}

/// `-n`'s `n` chunks, as GNU 9.1 cuts them: each `size / n` bytes, the last taking the
/// remainder; with lines, a chunk ends at the first newline at or after its last byte (an
/// empty chunk when a long line went past it); round robin deals line `i` to chunk
/// `i % n`.
fn chunk_pieces(data: &[u8], how: ChunkKind, n: u64) -> Vec<Vec<u8>> {
    let n = n.min(MAX_CHUNKS);
    if how == ChunkKind::RoundRobin {
        let k = n as usize;
        let mut pieces = vec![Vec::new(); k];
        for (i, line) in data.split_inclusive(|b| *b == b'\n').enumerate() {
            pieces[i % k].extend_from_slice(line);
        }
        return pieces;
    }
    let size = data.len() as u64;
    // Bytes: at least one per chunk (a short input fills the first chunks, as GNU's).
    let per = if how == ChunkKind::Bytes {
        (size / n).max(1)
    } else {
        size / n
    };
    let mut pieces = Vec::new();
    let mut start = 0usize;
    for i in 0..n {
        let bound = if i + 1 == n {
            data.len()
        } else {
            usize::try_from((i + 1).saturating_mul(per))
                .unwrap_or(data.len())
                .min(data.len())
        };
        let end = if how == ChunkKind::Bytes || i + 1 == n {
            bound.max(start)
        } else if bound < start {
            start
        } else {
            let from = bound.saturating_sub(1).max(start);
            match data[from..].iter().position(|b| *b == b'\n') {
                Some(p) => from + p + 1,
                None => data.len(),
            }
        };
        pieces.push(data[start..end].to_vec());
        start = end;
    }
    pieces
}

/// Writes each piece to the next file (an empty one is skipped under `elide`).
async fn write_pieces(
    ctx: &Context,
    w: &mut Writer<'_>,
    pieces: &[Vec<u8>],
    elide: bool,
) -> Result<bool, Interrupt> {
    for piece in pieces {
        if elide && piece.is_empty() {
            continue;
        }
        if !w.open_next().await? || !w.write(piece).await? {
            return Ok(false);
        }
        ctx.checkpoint().await?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    fn inv() -> (Invocation, std::sync::Arc<MemFs>) {
        let fs = MemFs::with_files(&[("/in", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")]);
        (
            Invocation {
                fs: fs.clone(),
                ..Invocation::default()
            },
            fs,
        )
    }

    #[tokio::test]
    async fn by_lines_and_bytes() {
        let (inv, fs) = inv();
        assert_eq!(inv.run(&Split, &["-l", "3", "in"]).await.0, 0);
        assert_eq!(fs.text("/xaa").unwrap(), "1\n2\n3\n");
        assert_eq!(fs.text("/xad").unwrap(), "10\n");
        assert_eq!(
            inv.run(
                &Split,
                &[
                    "-b",
                    "5",
                    "-d",
                    "-a",
                    "3",
                    "--additional-suffix=.t",
                    "in",
                    "p"
                ]
            )
            .await
            .0,
            0
        );
        assert_eq!(fs.text("/p000.t").unwrap(), "1\n2\n3");
        assert_eq!(fs.text("/p004.t").unwrap(), "\n");
    }

    #[tokio::test]
    async fn by_chunks() {
        let (inv, fs) = inv();
        assert_eq!(inv.run(&Split, &["-n", "3", "in"]).await.0, 0);
        assert_eq!(fs.text("/xab").unwrap(), "\n5\n6\n7\n");
        assert_eq!(inv.run(&Split, &["-n", "l/3", "in", "l"]).await.0, 0);
        assert_eq!(fs.text("/laa").unwrap(), "1\n2\n3\n4\n");
        assert_eq!(fs.text("/lac").unwrap(), "8\n9\n10\n");
    }

    #[tokio::test]
    async fn errors() {
        let (inv, _) = inv();
        let (st, _, err) = inv.run(&Split, &["-a", "1", "-l", "1", "in"]).await;
        assert_eq!((st, err.as_str()), (0, ""));
        let (st, _, err) = inv.run(&Split, &["-d", "-a", "1", "-b", "1", "in"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "split: output file suffixes exhausted\n")
        );
        assert_eq!(inv.run(&Split, &["-l", "0", "in"]).await.0, 1);
        assert_eq!(inv.run(&Split, &["-b", "2x", "in"]).await.0, 1);
        assert_eq!(parse_size("1K"), Some(1024));
        assert_eq!(parse_size("2MB"), Some(2_000_000));
    }
}

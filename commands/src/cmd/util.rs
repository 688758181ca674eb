//! Helpers several commands share: GNU-style quoting, reading operands (files or `-` for
//! stdin) in chunks or lines, buffered stdout, cooperative yielding, and formatting.

use std::sync::Arc;

use bytes::Bytes;

use crate::fs::{FileKind, FileSystem, FsError, FsResult, Metadata, READ_CHUNK};
use crate::io::Input;
use crate::{Charge, Context, Interrupt, OutOfMemory};

/// Longest line a line-oriented command holds at once; a longer line is handled in pieces
/// of this size, so a file without newlines cannot make a command buffer without bound.
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;

/// Bytes [`BufOut`] gathers before it writes to stdout: big enough that a line-per-write
/// command does not send a pipe message per line, small enough to keep latency low.
pub(crate) const OUT_BUF: usize = 32 * 1024;

/// Loop iterations between two [`Context::checkpoint`]s in [`Pacer`]: often enough that
/// Ctrl-C is prompt, rarely enough that yielding costs nothing measurable.
pub(crate) const PACE_EVERY: u32 = 256;

/// Deepest directory nesting a recursive command (`rm -r`, `cp -r`, `ls -R`, `du`,
/// `grep -r`, `chmod -R`) descends; a deeper tree is reported rather than followed, so a
/// pathological tree cannot exhaust memory or time.
pub(crate) const MAX_DEPTH: usize = 256;

/// `t` as a chrono date, clamped to chrono's range (about 262,000 years either side of
/// 1970). chrono's own `From<SystemTime>` panics outside it, and a file's mtime is
/// object metadata that any S3 tool can set to anything.
pub(crate) fn utc(t: std::time::SystemTime) -> chrono::DateTime<chrono::Utc> {
    use chrono::{DateTime, Utc};
    let (secs, nanos) = match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        ),
        Err(e) => {
            let d = e.duration();
            let s = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            match d.subsec_nanos() {
                0 => (-s, 0),
                n => (-s - 1, 1_000_000_000 - n),
            }
        }
    };
    DateTime::<Utc>::from_timestamp(secs, nanos).unwrap_or(if secs < 0 {
        DateTime::<Utc>::MIN_UTC
    } else {
        DateTime::<Utc>::MAX_UTC
    })
}

/// Reports a usage error the GNU way: `name: msg` and the `--help` hint, on stderr; status 1,
/// which most GNU tools give for it (callers with another status return their own).
pub(crate) async fn usage_error(ctx: &Context, name: &str, msg: &str) -> crate::Status {
    ctx.err(format!(
        "{name}: {msg}\nTry '{name} --help' for more information.\n"
    ))
    .await;
    1
}

/// Reports a missing operand the GNU way; GNU gives status 1 for it.
pub(crate) async fn missing_operand(ctx: &Context, name: &str) -> crate::Status {
    usage_error(ctx, name, "missing operand").await
}

/// The character C's one-letter escapes `\n \t \a \b \f \r` stand for, which the
/// tools with their own small escape sets (hexdump's formats, bc's `print`) share.
pub(crate) fn c_escape(c: char) -> Option<char> {
    Some(match c {
        'n' => '\n',
        't' => '\t',
        'a' => '\x07',
        'b' => '\x08',
        'f' => '\x0c',
        'r' => '\r',
        _ => return None,
    })
}

/// Whether the environment's locale (the first set of LC_ALL, LC_CTYPE, LANG) is UTF-8;
/// otherwise a character is a byte, as in the C locale.
pub(crate) fn utf8_locale(env: &std::collections::BTreeMap<String, String>) -> bool {
    let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|k| env.get(*k).filter(|v| !v.is_empty()))
        .map(|v| v.to_ascii_lowercase())
        .unwrap_or_default();
    locale.contains("utf-8") || locale.contains("utf8")
}

/// `'name'`, as GNU tools quote a file name in a message (`"name"` if it holds a `'`).
pub(crate) fn quote(s: &str) -> String {
    if crate::bytetext::has_bytes(s) {
        // A byte that is not UTF-8 prints as `$'\351'`, in GNU's shell quoting.
        return super::printf::gnu_quote(s, true);
    }
    if s.contains('\'') {
        format!("\"{s}\"")
    } else {
        format!("'{s}'")
    }
}

/// The name as is when it is plain, else [`quote`]d (GNU's `quotef`, used in
/// `cat: name: reason`).
pub(crate) fn quotef(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || "-_./,+:@%^=~".contains(c));
    if plain { s.to_string() } else { quote(s) }
}

/// Calls [`Context::checkpoint`] every [`PACE_EVERY`] ticks.
#[derive(Default)]
pub(crate) struct Pacer(u32);

impl Pacer {
    pub(crate) async fn tick(&mut self, ctx: &Context) -> Result<(), Interrupt> {
        self.0 += 1;
        if self.0 >= PACE_EVERY {
            self.0 = 0;
            ctx.checkpoint().await?;
        }
        Ok(())
    }
}

/// Buffered stdout: gathers up to [`OUT_BUF`] bytes per write, and writes through at once
/// when stdout is a terminal (so interactive use sees each line).
pub(crate) struct BufOut<'a> {
    ctx: &'a Context,
    buf: Vec<u8>,
}

impl<'a> BufOut<'a> {
    pub(crate) fn new(ctx: &'a Context) -> BufOut<'a> {
        BufOut {
            ctx,
            buf: Vec::new(),
        }
    }

    pub(crate) async fn write(&mut self, data: &[u8]) -> Result<(), Interrupt> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= OUT_BUF || self.ctx.tty.is_some() {
            self.flush().await?;
        }
        Ok(())
    }

    /// Writes text: the bytes it stands for (names and arguments may hold bytes that are
    /// not UTF-8; see [`crate::bytetext`]).
    pub(crate) async fn write_text(&mut self, text: &str) -> Result<(), Interrupt> {
        self.write(&crate::bytetext::encode(text)).await
    }

    pub(crate) async fn flush(&mut self) -> Result<(), Interrupt> {
        if !self.buf.is_empty() {
            let data = Bytes::from(std::mem::take(&mut self.buf));
            self.ctx.stdout.write_bytes(data).await?;
        }
        Ok(())
    }
}

enum Src {
    Stdin(Input),
    File {
        fs: Arc<dyn FileSystem>,
        path: String,
        off: u64,
        is_dir: bool,
    },
}

/// An operand opened for reading: a file through ranged reads, or stdin for `-`.
///
/// What it holds for lines is charged to the session's budget: the line being gathered
/// and the last line it gave out (until the next read, as a caller holds about one line
/// at a time; a caller that keeps lines charges them itself).
/// Largest ranged read of a streaming [`Reader`]: bounds the bytes one read holds.
const MAX_STREAM_CHUNK: usize = 1024 * 1024;

pub(crate) struct Reader {
    src: Src,
    /// The file's first chunk, read ahead of time ([`Reader::with_first_chunk`]).
    first: Option<FsResult<Bytes>>,
    /// Read but not yet consumed.
    pending: Bytes,
    /// A line being gathered across chunks (empty between calls).
    partial: Vec<u8>,
    eof: bool,
    /// Size of the next ranged read: [`READ_CHUNK`] at first, doubled by each read up to
    /// [`MAX_STREAM_CHUNK`], so a small file costs one small read and a big one is
    /// streamed in few reads (each read is a round trip through the VFS).
    chunk_len: usize,
    /// How much one read of standard input asks for; `None`: whatever is there (a
    /// pipe's next chunk, [`READ_CHUNK`] of a file).
    read_size: Option<usize>,
    /// Covers `partial` while a line is gathered, then the line given out, until the
    /// next read.
    charge: Charge,
}

impl Reader {
    /// Opens `operand` (`-` is stdin). Fails as `open` would (missing file, bad parent);
    /// a directory opens, and its first read fails with [`FsError::IsADirectory`].
    pub(crate) async fn open(ctx: &Context, operand: &str) -> FsResult<Reader> {
        let mut path = ctx.path(operand);
        // The command's own standard input, by any of its names; its device opens a
        // regular file on standard input afresh, at its start, as on Linux.
        if operand == "-" || matches!(path.as_str(), "/dev/stdin" | "/dev/fd/0") {
            match ctx.stdin.origin() {
                Some(file) if operand != "-" => path = file.to_string(),
                _ => return Ok(Reader::stdin(ctx)),
            }
        }
        let meta = ctx.fs.stat(&path).await?;
        Ok(Reader::new(
            ctx,
            Src::File {
                fs: ctx.fs.clone(),
                path,
                off: 0,
                is_dir: meta.is_dir(),
            },
        ))
    }

    /// Gives a file's reader what reading its first chunk (`READ_CHUNK` bytes at offset 0)
    /// returned when it was done ahead of time, error included: its first read is that.
    pub(crate) fn with_first_chunk(mut self, first: FsResult<Bytes>) -> Reader {
        self.first = Some(first);
        self
    }

    pub(crate) fn stdin(ctx: &Context) -> Reader {
        Reader::new(ctx, Src::Stdin(ctx.stdin.clone()))
    }

    /// A reader of standard input that asks it for `size` bytes at a time, as a GNU tool
    /// with a buffer of that size reads: a tool that stops without handing back what it
    /// read ahead (`grep -q`) leaves a file on standard input where GNU's would be.
    pub(crate) fn stdin_in_reads_of(ctx: &Context, size: usize) -> Reader {
        Reader {
            read_size: Some(size.max(1)),
            ..Reader::stdin(ctx)
        }
    }

    /// This reader with standard input asked for `size` bytes at a time (see
    /// [`Reader::stdin_in_reads_of`]); a named file's reads are not changed.
    pub(crate) fn in_reads_of(self, size: usize) -> Reader {
        Reader {
            read_size: Some(size.max(1)),
            ..self
        }
    }

    /// Whether the input is at its end; otherwise the next read (of standard input, as
    /// little as one read of its size) is kept for the next call.
    pub(crate) async fn at_eof(&mut self) -> FsResult<bool> {
        if !self.pending.is_empty() || !self.partial.is_empty() {
            return Ok(false);
        }
        match self.raw_chunk().await? {
            Some(c) => {
                self.pending = c;
                Ok(false)
            }
            None => Ok(true),
        }
    }

    fn new(ctx: &Context, src: Src) -> Reader {
        Reader {
            src,
            first: None,
            pending: Bytes::new(),
            partial: Vec::new(),
            eof: false,
            chunk_len: READ_CHUNK,
            read_size: None,
            charge: ctx.budget.empty_charge(),
        }
    }

    async fn raw_chunk(&mut self) -> FsResult<Option<Bytes>> {
        if self.eof {
            return Ok(None);
        }
        let got = match &mut self.src {
            Src::Stdin(input) => match self.read_size {
                Some(n) => input.read_up_to(n).await,
                None => input.read_chunk().await,
            }
            .map_err(|e| FsError::from_io(&e))?,
            Src::File { is_dir: true, .. } => return Err(FsError::IsADirectory),
            Src::File { fs, path, off, .. } => {
                let chunk = match self.first.take() {
                    Some(first) if *off == 0 => first?,
                    _ => {
                        let len = self.chunk_len;
                        self.chunk_len = (len * 2).min(MAX_STREAM_CHUNK);
                        fs.read_at(path, *off, len).await?
                    }
                };
                *off += chunk.len() as u64;
                if chunk.is_empty() { None } else { Some(chunk) }
            }
        };
        if got.is_none() {
            self.eof = true;
        }
        Ok(got)
    }

    /// The next chunk of bytes; `None` at end-of-file.
    pub(crate) async fn chunk(&mut self) -> FsResult<Option<Bytes>> {
        // Giving back never fails.
        let _ = self.charge.resize(self.partial.capacity());
        if !self.pending.is_empty() {
            return Ok(Some(std::mem::take(&mut self.pending)));
        }
        self.raw_chunk().await
    }

    /// The next chunk of at most `max` bytes; `None` at end-of-file. Standard input is
    /// asked for no more than that (`read(0, buf, max)`), so what the caller does not want
    /// stays there for the next reader, a pipe's included.
    pub(crate) async fn chunk_up_to(&mut self, max: usize) -> FsResult<Option<Bytes>> {
        let max = max.max(1);
        if self.pending.is_empty() {
            if let Src::Stdin(input) = &self.src {
                if self.eof {
                    return Ok(None);
                }
                let got = input
                    .read_up_to(max)
                    .await
                    .map_err(|e| FsError::from_io(&e))?;
                self.eof = got.is_none();
                return Ok(got);
            }
            match self.chunk().await? {
                Some(c) => self.pending = c,
                None => return Ok(None),
            }
        }
        let n = max.min(self.pending.len());
        Ok(Some(self.pending.split_to(n)))
    }

    /// Hands back to standard input what was read but not given out, and the last `extra`
    /// bytes given out that the caller did not use: a file takes them back, so the next
    /// command reading it starts right after what this one used, as GNU tools leave a
    /// seekable standard input (see [`Input::give_back`]). The reader is done after this.
    /// A reader of a named file has nothing to hand back.
    pub(crate) async fn give_back(&mut self, extra: usize) {
        if let Src::Stdin(input) = &self.src {
            let len = self.pending.len() + self.partial.len() + extra;
            // A file that cannot seek back keeps its position, as `lseek` failing would.
            let _ = input.give_back(len).await;
        }
        self.pending = Bytes::new();
        self.partial.clear();
        self.eof = true;
    }

    /// Leaves a file on standard input at its end, as if this reader had read it through
    /// (GNU grep does so when it stops early); a pipe is left as it is. The reader is done.
    pub(crate) async fn skip_rest(&mut self) {
        if let Src::Stdin(input) = &self.src
            && !self.eof
        {
            let _ = input.skip_rest().await;
        }
        self.pending = Bytes::new();
        self.partial.clear();
        self.eof = true;
    }

    /// The next line with its `\n` (the last may lack it); `None` at end-of-file. A line
    /// longer than `max` comes in pieces. Fails with [`Interrupt::OutOfMemory`] when the
    /// session's budget cannot hold the line.
    pub(crate) async fn line(
        &mut self,
        max: usize,
    ) -> Result<FsResult<Option<Vec<u8>>>, Interrupt> {
        self.record(b'\n', max).await
    }

    /// Like [`Reader::line`] with `delim` instead of `\n`.
    pub(crate) async fn record(
        &mut self,
        delim: u8,
        max: usize,
    ) -> Result<FsResult<Option<Vec<u8>>>, Interrupt> {
        let max = max.max(1);
        // The caller is done with the line given out last (giving back never fails).
        let _ = self.charge.resize(self.partial.capacity());
        loop {
            if self.pending.is_empty() {
                match self.raw_chunk().await {
                    Ok(Some(chunk)) => self.pending = chunk,
                    Ok(None) if self.partial.is_empty() => return Ok(Ok(None)),
                    Ok(None) => return self.give_partial().map(|l| Ok(Some(l))),
                    Err(e) => {
                        self.partial.clear();
                        return Ok(Err(e));
                    }
                }
                continue;
            }
            let window = self.pending.len().min(max - self.partial.len());
            if let Some(i) = self.pending[..window].iter().position(|&b| b == delim) {
                let piece = self.pending.split_to(i + 1);
                if self.partial.is_empty() {
                    self.charge.resize(piece.len())?;
                    return Ok(Ok(Some(piece.to_vec())));
                }
                self.gather(&piece)?;
                return self.give_partial().map(|l| Ok(Some(l)));
            }
            let piece = self.pending.split_to(window);
            self.gather(&piece)?;
            if self.partial.len() >= max {
                return self.give_partial().map(|l| Ok(Some(l)));
            }
        }
    }

    /// Adds `piece` to the line being gathered, charging the growth first.
    fn gather(&mut self, piece: &[u8]) -> Result<(), OutOfMemory> {
        let need = self.partial.len() + piece.len();
        if need > self.partial.capacity() {
            let cap = need.max(self.partial.capacity() * 2);
            self.charge.resize(cap)?;
            self.partial.reserve_exact(cap - self.partial.len());
            self.charge.resize(self.partial.capacity())?;
        }
        self.partial.extend_from_slice(piece);
        Ok(())
    }

    /// Gives out the gathered line; it stays charged until the next read.
    fn give_partial(&mut self) -> Result<Vec<u8>, Interrupt> {
        let line = std::mem::take(&mut self.partial);
        self.charge.resize(line.capacity())?;
        Ok(line)
    }

    /// Reads the rest, failing with [`FsError::TooLarge`] past `limit` bytes. What it
    /// holds is charged to `charge`, which the caller keeps as long as it keeps the data.
    pub(crate) async fn read_to_end(
        &mut self,
        limit: usize,
        charge: &mut Charge,
    ) -> Result<FsResult<Vec<u8>>, Interrupt> {
        let mut out = Vec::new();
        loop {
            let chunk = match self.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => return Ok(Ok(out)),
                Err(e) => return Ok(Err(e)),
            };
            if out.len() + chunk.len() > limit {
                return Ok(Err(FsError::TooLarge));
            }
            let need = out.len() + chunk.len();
            if need > out.capacity() {
                let cap = need.max(out.capacity() * 2).min(limit.max(need));
                charge.resize(cap)?;
                out.reserve_exact(cap - out.len());
                charge.resize(out.capacity())?;
            }
            out.extend_from_slice(&chunk);
        }
    }
}

/// `1.5K`, `23M`: GNU's `-h` sizes (powers of 1024, one decimal below 10, rounded up).
pub(crate) fn human_size(n: u64) -> String {
    const UNITS: [&str; 8] = ["K", "M", "G", "T", "P", "E", "Z", "Y"];
    if n < 1024 {
        return n.to_string();
    }
    let mut value = n as f64;
    let mut unit = 0;
    value /= 1024.0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if value < 10.0 {
        let v = (value * 10.0).ceil() / 10.0;
        if v >= 10.0 {
            format!("{}{}", v as u64, UNITS[unit])
        } else {
            format!("{v:.1}{}", UNITS[unit])
        }
    } else {
        let v = value.ceil();
        if v >= 1024.0 && unit < UNITS.len() - 1 {
            format!("1.0{}", UNITS[unit + 1])
        } else {
            format!("{}{}", v as u64, UNITS[unit])
        }
    }
}

/// `drwxr-xr-x`, as `ls -l` and `stat` print a mode.
pub(crate) fn mode_string(meta: &Metadata) -> String {
    let mut s = String::with_capacity(10);
    s.push(match meta.kind {
        FileKind::Dir => 'd',
        FileKind::Symlink => 'l',
        FileKind::File => '-',
        FileKind::CharDevice => 'c',
    });
    let m = meta.mode;
    let bits = [
        (0o400, 'r'),
        (0o200, 'w'),
        (0o100, 'x'),
        (0o040, 'r'),
        (0o020, 'w'),
        (0o010, 'x'),
        (0o004, 'r'),
        (0o002, 'w'),
        (0o001, 'x'),
    ];
    for (i, (bit, c)) in bits.iter().enumerate() {
        let set = m & bit != 0;
        let special = match i {
            2 => m & 0o4000 != 0,
            5 => m & 0o2000 != 0,
            8 => m & 0o1000 != 0,
            _ => false,
        };
        s.push(match (special, set, i) {
            (true, true, 8) => 't',
            (true, false, 8) => 'T',
            (true, true, _) => 's',
            (true, false, _) => 'S',
            (false, true, _) => *c,
            (false, false, _) => '-',
        });
    }
    s
}

/// Seconds since the epoch (negative before it); tests compare mtimes with it.
#[cfg(test)]
pub(crate) fn epoch_secs(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// The last component of a path the way `basename` sees it (`/` for `/`).
pub(crate) fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.is_empty() { "" } else { "/" };
    }
    match trimmed.rfind('/') {
        Some(i) => &trimmed[i + 1..],
        None => trimmed,
    }
}

/// Streams a file (or stdin for `-`) to stdout; the error, if any, is the reading's.
pub(crate) async fn copy_to_out(
    ctx: &Context,
    reader: &mut Reader,
) -> Result<FsResult<()>, Interrupt> {
    let mut pacer = Pacer::default();
    loop {
        match reader.chunk().await {
            Ok(Some(chunk)) => {
                ctx.stdout.write_bytes(chunk).await?;
                pacer.tick(ctx).await?;
            }
            Ok(None) => return Ok(Ok(())),
            Err(e) => return Ok(Err(e)),
        }
    }
}

/// Where a file copy failed: reading the source or writing the destination.
pub(crate) enum CopyError {
    Read(FsError),
    Write(FsError),
}

/// Copies a regular file's content through the port in [`READ_CHUNK`] pieces (opening
/// `to` with `mode`) and closes the destination, where a write failure surfaces.
pub(crate) async fn copy_file(
    ctx: &Context,
    from: &str,
    to: &str,
    mode: crate::fs::WriteMode,
) -> Result<Result<(), CopyError>, Interrupt> {
    let mut handle = match ctx.fs.open_write(to, mode).await {
        Ok(h) => h,
        Err(e) => return Ok(Err(CopyError::Write(e))),
    };
    let mut off = 0u64;
    let mut pacer = Pacer::default();
    loop {
        let chunk = match ctx.fs.read_at(from, off, READ_CHUNK).await {
            Ok(c) => c,
            Err(e) => {
                let _ = handle.close().await;
                return Ok(Err(CopyError::Read(e)));
            }
        };
        if chunk.is_empty() {
            break;
        }
        off += chunk.len() as u64;
        if let Err(e) = handle.write(&chunk).await {
            let _ = handle.close().await;
            return Ok(Err(CopyError::Write(e)));
        }
        pacer.tick(ctx).await?;
    }
    Ok(handle.close().await.map_err(CopyError::Write))
}

/// Splits `cp`/`mv`/`ln` operands into sources and a destination, GNU-style: with one
/// source the destination may be a new name; with several it must be a directory.
/// Returns the sources and, per source, the destination path shown and the absolute one;
/// `None` after reporting a usage problem (status 1).
pub(crate) async fn targets(
    ctx: &Context,
    name: &str,
    operands: &[String],
    target_dir: Option<&str>,
    no_target_dir: bool,
) -> Option<Vec<(String, String, String)>> {
    let (sources, dest) = match target_dir {
        Some(t) => (operands, t.to_string()),
        None => match operands {
            [] => {
                ctx.err(format!(
                    "{name}: missing file operand\nTry '{name} --help' for more information.\n"
                ))
                .await;
                return None;
            }
            [one] => {
                ctx.err(format!(
                    "{name}: missing destination file operand after {}\nTry '{name} --help' for more information.\n",
                    quote(one)
                ))
                .await;
                return None;
            }
            [srcs @ .., last] => (srcs, last.clone()),
        },
    };
    let dest_meta = ctx.fs.stat(&ctx.path(&dest)).await;
    let dest_is_dir = !no_target_dir && dest_meta.as_ref().is_ok_and(|m| m.is_dir());
    if (sources.len() > 1 || target_dir.is_some()) && !dest_is_dir {
        let why = match dest_meta {
            Err(e) => e.to_string(),
            Ok(_) => "Not a directory".to_string(),
        };
        // coreutils 9's wording, for a file as for a missing target.
        ctx.warn(name, format!("target {}: {why}", quote(&dest)))
            .await;
        return None;
    }
    Some(
        sources
            .iter()
            .map(|s| {
                if dest_is_dir {
                    let shown = format!("{}/{}", dest.trim_end_matches('/'), base_name(s));
                    let abs = ctx.path(&shown);
                    (s.clone(), shown, abs)
                } else {
                    (s.clone(), dest.clone(), ctx.path(&dest))
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn human_sizes_like_gnu() {
        assert_eq!(human_size(0), "0");
        assert_eq!(human_size(1023), "1023");
        assert_eq!(human_size(1024), "1.0K");
        assert_eq!(human_size(1536), "1.5K");
        assert_eq!(human_size(10 * 1024), "10K");
        assert_eq!(human_size(1024 * 1024 * 5 + 1), "5.1M");
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "\"it's\"");
        assert_eq!(quotef("plain.txt"), "plain.txt");
        assert_eq!(quotef("a b"), "'a b'");
        assert_eq!(base_name("/a/b/"), "b");
        assert_eq!(base_name("///"), "/");
    }

    #[test]
    fn modes() {
        let meta = Metadata::new(FileKind::Dir, 0, 0o1755, UNIX_EPOCH);
        assert_eq!(mode_string(&meta), "drwxr-xr-t");
    }
}

/// Longest answer line read for a prompt (the rest of a longer line is left unread).
const MAX_ANSWER: usize = 4096;

/// The questions of `-i` (`cp -i`, `mv -i`, `rm -i`): each is written to stderr without a
/// newline, and a line read from stdin answers it; yes when it starts with `y` or `Y`
/// (GNU's yesno in the C locale), no at end of input. The reader is kept, so answers
/// piped in are taken one line per question.
#[derive(Default)]
pub(crate) struct Asker {
    reader: Option<Reader>,
    eof: bool,
}

impl Asker {
    pub(crate) async fn ask(&mut self, ctx: &Context, question: &str) -> Result<bool, Interrupt> {
        ctx.err(question).await;
        if self.eof {
            return Ok(false);
        }
        if self.reader.is_none() {
            self.reader = Reader::open(ctx, "-").await.ok();
        }
        let Some(r) = &mut self.reader else {
            return Ok(false);
        };
        match r.line(MAX_ANSWER).await? {
            Ok(Some(l)) => Ok(matches!(l.first(), Some(b'y' | b'Y'))),
            _ => {
                self.eof = true;
                Ok(false)
            }
        }
    }
}

//! The compression engine behind `bzip2` and `xz` (and their `un…`/`…cat` forms, and
//! tar's `j`/`J`): a coder runs on the blocking pool, fed chunks of input over a bounded
//! channel and handing back chunks of output over another, so the session's runtime never
//! compresses and memory stays bounded by the channels whatever the file's size. Dropping
//! a [`Coder`] (Ctrl-C, a closed pipe) closes its channels, and the coder thread ends at
//! its next read or write.

use std::io::{Read, Write};

use tokio::sync::mpsc;

use tokio_util::sync::CancellationToken;

use crate::fs::{FsError, READ_CHUNK, WriteHandle, WriteMode};
use crate::{CmdResult, Context, Interrupt, Status};

/// Chunks in flight each way: enough to keep the coder busy while the session reads or
/// writes, few enough that a stalled reader holds little memory.
const CHANNEL_CHUNKS: usize = 4;
/// Bytes the coder gathers before handing output back.
const OUT_CHUNK: usize = 64 * 1024;

/// A compression format and the direction to run it in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Bzip2,
    Xz,
}

impl Format {
    /// Whether `data` (the first bytes of a stream) starts like this format.
    pub(crate) fn sniff(self, data: &[u8]) -> bool {
        match self {
            Format::Bzip2 => data.starts_with(b"BZh"),
            Format::Xz => data.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]),
        }
    }
}

/// Why a coder failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CodecError {
    /// The input ended in the middle of a stream.
    Truncated,
    /// The data is not valid for the format.
    Corrupt,
}

/// A running coder: push input with [`Coder::push`], end it with [`Coder::finish`]; each
/// hands back whatever output is ready.
pub(crate) struct Coder {
    input: Option<mpsc::Sender<Vec<u8>>>,
    output: mpsc::Receiver<Result<Vec<u8>, CodecError>>,
}

struct ChanReader {
    rx: mpsc::Receiver<Vec<u8>>,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for ChanReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.buf.len() {
            match self.rx.blocking_recv() {
                Some(chunk) => {
                    self.buf = chunk;
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

struct ChanWriter {
    tx: mpsc::Sender<Result<Vec<u8>, CodecError>>,
    buf: Vec<u8>,
}

impl ChanWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(OUT_CHUNK));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))
    }
}

impl Write for ChanWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= OUT_CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

fn classify(e: &std::io::Error) -> CodecError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        CodecError::Truncated
    } else {
        CodecError::Corrupt
    }
}

/// The work of one coder, on a blocking thread.
fn work(
    format: Format,
    decompress: bool,
    level: u32,
    reader: ChanReader,
    mut writer: ChanWriter,
) -> Result<(), CodecError> {
    let io = |e: std::io::Error| classify(&e);
    match (format, decompress) {
        (Format::Bzip2, true) => {
            let mut dec = bzip2::read::MultiBzDecoder::new(reader);
            std::io::copy(&mut dec, &mut writer).map_err(io)?;
        }
        (Format::Bzip2, false) => {
            let mut enc = bzip2::write::BzEncoder::new(
                &mut writer,
                bzip2::Compression::new(level.clamp(1, 9)),
            );
            let mut reader = reader;
            std::io::copy(&mut reader, &mut enc).map_err(io)?;
            enc.finish().map_err(io)?;
        }
        (Format::Xz, true) => {
            let mut dec = lzma_rust2::XzReader::new(reader, true);
            std::io::copy(&mut dec, &mut writer).map_err(io)?;
        }
        (Format::Xz, false) => {
            let options = lzma_rust2::XzOptions::with_preset(level.min(9));
            let mut enc = lzma_rust2::XzWriter::new(&mut writer, options).map_err(io)?;
            let mut reader = reader;
            std::io::copy(&mut reader, &mut enc).map_err(io)?;
            enc.finish().map_err(io)?;
        }
    }
    writer.flush().map_err(io)
}

impl Coder {
    /// Starts a coder for `format` on the blocking pool.
    pub(crate) fn start(format: Format, decompress: bool, level: u32) -> Coder {
        let (in_tx, in_rx) = mpsc::channel::<Vec<u8>>(CHANNEL_CHUNKS);
        let (out_tx, out_rx) = mpsc::channel(CHANNEL_CHUNKS);
        let reader = ChanReader {
            rx: in_rx,
            buf: Vec::new(),
            pos: 0,
        };
        let writer = ChanWriter {
            tx: out_tx.clone(),
            buf: Vec::with_capacity(OUT_CHUNK),
        };
        tokio::task::spawn_blocking(move || {
            if let Err(e) = work(format, decompress, level, reader, writer) {
                let _ = out_tx.blocking_send(Err(e));
            }
        });
        Coder {
            input: Some(in_tx),
            output: out_rx,
        }
    }

    /// Feeds `chunk`, handing each piece of output that comes back meanwhile to `emit`.
    pub(crate) async fn push<F, Fut>(
        &mut self,
        cancel: &CancellationToken,
        chunk: Vec<u8>,
        mut emit: F,
    ) -> Result<Result<(), CodecError>, Interrupt>
    where
        F: FnMut(Vec<u8>) -> Fut,
        Fut: std::future::Future<Output = Result<(), Interrupt>>,
    {
        let Some(input) = self.input.clone() else {
            return Ok(Ok(()));
        };
        let mut chunk = Some(chunk);
        while chunk.is_some() {
            if cancel.is_cancelled() {
                return Err(Interrupt::Cancelled);
            }
            tokio::select! {
                biased;
                got = self.output.recv() => match got {
                    Some(Ok(data)) => emit(data).await?,
                    Some(Err(e)) => return Ok(Err(e)),
                    // The coder stopped reading (its stream ended): the rest is ignored.
                    None => return Ok(Ok(())),
                },
                permit = input.reserve() => match permit {
                    Ok(p) => {
                        if let Some(c) = chunk.take() {
                            p.send(c);
                        }
                    }
                    Err(_) => chunk = None,
                },
            }
        }
        Ok(Ok(()))
    }

    /// Ends the input and hands the remaining output to `emit`.
    pub(crate) async fn finish<F, Fut>(
        mut self,
        cancel: &CancellationToken,
        mut emit: F,
    ) -> Result<Result<(), CodecError>, Interrupt>
    where
        F: FnMut(Vec<u8>) -> Fut,
        Fut: std::future::Future<Output = Result<(), Interrupt>>,
    {
        self.input = None;
        loop {
            if cancel.is_cancelled() {
                return Err(Interrupt::Cancelled);
            }
            match self.output.recv().await {
                Some(Ok(data)) => emit(data).await?,
                Some(Err(e)) => return Ok(Err(e)),
                None => return Ok(Ok(())),
            }
        }
    }
}

/// A compressor's command line word by word, as `bzip2`, `xz`, `gzip` and `zip` read
/// it: options may come anywhere among the operands, `-` is an operand (standard input),
/// and `--` makes every later word one.
pub(crate) struct Words<'a> {
    it: std::slice::Iter<'a, String>,
    only_operands: bool,
}

/// One word of [`Words`].
pub(crate) enum Word<'a> {
    Operand(&'a String),
    /// `--name` or `--name=value`: what follows the `--`, and the whole word.
    Long(&'a str, &'a String),
    /// `-abc`: the letters, and the whole word.
    Short(&'a str, &'a String),
}

impl<'a> Words<'a> {
    pub(crate) fn new(args: &'a [String]) -> Words<'a> {
        Words {
            it: args.iter(),
            only_operands: false,
        }
    }

    /// The next word as it is: the value of an option that takes one.
    pub(crate) fn value(&mut self) -> Option<&'a String> {
        self.it.next()
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = Word<'a>;

    fn next(&mut self) -> Option<Word<'a>> {
        loop {
            let a = self.it.next()?;
            if self.only_operands || a == "-" || !a.starts_with('-') {
                return Some(Word::Operand(a));
            }
            if a == "--" {
                self.only_operands = true;
                continue;
            }
            return Some(match a.strip_prefix("--") {
                Some(long) => Word::Long(long, a),
                None => Word::Short(&a[1..], a),
            });
        }
    }
}

/// What a command line is answered with at once instead of a run (`--help`, a bad
/// option), each tool's way: the text, whether it goes to stderr, and the status.
pub(crate) struct Early {
    pub(crate) text: String,
    pub(crate) to_stderr: bool,
    pub(crate) status: Status,
}

impl Early {
    /// `text` on stdout, then `status`.
    pub(crate) fn out(text: impl Into<String>, status: Status) -> Early {
        Early {
            text: text.into(),
            to_stderr: false,
            status,
        }
    }

    /// `text` on stderr, then `status`.
    pub(crate) fn err(text: impl Into<String>, status: Status) -> Early {
        Early {
            text: text.into(),
            to_stderr: true,
            status,
        }
    }

    pub(crate) async fn give(self, ctx: &Context) -> CmdResult {
        if self.to_stderr {
            ctx.err(self.text).await;
        } else {
            ctx.out(self.text).await?;
        }
        Ok(self.status)
    }
}

/// The commands of a compressor family (`bzip2`/`bunzip2`/`bzcat`, `gzip`/`gunzip`/
/// `zcat`, …): `$parse(name, args)` gives the options or an [`Early`] answer; each name
/// forces decompression or stdout as `bunzip2` and `zcat` do; `$run` runs with `$o`
/// (`$prog` is the name).
macro_rules! codec_command {
    ($parse:path, |$ctx:ident, $prog:ident, $o:ident| $run:expr;
     $($ty:ident($name:literal, $summary:literal, decompress: $d:expr, stdout: $s:expr);)+) => {
        $(
        pub struct $ty;

        #[async_trait::async_trait]
        impl crate::Command for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn summary(&self) -> &'static str {
                $summary
            }
            async fn run(&self, $ctx: &crate::Context, args: Vec<String>) -> crate::CmdResult {
                let mut $o = match $parse($name, &args) {
                    Ok(o) => o,
                    Err(early) => return early.give($ctx).await,
                };
                // The name wins over a `-z` (`bunzip2 -z` still expands).
                $o.decompress |= $d;
                $o.stdout |= $s;
                let $prog: &'static str = $name;
                $run.await
            }
        }
        )+
    };
}
pub(crate) use codec_command;

/// What the command line asked of a `bzip2` or `xz` run.
#[derive(Debug, Default, Clone)]
pub(crate) struct Opts {
    pub(crate) stdout: bool,
    pub(crate) decompress: bool,
    pub(crate) force: bool,
    pub(crate) keep: bool,
    pub(crate) test: bool,
    pub(crate) quiet: bool,
    pub(crate) level: u32,
    pub(crate) files: Vec<String>,
}

/// A run of one tool over its operands, worded as that tool words things.
struct Run<'a> {
    ctx: &'a Context,
    /// The name it was invoked by (`bunzip2`, `xzcat`), which starts its messages.
    prog: &'static str,
    format: Format,
    o: Opts,
    status: Status,
}

/// Runs `bzip2`/`xz` (under any of its names) over `o`'s operands.
pub(crate) async fn run(ctx: &Context, prog: &'static str, format: Format, o: Opts) -> CmdResult {
    let files = if o.files.is_empty() {
        vec!["-".to_string()]
    } else {
        o.files.clone()
    };
    let mut r = Run {
        ctx,
        prog,
        format,
        o,
        status: 0,
    };
    for f in files {
        r.operand(&f).await?;
    }
    Ok(r.status)
}

/// The suffixes a format's files carry, with what each becomes when expanded.
fn suffixes(format: Format) -> &'static [(&'static str, &'static str)] {
    match format {
        Format::Bzip2 => &[
            (".bz2", ""),
            (".bz", ""),
            (".tbz2", ".tar"),
            (".tbz", ".tar"),
        ],
        Format::Xz => &[(".xz", ""), (".txz", ".tar")],
    }
}

impl Run<'_> {
    async fn fail(&mut self, msg: String, status: Status) {
        self.ctx.err(format!("{}: {msg}\n", self.prog)).await;
        self.status = self.status.max(status);
    }

    async fn operand(&mut self, f: &str) -> Result<(), Interrupt> {
        if f == "-" {
            return self.stream(None, "(stdin)", None, None).await;
        }
        let abs = self.ctx.path(f);
        let meta = match self.ctx.fs.stat(&abs).await {
            Ok(m) => m,
            Err(e) => {
                let msg = match self.format {
                    Format::Bzip2 if self.o.test => format!("Can't open input {f}: {e}."),
                    Format::Bzip2 => format!("Can't open input file {f}: {e}."),
                    Format::Xz => format!("{f}: {e}"),
                };
                self.fail(msg, 1).await;
                return Ok(());
            }
        };
        if meta.is_dir() {
            match self.format {
                Format::Bzip2 => {
                    self.fail(format!("Input file {f} is a directory."), 1)
                        .await
                }
                Format::Xz => self.fail(format!("{f}: Is a directory, skipping"), 2).await,
            }
            return Ok(());
        }
        let in_place = !self.o.stdout && !self.o.test;
        let target = if !in_place {
            None
        } else if self.o.decompress {
            let stripped = suffixes(self.format).iter().find_map(|(suf, repl)| {
                f.strip_suffix(suf)
                    .filter(|stem| !stem.is_empty() && !stem.ends_with('/'))
                    .map(|stem| format!("{stem}{repl}"))
            });
            match (stripped, self.format) {
                (Some(t), _) => Some(t),
                (None, Format::Bzip2) => {
                    if !self.o.quiet {
                        self.ctx
                            .err(format!(
                                "{}: Can't guess original name for {f} -- using {f}.out\n",
                                self.prog
                            ))
                            .await;
                    }
                    Some(format!("{f}.out"))
                }
                // xz looks at the data first: a file that is no .xz says so.
                (None, Format::Xz) => {
                    let head = self.ctx.fs.read_at(&abs, 0, 6).await.unwrap_or_default();
                    if self.format.sniff(&head) {
                        self.fail(format!("{f}: Filename has an unknown suffix, skipping"), 2)
                            .await;
                    } else {
                        self.fail(format!("{f}: File format not recognized"), 1)
                            .await;
                    }
                    return Ok(());
                }
            }
        } else {
            let has = suffixes(self.format)
                .iter()
                .find(|(suf, _)| f.ends_with(suf));
            if let Some((suf, _)) = has {
                match self.format {
                    Format::Bzip2 => {
                        self.fail(format!("Input file {f} already has {suf} suffix."), 1)
                            .await
                    }
                    Format::Xz => {
                        self.fail(format!("{f}: File already has `{suf}' suffix, skipping"), 2)
                            .await
                    }
                }
                return Ok(());
            }
            let suf = match self.format {
                Format::Bzip2 => ".bz2",
                Format::Xz => ".xz",
            };
            Some(format!("{f}{suf}"))
        };
        self.stream(Some(abs), f, target, Some(meta)).await
    }

    async fn stream(
        &mut self,
        abs: Option<String>,
        name: &str,
        target: Option<String>,
        in_meta: Option<crate::fs::Metadata>,
    ) -> Result<(), Interrupt> {
        let ctx = self.ctx;
        let decompress = self.o.decompress || self.o.test;
        let mut reader = match &abs {
            Some(a) => Reader::file(ctx, a),
            None => Reader::stdin(ctx),
        };
        let first = match reader.next().await {
            Ok(c) => c,
            Err(e) => {
                self.fail(format!("{name}: {e}"), 1).await;
                return Ok(());
            }
        };
        if decompress && !self.format.sniff(first.as_deref().unwrap_or_default()) {
            match self.format {
                Format::Bzip2 if first.is_none() => {
                    self.fail(
                        format!(
                            "{name}: Compressed file ends unexpectedly;\n\tperhaps it is corrupted?"
                        ),
                        2,
                    )
                    .await
                }
                Format::Bzip2 => self.fail(format!("{name} is not a bzip2 file."), 2).await,
                Format::Xz => {
                    self.fail(format!("{name}: File format not recognized"), 1)
                        .await
                }
            }
            return Ok(());
        }
        let mut out: Option<Box<dyn WriteHandle>> = None;
        if let Some(t) = &target {
            let tabs = ctx.path(t);
            if ctx.fs.lstat(&tabs).await.is_ok() {
                if !self.o.force {
                    match self.format {
                        Format::Bzip2 => {
                            self.fail(format!("Output file {t} already exists."), 1)
                                .await
                        }
                        Format::Xz => self.fail(format!("{t}: File exists"), 1).await,
                    }
                    return Ok(());
                }
                let _ = ctx.fs.unlink(&tabs).await;
            }
            match ctx.fs.open_write(&tabs, WriteMode::CreateNew).await {
                Ok(h) => out = Some(h),
                Err(e) => {
                    self.fail(format!("{t}: {e}"), 1).await;
                    return Ok(());
                }
            }
        }
        let to_stdout = target.is_none() && !self.o.test;
        let mut coder = Coder::start(self.format, decompress, self.o.level);
        let write_err: std::sync::Arc<std::sync::Mutex<Option<String>>> = Default::default();
        let sink = std::sync::Arc::new(tokio::sync::Mutex::new(out));
        let emit = |data: Vec<u8>| {
            let sink = sink.clone();
            let write_err = write_err.clone();
            async move {
                if to_stdout {
                    return ctx.out(&data).await;
                }
                if let Some(h) = sink.lock().await.as_mut()
                    && let Err(e) = h.write(&data).await
                    && let Ok(mut w) = write_err.lock()
                {
                    w.get_or_insert_with(|| e.to_string());
                }
                Ok(())
            }
        };
        let mut result = Ok(());
        let mut read_failed = None;
        let mut chunk = first;
        while let Some(c) = chunk {
            result = coder.push(&ctx.cancel, c, emit).await?;
            if result.is_err() {
                break;
            }
            ctx.checkpoint().await?;
            chunk = match reader.next().await {
                Ok(c) => c,
                Err(e) => {
                    read_failed = Some(e.to_string());
                    None
                }
            };
        }
        if result.is_ok() && read_failed.is_none() {
            result = coder.finish(&ctx.cancel, emit).await?;
        }
        let out = sink.lock().await.take();
        let write_failed = write_err.lock().ok().and_then(|mut w| w.take());
        let closed = match out {
            Some(h) => h.close().await.map_err(|e| e.to_string()),
            None => Ok(()),
        };
        let problem = if let Some(e) = read_failed {
            Some((format!("{name}: {e}"), 1))
        } else if let Err(e) = result {
            Some(self.codec_message(name, &e))
        } else {
            write_failed
                .or(closed.err())
                .map(|e| (format!("{}: {e}", target.as_deref().unwrap_or(name)), 1))
        };
        if let Some((msg, status)) = problem {
            if let Some(t) = &target {
                let _ = ctx.fs.unlink(&ctx.path(t)).await;
            }
            self.fail(msg, status).await;
            return Ok(());
        }
        if let (Some(t), Some(a)) = (&target, &abs) {
            let tabs = ctx.path(t);
            if let Some(m) = &in_meta {
                let _ = ctx.fs.chmod(&tabs, m.mode).await;
                let _ = ctx.fs.set_mtime(&tabs, m.mtime).await;
            }
            if !self.o.keep
                && let Err(e) = ctx.fs.unlink(a).await
            {
                self.fail(format!("{name}: {e}"), 1).await;
            }
        }
        Ok(())
    }

    /// The message and status for data the coder could not take.
    fn codec_message(&self, name: &str, e: &CodecError) -> (String, Status) {
        match (self.format, e) {
            (Format::Bzip2, CodecError::Truncated) => (
                format!("{name}: Compressed file ends unexpectedly;\n\tperhaps it is corrupted?"),
                2,
            ),
            (Format::Bzip2, CodecError::Corrupt) => (
                format!("{name}: Data integrity error when decompressing."),
                2,
            ),
            (Format::Xz, CodecError::Truncated) => (format!("{name}: Unexpected end of input"), 1),
            (Format::Xz, CodecError::Corrupt) => (format!("{name}: Compressed data is corrupt"), 1),
        }
    }
}

/// Chunks of a file (read at increasing offsets) or of stdin.
enum Reader<'a> {
    File {
        ctx: &'a Context,
        path: String,
        off: u64,
    },
    Stdin(&'a Context),
}

impl<'a> Reader<'a> {
    fn file(ctx: &'a Context, path: &str) -> Reader<'a> {
        Reader::File {
            ctx,
            path: path.to_string(),
            off: 0,
        }
    }
    fn stdin(ctx: &'a Context) -> Reader<'a> {
        Reader::Stdin(ctx)
    }
    /// The next chunk, `None` at the end.
    async fn next(&mut self) -> Result<Option<Vec<u8>>, FsError> {
        match self {
            Reader::File { ctx, path, off } => {
                let c = ctx.fs.read_at(path, *off, READ_CHUNK).await?;
                *off += c.len() as u64;
                Ok((!c.is_empty()).then(|| c.to_vec()))
            }
            Reader::Stdin(ctx) => match ctx.stdin.read_chunk().await {
                Ok(Some(c)) if !c.is_empty() => Ok(Some(c.to_vec())),
                Ok(_) => Ok(None),
                Err(_) => Err(FsError::Io),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(format: Format, decompress: bool, data: &[u8]) -> Result<Vec<u8>, CodecError> {
        let cancel = CancellationToken::new();
        let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut coder = Coder::start(format, decompress, 6);
        for piece in data.chunks(1000) {
            let o = out.clone();
            coder
                .push(&cancel, piece.to_vec(), |d| {
                    let o = o.clone();
                    async move {
                        o.lock().map(|mut v| v.extend(d)).ok();
                        Ok(())
                    }
                })
                .await
                .ok()
                .unwrap_or(Ok(()))?;
        }
        let o = out.clone();
        coder
            .finish(&cancel, |d| {
                let o = o.clone();
                async move {
                    o.lock().map(|mut v| v.extend(d)).ok();
                    Ok(())
                }
            })
            .await
            .ok()
            .unwrap_or(Ok(()))?;
        let v = out.lock().map(|v| v.clone()).unwrap_or_default();
        Ok(v)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn both_formats_round_trip_in_pieces() {
        let text: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        for f in [Format::Bzip2, Format::Xz] {
            let packed = run(f, false, &text).await;
            let packed = packed.unwrap_or_default();
            assert!(f.sniff(&packed), "{f:?}");
            assert!(packed.len() < text.len() / 3);
            assert_eq!(run(f, true, &packed).await.unwrap_or_default(), text);
            let cut = &packed[..packed.len() / 2];
            assert!(run(f, true, cut).await.is_err(), "{f:?} truncated");
        }
    }
}

//! Sorting more than fits in memory: in-memory runs, run files in the session's `/tmp`,
//! and a k-way merge of them.
//!
//! Input is read into a [`Run`] until it holds [`Tuning::run_bytes`] of lines (charged to
//! the session's budget); the run is then sorted on the blocking pool and written to a run
//! file whose name nobody can guess ([`RunFiles`]), and the next run starts. Once the input
//! is read, the run files are merged [`Tuning::fan_in`] at a time (in passes, when there
//! are more) straight to the output. A merge reads each run through a [`LineReader`] that
//! holds a few read chunks plus its current line, so memory stays bounded whatever
//! the input size; disk use is the input's size, and counts against the session's quota
//! like any file.
//!
//! Order across runs is the order of one stable in-memory sort: runs are formed in input
//! order, and on a tie the merge takes the line of the earlier run.
//!
//! Cleanup: every run file is removed as soon as it is merged, and [`RunFiles::remove_all`]
//! removes what is left on every exit path of the command (success, error, the command
//! noticing cancellation). When the shell drops the command's future instead (it does on
//! Ctrl-C), no async code of the command runs any more: [`RunFiles`]'s `Drop` then hands
//! the paths to a task that removes them, and the session's fork is deleted at disconnect
//! in any case.

use std::cmp::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::Sorter;
use crate::cmd::util::{OUT_BUF, Pacer, Reader, quote, quotef};
use crate::fs::{FileSystem, FsError, READ_CHUNK, WriteHandle, WriteMode};
use crate::{Charge, Context, Interrupt, OutOfMemory};

/// Where run files go: the session's own `/tmp`, which is part of its fork (so run files
/// count against its quota, and vanish with the fork) and writable in every session.
pub(super) const TEMP_DIR: &str = "/tmp";

/// Fresh random names tried for one run file before giving up: with 64 random bits a
/// clash means someone created files there on purpose, and a few tries settle it.
const TEMP_NAME_TRIES: usize = 8;

/// Bytes one line's entry in a run's index takes (its start and end in the run's data).
const INDEX_ENTRY: usize = std::mem::size_of::<(usize, usize)>();

/// How much `sort` holds in memory and how many run files it merges at once.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tuning {
    /// Bytes of lines (plus their index entries) a run holds before it is sorted and
    /// written to a run file. A single longer line is still held whole (charged to the
    /// session's budget).
    pub(super) run_bytes: usize,
    /// Run files merged at once; at least 2.
    pub(super) fan_in: usize,
}

/// Why a sort stopped; [`SortError::message`] words it as GNU sort does.
#[derive(Debug)]
pub(super) enum SortError {
    /// Cancellation, a broken stdout or the session's memory budget.
    Stop(Interrupt),
    /// An operand could not be opened.
    Open { name: String, err: FsError },
    /// Reading an operand or a run file failed.
    Read { name: String, err: FsError },
    /// The `-o` file could not be opened.
    OutputOpen { name: String, err: FsError },
    /// Writing the `-o` file or a run file failed (a full quota among others).
    Write { name: String, err: FsError },
    /// No run file could be created in [`TEMP_DIR`].
    TempDir(FsError),
    /// The blocking sort task panicked.
    Internal,
}

impl From<Interrupt> for SortError {
    fn from(e: Interrupt) -> Self {
        SortError::Stop(e)
    }
}

impl From<OutOfMemory> for SortError {
    fn from(e: OutOfMemory) -> Self {
        SortError::Stop(Interrupt::OutOfMemory(e))
    }
}

impl SortError {
    /// The text after `sort: `, or `None` for a [`SortError::Stop`].
    pub(super) fn message(&self) -> Option<String> {
        Some(match self {
            SortError::Stop(_) => return None,
            SortError::Open { name, err } => format!("cannot read: {}: {err}", quotef(name)),
            SortError::Read { name, err } => format!("read failed: {}: {err}", quotef(name)),
            SortError::OutputOpen { name, err } => {
                format!("open failed: {}: {err}", quotef(name))
            }
            SortError::Write { name, err } => format!("write failed: {}: {err}", quotef(name)),
            SortError::TempDir(err) => {
                format!("cannot create temporary file in {}: {err}", quote(TEMP_DIR))
            }
            SortError::Internal => "internal error".to_string(),
        })
    }
}

/// The capacity to grow a buffer to: double, but not past `soft` unless `need` is larger.
fn grown(cap: usize, need: usize, soft: usize) -> usize {
    need.max(cap.saturating_mul(2).min(soft))
}

/// Lines held in memory: the data as read, an index of the complete lines, and the start
/// of a line not ended yet. Its allocations are charged to the session's budget, always
/// before they are made.
pub(super) struct Run {
    data: Vec<u8>,
    /// `(start, end)` of each complete line in `data`, without its delimiter.
    lines: Vec<(usize, usize)>,
    /// `data[..tail]` is complete lines; the rest is a line not ended yet.
    tail: usize,
    delim: u8,
    /// What `data` and `lines` may grow to by doubling (about one run); only a longer
    /// line makes them bigger.
    soft_data: usize,
    soft_lines: usize,
    charge: Charge,
}

impl Run {
    pub(super) fn new(ctx: &Context, delim: u8, tuning: Tuning) -> Run {
        Run {
            data: Vec::new(),
            lines: Vec::new(),
            tail: 0,
            delim,
            soft_data: tuning.run_bytes.saturating_add(READ_CHUNK),
            soft_lines: tuning.run_bytes / INDEX_ENTRY + 1,
            charge: ctx.budget.empty_charge(),
        }
    }

    /// Bytes allocated, as charged.
    fn allocated(&self) -> usize {
        self.data.capacity() + self.lines.capacity() * INDEX_ENTRY
    }

    /// Bytes of complete lines and their index: what decides when the run is full.
    pub(super) fn held(&self) -> usize {
        self.tail + self.lines.len() * INDEX_ENTRY
    }

    pub(super) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Appends `piece` and indexes the lines it ends.
    pub(super) fn push(&mut self, piece: &[u8]) -> Result<(), OutOfMemory> {
        let ends = piece.iter().filter(|b| **b == self.delim).count();
        let need_data = self.data.len() + piece.len();
        let need_lines = self.lines.len() + ends;
        let data_cap = if need_data > self.data.capacity() {
            grown(self.data.capacity(), need_data, self.soft_data)
        } else {
            self.data.capacity()
        };
        let lines_cap = if need_lines > self.lines.capacity() {
            grown(self.lines.capacity(), need_lines, self.soft_lines)
        } else {
            self.lines.capacity()
        };
        self.charge.resize(data_cap + lines_cap * INDEX_ENTRY)?;
        self.data.reserve_exact(data_cap - self.data.len());
        self.lines.reserve_exact(lines_cap - self.lines.len());
        self.charge.resize(self.allocated())?;
        let from = self.data.len();
        self.data.extend_from_slice(piece);
        for (i, b) in piece.iter().enumerate() {
            if *b == self.delim {
                self.lines.push((self.tail, from + i));
                self.tail = from + i + 1;
            }
        }
        Ok(())
    }

    /// Ends the line not ended yet, as the end of a file does.
    pub(super) fn end_input(&mut self) -> Result<(), OutOfMemory> {
        if self.tail < self.data.len() {
            self.push(&[self.delim])?;
        }
        Ok(())
    }

    /// Forgets the complete lines (once written out), keeping the line not ended yet and
    /// the allocations, which the next run reuses.
    pub(super) fn clear_complete(&mut self) {
        self.data.drain(..self.tail);
        self.lines.clear();
        self.tail = 0;
    }

    /// Sorts the complete lines on the blocking pool. On cancellation this returns at once;
    /// the sort then finishes on the pool, and the run's memory stays charged until it
    /// has (a sort of one run is short).
    pub(super) async fn sort(self, ctx: &Context, sorter: &Arc<Sorter>) -> Result<Run, SortError> {
        let sorter = sorter.clone();
        let job = tokio::task::spawn_blocking(move || {
            let mut run = self;
            let data = &run.data;
            run.lines
                .sort_by(|a, b| sorter.cmp(&data[a.0..a.1], &data[b.0..b.1]));
            run
        });
        tokio::select! {
            r = job => r.map_err(|_| SortError::Internal),
            _ = ctx.cancel.cancelled() => Err(Interrupt::Cancelled.into()),
        }
    }

    /// Writes the complete lines in index order; with `unique`, only the first of each
    /// run of lines whose keys compare equal.
    pub(super) async fn write(
        &self,
        ctx: &Context,
        sorter: &Sorter,
        unique: bool,
        sink: &mut Sink<'_>,
    ) -> Result<(), SortError> {
        let mut prev: Option<&[u8]> = None;
        let mut pacer = Pacer::default();
        for &(start, end) in &self.lines {
            let line = &self.data[start..end];
            if unique && prev.is_some_and(|p| sorter.keys_cmp(p, line) == Ordering::Equal) {
                continue;
            }
            sink.put(line, self.delim).await?;
            prev = Some(line);
            pacer.tick(ctx).await?;
        }
        Ok(())
    }
}

/// Where sorted lines go: stdout, the `-o` file or a run file, in [`OUT_BUF`] writes.
pub(super) struct Sink<'a> {
    ctx: &'a Context,
    dest: Dest,
    buf: Vec<u8>,
}

enum Dest {
    Stdout,
    File {
        /// As shown in messages: the user's `-o` operand or the run file's path.
        name: String,
        handle: Box<dyn WriteHandle>,
    },
}

impl<'a> Sink<'a> {
    pub(super) fn stdout(ctx: &'a Context) -> Sink<'a> {
        Sink {
            ctx,
            dest: Dest::Stdout,
            buf: Vec::new(),
        }
    }

    pub(super) fn file(ctx: &'a Context, name: String, handle: Box<dyn WriteHandle>) -> Sink<'a> {
        Sink {
            ctx,
            dest: Dest::File { name, handle },
            buf: Vec::new(),
        }
    }

    /// Writes `line` and its delimiter. A line of [`OUT_BUF`] or more is written from
    /// where it is, not copied.
    pub(super) async fn put(&mut self, line: &[u8], delim: u8) -> Result<(), SortError> {
        if self.buf.len() + line.len() >= OUT_BUF {
            self.flush().await?;
        }
        if line.len() >= OUT_BUF {
            self.write_through(line).await?;
        } else {
            self.buf.extend_from_slice(line);
        }
        self.buf.push(delim);
        if matches!(self.dest, Dest::Stdout) && self.ctx.tty.is_some() {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), SortError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let data = std::mem::take(&mut self.buf);
        match &mut self.dest {
            Dest::Stdout => self
                .ctx
                .stdout
                .write_bytes(Bytes::from(data))
                .await
                .map_err(|e| SortError::Stop(e.into())),
            Dest::File { name, handle } => {
                handle.write(&data).await.map_err(|err| SortError::Write {
                    name: name.clone(),
                    err,
                })?;
                self.buf = data;
                self.buf.clear();
                Ok(())
            }
        }
    }

    async fn write_through(&mut self, data: &[u8]) -> Result<(), SortError> {
        match &mut self.dest {
            Dest::Stdout => Ok(self.ctx.out(data).await?),
            Dest::File { name, handle } => {
                handle.write(data).await.map_err(|err| SortError::Write {
                    name: name.clone(),
                    err,
                })
            }
        }
    }

    /// Writes what is buffered and closes a file, where a full quota may surface.
    pub(super) async fn finish(mut self) -> Result<(), SortError> {
        let flushed = self.flush().await;
        match self.dest {
            Dest::Stdout => flushed,
            Dest::File { name, handle } => {
                if let Err(e) = flushed {
                    let _ = handle.close().await;
                    return Err(e);
                }
                handle
                    .close()
                    .await
                    .map_err(|err| SortError::Write { name, err })
            }
        }
    }

    /// Closes a file after a failure elsewhere, ignoring what closing says.
    pub(super) async fn abandon(self) {
        if let Dest::File { handle, .. } = self.dest {
            let _ = handle.close().await;
        }
    }
}

/// Writes everything `fill` puts in `sink` and finishes it; on a failure the sink is
/// abandoned (a file closed) and the failure returned.
pub(super) async fn finish_or_abandon(
    sink: Sink<'_>,
    filled: Result<(), SortError>,
) -> Result<(), SortError> {
    match filled {
        Ok(()) => sink.finish().await,
        Err(e) => {
            sink.abandon().await;
            Err(e)
        }
    }
}

/// The run files of one sort: created with unguessable names in [`TEMP_DIR`], removed
/// as soon as they are merged and by [`RunFiles::remove_all`] at the end.
pub(super) struct RunFiles {
    fs: Arc<dyn FileSystem>,
    /// Every run file that exists now (created, not yet removed).
    paths: Vec<String>,
    /// [`TEMP_DIR`] is known to exist.
    dir_ready: bool,
}

impl RunFiles {
    pub(super) fn new(fs: Arc<dyn FileSystem>) -> RunFiles {
        RunFiles {
            fs,
            paths: Vec::new(),
            dir_ready: false,
        }
    }

    /// Creates [`TEMP_DIR`] when it is missing.
    async fn ensure_dir(&mut self) -> Result<(), SortError> {
        if self.dir_ready {
            return Ok(());
        }
        match self.fs.stat(TEMP_DIR).await {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(SortError::TempDir(FsError::NotADirectory)),
            Err(FsError::NotFound) => match self.fs.mkdir(TEMP_DIR).await {
                Ok(()) | Err(FsError::AlreadyExists) => {}
                Err(e) => return Err(SortError::TempDir(e)),
            },
            Err(e) => return Err(SortError::TempDir(e)),
        }
        self.dir_ready = true;
        Ok(())
    }

    /// Creates a new, empty run file; gives its path and a handle to write it.
    pub(super) async fn create(&mut self) -> Result<(String, Box<dyn WriteHandle>), SortError> {
        self.ensure_dir().await?;
        let mut last = FsError::AlreadyExists;
        for _ in 0..TEMP_NAME_TRIES {
            let path = format!("{TEMP_DIR}/sort{:016x}", rand::random::<u64>());
            match self.fs.open_write(&path, WriteMode::CreateNew).await {
                Ok(handle) => {
                    self.paths.push(path.clone());
                    return Ok((path, handle));
                }
                Err(FsError::AlreadyExists) => continue,
                Err(e) => {
                    last = e;
                    break;
                }
            }
        }
        Err(SortError::TempDir(last))
    }

    /// Removes one run file. A failure is ignored: the file is garbage in the session's
    /// own fork, which is deleted with the session.
    pub(super) async fn remove(&mut self, path: &str) {
        let _ = self.fs.unlink(path).await;
        self.paths.retain(|p| p != path);
    }

    /// Removes every run file left.
    pub(super) async fn remove_all(&mut self) {
        for path in std::mem::take(&mut self.paths) {
            let _ = self.fs.unlink(&path).await;
        }
    }
}

impl Drop for RunFiles {
    /// Only when the command's future was dropped before [`RunFiles::remove_all`] ran
    /// (the shell cancelled it): hands the files left to a task that removes them.
    fn drop(&mut self) {
        if self.paths.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let fs = self.fs.clone();
        let paths = std::mem::take(&mut self.paths);
        runtime.spawn(async move {
            for path in paths {
                let _ = fs.unlink(&path).await;
            }
        });
    }
}

/// One line kept apart from its reader (the previous line of `-c`, the last line
/// written by `-u`), charged to the session's budget.
pub(super) struct Held {
    line: Option<Vec<u8>>,
    charge: Charge,
}

impl Held {
    pub(super) fn new(ctx: &Context) -> Held {
        Held {
            line: None,
            charge: ctx.budget.empty_charge(),
        }
    }

    pub(super) fn get(&self) -> Option<&[u8]> {
        self.line.as_deref()
    }

    pub(super) fn set(&mut self, line: &[u8]) -> Result<(), OutOfMemory> {
        let mut buf = self.line.take().unwrap_or_default();
        if line.len() > buf.capacity() {
            self.charge.resize(line.len())?;
            buf = Vec::with_capacity(line.len());
        }
        buf.clear();
        buf.extend_from_slice(line);
        self.charge.resize(buf.capacity())?;
        self.line = Some(buf);
        Ok(())
    }
}

/// Reads delimited lines of any length from a [`Reader`]: it holds the chunk last read
/// and a buffer of up to two chunks plus the current line (the buffer is charged to the
/// session's budget).
pub(super) struct LineReader {
    src: Reader,
    /// As shown in messages.
    name: String,
    /// Read but not yet moved into `buf` (stdin may hand over a large buffer at once).
    pending: Bytes,
    buf: Vec<u8>,
    /// The current line is `buf[start..end]`; what follows it starts at `next`.
    start: usize,
    end: usize,
    next: usize,
    eof: bool,
    delim: u8,
    charge: Charge,
}

impl LineReader {
    pub(super) fn new(ctx: &Context, src: Reader, name: &str, delim: u8) -> LineReader {
        LineReader {
            src,
            name: name.to_string(),
            pending: Bytes::new(),
            buf: Vec::new(),
            start: 0,
            end: 0,
            next: 0,
            eof: false,
            delim,
            charge: ctx.budget.empty_charge(),
        }
    }

    /// The current line, without its delimiter.
    pub(super) fn line(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Moves to the next line; false at end of input. The last line may lack its
    /// delimiter.
    pub(super) async fn advance(&mut self, ctx: &Context) -> Result<bool, SortError> {
        let mut from = self.next;
        loop {
            if let Some(i) = self.buf[from..].iter().position(|b| *b == self.delim) {
                self.start = self.next;
                self.end = from + i;
                self.next = self.end + 1;
                return Ok(true);
            }
            from = self.buf.len();
            if self.pending.is_empty() {
                if self.eof {
                    if self.next < self.buf.len() {
                        self.start = self.next;
                        self.end = self.buf.len();
                        self.next = self.end;
                        return Ok(true);
                    }
                    return Ok(false);
                }
                let chunk = tokio::select! {
                    c = self.src.chunk() => c.map_err(|err| SortError::Read {
                        name: self.name.clone(),
                        err,
                    })?,
                    _ = ctx.cancel.cancelled() => return Err(Interrupt::Cancelled.into()),
                };
                match chunk {
                    Some(c) => self.pending = c,
                    None => self.eof = true,
                }
                continue;
            }
            // Drop what was consumed, then take one piece of what is pending.
            self.buf.drain(..self.next);
            from -= self.next;
            self.next = 0;
            let piece = self.pending.split_to(self.pending.len().min(READ_CHUNK));
            let need = self.buf.len() + piece.len();
            if need > self.buf.capacity() {
                let cap = grown(self.buf.capacity(), need, 2 * READ_CHUNK);
                self.charge.resize(cap)?;
                self.buf.reserve_exact(cap - self.buf.len());
                self.charge.resize(self.buf.capacity())?;
            }
            self.buf.extend_from_slice(&piece);
        }
    }
}

/// Merges sorted run files into `sink`: on a tie the earlier run's line comes first, so
/// the result is what one stable sort of their concatenation gives. With `unique`, only
/// the first of each run of lines whose keys compare equal is written.
pub(super) async fn merge(
    ctx: &Context,
    inputs: &[String],
    sorter: &Sorter,
    unique: bool,
    delim: u8,
    sink: &mut Sink<'_>,
) -> Result<(), SortError> {
    let mut readers = Vec::with_capacity(inputs.len());
    for path in inputs {
        let src = Reader::open(ctx, path)
            .await
            .map_err(|err| SortError::Read {
                name: path.clone(),
                err,
            })?;
        readers.push(LineReader::new(ctx, src, path, delim));
    }
    // Runs with a current line, in the order their lines are to be written.
    let mut order: Vec<usize> = Vec::with_capacity(readers.len());
    for i in 0..readers.len() {
        if readers[i].advance(ctx).await? {
            insert(&mut order, &readers, i, sorter);
        }
    }
    let mut last = Held::new(ctx);
    let mut pacer = Pacer::default();
    while !order.is_empty() {
        let i = order.remove(0);
        let line = readers[i].line();
        let dup = unique
            && last
                .get()
                .is_some_and(|l| sorter.keys_cmp(l, line) == Ordering::Equal);
        if !dup {
            sink.put(line, delim).await?;
            if unique {
                last.set(line)?;
            }
        }
        if readers[i].advance(ctx).await? {
            insert(&mut order, &readers, i, sorter);
        }
        pacer.tick(ctx).await?;
    }
    Ok(())
}

/// Puts run `i` into `order` behind every run whose line comes first.
fn insert(order: &mut Vec<usize>, readers: &[LineReader], i: usize, sorter: &Sorter) {
    let line = readers[i].line();
    let at = order.partition_point(|&j| match sorter.cmp(readers[j].line(), line) {
        Ordering::Less => true,
        Ordering::Equal => j < i,
        Ordering::Greater => false,
    });
    order.insert(at, i);
}

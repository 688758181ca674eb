//! Byte streams between commands: bounded in-process pipes.
//!
//! A pipe is a bounded channel of byte chunks. Its write end ([`Output`]) can be cloned
//! (`2>&1`, `{ a; b; } | c` give several writers one pipe) and the pipe reaches end-of-file
//! when every clone is dropped, exactly like a Unix pipe. Its read end ([`Input`]) is shared
//! too (`{ read a; read b; } < f` reads one stream in turn); when every clone of it is
//! dropped, writes fail with [`std::io::ErrorKind::BrokenPipe`], so `yes | head -n 1` stops
//! (after a short grace: see [`CLOSE_GRACE`]).
//!
//! A [`SharedFile`] is the other kind of stream: one file open for reading and writing at
//! one position (`exec 3<>f`), whose [`Input`] and [`Output`] read and write the file
//! itself, so a write after a read lands where the read stopped. A file redirected for
//! reading (`< f`) is one too ([`file_input`]): commands that read it in turn continue
//! where the last one stopped, and one that read ahead hands back what it did not use
//! ([`Input::give_back`]), as GNU tools do on a seekable standard input.

use std::io;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore, mpsc};

use crate::budget::{Budget, Charge};

mod rename;
use crate::fs::{FileHandle, FsError, FsResult, Metadata, READ_CHUNK, SeekFrom};

/// Largest chunk one send carries; longer writes are split so the pipe bound holds in bytes.
pub const PIPE_CHUNK: usize = 64 * 1024;

/// Bytes a pipe holds before a writer waits: 1 MiB, like a generous kernel pipe buffer,
/// so a fast writer cannot outrun a slow reader by more than that.
pub const PIPE_BYTES: usize = 16 * PIPE_CHUNK;

/// Writes (chunks) a pipe holds before a writer waits, however small they are. The bound
/// is in bytes ([`PIPE_BYTES`]) as a kernel pipe's is: a loop of `echo`s into `head -1`
/// finishes its writes before `head` exits, as with bash, instead of waiting after a few
/// lines and then dying of a broken pipe. This only caps the per-chunk bookkeeping.
pub const PIPE_SLOTS: usize = 4096;

/// How long after its last reader went a pipe still takes writes (and discards them),
/// together with [`CLOSE_GRACE_BYTES`]. A kernel pipe fails every write once its reader
/// has exited, but a real reader takes a while to exit, and a fast writer whose output
/// fits the pipe buffer has written all of it by then: with bash `seq 100 | head -1` or
/// a short loop of `echo`s into `head -1` end with status 0, `yes | head -1` (or a writer
/// that writes again much later) with 141. Tasks that run in turn, as a session's do,
/// would otherwise see every write after `head` exits fail.
pub const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_millis(50);

/// Most bytes one read of a file asks for, however much a reader wants (`dd bs=1G`):
/// bounds what a read holds.
pub const MAX_FILE_READ: usize = 16 * READ_CHUNK;

/// Bytes a pipe still takes after its last reader went (a Linux pipe's buffer): past
/// them, or past [`CLOSE_GRACE`], writes fail with `BrokenPipe`.
pub const CLOSE_GRACE_BYTES: usize = 64 * 1024;

/// When a pipe's last reader went, shared by its ends.
#[derive(Debug, Default)]
struct Closing {
    /// Set as the last reader goes.
    at: std::sync::OnceLock<tokio::time::Instant>,
    /// Bytes taken and discarded since.
    discarded: std::sync::atomic::AtomicUsize,
}

impl Closing {
    /// A write of `len` bytes to a pipe without reader: taken (and discarded) within the
    /// grace, else `BrokenPipe`.
    fn absorb(&self, len: usize) -> io::Result<()> {
        let within = self.at.get().is_some_and(|at| {
            at.elapsed() < CLOSE_GRACE
                && self
                    .discarded
                    .fetch_add(len, std::sync::atomic::Ordering::Relaxed)
                    .saturating_add(len)
                    <= CLOSE_GRACE_BYTES
        });
        if within {
            Ok(())
        } else {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
    }
}

/// Creates a bounded pipe: what is written to the [`Output`] is read from the [`Input`].
pub fn pipe() -> (Output, Input) {
    pipe_with(None)
}

/// A pipe whose contents in flight are charged to a session's `budget`: a write that
/// does not fit fails with [`io::ErrorKind::OutOfMemory`].
pub fn pipe_in(budget: &Budget) -> (Output, Input) {
    pipe_with(Some(budget.clone()))
}

fn pipe_with(budget: Option<Budget>) -> (Output, Input) {
    let (tx, rx) = mpsc::channel(PIPE_SLOTS);
    let closing = Arc::new(Closing::default());
    (
        Output {
            sink: Sink::Pipe(tx),
            room: Arc::new(Semaphore::new(PIPE_BYTES)),
            closing: closing.clone(),
            sent: Arc::default(),
            budget,
            rename: None,
            origin: None,
        },
        Input {
            state: Arc::new(Mutex::new(InputState {
                src: Some(Source::Pipe(rx)),
                buf: Bytes::new(),
                closing: Some(closing),
            })),
            null: false,
            origin: None,
        },
    )
}

/// One chunk in a pipe, with the charge it holds on the session's memory and the room
/// it takes in the pipe, both until read.
struct Chunk {
    data: Bytes,
    _charge: Option<Charge>,
    _room: Option<OwnedSemaphorePermit>,
}

/// The write end of a stream. Cloning shares the stream.
#[derive(Clone, Debug)]
pub struct Output {
    sink: Sink,
    /// A pipe's free bytes ([`PIPE_BYTES`] when empty): a chunk takes its length.
    room: Arc<Semaphore>,
    /// When a pipe's reader went, for the grace writes still get.
    closing: Arc<Closing>,
    /// Bytes sent into the pipe so far, by every clone of this end.
    sent: Arc<std::sync::atomic::AtomicU64>,
    /// What chunks in flight are charged to, if anything.
    budget: Option<Budget>,
    /// The command name this end rewrites in messages (see [`Output::renamed`]).
    rename: Option<Arc<rename::Rename>>,
    /// The regular file this end was opened on, if any (see [`Output::origin`]).
    origin: Option<Arc<str>>,
}

/// Where an [`Output`]'s bytes go.
#[derive(Clone, Debug)]
enum Sink {
    /// Discarded (`/dev/null`).
    Null,
    /// Refused: every write fails with "No space left on device" (`/dev/full`).
    Full,
    /// Into a pipe, for its [`Input`] to read.
    Pipe(mpsc::Sender<Chunk>),
    /// Into a file at its shared position (see [`SharedFile`]).
    File(SharedFile),
}

impl Output {
    /// A stream that accepts and discards everything.
    pub fn null() -> Output {
        Output {
            sink: Sink::Null,
            room: Arc::new(Semaphore::new(0)),
            closing: Arc::default(),
            sent: Arc::default(),
            budget: None,
            rename: None,
            origin: None,
        }
    }

    /// A stream every write to fails with "No space left on device", as writes to the
    /// device `/dev/full` do.
    pub fn full() -> Output {
        Output {
            sink: Sink::Full,
            ..Output::null()
        }
    }

    /// A stream every write to fails at once with `BrokenPipe` (a closed descriptor).
    pub fn broken() -> Output {
        let (out, input) = pipe();
        drop(input);
        Output {
            closing: Arc::default(),
            ..out
        }
    }

    /// Whether `self` and `other` write into the same stream (clones of one write end,
    /// or one shared file); never for discarding sinks.
    pub fn same_stream(&self, other: &Output) -> bool {
        match (&self.sink, &other.sink) {
            (Sink::Pipe(a), Sink::Pipe(b)) => a.same_channel(b),
            (Sink::File(a), Sink::File(b)) => a.same_file(b),
            _ => false,
        }
    }

    /// Sends one chunk of at most [`PIPE_CHUNK`] bytes, waiting for room in the pipe;
    /// `BrokenPipe` once no reader is left (also while waiting), after the grace.
    async fn send(&self, tx: &mpsc::Sender<Chunk>, data: Bytes) -> io::Result<()> {
        let len = data.len();
        let want = u32::try_from(len.min(PIPE_BYTES)).unwrap_or(u32::MAX);
        let room = tokio::select! {
            r = self.room.clone().acquire_many_owned(want) => match r {
                Ok(r) => r,
                Err(_) => return self.closing.absorb(len),
            },
            () = tx.closed() => return self.closing.absorb(len),
        };
        let charge = match &self.budget {
            None => None,
            Some(b) => Some(
                b.charge(data.len())
                    .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?,
            ),
        };
        let chunk = Chunk {
            data,
            _charge: charge,
            _room: Some(room),
        };
        match tx.send(chunk).await {
            Ok(()) => {
                self.sent
                    .fetch_add(len as u64, std::sync::atomic::Ordering::Release);
                Ok(())
            }
            Err(_) => self.closing.absorb(len),
        }
    }

    /// The count of bytes sent into the pipe so far by every clone of this end (taken
    /// by its reader or on their way): a reader that writes them on can tell when it
    /// has caught up (see the shell's files held open by `exec`).
    pub fn sent_counter(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.sent.clone()
    }

    /// This end, writing messages of the command `name` as those of the program run as
    /// `argv0` (`/usr/bin/cat`): GNU's tools name themselves by the `argv[0]` they were
    /// given, at the start of a message and (with `hint`) in `Try 'NAME --help'`.
    pub fn renamed(&self, name: &str, argv0: &str, hint: bool) -> Output {
        Output {
            rename: Some(Arc::new(rename::Rename::new(name, argv0, hint))),
            ..self.clone()
        }
    }

    /// Writes all of `data`, waiting while the pipe is full.
    ///
    /// Fails with `BrokenPipe` once no reader is left.
    pub async fn write_all(&self, data: &[u8]) -> io::Result<()> {
        match &self.rename {
            Some(r) => self.write_raw(&r.apply(data)).await,
            None => self.write_raw(data).await,
        }
    }

    async fn write_raw(&self, data: &[u8]) -> io::Result<()> {
        let tx = match &self.sink {
            Sink::Null => return Ok(()),
            Sink::Full if data.is_empty() => return Ok(()),
            Sink::Full => return Err(self.refuse(data.len())),
            Sink::File(f) => return f.write(data).await,
            Sink::Pipe(tx) => tx,
        };
        for chunk in data.chunks(PIPE_CHUNK) {
            self.send(tx, Bytes::copy_from_slice(chunk)).await?;
        }
        Ok(())
    }

    /// Writes an owned buffer without copying it when it fits one chunk.
    pub async fn write_bytes(&self, data: Bytes) -> io::Result<()> {
        if self.rename.is_some() {
            return self.write_all(&data).await;
        }
        let tx = match &self.sink {
            Sink::Null => return Ok(()),
            Sink::Full if data.is_empty() => return Ok(()),
            Sink::Full => return Err(self.refuse(data.len())),
            Sink::File(f) => return f.write(&data).await,
            Sink::Pipe(tx) => tx,
        };
        if data.len() <= PIPE_CHUNK {
            if data.is_empty() {
                return Ok(());
            }
            return self.send(tx, data).await;
        }
        self.write_raw(&data).await
    }

    /// Writes a string: the bytes it stands for (see [`crate::bytetext`]).
    pub async fn write_str(&self, s: &str) -> io::Result<()> {
        self.write_all(&crate::bytetext::encode(s)).await
    }

    /// A write of `len` bytes to a full device: counted as tried (see [`Output::tried`]),
    /// then refused.
    fn refuse(&self, len: usize) -> io::Error {
        self.sent
            .fetch_add(len as u64, std::sync::atomic::Ordering::Relaxed);
        io::Error::new(io::ErrorKind::StorageFull, "No space left on device")
    }

    /// For [`Output::full`]: how many bytes writes tried to put there, so a shell can tell
    /// whether a builtin wrote anything (bash reports a write error only then); `None`
    /// for other streams.
    pub fn tried(&self) -> Option<u64> {
        matches!(self.sink, Sink::Full)
            .then(|| self.sent.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// This end, marked as opened on the regular file `path` (absolute): what
    /// [`Output::origin`] gives.
    pub fn with_origin(self, path: &str) -> Output {
        Output {
            origin: Some(Arc::from(path)),
            ..self
        }
    }

    /// The regular file this end was opened on (by a redirection), if any: opening
    /// `/dev/fd/N` of such a descriptor opens that file afresh, as Linux does, rather
    /// than sharing the descriptor's position.
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// True for [`Output::null`] (`> /dev/null`): what is written there is never read.
    pub fn is_null(&self) -> bool {
        matches!(self.sink, Sink::Null)
    }

    /// True when no reader is left (a write would fail with `BrokenPipe`), or the file
    /// it wrote into was closed.
    pub fn is_closed(&self) -> bool {
        match &self.sink {
            Sink::Null | Sink::Full => false,
            Sink::Pipe(tx) => tx.is_closed(),
            Sink::File(f) => f.is_closed(),
        }
    }
}

/// The read end of a stream. Cloning shares the stream and its read position.
#[derive(Clone, Debug)]
pub struct Input {
    state: Arc<Mutex<InputState>>,
    /// Made by [`Input::empty`]: `/dev/null`, a character device, rather than an empty
    /// pipe or file (what a program that `fstat`s its stdin tells apart).
    null: bool,
    /// The regular file this end was opened on, if any (see [`Input::origin`]).
    origin: Option<Arc<str>>,
}

/// Whether a read of an [`Input`] would return at once: what `poll(2)` and WASI's
/// `poll_oneoff` ask of standard input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Bytes are waiting: a read returns them at once.
    Data,
    /// End-of-file: a read returns at once, with nothing.
    Eof,
    /// A read would wait.
    Pending,
}

/// A source of input read on demand (see [`Input::from_source`]).
#[async_trait::async_trait]
pub trait PullSource: Send {
    /// The next chunk, or `None` at end-of-file.
    async fn next(&mut self) -> Option<Bytes>;
}

enum Source {
    Pipe(mpsc::Receiver<Chunk>),
    Pull(Box<dyn PullSource>),
    /// A file read at its shared position; what a read takes but does not consume is
    /// given back to the file (see [`InputState::settle`]).
    File(SharedFile),
    /// A descriptor whose every read fails with this `errno` (a closed standard input
    /// reads `EBADF`, a directory `EISDIR`).
    Fail(i32),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Pipe(_) => f.write_str("Pipe"),
            Source::Pull(_) => f.write_str("Pull"),
            Source::File(_) => f.write_str("File"),
            Source::Fail(_) => f.write_str("Fail"),
        }
    }
}

#[derive(Debug)]
struct InputState {
    /// `None` once end-of-file was seen, or for an empty input.
    src: Option<Source>,
    /// Bytes received but not yet consumed (what a line read left over).
    buf: Bytes,
    /// A pipe's record of when its reader went.
    closing: Option<Arc<Closing>>,
}

impl Drop for InputState {
    fn drop(&mut self) {
        if let Some(c) = &self.closing {
            let _ = c.at.set(tokio::time::Instant::now());
        }
    }
}

impl InputState {
    /// Makes sure `buf` holds something; false at end-of-file. A file is read `want`
    /// bytes at a time (at most [`MAX_FILE_READ`]), all of them unless it ends first, as
    /// `read(2)` reads a regular file; it is never at end-of-file for good, since a write
    /// may extend it.
    async fn fill(&mut self, want: usize) -> io::Result<bool> {
        while self.buf.is_empty() {
            let next = match &mut self.src {
                None => return Ok(false),
                Some(Source::Pipe(rx)) => rx.recv().await.map(|c| c.data),
                Some(Source::Pull(p)) => p.next().await,
                Some(Source::Fail(errno)) => return Err(io::Error::from_raw_os_error(*errno)),
                Some(Source::File(f)) => {
                    let chunk = f.read_full(want.clamp(1, MAX_FILE_READ)).await?;
                    if chunk.is_empty() {
                        return Ok(false);
                    }
                    Some(chunk)
                }
            };
            match next {
                Some(chunk) => self.buf = chunk,
                None => {
                    self.src = None;
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Gives bytes read from a file but not consumed back to it (moves its position back
    /// over them), so the file's position is where reading stopped, as bash leaves a
    /// seekable descriptor after `read`. Other sources keep them for the next read.
    async fn settle(&mut self) -> io::Result<()> {
        if let Some(Source::File(f)) = &self.src
            && !self.buf.is_empty()
        {
            let back = std::mem::take(&mut self.buf);
            f.unread(back.len()).await?;
        }
        Ok(())
    }
}

impl Input {
    /// An input that is at end-of-file at once (`< /dev/null`).
    pub fn empty() -> Input {
        Input {
            null: true,
            ..Input::from_bytes(Bytes::new())
        }
    }

    /// This end, marked as opened on the regular file `path` (absolute): what
    /// [`Input::origin`] gives.
    pub fn with_origin(self, path: &str) -> Input {
        Input {
            origin: Some(Arc::from(path)),
            ..self
        }
    }

    /// The regular file this end was opened on (by a redirection), if any: opening
    /// `/dev/fd/N` or `/dev/stdin` of such a descriptor opens that file afresh at its
    /// start, as Linux does, rather than reading on from the descriptor's position.
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// True for [`Input::empty`] (`/dev/null`), false for a pipe, a terminal or bytes
    /// (an empty here-document is a pipe in bash, not `/dev/null`).
    pub fn is_null(&self) -> bool {
        self.null
    }

    /// An input that yields `data` and then end-of-file (here-documents, here-strings).
    pub fn from_bytes(data: impl Into<Bytes>) -> Input {
        Input {
            state: Arc::new(Mutex::new(InputState {
                src: None,
                buf: data.into(),
                closing: None,
            })),
            null: false,
            origin: None,
        }
    }

    /// An input whose every read fails with `errno` (`EBADF` for a closed descriptor,
    /// `EISDIR` for a directory opened for reading).
    pub fn failing(errno: i32) -> Input {
        Input {
            state: Arc::new(Mutex::new(InputState {
                src: Some(Source::Fail(errno)),
                buf: Bytes::new(),
                closing: None,
            })),
            null: false,
            origin: None,
        }
    }

    /// The `errno` every read of this input fails with, if it is one made by
    /// [`Input::failing`].
    pub fn failure(&self) -> Option<i32> {
        match self.state.try_lock().ok()?.src {
            Some(Source::Fail(errno)) => Some(errno),
            _ => None,
        }
    }

    /// An input that asks `source` for data only when a reader wants more, so nothing
    /// is taken from the source that no command read (a terminal's typeahead stays
    /// for the shell).
    pub fn from_source(source: Box<dyn PullSource>) -> Input {
        Input {
            state: Arc::new(Mutex::new(InputState {
                src: Some(Source::Pull(source)),
                buf: Bytes::new(),
                closing: None,
            })),
            null: false,
            origin: None,
        }
    }

    /// True while the input is read on demand from a [`PullSource`] (what the session's
    /// terminal is: see [`Input::from_source`]) and has not reached end-of-file. A host
    /// that must tell a guest whether its stdin is a terminal (`isatty(0)`) asks this.
    /// False while another reader holds the input.
    pub fn is_pull_source(&self) -> bool {
        self.state
            .try_lock()
            .is_ok_and(|st| matches!(st.src, Some(Source::Pull(_))))
    }

    /// Whether a read would return at once, without waiting and without consuming
    /// anything. A pipe is looked into (a chunk that arrived is kept for the next read).
    /// A pull source (a terminal) is only asked when a reader waits, so it is `Pending`
    /// until [`Input::wait_ready`] asked it. While another reader holds the input (one
    /// stage of `{ a; b; }` is reading), it is `Pending` too.
    pub fn ready(&self) -> Readiness {
        let Ok(mut st) = self.state.try_lock() else {
            return Readiness::Pending;
        };
        loop {
            if !st.buf.is_empty() {
                return Readiness::Data;
            }
            let Some(src) = &mut st.src else {
                return Readiness::Eof;
            };
            match src {
                Source::Pull(_) => return Readiness::Pending,
                // A regular file is always ready: a read returns data or its end at once;
                // so is a read that fails.
                Source::File(_) | Source::Fail(_) => return Readiness::Data,
                Source::Pipe(rx) => match rx.try_recv() {
                    Ok(chunk) => st.buf = chunk.data,
                    Err(mpsc::error::TryRecvError::Empty) => return Readiness::Pending,
                    Err(mpsc::error::TryRecvError::Disconnected) => st.src = None,
                },
            }
        }
    }

    /// Waits until a read would return at once and says why (`Data` or `Eof`), without
    /// consuming anything: what arrives is kept for the next read. For a pull source this
    /// asks it for its next chunk. Cancel-safe: dropping the wait loses nothing.
    pub async fn wait_ready(&self) -> Readiness {
        let mut st = self.state.lock().await;
        let filled = st.fill(READ_CHUNK).await.unwrap_or(false);
        let _ = st.settle().await;
        if filled {
            Readiness::Data
        } else {
            Readiness::Eof
        }
    }

    /// Reads the next chunk; `None` at end-of-file.
    pub async fn read_chunk(&self) -> io::Result<Option<Bytes>> {
        let mut st = self.state.lock().await;
        if !st.fill(READ_CHUNK).await? {
            return Ok(None);
        }
        Ok(Some(std::mem::take(&mut st.buf)))
    }

    /// Reads up to `max` bytes; `None` at end-of-file.
    pub async fn read_up_to(&self, max: usize) -> io::Result<Option<Bytes>> {
        let mut st = self.state.lock().await;
        if !st.fill(max).await? {
            return Ok(None);
        }
        let n = max.min(st.buf.len());
        let data = st.buf.split_to(n);
        st.settle().await?;
        Ok(Some(data))
    }

    /// Reads one line including its `\n` (the last line may lack it); `None` at end-of-file.
    /// Bytes after the newline stay for the next reader. A line longer than `max` is
    /// returned in pieces of `max` bytes.
    pub async fn read_line(&self, max: usize) -> io::Result<Option<Vec<u8>>> {
        /// What one read of a file asks for while looking for the end of a line.
        const LINE_READ: usize = 4096;
        let mut st = self.state.lock().await;
        let mut line = Vec::new();
        loop {
            if !st.fill(LINE_READ).await? {
                return Ok(if line.is_empty() { None } else { Some(line) });
            }
            let room = max.saturating_sub(line.len()).max(1);
            let window = st.buf.len().min(room);
            if let Some(pos) = st.buf[..window].iter().position(|&b| b == b'\n') {
                line.extend_from_slice(&st.buf[..=pos]);
                st.buf.advance(pos + 1);
                st.settle().await?;
                return Ok(Some(line));
            }
            line.extend_from_slice(&st.buf[..window]);
            st.buf.advance(window);
            if line.len() >= max {
                st.settle().await?;
                return Ok(Some(line));
            }
        }
    }

    /// Hands back the last `len` bytes a reader took but did not use (what it read ahead
    /// of where it stopped). A file takes them back: its position moves back over them,
    /// so the next reader of the descriptor starts right after what was used, as GNU
    /// tools leave a seekable standard input (`{ head -n1; cat; } < f`). A pipe cannot
    /// take anything back, as a kernel pipe cannot: there they are lost.
    pub async fn give_back(&self, len: usize) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let st = self.state.lock().await;
        if let Some(Source::File(f)) = &st.src {
            // What a read left in `buf` was given back already (see `settle`).
            f.unread(len).await?;
        }
        Ok(())
    }

    /// Moves a file's position to its end, as if it had been read through; a pipe or
    /// other stream is left as it is.
    pub async fn skip_rest(&self) -> io::Result<()> {
        let mut st = self.state.lock().await;
        let InputState { src, buf, .. } = &mut *st;
        if let Some(Source::File(f)) = src {
            f.seek(SeekFrom::End(0)).await?;
            *buf = Bytes::new();
        }
        Ok(())
    }

    /// For an input that reads a file (`< f`): the file's metadata now and the position
    /// the next read starts at, as `fstat` and `lseek(fd, 0, SEEK_CUR)` give them on a
    /// seekable standard input; `None` for a pipe, a terminal, bytes or `/dev/null`.
    pub async fn file_status(&self) -> Option<(Metadata, u64)> {
        let st = self.state.lock().await;
        let Some(Source::File(f)) = &st.src else {
            return None;
        };
        let status = f.status().await?;
        Some((status.0, status.1.saturating_sub(st.buf.len() as u64)))
    }

    /// Reads everything up to end-of-file, failing with `OutOfMemory`-style `Other` error
    /// past `limit` bytes so a command cannot be made to buffer without bound.
    pub async fn read_to_end(&self, limit: usize) -> io::Result<Vec<u8>> {
        let mut out = BytesMut::new();
        while let Some(chunk) = self.read_chunk().await? {
            if out.len() + chunk.len() > limit {
                return Err(io::Error::other(format!("input larger than {limit} bytes")));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out.to_vec())
    }
}

/// One file open for reading and writing at one position (`exec 3<>f`, `cmd <>f`): what
/// POSIX calls an open file description. Its [`SharedFile::input`] and
/// [`SharedFile::output`] read and write the file itself at that position, and every
/// clone shares it, so `read <&3; echo x >&3` writes right after the line read.
///
/// The file is closed by the [`FileCloser`] [`shared_file`] gives, once every clone and
/// every stream made from one is gone, or when it is told to stop: later reads then see
/// end-of-file and writes fail with a broken pipe.
#[derive(Clone)]
pub struct SharedFile {
    user: Arc<FileUser>,
}

/// What every [`SharedFile`] clone holds: the file, and the sender whose drop (with the
/// last clone) tells the [`FileCloser`] nobody uses the file any more.
struct FileUser {
    cell: Arc<Mutex<Option<FileHandle>>>,
    _alive: tokio::sync::oneshot::Sender<()>,
}

impl std::fmt::Debug for SharedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedFile")
    }
}

/// Closes a [`SharedFile`]'s file: see [`FileCloser::close`].
pub struct FileCloser {
    cell: Arc<Mutex<Option<FileHandle>>>,
    unused: tokio::sync::oneshot::Receiver<()>,
}

/// Shares `handle` (opened for reading and writing) among descriptors; the closer closes
/// it when they are done.
pub fn shared_file(handle: FileHandle) -> (SharedFile, FileCloser) {
    let cell = Arc::new(Mutex::new(Some(handle)));
    let (alive, unused) = tokio::sync::oneshot::channel();
    (
        SharedFile {
            user: Arc::new(FileUser {
                cell: cell.clone(),
                _alive: alive,
            }),
        },
        FileCloser { cell, unused },
    )
}

/// A read end on `handle`, a file opened for reading only (`< f`): every clone reads at
/// one shared position and can hand back what it read ahead ([`Input::give_back`]), as
/// commands sharing a seekable standard input do. Nothing such a file holds must be
/// stored, so it needs no [`FileCloser`]: it is let go with the last clone.
pub fn file_input(handle: FileHandle) -> Input {
    let (file, _nothing_to_store) = shared_file(handle);
    file.input()
}

fn fs_error(e: FsError) -> io::Error {
    match e {
        FsError::BadDescriptor => io::Error::from_raw_os_error(9),
        FsError::NoSpace | FsError::QuotaExceeded => io::Error::from_raw_os_error(e.errno()),
        e => io::Error::other(e),
    }
}

impl SharedFile {
    /// A read end that reads the file at the shared position.
    pub fn input(&self) -> Input {
        Input {
            state: Arc::new(Mutex::new(InputState {
                src: Some(Source::File(self.clone())),
                buf: Bytes::new(),
                closing: None,
            })),
            null: false,
            origin: None,
        }
    }

    /// A write end that writes into the file at the shared position.
    pub fn output(&self) -> Output {
        Output {
            sink: Sink::File(self.clone()),
            room: Arc::new(Semaphore::new(0)),
            closing: Arc::default(),
            sent: Arc::default(),
            budget: None,
            rename: None,
            origin: None,
        }
    }

    fn same_file(&self, other: &SharedFile) -> bool {
        Arc::ptr_eq(&self.user.cell, &other.user.cell)
    }

    fn is_closed(&self) -> bool {
        self.user.cell.try_lock().is_ok_and(|h| h.is_none())
    }

    async fn read(&self, len: usize) -> io::Result<Bytes> {
        match &mut *self.user.cell.lock().await {
            Some(h) => h.read(len).await.map_err(fs_error),
            None => Ok(Bytes::new()),
        }
    }

    /// Reads `len` bytes, fewer only at the end of the file (one read of the file may
    /// give less, [`READ_CHUNK`] at the most).
    async fn read_full(&self, len: usize) -> io::Result<Bytes> {
        let first = self.read(len).await?;
        if first.len() >= len || first.is_empty() {
            return Ok(first);
        }
        let mut all = BytesMut::from(&first[..]);
        while all.len() < len {
            let more = self.read(len - all.len()).await?;
            if more.is_empty() {
                break;
            }
            all.extend_from_slice(&more);
        }
        Ok(all.freeze())
    }

    /// The file's metadata and position; `None` once it was closed or when it cannot
    /// be asked.
    async fn status(&self) -> Option<(Metadata, u64)> {
        let mut cell = self.user.cell.lock().await;
        let h = cell.as_mut()?;
        let meta = h.stat().await.ok()?;
        Some((meta, h.position()))
    }

    async fn unread(&self, len: usize) -> io::Result<()> {
        let back = i64::try_from(len).unwrap_or(i64::MAX);
        self.seek(SeekFrom::Current(-back)).await
    }

    async fn seek(&self, to: SeekFrom) -> io::Result<()> {
        if let Some(h) = &mut *self.user.cell.lock().await {
            h.seek(to).await.map_err(fs_error)?;
        }
        Ok(())
    }

    async fn write(&self, data: &[u8]) -> io::Result<()> {
        match &mut *self.user.cell.lock().await {
            Some(h) => h.write(data).await.map(|_| ()).map_err(fs_error),
            None => Err(io::Error::from(io::ErrorKind::BrokenPipe)),
        }
    }
}

impl FileCloser {
    /// Waits until no [`SharedFile`] clone (nor stream made from one) is left, or `stop`
    /// ends, then closes the file and reports whether what was written is stored.
    pub async fn close(self, stop: impl std::future::Future<Output = ()>) -> FsResult<()> {
        tokio::select! {
            _ = self.unused => {}
            () = stop => {}
        }
        let handle = self.cell.lock().await.take();
        match handle {
            Some(h) => h.close().await,
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_stream_is_the_same_pipe() {
        let (a, _ra) = pipe();
        let (b, _rb) = pipe();
        assert!(a.same_stream(&a.clone()));
        assert!(!a.same_stream(&b));
        assert!(!Output::null().same_stream(&Output::null()));
    }

    #[tokio::test]
    async fn only_a_pull_source_says_it_is_one() {
        struct Once(Option<Bytes>);
        #[async_trait::async_trait]
        impl PullSource for Once {
            async fn next(&mut self) -> Option<Bytes> {
                self.0.take()
            }
        }
        let term = Input::from_source(Box::new(Once(Some(Bytes::from_static(b"x")))));
        assert!(term.is_pull_source());
        assert_eq!(term.read_chunk().await.unwrap().as_deref(), Some(&b"x"[..]));
        assert_eq!(term.read_chunk().await.unwrap(), None);
        assert!(
            !term.is_pull_source(),
            "at end-of-file it is no terminal any more"
        );
        let (_w, r) = pipe();
        assert!(!r.is_pull_source());
        assert!(!Input::from_bytes("y").is_pull_source());
    }

    #[tokio::test]
    async fn eof_when_all_writers_drop() {
        let (out, input) = pipe();
        let out2 = out.clone();
        out.write_all(b"a").await.unwrap();
        out2.write_all(b"b\nc").await.unwrap();
        drop(out);
        drop(out2);
        assert_eq!(input.read_line(1024).await.unwrap().unwrap(), b"ab\n");
        assert_eq!(input.read_line(1024).await.unwrap().unwrap(), b"c");
        assert!(input.read_line(1024).await.unwrap().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn broken_pipe_when_reader_drops() {
        let (out, input) = pipe();
        drop(input);
        assert!(out.is_closed());
        // Right after the reader went, a short write is taken, as a kernel pipe's buffer
        // takes what a fast writer wrote before the reader had exited.
        out.write_all(b"x").await.unwrap();
        tokio::time::advance(CLOSE_GRACE).await;
        let err = out.write_all(b"x").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }

    #[tokio::test(start_paused = true)]
    async fn the_grace_after_the_reader_went_is_bounded_in_bytes() {
        let (out, input) = pipe();
        drop(input);
        out.write_all(&vec![b'x'; CLOSE_GRACE_BYTES]).await.unwrap();
        let err = out.write_all(b"x").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }

    #[tokio::test]
    async fn a_broken_output_fails_at_once() {
        let err = Output::broken().write_all(b"x").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }

    #[tokio::test]
    async fn writer_waits_when_full() {
        let (out, input) = pipe();
        let big = vec![b'x'; PIPE_BYTES + 4 * PIPE_CHUNK];
        let writer = tokio::spawn(async move { out.write_all(&big).await });
        tokio::task::yield_now().await;
        assert!(!writer.is_finished());
        let all = input.read_to_end(usize::MAX).await.unwrap();
        assert_eq!(all.len(), PIPE_BYTES + 4 * PIPE_CHUNK);
        writer.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn small_writes_are_bounded_in_bytes_not_count() {
        // A thousand short lines fit as they do in a kernel pipe: no reader needed.
        let (out, input) = pipe();
        for i in 0..1000 {
            out.write_all(format!("{i}\n").as_bytes()).await.unwrap();
        }
        drop(out);
        let all = input.read_to_end(usize::MAX).await.unwrap();
        assert_eq!(all.iter().filter(|&&b| b == b'\n').count(), 1000);
    }

    #[tokio::test]
    async fn a_writer_waiting_for_room_sees_the_reader_go() {
        let (out, input) = pipe();
        out.write_all(&vec![b'x'; PIPE_BYTES]).await.unwrap();
        let more = vec![b'y'; CLOSE_GRACE_BYTES + 1];
        let writer = tokio::spawn(async move { out.write_all(&more).await });
        tokio::task::yield_now().await;
        assert!(!writer.is_finished());
        drop(input);
        let err = writer.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }

    #[tokio::test]
    async fn charged_pipes_hold_at_most_the_budget() {
        let budget = Budget::new(3 * PIPE_CHUNK, 16);
        let (out, input) = pipe_in(&budget);
        let chunk = vec![b'x'; PIPE_CHUNK];
        for _ in 0..3 {
            out.write_all(&chunk).await.unwrap();
        }
        assert_eq!(budget.mem_used(), 3 * PIPE_CHUNK);
        let err = out.write_all(&chunk).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::OutOfMemory);
        assert!(matches!(
            crate::Interrupt::from(err),
            crate::Interrupt::OutOfMemory(_)
        ));
        // Reading gives the memory back.
        input.read_chunk().await.unwrap().unwrap();
        assert_eq!(budget.mem_used(), 2 * PIPE_CHUNK);
        out.write_all(&chunk).await.unwrap();
        drop(out);
        assert_eq!(
            input.read_to_end(usize::MAX).await.unwrap().len(),
            3 * PIPE_CHUNK
        );
        assert_eq!(budget.mem_used(), 0);
    }

    #[tokio::test]
    async fn read_to_end_is_bounded() {
        let input = Input::from_bytes(vec![0u8; 10]);
        assert!(input.read_to_end(5).await.is_err());
    }

    #[tokio::test]
    async fn pull_sources_are_read_only_on_demand() {
        struct Counting(Arc<std::sync::atomic::AtomicUsize>);
        #[async_trait::async_trait]
        impl PullSource for Counting {
            async fn next(&mut self) -> Option<Bytes> {
                let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                (n < 3).then(|| Bytes::from(format!("line{n}\n")))
            }
        }
        let pulls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let input = Input::from_source(Box::new(Counting(pulls.clone())));
        assert_eq!(pulls.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(input.read_line(100).await.unwrap().unwrap(), b"line0\n");
        assert_eq!(pulls.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(input.read_to_end(100).await.unwrap(), b"line1\nline2\n");
    }

    #[tokio::test(start_paused = true)]
    async fn readiness_looks_without_consuming() {
        let (out, input) = pipe();
        assert_eq!(input.ready(), Readiness::Pending);
        let waited =
            tokio::time::timeout(std::time::Duration::from_secs(1), input.wait_ready()).await;
        assert!(waited.is_err(), "nothing written: the wait goes on");
        out.write_all(b"ab").await.unwrap();
        assert_eq!(input.ready(), Readiness::Data);
        assert_eq!(input.ready(), Readiness::Data);
        assert_eq!(input.wait_ready().await, Readiness::Data);
        assert_eq!(input.read_up_to(1).await.unwrap().unwrap(), &b"a"[..]);
        assert_eq!(input.ready(), Readiness::Data);
        assert_eq!(input.read_up_to(9).await.unwrap().unwrap(), &b"b"[..]);
        assert_eq!(input.ready(), Readiness::Pending);
        drop(out);
        assert_eq!(input.ready(), Readiness::Eof);
        assert_eq!(input.wait_ready().await, Readiness::Eof);
        assert!(input.read_chunk().await.unwrap().is_none());
        assert_eq!(Input::empty().ready(), Readiness::Eof);
        let bytes = Input::from_bytes(&b"x"[..]);
        assert_eq!(bytes.ready(), Readiness::Data);
        bytes.read_to_end(10).await.unwrap();
        assert_eq!(bytes.ready(), Readiness::Eof);
    }

    #[tokio::test]
    async fn readiness_of_a_pull_source_asks_it_only_when_waited_for() {
        struct Once(Option<Bytes>);
        #[async_trait::async_trait]
        impl PullSource for Once {
            async fn next(&mut self) -> Option<Bytes> {
                self.0.take()
            }
        }
        let input = Input::from_source(Box::new(Once(Some(Bytes::from("k")))));
        assert_eq!(input.ready(), Readiness::Pending);
        assert_eq!(input.wait_ready().await, Readiness::Data);
        assert_eq!(input.ready(), Readiness::Data);
        assert_eq!(input.read_to_end(10).await.unwrap(), b"k");
        assert_eq!(input.ready(), Readiness::Eof);
    }

    #[tokio::test]
    async fn a_shared_file_reads_and_writes_at_one_position() {
        use crate::fs::{FileSystem, OpenOptions, VfsPath};
        let fs = crate::testing::MemFs::new();
        let mut w = fs
            .open_write("/f", crate::WriteMode::Truncate)
            .await
            .unwrap();
        w.write(b"abcdef\nline2\n").await.unwrap();
        w.close().await.unwrap();
        let path = VfsPath::new("/f").unwrap();
        let handle = fs.open(&path, OpenOptions::read_write()).await.unwrap();
        let (file, closer) = shared_file(handle);
        let closing = tokio::spawn(closer.close(std::future::pending()));
        let (input, output) = (file.input(), file.output());
        assert!(output.same_stream(&file.output()));
        assert_eq!(input.read_line(100).await.unwrap().unwrap(), b"abcdef\n");
        // The write lands right after the line read, not after what the read looked at.
        output.write_all(b"XY\n").await.unwrap();
        assert_eq!(input.read_up_to(1).await.unwrap().unwrap(), &b"e"[..]);
        // A second input on the same file shares the position too.
        assert_eq!(file.input().read_to_end(100).await.unwrap(), b"2\n");
        assert!(input.read_chunk().await.unwrap().is_none());
        drop((file, input, output));
        closing.await.unwrap().unwrap();
        let all = crate::fs::read_all(&*fs, "/f", 100).await.unwrap();
        assert_eq!(all, b"abcdef\nXY\ne2\n");
    }

    #[tokio::test]
    async fn a_stopped_shared_file_is_closed_for_its_streams() {
        use crate::fs::{FileSystem, OpenOptions, VfsPath};
        let fs = crate::testing::MemFs::new();
        let path = VfsPath::new("/g").unwrap();
        let opts = OpenOptions::read_write().create(true);
        let (file, closer) = shared_file(fs.open(&path, opts).await.unwrap());
        file.output().write_all(b"kept").await.unwrap();
        closer.close(std::future::ready(())).await.unwrap();
        let out = file.output();
        assert!(out.is_closed());
        let err = out.write_all(b"lost").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        assert!(file.input().read_chunk().await.unwrap().is_none());
        assert_eq!(crate::fs::read_all(&*fs, "/g", 100).await.unwrap(), b"kept");
    }

    #[tokio::test]
    async fn a_file_input_takes_back_what_a_reader_did_not_use() {
        use crate::fs::{FileSystem, OpenOptions, VfsPath};
        let fs = crate::testing::MemFs::with_files(&[("/f", "one\ntwo\nthree\n")]);
        let path = VfsPath::new("/f").unwrap();
        let input = file_input(fs.open(&path, OpenOptions::read_only()).await.unwrap());
        let chunk = input.read_chunk().await.unwrap().unwrap();
        assert_eq!(chunk.len(), 14);
        // The reader used "one\n": the rest goes back, for the next reader of the file.
        input.give_back(chunk.len() - 4).await.unwrap();
        let (meta, pos) = input.file_status().await.unwrap();
        assert_eq!((meta.len, pos), (14, 4));
        assert_eq!(
            input.clone().read_line(100).await.unwrap().unwrap(),
            b"two\n"
        );
        input.skip_rest().await.unwrap();
        assert!(input.read_chunk().await.unwrap().is_none());
        assert_eq!(input.file_status().await.unwrap().1, 14);
        // A pipe cannot take anything back, and is no file.
        let (out, p) = pipe();
        out.write_all(b"ab\ncd\n").await.unwrap();
        drop(out);
        assert_eq!(p.read_chunk().await.unwrap().unwrap().len(), 6);
        p.give_back(3).await.unwrap();
        p.skip_rest().await.unwrap();
        assert!(p.read_chunk().await.unwrap().is_none());
        assert!(p.file_status().await.is_none());
    }

    #[tokio::test]
    async fn long_lines_come_in_pieces() {
        let input = Input::from_bytes(&b"abcdef\n"[..]);
        assert_eq!(input.read_line(4).await.unwrap().unwrap(), b"abcd");
        assert_eq!(input.read_line(4).await.unwrap().unwrap(), b"ef\n");
    }
}

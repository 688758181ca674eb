//! Sequential read-ahead, for stores where every read is a request (S3).
//!
//! The commands' filesystem port is stateless: `cat`, `sha256sum` or `cp` call
//! `read_at(path, offset, 64 KiB)` again and again, and without help each call is one ranged
//! GET. So the VFS keeps, per session, a few *streams*: for one file (one layer's copy of one
//! path), where the next sequential read would start and the bytes fetched ahead of it. The
//! scheme follows mountpoint-s3's prefetcher:
//!
//! - A read that matches no stream (a file's first read, or a seek) fetches exactly what was
//!   asked and keeps nothing, so a 4 KiB read of a 1 GiB object asks the store for 4 KiB.
//! - A read that starts where the stream's last read ended, or inside what it holds, is
//!   sequential. When nothing held covers it, a window is fetched from there:
//!   [`INITIAL_WINDOW`] (or what the read asks, if more) the first time, then twice the last
//!   window, up to [`MAX_WINDOW`]. While a window is being read, the next one is fetched in
//!   the background: at most one window is in flight ahead of the reader.
//! - Memory: at most [`BUDGET`] bytes of windows, fetched or in flight, per session, in at
//!   most [`MAX_STREAMS`] streams ([`STREAMS_PER_FILE`] per file, so two readers of one file,
//!   or a reader that also seeks, do not reset each other). When streams compete, a new
//!   window is capped at an equal share of the budget; a reader that must wait for data makes
//!   room by dropping the windows of the least recently used other streams, while a
//!   background fetch only takes room that is free. Bytes handed to a caller are copied out of
//!   the window, so nothing a caller keeps holds a window's memory after it is dropped. Reads
//!   that match no stream are not counted: they are the caller's own request, at most
//!   `MAX_READ`, as without read-ahead.
//! - Staleness: the VFS drops every stream of a path whenever it changes that path in its
//!   index ([`Streams::forget`], from every place the index changes, after the store has
//!   changed), which aborts the stream's fetches; a fetch only ever lands in the window that
//!   started it, so one dropped meanwhile takes its result with it.
//! - Tasks: a window being fetched is a spawned task that holds only the store and the key,
//!   aborted when its window is dropped (consumed, evicted, invalidated, or with the session's
//!   `Vfs`), so none outlives the session. A reader cancelled while waiting leaves the task to
//!   its window.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use forkbox_commands::FsResult;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use tokio::task::AbortHandle;

use super::Origin;

/// The first window of a sequential read: small, since many files are read only a little
/// way; a read that asks for more gets what it asks.
pub const INITIAL_WINDOW: usize = 256 * 1024;
/// The largest window: big enough that request latency is small beside transfer time (on S3
/// a GET of 8 MiB runs near a connection's full rate), small enough that two per stream stay
/// well inside [`BUDGET`].
pub const MAX_WINDOW: usize = 8 * 1024 * 1024;
/// Bytes of windows, fetched or being fetched, one session may hold: two streams at full
/// speed. Bounds the read-ahead memory of a session whatever the file sizes.
pub const BUDGET: usize = 32 * 1024 * 1024;
/// Streams one session keeps (each a few words plus its windows); the least recently used
/// one is reused past this.
pub const MAX_STREAMS: usize = 16;
/// Streams of one file: a sequential reader keeps its stream while another reader of the
/// same file (or its own seeks) uses the other.
pub const STREAMS_PER_FILE: usize = 2;
/// Smallest window fetched in the background (except up to the end of the file): less saves
/// too little to be worth a request.
const MIN_PREFETCH: usize = INITIAL_WINDOW;

/// Reads `len` bytes at an offset of the object behind one stream (fewer at its end).
pub(super) type Fetcher =
    Arc<dyn Fn(u64, usize) -> BoxFuture<'static, FsResult<Bytes>> + Send + Sync>;

/// A window's fetch as its readers await it; `None` when the task was aborted (the window
/// was dropped).
type Fetch = Shared<BoxFuture<'static, Option<FsResult<Bytes>>>>;

/// A contiguous range of one object, fetched or being fetched.
struct Window {
    start: u64,
    /// Bytes asked for; fewer may come at the end of the object.
    len: usize,
    state: WindowState,
}

enum WindowState {
    Fetching { fetch: Fetch, task: AbortHandle },
    Ready(Bytes),
}

impl Window {
    /// Starts fetching `len` bytes at `start` in a task of its own; returns the window and
    /// what its readers await.
    fn spawn(fetcher: &Fetcher, start: u64, len: usize) -> (Window, Fetch) {
        let task = tokio::spawn(fetcher(start, len));
        let abort = task.abort_handle();
        let fetch = async move { task.await.ok() }.boxed().shared();
        let window = Window {
            start,
            len,
            state: WindowState::Fetching {
                fetch: fetch.clone(),
                task: abort,
            },
        };
        (window, fetch)
    }

    fn end(&self) -> u64 {
        self.start + self.len as u64
    }

    /// Keeps the bytes of a fetch that has finished well.
    fn settle(&mut self) {
        if let WindowState::Fetching { fetch, .. } = &self.state
            && let Some(Some(Ok(bytes))) = fetch.peek()
        {
            self.state = WindowState::Ready(bytes.clone());
        }
    }

    fn is(&self, fetch: &Fetch) -> bool {
        matches!(&self.state, WindowState::Fetching { fetch: f, .. } if f.ptr_eq(fetch))
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        if let WindowState::Fetching { task, .. } = &self.state {
            task.abort();
        }
    }
}

/// One sequential reader of one file.
struct Stream {
    origin: Origin,
    rel: String,
    /// Where the read after the last one starts if reading goes on sequentially.
    next: u64,
    /// Size of the last window fetched; 0 when none was since the last seek.
    last: usize,
    /// Contiguous windows, the one being read first; at most two (one ahead).
    windows: VecDeque<Window>,
    /// When it was last used (the [`Streams`] clock), for LRU reuse and eviction.
    used: u64,
}

impl Stream {
    fn new(origin: Origin, rel: &str) -> Stream {
        Stream {
            origin,
            rel: rel.to_string(),
            next: 0,
            last: 0,
            windows: VecDeque::new(),
            used: 0,
        }
    }

    fn held(&self) -> usize {
        self.windows.iter().map(|w| w.len).sum()
    }

    fn reads(&self, origin: Origin, rel: &str) -> bool {
        self.origin == origin && self.rel == rel
    }

    /// True when what the stream holds covers `pos`.
    fn covers(&self, pos: u64) -> bool {
        matches!(
            (self.windows.front(), self.windows.back()),
            (Some(f), Some(b)) if f.start <= pos && pos < b.end()
        )
    }
}

/// The size of the window after one of `last` bytes.
fn grown(last: usize) -> usize {
    if last == 0 {
        INITIAL_WINDOW
    } else {
        last.saturating_mul(2).min(MAX_WINDOW)
    }
}

/// What a reader does next for the bytes at its position.
pub(super) enum Step {
    /// These bytes, from a window: the start of what was asked.
    Data(Bytes),
    /// Wait for the window that starts at `start` and covers the position.
    Wait { start: u64, fetch: Fetch },
    /// Read directly what is asked, keeping nothing.
    Direct,
}

/// A session's streams; kept in the VFS state, under its lock.
#[derive(Default)]
pub(super) struct Streams {
    streams: Vec<Stream>,
    /// A clock that ticks at every step.
    tick: u64,
}

impl Streams {
    /// Drops every stream of `rel` (its content changed), aborting their fetches.
    pub(super) fn forget(&mut self, rel: &str) {
        self.streams.retain(|s| s.rel != rel);
    }

    /// Bytes of windows held or being fetched: never more than [`BUDGET`].
    pub(super) fn held(&self) -> usize {
        self.streams.iter().map(Stream::held).sum()
    }

    /// Decides how to serve the `want` bytes at `pos` of `rel` (in layer `origin`), a file
    /// of `file_len` bytes, starting any fetch that needs starting.
    pub(super) fn step(
        &mut self,
        fetcher: &Fetcher,
        origin: Origin,
        rel: &str,
        file_len: u64,
        pos: u64,
        want: usize,
    ) -> Step {
        self.tick += 1;
        let tick = self.tick;
        // The stream whose last read ended here, else one that holds the bytes (a skip
        // forward, or a small step back, within its windows).
        let found = self
            .streams
            .iter()
            .position(|s| s.reads(origin, rel) && s.next == pos)
            .or_else(|| {
                self.streams
                    .iter()
                    .position(|s| s.reads(origin, rel) && s.covers(pos))
            });
        let Some(i) = found else {
            // A first read or a seek: exactly what is asked, and sequential from its end.
            let i = self.slot(origin, rel);
            let s = &mut self.streams[i];
            s.windows.clear();
            s.last = 0;
            s.next = pos + want as u64;
            s.used = tick;
            return Step::Direct;
        };
        let s = &mut self.streams[i];
        s.used = tick;
        while s.windows.front().is_some_and(|w| w.end() <= pos) {
            s.windows.pop_front();
        }
        if let Some(w) = s.windows.front_mut() {
            w.settle();
        }
        let front = s.windows.front().filter(|w| w.start <= pos).map(|w| {
            let held = match &w.state {
                WindowState::Ready(bytes) => Ok(bytes.clone()),
                WindowState::Fetching { fetch, .. } => Err(fetch.clone()),
            };
            (w.start, w.end(), held)
        });
        match front {
            Some((start, end, Ok(bytes))) => {
                let off = (pos - start) as usize;
                if off >= bytes.len() {
                    // The object ends before the window did (shorter than the index says):
                    // ask the store directly.
                    s.windows.clear();
                    s.last = 0;
                    s.next = pos + want as u64;
                    return Step::Direct;
                }
                let n = want.min(bytes.len() - off);
                let data = Bytes::copy_from_slice(&bytes[off..off + n]);
                s.next = pos + n as u64;
                if s.next >= file_len {
                    s.windows.clear();
                } else {
                    if s.next >= end {
                        s.windows.pop_front();
                    }
                    if s.windows.len() < 2 {
                        self.prefetch(i, fetcher, file_len);
                    }
                }
                Step::Data(data)
            }
            Some((start, end, Err(fetch))) => {
                s.next = (pos + want as u64).min(end);
                Step::Wait { start, fetch }
            }
            None => {
                // Sequential, and nothing held covers it: the next window, now.
                s.windows.clear();
                let size = grown(s.last).max(want);
                let n = self.room(i, size, want, file_len.saturating_sub(pos));
                let (w, fetch) = Window::spawn(fetcher, pos, n);
                let s = &mut self.streams[i];
                s.last = n;
                s.next = pos + want.min(n) as u64;
                s.windows.push_back(w);
                if want >= n {
                    // This read takes the whole window: the next one is needed at once.
                    self.prefetch(i, fetcher, file_len);
                }
                Step::Wait { start: pos, fetch }
            }
        }
    }

    /// Forgets a window whose fetch failed (its reader reports the error), so the next read
    /// there asks the store again, as a sequential read starting over with a small window.
    pub(super) fn failed(&mut self, fetch: &Fetch) {
        for s in &mut self.streams {
            if let Some(k) = s.windows.iter().position(|w| w.is(fetch)) {
                s.next = s.next.min(s.windows[k].start);
                s.windows.truncate(k);
                s.last = 0;
            }
        }
    }

    /// Starts fetching the window after stream `i`'s last one in the background, if there
    /// is room for a worthwhile one.
    fn prefetch(&mut self, i: usize, fetcher: &Fetcher, file_len: u64) {
        let s = &self.streams[i];
        let from = s.windows.back().map_or(s.next, Window::end);
        let rest = file_len.saturating_sub(from);
        if rest == 0 {
            return;
        }
        let n = self.room(i, grown(s.last), 0, rest);
        if n == 0 || (n < MIN_PREFETCH && (n as u64) < rest) {
            return;
        }
        let (w, _) = Window::spawn(fetcher, from, n);
        let s = &mut self.streams[i];
        s.last = n;
        s.windows.push_back(w);
    }

    /// How many bytes stream `i` may fetch for a new window of `size` (at most `rest`, the
    /// bytes left in the file): capped at an equal share of [`BUDGET`] among the streams
    /// that hold windows, and never more than is free. With `need` > 0 a reader waits for
    /// that many: the least recently used other streams' windows are dropped until they fit.
    fn room(&mut self, i: usize, size: usize, need: usize, rest: u64) -> usize {
        let active = self
            .streams
            .iter()
            .enumerate()
            .filter(|(j, s)| *j == i || !s.windows.is_empty())
            .count();
        let share = (BUDGET / (2 * active)).max(INITIAL_WINDOW);
        let rest = usize::try_from(rest).unwrap_or(usize::MAX);
        let n = size.min(MAX_WINDOW).min(share).max(need).min(rest);
        loop {
            let free = BUDGET.saturating_sub(self.held());
            if n <= free || need == 0 {
                return n.min(free);
            }
            let victim = self
                .streams
                .iter()
                .enumerate()
                .filter(|(j, s)| *j != i && !s.windows.is_empty())
                .min_by_key(|(_, s)| s.used)
                .map(|(j, _)| j);
            match victim {
                Some(j) => self.streams[j].windows.clear(),
                // Only this stream's own windows are left: the reader needs its bytes.
                None => return n,
            }
        }
    }

    /// A stream for a new reader of `rel`: a new one, or the least recently used one of the
    /// same file (at [`STREAMS_PER_FILE`]) or of all (at [`MAX_STREAMS`]).
    fn slot(&mut self, origin: Origin, rel: &str) -> usize {
        let lru = |it: &mut dyn Iterator<Item = (usize, &Stream)>| {
            it.min_by_key(|(_, s)| s.used).map(|(j, _)| j)
        };
        let same = self.streams.iter().filter(|s| s.reads(origin, rel)).count();
        let reuse = if same >= STREAMS_PER_FILE {
            lru(&mut self
                .streams
                .iter()
                .enumerate()
                .filter(|(_, s)| s.reads(origin, rel)))
        } else if self.streams.len() >= MAX_STREAMS {
            lru(&mut self.streams.iter().enumerate())
        } else {
            None
        };
        match reuse {
            Some(j) => {
                self.streams[j] = Stream::new(origin, rel);
                j
            }
            None => {
                self.streams.push(Stream::new(origin, rel));
                self.streams.len() - 1
            }
        }
    }
}

/// Where a session's [`Streams`] live: the VFS state, behind its lock.
pub(super) trait Table {
    fn with<R>(&self, f: impl FnOnce(&mut Streams) -> R) -> R;
}

/// Reads the `len` bytes at `offset` of `rel` (in layer `origin`, `file_len` bytes long,
/// `len` already cut to the file's end) through the session's streams, fetching with
/// `fetcher`. Cancel-safe: a caller dropped while waiting leaves the fetch to its window.
pub(super) async fn read(
    table: &impl Table,
    fetcher: &Fetcher,
    origin: Origin,
    rel: &str,
    file_len: u64,
    offset: u64,
    len: usize,
) -> FsResult<Bytes> {
    let end = offset + len as u64;
    let mut pos = offset;
    let mut parts: Vec<Bytes> = Vec::new();
    while pos < end {
        let want = (end - pos) as usize;
        let step = table.with(|t| t.step(fetcher, origin, rel, file_len, pos, want));
        let got = match step {
            Step::Data(bytes) => bytes,
            Step::Direct => fetcher(pos, want).await?,
            Step::Wait { start, fetch } => match fetch.clone().await {
                Some(Ok(bytes)) => {
                    let off = (pos - start) as usize;
                    if off >= bytes.len() {
                        Bytes::new()
                    } else {
                        let n = want.min(bytes.len() - off);
                        Bytes::copy_from_slice(&bytes[off..off + n])
                    }
                }
                Some(Err(e)) => {
                    table.with(|t| t.failed(&fetch));
                    return Err(e);
                }
                // The window was dropped while this reader waited (evicted, or its file
                // changed): read what is asked directly.
                None => fetcher(pos, want).await?,
            },
        };
        if got.is_empty() {
            break;
        }
        pos += got.len() as u64;
        parts.push(got);
    }
    Ok(match parts.len() {
        0 => Bytes::new(),
        1 => parts.pop().unwrap_or_default(),
        _ => {
            let mut out = BytesMut::with_capacity((pos - offset) as usize);
            for p in parts {
                out.extend_from_slice(&p);
            }
            out.freeze()
        }
    })
}

#[cfg(test)]
mod tests;

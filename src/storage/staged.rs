//! Staged objects: the new content of one object, built up locally (in memory, then in a
//! spill file past [`SPILL_AT`]) with writes at any offset, and published to the store on
//! [`Staged::publish`] (fsync, `sync`) and [`Staged::close`].
//!
//! Object stores replace whole objects, so a file being written lives here until it is
//! uploaded: nothing reaches the store half-written, a failed upload is an error from
//! publish/close (the staged content is still there), and a session's memory stays
//! bounded whatever the file sizes: past [`SPILL_AT`] the content moves to a temporary file
//! that the operating system deletes once it is closed. Content above [`SINGLE_PUT_MAX`]
//! goes up as a multipart upload in [`PART_SIZE`] parts.
//!
//! On a local store the staging file *is* the object's scratch file in the store
//! directory, so closing renames it into place: no second copy of the data. On the memory
//! store (unless given a spill directory) content stays in memory, since that is where it
//! goes on close anyway, and closing hands the buffer over without a copy.
//!
//! Reads of a staging file are tried from the page cache on the calling thread first
//! ([`super::nowait`]).
//!
//! A staging file is written with positioned writes, each call one trip to the blocking
//! pool. Writes of up to [`WRITE_BUFFER`] bytes that follow one another are first gathered
//! in memory and go to the file together — when the buffer would overflow, before a read,
//! a resize, publish or close — so a loop appending a line at a time costs a trip per
//! [`WRITE_BUFFER`] bytes, not one per line. A write reported done is in the file or in
//! that buffer; the buffer is emptied only once the file holds it, and a failure to write
//! it out is the error of the call that tried (at the latest `publish` or `close`, which
//! then publish nothing).

use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

use super::nowait::{NoWait, PartialRead, Tried};
use super::{Attrs, Result, StorageError, Store};

/// Content kept in memory up to this size; beyond it, in a spill file.
pub const SPILL_AT: u64 = 1024 * 1024;
/// Content up to this size is uploaded with one request.
pub const SINGLE_PUT_MAX: u64 = 8 * 1024 * 1024;
/// Part size of a multipart upload (S3 needs at least 5 MiB for all but the last part).
pub const PART_SIZE: usize = 8 * 1024 * 1024;
/// Consecutive small writes to a staging file gathered in memory before they go to the
/// file in one trip to the blocking pool (a trip costs more than writing a line); small
/// enough that many open writers stay cheap.
pub const WRITE_BUFFER: usize = 256 * 1024;
/// Most bytes of one write copied for one trip to the blocking pool (the data must be
/// owned by the blocking task); a larger write goes in pieces, so staging never holds more
/// than this beside the caller's buffer.
const MAX_WRITE_COPY: usize = 4 * 1024 * 1024;
/// Parts of one upload in flight at once.
const PART_CONCURRENCY: usize = 2;
/// Bytes moved per read or write while copying staged content.
const COPY_CHUNK: u64 = 1024 * 1024;

enum Buf {
    Mem(Vec<u8>),
    File(Spool),
}

/// Staged content in a file: an unnamed temporary file (spilled content; gone when closed,
/// even if the server crashes), or a local store's scratch file, renamed over the object
/// on close. Its operations on the file run one after the other, in order, even when a
/// call is cancelled half-way: each waits for the last one's blocking task first.
struct Spool {
    file: Arc<std::fs::File>,
    /// The scratch file, or the spill directory (for errors).
    path: PathBuf,
    /// The scratch file's key, on a local store.
    scratch: Option<String>,
    /// Whether reads of the file can be tried from the page cache (the store's flag for
    /// the directory the file is in).
    nowait: Arc<NoWait>,
    /// Gathered writes not yet in the file: `pending` bytes at `pending_at`, newer than what
    /// the file holds there. At most [`WRITE_BUFFER`] bytes.
    pending: Vec<u8>,
    pending_at: u64,
    /// The last blocking task on the file while its call waits for it, and after, should
    /// that call be cancelled: the next call waits for it first.
    inflight: Option<tokio::task::JoinHandle<()>>,
}

impl Spool {
    fn new(
        file: std::fs::File,
        path: PathBuf,
        scratch: Option<String>,
        nowait: Arc<NoWait>,
    ) -> Spool {
        Spool {
            file: Arc::new(file),
            path,
            scratch,
            nowait,
            pending: Vec::new(),
            pending_at: 0,
            inflight: None,
        }
    }

    /// Maps an I/O error on this file to a storage error (usable on the blocking pool).
    fn io_err(&self) -> impl Fn(std::io::Error) -> StorageError + Send + 'static {
        let path = self.path.clone();
        move |source| StorageError::Local {
            path: path.clone(),
            source,
        }
    }

    /// Gathers a write of `data` at `offset` in memory, if it starts inside or right after
    /// what is gathered (or nothing is) and everything gathered stays within
    /// [`WRITE_BUFFER`]; false when it has to go to the file.
    fn gather(&mut self, offset: u64, data: &[u8]) -> bool {
        if self.pending.is_empty() {
            if data.len() > WRITE_BUFFER {
                return false;
            }
            self.pending_at = offset;
        }
        let Some(start) = offset.checked_sub(self.pending_at) else {
            return false;
        };
        let end = start.saturating_add(data.len() as u64);
        if start > self.pending.len() as u64 || end > WRITE_BUFFER as u64 {
            return false;
        }
        let (start, end) = (start as usize, end as usize);
        if self.pending.len() < end {
            self.pending.resize(end, 0);
        }
        self.pending[start..end].copy_from_slice(data);
        true
    }

    /// Waits for the last blocking task on the file (one whose call was cancelled).
    async fn settle(&mut self) -> Result<()> {
        if let Some(task) = &mut self.inflight {
            // Awaited through `&mut`: if this call is cancelled too, the next one waits.
            let done = task.await;
            self.inflight = None;
            done.map_err(|e| self.io_err()(std::io::Error::other(e)))?;
        }
        Ok(())
    }

    /// Runs `f` on the file in one trip to the blocking pool, after writing the gathered
    /// bytes out in the same trip. They are dropped from memory only once the file holds
    /// them, so a failure (or a cancelled call) loses nothing.
    async fn with_file<T, F>(&mut self, f: F) -> Result<T>
    where
        F: FnOnce(&std::fs::File) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.settle().await?;
        let file = self.file.clone();
        let err = self.io_err();
        let flush = (!self.pending.is_empty()).then(|| (self.pending.clone(), self.pending_at));
        let flushed = flush.is_some();
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.inflight = Some(tokio::task::spawn_blocking(move || {
            let done = flush
                .map_or(Ok(()), |(pending, at)| {
                    file.write_all_at(&pending, at).map_err(&err)
                })
                .and_then(|()| f(&file));
            let _ = tx.send(done);
        }));
        let Ok(done) = rx.await else {
            // The task panicked before answering: `settle` reports it.
            self.settle().await?;
            return Err(self.io_err()(std::io::Error::other(
                "staged file task failed",
            )));
        };
        self.inflight = None;
        if flushed && done.is_ok() {
            self.pending.clear();
        }
        done
    }

    /// Reads `n` bytes at `offset`, all in the file: from the page cache on this thread
    /// when nothing gathered is waiting to go out and the pages are there
    /// ([`super::nowait`]), else in one trip.
    async fn read_at(&mut self, offset: u64, n: usize) -> Result<Bytes> {
        self.settle().await?;
        let err = self.io_err();
        let tried = if self.pending.is_empty() {
            self.nowait.read_file(&self.file, offset, n)
        } else {
            Tried::Blocked(PartialRead {
                buf: Vec::new(),
                want: n,
            })
        };
        let got = match tried {
            Tried::Done(done) => done,
            Tried::Blocked(partial) => {
                self.with_file(move |f| partial.finish(f, offset).map_err(err))
                    .await?
            }
        };
        if got.len() < n {
            let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
            return Err(self.io_err()(eof));
        }
        Ok(Bytes::from(got))
    }

    /// Writes `data` at `offset`: gathered when small, else (after what is gathered) to
    /// the file in pieces of at most [`MAX_WRITE_COPY`] bytes, one trip each.
    async fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        if self.gather(offset, data) {
            return Ok(());
        }
        if data.len() <= WRITE_BUFFER {
            // What is gathered goes to the file; this write starts a new gathering.
            self.with_file(|_| Ok(())).await?;
            let gathered = self.gather(offset, data);
            debug_assert!(gathered, "an empty buffer takes any small write");
            return Ok(());
        }
        let mut at = offset;
        for piece in data.chunks(MAX_WRITE_COPY) {
            let (piece, err) = (piece.to_vec(), self.io_err());
            let len = piece.len() as u64;
            self.with_file(move |f| f.write_all_at(&piece, at).map_err(err))
                .await?;
            at += len;
        }
        Ok(())
    }
}

/// The new content of one object, not yet (or not entirely) in the store.
pub struct Staged {
    store: Store,
    key: String,
    attrs: Attrs,
    buf: Buf,
    len: u64,
}

impl std::fmt::Debug for Staged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staged")
            .field("key", &self.key)
            .field("len", &self.len)
            .finish()
    }
}

impl Store {
    /// Starts staging new content (empty) for object `key`.
    pub async fn stage(&self, key: &str, attrs: &Attrs) -> Result<Staged> {
        let buf = match &self.local_root {
            Some(root) => {
                let scratch = super::scratch_key(key);
                let path = root.join(&scratch);
                let file = super::blocking(&path.clone(), {
                    let path = path.clone();
                    move || {
                        // The object's directory may exist only in the base so far.
                        if let Some(parent) = path.parent() {
                            std::fs::create_dir_all(parent).map_err(|source| {
                                StorageError::Local {
                                    path: parent.to_path_buf(),
                                    source,
                                }
                            })?;
                        }
                        std::fs::File::options()
                            .read(true)
                            .write(true)
                            .create_new(true)
                            .open(&path)
                            .map_err(|source| StorageError::Local { path, source })
                    }
                })
                .await?;
                Buf::File(Spool::new(file, path, Some(scratch), self.nowait.clone()))
            }
            None => Buf::Mem(Vec::new()),
        };
        Ok(Staged {
            store: self.clone(),
            key: key.to_string(),
            attrs: attrs.clone(),
            buf,
            len: 0,
        })
    }
}

impl Staged {
    /// Bytes staged (the size the object will have).
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Makes the staged content go to object `key` when published (the file it holds
    /// was renamed meanwhile). On a local store the scratch file stays where it is and is
    /// moved to the new place on close.
    pub fn set_key(&mut self, key: &str) {
        self.key = key.to_string();
    }

    /// The attributes the object will be published with.
    pub fn attrs_mut(&mut self) -> &mut Attrs {
        &mut self.attrs
    }

    /// Moves in-memory content to a spill file, in one trip to the blocking pool. The
    /// content is copied for the trip, so a failure (or a cancelled call) keeps it.
    async fn spill(&mut self) -> Result<()> {
        let Buf::Mem(data) = &self.buf else {
            return Ok(());
        };
        let dir = self.store.spill_dir();
        let data = data.clone();
        let file = super::blocking(&dir.clone(), {
            let dir = dir.clone();
            move || {
                std::fs::create_dir_all(&dir)
                    .and_then(|()| tempfile::tempfile_in(&dir))
                    .and_then(|f| f.write_all_at(&data, 0).map(|()| f))
                    .map_err(|source| StorageError::Local { path: dir, source })
            }
        })
        .await?;
        let nowait = self.store.spill_nowait.clone();
        self.buf = Buf::File(Spool::new(file, dir, None, nowait));
        Ok(())
    }

    /// True when content of `len` bytes is past what this store keeps in memory.
    fn spills_at(&self, len: u64) -> bool {
        matches!(self.buf, Buf::Mem(_)) && self.store.spill_at.is_some_and(|at| len > at)
    }

    /// Writes `data` at `offset`; a gap before it reads as zeros.
    pub async fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let end = offset.saturating_add(data.len() as u64);
        if self.spills_at(end) {
            self.spill().await?;
        }
        match &mut self.buf {
            Buf::Mem(v) => {
                let (off, end) = (offset as usize, end as usize);
                if off == v.len() {
                    // Appending: one pass over the new bytes, not a zeroing pass first.
                    v.extend_from_slice(data);
                } else {
                    if v.len() < end {
                        v.resize(end, 0);
                    }
                    v[off..end].copy_from_slice(data);
                }
            }
            Buf::File(spool) => spool.write_at(offset, data).await?,
        }
        self.len = self.len.max(end);
        Ok(())
    }

    /// Cuts or extends (with zeros) the staged content to `len` bytes.
    pub async fn set_len(&mut self, len: u64) -> Result<()> {
        if self.spills_at(len) {
            self.spill().await?;
        }
        match &mut self.buf {
            Buf::Mem(v) => v.resize(len as usize, 0),
            Buf::File(spool) => {
                let err = spool.io_err();
                spool
                    .with_file(move |f| f.set_len(len).map_err(err))
                    .await?
            }
        }
        self.len = len;
        Ok(())
    }

    /// Reads up to `len` staged bytes at `offset`.
    pub async fn read_at(&mut self, offset: u64, len: usize) -> Result<Bytes> {
        if offset >= self.len {
            return Ok(Bytes::new());
        }
        let n = len.min((self.len - offset) as usize);
        match &mut self.buf {
            Buf::Mem(v) => Ok(Bytes::copy_from_slice(
                &v[offset as usize..offset as usize + n],
            )),
            Buf::File(spool) => spool.read_at(offset, n).await,
        }
    }

    /// Appends `len` bytes of object `key` in `from` (the current content of a file being
    /// appended to or updated), chunk by chunk.
    pub async fn fill_from(&mut self, from: &Store, key: &str, len: u64) -> Result<u64> {
        let mut off = 0u64;
        while off < len {
            let n = (len - off).min(COPY_CHUNK) as usize;
            let chunk = from.read(key, off, n).await?;
            if chunk.is_empty() {
                break;
            }
            let at = self.len;
            self.write_at(at, &chunk).await?;
            off += chunk.len() as u64;
        }
        Ok(off)
    }

    /// Makes the object hold the staged content now; staging goes on (fsync, `sync`).
    pub async fn publish(&mut self) -> Result<()> {
        if let Buf::File(spool) = &mut self.buf
            && spool.scratch.is_some()
        {
            // A copy of the scratch file takes the object's place; the scratch file stays
            // open for further writes.
            spool.with_file(|_| Ok(())).await?;
            let from = spool.path.clone();
            let copy = self.store.stage(&self.key, &self.attrs).await?;
            let Buf::File(Spool { path: to, .. }) = &copy.buf else {
                return Ok(());
            };
            let to = to.clone();
            let copied = super::blocking(&to.clone(), move || {
                std::fs::copy(&from, &to)
                    .map(|_| ())
                    .map_err(|source| StorageError::Local { path: to, source })
            })
            .await;
            if let Err(e) = copied {
                copy.abort().await;
                return Err(e);
            }
            let mut copy = copy;
            copy.len = self.len;
            return copy.close().await;
        }
        self.upload(true).await
    }

    /// Publishes the staged content and ends staging. On a local store the gathered writes
    /// go out, the attributes are set and the scratch file is renamed over the object in
    /// one trip to the blocking pool; if that fails nothing is published and the scratch
    /// file is gone.
    pub async fn close(mut self) -> Result<()> {
        if let Buf::File(spool) = &mut self.buf
            && spool.scratch.is_some()
            && let Some(root) = &self.store.local_root
        {
            let (from, to) = (spool.path.clone(), root.join(&self.key));
            let attrs = self.attrs.clone();
            let published = spool
                .with_file(move |_| super::publish_local_now(&from, &to, &attrs))
                .await;
            if published.is_err() {
                self.abort().await;
            }
            return published;
        }
        self.upload(false).await
    }

    /// Gives the staged content up; the object keeps what it held.
    pub async fn abort(self) {
        if let Buf::File(Spool {
            scratch: Some(scratch),
            ..
        }) = &self.buf
        {
            let _ = self.store.op.delete(scratch).await;
        }
    }

    /// Sends the staged content to a remote (or the memory) store: one request when small
    /// or in memory, else a multipart upload fed chunk by chunk from the spill file. Content
    /// in memory is handed over without a copy unless `keep` (staging goes on).
    async fn upload(&mut self, keep: bool) -> Result<()> {
        if let Buf::Mem(v) = &mut self.buf
            && !keep
        {
            let data = Bytes::from(std::mem::take(v));
            return self.put_whole(data).await;
        }
        if self.len <= SINGLE_PUT_MAX || matches!(self.buf, Buf::Mem(_)) {
            let data = self.read_at(0, self.len as usize).await?;
            return self.put_whole(data).await;
        }
        let mut w = self
            .store
            .raw_writer(&self.key, &self.attrs, Some(PART_SIZE))
            .await?;
        let mut off = 0;
        while off < self.len {
            let chunk = match self.read_at(off, COPY_CHUNK as usize).await {
                Ok(c) => c,
                Err(e) => {
                    let _ = w.abort().await;
                    return Err(e);
                }
            };
            off += chunk.len() as u64;
            self.feed(&mut w, chunk).await?;
        }
        self.finish(w).await
    }

    /// Sends `data`, the whole content, in one request.
    async fn put_whole(&self, data: Bytes) -> Result<()> {
        let mut w = self.store.raw_writer(&self.key, &self.attrs, None).await?;
        self.feed(&mut w, data).await?;
        self.finish(w).await
    }

    /// Writes `data` to the upload `w`, which is aborted if that fails.
    async fn feed(&self, w: &mut opendal::Writer, data: Bytes) -> Result<()> {
        if let Err(e) = w.write(data).await {
            let _ = w.abort().await;
            return Err(StorageError::request(&self.key, e));
        }
        Ok(())
    }

    /// Completes the upload `w`.
    async fn finish(&self, mut w: opendal::Writer) -> Result<()> {
        w.close()
            .await
            .map(|_| ())
            .map_err(|e| StorageError::request(&self.key, e))
    }
}

impl Store {
    /// An opendal writer for `key` with the attributes as user metadata; `part` makes it a
    /// multipart upload in parts of that size.
    async fn raw_writer(
        &self,
        key: &str,
        attrs: &Attrs,
        part: Option<usize>,
    ) -> Result<opendal::Writer> {
        let mut w = self.op.writer_with(key);
        if self.user_metadata {
            w = w.user_metadata(attrs.to_user_metadata());
        }
        if let Some(part) = part {
            w = w.chunk(part).concurrent(PART_CONCURRENCY);
        }
        w.await.map_err(|e| StorageError::request(key, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn random_writes(store: Store) {
        let mut s = store.stage("f", &Attrs::default()).await.unwrap();
        s.write_at(0, b"hello world").await.unwrap();
        s.write_at(6, b"WORLD").await.unwrap();
        s.write_at(20, b"!").await.unwrap();
        assert_eq!(s.len(), 21);
        s.close().await.unwrap();
        let got = store.read("f", 0, 100).await.unwrap();
        assert_eq!(&got[..], b"hello WORLD\0\0\0\0\0\0\0\0\0!");

        // Past the spill threshold, then cut back, then published twice.
        let mut s = store.stage("big", &Attrs::default()).await.unwrap();
        let block = vec![7u8; 300 * 1024];
        for i in 0..5u64 {
            s.write_at(i * block.len() as u64, &block).await.unwrap();
        }
        s.write_at(10, b"xyz").await.unwrap();
        s.publish().await.unwrap();
        assert_eq!(store.stat("big").await.unwrap().unwrap().len, 1_536_000);
        s.set_len(1_000_000).await.unwrap();
        s.close().await.unwrap();
        assert_eq!(store.stat("big").await.unwrap().unwrap().len, 1_000_000);
        assert_eq!(&store.read("big", 9, 5).await.unwrap()[..], b"\x07xyz\x07");

        // An aborted stage leaves the object as it was.
        let mut s = store.stage("f", &Attrs::default()).await.unwrap();
        s.write_at(0, b"gone").await.unwrap();
        s.abort().await;
        assert_eq!(store.stat("f").await.unwrap().unwrap().len, 21);
    }

    /// Small writes (gathered), big ones, overwrites, gaps, reads, resizes and a publish in
    /// between, checked against the same operations on a plain buffer.
    async fn small_and_big_writes(store: Store) {
        let mut s = store.stage("log", &Attrs::default()).await.unwrap();
        let mut want: Vec<u8> = Vec::new();
        async fn write(s: &mut Staged, want: &mut Vec<u8>, at: u64, data: &[u8]) {
            s.write_at(at, data).await.unwrap();
            let end = at as usize + data.len();
            if want.len() < end {
                want.resize(end, 0);
            }
            want[at as usize..end].copy_from_slice(data);
            assert_eq!(s.len(), want.len() as u64);
        }
        // A loop appending lines: more than the buffer holds, past SPILL_AT.
        for i in 0..120_000u64 {
            let line = format!("line {i}\n");
            let at = s.len();
            write(&mut s, &mut want, at, line.as_bytes()).await;
            if i == 50_000 {
                // The object shows everything written so far.
                s.publish().await.unwrap();
                let got = store.read("log", 0, 1 << 30).await.unwrap();
                assert_eq!(&got[..], &want[..]);
            }
        }
        // Overwrites inside and across what is gathered, then before it.
        let end = s.len();
        write(&mut s, &mut want, end - 3, b"ABCDEF").await;
        write(&mut s, &mut want, end - 100, b"overwritten").await;
        write(&mut s, &mut want, 10, b"early").await;
        // A read sees gathered writes.
        let got = s.read_at(end - 100, 200).await.unwrap();
        assert_eq!(&got[..], &want[end as usize - 100..]);
        // A gap, a big write over it, small writes after it.
        let end = s.len();
        write(&mut s, &mut want, end + 5000, b"after a gap").await;
        let big = vec![9u8; WRITE_BUFFER * 2 + 17];
        write(&mut s, &mut want, end + 1000, &big).await;
        write(&mut s, &mut want, 3, b"x").await;
        write(&mut s, &mut want, 4, b"y").await;
        // Cut inside what is gathered, then grow again.
        let cut = s.len() - 2;
        s.set_len(cut).await.unwrap();
        want.truncate(cut as usize);
        let end = s.len();
        write(&mut s, &mut want, end, b"tail").await;
        s.close().await.unwrap();
        let got = store.read("log", 0, 1 << 30).await.unwrap();
        assert_eq!(got.len(), want.len());
        assert!(
            got[..] == want[..],
            "the object differs from what was written"
        );
    }

    #[tokio::test]
    async fn memory_store_gathers_small_writes() {
        let spill = tempfile::tempdir().unwrap();
        small_and_big_writes(Store::memory().with_spill_dir(spill.path())).await;
    }

    #[tokio::test]
    async fn local_store_gathers_small_writes() {
        let dir = tempfile::tempdir().unwrap();
        small_and_big_writes(Store::local(dir.path()).unwrap()).await;
    }

    #[tokio::test]
    async fn a_failed_close_is_an_error_and_publishes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::local(dir.path()).unwrap();
        store
            .put("f", Bytes::from("old"), &Attrs::default())
            .await
            .unwrap();
        // The rename over the object fails: a directory took its name meanwhile.
        let mut s = store.stage("d", &Attrs::default()).await.unwrap();
        s.write_at(0, b"gathered, not yet in the file")
            .await
            .unwrap();
        std::fs::create_dir_all(dir.path().join("d/in")).unwrap();
        let err = s.close().await.unwrap_err();
        assert!(matches!(err, StorageError::Local { .. }), "{err:?}");
        assert!(dir.path().join("d/in").is_dir());
        // The scratch file went away before close could publish it.
        let mut s = store.stage("f", &Attrs::default()).await.unwrap();
        s.write_at(0, b"new").await.unwrap();
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if name.starts_with(".forkbox-partial-") {
                std::fs::remove_file(dir.path().join(name)).unwrap();
            }
        }
        assert!(s.close().await.unwrap_err().is_not_found());
        assert_eq!(&store.read("f", 0, 10).await.unwrap()[..], b"old");
        // Nothing is left behind but the object and the directory.
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["d", "f"]);
    }

    #[tokio::test]
    async fn a_failed_write_keeps_what_was_written_before() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::local(dir.path()).unwrap();
        let mut s = store.stage("f", &Attrs::default()).await.unwrap();
        s.write_at(0, b"kept").await.unwrap();
        // An offset no file reaches: the gathered bytes go out, then the write fails.
        let big = vec![1u8; WRITE_BUFFER + 1];
        assert!(s.write_at(1 << 63, &big).await.is_err());
        assert_eq!(s.len(), 4);
        assert_eq!(&s.read_at(0, 10).await.unwrap()[..], b"kept");
        s.close().await.unwrap();
        assert_eq!(&store.read("f", 0, 10).await.unwrap()[..], b"kept");
    }

    #[tokio::test]
    async fn memory_store_stages_random_writes() {
        let spill = tempfile::tempdir().unwrap();
        random_writes(Store::memory().with_spill_dir(spill.path())).await;
    }

    #[tokio::test]
    async fn memory_store_keeps_big_files_in_memory() {
        random_writes(Store::memory()).await;
        let store = Store::memory();
        let mut s = store.stage("big", &Attrs::default()).await.unwrap();
        let block: Vec<u8> = (0..SPILL_AT as usize).map(|i| (i % 253) as u8).collect();
        s.write_at(0, &block).await.unwrap();
        s.write_at(SPILL_AT, &block).await.unwrap();
        assert!(
            matches!(s.buf, Buf::Mem(_)),
            "no spill file without a spill dir"
        );
        // Published (a copy), written over, then closed (handed over).
        s.publish().await.unwrap();
        s.write_at(5, b"later").await.unwrap();
        assert_eq!(&store.read("big", 5, 5).await.unwrap()[..], &block[5..10]);
        s.close().await.unwrap();
        let got = store.read("big", 0, 4 * SPILL_AT as usize).await.unwrap();
        assert_eq!(got.len(), 2 * block.len());
        assert_eq!(&got[..5], &block[..5]);
        assert_eq!(&got[5..10], b"later");
        assert_eq!(&got[10..SPILL_AT as usize], &block[10..]);
        assert_eq!(&got[SPILL_AT as usize..], &block[..]);
    }

    #[tokio::test]
    async fn local_store_stages_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::local(dir.path()).unwrap();
        random_writes(store).await;
        // No scratch file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}

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
//! directory, so closing renames it into place: no second copy of the data.

use std::io::SeekFrom;
use std::path::PathBuf;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use super::{Attrs, Result, StorageError, Store};

/// Content kept in memory up to this size; beyond it, in a spill file.
pub const SPILL_AT: u64 = 1024 * 1024;
/// Content up to this size is uploaded with one request.
pub const SINGLE_PUT_MAX: u64 = 8 * 1024 * 1024;
/// Part size of a multipart upload (S3 needs at least 5 MiB for all but the last part).
pub const PART_SIZE: usize = 8 * 1024 * 1024;
/// Parts of one upload in flight at once.
const PART_CONCURRENCY: usize = 2;
/// Bytes moved per read or write while copying staged content.
const COPY_CHUNK: u64 = 1024 * 1024;

enum Buf {
    Mem(Vec<u8>),
    /// An unnamed temporary file (gone when closed, even if the server crashes).
    Spilled(tokio::fs::File),
    /// A local store's scratch file, renamed over the object on close.
    Local {
        file: tokio::fs::File,
        path: PathBuf,
        scratch: String,
    },
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
                // The object's directory may exist only in the base so far.
                if let Some(parent) = path.parent() {
                    tokio::fs::create_dir_all(parent).await.map_err(|source| {
                        StorageError::Local {
                            path: parent.to_path_buf(),
                            source,
                        }
                    })?;
                }
                let file = tokio::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .await
                    .map_err(|source| StorageError::Local {
                        path: path.clone(),
                        source,
                    })?;
                Buf::Local {
                    file,
                    path,
                    scratch,
                }
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

    /// The attributes the object will be published with.
    pub fn attrs_mut(&mut self) -> &mut Attrs {
        &mut self.attrs
    }

    fn local_err(&self, source: std::io::Error) -> StorageError {
        let path = match &self.buf {
            Buf::Local { path, .. } => path.clone(),
            _ => self.store.spill_dir(),
        };
        StorageError::Local { path, source }
    }

    /// Moves in-memory content to a spill file.
    async fn spill(&mut self) -> Result<()> {
        let Buf::Mem(data) = &self.buf else {
            return Ok(());
        };
        let dir = self.store.spill_dir();
        let made = tokio::task::spawn_blocking({
            let dir = dir.clone();
            move || {
                std::fs::create_dir_all(&dir)?;
                tempfile::tempfile_in(&dir)
            }
        })
        .await
        .map_err(|e| StorageError::Local {
            path: dir.clone(),
            source: std::io::Error::other(e),
        })?;
        let std_file = made.map_err(|source| StorageError::Local {
            path: dir.clone(),
            source,
        })?;
        let mut file = tokio::fs::File::from_std(std_file);
        file.write_all(data)
            .await
            .map_err(|source| StorageError::Local { path: dir, source })?;
        self.buf = Buf::Spilled(file);
        Ok(())
    }

    /// Writes `data` at `offset`; a gap before it reads as zeros.
    pub async fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let end = offset.saturating_add(data.len() as u64);
        if matches!(self.buf, Buf::Mem(_)) && end > SPILL_AT {
            self.spill().await?;
        }
        let r = match &mut self.buf {
            Buf::Mem(v) => {
                let (off, end) = (offset as usize, end as usize);
                if v.len() < end {
                    v.resize(end, 0);
                }
                v[off..end].copy_from_slice(data);
                Ok(())
            }
            Buf::Spilled(file) | Buf::Local { file, .. } => {
                async {
                    file.seek(SeekFrom::Start(offset)).await?;
                    file.write_all(data).await
                }
                .await
            }
        };
        r.map_err(|e| self.local_err(e))?;
        self.len = self.len.max(end);
        Ok(())
    }

    /// Cuts or extends (with zeros) the staged content to `len` bytes.
    pub async fn set_len(&mut self, len: u64) -> Result<()> {
        if matches!(self.buf, Buf::Mem(_)) && len > SPILL_AT {
            self.spill().await?;
        }
        let r = match &mut self.buf {
            Buf::Mem(v) => {
                v.resize(len as usize, 0);
                Ok(())
            }
            Buf::Spilled(file) | Buf::Local { file, .. } => file.set_len(len).await,
        };
        r.map_err(|e| self.local_err(e))?;
        self.len = len;
        Ok(())
    }

    /// Reads up to `len` staged bytes at `offset`.
    pub async fn read_at(&mut self, offset: u64, len: usize) -> Result<Bytes> {
        if offset >= self.len {
            return Ok(Bytes::new());
        }
        let n = len.min((self.len - offset) as usize);
        let r = match &mut self.buf {
            Buf::Mem(v) => Ok(Bytes::copy_from_slice(
                &v[offset as usize..offset as usize + n],
            )),
            Buf::Spilled(file) | Buf::Local { file, .. } => {
                async {
                    file.seek(SeekFrom::Start(offset)).await?;
                    let mut out = vec![0u8; n];
                    file.read_exact(&mut out).await?;
                    Ok(Bytes::from(out))
                }
                .await
            }
        };
        r.map_err(|e| self.local_err(e))
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
        if let Buf::Local { file, .. } = &mut self.buf {
            // A copy of the scratch file takes the object's place; the scratch file stays
            // open for further writes.
            file.flush().await.map_err(|e| self.local_err(e))?;
            let copy = self.store.stage(&self.key, &self.attrs).await?;
            let (Buf::Local { path: from, .. }, Buf::Local { path: to, .. }) =
                (&self.buf, &copy.buf)
            else {
                return Ok(());
            };
            if let Err(source) = tokio::fs::copy(from, to).await {
                let err = StorageError::Local {
                    path: to.clone(),
                    source,
                };
                copy.abort().await;
                return Err(err);
            }
            let mut copy = copy;
            copy.len = self.len;
            return copy.close().await;
        }
        self.upload().await
    }

    /// Publishes the staged content and ends staging.
    pub async fn close(mut self) -> Result<()> {
        if let Buf::Local { file, scratch, .. } = &mut self.buf {
            file.flush().await.map_err(|source| StorageError::Local {
                path: self.store.spill_dir(),
                source,
            })?;
            let scratch = scratch.clone();
            return self
                .store
                .publish_local(&scratch, &self.key, &self.attrs)
                .await;
        }
        self.upload().await
    }

    /// Gives the staged content up; the object keeps what it held.
    pub async fn abort(self) {
        if let Buf::Local { scratch, .. } = &self.buf {
            let _ = self.store.op.delete(scratch).await;
        }
    }

    /// Sends the staged content to a remote store: one request when small, else a
    /// multipart upload fed chunk by chunk from the spill file.
    async fn upload(&mut self) -> Result<()> {
        if self.len <= SINGLE_PUT_MAX {
            let data = self.read_at(0, self.len as usize).await?;
            let mut w = self.store.raw_writer(&self.key, &self.attrs, None).await?;
            if let Err(e) = w.write(data).await {
                let _ = w.abort().await;
                return Err(StorageError::request(&self.key, e));
            }
            return w
                .close()
                .await
                .map(|_| ())
                .map_err(|e| StorageError::request(&self.key, e));
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
            if let Err(e) = w.write(chunk).await {
                let _ = w.abort().await;
                return Err(StorageError::request(&self.key, e));
            }
        }
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

    #[tokio::test]
    async fn memory_store_stages_random_writes() {
        let spill = tempfile::tempdir().unwrap();
        random_writes(Store::memory().with_spill_dir(spill.path())).await;
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

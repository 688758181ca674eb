//! Object storage: the data plane, over an `opendal::Operator`.
//!
//! A [`Store`] reads, writes, lists and deletes objects whose keys are paths (`a/b.txt`;
//! a directory marker is `a/`). It hides opendal from the rest of forkbox and turns every
//! storage failure into a [`StorageError`] that carries the key for the logs; what a
//! session sees is only an errno-like [`forkbox_commands::FsError`].
//!
//! The local-filesystem service gets one extra guard: a host symlink inside a local base
//! directory is reported as a forkbox symlink (its target then resolves inside the session
//! root), so nothing ever follows a host symlink out of the base directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use opendal::layers::{RetryLayer, TimeoutLayer};
use opendal::{EntryMode, ErrorKind, Operator};

/// Attempts of one storage request before its failure is reported.
const RETRY_TIMES: usize = 4;
/// Upper bound on one storage request, so a stuck store fails a command instead of hanging it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// User-metadata names under which a file's POSIX attributes are kept (as `x-amz-meta-*`
/// headers on S3, `user.*` extended attributes on a local filesystem).
pub mod meta_keys {
    pub const MODE: &str = "mode";
    pub const MTIME: &str = "mtime";
    pub const SYMLINK: &str = "symlink-target";
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("storage request on {key:?} failed")]
    Request {
        key: String,
        #[source]
        source: opendal::Error,
    },
    #[error("local storage at {path:?} failed")]
    Local {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl StorageError {
    fn request(key: &str, source: opendal::Error) -> Self {
        StorageError::Request {
            key: key.to_string(),
            source,
        }
    }

    /// True when the object simply does not exist.
    pub fn is_not_found(&self) -> bool {
        match self {
            StorageError::Request { source, .. } => source.kind() == ErrorKind::NotFound,
            StorageError::Local { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        }
    }
}

pub type Result<T> = std::result::Result<T, StorageError>;

/// What kind of object a key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    File,
    Dir,
    Symlink,
}

/// What [`Store::stat`] and [`Store::list`] tell about an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectMeta {
    pub kind: ObjectKind,
    pub len: u64,
    /// Permission bits, when the store recorded them.
    pub mode: Option<u32>,
    pub mtime: Option<SystemTime>,
    /// Target of a symlink.
    pub symlink: Option<String>,
}

/// One backend holding objects.
#[derive(Clone, Debug)]
pub struct Store {
    op: Operator,
    /// Set for the local-filesystem service: the host directory behind it, used to report
    /// host symlinks and permission bits without following anything.
    local_root: Option<PathBuf>,
    user_metadata: bool,
}

impl Store {
    /// A store over a local directory (created if missing).
    pub fn local(root: &Path) -> Result<Store> {
        std::fs::create_dir_all(root).map_err(|source| StorageError::Local {
            path: root.to_path_buf(),
            source,
        })?;
        let root = root.canonicalize().map_err(|source| StorageError::Local {
            path: root.to_path_buf(),
            source,
        })?;
        let builder = opendal::services::Fs::default().root(&root.to_string_lossy());
        let op = Operator::new(builder).map_err(|e| StorageError::request("", e))?;
        Ok(Store::wrap(op, Some(root)))
    }

    /// A store in memory, for tests.
    pub fn memory() -> Store {
        let op = Operator::new(opendal::services::Memory::default())
            .expect("the memory service needs no configuration");
        Store::wrap(op, None)
    }

    fn wrap(op: Operator, local_root: Option<PathBuf>) -> Store {
        let user_metadata = op.info().capability().write_with_user_metadata;
        let op = op
            .layer(TimeoutLayer::new().with_timeout(REQUEST_TIMEOUT))
            .layer(RetryLayer::new().with_max_times(RETRY_TIMES).with_jitter());
        Store {
            op,
            local_root,
            user_metadata,
        }
    }

    /// The host directory behind a local store.
    pub fn local_root(&self) -> Option<&Path> {
        self.local_root.as_deref()
    }

    /// Metadata of the object `key` (no trailing slash), as a file, symlink or directory.
    pub async fn stat(&self, key: &str) -> Result<Option<ObjectMeta>> {
        if let Some(root) = &self.local_root {
            return local_stat(&root.join(key)).await;
        }
        match self.op.stat(key).await {
            Ok(m) if !m.is_dir() => return Ok(Some(meta_of(&m))),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(StorageError::request(key, e)),
        }
        let dir = format!("{key}/");
        match self.op.stat(&dir).await {
            Ok(m) => Ok(Some(ObjectMeta {
                kind: ObjectKind::Dir,
                ..meta_of(&m)
            })),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                // An object store may have `a/b/c` without an `a/b/` marker: the
                // directory exists implicitly.
                let found = self
                    .op
                    .list_with(&dir)
                    .limit(2)
                    .await
                    .map_err(|e| StorageError::request(key, e))?;
                Ok(found.iter().any(|e| e.path() != dir).then_some(ObjectMeta {
                    kind: ObjectKind::Dir,
                    len: 0,
                    mode: None,
                    mtime: None,
                    symlink: None,
                }))
            }
            Err(e) => Err(StorageError::request(key, e)),
        }
    }

    /// Names of the direct children of directory `dir` (`""` for the root), with whether
    /// each is a directory. Where a file and a directory share a name, the directory wins.
    pub async fn list(&self, dir: &str) -> Result<Vec<(String, bool)>> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let entries = match self.op.list(&prefix).await {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StorageError::request(dir, e)),
        };
        let mut out: HashMap<String, bool> = HashMap::new();
        for entry in entries {
            let Some(rest) = entry.path().strip_prefix(&prefix) else {
                continue;
            };
            let is_dir = entry.metadata().mode() == EntryMode::DIR || rest.contains('/');
            let name = rest.trim_end_matches('/');
            let name = name.split('/').next().unwrap_or_default();
            if name.is_empty() {
                continue;
            }
            let slot = out.entry(name.to_string()).or_insert(false);
            *slot |= is_dir;
        }
        let mut v: Vec<_> = out.into_iter().collect();
        v.sort();
        Ok(v)
    }

    /// Reads `len` bytes at `offset` (fewer at the end of the object).
    pub async fn read(&self, key: &str, offset: u64, len: usize) -> Result<Bytes> {
        if len == 0 {
            return Ok(Bytes::new());
        }
        match self
            .op
            .read_with(key)
            .range(offset..offset + len as u64)
            .await
        {
            Ok(buf) => Ok(buf.to_bytes()),
            Err(e) if e.kind() == ErrorKind::RangeNotSatisfied => {
                // The range runs past the end: read what is there, like read(2).
                let size = self
                    .op
                    .stat(key)
                    .await
                    .map_err(|e| StorageError::request(key, e))?
                    .content_length();
                if offset >= size {
                    return Ok(Bytes::new());
                }
                let buf = self
                    .op
                    .read_with(key)
                    .range(offset..size.min(offset + len as u64))
                    .await
                    .map_err(|e| StorageError::request(key, e))?;
                Ok(buf.to_bytes())
            }
            Err(e) => Err(StorageError::request(key, e)),
        }
    }

    /// Starts writing object `key` with the given attributes; nothing is visible in the
    /// store until [`ObjectWriter::close`] succeeds.
    pub async fn writer(&self, key: &str, attrs: &Attrs) -> Result<ObjectWriter> {
        // The local-filesystem service writes into the target file as data comes, after
        // truncating it: a reader of the old content (an append's copy, a truncate) would
        // lose it. So a local object is written beside its target under a scratch name
        // and renamed over it on close, which also makes the replacement atomic.
        let scratch = self.local_root.as_ref().map(|_| scratch_key(key));
        let write_key = scratch.as_deref().unwrap_or(key);
        let mut w = self.op.writer_with(write_key);
        if self.user_metadata {
            w = w.user_metadata(attrs.to_user_metadata());
        }
        let inner = w.await.map_err(|e| StorageError::request(key, e))?;
        Ok(ObjectWriter {
            key: key.to_string(),
            scratch,
            op: self.op.clone(),
            inner,
            local: self.local_path(key),
            attrs: attrs.clone(),
        })
    }

    /// Writes a whole small object at once.
    pub async fn put(&self, key: &str, data: Bytes, attrs: &Attrs) -> Result<()> {
        let mut w = self.writer(key, attrs).await?;
        w.write(data).await?;
        w.close().await
    }

    /// Creates the directory marker `key/`.
    pub async fn create_dir(&self, key: &str) -> Result<()> {
        self.op
            .create_dir(&format!("{key}/"))
            .await
            .map_err(|e| StorageError::request(key, e))
    }

    /// Deletes one object (a missing one is not an error).
    pub async fn delete(&self, key: &str) -> Result<()> {
        match self.op.delete(key).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StorageError::request(key, e)),
        }
    }

    /// Deletes the directory marker `key/` (a missing one is not an error).
    pub async fn delete_dir(&self, key: &str) -> Result<()> {
        self.delete(&format!("{key}/")).await
    }

    /// Deletes everything under `prefix/`, the marker included.
    pub async fn delete_tree(&self, prefix: &str) -> Result<()> {
        let dir = format!("{}/", prefix.trim_end_matches('/'));
        match self.op.delete_with(&dir).recursive(true).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StorageError::request(prefix, e)),
        }
    }

    /// True when anything at all exists under `prefix/`.
    pub async fn tree_exists(&self, prefix: &str) -> Result<bool> {
        if let Some(root) = &self.local_root {
            return Ok(tokio::fs::symlink_metadata(root.join(prefix)).await.is_ok());
        }
        let dir = format!("{}/", prefix.trim_end_matches('/'));
        let found = self
            .op
            .list_with(&dir)
            .limit(1)
            .await
            .map_err(|e| StorageError::request(prefix, e))?;
        Ok(!found.is_empty())
    }

    /// Moves object `from` to `to` within this store.
    pub async fn rename(&self, from: &str, to: &str) -> Result<()> {
        if self.op.info().capability().rename {
            return self
                .op
                .rename(from, to)
                .await
                .map_err(|e| StorageError::request(from, e));
        }
        if self.op.info().capability().copy {
            self.op
                .copy(from, to)
                .await
                .map_err(|e| StorageError::request(from, e))?;
        } else {
            self.copy_by_streaming(from, to).await?;
        }
        self.delete(from).await
    }

    /// Copies an object through this process, chunk by chunk, keeping its attributes.
    async fn copy_by_streaming(&self, from: &str, to: &str) -> Result<()> {
        const CHUNK: u64 = 1024 * 1024;
        let meta = self
            .op
            .stat(from)
            .await
            .map_err(|e| StorageError::request(from, e))?;
        let m = meta_of(&meta);
        let attrs = Attrs {
            mode: m.mode,
            mtime: m.mtime,
            symlink: m.symlink,
        };
        let mut w = self.writer(to, &attrs).await?;
        let mut off = 0;
        while off < m.len {
            let n = CHUNK.min(m.len - off);
            let buf = self
                .op
                .read_with(from)
                .range(off..off + n)
                .await
                .map_err(|e| StorageError::request(from, e))?;
            off += n;
            w.write(buf.to_bytes()).await?;
        }
        w.close().await
    }

    fn local_path(&self, key: &str) -> Option<PathBuf> {
        self.local_root.as_ref().map(|r| r.join(key))
    }
}

/// POSIX attributes written with an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attrs {
    pub mode: Option<u32>,
    pub mtime: Option<SystemTime>,
    pub symlink: Option<String>,
}

impl Attrs {
    fn to_user_metadata(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        if let Some(mode) = self.mode {
            v.push((meta_keys::MODE.to_string(), format!("{mode:o}")));
        }
        if let Some(t) = self.mtime {
            let secs = t
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            v.push((meta_keys::MTIME.to_string(), secs.to_string()));
        }
        if let Some(target) = &self.symlink {
            v.push((meta_keys::SYMLINK.to_string(), target.clone()));
        }
        v
    }
}

/// An object being written.
pub struct ObjectWriter {
    key: String,
    /// Where a local object is written until `close` renames it to `key`.
    scratch: Option<String>,
    op: Operator,
    inner: opendal::Writer,
    /// For a local store, the host file, so its permission bits can follow the mode.
    local: Option<PathBuf>,
    attrs: Attrs,
}

impl ObjectWriter {
    pub async fn write(&mut self, data: Bytes) -> Result<()> {
        self.inner
            .write(data)
            .await
            .map_err(|e| StorageError::request(&self.key, e))
    }

    /// Makes the object durable; only then does it exist in the store (replacing any
    /// object that was there, at once).
    pub async fn close(mut self) -> Result<()> {
        self.inner
            .close()
            .await
            .map_err(|e| StorageError::request(&self.key, e))?;
        if let Some(scratch) = &self.scratch
            && let Err(e) = self.op.rename(scratch, &self.key).await
        {
            let _ = self.op.delete(scratch).await;
            return Err(StorageError::request(&self.key, e));
        }
        if let (Some(path), Some(mode)) = (&self.local, self.attrs.mode) {
            set_local_mode(path, mode).await?;
        }
        Ok(())
    }

    /// Gives up the object: nothing of it stays, and an object it would have replaced is
    /// untouched.
    pub async fn abort(mut self) {
        let _ = self.inner.abort().await;
        if let Some(scratch) = &self.scratch {
            let _ = self.op.delete(scratch).await;
        }
    }
}

/// A scratch key in the same directory as `key`, with a name of fixed length (so a
/// 255-byte file name cannot make it too long), for writing a local object before it
/// is renamed into place. Sessions never see it: their listings come from the VFS index.
fn scratch_key(key: &str) -> String {
    let name = format!(".forkbox-partial-{}", uuid::Uuid::now_v7().simple());
    match key.rfind('/') {
        Some(i) => format!("{}/{name}", &key[..i]),
        None => name,
    }
}

async fn set_local_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // Keep the owner able to read and write the object: the mode a session sets is
    // recorded in metadata; the host file only mirrors the execute bits.
    let host = 0o600 | (mode & 0o755);
    tokio::fs::set_permissions(path, std::fs::Permissions::from_mode(host))
        .await
        .map_err(|source| StorageError::Local {
            path: path.to_path_buf(),
            source,
        })
}

fn meta_of(m: &opendal::Metadata) -> ObjectMeta {
    let user = m.user_metadata();
    let get = |k: &str| user.as_ref().and_then(|u| u.get(k)).map(str::to_string);
    let mode = get(meta_keys::MODE).and_then(|s| u32::from_str_radix(&s, 8).ok());
    let mtime = get(meta_keys::MTIME)
        .and_then(|s| s.parse::<u64>().ok())
        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
        .or_else(|| {
            m.last_modified().map(|t| {
                let t = t.into_inner();
                UNIX_EPOCH + Duration::from_secs(t.as_second().max(0) as u64)
            })
        });
    let symlink = get(meta_keys::SYMLINK);
    let kind = if m.is_dir() {
        ObjectKind::Dir
    } else if symlink.is_some() {
        ObjectKind::Symlink
    } else {
        ObjectKind::File
    };
    ObjectMeta {
        kind,
        len: m.content_length(),
        mode,
        mtime,
        symlink,
    }
}

/// `lstat` of a host path inside a local store: never follows a symlink.
async fn local_stat(path: &Path) -> Result<Option<ObjectMeta>> {
    use std::os::unix::fs::PermissionsExt;
    let md = match tokio::fs::symlink_metadata(path).await {
        Ok(md) => md,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(source) => {
            return Err(StorageError::Local {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mtime = md.modified().ok();
    let mode = Some(md.permissions().mode() & 0o7777);
    let ft = md.file_type();
    if ft.is_symlink() {
        let target = tokio::fs::read_link(path)
            .await
            .map_err(|source| StorageError::Local {
                path: path.to_path_buf(),
                source,
            })?;
        let target = target.to_string_lossy().into_owned();
        return Ok(Some(ObjectMeta {
            kind: ObjectKind::Symlink,
            len: target.len() as u64,
            mode: Some(0o777),
            mtime,
            symlink: Some(target),
        }));
    }
    if ft.is_dir() {
        return Ok(Some(ObjectMeta {
            kind: ObjectKind::Dir,
            len: 0,
            mode,
            mtime,
            symlink: None,
        }));
    }
    if !ft.is_file() {
        // Sockets, fifos and devices in a base directory are not objects: invisible.
        return Ok(None);
    }
    Ok(Some(ObjectMeta {
        kind: ObjectKind::File,
        len: md.len(),
        mode,
        mtime,
        symlink: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn roundtrip(store: Store) {
        store
            .put(
                "a/b.txt",
                Bytes::from_static(b"hello world"),
                &Attrs::default(),
            )
            .await
            .unwrap();
        let m = store.stat("a/b.txt").await.unwrap().unwrap();
        assert_eq!(m.kind, ObjectKind::File);
        assert_eq!(m.len, 11);
        assert_eq!(
            store.stat("a").await.unwrap().unwrap().kind,
            ObjectKind::Dir
        );
        assert!(store.stat("nope").await.unwrap().is_none());
        assert_eq!(
            store.read("a/b.txt", 6, 100).await.unwrap(),
            Bytes::from_static(b"world")
        );
        store.create_dir("a/empty").await.unwrap();
        assert_eq!(
            store.list("a").await.unwrap(),
            vec![("b.txt".into(), false), ("empty".into(), true)]
        );
        assert_eq!(store.list("").await.unwrap(), vec![("a".into(), true)]);
        store.delete_tree("a").await.unwrap();
        assert!(!store.tree_exists("a").await.unwrap());
    }

    #[tokio::test]
    async fn memory_roundtrip() {
        roundtrip(Store::memory()).await;
    }

    #[tokio::test]
    async fn local_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        roundtrip(Store::local(dir.path()).unwrap()).await;
    }

    #[tokio::test]
    async fn local_symlinks_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("p")).unwrap();
        let store = Store::local(dir.path()).unwrap();
        let m = store.stat("p").await.unwrap().unwrap();
        assert_eq!(m.kind, ObjectKind::Symlink);
        assert_eq!(m.symlink.as_deref(), Some("/etc/passwd"));
    }
}

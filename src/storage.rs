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
//!
//! On a local store the frequent operations — `stat`, listing (with every child's
//! metadata, [`Store::list_entries`]), ranged reads, staged writes and publishing them —
//! bypass opendal and make their system calls in one trip to tokio's blocking pool each:
//! a trip costs more than the calls themselves, and opendal's fs service takes several
//! per operation (docs/BENCHMARKS.md). Reads and stats go further: they are first tried
//! on the calling thread, answered from the kernel's caches without waiting, and only
//! what would wait for the disk takes the trip (src/storage/nowait.rs).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use futures::TryStreamExt;
use opendal::layers::{RetryLayer, TimeoutLayer};
use opendal::{EntryMode, ErrorKind, Operator};

/// Attempts of one storage request before its failure is reported.
const RETRY_TIMES: usize = 4;
/// Upper bound on one storage request, so a stuck store fails a command instead of hanging it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Deletes (or delete batches) in flight at once while deleting a tree. Deleting is bound
/// by latency, not bandwidth: one request per object or batch on S3, one unlink that may
/// wait on the disk on a local store. In parallel a fork of thousands of objects goes
/// faster (docs/BENCHMARKS.md); the bound keeps one deletion from taking every
/// connection or blocking thread.
const DELETE_CONCURRENCY: usize = 16;

/// Files under a local tree that one blocking task deletes itself, with the tree's
/// directories, instead of sharing them out among [`DELETE_CONCURRENCY`] deleters: for so
/// few, the hops to the blocking pool would cost more than the unlinks.
const LOCAL_INLINE_DELETE: usize = 64;
/// Most keys sent in one delete request where the store deletes in batches (S3's
/// DeleteObjects takes up to 1,000).
const DELETE_BATCH_MAX: usize = 1000;
/// Keys handed to one deleter where the store deletes them one by one (a local directory,
/// memory): enough to amortise the deleter, few enough that a small tree still spreads
/// over [`DELETE_CONCURRENCY`] deleters.
const DELETE_CHUNK: usize = 32;

pub mod layer;
mod nowait;
mod staged;

pub use staged::{PART_SIZE, SINGLE_PUT_MAX, SPILL_AT, Staged};

/// User-metadata names under which a file's POSIX attributes are kept as `x-amz-meta-*`
/// headers: the names TigrisFS (and GeeseFS) use, so a TigrisFS mount of a kept fork shows
/// the same modes, times and symlinks.
pub mod meta_keys {
    /// `st_mode` with the file-type bits, in decimal (`33188` is a 0644 regular file).
    pub const MODE: &str = "mode";
    /// Modification time, in whole seconds since the epoch.
    pub const MTIME: &str = "mtime";
    /// Owner and group ids, in decimal.
    pub const UID: &str = "uid";
    pub const GID: &str = "gid";
    /// A symlink's target, percent-escaped; the object's body holds the target too.
    pub const SYMLINK: &str = "--symlink-target";
}

/// The owner and group id recorded on objects (sessions have one user).
pub const OWNER_ID: u32 = 1000;

const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

/// How to reach an S3-compatible store. Credentials come from the standard AWS chain
/// (environment variables, shared config and credentials files, profiles).
#[derive(Clone, Debug, Default)]
pub struct S3Config {
    /// Endpoint URL; `None` uses `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, else AWS.
    pub endpoint: Option<String>,
    /// Region; `None` uses `AWS_REGION` or `AWS_DEFAULT_REGION`, else `auto`.
    pub region: Option<String>,
    /// Buckets as `endpoint/bucket` rather than `bucket.endpoint`.
    pub path_style: bool,
}

impl S3Config {
    pub fn endpoint(&self) -> Option<String> {
        self.endpoint.clone().or_else(|| {
            ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        })
    }

    pub fn region(&self) -> String {
        self.region
            .clone()
            .or_else(|| {
                ["AWS_REGION", "AWS_DEFAULT_REGION"]
                    .iter()
                    .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
            })
            .unwrap_or_else(|| "auto".into())
    }
}

/// Object operations a store can do on the server side, beyond opendal's: provided by the
/// fork strategy that knows the bucket (S3 CopyObject with new metadata; Tigris's rename).
#[async_trait]
pub trait ServerSide: Send + Sync + fmt::Debug {
    /// Replaces the user metadata of object `key`, its content untouched.
    async fn set_metadata(&self, key: &str, meta: &[(String, String)]) -> Result<()>;
    /// Renames object `from` to `to` in one request; `Ok(false)` when the store cannot.
    async fn rename(&self, from: &str, to: &str) -> Result<bool>;
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
    #[error("storage request on {key:?} failed: {message}")]
    Remote {
        key: String,
        message: String,
        not_found: bool,
    },
}

impl StorageError {
    fn request(key: &str, source: opendal::Error) -> Self {
        if source.kind() != ErrorKind::NotFound {
            crate::telemetry::metrics::store_error(crate::telemetry::metrics::Plane::Data);
        }
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
            StorageError::Remote { not_found, .. } => *not_found,
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

/// One child of a directory, as [`Store::list_entries`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListEntry {
    pub name: String,
    pub is_dir: bool,
    /// What [`Store::stat`] would say of the child, when the listing already knows it all
    /// (a local store reads it in the same pass). `None`: ask `stat` (an S3 listing has no
    /// user metadata, so no mode, mtime or symlink target).
    pub meta: Option<ObjectMeta>,
}

/// One backend holding objects.
#[derive(Clone, Debug)]
pub struct Store {
    op: Operator,
    /// Set for the local-filesystem service: the host directory behind it, used to report
    /// host symlinks and permission bits without following anything.
    local_root: Option<PathBuf>,
    user_metadata: bool,
    /// Every read is a request over the network ([`Store::is_remote`]); asked per read,
    /// so kept rather than asked of the operator each time.
    remote: bool,
    /// Where staged content past [`SPILL_AT`] goes (default: the system temp directory).
    spill_dir: Option<PathBuf>,
    /// Staged content larger than this moves from memory to a spill file; `None` keeps it
    /// in memory (the memory store, whose objects are in memory anyway, unless it was
    /// given a spill directory).
    spill_at: Option<u64>,
    /// Whether reads and stats under `local_root`, and reads of spill files, can be tried
    /// from the kernel's caches on the calling thread ([`nowait`]).
    nowait: Arc<nowait::NoWait>,
    spill_nowait: Arc<nowait::NoWait>,
    server_side: Option<Arc<dyn ServerSide>>,
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

    /// A store in memory, for tests and `forkbox exec`. Files being written stay in
    /// memory whatever their size (their content ends up in memory anyway), unless
    /// [`Store::with_spill_dir`] says where to spill them.
    #[allow(
        clippy::expect_used,
        reason = "building the memory service takes no configuration and cannot fail"
    )]
    pub fn memory() -> Store {
        let op = Operator::new(opendal::services::Memory::default())
            .expect("the memory service needs no configuration");
        Store {
            spill_at: None,
            ..Store::wrap(op, None)
        }
    }

    /// A store over one bucket of an S3-compatible service.
    pub fn s3(cfg: &S3Config, bucket: &str) -> Result<Store> {
        // opendal's HTTP client (first call wins; later calls do nothing).
        opendal::install_default();
        let mut b = opendal::services::S3::default()
            .bucket(bucket)
            .region(&cfg.region());
        if let Some(endpoint) = cfg.endpoint() {
            b = b.endpoint(&endpoint);
        }
        if !cfg.path_style {
            b = b.enable_virtual_host_style();
        }
        let op = Operator::new(b).map_err(|e| StorageError::request(bucket, e))?;
        Ok(Store::wrap(op, None))
    }

    /// Stages large writes in `dir` instead of the system temp directory (on the memory
    /// store: spills them there, as the other stores do).
    pub fn with_spill_dir(mut self, dir: &Path) -> Store {
        self.spill_dir = Some(dir.to_path_buf());
        self.spill_at = Some(SPILL_AT);
        self.spill_nowait = Arc::default();
        self
    }

    /// Uses `ops` for what the store does server-side (metadata updates, renames).
    pub fn with_server_side(mut self, ops: Arc<dyn ServerSide>) -> Store {
        self.server_side = Some(ops);
        self
    }

    fn spill_dir(&self) -> PathBuf {
        self.spill_dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("forkbox-spill"))
    }

    fn wrap(op: Operator, local_root: Option<PathBuf>) -> Store {
        let user_metadata = op.info().capability().write_with_user_metadata;
        let remote = op.info().scheme() == "s3";
        let op = op
            .layer(TimeoutLayer::new().with_timeout(REQUEST_TIMEOUT))
            .layer(RetryLayer::new().with_max_times(RETRY_TIMES).with_jitter());
        Store {
            op,
            local_root,
            user_metadata,
            remote,
            spill_dir: None,
            spill_at: Some(SPILL_AT),
            nowait: Arc::default(),
            spill_nowait: Arc::default(),
            server_side: None,
        }
    }

    /// The host directory behind a local store.
    pub fn local_root(&self) -> Option<&Path> {
        self.local_root.as_deref()
    }

    /// True when every read is a request over the network (S3). The VFS reads ahead of
    /// sequential reads on such a store only: a local or memory read costs no round trip
    /// (docs/BENCHMARKS.md).
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// Metadata of the object `key` (no trailing slash), as a file, symlink or directory.
    pub async fn stat(&self, key: &str) -> Result<Option<ObjectMeta>> {
        if let Some(root) = &self.local_root {
            let path = root.join(key);
            if let nowait::Tried::Done(md) = self.nowait.lstat(&path) {
                return md.map_or(Ok(None), |md| local_meta(&path, &md));
            }
            return local_stat(&path).await;
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
    /// On a local store these are [`Store::list_entries`]'s: a host symlink is never a
    /// directory, whatever it points to (opendal's lister follows it, and a dangling one
    /// fails the whole listing).
    pub async fn list(&self, dir: &str) -> Result<Vec<(String, bool)>> {
        if let Some(root) = &self.local_root {
            let path = root.join(dir);
            let entries = blocking(&path.clone(), move || local_list(&path)).await?;
            return Ok(entries.into_iter().map(|e| (e.name, e.is_dir)).collect());
        }
        self.object_list(dir).await
    }

    /// [`Store::list`] through opendal.
    async fn object_list(&self, dir: &str) -> Result<Vec<(String, bool)>> {
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

    /// The direct children of directory `dir` (`""` for the root), sorted by name, each
    /// with its metadata where the store lists it. On a local store that is every child,
    /// read in one pass on the blocking pool (a `stat` per child would cost a trip there
    /// each); a host entry that is not an object (socket, fifo, device) or whose name is
    /// not UTF-8 is left out, as `stat` and every key would miss it anyway, and one whose
    /// metadata cannot be read comes without it. Elsewhere these are [`Store::list`]'s
    /// names, without metadata.
    pub async fn list_entries(&self, dir: &str) -> Result<Vec<ListEntry>> {
        if let Some(root) = &self.local_root {
            let path = root.join(dir);
            return blocking(&path.clone(), move || local_list(&path)).await;
        }
        Ok(self
            .object_list(dir)
            .await?
            .into_iter()
            .map(|(name, is_dir)| ListEntry {
                name,
                is_dir,
                meta: None,
            })
            .collect())
    }

    /// The direct children of directory `dir` with their kinds only, sorted by name, where
    /// the store can list kinds without reading each child's metadata: a local store reads
    /// the directory alone (`d_type`), leaving out what [`Store::list_entries`] leaves out.
    /// `None` elsewhere (an object store's listing cannot tell a symlink from a file).
    pub async fn list_kinds(&self, dir: &str) -> Result<Option<Vec<(String, ObjectKind)>>> {
        let Some(root) = &self.local_root else {
            return Ok(None);
        };
        let path = root.join(dir);
        blocking(&path.clone(), move || local_list_kinds(&path))
            .await
            .map(Some)
    }

    /// Whether [`Store::list_kinds`] answers.
    pub fn lists_kinds(&self) -> bool {
        self.local_root.is_some()
    }

    /// Reads `len` bytes at `offset` (fewer at the end of the object).
    pub async fn read(&self, key: &str, offset: u64, len: usize) -> Result<Bytes> {
        if len == 0 {
            return Ok(Bytes::new());
        }
        if let Some(root) = &self.local_root {
            // From the page cache on this thread if it can be; else open, read and close
            // in one trip to the blocking pool (opendal's reader takes several per call).
            let path = root.join(key);
            let partial = match self.nowait.read(&path, offset, len) {
                nowait::Tried::Done(done) => return Ok(Bytes::from(done)),
                nowait::Tried::Blocked(partial) => partial,
            };
            return blocking(&path.clone(), move || match partial {
                Some((file, partial)) => partial
                    .finish(&file, offset)
                    .map(Bytes::from)
                    .map_err(|source| StorageError::Local { path, source }),
                None => local_read(&path, offset, len),
            })
            .await;
        }
        match self
            .op
            .read_with(key)
            .range(offset..offset + len as u64)
            .await
        {
            Ok(buf) => Ok(buf.to_bytes()),
            // The range runs past the end: read what is there, like read(2). S3 answers a
            // range that starts past the end with 416, and one that ends past it with fewer
            // bytes, which opendal reports as `Unexpected` ("reader got too little data").
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::RangeNotSatisfied | ErrorKind::Unexpected
                ) =>
            {
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
            store: self.clone(),
            inner,
            attrs: attrs.clone(),
        })
    }

    /// Writes a whole small object at once.
    pub async fn put(&self, key: &str, data: Bytes, attrs: &Attrs) -> Result<()> {
        if let (Some(root), Some(target)) = (&self.local_root, &attrs.symlink) {
            // A local store keeps a symlink as a host symlink (never followed: see
            // `local_stat`), made under a scratch name and renamed into place.
            let scratch = scratch_key(key);
            let path = root.join(&scratch);
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent)
                    .await
                    .map_err(|source| StorageError::Local {
                        path: parent.to_path_buf(),
                        source,
                    })?;
            }
            tokio::fs::symlink(target, &path)
                .await
                .map_err(|source| StorageError::Local {
                    path: path.clone(),
                    source,
                })?;
            return tokio::fs::rename(&path, root.join(key))
                .await
                .map_err(|source| StorageError::Local { path, source });
        }
        let mut w = self.writer(key, attrs).await?;
        w.write(data).await?;
        w.close().await
    }

    /// Writes a small object at once without making it durable: on a local store one
    /// step on the blocking pool (scratch file, rename into place) and no `fsync`; on any
    /// other store the same as [`Store::put`]. For records that are worthless after a
    /// crash of the host and rewritten while they matter, such as fork leases: a lease
    /// lost with the host only lets the janitor delete forks whose server died with it.
    pub async fn put_volatile(&self, key: &str, data: Bytes) -> Result<()> {
        let Some(root) = &self.local_root else {
            return self.put(key, data, &Attrs::default()).await;
        };
        let target = root.join(key);
        let scratch = root.join(scratch_key(key));
        blocking(&target.clone(), move || {
            write_volatile(&scratch, &target, &data)
        })
        .await
    }

    /// Creates the directory marker `dir/` and the small object `key` beside it, both
    /// new, without making either durable (see [`Store::put_volatile`]), at once: on a
    /// local store one step on the blocking pool and the fewest system calls (a session's
    /// fork is these two, and its first command waits for them): the directories are made
    /// one by one (all of them only where a parent is missing) and `key` is written in
    /// place, so a reader may see it partly written, as any object being created. On any
    /// other store, the two requests side by side.
    pub async fn create_dir_and_put_new(&self, dir: &str, key: &str, data: Bytes) -> Result<()> {
        let Some(root) = &self.local_root else {
            tokio::try_join!(self.create_dir(dir), self.put_volatile(key, data))?;
            return Ok(());
        };
        let made = root.join(dir);
        let target = root.join(key);
        blocking(&target.clone(), move || {
            let local = |path: &Path| {
                let path = path.to_path_buf();
                move |source| StorageError::Local { path, source }
            };
            let parent = target.parent().map(Path::to_path_buf);
            for d in parent.iter().chain(std::iter::once(&made)) {
                match std::fs::create_dir(d) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        std::fs::create_dir_all(d).map_err(local(d))?
                    }
                    Err(e) => return Err(local(d)(e)),
                }
            }
            std::fs::write(&target, &data).map_err(local(&target))
        })
        .await
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
        if let Some(root) = &self.local_root
            && !key.ends_with('/')
        {
            // A host symlink is removed itself: the backend looks through it, and takes
            // one whose target is gone for a missing file, which would leave it behind.
            let path = root.join(key);
            if tokio::fs::symlink_metadata(&path)
                .await
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                return match tokio::fs::remove_file(&path).await {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    Err(source) => Err(StorageError::Local { path, source }),
                };
            }
        }
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

    /// Deletes everything under `prefix/`, the marker included: the objects in parallel,
    /// in chunks (one request each where the store deletes many keys per request), then
    /// what is left (a local store's directories, directory markers) with one recursive
    /// delete.
    pub async fn delete_tree(&self, prefix: &str) -> Result<()> {
        let dir = format!("{}/", prefix.trim_end_matches('/'));
        let settled = |r: opendal::Result<()>| match r {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StorageError::request(prefix, e)),
        };
        if let Some(root) = &self.local_root {
            if local_delete_files(&root.join(prefix.trim_end_matches('/'))).await? {
                return Ok(());
            }
        } else {
            let batch = self
                .op
                .info()
                .capability()
                .delete_max_size
                .unwrap_or(DELETE_CHUNK)
                .clamp(1, DELETE_BATCH_MAX);
            let objects = async {
                self.op
                    .lister_with(&dir)
                    .recursive(true)
                    .await?
                    .try_filter(|e| std::future::ready(e.metadata().mode() != EntryMode::DIR))
                    .map_ok(|e| e.path().to_string())
                    .try_chunks(batch)
                    .map_err(|e| e.1)
                    .try_for_each_concurrent(DELETE_CONCURRENCY, |keys| self.op.delete_iter(keys))
                    .await
            };
            settled(objects.await)?;
        }
        settled(self.op.delete_with(&dir).recursive(true).await)
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
        if let Some(ops) = &self.server_side
            && ops.rename(from, to).await?
        {
            return Ok(());
        }
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
        self.copy_by_streaming_with(from, to, None).await
    }

    /// Copies an object through this process, with `attrs` or else the source's.
    async fn copy_by_streaming_with(
        &self,
        from: &str,
        to: &str,
        attrs: Option<&Attrs>,
    ) -> Result<()> {
        const CHUNK: u64 = 1024 * 1024;
        let meta = self
            .op
            .stat(from)
            .await
            .map_err(|e| StorageError::request(from, e))?;
        let m = meta_of(&meta);
        let attrs = match attrs {
            Some(a) => a.clone(),
            None => Attrs {
                mode: m.mode,
                mtime: m.mtime,
                symlink: m.symlink,
            },
        };
        // Staged, so reading `from` while replacing it (a metadata update) is safe.
        let mut w = self.stage(to, &attrs).await?;
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
            let at = w.len();
            if let Err(e) = w.write_at(at, &buf.to_bytes()).await {
                w.abort().await;
                return Err(e);
            }
        }
        w.close().await
    }

    /// Records new attributes (mode, mtime) on the existing object `key`, its content
    /// untouched: host permission bits and times on a local store, a server-side copy with
    /// new metadata where the store offers one, else a rewrite through this process.
    pub async fn set_attrs(&self, key: &str, attrs: &Attrs) -> Result<()> {
        if let Some(root) = &self.local_root {
            return apply_local_attrs(&root.join(key), attrs).await;
        }
        if let Some(ops) = &self.server_side {
            return ops.set_metadata(key, &attrs.to_user_metadata()).await;
        }
        if !self.user_metadata {
            return Ok(());
        }
        self.copy_by_streaming_with(key, key, Some(attrs)).await
    }

    /// Moves a local scratch object into place as `key` and gives it its attributes, in
    /// one trip to the blocking pool; on failure the scratch object is removed.
    async fn publish_local(&self, scratch: &str, key: &str, attrs: &Attrs) -> Result<()> {
        let Some(root) = &self.local_root else {
            return self
                .op
                .rename(scratch, key)
                .await
                .map_err(|e| StorageError::request(key, e));
        };
        let (from, to) = (root.join(scratch), root.join(key));
        let attrs = attrs.clone();
        blocking(&from.clone(), move || publish_local_now(&from, &to, &attrs)).await
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
    /// The attributes as user metadata, under TigrisFS's names ([`meta_keys`]).
    pub fn to_user_metadata(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        if let Some(mode) = self.mode {
            let kind = if self.symlink.is_some() {
                S_IFLNK
            } else {
                S_IFREG
            };
            v.push((
                meta_keys::MODE.to_string(),
                (kind | (mode & 0o7777)).to_string(),
            ));
        }
        if let Some(t) = self.mtime {
            let secs = t
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            v.push((meta_keys::MTIME.to_string(), secs.to_string()));
        }
        v.push((meta_keys::UID.to_string(), OWNER_ID.to_string()));
        v.push((meta_keys::GID.to_string(), OWNER_ID.to_string()));
        if let Some(target) = &self.symlink {
            let escaped =
                percent_encoding::utf8_percent_encode(target, METADATA_ESCAPE).to_string();
            v.push((meta_keys::SYMLINK.to_string(), escaped));
        }
        v
    }
}

/// What a metadata value may not hold as is: controls, non-ASCII (HTTP headers carry
/// ASCII) and `%` itself.
const METADATA_ESCAPE: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS.add(b'%');

/// Parses an unsigned number as Go's `strconv.ParseUint(s, 0, _)` does (TigrisFS reads
/// metadata that way): `0x` hex, `0o`/`0` octal, `0b` binary, else decimal.
fn parse_go_uint(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
        (h, 16)
    } else if let Some(o) = s.strip_prefix("0o").or(s.strip_prefix("0O")) {
        (o, 8)
    } else if let Some(b) = s.strip_prefix("0b").or(s.strip_prefix("0B")) {
        (b, 2)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    u64::from_str_radix(&digits.replace('_', ""), radix).ok()
}

/// An object being written.
pub struct ObjectWriter {
    key: String,
    /// Where a local object is written until `close` renames it to `key`.
    scratch: Option<String>,
    store: Store,
    inner: opendal::Writer,
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
        match &self.scratch {
            Some(scratch) => {
                self.store
                    .publish_local(scratch, &self.key, &self.attrs)
                    .await
            }
            None => Ok(()),
        }
    }

    /// Gives up the object: nothing of it stays, and an object it would have replaced is
    /// untouched.
    pub async fn abort(mut self) {
        let _ = self.inner.abort().await;
        if let Some(scratch) = &self.scratch {
            let _ = self.store.op.delete(scratch).await;
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

/// Writes `data` to the host file `target` through `scratch` (then renamed into place),
/// making the directories above them, without `fsync` (see [`Store::put_volatile`]).
fn write_volatile(scratch: &Path, target: &Path, data: &[u8]) -> Result<()> {
    let local = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StorageError::Local { path, source }
    };
    if let Some(parent) = scratch.parent() {
        std::fs::create_dir_all(parent).map_err(local(parent))?;
    }
    std::fs::write(scratch, data).map_err(local(scratch))?;
    std::fs::rename(scratch, target).map_err(|source| {
        let _ = std::fs::remove_file(scratch);
        StorageError::Local {
            path: target.to_path_buf(),
            source,
        }
    })
}

/// Gives a host file of a local store the permission bits and mtime in `attrs`.
async fn apply_local_attrs(path: &Path, attrs: &Attrs) -> Result<()> {
    let (path, attrs) = (path.to_path_buf(), attrs.clone());
    blocking(&path.clone(), move || apply_local_attrs_now(&path, &attrs)).await
}

/// [`apply_local_attrs`], on the calling thread.
fn apply_local_attrs_now(path: &Path, attrs: &Attrs) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let local = |source| StorageError::Local {
        path: path.to_path_buf(),
        source,
    };
    // Never through a host symlink: its target may be outside the store.
    if std::fs::symlink_metadata(path)
        .map_err(local)?
        .file_type()
        .is_symlink()
    {
        return Ok(());
    }
    if let Some(mode) = attrs.mode {
        // Keep the owner (the server) able to read and write the object; the host file
        // carries the rest of the mode.
        let host = 0o600 | (mode & 0o7777);
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(host)).map_err(local)?;
    }
    if let Some(mtime) = attrs.mtime {
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(mtime))
            .map_err(local)?;
    }
    Ok(())
}

/// Gives the host file `from` of a local store `attrs` and renames it to `to`, on the
/// calling thread; on failure `from` is removed.
fn publish_local_now(from: &Path, to: &Path, attrs: &Attrs) -> Result<()> {
    let done = apply_local_attrs_now(from, attrs).and_then(|()| {
        std::fs::rename(from, to).map_err(|source| StorageError::Local {
            path: to.to_path_buf(),
            source,
        })
    });
    if done.is_err() {
        let _ = std::fs::remove_file(from);
    }
    done
}

/// Runs `f`, a whole local-filesystem operation, in one trip to the blocking pool; `path`
/// names it in the error should the task itself fail.
async fn blocking<T, F>(path: &Path, f: F) -> Result<T>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StorageError::Local {
            path: path.to_path_buf(),
            source: std::io::Error::other(e),
        })?
}

/// Reads up to `len` bytes at `offset` of the host file `path`, like `read(2)`: fewer at
/// the end of the file, none past it. Short reads are retried until `len` or the end.
fn local_read(path: &Path, offset: u64, len: usize) -> Result<Bytes> {
    let local = |source| StorageError::Local {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(local)?;
    // The size bounds the buffer: a large `len` on a small file allocates what is there.
    let size = file.metadata().map_err(local)?.len();
    let want = usize::try_from(size.saturating_sub(offset)).map_or(len, |n| n.min(len));
    let read = nowait::PartialRead {
        buf: Vec::new(),
        want,
    };
    read.finish(&file, offset).map(Bytes::from).map_err(local)
}

fn meta_of(m: &opendal::Metadata) -> ObjectMeta {
    let user = m.user_metadata();
    let get = |k: &str| user.as_ref().and_then(|u| u.get(k)).map(str::to_string);
    let raw_mode = get(meta_keys::MODE).and_then(|s| parse_go_uint(&s));
    let mode = raw_mode.map(|m| (m & 0o7777) as u32);
    let mtime = get(meta_keys::MTIME)
        .and_then(|s| parse_go_uint(&s))
        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
        .or_else(|| {
            m.last_modified().map(|t| {
                let t = t.into_inner();
                UNIX_EPOCH + Duration::from_secs(t.as_second().max(0) as u64)
            })
        });
    let symlink = get(meta_keys::SYMLINK).map(|s| {
        percent_encoding::percent_decode_str(&s)
            .decode_utf8_lossy()
            .into_owned()
    });
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

/// Unlinks every file and symlink under the host directory `dir` of a local store (the
/// directories stay, for the recursive delete after it). An unlink may wait on the disk
/// (with online discard, for milliseconds), so they run in parallel; one hop to the
/// blocking pool per file would cost more than the unlink itself on a fast disk, so the
/// walk is one blocking task and the files are shared out among [`DELETE_CONCURRENCY`].
/// Nothing is followed: a symlink is removed, never its target.
///
/// A tree of at most [`LOCAL_INLINE_DELETE`] files (most sessions' forks: a lease and a
/// few files) is removed whole, directories too, by the walking task itself: `true` then
/// says nothing is left to delete.
async fn local_delete_files(dir: &Path) -> Result<bool> {
    let local = |path: &Path, source| StorageError::Local {
        path: path.to_path_buf(),
        source,
    };
    let joined = |e: tokio::task::JoinError| local(dir, std::io::Error::other(e));
    let walk_root = dir.to_path_buf();
    let files = tokio::task::spawn_blocking(move || {
        let mut files = Vec::new();
        let mut dirs = vec![walk_root.clone()];
        while let Some(d) = dirs.pop() {
            let entries = match std::fs::read_dir(&d) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err((d, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| (d.clone(), e))?;
                let path = entry.path();
                match entry.file_type() {
                    Ok(t) if t.is_dir() => dirs.push(path),
                    Ok(_) => files.push(path),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err((path, e)),
                }
            }
        }
        if files.len() > LOCAL_INLINE_DELETE {
            return Ok(Some(files));
        }
        // `remove_dir_all` removes symlinks themselves, never what they point to.
        match std::fs::remove_dir_all(&walk_root) {
            Ok(()) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err((walk_root, e)),
        }
    })
    .await
    .map_err(joined)?
    .map_err(|(path, e)| local(&path, e))?;
    let Some(files) = files else {
        return Ok(true);
    };
    let share = files.len().div_ceil(DELETE_CONCURRENCY).max(1);
    let tasks: Vec<_> = files
        .chunks(share)
        .map(<[PathBuf]>::to_vec)
        .map(|paths| {
            tokio::task::spawn_blocking(move || {
                for path in paths {
                    match std::fs::remove_file(&path) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err((path, e)),
                    }
                }
                Ok(())
            })
        })
        .collect();
    for task in tasks {
        task.await
            .map_err(joined)?
            .map_err(|(path, e)| local(&path, e))?;
    }
    Ok(false)
}

/// `lstat` of a host path inside a local store: never follows a symlink. One trip to the
/// blocking pool, a symlink's target read in the same trip.
async fn local_stat(path: &Path) -> Result<Option<ObjectMeta>> {
    let path = path.to_path_buf();
    blocking(&path.clone(), move || {
        let md = match std::fs::symlink_metadata(&path) {
            Ok(md) => md,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(None);
            }
            Err(source) => return Err(StorageError::Local { path, source }),
        };
        local_meta(&path, &md)
    })
    .await
}

/// The object a host entry is, from its `lstat` metadata `md` (a symlink's target is read
/// here); `None` for what is not an object (sockets, fifos, devices).
fn local_meta(path: &Path, md: &std::fs::Metadata) -> Result<Option<ObjectMeta>> {
    use std::os::unix::fs::PermissionsExt;
    let mtime = md.modified().ok();
    let mode = Some(md.permissions().mode() & 0o7777);
    let ft = md.file_type();
    if ft.is_symlink() {
        let target = std::fs::read_link(path).map_err(|source| StorageError::Local {
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

/// The entries of the host directory `dir` whose names are UTF-8 (no key names any
/// other), with `f` making each one what the caller lists (`None` leaves it out), on the
/// calling thread. A missing directory, or a file where the directory should be, lists
/// empty (as opendal's lister).
fn local_read_dir<T>(
    dir: &Path,
    mut f: impl FnMut(String, std::fs::DirEntry) -> Result<Option<T>>,
) -> Result<Vec<T>> {
    let local = |path: &Path, source| StorageError::Local {
        path: path.to_path_buf(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Vec::new());
        }
        Err(e) => return Err(local(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            // The directory was removed while being listed.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(local(dir, e)),
        };
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if let Some(item) = f(name, entry)? {
            out.push(item);
        }
    }
    Ok(out)
}

/// [`Store::list_kinds`] of the host directory `dir`: the kinds the directory itself
/// records (`d_type`), so no entry is `stat`ed unless the filesystem records none.
/// Sockets, fifos and devices are not objects and are left out.
fn local_list_kinds(dir: &Path) -> Result<Vec<(String, ObjectKind)>> {
    let mut out = local_read_dir(dir, |name, entry| {
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => ObjectKind::Symlink,
            Ok(t) if t.is_dir() => ObjectKind::Dir,
            Ok(t) if t.is_file() => ObjectKind::File,
            // Not an object, or gone since the directory was read.
            _ => return Ok(None),
        };
        Ok(Some((name, kind)))
    })?;
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// [`Store::list_entries`] of the host directory `dir`: `read_dir` and an `lstat` per entry
/// (`DirEntry::metadata` does not follow symlinks), on the calling thread.
fn local_list(dir: &Path) -> Result<Vec<ListEntry>> {
    let local = |path: &Path, source| StorageError::Local {
        path: path.to_path_buf(),
        source,
    };
    let mut out = local_read_dir(dir, |name, entry| {
        let path = entry.path();
        let meta = entry
            .metadata()
            .map_err(|e| local(&path, e))
            .and_then(|md| local_meta(&path, &md));
        Ok(match meta {
            Ok(Some(meta)) => Some(ListEntry {
                name,
                is_dir: meta.kind == ObjectKind::Dir,
                meta: Some(meta),
            }),
            // Not an object, or gone since the directory was read.
            Ok(None) => None,
            Err(e) if e.is_not_found() => None,
            // Listed without metadata: `stat` will report the error if asked.
            Err(_) => Some(ListEntry {
                name,
                is_dir: entry.file_type().is_ok_and(|t| t.is_dir()),
                meta: None,
            }),
        })
    })?;
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
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
    async fn local_tree_delete_removes_links_not_their_targets() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::local(dir.path()).unwrap();
        for i in 0..100 {
            let key = format!("t/d{}/f{i}", i % 7);
            store
                .put(&key, Bytes::from("x"), &Attrs::default())
                .await
                .unwrap();
        }
        store.create_dir("t/empty").await.unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("t/d0/out")).unwrap();
        store.delete_tree("t").await.unwrap();
        assert!(!store.tree_exists("t").await.unwrap());
        assert!(outside.path().join("keep").exists());
        store.delete_tree("t").await.unwrap();
    }

    /// Reads at, across and past the end, the same on every store.
    async fn reads_like_read_2(store: Store) {
        let big: Vec<u8> = (0..3 << 20).map(|i| (i % 251) as u8).collect();
        for (key, data) in [
            ("empty", Vec::new()),
            ("d/short", b"hello".to_vec()),
            ("big", big),
        ] {
            store
                .put(key, Bytes::from(data.clone()), &Attrs::default())
                .await
                .unwrap();
            let n = data.len() as u64;
            for (offset, len) in [(0, 5), (0, 100), (3, 100), (n, 10), (n + 7, 10), (1, 0)] {
                let got = store.read(key, offset, len).await.unwrap();
                let from = (offset as usize).min(data.len());
                let to = (from + len).min(data.len());
                assert_eq!(&got[..], &data[from..to], "{key} at {offset}, {len}");
            }
        }
        let got = store.read("big", 1 << 20, 4 << 20).await.unwrap();
        assert_eq!(got.len(), 2 << 20);
        assert_eq!(got[0], ((1 << 20) % 251) as u8);
        let missing = store.read("d/nope", 0, 10).await.unwrap_err();
        assert!(missing.is_not_found(), "{missing:?}");
        let missing = store.read("nope/x", 0, 10).await.unwrap_err();
        assert!(missing.is_not_found(), "{missing:?}");
    }

    #[tokio::test]
    async fn memory_reads_like_read_2() {
        reads_like_read_2(Store::memory()).await;
    }

    #[tokio::test]
    async fn local_reads_like_read_2() {
        let dir = tempfile::tempdir().unwrap();
        reads_like_read_2(Store::local(dir.path()).unwrap()).await;
    }

    #[tokio::test]
    async fn local_listing_carries_what_stat_says() {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::local(dir.path()).unwrap();
        store
            .put("d/file", Bytes::from("12345"), &Attrs::default())
            .await
            .unwrap();
        let host = dir.path().join("d");
        std::fs::set_permissions(host.join("file"), std::fs::Permissions::from_mode(0o640))
            .unwrap();
        std::fs::create_dir(host.join("sub")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", host.join("abs")).unwrap();
        std::os::unix::fs::symlink("sub", host.join("to-dir")).unwrap();
        std::os::unix::fs::symlink("gone", host.join("dangling")).unwrap();
        // Not objects: a socket, and a name no key can spell.
        let _socket = std::os::unix::net::UnixListener::bind(host.join("sock")).unwrap();
        std::fs::write(host.join(std::ffi::OsStr::from_bytes(b"bad\xff")), "x").unwrap();

        let listed = store.list_entries("d").await.unwrap();
        let names: Vec<&str> = listed.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["abs", "dangling", "file", "sub", "to-dir"]);
        for e in &listed {
            let meta = e.meta.clone().expect("a local listing carries metadata");
            let key = format!("d/{}", e.name);
            assert_eq!(
                Some(&meta),
                store.stat(&key).await.unwrap().as_ref(),
                "{key}"
            );
            assert_eq!(e.is_dir, meta.kind == ObjectKind::Dir, "{key}");
        }
        let by_name = |n: &str| listed.iter().find(|e| e.name == n).unwrap();
        let file = by_name("file").meta.clone().unwrap();
        assert_eq!(
            (file.kind, file.len, file.mode),
            (ObjectKind::File, 5, Some(0o640))
        );
        assert!(by_name("sub").is_dir);
        let link = by_name("to-dir");
        assert!(!link.is_dir, "a symlink to a directory is not followed");
        assert_eq!(link.meta.as_ref().unwrap().symlink.as_deref(), Some("sub"));
        assert_eq!(
            by_name("abs").meta.as_ref().unwrap().symlink.as_deref(),
            Some("/etc/passwd")
        );
        // The plain listing says the same (opendal's would follow the symlinks, and a
        // dangling one would empty it).
        let plain: Vec<(String, bool)> =
            listed.iter().map(|e| (e.name.clone(), e.is_dir)).collect();
        assert_eq!(store.list("d").await.unwrap(), plain);
        // A missing directory, or a file where one should be, lists empty.
        assert!(store.list_entries("nope").await.unwrap().is_empty());
        assert!(store.list_entries("d/file").await.unwrap().is_empty());
        assert_eq!(store.list_entries("").await.unwrap().len(), 1);
    }

    /// A layer's walk (snapshots, loading a fork) lists level by level: a host symlink to a
    /// directory must stay a symlink, never a directory to enter (opendal's lister followed
    /// it, which would have copied the host directory's files into a snapshot).
    #[tokio::test]
    async fn local_walk_does_not_enter_symlinked_directories() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "host file").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::local(dir.path()).unwrap();
        store
            .put("l/a", Bytes::from("x"), &Attrs::default())
            .await
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("l/out")).unwrap();
        std::os::unix::fs::symlink("nowhere", dir.path().join("l/dangling")).unwrap();
        let found = layer::walk(&store, "l", 100).await.unwrap();
        let got: Vec<(&str, ObjectKind)> = found
            .iter()
            .map(|e| (e.rel.as_str(), e.meta.kind))
            .collect();
        assert_eq!(
            got,
            [
                ("a", ObjectKind::File),
                ("dangling", ObjectKind::Symlink),
                ("out", ObjectKind::Symlink)
            ]
        );
    }

    #[tokio::test]
    async fn object_store_listing_leaves_metadata_to_stat() {
        let store = Store::memory();
        for key in ["x", "x/y", "z"] {
            store
                .put(key, Bytes::from("1"), &Attrs::default())
                .await
                .unwrap();
        }
        store.create_dir("e").await.unwrap();
        let listed = store.list_entries("").await.unwrap();
        let got: Vec<(&str, bool, bool)> = listed
            .iter()
            .map(|e| (e.name.as_str(), e.is_dir, e.meta.is_some()))
            .collect();
        // Where a file and a directory share a name, the directory wins.
        assert_eq!(
            got,
            [("e", true, false), ("x", true, false), ("z", false, false)]
        );
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

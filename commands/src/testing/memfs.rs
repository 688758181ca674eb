//! [`MemFs`]: a complete [`FileSystem`] in memory, for tests.
//!
//! Paths name inodes: a map from resolved absolute path to inode number, and the inodes
//! (content, mode, times) by number, so an open handle holds its inode and keeps working
//! after its path is renamed or unlinked. Paths are resolved by the port's one resolver
//! ([`crate::fs::resolve`]) over that map, exactly as the session filesystem resolves
//! them. Its clock is fake and advances one second per change, so tests about mtimes are
//! deterministic.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;

use crate::fs::resolve::{Entry, Follow, Resolved, resolve_with};
use crate::fs::{
    DirEntry, FileHandle, FileKind, FileSystem, FsError, FsResult, Metadata, OpenAction, OpenFile,
    OpenOptions, Quota, Usage, VfsPath, WriteHandle, WriteMode,
};

/// The fake clock's start (2023-11-14T22:13:20Z).
const CLOCK_START: u64 = 1_700_000_000;
/// The root directory's inode number.
const ROOT_INO: u64 = 1;

#[derive(Clone, Debug)]
enum Body {
    File(Vec<u8>),
    Dir,
    Symlink(String),
}

#[derive(Clone, Debug)]
struct Inode {
    body: Body,
    mode: u32,
    mtime: SystemTime,
    ctime: SystemTime,
    /// False once no path names it (unlinked while open).
    linked: bool,
    /// Handles open on it; an unlinked inode goes when the last one closes.
    open: usize,
}

impl Inode {
    fn kind(&self) -> FileKind {
        match self.body {
            Body::File(_) => FileKind::File,
            Body::Dir => FileKind::Dir,
            Body::Symlink(_) => FileKind::Symlink,
        }
    }

    fn len(&self) -> u64 {
        match &self.body {
            Body::File(d) => d.len() as u64,
            Body::Dir => 4096,
            Body::Symlink(t) => t.len() as u64,
        }
    }

    /// Bytes it costs against the quota.
    fn cost(&self) -> u64 {
        match &self.body {
            Body::File(d) => d.len() as u64,
            Body::Dir => 0,
            Body::Symlink(t) => t.len() as u64,
        }
    }

    fn meta(&self, ino: u64) -> Metadata {
        let mode = match self.body {
            Body::Symlink(_) => 0o777,
            _ => self.mode,
        };
        let mut m = Metadata::new(self.kind(), self.len(), mode, self.mtime).with_ino(ino);
        m.ctime = self.ctime;
        if !self.linked {
            m.nlink = 0;
        }
        m
    }
}

/// What the resolver sees of an inode.
#[derive(Clone, Debug)]
struct Found {
    ino: u64,
    kind: FileKind,
    target: Option<String>,
}

impl Entry for Found {
    fn kind(&self) -> FileKind {
        self.kind
    }
    fn symlink_target(&self) -> Option<&str> {
        self.target.as_deref()
    }
}

#[derive(Debug)]
struct State {
    /// Every linked inode by its resolved absolute path (no symlink in any parent
    /// component); `/` is always the root directory.
    paths: BTreeMap<String, u64>,
    inodes: HashMap<u64, Inode>,
    next_ino: u64,
    /// Seconds since the epoch of the fake clock.
    clock: u64,
    /// Paths whose next `close` fails with [`FsError::NoSpace`] (failure injection).
    fail_close: HashSet<String>,
    /// Paths whose every read fails with [`FsError::Io`] (failure injection).
    fail_read: HashSet<String>,
    /// Limits [`FileSystem::usage`] reports (bytes, objects); reported, not enforced.
    limits: (Option<u64>, Option<u64>),
    /// What open handles may store: writes and creations through [`FileSystem::open`]
    /// past it fail with "No space left on device", as on the session filesystem.
    quota: Quota,
}

fn abs(rel: &str) -> String {
    format!("/{rel}")
}

impl State {
    fn tick(&mut self) -> SystemTime {
        self.clock += 1;
        UNIX_EPOCH + Duration::from_secs(self.clock)
    }

    fn node(&self, path: &str) -> Option<&Inode> {
        self.paths.get(path).and_then(|i| self.inodes.get(i))
    }

    fn node_mut(&mut self, path: &str) -> Option<&mut Inode> {
        let ino = *self.paths.get(path)?;
        self.inodes.get_mut(&ino)
    }

    fn found(&self, path: &str) -> Option<Found> {
        let ino = *self.paths.get(path)?;
        let inode = self.inodes.get(&ino)?;
        Some(Found {
            ino,
            kind: inode.kind(),
            target: match &inode.body {
                Body::Symlink(t) => Some(t.clone()),
                _ => None,
            },
        })
    }

    /// Links a new inode at `path` (replacing nothing: the caller checked).
    fn create(&mut self, path: String, body: Body, mode: u32) -> u64 {
        let now = self.tick();
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(
            ino,
            Inode {
                body,
                mode,
                mtime: now,
                ctime: now,
                linked: true,
                open: 0,
            },
        );
        self.paths.insert(path, ino);
        ino
    }

    /// Removes the name `path`; its inode goes too unless a handle holds it open.
    fn unlink_path(&mut self, path: &str) {
        if let Some(ino) = self.paths.remove(path) {
            self.drop_link(ino);
        }
    }

    fn drop_link(&mut self, ino: u64) {
        if let Some(inode) = self.inodes.get_mut(&ino) {
            inode.linked = false;
            if inode.open == 0 {
                self.inodes.remove(&ino);
            }
        }
    }

    fn children(&self, dir: &str) -> Vec<(String, u64)> {
        let prefix = if dir == "/" {
            "/".to_string()
        } else {
            format!("{dir}/")
        };
        self.paths
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter(|(k, _)| k.len() > prefix.len() && !k[prefix.len()..].contains('/'))
            .map(|(k, v)| (k[prefix.len()..].to_string(), *v))
            .collect()
    }

    /// Resolves `path` with the port's resolver over the path map; the result's `rel` is
    /// made absolute.
    fn resolve(&self, path: &str, follow: bool) -> FsResult<Resolved<Found>> {
        let p = VfsPath::new(path)?;
        self.resolve_path(&p, if follow { Follow::Yes } else { Follow::No })
    }

    fn resolve_path(&self, p: &VfsPath, follow: Follow) -> FsResult<Resolved<Found>> {
        let root = self.found("/").ok_or(FsError::Io)?;
        let mut r = resolve_with(p, follow, root, |rel| Ok(self.found(&abs(rel))))?;
        r.rel = abs(&r.rel);
        Ok(r)
    }

    fn existing(&self, path: &str, follow: bool) -> FsResult<(String, Found)> {
        self.resolve(path, follow)?.existing()
    }

    fn bytes_used(&self) -> u64 {
        self.paths
            .values()
            .filter_map(|i| self.inodes.get(i))
            .map(Inode::cost)
            .sum()
    }

    /// Fails with `NoSpace` when `more` bytes would take the stored bytes past the quota.
    fn room_for(&self, more: u64) -> FsResult<()> {
        match self.quota.bytes {
            Some(limit) if more > 0 && self.bytes_used().saturating_add(more) > limit => {
                Err(FsError::NoSpace)
            }
            _ => Ok(()),
        }
    }

    /// Fails with `NoSpace` when one more object would pass the quota.
    fn room_for_object(&self) -> FsResult<()> {
        match self.quota.objects {
            Some(limit) if self.paths.len() as u64 > limit => Err(FsError::NoSpace),
            _ => Ok(()),
        }
    }
}

/// A complete in-memory [`FileSystem`] for tests.
#[derive(Debug)]
pub struct MemFs {
    /// Shared with open writers and handles.
    state: Arc<Mutex<State>>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl MemFs {
    /// An empty filesystem: just `/`.
    pub fn new() -> Arc<MemFs> {
        MemFs::with_quota(Quota::UNLIMITED)
    }

    /// An empty filesystem whose open handles may store at most `quota` (the path calls
    /// are not limited; [`crate::testing::QuotaFs`] limits those).
    pub fn with_quota(quota: Quota) -> Arc<MemFs> {
        let mtime = UNIX_EPOCH + Duration::from_secs(CLOCK_START);
        let root = Inode {
            body: Body::Dir,
            mode: 0o755,
            mtime,
            ctime: mtime,
            linked: true,
            open: 0,
        };
        Arc::new(MemFs {
            state: Arc::new(Mutex::new(State {
                paths: BTreeMap::from([("/".to_string(), ROOT_INO)]),
                inodes: HashMap::from([(ROOT_INO, root)]),
                next_ino: ROOT_INO + 1,
                clock: CLOCK_START,
                fail_close: HashSet::new(),
                fail_read: HashSet::new(),
                limits: (None, None),
                quota,
            })),
        })
    }

    /// A filesystem holding `files` (path, content); parent directories are created.
    /// A path ending in `/` creates a directory.
    pub fn with_files(files: &[(&str, &str)]) -> Arc<MemFs> {
        let fs = MemFs::new();
        for (path, content) in files {
            fs.put(path, content.as_bytes());
        }
        fs
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Creates or replaces a file (or a directory for a path ending in `/`), creating
    /// parent directories. Relative paths are taken from `/`.
    pub fn put(&self, path: &str, content: &[u8]) {
        if path.ends_with('/') {
            self.put_dir(path);
            return;
        }
        let path = crate::fs::normalize(&format!("/{path}"));
        let parent = path.rfind('/').map(|i| &path[..i]).unwrap_or("");
        self.put_dir(parent);
        let mut st = self.lock();
        match st.node_mut(&path) {
            Some(Inode {
                body: Body::File(data),
                ..
            }) => {
                *data = content.to_vec();
                let now = st.tick();
                if let Some(n) = st.node_mut(&path) {
                    n.mtime = now;
                    n.ctime = now;
                }
            }
            _ => {
                st.unlink_path(&path);
                st.create(path, Body::File(content.to_vec()), 0o644);
            }
        }
    }

    /// Creates a directory and its parents.
    pub fn put_dir(&self, path: &str) {
        let path = crate::fs::normalize(&format!("/{path}"));
        let mut st = self.lock();
        let mut cur = String::new();
        for comp in path.split('/').filter(|c| !c.is_empty()) {
            cur.push('/');
            cur.push_str(comp);
            if !st.paths.contains_key(&cur) {
                st.create(cur.clone(), Body::Dir, 0o755);
            }
        }
    }

    /// Creates a symlink at `link` (absolute, parent must exist) pointing at `target`.
    pub fn put_symlink(&self, target: &str, link: &str) {
        let mut st = self.lock();
        st.unlink_path(link);
        st.create(link.to_string(), Body::Symlink(target.to_string()), 0o777);
    }

    /// Content of the file at `path` (symlinks followed), or `None` if it is not a file.
    pub fn contents(&self, path: &str) -> Option<Vec<u8>> {
        let st = self.lock();
        let (p, _) = st.existing(path, true).ok()?;
        match st.node(&p) {
            Some(Inode {
                body: Body::File(data),
                ..
            }) => Some(data.clone()),
            _ => None,
        }
    }

    /// Content of the file at `path` as text (lossy), for assertions.
    pub fn text(&self, path: &str) -> Option<String> {
        self.contents(path)
            .map(|d| String::from_utf8_lossy(&d).into_owned())
    }

    /// True when something (file, directory or symlink itself) exists at `path`.
    pub fn exists(&self, path: &str) -> bool {
        let st = self.lock();
        st.existing(path, false).is_ok()
    }

    /// Makes the next `close` of a file written at `path` (`*`: at any path) fail with
    /// `NoSpace`.
    pub fn fail_close_on(&self, path: &str) {
        self.lock().fail_close.insert(path.to_string());
    }

    /// Makes every read of the file at `path` fail with `Io`.
    pub fn fail_read_on(&self, path: &str) {
        self.lock().fail_read.insert(path.to_string());
    }

    /// Sets the limits [`FileSystem::usage`] reports. MemFs does not enforce them; the
    /// session filesystem's own tests cover enforcement.
    pub fn set_usage_limits(&self, bytes: Option<u64>, objects: Option<u64>) {
        self.lock().limits = (bytes, objects);
    }

    /// Sets a path's mtime to `secs` after the epoch.
    pub fn set_mtime_secs(&self, path: &str, secs: u64) {
        let mut st = self.lock();
        if let Ok((p, _)) = st.existing(path, true)
            && let Some(node) = st.node_mut(&p)
        {
            node.mtime = UNIX_EPOCH + Duration::from_secs(secs);
        }
    }

    /// Opens (creating or truncating) a file for writing; gives its inode and path.
    fn open_for_write(&self, path: &str, mode: WriteMode) -> FsResult<(u64, String)> {
        let mut st = self.lock();
        let r = st.resolve(path, true)?;
        let now = st.tick();
        match r.node {
            Some(Found {
                kind: FileKind::Dir,
                ..
            }) => Err(FsError::IsADirectory),
            Some(Found {
                kind: FileKind::File,
                ino,
                ..
            }) => match mode {
                WriteMode::CreateNew => Err(FsError::AlreadyExists),
                WriteMode::Truncate => {
                    if let Some(Inode {
                        body: Body::File(data),
                        mtime,
                        ctime,
                        ..
                    }) = st.inodes.get_mut(&ino)
                    {
                        data.clear();
                        *mtime = now;
                        *ctime = now;
                    }
                    Ok((ino, r.rel))
                }
                WriteMode::Append | WriteMode::Update => Ok((ino, r.rel)),
            },
            Some(_) => Err(FsError::NotFound),
            None => {
                if r.rel == "/" {
                    return Err(FsError::IsADirectory);
                }
                let ino = st.create(r.rel.clone(), Body::File(Vec::new()), 0o644);
                Ok((ino, r.rel))
            }
        }
    }

    fn modify(
        &self,
        path: &str,
        follow: bool,
        f: impl FnOnce(&mut Inode, SystemTime) -> FsResult<()>,
    ) -> FsResult<()> {
        let mut st = self.lock();
        let (_, found) = st.existing(path, follow)?;
        let now = st.tick();
        match st.inodes.get_mut(&found.ino) {
            Some(node) => {
                f(node, now)?;
                node.ctime = now;
                Ok(())
            }
            None => Err(FsError::NotFound),
        }
    }
}

/// A writer of the path API: its writes are applied to the inode on `sync` and `close`.
struct MemWriter {
    state: Arc<Mutex<State>>,
    ino: u64,
    path: String,
    /// Writes not applied yet: at an offset, or (`None`) at the end.
    pending: Vec<(Option<u64>, Vec<u8>)>,
    /// Where `write` goes: an offset (`<>`), or the end of the file.
    pos: Option<u64>,
}

impl MemWriter {
    fn apply(&mut self, st: &mut State) {
        let now = st.tick();
        if let Some(Inode {
            body: Body::File(data),
            mtime,
            ctime,
            ..
        }) = st.inodes.get_mut(&self.ino)
        {
            for (at, bytes) in self.pending.drain(..) {
                match at {
                    None => data.extend_from_slice(&bytes),
                    Some(off) => write_into(data, off as usize, &bytes),
                }
            }
            *mtime = now;
            *ctime = now;
        }
    }
}

fn write_into(data: &mut Vec<u8>, off: usize, bytes: &[u8]) {
    let end = off + bytes.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[off..end].copy_from_slice(bytes);
}

#[async_trait]
impl WriteHandle for MemWriter {
    async fn write(&mut self, data: &[u8]) -> FsResult<()> {
        self.pending.push((self.pos, data.to_vec()));
        if let Some(p) = &mut self.pos {
            *p += data.len() as u64;
        }
        Ok(())
    }

    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        self.pending.push((Some(offset), data.to_vec()));
        Ok(())
    }

    async fn sync(&mut self) -> FsResult<()> {
        let state = self.state.clone();
        let mut st = lock(&state);
        self.apply(&mut st);
        Ok(())
    }

    async fn close(mut self: Box<Self>) -> FsResult<()> {
        let state = self.state.clone();
        let mut st = lock(&state);
        if st.fail_close.remove(&self.path) || st.fail_close.remove("*") {
            return Err(FsError::NoSpace);
        }
        self.apply(&mut st);
        Ok(())
    }
}

/// An open file of [`FileSystem::open`]: its inode, written through at once.
struct MemFile {
    state: Arc<Mutex<State>>,
    ino: u64,
    /// Set by `close`, so dropping does not count the close twice.
    closed: bool,
}

impl MemFile {
    fn with<R>(&self, f: impl FnOnce(&mut State, u64) -> FsResult<R>) -> FsResult<R> {
        let mut st = lock(&self.state);
        f(&mut st, self.ino)
    }

    fn release(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        let mut st = lock(&self.state);
        if let Some(inode) = st.inodes.get_mut(&self.ino) {
            inode.open = inode.open.saturating_sub(1);
            if inode.open == 0 && !inode.linked {
                st.inodes.remove(&self.ino);
            }
        }
    }
}

impl Drop for MemFile {
    fn drop(&mut self) {
        self.release();
    }
}

/// Writes `bytes` at `off` (or the end) of inode `ino`, within the quota; gives the
/// offset written at.
fn write_inode(st: &mut State, ino: u64, off: Option<u64>, bytes: &[u8]) -> FsResult<u64> {
    let (len, linked) = match st.inodes.get(&ino) {
        Some(
            n @ Inode {
                body: Body::File(_),
                ..
            },
        ) => (n.len(), n.linked),
        Some(_) => return Err(FsError::IsADirectory),
        None => return Err(FsError::Io),
    };
    let at = off.unwrap_or(len);
    let end = at.saturating_add(bytes.len() as u64);
    let at_usize = usize::try_from(at).map_err(|_| FsError::TooLarge)?;
    if linked {
        st.room_for(end.saturating_sub(len))?;
    }
    let now = st.tick();
    if let Some(Inode {
        body: Body::File(data),
        mtime,
        ctime,
        ..
    }) = st.inodes.get_mut(&ino)
    {
        write_into(data, at_usize, bytes);
        *mtime = now;
        *ctime = now;
    }
    Ok(at)
}

#[async_trait]
impl OpenFile for MemFile {
    async fn read_at(&mut self, offset: u64, len: usize) -> FsResult<Bytes> {
        self.with(|st, ino| match st.inodes.get(&ino) {
            Some(Inode {
                body: Body::File(data),
                ..
            }) => {
                let start = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                let end = start.saturating_add(len).min(data.len());
                Ok(Bytes::copy_from_slice(&data[start..end]))
            }
            Some(_) => Err(FsError::IsADirectory),
            None => Err(FsError::Io),
        })
    }

    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        self.with(|st, ino| write_inode(st, ino, Some(offset), data).map(|_| ()))
    }

    async fn append(&mut self, data: &[u8]) -> FsResult<u64> {
        self.with(|st, ino| write_inode(st, ino, None, data))
    }

    async fn stat(&mut self) -> FsResult<Metadata> {
        self.with(|st, ino| st.inodes.get(&ino).map(|n| n.meta(ino)).ok_or(FsError::Io))
    }

    async fn set_len(&mut self, len: u64) -> FsResult<()> {
        self.with(|st, ino| {
            let Some(node) = st.inodes.get(&ino) else {
                return Err(FsError::Io);
            };
            if node.linked {
                st.room_for(len.saturating_sub(node.len()))?;
            }
            let new = usize::try_from(len).map_err(|_| FsError::TooLarge)?;
            let now = st.tick();
            match st.inodes.get_mut(&ino) {
                Some(Inode {
                    body: Body::File(data),
                    mtime,
                    ctime,
                    ..
                }) => {
                    data.resize(new, 0);
                    *mtime = now;
                    *ctime = now;
                    Ok(())
                }
                _ => Err(FsError::IsADirectory),
            }
        })
    }

    async fn sync(&mut self) -> FsResult<()> {
        Ok(())
    }

    async fn close(mut self: Box<Self>) -> FsResult<()> {
        self.release();
        Ok(())
    }
}

#[async_trait]
impl FileSystem for MemFs {
    async fn stat(&self, path: &str) -> FsResult<Metadata> {
        let st = self.lock();
        let (p, f) = st.existing(path, true)?;
        st.node(&p).map(|n| n.meta(f.ino)).ok_or(FsError::NotFound)
    }

    async fn lstat(&self, path: &str) -> FsResult<Metadata> {
        let st = self.lock();
        let (p, f) = st.existing(path, false)?;
        st.node(&p).map(|n| n.meta(f.ino)).ok_or(FsError::NotFound)
    }

    async fn read_at(&self, path: &str, offset: u64, len: usize) -> FsResult<Bytes> {
        let st = self.lock();
        if st.fail_read.contains(path) {
            return Err(FsError::Io);
        }
        let (p, _) = st.existing(path, true)?;
        match st.node(&p).map(|n| &n.body) {
            Some(Body::File(data)) => {
                let start = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                let end = start.saturating_add(len).min(data.len());
                Ok(Bytes::copy_from_slice(&data[start..end]))
            }
            Some(Body::Dir) => Err(FsError::IsADirectory),
            Some(Body::Symlink(_)) => Err(FsError::Loop),
            None => Err(FsError::NotFound),
        }
    }

    async fn open_write(&self, path: &str, mode: WriteMode) -> FsResult<Box<dyn WriteHandle>> {
        let (ino, resolved) = self.open_for_write(path, mode)?;
        Ok(Box::new(MemWriter {
            state: self.state.clone(),
            ino,
            path: resolved,
            pending: Vec::new(),
            pos: (mode == WriteMode::Update).then_some(0),
        }))
    }

    async fn open(&self, path: &VfsPath, opts: OpenOptions) -> FsResult<FileHandle> {
        let mut st = self.lock();
        let follow = if opts.no_follow_last() {
            Follow::No
        } else {
            Follow::Yes
        };
        let r = st.resolve_path(path, follow)?;
        let (ino, kind) = match opts.decide(path, r.node.as_ref().map(|f| f.kind))? {
            OpenAction::Create => {
                if r.rel == "/" {
                    return Err(FsError::IsADirectory);
                }
                st.room_for_object()?;
                (
                    st.create(r.rel, Body::File(Vec::new()), 0o644),
                    FileKind::File,
                )
            }
            action => {
                let found = r.node.ok_or(FsError::NotFound)?;
                if action == OpenAction::Truncate {
                    let now = st.tick();
                    if let Some(Inode {
                        body: Body::File(data),
                        mtime,
                        ctime,
                        ..
                    }) = st.inodes.get_mut(&found.ino)
                    {
                        data.clear();
                        *mtime = now;
                        *ctime = now;
                    }
                }
                (found.ino, found.kind)
            }
        };
        if let Some(inode) = st.inodes.get_mut(&ino) {
            inode.open += 1;
        }
        let file = MemFile {
            state: self.state.clone(),
            ino,
            closed: false,
        };
        Ok(FileHandle::new(Box::new(file), opts, kind))
    }

    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        let st = self.lock();
        let (p, found) = st.existing(path, true)?;
        if found.kind != FileKind::Dir {
            return Err(FsError::NotADirectory);
        }
        Ok(st
            .children(&p)
            .into_iter()
            .filter_map(|(name, ino)| {
                st.inodes.get(&ino).map(|n| DirEntry {
                    name,
                    meta: n.meta(ino),
                })
            })
            .collect())
    }

    async fn mkdir(&self, path: &str) -> FsResult<()> {
        let mut st = self.lock();
        let r = st.resolve(path, false)?;
        if r.node.is_some() {
            return Err(FsError::AlreadyExists);
        }
        st.create(r.rel, Body::Dir, 0o755);
        Ok(())
    }

    async fn rmdir(&self, path: &str) -> FsResult<()> {
        let mut st = self.lock();
        let (p, found) = st.existing(path, false)?;
        if found.kind != FileKind::Dir {
            return Err(FsError::NotADirectory);
        }
        if p == "/" {
            return Err(FsError::PermissionDenied);
        }
        if !st.children(&p).is_empty() {
            return Err(FsError::NotEmpty);
        }
        st.unlink_path(&p);
        Ok(())
    }

    async fn unlink(&self, path: &str) -> FsResult<()> {
        let mut st = self.lock();
        let (p, found) = st.existing(path, false)?;
        if found.kind == FileKind::Dir {
            return Err(FsError::IsADirectory);
        }
        st.unlink_path(&p);
        Ok(())
    }

    async fn rename(&self, from: &str, to: &str) -> FsResult<()> {
        let mut st = self.lock();
        let (src, node) = st.existing(from, false)?;
        let src_is_dir = node.kind == FileKind::Dir;
        let dst = st.resolve(to, false)?.rel;
        if src == dst {
            return Ok(());
        }
        if src == "/" || dst == "/" || dst.starts_with(&format!("{src}/")) {
            return Err(FsError::InvalidArgument);
        }
        match st.node(&dst).map(Inode::kind) {
            Some(FileKind::Dir) if !src_is_dir => return Err(FsError::IsADirectory),
            Some(FileKind::Dir) if !st.children(&dst).is_empty() => {
                return Err(FsError::NotEmpty);
            }
            Some(_) if src_is_dir => return Err(FsError::NotADirectory),
            _ => {}
        }
        let prefix = format!("{src}/");
        let moved: Vec<String> = st
            .paths
            .keys()
            .filter(|k| **k == src || k.starts_with(&prefix))
            .cloned()
            .collect();
        st.unlink_path(&dst);
        let now = st.tick();
        for key in moved {
            if let Some(ino) = st.paths.remove(&key) {
                let new_key = format!("{dst}{}", &key[src.len()..]);
                st.paths.insert(new_key, ino);
            }
        }
        if let Some(n) = st.node_mut(&dst) {
            n.ctime = now;
        }
        Ok(())
    }

    async fn symlink(&self, target: &str, link: &str) -> FsResult<()> {
        let mut st = self.lock();
        let r = st.resolve(link, false)?;
        if r.node.is_some() {
            return Err(FsError::AlreadyExists);
        }
        st.create(r.rel, Body::Symlink(target.to_string()), 0o777);
        Ok(())
    }

    async fn readlink(&self, path: &str) -> FsResult<String> {
        let st = self.lock();
        match st.existing(path, false)?.1.target {
            Some(t) => Ok(t),
            None => Err(FsError::InvalidArgument),
        }
    }

    async fn chmod(&self, path: &str, new_mode: u32) -> FsResult<()> {
        self.modify(path, true, |node, _| {
            if !matches!(node.body, Body::Symlink(_)) {
                node.mode = new_mode & 0o7777;
            }
            Ok(())
        })
    }

    async fn set_mtime(&self, path: &str, t: SystemTime) -> FsResult<()> {
        self.modify(path, true, |node, _| {
            node.mtime = t;
            Ok(())
        })
    }

    async fn truncate(&self, path: &str, len: u64) -> FsResult<()> {
        self.modify(path, true, |node, now| match &mut node.body {
            Body::File(data) => {
                data.resize(usize::try_from(len).map_err(|_| FsError::TooLarge)?, 0);
                node.mtime = now;
                Ok(())
            }
            Body::Dir => Err(FsError::IsADirectory),
            Body::Symlink(_) => Err(FsError::InvalidArgument),
        })
    }

    async fn canonicalize(&self, path: &str) -> FsResult<String> {
        let st = self.lock();
        Ok(st.existing(path, true)?.0)
    }

    /// Bytes are the sizes of files and symlink targets; objects every node but `/`.
    async fn usage(&self) -> FsResult<Usage> {
        let st = self.lock();
        Ok(Usage {
            bytes_used: st.bytes_used(),
            bytes_limit: st.limits.0.or(st.quota.bytes),
            objects_used: st.paths.len().saturating_sub(1) as u64,
            objects_limit: st.limits.1.or(st.quota.objects),
        })
    }
}

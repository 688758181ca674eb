//! In-memory filesystem and harness for unit tests.
//!
//! - [`MemFs`]: a complete [`FileSystem`] in memory: files, directories and symlinks,
//!   resolved component by component inside the root (`..` never climbs above `/`,
//!   at most [`MAX_SYMLINK_HOPS`] symlinks per lookup). Its clock is fake and advances one
//!   second per change, so tests about mtimes are deterministic.
//! - [`QuotaFs`]: a [`MemFs`] whose writes stop at a quota, and which counts the files
//!   created (commands that write scratch files).
//! - [`run_cmd`] / [`Invocation`]: run one command with pipes for stdin/stdout/stderr and
//!   collect its status and output; [`Invocation::out_of_memory`] checks a command's
//!   failure under a tiny budget ([`TINY_BUDGET`]).
//! - [`NullLauncher`] and [`TestLauncher`]: the shell's side of the contract for commands
//!   that launch others (`env`, `xargs`) or list them (`help`, `which`).
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test support: a broken harness must fail the test loudly"
)]

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::fs::{
    DirEntry, FileKind, FileSystem, FsError, FsResult, Metadata, Usage, WriteHandle, WriteMode,
};
use crate::io::{Input, pipe};
use crate::{Command, CommandInfo, Context, Launcher, Status, TermSize, exit_status};

/// Symlinks one lookup may follow before failing with [`FsError::Loop`], as Linux's
/// `MAXSYMLINKS`: a cycle must end in an error, not a hang.
pub const MAX_SYMLINK_HOPS: usize = 40;

/// Bytes of stdout or stderr the harness collects; a runaway command fails the test
/// instead of eating the machine's memory.
pub const HARNESS_OUTPUT_LIMIT: usize = 64 * 1024 * 1024;

/// The fake clock's start (2023-11-14T22:13:20Z).
const CLOCK_START: u64 = 1_700_000_000;

#[derive(Clone, Debug)]
enum Node {
    File {
        data: Vec<u8>,
        mode: u32,
        mtime: SystemTime,
    },
    Dir {
        mode: u32,
        mtime: SystemTime,
    },
    Symlink {
        target: String,
        mtime: SystemTime,
    },
}

impl Node {
    fn meta(&self) -> Metadata {
        match self {
            Node::File { data, mode, mtime } => Metadata {
                kind: FileKind::File,
                len: data.len() as u64,
                mode: *mode,
                mtime: *mtime,
            },
            Node::Dir { mode, mtime } => Metadata {
                kind: FileKind::Dir,
                len: 4096,
                mode: *mode,
                mtime: *mtime,
            },
            Node::Symlink { target, mtime } => Metadata {
                kind: FileKind::Symlink,
                len: target.len() as u64,
                mode: 0o777,
                mtime: *mtime,
            },
        }
    }
}

#[derive(Debug)]
struct State {
    /// Every node by its resolved absolute path (no symlink in any parent component);
    /// `/` is always a directory.
    nodes: BTreeMap<String, Node>,
    /// Seconds since the epoch of the fake clock.
    clock: u64,
    /// Paths whose next `close` fails with [`FsError::NoSpace`] (failure injection).
    fail_close: HashSet<String>,
    /// Paths whose every read fails with [`FsError::Io`] (failure injection).
    fail_read: HashSet<String>,
    /// Limits [`FileSystem::usage`] reports (bytes, objects); reported, not enforced.
    limits: (Option<u64>, Option<u64>),
}

impl State {
    fn tick(&mut self) -> SystemTime {
        self.clock += 1;
        UNIX_EPOCH + Duration::from_secs(self.clock)
    }

    fn children(&self, dir: &str) -> Vec<(String, &Node)> {
        let prefix = if dir == "/" {
            "/".to_string()
        } else {
            format!("{dir}/")
        };
        let mut out: Vec<(String, &Node)> = self
            .nodes
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter(|(k, _)| k.len() > prefix.len() && !k[prefix.len()..].contains('/'))
            .map(|(k, v)| (k[prefix.len()..].to_string(), v))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Resolves `path` component by component. Every parent must be an existing directory;
    /// the last component may be missing. Follows a symlink in the last component only
    /// when `follow_last`. Returns the resolved path.
    fn resolve(&self, path: &str, follow_last: bool) -> FsResult<String> {
        let trailing_slash = path.len() > 1 && path.ends_with('/');
        let follow_last = follow_last || trailing_slash;
        let mut pending: VecDeque<String> = path
            .split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect();
        let mut cur: Vec<String> = Vec::new();
        let mut hops = 0;
        while let Some(comp) = pending.pop_front() {
            let here = to_path(&cur);
            match self.nodes.get(&here) {
                Some(Node::Dir { .. }) => {}
                Some(_) => return Err(FsError::NotADirectory),
                None => return Err(FsError::NotFound),
            }
            match comp.as_str() {
                "." => continue,
                ".." => {
                    cur.pop();
                    continue;
                }
                _ => {}
            }
            if comp.len() > 255 {
                return Err(FsError::NameTooLong);
            }
            cur.push(comp);
            let is_last = pending.is_empty();
            if let Some(Node::Symlink { target, .. }) = self.nodes.get(&to_path(&cur))
                && (!is_last || follow_last)
            {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(FsError::Loop);
                }
                cur.pop();
                if target.starts_with('/') {
                    cur.clear();
                }
                for c in target.split('/').filter(|c| !c.is_empty()).rev() {
                    pending.push_front(c.to_string());
                }
            }
        }
        let resolved = to_path(&cur);
        if trailing_slash && matches!(self.nodes.get(&resolved), Some(Node::File { .. })) {
            return Err(FsError::NotADirectory);
        }
        Ok(resolved)
    }

    fn existing(&self, path: &str, follow: bool) -> FsResult<(String, &Node)> {
        let p = self.resolve(path, follow)?;
        match self.nodes.get(&p) {
            Some(n) => Ok((p, n)),
            None => Err(FsError::NotFound),
        }
    }
}

fn to_path(parts: &[String]) -> String {
    format!("/{}", parts.join("/"))
}

/// A complete in-memory [`FileSystem`] for tests.
#[derive(Debug)]
pub struct MemFs {
    /// Shared with open writers, which apply their data on close.
    state: Arc<Mutex<State>>,
}

impl MemFs {
    /// An empty filesystem: just `/`.
    pub fn new() -> Arc<MemFs> {
        let mut nodes = BTreeMap::new();
        let mtime = UNIX_EPOCH + Duration::from_secs(CLOCK_START);
        nodes.insert("/".to_string(), Node::Dir { mode: 0o755, mtime });
        Arc::new(MemFs {
            state: Arc::new(Mutex::new(State {
                nodes,
                clock: CLOCK_START,
                fail_close: HashSet::new(),
                fail_read: HashSet::new(),
                limits: (None, None),
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
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Creates or replaces a file (or a directory for a path ending in `/`), creating
    /// parent directories. Relative paths are taken from `/`.
    pub fn put(&self, path: &str, content: &[u8]) {
        if path.ends_with('/') {
            self.put_dir(path);
            return;
        }
        let path = crate::fs::normalize(&format!("/{path}"));
        let mut st = self.lock();
        let mut cur = String::new();
        let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        for comp in comps.iter().take(comps.len().saturating_sub(1)) {
            cur.push('/');
            cur.push_str(comp);
            let mtime = st.tick();
            st.nodes
                .entry(cur.clone())
                .or_insert(Node::Dir { mode: 0o755, mtime });
        }
        let mtime = st.tick();
        st.nodes.insert(
            path,
            Node::File {
                data: content.to_vec(),
                mode: 0o644,
                mtime,
            },
        );
    }

    /// Creates a directory and its parents.
    pub fn put_dir(&self, path: &str) {
        let path = crate::fs::normalize(&format!("/{path}"));
        let mut st = self.lock();
        let mut cur = String::new();
        for comp in path.split('/').filter(|c| !c.is_empty()) {
            cur.push('/');
            cur.push_str(comp);
            let mtime = st.tick();
            st.nodes
                .entry(cur.clone())
                .or_insert(Node::Dir { mode: 0o755, mtime });
        }
    }

    /// Creates a symlink at `link` (absolute, parent must exist) pointing at `target`.
    pub fn put_symlink(&self, target: &str, link: &str) {
        let mut st = self.lock();
        let mtime = st.tick();
        st.nodes.insert(
            link.to_string(),
            Node::Symlink {
                target: target.to_string(),
                mtime,
            },
        );
    }

    /// Content of the file at `path` (symlinks followed), or `None` if it is not a file.
    pub fn contents(&self, path: &str) -> Option<Vec<u8>> {
        let st = self.lock();
        match st.existing(path, true) {
            Ok((_, Node::File { data, .. })) => Some(data.clone()),
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
        if let Ok(p) = st.resolve(path, true)
            && let Some(node) = st.nodes.get_mut(&p)
        {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            match node {
                Node::File { mtime, .. }
                | Node::Dir { mtime, .. }
                | Node::Symlink { mtime, .. } => *mtime = t,
            }
        }
    }
}

struct MemWriter {
    state: Arc<Mutex<State>>,
    path: String,
    /// Writes not applied yet: at an offset, or (`None`) at the end.
    pending: Vec<(Option<u64>, Vec<u8>)>,
    /// Where `write` goes: an offset (`<>`), or the end of the file.
    pos: Option<u64>,
}

impl MemWriter {
    fn apply(&mut self, st: &mut State) {
        let now = st.tick();
        if let Some(Node::File { data, mtime, .. }) = st.nodes.get_mut(&self.path) {
            for (at, bytes) in self.pending.drain(..) {
                match at {
                    None => data.extend_from_slice(&bytes),
                    Some(off) => {
                        let (off, end) = (off as usize, off as usize + bytes.len());
                        if data.len() < end {
                            data.resize(end, 0);
                        }
                        data[off..end].copy_from_slice(&bytes);
                    }
                }
            }
            *mtime = now;
        }
    }
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
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        self.apply(&mut st);
        Ok(())
    }

    async fn close(mut self: Box<Self>) -> FsResult<()> {
        let state = self.state.clone();
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        if st.fail_close.remove(&self.path) || st.fail_close.remove("*") {
            return Err(FsError::NoSpace);
        }
        self.apply(&mut st);
        Ok(())
    }
}

impl MemFs {
    /// Opens (creating or truncating) a file for writing; returns its resolved path.
    fn open_for_write(&self, path: &str, mode: WriteMode) -> FsResult<String> {
        let mut st = self.lock();
        let p = st.resolve(path, true)?;
        let now = st.tick();
        match st.nodes.get_mut(&p) {
            Some(Node::Dir { .. }) => Err(FsError::IsADirectory),
            Some(Node::Symlink { .. }) => Err(FsError::NotFound),
            Some(Node::File { data, mtime, .. }) => match mode {
                WriteMode::CreateNew => Err(FsError::AlreadyExists),
                WriteMode::Truncate => {
                    data.clear();
                    *mtime = now;
                    Ok(p)
                }
                WriteMode::Append | WriteMode::Update => Ok(p),
            },
            None => {
                if p == "/" {
                    return Err(FsError::IsADirectory);
                }
                st.nodes.insert(
                    p.clone(),
                    Node::File {
                        data: Vec::new(),
                        mode: 0o644,
                        mtime: now,
                    },
                );
                Ok(p)
            }
        }
    }

    fn modify(
        &self,
        path: &str,
        follow: bool,
        f: impl FnOnce(&mut Node, SystemTime) -> FsResult<()>,
    ) -> FsResult<()> {
        let mut st = self.lock();
        let (p, _) = st.existing(path, follow)?;
        let now = st.tick();
        match st.nodes.get_mut(&p) {
            Some(node) => f(node, now),
            None => Err(FsError::NotFound),
        }
    }
}

#[async_trait]
impl FileSystem for MemFs {
    async fn stat(&self, path: &str) -> FsResult<Metadata> {
        let st = self.lock();
        Ok(st.existing(path, true)?.1.meta())
    }

    async fn lstat(&self, path: &str) -> FsResult<Metadata> {
        let st = self.lock();
        Ok(st.existing(path, false)?.1.meta())
    }

    async fn read_at(&self, path: &str, offset: u64, len: usize) -> FsResult<Bytes> {
        let st = self.lock();
        if st.fail_read.contains(path) {
            return Err(FsError::Io);
        }
        match st.existing(path, true)?.1 {
            Node::File { data, .. } => {
                let start = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                let end = start.saturating_add(len).min(data.len());
                Ok(Bytes::copy_from_slice(&data[start..end]))
            }
            Node::Dir { .. } => Err(FsError::IsADirectory),
            Node::Symlink { .. } => Err(FsError::Loop),
        }
    }

    async fn open_write(&self, path: &str, mode: WriteMode) -> FsResult<Box<dyn WriteHandle>> {
        let resolved = self.open_for_write(path, mode)?;
        Ok(Box::new(MemWriter {
            state: self.state.clone(),
            path: resolved,
            pending: Vec::new(),
            pos: (mode == WriteMode::Update).then_some(0),
        }))
    }

    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        let st = self.lock();
        let (p, node) = st.existing(path, true)?;
        if !matches!(node, Node::Dir { .. }) {
            return Err(FsError::NotADirectory);
        }
        Ok(st
            .children(&p)
            .into_iter()
            .map(|(name, n)| DirEntry {
                name,
                meta: n.meta(),
            })
            .collect())
    }

    async fn mkdir(&self, path: &str) -> FsResult<()> {
        let mut st = self.lock();
        let p = st.resolve(path, false)?;
        if st.nodes.contains_key(&p) {
            return Err(FsError::AlreadyExists);
        }
        let mtime = st.tick();
        st.nodes.insert(p, Node::Dir { mode: 0o755, mtime });
        Ok(())
    }

    async fn rmdir(&self, path: &str) -> FsResult<()> {
        let mut st = self.lock();
        let (p, node) = st.existing(path, false)?;
        if !matches!(node, Node::Dir { .. }) {
            return Err(FsError::NotADirectory);
        }
        if p == "/" {
            return Err(FsError::PermissionDenied);
        }
        if !st.children(&p).is_empty() {
            return Err(FsError::NotEmpty);
        }
        st.nodes.remove(&p);
        Ok(())
    }

    async fn unlink(&self, path: &str) -> FsResult<()> {
        let mut st = self.lock();
        let (p, node) = st.existing(path, false)?;
        if matches!(node, Node::Dir { .. }) {
            return Err(FsError::IsADirectory);
        }
        st.nodes.remove(&p);
        Ok(())
    }

    async fn rename(&self, from: &str, to: &str) -> FsResult<()> {
        let mut st = self.lock();
        let (src, node) = st.existing(from, false)?;
        let src_is_dir = matches!(node, Node::Dir { .. });
        let dst = st.resolve(to, false)?;
        if src == dst {
            return Ok(());
        }
        if src == "/" || dst == "/" || dst.starts_with(&format!("{src}/")) {
            return Err(FsError::InvalidArgument);
        }
        match st.nodes.get(&dst) {
            Some(Node::Dir { .. }) if !src_is_dir => return Err(FsError::IsADirectory),
            Some(Node::Dir { .. }) if !st.children(&dst).is_empty() => {
                return Err(FsError::NotEmpty);
            }
            Some(_) if src_is_dir => return Err(FsError::NotADirectory),
            _ => {}
        }
        let prefix = format!("{src}/");
        let moved: Vec<String> = st
            .nodes
            .keys()
            .filter(|k| **k == src || k.starts_with(&prefix))
            .cloned()
            .collect();
        st.nodes.remove(&dst);
        for key in moved {
            if let Some(n) = st.nodes.remove(&key) {
                let new_key = format!("{dst}{}", &key[src.len()..]);
                st.nodes.insert(new_key, n);
            }
        }
        Ok(())
    }

    async fn symlink(&self, target: &str, link: &str) -> FsResult<()> {
        let mut st = self.lock();
        let p = st.resolve(link, false)?;
        if st.nodes.contains_key(&p) {
            return Err(FsError::AlreadyExists);
        }
        let mtime = st.tick();
        st.nodes.insert(
            p,
            Node::Symlink {
                target: target.to_string(),
                mtime,
            },
        );
        Ok(())
    }

    async fn readlink(&self, path: &str) -> FsResult<String> {
        let st = self.lock();
        match st.existing(path, false)?.1 {
            Node::Symlink { target, .. } => Ok(target.clone()),
            _ => Err(FsError::InvalidArgument),
        }
    }

    async fn chmod(&self, path: &str, new_mode: u32) -> FsResult<()> {
        self.modify(path, true, |node, _| {
            match node {
                Node::File { mode, .. } | Node::Dir { mode, .. } => *mode = new_mode & 0o7777,
                Node::Symlink { .. } => {}
            }
            Ok(())
        })
    }

    async fn set_mtime(&self, path: &str, t: SystemTime) -> FsResult<()> {
        self.modify(path, true, |node, _| {
            match node {
                Node::File { mtime, .. }
                | Node::Dir { mtime, .. }
                | Node::Symlink { mtime, .. } => *mtime = t,
            }
            Ok(())
        })
    }

    async fn truncate(&self, path: &str, len: u64) -> FsResult<()> {
        self.modify(path, true, |node, now| match node {
            Node::File { data, mtime, .. } => {
                data.resize(usize::try_from(len).map_err(|_| FsError::TooLarge)?, 0);
                *mtime = now;
                Ok(())
            }
            Node::Dir { .. } => Err(FsError::IsADirectory),
            Node::Symlink { .. } => Err(FsError::InvalidArgument),
        })
    }

    async fn canonicalize(&self, path: &str) -> FsResult<String> {
        let st = self.lock();
        Ok(st.existing(path, true)?.0)
    }

    /// Bytes are the sizes of files and symlink targets; objects every node but `/`.
    async fn usage(&self) -> FsResult<Usage> {
        let st = self.lock();
        let bytes_used = st
            .nodes
            .values()
            .map(|n| match n {
                Node::File { data, .. } => data.len() as u64,
                Node::Symlink { target, .. } => target.len() as u64,
                Node::Dir { .. } => 0,
            })
            .sum();
        Ok(Usage {
            bytes_used,
            bytes_limit: st.limits.0,
            objects_used: st.nodes.len().saturating_sub(1) as u64,
            objects_limit: st.limits.1,
        })
    }
}

/// A [`FileSystem`] over a [`MemFs`] that enforces a quota on bytes written, the way the
/// session's `Vfs` does (a write past it fails with [`FsError::NoSpace`] as the data
/// comes), and counts the files it created. For commands that write scratch files.
pub struct QuotaFs {
    inner: Arc<MemFs>,
    /// Bytes writes may still add; unlinking gives nothing back.
    room: Arc<Mutex<u64>>,
    /// Files created by `open_write` (that did not exist before).
    created: Mutex<Vec<String>>,
}

impl QuotaFs {
    /// `inner` with `room` bytes left for writes (`u64::MAX`: no limit).
    pub fn new(inner: Arc<MemFs>, room: u64) -> Arc<QuotaFs> {
        Arc::new(QuotaFs {
            inner,
            room: Arc::new(Mutex::new(room)),
            created: Mutex::new(Vec::new()),
        })
    }

    /// Paths of the files created so far, in order.
    pub fn created(&self) -> Vec<String> {
        self.created
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

struct QuotaWriter {
    inner: Box<dyn WriteHandle>,
    room: Arc<Mutex<u64>>,
}

impl QuotaWriter {
    fn take(&self, bytes: usize) -> FsResult<()> {
        let mut room = self.room.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = bytes as u64;
        if bytes > *room {
            return Err(FsError::NoSpace);
        }
        *room -= bytes;
        Ok(())
    }
}

#[async_trait]
impl WriteHandle for QuotaWriter {
    async fn write(&mut self, data: &[u8]) -> FsResult<()> {
        self.take(data.len())?;
        self.inner.write(data).await
    }
    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        self.take(data.len())?;
        self.inner.write_at(offset, data).await
    }
    async fn sync(&mut self) -> FsResult<()> {
        self.inner.sync().await
    }
    async fn close(self: Box<Self>) -> FsResult<()> {
        self.inner.close().await
    }
}

#[async_trait]
impl FileSystem for QuotaFs {
    async fn stat(&self, path: &str) -> FsResult<Metadata> {
        self.inner.stat(path).await
    }
    async fn lstat(&self, path: &str) -> FsResult<Metadata> {
        self.inner.lstat(path).await
    }
    async fn read_at(&self, path: &str, offset: u64, len: usize) -> FsResult<Bytes> {
        self.inner.read_at(path, offset, len).await
    }
    async fn open_write(&self, path: &str, mode: WriteMode) -> FsResult<Box<dyn WriteHandle>> {
        let existed = self.inner.exists(path);
        let inner = self.inner.open_write(path, mode).await?;
        if !existed {
            self.created
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(path.to_string());
        }
        Ok(Box::new(QuotaWriter {
            inner,
            room: self.room.clone(),
        }))
    }
    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        self.inner.read_dir(path).await
    }
    async fn mkdir(&self, path: &str) -> FsResult<()> {
        self.inner.mkdir(path).await
    }
    async fn rmdir(&self, path: &str) -> FsResult<()> {
        self.inner.rmdir(path).await
    }
    async fn unlink(&self, path: &str) -> FsResult<()> {
        self.inner.unlink(path).await
    }
    async fn rename(&self, from: &str, to: &str) -> FsResult<()> {
        self.inner.rename(from, to).await
    }
    async fn symlink(&self, target: &str, link: &str) -> FsResult<()> {
        self.inner.symlink(target, link).await
    }
    async fn readlink(&self, path: &str) -> FsResult<String> {
        self.inner.readlink(path).await
    }
    async fn chmod(&self, path: &str, mode: u32) -> FsResult<()> {
        self.inner.chmod(path, mode).await
    }
    async fn set_mtime(&self, path: &str, mtime: SystemTime) -> FsResult<()> {
        self.inner.set_mtime(path, mtime).await
    }
    async fn truncate(&self, path: &str, len: u64) -> FsResult<()> {
        self.inner.truncate(path, len).await
    }
    async fn canonicalize(&self, path: &str) -> FsResult<String> {
        self.inner.canonicalize(path).await
    }
}

/// A launcher that knows a fixed list of names and runs none of them.
pub struct NullLauncher {
    names: Vec<CommandInfo>,
}

impl NullLauncher {
    pub fn new(names: &[&str]) -> Arc<NullLauncher> {
        let mut names: Vec<CommandInfo> =
            names.iter().map(|n| CommandInfo::native(n, "")).collect();
        names.sort_by(|a, b| a.name.cmp(&b.name));
        Arc::new(NullLauncher { names })
    }
}

#[async_trait]
impl Launcher for NullLauncher {
    async fn launch(&self, ctx: Context, argv: Vec<String>) -> Status {
        let name = argv.first().cloned().unwrap_or_default();
        ctx.err(format!("forkbox: {name}: command not found\n"))
            .await;
        127
    }

    fn commands(&self) -> Vec<CommandInfo> {
        self.names.clone()
    }
}

/// A launcher that runs this crate's commands by name (and nothing else), so commands
/// that launch others can be tested end to end.
pub struct TestLauncher {
    commands: Vec<Arc<dyn Command>>,
}

impl TestLauncher {
    /// A launcher over every command of [`crate::all`], plus stand-ins for the shell
    /// builtins commands launch most (`echo`, `true`, `false`).
    pub fn new() -> Arc<TestLauncher> {
        let mut all = crate::all();
        all.extend(crate::cmd::builtin_stand_ins());
        TestLauncher::with(all)
    }

    /// A launcher over the given commands only.
    pub fn with(mut commands: Vec<Arc<dyn Command>>) -> Arc<TestLauncher> {
        commands.sort_by_key(|c| c.name());
        Arc::new(TestLauncher { commands })
    }
}

#[async_trait]
impl Launcher for TestLauncher {
    async fn launch(&self, ctx: Context, argv: Vec<String>) -> Status {
        let name = argv.first().cloned().unwrap_or_default();
        let Some(cmd) = self.commands.iter().find(|c| c.name() == name) else {
            ctx.err(format!("forkbox: {name}: command not found\n"))
                .await;
            return 127;
        };
        let result = cmd.run(&ctx, argv[1..].to_vec()).await;
        exit_status(cmd.name(), result, &ctx.stderr).await
    }

    fn commands(&self) -> Vec<CommandInfo> {
        self.commands
            .iter()
            .map(|c| CommandInfo::native(c.name(), c.summary()))
            .collect()
    }
}

/// One invocation of a command under test, with everything but the command defaulted:
/// empty stdin, an empty [`MemFs`], cwd `/`, no environment, no terminal, a
/// [`TestLauncher`].
#[derive(Clone)]
pub struct Invocation {
    pub stdin: Vec<u8>,
    pub fs: Arc<dyn FileSystem>,
    pub cwd: String,
    pub env: BTreeMap<String, String>,
    pub tty: Option<TermSize>,
    pub launcher: Arc<dyn Launcher>,
    pub budget: crate::Budget,
}

impl Default for Invocation {
    fn default() -> Self {
        Invocation {
            stdin: Vec::new(),
            fs: MemFs::new(),
            cwd: "/".to_string(),
            env: BTreeMap::new(),
            tty: None,
            launcher: TestLauncher::new(),
            budget: crate::Budget::default(),
        }
    }
}

impl Invocation {
    /// Runs `cmd` with `args`, draining stdout and stderr concurrently; gives the exit
    /// status (through [`exit_status`]) and the outputs (lossily decoded).
    pub async fn run(&self, cmd: &dyn Command, args: &[&str]) -> (Status, String, String) {
        let (status, out, err) = self.run_bytes(cmd, args).await;
        (
            status,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    /// Like [`Invocation::run`], with the raw output bytes.
    pub async fn run_bytes(&self, cmd: &dyn Command, args: &[&str]) -> (Status, Vec<u8>, Vec<u8>) {
        let (out_w, out_r) = pipe();
        let (err_w, err_r) = pipe();
        let ctx = Context {
            stdin: Input::from_bytes(self.stdin.clone()),
            stdout: out_w,
            stderr: err_w,
            env: self.env.clone(),
            cwd: self.cwd.clone(),
            fs: self.fs.clone(),
            cancel: CancellationToken::new(),
            tty: self.tty,
            launcher: self.launcher.clone(),
            budget: self.budget.clone(),
        };
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let run = async move {
            let result = cmd.run(&ctx, args).await;
            let status = exit_status(cmd.name(), result, &ctx.stderr).await;
            drop(ctx);
            status
        };
        // Each reader owns its pipe end, so a reader that gives up (output over the limit)
        // breaks the pipe and stops the command instead of leaving it blocked.
        let drain = |input: Input| async move { input.read_to_end(HARNESS_OUTPUT_LIMIT).await };
        let (status, out, err) = tokio::join!(run, drain(out_r), drain(err_r));
        (
            status,
            out.expect("stdout exceeded the harness limit"),
            err.expect("stderr exceeded the harness limit"),
        )
    }
}

/// A session budget small enough that any buffer of user data overruns it, for tests of
/// what a command does out of memory.
pub const TINY_BUDGET: usize = 1024;

impl Invocation {
    /// Runs `cmd` under a fresh budget of `limit` bytes and checks that it failed as a
    /// command out of memory must: `forkbox: NAME: out of memory (session limit …)` as its
    /// last message, status 1, and nothing left charged once it returned. Gives stdout
    /// (what it wrote before running out).
    pub async fn out_of_memory(&self, cmd: &dyn Command, args: &[&str], limit: usize) -> String {
        let budget = crate::Budget::new(limit, crate::budget::DEFAULT_TASKS);
        let inv = Invocation {
            budget: budget.clone(),
            ..self.clone()
        };
        let (status, out, err) = inv.run(cmd, args).await;
        let want = format!(
            "forkbox: {}: {}\n",
            cmd.name(),
            crate::OutOfMemory { limit }
        );
        assert!(
            status == 1 && err.ends_with(&want),
            "{} {args:?}: status {status}, stderr {err:?}",
            cmd.name()
        );
        assert_eq!(
            budget.mem_used(),
            0,
            "{} {args:?}: left charged",
            cmd.name()
        );
        out
    }
}

/// Runs `cmd` with `args`, `stdin`, `fs` and `cwd` (see [`Invocation`] for the rest).
pub async fn run_cmd(
    cmd: &dyn Command,
    args: &[&str],
    stdin: &[u8],
    fs: Arc<dyn FileSystem>,
    cwd: &str,
) -> (Status, String, String) {
    Invocation {
        stdin: stdin.to_vec(),
        fs,
        cwd: cwd.to_string(),
        ..Invocation::default()
    }
    .run(cmd, args)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn write(fs: &Arc<MemFs>, path: &str, data: &[u8], mode: WriteMode) -> FsResult<()> {
        let mut h = fs.open_write(path, mode).await?;
        h.write(data).await?;
        h.close().await
    }

    #[tokio::test]
    async fn files_dirs_and_listing() {
        let fs = MemFs::with_files(&[("/a/b.txt", "hi"), ("/a/a.txt", "x"), ("/c", "")]);
        let names: Vec<String> = fs
            .read_dir("/a")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["a.txt", "b.txt"]);
        let root: Vec<String> = fs
            .read_dir("/")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(root, ["a", "c"]);
        assert_eq!(fs.read_at("/a/b.txt", 1, 10).await.unwrap(), &b"i"[..]);
        assert_eq!(fs.read_at("/a", 0, 10).await, Err(FsError::IsADirectory));
        assert_eq!(fs.read_at("/c/x", 0, 10).await, Err(FsError::NotADirectory));
        assert_eq!(fs.stat("/nope").await, Err(FsError::NotFound));
        assert_eq!(fs.read_dir("/c").await, Err(FsError::NotADirectory));
        assert_eq!(fs.stat("/../a/../a/b.txt").await.unwrap().len, 2);
    }

    #[tokio::test]
    async fn writes_modes_and_close_failure() {
        let fs = MemFs::new();
        write(&fs, "/f", b"one", WriteMode::Truncate).await.unwrap();
        write(&fs, "/f", b"two", WriteMode::Append).await.unwrap();
        assert_eq!(fs.contents("/f").unwrap(), b"onetwo");
        assert_eq!(
            write(&fs, "/f", b"x", WriteMode::CreateNew).await,
            Err(FsError::AlreadyExists)
        );
        write(&fs, "/f", b"3", WriteMode::Truncate).await.unwrap();
        assert_eq!(fs.text("/f").unwrap(), "3");
        assert_eq!(
            write(&fs, "/no/f", b"", WriteMode::Truncate).await,
            Err(FsError::NotFound)
        );
        assert_eq!(
            write(&fs, "/", b"", WriteMode::Truncate).await,
            Err(FsError::IsADirectory)
        );
        fs.fail_close_on("/g");
        assert_eq!(
            write(&fs, "/g", b"x", WriteMode::Truncate).await,
            Err(FsError::NoSpace)
        );
    }

    #[tokio::test]
    async fn symlinks_resolve_inside_root() {
        let fs = MemFs::with_files(&[("/d/f", "data")]);
        fs.symlink("../../../d", "/d/up").await.unwrap();
        fs.symlink("/d/f", "/abs").await.unwrap();
        fs.symlink("loop", "/loop").await.unwrap();
        assert_eq!(fs.contents("/d/up/f").unwrap(), b"data");
        assert_eq!(fs.contents("/abs").unwrap(), b"data");
        assert!(fs.lstat("/abs").await.unwrap().is_symlink());
        assert!(fs.stat("/abs").await.unwrap().is_file());
        assert_eq!(fs.stat("/loop").await, Err(FsError::Loop));
        assert_eq!(fs.canonicalize("/d/up/up/f").await.unwrap(), "/d/f");
        assert_eq!(fs.readlink("/abs").await.unwrap(), "/d/f");
        assert_eq!(fs.readlink("/d").await, Err(FsError::InvalidArgument));
        // A dangling symlink: lstat works, stat does not.
        fs.symlink("/missing", "/dangle").await.unwrap();
        assert_eq!(fs.stat("/dangle").await, Err(FsError::NotFound));
        assert!(fs.lstat("/dangle").await.is_ok());
        fs.unlink("/abs").await.unwrap();
        assert!(fs.contents("/d/f").is_some());
    }

    #[tokio::test]
    async fn dirs_rename_and_errors() {
        let fs = MemFs::with_files(&[("/a/x", "1"), ("/b", "2")]);
        assert_eq!(fs.mkdir("/a").await, Err(FsError::AlreadyExists));
        assert_eq!(fs.mkdir("/q/r").await, Err(FsError::NotFound));
        assert_eq!(fs.rmdir("/a").await, Err(FsError::NotEmpty));
        assert_eq!(fs.rmdir("/b").await, Err(FsError::NotADirectory));
        assert_eq!(fs.unlink("/a").await, Err(FsError::IsADirectory));
        assert_eq!(fs.rename("/b", "/a").await, Err(FsError::IsADirectory));
        assert_eq!(fs.rename("/a", "/a/x/y").await, Err(FsError::NotADirectory));
        fs.mkdir("/e").await.unwrap();
        assert_eq!(fs.rename("/a", "/e/in").await, Ok(()));
        assert_eq!(fs.contents("/e/in/x").unwrap(), b"1");
        assert!(!fs.exists("/a"));
        assert_eq!(
            fs.rename("/e", "/e/in/z").await,
            Err(FsError::InvalidArgument)
        );
        fs.rename("/b", "/e/in/x").await.unwrap();
        assert_eq!(fs.contents("/e/in/x").unwrap(), b"2");
        fs.truncate("/e/in/x", 3).await.unwrap();
        assert_eq!(fs.contents("/e/in/x").unwrap(), b"2\0\0");
        fs.chmod("/e/in/x", 0o700).await.unwrap();
        assert_eq!(fs.stat("/e/in/x").await.unwrap().mode, 0o700);
        fs.unlink("/e/in/x").await.unwrap();
        fs.rmdir("/e/in").await.unwrap();
        assert_eq!(fs.read_dir("/e").await.unwrap(), vec![]);
    }

    #[tokio::test]
    async fn usage_counts_files_links_and_dirs() {
        let fs = MemFs::with_files(&[("/d/f", "abc")]);
        fs.put_symlink("f", "/d/l");
        assert_eq!(
            fs.usage().await.unwrap(),
            Usage {
                bytes_used: 4,
                bytes_limit: None,
                objects_used: 3,
                objects_limit: None,
            }
        );
        fs.set_usage_limits(Some(10), Some(5));
        let u = fs.usage().await.unwrap();
        assert_eq!((u.bytes_limit, u.objects_limit), (Some(10), Some(5)));
    }

    #[tokio::test]
    async fn launchers() {
        let inv = Invocation {
            launcher: NullLauncher::new(&["b", "a"]),
            ..Invocation::default()
        };
        let names: Vec<String> = inv
            .launcher
            .commands()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["a", "b"]);
    }
}

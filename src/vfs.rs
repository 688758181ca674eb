//! The session filesystem: one `Vfs` per session over its fork.
//!
//! The `Vfs` is the only filesystem API the shell, the commands (through the
//! [`forkbox_commands::FileSystem`] port it implements) and, later, the WASI host and SFTP
//! ever see. Paths are absolute inside the session root; every `.`/`..` and every symlink is
//! resolved here, component by component, so no path can name anything outside the fork:
//! `..` at `/` stays at `/`, and an absolute symlink target such as `/etc/passwd` means the
//! fork's own `/etc/passwd`.
//!
//! Layering (overlay forks): a path is looked up in the session's upper layer first; if the
//! upper layer doesn't have it and no whiteout hides it or an ancestor, in the base. The
//! session is the only writer of its fork, so the upper index is kept in memory for the whole
//! session and base metadata is cached indefinitely (the base is immutable).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use forkbox_commands::{
    DirEntry, FileKind, FileSystem, FsError, FsResult, Metadata, WriteHandle, WriteMode,
};
use futures::StreamExt;

use crate::fork::{ForkView, Layer};
use crate::storage::{Attrs, ObjectKind, ObjectMeta, ObjectWriter, StorageError};

/// Symlinks followed while resolving one path before giving up with ELOOP, as Linux does.
const MAX_SYMLINK_HOPS: usize = 40;
/// Longest name of one path component, as on Linux.
const NAME_MAX: usize = 255;
/// Longest path accepted, as on Linux.
const PATH_MAX: usize = 4096;
/// Largest single ranged read served at once; callers loop for more.
const MAX_READ: usize = 4 * 1024 * 1024;
/// Chunk size when the VFS itself copies data (copy-up, rename out of the base).
const COPY_CHUNK: usize = 1024 * 1024;
/// Base metadata requests issued at once while listing a directory.
const LIST_STAT_CONCURRENCY: usize = 32;
/// Entries a directory rename moves at most. A directory rename copies object by object,
/// so it is bounded; a larger tree fails with "Operation not supported" and nothing moved.
pub const MAX_RENAME_ENTRIES: usize = 10_000;

const DEFAULT_FILE_MODE: u32 = 0o644;
const DEFAULT_DIR_MODE: u32 = 0o755;

/// Which layer a node's data lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    Root,
    Upper,
    Base,
}

#[derive(Clone, Debug)]
struct Node {
    kind: FileKind,
    len: u64,
    mode: u32,
    mtime: SystemTime,
    target: Option<String>,
    origin: Origin,
    /// For upper files: false while no object holds the content yet (a file opened with
    /// truncation whose writer has not closed): it reads as empty.
    stored: bool,
}

impl Node {
    fn meta(&self) -> Metadata {
        Metadata {
            kind: self.kind,
            len: self.len,
            mode: self.mode,
            mtime: self.mtime,
        }
    }

    fn from_base(m: ObjectMeta) -> Node {
        let kind = match m.kind {
            ObjectKind::File => FileKind::File,
            ObjectKind::Dir => FileKind::Dir,
            ObjectKind::Symlink => FileKind::Symlink,
        };
        let default_mode = match kind {
            FileKind::Dir => DEFAULT_DIR_MODE,
            FileKind::Symlink => 0o777,
            FileKind::File => DEFAULT_FILE_MODE,
        };
        Node {
            kind,
            len: m.len,
            mode: m.mode.unwrap_or(default_mode),
            mtime: m.mtime.unwrap_or(SystemTime::UNIX_EPOCH),
            target: m.symlink,
            origin: Origin::Base,
            stored: true,
        }
    }
}

#[derive(Default)]
struct State {
    /// Everything the session created or changed, by path relative to the root.
    upper: BTreeMap<String, Node>,
    /// Base paths the session deleted; each hides its subtree.
    whiteouts: BTreeSet<String>,
    /// Base metadata seen so far (`None`: absent).
    base_nodes: HashMap<String, Option<Node>>,
    /// Base directory listings seen so far.
    base_lists: HashMap<String, Vec<String>>,
}

impl State {
    /// True when a whiteout hides `rel` (on it or on an ancestor).
    fn hidden(&self, rel: &str) -> bool {
        if self.whiteouts.is_empty() {
            return false;
        }
        let mut end = rel.len();
        loop {
            if self.whiteouts.contains(&rel[..end]) {
                return true;
            }
            match rel[..end].rfind('/') {
                Some(i) => end = i,
                None => return false,
            }
        }
    }
}

/// A session's filesystem. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct Vfs {
    inner: Arc<Inner>,
}

struct Inner {
    view: ForkView,
    created: SystemTime,
    state: Mutex<State>,
}

fn storage_failure(op: &'static str, rel: &str, e: StorageError) -> FsError {
    if e.is_not_found() {
        return FsError::NotFound;
    }
    tracing::warn!(op, path = rel, error = ?e, "storage request failed");
    FsError::Io
}

fn parent_of(rel: &str) -> &str {
    rel.rfind('/').map(|i| &rel[..i]).unwrap_or("")
}

fn child_of(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

impl Vfs {
    pub fn new(view: ForkView) -> Vfs {
        Vfs {
            inner: Arc::new(Inner {
                view,
                created: SystemTime::now(),
                state: Mutex::new(State::default()),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding this lock is a bug; the state is still consistent enough to
        // keep serving, so recover instead of poisoning the whole session.
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn upper(&self) -> &Layer {
        &self.inner.view.upper
    }

    fn root_node(&self) -> Node {
        Node {
            kind: FileKind::Dir,
            len: 0,
            mode: DEFAULT_DIR_MODE,
            mtime: self.inner.created,
            target: None,
            origin: Origin::Root,
            stored: true,
        }
    }

    /// The node at `rel` (no symlink following).
    async fn lookup(&self, rel: &str) -> FsResult<Option<Node>> {
        if rel.is_empty() {
            return Ok(Some(self.root_node()));
        }
        {
            let st = self.state();
            if let Some(n) = st.upper.get(rel) {
                return Ok(Some(n.clone()));
            }
            if st.hidden(rel) {
                return Ok(None);
            }
            if let Some(n) = st.base_nodes.get(rel) {
                return Ok(n.clone());
            }
            // A cached listing of the parent answers absence without a request.
            if let Some(names) = st.base_lists.get(parent_of(rel)) {
                let name = &rel[rel.rfind('/').map(|i| i + 1).unwrap_or(0)..];
                if names.binary_search_by(|n| n.as_str().cmp(name)).is_err() {
                    return Ok(None);
                }
            }
        }
        self.base_lookup(rel).await
    }

    /// The base's node at `rel`, ignoring the upper layer and whiteouts.
    async fn base_lookup(&self, rel: &str) -> FsResult<Option<Node>> {
        let Some(base) = &self.inner.view.base else {
            return Ok(None);
        };
        if let Some(n) = self.state().base_nodes.get(rel) {
            return Ok(n.clone());
        }
        let meta = base
            .store
            .stat(&base.key(rel))
            .await
            .map_err(|e| storage_failure("stat", rel, e))?;
        let node = meta.map(Node::from_base);
        self.state()
            .base_nodes
            .insert(rel.to_string(), node.clone());
        Ok(node)
    }

    /// True when the base holds `rel` and nothing hides it.
    async fn base_visible(&self, rel: &str) -> FsResult<bool> {
        if self.state().hidden(rel) {
            return Ok(false);
        }
        Ok(self.base_lookup(rel).await?.is_some())
    }

    /// Resolves an absolute path to a root-relative one, following symlinks on the way
    /// (and at the end when `follow`). Returns the path and what is there, if anything;
    /// every ancestor is guaranteed to be an existing directory.
    async fn resolve(&self, path: &str, follow: bool) -> FsResult<(String, Option<Node>)> {
        if path.len() > PATH_MAX {
            return Err(FsError::NameTooLong);
        }
        let dir_required = path.ends_with('/') || path.ends_with("/.") || path.ends_with("/..");
        let follow = follow || dir_required;
        let mut pending: Vec<String> = path.split('/').rev().map(str::to_string).collect();
        let mut stack: Vec<String> = Vec::new();
        let mut hops = 0usize;
        let mut last: Option<Node> = Some(self.root_node());
        while let Some(comp) = pending.pop() {
            match comp.as_str() {
                "" | "." => continue,
                ".." => {
                    stack.pop();
                    last = None;
                    continue;
                }
                _ => {}
            }
            if comp.len() > NAME_MAX {
                return Err(FsError::NameTooLong);
            }
            stack.push(comp);
            let rel = stack.join("/");
            let is_last = pending.iter().all(|p| p.is_empty() || p == ".");
            let node = self.lookup(&rel).await?;
            match node {
                Some(n) if n.kind == FileKind::Symlink && (follow || !is_last) => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(FsError::Loop);
                    }
                    stack.pop();
                    let target = n.target.unwrap_or_default();
                    if target.starts_with('/') {
                        stack.clear();
                    }
                    pending.extend(target.split('/').rev().map(str::to_string));
                    last = None;
                }
                Some(n) if is_last => last = Some(n),
                Some(n) if n.kind == FileKind::Dir => last = Some(n),
                Some(_) => return Err(FsError::NotADirectory),
                None if is_last => last = None,
                None => return Err(FsError::NotFound),
            }
        }
        let rel = stack.join("/");
        // `..` or a symlink may have landed us on a node we haven't looked up yet.
        let node = match last {
            Some(n) => Some(n),
            None => self.lookup(&rel).await?,
        };
        if dir_required
            && let Some(n) = &node
            && n.kind != FileKind::Dir
        {
            return Err(FsError::NotADirectory);
        }
        Ok((rel, node))
    }

    async fn existing(&self, path: &str, follow: bool) -> FsResult<(String, Node)> {
        match self.resolve(path, follow).await? {
            (rel, Some(n)) => Ok((rel, n)),
            (_, None) => Err(FsError::NotFound),
        }
    }

    /// Names of the base directory `rel`'s children (cached).
    async fn base_children(&self, rel: &str) -> FsResult<Vec<String>> {
        let Some(base) = &self.inner.view.base else {
            return Ok(Vec::new());
        };
        if let Some(names) = self.state().base_lists.get(rel) {
            return Ok(names.clone());
        }
        let key = base.key(rel);
        let listed = base
            .store
            .list(key.trim_end_matches('/'))
            .await
            .map_err(|e| storage_failure("list", rel, e))?;
        let names: Vec<String> = listed.into_iter().map(|(n, _)| n).collect();
        self.state()
            .base_lists
            .insert(rel.to_string(), names.clone());
        Ok(names)
    }

    async fn list_dir(&self, rel: &str) -> FsResult<Vec<DirEntry>> {
        let mut out: BTreeMap<String, Metadata> = BTreeMap::new();
        {
            let st = self.state();
            let prefix = if rel.is_empty() {
                String::new()
            } else {
                format!("{rel}/")
            };
            for (path, node) in st.upper.range(prefix.clone()..) {
                let Some(rest) = path.strip_prefix(&prefix) else {
                    break;
                };
                if !rest.contains('/') && !rest.is_empty() {
                    out.insert(rest.to_string(), node.meta());
                }
            }
        }
        let base_has_dir = rel.is_empty()
            || (self.base_visible(rel).await?
                && self
                    .base_lookup(rel)
                    .await?
                    .is_some_and(|n| n.kind == FileKind::Dir));
        if base_has_dir {
            let names = self.base_children(rel).await?;
            let wanted: Vec<String> = {
                let st = self.state();
                names
                    .into_iter()
                    .filter(|n| !out.contains_key(n) && !st.hidden(&child_of(rel, n)))
                    .collect()
            };
            let metas: Vec<(String, FsResult<Option<Node>>)> = futures::stream::iter(wanted)
                .map(|name| async move {
                    let r = self.base_lookup(&child_of(rel, &name)).await;
                    (name, r)
                })
                .buffer_unordered(LIST_STAT_CONCURRENCY)
                .collect()
                .await;
            for (name, r) in metas {
                if let Some(n) = r? {
                    out.insert(name, n.meta());
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|(name, meta)| DirEntry { name, meta })
            .collect())
    }

    async fn put_whiteout(&self, rel: &str) -> FsResult<()> {
        let Some(wh) = &self.inner.view.whiteouts else {
            return Ok(());
        };
        crate::fork::overlay::put_marker(wh, rel)
            .await
            .map_err(|e| storage_failure("whiteout", rel, e))?;
        self.state().whiteouts.insert(rel.to_string());
        Ok(())
    }

    /// Removes a file, symlink or (empty) directory entry from the fork.
    async fn remove_entry(&self, rel: &str, node: &Node) -> FsResult<()> {
        if node.origin == Origin::Upper {
            let key = self.upper().key(rel);
            let r = if node.kind == FileKind::Dir {
                self.upper().store.delete_dir(&key).await
            } else {
                self.upper().store.delete(&key).await
            };
            r.map_err(|e| storage_failure("delete", rel, e))?;
            self.state().upper.remove(rel);
        }
        if self.base_visible(rel).await? {
            self.put_whiteout(rel).await?;
        }
        Ok(())
    }

    /// Streams the content of `node` (at `rel`) into `w`, at most `limit` bytes.
    async fn copy_content(
        &self,
        rel: &str,
        node: &Node,
        w: &mut ObjectWriter,
        limit: u64,
    ) -> FsResult<u64> {
        let mut off = 0u64;
        let total = node.len.min(limit);
        while off < total {
            let n = ((total - off) as usize).min(COPY_CHUNK);
            let chunk = self.read_node(rel, node, off, n).await?;
            if chunk.is_empty() {
                break;
            }
            off += chunk.len() as u64;
            w.write(chunk)
                .await
                .map_err(|e| storage_failure("write", rel, e))?;
        }
        Ok(off)
    }

    async fn read_node(&self, rel: &str, node: &Node, offset: u64, len: usize) -> FsResult<Bytes> {
        if offset >= node.len || !node.stored {
            return Ok(Bytes::new());
        }
        let len = len.min(MAX_READ).min((node.len - offset) as usize);
        let layer = match node.origin {
            Origin::Upper => self.upper(),
            Origin::Base => match &self.inner.view.base {
                Some(b) => b,
                None => return Err(FsError::Io),
            },
            Origin::Root => return Err(FsError::IsADirectory),
        };
        layer
            .store
            .read(&layer.key(rel), offset, len)
            .await
            .map_err(|e| storage_failure("read", rel, e))
    }

    /// Writes the upper file `rel` from the file `src` (`node`): the first `keep` bytes of
    /// its content, then zeros up to `new_len`.
    #[allow(
        clippy::too_many_arguments,
        reason = "one private helper for copy-up, truncate and rename"
    )]
    async fn rewrite_file(
        &self,
        src: &str,
        node: &Node,
        rel: &str,
        keep: u64,
        new_len: u64,
        mode: u32,
        mtime: SystemTime,
    ) -> FsResult<()> {
        let attrs = Attrs {
            mode: Some(mode),
            mtime: Some(mtime),
            symlink: None,
        };
        let key = self.upper().key(rel);
        let mut w = self
            .upper()
            .store
            .writer(&key, &attrs)
            .await
            .map_err(|e| storage_failure("write", rel, e))?;
        let copied = match self
            .copy_content(src, node, &mut w, keep.min(new_len))
            .await
        {
            Ok(n) => n,
            Err(e) => {
                w.abort().await;
                return Err(e);
            }
        };
        let mut remaining = new_len - copied;
        while remaining > 0 {
            let n = remaining.min(COPY_CHUNK as u64) as usize;
            w.write(Bytes::from(vec![0u8; n]))
                .await
                .map_err(|e| storage_failure("write", rel, e))?;
            remaining -= n as u64;
        }
        w.close()
            .await
            .map_err(|e| storage_failure("close", rel, e))?;
        self.state().upper.insert(
            rel.to_string(),
            Node {
                kind: FileKind::File,
                len: new_len,
                mode,
                mtime,
                target: None,
                origin: Origin::Upper,
                stored: true,
            },
        );
        Ok(())
    }

    /// Makes `rel` an upper node so its attributes can change (copy-up for base files).
    async fn copy_up(&self, rel: &str, node: &Node) -> FsResult<Node> {
        if node.origin != Origin::Base {
            return Ok(node.clone());
        }
        match node.kind {
            FileKind::File => {
                self.rewrite_file(rel, node, rel, node.len, node.len, node.mode, node.mtime)
                    .await?
            }
            FileKind::Dir => {
                self.upper()
                    .store
                    .create_dir(&self.upper().key(rel))
                    .await
                    .map_err(|e| storage_failure("mkdir", rel, e))?;
                let mut up = node.clone();
                up.origin = Origin::Upper;
                self.state().upper.insert(rel.to_string(), up);
            }
            FileKind::Symlink => {
                let target = node.target.clone().unwrap_or_default();
                self.put_symlink(rel, &target).await?;
            }
        }
        self.state().upper.get(rel).cloned().ok_or(FsError::Io)
    }

    async fn put_symlink(&self, rel: &str, target: &str) -> FsResult<()> {
        let now = SystemTime::now();
        let attrs = Attrs {
            mode: Some(0o777),
            mtime: Some(now),
            symlink: Some(target.to_string()),
        };
        self.upper()
            .store
            .put(
                &self.upper().key(rel),
                Bytes::copy_from_slice(target.as_bytes()),
                &attrs,
            )
            .await
            .map_err(|e| storage_failure("symlink", rel, e))?;
        self.state().upper.insert(
            rel.to_string(),
            Node {
                kind: FileKind::Symlink,
                len: target.len() as u64,
                mode: 0o777,
                mtime: now,
                target: Some(target.to_string()),
                origin: Origin::Upper,
                stored: true,
            },
        );
        Ok(())
    }

    /// Moves a non-directory entry.
    async fn move_entry(&self, from: &str, node: &Node, to: &str) -> FsResult<()> {
        match (node.kind, node.origin) {
            (FileKind::Symlink, _) => {
                let target = node.target.clone().unwrap_or_default();
                self.put_symlink(to, &target).await?;
            }
            (_, Origin::Upper) if node.stored => {
                self.upper()
                    .store
                    .rename(&self.upper().key(from), &self.upper().key(to))
                    .await
                    .map_err(|e| storage_failure("rename", from, e))?;
                let mut moved = node.clone();
                moved.origin = Origin::Upper;
                let mut st = self.state();
                st.upper.remove(from);
                st.upper.insert(to.to_string(), moved);
            }
            _ => {
                self.rewrite_file(from, node, to, node.len, node.len, node.mode, node.mtime)
                    .await?
            }
        }
        // The source is gone now from the upper layer (or never was there).
        if node.origin == Origin::Upper {
            let still_there = self.state().upper.contains_key(from);
            if still_there {
                self.remove_entry(from, node).await?;
                return Ok(());
            }
        }
        if self.base_visible(from).await? {
            self.put_whiteout(from).await?;
        }
        Ok(())
    }

    /// Counts entries below `rel`, failing past [`MAX_RENAME_ENTRIES`].
    async fn count_tree(&self, rel: &str, budget: &mut usize) -> FsResult<()> {
        for e in self.list_dir(rel).await? {
            if *budget == 0 {
                tracing::info!(path = rel, "directory rename refused: tree too large");
                return Err(FsError::Unsupported);
            }
            *budget -= 1;
            if e.meta.kind == FileKind::Dir {
                Box::pin(self.count_tree(&child_of(rel, &e.name), budget)).await?;
            }
        }
        Ok(())
    }

    async fn move_tree(&self, from: &str, node: &Node, to: &str) -> FsResult<()> {
        self.make_dir(to, node.mode).await?;
        for e in self.list_dir(from).await? {
            let src = child_of(from, &e.name);
            let dst = child_of(to, &e.name);
            let child = self.lookup(&src).await?.ok_or(FsError::NotFound)?;
            if child.kind == FileKind::Dir {
                Box::pin(self.move_tree(&src, &child, &dst)).await?;
            } else {
                self.move_entry(&src, &child, &dst).await?;
            }
        }
        self.remove_entry(from, node).await
    }

    async fn make_dir(&self, rel: &str, mode: u32) -> FsResult<()> {
        self.upper()
            .store
            .create_dir(&self.upper().key(rel))
            .await
            .map_err(|e| storage_failure("mkdir", rel, e))?;
        self.state().upper.insert(
            rel.to_string(),
            Node {
                kind: FileKind::Dir,
                len: 0,
                mode,
                mtime: SystemTime::now(),
                target: None,
                origin: Origin::Upper,
                stored: true,
            },
        );
        Ok(())
    }

    async fn set_attrs(&self, path: &str, f: impl FnOnce(&mut Node)) -> FsResult<()> {
        let (rel, node) = self.existing(path, true).await?;
        if node.origin == Origin::Root {
            return Err(FsError::PermissionDenied);
        }
        let mut up = self.copy_up(&rel, &node).await?;
        f(&mut up);
        self.state().upper.insert(rel, up);
        Ok(())
    }
}

#[async_trait]
impl FileSystem for Vfs {
    async fn stat(&self, path: &str) -> FsResult<Metadata> {
        Ok(self.existing(path, true).await?.1.meta())
    }

    async fn lstat(&self, path: &str) -> FsResult<Metadata> {
        Ok(self.existing(path, false).await?.1.meta())
    }

    async fn read_at(&self, path: &str, offset: u64, len: usize) -> FsResult<Bytes> {
        let (rel, node) = self.existing(path, true).await?;
        if node.kind == FileKind::Dir {
            return Err(FsError::IsADirectory);
        }
        self.read_node(&rel, &node, offset, len).await
    }

    async fn open_write(&self, path: &str, mode: WriteMode) -> FsResult<Box<dyn WriteHandle>> {
        let (rel, node) = self.resolve(path, true).await?;
        if rel.is_empty() {
            return Err(FsError::IsADirectory);
        }
        if let Some(n) = &node {
            if n.kind == FileKind::Dir {
                return Err(FsError::IsADirectory);
            }
            if mode == WriteMode::CreateNew {
                return Err(FsError::AlreadyExists);
            }
        }
        let file_mode = node.as_ref().map(|n| n.mode).unwrap_or(DEFAULT_FILE_MODE);
        let attrs = Attrs {
            mode: Some(file_mode),
            mtime: None,
            symlink: None,
        };
        let key = self.upper().key(&rel);
        let mut writer = self
            .upper()
            .store
            .writer(&key, &attrs)
            .await
            .map_err(|e| storage_failure("open", &rel, e))?;
        let mut written = 0;
        match (&node, mode) {
            (Some(n), WriteMode::Append) => {
                match self.copy_content(&rel, n, &mut writer, u64::MAX).await {
                    Ok(copied) => written = copied,
                    Err(e) => {
                        writer.abort().await;
                        return Err(e);
                    }
                }
            }
            _ => {
                // Truncation is visible at once, as with O_TRUNC: the file reads as empty
                // until the writer closes.
                self.state().upper.insert(
                    rel.clone(),
                    Node {
                        kind: FileKind::File,
                        len: 0,
                        mode: file_mode,
                        mtime: SystemTime::now(),
                        target: None,
                        origin: Origin::Upper,
                        stored: false,
                    },
                );
            }
        }
        Ok(Box::new(VfsWriter {
            vfs: self.clone(),
            rel,
            writer: Some(writer),
            written,
            mode: file_mode,
        }))
    }

    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        let (rel, node) = self.existing(path, true).await?;
        if node.kind != FileKind::Dir {
            return Err(FsError::NotADirectory);
        }
        self.list_dir(&rel).await
    }

    async fn mkdir(&self, path: &str) -> FsResult<()> {
        let (rel, node) = self.resolve(path.trim_end_matches('/'), false).await?;
        if node.is_some() || rel.is_empty() {
            return Err(FsError::AlreadyExists);
        }
        self.make_dir(&rel, DEFAULT_DIR_MODE).await
    }

    async fn rmdir(&self, path: &str) -> FsResult<()> {
        let (rel, node) = self.existing(path.trim_end_matches('/'), false).await?;
        if rel.is_empty() {
            return Err(FsError::PermissionDenied);
        }
        if node.kind != FileKind::Dir {
            return Err(FsError::NotADirectory);
        }
        if !self.list_dir(&rel).await?.is_empty() {
            return Err(FsError::NotEmpty);
        }
        self.remove_entry(&rel, &node).await
    }

    async fn unlink(&self, path: &str) -> FsResult<()> {
        let (rel, node) = self.existing(path, false).await?;
        if node.kind == FileKind::Dir {
            return Err(FsError::IsADirectory);
        }
        self.remove_entry(&rel, &node).await
    }

    async fn rename(&self, from: &str, to: &str) -> FsResult<()> {
        let (src, node) = self.existing(from.trim_end_matches('/'), false).await?;
        let (dst, existing) = self.resolve(to.trim_end_matches('/'), false).await?;
        if src == dst {
            return Ok(());
        }
        if src.is_empty() || dst.is_empty() || dst.starts_with(&format!("{src}/")) {
            return Err(FsError::InvalidArgument);
        }
        if node.kind == FileKind::Dir {
            if let Some(e) = &existing {
                if e.kind != FileKind::Dir {
                    return Err(FsError::NotADirectory);
                }
                if !self.list_dir(&dst).await?.is_empty() {
                    return Err(FsError::NotEmpty);
                }
                self.remove_entry(&dst, e).await?;
            }
            let mut budget = MAX_RENAME_ENTRIES;
            self.count_tree(&src, &mut budget).await?;
            return self.move_tree(&src, &node, &dst).await;
        }
        if existing.as_ref().is_some_and(|e| e.kind == FileKind::Dir) {
            return Err(FsError::IsADirectory);
        }
        self.move_entry(&src, &node, &dst).await
    }

    async fn symlink(&self, target: &str, link: &str) -> FsResult<()> {
        let (rel, node) = self.resolve(link, false).await?;
        if node.is_some() || rel.is_empty() {
            return Err(FsError::AlreadyExists);
        }
        if target.is_empty() {
            return Err(FsError::NotFound);
        }
        self.put_symlink(&rel, target).await
    }

    async fn readlink(&self, path: &str) -> FsResult<String> {
        let (_, node) = self.existing(path, false).await?;
        match (node.kind, node.target) {
            (FileKind::Symlink, Some(t)) => Ok(t),
            _ => Err(FsError::InvalidArgument),
        }
    }

    async fn chmod(&self, path: &str, mode: u32) -> FsResult<()> {
        self.set_attrs(path, |n| n.mode = mode & 0o7777).await
    }

    async fn set_mtime(&self, path: &str, mtime: SystemTime) -> FsResult<()> {
        self.set_attrs(path, |n| n.mtime = mtime).await
    }

    async fn truncate(&self, path: &str, len: u64) -> FsResult<()> {
        let (rel, node) = self.existing(path, true).await?;
        if node.kind == FileKind::Dir {
            return Err(FsError::IsADirectory);
        }
        self.rewrite_file(
            &rel,
            &node,
            &rel,
            node.len,
            len,
            node.mode,
            SystemTime::now(),
        )
        .await
    }

    async fn canonicalize(&self, path: &str) -> FsResult<String> {
        let (rel, _) = self.existing(path, true).await?;
        Ok(format!("/{rel}"))
    }
}

/// A file being written through the VFS. The content becomes visible, durable and counted
/// only when `close` succeeds.
struct VfsWriter {
    vfs: Vfs,
    rel: String,
    writer: Option<ObjectWriter>,
    written: u64,
    mode: u32,
}

#[async_trait]
impl WriteHandle for VfsWriter {
    async fn write(&mut self, data: &[u8]) -> FsResult<()> {
        let w = self.writer.as_mut().ok_or(FsError::InvalidArgument)?;
        w.write(Bytes::copy_from_slice(data))
            .await
            .map_err(|e| storage_failure("write", &self.rel, e))?;
        self.written += data.len() as u64;
        Ok(())
    }

    async fn close(mut self: Box<Self>) -> FsResult<()> {
        let w = self.writer.take().ok_or(FsError::InvalidArgument)?;
        w.close()
            .await
            .map_err(|e| storage_failure("close", &self.rel, e))?;
        self.vfs.state().upper.insert(
            self.rel.clone(),
            Node {
                kind: FileKind::File,
                len: self.written,
                mode: self.mode,
                mtime: SystemTime::now(),
                target: None,
                origin: Origin::Upper,
                stored: true,
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests;

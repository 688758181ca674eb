//! The session filesystem: one `Vfs` per session over its fork.
//!
//! The `Vfs` is the only filesystem API the shell, the commands (through the
//! [`forkbox_commands::FileSystem`] port it implements) and, later, the WASI host and SFTP
//! ever see. Paths are absolute inside the session root; every `.`/`..` and every symlink is
//! resolved here, component by component, by the port's one resolver
//! ([`forkbox_commands::fs::resolve`], which the in-memory test filesystem uses too), so
//! no path can name anything outside the fork:
//! `..` at `/` stays at `/`, and an absolute symlink target such as `/etc/passwd` means the
//! fork's own `/etc/passwd`.
//!
//! Layering (overlay forks): a path is looked up in the session's upper layer first; if the
//! upper layer doesn't have it and no whiteout hides it or an ancestor, in the base. The
//! session is the only writer of its fork, so the upper index is kept in memory for the whole
//! session and base metadata is cached indefinitely (the base is immutable).
//!
//! Quotas: a fork may hold at most [`Quota::bytes`] bytes (the sizes of the files and
//! symlinks in its upper layer: what the session created or changed; base files it never
//! touched cost nothing) and [`Quota::objects`] objects (files, symlinks, directory markers
//! and whiteouts in the layer). Both are counted exactly from the in-memory index. Room is
//! reserved before data is stored — by a writer as each chunk comes, by a copy before it
//! starts — so a runaway writer stops at the quota, concurrent writers cannot jointly
//! overrun it, and the store never holds more than the quota. Going over fails with
//! [`FsError::NoSpace`].
//!
//! # Layout
//!
//! - this file: [`Vfs`]: lookup through the layers, path resolution, copy-up, renames.
//! - `state`: the in-memory index of the fork's nodes and the quota usage they add up to.
//! - `held`: room reserved against the quota for one operation in flight.
//! - `port`: the [`FileSystem`] port over [`Vfs`].
//! - `writer`: a file being written (staged, charged as data comes, published on close).
//! - `handle`: files open through [`FileSystem::open`]: one shared open file per inode,
//!   staged once written, that follows its inode through renames and outlives unlinks.
//! - [`mounts`]: the mount table (the fork at `/`, devices at `/dev`, system files).
//! - [`system`]: read-only system files (a WASI tool's stdlib) mounted in every session.
//! - [`readahead`]: sequential read-ahead for remote stores.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use forkbox_commands::fs::resolve::{Follow, Lookup};
use forkbox_commands::fs::{Usage, VfsPath};
use forkbox_commands::{
    DirEntry, FileKind, FileSystem, FsError, FsResult, Metadata, WriteHandle, WriteMode,
};
use futures::StreamExt;

use crate::storage::layer::{ForkView, Layer, WalkError};
use crate::storage::{Attrs, ObjectKind, ObjectMeta, Staged, StorageError};

pub mod mounts;
pub mod readahead;
pub mod system;

/// Largest single ranged read served at once; callers loop for more.
const MAX_READ: usize = 4 * 1024 * 1024;
/// Chunk size when the VFS itself copies data (copy-up, rename out of the base).
const COPY_CHUNK: usize = 1024 * 1024;
/// Base metadata requests issued at once while listing a directory.
const LIST_STAT_CONCURRENCY: usize = 32;
/// Entries a directory rename moves at most. A directory rename copies object by object,
/// so it is bounded; a larger tree fails with "Operation not supported" and nothing moved.
pub const MAX_RENAME_ENTRIES: usize = 10_000;

pub use forkbox_commands::fs::{DEFAULT_QUOTA_BYTES, DEFAULT_QUOTA_OBJECTS, Quota};

const DEFAULT_FILE_MODE: u32 = 0o644;
const DEFAULT_DIR_MODE: u32 = 0o755;
/// Root-relative path of the session's temporary directory ([`Vfs::with_tmp`]).
const TMP_DIR: &str = "tmp";
/// `/tmp`'s mode: everyone may write, only an entry's owner may remove it (sticky).
const TMP_MODE: u32 = 0o1777;

mod handle;
mod held;
mod port;
mod state;
mod writer;

use held::Held;
use state::{Node, Origin, State};
use writer::VfsWriter;

/// A session's filesystem. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct Vfs {
    inner: Arc<Inner>,
}

struct Inner {
    view: ForkView,
    created: SystemTime,
    quota: Quota,
    state: Mutex<State>,
}

fn storage_failure(op: &'static str, rel: &str, e: StorageError) -> FsError {
    if e.is_not_found() {
        return FsError::NotFound;
    }
    tracing::warn!(op, path = rel, error = ?e, "storage request failed");
    FsError::Io
}

/// A path of the `&str` calls as a [`VfsPath`]. Those calls have always taken a
/// relative or empty path from the root, and keep doing so.
fn port_path(path: &str) -> FsResult<VfsPath> {
    if path.starts_with('/') {
        VfsPath::new(path)
    } else {
        VfsPath::new(&format!("/{path}"))
    }
}

fn parent_of(rel: &str) -> &str {
    rel.rfind('/').map(|i| &rel[..i]).unwrap_or("")
}

/// The last component of a root-relative path.
fn name_of(rel: &str) -> &str {
    &rel[rel.rfind('/').map(|i| i + 1).unwrap_or(0)..]
}

fn child_of(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

impl Vfs {
    /// A filesystem over `view` with the default quota ([`Quota::default`]).
    pub fn new(view: ForkView) -> Vfs {
        Vfs::with_quota(view, Quota::default())
    }

    /// A filesystem over `view` that holds at most `quota`.
    pub fn with_quota(view: ForkView, quota: Quota) -> Vfs {
        Vfs {
            inner: Arc::new(Inner {
                view,
                created: SystemTime::now(),
                quota,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// A filesystem over `view` whose layer already holds objects (a fork started from a
    /// snapshot): lists the upper layer and the whiteouts, level by level, and fills the
    /// index from them, so lookups, listings and the quota count them exactly as if the
    /// session had written them. A directory of the layer is indexed only where the base
    /// shows no directory (one the session made); elsewhere it is just where files of the
    /// layer sit. Fails with `NoSpace` when the layer holds more than `quota` allows and
    /// `Io` when storage fails. An in-place view (the base is the fork, no whiteouts) has
    /// no separate layer: it opens like [`Vfs::with_quota`].
    pub async fn load(view: ForkView, quota: Quota) -> FsResult<Vfs> {
        let in_place = view.whiteouts.is_none() && view.base.is_some();
        let vfs = Vfs::with_quota(view, quota);
        if in_place {
            return Ok(vfs);
        }
        let limit = quota
            .objects
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .unwrap_or(crate::storage::layer::MAX_COPY_OBJECTS);
        let walk = |layer: Layer| async move {
            crate::storage::layer::walk(&layer.store, &layer.root_key(), limit)
                .await
                .map_err(|e| match e {
                    WalkError::Storage(e) => storage_failure("load", "", e),
                    WalkError::TooMany(_) => FsError::NoSpace,
                })
        };
        if let Some(wh) = vfs.inner.view.whiteouts.clone() {
            let found = walk(wh).await?;
            let mut st = vfs.state();
            for e in found {
                if e.meta.kind != ObjectKind::Dir {
                    st.whiteouts.insert(e.rel);
                }
            }
        }
        let found = walk(vfs.upper().clone()).await?;
        let nodes: Vec<FsResult<Option<(String, Node)>>> = futures::stream::iter(found)
            .map(|e| {
                let vfs = vfs.clone();
                async move {
                    let mut node = Node::from_base(e.meta);
                    node.origin = Origin::Upper;
                    if node.kind == FileKind::Dir
                        && vfs.base_visible(&e.rel).await?
                        && vfs
                            .base_lookup(&e.rel)
                            .await?
                            .is_some_and(|n| n.kind == FileKind::Dir)
                    {
                        return Ok(None);
                    }
                    Ok::<_, FsError>(Some((e.rel, node)))
                }
            })
            .buffered(LIST_STAT_CONCURRENCY)
            .collect()
            .await;
        {
            let mut st = vfs.state();
            for found in nodes {
                if let Some((rel, node)) = found? {
                    st.put_upper(rel, node);
                }
            }
            let over = |used: u64, limit: Option<u64>| limit.is_some_and(|l| used > l);
            if over(st.upper_bytes, quota.bytes) || over(st.objects(), quota.objects) {
                return Err(FsError::NoSpace);
            }
        }
        Ok(vfs)
    }

    /// Gives the fork its `/tmp` (the session's temporary directory, mode 1777) unless the
    /// fork already shows an entry there in its own layer. It costs no store request: the
    /// directory lives in the index only, like a directory implied by the files under it,
    /// until the session writes there (the files' keys imply it) or removes it. It is not
    /// counted against the object quota (see [`State::objects`]). A base that holds its
    /// own `tmp` keeps its contents visible; the session sees this directory's mode.
    pub fn with_tmp(self) -> Vfs {
        {
            let mut st = self.state();
            if !st.upper.contains_key(TMP_DIR) {
                st.put_upper(TMP_DIR.to_string(), self.tmp_node());
            }
        }
        self
    }

    fn tmp_node(&self) -> Node {
        Node {
            kind: FileKind::Dir,
            len: 0,
            mode: TMP_MODE,
            mtime: self.inner.created,
            target: None,
            origin: Origin::Upper,
            // No marker object holds it: see `State::objects`.
            stored: false,
        }
    }

    /// Reserves room for an operation that will store `bytes` and `objects` more.
    fn hold(&self, bytes: u64, objects: u64) -> FsResult<Held> {
        let mut held = Held::none(self);
        held.grow(bytes, objects)?;
        Ok(held)
    }

    /// Reserves what replacing the upper entry at `rel` by `bytes` of content costs:
    /// the growth over what is there now, and an object if nothing is.
    fn hold_replacing(&self, rel: &str, bytes: u64) -> FsResult<Held> {
        let (cost, new_object) = {
            let st = self.state();
            (st.upper_cost(rel), !st.upper.contains_key(rel))
        };
        self.hold(bytes.saturating_sub(cost), u64::from(new_object))
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
                let name = name_of(rel);
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
    /// (and at the end when `follow`), with the port's one resolver. Returns the path and
    /// what is there, if anything; every ancestor is guaranteed to be an existing
    /// directory.
    async fn resolve(&self, path: &str, follow: bool) -> FsResult<(String, Option<Node>)> {
        let path = port_path(path)?;
        let follow = if follow { Follow::Yes } else { Follow::No };
        let r = forkbox_commands::fs::resolve::resolve(&Tree(self), &path, follow).await?;
        Ok((r.rel, r.node))
    }

    /// The root-relative path of the directory `path` names (following symlinks).
    async fn existing_dir(&self, path: &str) -> FsResult<String> {
        let (rel, node) = self.existing(path, true).await?;
        if node.kind != FileKind::Dir {
            return Err(FsError::NotADirectory);
        }
        Ok(rel)
    }

    async fn existing(&self, path: &str, follow: bool) -> FsResult<(String, Node)> {
        match self.resolve(path, follow).await? {
            (rel, Some(n)) => Ok((rel, n)),
            (_, None) => Err(FsError::NotFound),
        }
    }

    /// Names of the base directory `rel`'s children (cached). Where the listing carries
    /// the children's metadata (a local store), it fills the base metadata cache too, so
    /// listing or walking a directory costs one request, not one more per child.
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
            .list_entries(key.trim_end_matches('/'))
            .await
            .map_err(|e| storage_failure("list", rel, e))?;
        let mut st = self.state();
        let mut names = Vec::with_capacity(listed.len());
        for entry in listed {
            if let Some(meta) = entry.meta {
                // What is cached already stays (it may record a base path deleted since).
                st.base_nodes
                    .entry(child_of(rel, &entry.name))
                    .or_insert_with(|| Some(Node::from_base(meta)));
            }
            names.push(entry.name);
        }
        st.base_lists.insert(rel.to_string(), names.clone());
        Ok(names)
    }

    /// The children of directory `rel` the session's layer holds.
    fn upper_children(&self, rel: &str) -> BTreeMap<String, Node> {
        let mut out = BTreeMap::new();
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
                out.insert(rest.to_string(), node.clone());
            }
        }
        out
    }

    /// Whether the base has directory `rel` and nothing hides it (its children show).
    async fn base_has_dir(&self, rel: &str) -> FsResult<bool> {
        Ok(rel.is_empty()
            || (self.base_visible(rel).await?
                && self
                    .base_lookup(rel)
                    .await?
                    .is_some_and(|n| n.kind == FileKind::Dir)))
    }

    /// Names and kinds of directory `rel`'s children, as [`Vfs::list_dir`] lists them:
    /// where the base store lists kinds (a local store), without reading the metadata of
    /// base children not cached yet (`find -name` over a big tree reads directories only).
    async fn list_kinds(&self, rel: &str) -> FsResult<Vec<(String, FileKind)>> {
        let base = match &self.inner.view.base {
            Some(base) if !base.store.lists_kinds() => {
                let entries = self.list_dir(rel).await?;
                return Ok(entries.into_iter().map(|e| (e.name, e.meta.kind)).collect());
            }
            base => base,
        };
        let mut out: BTreeMap<String, FileKind> = self
            .upper_children(rel)
            .into_iter()
            .map(|(name, node)| (name, node.kind))
            .collect();
        if let Some(base) = base
            && self.base_has_dir(rel).await?
        {
            let key = base.key(rel);
            let listed = base
                .store
                .list_kinds(key.trim_end_matches('/'))
                .await
                .map_err(|e| storage_failure("list", rel, e))?
                .unwrap_or_default();
            let st = self.state();
            for (name, kind) in listed {
                let child = child_of(rel, &name);
                if out.contains_key(&name) || st.hidden(&child) {
                    continue;
                }
                match st.base_nodes.get(&child) {
                    Some(Some(n)) => {
                        out.insert(name, n.kind);
                    }
                    // Known to be gone from the base.
                    Some(None) => {}
                    None => {
                        out.insert(name, Node::kind_of_base(kind));
                    }
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    async fn list_dir(&self, rel: &str) -> FsResult<Vec<DirEntry>> {
        let mut out = self.upper_children(rel);
        if self.base_has_dir(rel).await? {
            let names = self.base_children(rel).await?;
            // Children whose metadata is cached cost nothing; the others are looked up.
            let mut wanted: Vec<String> = Vec::new();
            {
                let st = self.state();
                for name in names {
                    let child = child_of(rel, &name);
                    if out.contains_key(&name) || st.hidden(&child) {
                        continue;
                    }
                    match st.base_nodes.get(&child) {
                        Some(Some(n)) => {
                            out.insert(name, n.clone());
                        }
                        Some(None) => {}
                        None => wanted.push(name),
                    }
                }
            }
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
                    out.insert(name, n);
                }
            }
        }
        let mut st = self.state();
        Ok(out
            .into_iter()
            .map(|(name, node)| {
                let ino = st.ino(&child_of(rel, &name));
                DirEntry {
                    name,
                    meta: node.meta(ino),
                }
            })
            .collect())
    }

    async fn put_whiteout(&self, rel: &str) -> FsResult<()> {
        let Some(wh) = &self.inner.view.whiteouts else {
            return self.delete_in_place(rel).await;
        };
        let new_object = !self.state().whiteouts.contains(rel);
        let held = self.hold(0, u64::from(new_object))?;
        crate::storage::layer::put_marker(wh, rel)
            .await
            .map_err(|e| storage_failure("whiteout", rel, e))?;
        held.land(|st| {
            st.whiteouts.insert(rel.to_string());
        });
        Ok(())
    }

    /// Deletes a base path where the base is the fork itself (a Tigris bucket fork: no
    /// whiteouts, the session may change its own copy of the base in place).
    async fn delete_in_place(&self, rel: &str) -> FsResult<()> {
        let Some(base) = &self.inner.view.base else {
            return Ok(());
        };
        let is_dir = self
            .base_lookup(rel)
            .await?
            .is_some_and(|n| n.kind == FileKind::Dir);
        let key = base.key(rel);
        let r = if is_dir {
            base.store.delete_dir(&key).await
        } else {
            base.store.delete(&key).await
        };
        r.map_err(|e| storage_failure("delete", rel, e))?;
        self.state().forget_base(rel);
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
            self.state().take_upper(rel);
        }
        if self.base_visible(rel).await? {
            self.put_whiteout(rel).await?;
        }
        self.state().forget_ino(rel);
        Ok(())
    }

    /// Copies the content of `node` (at `rel`) to the end of `w`, at most `limit` bytes.
    async fn copy_content(
        &self,
        rel: &str,
        node: &Node,
        w: &mut Staged,
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
            let at = w.len();
            w.write_at(at, &chunk)
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
        if !layer.store.is_remote() {
            // A local or memory read is no request: nothing to save by reading ahead.
            return layer
                .store
                .read(&layer.key(rel), offset, len)
                .await
                .map_err(|e| storage_failure("read", rel, e));
        }
        let (store, key, path) = (layer.store.clone(), layer.key(rel), rel.to_string());
        let fetcher: readahead::Fetcher = Arc::new(move |at, n| {
            let (store, key, path) = (store.clone(), key.clone(), path.clone());
            Box::pin(async move {
                store
                    .read(&key, at, n)
                    .await
                    .map_err(|e| storage_failure("read", &path, e))
            })
        });
        readahead::read(self, &fetcher, node.origin, rel, node.len, offset, len).await
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
        let held = self.hold_replacing(rel, new_len)?;
        let key = self.upper().key(rel);
        let mut w = self
            .upper()
            .store
            .stage(&key, &attrs)
            .await
            .map_err(|e| storage_failure("write", rel, e))?;
        let filled = match self
            .copy_content(src, node, &mut w, keep.min(new_len))
            .await
        {
            Ok(_) => w
                .set_len(new_len)
                .await
                .map_err(|e| storage_failure("write", rel, e)),
            Err(e) => Err(e),
        };
        if let Err(e) = filled {
            w.abort().await;
            return Err(e);
        }
        w.close()
            .await
            .map_err(|e| storage_failure("close", rel, e))?;
        held.land(|st| {
            st.put_upper(
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
            )
        });
        Ok(())
    }

    /// Makes `rel` an upper node so its attributes can change (copy-up for base files).
    async fn copy_up(&self, rel: &str, node: &Node) -> FsResult<Node> {
        if node.origin != Origin::Base {
            return Ok(node.clone());
        }
        match node.kind {
            // A fork never holds devices; they live in the mount table.
            FileKind::File | FileKind::CharDevice => {
                self.rewrite_file(rel, node, rel, node.len, node.len, node.mode, node.mtime)
                    .await?
            }
            FileKind::Dir => {
                let held = self.hold_replacing(rel, 0)?;
                self.upper()
                    .store
                    .create_dir(&self.upper().key(rel))
                    .await
                    .map_err(|e| storage_failure("mkdir", rel, e))?;
                let mut up = node.clone();
                up.origin = Origin::Upper;
                held.land(|st| st.put_upper(rel.to_string(), up));
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
        let held = self.hold_replacing(rel, target.len() as u64)?;
        self.upper()
            .store
            .put(
                &self.upper().key(rel),
                Bytes::copy_from_slice(target.as_bytes()),
                &attrs,
            )
            .await
            .map_err(|e| storage_failure("symlink", rel, e))?;
        held.land(|st| {
            st.put_upper(
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
            )
        });
        Ok(())
    }

    /// Renames the object of `node` (stored in the upper layer's store) from `from` to `to`
    /// in the store; the node as it now is, in the upper layer. The index is the caller's.
    async fn rename_stored(&self, from: &str, node: &Node, to: &str) -> FsResult<Node> {
        let upper = self.upper();
        upper
            .store
            .rename(&upper.key(from), &upper.key(to))
            .await
            .map_err(|e| storage_failure("rename", from, e))?;
        let mut moved = node.clone();
        moved.origin = Origin::Upper;
        Ok(moved)
    }

    /// Moves a non-directory entry.
    async fn move_entry(&self, from: &str, node: &Node, to: &str) -> FsResult<()> {
        let in_place = self.inner.view.whiteouts.is_none() && self.inner.view.base.is_some();
        if in_place && node.origin == Origin::Base && node.kind != FileKind::Symlink {
            // The base is the fork itself: the store renames the object (one request on
            // Tigris), and the base path is gone.
            let held = self.hold_replacing(to, node.len)?;
            let moved = self.rename_stored(from, node, to).await?;
            held.land(|st| {
                st.put_upper(to.to_string(), moved);
                st.forget_base(from);
            });
            return Ok(());
        }
        match (node.kind, node.origin) {
            (FileKind::Symlink, _) => {
                let target = node.target.clone().unwrap_or_default();
                self.put_symlink(to, &target).await?;
            }
            (_, Origin::Upper) if node.stored => {
                let moved = self.rename_stored(from, node, to).await?;
                let mut st = self.state();
                st.take_upper(from);
                st.put_upper(to.to_string(), moved);
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
        let held = self.hold_replacing(rel, 0)?;
        self.upper()
            .store
            .create_dir(&self.upper().key(rel))
            .await
            .map_err(|e| storage_failure("mkdir", rel, e))?;
        held.land(|st| {
            st.put_upper(
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
            )
        });
        Ok(())
    }

    async fn set_attrs(&self, path: &str, f: impl FnOnce(&mut Node)) -> FsResult<()> {
        let (rel, node) = self.existing(path, true).await?;
        if node.origin == Origin::Root {
            return Err(FsError::PermissionDenied);
        }
        self.flush_open(&rel).await?;
        let node = self.lookup(&rel).await?.ok_or(FsError::NotFound)?;
        let mut up = self.copy_up(&rel, &node).await?;
        f(&mut up);
        // Files and symlinks carry their attributes as object metadata, so a later reader
        // of the fork (another tool, a snapshot) sees them too; directory markers don't.
        if up.kind != FileKind::Dir && up.stored {
            let attrs = Attrs {
                mode: Some(up.mode),
                mtime: Some(up.mtime),
                symlink: up.target.clone(),
            };
            self.upper()
                .store
                .set_attrs(&self.upper().key(&rel), &attrs)
                .await
                .map_err(|e| storage_failure("setattr", &rel, e))?;
        }
        self.state().put_upper(rel, up);
        Ok(())
    }
}

/// The fork's lookup, for the port's resolver.
struct Tree<'a>(&'a Vfs);

#[async_trait]
impl Lookup for Tree<'_> {
    type Node = Node;
    fn root(&self) -> Node {
        self.0.root_node()
    }
    async fn lookup(&self, rel: &str) -> FsResult<Option<Node>> {
        self.0.lookup(rel).await
    }
}

impl readahead::Table for Vfs {
    fn with<R>(&self, f: impl FnOnce(&mut readahead::Streams) -> R) -> R {
        f(&mut self.state().reads)
    }
}

#[cfg(test)]
mod tests;

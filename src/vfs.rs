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
//!
//! Quotas: a fork may hold at most [`Quota::bytes`] bytes (the sizes of the files and
//! symlinks in its upper layer: what the session created or changed; base files it never
//! touched cost nothing) and [`Quota::objects`] objects (files, symlinks, directory markers
//! and whiteouts in the layer). Both are counted exactly from the in-memory index. Room is
//! reserved before data is stored — by a writer as each chunk comes, by a copy before it
//! starts — so a runaway writer stops at the quota, concurrent writers cannot jointly
//! overrun it, and the store never holds more than the quota. Going over fails with
//! [`FsError::NoSpace`].

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use forkbox_commands::fs::Usage;
use forkbox_commands::{
    DirEntry, FileKind, FileSystem, FsError, FsResult, Metadata, WriteHandle, WriteMode,
};
use futures::StreamExt;

use crate::storage::layer::{ForkView, Layer, WalkError};
use crate::storage::{Attrs, ObjectKind, ObjectMeta, Staged, StorageError};

pub mod mounts;
pub mod readahead;

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

/// Bytes a session's fork may hold unless configured otherwise: room for real work (a
/// source checkout, build outputs, a data set) while no single session can fill the store.
pub const DEFAULT_QUOTA_BYTES: u64 = 1 << 30;
/// Objects (files, symlinks, directory markers, whiteouts) a fork may hold unless configured
/// otherwise: bounds what listing, snapshotting and deleting the fork costs.
pub const DEFAULT_QUOTA_OBJECTS: u64 = 100_000;

/// What a session's fork may hold. `None` is no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    /// Bytes of files and symlink targets in the session's layer.
    pub bytes: Option<u64>,
    /// Files, symlinks, directory markers and whiteouts in the session's layer.
    pub objects: Option<u64>,
}

impl Quota {
    /// No limit at all (tests that need one).
    pub const UNLIMITED: Quota = Quota {
        bytes: None,
        objects: None,
    };
}

impl Default for Quota {
    /// [`DEFAULT_QUOTA_BYTES`] and [`DEFAULT_QUOTA_OBJECTS`].
    fn default() -> Self {
        Quota {
            bytes: Some(DEFAULT_QUOTA_BYTES),
            objects: Some(DEFAULT_QUOTA_OBJECTS),
        }
    }
}

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
            FileKind::File | FileKind::CharDevice => DEFAULT_FILE_MODE,
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
    /// Sum of [`charged`] over `upper`: the bytes the layer holds. Kept in step by
    /// [`State::put_upper`] and [`State::take_upper`], the only ways `upper` changes.
    upper_bytes: u64,
    /// Bytes and objects promised to operations in flight (open writers, copies), counted
    /// against the quota before their data lands; see [`Held`].
    reserved_bytes: u64,
    reserved_objects: u64,
    /// Read-ahead of files read sequentially (stores where a read is a request). Every
    /// change of a path in the index drops its streams, so nothing read ahead of a change
    /// is served after it: see [`State::changed`].
    reads: readahead::Streams,
}

/// The bytes a node of the upper layer costs: its content for files and symlinks
/// (a symlink's object holds its target); directories are markers and cost nothing.
fn charged(node: &Node) -> u64 {
    match node.kind {
        FileKind::File | FileKind::Symlink => node.len,
        FileKind::Dir | FileKind::CharDevice => 0,
    }
}

impl State {
    /// Records `node` at `rel` in the upper layer (replacing what was there).
    fn put_upper(&mut self, rel: String, node: Node) {
        self.changed(&rel);
        self.upper_bytes = self.upper_bytes.saturating_add(charged(&node));
        if let Some(old) = self.upper.insert(rel, node) {
            self.upper_bytes = self.upper_bytes.saturating_sub(charged(&old));
        }
    }

    /// Drops what was read ahead of `rel`. Called by every change of the index, which comes
    /// after the store changed (or, for a file opened with truncation, while it reads as
    /// empty), so a read after the change never sees bytes fetched before it.
    fn changed(&mut self, rel: &str) {
        self.reads.forget(rel);
    }

    /// Forgets the upper node at `rel`.
    fn take_upper(&mut self, rel: &str) -> Option<Node> {
        self.changed(rel);
        let old = self.upper.remove(rel)?;
        self.upper_bytes = self.upper_bytes.saturating_sub(charged(&old));
        Some(old)
    }

    /// Bytes the upper node at `rel` costs now (what replacing it frees).
    fn upper_cost(&self, rel: &str) -> u64 {
        self.upper.get(rel).map(charged).unwrap_or(0)
    }

    /// Objects the layer holds: upper entries and whiteouts.
    fn objects(&self) -> u64 {
        (self.upper.len() + self.whiteouts.len()) as u64
    }

    /// Reserves `bytes` and `objects` more, or fails with `NoSpace` when that would take
    /// the fork over `quota` (stored plus reserved).
    fn reserve(&mut self, quota: &Quota, bytes: u64, objects: u64) -> FsResult<()> {
        let over = |used: u64, reserved: u64, more: u64, limit: Option<u64>| {
            more > 0
                && limit.is_some_and(|l| used.saturating_add(reserved).saturating_add(more) > l)
        };
        if over(self.upper_bytes, self.reserved_bytes, bytes, quota.bytes)
            || over(
                self.objects(),
                self.reserved_objects,
                objects,
                quota.objects,
            )
        {
            return Err(FsError::NoSpace);
        }
        self.reserved_bytes += bytes;
        self.reserved_objects += objects;
        Ok(())
    }

    fn release(&mut self, bytes: u64, objects: u64) {
        self.reserved_bytes = self.reserved_bytes.saturating_sub(bytes);
        self.reserved_objects = self.reserved_objects.saturating_sub(objects);
    }

    /// Records that the base no longer holds `rel` (an in-place fork deleted or moved it).
    fn forget_base(&mut self, rel: &str) {
        self.changed(rel);
        self.base_nodes.insert(rel.to_string(), None);
        if let Some(names) = self.base_lists.get_mut(parent_of(rel)) {
            let name = name_of(rel);
            names.retain(|n| n != name);
        }
    }

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
    quota: Quota,
    state: Mutex<State>,
}

/// Room reserved against the quota for one operation in flight. It is given back when the
/// operation records what it stored ([`Held::land`]) or when dropped (the operation failed
/// or was cancelled), so a reservation can never leak.
struct Held {
    vfs: Vfs,
    bytes: u64,
    objects: u64,
}

impl Held {
    /// Nothing reserved yet.
    fn none(vfs: &Vfs) -> Held {
        Held {
            vfs: vfs.clone(),
            bytes: 0,
            objects: 0,
        }
    }

    /// Reserves `bytes` and `objects` more for this operation.
    fn grow(&mut self, bytes: u64, objects: u64) -> FsResult<()> {
        self.vfs
            .state()
            .reserve(&self.vfs.inner.quota, bytes, objects)?;
        self.bytes += bytes;
        self.objects += objects;
        Ok(())
    }

    /// Records the operation's result in the index and gives the reservation back, in one
    /// step, so usage never counts both or neither.
    fn land(mut self, record: impl FnOnce(&mut State)) {
        let mut st = self.vfs.state();
        record(&mut st);
        st.release(self.bytes, self.objects);
        self.bytes = 0;
        self.objects = 0;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.bytes > 0 || self.objects > 0 {
            self.vfs.state().release(self.bytes, self.objects);
        }
    }
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
    /// (and at the end when `follow`). Returns the path and what is there, if anything;
    /// every ancestor is guaranteed to be an existing directory.
    async fn resolve(&self, path: &str, follow: bool) -> FsResult<(String, Option<Node>)> {
        if path.len() > PATH_MAX {
            return Err(FsError::NameTooLong);
        }
        let dir_required = path.ends_with('/') || path.ends_with("/.") || path.ends_with("/..");
        let follow = follow || dir_required;
        // Components still to walk, last first: borrowed from `path`, owned once a
        // symlink's target is spliced in. `rel` is the walk so far (`a/b`), built in
        // place rather than joined anew at each step.
        let mut pending: Vec<Cow<'_, str>> = path.split('/').rev().map(Cow::Borrowed).collect();
        let mut rel = String::with_capacity(path.len());
        let mut hops = 0usize;
        let mut last: Option<Node> = Some(self.root_node());
        while let Some(comp) = pending.pop() {
            match &*comp {
                "" | "." => continue,
                ".." => {
                    rel.truncate(rel.rfind('/').unwrap_or(0));
                    last = None;
                    continue;
                }
                _ => {}
            }
            if comp.len() > NAME_MAX {
                return Err(FsError::NameTooLong);
            }
            let parent_len = rel.len();
            if !rel.is_empty() {
                rel.push('/');
            }
            rel.push_str(&comp);
            let is_last = pending.iter().all(|p| p.is_empty() || p == ".");
            let node = self.lookup(&rel).await?;
            match node {
                Some(n) if n.kind == FileKind::Symlink && (follow || !is_last) => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(FsError::Loop);
                    }
                    rel.truncate(parent_len);
                    let target = n.target.unwrap_or_default();
                    if target.starts_with('/') {
                        rel.clear();
                    }
                    pending.extend(target.split('/').rev().map(|c| Cow::Owned(c.to_string())));
                    last = None;
                }
                Some(n) if is_last => last = Some(n),
                Some(n) if n.kind == FileKind::Dir => last = Some(n),
                Some(_) => return Err(FsError::NotADirectory),
                None if is_last => last = None,
                None => return Err(FsError::NotFound),
            }
        }
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
                            out.insert(name, n.meta());
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

impl readahead::Table for Vfs {
    fn with<R>(&self, f: impl FnOnce(&mut readahead::Streams) -> R) -> R {
        f(&mut self.state().reads)
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
        // Append and update keep the current content; everything else starts empty.
        let keep = matches!(mode, WriteMode::Append | WriteMode::Update) && node.is_some();
        // Room for what the writer starts with: kept content costs nothing for an upper
        // file (the index counts it already: `credit`) and its full size for a base file
        // (copy-up); anything else costs one object if the path is new.
        let credit = if keep {
            self.state().upper_cost(&rel)
        } else {
            0
        };
        let start_len = match (&node, keep) {
            (Some(n), true) => n.len,
            _ => 0,
        };
        let held = self.hold_replacing(&rel, start_len)?;
        let key = self.upper().key(&rel);
        let mut staged = self
            .upper()
            .store
            .stage(&key, &attrs)
            .await
            .map_err(|e| storage_failure("open", &rel, e))?;
        let held = match &node {
            Some(n) if keep => {
                if let Err(e) = self.copy_content(&rel, n, &mut staged, u64::MAX).await {
                    staged.abort().await;
                    return Err(e);
                }
                held
            }
            _ => {
                // Truncation is visible at once, as with O_TRUNC: the file reads as empty
                // until the writer closes.
                held.land(|st| {
                    st.put_upper(
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
                    )
                });
                Held::none(self)
            }
        };
        Ok(Box::new(VfsWriter {
            vfs: self.clone(),
            rel,
            staged: Some(staged),
            pos: (mode == WriteMode::Update).then_some(0),
            mode: file_mode,
            credit,
            held,
            truncated: !keep,
            failed: None,
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

    /// What the layer holds plus what operations in flight reserved.
    async fn usage(&self) -> FsResult<Usage> {
        let st = self.state();
        Ok(Usage {
            bytes_used: st.upper_bytes.saturating_add(st.reserved_bytes),
            bytes_limit: self.inner.quota.bytes,
            objects_used: st.objects().saturating_add(st.reserved_objects),
            objects_limit: self.inner.quota.objects,
        })
    }
}

/// A file being written through the VFS. Its content is staged (see
/// [`crate::storage::Staged`]) and becomes visible and durable when `sync` or `close`
/// succeeds; room for it is reserved against the quota write by write, before the data is
/// staged.
struct VfsWriter {
    vfs: Vfs,
    rel: String,
    staged: Option<Staged>,
    /// Where `write` goes: an offset (update mode), or (`None`) the end.
    pos: Option<u64>,
    mode: u32,
    /// Bytes of this path the index already counts (kept content of an upper file, or
    /// what the last `sync` published): staging them costs no more quota.
    credit: u64,
    /// Room reserved for what is staged beyond `credit`.
    held: Held,
    /// True when opening left an empty file in the index (`>`, a new file); false when
    /// the index keeps the old content until the file is published.
    truncated: bool,
    /// Set once a write failed: the file was settled, and every later call fails alike.
    failed: Option<FsError>,
}

impl VfsWriter {
    fn staged(&mut self) -> FsResult<&mut Staged> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.staged.as_mut().ok_or(FsError::InvalidArgument)
    }

    /// Gives the file up after a failed write, leaving the index and the store agreeing
    /// and the usage exact: a truncated or new file stays empty (as `>` left it); an
    /// append leaves the file as it was.
    async fn settle(&mut self, err: FsError) -> FsError {
        tracing::info!(path = %self.rel, error = %err, "write failed; file given up");
        let held = std::mem::replace(&mut self.held, Held::none(&self.vfs));
        if let Some(w) = self.staged.take() {
            w.abort().await;
        }
        if self.truncated {
            // Store the empty file the index shows, over any older content.
            let attrs = Attrs {
                mode: Some(self.mode),
                mtime: None,
                symlink: None,
            };
            let layer = self.vfs.upper();
            match layer
                .store
                .put(&layer.key(&self.rel), Bytes::new(), &attrs)
                .await
            {
                Ok(()) => {
                    let node = self.node(0);
                    held.land(|st| st.put_upper(self.rel.clone(), node))
                }
                Err(e) => {
                    storage_failure("write", &self.rel, e);
                }
            }
        }
        self.failed = Some(err.clone());
        err
    }

    fn node(&self, len: u64) -> Node {
        Node {
            kind: FileKind::File,
            len,
            mode: self.mode,
            mtime: SystemTime::now(),
            target: None,
            origin: Origin::Upper,
            stored: true,
        }
    }

    /// Reserves what growing the staged content to `len` bytes costs beyond what is held.
    fn reserve_to(&mut self, len: u64) -> FsResult<()> {
        let need = len
            .saturating_sub(self.credit)
            .saturating_sub(self.held.bytes);
        self.held.grow(need, 0)
    }

    async fn stage_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        let staged = self.staged()?;
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or(FsError::TooLarge)?;
        let new_len = staged.len().max(end);
        let result = match self.reserve_to(new_len) {
            Ok(()) => self
                .staged()?
                .write_at(offset, data)
                .await
                .map_err(|e| storage_failure("write", &self.rel, e)),
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => Ok(()),
            Err(e) => Err(self.settle(e).await),
        }
    }

    /// Reserves what publishing the staged content costs now (the entry it replaces may
    /// have shrunk or gone since the writer opened: a truncate or unlink meanwhile).
    fn reserve_publish(&mut self, len: u64) -> FsResult<()> {
        let (cost, new_object) = {
            let st = self.vfs.state();
            (st.upper_cost(&self.rel), !st.upper.contains_key(&self.rel))
        };
        let bytes = len.saturating_sub(cost).saturating_sub(self.held.bytes);
        let objects = u64::from(new_object).saturating_sub(self.held.objects);
        self.held.grow(bytes, objects)
    }

    /// Records the published content in the index and gives the reservation back.
    fn land(&mut self, len: u64) {
        let held = std::mem::replace(&mut self.held, Held::none(&self.vfs));
        let node = self.node(len);
        held.land(|st| st.put_upper(self.rel.clone(), node));
    }
}

#[async_trait]
impl WriteHandle for VfsWriter {
    async fn write(&mut self, data: &[u8]) -> FsResult<()> {
        let at = match self.pos {
            Some(p) => p,
            None => self.staged()?.len(),
        };
        self.stage_at(at, data).await?;
        if let Some(p) = &mut self.pos {
            *p += data.len() as u64;
        }
        Ok(())
    }

    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        self.stage_at(offset, data).await
    }

    async fn sync(&mut self) -> FsResult<()> {
        let len = self.staged()?.len();
        if let Err(e) = self.reserve_publish(len) {
            return Err(self.settle(e).await);
        }
        self.staged()?
            .publish()
            .await
            .map_err(|e| storage_failure("sync", &self.rel, e))?;
        self.land(len);
        // The index now counts the published bytes; the writer goes on from there.
        self.credit = len;
        self.truncated = false;
        Ok(())
    }

    async fn close(mut self: Box<Self>) -> FsResult<()> {
        let len = self.staged()?.len();
        if let Err(e) = self.reserve_publish(len) {
            return Err(self.settle(e).await);
        }
        let staged = self.staged.take().ok_or(FsError::InvalidArgument)?;
        staged
            .close()
            .await
            .map_err(|e| storage_failure("close", &self.rel, e))?;
        self.land(len);
        Ok(())
    }
}

impl Drop for VfsWriter {
    /// A writer dropped without `close` (its command was cancelled) gives its staged
    /// content up in the background; its reservation goes back when `held` drops.
    fn drop(&mut self) {
        if let Some(w) = self.staged.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(w.abort());
        }
    }
}

#[cfg(test)]
mod tests;

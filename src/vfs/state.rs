//! What the VFS knows of a fork: its nodes (files, directories, symlinks of the upper
//! layer and the base) and the quota usage they add up to.

use super::*;

/// Which layer a node's data lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    Root,
    Upper,
    Base,
}

#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) kind: FileKind,
    pub(super) len: u64,
    pub(super) mode: u32,
    pub(super) mtime: SystemTime,
    pub(super) target: Option<String>,
    pub(super) origin: Origin,
    /// For upper files: false while no object holds the content yet (a file opened with
    /// truncation whose writer has not closed): it reads as empty.
    pub(super) stored: bool,
}

impl Node {
    pub(super) fn meta(&self) -> Metadata {
        Metadata {
            kind: self.kind,
            len: self.len,
            mode: self.mode,
            mtime: self.mtime,
        }
    }

    pub(super) fn from_base(m: ObjectMeta) -> Node {
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
pub(super) struct State {
    /// Everything the session created or changed, by path relative to the root.
    pub(super) upper: BTreeMap<String, Node>,
    /// Base paths the session deleted; each hides its subtree.
    pub(super) whiteouts: BTreeSet<String>,
    /// Base metadata seen so far (`None`: absent).
    pub(super) base_nodes: HashMap<String, Option<Node>>,
    /// Base directory listings seen so far.
    pub(super) base_lists: HashMap<String, Vec<String>>,
    /// Sum of [`charged`] over `upper`: the bytes the layer holds. Kept in step by
    /// [`State::put_upper`] and [`State::take_upper`], the only ways `upper` changes.
    pub(super) upper_bytes: u64,
    /// Bytes and objects promised to operations in flight (open writers, copies), counted
    /// against the quota before their data lands; see [`Held`].
    pub(super) reserved_bytes: u64,
    pub(super) reserved_objects: u64,
    /// Read-ahead of files read sequentially (stores where a read is a request). Every
    /// change of a path in the index drops its streams, so nothing read ahead of a change
    /// is served after it: see [`State::changed`].
    pub(super) reads: readahead::Streams,
}

/// The bytes a node of the upper layer costs: its content for files and symlinks
/// (a symlink's object holds its target); directories are markers and cost nothing.
pub(super) fn charged(node: &Node) -> u64 {
    match node.kind {
        FileKind::File | FileKind::Symlink => node.len,
        FileKind::Dir | FileKind::CharDevice => 0,
    }
}

impl State {
    /// Records `node` at `rel` in the upper layer (replacing what was there).
    pub(super) fn put_upper(&mut self, rel: String, node: Node) {
        self.changed(&rel);
        self.upper_bytes = self.upper_bytes.saturating_add(charged(&node));
        if let Some(old) = self.upper.insert(rel, node) {
            self.upper_bytes = self.upper_bytes.saturating_sub(charged(&old));
        }
    }

    /// Drops what was read ahead of `rel`. Called by every change of the index, which comes
    /// after the store changed (or, for a file opened with truncation, while it reads as
    /// empty), so a read after the change never sees bytes fetched before it.
    pub(super) fn changed(&mut self, rel: &str) {
        self.reads.forget(rel);
    }

    /// Forgets the upper node at `rel`.
    pub(super) fn take_upper(&mut self, rel: &str) -> Option<Node> {
        self.changed(rel);
        let old = self.upper.remove(rel)?;
        self.upper_bytes = self.upper_bytes.saturating_sub(charged(&old));
        Some(old)
    }

    /// Bytes the upper node at `rel` costs now (what replacing it frees).
    pub(super) fn upper_cost(&self, rel: &str) -> u64 {
        self.upper.get(rel).map(charged).unwrap_or(0)
    }

    /// Objects the layer holds: upper entries and whiteouts.
    pub(super) fn objects(&self) -> u64 {
        (self.upper.len() + self.whiteouts.len()) as u64
    }

    /// Reserves `bytes` and `objects` more, or fails with `NoSpace` when that would take
    /// the fork over `quota` (stored plus reserved).
    pub(super) fn reserve(&mut self, quota: &Quota, bytes: u64, objects: u64) -> FsResult<()> {
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

    pub(super) fn release(&mut self, bytes: u64, objects: u64) {
        self.reserved_bytes = self.reserved_bytes.saturating_sub(bytes);
        self.reserved_objects = self.reserved_objects.saturating_sub(objects);
    }

    /// Records that the base no longer holds `rel` (an in-place fork deleted or moved it).
    pub(super) fn forget_base(&mut self, rel: &str) {
        self.changed(rel);
        self.base_nodes.insert(rel.to_string(), None);
        if let Some(names) = self.base_lists.get_mut(parent_of(rel)) {
            let name = name_of(rel);
            names.retain(|n| n != name);
        }
    }

    /// True when a whiteout hides `rel` (on it or on an ancestor).
    pub(super) fn hidden(&self, rel: &str) -> bool {
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

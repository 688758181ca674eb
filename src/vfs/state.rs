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

impl forkbox_commands::fs::resolve::Entry for Node {
    fn kind(&self) -> FileKind {
        self.kind
    }
    fn symlink_target(&self) -> Option<&str> {
        self.target.as_deref()
    }
}

/// The size a directory shows: one 4 KiB block.
pub(crate) const DIR_SIZE: u64 = 4096;

impl Node {
    /// What `stat` shows of the node, whose inode number is `ino`. Access and change
    /// times are not tracked: both are the modification time. A directory's size is one
    /// block, as on Linux's disk filesystems (`ls -ld`, `stat -c %s`, `du -b` agree).
    pub(super) fn meta(&self, ino: u64) -> Metadata {
        let len = if self.kind == FileKind::Dir {
            DIR_SIZE
        } else {
            self.len
        };
        Metadata::new(self.kind, len, self.mode, self.mtime).with_ino(ino)
    }

    /// The kind a base object of `kind` is.
    pub(super) fn kind_of_base(kind: ObjectKind) -> FileKind {
        match kind {
            ObjectKind::File => FileKind::File,
            ObjectKind::Dir => FileKind::Dir,
            ObjectKind::Symlink => FileKind::Symlink,
        }
    }

    pub(super) fn from_base(m: ObjectMeta) -> Node {
        let kind = Node::kind_of_base(m.kind);
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
    /// Inode numbers of the paths seen so far (root-relative; `""` is the root), given
    /// out on first sight and moved with their entry by a rename, so a file keeps its
    /// number for the whole session; dropped when the entry is removed. Never reused.
    pub(super) inos: BTreeMap<String, u64>,
    /// The last inode number given out.
    pub(super) last_ino: u64,
    /// Files open through [`FileSystem::open`], by inode number.
    pub(super) open: HashMap<u64, handle::OpenEntry>,
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
    /// The inode number of the entry at `rel`, given out now if it has none yet.
    pub(super) fn ino(&mut self, rel: &str) -> u64 {
        if let Some(ino) = self.inos.get(rel) {
            return *ino;
        }
        self.last_ino += 1;
        let ino = self.last_ino;
        self.inos.insert(rel.to_string(), ino);
        ino
    }

    /// Takes the inode numbers of `rel` and everything under it out of the table (a
    /// rename moves them: [`State::put_inos`]).
    pub(super) fn take_inos(&mut self, rel: &str) -> Vec<(String, u64)> {
        let under = format!("{rel}/");
        let keys: Vec<String> = self
            .inos
            .range(rel.to_string()..)
            .take_while(|(k, _)| k.starts_with(rel))
            .filter(|(k, _)| *k == rel || k.starts_with(&under))
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|k| self.inos.remove(&k).map(|ino| (k, ino)))
            .collect()
    }

    /// Puts inode numbers taken from under `from` back under `to`, and moves the open
    /// files among them there.
    pub(super) fn put_inos(&mut self, taken: Vec<(String, u64)>, from: &str, to: &str) {
        for (path, ino) in taken {
            let moved = format!("{to}{}", &path[from.len()..]);
            if let Some(open) = self.open.get_mut(&ino) {
                open.rel = Some(moved.clone());
            }
            self.inos.insert(moved, ino);
        }
    }

    /// Forgets the inode number of a removed entry; an open file of it has no path now.
    pub(super) fn forget_ino(&mut self, rel: &str) {
        if let Some(ino) = self.inos.remove(rel)
            && let Some(open) = self.open.get_mut(&ino)
        {
            open.rel = None;
        }
    }

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

    /// Objects the layer holds: upper entries and whiteouts. The session's `/tmp` made by
    /// [`Vfs::with_tmp`] is not one: no marker object holds it (it is an unstored
    /// directory, which nothing else makes).
    pub(super) fn objects(&self) -> u64 {
        let synthetic = self
            .upper
            .get(TMP_DIR)
            .is_some_and(|n| n.kind == FileKind::Dir && !n.stored);
        (self.upper.len() + self.whiteouts.len() - usize::from(synthetic)) as u64
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
            crate::telemetry::metrics::limit_hit(crate::telemetry::metrics::Limit::Quota);
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

//! How a fork's layers sit in a store: the seam the fork strategies and the VFS share.
//!
//! A fork is seen as layers ([`ForkView`]): an optional read-only base, the session's
//! upper layer, and where deletions of base paths (whiteouts) are recorded. Each
//! [`Layer`] is a store and a key prefix. The fork strategies make them; the VFS reads
//! and writes them; both walk them (`walk`) and mark deletions (`put_marker`) the same
//! way, so these live here, below both.

use futures::{StreamExt, TryStreamExt};

use super::{Attrs, ObjectKind, ObjectMeta, StorageError, Store};

/// Objects (files, directories, whiteouts) one snapshot copies at most. A session's layer
/// is bounded by its object quota (100,000 by default), so this only bounds the memory and
/// time of one copy should the store hold something no session made.
pub const MAX_COPY_OBJECTS: usize = 1_000_000;

/// Storage requests one tree copy or walk has in flight at once.
pub(crate) const COPY_CONCURRENCY: usize = 16;

/// Name prefix of the scratch objects a local store writes beside an object before it is
/// renamed into place (a file being written). They are never part of a layer.
pub(crate) const SCRATCH_PREFIX: &str = ".forkbox-partial-";

/// The stores behind one fork.
#[derive(Clone, Debug)]
pub struct ForkView {
    /// Read-only lower layer, if the strategy has one.
    pub base: Option<Layer>,
    /// Where the session's writes go.
    pub upper: Layer,
    /// Where whiteouts (deletions of base paths) are recorded; `None` without a base.
    pub whiteouts: Option<Layer>,
}

/// A store and a key prefix (`""` or ending in `/`).
#[derive(Clone, Debug)]
pub struct Layer {
    pub store: Store,
    pub prefix: String,
}

impl Layer {
    /// The object key of a path relative to the fork root (`""` is the root).
    pub fn key(&self, rel: &str) -> String {
        format!("{}{rel}", self.prefix)
    }
    /// The key of the layer's root directory itself (no trailing slash).
    pub fn root_key(&self) -> String {
        self.prefix.trim_end_matches('/').to_string()
    }
}

/// One object found by [`walk`]: its path below the walked root and what it is.
#[derive(Clone, Debug)]
pub(crate) struct TreeEntry {
    pub rel: String,
    pub meta: ObjectMeta,
}

/// Why a [`walk`] failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WalkError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("more than {0} objects")]
    TooMany(usize),
}

pub(crate) fn join_key(root: &str, rel: &str) -> String {
    match (root.is_empty(), rel.is_empty()) {
        (_, true) => root.to_string(),
        (true, false) => rel.to_string(),
        (false, false) => format!("{root}/{rel}"),
    }
}

/// Every object below `root` (no trailing slash), directories before what they hold, with
/// its metadata; at most `limit` entries, else [`WalkError::TooMany`]. [`Store::list`] shows
/// one level, so the walk goes level by level, listing and stat-ing concurrently. Where a
/// file object and a directory share a name (possible on object stores: a whiteout `d`
/// and whiteouts under `d/`), both are reported. Scratch objects of writes in progress on
/// a local store are left out.
pub(crate) async fn walk(
    store: &Store,
    root: &str,
    limit: usize,
) -> Result<Vec<TreeEntry>, WalkError> {
    let mut out: Vec<TreeEntry> = Vec::new();
    let mut level = vec![String::new()];
    while !level.is_empty() {
        let listed: Vec<(String, Vec<(String, bool)>)> = futures::stream::iter(level)
            .map(|dir| async move {
                let children = store.list(&join_key(root, &dir)).await?;
                Ok::<_, StorageError>((dir, children))
            })
            .buffered(COPY_CONCURRENCY)
            .try_collect()
            .await?;
        let mut found = Vec::new();
        for (dir, children) in listed {
            for (name, is_dir) in children {
                if name.starts_with(SCRATCH_PREFIX) {
                    continue;
                }
                if out.len() + found.len() >= limit {
                    return Err(WalkError::TooMany(limit));
                }
                let rel = if dir.is_empty() {
                    name
                } else {
                    format!("{dir}/{name}")
                };
                found.push((rel, is_dir));
            }
        }
        let metas: Vec<(String, bool, Option<ObjectMeta>)> = futures::stream::iter(found)
            .map(|(rel, is_dir)| async move {
                let meta = store.stat(&join_key(root, &rel)).await?;
                Ok::<_, StorageError>((rel, is_dir, meta))
            })
            .buffered(COPY_CONCURRENCY)
            .try_collect()
            .await?;
        let mut next = Vec::new();
        for (rel, is_dir, meta) in metas {
            // Gone since it was listed: nothing to report.
            let Some(meta) = meta else { continue };
            let is_object = meta.kind != ObjectKind::Dir;
            if is_dir || !is_object {
                let dir_meta = if is_object {
                    ObjectMeta {
                        kind: ObjectKind::Dir,
                        len: 0,
                        mode: None,
                        mtime: None,
                        symlink: None,
                    }
                } else {
                    meta.clone()
                };
                out.push(TreeEntry {
                    rel: rel.clone(),
                    meta: dir_meta,
                });
                next.push(rel.clone());
            }
            if is_object {
                out.push(TreeEntry { rel, meta });
            }
        }
        level = next;
    }
    Ok(out)
}

/// Writes an empty whiteout object.
///
/// A whiteout hides everything below its path, so whiteouts already recorded below it
/// (`rm -r dir` whites out the entries, then the directory) are redundant. On an object
/// store they sit beside it harmlessly; on a local store they make `<path>` a host
/// directory, which no file can replace, so they are removed first.
pub(crate) async fn put_marker(layer: &Layer, rel: &str) -> super::Result<()> {
    let key = layer.key(rel);
    if layer.store.local_root().is_some()
        && layer
            .store
            .stat(&key)
            .await?
            .is_some_and(|m| m.kind == ObjectKind::Dir)
    {
        layer.store.delete_tree(&key).await?;
    }
    layer
        .store
        .put(&key, bytes::Bytes::new(), &Attrs::default())
        .await
}

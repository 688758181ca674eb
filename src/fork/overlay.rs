//! The overlay strategy: a read-only base plus a per-session layer in a forks store.
//!
//! Layout in the forks store, per session:
//! - `forks/<id>/root/<path>`: files, symlinks and `dir/` markers the session wrote;
//! - `forks/<id>/whiteouts/<path>`: empty objects marking base paths the session deleted
//!   (a whiteout hides the base path and everything below it);
//! - `forks/<id>/lease`: which server serves the fork and until when (see [`Lease`]).
//!
//! Creating a fork writes two small objects (the lease and the root marker), whatever
//! the size of the base.
//!
//! Snapshots live beside the forks, never under `forks/` (so no janitor ever sweeps them):
//! - `snapshots/<version>/root/<path>` and `snapshots/<version>/whiteouts/<path>`: a copy
//!   of the session's layer when the snapshot was taken (its closed files only);
//! - `snapshots/<version>/info`: name, creation time, source session, owner and size (the
//!   bytes of the files copied), as `key value` lines. It is written last, so a snapshot
//!   that is listed is complete, and deleted first, so one that is listed is whole.
//!
//! The version is a UUIDv7 in simple form (32 hex digits): it sorts by creation time. A
//! snapshot costs a copy of the session's layer (not of the base); starting a fork from
//! one copies it back into the new session's layer.

use std::time::SystemTime;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};

use super::{
    ForkError, ForkStrategy, ForkView, Layer, Lease, SessionId, Snapshot, SnapshotRequest,
    valid_snapshot_name, valid_snapshot_version,
};
use crate::storage::layer::{
    COPY_CONCURRENCY, MAX_COPY_OBJECTS, TreeEntry, WalkError, join_key, walk,
};
use crate::storage::{Attrs, ObjectKind, ObjectMeta, StorageError, Store};

/// Key prefix under which every session layer lives in the forks store.
pub const FORKS_PREFIX: &str = "forks";

/// Key prefix under which snapshots live in the forks store.
pub const SNAPSHOTS_PREFIX: &str = "snapshots";

/// Largest lease object read; a real one is under 100 bytes.
const LEASE_MAX: usize = 4096;

/// Largest snapshot `info` object read; a real one is under 200 bytes.
const INFO_MAX: usize = 4096;

#[derive(Clone, Debug)]
pub struct Overlay {
    base: Store,
    forks: Store,
}

impl Overlay {
    pub fn new(base: Store, forks: Store) -> Overlay {
        Overlay { base, forks }
    }

    /// The store holding the session layers.
    pub fn forks_store(&self) -> &Store {
        &self.forks
    }

    fn fork_prefix(id: SessionId) -> String {
        format!("{FORKS_PREFIX}/{id}")
    }

    fn storage_err(id: SessionId) -> impl FnOnce(crate::storage::StorageError) -> ForkError {
        move |source| ForkError::Storage {
            id: id.to_string(),
            source,
        }
    }

    fn snapshot_prefix(version: &str) -> String {
        format!("{SNAPSHOTS_PREFIX}/{version}")
    }

    /// Copies a layer (`root` and `whiteouts`) from `from` to `to` in the forks store; the
    /// bytes of the files and symlinks copied.
    async fn copy_layer(&self, from: &str, to: &str) -> Result<u64, CopyError> {
        let mut bytes = 0u64;
        for part in ["root", "whiteouts"] {
            bytes = bytes.saturating_add(
                copy_tree(
                    &self.forks,
                    &format!("{from}/{part}"),
                    &format!("{to}/{part}"),
                )
                .await?,
            );
        }
        Ok(bytes)
    }

    async fn read_info(&self, version: &str) -> Result<Option<Snapshot>, ForkError> {
        if !valid_snapshot_version(version) {
            return Ok(None);
        }
        let key = format!("{}/info", Overlay::snapshot_prefix(version));
        match self.forks.read(&key, 0, INFO_MAX).await {
            Ok(data) => Ok(Snapshot::decode(version, &String::from_utf8_lossy(&data))),
            Err(e) if e.is_not_found() => Ok(None),
            Err(source) => Err(ForkError::SnapshotStorage {
                version: version.to_string(),
                source,
            }),
        }
    }
}

/// Why a tree copy failed.
#[derive(Debug, thiserror::Error)]
enum CopyError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("more than {0} objects")]
    TooMany(usize),
}

impl From<WalkError> for CopyError {
    fn from(e: WalkError) -> Self {
        match e {
            WalkError::Storage(s) => CopyError::Storage(s),
            WalkError::TooMany(n) => CopyError::TooMany(n),
        }
    }
}

impl CopyError {
    fn into_fork_error(self, version: &str, what: String) -> ForkError {
        match self {
            CopyError::Storage(source) => ForkError::SnapshotStorage {
                version: version.to_string(),
                source,
            },
            CopyError::TooMany(limit) => ForkError::TooManyObjects { what, limit },
        }
    }
}

#[async_trait]
impl ForkStrategy for Overlay {
    async fn create(&self, id: SessionId, lease: &Lease) -> Result<ForkView, ForkError> {
        let prefix = Overlay::fork_prefix(id);
        // The lease and the layer's root at once (on a store across a network, one round
        // trip instead of two; on a local one, one step): a fork the janitor sees before
        // its lease is written, or while it is being written, is left alone for a lease
        // period from its birth, which its id carries. The lease is not made durable
        // (see `renew`).
        self.forks
            .create_dir_and_put_new(
                &format!("{prefix}/root"),
                &format!("{prefix}/lease"),
                bytes::Bytes::from(lease.encode()),
            )
            .await
            .map_err(Overlay::storage_err(id))?;
        Ok(ForkView {
            base: Some(Layer {
                store: self.base.clone(),
                prefix: String::new(),
            }),
            upper: Layer {
                store: self.forks.clone(),
                prefix: format!("{prefix}/root/"),
            },
            whiteouts: Some(Layer {
                store: self.forks.clone(),
                prefix: format!("{prefix}/whiteouts/"),
            }),
        })
    }

    async fn renew(&self, id: SessionId, lease: &Lease) -> Result<(), ForkError> {
        let key = format!("{}/lease", Overlay::fork_prefix(id));
        // Not made durable: a lease only matters while its server lives (see
        // `Store::put_volatile`), and a session waits for its first one.
        self.forks
            .put_volatile(&key, bytes::Bytes::from(lease.encode()))
            .await
            .map_err(Overlay::storage_err(id))
    }

    async fn lease(&self, id: SessionId) -> Result<Option<Lease>, ForkError> {
        let key = format!("{}/lease", Overlay::fork_prefix(id));
        match self.forks.read(&key, 0, LEASE_MAX).await {
            Ok(data) => Ok(Lease::decode(&String::from_utf8_lossy(&data))),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(ForkError::Storage {
                id: id.to_string(),
                source: e,
            }),
        }
    }

    async fn delete(&self, id: SessionId) -> Result<(), ForkError> {
        self.forks
            .delete_tree(&Overlay::fork_prefix(id))
            .await
            .map_err(Overlay::storage_err(id))
    }

    async fn exists(&self, id: SessionId) -> Result<bool, ForkError> {
        self.forks
            .tree_exists(&Overlay::fork_prefix(id))
            .await
            .map_err(Overlay::storage_err(id))
    }

    async fn list(&self) -> Result<Vec<SessionId>, ForkError> {
        let entries = self
            .forks
            .list(FORKS_PREFIX)
            .await
            .map_err(|source| ForkError::Storage {
                id: "*".into(),
                source,
            })?;
        Ok(entries
            .into_iter()
            .filter_map(|(name, _)| name.parse().ok())
            .collect())
    }

    async fn snapshot(
        &self,
        id: SessionId,
        request: &SnapshotRequest,
    ) -> Result<Snapshot, ForkError> {
        if let Some(name) = &request.name
            && !valid_snapshot_name(name)
        {
            return Err(ForkError::BadSnapshotName(name.clone()));
        }
        let mut snap = Snapshot {
            version: uuid::Uuid::now_v7().simple().to_string(),
            name: request.name.clone(),
            created: SystemTime::now(),
            session: Some(id),
            owner: request.owner.clone(),
            bytes: None,
        };
        let to = Overlay::snapshot_prefix(&snap.version);
        let made = async {
            // The size is what was copied, whatever the session's quota counted.
            snap.bytes = Some(self.copy_layer(&Overlay::fork_prefix(id), &to).await?);
            // Last: from here on the snapshot is listed, and it is complete.
            self.forks
                .put(
                    &format!("{to}/info"),
                    bytes::Bytes::from(snap.encode()),
                    &Attrs::default(),
                )
                .await?;
            Ok::<(), CopyError>(())
        }
        .await;
        if let Err(e) = made {
            // Nothing half-made stays behind (it would never be listed, but costs space).
            if let Err(cleanup) = self.forks.delete_tree(&to).await {
                tracing::warn!(version = %snap.version, error = ?cleanup, "partial snapshot not removed");
            }
            return Err(e.into_fork_error(&snap.version, format!("fork {id}")));
        }
        Ok(snap)
    }

    async fn snapshots(&self) -> Result<Vec<Snapshot>, ForkError> {
        let entries = self.forks.list(SNAPSHOTS_PREFIX).await.map_err(|source| {
            ForkError::SnapshotStorage {
                version: "*".into(),
                source,
            }
        })?;
        let mut versions: Vec<String> = entries
            .into_iter()
            .filter(|(name, is_dir)| *is_dir && valid_snapshot_version(name))
            .map(|(name, _)| name)
            .collect();
        versions.sort();
        super::read_newest(versions, COPY_CONCURRENCY, |v| async move {
            self.read_info(&v).await
        })
        .await
    }

    async fn find_snapshot(&self, version: &str) -> Result<Option<Snapshot>, ForkError> {
        self.read_info(version).await
    }

    async fn create_from(
        &self,
        id: SessionId,
        lease: &Lease,
        version: &str,
    ) -> Result<ForkView, ForkError> {
        if self.read_info(version).await?.is_none() {
            return Err(ForkError::NoSnapshot {
                version: version.to_string(),
            });
        }
        let view = self.create(id, lease).await?;
        let copied = self
            .copy_layer(
                &Overlay::snapshot_prefix(version),
                &Overlay::fork_prefix(id),
            )
            .await
            .map_err(|e| e.into_fork_error(version, format!("snapshot {version}")));
        // A snapshot deleted meanwhile (by the janitor or an operator) may have been copied
        // in part. Its info goes first and its files after, so if the info is still there
        // once the copy is done, nothing of it was deleted before the copy read it.
        let result = match copied {
            Ok(_) => match self.read_info(version).await {
                Ok(Some(_)) => Ok(()),
                Ok(None) => Err(ForkError::NoSnapshot {
                    version: version.to_string(),
                }),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            // The fork is unusable: remove it now rather than leave it to the janitor.
            if let Err(cleanup) = self.delete(id).await {
                tracing::warn!(session = %id, error = %cleanup, "fork not removed after a failed copy");
            }
            return Err(e);
        }
        Ok(view)
    }

    async fn delete_snapshot(&self, version: &str) -> Result<bool, ForkError> {
        if self.read_info(version).await?.is_none() {
            return Ok(false);
        }
        let prefix = Overlay::snapshot_prefix(version);
        let err = |source| ForkError::SnapshotStorage {
            version: version.to_string(),
            source,
        };
        // The info first: from then on the snapshot is neither listed nor started from.
        self.forks
            .delete(&format!("{prefix}/info"))
            .await
            .map_err(err)?;
        self.forks.delete_tree(&prefix).await.map_err(err)?;
        Ok(true)
    }
}

/// Copies every object below `from` to the same path below `to`, within `store`:
/// directories first (a local store needs them before their files), then files and
/// symlinks, [`COPY_CONCURRENCY`] at a time, each streamed chunk by chunk with its mode and
/// mtime. A file copied by an object store's own copy would need a request the `Store`
/// doesn't offer; streaming works on every backend with bounded memory. The bytes of the
/// files and symlinks copied.
async fn copy_tree(store: &Store, from: &str, to: &str) -> Result<u64, CopyError> {
    let entries = walk(store, from, MAX_COPY_OBJECTS).await?;
    store.create_dir(to).await?;
    let (dirs, objects): (Vec<TreeEntry>, Vec<TreeEntry>) = entries
        .into_iter()
        .partition(|e| e.meta.kind == ObjectKind::Dir);
    let bytes = objects
        .iter()
        .fold(0u64, |sum, e| sum.saturating_add(e.meta.len));
    // Each level's parent came before it, and creating a directory creates its parents,
    // so the order in which these land does not matter.
    futures::stream::iter(dirs)
        .map(|e| async move { store.create_dir(&join_key(to, &e.rel)).await })
        .buffer_unordered(COPY_CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    futures::stream::iter(objects)
        .map(|e| async move {
            copy_object(
                store,
                &join_key(from, &e.rel),
                &join_key(to, &e.rel),
                &e.meta,
            )
            .await
        })
        .buffer_unordered(COPY_CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(bytes)
}

/// Copies one file or symlink object, keeping its attributes.
async fn copy_object(
    store: &Store,
    from: &str,
    to: &str,
    meta: &ObjectMeta,
) -> Result<(), StorageError> {
    let attrs = Attrs {
        mode: meta.mode,
        mtime: meta.mtime,
        symlink: meta.symlink.clone(),
    };
    if let Some(target) = &meta.symlink {
        return store
            .put(to, bytes::Bytes::copy_from_slice(target.as_bytes()), &attrs)
            .await;
    }
    let mut w = store.stage(to, &attrs).await?;
    if let Err(e) = w.fill_from(store, from, meta.len).await {
        w.abort().await;
        return Err(e);
    }
    w.close().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::layer::put_marker;
    use std::time::{Duration, UNIX_EPOCH};

    #[tokio::test]
    async fn create_is_visible_and_delete_removes_everything() {
        let forks = Store::memory();
        let overlay = Overlay::new(Store::memory(), forks.clone());
        let id = SessionId::new();
        let lease = Lease::new(
            crate::fork::ServerId::new(),
            std::time::Duration::from_secs(60),
        );
        let view = overlay.create(id, &lease).await.unwrap();
        assert!(overlay.exists(id).await.unwrap());
        assert_eq!(
            overlay.lease(id).await.unwrap(),
            Some(lease).map(|l| Lease::decode(&l.encode()).unwrap())
        );
        assert_eq!(overlay.list().await.unwrap(), vec![id]);
        view.upper
            .store
            .put(
                &view.upper.key("a/b"),
                bytes::Bytes::from_static(b"x"),
                &Attrs::default(),
            )
            .await
            .unwrap();
        overlay.delete(id).await.unwrap();
        assert!(!overlay.exists(id).await.unwrap());
        assert!(overlay.list().await.unwrap().is_empty());
    }

    fn lease() -> Lease {
        Lease::new(
            crate::fork::ServerId::new(),
            std::time::Duration::from_secs(60),
        )
    }

    async fn put(layer: &Layer, rel: &str, data: &'static [u8], mode: u32) {
        let attrs = Attrs {
            mode: Some(mode),
            mtime: Some(UNIX_EPOCH + Duration::from_secs(1_000_000)),
            symlink: None,
        };
        layer
            .store
            .put(&layer.key(rel), bytes::Bytes::from_static(data), &attrs)
            .await
            .unwrap();
    }

    async fn get(layer: &Layer, rel: &str) -> Option<Vec<u8>> {
        let m = layer.store.stat(&layer.key(rel)).await.unwrap()?;
        let data = layer
            .store
            .read(&layer.key(rel), 0, m.len as usize)
            .await
            .unwrap();
        Some(data.to_vec())
    }

    /// Every object key in `store` below `prefix`, with its content.
    async fn objects(store: &Store, prefix: &str) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for e in walk(store, prefix, 1000).await.unwrap() {
            if e.meta.kind != ObjectKind::Dir {
                let key = join_key(prefix, &e.rel);
                let data = store.read(&key, 0, e.meta.len as usize).await.unwrap();
                out.push((e.rel, data.to_vec()));
            }
        }
        out.sort();
        out
    }

    async fn snapshot_roundtrip(forks: Store) {
        let overlay = Overlay::new(Store::memory(), forks.clone());
        let id = SessionId::new();
        let view = overlay.create(id, &lease()).await.unwrap();
        put(&view.upper, "a.txt", b"alpha", 0o600).await;
        forks.create_dir(&view.upper.key("dir/sub")).await.unwrap();
        put(&view.upper, "dir/b.txt", b"beta", 0o644).await;
        put_marker(view.whiteouts.as_ref().unwrap(), "gone.txt")
            .await
            .unwrap();
        let big = vec![7u8; 3 * 1024 * 1024 + 5];
        forks
            .put(
                &view.upper.key("big.bin"),
                bytes::Bytes::from(big.clone()),
                &Attrs::default(),
            )
            .await
            .unwrap();

        let source_meta = forks.stat(&view.upper.key("a.txt")).await.unwrap();
        let owner = crate::fork::Owner::anonymous();
        let request = SnapshotRequest {
            owner: Some(owner.clone()),
            held_bytes: Some(1),
            ..SnapshotRequest::named(Some("first"))
        };
        let snap = overlay.snapshot(id, &request).await.unwrap();
        assert!(valid_snapshot_version(&snap.version), "{}", snap.version);
        assert_eq!(snap.name.as_deref(), Some("first"));
        assert_eq!(snap.session, Some(id));
        assert_eq!(snap.owner, Some(owner));
        // The size is what was copied (alpha, beta and big.bin), not what was asked.
        assert_eq!(snap.bytes, Some(5 + 4 + big.len() as u64));
        let listed = overlay.snapshots().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].version, snap.version);
        assert_eq!(listed[0].name.as_deref(), Some("first"));
        assert_eq!(listed[0].session, Some(id));
        assert_eq!(
            (&listed[0].owner, listed[0].bytes),
            (&snap.owner, snap.bytes)
        );
        assert_eq!(
            overlay.find_snapshot(&snap.version).await.unwrap(),
            Some(listed[0].clone())
        );

        // The snapshot outlives its session, and the janitor's list never shows it.
        overlay.delete(id).await.unwrap();
        assert!(overlay.list().await.unwrap().is_empty());

        let id2 = SessionId::new();
        let view2 = overlay
            .create_from(id2, &lease(), &snap.version)
            .await
            .unwrap();
        assert_eq!(get(&view2.upper, "a.txt").await.unwrap(), b"alpha");
        assert_eq!(get(&view2.upper, "dir/b.txt").await.unwrap(), b"beta");
        assert_eq!(get(&view2.upper, "big.bin").await.unwrap(), big);
        // Attributes travel with the copy (where the store keeps them at all).
        assert_eq!(
            forks.stat(&view2.upper.key("a.txt")).await.unwrap(),
            source_meta
        );
        assert_eq!(
            forks
                .stat(&view2.upper.key("dir/sub"))
                .await
                .unwrap()
                .map(|m| m.kind),
            Some(ObjectKind::Dir)
        );
        let wh = view2.whiteouts.as_ref().unwrap();
        assert!(get(wh, "gone.txt").await.is_some());

        // Changing the new fork leaves the snapshot as it was.
        put(&view2.upper, "a.txt", b"changed", 0o644).await;
        put(&view2.upper, "new.txt", b"new", 0o644).await;
        let held = objects(&forks, &format!("snapshots/{}/root", snap.version)).await;
        assert_eq!(
            held.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            vec!["a.txt", "big.bin", "dir/b.txt"]
        );
        assert_eq!(held[0].1, b"alpha");
        overlay.delete(id2).await.unwrap();
        assert!(!overlay.exists(id2).await.unwrap());
        assert_eq!(overlay.snapshots().await.unwrap().len(), 1);

        // Deleting it removes every object of it; a second deletion finds nothing.
        assert!(overlay.delete_snapshot(&snap.version).await.unwrap());
        assert!(overlay.snapshots().await.unwrap().is_empty());
        assert!(
            !forks
                .tree_exists(&format!("snapshots/{}", snap.version))
                .await
                .unwrap()
        );
        assert!(!overlay.delete_snapshot(&snap.version).await.unwrap());
        assert!(matches!(
            overlay
                .create_from(SessionId::new(), &lease(), &snap.version)
                .await,
            Err(ForkError::NoSnapshot { .. })
        ));
    }

    #[tokio::test]
    async fn snapshots_copy_the_layer_on_the_memory_store() {
        snapshot_roundtrip(Store::memory()).await;
    }

    #[tokio::test]
    async fn snapshots_copy_the_layer_on_the_local_store() {
        let dir = tempfile::tempdir().unwrap();
        snapshot_roundtrip(Store::local(dir.path()).unwrap()).await;
    }

    #[tokio::test]
    async fn a_fork_from_a_snapshot_opens_with_its_layer_indexed() {
        use crate::vfs::{Quota, Vfs};
        use forkbox_commands::{FileSystem, FsError, WriteMode};
        let base = Store::memory();
        for (k, v) in [
            ("keep.txt", "k"),
            ("docs/a.txt", "a"),
            ("docs/b.txt", "b"),
            ("gone.txt", "g"),
        ] {
            base.put(k, bytes::Bytes::from(v), &Attrs::default())
                .await
                .unwrap();
        }
        let overlay = Overlay::new(base, Store::memory());
        let id = SessionId::new();
        let fs = Vfs::with_quota(
            overlay.create(id, &lease()).await.unwrap(),
            Quota::UNLIMITED,
        );
        for (path, text) in [("/new.txt", "new"), ("/docs/c.txt", "c")] {
            let mut w = fs.open_write(path, WriteMode::Truncate).await.unwrap();
            w.write(text.as_bytes()).await.unwrap();
            w.close().await.unwrap();
        }
        fs.mkdir("/made").await.unwrap();
        fs.unlink("/gone.txt").await.unwrap();
        fs.unlink("/docs/a.txt").await.unwrap();
        let used = fs.usage().await.unwrap();
        let snap = overlay
            .snapshot(id, &SnapshotRequest::default())
            .await
            .unwrap();

        let view = overlay
            .create_from(SessionId::new(), &lease(), &snap.version)
            .await
            .unwrap();
        let fs2 = Vfs::load(view, Quota::UNLIMITED).await.unwrap();
        let names =
            |v: Vec<forkbox_commands::DirEntry>| v.into_iter().map(|e| e.name).collect::<Vec<_>>();
        assert_eq!(
            names(fs2.read_dir("/").await.unwrap()),
            vec!["docs", "keep.txt", "made", "new.txt"]
        );
        assert_eq!(
            names(fs2.read_dir("/docs").await.unwrap()),
            vec!["b.txt", "c.txt"]
        );
        assert_eq!(fs2.read_at("/new.txt", 0, 100).await.unwrap(), "new");
        assert_eq!(fs2.stat("/gone.txt").await, Err(FsError::NotFound));
        // The quota sees the layer exactly as the session that made it did.
        let loaded = fs2.usage().await.unwrap();
        assert_eq!(
            (loaded.bytes_used, loaded.objects_used),
            (used.bytes_used, used.objects_used)
        );

        // A layer larger than the quota does not open.
        let view = overlay
            .create_from(SessionId::new(), &lease(), &snap.version)
            .await
            .unwrap();
        let small = Quota {
            bytes: None,
            objects: Some(2),
        };
        assert!(matches!(
            Vfs::load(view, small).await,
            Err(FsError::NoSpace)
        ));
    }

    #[tokio::test]
    async fn a_whiteout_replaces_whiteouts_below_it_on_a_local_store() {
        let dir = tempfile::tempdir().unwrap();
        let layer = Layer {
            store: Store::local(dir.path()).unwrap(),
            prefix: "wh/".into(),
        };
        put_marker(&layer, "d/x").await.unwrap();
        put_marker(&layer, "d").await.unwrap();
        let m = layer.store.stat("wh/d").await.unwrap().unwrap();
        assert_eq!((m.kind, m.len), (ObjectKind::File, 0));
    }

    #[tokio::test]
    async fn snapshot_errors_are_typed() {
        let overlay = Overlay::new(Store::memory(), Store::memory());
        let id = SessionId::new();
        overlay.create(id, &lease()).await.unwrap();
        assert!(matches!(
            overlay
                .snapshot(id, &SnapshotRequest::named(Some("no spaces")))
                .await,
            Err(ForkError::BadSnapshotName(_))
        ));
        let other = SessionId::new();
        for version in ["0196f3c2a1b27c4e8f0123456789abcd", "../forks", ""] {
            assert!(matches!(
                overlay.create_from(other, &lease(), version).await,
                Err(ForkError::NoSnapshot { .. })
            ));
            assert_eq!(overlay.find_snapshot(version).await.unwrap(), None);
            assert!(!overlay.delete_snapshot(version).await.unwrap());
        }
        // Nothing was created for the refused fork.
        assert!(!overlay.exists(other).await.unwrap());
        assert!(overlay.snapshots().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_snapshot_without_its_info_is_not_listed() {
        let forks = Store::memory();
        let overlay = Overlay::new(Store::memory(), forks.clone());
        let version = uuid::Uuid::now_v7().simple().to_string();
        forks
            .put(
                &format!("snapshots/{version}/root/half.txt"),
                bytes::Bytes::from_static(b"x"),
                &Attrs::default(),
            )
            .await
            .unwrap();
        assert!(overlay.snapshots().await.unwrap().is_empty());
        assert!(matches!(
            overlay
                .create_from(SessionId::new(), &lease(), &version)
                .await,
            Err(ForkError::NoSnapshot { .. })
        ));
    }

    #[tokio::test]
    async fn walk_is_bounded_and_skips_scratch_objects() {
        let store = Store::memory();
        for k in ["t/a", "t/b", "t/d/c", "t/.forkbox-partial-0123"] {
            store
                .put(k, bytes::Bytes::from_static(b"x"), &Attrs::default())
                .await
                .unwrap();
        }
        let all = walk(&store, "t", 10).await.unwrap();
        let rels: Vec<&str> = all.iter().map(|e| e.rel.as_str()).collect();
        assert_eq!(rels, vec!["a", "b", "d", "d/c"]);
        assert!(matches!(
            walk(&store, "t", 3).await,
            Err(WalkError::TooMany(3))
        ));
        // A file and a directory of the same name are both reported.
        store
            .put("t/d", bytes::Bytes::from_static(b"w"), &Attrs::default())
            .await
            .unwrap();
        let all = walk(&store, "t", 10).await.unwrap();
        let d: Vec<ObjectKind> = all
            .iter()
            .filter(|e| e.rel == "d")
            .map(|e| e.meta.kind)
            .collect();
        assert_eq!(d, vec![ObjectKind::Dir, ObjectKind::File]);
    }
}

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

use async_trait::async_trait;

use super::{ForkError, ForkStrategy, ForkView, Layer, Lease, SessionId};
use crate::storage::{Attrs, Store};

/// Key prefix under which every session layer lives in the forks store.
pub const FORKS_PREFIX: &str = "forks";

/// Largest lease object read; a real one is under 100 bytes.
const LEASE_MAX: usize = 4096;

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
}

#[async_trait]
impl ForkStrategy for Overlay {
    async fn create(&self, id: SessionId, lease: &Lease) -> Result<ForkView, ForkError> {
        let prefix = Overlay::fork_prefix(id);
        // The lease first: from its first object on, the fork is visible to `list` (and
        // so to the janitor) and already says who serves it.
        self.renew(id, lease).await?;
        self.forks
            .create_dir(&format!("{prefix}/root"))
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
        self.forks
            .put(&key, bytes::Bytes::from(lease.encode()), &Attrs::default())
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
}

/// Writes an empty whiteout object.
pub(crate) async fn put_marker(layer: &Layer, rel: &str) -> crate::storage::Result<()> {
    layer
        .store
        .put(&layer.key(rel), bytes::Bytes::new(), &Attrs::default())
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

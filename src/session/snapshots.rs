//! A session's snapshots: the `snapshot` builtin's handle on the fork, and the quota that
//! bounds what one identity keeps.
//!
//! Every snapshot outlives its session, so what sessions may leave behind is bounded per
//! identity, not per session: the key a session authenticated with (its SHA256
//! fingerprint) under `--auth keys`, else one identity, `anonymous`, for everybody. The
//! identity is recorded in each snapshot as its [`Owner`], and the quota is checked
//! against the snapshots storage lists for that owner, so it holds across restarts and
//! for every server sharing the store. One server takes one snapshot per identity at a
//! time; servers sharing a store don't coordinate, so together they may overshoot a quota
//! by one snapshot each (the janitor trims counts back, see [`crate::janitor`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use forkbox_commands::FileSystem;

use crate::fork::{
    ForkError, ForkStrategy, Owner, SessionId, Snapshot, SnapshotRequest, valid_snapshot_name,
};
use crate::shell::{SnapshotControl, SnapshotError, SnapshotInfo};
use crate::vfs::Vfs;

/// Snapshots one session may take, whatever its identity's quota. Each outlives the
/// session (with `overlay` a copy of the session's layer, up to its byte quota; with
/// `tigris` a bucket), so this bounds what one session can leave behind on its own.
pub const MAX_SNAPSHOTS_PER_SESSION: usize = 16;

/// Who may take snapshots, and how much each identity may keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotPolicy {
    /// Whether sessions may take snapshots at all (logging in from one always works).
    pub enabled: bool,
    /// Snapshots one identity may keep.
    pub max_count: usize,
    /// Bytes one identity's snapshots may hold together.
    pub max_bytes: u64,
}

impl SnapshotPolicy {
    /// No snapshots.
    pub const DISABLED: SnapshotPolicy = SnapshotPolicy {
        enabled: false,
        max_count: 0,
        max_bytes: 0,
    };
}

/// The server's snapshot quotas: the policy, and one lock per identity so that a server
/// checks and takes one snapshot of an identity at a time (two sessions of one key cannot
/// both pass the check before either snapshot is recorded).
#[derive(Debug)]
pub struct SnapshotQuotas {
    pub policy: SnapshotPolicy,
    /// Locks of the identities taking a snapshot now; an entry goes when its last user
    /// does, so this holds at most one entry per session in a snapshot.
    locks: Mutex<HashMap<Owner, Arc<tokio::sync::Mutex<()>>>>,
}

impl SnapshotQuotas {
    pub fn new(policy: SnapshotPolicy) -> SnapshotQuotas {
        SnapshotQuotas {
            policy,
            locks: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `f` while holding `owner`'s lock.
    async fn exclusive<T, F>(&self, owner: &Owner, f: F) -> T
    where
        F: std::future::Future<Output = T>,
    {
        let lock = self
            .locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(owner.clone())
            .or_default()
            .clone();
        let out = {
            let _held = lock.lock().await;
            f.await
        };
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        // Two references: the map's and this one. Nobody else holds or awaits it (taking a
        // reference needs the map lock, held here).
        if Arc::strong_count(&lock) == 2 {
            locks.remove(owner);
        }
        out
    }
}

/// The `snapshot` builtin's handle on one session's fork. It checks names, the server's
/// policy, the session's own cap ([`MAX_SNAPSHOTS_PER_SESSION`]) and its identity's quota,
/// and turns fork errors into what the user may see, logging the details.
pub(super) struct SessionSnapshots {
    pub(super) fork: Arc<dyn ForkStrategy>,
    pub(super) quotas: Arc<SnapshotQuotas>,
    /// The session's id (replaced at login when the session takes a fork from the pool).
    pub(super) id: Mutex<SessionId>,
    /// Snapshots taken (or being taken) by this session.
    pub(super) taken: AtomicUsize,
    /// Whom this session's snapshots count against (set at authentication).
    pub(super) owner: Mutex<Owner>,
    /// The session's filesystem, once its fork exists: what its quota counts is what a
    /// snapshot of it holds.
    pub(super) vfs: Mutex<Option<Vfs>>,
}

impl SessionSnapshots {
    pub(super) fn new(
        fork: Arc<dyn ForkStrategy>,
        quotas: Arc<SnapshotQuotas>,
        id: SessionId,
    ) -> SessionSnapshots {
        SessionSnapshots {
            fork,
            quotas,
            id: Mutex::new(id),
            taken: AtomicUsize::new(0),
            owner: Mutex::new(Owner::anonymous()),
            vfs: Mutex::new(None),
        }
    }

    /// The session's id, its fork's.
    fn id(&self) -> SessionId {
        *self.id.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session took the fork of `id` (from the pool) at login.
    pub(super) fn set_id(&self, id: SessionId) {
        *self.id.lock().unwrap_or_else(|p| p.into_inner()) = id;
    }

    fn owner(&self) -> Owner {
        self.owner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// What the session's fork holds now, as its quota counts it (0 before it exists).
    async fn held_bytes(&self) -> u64 {
        let vfs = self.vfs.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match vfs {
            Some(vfs) => vfs.usage().await.map_or(0, |u| u.bytes_used),
            None => 0,
        }
    }

    /// Checks `owner`'s quota and takes the snapshot; called under `owner`'s lock.
    async fn take_within_quota(
        &self,
        owner: &Owner,
        name: Option<&str>,
    ) -> Result<Snapshot, SnapshotError> {
        let policy = self.quotas.policy;
        let held = self.held_bytes().await;
        let (count, bytes) = self
            .fork
            .snapshots()
            .await
            .map_err(user_error)?
            .iter()
            .filter(|s| s.owner.as_ref() == Some(owner))
            .fold((0usize, 0u64), |(n, b), s| {
                (n + 1, b.saturating_add(s.bytes.unwrap_or(0)))
            });
        let refused = |held| SnapshotError::Quota {
            max_count: policy.max_count,
            max_bytes: policy.max_bytes,
            count,
            bytes,
            held,
        };
        if count >= policy.max_count || bytes.saturating_add(held) > policy.max_bytes {
            tracing::info!(%owner, count, bytes, held, "snapshot refused: quota reached");
            return Err(refused(held));
        }
        let request = SnapshotRequest {
            name: name.map(str::to_string),
            owner: Some(owner.clone()),
            held_bytes: Some(held),
        };
        let snap = self
            .fork
            .snapshot(self.id(), &request)
            .await
            .map_err(user_error)?;
        // The size the strategy measured may exceed what was checked (a file closed
        // meanwhile on another channel): a snapshot over the quota does not stay.
        let made = snap.bytes.unwrap_or(held);
        if bytes.saturating_add(made) > policy.max_bytes {
            tracing::info!(%owner, version = %snap.version, made, "snapshot over the quota; deleting it");
            if let Err(e) = self.fork.delete_snapshot(&snap.version).await {
                tracing::error!(version = %snap.version, error = ?e, "a snapshot over the quota was not deleted");
            }
            return Err(refused(made));
        }
        Ok(snap)
    }
}

fn snapshot_info(s: Snapshot) -> SnapshotInfo {
    SnapshotInfo {
        version: s.version,
        name: s.name,
        created: s.created,
    }
}

fn user_error(e: ForkError) -> SnapshotError {
    match e {
        ForkError::Unsupported(_) => SnapshotError::Unsupported,
        ForkError::BadSnapshotName(name) => SnapshotError::InvalidName(name),
        e => {
            tracing::error!(error = ?e, "snapshot operation failed");
            SnapshotError::Failed
        }
    }
}

#[async_trait]
impl SnapshotControl for SessionSnapshots {
    async fn take(&self, name: Option<&str>) -> Result<SnapshotInfo, SnapshotError> {
        if let Some(name) = name
            && !valid_snapshot_name(name)
        {
            return Err(SnapshotError::InvalidName(name.to_string()));
        }
        if !self.quotas.policy.enabled {
            return Err(SnapshotError::Disabled);
        }
        self.taken
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_SNAPSHOTS_PER_SESSION).then_some(n + 1)
            })
            .map_err(|_| SnapshotError::Limit(MAX_SNAPSHOTS_PER_SESSION))?;
        let owner = self.owner();
        let taken = self
            .quotas
            .exclusive(&owner, self.take_within_quota(&owner, name))
            .await;
        match taken {
            Ok(s) => {
                tracing::info!(session = %self.id(), version = %s.version, name = ?s.name, %owner, bytes = ?s.bytes, "snapshot taken");
                Ok(snapshot_info(s))
            }
            Err(e) => {
                self.taken.fetch_sub(1, Ordering::SeqCst);
                Err(e)
            }
        }
    }

    async fn list(&self) -> Result<Vec<SnapshotInfo>, SnapshotError> {
        self.fork
            .snapshots()
            .await
            .map(|all| all.into_iter().map(snapshot_info).collect())
            .map_err(user_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::{Lease, Overlay, ServerId};
    use crate::storage::Store;
    use crate::vfs::Quota;
    use forkbox_commands::WriteMode;
    use std::time::Duration;

    /// A session of `overlay` owned by `owner`, with a file of `len` bytes.
    async fn session(
        overlay: &Arc<Overlay>,
        quotas: &Arc<SnapshotQuotas>,
        owner: Owner,
        len: usize,
    ) -> SessionSnapshots {
        let id = SessionId::new();
        let view = overlay
            .create(id, &Lease::new(ServerId::new(), Duration::from_secs(60)))
            .await
            .unwrap();
        let vfs = Vfs::with_quota(view, Quota::UNLIMITED);
        let mut w = vfs.open_write("/f", WriteMode::Truncate).await.unwrap();
        w.write(&vec![b'x'; len]).await.unwrap();
        w.close().await.unwrap();
        let s = SessionSnapshots::new(overlay.clone(), quotas.clone(), id);
        *s.owner.lock().unwrap() = owner;
        *s.vfs.lock().unwrap() = Some(vfs);
        s
    }

    fn quotas(enabled: bool, max_count: usize, max_bytes: u64) -> Arc<SnapshotQuotas> {
        Arc::new(SnapshotQuotas::new(SnapshotPolicy {
            enabled,
            max_count,
            max_bytes,
        }))
    }

    #[tokio::test]
    async fn disabled_snapshots_take_nothing() {
        let overlay = Arc::new(Overlay::new(Store::memory(), Store::memory()));
        let s = session(
            &overlay,
            &quotas(false, 16, 1 << 30),
            Owner::anonymous(),
            10,
        )
        .await;
        assert_eq!(s.take(None).await, Err(SnapshotError::Disabled));
        // A bad name is still a bad name.
        assert!(matches!(
            s.take(Some("a b")).await,
            Err(SnapshotError::InvalidName(_))
        ));
        assert!(overlay.snapshots().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn the_quota_counts_every_session_of_one_owner() {
        let overlay = Arc::new(Overlay::new(Store::memory(), Store::memory()));
        let q = quotas(true, 2, 100);
        let owner = Owner::anonymous();
        let a = session(&overlay, &q, owner.clone(), 30).await;
        let b = session(&overlay, &q, owner.clone(), 30).await;
        a.take(Some("one")).await.unwrap();
        b.take(None).await.unwrap();
        // The count: a third is refused, to either session.
        assert_eq!(
            b.take(None).await,
            Err(SnapshotError::Quota {
                max_count: 2,
                max_bytes: 100,
                count: 2,
                bytes: 60,
                held: 30
            })
        );
        let all = overlay.snapshots().await.unwrap();
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|s| s.owner.as_ref() == Some(&owner)));
        assert!(all.iter().all(|s| s.bytes == Some(30)));
        // Another owner has a quota of its own; the bytes: 50 more would make 110.
        let other =
            Owner::from_fingerprint("SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s").unwrap();
        let c = session(&overlay, &q, other.clone(), 60).await;
        c.take(None).await.unwrap();
        let d = session(&overlay, &q, other, 50).await;
        assert!(matches!(
            d.take(None).await,
            Err(SnapshotError::Quota {
                count: 1,
                bytes: 60,
                held: 50,
                ..
            })
        ));
        assert_eq!(overlay.snapshots().await.unwrap().len(), 3);
        // Refused takes do not use up the session's own allowance.
        assert_eq!(d.taken.load(Ordering::SeqCst), 0);
        // Freeing room lets the owner take one again.
        let first = &overlay.snapshots().await.unwrap()[0];
        assert!(overlay.delete_snapshot(&first.version).await.unwrap());
        b.take(None).await.unwrap();
        assert!(q.locks.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn concurrent_takes_of_one_owner_do_not_overshoot_on_one_server() {
        let overlay = Arc::new(Overlay::new(Store::memory(), Store::memory()));
        let q = quotas(true, 3, 1 << 30);
        let mut sessions = Vec::new();
        for _ in 0..8 {
            sessions.push(Arc::new(
                session(&overlay, &q, Owner::anonymous(), 10).await,
            ));
        }
        let takes = sessions.iter().map(|s| {
            let s = s.clone();
            tokio::spawn(async move { s.take(None).await })
        });
        let results = futures::future::join_all(takes).await;
        let ok = results
            .into_iter()
            .filter(|r| matches!(r, Ok(Ok(_))))
            .count();
        assert_eq!(ok, 3);
        assert_eq!(overlay.snapshots().await.unwrap().len(), 3);
    }
}

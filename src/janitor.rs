//! The janitor: deletes forks that no live server serves any more, and snapshots past
//! their retention.
//!
//! A fork is swept when its lease has expired (its server crashed or was killed before
//! it could delete it), or when it has no readable lease and is older than a lease
//! period (its creation was interrupted). Live forks are never swept: their server
//! renews their leases every third of a lease period. So several servers may share one
//! store, each running a janitor, and none deletes another's live forks.
//!
//! Snapshots are swept by their records alone ([`Retention`]): one older than the maximum
//! age goes, and so do an owner's oldest beyond the count limit (servers sharing a store
//! check quotas independently, so a race may overshoot it). Every server computes the same
//! set from the same records, and deleting a snapshot twice is harmless, so janitors of
//! several servers agree.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use crate::fork::{ForkError, ForkStrategy, Owner, SessionId, Snapshot, delete_with_deadline};

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    pub examined: usize,
    pub deleted: usize,
    pub failed: usize,
}

/// What one snapshot pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapshotSweep {
    pub examined: usize,
    /// Deleted for their age.
    pub expired: usize,
    /// Deleted because their owner kept more than the count limit.
    pub over_count: usize,
    pub failed: usize,
}

/// How long snapshots are kept, and how many per owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Snapshots older than this are deleted; `None` keeps them until an operator deletes
    /// them.
    pub max_age: Option<Duration>,
    /// An owner's snapshots beyond this many (the newest are kept) are deleted; `None`: no
    /// limit. Snapshots without an owner are not counted.
    pub max_count: Option<usize>,
    /// A snapshot never deleted, whatever its age: the server's `--base-snapshot`, which
    /// every session starts from (it still counts against its owner's limit).
    pub pinned: Option<String>,
}

impl Retention {
    /// Keeps every snapshot.
    pub const KEEP_ALL: Retention = Retention {
        max_age: None,
        max_count: None,
        pinned: None,
    };

    fn keeps_all(&self) -> bool {
        self.max_age.is_none() && self.max_count.is_none()
    }
}

#[derive(Clone, Debug)]
pub struct Janitor {
    pub strategy: Arc<dyn ForkStrategy>,
    /// How long a lease holds; a fork without a lease gets this much time from its birth.
    pub lease_ttl: Duration,
    /// Deadline for deleting one fork, retries included.
    pub delete_deadline: Duration,
    /// Which snapshots [`Janitor::sweep_snapshots`] deletes.
    pub retention: Retention,
}

/// Why a snapshot is to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Doom {
    Expired,
    OverCount,
}

/// The snapshots of `all` (oldest first) that `retention` deletes at `now`, and why.
fn doomed(all: &[Snapshot], retention: &Retention, now: SystemTime) -> Vec<(String, Doom)> {
    let mut out = Vec::new();
    let mut kept: Vec<&Snapshot> = Vec::new();
    for s in all {
        if retention.pinned.as_deref() == Some(s.version.as_str()) {
            kept.push(s);
            continue;
        }
        let expired = retention
            .max_age
            .is_some_and(|age| s.created.checked_add(age).is_some_and(|end| end < now));
        if expired {
            out.push((s.version.clone(), Doom::Expired));
        } else {
            kept.push(s);
        }
    }
    if let Some(max) = retention.max_count {
        let mut by_owner: HashMap<&Owner, Vec<&Snapshot>> = HashMap::new();
        for s in kept {
            if let Some(owner) = &s.owner {
                by_owner.entry(owner).or_default().push(s);
            }
        }
        for mut mine in by_owner.into_values() {
            // Oldest first (by time, then version: versions sort by creation time too).
            mine.sort_by(|a, b| (a.created, &a.version).cmp(&(b.created, &b.version)));
            let excess = mine.len().saturating_sub(max);
            out.extend(
                mine.into_iter()
                    .filter(|s| retention.pinned.as_deref() != Some(s.version.as_str()))
                    .take(excess)
                    .map(|s| (s.version.clone(), Doom::OverCount)),
            );
        }
    }
    out
}

impl Janitor {
    /// True when nobody serves the fork any more.
    async fn abandoned(&self, id: SessionId, now: SystemTime) -> bool {
        match self.strategy.lease(id).await {
            Ok(Some(lease)) => lease.expired(now),
            Ok(None) => id.created_at() + self.lease_ttl < now,
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "cannot read a fork's lease; leaving it");
                false
            }
        }
    }

    /// One pass over every fork in storage.
    pub async fn sweep(&self) -> Sweep {
        let mut sweep = Sweep::default();
        let forks = match self.strategy.list().await {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %e, "janitor cannot list forks");
                return sweep;
            }
        };
        let now = SystemTime::now();
        for id in forks {
            sweep.examined += 1;
            if !self.abandoned(id, now).await {
                continue;
            }
            match delete_with_deadline(self.strategy.as_ref(), id, self.delete_deadline).await {
                Ok(_) => {
                    sweep.deleted += 1;
                    tracing::info!(session = %id, "janitor deleted an abandoned fork");
                }
                Err(e) => {
                    sweep.failed += 1;
                    tracing::warn!(session = %id, error = %e, "janitor could not delete an abandoned fork");
                }
            }
        }
        tracing::info!(
            examined = sweep.examined,
            deleted = sweep.deleted,
            failed = sweep.failed,
            "janitor pass"
        );
        crate::telemetry::metrics::janitor_swept(sweep.deleted);
        sweep
    }

    /// One pass over every snapshot: deletes those [`Janitor::retention`] no longer keeps
    /// at `now` (a parameter, so tests need not wait days).
    pub async fn sweep_snapshots(&self, now: SystemTime) -> SnapshotSweep {
        let mut sweep = SnapshotSweep::default();
        if self.retention.keeps_all() {
            return sweep;
        }
        let all = match self.strategy.snapshots().await {
            Ok(all) => all,
            Err(ForkError::Unsupported(_)) => return sweep,
            Err(e) => {
                tracing::warn!(error = %e, "janitor cannot list snapshots");
                return sweep;
            }
        };
        sweep.examined = all.len();
        for (version, why) in doomed(&all, &self.retention, now) {
            let deleted = tokio::time::timeout(
                self.delete_deadline,
                self.strategy.delete_snapshot(&version),
            )
            .await;
            match deleted {
                Ok(Ok(_)) => {
                    match why {
                        Doom::Expired => sweep.expired += 1,
                        Doom::OverCount => sweep.over_count += 1,
                    }
                    tracing::info!(snapshot = %version, reason = ?why, "janitor deleted a snapshot");
                }
                Ok(Err(e)) => {
                    sweep.failed += 1;
                    tracing::warn!(snapshot = %version, error = %e, "janitor could not delete a snapshot");
                }
                Err(_) => {
                    sweep.failed += 1;
                    tracing::warn!(snapshot = %version, deadline = ?self.delete_deadline, "janitor could not delete a snapshot in time");
                }
            }
        }
        if sweep.expired + sweep.over_count + sweep.failed > 0 {
            tracing::info!(
                examined = sweep.examined,
                expired = sweep.expired,
                over_count = sweep.over_count,
                failed = sweep.failed,
                "janitor snapshot pass"
            );
        }
        sweep
    }

    /// One whole pass: abandoned forks, then snapshots past their retention.
    pub async fn pass(&self) {
        self.sweep().await;
        self.sweep_snapshots(SystemTime::now()).await;
    }

    /// Runs a pass every `interval` until `stop` fires.
    pub async fn run(self, interval: Duration, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(interval) => {}
            }
            self.pass().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::{Lease, Overlay, ServerId, SnapshotRequest};
    use crate::storage::{Attrs, Store};

    #[tokio::test]
    async fn only_abandoned_forks_are_swept() {
        let overlay = Arc::new(Overlay::new(Store::memory(), Store::memory()));
        let live = SessionId::new();
        let expired = SessionId::new();
        overlay
            .create(live, &Lease::new(ServerId::new(), Duration::from_secs(60)))
            .await
            .unwrap();
        let old = Lease {
            owner: ServerId::new(),
            expires: SystemTime::now() - Duration::from_secs(1),
        };
        overlay.create(expired, &old).await.unwrap();
        let janitor = Janitor {
            strategy: overlay.clone(),
            lease_ttl: Duration::from_secs(60),
            delete_deadline: Duration::from_secs(5),
            retention: Retention::KEEP_ALL,
        };
        let sweep = janitor.sweep().await;
        assert_eq!(
            sweep,
            Sweep {
                examined: 2,
                deleted: 1,
                failed: 0
            }
        );
        assert_eq!(overlay.list().await.unwrap(), vec![live]);
    }

    #[tokio::test]
    async fn forks_without_a_lease_get_one_lease_period() {
        let overlay = Arc::new(Overlay::new(Store::memory(), Store::memory()));
        let id = SessionId::new();
        overlay
            .create(id, &Lease::new(ServerId::new(), Duration::from_secs(60)))
            .await
            .unwrap();
        overlay
            .forks_store()
            .delete(&format!("forks/{id}/lease"))
            .await
            .unwrap();
        let young = Janitor {
            strategy: overlay.clone(),
            lease_ttl: Duration::from_secs(3600),
            delete_deadline: Duration::from_secs(5),
            retention: Retention::KEEP_ALL,
        };
        assert_eq!(young.sweep().await.deleted, 0);
        let strict = Janitor {
            lease_ttl: Duration::ZERO,
            ..young
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(strict.sweep().await.deleted, 1);
    }

    const DAY: Duration = Duration::from_secs(24 * 3600);

    /// A session of `overlay` with one file, and a snapshot of it owned by `owner`.
    async fn snapshot_of(overlay: &Overlay, owner: &Owner) -> Snapshot {
        let id = SessionId::new();
        let view = overlay
            .create(id, &Lease::new(ServerId::new(), Duration::from_secs(60)))
            .await
            .unwrap();
        view.upper
            .store
            .put(
                &view.upper.key("f"),
                bytes::Bytes::from_static(b"data"),
                &Attrs::default(),
            )
            .await
            .unwrap();
        let request = SnapshotRequest {
            owner: Some(owner.clone()),
            ..SnapshotRequest::default()
        };
        let snap = overlay.snapshot(id, &request).await.unwrap();
        overlay.delete(id).await.unwrap();
        snap
    }

    fn versions(all: &[Snapshot]) -> Vec<&str> {
        all.iter().map(|s| s.version.as_str()).collect()
    }

    #[tokio::test]
    async fn snapshots_past_the_maximum_age_are_deleted() {
        let forks = Store::memory();
        let overlay = Arc::new(Overlay::new(Store::memory(), forks.clone()));
        let owner = Owner::anonymous();
        let first = snapshot_of(&overlay, &owner).await;
        let second = snapshot_of(&overlay, &owner).await;
        let janitor = Janitor {
            strategy: overlay.clone(),
            lease_ttl: Duration::from_secs(60),
            delete_deadline: Duration::from_secs(5),
            retention: Retention {
                max_age: Some(7 * DAY),
                max_count: None,
                pinned: None,
            },
        };
        // Within the age: kept.
        let now = SystemTime::now();
        let sweep = janitor.sweep_snapshots(now + 6 * DAY).await;
        assert_eq!(
            sweep,
            SnapshotSweep {
                examined: 2,
                ..SnapshotSweep::default()
            }
        );
        assert_eq!(overlay.snapshots().await.unwrap().len(), 2);
        // Past it: both go, files and all.
        let sweep = janitor.sweep_snapshots(now + 8 * DAY).await;
        assert_eq!((sweep.examined, sweep.expired, sweep.failed), (2, 2, 0));
        assert!(overlay.snapshots().await.unwrap().is_empty());
        for s in [&first, &second] {
            assert!(
                !forks
                    .tree_exists(&format!("snapshots/{}", s.version))
                    .await
                    .unwrap()
            );
        }
        // Without an age limit nothing expires, whatever the time.
        let third = snapshot_of(&overlay, &owner).await;
        let forever = Janitor {
            retention: Retention::KEEP_ALL,
            ..janitor
        };
        assert_eq!(forever.sweep_snapshots(now + 3650 * DAY).await.examined, 0);
        assert_eq!(
            versions(&overlay.snapshots().await.unwrap()),
            [third.version.as_str()]
        );
    }

    #[tokio::test]
    async fn an_owner_s_oldest_snapshots_beyond_the_count_limit_are_deleted() {
        let overlay = Arc::new(Overlay::new(Store::memory(), Store::memory()));
        let a = Owner::anonymous();
        let b =
            Owner::from_fingerprint("SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s").unwrap();
        let mut of_a = Vec::new();
        for _ in 0..3 {
            of_a.push(snapshot_of(&overlay, &a).await);
        }
        let of_b = snapshot_of(&overlay, &b).await;
        // A snapshot from before owners were recorded counts against nobody.
        let id = SessionId::new();
        overlay
            .create(id, &Lease::new(ServerId::new(), Duration::from_secs(60)))
            .await
            .unwrap();
        let unowned = overlay
            .snapshot(id, &SnapshotRequest::default())
            .await
            .unwrap();
        let janitor = Janitor {
            strategy: overlay.clone(),
            lease_ttl: Duration::from_secs(60),
            delete_deadline: Duration::from_secs(5),
            retention: Retention {
                max_age: Some(7 * DAY),
                max_count: Some(2),
                pinned: None,
            },
        };
        let sweep = janitor.sweep_snapshots(SystemTime::now()).await;
        assert_eq!(
            sweep,
            SnapshotSweep {
                examined: 5,
                expired: 0,
                over_count: 1,
                failed: 0
            }
        );
        let mut left: Vec<String> = overlay
            .snapshots()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.version)
            .collect();
        left.sort();
        let mut want = vec![
            of_a[1].version.clone(),
            of_a[2].version.clone(),
            of_b.version,
            unowned.version,
        ];
        want.sort();
        assert_eq!(left, want);
    }

    #[test]
    fn expired_snapshots_are_not_also_counted() {
        let owner = Owner::anonymous();
        let at = |secs: u64, v: &str| Snapshot {
            version: v.into(),
            name: None,
            created: std::time::UNIX_EPOCH + Duration::from_secs(secs),
            session: None,
            owner: Some(owner.clone()),
            bytes: None,
        };
        let all = [at(0, "a"), at(100, "b"), at(200, "c")];
        let retention = Retention {
            max_age: Some(Duration::from_secs(150)),
            max_count: Some(1),
            pinned: None,
        };
        let now = std::time::UNIX_EPOCH + Duration::from_secs(210);
        // a is too old; of b and c, only c is kept.
        assert_eq!(
            doomed(&all, &retention, now),
            vec![("a".into(), Doom::Expired), ("b".into(), Doom::OverCount)]
        );
        // A pinned snapshot stays, and counts: the newest goes in its place.
        let pinned = Retention {
            pinned: Some("a".into()),
            ..retention
        };
        assert_eq!(
            doomed(&all, &pinned, now),
            vec![("b".into(), Doom::OverCount), ("c".into(), Doom::OverCount)]
        );
    }
}

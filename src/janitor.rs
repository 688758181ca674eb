//! The janitor: deletes forks that no live server serves any more.
//!
//! A fork is swept when its lease has expired (its server crashed or was killed before
//! it could delete it), or when it has no readable lease and is older than a lease
//! period (its creation was interrupted). Live forks are never swept: their server
//! renews their leases every third of a lease period. So several servers may share one
//! store, each running a janitor, and none deletes another's live forks.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use crate::fork::{ForkStrategy, SessionId, delete_with_deadline};

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    pub examined: usize,
    pub deleted: usize,
    pub failed: usize,
}

#[derive(Clone, Debug)]
pub struct Janitor {
    pub strategy: Arc<dyn ForkStrategy>,
    /// How long a lease holds; a fork without a lease gets this much time from its birth.
    pub lease_ttl: Duration,
    /// Deadline for deleting one fork, retries included.
    pub delete_deadline: Duration,
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
        sweep
    }

    /// Sweeps every `interval` until `stop` fires.
    pub async fn run(self, interval: Duration, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(interval) => {}
            }
            self.sweep().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::{Lease, Overlay, ServerId};
    use crate::storage::Store;

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
        };
        assert_eq!(young.sweep().await.deleted, 0);
        let strict = Janitor {
            lease_ttl: Duration::ZERO,
            ..young
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(strict.sweep().await.deleted, 1);
    }
}

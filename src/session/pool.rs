//! A pool of forks made ahead of logins (`--fork-pool`), so that a login takes a fork
//! ready-made instead of waiting for one to be created on the client's path.
//!
//! Each waiting fork is an ordinary fork of the default start (the base, or
//! `--base-snapshot`) with its own [`SessionId`], made with a lease of this server like
//! any session's: the session that takes it adopts that id, so "one connection, one fork,
//! one id" holds and nothing needs renaming. What keeps the design's invariants:
//! - **Used once.** [`ForkPool::take`] pops a fork; nothing hands it out again, and the
//!   session that took it deletes it at teardown like a fork it made.
//! - **Leases.** The pool's task renews the lease of every waiting fork every third of a
//!   lease period, as a session does its own, so no janitor (of this server or of another
//!   replica on the same store) sweeps a waiting fork. A fork is renewed while it is out of
//!   the queue, so a session that took it can never have its deleted fork re-leased.
//! - **Drain and shutdown.** When the server begins to drain, the task stops taking part
//!   in logins and deletes every waiting fork (each under the delete deadline). A crash, or
//!   a drain that runs out of time, leaves them to the janitor: their leases lapse.
//! - **Snapshots.** A login that asks for a snapshot (`snap-<version>`) forks that
//!   snapshot itself; the pool only holds forks of the default start.
//! - **Freshness.** A session should not start on a stale base. With `overlay` (every
//!   backend) a fork is a view: it reads the base when the session first looks, so a
//!   waiting fork shows the base as it is at login, and a file added to the base after
//!   the pool filled is seen by the next login. With `tigris` a bucket fork is a copy of
//!   the base at the moment it was made, and S3 offers no cheap way to learn that a
//!   bucket changed (no generation, no bucket ETag; a listing costs as much as the base is
//!   large). So a fork waits at most `--fork-pool-max-age` ([`DEFAULT_MAX_AGE`]): an older
//!   one is never handed out, and the task deletes it and makes another, which bounds how
//!   old a base any login sees. (`--base-snapshot` forks a fixed snapshot: nothing there
//!   goes stale.)

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::fork::{ForkStrategy, Lease, ServerId, SessionId, delete_with_deadline};
use crate::vfs::{Quota, Vfs};

use super::StartError;

/// The largest `--fork-pool`: each waiting fork is a fork in storage and a lease write
/// every third of a lease period, so the pool stays a handful.
pub const MAX_POOL: usize = 64;

/// The pool size unless `--fork-pool` says otherwise: sequential logins (an agent's
/// `ssh host cmd` loop) always find one, and a burst of two as well; more only shifts the
/// wait to the refill.
pub const DEFAULT_POOL: usize = 2;

/// Pause after a fork could not be made for the pool before the next try, so a store that
/// is down is not hammered; logins meanwhile make their own forks (and fail as they would).
const REFILL_BACKOFF: Duration = Duration::from_secs(1);

/// How long a fork waits in the pool unless `--fork-pool-max-age` says otherwise: a
/// `tigris` bucket fork is a copy of the base when it was made, so this bounds how stale a
/// base a login can be given; replacing the pool's forks once a minute costs a create and a
/// delete each, little beside the logins of a public endpoint.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(60);

/// How a fork of the default start is made: by the pool ahead of time, or by a session at
/// login when the pool has none.
#[derive(Debug, Clone)]
pub struct Maker {
    pub fork: Arc<dyn ForkStrategy>,
    /// This server, as named in the leases of the forks it makes.
    pub owner: ServerId,
    pub lease_ttl: Duration,
    /// What each fork may hold.
    pub quota: Quota,
    /// Deadline for deleting a fork, retries included.
    pub delete_deadline: Duration,
}

impl Maker {
    /// Makes the fork of `id` from `from` (a snapshot version) or else from the base, and
    /// opens its filesystem. A fork that was made but cannot be opened is deleted at once:
    /// nobody ever had it.
    pub async fn make(&self, id: SessionId, from: Option<&str>) -> Result<Vfs, StartError> {
        let lease = Lease::new(self.owner, self.lease_ttl);
        let Some(version) = from else {
            let view = self.fork.create(id, &lease).await?;
            return Ok(Vfs::with_quota(view, self.quota));
        };
        if !crate::fork::valid_snapshot_version(version) {
            return Err(crate::fork::ForkError::NoSnapshot {
                version: version.to_string(),
            }
            .into());
        }
        let view = self.fork.create_from(id, &lease, version).await?;
        match Vfs::load(view, self.quota).await {
            Ok(vfs) => Ok(vfs),
            Err(source) => {
                self.delete(id).await;
                Err(StartError::Load {
                    version: version.to_string(),
                    source,
                })
            }
        }
    }

    /// Deletes the fork of `id` under the deadline; one that cannot be deleted is logged
    /// and left to the janitor. Whether it went.
    pub async fn delete(&self, id: SessionId) -> bool {
        match delete_with_deadline(self.fork.as_ref(), id, self.delete_deadline).await {
            Ok(_) => true,
            Err(e) => {
                tracing::error!(session = %id, error = %e, "fork not deleted; leaving it to the janitor");
                false
            }
        }
    }

    /// Writes a fresh lease for the fork of `id`; a failure is logged (the next renewal,
    /// a third of a lease period later, tries again).
    pub async fn renew(&self, id: SessionId) {
        let lease = Lease::new(self.owner, self.lease_ttl);
        if let Err(e) = self.fork.renew(id, &lease).await {
            tracing::warn!(session = %id, error = %e, "lease renewal failed");
        }
    }
}

/// A fork made ahead of a login: its id (the session's, once taken) and its filesystem.
pub struct Pooled {
    pub id: SessionId,
    pub vfs: Vfs,
    /// When it was made: past the pool's age limit it is replaced, never handed out.
    made: Instant,
}

impl std::fmt::Debug for Pooled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pooled")
            .field("id", &self.id)
            .field("made", &self.made)
            .finish_non_exhaustive()
    }
}

/// Forks of the default start waiting for logins; see the module's documentation.
#[derive(Debug)]
pub struct ForkPool {
    maker: Maker,
    /// The snapshot every fork of the pool starts from (`--base-snapshot`), if any.
    from: Option<String>,
    /// How many forks wait at most; 0: no pool.
    size: usize,
    /// How long a fork may wait before it is replaced (see the module's "Freshness").
    max_age: Duration,
    /// The forks waiting, oldest first, and whether the pool still hands them out (not
    /// once it began deleting them).
    ready: Mutex<(VecDeque<Pooled>, bool)>,
    /// Wakes the task when a fork was taken, to make another.
    taken: tokio::sync::Notify,
}

impl ForkPool {
    /// A pool of `size` forks (at most [`MAX_POOL`]) made by `maker` from `from`, each
    /// replaced once it has waited `max_age`; nothing is made until [`ForkPool::run`] runs.
    pub fn new(
        maker: Maker,
        from: Option<String>,
        size: usize,
        max_age: Duration,
    ) -> Arc<ForkPool> {
        Arc::new(ForkPool {
            maker,
            from,
            size: size.min(MAX_POOL),
            max_age,
            ready: Mutex::new((VecDeque::new(), true)),
            taken: tokio::sync::Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (VecDeque<Pooled>, bool)> {
        self.ready.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How forks are made, renewed and deleted, for forks made outside the pool.
    pub fn maker(&self) -> &Maker {
        &self.maker
    }

    /// How many forks wait now.
    pub fn waiting(&self) -> usize {
        self.lock().0.len()
    }

    /// Takes a waiting fork, if there is one: it is the caller's from now on (its lease to
    /// renew, its deletion to make). The pool makes another in the background.
    pub fn take(&self) -> Option<Pooled> {
        let taken = {
            let mut ready = self.lock();
            if !ready.1 {
                return None;
            }
            // The oldest fork still within the age limit; older ones (the task is late to
            // replace them) stay for the task to delete.
            let now = Instant::now();
            let fresh = ready
                .0
                .iter()
                .position(|p| now.duration_since(p.made) < self.max_age);
            fresh.and_then(|i| ready.0.remove(i))
        };
        if taken.is_some() {
            self.taken.notify_one();
        }
        taken
    }

    /// Keeps the pool full and its leases fresh until `stop` fires, then deletes every
    /// fork still waiting. Forks are made one at a time, after a take or a failure's pause.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        if self.size == 0 {
            return;
        }
        let every = self.maker.lease_ttl / 3;
        let mut renew_at = Instant::now() + every;
        loop {
            if stop.is_cancelled() {
                break;
            }
            if self.waiting() < self.size {
                let id = SessionId::new();
                match self.maker.make(id, self.from.as_deref()).await {
                    Ok(vfs) => {
                        tracing::debug!(session = %id, "fork made for the pool");
                        let made = Instant::now();
                        self.lock().0.push_back(Pooled { id, vfs, made });
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "a fork for the pool could not be made");
                        tokio::select! {
                            _ = stop.cancelled() => break,
                            _ = tokio::time::sleep(REFILL_BACKOFF) => {}
                        }
                        continue;
                    }
                }
            }
            // When the oldest waiting fork ages out (renewals may have reordered the queue).
            let oldest = self.lock().0.iter().map(|p| p.made).min();
            let aged_at = oldest.map_or(renew_at, |made| made + self.max_age);
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = self.taken.notified() => {}
                _ = tokio::time::sleep_until(renew_at) => {
                    self.renew_all().await;
                    renew_at = Instant::now() + every;
                }
                _ = tokio::time::sleep_until(aged_at) => self.retire_aged().await,
            }
        }
        self.empty().await;
    }

    /// Takes every fork that has waited the age limit out of the queue (no login gets it
    /// from then on) and deletes it; the loop then makes their replacements.
    async fn retire_aged(&self) {
        let aged = {
            let now = Instant::now();
            let mut ready = self.lock();
            let (old, fresh): (VecDeque<Pooled>, VecDeque<Pooled>) = ready
                .0
                .drain(..)
                .partition(|p| now.duration_since(p.made) >= self.max_age);
            ready.0 = fresh;
            old
        };
        let count = aged.len();
        let mut deleted = 0usize;
        for pooled in aged {
            if self.maker.delete(pooled.id).await {
                deleted += 1;
            }
        }
        if count > 0 {
            tracing::info!(count, deleted, "aged pool forks replaced");
        }
    }

    /// Renews the lease of every waiting fork, each while it is out of the queue (a login
    /// meanwhile takes another, or makes its own).
    async fn renew_all(&self) {
        let count = self.waiting();
        for _ in 0..count {
            let Some(pooled) = self.lock().0.pop_front() else {
                return;
            };
            self.maker.renew(pooled.id).await;
            self.lock().0.push_back(pooled);
        }
    }

    /// Stops handing out forks and deletes those waiting.
    async fn empty(&self) {
        let waiting: Vec<Pooled> = {
            let mut ready = self.lock();
            ready.1 = false;
            ready.0.drain(..).collect()
        };
        let count = waiting.len();
        let mut deleted = 0usize;
        for pooled in waiting {
            if self.maker.delete(pooled.id).await {
                deleted += 1;
            }
        }
        tracing::info!(count, deleted, "fork pool emptied");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fork::Overlay;
    use crate::storage::Store;

    const AGE: Duration = Duration::from_secs(60);

    fn pool(size: usize) -> (Arc<ForkPool>, Arc<dyn ForkStrategy>) {
        let fork: Arc<dyn ForkStrategy> = Arc::new(Overlay::new(Store::memory(), Store::memory()));
        let maker = Maker {
            fork: fork.clone(),
            owner: ServerId::new(),
            lease_ttl: Duration::from_secs(3600),
            quota: Quota {
                bytes: None,
                objects: None,
            },
            delete_deadline: Duration::from_secs(10),
        };
        (ForkPool::new(maker, None, size, AGE), fork)
    }

    fn waiting_ids(pool: &ForkPool) -> Vec<SessionId> {
        pool.lock().0.iter().map(|p| p.id).collect()
    }

    async fn filled(pool: &ForkPool, n: usize) {
        while pool.waiting() < n {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_fork_past_the_age_limit_is_never_handed_out() {
        let (pool, _) = pool(1);
        let id = SessionId::new();
        let vfs = pool.maker.make(id, None).await.unwrap();
        let made = Instant::now();
        pool.lock().0.push_back(Pooled { id, vfs, made });
        tokio::time::advance(AGE).await;
        assert!(pool.take().is_none());
        assert_eq!(pool.waiting(), 1, "left for the task to delete");
    }

    #[tokio::test(start_paused = true)]
    async fn aged_forks_are_deleted_and_replaced_and_a_drain_deletes_the_rest() {
        let (pool, fork) = pool(2);
        let stop = CancellationToken::new();
        let task = tokio::spawn(pool.clone().run(stop.clone()));
        filled(&pool, 2).await;
        let first = waiting_ids(&pool);
        // Just before the limit they are still handed out; past it, replaced.
        tokio::time::sleep(AGE - Duration::from_secs(1)).await;
        assert_eq!(waiting_ids(&pool), first);
        tokio::time::sleep(Duration::from_secs(2)).await;
        filled(&pool, 2).await;
        let later = waiting_ids(&pool);
        assert!(later.iter().all(|id| !first.contains(id)), "{later:?}");
        for id in &first {
            assert!(!fork.exists(*id).await.unwrap(), "{id} was not deleted");
        }
        let taken = pool.take().unwrap();
        assert!(later.contains(&taken.id));
        filled(&pool, 2).await;
        let waiting = waiting_ids(&pool);
        stop.cancel();
        task.await.unwrap();
        for id in waiting {
            assert!(!fork.exists(id).await.unwrap(), "{id} outlived the drain");
        }
        // The taken fork is its session's to delete.
        assert!(fork.exists(taken.id).await.unwrap());
    }
}

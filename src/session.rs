//! Sessions: one per connection. The session mints the [`SessionId`], creates the fork
//! once authentication succeeded, runs a shell per channel, and on every exit path cancels
//! what runs and deletes the fork under a deadline.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::fork::{ForkError, ForkStrategy, Lease, ServerId, SessionId, delete_with_deadline};
use crate::registry::Registry;
use crate::vfs::{Quota, Vfs};

pub mod channel;

/// Time running commands get to stop after a session is cancelled before teardown goes
/// on without them.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// Longest user name taken from the client; anything longer, or with characters outside
/// `[A-Za-z0-9._-]`, becomes `user`.
const MAX_USER_LEN: usize = 32;

/// What every session of a server shares.
#[derive(Debug)]
pub struct Services {
    pub fork: Arc<dyn ForkStrategy>,
    pub registry: Arc<Registry>,
    /// Deadline for deleting a fork, retries included.
    pub delete_deadline: Duration,
    /// `$HOSTNAME` in sessions, and the name in the prompt.
    pub hostname: String,
    /// This server process, as named in the leases of the forks it serves.
    pub owner: ServerId,
    /// How long a lease holds; it is renewed every third of that while the session lives.
    pub lease_ttl: Duration,
    /// What each session's fork may hold.
    pub quota: Quota,
}

/// The documented session environment (README, "What a session sees"), shared by SSH
/// sessions and `forkbox exec`.
pub fn environment(
    user: &str,
    hostname: &str,
    id: SessionId,
    term: Option<&str>,
) -> Vec<(String, String)> {
    vec![
        ("HOME".into(), "/".into()),
        ("USER".into(), user.into()),
        ("LOGNAME".into(), user.into()),
        ("PWD".into(), "/".into()),
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("SHELL".into(), "/bin/bash".into()),
        ("TERM".into(), term.unwrap_or("dumb").into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("HOSTNAME".into(), hostname.into()),
        ("FORKBOX_SESSION".into(), id.to_string()),
    ]
}

/// Keeps the lease of a session's fork fresh until the session ends, so other servers'
/// janitors leave the fork alone. A failed renewal is retried at the next tick; the fork
/// is only at risk if renewals fail for a whole lease period.
async fn renew_lease(services: Arc<Services>, id: SessionId, cancel: CancellationToken) {
    let every = services.lease_ttl / 3;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let lease = Lease::new(services.owner, services.lease_ttl);
        if let Err(e) = services.fork.renew(id, &lease).await {
            tracing::warn!(error = %e, "lease renewal failed");
        }
    }
}

/// One connection's state, shared by its SSH handler and its channel tasks.
pub struct Session {
    pub id: SessionId,
    pub peer: Option<SocketAddr>,
    services: Arc<Services>,
    /// The fork's filesystem, once the fork exists (after authentication).
    vfs: Mutex<Option<Vfs>>,
    user: Mutex<String>,
    /// Fired on disconnect and server shutdown: everything running stops.
    pub cancel: CancellationToken,
    /// Channel tasks, awaited before the fork is deleted.
    tasks: TaskTracker,
    /// The tracing span every event of this session is logged in (id and peer).
    pub span: tracing::Span,
}

impl Session {
    pub fn new(
        peer: Option<SocketAddr>,
        services: Arc<Services>,
        cancel: CancellationToken,
    ) -> Arc<Session> {
        let id = SessionId::new();
        Arc::new(Session {
            id,
            span: tracing::info_span!("session", %id, peer = ?peer),
            peer,
            services,
            vfs: Mutex::new(None),
            user: Mutex::new("user".into()),
            cancel,
            tasks: TaskTracker::new(),
        })
    }

    pub fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// Records the user name the client logged in as (sanitized).
    pub fn set_user(&self, user: &str) {
        let ok = !user.is_empty()
            && user.len() <= MAX_USER_LEN
            && user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        *self.user.lock().unwrap_or_else(|p| p.into_inner()) = if ok {
            user.to_string()
        } else {
            "user".to_string()
        };
    }

    pub fn user(&self) -> String {
        self.user.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Creates the session's fork (once; later calls do nothing).
    pub async fn create_fork(&self) -> Result<(), ForkError> {
        if self.vfs().is_some() {
            return Ok(());
        }
        let lease = Lease::new(self.services.owner, self.services.lease_ttl);
        let view = self.services.fork.create(self.id, &lease).await?;
        *self.vfs.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(Vfs::with_quota(view, self.services.quota));
        tracing::info!("fork created");
        self.spawn(renew_lease(
            self.services.clone(),
            self.id,
            self.cancel.clone(),
        ));
        Ok(())
    }

    pub fn vfs(&self) -> Option<Vfs> {
        self.vfs.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Runs a task that belongs to this session (it is awaited at teardown).
    pub fn spawn<F>(&self, fut: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.tasks
            .spawn(tracing::Instrument::instrument(fut, self.span.clone()));
    }

    /// The variables every shell of this session starts with.
    pub fn environment(&self, term: Option<&str>) -> Vec<(String, String)> {
        environment(&self.user(), &self.services.hostname, self.id, term)
    }

    /// Ends the session: cancels what runs, waits for its tasks (briefly), deletes the fork.
    /// Called exactly once, on every exit path of the connection task.
    pub async fn teardown(&self) {
        self.cancel.cancel();
        self.tasks.close();
        if tokio::time::timeout(CANCEL_GRACE, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("session tasks did not stop in time; deleting the fork anyway");
        }
        let had_fork = self
            .vfs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .is_some();
        if !had_fork {
            return;
        }
        let started = std::time::Instant::now();
        match delete_with_deadline(
            self.services.fork.as_ref(),
            self.id,
            self.services.delete_deadline,
        )
        .await
        {
            Ok(attempts) => tracing::info!(
                attempts,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "fork deleted"
            ),
            Err(e) => tracing::error!(error = %e, "fork not deleted; leaving it to the janitor"),
        }
    }
}

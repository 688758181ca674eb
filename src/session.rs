//! Sessions: one per connection. The session mints the [`SessionId`], creates the fork
//! once authentication succeeded, runs a shell per channel, and on every exit path cancels
//! what runs and deletes the fork under a deadline.
//!
//! A session starts from the base, or from a snapshot: the one its login name asks for
//! (`snap-<version>`, see [`SNAPSHOT_USER_PREFIX`]) or else the server's `--base-snapshot`.
//! The `snapshot` builtin reaches the fork through the session's [`SnapshotControl`],
//! under the server's snapshot policy and its identity's quota ([`snapshots`]).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use forkbox_commands::FsError;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::fork::{ForkError, ForkStrategy, Owner, ServerId, SessionId};
use crate::registry::Registry;
use crate::shell::SnapshotControl;
use crate::vfs::{Quota, Vfs};

pub mod channel;
pub mod flow;
pub mod pool;
pub mod snapshots;

use snapshots::SessionSnapshots;
pub use snapshots::{MAX_SNAPSHOTS_PER_SESSION, SnapshotPolicy, SnapshotQuotas};

/// Time running commands get to stop after a session is cancelled before teardown goes
/// on without them.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// Longest user name taken from the client; anything longer, or with characters outside
/// `[A-Za-z0-9._-]`, becomes `user`.
const MAX_USER_LEN: usize = 32;

/// Session channels one connection may have open at once (OpenSSH's `MaxSessions` is 10):
/// enough for multiplexing clients and agent frameworks that open many exec channels,
/// and a bound on the shells one connection can run side by side.
pub const MAX_CHANNELS: usize = 32;

/// A login name `snap-<version>` starts the session from snapshot `<version>`; the
/// session's user is then `user` and `$FORKBOX_SNAPSHOT` holds the version.
pub const SNAPSHOT_USER_PREFIX: &str = "snap-";

/// Why a session's fork could not be made; [`StartError::client_message`] is what the
/// client is told before the connection closes.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Fork(#[from] ForkError),
    #[error("the layer of snapshot {version} cannot be opened: {source}")]
    Load {
        version: String,
        #[source]
        source: FsError,
    },
}

impl StartError {
    /// One line for the client: no storage detail, only what the user can act on.
    pub fn client_message(&self) -> String {
        match self {
            StartError::Fork(ForkError::NoSnapshot { version }) => {
                format!("forkbox: no snapshot {version}")
            }
            StartError::Load {
                version,
                source: FsError::NoSpace,
            } => format!("forkbox: snapshot {version} holds more than a session's quota"),
            _ => "forkbox: the session's filesystem could not be created; try again later"
                .to_string(),
        }
    }
}

/// What every session of a server shares.
#[derive(Debug)]
pub struct Services {
    pub fork: Arc<dyn ForkStrategy>,
    pub registry: Arc<Registry>,
    /// Read-only files every session sees beside its fork (WASI tools' stdlibs).
    pub system_mounts: crate::vfs::system::SystemMounts,
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
    /// What each session may hold in memory and tasks at once.
    pub limits: crate::config::SessionLimits,
    /// Each session's share of the server's CPU (`--session-cpu-share`); `None`: sessions
    /// are never slowed.
    pub cpu: Option<Arc<forkbox_commands::cpu::CpuGovernor>>,
    /// The snapshot every session starts from unless its login names another
    /// (`--base-snapshot`, checked at start-up); `None`: the base as it is.
    pub base_snapshot: Option<String>,
    /// Who may take snapshots and what each identity may keep.
    pub snapshots: Arc<SnapshotQuotas>,
    /// How clients log in (the `auth` label of the session metrics).
    pub auth: crate::config::AuthMode,
    /// How long one command may run (`--command-timeout`); `None`: no limit.
    pub command_timeout: Option<Duration>,
    /// The first line an interactive session shows (`--motd`); empty for none.
    pub motd: String,
    /// Fired when the server begins to drain: pending logins end, new channels are
    /// refused, interactive sessions are told; running commands go on.
    pub drain: CancellationToken,
    /// How long a drain lasts in all (`--drain-grace`), as interactive sessions are told.
    pub drain_grace: Duration,
    /// Where every command line a session runs is recorded (`--audit`), if anywhere.
    pub audit: Option<crate::audit::Audit>,
    /// Forks of the default start made ahead of logins (`--fork-pool`), and how a session
    /// makes its own when the pool has none or the login asks for a snapshot.
    pub pool: Arc<pool::ForkPool>,
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
        ("TMPDIR".into(), "/tmp".into()),
    ]
}

/// Most variables one channel takes from the client's `env` requests.
pub const MAX_CLIENT_ENV: usize = 64;

/// Longest value of a variable taken from an `env` request.
pub const MAX_CLIENT_ENV_VALUE: usize = 4096;

/// Whether a client may set `name` with an SSH `env` request (OpenSSH's `SendEnv` and
/// `SetEnv`): the locale, the terminal, the time zone and forkbox's own variables, but not
/// those forkbox sets itself (`FORKBOX_SESSION`, `FORKBOX_SNAPSHOT`). Everything else in
/// the session's environment is forkbox's, and other requests are refused.
pub fn client_may_set(name: &str) -> bool {
    let known = matches!(name, "LANG" | "TERM" | "TZ")
        || name.starts_with("LC_")
        || (name.starts_with("FORKBOX_")
            && !matches!(name, "FORKBOX_SESSION" | "FORKBOX_SNAPSHOT"));
    known && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
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
        services.pool.maker().renew(id).await;
    }
}

/// One connection's state, shared by its SSH handler and its channel tasks.
pub struct Session {
    /// The session's id, which is its fork's: minted at connect, replaced at login by the
    /// id of the fork the session takes from the pool, if it takes one ([`Session::claim`]).
    /// Logged from login on (the span's `id`); before, the span has the peer only.
    id: Mutex<SessionId>,
    pub peer: Option<SocketAddr>,
    services: Arc<Services>,
    /// The fork's filesystem, once the fork exists (after authentication).
    vfs: Mutex<Option<Vfs>>,
    /// The fork taken from the pool at login, until [`Session::create_fork`] opens it; what
    /// teardown deletes if the session ends before that.
    pooled: Mutex<Option<Vfs>>,
    user: Mutex<String>,
    /// The snapshot the login name asked for (`snap-<version>`), verbatim.
    login_snapshot: Mutex<Option<String>>,
    /// The snapshot the fork was made from, once it exists.
    started_from: Mutex<Option<String>>,
    /// What the `snapshot` builtin uses; shared by every channel of the session.
    snapshots: Arc<SessionSnapshots>,
    /// Memory and task bounds shared by every shell and command of the session.
    pub budget: forkbox_commands::Budget,
    /// Open session channels, at most [`MAX_CHANNELS`].
    pub channel_slots: Arc<tokio::sync::Semaphore>,
    /// Fired on disconnect and server shutdown: everything running stops.
    pub cancel: CancellationToken,
    /// Fired (with `cancel`, or before it by [`Session::end_commands`]) to stop every
    /// command of the session while its channels can still say why; the root of every
    /// channel's cancellation.
    pub commands: CancellationToken,
    /// Why a limit of the whole session stopped its commands, once one did: what each
    /// channel's `exit-signal` says.
    ending: Mutex<Option<Ending>>,
    /// Channel tasks, awaited before the fork is deleted.
    tasks: TaskTracker,
    /// The tracing span every event of this session is logged in (id and peer).
    pub span: tracing::Span,
    /// When the session last showed life, for `--idle-timeout`.
    pub activity: Arc<Activity>,
    /// Sends to the client waiting on the connection: while one does, no channel's stdin
    /// reader holds russh's loop back (see [`flow`]).
    pub outbound: Arc<flow::Outbound>,
}

/// Why a limit of the whole session stopped its commands: the signal and the one line its
/// channels' `exit-signal` carries.
#[derive(Clone, Debug)]
pub struct Ending {
    pub signal: russh::Sig,
    pub message: String,
}

/// When a session last showed life: the client's last input, or a command running.
#[derive(Debug)]
pub struct Activity {
    /// The last input, and how many commands run now.
    state: Mutex<(tokio::time::Instant, usize)>,
}

/// Marks a command running for as long as it lives.
#[derive(Debug)]
pub struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.1 -= 1;
        // Idleness counts from the end of the last command.
        state.0 = tokio::time::Instant::now();
    }
}

impl Activity {
    fn new() -> Arc<Activity> {
        Arc::new(Activity {
            state: Mutex::new((tokio::time::Instant::now(), 0)),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (tokio::time::Instant, usize)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The client sent something.
    pub fn touch(&self) {
        self.lock().0 = tokio::time::Instant::now();
    }

    /// A command runs until the guard is dropped; the session is not idle meanwhile.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.lock().1 += 1;
        Busy(self.clone())
    }

    /// How long the session has been idle; `None` while a command runs.
    pub fn idle_for(&self) -> Option<Duration> {
        let state = self.lock();
        (state.1 == 0).then(|| state.0.elapsed())
    }
}

impl Session {
    pub fn new(
        peer: Option<SocketAddr>,
        services: Arc<Services>,
        cancel: CancellationToken,
    ) -> Arc<Session> {
        let id = SessionId::new();
        let snapshots = Arc::new(SessionSnapshots::new(
            services.fork.clone(),
            services.snapshots.clone(),
            id,
        ));
        Arc::new(Session {
            id: Mutex::new(id),
            span: tracing::info_span!("session", peer = ?peer, id = tracing::field::Empty),
            peer,
            vfs: Mutex::new(None),
            pooled: Mutex::new(None),
            user: Mutex::new("user".into()),
            login_snapshot: Mutex::new(None),
            started_from: Mutex::new(None),
            snapshots,
            budget: services.limits.paced_budget(services.cpu.as_ref()),
            channel_slots: Arc::new(tokio::sync::Semaphore::new(MAX_CHANNELS)),
            services,
            commands: cancel.child_token(),
            cancel,
            ending: Mutex::new(None),
            tasks: TaskTracker::new(),
            activity: Activity::new(),
            outbound: flow::Outbound::new(),
        })
    }

    pub fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// The session's id (its fork's, once it has one).
    pub fn id(&self) -> SessionId {
        *self.id.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Settles the session's id at login, before anything of the session is logged with
    /// it: a session that starts from the default (no `snap-<version>` login) takes a
    /// waiting fork from the pool, if there is one, and its id with it; any other keeps the
    /// id minted at connect, for the fork [`Session::create_fork`] makes. Call once, when
    /// the login is accepted.
    pub fn claim(&self) {
        if self.login_snapshot().is_none()
            && let Some(pooled) = self.services.pool.take()
        {
            *self.id.lock().unwrap_or_else(|p| p.into_inner()) = pooled.id;
            self.snapshots.set_id(pooled.id);
            *self.pooled.lock().unwrap_or_else(|p| p.into_inner()) = Some(pooled.vfs);
        }
        self.span.record("id", tracing::field::display(self.id()));
    }

    /// Stops every command of the session because a limit of the whole session was
    /// reached (idle time, lifetime): each channel then ends with `exit-signal` `signal`
    /// and `message`. The connection goes on until the caller disconnects it.
    pub fn end_commands(&self, signal: russh::Sig, message: String) {
        self.ending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(Ending { signal, message });
        self.commands.cancel();
    }

    /// Why [`Session::end_commands`] stopped the session's commands, if it did.
    pub fn ending(&self) -> Option<Ending> {
        self.ending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits (at most `grace`) until every channel of the session has ended.
    pub async fn channels_ended(&self, grace: Duration) {
        let all = u32::try_from(MAX_CHANNELS).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(grace, self.channel_slots.acquire_many(all)).await;
    }

    /// Records the user name the client logged in as (sanitized). `snap-<version>` asks
    /// for a session started from that snapshot, as user `user`.
    pub fn set_user(&self, user: &str) {
        let snapshot = user.strip_prefix(SNAPSHOT_USER_PREFIX).map(str::to_string);
        let user = if snapshot.is_some() { "user" } else { user };
        *self
            .login_snapshot
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = snapshot;
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

    /// Records the fingerprint (`SHA256:…`) of the key the client authenticated with when
    /// keys are what admits clients: the session's snapshots then count against that key
    /// rather than against every anonymous user together.
    pub fn set_key_owner(&self, fingerprint: &str) {
        match Owner::from_fingerprint(fingerprint) {
            Some(owner) => {
                *self
                    .snapshots
                    .owner
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = owner
            }
            None => {
                tracing::warn!(%fingerprint, "not a key fingerprint; snapshots count as anonymous")
            }
        }
    }

    pub fn user(&self) -> String {
        self.user.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The snapshot the login name asked for, if any.
    pub fn login_snapshot(&self) -> Option<String> {
        self.login_snapshot
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Creates the session's fork (once; later calls do nothing): the one taken from the
    /// pool at login, else one made now from the snapshot the login asked for, else from
    /// `--base-snapshot`, else from the base.
    pub async fn create_fork(&self) -> Result<(), StartError> {
        if self.vfs().is_some() {
            return Ok(());
        }
        let from = self
            .login_snapshot()
            .or_else(|| self.services.base_snapshot.clone());
        let started = std::time::Instant::now();
        let pooled = self.pooled.lock().unwrap_or_else(|p| p.into_inner()).take();
        let was_pooled = pooled.is_some();
        let made = match pooled {
            Some(vfs) => Ok(vfs),
            None => {
                self.services
                    .pool
                    .maker()
                    .make(self.id(), from.as_deref())
                    .await
            }
        };
        crate::telemetry::metrics::fork_created(started.elapsed(), made.is_ok());
        // Every session has a writable /tmp ($TMPDIR), at no store request.
        let vfs = made?.with_tmp();
        *self.snapshots.vfs.lock().unwrap_or_else(|p| p.into_inner()) = Some(vfs.clone());
        *self.vfs.lock().unwrap_or_else(|p| p.into_inner()) = Some(vfs);
        match &from {
            Some(version) => {
                tracing::info!(snapshot = %version, pooled = was_pooled, "fork created from a snapshot")
            }
            None => tracing::info!(pooled = was_pooled, "fork created"),
        }
        *self.started_from.lock().unwrap_or_else(|p| p.into_inner()) = from;
        self.spawn(renew_lease(
            self.services.clone(),
            self.id(),
            self.cancel.clone(),
        ));
        Ok(())
    }

    /// What the `snapshot` builtin of this session's shells acts through.
    pub fn snapshot_control(&self) -> Arc<dyn SnapshotControl> {
        self.snapshots.clone()
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

    /// The variables every shell of this session starts with; a session started from a
    /// snapshot also has `FORKBOX_SNAPSHOT` (its version).
    pub fn environment(&self, term: Option<&str>) -> Vec<(String, String)> {
        let mut env = environment(&self.user(), &self.services.hostname, self.id(), term);
        let from = self
            .started_from
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(version) = from {
            env.push(("FORKBOX_SNAPSHOT".into(), version));
        }
        env
    }

    /// Ends the session: cancels what runs, waits for its tasks (briefly), deletes the fork.
    /// Called exactly once, on every exit path of the connection task.
    pub async fn teardown(&self) {
        self.cancel.cancel();
        self.tasks.close();
        let all_stopped = async {
            self.tasks.wait().await;
            // What the session's shells spawned (redirection drains, readers) last: the
            // channels that own them have stopped by now.
            self.budget.close_and_wait().await;
        };
        if tokio::time::timeout(CANCEL_GRACE, all_stopped)
            .await
            .is_err()
        {
            tracing::warn!("session tasks did not stop in time; deleting the fork anyway");
        }
        self.snapshots
            .vfs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let emptied = |m: &Mutex<Option<Vfs>>| m.lock().unwrap_or_else(|p| p.into_inner()).take();
        // A fork taken from the pool is the session's even if it was never opened.
        let had_fork = emptied(&self.vfs).is_some() | emptied(&self.pooled).is_some();
        if !had_fork {
            return;
        }
        let started = std::time::Instant::now();
        match crate::fork::delete_with_deadline(
            self.services.fork.as_ref(),
            self.id(),
            self.services.delete_deadline,
        )
        .await
        {
            Ok(attempts) => {
                crate::telemetry::metrics::fork_deleted(started.elapsed(), true);
                tracing::info!(
                    attempts,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "fork deleted"
                )
            }
            Err(e) => {
                crate::telemetry::metrics::fork_deleted(started.elapsed(), false);
                tracing::error!(error = %e, "fork not deleted; leaving it to the janitor")
            }
        }
    }

    /// Records a command line the session ran in the audit trail, if there is one.
    pub async fn audit(
        &self,
        origin: crate::audit::Origin,
        command: &str,
        started: std::time::SystemTime,
        duration: Duration,
        status: i32,
    ) {
        let Some(audit) = &self.services.audit else {
            return;
        };
        let user = self.user();
        audit
            .record(&crate::audit::Record {
                session: self.id(),
                user: &user,
                peer: self.peer,
                origin,
                command: command.strip_suffix('\n').unwrap_or(command),
                started,
                duration,
                status,
            })
            .await;
    }
}

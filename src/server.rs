//! The accept loop: one task per connection, admission bounds before and after login, and
//! a graceful drain on shutdown (every session's commands are cancelled and its fork
//! deleted before [`run`] returns).
//!
//! A connection is first *pending*: it holds a place in the [`admission::Pending`] table
//! (bounded in total and per source) and must finish the handshake and authenticate
//! before `--auth-timeout`. When authentication succeeds it takes one of the
//! `--max-sessions` slots (or is told `forkbox: too many sessions; try again later` and
//! closed), leaves the pending table, and its task makes the fork. The fork is made here,
//! in the connection task, not in russh's handler callback: russh's loop stays free, and
//! whatever ends the connection meanwhile waits for the creation to settle so teardown
//! deletes what it made.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::fork::ForkError;
use crate::session::channel::ForkState;
use crate::session::{Services, Session, StartError};
use crate::ssh::{AuthPolicy, Handler};
use crate::telemetry::metrics::{Limit, Outcome};

pub mod admission;
pub mod per_source;
pub mod quickack;

use admission::{Bounds, Pending, Ticket};
use per_source::{PerSource, SourceBounds, SourceRefusal, SourceSlot};

/// The part of `--drain-grace` kept, at most, for cancelling what still runs and deleting
/// its forks once commands had their time (at most half the grace).
const DRAIN_TEARDOWN: Duration = Duration::from_secs(10);

/// Time a connection gets to take a disconnect message and close before its stream is cut:
/// a client that stops reading must not hold its connection (and its task) open.
const DISCONNECT_GRACE: Duration = Duration::from_secs(2);

/// Pause after a failed accept (out of file descriptors, say) before the next one, so the
/// loop does not spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// What a client still logging in is told when its time is up.
const AUTH_TIMED_OUT: &str = "forkbox: authentication timed out";
/// What a client still logging in is told when a newcomer took its place.
const EVICTED: &str = "forkbox: too many connections are logging in; try again later";
/// What every client is told on shutdown.
const SHUTTING_DOWN: &str = "forkbox is shutting down";

/// How often a logged-in connection checks whether it has been idle too long, as a share
/// of `--idle-timeout` (the disconnect comes at most this share late).
const IDLE_CHECKS_PER_TIMEOUT: u32 = 8;

/// How many connections the server takes, and for how long before login.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Sessions (authenticated connections) served at once.
    pub max_sessions: usize,
    /// Connections that have not logged in yet, in total.
    pub max_unauthenticated: usize,
    /// Connections that have not logged in yet from one source (an IPv4 address or an
    /// IPv6 /64).
    pub max_unauthenticated_per_ip: usize,
    /// Time from accept to successful authentication.
    pub auth_timeout: Duration,
    /// Sessions one source may hold at once.
    pub max_sessions_per_ip: usize,
    /// Connections one source may open per minute.
    pub max_connections_per_minute_per_ip: usize,
    /// A session with no command running and no input for this long is disconnected.
    pub idle_timeout: Option<Duration>,
    /// A session is disconnected this long after it logged in, whatever it does.
    pub max_session_lifetime: Option<Duration>,
}

/// Everything the server needs besides its listener.
pub struct Deps {
    pub ssh: Arc<russh::server::Config>,
    pub services: Arc<Services>,
    pub auth: Arc<AuthPolicy>,
    pub limits: Limits,
    /// What `/readyz` answers; a drain turns it off first.
    pub health: Arc<crate::telemetry::http::Health>,
}

/// Builds the russh configuration for a host key and auth policy.
pub fn ssh_config(host_key: russh::keys::PrivateKey, auth: &AuthPolicy) -> russh::server::Config {
    russh::server::Config {
        server_id: russh::SshId::Standard(
            format!("SSH-2.0-forkbox_{}", env!("CARGO_PKG_VERSION")).into(),
        ),
        methods: auth.methods(),
        // Rejections russh makes without asking the handler (a method not offered, a
        // certificate) take as long as the handler's answers (see ssh::Pace).
        auth_rejection_time: auth.answer_time(),
        auth_rejection_time_initial: Some(auth.answer_time()),
        keys: vec![host_key],
        inactivity_timeout: Some(Duration::from_secs(3600)),
        keepalive_interval: Some(Duration::from_secs(30)),
        keepalive_max: 4,
        nodelay: true,
        window_size: crate::session::flow::WINDOW,
        ..Default::default()
    }
}

/// What every connection task shares.
struct Shared {
    deps: Deps,
    /// Session slots, taken when authentication succeeds.
    slots: Arc<Semaphore>,
    /// Per-source bounds on sessions and connection rate.
    per_source: Arc<PerSource>,
}

/// Serves connections from `listener` until `shutdown` completes, then drains (see
/// [`drain`]); `hurry` completing during the drain ends it at once: whatever still runs is
/// cancelled and its fork deleted without waiting for commands to finish (an operator's
/// second Ctrl-C or SIGTERM). Returns when the drain is over, with the end of its grace
/// period: whatever the caller still does before the process exits must fit before it.
pub async fn run(
    listener: TcpListener,
    deps: Deps,
    shutdown: impl Future<Output = ()>,
    hurry: impl Future<Output = ()>,
) -> Instant {
    let pending = Pending::new(Bounds {
        total: deps.limits.max_unauthenticated,
        per_source: deps.limits.max_unauthenticated_per_ip,
    });
    let shared = Arc::new(Shared {
        slots: Arc::new(Semaphore::new(deps.limits.max_sessions)),
        per_source: PerSource::new(SourceBounds {
            sessions: deps.limits.max_sessions_per_ip,
            per_minute: deps.limits.max_connections_per_minute_per_ip,
        }),
        deps,
    });
    let stop = CancellationToken::new();
    let tasks = TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                        continue;
                    }
                };
                let ticket = match pending.admit(peer.ip()) {
                    Ok(admitted) => {
                        if let Some(source) = admitted.evicted {
                            tracing::info!(%peer, %source, "pending connections at their bound; the oldest of the busiest source makes room");
                            crate::telemetry::metrics::limit_hit(Limit::Unauthenticated);
                        }
                        admitted.ticket
                    }
                    Err(refusal) => {
                        tracing::info!(%peer, reason = %refusal, "connection closed at once");
                        crate::telemetry::metrics::limit_hit(Limit::Unauthenticated);
                        drop(stream);
                        continue;
                    }
                };
                // Over its rate, a connection is still served up to its login, so that
                // the client can be told why it is refused.
                let over_rate = shared.per_source.connected(peer.ip()).err();
                let shared = shared.clone();
                let cancel = stop.child_token();
                tasks.spawn(async move {
                    let _ = stream.set_nodelay(true);
                    let stream = quickack::QuickAck::new(stream);
                    serve_connection(stream, Some(peer), shared, cancel, ticket, over_rate)
                        .await;
                });
            }
        }
    }
    let deadline = drain(listener, &shared.deps, &stop, &tasks, hurry).await;
    tracing::info!("stopped");
    deadline
}

/// Drains the server within `--drain-grace`: readiness fails and the listener closes at
/// once, connections still logging in are closed, interactive sessions are told; running
/// commands may finish until the grace period less the time kept for teardown
/// ([`DRAIN_TEARDOWN`], at most half of it), or until `hurry` completes; then every
/// session left is cancelled and its fork deleted. Whatever has not ended by the end of the
/// grace period is left behind (its forks to the janitor): the process exits on time.
/// Returns the end of the grace period.
async fn drain(
    listener: TcpListener,
    deps: &Deps,
    stop: &CancellationToken,
    tasks: &TaskTracker,
    hurry: impl Future<Output = ()>,
) -> Instant {
    let grace = deps.services.drain_grace;
    let deadline = Instant::now() + grace;
    let cancel_at = deadline - DRAIN_TEARDOWN.min(grace / 2);
    deps.health.set_draining();
    drop(listener);
    deps.services.drain.cancel();
    tasks.close();
    tracing::info!(
        ?grace,
        sessions = tasks.len(),
        "draining: no new connections; running commands may finish"
    );
    let finished = tokio::select! {
        _ = tasks.wait() => true,
        _ = tokio::time::sleep_until(cancel_at) => false,
        _ = hurry => {
            tracing::info!("asked again to stop: the drain ends now");
            false
        }
    };
    if finished {
        return deadline;
    }
    tracing::info!(sessions = tasks.len(), "drain: cancelling what still runs");
    stop.cancel();
    if tokio::time::timeout_at(deadline, tasks.wait())
        .await
        .is_err()
    {
        tracing::error!(
            sessions = tasks.len(),
            "sessions did not drain in time; their forks are left to the janitor"
        );
    }
    deadline
}

/// Serves one connection and tears its session down on every exit path.
async fn serve_connection<S>(
    stream: S,
    peer: Option<SocketAddr>,
    shared: Arc<Shared>,
    cancel: CancellationToken,
    ticket: Ticket,
    over_rate: Option<SourceRefusal>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let session = Session::new(peer, shared.deps.services.clone(), cancel);
    let span = session.span.clone();
    async {
        tracing::info!("connected");
        let mut ended = None;
        let permit = connection(stream, &session, &shared, ticket, over_rate, &mut ended).await;
        session.teardown().await;
        if let Some(outcome) = ended {
            let auth = crate::telemetry::metrics::auth_label(shared.deps.services.auth);
            crate::telemetry::metrics::session_ended(auth, outcome);
        }
        // The slot is free only once the fork is gone, so the cap bounds forks too.
        drop(permit);
        tracing::info!("disconnected");
    }
    .instrument(span)
    .await;
}

/// Why the connection task stops serving a connection.
enum End {
    /// The client went away, or russh ended the connection itself.
    Closed,
    /// forkbox ends it, telling the client why; how the session ended, if it had begun.
    Disconnect(russh::Disconnect, String, Outcome),
}

/// What a logged-in connection holds until its fork is gone: a place under
/// `--max-sessions` and one in its source's count (none without a peer address).
type Slots = (OwnedSemaphorePermit, Option<SourceSlot>);

/// Runs the connection until it ends; the session slots it took, if it logged in.
async fn connection<S>(
    stream: S,
    session: &Arc<Session>,
    shared: &Shared,
    ticket: Ticket,
    over_rate: Option<SourceRefusal>,
    ended: &mut Option<Outcome>,
) -> Option<Slots>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let deps = &shared.deps;
    let auth = crate::telemetry::metrics::auth_label(deps.services.auth);
    let login_deadline = Instant::now() + deps.limits.auth_timeout;
    let evicted = ticket.evicted().clone();
    let mut ticket = Some(ticket);
    let (stream, cut) = Severable::new(stream);
    let (admitted_tx, mut admitted_rx) = oneshot::channel();
    let (fork_tx, fork_rx) = watch::channel(ForkState::Pending);
    let handler = Handler {
        session: session.clone(),
        auth: deps.auth.clone(),
        slots: shared.slots.clone(),
        admitted: Some(admitted_tx),
        fork: fork_rx,
        logged_in: false,
        pace: crate::ssh::Pace::new(deps.auth.answer_time()),
    };

    // The client's identification line, within the login deadline: a client that never
    // speaks never gets further than this.
    let started = tokio::select! {
        started = tokio::time::timeout_at(
            login_deadline,
            russh::server::run_stream(deps.ssh.clone(), stream, handler),
        ) => started,
        _ = evicted.cancelled() => {
            tracing::info!("closed before the handshake: a newcomer took its place");
            return None;
        }
        _ = session.cancel.cancelled() => return None,
        _ = deps.services.drain.cancelled() => return None,
    };
    let running = match started {
        Ok(Ok(running)) => running,
        Ok(Err(e)) => {
            tracing::info!(error = %e, "handshake failed");
            return None;
        }
        Err(_) => {
            tracing::info!("authentication timed out before the handshake");
            return None;
        }
    };
    let handle = running.handle();
    tokio::pin!(running);
    let mut permit = None;
    let mut creating: Pin<Box<dyn Future<Output = Result<(), StartError>> + Send>> =
        Box::pin(std::future::pending());
    let mut fork_pending = false;
    let mut awaiting_login = true;
    let mut running_done = false;
    // Set at login: when the session must end whatever it does, and when it next checks
    // whether it has been idle too long.
    let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
    let mut lifetime_end = far;
    let idle_timeout = deps.limits.idle_timeout;
    let idle_every = idle_timeout.map(|t| t / IDLE_CHECKS_PER_TIMEOUT);
    let mut idle_check = far;

    let end = loop {
        tokio::select! {
            // A login that arrived wins over a deadline or an eviction that fired with it.
            biased;
            r = &mut running => {
                running_done = true;
                if let Err(e) = r {
                    tracing::info!(error = %e, "connection ended with an error");
                }
                break End::Closed;
            }
            // A drain closes connections still logging in; sessions go on.
            _ = deps.services.drain.cancelled(), if permit.is_none() => {
                break End::Disconnect(russh::Disconnect::ByApplication, SHUTTING_DOWN.into(), Outcome::Shutdown);
            }
            slot = &mut admitted_rx, if awaiting_login => {
                awaiting_login = false;
                // An error: the handler is gone (the connection is ending); `running`
                // says why.
                if let Ok(slot) = slot {
                    let source = match (over_rate, session.peer) {
                        (Some(refusal), _) => Err(refusal),
                        (None, Some(peer)) => shared.per_source.take_session(peer.ip()).map(Some),
                        (None, None) => Ok(None),
                    };
                    let source = match source {
                        Ok(source) => source,
                        Err(refusal) => {
                            tracing::warn!(user = %session.user(), reason = %refusal, "per-address bound reached; login refused");
                            let limit = match refusal {
                                SourceRefusal::Sessions(_) => Limit::PerIpSessions,
                                SourceRefusal::Rate(_) => Limit::ConnectionRate,
                            };
                            crate::telemetry::metrics::session_refused(auth, limit);
                            break End::Disconnect(
                                russh::Disconnect::TooManyConnections,
                                refusal.to_string(),
                                Outcome::Refused,
                            );
                        }
                    };
                    crate::telemetry::metrics::session_started(auth);
                    permit = Some((slot, source));
                    let now = Instant::now();
                    if let Some(lifetime) = deps.limits.max_session_lifetime {
                        lifetime_end = now + lifetime;
                    }
                    if let Some(every) = idle_every {
                        idle_check = now + every;
                    }
                    ticket = None; // no longer pending: its place goes to others
                    fork_pending = true;
                    let session = session.clone();
                    creating = Box::pin(async move { session.create_fork().await });
                }
            }
            made = &mut creating, if fork_pending => {
                fork_pending = false;
                match made {
                    Ok(()) => {
                        let _ = fork_tx.send(ForkState::Ready);
                    }
                    Err(e) => {
                        let _ = fork_tx.send(ForkState::Failed);
                        break End::Disconnect(russh::Disconnect::ByApplication, start_failure(&e), Outcome::ForkFailed);
                    }
                }
            }
            _ = tokio::time::sleep_until(login_deadline), if permit.is_none() => {
                tracing::info!("authentication timed out");
                crate::telemetry::metrics::limit_hit(Limit::AuthTimeout);
                break End::Disconnect(russh::Disconnect::ByApplication, AUTH_TIMED_OUT.into(), Outcome::Closed);
            }
            _ = evicted.cancelled(), if permit.is_none() => {
                tracing::info!("closed while logging in: a newcomer took its place");
                break End::Disconnect(russh::Disconnect::TooManyConnections, EVICTED.into(), Outcome::Closed);
            }
            _ = tokio::time::sleep_until(lifetime_end), if permit.is_some() => {
                let lifetime = deps.limits.max_session_lifetime.unwrap_or_default();
                tracing::info!(?lifetime, "session lifetime reached");
                crate::telemetry::metrics::limit_hit(Limit::Lifetime);
                let message = format!("forkbox: this session reached its maximum lifetime of {}; disconnected", human(lifetime));
                stop_channels(session, &message).await;
                break End::Disconnect(russh::Disconnect::ByApplication, message, Outcome::Lifetime);
            }
            _ = tokio::time::sleep_until(idle_check), if permit.is_some() => {
                let (Some(timeout), Some(every)) = (idle_timeout, idle_every) else {
                    idle_check = far;
                    continue;
                };
                if session.activity.idle_for().is_some_and(|idle| idle >= timeout) {
                    tracing::info!(?timeout, "idle timeout");
                    crate::telemetry::metrics::limit_hit(Limit::Idle);
                    let message = format!("forkbox: idle for {}; disconnected", human(timeout));
                    stop_channels(session, &message).await;
                    break End::Disconnect(russh::Disconnect::ByApplication, message, Outcome::IdleTimeout);
                }
                idle_check = Instant::now() + every;
            }
            _ = session.cancel.cancelled() => {
                break End::Disconnect(russh::Disconnect::ByApplication, SHUTTING_DOWN.into(), Outcome::Shutdown);
            }
        }
    };
    drop(ticket);
    if permit.is_some() {
        let outcome = match &end {
            End::Closed => Outcome::Closed,
            End::Disconnect(_, _, outcome) => *outcome,
        };
        // Counted when the fork is gone (its deletion is timed on its own).
        *ended = Some(outcome);
    }

    // A fork being made is let finish, so teardown deletes it rather than leaving a
    // half-made one behind; it is bounded like its deletion. Channels run nothing on it:
    // the session is ending.
    if fork_pending {
        match tokio::time::timeout(deps.services.delete_deadline, &mut creating).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                start_failure(&e);
            }
            Err(_) => tracing::error!(
                "fork creation did not finish in time; what it made is left to the janitor"
            ),
        }
    }
    drop(creating);
    let _ = fork_tx.send(ForkState::Failed);

    if let End::Disconnect(reason, message, _) = end
        && !running_done
    {
        let told = tokio::time::timeout(
            DISCONNECT_GRACE,
            handle.disconnect(reason, message, "en".into()),
        )
        .await;
        if matches!(told, Ok(Ok(()))) {
            running_done = tokio::time::timeout(DISCONNECT_GRACE, &mut running)
                .await
                .is_ok();
        }
    }
    if !running_done {
        // russh's loop runs on its own task, which nothing here can abort: cutting its
        // stream makes its next read or write fail, and it ends.
        cut.cancel();
        if tokio::time::timeout(DISCONNECT_GRACE, &mut running)
            .await
            .is_err()
        {
            tracing::warn!("the SSH connection task did not end after its stream was cut");
        }
    }
    permit
}

/// Time a session's channels get, once a limit of the whole session stopped their
/// commands, to end with an `exit-signal` before the disconnect.
const CHANNEL_END_GRACE: Duration = Duration::from_secs(2);

/// Stops what a session runs for a limit of the whole session (idle time, lifetime): each
/// channel ends with `exit-signal` TERM and `message` (asyncssh shows them as
/// `exit_signal`), within [`CHANNEL_END_GRACE`]; then the caller disconnects.
async fn stop_channels(session: &Session, message: &str) {
    session.end_commands(russh::Sig::TERM, message.to_string());
    session.channels_ended(CHANNEL_END_GRACE).await;
}

/// Logs why a session's fork could not be made; the line for the client.
fn start_failure(e: &StartError) -> String {
    if let StartError::Fork(ForkError::NoSnapshot { version }) = e {
        tracing::warn!(snapshot = %version, "login names an unknown snapshot; closing the connection");
    } else {
        tracing::error!(error = ?e, "fork creation failed; closing the connection");
    }
    // The client shows the reason of a disconnect on its stderr (OpenSSH: "Received
    // disconnect from …: forkbox: no snapshot …").
    e.client_message()
}

/// A stream the connection task can cut: once cut, every read and write fails.
struct Severable<S> {
    inner: S,
    cut: CancellationToken,
    /// Separate waits for reads and writes, so each registers its own waker.
    read_cut: Pin<Box<WaitForCancellationFutureOwned>>,
    write_cut: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl<S> Severable<S> {
    fn new(inner: S) -> (Severable<S>, CancellationToken) {
        let cut = CancellationToken::new();
        let stream = Severable {
            inner,
            read_cut: Box::pin(cut.clone().cancelled_owned()),
            write_cut: Box::pin(cut.clone().cancelled_owned()),
            cut: cut.clone(),
        };
        (stream, cut)
    }
}

fn cut_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "connection cut")
}

/// `Ready(err)` once `cut` fired, registering the task's waker otherwise.
fn poll_cut(
    cut: &CancellationToken,
    wait: &mut Pin<Box<WaitForCancellationFutureOwned>>,
    cx: &mut Context<'_>,
) -> Poll<std::io::Error> {
    if cut.is_cancelled() || wait.as_mut().poll(cx).is_ready() {
        Poll::Ready(cut_error())
    } else {
        Poll::Pending
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Severable<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if let Poll::Ready(e) = poll_cut(&this.cut, &mut this.read_cut, cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Severable<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if let Poll::Ready(e) = poll_cut(&this.cut, &mut this.write_cut, cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if let Poll::Ready(e) = poll_cut(&this.cut, &mut this.write_cut, cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.cut.is_cancelled() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// A duration as a person says it: `90s`, `15m`, `2h`, `1h30m`.
pub(crate) fn human(d: Duration) -> String {
    let secs = d.as_secs();
    match (secs / 3600, secs % 3600 / 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (h, 0, 0) => format!("{h}h"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, 0) => format!("{h}h{m}m"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        let h = |s| human(Duration::from_secs(s));
        assert_eq!(
            [h(2), h(900), h(7200), h(5400), h(90), h(3661)],
            ["2s", "15m", "2h", "1h30m", "1m30s", "1h1m1s"]
        );
    }
}

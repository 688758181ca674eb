//! The accept loop: one task per connection under a session cap, and a graceful drain
//! on shutdown (every session's commands are cancelled and its fork deleted before
//! [`run`] returns).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::session::{Services, Session};
use crate::ssh::{AuthPolicy, Handler};

/// Time a connection gets to finish the SSH handshake and authenticate; a client that
/// stalls there holds a session slot, so it is bounded.
const AUTH_TIMEOUT: Duration = Duration::from_secs(30);

/// Extra time over the fork-deletion deadline that shutdown waits for sessions to drain.
const DRAIN_SLACK: Duration = Duration::from_secs(10);

/// Everything the server needs besides its listener.
pub struct Deps {
    pub ssh: Arc<russh::server::Config>,
    pub services: Arc<Services>,
    pub auth: Arc<AuthPolicy>,
    /// Sessions served at once; connections over the cap are closed at once.
    pub max_sessions: usize,
}

/// Builds the russh configuration for a host key and auth policy.
pub fn ssh_config(host_key: russh::keys::PrivateKey, auth: &AuthPolicy) -> russh::server::Config {
    russh::server::Config {
        server_id: russh::SshId::Standard(
            format!("SSH-2.0-forkbox_{}", env!("CARGO_PKG_VERSION")).into(),
        ),
        methods: auth.methods(),
        auth_rejection_time: Duration::from_millis(500),
        auth_rejection_time_initial: Some(Duration::ZERO),
        keys: vec![host_key],
        inactivity_timeout: Some(Duration::from_secs(3600)),
        keepalive_interval: Some(Duration::from_secs(30)),
        keepalive_max: 4,
        nodelay: true,
        ..Default::default()
    }
}

/// Serves connections from `listener` until `shutdown` completes, then drains.
pub async fn run(listener: TcpListener, deps: Deps, shutdown: impl Future<Output = ()>) {
    let deps = Arc::new(deps);
    let slots = Arc::new(Semaphore::new(deps.max_sessions));
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
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(permit) = slots.clone().try_acquire_owned() else {
                    tracing::warn!(%peer, "session cap reached; connection refused");
                    drop(stream);
                    continue;
                };
                let deps = deps.clone();
                let cancel = stop.child_token();
                tasks.spawn(async move {
                    let _ = stream.set_nodelay(true);
                    serve_connection(stream, Some(peer), deps, cancel).await;
                    drop(permit);
                });
            }
        }
    }
    tracing::info!("shutting down: draining sessions");
    drop(listener);
    stop.cancel();
    tasks.close();
    let deadline = deps.services.delete_deadline + DRAIN_SLACK;
    if tokio::time::timeout(deadline, tasks.wait()).await.is_err() {
        tracing::error!("sessions did not drain in time; their forks are left to the janitor");
    }
    tracing::info!("stopped");
}

/// Serves one connection and tears its session down on every exit path.
pub async fn serve_connection<S>(
    stream: S,
    peer: Option<std::net::SocketAddr>,
    deps: Arc<Deps>,
    cancel: CancellationToken,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let session = Session::new(peer, deps.services.clone(), cancel);
    let span = session.span.clone();
    async {
        tracing::info!("connected");
        let handler = Handler { session: session.clone(), auth: deps.auth.clone() };
        match russh::server::run_stream(deps.ssh.clone(), stream, handler).await {
            Ok(running) => {
                let handle = running.handle();
                tokio::pin!(running);
                let auth_deadline = tokio::time::sleep(AUTH_TIMEOUT);
                tokio::pin!(auth_deadline);
                let mut waiting_auth = true;
                loop {
                    tokio::select! {
                        r = &mut running => {
                            if let Err(e) = r {
                                tracing::info!(error = %e, "connection ended with an error");
                            }
                            break;
                        }
                        _ = &mut auth_deadline, if waiting_auth => {
                            waiting_auth = false;
                            if session.vfs().is_none() {
                                tracing::info!("authentication timed out");
                                let _ = handle.disconnect(russh::Disconnect::ByApplication, "authentication timed out".into(), "en".into()).await;
                                break;
                            }
                        }
                        _ = session.cancel.cancelled() => {
                            let _ = handle
                                .disconnect(russh::Disconnect::ByApplication, "forkbox is shutting down".into(), "en".into())
                                .await;
                            let _ = tokio::time::timeout(Duration::from_secs(2), &mut running).await;
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::info!(error = %e, "handshake failed"),
        }
        session.teardown().await;
        tracing::info!("disconnected");
    }
    .instrument(span)
    .await;
}

//! The SSH side of a connection: authentication and channel requests, over russh.
//!
//! Handler callbacks run inside russh's connection loop, so each one validates, replies
//! and hands work to a task; none of them waits on a command.

use std::path::Path;
use std::sync::Arc;

use russh::keys::ssh_key::HashAlg;
use russh::keys::{Algorithm, PrivateKey};
use russh::server::{Auth, ChannelOpenHandle, Msg, Session as SshSession};
use russh::{Channel, ChannelId};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};

use crate::config::AuthMode;
use crate::session::channel::{self, ForkState};
use crate::session::{MAX_CLIENT_ENV_VALUE, Session};

pub mod auth;
pub mod sftp;

pub use auth::{AuthPolicy, Pace};

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read host key {path}: {reason}")]
    Load { path: String, reason: String },
    #[error("cannot write host key {path}: {reason}")]
    Save { path: String, reason: String },
    #[error("cannot read authorized keys {path}: {reason}")]
    AuthorizedKeys { path: String, reason: String },
}

/// Loads the host key at `path`, or generates an ed25519 key there if `generate` and the
/// file does not exist yet (the embedded default: the same key on every later start).
pub fn load_or_generate_host_key(path: &Path, generate: bool) -> Result<PrivateKey, KeyError> {
    let shown = path.display().to_string();
    if !path.exists() && generate {
        let key = PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519).map_err(|e| {
            KeyError::Save {
                path: shown.clone(),
                reason: e.to_string(),
            }
        })?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| KeyError::Save {
                path: shown.clone(),
                reason: e.to_string(),
            })?;
        }
        key.write_openssh_file(path, russh::keys::ssh_key::LineEnding::LF)
            .map_err(|e| KeyError::Save {
                path: shown.clone(),
                reason: e.to_string(),
            })?;
        tracing::info!(path = %shown, "generated a new ed25519 host key");
        return Ok(key);
    }
    russh::keys::load_secret_key(path, None).map_err(|e| KeyError::Load {
        path: shown,
        reason: e.to_string(),
    })
}

/// What a client is told when it authenticated but every session slot is taken.
pub const TOO_MANY_SESSIONS: &str = "forkbox: too many sessions; try again later";

/// The russh handler of one connection.
pub struct Handler {
    pub session: Arc<Session>,
    pub auth: Arc<AuthPolicy>,
    /// Session slots (`--max-sessions`): one is taken when authentication succeeds, so
    /// connections that never log in never hold one.
    pub slots: Arc<Semaphore>,
    /// Hands the taken slot to the connection task, which then makes the fork; `None`
    /// once authentication succeeded.
    pub admitted: Option<oneshot::Sender<OwnedSemaphorePermit>>,
    /// Where the connection task's fork creation stands; channels wait on it.
    pub fork: watch::Receiver<ForkState>,
    /// Set once a slot was taken and handed over: channels may open from then on.
    pub logged_in: bool,
    /// When each authentication answer goes out (`--auth-min-time-ms` after its attempt
    /// began, accept or reject alike).
    pub pace: Pace,
}

impl Handler {
    fn accept_anonymous(&self, user: &str) -> Auth {
        if self.auth.mode == AuthMode::Anonymous {
            self.session.set_user(user);
            Auth::Accept
        } else {
            Auth::Reject {
                proceed_with_methods: Some(self.auth.methods()),
                partial_success: false,
            }
        }
    }
}

impl Handler {
    /// Whether a key whose signature checked out logs `user` in.
    async fn decide_publickey(&self, user: &str, key: &russh::keys::PublicKey) -> Auth {
        if !self.auth.allows_key(key).await {
            return Auth::reject();
        }
        self.session.set_user(user);
        // Under --auth keys a session's snapshots count against its key (by
        // fingerprint); anonymous servers take any key, so there it names nobody.
        if self.auth.mode == AuthMode::Keys {
            let fingerprint = key.fingerprint(HashAlg::Sha256);
            self.session.set_key_owner(&fingerprint.to_string());
        }
        Auth::Accept
    }
}

impl russh::server::Handler for Handler {
    type Error = russh::Error;

    async fn auth_none(&mut self, user: &str) -> Result<Auth, Self::Error> {
        let started = self.pace.begin();
        let answer = self.accept_anonymous(user);
        Ok(self.pace.answer(started, answer, false).await)
    }

    async fn auth_password(&mut self, user: &str, _password: &str) -> Result<Auth, Self::Error> {
        let started = self.pace.begin();
        let answer = self.accept_anonymous(user);
        Ok(self.pace.answer(started, answer, false).await)
    }

    async fn auth_keyboard_interactive<'a>(
        &'a mut self,
        user: &str,
        _submethods: &str,
        _response: Option<russh::server::Response<'a>>,
    ) -> Result<Auth, Self::Error> {
        let started = self.pace.begin();
        let answer = self.accept_anonymous(user);
        Ok(self.pace.answer(started, answer, false).await)
    }

    async fn auth_publickey_offered(
        &mut self,
        _user: &str,
        offer: russh::server::PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        // Accepted, the same request may go on (its signature checked, then
        // `auth_publickey`), or this was a query and that is its answer.
        let started = self.pace.begin();
        Ok(if self.auth.allows_key(offer.public_key).await {
            self.pace.answer(started, Auth::Accept, true).await
        } else {
            self.pace.answer(started, Auth::reject(), false).await
        })
    }

    async fn auth_publickey(
        &mut self,
        user: &str,
        key: russh::server::VerifiedPublicKey<'_>,
    ) -> Result<Auth, Self::Error> {
        let started = self.pace.begin();
        let answer = self.decide_publickey(user, key.public_key).await;
        Ok(self.pace.answer(started, answer, false).await)
    }

    /// The window russh grants the client next: smaller while a stdin queue of the
    /// session is full (see [`crate::session::flow`]).
    fn adjust_window(&mut self, _channel: ChannelId, _current: u32) -> u32 {
        self.session.outbound.window()
    }

    /// Takes a session slot and hands it to the connection task, which makes the fork
    /// outside russh's loop; without a free slot the client is told so and disconnected.
    async fn auth_succeeded(&mut self, ssh: &mut SshSession) -> Result<(), Self::Error> {
        let Some(admitted) = self.admitted.take() else {
            return Ok(());
        };
        let span = &self.session.span;
        let Ok(permit) = self.slots.clone().try_acquire_owned() else {
            tracing::warn!(parent: span, user = %self.session.user(), "session cap reached; login refused");
            crate::telemetry::metrics::session_refused(
                crate::telemetry::metrics::auth_label(self.auth.mode),
                crate::telemetry::metrics::Limit::MaxSessions,
            );
            // The client shows the reason of a disconnect on its stderr (OpenSSH:
            // "Received disconnect from …: forkbox: too many sessions; try again later").
            ssh.disconnect(
                russh::Disconnect::TooManyConnections,
                TOO_MANY_SESSIONS,
                "en",
            )?;
            return Ok(());
        };
        // From here on the session has its id (and maybe a fork from the pool).
        self.session.claim();
        match self.session.login_snapshot() {
            Some(version) => {
                tracing::info!(parent: span, user = %self.session.user(), snapshot = %version, "authenticated")
            }
            None => tracing::info!(parent: span, user = %self.session.user(), "authenticated"),
        }
        // The connection task only goes away with the connection, which ends this loop.
        self.logged_in = admitted.send(permit).is_ok();
        Ok(())
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        ssh: &mut SshSession,
    ) -> Result<(), Self::Error> {
        let draining = self.session.services().drain.is_cancelled();
        if !self.logged_in || self.session.cancel.is_cancelled() || draining {
            return Ok(()); // dropping the handle refuses the channel
        }
        let Ok(slot) = self.session.channel_slots.clone().try_acquire_owned() else {
            tracing::info!(
                parent: &self.session.span,
                max = crate::session::MAX_CHANNELS,
                "channel refused: too many open channels"
            );
            return Ok(());
        };
        reply.accept().await;
        let session = self.session.clone();
        let fork = self.fork.clone();
        let handle = ssh.handle();
        self.session.spawn(async move {
            channel::run(session, channel, fork, handle).await;
            drop(slot);
        });
        Ok(())
    }

    #[allow(clippy::too_many_arguments, reason = "the signature is russh's")]
    async fn pty_request(
        &mut self,
        channel: ChannelId,
        _term: &str,
        _col_width: u32,
        _row_height: u32,
        _pix_width: u32,
        _pix_height: u32,
        _modes: &[(russh::Pty, u32)],
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn shell_request(
        &mut self,
        channel: ChannelId,
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        _data: &[u8],
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }

    async fn env_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        value: &str,
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        // The session environment is forkbox's own; the channel task takes the few
        // variables a client may set (locale, terminal, time zone) and drops the rest.
        if crate::session::client_may_set(name) && value.len() <= MAX_CLIENT_ENV_VALUE {
            session.channel_success(channel)
        } else {
            session.channel_failure(channel)
        }
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        // The channel task serves it (or closes the channel for any other name).
        if name == "sftp" {
            session.channel_success(channel)
        } else {
            tracing::info!(subsystem = name, "subsystem refused");
            session.channel_failure(channel)
        }
    }

    async fn x11_request(
        &mut self,
        channel: ChannelId,
        _single_connection: bool,
        _protocol: &str,
        _cookie: &str,
        _screen: u32,
        session: &mut SshSession,
    ) -> Result<(), Self::Error> {
        tracing::info!("X11 forwarding refused");
        session.channel_failure(channel)
    }

    async fn agent_request(
        &mut self,
        _channel: ChannelId,
        _session: &mut SshSession,
    ) -> Result<bool, Self::Error> {
        tracing::info!("agent forwarding refused");
        Ok(false)
    }

    async fn tcpip_forward(
        &mut self,
        _address: &str,
        _port: &mut u32,
        _session: &mut SshSession,
    ) -> Result<bool, Self::Error> {
        tracing::info!("remote port forwarding refused");
        Ok(false)
    }
}

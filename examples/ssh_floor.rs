//! The latency floor for `bench/latency.sh`: an SSH server on russh, with forkbox's TCP
//! settings (no Nagle, quick ACKs) and host-key type, that lets anyone in and answers every
//! exec request with exit status 0 and nothing else — no session, no fork, no shell.
//!
//! `cargo run --release --example ssh_floor -- 127.0.0.1:0` prints `listening on ADDR`.

use std::sync::Arc;

use russh::keys::{PrivateKey, ssh_key::Algorithm};
use russh::server::{Auth, Handler, Msg, Session};
use russh::{Channel, ChannelId};

struct Floor;

impl Handler for Floor {
    type Error = russh::Error;

    async fn auth_none(&mut self, _user: &str) -> Result<Auth, Self::Error> {
        Ok(Auth::Accept)
    }

    async fn auth_password(&mut self, _user: &str, _password: &str) -> Result<Auth, Self::Error> {
        Ok(Auth::Accept)
    }

    async fn channel_open_session(
        &mut self,
        _channel: Channel<Msg>,
        reply: russh::server::ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        reply.accept().await;
        Ok(())
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        _data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)?;
        session.exit_status_request(channel, 0)?;
        session.eof(channel)?;
        session.close(channel)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let key = PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519)?;
    let config = Arc::new(russh::server::Config {
        keys: vec![key],
        nodelay: true,
        auth_rejection_time_initial: Some(std::time::Duration::ZERO),
        ..Default::default()
    });
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let stream = forkbox::server::quickack::QuickAck::new(stream);
        let config = config.clone();
        tokio::spawn(async move {
            if let Ok(running) = russh::server::run_stream(config, stream, Floor).await {
                let _ = running.await;
            }
        });
    }
}

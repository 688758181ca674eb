//! The audit trail (`--audit`): every command line a session runs, as one JSON line each,
//! so an operator can answer "what did this session do?".
//!
//! A line holds the session id, the user it logged in as, the client's address, how the
//! command came (`exec` request, a line typed at a `terminal`, or a line of a `script`
//! piped to a shell without one), the command text, its start time (RFC 3339, UTC,
//! milliseconds), its duration in milliseconds and its exit status. Nothing of the server
//! is in it — no key, credential, bucket or path — only what the session itself sent.
//!
//! Lines go to one writer task in order. Targets: the server's stdout, a file (appended),
//! or the store that holds the forks, as objects `audit/<server-id>/<time>-<n>.jsonl`
//! written in batches: no fork ever sees `audit/` (a session's view is its own layer over
//! the base) and the janitor only ever lists forks, leases and snapshots.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::AuditTarget;
use crate::fork::{ServerId, SessionId};
use crate::storage::{Attrs, Store};

/// Lines queued for the writer; a session whose line finds the queue full waits, so the
/// trail never drops a line and never holds more than this many.
const QUEUE: usize = 1024;

/// A store batch is written once it holds this many bytes...
const BATCH_BYTES: usize = 256 * 1024;

/// ...or once its first line has waited this long, so a quiet server's trail still reaches
/// the store within seconds.
const BATCH_DELAY: Duration = Duration::from_secs(5);

/// Where the audit objects live in the forks store.
pub const AUDIT_PREFIX: &str = "audit/";

/// Why the audit trail cannot start.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("cannot open the audit file {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--audit store needs a store that holds the forks")]
    NoStore,
}

/// How a command came to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// An SSH exec request (`ssh host 'cmd'`).
    Exec,
    /// A line typed at an interactive terminal.
    Terminal,
    /// A complete command read from a script piped to a shell without a terminal.
    Script,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Origin::Exec => "exec",
            Origin::Terminal => "terminal",
            Origin::Script => "script",
        }
    }
}

/// One command line a session ran.
#[derive(Debug)]
pub struct Record<'a> {
    pub session: SessionId,
    pub user: &'a str,
    pub peer: Option<SocketAddr>,
    pub origin: Origin,
    pub command: &'a str,
    pub started: SystemTime,
    pub duration: Duration,
    pub status: i32,
}

impl Record<'_> {
    /// The record as one JSON line, newline included.
    pub fn to_line(&self) -> String {
        let started = chrono::DateTime::<chrono::Utc>::from(self.started)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let value = serde_json::json!({
            "session": self.session.to_string(),
            "user": self.user,
            "peer": self.peer.map(|p| p.to_string()),
            "origin": self.origin.as_str(),
            "command": self.command,
            "start": started,
            "duration_ms": self.duration.as_millis() as u64,
            "status": self.status,
        });
        let mut line = value.to_string();
        line.push('\n');
        line
    }
}

/// The sending side of the trail; cheap to clone, one per server shared by sessions.
#[derive(Clone, Debug)]
pub struct Audit {
    tx: mpsc::Sender<String>,
}

/// The writer task; [`Writer::finish`] writes what is queued and ends it.
#[derive(Debug)]
pub struct Writer {
    task: JoinHandle<()>,
    stop: CancellationToken,
}

impl Audit {
    /// Starts the trail to `target`; `store` is the forks store (for `--audit store`).
    pub async fn start(
        target: &AuditTarget,
        store: Option<Store>,
        server: ServerId,
    ) -> Result<(Audit, Writer), AuditError> {
        let (tx, rx) = mpsc::channel(QUEUE);
        let stop = CancellationToken::new();
        let rx = Lines {
            rx,
            stop: stop.clone(),
        };
        let task = match target {
            AuditTarget::Stdout => tokio::spawn(to_stream(rx, Box::new(tokio::io::stdout()))),
            AuditTarget::File(path) => {
                let file = tokio::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .await
                    .map_err(|source| AuditError::Open {
                        path: path.clone(),
                        source,
                    })?;
                tokio::spawn(to_stream(rx, Box::new(file)))
            }
            AuditTarget::Store => {
                let store = store.ok_or(AuditError::NoStore)?;
                tokio::spawn(to_store(rx, store, server))
            }
        };
        Ok((Audit { tx }, Writer { task, stop }))
    }

    /// Adds a record to the trail (waits while the queue is full).
    pub async fn record(&self, record: &Record<'_>) {
        if self.tx.send(record.to_line()).await.is_err() {
            tracing::error!("the audit writer is gone; a record is lost");
        }
    }
}

impl Writer {
    /// Ends the trail: records still queued are written (the last store batch too), later
    /// ones are refused.
    pub async fn finish(self) {
        self.stop.cancel();
        if let Err(e) = self.task.await {
            tracing::error!(error = %e, "the audit writer failed");
        }
    }
}

/// The writer's side of the queue: lines until every [`Audit`] is gone or the writer is
/// told to stop, and then what was queued before.
struct Lines {
    rx: mpsc::Receiver<String>,
    stop: CancellationToken,
}

impl Lines {
    async fn recv(&mut self) -> Option<String> {
        if !self.stop.is_cancelled() {
            tokio::select! {
                line = self.rx.recv() => return line,
                _ = self.stop.cancelled() => {}
            }
        }
        // Stopping: no more lines are taken (closing again does nothing); what was
        // queued still comes, then the end.
        self.rx.close();
        self.rx.recv().await
    }
}

/// Writes lines to a stream as they come, each flushed at once.
async fn to_stream(mut rx: Lines, mut out: Box<dyn tokio::io::AsyncWrite + Send + Unpin>) {
    let mut failed = false;
    while let Some(line) = rx.recv().await {
        let written = async {
            out.write_all(line.as_bytes()).await?;
            out.flush().await
        }
        .await;
        match written {
            Ok(()) => failed = false,
            Err(e) if !failed => {
                // Once per outage, not once per line.
                tracing::error!(error = %e, "cannot write the audit trail");
                failed = true;
            }
            Err(_) => {}
        }
    }
}

/// Collects lines into batches and writes each batch as one object of the store.
async fn to_store(mut rx: Lines, store: Store, server: ServerId) {
    let mut batch = String::new();
    let mut seq: u64 = 0;
    let mut due: Option<tokio::time::Instant> = None;
    loop {
        let line = match due {
            Some(at) => tokio::select! {
                line = rx.recv() => line,
                _ = tokio::time::sleep_until(at) => {
                    flush(&store, server, &mut seq, &mut batch).await;
                    due = None;
                    continue;
                }
            },
            None => rx.recv().await,
        };
        let Some(line) = line else { break };
        if batch.is_empty() {
            due = Some(tokio::time::Instant::now() + BATCH_DELAY);
        }
        batch.push_str(&line);
        if batch.len() >= BATCH_BYTES {
            flush(&store, server, &mut seq, &mut batch).await;
            due = None;
        }
    }
    flush(&store, server, &mut seq, &mut batch).await;
}

/// The key of a server's `seq`-th batch, begun at `now`: sorted by time within a server.
pub fn batch_key(server: ServerId, now: SystemTime, seq: u64) -> String {
    let t = chrono::DateTime::<chrono::Utc>::from(now).format("%Y%m%dT%H%M%S%.3fZ");
    format!("{AUDIT_PREFIX}{server}/{t}-{seq:06}.jsonl")
}

async fn flush(store: &Store, server: ServerId, seq: &mut u64, batch: &mut String) {
    if batch.is_empty() {
        return;
    }
    let key = batch_key(server, SystemTime::now(), *seq);
    *seq += 1;
    let data = Bytes::from(std::mem::take(batch));
    let lines = data.iter().filter(|b| **b == b'\n').count();
    if let Err(e) = store.put(&key, data, &Attrs::default()).await {
        tracing::error!(error = %e, %key, lines, "cannot write an audit batch; its lines are lost");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(command: &str) -> Record<'_> {
        Record {
            session: SessionId::new(),
            user: "alice",
            peer: Some("127.0.0.1:4242".parse().unwrap()),
            origin: Origin::Exec,
            command,
            started: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
            duration: Duration::from_millis(42),
            status: 3,
        }
    }

    #[test]
    fn a_record_is_one_json_line() {
        let r = record("echo \"hi\"\nls");
        let line = r.to_line();
        assert!(line.ends_with('\n'));
        assert_eq!(line.matches('\n').count(), 1, "{line:?}");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["session"], r.session.to_string());
        assert_eq!(v["user"], "alice");
        assert_eq!(v["peer"], "127.0.0.1:4242");
        assert_eq!(v["origin"], "exec");
        assert_eq!(v["command"], "echo \"hi\"\nls");
        assert_eq!(v["start"], "2023-11-14T22:13:20.123Z");
        assert_eq!(v["duration_ms"], 42);
        assert_eq!(v["status"], 3);
    }

    #[tokio::test]
    async fn store_batches_land_under_the_audit_prefix() {
        let store = Store::memory();
        let server = ServerId::new();
        let (audit, writer) = Audit::start(&AuditTarget::Store, Some(store.clone()), server)
            .await
            .unwrap();
        audit.record(&record("one")).await;
        audit.record(&record("two")).await;
        writer.finish().await;
        drop(audit);
        let dir = format!("{AUDIT_PREFIX}{server}");
        let listed = store.list(&dir).await.unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert!(listed[0].0.ends_with(".jsonl"), "{listed:?}");
        let key = format!("{dir}/{}", listed[0].0);
        let data = store.read(&key, 0, 1 << 20).await.unwrap();
        let text = String::from_utf8(data.to_vec()).unwrap();
        let commands: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["command"].to_string())
            .collect();
        assert_eq!(commands, ["\"one\"", "\"two\""]);
    }

    #[test]
    fn batch_keys_sort_by_time() {
        let server = ServerId::new();
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let a = batch_key(server, t, 0);
        let b = batch_key(server, t + Duration::from_millis(1), 1);
        assert!(a < b);
        assert!(a.starts_with(&format!("audit/{server}/20231114T221320.000Z-")));
    }
}

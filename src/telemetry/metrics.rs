//! Prometheus metrics: one process-wide recorder (the `metrics` facade with
//! `metrics-exporter-prometheus`), fed by one-line hooks where events happen, rendered by
//! the HTTP side port's `/metrics`.
//!
//! Every metric name and label value is spelled here, and only here: the hooks in
//! `server`, `ssh`, `session`, `janitor`, `storage`, `vfs` and the shell call the typed
//! functions below. Without an installed recorder (`forkbox exec`, unit tests) every hook
//! is a no-op. Label values come from closed sets (enums), never from clients, so the
//! number of series is bounded.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ::metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

use forkbox_commands::CommandKind;

/// Upper bounds of the latency histograms, in seconds: from a builtin's microseconds to a
/// fork deletion that retried for its whole deadline.
const LATENCY_BUCKETS: &[f64] = &[
    0.000_1, 0.000_5, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0,
];

/// Sessions live now, by auth mode.
pub const SESSIONS_ACTIVE: &str = "forkbox_sessions_active";
/// Sessions ended (or refused at login), by auth mode and outcome.
pub const SESSIONS_TOTAL: &str = "forkbox_sessions_total";
/// Time to create a session's fork.
pub const FORK_CREATE_SECONDS: &str = "forkbox_fork_create_seconds";
/// Time to delete a session's fork, retries included.
pub const FORK_DELETE_SECONDS: &str = "forkbox_fork_delete_seconds";
/// Fork creations and deletions that failed, by operation.
pub const FORK_FAILURES_TOTAL: &str = "forkbox_fork_failures_total";
/// Janitor passes over abandoned forks.
pub const JANITOR_SWEEPS_TOTAL: &str = "forkbox_janitor_sweeps_total";
/// Abandoned forks the janitor deleted.
pub const JANITOR_FORKS_DELETED_TOTAL: &str = "forkbox_janitor_forks_deleted_total";
/// Channel data bytes from clients.
pub const BYTES_RECEIVED_TOTAL: &str = "forkbox_bytes_received_total";
/// Channel data bytes to clients (stdout and stderr).
pub const BYTES_SENT_TOTAL: &str = "forkbox_bytes_sent_total";
/// Commands run, by kind, with their durations.
pub const COMMAND_SECONDS: &str = "forkbox_command_duration_seconds";
/// Limits reached, by kind.
pub const LIMIT_HITS_TOTAL: &str = "forkbox_limit_hits_total";
/// Pauses imposed on sessions over their CPU share (`--session-cpu-share`), with their
/// lengths.
pub const CPU_PAUSE_SECONDS: &str = "forkbox_cpu_pause_seconds";
/// Failed object-store requests (not-found answers excluded), by plane.
pub const STORE_ERRORS_TOTAL: &str = "forkbox_store_errors_total";

/// Installs the process-wide recorder and describes every metric; the handle renders
/// them. Fails if a recorder is installed already (once per process).
pub fn install() -> Result<PrometheusHandle, BuildError> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)?
        .install_recorder()?;
    describe();
    Ok(handle)
}

fn describe() {
    describe_gauge!(SESSIONS_ACTIVE, "Sessions logged in now, by auth mode.");
    describe_counter!(
        SESSIONS_TOTAL,
        "Sessions that ended, by auth mode and outcome (closed, idle_timeout, lifetime, shutdown, fork_failed, refused)."
    );
    describe_histogram!(
        FORK_CREATE_SECONDS,
        ::metrics::Unit::Seconds,
        "Time to create a session's fork."
    );
    describe_histogram!(
        FORK_DELETE_SECONDS,
        ::metrics::Unit::Seconds,
        "Time to delete a session's fork, retries included."
    );
    describe_counter!(
        FORK_FAILURES_TOTAL,
        "Fork creations and deletions that failed, by operation."
    );
    describe_counter!(JANITOR_SWEEPS_TOTAL, "Janitor passes over abandoned forks.");
    describe_counter!(
        JANITOR_FORKS_DELETED_TOTAL,
        "Abandoned forks (expired leases) the janitor deleted."
    );
    describe_counter!(
        BYTES_RECEIVED_TOTAL,
        ::metrics::Unit::Bytes,
        "Channel data received from clients."
    );
    describe_counter!(
        BYTES_SENT_TOTAL,
        ::metrics::Unit::Bytes,
        "Channel data sent to clients (stdout and stderr)."
    );
    describe_histogram!(
        COMMAND_SECONDS,
        ::metrics::Unit::Seconds,
        "Commands run, by kind (builtin, native, wasi), and how long they took."
    );
    describe_counter!(LIMIT_HITS_TOTAL, "Limits reached, by kind.");
    describe_histogram!(
        CPU_PAUSE_SECONDS,
        ::metrics::Unit::Seconds,
        "Pauses imposed on sessions over their CPU share while the server was contended."
    );
    describe_counter!(
        STORE_ERRORS_TOTAL,
        "Failed object-store requests (not-found answers excluded), by plane (data: opendal, control: S3 bucket API)."
    );
}

/// How a client authenticated, as a label.
pub fn auth_label(mode: crate::config::AuthMode) -> &'static str {
    match mode {
        crate::config::AuthMode::Anonymous => "anonymous",
        crate::config::AuthMode::Keys => "keys",
    }
}

/// How a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The client went away (logged out, or the connection dropped).
    Closed,
    /// `--idle-timeout` ended it.
    IdleTimeout,
    /// `--max-session-lifetime` ended it.
    Lifetime,
    /// The server shut down (drain) while it ran.
    Shutdown,
    /// Its fork could not be made.
    ForkFailed,
    /// Refused at login by a bound (sessions in total, per address, connection rate).
    Refused,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Closed => "closed",
            Outcome::IdleTimeout => "idle_timeout",
            Outcome::Lifetime => "lifetime",
            Outcome::Shutdown => "shutdown",
            Outcome::ForkFailed => "fork_failed",
            Outcome::Refused => "refused",
        }
    }
}

/// A bound that was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// `--max-sessions`.
    MaxSessions,
    /// `--max-sessions-per-ip`.
    PerIpSessions,
    /// `--max-connections-per-minute-per-ip`.
    ConnectionRate,
    /// `--max-unauthenticated` or `--max-unauthenticated-per-ip`.
    Unauthenticated,
    /// `--auth-timeout`.
    AuthTimeout,
    /// `--idle-timeout`.
    Idle,
    /// `--max-session-lifetime`.
    Lifetime,
    /// `--command-timeout`.
    CommandTimeout,
    /// `--quota-bytes` or `--quota-objects`.
    Quota,
    /// `--session-memory`, as the shell reports it.
    Memory,
    /// `--session-tasks` (reported once per exhaustion).
    Tasks,
}

impl Limit {
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::MaxSessions => "max_sessions",
            Limit::PerIpSessions => "per_ip_sessions",
            Limit::ConnectionRate => "connection_rate",
            Limit::Unauthenticated => "unauthenticated",
            Limit::AuthTimeout => "auth_timeout",
            Limit::Idle => "idle",
            Limit::Lifetime => "lifetime",
            Limit::CommandTimeout => "command_timeout",
            Limit::Quota => "quota",
            Limit::Memory => "memory",
            Limit::Tasks => "tasks",
        }
    }
}

/// A session logged in.
pub fn session_started(auth: &'static str) {
    gauge!(SESSIONS_ACTIVE, "auth" => auth).increment(1.0);
}

/// A session that had logged in ended (its fork is gone).
pub fn session_ended(auth: &'static str, outcome: Outcome) {
    gauge!(SESSIONS_ACTIVE, "auth" => auth).decrement(1.0);
    counter!(SESSIONS_TOTAL, "auth" => auth, "outcome" => outcome.as_str()).increment(1);
}

/// A login refused by a bound: it never became a live session.
pub fn session_refused(auth: &'static str, limit: Limit) {
    counter!(SESSIONS_TOTAL, "auth" => auth, "outcome" => Outcome::Refused.as_str()).increment(1);
    limit_hit(limit);
}

/// A fork creation that took `elapsed`, or failed.
pub fn fork_created(elapsed: Duration, ok: bool) {
    if ok {
        histogram!(FORK_CREATE_SECONDS).record(elapsed.as_secs_f64());
    } else {
        counter!(FORK_FAILURES_TOTAL, "op" => "create").increment(1);
    }
}

/// A fork deletion that took `elapsed`, or failed (the fork is left to the janitor).
pub fn fork_deleted(elapsed: Duration, ok: bool) {
    if ok {
        histogram!(FORK_DELETE_SECONDS).record(elapsed.as_secs_f64());
    } else {
        counter!(FORK_FAILURES_TOTAL, "op" => "delete").increment(1);
    }
}

/// A janitor pass over forks, which deleted `deleted` abandoned ones.
pub fn janitor_swept(deleted: usize) {
    counter!(JANITOR_SWEEPS_TOTAL).increment(1);
    counter!(JANITOR_FORKS_DELETED_TOTAL).increment(deleted as u64);
}

/// Channel data from a client.
pub fn bytes_received(n: usize) {
    counter!(BYTES_RECEIVED_TOTAL).increment(n as u64);
}

/// Channel data to a client.
pub fn bytes_sent(n: usize) {
    counter!(BYTES_SENT_TOTAL).increment(n as u64);
}

/// A session over its CPU share on a contended server was paused for `pause`.
pub fn cpu_paused(pause: Duration) {
    histogram!(CPU_PAUSE_SECONDS).record(pause.as_secs_f64());
}

/// A bound was reached.
pub fn limit_hit(limit: Limit) {
    counter!(LIMIT_HITS_TOTAL, "kind" => limit.as_str()).increment(1);
}

/// The limit a shell error reports, if it is one (`--session-tasks`, `--session-memory`).
pub fn shell_error(e: &crate::shell::ShellError) {
    match e {
        crate::shell::ShellError::TooManyTasks(_) => limit_hit(Limit::Tasks),
        crate::shell::ShellError::OutOfMemory { .. } => limit_hit(Limit::Memory),
        _ => {}
    }
}

/// Which side of storage failed a request.
#[derive(Clone, Copy, Debug)]
pub enum Plane {
    /// Object reads, writes, lists and deletes (opendal).
    Data,
    /// Bucket operations (aws-sdk-s3).
    Control,
}

/// A store request failed (a not-found answer is no failure).
pub fn store_error(plane: Plane) {
    let plane = match plane {
        Plane::Data => "data",
        Plane::Control => "control",
    };
    counter!(STORE_ERRORS_TOTAL, "plane" => plane).increment(1);
}

fn kind_label(kind: CommandKind) -> &'static str {
    match kind {
        CommandKind::Builtin => "builtin",
        CommandKind::Native => "native",
        CommandKind::Wasi => "wasi",
    }
}

/// The duration histograms of the three command kinds, looked up once: the shell runs
/// builtins in tight loops, and a lookup by name and label per command would cost more
/// than many builtins do. Taken after the recorder is installed (at start-up, before any
/// session), or never.
fn command_histograms() -> &'static [::metrics::Histogram; 3] {
    static HANDLES: OnceLock<[::metrics::Histogram; 3]> = OnceLock::new();
    HANDLES.get_or_init(|| {
        [CommandKind::Builtin, CommandKind::Native, CommandKind::Wasi]
            .map(|k| histogram!(COMMAND_SECONDS, "kind" => kind_label(k)))
    })
}

/// Records a command of `kind` when dropped, with the time since it was made: one line at
/// a dispatch site, `let _ran = telemetry::metrics::command(kind);`.
#[must_use = "the command is recorded when this is dropped"]
pub struct CommandTimer {
    kind: CommandKind,
    started: Instant,
}

/// Starts timing a command of `kind`.
pub fn command(kind: CommandKind) -> CommandTimer {
    CommandTimer {
        kind,
        started: Instant::now(),
    }
}

impl Drop for CommandTimer {
    fn drop(&mut self) {
        let i = match self.kind {
            CommandKind::Builtin => 0,
            CommandKind::Native => 1,
            CommandKind::Wasi => 2,
        };
        command_histograms()[i].record(self.started.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics_exporter_prometheus::PrometheusBuilder;

    #[test]
    fn hooks_render_as_prometheus_text() {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
            .unwrap()
            .build_recorder();
        let handle = recorder.handle();
        ::metrics::with_local_recorder(&recorder, || {
            session_started("anonymous");
            session_started("anonymous");
            session_ended("anonymous", Outcome::Closed);
            session_refused("anonymous", Limit::PerIpSessions);
            fork_created(Duration::from_millis(3), true);
            fork_created(Duration::ZERO, false);
            limit_hit(Limit::Quota);
            store_error(Plane::Data);
            bytes_sent(10);
            bytes_sent(5);
        });
        let text = handle.render();
        for line in [
            "forkbox_sessions_active{auth=\"anonymous\"} 1",
            "forkbox_sessions_total{auth=\"anonymous\",outcome=\"closed\"} 1",
            "forkbox_sessions_total{auth=\"anonymous\",outcome=\"refused\"} 1",
            "forkbox_limit_hits_total{kind=\"per_ip_sessions\"} 1",
            "forkbox_limit_hits_total{kind=\"quota\"} 1",
            "forkbox_fork_failures_total{op=\"create\"} 1",
            "forkbox_fork_create_seconds_bucket{le=\"0.005\"} 1",
            "forkbox_fork_create_seconds_count 1",
            "forkbox_store_errors_total{plane=\"data\"} 1",
            "forkbox_bytes_sent_total 15",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
        }
    }
}

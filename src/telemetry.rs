//! Operating a server: logs (plain text or JSON lines, filtered by `RUST_LOG`), Prometheus
//! metrics ([`metrics`]) and the HTTP side port that serves health, readiness and metrics
//! beside SSH ([`http`]).
//!
//! Logs carry the session span (`session{id=… peer=…}`) on every line a session logs;
//! with `--log-format json` it is the `span`/`spans` objects of each line.

pub mod http;
pub mod metrics;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (colours only on a terminal).
    #[default]
    Text,
    /// One JSON object per line, with the spans (the session id) of the event.
    Json,
}

/// Starts logging at `default` level unless `RUST_LOG` says otherwise, as plain text.
pub fn init(default: &str) {
    init_with(default, LogFormat::Text);
}

/// Starts logging at `default` level unless `RUST_LOG` says otherwise, in `format`.
pub fn init_with(default: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => {
            // Colours only on a terminal, so log files and CI output stay plain text.
            let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
            builder.with_ansi(ansi).try_init()
        }
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init(),
    };
}

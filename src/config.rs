//! Command-line configuration.
//!
//! `forkbox serve` runs the SSH server; `forkbox exec` runs one script over a throwaway
//! fork of a directory, like `bash -c`, with no SSH at all; `forkbox snapshots` lists and
//! deletes the snapshots in a store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use forkbox_commands::fs::{DEFAULT_QUOTA_BYTES, DEFAULT_QUOTA_OBJECTS, Quota};

/// forkbox: every SSH connection gets its own disposable, copy-on-write world.
#[derive(Debug, Parser)]
#[command(name = "forkbox", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the SSH server.
    Serve(Box<ServeArgs>),
    /// Run a script over a throwaway fork of a directory (no SSH), like `bash -c`.
    Exec(ExecArgs),
    /// List or delete the snapshots kept in a store (the same storage options as serve).
    #[command(subcommand)]
    Snapshots(SnapshotsCommand),
    /// The WASI tools (python3, jq, rg, …) that `wasm/provision` installs.
    #[command(subcommand)]
    Wasm(WasmCommand),
}

/// `forkbox wasm`: what the server finds of its WASI tools.
#[derive(Debug, Subcommand)]
pub enum WasmCommand {
    /// Check every tool of the manifest against the --wasm-dir, then compile each module
    /// into the on-disk module cache with the server's engine settings, so a server's
    /// first run of a tool does not compile (the python module takes tens of seconds).
    Precompile(WasmArgs),
    /// Check every tool of the manifest against the --wasm-dir and list them; status 1 if
    /// any is missing or corrupt.
    Check(WasmArgs),
}

/// Where the WASI tools are and what a guest may use.
#[derive(Clone, Debug, Args)]
pub struct WasmArgs {
    /// Directory `wasm/provision` installed the WASI tools in. Default:
    /// $FORKBOX_WASM_DIR, else $HOME/.cache/forkbox/wasm (where `wasm/provision` puts
    /// them by default). Tools not found there say so, naming wasm/provision, when run.
    #[arg(long, value_name = "DIR")]
    pub wasm_dir: Option<PathBuf>,

    /// Memory one WASI guest may use (`512M`, `2G`: powers of 1024); a tool's own limit
    /// in the manifest applies where it is lower. Past it the guest ends with an
    /// out-of-memory message and a non-zero status, and the session goes on.
    #[arg(long, value_name = "SIZE", default_value_t = DEFAULT_WASM_MEMORY, value_parser = parse_size)]
    pub wasm_memory: u64,
}

/// Memory of one WASI guest unless `--wasm-memory` says otherwise: enough for
/// `import numpy, pandas` with room for real data.
pub const DEFAULT_WASM_MEMORY: u64 = 1 << 30;

impl WasmArgs {
    /// The WASI configuration these options give.
    pub fn config(&self) -> crate::wasi::tools::WasiConfig {
        crate::wasi::tools::WasiConfig {
            wasm_dir: self.wasm_dir.clone().unwrap_or_else(default_wasm_dir),
            memory_limit: self.wasm_memory,
        }
    }
}

/// `$FORKBOX_WASM_DIR`, else `$HOME/.cache/forkbox/wasm` (what `wasm/provision` uses),
/// else `./forkbox-data/wasm`.
pub fn default_wasm_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FORKBOX_WASM_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache/forkbox/wasm"),
        None => PathBuf::from(DEFAULT_DATA_DIR).join("wasm"),
    }
}

/// How clients authenticate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AuthMode {
    /// Anyone may log in as any user (a public demo).
    Anonymous,
    /// Only public keys listed in --authorized-keys may log in.
    Keys,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (use port 0 for any free port).
    #[arg(long, default_value = "127.0.0.1:2222", value_parser = parse_listen)]
    pub listen: SocketAddr,

    /// Directory for the host key, the default base and the session forks.
    #[arg(long, default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,

    /// SSH host key (OpenSSH format). Default: <data-dir>/host_ed25519, generated on
    /// first run and reused after, so clients keep seeing the same host key.
    #[arg(long)]
    pub host_key: Option<PathBuf>,

    /// A local directory used read-only as every session's starting filesystem.
    /// Default: <data-dir>/base, created with a short welcome README.md.
    #[arg(long)]
    pub base: Option<PathBuf>,

    /// Who may log in.
    #[arg(long, value_enum, default_value_t = AuthMode::Anonymous)]
    pub auth: AuthMode,

    /// OpenSSH authorized_keys file; required with --auth keys. Looked at on every
    /// login and re-read when it changed; a version that cannot be read or used keeps
    /// the last good keys (with a warning in the log).
    #[arg(long)]
    pub authorized_keys: Option<PathBuf>,

    /// With --auth keys: milliseconds every answer to an authentication attempt takes at
    /// least, from the attempt's start, accept or reject alike, so timing does not tell
    /// which keys are listed. (An anonymous server accepts every attempt at once.)
    #[arg(long, value_name = "MS", default_value_t = 3, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub auth_min_time_ms: u64,

    /// Most sessions served at once, counted from successful authentication; a login
    /// past it is told "forkbox: too many sessions; try again later" and closed.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_sessions: u64,

    /// Seconds a connection has to finish the SSH handshake and authenticate; then it is
    /// closed.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub auth_timeout: u64,

    /// Most connections that have not authenticated yet, in total. When they are all
    /// taken, a newcomer replaces the oldest of the source holding the most, or is
    /// closed at once if its own source holds as many.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_unauthenticated: u64,

    /// Most connections that have not authenticated yet from one IPv4 address or IPv6
    /// /64; further ones are closed at once.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_unauthenticated_per_ip: u64,

    /// Most sessions one IPv4 address or IPv6 /64 may hold at once; a login past it is
    /// told "forkbox: too many sessions from your address …" and closed.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_sessions_per_ip: u64,

    /// Most connections one IPv4 address or IPv6 /64 may open per minute; the login of
    /// one past it is told "forkbox: too many connections from your address …" and closed.
    #[arg(long, value_name = "N", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_connections_per_minute_per_ip: u64,

    /// Seconds a session may sit with no command running and no input before it is
    /// disconnected with a message; 0 for no limit. A channel without a terminal counts
    /// as running until it ends.
    #[arg(long, value_name = "SECS", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(0..=31_536_000))]
    pub idle_timeout: u64,

    /// Seconds after login at which a session is disconnected with a message, whatever it
    /// is doing; 0 for no limit.
    #[arg(long, value_name = "SECS", default_value_t = 14400, value_parser = clap::value_parser!(u64).range(0..=31_536_000))]
    pub max_session_lifetime: u64,

    /// Seconds allowed for deleting a session's fork (with retries) after it ends.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub delete_deadline: u64,

    /// Seconds a fork's lease holds. A live session renews it every third of that; a fork
    /// whose lease expired (its server crashed) is deleted by the janitor of any server
    /// sharing the store.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub lease_ttl: u64,

    /// Forks made ahead of logins, so that a login takes one ready-made rather than waiting
    /// for its own (a login that asks for a snapshot still forks it). Each waits with a
    /// lease renewed like a session's and is deleted when the server drains; 0 for none.
    #[arg(long, value_name = "N", default_value_t = crate::session::pool::DEFAULT_POOL as u64,
          value_parser = clap::value_parser!(u64).range(0..=crate::session::pool::MAX_POOL as u64))]
    pub fork_pool: u64,

    /// Seconds a fork waits in the pool at most: an older one is never handed out but
    /// deleted and made again, which bounds how old a base a login sees where a fork is a
    /// copy of the base (`tigris`); `overlay` forks read the base live.
    #[arg(long, value_name = "SECS", default_value_t = crate::session::pool::DEFAULT_MAX_AGE.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub fork_pool_max_age: u64,

    /// Seconds between two janitor passes (one also runs at start-up).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub janitor_interval: u64,

    /// Percent of the server's CPU one session may use while other sessions compete for
    /// it (1–100): a session over it is paused at its yield points until it is back
    /// within its share; a session alone, or on a quiet server, is never slowed. 100 for
    /// no limit.
    #[arg(long, value_name = "PERCENT", default_value_t = forkbox_commands::cpu::DEFAULT_SHARE_PERCENT,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub session_cpu_share: u32,

    /// Seconds a command may run (an exec request, or one command line typed at a
    /// terminal; a script piped to a shell without a terminal counts as one command); then
    /// it is stopped with `forkbox: command timed out after …`, status 124. 0 for no limit.
    #[arg(long, value_name = "SECS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=31_536_000))]
    pub command_timeout: u64,

    /// The first line an interactive session shows (before the session's own id and the
    /// hint to type `help`); empty for none.
    #[arg(long, value_name = "TEXT", default_value = DEFAULT_MOTD)]
    pub motd: String,

    /// Sets every option of a named profile that is not given on the command line
    /// (README: "Public demo profile" lists the values).
    #[arg(long, value_enum, value_name = "PROFILE")]
    pub profile: Option<Profile>,

    #[command(flatten)]
    pub quota: QuotaArgs,

    #[command(flatten)]
    pub snapshots: SnapshotArgs,

    #[command(flatten)]
    pub storage: StorageArgs,

    #[command(flatten)]
    pub ops: OpsArgs,

    #[command(flatten)]
    pub wasm: WasmArgs,

    /// Load each WASI tool's module when a session first runs it, instead of all of them in
    /// the background at start-up. A server keeps about half a gigabyte less resident
    /// until someone runs python; that first run waits for the load (most of a second).
    #[arg(long)]
    pub wasm_lazy_load: bool,
}

/// What an interactive session shows first unless `--motd` says otherwise.
pub const DEFAULT_MOTD: &str = "Welcome to forkbox.";

/// Options for operating the server: the HTTP side port, drain, audit trail, log format.
#[derive(Debug, Args)]
pub struct OpsArgs {
    /// Address of the HTTP side port serving /healthz, /readyz and /metrics (Prometheus);
    /// off unless given (port 0 picks a free one; the chosen address is printed on the
    /// second line of stdout).
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    pub http_listen: Option<SocketAddr>,

    /// Seconds a drain (SIGTERM or SIGINT) may take: new connections are refused and
    /// /readyz fails at once, running commands may finish, then what remains is cancelled
    /// and its forks deleted, all within this time; then the process exits 0. A second
    /// signal during the drain cancels what still runs at once.
    #[arg(long, value_name = "SECS", default_value_t = 25, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub drain_grace: u64,

    /// Where the audit trail goes (every command line a session runs, as JSON lines):
    /// `stdout`, `file:PATH` (appended), or `store` (objects under `audit/` in the data
    /// directory or forks bucket, written in batches). Off unless given.
    #[arg(long, value_name = "TARGET", value_parser = parse_audit)]
    pub audit: Option<AuditTarget>,

    /// How log lines on stderr are written.
    #[arg(long, value_enum, default_value_t = crate::telemetry::LogFormat::Text)]
    pub log_format: crate::telemetry::LogFormat,
}

impl OpsArgs {
    pub fn drain_grace(&self) -> Duration {
        Duration::from_secs(self.drain_grace)
    }
}

/// Where the audit trail goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuditTarget {
    /// The server's stdout, after the lines that say where it listens.
    Stdout,
    /// A file, appended to.
    File(PathBuf),
    /// Objects under `audit/` in the store that holds the forks.
    Store,
}

fn parse_audit(s: &str) -> Result<AuditTarget, String> {
    match s {
        "stdout" => Ok(AuditTarget::Stdout),
        "store" => Ok(AuditTarget::Store),
        _ => match s.strip_prefix("file:") {
            Some(path) if !path.is_empty() => Ok(AuditTarget::File(PathBuf::from(path))),
            _ => Err(format!("{s:?} is not stdout, file:PATH or store")),
        },
    }
}

/// A named set of option values (`--profile`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Profile {
    /// Anonymous logins with the limits of an open-internet demo on a small machine.
    PublicDemo,
}

/// One option a profile sets: the flag and its value as typed on a command line, and why.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    pub flag: &'static str,
    pub value: &'static str,
    pub why: &'static str,
}

/// `--profile public-demo`: anyone may log in, on a machine of about 2 CPUs and 2 GiB.
/// The README's table of these values is checked against this one by a test.
pub const PUBLIC_DEMO: &[Setting] = &[
    Setting {
        flag: "--auth",
        value: "anonymous",
        why: "anyone may log in, as any user",
    },
    Setting {
        flag: "--max-sessions",
        value: "32",
        why: "32 sessions of 32M memory stay within 1 GiB",
    },
    Setting {
        flag: "--max-sessions-per-ip",
        value: "2",
        why: "one address cannot take the demo for itself",
    },
    Setting {
        flag: "--max-connections-per-minute-per-ip",
        value: "6",
        why: "a reconnect loop is slowed down",
    },
    Setting {
        flag: "--max-unauthenticated",
        value: "32",
        why: "half-open logins in total",
    },
    Setting {
        flag: "--max-unauthenticated-per-ip",
        value: "4",
        why: "half-open logins from one address",
    },
    Setting {
        flag: "--auth-timeout",
        value: "10",
        why: "time to log in",
    },
    Setting {
        flag: "--idle-timeout",
        value: "300",
        why: "an idle session goes after 5 minutes",
    },
    Setting {
        flag: "--max-session-lifetime",
        value: "1800",
        why: "any session goes after 30 minutes",
    },
    Setting {
        flag: "--command-timeout",
        value: "60",
        why: "one command runs at most a minute",
    },
    Setting {
        flag: "--quota-bytes",
        value: "64M",
        why: "what one fork may store",
    },
    Setting {
        flag: "--quota-objects",
        value: "5000",
        why: "files and directories one fork may hold",
    },
    Setting {
        flag: "--session-memory",
        value: "32M",
        why: "memory one session may hold",
    },
    Setting {
        flag: "--session-tasks",
        value: "128",
        why: "tasks one session may run at once",
    },
    Setting {
        flag: "--snapshots",
        value: "off",
        why: "nothing outlives a demo session",
    },
    Setting {
        flag: "--motd",
        value: PUBLIC_DEMO_MOTD,
        why: "says what the demo is",
    },
];

/// What an interactive session of the public demo shows first.
pub const PUBLIC_DEMO_MOTD: &str = "Welcome to the forkbox public demo: a bash-like shell over your own disposable copy-on-write fork of a shared filesystem. Anyone can log in; do not store anything private. Sessions end after 5 idle minutes or 30 minutes in all.";

impl Profile {
    /// The options this profile sets.
    pub fn settings(self) -> &'static [Setting] {
        match self {
            Profile::PublicDemo => PUBLIC_DEMO,
        }
    }
}

/// The clap id of a long flag: `--max-sessions` → `max_sessions`.
fn arg_id(flag: &str) -> String {
    flag.trim_start_matches("--").replace('-', "_")
}

/// The profile's settings as the README's markdown table.
pub fn profile_table(profile: Profile) -> String {
    let mut out = String::from("| option | value | why |\n|---|---|---|\n");
    for s in profile.settings() {
        out.push_str(&format!("| `{}` | `{}` | {} |\n", s.flag, s.value, s.why));
    }
    out
}

impl Cli {
    /// Parses the command line; with `serve --profile P`, every option of `P` not given on
    /// the command line takes the profile's value (parsed and checked as if typed).
    pub fn parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches, parser::ValueSource};
        let mut argv: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        let matches = Cli::command().try_get_matches_from(argv.clone())?;
        let profile = match matches.subcommand() {
            Some(("serve", serve)) => serve
                .get_one::<Profile>("profile")
                .copied()
                .map(|p| (p, serve)),
            _ => None,
        };
        let Some((profile, serve)) = profile else {
            return Cli::from_arg_matches(&matches);
        };
        for s in profile.settings() {
            if serve.value_source(&arg_id(s.flag)) != Some(ValueSource::CommandLine) {
                argv.push(format!("{}={}", s.flag, s.value).into());
            }
        }
        Cli::try_parse_from(argv)
    }
}

/// Where `serve` keeps its data unless told otherwise.
pub const DEFAULT_DATA_DIR: &str = "./forkbox-data";

/// Where the objects live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// A local directory (the embedded default: --base and --data-dir).
    Fs,
    /// Any S3-compatible object store (--s3-endpoint, --base-bucket); credentials come from
    /// the standard AWS environment variables, shared config files and profiles.
    S3,
}

/// How each session's fork is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Strategy {
    /// Works on any backend: the base is read-only and each session's changes live in
    /// their own layer (under `forks/<session-id>/` in the forks bucket or data directory).
    Overlay,
    /// Tigris bucket forks: every session gets the bucket `<base-bucket>-<session-id>`,
    /// forked copy-on-write from the base bucket by Tigris itself.
    Tigris,
}

/// Storage options of `serve`.
#[derive(Debug, Args)]
pub struct StorageArgs {
    #[command(flatten)]
    pub store: StoreArgs,

    /// Start every session from this snapshot (a version printed by `snapshot`) instead
    /// of the base as it is now. With --fork-strategy tigris, a version that no `snapshot`
    /// printed is taken as a Tigris snapshot version of the base bucket.
    #[arg(long, value_name = "VERSION")]
    pub base_snapshot: Option<String>,

    /// Directory where large files being written are staged before they are uploaded.
    /// Default: <data-dir>/spill.
    #[arg(long, value_name = "DIR")]
    pub spill_dir: Option<PathBuf>,
}

/// Where the objects live and how forks are made: what `serve` and `snapshots` share.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Where objects live.
    #[arg(long, value_enum, default_value_t = Backend::Fs)]
    pub backend: Backend,

    /// How sessions' forks are made.
    #[arg(long, value_enum, default_value_t = Strategy::Overlay)]
    pub fork_strategy: Strategy,

    /// S3 endpoint URL (default: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, else AWS S3).
    #[arg(long, value_name = "URL")]
    pub s3_endpoint: Option<String>,

    /// S3 region (default: AWS_REGION or AWS_DEFAULT_REGION, else "auto").
    #[arg(long, value_name = "REGION")]
    pub s3_region: Option<String>,

    /// Address buckets as https://endpoint/bucket instead of https://bucket.endpoint (what
    /// most self-hosted S3 servers need).
    #[arg(long)]
    pub s3_path_style: bool,

    /// The bucket every session starts from (never modified). Required with --backend s3.
    #[arg(long, value_name = "BUCKET")]
    pub base_bucket: Option<String>,

    /// With --backend s3: the bucket holding the forks' leases, and with --fork-strategy
    /// overlay the sessions' layers and snapshots (created if missing). Every server in
    /// front of one base must use the same one. Default: <base-bucket>-forks.
    #[arg(long, value_name = "BUCKET")]
    pub forks_bucket: Option<String>,
}

/// Per-session quota options, shared by `serve` and `exec`.
#[derive(Debug, Args)]
pub struct QuotaArgs {
    /// Bytes a session's fork may hold: the sizes of the files it created or changed
    /// (base files it never touched don't count). Accepts 512M, 2G, 1T (powers of 1024).
    #[arg(long, value_name = "SIZE", default_value_t = DEFAULT_QUOTA_BYTES, value_parser = parse_size)]
    pub quota_bytes: u64,

    /// Objects a session's fork may hold: files, symlinks, directories and deletion
    /// markers it created.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_QUOTA_OBJECTS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub quota_objects: u64,

    /// Memory a session may hold at once: its shell variables, the buffers of its commands
    /// and what its pipes and substitutions hold. Past it a command fails with
    /// `out of memory (session limit SIZE)` and the session goes on.
    #[arg(long, value_name = "SIZE", default_value_t = forkbox_commands::budget::DEFAULT_MEMORY as u64,
          value_parser = parse_size)]
    pub session_memory: u64,

    /// Tasks a session may have alive at once: pipeline stages, subshells, command
    /// substitutions and nested shells together. Past it the running command stops with
    /// `fork: Resource temporarily unavailable`; this is what contains a fork bomb.
    #[arg(long, value_name = "N", default_value_t = forkbox_commands::budget::DEFAULT_TASKS as u64,
          value_parser = clap::value_parser!(u64).range(16..=1_000_000))]
    pub session_tasks: u64,
}

impl QuotaArgs {
    pub fn quota(&self) -> Quota {
        Quota {
            bytes: Some(self.quota_bytes),
            objects: Some(self.quota_objects),
        }
    }

    /// The memory and task bounds of one session, as `(bytes, tasks)`.
    pub fn session_limits(&self) -> SessionLimits {
        SessionLimits {
            memory: usize::try_from(self.session_memory).unwrap_or(usize::MAX),
            tasks: usize::try_from(self.session_tasks).unwrap_or(usize::MAX),
        }
    }
}

/// What one session may hold at once (see [`forkbox_commands::Budget`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    pub memory: usize,
    pub tasks: usize,
}

impl SessionLimits {
    /// A fresh budget with these bounds, for one session.
    pub fn budget(&self) -> forkbox_commands::Budget {
        forkbox_commands::Budget::new(self.memory, self.tasks)
    }

    /// A fresh budget with these bounds whose session `cpu` paces, if given.
    pub fn paced_budget(
        &self,
        cpu: Option<&std::sync::Arc<forkbox_commands::cpu::CpuGovernor>>,
    ) -> forkbox_commands::Budget {
        match cpu {
            Some(g) => forkbox_commands::Budget::with_cpu(self.memory, self.tasks, g.clone()),
            None => self.budget(),
        }
    }
}

impl ServeArgs {
    pub fn delete_deadline(&self) -> Duration {
        Duration::from_secs(self.delete_deadline)
    }
    pub fn lease_ttl(&self) -> Duration {
        Duration::from_secs(self.lease_ttl)
    }
    pub fn fork_pool_max_age(&self) -> Duration {
        Duration::from_secs(self.fork_pool_max_age)
    }
    pub fn janitor_interval(&self) -> Duration {
        Duration::from_secs(self.janitor_interval)
    }
    pub fn auth_timeout(&self) -> Duration {
        Duration::from_secs(self.auth_timeout)
    }
    /// `--idle-timeout`, `None` for no limit.
    pub fn idle_timeout(&self) -> Option<Duration> {
        (self.idle_timeout > 0).then(|| Duration::from_secs(self.idle_timeout))
    }
    /// `--command-timeout`, `None` for no limit.
    pub fn command_timeout(&self) -> Option<Duration> {
        (self.command_timeout > 0).then(|| Duration::from_secs(self.command_timeout))
    }
    /// `--max-session-lifetime`, `None` for no limit.
    pub fn max_session_lifetime(&self) -> Option<Duration> {
        (self.max_session_lifetime > 0).then(|| Duration::from_secs(self.max_session_lifetime))
    }
}

// --- Snapshots: who may take them, how much each identity keeps, for how long, and the
// operator's `forkbox snapshots` command.

/// Snapshots one identity may keep by default: as many as one session may take, so a
/// single session's allowance is never cut short by the default.
pub const DEFAULT_SNAPSHOT_MAX_COUNT: u64 = 16;

/// The largest `--snapshot-max-count`: quotas are checked against a listing, which reads
/// at most [`crate::fork::MAX_LISTED_SNAPSHOTS`] snapshots.
const SNAPSHOT_MAX_COUNT_LIMIT: u64 = 10_000;

/// Bytes one identity's snapshots may hold by default: one default session quota, so any
/// fork that fits its quota can be kept at least once, and an identity never keeps more
/// than one full session's worth of data.
pub const DEFAULT_SNAPSHOT_QUOTA_BYTES: u64 = DEFAULT_QUOTA_BYTES;

/// How long snapshots are kept by default: a week is long enough to come back to work,
/// short enough that what nobody uses does not pile up.
pub const DEFAULT_SNAPSHOT_MAX_AGE: &str = "7d";

/// Who may take snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SnapshotsMode {
    /// `on` with --auth keys, `off` with --auth anonymous.
    Auto,
    /// Every session; under --auth anonymous all anonymous users share one quota.
    On,
    /// No session (logging in from an existing snapshot still works).
    Off,
}

/// A snapshot age limit; `None`: snapshots are kept until an operator deletes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxAge(pub Option<Duration>);

/// Snapshot options of `serve`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Who may take snapshots. Every snapshot counts against its identity's quota: the
    /// authenticated key (its SHA256 fingerprint) with --auth keys; with --auth anonymous
    /// all users are one identity.
    #[arg(long, value_enum, default_value_t = SnapshotsMode::Auto)]
    pub snapshots: SnapshotsMode,

    /// Snapshots one identity may keep, at most 10000; the janitor also deletes an
    /// identity's oldest beyond this many (servers sharing a store can overshoot it by one
    /// each).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SNAPSHOT_MAX_COUNT,
          value_parser = clap::value_parser!(u64).range(1..=SNAPSHOT_MAX_COUNT_LIMIT))]
    pub snapshot_max_count: u64,

    /// Bytes one identity's snapshots may hold together (512M, 2G: powers of 1024). With
    /// overlay a snapshot's size is that of the layer it copied; with tigris, what its
    /// session had written (its fork's quota usage) when it was taken.
    #[arg(long, value_name = "SIZE", default_value_t = DEFAULT_SNAPSHOT_QUOTA_BYTES,
          value_parser = parse_size)]
    pub snapshot_quota_bytes: u64,

    /// Age past which the janitor deletes a snapshot: 90s, 30m, 12h, 7d; 0 or off keeps
    /// snapshots until an operator deletes them.
    #[arg(long, value_name = "AGE", default_value = DEFAULT_SNAPSHOT_MAX_AGE,
          value_parser = parse_age)]
    pub snapshot_max_age: MaxAge,
}

impl SnapshotArgs {
    /// Whether sessions may take snapshots on a server that authenticates with `auth`.
    pub fn enabled(&self, auth: AuthMode) -> bool {
        match self.snapshots {
            SnapshotsMode::On => true,
            SnapshotsMode::Off => false,
            SnapshotsMode::Auto => auth == AuthMode::Keys,
        }
    }
}

/// An age: digits with a unit s, m, h or d (plain digits are seconds); `0` or `off` is no
/// limit.
fn parse_age(s: &str) -> Result<MaxAge, String> {
    let bad = || format!("{s:?} is not an age like 90s, 30m, 12h, 7d, or off");
    let t = s.trim();
    if t.eq_ignore_ascii_case("off") {
        return Ok(MaxAge(None));
    }
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num.parse().map_err(|_| bad())?;
    let per: u64 = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    let secs = n
        .checked_mul(per)
        .ok_or_else(|| format!("{s:?} is too long"))?;
    Ok(MaxAge((secs > 0).then(|| Duration::from_secs(secs))))
}

/// `forkbox snapshots`: an operator's view of the snapshots in a store.
#[derive(Debug, Subcommand)]
pub enum SnapshotsCommand {
    /// List every snapshot, oldest first: version, name, creation time (UTC), owner and
    /// size in bytes (`-` where not recorded).
    List(SnapshotsListArgs),
    /// Delete snapshots by version: each one's record first (from then on it is neither
    /// listed nor usable), then its files (overlay) or its keeper bucket (tigris).
    Delete(SnapshotsDeleteArgs),
}

#[derive(Debug, Args)]
pub struct SnapshotsListArgs {
    /// Print a JSON array of objects (version, name, created, owner, bytes, session).
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub at: SnapshotStoreArgs,
}

#[derive(Debug, Args)]
pub struct SnapshotsDeleteArgs {
    /// The versions to delete (as `snapshot` and `forkbox snapshots list` print them).
    #[arg(required = true, value_name = "VERSION")]
    pub versions: Vec<String>,

    #[command(flatten)]
    pub at: SnapshotStoreArgs,
}

/// Where `forkbox snapshots` finds the snapshots: as `serve` was told.
#[derive(Debug, Args)]
pub struct SnapshotStoreArgs {
    /// The data directory of the server (with --backend fs, the snapshots are in it).
    #[arg(long, default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,

    #[command(flatten)]
    pub store: StoreArgs,
}

// --- end of the snapshot options.

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Directory used read-only as the filesystem (default: the current directory, which
    /// is never modified).
    #[arg(long)]
    pub base: Option<PathBuf>,

    /// The script to run; without it, the script is read from standard input.
    #[arg(short = 'c')]
    pub script: Option<String>,

    #[command(flatten)]
    pub quota: QuotaArgs,

    #[command(flatten)]
    pub wasm: WasmArgs,

    /// Arguments, as bash takes them: with -c, `$0` then `$1`…; without it, `$1`….
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.parse::<SocketAddr>()
        .map_err(|_| format!("{s:?} is not an address like 127.0.0.1:2222 or [::1]:2222"))
}

/// A size in bytes: digits with an optional unit K, M, G or T (powers of 1024; `KiB`,
/// `MB` and the like are read the same way, as `df` and `du` users expect). At least 1.
fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("{s:?} is not a size like 1048576, 512M or 2G");
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num.parse().map_err(|_| bad())?;
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(bad()),
    };
    let bytes = n
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))?;
    if bytes == 0 {
        return Err(format!("{s:?}: the size must be at least 1 byte"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_parses_defaults_and_rejects_bad_listen() {
        let cli = Cli::try_parse_from(["forkbox", "serve"]).unwrap();
        let Command::Serve(args) = cli.command else {
            panic!("expected serve")
        };
        assert_eq!(args.listen.to_string(), "127.0.0.1:2222");
        assert_eq!(args.auth, AuthMode::Anonymous);
        assert_eq!(
            (
                args.max_sessions,
                args.auth_timeout,
                args.max_unauthenticated,
                args.max_unauthenticated_per_ip
            ),
            (256, 10, 64, 8)
        );
        for zero in [
            "--max-sessions",
            "--auth-timeout",
            "--max-unauthenticated",
            "--max-unauthenticated-per-ip",
        ] {
            assert!(Cli::try_parse_from(["forkbox", "serve", zero, "0"]).is_err());
        }
        let err = Cli::try_parse_from(["forkbox", "serve", "--listen", "nowhere"]).unwrap_err();
        assert!(err.to_string().contains("is not an address"));
    }

    #[test]
    fn quota_sizes_are_validated() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1k"), Ok(1024));
        for bad in ["", "G", "1.5G", "-1", "1X", "0", "99999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad:?} accepted");
        }
        let cli = Cli::try_parse_from(["forkbox", "serve"]).unwrap();
        let Command::Serve(args) = cli.command else {
            panic!("expected serve")
        };
        assert_eq!(args.quota.quota(), Quota::default());
        let cli = Cli::try_parse_from([
            "forkbox",
            "serve",
            "--quota-bytes",
            "1M",
            "--quota-objects",
            "10",
        ])
        .unwrap();
        let Command::Serve(args) = cli.command else {
            panic!("expected serve")
        };
        assert_eq!(
            args.quota.quota(),
            Quota {
                bytes: Some(1 << 20),
                objects: Some(10)
            }
        );
        let err = Cli::try_parse_from(["forkbox", "serve", "--quota-bytes", "lots"]).unwrap_err();
        assert!(err.to_string().contains("is not a size"), "{err}");
        assert!(Cli::try_parse_from(["forkbox", "serve", "--quota-objects", "0"]).is_err());
    }

    #[test]
    fn snapshot_options_default_to_off_for_anonymous_servers() {
        let serve = |extra: &[&str]| {
            let cli = Cli::try_parse_from(["forkbox", "serve"].iter().chain(extra)).unwrap();
            let Command::Serve(args) = cli.command else {
                panic!("expected serve")
            };
            args
        };
        let args = serve(&[]);
        assert!(!args.snapshots.enabled(AuthMode::Anonymous));
        assert!(args.snapshots.enabled(AuthMode::Keys));
        assert_eq!(args.snapshots.snapshot_max_count, 16);
        assert_eq!(args.snapshots.snapshot_quota_bytes, 1 << 30);
        assert_eq!(
            args.snapshots.snapshot_max_age,
            MaxAge(Some(Duration::from_secs(7 * 86_400)))
        );
        let args = serve(&["--snapshots", "on", "--snapshot-max-age", "off"]);
        assert!(args.snapshots.enabled(AuthMode::Anonymous));
        assert_eq!(args.snapshots.snapshot_max_age, MaxAge(None));
        let args = serve(&["--snapshots", "off"]);
        assert!(!args.snapshots.enabled(AuthMode::Keys));
        assert!(Cli::try_parse_from(["forkbox", "serve", "--snapshot-max-count", "0"]).is_err());
        assert!(
            Cli::try_parse_from(["forkbox", "serve", "--snapshot-max-count", "10001"]).is_err()
        );
        assert_eq!(
            usize::try_from(SNAPSHOT_MAX_COUNT_LIMIT).ok(),
            Some(crate::fork::MAX_LISTED_SNAPSHOTS)
        );
    }

    #[test]
    fn ages_are_validated() {
        let secs = |n| Ok(MaxAge(Some(Duration::from_secs(n))));
        assert_eq!(parse_age("90"), secs(90));
        assert_eq!(parse_age("90s"), secs(90));
        assert_eq!(parse_age("30m"), secs(1800));
        assert_eq!(parse_age("12h"), secs(43_200));
        assert_eq!(parse_age("7d"), secs(604_800));
        assert_eq!(parse_age("0"), Ok(MaxAge(None)));
        assert_eq!(parse_age("OFF"), Ok(MaxAge(None)));
        for bad in ["", "d", "1w", "-1d", "1.5h", "99999999999999999999d"] {
            assert!(parse_age(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn snapshots_takes_storage_options_and_versions() {
        let cli = Cli::try_parse_from([
            "forkbox",
            "snapshots",
            "delete",
            "v1",
            "v2",
            "--backend",
            "s3",
            "--base-bucket",
            "b",
        ])
        .unwrap();
        let Command::Snapshots(SnapshotsCommand::Delete(args)) = cli.command else {
            panic!("expected snapshots delete")
        };
        assert_eq!(args.versions, vec!["v1", "v2"]);
        assert_eq!(args.at.store.backend, Backend::S3);
        assert_eq!(args.at.data_dir, PathBuf::from(DEFAULT_DATA_DIR));
        assert!(Cli::try_parse_from(["forkbox", "snapshots", "delete"]).is_err());
        let cli = Cli::try_parse_from(["forkbox", "snapshots", "list", "--json"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Snapshots(SnapshotsCommand::List(SnapshotsListArgs { json: true, .. }))
        ));
        // What only a server uses is not an option here.
        assert!(
            Cli::try_parse_from(["forkbox", "snapshots", "list", "--base-snapshot", "v"]).is_err()
        );
    }

    fn serve_args(argv: &[&str]) -> ServeArgs {
        let cli = Cli::parse_args(["forkbox", "serve"].iter().chain(argv)).unwrap();
        let Command::Serve(args) = cli.command else {
            panic!("expected serve")
        };
        *args
    }

    #[test]
    fn the_public_demo_profile_sets_its_values_unless_overridden() {
        let plain = serve_args(&[]);
        let demo = serve_args(&["--profile", "public-demo"]);
        assert_eq!(demo.auth, AuthMode::Anonymous);
        assert_eq!(
            (
                demo.max_sessions,
                demo.max_sessions_per_ip,
                demo.max_connections_per_minute_per_ip,
                demo.max_unauthenticated,
                demo.max_unauthenticated_per_ip,
                demo.auth_timeout,
            ),
            (32, 2, 6, 32, 4, 10)
        );
        assert_eq!(
            (
                demo.idle_timeout,
                demo.max_session_lifetime,
                demo.command_timeout
            ),
            (300, 1800, 60)
        );
        assert_eq!(
            demo.quota.quota(),
            Quota {
                bytes: Some(64 << 20),
                objects: Some(5000)
            }
        );
        assert_eq!(
            (demo.quota.session_memory, demo.quota.session_tasks),
            (32 << 20, 128)
        );
        assert!(!demo.snapshots.enabled(demo.auth));
        assert_eq!(demo.motd, PUBLIC_DEMO_MOTD);
        assert_eq!(plain.motd, DEFAULT_MOTD);
        assert_eq!((plain.idle_timeout, plain.command_timeout), (1800, 0));
        // Each value can still be set on its own, before or after --profile.
        let own = serve_args(&[
            "--idle-timeout",
            "60",
            "--profile",
            "public-demo",
            "--quota-bytes=1G",
            "--motd",
            "",
            "--auth",
            "keys",
        ]);
        assert_eq!(own.idle_timeout, 60);
        assert_eq!(own.quota.quota_bytes, 1 << 30);
        assert_eq!(own.motd, "");
        assert_eq!(own.auth, AuthMode::Keys);
        assert_eq!(own.max_sessions, 32);
        // Every profile flag is a serve option, set once.
        let mut flags: Vec<&str> = PUBLIC_DEMO.iter().map(|s| s.flag).collect();
        flags.sort_unstable();
        flags.dedup();
        assert_eq!(flags.len(), PUBLIC_DEMO.len());
    }

    #[test]
    fn the_readme_shows_the_public_demo_values() {
        let readme = include_str!("../README.md");
        let table = profile_table(Profile::PublicDemo);
        assert!(
            readme.contains(&table),
            "README.md must hold the public-demo table exactly as the code has it:\n{table}"
        );
    }

    #[test]
    fn ops_options_parse() {
        let args = serve_args(&[]);
        assert_eq!(args.ops.http_listen, None);
        assert_eq!(args.ops.drain_grace, 25);
        assert_eq!(args.ops.audit, None);
        assert_eq!(args.ops.log_format, crate::telemetry::LogFormat::Text);
        let args = serve_args(&[
            "--http-listen",
            "127.0.0.1:0",
            "--audit",
            "file:/tmp/a.jsonl",
            "--log-format",
            "json",
            "--drain-grace",
            "3",
        ]);
        assert_eq!(args.ops.http_listen.map(|a| a.port()), Some(0));
        assert_eq!(
            args.ops.audit,
            Some(AuditTarget::File(PathBuf::from("/tmp/a.jsonl")))
        );
        assert_eq!(args.ops.log_format, crate::telemetry::LogFormat::Json);
        assert_eq!(args.ops.drain_grace(), Duration::from_secs(3));
        assert_eq!(
            serve_args(&["--audit", "stdout"]).ops.audit,
            Some(AuditTarget::Stdout)
        );
        assert_eq!(
            serve_args(&["--audit", "store"]).ops.audit,
            Some(AuditTarget::Store)
        );
        for bad in ["file:", "syslog", ""] {
            assert!(
                Cli::parse_args(["forkbox", "serve", "--audit", bad]).is_err(),
                "{bad:?} accepted"
            );
        }
        assert!(Cli::parse_args(["forkbox", "serve", "--drain-grace", "0"]).is_err());
    }

    #[test]
    fn exec_takes_script_and_args() {
        let cli = Cli::try_parse_from(["forkbox", "exec", "-c", "echo $1", "x", "y"]).unwrap();
        let Command::Exec(args) = cli.command else {
            panic!("expected exec")
        };
        assert_eq!(args.script.as_deref(), Some("echo $1"));
        assert_eq!(args.args, vec!["x", "y"]);
    }
}

//! Command-line configuration.
//!
//! `forkbox serve` runs the SSH server; `forkbox exec` runs one script over a throwaway
//! fork of a directory, like `bash -c`, with no SSH at all.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::vfs::{DEFAULT_QUOTA_BYTES, DEFAULT_QUOTA_OBJECTS, Quota};

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
    #[arg(long, default_value = "./forkbox-data")]
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

    /// OpenSSH authorized_keys file; required with --auth keys.
    #[arg(long)]
    pub authorized_keys: Option<PathBuf>,

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

    /// Seconds allowed for deleting a session's fork (with retries) after it ends.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub delete_deadline: u64,

    /// Seconds a fork's lease holds. A live session renews it every third of that; a fork
    /// whose lease expired (its server crashed) is deleted by the janitor of any server
    /// sharing the store.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub lease_ttl: u64,

    /// Seconds between two janitor passes (one also runs at start-up).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub janitor_interval: u64,

    #[command(flatten)]
    pub quota: QuotaArgs,

    #[command(flatten)]
    pub storage: StorageArgs,
}

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
}

impl QuotaArgs {
    pub fn quota(&self) -> Quota {
        Quota {
            bytes: Some(self.quota_bytes),
            objects: Some(self.quota_objects),
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
    pub fn janitor_interval(&self) -> Duration {
        Duration::from_secs(self.janitor_interval)
    }
    pub fn auth_timeout(&self) -> Duration {
        Duration::from_secs(self.auth_timeout)
    }
}

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

    /// Positional parameters for the script ($0, $1, ...).
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
    fn exec_takes_script_and_args() {
        let cli = Cli::try_parse_from(["forkbox", "exec", "-c", "echo $1", "x", "y"]).unwrap();
        let Command::Exec(args) = cli.command else {
            panic!("expected exec")
        };
        assert_eq!(args.script.as_deref(), Some("echo $1"));
        assert_eq!(args.args, vec!["x", "y"]);
    }
}

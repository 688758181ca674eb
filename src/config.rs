//! Command-line configuration.
//!
//! `forkbox serve` runs the SSH server; `forkbox exec` runs one script over a throwaway
//! fork of a directory, like `bash -c`, with no SSH at all.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    Serve(ServeArgs),
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

    /// Most sessions served at once; further connections are refused.
    #[arg(long, default_value_t = 256)]
    pub max_sessions: usize,

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

    /// Positional parameters for the script ($0, $1, ...).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.parse::<SocketAddr>()
        .map_err(|_| format!("{s:?} is not an address like 127.0.0.1:2222 or [::1]:2222"))
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
        let err = Cli::try_parse_from(["forkbox", "serve", "--listen", "nowhere"]).unwrap_err();
        assert!(err.to_string().contains("is not an address"));
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

//! `snapshot`: take a snapshot of the session's files, or list the snapshots.
//!
//! A builtin because it acts on the session itself, not on files: the shell reaches the
//! session's fork through a [`SnapshotControl`] handle the session gives it
//! ([`Shell::set_snapshots`]). The shell knows nothing of fork strategies or storage; a
//! shell without a handle (`forkbox exec`, a nested `sh`) says so.

use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use clap::Parser;

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// One snapshot as the `snapshot` builtin shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// What names the snapshot (log in as `snap-<version>` to start from it).
    pub version: String,
    pub name: Option<String>,
    pub created: SystemTime,
}

/// Why a snapshot could not be taken or listed, worded for the session's user: storage
/// details stay in the server log.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshots are not supported by this server's fork strategy")]
    Unsupported,
    /// The server does not let this session take snapshots (`--snapshots`).
    #[error("snapshots are disabled on this server")]
    Disabled,
    /// The session's identity keeps as many snapshots, or as many bytes of them, as it may.
    #[error(
        "quota of {max_count} snapshots / {} reached: you keep {count} holding {}, and this \
         session's files hold {}",
        human_size(*max_bytes),
        human_size(*bytes),
        human_size(*held)
    )]
    Quota {
        max_count: usize,
        max_bytes: u64,
        /// Snapshots the identity keeps.
        count: usize,
        /// What they hold.
        bytes: u64,
        /// What a snapshot of this session would add.
        held: u64,
    },
    #[error("invalid name {0:?}: use 1 to 64 of A-Z a-z 0-9 . _ -")]
    InvalidName(String),
    #[error("this session has already taken {0} snapshots, the most one session may take")]
    Limit(usize),
    #[error("the snapshot failed; the server log has the details")]
    Failed,
}

/// What the `snapshot` builtin may do with the session's fork.
#[async_trait]
pub trait SnapshotControl: Send + Sync {
    /// Takes a snapshot of the session's files (those closed so far), optionally named.
    async fn take(&self, name: Option<&str>) -> Result<SnapshotInfo, SnapshotError>;
    /// Every snapshot, oldest first.
    async fn list(&self) -> Result<Vec<SnapshotInfo>, SnapshotError>;
}

/// Take a snapshot of this session's files, or list snapshots.
///
/// A snapshot holds the files this session has changed, as they are when it is taken
/// (files still open for writing are not in it); it outlives the session. Log in as
/// snap-VERSION@HOST to start a new session from it.
#[derive(Parser, Debug)]
#[command(name = "snapshot", disable_version_flag = true)]
struct Args {
    /// Name the new snapshot (1 to 64 of A-Z a-z 0-9 . _ -).
    #[arg(long, value_name = "NAME", conflicts_with = "list")]
    name: Option<String>,
    /// List every snapshot (version, name, creation time in UTC) instead of taking one.
    #[arg(long)]
    list: bool,
    /// Print JSON: an object for a new snapshot, an array of objects for --list.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let a: Args = match super::parse(sh, io, "snapshot", &args).await {
        Ok(a) => a,
        Err(s) => return Ok(s),
    };
    let Some(ctl) = sh.snapshots.clone() else {
        return super::fail(sh, io, "snapshot: not available here".into(), 1).await;
    };
    let out = if a.list {
        match ctl.list().await {
            Ok(all) if a.json => json_array(&all),
            Ok(all) => table(&all),
            Err(e) => return super::fail(sh, io, format!("snapshot: {e}"), 1).await,
        }
    } else {
        match take(&sh.budget, ctl, a.name).await {
            Ok(s) if a.json => format!("{}\n", json_object(&s)),
            Ok(s) => match &s.name {
                Some(name) => format!("{} {name}\n", s.version),
                None => format!("{}\n", s.version),
            },
            Err(e) => return super::fail(sh, io, format!("snapshot: {e}"), 1).await,
        }
    };
    let _ = io.stdout().write_str(&out).await;
    Ok(0)
}

/// Takes the snapshot on a task of its own, so an interrupted builtin does not stop a
/// copy halfway (the snapshot completes, or cleans up after itself, either way).
async fn take(
    budget: &forkbox_commands::Budget,
    ctl: Arc<dyn SnapshotControl>,
    name: Option<String>,
) -> Result<SnapshotInfo, SnapshotError> {
    let taking = async move { ctl.take(name.as_deref()).await };
    budget
        .spawn(tracing::Instrument::in_current_span(taking))
        .await
        .unwrap_or(Err(SnapshotError::Failed))
}

/// A byte count as the size options take it: `512B`, `20M`, `1.5G` (powers of 1024).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "K", "M", "G", "T"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && bytes >= 1u64 << (10 * (unit + 1)) {
        unit += 1;
    }
    let scale = 1u64 << (10 * unit);
    if bytes.is_multiple_of(scale) {
        format!("{}{}", bytes / scale, UNITS[unit])
    } else {
        let shown = bytes as f64 / scale as f64;
        format!("{shown:.1}{}", UNITS[unit])
    }
}

/// ISO 8601 in UTC, to the second (`2025-05-01T12:00:00Z`).
pub fn iso8601(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A `VERSION NAME CREATED` table; an unnamed snapshot shows `-`.
fn table(all: &[SnapshotInfo]) -> String {
    let rows: Vec<[String; 3]> = all
        .iter()
        .map(|s| {
            [
                s.version.clone(),
                s.name.clone().unwrap_or_else(|| "-".into()),
                iso8601(s.created),
            ]
        })
        .collect();
    let header = ["VERSION", "NAME", "CREATED"].map(str::to_string);
    let width = |col: usize| {
        rows.iter()
            .map(|r| r[col].len())
            .fold(header[col].len(), usize::max)
    };
    let (w0, w1) = (width(0), width(1));
    let mut out = String::new();
    for r in std::iter::once(&header).chain(&rows) {
        out.push_str(&format!("{:w0$}  {:w1$}  {}\n", r[0], r[1], r[2]));
    }
    out
}

/// `s` as a JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_object(s: &SnapshotInfo) -> String {
    let name = s.name.as_deref().map(json_str);
    format!(
        "{{\"version\":{},\"name\":{},\"created\":{}}}",
        json_str(&s.version),
        name.as_deref().unwrap_or("null"),
        json_str(&iso8601(s.created))
    )
}

fn json_array(all: &[SnapshotInfo]) -> String {
    let items: Vec<String> = all.iter().map(json_object).collect();
    format!("[{}]\n", items.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn info(version: &str, name: Option<&str>, secs: u64) -> SnapshotInfo {
        SnapshotInfo {
            version: version.into(),
            name: name.map(str::to_string),
            created: UNIX_EPOCH + Duration::from_secs(secs),
        }
    }

    #[test]
    fn sizes_are_shown_in_the_units_options_take() {
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(512), "512B");
        assert_eq!(human_size(1536), "1.5K");
        assert_eq!(human_size(20 << 20), "20M");
        assert_eq!(human_size(1 << 30), "1G");
        assert_eq!(human_size(3 << 40), "3T");
        assert_eq!(
            SnapshotError::Quota {
                max_count: 2,
                max_bytes: 1 << 20,
                count: 2,
                bytes: 10,
                held: 1536
            }
            .to_string(),
            "quota of 2 snapshots / 1M reached: you keep 2 holding 10B, and this session's \
             files hold 1.5K"
        );
    }

    #[test]
    fn times_are_iso8601_utc() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            iso8601(UNIX_EPOCH + Duration::from_secs(1_700_000_000)),
            "2023-11-14T22:13:20Z"
        );
    }

    #[test]
    fn the_table_lines_up() {
        let t = table(&[info("v1", Some("first"), 0), info("version2", None, 60)]);
        assert_eq!(
            t,
            "VERSION   NAME   CREATED\n\
             v1        first  1970-01-01T00:00:00Z\n\
             version2  -      1970-01-01T00:01:00Z\n"
        );
        assert_eq!(table(&[]), "VERSION  NAME  CREATED\n");
    }

    #[test]
    fn json_is_escaped_and_null_for_no_name() {
        assert_eq!(
            json_object(&info("v1", None, 0)),
            r#"{"version":"v1","name":null,"created":"1970-01-01T00:00:00Z"}"#
        );
        assert_eq!(json_str("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\u0001""#);
        assert_eq!(json_array(&[]), "[]\n");
        assert_eq!(
            json_array(&[info("a", Some("n"), 0), info("b", None, 0)]),
            "[{\"version\":\"a\",\"name\":\"n\",\"created\":\"1970-01-01T00:00:00Z\"},\
             {\"version\":\"b\",\"name\":null,\"created\":\"1970-01-01T00:00:00Z\"}]\n"
        );
    }
}

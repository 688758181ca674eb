//! Forks: each session's copy-on-write view of the base.
//!
//! A [`ForkStrategy`] creates a session's fork in O(1) (nothing of the base is copied),
//! lists the forks that exist (for the janitor) and force-deletes a fork. The strategy
//! hands back a [`ForkView`]: which stores the session's [`crate::vfs::Vfs`] reads and
//! writes. Strategies:
//! - [`overlay::Overlay`]: works on any backend. The base is read-only; the session's
//!   layer (files and whiteouts) lives under `forks/<session-id>/` in the forks store.
//!   A snapshot copies the layer.
//! - [`tigris::Tigris`]: a Tigris bucket fork per session, worked on in place. A snapshot
//!   is a Tigris snapshot kept alive by a bucket of its own.
//!
//! Snapshots: a strategy may keep immutable [`Snapshot`]s of a session's files
//! ([`ForkStrategy::snapshot`]) and start new forks from them
//! ([`ForkStrategy::create_from`]). A snapshot is named by its version, a string that sorts
//! by creation time and is safe in an SSH user name (`snap-<version>@host`); strategies
//! without snapshots keep the default methods, which fail with [`ForkError::Unsupported`].
//! Each snapshot records its [`Owner`] (the identity its quota counts against) and, when
//! known, the bytes it holds, so quotas and retention work from storage alone: across
//! restarts and for every server sharing the store.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use uuid::Uuid;

use crate::storage::StorageError;

pub use crate::storage::layer::{ForkView, Layer};

pub mod overlay;
pub mod s3;
pub mod tigris;

pub use overlay::Overlay;
pub use tigris::{Tigris, TigrisConfig};

/// The id of one connection and of its fork: a UUIDv7, so ids sort by creation time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(Uuid);

impl SessionId {
    /// Mints a new id.
    pub fn new() -> SessionId {
        SessionId(Uuid::now_v7())
    }

    /// When the id was minted (the UUIDv7 timestamp).
    pub fn created_at(&self) -> SystemTime {
        let (secs, nanos) = self
            .0
            .get_timestamp()
            .map(|t| t.to_unix())
            .unwrap_or((0, 0));
        UNIX_EPOCH + Duration::new(secs, nanos)
    }
}

/// The id of one running server process: forks it serves carry it in their lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ServerId(Uuid);

impl ServerId {
    pub fn new() -> ServerId {
        ServerId(Uuid::now_v7())
    }
}

impl Default for ServerId {
    fn default() -> Self {
        ServerId::new()
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// Who serves a fork, and until when that claim holds. A server renews the lease of
/// every fork it serves well before it expires; a fork whose lease expired belongs to a
/// server that is gone, and the janitor of any server may delete it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    pub owner: ServerId,
    pub expires: SystemTime,
}

impl Lease {
    /// A lease held by `owner` for `ttl` from now.
    pub fn new(owner: ServerId, ttl: Duration) -> Lease {
        Lease {
            owner,
            expires: SystemTime::now() + ttl,
        }
    }

    /// The lease's stored form: two `key value` lines, readable with any S3 tool.
    pub fn encode(&self) -> String {
        let secs = self
            .expires
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        format!("owner {}\nexpires {secs}\n", self.owner)
    }

    /// Parses [`Lease::encode`]'s form; `None` for anything else.
    pub fn decode(text: &str) -> Option<Lease> {
        let mut owner = None;
        let mut expires = None;
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("owner", v)) => owner = Uuid::parse_str(v.trim()).ok().map(ServerId),
                Some(("expires", v)) => {
                    expires = v
                        .trim()
                        .parse::<u64>()
                        .ok()
                        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
                }
                _ => {}
            }
        }
        Some(Lease {
            owner: owner?,
            expires: expires?,
        })
    }

    pub fn expired(&self, now: SystemTime) -> bool {
        self.expires < now
    }
}

impl Default for SessionId {
    fn default() -> Self {
        SessionId::new()
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl FromStr for SessionId {
    type Err = ForkError;
    fn from_str(s: &str) -> Result<Self, ForkError> {
        let id = Uuid::parse_str(s).map_err(|_| ForkError::BadId(s.to_string()))?;
        if id.get_version_num() != 7 {
            return Err(ForkError::BadId(s.to_string()));
        }
        Ok(SessionId(id))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    #[error("storage failed for fork {id}")]
    Storage {
        id: String,
        #[source]
        source: StorageError,
    },
    #[error("fork {id} still has objects after deletion")]
    NotDeleted { id: String },
    #[error("{0:?} is not a session id")]
    BadId(String),
    #[error("deleting fork {id} did not finish within {deadline:?}")]
    Deadline { id: String, deadline: Duration },
    /// The strategy cannot do this (snapshots on a strategy without them).
    #[error("{0} is not supported by this fork strategy")]
    Unsupported(&'static str),
    /// No snapshot has this version (or the version is not well-formed).
    #[error("no snapshot {version}")]
    NoSnapshot { version: String },
    /// A snapshot name outside [`valid_snapshot_name`]'s rules.
    #[error("invalid snapshot name {0:?}: use 1 to 64 of A-Z a-z 0-9 . _ -")]
    BadSnapshotName(String),
    /// Storage failed while taking, reading or copying a snapshot.
    #[error("storage failed for snapshot {version}")]
    SnapshotStorage {
        version: String,
        #[source]
        source: StorageError,
    },
    /// A session layer or snapshot holds more objects than anything a session can make.
    #[error("{what} holds more than {limit} objects")]
    TooManyObjects { what: String, limit: usize },
}

/// Longest snapshot name.
pub const SNAPSHOT_NAME_MAX: usize = 64;
/// Longest snapshot version: long enough for a UUID or a nanosecond timestamp, short
/// enough for an SSH user name (`snap-<version>`).
pub const SNAPSHOT_VERSION_MAX: usize = 64;

/// True for a snapshot name: 1 to [`SNAPSHOT_NAME_MAX`] characters of `[A-Za-z0-9._-]`.
pub fn valid_snapshot_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= SNAPSHOT_NAME_MAX
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// True for a snapshot version: 1 to [`SNAPSHOT_VERSION_MAX`] characters of
/// `[A-Za-z0-9-]`, so it is safe as an object key component and in `snap-<version>@host`.
pub fn valid_snapshot_version(version: &str) -> bool {
    !version.is_empty()
        && version.len() <= SNAPSHOT_VERSION_MAX
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// The owner every session has without key authentication: all anonymous users are one
/// identity, so together they get one snapshot quota (a fresh key per connection would
/// otherwise be a fresh quota).
pub const ANONYMOUS_OWNER: &str = "anonymous";

/// Prefix of a key owner: the SHA256 fingerprint, as `ssh-keygen -l` prints it.
const FINGERPRINT_PREFIX: &str = "SHA256:";

/// Longest fingerprint body accepted (a SHA256 one is 43 unpadded base64 characters).
const FINGERPRINT_MAX: usize = 64;

/// Whom a snapshot counts against: `anonymous`, or the SHA256 fingerprint
/// (`SHA256:<base64>`) of the key its session authenticated with under `--auth keys`.
/// Never a key itself. Checked where it is made and where it is read back, so it is always
/// one line of `key value` text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner(String);

impl Owner {
    /// The one identity of every anonymous user.
    pub fn anonymous() -> Owner {
        Owner(ANONYMOUS_OWNER.to_string())
    }

    /// The owner named by a key fingerprint `SHA256:<base64>`; `None` for anything else.
    pub fn from_fingerprint(fingerprint: &str) -> Option<Owner> {
        let body = fingerprint.strip_prefix(FINGERPRINT_PREFIX)?;
        let ok = !body.is_empty()
            && body.len() <= FINGERPRINT_MAX
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
        ok.then(|| Owner(fingerprint.to_string()))
    }

    /// Parses what [`Owner`]'s `Display` wrote: `anonymous` or a fingerprint.
    pub fn parse(s: &str) -> Option<Owner> {
        if s == ANONYMOUS_OWNER {
            Some(Owner::anonymous())
        } else {
            Owner::from_fingerprint(s)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a new snapshot records besides the session's files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotRequest {
    /// The name to give it (checked with [`valid_snapshot_name`]).
    pub name: Option<String>,
    /// Whom it counts against.
    pub owner: Option<Owner>,
    /// What the session's fork holds, as its quota counts it. A strategy that cannot
    /// measure the snapshot itself records this as its size.
    pub held_bytes: Option<u64>,
}

impl SnapshotRequest {
    /// A request with a name only (no owner, no size).
    pub fn named(name: Option<&str>) -> SnapshotRequest {
        SnapshotRequest {
            name: name.map(str::to_string),
            ..SnapshotRequest::default()
        }
    }
}

/// An immutable record of a session's files at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// What names the snapshot: sorts by creation time, passes [`valid_snapshot_version`].
    pub version: String,
    /// The name given when it was taken, if any (passes [`valid_snapshot_name`]).
    pub name: Option<String>,
    pub created: SystemTime,
    /// The session it was taken from, when the strategy records it (for operators).
    pub session: Option<SessionId>,
    /// Whom it counts against; `None` for snapshots taken before owners were recorded,
    /// which count against nobody's quota.
    pub owner: Option<Owner>,
    /// The bytes it holds, as its strategy measured them (see [`SnapshotRequest::held_bytes`]);
    /// `None` when unknown.
    pub bytes: Option<u64>,
}

impl Snapshot {
    /// The snapshot's stored record: `key value` lines (`name`, `created` in Unix seconds,
    /// `session`, `owner`, `bytes`), readable with any S3 tool. The version is not in it: it
    /// names the record.
    pub fn encode(&self) -> String {
        let secs = self
            .created
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut out = String::new();
        if let Some(name) = &self.name {
            out.push_str(&format!("name {name}\n"));
        }
        out.push_str(&format!("created {secs}\n"));
        if let Some(id) = self.session {
            out.push_str(&format!("session {id}\n"));
        }
        if let Some(owner) = &self.owner {
            out.push_str(&format!("owner {owner}\n"));
        }
        if let Some(bytes) = self.bytes {
            out.push_str(&format!("bytes {bytes}\n"));
        }
        out
    }

    /// Parses [`Snapshot::encode`]'s form for snapshot `version`; `None` without a creation
    /// time. A malformed name, session, owner or bytes line is left out rather than failing
    /// the whole record, and lines of other keys are ignored (a strategy may add its own).
    pub fn decode(version: &str, text: &str) -> Option<Snapshot> {
        let mut name = None;
        let mut created = None;
        let mut session = None;
        let mut owner = None;
        let mut bytes = None;
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("name", v)) if valid_snapshot_name(v.trim()) => {
                    name = Some(v.trim().to_string())
                }
                Some(("created", v)) => {
                    created = v
                        .trim()
                        .parse::<u64>()
                        .ok()
                        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
                }
                Some(("session", v)) => session = v.trim().parse().ok(),
                Some(("owner", v)) => owner = Owner::parse(v.trim()),
                Some(("bytes", v)) => bytes = v.trim().parse().ok(),
                _ => {}
            }
        }
        Some(Snapshot {
            version: version.to_string(),
            name,
            created: created?,
            session,
            owner,
            bytes,
        })
    }
}

/// Snapshots [`ForkStrategy::snapshots`] reads at most (the newest), so a listing stays
/// bounded however many snapshots accumulate.
pub const MAX_LISTED_SNAPSHOTS: usize = 10_000;

/// The snapshots of the newest [`MAX_LISTED_SNAPSHOTS`] of `versions` (sorted oldest first),
/// each found by `read` with `concurrency` reads at once; versions without a readable record
/// are left out. What every strategy's [`ForkStrategy::snapshots`] ends with.
pub(crate) async fn read_newest<F, Fut>(
    versions: Vec<String>,
    concurrency: usize,
    read: F,
) -> Result<Vec<Snapshot>, ForkError>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Snapshot>, ForkError>>,
{
    use futures::{StreamExt, TryStreamExt};
    let skip = versions.len().saturating_sub(MAX_LISTED_SNAPSHOTS);
    let found: Vec<Option<Snapshot>> = futures::stream::iter(versions.into_iter().skip(skip))
        .map(read)
        .buffered(concurrency)
        .try_collect()
        .await?;
    Ok(found.into_iter().flatten().collect())
}

/// How forks are made and destroyed.
#[async_trait]
pub trait ForkStrategy: Send + Sync + fmt::Debug {
    /// Creates the fork of session `id` in O(1), recording `lease` with it.
    async fn create(&self, id: SessionId, lease: &Lease) -> Result<ForkView, ForkError>;
    /// Replaces the lease of the fork of `id`.
    async fn renew(&self, id: SessionId, lease: &Lease) -> Result<(), ForkError>;
    /// The lease of the fork of `id`; `None` when it has none (or an unreadable one).
    async fn lease(&self, id: SessionId) -> Result<Option<Lease>, ForkError>;
    /// Force-deletes the fork of `id` and everything in it; deleting a missing fork succeeds.
    async fn delete(&self, id: SessionId) -> Result<(), ForkError>;
    /// True while anything of the fork of `id` is left in storage.
    async fn exists(&self, id: SessionId) -> Result<bool, ForkError>;
    /// Every fork present in storage (for the janitor).
    async fn list(&self) -> Result<Vec<SessionId>, ForkError>;

    /// Takes a snapshot of the files of the fork of `id` as they are in storage now (files
    /// still being written are not in it), recording what `request` says (a name is
    /// checked with [`valid_snapshot_name`]). Quotas are the caller's: this takes it.
    async fn snapshot(
        &self,
        id: SessionId,
        request: &SnapshotRequest,
    ) -> Result<Snapshot, ForkError> {
        let _ = (id, request);
        Err(ForkError::Unsupported("snapshots"))
    }

    /// Deletes snapshot `version`: its record first (from then on it is neither listed nor
    /// usable), then what it holds. `false` when there is no such snapshot (nothing is
    /// done); deleting is safe to repeat and to race with another server doing the same.
    async fn delete_snapshot(&self, version: &str) -> Result<bool, ForkError> {
        let _ = version;
        Err(ForkError::Unsupported("snapshots"))
    }

    /// Every snapshot, oldest first.
    async fn snapshots(&self) -> Result<Vec<Snapshot>, ForkError> {
        Err(ForkError::Unsupported("snapshots"))
    }

    /// The snapshot `version`, if there is one.
    async fn find_snapshot(&self, version: &str) -> Result<Option<Snapshot>, ForkError> {
        Ok(self
            .snapshots()
            .await?
            .into_iter()
            .find(|s| s.version == version))
    }

    /// Creates the fork of session `id` as a copy of snapshot `version` rather than of the
    /// base; [`ForkError::NoSnapshot`] when there is no such snapshot (nothing is created).
    /// The view's layer may already hold objects: open it with [`crate::vfs::Vfs::load`].
    async fn create_from(
        &self,
        id: SessionId,
        lease: &Lease,
        version: &str,
    ) -> Result<ForkView, ForkError> {
        let _ = (id, lease, version);
        Err(ForkError::Unsupported("snapshots"))
    }
}

/// Deletes a fork with retries under a deadline, and checks it is gone.
pub async fn delete_with_deadline(
    strategy: &dyn ForkStrategy,
    id: SessionId,
    deadline: Duration,
) -> Result<u32, ForkError> {
    let attempts = async {
        let mut attempt = 0u32;
        let mut backoff = Duration::from_millis(100);
        loop {
            attempt += 1;
            let result = match strategy.delete(id).await {
                Ok(()) => match strategy.exists(id).await {
                    Ok(false) => Ok(()),
                    Ok(true) => Err(ForkError::NotDeleted { id: id.to_string() }),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => return attempt,
                Err(e) => {
                    tracing::warn!(session = %id, attempt, error = %e, "fork deletion failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
    };
    tokio::time::timeout(deadline, attempts)
        .await
        .map_err(|_| ForkError::Deadline {
            id: id.to_string(),
            deadline,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_v7_and_parse_back() {
        let a = SessionId::new();
        let b = SessionId::new();
        assert!(a <= b);
        assert_eq!(a.to_string().parse::<SessionId>().unwrap(), a);
        assert!("not-a-uuid".parse::<SessionId>().is_err());
        assert!(
            "67e55044-10b1-426f-9247-bb680e5fe0c8"
                .parse::<SessionId>()
                .is_err()
        );
    }

    #[test]
    fn snapshot_records_roundtrip() {
        let snap = Snapshot {
            version: "v1".into(),
            name: Some("first".into()),
            created: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            session: Some(SessionId::new()),
            owner: Owner::from_fingerprint("SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s"),
            bytes: Some(20 << 20),
        };
        assert!(snap.owner.is_some());
        assert_eq!(Snapshot::decode("v1", &snap.encode()), Some(snap.clone()));
        let anonymous = Snapshot {
            owner: Some(Owner::anonymous()),
            ..snap.clone()
        };
        assert_eq!(Snapshot::decode("v1", &anonymous.encode()), Some(anonymous));
        let unnamed = Snapshot {
            name: None,
            session: None,
            owner: None,
            bytes: None,
            ..snap
        };
        assert_eq!(
            Snapshot::decode("v1", &unnamed.encode()),
            Some(unnamed.clone())
        );
        assert_eq!(Snapshot::decode("v1", "name x\n"), None);
        assert_eq!(
            Snapshot::decode("v1", "name bad name\ncreated 1700000000\nbucket b\n"),
            Some(Snapshot {
                version: "v1".into(),
                ..unnamed.clone()
            })
        );
        // An owner that is neither anonymous nor a fingerprint, or a size that is no
        // number, is left out.
        assert_eq!(
            Snapshot::decode(
                "v1",
                "created 1700000000\nowner ssh-ed25519 AAAA\nbytes lots\n"
            ),
            Some(unnamed)
        );
    }

    #[test]
    fn owners_are_anonymous_or_a_fingerprint() {
        assert_eq!(Owner::anonymous().to_string(), "anonymous");
        assert_eq!(Owner::parse("anonymous"), Some(Owner::anonymous()));
        let fp = "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s";
        assert_eq!(Owner::parse(fp).map(|o| o.to_string()), Some(fp.into()));
        for bad in [
            "",
            "SHA256:",
            "MD5:aa:bb",
            "SHA256:a b",
            "SHA256:x\nowner anonymous",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5",
            &format!("SHA256:{}", "a".repeat(FINGERPRINT_MAX + 1)),
        ] {
            assert_eq!(Owner::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn snapshot_names_and_versions_are_checked() {
        assert!(valid_snapshot_name("first"));
        assert!(valid_snapshot_name("v1.2_rc-3"));
        assert!(valid_snapshot_name(&"n".repeat(SNAPSHOT_NAME_MAX)));
        for bad in ["", "a b", "a/b", "é", "x\n"] {
            assert!(!valid_snapshot_name(bad), "{bad:?}");
        }
        assert!(!valid_snapshot_name(&"n".repeat(SNAPSHOT_NAME_MAX + 1)));
        assert!(valid_snapshot_version("0196f3c2a1b27c4e8f0123456789abcd"));
        assert!(valid_snapshot_version("1751631910169675092"));
        for bad in [
            "",
            "..",
            "a/b",
            "a.b",
            "a_b",
            &"v".repeat(SNAPSHOT_VERSION_MAX + 1),
        ] {
            assert!(!valid_snapshot_version(bad), "{bad:?}");
        }
    }
}

//! The Tigris strategy: every session gets a bucket of its own, forked copy-on-write from
//! the base bucket by Tigris itself.
//!
//! - The fork of session `id` is the bucket `<base>-<id>`. It is made by one CreateBucket
//!   carrying `X-Tigris-Fork-Source-Bucket: <base>` (plus
//!   `X-Tigris-Fork-Source-Bucket-Snapshot: <version>` to start from a fixed snapshot of the
//!   base) and `X-Tigris-Enable-Snapshot: true`, so that the fork can be snapshotted in
//!   turn. Tigris copies no object to make it, whatever the size of the base.
//! - The session works on its bucket in place (a [`ForkView`] whose base and upper layer are
//!   the same bucket, without whiteouts): reads, writes and deletes go straight to it, and a
//!   rename is Tigris's server-side rename, a CopyObject with `X-Tigris-Rename: true`.
//! - A fork's lease is kept outside the fork, in the forks bucket under
//!   `tigris-leases/<id>`, so a session never sees it in its own `/`. Every server forking
//!   one base must therefore share one forks bucket: a janitor treats a fork bucket whose
//!   lease it cannot find as one whose creation was interrupted.
//! - Deleting a fork is one DeleteBucket with `X-Tigris-Force-Delete: true` (Tigris deletes a
//!   bucket that still holds objects), then the deletion of its lease.
//!
//! Snapshots. Tigris snapshots a bucket in O(1), but a bucket's snapshots go with the
//! bucket, and a session's bucket is deleted at logout. So a forkbox snapshot is a Tigris
//! snapshot kept alive by a bucket of its own, taken in three requests:
//! 1. CreateBucket `<base>-<id>` (the session's existing bucket) with
//!    `X-Tigris-Snapshot: true` (`true; name=<name>` for a named one). The answer's
//!    `X-Tigris-Snapshot-Version` is the snapshot's version `V`, a decimal nanosecond
//!    timestamp; it names the forkbox snapshot too (`snap-<V>@host`).
//! 2. CreateBucket `<base>-snap-<V>`, the *keeper*, forked from `<base>-<id>` at snapshot
//!    `V` (and snapshot-enabled, so that sessions can fork it). Nothing ever writes to it,
//!    so it holds the session's files as they were at `V` for as long as it exists.
//! 3. PutObject `tigris-snapshots/<V>` in the forks bucket: the snapshot's record (name,
//!    creation time, session, owner, size, keeper bucket), as `key value` lines. The size
//!    is what the session's quota counted when it was taken (what it wrote: the keeper
//!    keeps those object versions alive, the base's are shared); Tigris does not tell what
//!    a snapshot holds. Written last: a
//!    snapshot is listed (and can be started from) only once it is complete. A step that
//!    fails undoes the ones before it.
//!
//! A session started from snapshot `V` is a fork of the keeper, as it is (one CreateBucket
//! with `X-Tigris-Fork-Source-Bucket: <base>-snap-<V>`). [`Tigris::list`] sees only
//! `<base>-<session id>` buckets and leases, so the janitor's fork sweep never touches
//! keepers or records. Deleting a snapshot ([`ForkStrategy::delete_snapshot`]: the janitor
//! past the snapshots' age or count limit, or `forkbox snapshots delete`) deletes its
//! record, then force-deletes its keeper.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::interceptors::BeforeDeserializationInterceptorContextRef;
use aws_sdk_s3::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_s3::error::ProvideErrorMetadata;

use super::s3::{BadBucketName, BucketName, S3ServerSide, copy_source, remote_err};
use super::{
    ForkError, ForkStrategy, ForkView, Layer, Lease, SessionId, Snapshot, SnapshotRequest,
    valid_snapshot_name, valid_snapshot_version,
};
use crate::storage::{Attrs, S3Config, ServerSide, StorageError, Store};

/// Makes a CreateBucket a fork of the bucket named by its value.
pub const FORK_SOURCE: &str = "X-Tigris-Fork-Source-Bucket";
/// With [`FORK_SOURCE`]: forks that snapshot (a version) of the source instead of its
/// current state.
pub const FORK_SOURCE_SNAPSHOT: &str = "X-Tigris-Fork-Source-Bucket-Snapshot";
/// On CreateBucket: the new bucket can be snapshotted (and forked). Tigris only allows it
/// when the bucket is created.
pub const ENABLE_SNAPSHOT: &str = "X-Tigris-Enable-Snapshot";
/// On CreateBucket of an existing bucket: take a snapshot of it (`true`, or
/// `true; name=<name>`). On ListBuckets: list the snapshots of the bucket it names.
pub const SNAPSHOT: &str = "X-Tigris-Snapshot";
/// In the answer to a snapshot request: the new snapshot's version.
pub const SNAPSHOT_VERSION: &str = "X-Tigris-Snapshot-Version";
/// On DeleteBucket: delete the bucket even though it holds objects.
pub const FORCE_DELETE: &str = "X-Tigris-Force-Delete";
/// On CopyObject within one bucket: rename the source instead of copying it.
pub const RENAME: &str = "X-Tigris-Rename";

/// Key prefix of the leases in the forks bucket.
pub const LEASES_PREFIX: &str = "tigris-leases";

/// Key prefix of the snapshot records in the forks bucket (`tigris-snapshots/<version>`).
pub const SNAPSHOTS_PREFIX: &str = "tigris-snapshots";

/// The middle of a keeper bucket's name, `<base>-snap-<version>`. No session id is `snap`,
/// so a keeper is never taken for a fork.
pub const KEEPER_INFIX: &str = "snap";

/// Length of a hyphenated UUID, the session-id part of a fork bucket's name.
const SESSION_ID_LEN: usize = 36;

/// Longest base bucket name: `<base>-<session id>` must still be a valid bucket name.
pub const BASE_NAME_MAX: usize = super::s3::BUCKET_NAME_MAX - 1 - SESSION_ID_LEN;

/// Longest snapshot version accepted; Tigris's are decimal numbers of about 19 digits.
const SNAPSHOT_MAX: usize = 128;

/// Largest lease object read; a real one is under 100 bytes.
const LEASE_MAX: usize = 4096;

/// Largest snapshot record read; a real one is under 300 bytes.
const RECORD_MAX: usize = 4096;

/// Snapshot records read at once while listing.
const RECORD_READS: usize = 16;

/// What the Tigris strategy needs besides its clients.
#[derive(Clone, Debug)]
pub struct TigrisConfig {
    /// How the forks' data plane (opendal) reaches Tigris.
    pub s3: S3Config,
    /// The bucket every session forks; never written.
    pub base_bucket: String,
    /// Fork this Tigris snapshot version of the base bucket instead of its current state.
    /// Sessions started from a forkbox snapshot fork its keeper instead, and this does not
    /// apply to them.
    pub base_snapshot: Option<String>,
    /// Where the forks' large writes are staged before upload.
    pub spill_dir: PathBuf,
}

/// A configuration the Tigris strategy cannot work with.
#[derive(Debug, thiserror::Error)]
pub enum TigrisError {
    #[error("the base bucket name is not usable")]
    BaseName(#[source] BadBucketName),
    #[error(
        "the base bucket name {name:?} is too long for Tigris forks: a fork is named \
         <base>-<session-id> (a session id has {SESSION_ID_LEN} characters) and a bucket name \
         at most {max}, so the base name may have at most {BASE_NAME_MAX} characters",
        max = super::s3::BUCKET_NAME_MAX
    )]
    BaseTooLong { name: String },
    #[error(
        "{0:?} is not a snapshot version: expected 1 to {SNAPSHOT_MAX} letters, digits, \
         '-', '_' or '.' (a snapshot version of the base bucket, as Tigris lists them)"
    )]
    BadSnapshot(String),
}

/// Forks as Tigris bucket forks; see the module documentation.
#[derive(Clone, Debug)]
pub struct Tigris {
    client: Client,
    s3: S3Config,
    base: BucketName,
    /// The Tigris snapshot of the base that [`ForkStrategy::create`] forks, if any.
    snapshot: Option<String>,
    /// The forks bucket: the leases and the snapshot records.
    forks: Store,
    spill_dir: PathBuf,
}

/// What a session's bucket is forked from.
#[derive(Clone, Copy, Debug)]
enum Source<'a> {
    /// The base bucket (at the configured Tigris snapshot, if any).
    Base,
    /// The keeper bucket of forkbox snapshot `version`.
    Snapshot { version: &'a str, keeper: &'a str },
}

/// A CreateBucket that failed.
#[derive(Debug)]
struct CreateFailed {
    /// The bucket name was taken already (by this account or another): the bucket there is
    /// not one this request made, and must not be removed as if it were.
    taken: bool,
    error: StorageError,
}

/// Keeps the value of one header of the answer to the request it is attached to (of its
/// last attempt): aws-sdk-s3 does not hand back headers that S3 does not define.
#[derive(Clone, Debug)]
struct AnswerHeader {
    name: &'static str,
    value: Arc<Mutex<Option<String>>>,
}

impl AnswerHeader {
    fn new(name: &'static str) -> AnswerHeader {
        AnswerHeader {
            name,
            value: Arc::new(Mutex::new(None)),
        }
    }

    fn take(&self) -> Option<String> {
        self.value.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl Intercept for AnswerHeader {
    fn name(&self) -> &'static str {
        "forkbox-answer-header"
    }

    fn read_before_deserialization(
        &self,
        context: &BeforeDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let found = context
            .response()
            .headers()
            .get(self.name)
            .map(str::to_string);
        *self.value.lock().unwrap_or_else(|p| p.into_inner()) = found;
        Ok(())
    }
}

/// The creation time of a snapshot whose version is a Tigris version (Unix nanoseconds),
/// to the second as its record keeps it.
fn version_time(version: &str) -> Option<SystemTime> {
    version
        .parse::<u64>()
        .ok()
        .map(|ns| UNIX_EPOCH + Duration::from_secs(ns / 1_000_000_000))
}

/// Orders versions as numbers when they are decimal (Tigris's), consistently otherwise.
fn version_order(a: &String, b: &String) -> std::cmp::Ordering {
    (a.len(), a).cmp(&(b.len(), b))
}

/// Reads a small object whole (at most `max` bytes); `None` when it does not exist. The
/// length first: opendal fails a ranged read that runs past the end of an object instead
/// of returning what is there.
async fn read_small(
    store: &Store,
    key: &str,
    max: usize,
) -> Result<Option<bytes::Bytes>, StorageError> {
    let Some(meta) = store.stat(key).await? else {
        return Ok(None);
    };
    let len = usize::try_from(meta.len).unwrap_or(max).min(max);
    match store.read(key, 0, len).await {
        Ok(data) => Ok(Some(data)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

impl Tigris {
    /// The strategy over `config`, with `client` for bucket-level requests and `forks` (a
    /// store over the forks bucket) for the leases and snapshot records. Checks the names,
    /// sends no request.
    pub fn new(client: Client, config: TigrisConfig, forks: Store) -> Result<Tigris, TigrisError> {
        let base = BucketName::parse(&config.base_bucket).map_err(TigrisError::BaseName)?;
        if base.as_str().len() > BASE_NAME_MAX {
            return Err(TigrisError::BaseTooLong {
                name: config.base_bucket,
            });
        }
        if let Some(v) = &config.base_snapshot {
            let ok = !v.is_empty()
                && v.len() <= SNAPSHOT_MAX
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
            if !ok {
                return Err(TigrisError::BadSnapshot(v.clone()));
            }
        }
        Ok(Tigris {
            client,
            s3: config.s3,
            base,
            snapshot: config.base_snapshot,
            forks,
            spill_dir: config.spill_dir,
        })
    }

    /// The bucket holding the fork of `id`.
    pub fn fork_bucket(&self, id: SessionId) -> String {
        format!("{}-{id}", self.base)
    }

    /// The bucket keeping forkbox snapshot `version` (`<base>-snap-<version>`); `None` when
    /// `version` is no snapshot version or would not make a valid bucket name, so such a
    /// version is never a snapshot of this strategy and is refused before any request.
    pub fn keeper_bucket(&self, version: &str) -> Option<String> {
        if !valid_snapshot_version(version) {
            return None;
        }
        let name = format!("{}-{KEEPER_INFIX}-{version}", self.base);
        BucketName::parse(&name).ok().map(|_| name)
    }

    /// The session whose fork bucket is `name`, if it is one of this base's forks.
    fn session_of(&self, name: &str) -> Option<SessionId> {
        name.strip_prefix(self.base.as_str())?
            .strip_prefix('-')?
            .parse()
            .ok()
    }

    fn lease_key(id: SessionId) -> String {
        format!("{LEASES_PREFIX}/{id}")
    }

    fn record_key(version: &str) -> String {
        format!("{SNAPSHOTS_PREFIX}/{version}")
    }

    fn storage_err(id: SessionId) -> impl FnOnce(StorageError) -> ForkError {
        move |source| ForkError::Storage {
            id: id.to_string(),
            source,
        }
    }

    fn snapshot_err(version: &str) -> impl FnOnce(StorageError) -> ForkError {
        let version = version.to_string();
        move |source| ForkError::SnapshotStorage { version, source }
    }

    /// CreateBucket `name` as a snapshot-enabled fork of bucket `source`, at its Tigris
    /// snapshot `version` or as it is now.
    async fn create_fork_bucket(
        &self,
        name: &str,
        source: &str,
        version: Option<&str>,
    ) -> Result<(), CreateFailed> {
        // Every value was checked to be a valid header value (bucket names, versions), so
        // the insertions below cannot fail.
        let source = source.to_string();
        let version = version.map(str::to_string);
        self.client
            .create_bucket()
            .bucket(name)
            .customize()
            .mutate_request(move |req| {
                let headers = req.headers_mut();
                headers.insert(FORK_SOURCE, source.clone());
                if let Some(version) = &version {
                    headers.insert(FORK_SOURCE_SNAPSHOT, version.clone());
                }
                headers.insert(ENABLE_SNAPSHOT, "true");
            })
            .send()
            .await
            .map(|_| ())
            .map_err(|e| CreateFailed {
                taken: matches!(
                    e.code(),
                    Some("BucketAlreadyOwnedByYou") | Some("BucketAlreadyExists")
                ),
                error: remote_err(name, e),
            })
    }

    /// Takes a Tigris snapshot of bucket `bucket`, named `name` if given; the version the
    /// answer carries (`None` when it carries none).
    async fn snapshot_bucket(
        &self,
        bucket: &str,
        name: Option<&str>,
    ) -> Result<Option<String>, StorageError> {
        // `name` passed `valid_snapshot_name`: a valid header value.
        let value = match name {
            Some(name) => format!("true; name={name}"),
            None => "true".to_string(),
        };
        let version = AnswerHeader::new(SNAPSHOT_VERSION);
        self.client
            .create_bucket()
            .bucket(bucket)
            .customize()
            .interceptor(version.clone())
            .mutate_request(move |req| {
                req.headers_mut().insert(SNAPSHOT, value.clone());
            })
            .send()
            .await
            .map_err(|e| remote_err(bucket, e))?;
        Ok(version.take())
    }

    /// DeleteBucket `name` with everything in it; a missing bucket is not an error.
    async fn force_delete_bucket(&self, name: &str) -> Result<(), StorageError> {
        let result = self
            .client
            .delete_bucket()
            .bucket(name)
            .customize()
            .mutate_request(|req| {
                req.headers_mut().insert(FORCE_DELETE, "true");
            })
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some("NoSuchBucket") => Ok(()),
            Err(e) => {
                let err = remote_err(name, e);
                if err.is_not_found() { Ok(()) } else { Err(err) }
            }
        }
    }

    /// The sessions that have a lease in the forks bucket.
    async fn leased(&self) -> Result<Vec<SessionId>, StorageError> {
        Ok(self
            .forks
            .list(LEASES_PREFIX)
            .await?
            .into_iter()
            .filter_map(|(name, _)| name.parse().ok())
            .collect())
    }

    /// Creates the fork of session `id`: its lease, then its bucket, forked from `source`.
    async fn create_fork(
        &self,
        id: SessionId,
        lease: &Lease,
        source: Source<'_>,
    ) -> Result<ForkView, ForkError> {
        let bucket = self.fork_bucket(id);
        let store = Store::s3(&self.s3, &bucket)
            .map_err(Tigris::storage_err(id))?
            .with_spill_dir(&self.spill_dir)
            .with_server_side(Arc::new(TigrisServerSide::new(
                self.client.clone(),
                bucket.clone(),
            )));
        // The lease first: from then on the fork is visible to `list` (and so to the
        // janitor) and says who serves it.
        self.renew(id, lease).await?;
        let created = match source {
            Source::Base => {
                self.create_fork_bucket(&bucket, self.base.as_str(), self.snapshot.as_deref())
                    .await
            }
            Source::Snapshot { keeper, .. } => self.create_fork_bucket(&bucket, keeper, None).await,
        };
        if let Err(failed) = created {
            // No fork to serve, so no session will delete it: drop its lease now rather
            // than leave it to the janitor.
            if let Err(cleanup) = self.forks.delete(&Tigris::lease_key(id)).await {
                tracing::warn!(session = %id, error = %cleanup, "cannot delete the lease of a fork that was not created");
            }
            return Err(match source {
                // The snapshot is recorded but its keeper is gone (an operator deleted it):
                // there is nothing to start from.
                Source::Snapshot { version, keeper } if failed.error.is_not_found() => {
                    tracing::warn!(snapshot = %version, bucket = %keeper, "a snapshot's record names a bucket that does not exist");
                    ForkError::NoSnapshot {
                        version: version.to_string(),
                    }
                }
                _ => Tigris::storage_err(id)(failed.error),
            });
        }
        let layer = Layer {
            store,
            prefix: String::new(),
        };
        Ok(ForkView {
            base: Some(layer.clone()),
            upper: layer,
            whiteouts: None,
        })
    }

    /// Undoes a snapshot whose making failed after its keeper may have been created: the
    /// record first (it is what claims the snapshot), then the keeper. When the record
    /// cannot be removed the keeper stays, so a snapshot that is listed stays usable.
    async fn discard(&self, version: &str, keeper: &str, recorded: bool) {
        if recorded && let Err(e) = self.forks.delete(&Tigris::record_key(version)).await {
            tracing::warn!(snapshot = %version, bucket = %keeper, error = %e, "the record of a failed snapshot was not removed; its bucket is kept");
            return;
        }
        if let Err(e) = self.force_delete_bucket(keeper).await {
            tracing::warn!(snapshot = %version, bucket = %keeper, error = %e, "the bucket of a failed snapshot was not removed; an operator may delete it");
        }
    }

    /// The record of snapshot `version`; `None` when there is none or the version cannot
    /// be one (then nothing is requested).
    async fn read_record(&self, version: &str) -> Result<Option<Snapshot>, ForkError> {
        if self.keeper_bucket(version).is_none() {
            return Ok(None);
        }
        let data = read_small(&self.forks, &Tigris::record_key(version), RECORD_MAX)
            .await
            .map_err(Tigris::snapshot_err(version))?;
        Ok(data.and_then(|d| Snapshot::decode(version, &String::from_utf8_lossy(&d))))
    }
}

#[async_trait]
impl ForkStrategy for Tigris {
    async fn create(&self, id: SessionId, lease: &Lease) -> Result<ForkView, ForkError> {
        self.create_fork(id, lease, Source::Base).await
    }

    async fn renew(&self, id: SessionId, lease: &Lease) -> Result<(), ForkError> {
        self.forks
            .put(
                &Tigris::lease_key(id),
                bytes::Bytes::from(lease.encode()),
                &Attrs::default(),
            )
            .await
            .map_err(Tigris::storage_err(id))
    }

    async fn lease(&self, id: SessionId) -> Result<Option<Lease>, ForkError> {
        let data = read_small(&self.forks, &Tigris::lease_key(id), LEASE_MAX)
            .await
            .map_err(Tigris::storage_err(id))?;
        Ok(data.and_then(|d| Lease::decode(&String::from_utf8_lossy(&d))))
    }

    async fn delete(&self, id: SessionId) -> Result<(), ForkError> {
        // The bucket first: while it is there, its lease keeps other janitors off it.
        self.force_delete_bucket(&self.fork_bucket(id))
            .await
            .map_err(Tigris::storage_err(id))?;
        self.forks
            .delete(&Tigris::lease_key(id))
            .await
            .map_err(Tigris::storage_err(id))
    }

    async fn exists(&self, id: SessionId) -> Result<bool, ForkError> {
        if super::s3::bucket_exists(&self.client, &self.fork_bucket(id))
            .await
            .map_err(Tigris::storage_err(id))?
        {
            return Ok(true);
        }
        Ok(self
            .forks
            .stat(&Tigris::lease_key(id))
            .await
            .map_err(Tigris::storage_err(id))?
            .is_some())
    }

    async fn list(&self) -> Result<Vec<SessionId>, ForkError> {
        let all = |source| ForkError::Storage {
            id: "*".into(),
            source,
        };
        let prefix = format!("{}-", self.base);
        let buckets = super::s3::list_buckets(&self.client, &prefix)
            .await
            .map_err(all)?;
        // Forks whose creation stopped before their bucket was made have only a lease.
        // Keeper buckets (`<base>-snap-<version>`) name no session, so they are never listed.
        let mut ids: BTreeSet<SessionId> = self.leased().await.map_err(all)?.into_iter().collect();
        ids.extend(buckets.iter().filter_map(|name| self.session_of(name)));
        Ok(ids.into_iter().collect())
    }

    async fn snapshot(
        &self,
        id: SessionId,
        request: &SnapshotRequest,
    ) -> Result<Snapshot, ForkError> {
        let name = request.name.as_deref();
        if let Some(name) = name
            && !valid_snapshot_name(name)
        {
            return Err(ForkError::BadSnapshotName(name.to_string()));
        }
        let source = self.fork_bucket(id);
        let answered = self
            .snapshot_bucket(&source, name)
            .await
            .map_err(Tigris::storage_err(id))?;
        // A snapshot taken without a usable version stays a snapshot of the session's
        // bucket only, and goes with it.
        let Some((version, keeper)) = answered
            .as_deref()
            .and_then(|v| Some((v.to_string(), self.keeper_bucket(v)?)))
        else {
            return Err(Tigris::storage_err(id)(StorageError::Remote {
                key: source,
                message: match answered {
                    None => format!("the answer to a snapshot request has no {SNAPSHOT_VERSION}"),
                    Some(v) => format!("{SNAPSHOT_VERSION} {v:?} is not a usable version"),
                },
                not_found: false,
            }));
        };
        let snap = Snapshot {
            created: version_time(&version).unwrap_or_else(|| {
                let now = SystemTime::now();
                let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
                UNIX_EPOCH + Duration::from_secs(secs)
            }),
            version,
            name: name.map(str::to_string),
            session: Some(id),
            owner: request.owner.clone(),
            bytes: request.held_bytes,
        };
        if let Err(failed) = self
            .create_fork_bucket(&keeper, &source, Some(&snap.version))
            .await
        {
            // The keeper may exist all the same (an answer lost on the way); a name that
            // was taken already is someone else's bucket and stays.
            if !failed.taken {
                self.discard(&snap.version, &keeper, false).await;
            }
            return Err(Tigris::snapshot_err(&snap.version)(failed.error));
        }
        // Last: from here on the snapshot is listed, and it is complete.
        let record = format!("{}bucket {keeper}\n", snap.encode());
        if let Err(e) = self
            .forks
            .put(
                &Tigris::record_key(&snap.version),
                bytes::Bytes::from(record),
                &Attrs::default(),
            )
            .await
        {
            // The record may have been stored all the same.
            self.discard(&snap.version, &keeper, true).await;
            return Err(Tigris::snapshot_err(&snap.version)(e));
        }
        Ok(snap)
    }

    async fn snapshots(&self) -> Result<Vec<Snapshot>, ForkError> {
        let entries = self
            .forks
            .list(SNAPSHOTS_PREFIX)
            .await
            .map_err(Tigris::snapshot_err("*"))?;
        let mut versions: Vec<String> = entries
            .into_iter()
            .filter(|(name, is_dir)| !is_dir && self.keeper_bucket(name).is_some())
            .map(|(name, _)| name)
            .collect();
        versions.sort_by(version_order);
        super::read_newest(versions, RECORD_READS, |v| async move {
            self.read_record(&v).await
        })
        .await
    }

    async fn find_snapshot(&self, version: &str) -> Result<Option<Snapshot>, ForkError> {
        self.read_record(version).await
    }

    async fn delete_snapshot(&self, version: &str) -> Result<bool, ForkError> {
        let Some(keeper) = self.keeper_bucket(version) else {
            return Ok(false);
        };
        if self.read_record(version).await?.is_none() {
            return Ok(false);
        }
        // The record first: from then on the snapshot is neither listed nor started from,
        // so its keeper can go. A keeper whose deletion fails is logged by name: nothing
        // lists it any more.
        self.forks
            .delete(&Tigris::record_key(version))
            .await
            .map_err(Tigris::snapshot_err(version))?;
        if let Err(e) = self.force_delete_bucket(&keeper).await {
            tracing::warn!(snapshot = %version, bucket = %keeper, error = %e, "the bucket of a deleted snapshot was not removed; an operator may delete it");
            return Err(Tigris::snapshot_err(version)(e));
        }
        Ok(true)
    }

    async fn create_from(
        &self,
        id: SessionId,
        lease: &Lease,
        version: &str,
    ) -> Result<ForkView, ForkError> {
        let no_snapshot = || ForkError::NoSnapshot {
            version: version.to_string(),
        };
        let Some(keeper) = self.keeper_bucket(version) else {
            return Err(no_snapshot());
        };
        if self.read_record(version).await?.is_none() {
            return Err(no_snapshot());
        }
        self.create_fork(
            id,
            lease,
            Source::Snapshot {
                version,
                keeper: &keeper,
            },
        )
        .await
    }
}

/// Server-side object operations on one Tigris bucket: metadata updates as plain S3 does
/// them, and renames in one request (Tigris moves the object; nothing is copied).
#[derive(Clone, Debug)]
pub struct TigrisServerSide {
    plain: S3ServerSide,
}

impl TigrisServerSide {
    pub fn new(client: Client, bucket: String) -> TigrisServerSide {
        TigrisServerSide {
            plain: S3ServerSide { client, bucket },
        }
    }
}

#[async_trait]
impl ServerSide for TigrisServerSide {
    async fn set_metadata(
        &self,
        key: &str,
        meta: &[(String, String)],
    ) -> crate::storage::Result<()> {
        self.plain.set_metadata(key, meta).await
    }

    async fn rename(&self, from: &str, to: &str) -> crate::storage::Result<bool> {
        let S3ServerSide { client, bucket } = &self.plain;
        client
            .copy_object()
            .bucket(bucket)
            .key(to)
            .copy_source(copy_source(bucket, from))
            .customize()
            .mutate_request(|req| {
                req.headers_mut().insert(RENAME, "true");
            })
            .send()
            .await
            .map(|_| true)
            .map_err(|e| remote_err(from, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(base: &str, snapshot: Option<&str>) -> TigrisConfig {
        TigrisConfig {
            s3: S3Config::default(),
            base_bucket: base.into(),
            base_snapshot: snapshot.map(str::to_string),
            spill_dir: std::env::temp_dir(),
        }
    }

    fn client() -> Client {
        let conf = aws_sdk_s3::config::Builder::new()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new("us-east-1"))
            .build();
        Client::from_conf(conf)
    }

    #[test]
    fn fork_buckets_are_named_after_the_session_and_parse_back() {
        let t = Tigris::new(client(), config("base", None), Store::memory()).unwrap();
        let id = SessionId::new();
        let name = t.fork_bucket(id);
        assert_eq!(name, format!("base-{id}"));
        assert!(BucketName::parse(&name).is_ok());
        assert_eq!(t.session_of(&name), Some(id));
        for other in [
            "base-forks",
            "base",
            "basement-x",
            "other-0190e0a0-0000-7000-8000-000000000000",
        ] {
            assert_eq!(t.session_of(other), None, "{other}");
        }
    }

    #[test]
    fn keepers_are_named_after_the_version_and_never_taken_for_forks() {
        let t = Tigris::new(client(), config("base", None), Store::memory()).unwrap();
        let keeper = t.keeper_bucket("1751631910169675092").unwrap();
        assert_eq!(keeper, "base-snap-1751631910169675092");
        assert_eq!(t.session_of(&keeper), None);
        // Not a snapshot version, or not a bucket name once in one.
        for bad in ["", "a.b", "a_b", "UPPER", "a/b", "1-", &"9".repeat(54)] {
            assert_eq!(t.keeper_bucket(bad), None, "{bad:?}");
        }
        assert!(t.keeper_bucket(&"9".repeat(53)).is_some());
        // The longest base still keeps Tigris's versions (19 digits, 20 after 2286).
        let longest = "b".repeat(BASE_NAME_MAX);
        let t = Tigris::new(client(), config(&longest, None), Store::memory()).unwrap();
        assert!(t.keeper_bucket(&"9".repeat(20)).is_some());
    }

    #[test]
    fn versions_sort_as_numbers() {
        let mut v: Vec<String> = ["100", "99", "1000", "101"].map(str::to_string).to_vec();
        v.sort_by(version_order);
        assert_eq!(v, vec!["99", "100", "101", "1000"]);
        assert_eq!(
            version_time("1751631910169675092"),
            Some(UNIX_EPOCH + Duration::from_secs(1_751_631_910))
        );
        assert_eq!(version_time("abc"), None);
    }

    #[test]
    fn the_longest_base_still_makes_valid_fork_names() {
        let longest = "b".repeat(BASE_NAME_MAX);
        let t = Tigris::new(client(), config(&longest, None), Store::memory()).unwrap();
        let name = t.fork_bucket(SessionId::new());
        assert_eq!(name.len(), super::super::s3::BUCKET_NAME_MAX);
        assert!(BucketName::parse(&name).is_ok());
        let err = Tigris::new(
            client(),
            config(&format!("{longest}b"), None),
            Store::memory(),
        )
        .unwrap_err();
        assert!(matches!(err, TigrisError::BaseTooLong { .. }), "{err}");
    }

    #[test]
    fn bad_names_and_versions_are_refused() {
        for base in ["Base", "ba", "base_1", "-base", "base.", "a..b", "10.0.0.1"] {
            let err = Tigris::new(client(), config(base, None), Store::memory()).unwrap_err();
            assert!(matches!(err, TigrisError::BaseName(_)), "{base}: {err}");
        }
        for version in ["", "1 2", "v\n1", &"9".repeat(SNAPSHOT_MAX + 1)] {
            let err =
                Tigris::new(client(), config("base", Some(version)), Store::memory()).unwrap_err();
            assert!(
                matches!(err, TigrisError::BadSnapshot(_)),
                "{version:?}: {err}"
            );
        }
        assert!(
            Tigris::new(
                client(),
                config("base", Some("1765889000501544464")),
                Store::memory()
            )
            .is_ok()
        );
    }
}

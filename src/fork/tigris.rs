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

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::error::ProvideErrorMetadata;

use super::s3::{BadBucketName, BucketName, S3ServerSide, copy_source, remote_err};
use super::{ForkError, ForkStrategy, ForkView, Layer, Lease, SessionId};
use crate::storage::{Attrs, S3Config, ServerSide, StorageError, Store};

/// Makes a CreateBucket a fork of the bucket named by its value.
pub const FORK_SOURCE: &str = "X-Tigris-Fork-Source-Bucket";
/// With [`FORK_SOURCE`]: forks that snapshot (a version) of the source instead of its
/// current state.
pub const FORK_SOURCE_SNAPSHOT: &str = "X-Tigris-Fork-Source-Bucket-Snapshot";
/// On CreateBucket: the new bucket can be snapshotted (and forked). Tigris only allows it
/// when the bucket is created.
pub const ENABLE_SNAPSHOT: &str = "X-Tigris-Enable-Snapshot";
/// On DeleteBucket: delete the bucket even though it holds objects.
pub const FORCE_DELETE: &str = "X-Tigris-Force-Delete";
/// On CopyObject within one bucket: rename the source instead of copying it.
pub const RENAME: &str = "X-Tigris-Rename";

/// Key prefix of the leases in the forks bucket.
pub const LEASES_PREFIX: &str = "tigris-leases";

/// Length of a hyphenated UUID, the session-id part of a fork bucket's name.
const SESSION_ID_LEN: usize = 36;

/// Longest base bucket name: `<base>-<session id>` must still be a valid bucket name.
pub const BASE_NAME_MAX: usize = super::s3::BUCKET_NAME_MAX - 1 - SESSION_ID_LEN;

/// Longest snapshot version accepted; Tigris's are decimal numbers of about 19 digits.
const SNAPSHOT_MAX: usize = 128;

/// Largest lease object read; a real one is under 100 bytes.
const LEASE_MAX: usize = 4096;

/// What the Tigris strategy needs besides its clients.
#[derive(Clone, Debug)]
pub struct TigrisConfig {
    /// How the forks' data plane (opendal) reaches Tigris.
    pub s3: S3Config,
    /// The bucket every session forks; never written.
    pub base_bucket: String,
    /// Fork this snapshot version of the base instead of its current state.
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
    snapshot: Option<String>,
    /// The forks bucket, holding the leases.
    leases: Store,
    spill_dir: PathBuf,
}

impl Tigris {
    /// The strategy over `config`, with `client` for bucket-level requests and `leases` (a
    /// store over the forks bucket) for the leases. Checks the names, sends no request.
    pub fn new(client: Client, config: TigrisConfig, leases: Store) -> Result<Tigris, TigrisError> {
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
            leases,
            spill_dir: config.spill_dir,
        })
    }

    /// The bucket holding the fork of `id`.
    pub fn fork_bucket(&self, id: SessionId) -> String {
        format!("{}-{id}", self.base)
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

    fn storage_err(id: SessionId) -> impl FnOnce(StorageError) -> ForkError {
        move |source| ForkError::Storage {
            id: id.to_string(),
            source,
        }
    }

    /// CreateBucket `name` as a fork of the base.
    async fn create_fork_bucket(&self, name: &str) -> Result<(), StorageError> {
        // Both values were checked in `new` to be valid header values, so the insertions
        // below cannot fail.
        let source = self.base.to_string();
        let snapshot = self.snapshot.clone();
        self.client
            .create_bucket()
            .bucket(name)
            .customize()
            .mutate_request(move |req| {
                let headers = req.headers_mut();
                headers.insert(FORK_SOURCE, source.clone());
                if let Some(version) = &snapshot {
                    headers.insert(FORK_SOURCE_SNAPSHOT, version.clone());
                }
                headers.insert(ENABLE_SNAPSHOT, "true");
            })
            .send()
            .await
            .map(|_| ())
            .map_err(|e| remote_err(name, e))
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
            .leases
            .list(LEASES_PREFIX)
            .await?
            .into_iter()
            .filter_map(|(name, _)| name.parse().ok())
            .collect())
    }
}

#[async_trait]
impl ForkStrategy for Tigris {
    async fn create(&self, id: SessionId, lease: &Lease) -> Result<ForkView, ForkError> {
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
        if let Err(e) = self.create_fork_bucket(&bucket).await {
            // No fork to serve, so no session will delete it: drop its lease now rather
            // than leave it to the janitor.
            if let Err(cleanup) = self.leases.delete(&Tigris::lease_key(id)).await {
                tracing::warn!(session = %id, error = %cleanup, "cannot delete the lease of a fork that was not created");
            }
            return Err(Tigris::storage_err(id)(e));
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

    async fn renew(&self, id: SessionId, lease: &Lease) -> Result<(), ForkError> {
        self.leases
            .put(
                &Tigris::lease_key(id),
                bytes::Bytes::from(lease.encode()),
                &Attrs::default(),
            )
            .await
            .map_err(Tigris::storage_err(id))
    }

    async fn lease(&self, id: SessionId) -> Result<Option<Lease>, ForkError> {
        let key = Tigris::lease_key(id);
        // The length first: opendal fails a ranged read that runs past the end of an
        // object instead of returning what is there.
        let Some(meta) = self
            .leases
            .stat(&key)
            .await
            .map_err(Tigris::storage_err(id))?
        else {
            return Ok(None);
        };
        let len = usize::try_from(meta.len)
            .unwrap_or(LEASE_MAX)
            .min(LEASE_MAX);
        match self.leases.read(&key, 0, len).await {
            Ok(data) => Ok(Lease::decode(&String::from_utf8_lossy(&data))),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(Tigris::storage_err(id)(e)),
        }
    }

    async fn delete(&self, id: SessionId) -> Result<(), ForkError> {
        // The bucket first: while it is there, its lease keeps other janitors off it.
        self.force_delete_bucket(&self.fork_bucket(id))
            .await
            .map_err(Tigris::storage_err(id))?;
        self.leases
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
            .leases
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
        let mut ids: BTreeSet<SessionId> = self.leased().await.map_err(all)?.into_iter().collect();
        ids.extend(buckets.iter().filter_map(|name| self.session_of(name)));
        Ok(ids.into_iter().collect())
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

//! The S3 control plane: bucket-level requests and server-side object operations through
//! aws-sdk-s3 (opendal, in `storage`, carries the data).

use std::collections::HashMap;

use async_trait::async_trait;
pub use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Region};
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_s3::types::MetadataDirective;

use crate::storage::{S3Config, ServerSide, StorageError};

/// An aws-sdk-s3 client for `cfg`: credentials from the standard AWS chain.
pub async fn client(cfg: &S3Config) -> Client {
    let shared = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(cfg.region()))
        .load()
        .await;
    let mut b = aws_sdk_s3::config::Builder::from(&shared).force_path_style(cfg.path_style);
    if let Some(endpoint) = cfg.endpoint() {
        b = b.endpoint_url(endpoint);
    }
    Client::from_conf(b.build())
}

/// A failed request as a storage error, with the service's error code.
pub fn remote_err<E>(key: &str, e: aws_sdk_s3::error::SdkError<E>) -> StorageError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let code = e.code().unwrap_or_default().to_string();
    let not_found = matches!(
        code.as_str(),
        "NoSuchKey" | "NoSuchBucket" | "NotFound" | "404"
    ) || e.raw_response().is_some_and(|r| r.status().as_u16() == 404);
    if !not_found {
        crate::telemetry::metrics::store_error(crate::telemetry::metrics::Plane::Control);
    }
    StorageError::Remote {
        key: key.to_string(),
        message: format!("{}", DisplayErrorContext(&e)),
        not_found,
    }
}

/// True when bucket `name` exists and the credentials may use it.
pub async fn bucket_exists(client: &Client, name: &str) -> Result<bool, StorageError> {
    match client.head_bucket().bucket(name).send().await {
        Ok(_) => Ok(true),
        Err(e) => {
            let err = remote_err(name, e);
            if err.is_not_found() {
                Ok(false)
            } else {
                Err(err)
            }
        }
    }
}

/// Creates bucket `name` unless it exists already.
pub async fn ensure_bucket(client: &Client, name: &str) -> Result<(), StorageError> {
    if bucket_exists(client, name).await? {
        return Ok(());
    }
    match client.create_bucket().bucket(name).send().await {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.code(),
                Some("BucketAlreadyOwnedByYou") | Some("BucketAlreadyExists")
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(remote_err(name, e)),
    }
}

/// `CopySource` of an object: `bucket/key`, the key percent-encoded.
pub fn copy_source(bucket: &str, key: &str) -> String {
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'/')
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    format!(
        "{bucket}/{}",
        percent_encoding::utf8_percent_encode(key, KEEP)
    )
}

/// Server-side object operations on one bucket of a plain S3 store.
#[derive(Clone, Debug)]
pub struct S3ServerSide {
    pub client: Client,
    pub bucket: String,
}

#[async_trait]
impl ServerSide for S3ServerSide {
    async fn set_metadata(&self, key: &str, meta: &[(String, String)]) -> Result<(), StorageError> {
        let map: HashMap<String, String> = meta.iter().cloned().collect();
        self.client
            .copy_object()
            .bucket(&self.bucket)
            .key(key)
            .copy_source(copy_source(&self.bucket, key))
            .metadata_directive(MetadataDirective::Replace)
            .set_metadata(Some(map))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| remote_err(key, e))
    }

    async fn rename(&self, _from: &str, _to: &str) -> Result<bool, StorageError> {
        Ok(false)
    }
}

/// Longest bucket name S3 (and Tigris) accept.
pub const BUCKET_NAME_MAX: usize = 63;

/// A valid S3 bucket name: 3 to [`BUCKET_NAME_MAX`] lowercase letters, digits, `-` and `.`,
/// beginning and ending with a letter or digit, without `..`, `.-` or `-.`, and not shaped
/// like an IPv4 address. Checked once, where a name enters forkbox (the configuration), so
/// requests never carry a name the service would refuse.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BucketName(String);

/// Why a string is not a [`BucketName`].
#[derive(Debug, thiserror::Error)]
#[error("{name:?} is not a valid bucket name: {reason}")]
pub struct BadBucketName {
    pub name: String,
    pub reason: &'static str,
}

impl BucketName {
    pub fn parse(name: &str) -> Result<BucketName, BadBucketName> {
        let bad = |reason| BadBucketName {
            name: name.to_string(),
            reason,
        };
        if name.len() < 3 || name.len() > BUCKET_NAME_MAX {
            return Err(bad("it must be 3 to 63 characters long"));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        {
            return Err(bad(
                "it may hold only lowercase letters, digits, '-' and '.'",
            ));
        }
        let edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        if !edge(name.as_bytes()[0]) || !edge(name.as_bytes()[name.len() - 1]) {
            return Err(bad("it must begin and end with a letter or a digit"));
        }
        if name.contains("..") || name.contains(".-") || name.contains("-.") {
            return Err(bad("'.' may not be next to another '.' or a '-'"));
        }
        if name.parse::<std::net::Ipv4Addr>().is_ok() {
            return Err(bad("it may not be an IP address"));
        }
        Ok(BucketName(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for BucketName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The names of the buckets whose name starts with `prefix` (ListBuckets, every page). The
/// prefix is also sent to the service, which may ignore it: the names are filtered here.
pub async fn list_buckets(client: &Client, prefix: &str) -> Result<Vec<String>, StorageError> {
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut req = client.list_buckets().set_continuation_token(token.clone());
        if !prefix.is_empty() {
            req = req.prefix(prefix);
        }
        let out = req.send().await.map_err(|e| remote_err(prefix, e))?;
        names.extend(
            out.buckets()
                .iter()
                .filter_map(|b| b.name())
                .filter(|n| n.starts_with(prefix))
                .map(str::to_string),
        );
        match out.continuation_token() {
            // A service repeating its token would page forever; the token must move on.
            Some(next) if !next.is_empty() && token.as_deref() != Some(next) => {
                token = Some(next.to_string());
            }
            _ => return Ok(names),
        }
    }
}

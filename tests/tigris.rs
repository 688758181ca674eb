//! The Tigris fork strategy against a recording S3 server: the exact requests (and Tigris
//! headers) forkbox sends to fork, rename, list, force-delete and snapshot, through the
//! library and through a real `forkbox serve` process driven by the real OpenSSH client.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/recorder.rs"]
mod recorder;
#[path = "support/server.rs"]
mod server;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use forkbox::fork::s3::BUCKET_NAME_MAX;
use forkbox::fork::tigris::{BASE_NAME_MAX, TigrisError};
use forkbox::fork::{
    ForkError, ForkStrategy, Lease, ServerId, SessionId, SnapshotRequest, Tigris, TigrisConfig,
};
use forkbox::janitor::{Janitor, Retention};
use forkbox::storage::{S3Config, Store};
use forkbox::vfs::{Quota, Vfs};
use forkbox_commands::fs::read_all;
use forkbox_commands::{FileSystem, FsError, WriteMode};
use recorder::{Recorded, Recorder, in_child, s3_test_env};
use server::{CLEANUP_WAIT, Server, stderr, stdout};

fn s3_config(recorder: &Recorder) -> S3Config {
    S3Config {
        endpoint: Some(recorder.endpoint()),
        region: Some("us-east-1".into()),
        path_style: true,
    }
}

/// A recorder holding the base bucket `base` (one file) and the forks bucket `base-forks`.
fn seeded() -> Recorder {
    let recorder = Recorder::start();
    recorder.put("base", "README.md", b"welcome\n");
    recorder.create_bucket("base-forks");
    recorder
}

async fn tigris(recorder: &Recorder, snapshot: Option<&str>) -> Tigris {
    let cfg = s3_config(recorder);
    let leases = Store::s3(&cfg, "base-forks").unwrap();
    let spill = std::env::temp_dir().join("forkbox-tigris-test-spill");
    Tigris::new(
        forkbox::fork::s3::client(&cfg).await,
        TigrisConfig {
            s3: cfg,
            base_bucket: "base".into(),
            base_snapshot: snapshot.map(str::to_string),
            spill_dir: spill,
        },
        leases,
    )
    .unwrap()
}

fn lease() -> Lease {
    Lease::new(ServerId::new(), Duration::from_secs(600))
}

/// The bucket-level request `method /bucket`.
fn bucket_request<'a>(log: &'a [Recorded], method: &str, bucket: &str) -> Vec<&'a Recorded> {
    log.iter()
        .filter(|r| r.method == method && r.bucket == bucket && r.key.is_empty())
        .collect()
}

fn lease_key(id: SessionId) -> String {
    format!("tigris-leases/{id}")
}

/// Where the record of snapshot `version` is, in the forks bucket.
fn record_key(version: &str) -> String {
    format!("tigris-snapshots/{version}")
}

/// Whether a request reads the record of snapshot `version` (a stat of an object is a
/// HEAD and a listing below its key).
fn about_record(r: &Recorded, version: &str) -> bool {
    let key = record_key(version);
    r.bucket == "base-forks"
        && (r.key == key || r.query("prefix").is_some_and(|p| p.starts_with(&key)))
}

/// The bucket keeping snapshot `version` of the base `base`.
fn keeper(version: &str) -> String {
    format!("base-snap-{version}")
}

/// The requests received after the first `before`.
fn since(recorder: &Recorder, before: usize) -> Vec<Recorded> {
    recorder.requests().split_off(before)
}

/// `METHOD /bucket[/key]` of each request, for comparing whole sequences.
fn lines(log: &[Recorded]) -> Vec<String> {
    log.iter()
        .map(|r| match r.key.as_str() {
            "" => format!("{} /{}", r.method, r.bucket),
            key => format!("{} /{}/{key}", r.method, r.bucket),
        })
        .collect()
}

/// The buckets that are session forks of `base` (named `base-<session id>`).
fn session_buckets(recorder: &Recorder) -> Vec<String> {
    recorder
        .buckets()
        .into_iter()
        .filter(|b| {
            b.strip_prefix("base-")
                .is_some_and(|id| id.parse::<SessionId>().is_ok())
        })
        .collect()
}

/// A well-formed snapshot version no snapshot has.
const UNKNOWN_VERSION: &str = "1751631910169675092";

async fn read(fs: &Vfs, path: &str) -> Result<String, FsError> {
    read_all(fs, path, 1 << 20)
        .await
        .map(|b| String::from_utf8(b).unwrap())
}

async fn write(fs: &Vfs, path: &str, data: &str) {
    let mut w = fs.open_write(path, WriteMode::Truncate).await.unwrap();
    w.write(data.as_bytes()).await.unwrap();
    w.close().await.unwrap();
}

#[test]
fn a_fork_is_a_tigris_bucket_fork_of_the_base() {
    if in_child("a_fork_is_a_tigris_bucket_fork_of_the_base") {
        return;
    }
    let recorder = seeded();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = tigris(&recorder, None).await;
        let id = SessionId::new();
        let lease = lease();
        let view = strategy.create(id, &lease).await.unwrap();
        let fork = format!("base-{id}");

        let log = recorder.requests();
        let creates = bucket_request(&log, "PUT", &fork);
        assert_eq!(creates.len(), 1, "{}", recorder.summary());
        let create = creates[0];
        assert_eq!(create.header("x-tigris-fork-source-bucket"), Some("base"));
        assert_eq!(create.header("x-tigris-enable-snapshot"), Some("true"));
        assert_eq!(create.header("x-tigris-fork-source-bucket-snapshot"), None);
        // The lease is in the forks bucket, never in the session's own bucket.
        assert!(
            log.iter()
                .any(|r| r.method == "PUT" && r.bucket == "base-forks" && r.key == lease_key(id)),
            "{}",
            recorder.summary()
        );
        assert_eq!(recorder.keys(&fork), vec!["README.md"]);
        assert!(strategy.exists(id).await.unwrap());
        let stored = strategy.lease(id).await.unwrap().unwrap();
        assert_eq!(stored, Lease::decode(&lease.encode()).unwrap());

        // The session works on its bucket in place: it reads the base's files there, and
        // its writes and deletions change that bucket and never the base.
        let fs = Vfs::new(view);
        assert_eq!(read(&fs, "/README.md").await.unwrap(), "welcome\n");
        write(&fs, "/README.md", "mine\n").await;
        write(&fs, "/new.txt", "new\n").await;
        assert_eq!(read(&fs, "/README.md").await.unwrap(), "mine\n");
        assert_eq!(recorder.object(&fork, "README.md").unwrap(), b"mine\n");
        fs.unlink("/new.txt").await.unwrap();
        assert_eq!(recorder.object(&fork, "new.txt"), None);
        assert_eq!(recorder.object("base", "README.md").unwrap(), b"welcome\n");
        assert_eq!(recorder.keys("base"), vec!["README.md"]);
        let base_writes: Vec<_> = recorder
            .requests()
            .into_iter()
            .filter(|r| r.bucket == "base" && r.method != "GET" && r.method != "HEAD")
            .collect();
        assert!(base_writes.is_empty(), "{}", recorder.summary());
    });
}

#[test]
fn a_base_snapshot_is_forked_by_its_version() {
    if in_child("a_base_snapshot_is_forked_by_its_version") {
        return;
    }
    let recorder = seeded();
    // A snapshot of the base taken by its operator, then a change to the base.
    let version = recorder.snapshot("base", Some("release"));
    recorder.put("base", "README.md", b"changed after the snapshot\n");
    recorder.put("base", "later.txt", b"later\n");
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        // The recorder lists the base's snapshots as Tigris does.
        let client = forkbox::fork::s3::client(&s3_config(&recorder)).await;
        let listed = client
            .list_buckets()
            .customize()
            .mutate_request(|req| {
                req.headers_mut().insert("X-Tigris-Snapshot", "base");
            })
            .send()
            .await
            .unwrap();
        let names: Vec<&str> = listed.buckets().iter().filter_map(|b| b.name()).collect();
        assert_eq!(names, vec![format!("{version}; name=release")]);

        let strategy = tigris(&recorder, Some(&version)).await;
        let id = SessionId::new();
        let fs = Vfs::new(strategy.create(id, &lease()).await.unwrap());
        let log = recorder.requests();
        let creates = bucket_request(&log, "PUT", &format!("base-{id}"));
        assert_eq!(creates.len(), 1, "{}", recorder.summary());
        assert_eq!(
            creates[0].header("x-tigris-fork-source-bucket"),
            Some("base")
        );
        assert_eq!(
            creates[0].header("x-tigris-fork-source-bucket-snapshot"),
            Some(version.as_str())
        );
        assert_eq!(creates[0].header("x-tigris-enable-snapshot"), Some("true"));
        // The session sees the base as it was at the snapshot.
        assert_eq!(read(&fs, "/README.md").await.unwrap(), "welcome\n");
        assert_eq!(read(&fs, "/later.txt").await, Err(FsError::NotFound));

        // A version the base has no snapshot of: the fork is refused, and its lease goes.
        let strategy = tigris(&recorder, Some(UNKNOWN_VERSION)).await;
        let id = SessionId::new();
        let err = strategy.create(id, &lease()).await.unwrap_err();
        assert!(matches!(err, ForkError::Storage { .. }), "{err}");
        assert!(!strategy.exists(id).await.unwrap());
        assert_eq!(recorder.object("base-forks", &lease_key(id)), None);
    });
}

#[test]
fn deletion_force_deletes_the_bucket_then_the_lease() {
    if in_child("deletion_force_deletes_the_bucket_then_the_lease") {
        return;
    }
    let recorder = seeded();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = tigris(&recorder, None).await;
        let id = SessionId::new();
        let fork = format!("base-{id}");
        let fs = Vfs::new(strategy.create(id, &lease()).await.unwrap());
        // A bucket with objects in it: only a forced deletion removes it.
        fs.mkdir("/dir").await.unwrap();
        write(&fs, "/dir/file.txt", "data\n").await;
        strategy.delete(id).await.unwrap();

        let log = recorder.requests();
        let deletes = bucket_request(&log, "DELETE", &fork);
        assert_eq!(deletes.len(), 1, "{}", recorder.summary());
        assert_eq!(deletes[0].header("x-tigris-force-delete"), Some("true"));
        let lease_deleted = log
            .iter()
            .position(|r| {
                r.method == "DELETE" && r.bucket == "base-forks" && r.key == lease_key(id)
            })
            .expect("the lease is deleted");
        let bucket_deleted = log
            .iter()
            .position(|r| std::ptr::eq(r, deletes[0]))
            .unwrap();
        assert!(bucket_deleted < lease_deleted, "{}", recorder.summary());
        assert!(!recorder.buckets().contains(&fork));
        assert!(recorder.keys("base-forks").is_empty());
        assert!(!strategy.exists(id).await.unwrap());
        assert_eq!(strategy.lease(id).await.unwrap(), None);
        // Deleting a fork that is gone succeeds.
        strategy.delete(id).await.unwrap();
        assert_eq!(recorder.keys("base"), vec!["README.md"]);
    });
}

#[test]
fn a_rename_is_one_tigris_rename_request() {
    if in_child("a_rename_is_one_tigris_rename_request") {
        return;
    }
    let recorder = seeded();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = tigris(&recorder, None).await;
        let id = SessionId::new();
        let fork = format!("base-{id}");
        let fs = Vfs::new(strategy.create(id, &lease()).await.unwrap());
        write(&fs, "/a file.txt", "hello\n").await;
        let before = recorder.requests().len();
        fs.rename("/a file.txt", "/b.txt").await.unwrap();

        let during = recorder.requests().split_off(before);
        let copies: Vec<_> = during
            .iter()
            .filter(|r| r.method == "PUT" && r.header("x-amz-copy-source").is_some())
            .collect();
        assert_eq!(copies.len(), 1, "{}", recorder.summary());
        let copy = copies[0];
        assert_eq!(
            (copy.bucket.as_str(), copy.key.as_str()),
            (fork.as_str(), "b.txt")
        );
        assert_eq!(copy.header("x-tigris-rename"), Some("true"));
        assert_eq!(
            copy.header("x-amz-copy-source"),
            Some(format!("{fork}/a%20file.txt").as_str())
        );
        // Tigris moved the object: nothing is deleted, and no content went through forkbox.
        assert!(
            !during.iter().any(|r| r.method == "DELETE"
                || (r.method == "PUT" && r.header("x-amz-copy-source").is_none())),
            "{}",
            recorder.summary()
        );
        assert_eq!(read(&fs, "/b.txt").await.unwrap(), "hello\n");
        assert_eq!(read(&fs, "/a file.txt").await, Err(FsError::NotFound));
        assert_eq!(recorder.keys(&fork), vec!["README.md", "b.txt"]);

        // A metadata change is a plain S3 copy onto itself, not a rename.
        let before = recorder.requests().len();
        fs.chmod("/b.txt", 0o600).await.unwrap();
        let during = recorder.requests().split_off(before);
        let copy = during
            .iter()
            .find(|r| r.header("x-amz-copy-source").is_some())
            .expect("chmod copies the object onto itself");
        assert_eq!(
            copy.header("x-amz-copy-source"),
            Some(format!("{fork}/b.txt").as_str())
        );
        assert_eq!(copy.header("x-amz-metadata-directive"), Some("REPLACE"));
        assert_eq!(copy.header("x-tigris-rename"), None);
        assert_eq!(fs.stat("/b.txt").await.unwrap().mode, 0o600);
    });
}

#[test]
fn list_finds_every_fork_across_pages_and_nothing_else() {
    if in_child("list_finds_every_fork_across_pages_and_nothing_else") {
        return;
    }
    let recorder = seeded();
    recorder.set_bucket_page(2);
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = tigris(&recorder, None).await;
        let mut ids = Vec::new();
        for _ in 0..3 {
            let id = SessionId::new();
            strategy.create(id, &lease()).await.unwrap();
            ids.push(id);
        }
        // A fork whose creation stopped after its lease is listed too (for the janitor).
        let leased_only = SessionId::new();
        strategy.renew(leased_only, &lease()).await.unwrap();
        ids.push(leased_only);
        // Buckets that are not forks of this base.
        recorder.create_bucket("base-notasession");
        recorder.create_bucket(&format!("other-{}", SessionId::new()));
        recorder.create_bucket("base-67e55044-10b1-426f-9247-bb680e5fe0c8");

        let mut listed = strategy.list().await.unwrap();
        listed.sort();
        ids.sort();
        assert_eq!(listed, ids);
        let log = recorder.requests();
        let lists: Vec<_> = log
            .iter()
            .filter(|r| r.method == "GET" && r.bucket.is_empty())
            .collect();
        assert!(
            lists.len() >= 2,
            "ListBuckets was not paged: {}",
            recorder.summary()
        );
        assert!(lists.iter().all(|r| r.query("prefix") == Some("base-")));
        assert!(
            lists
                .iter()
                .skip(1)
                .all(|r| r.query("continuation-token").is_some())
        );
    });
}

#[test]
fn a_snapshot_is_a_tigris_snapshot_kept_by_a_bucket_of_its_own() {
    if in_child("a_snapshot_is_a_tigris_snapshot_kept_by_a_bucket_of_its_own") {
        return;
    }
    let recorder = seeded();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = tigris(&recorder, None).await;
        let id = SessionId::new();
        let fork = format!("base-{id}");
        let fs = Vfs::new(strategy.create(id, &lease()).await.unwrap());
        write(&fs, "/note.txt", "hi\n").await;

        for name in [Some("first"), None] {
            let before = recorder.requests().len();
            let snap = strategy
                .snapshot(id, &SnapshotRequest::named(name))
                .await
                .unwrap();
            let during = since(&recorder, before);
            let v = snap.version.as_str();
            assert!(
                v.len() == 19 && v.bytes().all(|b| b.is_ascii_digit()),
                "{v}"
            );
            // Three requests: snapshot, keeper, record, in that order.
            assert_eq!(
                lines(&during),
                vec![
                    format!("PUT /{fork}"),
                    format!("PUT /{}", keeper(v)),
                    format!("PUT /base-forks/{}", record_key(v)),
                ],
                "{}",
                recorder.summary()
            );
            // 1. A Tigris snapshot of the session's bucket, named as asked; its version is
            // the one Tigris answered.
            let asked = match name {
                Some(n) => format!("true; name={n}"),
                None => "true".to_string(),
            };
            assert_eq!(during[0].header("x-tigris-snapshot"), Some(asked.as_str()));
            assert_eq!(during[0].header("x-tigris-fork-source-bucket"), None);
            assert_eq!(
                recorder.snapshots(&fork).last(),
                Some(&(v.to_string(), name.map(str::to_string)))
            );
            // 2. The keeper: a snapshot-enabled fork of the session's bucket at that snapshot.
            assert_eq!(
                during[1].header("x-tigris-fork-source-bucket"),
                Some(fork.as_str())
            );
            assert_eq!(
                during[1].header("x-tigris-fork-source-bucket-snapshot"),
                Some(v)
            );
            assert_eq!(during[1].header("x-tigris-enable-snapshot"), Some("true"));
            assert_eq!(during[1].header("x-tigris-snapshot"), None);
            assert_eq!(recorder.keys(&keeper(v)), vec!["README.md", "note.txt"]);
            // 3. The record, in the forks bucket.
            let ns: u64 = v.parse().unwrap();
            let mut want = name.map(|n| format!("name {n}\n")).unwrap_or_default();
            want.push_str(&format!(
                "created {}\nsession {id}\nbucket {}\n",
                ns / 1_000_000_000,
                keeper(v)
            ));
            let record = recorder.object("base-forks", &record_key(v)).unwrap();
            assert_eq!(String::from_utf8(record).unwrap(), want);
            assert_eq!(snap.name.as_deref(), name);
            assert_eq!(snap.session, Some(id));
            assert_eq!(
                snap.created,
                UNIX_EPOCH + Duration::from_secs(ns / 1_000_000_000)
            );
        }
        let listed = strategy.snapshots().await.unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].name.as_deref(), Some("first"));
        assert_eq!(listed[1].name, None);
        assert!(
            !recorder
                .requests()
                .iter()
                .any(|r| r.bucket == "base" && !r.is_read()),
            "{}",
            recorder.summary()
        );
    });
}

#[test]
fn a_snapshot_is_frozen_outlives_its_session_and_starts_new_forks() {
    if in_child("a_snapshot_is_frozen_outlives_its_session_and_starts_new_forks") {
        return;
    }
    let recorder = seeded();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = tigris(&recorder, None).await;
        let id = SessionId::new();
        let fork = format!("base-{id}");
        let fs = Vfs::new(strategy.create(id, &lease()).await.unwrap());
        fs.mkdir("/dir").await.unwrap();
        write(&fs, "/dir/a.txt", "one\n").await;
        let snap = strategy
            .snapshot(id, &SnapshotRequest::named(Some("keep")))
            .await
            .unwrap();
        let v = snap.version.clone();

        // Later writes in the session change its bucket, not the snapshot.
        write(&fs, "/dir/a.txt", "two\n").await;
        write(&fs, "/b.txt", "b\n").await;
        fs.unlink("/README.md").await.unwrap();
        let frozen = vec![
            ("README.md".to_string(), b"welcome\n".to_vec()),
            ("dir/a.txt".to_string(), b"one\n".to_vec()),
        ];
        let keeper_objects = |r: &Recorder| {
            r.keys(&keeper(&v))
                .into_iter()
                .filter(|k| !k.ends_with('/'))
                .map(|k| {
                    let data = r.object(&keeper(&v), &k).unwrap();
                    (k, data)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(keeper_objects(&recorder), frozen);
        assert_eq!(recorder.object(&fork, "dir/a.txt").unwrap(), b"two\n");

        // The session ends: its bucket goes, with its own snapshots; the keeper and the
        // record stay.
        strategy.delete(id).await.unwrap();
        assert!(!recorder.buckets().contains(&fork));
        assert!(recorder.snapshots(&fork).is_empty());
        assert_eq!(keeper_objects(&recorder), frozen);
        assert_eq!(
            strategy.find_snapshot(&v).await.unwrap(),
            Some(snap.clone())
        );
        assert_eq!(strategy.snapshots().await.unwrap(), vec![snap.clone()]);

        // The janitor never sees keepers or records: it sweeps an abandoned fork and
        // nothing else.
        let abandoned = SessionId::new();
        let expired = Lease {
            owner: ServerId::new(),
            expires: SystemTime::now() - Duration::from_secs(1),
        };
        strategy.create(abandoned, &expired).await.unwrap();
        assert_eq!(strategy.list().await.unwrap(), vec![abandoned]);
        let janitor = Janitor {
            strategy: Arc::new(strategy.clone()),
            lease_ttl: Duration::ZERO,
            delete_deadline: Duration::from_secs(10),
            retention: Retention::KEEP_ALL,
        };
        let sweep = janitor.sweep().await;
        assert_eq!((sweep.examined, sweep.deleted), (1, 1));
        assert!(recorder.buckets().contains(&keeper(&v)));
        assert!(recorder.object("base-forks", &record_key(&v)).is_some());

        // A new fork from the snapshot: the record is read, then the lease, then one
        // CreateBucket forking the keeper as it is.
        let id2 = SessionId::new();
        let fork2 = format!("base-{id2}");
        let before = recorder.requests().len();
        let view = strategy.create_from(id2, &lease(), &v).await.unwrap();
        let during = since(&recorder, before);
        let creates: Vec<&Recorded> = during
            .iter()
            .filter(|r| r.method == "PUT" && r.key.is_empty())
            .collect();
        assert_eq!(creates.len(), 1, "{}", recorder.summary());
        let create = creates[0];
        assert_eq!(create.bucket, fork2);
        assert_eq!(
            create.header("x-tigris-fork-source-bucket"),
            Some(keeper(&v).as_str())
        );
        assert_eq!(create.header("x-tigris-fork-source-bucket-snapshot"), None);
        assert_eq!(create.header("x-tigris-enable-snapshot"), Some("true"));
        let lease_put = during
            .iter()
            .position(|r| r.method == "PUT" && r.key == lease_key(id2))
            .expect("the lease is written");
        let create_at = during.iter().position(|r| std::ptr::eq(r, create)).unwrap();
        assert!(lease_put < create_at, "{}", recorder.summary());
        assert!(
            during[..lease_put].iter().all(|r| about_record(r, &v)),
            "{}",
            recorder.summary()
        );

        let fs2 = Vfs::load(view, Quota::default()).await.unwrap();
        assert_eq!(read(&fs2, "/dir/a.txt").await.unwrap(), "one\n");
        assert_eq!(read(&fs2, "/README.md").await.unwrap(), "welcome\n");
        assert_eq!(read(&fs2, "/b.txt").await, Err(FsError::NotFound));
        // Writing in the new fork leaves the snapshot as it was, and so does its end.
        write(&fs2, "/dir/a.txt", "three\n").await;
        fs2.unlink("/README.md").await.unwrap();
        strategy.delete(id2).await.unwrap();
        assert_eq!(keeper_objects(&recorder), frozen);
        assert!(session_buckets(&recorder).is_empty());
        // Forkbox never writes to a keeper.
        assert!(
            !recorder
                .requests()
                .iter()
                .any(|r| r.bucket == keeper(&v) && !r.key.is_empty() && !r.is_read()),
            "{}",
            recorder.summary()
        );
    });
}

#[test]
fn snapshots_are_listed_oldest_first_and_only_when_recorded() {
    if in_child("snapshots_are_listed_oldest_first_and_only_when_recorded") {
        return;
    }
    let recorder = seeded();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = tigris(&recorder, None).await;
        assert!(strategy.snapshots().await.unwrap().is_empty());
        let (a, b) = (SessionId::new(), SessionId::new());
        strategy.create(a, &lease()).await.unwrap();
        strategy.create(b, &lease()).await.unwrap();
        let first = strategy
            .snapshot(a, &SnapshotRequest::named(Some("one")))
            .await
            .unwrap();
        let second = strategy
            .snapshot(b, &SnapshotRequest::named(None))
            .await
            .unwrap();
        let third = strategy
            .snapshot(a, &SnapshotRequest::named(Some("three")))
            .await
            .unwrap();
        // Objects under the records' prefix that are no snapshot's record.
        recorder.put(
            "base-forks",
            "tigris-snapshots/not_a_version",
            b"created 1\n",
        );
        recorder.put(
            "base-forks",
            "tigris-snapshots/17516319101",
            b"no creation time\n",
        );
        recorder.put(
            "base-forks",
            "tigris-snapshots/17516319102/x",
            b"created 1\n",
        );
        let listed = strategy.snapshots().await.unwrap();
        assert_eq!(listed, vec![first.clone(), second.clone(), third.clone()]);
        for s in [&first, &second, &third] {
            assert_eq!(
                strategy.find_snapshot(&s.version).await.unwrap().as_ref(),
                Some(s)
            );
        }
        assert_eq!(first.session, Some(a));
        assert_eq!(second.session, Some(b));
        for v in ["not_a_version", "17516319101", "17516319102"] {
            assert_eq!(strategy.find_snapshot(v).await.unwrap(), None, "{v}");
        }
    });
}

#[test]
fn unknown_snapshots_are_refused_and_nothing_is_created() {
    if in_child("unknown_snapshots_are_refused_and_nothing_is_created") {
        return;
    }
    let recorder = seeded();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = tigris(&recorder, None).await;
        // `base-snap-<version>` would be longer than a bucket name may be.
        let too_long = "9".repeat(55);
        // Not a version this strategy can have: refused before any request.
        for version in ["", "..", "a.b", "a_b", "UPPER", "a/b", too_long.as_str()] {
            let before = recorder.requests().len();
            let id = SessionId::new();
            let err = strategy
                .create_from(id, &lease(), version)
                .await
                .unwrap_err();
            assert!(
                matches!(err, ForkError::NoSnapshot { .. }),
                "{version:?}: {err}"
            );
            assert_eq!(strategy.find_snapshot(version).await.unwrap(), None);
            assert!(
                since(&recorder, before).is_empty(),
                "{version:?}: {}",
                recorder.summary()
            );
        }
        // Well-formed but unknown: only its record is looked for.
        let before = recorder.requests().len();
        let id = SessionId::new();
        let err = strategy
            .create_from(id, &lease(), UNKNOWN_VERSION)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ForkError::NoSnapshot { version } if version == UNKNOWN_VERSION),
            "{err}"
        );
        let during = since(&recorder, before);
        assert!(!during.is_empty());
        assert!(
            during
                .iter()
                .all(|r| r.is_read() && about_record(r, UNKNOWN_VERSION)),
            "{}",
            recorder.summary()
        );

        // A record whose keeper an operator deleted: no snapshot, and nothing is left of
        // the fork that could not be made.
        let owner = SessionId::new();
        strategy.create(owner, &lease()).await.unwrap();
        let snap = strategy
            .snapshot(owner, &SnapshotRequest::named(None))
            .await
            .unwrap();
        let client = forkbox::fork::s3::client(&s3_config(&recorder)).await;
        client
            .delete_bucket()
            .bucket(keeper(&snap.version))
            .customize()
            .mutate_request(|req| {
                req.headers_mut().insert("X-Tigris-Force-Delete", "true");
            })
            .send()
            .await
            .unwrap();
        let id = SessionId::new();
        let err = strategy
            .create_from(id, &lease(), &snap.version)
            .await
            .unwrap_err();
        assert!(matches!(err, ForkError::NoSnapshot { .. }), "{err}");
        assert!(!strategy.exists(id).await.unwrap());
        assert_eq!(session_buckets(&recorder), vec![format!("base-{owner}")]);
    });
}

#[test]
fn bad_snapshot_names_are_refused_before_any_request() {
    if in_child("bad_snapshot_names_are_refused_before_any_request") {
        return;
    }
    let recorder = seeded();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = tigris(&recorder, None).await;
        let id = SessionId::new();
        strategy.create(id, &lease()).await.unwrap();
        let before = recorder.requests().len();
        let long = "n".repeat(65);
        for name in [
            "",
            "no spaces",
            "a/b",
            "x;name=y",
            "é",
            "line\nbreak",
            long.as_str(),
        ] {
            let err = strategy
                .snapshot(id, &SnapshotRequest::named(Some(name)))
                .await
                .unwrap_err();
            assert!(
                matches!(&err, ForkError::BadSnapshotName(n) if n == name),
                "{name:?}: {err}"
            );
        }
        assert!(
            since(&recorder, before).is_empty(),
            "{}",
            recorder.summary()
        );
        assert!(strategy.snapshots().await.unwrap().is_empty());
    });
}

/// Takes a snapshot of a fresh fork with the recorder set up by `arrange`, expecting it to
/// fail; the error, and the requests sent while taking it.
async fn failed_snapshot(
    recorder: &Recorder,
    strategy: &Tigris,
    arrange: impl FnOnce(&Recorder),
) -> (ForkError, Vec<Recorded>) {
    let id = SessionId::new();
    let fs = Vfs::new(strategy.create(id, &lease()).await.unwrap());
    write(&fs, "/f.txt", "f\n").await;
    arrange(recorder);
    let before = recorder.requests().len();
    let err = strategy
        .snapshot(id, &SnapshotRequest::named(Some("doomed")))
        .await
        .unwrap_err();
    let during = since(recorder, before);
    // The session goes on: its fork is intact.
    assert_eq!(read(&fs, "/f.txt").await.unwrap(), "f\n");
    (err, during)
}

/// Whether the request is a bucket-level request of `method` on a keeper bucket.
fn on_keeper(r: &Recorded, method: &str) -> bool {
    r.method == method && r.bucket.starts_with("base-snap-") && r.key.is_empty()
}

/// Whether the request is about a snapshot record.
fn on_record(r: &Recorded, method: &str) -> bool {
    r.method == method && r.bucket == "base-forks" && r.key.starts_with("tigris-snapshots/")
}

#[test]
fn a_failing_step_leaves_no_listed_snapshot() {
    if in_child("a_failing_step_leaves_no_listed_snapshot") {
        return;
    }
    let recorder = seeded();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = tigris(&recorder, None).await;
        let nothing_left = |recorder: &Recorder| {
            assert!(
                !recorder
                    .buckets()
                    .iter()
                    .any(|b| b.starts_with("base-snap-")),
                "{:?}",
                recorder.buckets()
            );
            assert!(
                recorder
                    .keys("base-forks")
                    .iter()
                    .all(|k| k.starts_with("tigris-leases/")),
                "{:?}",
                recorder.keys("base-forks")
            );
        };

        // 1. Tigris refuses the snapshot: nothing else is sent.
        let (err, during) = failed_snapshot(&recorder, &strategy, |r| {
            r.fail(1, false, |q| q.header("x-tigris-snapshot").is_some());
        })
        .await;
        assert!(matches!(err, ForkError::Storage { .. }), "{err}");
        assert_eq!(during.len(), 1, "{}", recorder.summary());
        nothing_left(&recorder);

        // 2. The answer has no version, or one that cannot name a snapshot.
        let too_long = "7".repeat(55);
        for answer in [
            None,
            Some(""),
            Some("NOT-LOWER"),
            Some("a/b"),
            Some(too_long.as_str()),
        ] {
            let (err, during) = failed_snapshot(&recorder, &strategy, |r| {
                r.answer_snapshot_version(answer);
            })
            .await;
            assert!(
                matches!(err, ForkError::Storage { .. }),
                "{answer:?}: {err}"
            );
            let mut message = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(s) = source {
                message.push_str(&format!(": {s}"));
                source = s.source();
            }
            assert!(message.contains("X-Tigris-Snapshot-Version"), "{message}");
            assert_eq!(during.len(), 1, "{answer:?}: {}", recorder.summary());
            nothing_left(&recorder);
        }
        // Back to answering the real version.
        recorder.answer_real_snapshot_versions();

        // 3. The keeper cannot be made: it is removed in case it was made all the same.
        for applied in [false, true] {
            let (err, during) = failed_snapshot(&recorder, &strategy, |r| {
                r.fail(1, applied, |q| on_keeper(q, "PUT"));
            })
            .await;
            let ForkError::SnapshotStorage { version, .. } = &err else {
                panic!("{err}");
            };
            let deleted: Vec<&Recorded> =
                during.iter().filter(|r| on_keeper(r, "DELETE")).collect();
            assert_eq!(deleted.len(), 1, "{}", recorder.summary());
            assert_eq!(deleted[0].bucket, keeper(version));
            assert_eq!(deleted[0].header("x-tigris-force-delete"), Some("true"));
            assert!(!during.iter().any(|r| on_record(r, "PUT")));
            nothing_left(&recorder);
        }

        // 4. The keeper's name is taken already: that bucket is not ours, and stays.
        recorder.create_bucket(&keeper("777"));
        let (err, during) = failed_snapshot(&recorder, &strategy, |r| {
            r.answer_snapshot_version(Some("777"));
        })
        .await;
        recorder.answer_real_snapshot_versions();
        assert!(matches!(err, ForkError::SnapshotStorage { .. }), "{err}");
        assert!(
            !during.iter().any(|r| r.method == "DELETE"),
            "{}",
            recorder.summary()
        );
        assert!(recorder.buckets().contains(&keeper("777")));
        recorder.delete_bucket(&keeper("777"));
        nothing_left(&recorder);

        // 5. The record cannot be written (or was, but the answer says not): the record is
        // deleted, then the keeper.
        for applied in [false, true] {
            let (err, during) = failed_snapshot(&recorder, &strategy, |r| {
                r.fail(1, applied, |q| on_record(q, "PUT"));
            })
            .await;
            assert!(matches!(err, ForkError::SnapshotStorage { .. }), "{err}");
            let record_deleted = during
                .iter()
                .position(|r| on_record(r, "DELETE"))
                .expect("the record is deleted");
            let keeper_deleted = during
                .iter()
                .position(|r| on_keeper(r, "DELETE"))
                .expect("the keeper is deleted");
            assert!(record_deleted < keeper_deleted, "{}", recorder.summary());
            nothing_left(&recorder);
        }
        assert!(strategy.snapshots().await.unwrap().is_empty());

        // 6. A record that may have been written and cannot be deleted keeps its keeper:
        // a snapshot that is listed can always be started from.
        let (err, during) = failed_snapshot(&recorder, &strategy, |r| {
            r.fail(1, true, |q| on_record(q, "PUT"));
            r.fail(usize::MAX, false, |q| on_record(q, "DELETE"));
        })
        .await;
        let ForkError::SnapshotStorage { version, .. } = err else {
            panic!("{err}");
        };
        assert!(!during.iter().any(|r| on_keeper(r, "DELETE")));
        let listed = strategy.snapshots().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].version, version);
        let id = SessionId::new();
        let fs = Vfs::new(strategy.create_from(id, &lease(), &version).await.unwrap());
        assert_eq!(read(&fs, "/f.txt").await.unwrap(), "f\n");
    });
}

#[tokio::test]
async fn base_names_that_cannot_name_forks_are_refused() {
    let cfg = S3Config {
        endpoint: Some("http://127.0.0.1:9".into()),
        region: Some("us-east-1".into()),
        path_style: true,
    };
    let client = forkbox::fork::s3::client(&cfg).await;
    let config = |base: &str| TigrisConfig {
        s3: cfg.clone(),
        base_bucket: base.into(),
        base_snapshot: None,
        spill_dir: std::env::temp_dir(),
    };
    assert_eq!(BASE_NAME_MAX + 1 + 36, BUCKET_NAME_MAX);
    let fits = "b".repeat(BASE_NAME_MAX);
    assert!(Tigris::new(client.clone(), config(&fits), Store::memory()).is_ok());
    let long = "b".repeat(BASE_NAME_MAX + 1);
    let err = Tigris::new(client.clone(), config(&long), Store::memory()).unwrap_err();
    assert!(matches!(err, TigrisError::BaseTooLong { .. }));
    assert!(err.to_string().contains("at most 26 characters"), "{err}");
    let err = Tigris::new(client.clone(), config("My_Bucket"), Store::memory()).unwrap_err();
    assert!(matches!(err, TigrisError::BaseName(_)));
    let mut message = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        message.push_str(&format!(": {s}"));
        source = s.source();
    }
    assert!(message.contains("lowercase letters, digits"), "{message}");
}

/// The arguments that make `forkbox serve` fork with Tigris over the recorder.
fn tigris_args(recorder: &Recorder, base: &str) -> Vec<String> {
    [
        "--backend",
        "s3",
        "--fork-strategy",
        "tigris",
        "--s3-path-style",
        "--s3-endpoint",
        &recorder.endpoint(),
        "--base-bucket",
        base,
    ]
    .map(str::to_string)
    .to_vec()
}

/// `forkbox serve` over the recorder, for start-up failures (a server that starts is a
/// [`Server`]).
fn serve_command(recorder: &Recorder, base: &str) -> (Command, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_forkbox"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(tmp.path())
        .args(tigris_args(recorder, base));
    s3_test_env(&mut cmd);
    (cmd, tmp)
}

#[test]
fn an_ssh_session_works_in_its_own_fork_which_is_force_deleted_at_logout() {
    let recorder = seeded();
    recorder.put("base", "docs/guide.txt", b"guide\n");
    recorder.put("base", "docs/keep.txt", b"keep\n");
    let args = tigris_args(&recorder, "base");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start_configured(&args, |cmd| {
        s3_test_env(cmd);
    });
    let out = server.ssh(
        "cat README.md; echo mine > f; mv f g; cat g; rm docs/guide.txt; ls; echo $FORKBOX_SESSION",
    );
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout {text}\nstderr {}",
        stderr(&out)
    );
    let (listing, id) = text.trim_end().rsplit_once('\n').unwrap();
    assert_eq!(listing, "welcome\nmine\nREADME.md\ndocs\ng\ntmp");
    let id: SessionId = id.parse().unwrap();
    let fork = format!("base-{id}");

    let log = recorder.requests();
    let creates = bucket_request(&log, "PUT", &fork);
    assert_eq!(creates.len(), 1, "{}", recorder.summary());
    assert_eq!(
        creates[0].header("x-tigris-fork-source-bucket"),
        Some("base")
    );
    assert_eq!(creates[0].header("x-tigris-enable-snapshot"), Some("true"));
    let rename = log
        .iter()
        .find(|r| r.method == "PUT" && r.bucket == fork && r.key == "g")
        .expect("mv sent a request for g");
    assert_eq!(rename.header("x-tigris-rename"), Some("true"));
    assert_eq!(
        rename.header("x-amz-copy-source"),
        Some(format!("{fork}/f").as_str())
    );

    // Logging out deletes the fork: one forced DeleteBucket, then the lease.
    let delete = recorder.wait_for(CLEANUP_WAIT, |r| {
        r.method == "DELETE" && r.bucket == fork && r.key.is_empty()
    });
    assert_eq!(delete.header("x-tigris-force-delete"), Some("true"));
    recorder.wait_for(CLEANUP_WAIT, |r| {
        r.method == "DELETE" && r.bucket == "base-forks" && r.key == lease_key(id)
    });
    assert!(!recorder.buckets().contains(&fork));
    // `rm` deleted the fork's copy of the file; the base was read, never written.
    assert!(
        log.iter()
            .any(|r| r.method == "DELETE" && r.bucket == fork && r.key == "docs/guide.txt"),
        "{}",
        recorder.summary()
    );
    assert_eq!(
        recorder.keys("base"),
        vec!["README.md", "docs/guide.txt", "docs/keep.txt"]
    );
    assert!(
        !recorder
            .requests()
            .iter()
            .any(|r| r.bucket == "base" && !r.is_read()),
        "{}",
        recorder.summary()
    );
}

/// `forkbox serve` with the Tigris strategy over the recorder, snapshots on for its
/// anonymous sessions, with `extra` arguments.
fn tigris_server(recorder: &Recorder, extra: &[&str]) -> Server {
    let mut args = tigris_args(recorder, "base");
    args.extend(["--snapshots", "on"].map(str::to_string));
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start_configured(&args, |cmd| {
        s3_test_env(cmd);
    })
}

/// Waits until the fork of session `id` has been force-deleted (after its logout).
fn wait_fork_deleted(recorder: &Recorder, id: &str) {
    let fork = format!("base-{id}");
    recorder.wait_for(CLEANUP_WAIT, |r| {
        r.method == "DELETE" && r.bucket == fork && r.key.is_empty()
    });
}

/// Waits until no session fork of the base is left (every session logged out and its fork
/// was deleted); fails the test if some stay.
fn wait_no_session_buckets(recorder: &Recorder) {
    let start = std::time::Instant::now();
    while !session_buckets(recorder).is_empty() {
        assert!(
            start.elapsed() < CLEANUP_WAIT,
            "session forks left: {:?}",
            session_buckets(recorder)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The second of `version` (Unix nanoseconds) as `snapshot` prints times.
fn printed_time(version: &str) -> String {
    let t = UNIX_EPOCH + Duration::from_nanos(version.parse().unwrap());
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Takes a snapshot named `name` after `script` in a session of its own, and waits for
/// that session's fork to go; the snapshot's version.
fn ssh_snapshot(server: &Server, recorder: &Recorder, script: &str, name: &str) -> String {
    let out = server.ssh(&format!(
        "{script}; snapshot --name {name}; echo $FORKBOX_SESSION"
    ));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let (taken, id) = text
        .trim_end()
        .rsplit_once('\n')
        .unwrap_or_else(|| panic!("{text:?}"));
    let (version, shown) = taken.split_once(' ').unwrap_or_else(|| panic!("{text:?}"));
    assert_eq!(shown, name);
    assert!(
        version.len() == 19 && version.bytes().all(|b| b.is_ascii_digit()),
        "{version:?}"
    );
    wait_fork_deleted(recorder, id);
    version.to_string()
}

#[test]
fn ssh_snapshots_outlive_their_session_and_start_new_ones() {
    let recorder = seeded();
    let server = tigris_server(&recorder, &[]);

    // A bad name is refused before anything is asked of Tigris.
    let out = server.ssh("snapshot --name 'bad name'");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "bash: line 1: snapshot: invalid name \"bad name\": use 1 to 64 of A-Z a-z 0-9 . _ -\n"
    );
    assert_eq!(stdout(&out), "");

    // The snapshot holds the files as they were when it was taken.
    let version = ssh_snapshot(
        &server,
        &recorder,
        "echo hi > note.txt; mkdir d; echo deep > d/x; rm README.md",
        "x",
    );
    let snapshot_requests: Vec<Recorded> = recorder
        .requests()
        .into_iter()
        .filter(|r| r.header("x-tigris-snapshot").is_some())
        .collect();
    assert_eq!(snapshot_requests.len(), 1, "{}", recorder.summary());
    assert_eq!(
        snapshot_requests[0].header("x-tigris-snapshot"),
        Some("true; name=x")
    );
    let keeper = keeper(&version);
    assert_eq!(recorder.object(&keeper, "note.txt").unwrap(), b"hi\n");
    wait_no_session_buckets(&recorder);

    // A later session changes nothing of it.
    let out = server.ssh("echo later > note.txt; snapshot --list");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "VERSION              NAME  CREATED\n{version}  x     {}\n",
            printed_time(&version)
        )
    );

    // Logging in as snap-<version> starts from it.
    let user = format!("snap-{version}");
    let out = server.ssh_as(
        &user,
        "cat note.txt d/x; ls; echo \"$USER $FORKBOX_SNAPSHOT\"; snapshot --list --json; \
         echo $FORKBOX_SESSION",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stderr(&out), "");
    let text = stdout(&out);
    let (shown, id) = text.trim_end().rsplit_once('\n').unwrap();
    assert_eq!(
        shown,
        format!(
            "hi\ndeep\nd\nnote.txt\ntmp\nuser {version}\n\
             [{{\"version\":\"{version}\",\"name\":\"x\",\"created\":\"{}\"}}]",
            printed_time(&version)
        )
    );
    let log = recorder.requests();
    let creates = bucket_request(&log, "PUT", &format!("base-{id}"));
    assert_eq!(creates.len(), 1, "{}", recorder.summary());
    assert_eq!(
        creates[0].header("x-tigris-fork-source-bucket"),
        Some(keeper.as_str())
    );
    assert_eq!(
        creates[0].header("x-tigris-fork-source-bucket-snapshot"),
        None
    );
    wait_fork_deleted(&recorder, id);

    // Unknown snapshots, well-formed or not: a clear message, and no fork.
    for version in [UNKNOWN_VERSION, "UPPER", "a.b"] {
        server.assert_no_snapshot(version);
    }

    // Every session is gone; the snapshot stays, and nothing ever wrote to its keeper.
    wait_no_session_buckets(&recorder);
    assert!(recorder.buckets().contains(&keeper));
    assert!(
        recorder
            .object("base-forks", &record_key(&version))
            .is_some()
    );
    assert!(
        !recorder.requests().iter().any(|r| r.bucket == keeper
            && !r.is_read()
            && !(r.method == "PUT" && r.key.is_empty())),
        "{}",
        recorder.summary()
    );
    assert_eq!(recorder.keys("base"), vec!["README.md"]);
}

#[test]
fn base_snapshot_on_tigris_is_a_forkbox_snapshot_or_else_one_of_the_base_bucket() {
    let recorder = seeded();
    let version = {
        let server = tigris_server(&recorder, &[]);
        ssh_snapshot(&server, &recorder, "echo hi > note.txt", "base")
    };

    // A forkbox snapshot: every session starts from it.
    let server = tigris_server(&recorder, &["--base-snapshot", &version]);
    let out = server.ssh("cat note.txt; echo $FORKBOX_SNAPSHOT");
    assert_eq!(stdout(&out), format!("hi\n{version}\n"), "{}", stderr(&out));
    drop(server);

    // Else a Tigris snapshot of the base bucket, which Tigris forks.
    let base_version = recorder.snapshot("base", None);
    recorder.put("base", "README.md", b"changed\n");
    let server = tigris_server(&recorder, &["--base-snapshot", &base_version]);
    let out = server
        .ssh("cat README.md; cat note.txt; echo \"[$FORKBOX_SNAPSHOT]\"; echo $FORKBOX_SESSION");
    let text = stdout(&out);
    let (shown, id) = text.trim_end().rsplit_once('\n').unwrap();
    assert_eq!(shown, "welcome\n[]", "{}", stderr(&out));
    assert!(
        stderr(&out).contains("note.txt: No such file"),
        "{}",
        stderr(&out)
    );
    let log = recorder.requests();
    let creates = bucket_request(&log, "PUT", &format!("base-{id}"));
    assert_eq!(creates.len(), 1, "{}", recorder.summary());
    assert_eq!(
        creates[0].header("x-tigris-fork-source-bucket-snapshot"),
        Some(base_version.as_str())
    );
    assert_eq!(
        creates[0].header("x-tigris-fork-source-bucket"),
        Some("base")
    );
}

#[test]
fn serve_refuses_a_base_whose_forks_could_not_be_named() {
    let recorder = seeded();
    let long = "b".repeat(BASE_NAME_MAX + 1);
    let (mut cmd, _tmp) = serve_command(&recorder, &long);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("at most 26 characters"), "{err}");
    // Refused before any request.
    assert!(recorder.requests().is_empty(), "{}", recorder.summary());

    let (mut cmd, _tmp) = serve_command(&recorder, "missing");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("the base bucket \"missing\" does not exist"),
        "{err}"
    );
}

/// Checks that `during` deleted the record of snapshot `version`, then force-deleted its
/// keeper, and that both are gone.
fn assert_deleted_record_then_keeper(recorder: &Recorder, during: &[Recorded], version: &str) {
    let record = during
        .iter()
        .position(|r| {
            r.method == "DELETE" && r.bucket == "base-forks" && r.key == record_key(version)
        })
        .unwrap_or_else(|| panic!("the record was not deleted: {}", recorder.summary()));
    let keeper_name = keeper(version);
    let bucket = during
        .iter()
        .position(|r| r.method == "DELETE" && r.bucket == keeper_name && r.key.is_empty())
        .unwrap_or_else(|| panic!("the keeper was not deleted: {}", recorder.summary()));
    assert!(record < bucket, "{}", recorder.summary());
    assert_eq!(during[bucket].header("x-tigris-force-delete"), Some("true"));
    assert!(
        recorder
            .object("base-forks", &record_key(version))
            .is_none()
    );
    assert!(!recorder.buckets().contains(&keeper_name));
}

#[test]
fn the_janitor_deletes_old_snapshots_record_first() {
    if in_child("the_janitor_deletes_old_snapshots_record_first") {
        return;
    }
    let recorder = seeded();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = Arc::new(tigris(&recorder, None).await);
        let id = SessionId::new();
        let fs = Vfs::new(strategy.create(id, &lease()).await.unwrap());
        write(&fs, "/note.txt", "hi\n").await;
        let request = SnapshotRequest {
            owner: Some(forkbox::fork::Owner::anonymous()),
            held_bytes: Some(3),
            ..SnapshotRequest::named(Some("old"))
        };
        let snap = strategy.snapshot(id, &request).await.unwrap();
        let record = recorder
            .object("base-forks", &record_key(&snap.version))
            .unwrap();
        let record = String::from_utf8(record).unwrap();
        assert!(record.contains("owner anonymous\nbytes 3\n"), "{record}");
        strategy.delete(id).await.unwrap();
        let day = Duration::from_secs(86_400);
        let janitor = Janitor {
            strategy: strategy.clone(),
            lease_ttl: Duration::from_secs(60),
            delete_deadline: Duration::from_secs(10),
            retention: Retention {
                max_age: Some(7 * day),
                max_count: Some(16),
                pinned: None,
            },
        };
        let now = SystemTime::now();
        assert_eq!(janitor.sweep_snapshots(now + 6 * day).await.expired, 0);
        assert!(recorder.buckets().contains(&keeper(&snap.version)));
        let before = recorder.requests().len();
        let sweep = janitor.sweep_snapshots(now + 8 * day).await;
        assert_eq!((sweep.examined, sweep.expired, sweep.failed), (1, 1, 0));
        assert_deleted_record_then_keeper(&recorder, &since(&recorder, before), &snap.version);
        assert!(strategy.snapshots().await.unwrap().is_empty());
        // Deleting it again finds nothing, and asks nothing of its (gone) keeper.
        assert!(!strategy.delete_snapshot(&snap.version).await.unwrap());
    });
}

#[test]
fn forkbox_snapshots_lists_and_deletes_tigris_snapshots() {
    let recorder = seeded();
    let server = tigris_server(&recorder, &[]);
    let version = ssh_snapshot(&server, &recorder, "echo hi > note.txt", "x");
    let run = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_forkbox"));
        cmd.arg("snapshots")
            .args(args)
            .args(tigris_args(&recorder, "base"));
        s3_test_env(&mut cmd);
        cmd.output().unwrap()
    };
    let out = run(&["list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    // The size is what the session had written: "hi\n".
    assert_eq!(
        rows[1],
        [
            version.as_str(),
            "x",
            printed_time(&version).as_str(),
            "anonymous",
            "3"
        ]
    );

    let before = recorder.requests().len();
    let out = run(&["delete", &version]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("deleted {version}\n"));
    assert_deleted_record_then_keeper(&recorder, &since(&recorder, before), &version);
    server.assert_no_snapshot(&version);

    let out = run(&["delete", &version]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), format!("forkbox: no snapshot {version}\n"));
    let out = run(&["list", "--json"]);
    assert_eq!(stdout(&out), "[]\n");
}

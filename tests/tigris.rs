//! The Tigris fork strategy against a recording S3 server: the exact requests (and Tigris
//! headers) forkbox sends to fork, rename, list and force-delete, through the library and
//! through a real `forkbox serve` process driven by the real OpenSSH client.

#[path = "support/recorder.rs"]
mod recorder;
#[path = "support/server.rs"]
mod server;

use std::process::Command;
use std::time::Duration;

use forkbox::fork::s3::BUCKET_NAME_MAX;
use forkbox::fork::tigris::{BASE_NAME_MAX, TigrisError};
use forkbox::fork::{ForkStrategy, Lease, ServerId, SessionId, Tigris, TigrisConfig};
use forkbox::storage::{S3Config, Store};
use forkbox::vfs::Vfs;
use forkbox_commands::fs::read_all;
use forkbox_commands::{FileSystem, FsError, WriteMode};
use recorder::{Recorded, Recorder};
use server::{CLEANUP_WAIT, Server, stderr, stdout};

/// Names the test a child process of this binary is to run (see [`in_child`]).
const CHILD: &str = "FORKBOX_TIGRIS_TEST_CHILD";

/// The environment of every process that talks to the recorder: test credentials (the
/// recorder checks no signature) and nothing from the host's AWS configuration.
fn s3_test_env(cmd: &mut Command) -> &mut Command {
    cmd.env("AWS_ACCESS_KEY_ID", "forkbox-test-key")
        .env("AWS_SECRET_ACCESS_KEY", "forkbox-test-secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/nonexistent")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_ENDPOINT_URL_S3")
}

/// forkbox takes S3 credentials from the environment only, and a test may not change its
/// own environment (that is `unsafe`, and the crate forbids it). So a test that talks S3
/// in-process runs its body in a child: this test binary again, filtered to that one test,
/// with [`s3_test_env`]. Returns `false` in the child, which then runs the body, and `true`
/// in the parent once the child has passed.
fn in_child(test: &str) -> bool {
    if std::env::var(CHILD).as_deref() == Ok(test) {
        return false;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, test);
    let out = s3_test_env(&mut cmd)
        .output()
        .expect("run the test in a child");
    let (so, se) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "child test failed:\n{so}\n{se}");
    // The filter matched exactly this test, so it did run.
    assert!(so.contains("1 passed"), "child ran no test:\n{so}\n{se}");
    true
}

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
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let strategy = tigris(&recorder, Some("1765889000501544464")).await;
        let id = SessionId::new();
        strategy.create(id, &lease()).await.unwrap();
        let log = recorder.requests();
        let creates = bucket_request(&log, "PUT", &format!("base-{id}"));
        assert_eq!(creates.len(), 1, "{}", recorder.summary());
        assert_eq!(
            creates[0].header("x-tigris-fork-source-bucket"),
            Some("base")
        );
        assert_eq!(
            creates[0].header("x-tigris-fork-source-bucket-snapshot"),
            Some("1765889000501544464")
        );
        assert_eq!(creates[0].header("x-tigris-enable-snapshot"), Some("true"));
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
    assert_eq!(listing, "welcome\nmine\nREADME.md\ndocs\ng");
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
            .any(|r| r.bucket == "base" && !matches!(r.method.as_str(), "GET" | "HEAD")),
        "{}",
        recorder.summary()
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

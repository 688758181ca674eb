//! What sessions may leave behind in snapshots, through the real protocols: the default
//! that keeps anonymous sessions from taking any, per-identity quotas (anonymous users
//! together, each key on its own), the janitor's age limit on a running server, and the
//! operator's `forkbox snapshots list|delete` on a data directory and on an S3 store.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/s3.rs"]
mod s3;
#[path = "support/server.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::{CLEANUP_WAIT, Server, run_with_stdin, stderr, stdout};

/// The snapshots kept in a local data directory (the names under `snapshots/`).
fn snapshots_on_disk(data_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(data_dir.join("snapshots")) {
        Ok(rd) => rd
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

/// Shell functions the sessions of these tests use: `fill N FILE` writes N bytes to FILE.
const FILL: &str = "fill() { yes 0123456789abcdef0123456789abcdef | head -c \"$1\" > \"$2\"; }";

/// Runs `script` in a session of its own, with [`FILL`] defined.
fn run(server: &Server, script: &str) -> Output {
    server.ssh(&format!("{FILL}; {script}"))
}

/// Takes a snapshot after `script` in a session of its own; its version.
fn take(server: &Server, script: &str) -> String {
    let out = run(server, &format!("{script}; snapshot"));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let version = stdout(&out).trim_end().to_string();
    assert!(
        !version.is_empty() && version.bytes().all(|b| b.is_ascii_alphanumeric()),
        "{version:?}"
    );
    version
}

/// `forkbox snapshots ARGS…` with `env` applied; its output.
fn forkbox_snapshots(args: &[&str], env: impl FnOnce(&mut Command)) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_forkbox"));
    cmd.arg("snapshots").args(args);
    env(&mut cmd);
    run_with_stdin(cmd, b"")
}

/// The issue-9 attack: one anonymous session writes 20 MB and snapshots it 16 times. On a
/// server with its defaults every snapshot is refused, and nothing is stored.
#[test]
fn anonymous_sessions_take_no_snapshots_by_default() {
    let server = Server::start();
    let out = server.ssh(
        "yes 0123456789abcdef0123456789abcdef | head -c 20971520 > big; wc -c < big; \
         for i in $(seq 16); do snapshot --name \"s$i\" || echo \"refused $?\"; done",
    );
    assert_eq!(
        stdout(&out),
        format!("20971520\n{}", "refused 1\n".repeat(16)),
        "stderr: {}",
        stderr(&out)
    );
    assert_eq!(
        stderr(&out),
        "bash: line 1: snapshot: snapshots are disabled on this server\n".repeat(16)
    );
    server.wait_no_forks();
    assert!(snapshots_on_disk(&server.data_dir).is_empty());
    // Listing still works (there is nothing to list).
    let out = server.ssh("snapshot --list");
    assert_eq!(stdout(&out), "VERSION  NAME  CREATED\n");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn the_quota_of_anonymous_users_refuses_the_next_snapshot() {
    let server = Server::start_with(&[
        "--snapshots",
        "on",
        "--snapshot-max-count",
        "2",
        "--snapshot-quota-bytes",
        "1M",
    ]);
    let first = take(&server, "fill 307200 a");
    // The bytes: 300K kept, and 800K more would pass 1M.
    let out = run(&server, "fill 819200 b; snapshot; echo \"status $?\"");
    assert_eq!(stdout(&out), "status 1\n");
    assert_eq!(
        stderr(&out),
        "bash: line 1: snapshot: quota of 2 snapshots / 1M reached: you keep 1 holding 300K, \
         and this session's files hold 800K\n"
    );
    let second = take(&server, "fill 307200 c");
    // The count: a third is refused, even of a session that wrote nothing, and whoever
    // asks (all anonymous users are one identity, whatever their login name).
    let out = server.ssh_as("someone-else", "snapshot --name third; echo \"status $?\"");
    assert_eq!(stdout(&out), "status 1\n");
    assert_eq!(
        stderr(&out),
        "bash: line 1: snapshot: quota of 2 snapshots / 1M reached: you keep 2 holding 600K, \
         and this session's files hold 0B\n"
    );
    server.wait_no_forks();
    let mut kept = vec![first.clone(), second.clone()];
    kept.sort();
    assert_eq!(snapshots_on_disk(&server.data_dir), kept);
    // What was kept still works.
    let out = server.ssh_as(&format!("snap-{first}"), "wc -c < a; ls");
    assert_eq!(
        stdout(&out),
        "307200\nREADME.md\na\ndocs\nshared.txt\ntmp\n"
    );
    let out = server.ssh_as(&format!("snap-{second}"), "wc -c < c");
    assert_eq!(stdout(&out), "307200\n", "stderr: {}", stderr(&out));
    // Each snapshot records its owner and what it holds.
    let info =
        std::fs::read_to_string(server.data_dir.join(format!("snapshots/{first}/info"))).unwrap();
    assert!(info.contains("owner anonymous\n"), "{info}");
    assert!(info.contains("bytes 307200\n"), "{info}");
}

/// A fresh ed25519 key pair in `dir`: the private key's path and the key's SHA256
/// fingerprint as `ssh-keygen -l` prints it.
fn key(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new("ssh-keygen")
        .args(["-l", "-E", "sha256", "-f"])
        .arg(path.with_extension("pub"))
        .output()
        .unwrap();
    let line = String::from_utf8(out.stdout).unwrap();
    let fingerprint = line.split_whitespace().nth(1).unwrap().to_string();
    assert!(fingerprint.starts_with("SHA256:"), "{line}");
    (path, fingerprint)
}

/// Runs `script` logged in with the key at `identity`.
fn ssh_with_key(server: &Server, identity: &Path, script: &str) -> Output {
    let mut cmd = server.ssh_raw();
    cmd.args(["-o", "StrictHostKeyChecking=no"])
        .args(["-o", "UserKnownHostsFile=/dev/null"])
        .args(["-o", "PasswordAuthentication=no"])
        .arg("-i")
        .arg(identity)
        .args(["user@127.0.0.1", script]);
    run_with_stdin(cmd, b"")
}

#[test]
fn each_key_has_a_quota_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let (alice, alice_fp) = key(dir.path(), "alice");
    let (bob, bob_fp) = key(dir.path(), "bob");
    let authorized = dir.path().join("authorized_keys");
    let keys = [&alice, &bob]
        .map(|k| std::fs::read_to_string(k.with_extension("pub")).unwrap())
        .concat();
    std::fs::write(&authorized, &keys).unwrap();
    // Snapshots are on by default with keys.
    let server = Server::start_with(&[
        "--auth",
        "keys",
        "--authorized-keys",
        authorized.to_str().unwrap(),
        "--snapshot-max-count",
        "1",
    ]);
    let taken = |identity: &Path| {
        let out = ssh_with_key(&server, identity, "echo mine > f; snapshot");
        (out.status.code(), stdout(&out), stderr(&out))
    };
    let (status, alice_version, err) = taken(&alice);
    assert_eq!(status, Some(0), "{err}");
    let (status, _, err) = taken(&alice);
    assert_eq!(status, Some(1));
    assert!(
        err.starts_with("bash: line 1: snapshot: quota of 1 snapshots / 1G reached: you keep 1 "),
        "{err}"
    );
    let (status, bob_version, err) = taken(&bob);
    assert_eq!(status, Some(0), "{err}");
    // The records name the keys by fingerprint, never by the keys themselves.
    for (version, fingerprint) in [(&alice_version, &alice_fp), (&bob_version, &bob_fp)] {
        let info = std::fs::read_to_string(
            server
                .data_dir
                .join(format!("snapshots/{}/info", version.trim_end())),
        )
        .unwrap();
        assert!(info.contains(&format!("owner {fingerprint}\n")), "{info}");
        for line in keys.lines() {
            let body = line.split_whitespace().nth(1).unwrap();
            assert!(!info.contains(body), "{info}");
        }
    }
    assert_eq!(snapshots_on_disk(&server.data_dir).len(), 2);
}

/// A server that admits anyone takes any key too; a key there names no identity of its
/// own, or a fresh key per connection would be a fresh quota.
#[test]
fn keys_on_an_anonymous_server_share_the_anonymous_quota() {
    let dir = tempfile::tempdir().unwrap();
    let (alice, _) = key(dir.path(), "alice");
    let server = Server::start_with(&["--snapshots", "on", "--snapshot-max-count", "1"]);
    let out = ssh_with_key(&server, &alice, "snapshot");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let out = server.ssh("snapshot");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("quota of 1 snapshots"),
        "{}",
        stderr(&out)
    );
    let version = snapshots_on_disk(&server.data_dir).pop().unwrap();
    let info =
        std::fs::read_to_string(server.data_dir.join(format!("snapshots/{version}/info"))).unwrap();
    assert!(info.contains("owner anonymous\n"), "{info}");
}

/// Waits until `data_dir` keeps exactly the snapshots `want`.
fn wait_snapshots(data_dir: &Path, want: &[&str]) {
    let start = Instant::now();
    while snapshots_on_disk(data_dir) != want {
        assert!(
            start.elapsed() < CLEANUP_WAIT,
            "snapshots kept: {:?}, expected {want:?}",
            snapshots_on_disk(data_dir)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_janitor_of_a_running_server_deletes_snapshots_past_their_age() {
    let server = Server::start_with(&[
        "--snapshots",
        "on",
        "--snapshot-max-age",
        "1s",
        "--janitor-interval",
        "1",
    ]);
    let version = take(&server, "echo x > f");
    wait_snapshots(&server.data_dir, &[]);
    server.assert_no_snapshot(&version);

    // The snapshot a server starts every session from is never its janitor's to delete.
    let (tmp, base, data) = server.stop();
    let server = Server::restart(tmp, base, data, &["--snapshots", "on"]);
    let pinned = take(&server, "echo pinned > f");
    let other = take(&server, "echo other > f");
    let (tmp, base, data) = server.stop();
    let server = Server::restart(
        tmp,
        base,
        data,
        &[
            "--base-snapshot",
            &pinned,
            "--snapshot-max-age",
            "1s",
            "--janitor-interval",
            "1",
        ],
    );
    // The other one goes: a pass ran, and left the pinned one.
    assert_ne!(pinned, other);
    wait_snapshots(&server.data_dir, &[pinned.as_str()]);
    let out = server.ssh("cat f");
    assert_eq!(stdout(&out), "pinned\n", "stderr: {}", stderr(&out));
}

#[test]
fn snapshots_lists_and_deletes_in_a_data_directory() {
    let server = Server::start_with(&["--snapshots", "on"]);
    let data = server.data_dir.to_str().unwrap().to_string();
    let first = take(&server, "echo one > f");
    let out = server.ssh("echo two > f; snapshot --name second");
    let second = stdout(&out)
        .split_whitespace()
        .next()
        .unwrap_or_else(|| panic!("{}", stderr(&out)))
        .to_string();

    let out = forkbox_snapshots(&["list", "--data-dir", &data], |_| {});
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert_eq!(rows[0], ["VERSION", "NAME", "CREATED", "OWNER", "BYTES"]);
    assert_eq!(
        (rows[1][0], rows[1][1], rows[1][3], rows[1][4]),
        (first.as_str(), "-", "anonymous", "4")
    );
    assert_eq!(
        (rows[2][0], rows[2][1], rows[2][3], rows[2][4]),
        (second.as_str(), "second", "anonymous", "4")
    );
    let out = forkbox_snapshots(&["list", "--json", "--data-dir", &data], |_| {});
    let json = stdout(&out);
    let object = regex::Regex::new(
        r#"\{"version":"([0-9a-f]+)","name":(null|"second"),"created":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ","owner":"anonymous","bytes":4,"session":"[0-9a-f-]{36}"\}"#,
    )
    .unwrap();
    let listed: Vec<&str> = object
        .captures_iter(&json)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    assert_eq!(listed, [first.as_str(), second.as_str()], "{json}");

    // Deleting: the named ones go, an unknown one is an error, the others stay.
    let out = forkbox_snapshots(&["delete", &first, "--data-dir", &data], |_| {});
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("deleted {first}\n"));
    assert_eq!(snapshots_on_disk(&server.data_dir), vec![second.clone()]);
    server.assert_no_snapshot(&first);
    let unknown = "0196f3c2a1b27c4e8f0123456789abcd";
    let out = forkbox_snapshots(
        &["delete", unknown, "../forks", "--data-dir", &data],
        |_| {},
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!("forkbox: no snapshot {unknown}\nforkbox: no snapshot ../forks\n")
    );
    let out = server.ssh_as(&format!("snap-{second}"), "cat f");
    assert_eq!(stdout(&out), "two\n");
    let out = forkbox_snapshots(&["delete", &second, unknown, "--data-dir", &data], |_| {});
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), format!("deleted {second}\n"));
    assert!(snapshots_on_disk(&server.data_dir).is_empty());

    // A data directory that does not exist is not made.
    let missing = server.data_dir.with_file_name("missing");
    let out = forkbox_snapshots(&["list", "--data-dir", missing.to_str().unwrap()], |_| {});
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    assert!(!missing.exists());
}

#[test]
fn snapshots_lists_and_deletes_in_an_s3_forks_bucket() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let endpoint = s3::shared().endpoint();
    let client = s3::client(&endpoint);
    let base_bucket = s3::unique_bucket("snapcli");
    let forks_bucket = format!("{base_bucket}-forks");
    rt.block_on(s3::create_bucket(&client, &base_bucket));
    let storage = [
        "--backend",
        "s3",
        "--s3-endpoint",
        &endpoint,
        "--s3-path-style",
        "--s3-region",
        s3::REGION,
        "--base-bucket",
        &base_bucket,
    ];
    let server = Server::start_configured(
        &[&storage[..], &["--snapshots", "on"]].concat(),
        s3::apply_env,
    );
    let version = take(&server, "echo kept > f");
    let prefix = format!("snapshots/{version}/");
    assert!(
        rt.block_on(s3::keys_in(&client, &forks_bucket, &prefix))
            .contains(&format!("{prefix}info"))
    );

    let out = forkbox_snapshots(&[&["list"], &storage[..]].concat(), s3::apply_env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 2, "{text}");
    let row: Vec<&str> = rows[1].split_whitespace().collect();
    assert_eq!(
        (row[0], row[3], row[4]),
        (version.as_str(), "anonymous", "5")
    );

    let out = forkbox_snapshots(
        &[&["delete", &version], &storage[..]].concat(),
        s3::apply_env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("deleted {version}\n"));
    assert!(
        rt.block_on(s3::keys_in(&client, &forks_bucket, &prefix))
            .is_empty()
    );
    server.assert_no_snapshot(&version);
    let out = forkbox_snapshots(
        &[&["delete", &version], &storage[..]].concat(),
        s3::apply_env,
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), format!("forkbox: no snapshot {version}\n"));
    let out = forkbox_snapshots(&[&["list"], &storage[..]].concat(), s3::apply_env);
    assert_eq!(stdout(&out), "VERSION  NAME  CREATED  OWNER  BYTES\n");
}

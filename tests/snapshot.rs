//! Snapshots through the real protocol: `snapshot` in one session, `snap-<version>@host`
//! and `--base-snapshot` in later ones, on a `forkbox serve` process and the OpenSSH client.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/s3.rs"]
mod s3;
#[path = "support/server.rs"]
mod support;

use std::process::Command;

use support::{Server, run_with_stdin, seed_base, stderr, stdout, tree};

/// Snapshots for every (anonymous) session, with room for all a test takes: an anonymous
/// server has none by default (tests/snapshot_quota.rs checks that).
const SNAPSHOTS_ON: [&str; 4] = ["--snapshots", "on", "--snapshot-max-count", "1000"];

/// A server over a seeded base with [`SNAPSHOTS_ON`] and `extra`.
fn snap_server(extra: &[&str]) -> Server {
    Server::start_with(&[&SNAPSHOTS_ON[..], extra].concat())
}

/// A session that changes files in every way a layer records (new files and directories,
/// changed base files, deleted base files and directories), then takes a snapshot.
const CHANGES: &str = "echo one > f.txt; mkdir -p made/deep; echo deep > made/deep/x; \
     rm shared.txt; rm -r docs/deep; echo changed > README.md; \
     ln -s f.txt link; mkdir empty; chmod 600 f.txt";

/// Takes a snapshot named `name` after `script`; its version.
fn snapshot_after(server: &Server, script: &str, name: &str) -> String {
    let out = server.ssh(&format!("{script}; snapshot --name {name}"));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let line = stdout(&out);
    let (version, shown) = line
        .trim_end()
        .split_once(' ')
        .unwrap_or_else(|| panic!("snapshot printed {line:?}"));
    assert_eq!(shown, name);
    assert!(
        !version.is_empty()
            && version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-'),
        "{version:?}"
    );
    version.to_string()
}

/// Checks that a session logged in from snapshot `version` (taken after [`CHANGES`]) sees
/// the snapshot's files, directories, symlinks, modes and deletions, and can change them.
fn check_session_from(server: &Server, version: &str) {
    let user = format!("snap-{version}");
    let out = server.ssh_as(
        &user,
        "cat f.txt made/deep/x README.md link; ls; ls docs; ls -l f.txt | cut -c1-10; \
         echo \"$USER $FORKBOX_SNAPSHOT\"",
    );
    assert_eq!(
        stdout(&out),
        format!(
            "one\ndeep\nchanged\none\n\
             README.md\ndocs\nempty\nf.txt\nlink\nmade\ntmp\n\
             guide.txt\n\
             -rw-------\n\
             user {version}\n"
        ),
        "stderr: {}",
        stderr(&out)
    );
    assert_eq!(stderr(&out), "");
    assert_eq!(out.status.code(), Some(0));

    // Deleted paths stay deleted, and the session can bring them back.
    let out = server.ssh_as(
        &user,
        "cat shared.txt; ls docs/deep; echo again > shared.txt; cat shared.txt",
    );
    assert_eq!(stdout(&out), "again\n");
    assert!(
        stderr(&out).contains("shared.txt: No such file or directory"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_session_starts_from_a_snapshot_with_its_changes_and_deletions() {
    let server = snap_server(&[]);
    let base_before = tree(&server.base);
    let version = snapshot_after(&server, CHANGES, "first");
    server.wait_no_forks();
    check_session_from(&server, &version);
    // The base never changed, and no fork is left behind.
    server.wait_no_forks();
    assert_eq!(tree(&server.base), base_before);
}

#[test]
fn snapshots_work_on_an_s3_forks_bucket() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let endpoint = s3::shared().endpoint();
    let client = s3::client(&endpoint);
    let base_bucket = s3::unique_bucket("snap");
    let forks_bucket = format!("{base_bucket}-forks");
    rt.block_on(async {
        s3::create_bucket(&client, &base_bucket).await;
        for (key, body) in [
            ("README.md", "welcome\n"),
            ("docs/guide.txt", "line one\n"),
            ("docs/deep/note.txt", "deep\n"),
            ("shared.txt", "base version\n"),
        ] {
            client
                .put_object()
                .bucket(&base_bucket)
                .key(key)
                .body(aws_sdk_s3::primitives::ByteStream::from_static(
                    body.as_bytes(),
                ))
                .send()
                .await
                .unwrap();
        }
    });
    let server = Server::start_configured(
        &[
            "--backend",
            "s3",
            "--s3-endpoint",
            &endpoint,
            "--s3-path-style",
            "--s3-region",
            s3::REGION,
            "--base-bucket",
            &base_bucket,
            "--snapshots",
            "on",
        ],
        s3::apply_env,
    );
    let version = snapshot_after(&server, CHANGES, "first");
    check_session_from(&server, &version);
    // The snapshot is plain objects in the forks bucket, its info among them.
    let keys = rt.block_on(s3::keys_in(
        &client,
        &forks_bucket,
        &format!("snapshots/{version}/"),
    ));
    for key in [
        "info",
        "root/f.txt",
        "root/made/deep/x",
        "whiteouts/shared.txt",
    ] {
        let key = format!("snapshots/{version}/{key}");
        assert!(keys.contains(&key), "{key} not in {keys:?}");
    }
}

#[test]
fn a_session_from_a_snapshot_does_not_change_it() {
    let server = snap_server(&[]);
    let version = snapshot_after(&server, CHANGES, "keep");
    let user = format!("snap-{version}");
    let out = server.ssh_as(
        &user,
        "echo mutated > f.txt; rm -r made; rm README.md; echo extra > extra.txt; cat f.txt",
    );
    assert_eq!(stdout(&out), "mutated\n", "stderr: {}", stderr(&out));
    server.wait_no_forks();
    let out = server.ssh_as(&user, "cat f.txt made/deep/x README.md; cat extra.txt");
    assert_eq!(stdout(&out), "one\ndeep\nchanged\n");
    assert!(
        stderr(&out).contains("extra.txt: No such file or directory"),
        "{}",
        stderr(&out)
    );
    // Snapshots are listed oldest first.
    let second = snapshot_after(&server, "true", "plain");
    assert_ne!(second, version);
    let out = server.ssh("snapshot --list");
    assert_eq!(out.status.code(), Some(0));
    let listed = stdout(&out);
    assert!(listed.starts_with("VERSION"), "{listed}");
    let rows: Vec<&str> = listed.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{listed}");
    assert!(rows[0].starts_with(&version) && rows[0].contains(" keep "));
    assert!(rows[1].starts_with(&second) && rows[1].contains(" plain "));
}

#[test]
fn snapshot_sessions_quota_counts_what_the_snapshot_holds() {
    let server = snap_server(&["--quota-objects", "8"]);
    let version = snapshot_after(&server, "echo a > a; echo b > b; mkdir d", "small");
    let out = server.ssh_as(
        &format!("snap-{version}"),
        "df -i / | tail -n 1 | tr -s ' ' | cut -d' ' -f3",
    );
    // a, b, d: three objects of the layer, before the session wrote anything.
    assert_eq!(stdout(&out), "3\n", "stderr: {}", stderr(&out));
}

#[test]
fn an_unknown_snapshot_is_refused_with_a_message() {
    let server = Server::start();
    for version in ["0196f3c2a1b27c4e8f0123456789abcd", "..", "a.b"] {
        server.assert_no_snapshot(version);
    }
    assert!(server.forks_on_disk().is_empty());
}

#[test]
fn base_snapshot_starts_every_session_from_it() {
    let server = snap_server(&[]);
    let version = snapshot_after(&server, CHANGES, "base");
    server.wait_no_forks();
    let (tmp, base, data) = server.stop();
    let server = Server::restart(
        tmp,
        base,
        data,
        &[&SNAPSHOTS_ON[..], &["--base-snapshot", &version]].concat(),
    );
    let out = server.ssh("cat f.txt README.md; cat shared.txt; echo $FORKBOX_SNAPSHOT");
    assert_eq!(stdout(&out), format!("one\nchanged\n{version}\n"));
    assert!(stderr(&out).contains("shared.txt: No such file or directory"));
    // A login name still picks another snapshot.
    let other = snapshot_after(&server, "echo two > f.txt", "other");
    let out = server.ssh_as(&format!("snap-{other}"), "cat f.txt");
    assert_eq!(stdout(&out), "two\n");
}

#[test]
fn serve_refuses_an_unknown_base_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    seed_base(&base);
    let out = Command::new(env!("CARGO_BIN_EXE_forkbox"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--base-snapshot",
            "nope",
        ])
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .arg("--base")
        .arg(&base)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("--base-snapshot nope: no such snapshot"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn snapshot_prints_json() {
    let server = snap_server(&[]);
    let object = regex::Regex::new(
        r#"^\{"version":"([0-9a-z-]+)","name":("[a-z]+"|null),"created":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"\}$"#,
    )
    .unwrap();
    let out = server.ssh("snapshot --json; snapshot --name named --json");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let first = object.captures(lines[0]).expect(lines[0]);
    assert_eq!(&first[2], "null");
    let second = object.captures(lines[1]).expect(lines[1]);
    assert_eq!(&second[2], "\"named\"");

    let out = server.ssh("snapshot --list --json");
    let text = stdout(&out);
    let array = text
        .trim_end()
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or_else(|| panic!("not an array: {text:?}"));
    let items: Vec<&str> = array.split("},{").collect();
    assert_eq!(items.len(), 2, "{text}");
    let versions: Vec<String> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let item = match i {
                0 => format!("{item}}}"),
                _ => format!("{{{item}"),
            };
            object.captures(&item).expect(&item)[1].to_string()
        })
        .collect();
    assert_eq!(versions, vec![first[1].to_string(), second[1].to_string()]);
}

#[test]
fn snapshot_usage_errors_are_clear() {
    let server = snap_server(&[]);
    for (script, status, message) in [
        (
            "snapshot --name 'no spaces'",
            1,
            "bash: line 1: snapshot: invalid name \"no spaces\": use 1 to 64 of A-Z a-z 0-9 . _ -\n",
        ),
        ("snapshot --name x --list", 2, "cannot be used with"),
        ("snapshot --bogus", 2, "--bogus"),
    ] {
        let out = server.ssh(script);
        assert_eq!(out.status.code(), Some(status), "{script}");
        assert!(stderr(&out).contains(message), "{script}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{script}");
    }
    let out = server.ssh("snapshot --help");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stdout(&out).contains("snap-VERSION@HOST"),
        "{}",
        stdout(&out)
    );
    // Nothing was taken by the failed calls.
    let out = server.ssh("snapshot --list");
    assert_eq!(stdout(&out), "VERSION  NAME  CREATED\n");
}

#[test]
fn nested_shells_take_snapshots_of_the_same_session() {
    let server = snap_server(&[]);
    let out = server.ssh(
        "echo nested > n.txt; sh -c 'snapshot --name nested'; \
         echo more > m.txt; echo viaxargs | xargs bash -c 'snapshot --name \"$0\"'",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let taken: Vec<(&str, &str)> = text
        .lines()
        .map(|l| l.split_once(' ').unwrap_or_else(|| panic!("{text:?}")))
        .collect();
    assert_eq!(
        taken.iter().map(|t| t.1).collect::<Vec<_>>(),
        ["nested", "viaxargs"],
        "{text}"
    );
    let check = "cat n.txt; test -e m.txt && cat m.txt; true";
    let out = server.ssh_as(&format!("snap-{}", taken[0].0), check);
    assert_eq!(stdout(&out), "nested\n", "stderr: {}", stderr(&out));
    let out = server.ssh_as(&format!("snap-{}", taken[1].0), check);
    assert_eq!(stdout(&out), "nested\nmore\n", "stderr: {}", stderr(&out));
}

#[test]
fn snapshot_is_not_available_in_exec() {
    let dir = tempfile::tempdir().unwrap();
    seed_base(dir.path());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_forkbox"));
    cmd.arg("exec")
        .arg("--base")
        .arg(dir.path())
        .args(["-c", "snapshot"]);
    let out = run_with_stdin(cmd, b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "bash: line 1: snapshot: not available here\n");
}

#[test]
fn a_session_takes_a_bounded_number_of_snapshots() {
    let server = snap_server(&[]);
    let out = server.ssh(
        "v=$(snapshot) && echo \"${#v}\"; \
         for i in $(seq 2 16); do snapshot > /dev/null || echo \"failed at $i\"; done; \
         snapshot; echo \"status $?\"",
    );
    assert_eq!(stdout(&out), "32\nstatus 1\n", "stderr: {}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "bash: line 1: snapshot: this session has already taken 16 snapshots, \
         the most one session may take\n"
    );
    // Another session has its own allowance.
    let out = server.ssh("snapshot --list | wc -l; snapshot > /dev/null && echo ok");
    assert_eq!(stdout(&out), "17\nok\n", "stderr: {}", stderr(&out));
}

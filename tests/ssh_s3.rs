//! forkbox on S3 through the real protocols: `forkbox serve --backend s3` in front of a real
//! S3-compatible server (moto), driven by the real OpenSSH client, with the buckets inspected
//! by a plain S3 client. Every test has buckets of its own on one shared moto.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/faulty.rs"]
mod faulty;
#[path = "support/s3.rs"]
mod s3;
#[path = "support/server.rs"]
mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use faulty::{FaultyProxy, Rule};
use support::{CLEANUP_WAIT, Server, stderr, stdout};

/// What the base bucket holds: plain objects, as any S3 tool would have put them (no
/// forkbox metadata).
const BASE: [(&str, &str); 4] = [
    ("README.md", "welcome\n"),
    ("docs/guide.txt", "line one\nline two\nline three\n"),
    ("docs/deep/note.txt", "deep\n"),
    ("shared.txt", "base version\n"),
];

/// Short leases and janitor passes, so crash recovery happens within a test's patience
/// (as in tests/ssh.rs).
const FAST_JANITOR: [&str; 4] = ["--lease-ttl", "3", "--janitor-interval", "1"];

/// A base bucket and its forks bucket on the shared moto, and a client to look at them.
type World = s3::Buckets;

impl World {
    fn new() -> World {
        World::with_files("ssh", &BASE)
    }

    /// A server on these buckets, reaching S3 at `endpoint` (moto, or a proxy before it).
    fn server_at(&self, endpoint: &str, extra: &[&str]) -> Server {
        let mut args = vec![
            "--backend",
            "s3",
            "--s3-endpoint",
            endpoint,
            "--s3-path-style",
            "--s3-region",
            s3::REGION,
            "--base-bucket",
            &self.base_bucket,
        ];
        args.extend_from_slice(extra);
        Server::start_configured(&args, s3::apply_env)
    }

    fn server(&self, extra: &[&str]) -> Server {
        self.server_at(&s3::shared().endpoint(), extra)
    }

    /// Session ids with a fork in the forks bucket.
    fn forks(&self) -> Vec<String> {
        self.rt
            .block_on(s3::forks_in(&self.client, &self.forks_bucket))
    }

    /// Waits until the forks bucket holds forks that `done` accepts; fails the test if it
    /// never does.
    fn wait_forks(&self, what: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
        let start = Instant::now();
        loop {
            let forks = self.forks();
            if done(&forks) {
                return forks;
            }
            assert!(start.elapsed() < CLEANUP_WAIT, "{what}: forks {forks:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_no_forks(&self) {
        self.wait_forks("forks left in the bucket", |f| f.is_empty());
    }

    /// Every key and body in a bucket.
    fn objects(&self, bucket: &str) -> Vec<(String, Vec<u8>)> {
        self.rt.block_on(async {
            let mut out = Vec::new();
            for key in s3::keys_in(&self.client, bucket, "").await {
                let obj = self
                    .client
                    .get_object()
                    .bucket(bucket)
                    .key(&key)
                    .send()
                    .await
                    .unwrap();
                let body = obj.body.collect().await.unwrap().into_bytes().to_vec();
                out.push((key, body));
            }
            out
        })
    }

    /// The user metadata of an object, `None` when it does not exist.
    fn metadata(&self, bucket: &str, key: &str) -> Option<HashMap<String, String>> {
        self.rt.block_on(async {
            match self
                .client
                .head_object()
                .bucket(bucket)
                .key(key)
                .send()
                .await
            {
                Ok(h) => Some(h.metadata().cloned().unwrap_or_default()),
                Err(_) => None,
            }
        })
    }

    /// Streams an object into a host file.
    fn download(&self, bucket: &str, key: &str, to: &std::path::Path) {
        self.rt.block_on(async {
            let obj = self
                .client
                .get_object()
                .bucket(bucket)
                .key(key)
                .send()
                .await
                .unwrap_or_else(|e| panic!("cannot get {key}: {e:?}"));
            let mut body = obj.body;
            let mut file = std::fs::File::create(to).unwrap();
            while let Some(chunk) = body.try_next().await.unwrap() {
                file.write_all(&chunk).unwrap();
            }
        })
    }

    fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        self.rt.block_on(s3::keys_in(&self.client, bucket, prefix))
    }
}

/// Starts a session running `script` (which should end in a long sleep); the caller kills
/// the returned `ssh` client.
fn long_session(server: &Server, script: &str) -> Child {
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg(script)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn kill(mut child: Child) {
    kill_ssh(&mut child);
}

#[test]
fn sessions_read_the_base_bucket_and_write_their_fork() {
    let world = World::new();
    let base_before = world.objects(&world.base_bucket);
    let server = world.server(&[]);
    let out = server.ssh(
        "cat README.md; echo new > n.txt; chmod 751 n.txt; cat n.txt; ls -l n.txt; \
         rm shared.txt; mv docs/guide.txt g.txt; wc -l < g.txt; ls",
    );
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert_eq!(lines[..2], ["welcome", "new"], "{text}");
    assert!(
        lines[2].starts_with("-rwxr-x--x ") && lines[2].ends_with(" n.txt"),
        "{text}"
    );
    assert_eq!(
        lines[3..],
        ["3", "README.md", "docs", "g.txt", "n.txt", "tmp"]
    );
    // The fork goes with the session; the base bucket never changed.
    world.wait_no_forks();
    assert_eq!(world.objects(&world.base_bucket), base_before);
    let out = server.ssh("cat shared.txt; ls docs");
    assert_eq!(stdout(&out), "base version\ndeep\nguide.txt\n");
}

#[test]
fn chmod_and_touch_reach_the_object_metadata() {
    let world = World::new();
    let server = world.server(&[]);
    let child = long_session(
        &server,
        "echo new > n.txt && chmod 751 n.txt && touch -d @1500000000 n.txt && \
         ln -s n.txt l && mkdir d && sleep 600",
    );
    let forks = world.wait_forks("a session's fork never appeared", |f| f.len() == 1);
    let root = format!("forks/{}/root/", forks[0]);
    let key = format!("{root}n.txt");
    let start = Instant::now();
    let meta = loop {
        let meta = world.metadata(&world.forks_bucket, &key);
        if meta
            .as_ref()
            .is_some_and(|m| m.get("mtime").map(String::as_str) == Some("1500000000"))
        {
            break meta.unwrap();
        }
        assert!(
            start.elapsed() < CLEANUP_WAIT,
            "n.txt never stored: {meta:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(meta["mode"], (0o100000 | 0o751).to_string());
    let start = Instant::now();
    while world
        .metadata(&world.forks_bucket, &format!("{root}d/"))
        .is_none()
    {
        assert!(start.elapsed() < CLEANUP_WAIT, "d/ never stored");
        std::thread::sleep(Duration::from_millis(100));
    }
    let link = world
        .metadata(&world.forks_bucket, &format!("{root}l"))
        .unwrap();
    assert_eq!(link["--symlink-target"], "n.txt");
    kill(child);
    world.wait_no_forks();
}

#[test]
fn forks_left_by_a_crash_are_swept_after_restart() {
    let world = World::new();
    let server = world.server(&FAST_JANITOR);
    let child = long_session(&server, "echo x > f; sleep 600");
    let forks = world.wait_forks("a session's fork never appeared", |f| f.len() == 1);
    let _dirs = server.stop(); // SIGKILL: no cleanup ran
    kill(child);
    // The fork outlives its server, with the session's file in it.
    assert_eq!(world.forks(), forks);
    assert!(
        world
            .keys(&world.forks_bucket, &format!("forks/{}/", forks[0]))
            .contains(&format!("forks/{}/lease", forks[0]))
    );
    let _server = world.server(&FAST_JANITOR);
    world.wait_no_forks();
}

#[test]
fn servers_sharing_a_bucket_never_sweep_live_forks() {
    let world = World::new();
    let tmp = tempfile::tempdir().unwrap();
    let (log_a, log_b) = (tmp.path().join("a.log"), tmp.path().join("b.log"));
    let with_log = |log: &std::path::Path| {
        let mut args = FAST_JANITOR.to_vec();
        args.extend(["--log-to-test-file", log.to_str().unwrap()]);
        world.server(&args)
    };
    let a = with_log(&log_a);
    let session_a = long_session(&a, "echo a > f; sleep 600");
    let forks_a = world.wait_forks("a's fork never appeared", |f| f.len() == 1);
    let b = with_log(&log_b);
    let session_b = long_session(&b, "echo b > f; sleep 600");
    let both = world.wait_forks("b's fork never appeared", |f| f.len() == 2);
    // Several passes of each janitor see both forks; both leases are kept fresh.
    Server::wait_log(&log_a, "examined=2 deleted=0", 3);
    Server::wait_log(&log_b, "examined=2 deleted=0", 3);
    assert_eq!(world.forks(), both);
    let mut session_a = session_a;
    let mut session_b = session_b;
    assert!(
        session_a.try_wait().unwrap().is_none(),
        "a's session was cut"
    );
    assert!(
        session_b.try_wait().unwrap().is_none(),
        "b's session was cut"
    );
    // Once a is gone for good, b's janitor takes a's fork away and keeps its own.
    let _dirs = a.stop();
    kill(session_a);
    let fork_b: Vec<String> = both.into_iter().filter(|f| *f != forks_a[0]).collect();
    world.wait_forks("a's fork was not swept", |f| f == fork_b.as_slice());
    assert!(
        session_b.try_wait().unwrap().is_none(),
        "b's session was cut"
    );
    kill(session_b);
    world.wait_no_forks();
    drop(b);
}

/// 200 MiB written and read back through the shell while the server's memory stays
/// bounded: staging spills to disk and the upload goes in parts, and reading goes through
/// read-ahead windows of at most 8 MiB, so the peak resident size grows by far less than the
/// file. The content is random; the session hashes it as it writes and again as it reads it
/// back whole, and the test checks both digests against the object in the bucket, and
/// samples read back through the shell against the same object.
#[test]
fn a_200_mib_file_goes_up_in_bounded_memory() {
    const SIZE: u64 = 200 * 1024 * 1024;
    const SAMPLE: u64 = 1024 * 1024;
    // Well under the file's size, so whole-file buffering anywhere fails. Measured growth
    // here: 49–51 MiB before the open-file/jobs wave, 50–66 MiB after it (a regression
    // still to find); the bound leaves room for that spread, not for a copy of the file.
    const HEADROOM: u64 = 96 * 1024 * 1024;
    let world = World::new();
    let server = world.server(&[]);
    // One session first, so what every session needs is loaded before the baseline.
    let out = server.ssh("echo warm > w; cat w");
    assert_eq!(stdout(&out), "warm\n", "stderr: {}", stderr(&out));
    let idle = server.proc_status_bytes("VmRSS");
    let reset = server.reset_peak_rss();
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg(format!(
        "head -c {SIZE} < /dev/urandom | tee big | sha256sum && stat -c %s big && \
         head -c {SAMPLE} big | sha256sum && tail -c {SAMPLE} big | sha256sum && \
         sha256sum < big && echo done && sleep 600"
    ));
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line == "done" {
            break;
        }
        lines.push(line);
    }
    let peak = server.proc_status_bytes("VmHWM");
    if lines.len() != 5 {
        kill_ssh(&mut child);
        let mut err = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        panic!("session output {lines:?}, stderr {err}");
    }
    // The object in the bucket is what the session wrote, whole.
    let forks = world.forks();
    let file = tempfile::NamedTempFile::new().unwrap();
    world.download(
        &world.forks_bucket,
        &format!("forks/{}/root/big", forks[0]),
        file.path(),
    );
    kill_ssh(&mut child);
    let digest = |cmd: &str| {
        format!(
            "{}  -",
            host_sha256(&format!("{cmd} < {}", file.path().display()))
        )
    };
    assert_eq!(lines[0], digest("cat"), "digest of what was written");
    assert_eq!(lines[1], SIZE.to_string());
    assert_eq!(lines[2], digest(&format!("head -c {SAMPLE}")));
    assert_eq!(lines[3], digest(&format!("tail -c {SAMPLE}")));
    assert_eq!(lines[4], digest("cat"), "digest of what was read back");
    println!(
        "idle RSS {} MiB, peak {} MiB (peak reset: {reset})",
        idle >> 20,
        peak >> 20
    );
    assert!(
        peak.saturating_sub(idle) < HEADROOM,
        "the server's resident size grew from {idle} to {peak} bytes for a {SIZE}-byte file"
    );
    world.wait_no_forks();
}

fn kill_ssh(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// SHA-256 (hex) of the output of shell command `cmd`, by the host's coreutils.
fn host_sha256(cmd: &str) -> String {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} | sha256sum"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{cmd}");
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn failed_uploads_are_errors_and_the_session_goes_on() {
    let world = World::new();
    // Uploads of keys containing FAILME fail with 500 every time (the store's retries
    // give up); DENYME ones with 403 (not retried). Everything else goes through.
    let proxy = FaultyProxy::start(
        s3::shared().port,
        &[
            Rule {
                marker: "FAILME",
                status: 500,
            },
            Rule {
                marker: "DENYME",
                status: 403,
            },
        ],
    );
    let server = world.server_at(&proxy.endpoint(), &[]);
    let script = "echo data > FAILME.txt; echo \"status $?\"; \
                  cp README.md FAILME2; echo \"status $?\"; \
                  head -c 20000000 < /dev/zero > DENYME.big; echo \"status $?\"; \
                  echo fine > ok.txt; cat ok.txt; ls; cat FAILME.txt FAILME2 DENYME.big | wc -c";
    let out = server.ssh(script);
    let (text, err) = (stdout(&out), stderr(&out));
    // Each failure is reported, and the files are left empty, as `>` left them: nothing
    // claims the data arrived.
    assert_eq!(
        text,
        "status 1\nstatus 1\nstatus 1\nfine\nDENYME.big\nFAILME.txt\nFAILME2\nREADME.md\n\
         docs\nok.txt\nshared.txt\ntmp\n0\n",
        "stderr: {err}"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    for (line, name) in lines.iter().zip(["FAILME.txt", "FAILME2", "DENYME.big"]) {
        assert!(
            line.contains(name) && line.ends_with("Input/output error"),
            "{err}"
        );
    }
    // Nothing about the store reaches the session.
    for secret in [
        world.forks_bucket.as_str(),
        "forks/",
        "InternalError",
        "AccessDenied",
        "500",
        "403",
    ] {
        assert!(!err.contains(secret), "{secret:?} in {err}");
    }
    // The faults were real: every upload of those keys was refused, the 500s retried.
    let refused = proxy.refused();
    let count = |marker: &str| refused.iter().filter(|r| r.target.contains(marker)).count();
    assert!(count("FAILME.txt") >= 2, "{refused:?}");
    assert!(count("FAILME2") >= 2, "{refused:?}");
    assert!(
        refused
            .iter()
            .any(|r| r.target.contains("DENYME.big") && r.target.contains("partNumber=")),
        "{refused:?}"
    );
    // No object of the failed files holds data, and no multipart upload is left open.
    world.wait_no_forks();
    let leftovers: Vec<String> = world
        .keys(&world.forks_bucket, "")
        .into_iter()
        .filter(|k| k.contains("FAILME") || k.contains("DENYME"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

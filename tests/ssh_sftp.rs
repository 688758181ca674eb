//! File transfer through the real clients: OpenSSH's `sftp` (batch mode) and `scp` (which
//! speaks SFTP by default) against a `forkbox serve` on a loopback port, plus asyncssh
//! (`tests/support/sftp_probe.py`) for what those cannot send on cue. Each connection is a
//! session with a fresh fork, so what must be seen across transfers and shells goes over
//! one connection: an OpenSSH ControlMaster that `sftp`, `scp` and `ssh` share.
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
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Server, run_guarded, run_with_stdin, stderr, stdout, tree};

/// Guards each client run against a hang (not a timing check).
const GUARD: Duration = Duration::from_secs(600);

/// Options every client run takes: no host key checks, no keys (the server is anonymous),
/// quiet, never prompting.
/// `port_flag` is `-P` for `sftp` and `scp`, `-p` for `ssh`.
fn client_opts(port: u16, port_flag: &str) -> Vec<String> {
    [
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "IdentityFile=/nonexistent",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "LogLevel=ERROR",
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=20",
        port_flag,
        &port.to_string(),
    ]
    .map(String::from)
    .to_vec()
}

/// One connection (a ControlMaster) that `sftp`, `scp` and `ssh` runs share, so they all
/// see one session's fork; or, without a master, a connection per run.
struct Conn {
    port: u16,
    master: Option<(Child, PathBuf)>,
    _dir: tempfile::TempDir,
}

impl Conn {
    /// A fresh connection per client run.
    fn direct(server: &Server) -> Conn {
        Conn {
            port: server.port,
            master: None,
            _dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A ControlMaster connection, up once its control socket exists.
    fn shared(server: &Server) -> Conn {
        let dir = tempfile::tempdir().unwrap();
        let ctl = dir.path().join("ctl");
        let child = Command::new("ssh")
            .args(client_opts(server.port, "-p"))
            .args(["-o", &format!("ControlPath={}", ctl.display())])
            .args(["-o", "ControlMaster=yes", "-N", "anyone@127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !ctl.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no control socket"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Conn {
            port: server.port,
            master: Some((child, ctl)),
            _dir: dir,
        }
    }

    fn opts(&self, port_flag: &str) -> Vec<String> {
        let mut v = client_opts(self.port, port_flag);
        if let Some((_, ctl)) = &self.master {
            v.extend([
                "-o".to_string(),
                format!("ControlPath={}", ctl.display()),
                "-o".to_string(),
                "ControlMaster=no".to_string(),
            ]);
        }
        v
    }

    /// `sftp -b -` with `batch` as its commands, in local directory `cwd`.
    fn sftp(&self, batch: &str, cwd: &Path) -> Output {
        self.sftp_with(&[], batch, cwd)
    }

    /// [`Conn::sftp`] with more of sftp's options.
    fn sftp_with(&self, extra: &[&str], batch: &str, cwd: &Path) -> Output {
        let mut cmd = Command::new("sftp");
        cmd.current_dir(cwd)
            .args(self.opts("-P"))
            .args(extra)
            .args(["-b", "-", "anyone@127.0.0.1"]);
        run_guarded(cmd, batch.as_bytes(), GUARD)
    }

    /// `scp` with `args` (remote paths as `host:path`), in local directory `cwd`.
    fn scp(&self, args: &[&str], cwd: &Path) -> Output {
        let mut cmd = Command::new("scp");
        cmd.current_dir(cwd).args(self.opts("-P"));
        for a in args {
            match a.strip_prefix("host:") {
                Some(p) => cmd.arg(format!("anyone@127.0.0.1:{p}")),
                None => cmd.arg(a),
            };
        }
        run_guarded(cmd, b"", GUARD)
    }

    /// `ssh host script` (through the master when there is one).
    fn ssh(&self, script: &str) -> Output {
        let mut cmd = Command::new("ssh");
        cmd.args(self.opts("-p"))
            .arg("anyone@127.0.0.1")
            .arg(script);
        run_with_stdin(cmd, b"")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some((child, _)) = &mut self.master {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `len` bytes that do not compress or repeat (xorshift), deterministic per `seed`.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Writes `len` bytes of noise to `path` in pieces (big files never sit in memory).
fn write_noise(path: &Path, len: usize, seed: u64) {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let piece = 1 << 20;
    let mut done = 0;
    let mut seed = seed;
    while done < len {
        let n = piece.min(len - done);
        f.write_all(&noise(n, seed)).unwrap();
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        done += n;
    }
    f.flush().unwrap();
}

/// SHA-256 (hex) of a local file, by the host's coreutils.
fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(out.status.success());
    stdout(&out).split_whitespace().next().unwrap().to_string()
}

fn assert_ok(out: &Output, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: stdout {}\nstderr {}",
        stdout(out),
        stderr(out)
    );
}

#[test]
fn put_and_get_round_trip_a_multi_mib_file() {
    let server = Server::start();
    let local = tempfile::tempdir().unwrap();
    write_noise(&local.path().join("big.bin"), 5 * 1024 * 1024 + 123, 7);
    let out = Conn::direct(&server).sftp(
        "put big.bin\nls -l big.bin\nget big.bin back.bin\nget README.md\n",
        local.path(),
    );
    assert_ok(&out, "sftp");
    assert!(
        stdout(&out).contains(&format!("{} ", 5 * 1024 * 1024 + 123)),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        sha256(&local.path().join("back.bin")),
        sha256(&local.path().join("big.bin"))
    );
    assert_eq!(
        std::fs::read_to_string(local.path().join("README.md")).unwrap(),
        "welcome\n"
    );
    // The session ended with the client, and its fork with it.
    server.wait_no_forks();
}

#[test]
fn pipelined_transfers_with_64_requests_in_flight_round_trip() {
    // The server answers up to 64 requests at once, replies in the order they are ready:
    // files of several sizes (not multiples of the request size) go up and down intact.
    let server = Server::start();
    let local = tempfile::tempdir().unwrap();
    let src = local.path().join("many");
    std::fs::create_dir_all(&src).unwrap();
    let sizes = [0, 1, 32 * 1024 - 1, 700 * 1024 + 5, 3 * 1024 * 1024 + 17];
    for (i, len) in sizes.iter().enumerate() {
        write_noise(&src.join(format!("f{i}.bin")), *len, 100 + i as u64);
    }
    let conn = Conn::shared(&server);
    let out = conn.sftp_with(
        &["-R", "64", "-B", "32768"],
        "put -r many up\nget -r up down\n",
        local.path(),
    );
    assert_ok(&out, "sftp -R 64");
    for i in 0..sizes.len() {
        let name = format!("f{i}.bin");
        assert_eq!(
            sha256(&local.path().join("down").join(&name)),
            sha256(&src.join(&name)),
            "{name}"
        );
    }
    let sums = conn.ssh("cd up && sha256sum f*.bin");
    let expected: String = (0..sizes.len())
        .map(|i| {
            let name = format!("f{i}.bin");
            format!("{}  {name}\n", sha256(&src.join(&name)))
        })
        .collect();
    assert_eq!(stdout(&sums), expected, "{}", stderr(&sums));
}

#[test]
fn sftp_commands_work_on_the_fork() {
    let server = Server::start();
    let local = tempfile::tempdir().unwrap();
    std::fs::write(local.path().join("small.txt"), "small\n").unwrap();
    let conn = Conn::shared(&server);
    let out = conn.sftp(
        "mkdir d\n\
         put small.txt d/a.txt\n\
         rename d/a.txt d/b.txt\n\
         chmod 600 d/b.txt\n\
         symlink b.txt d/link\n\
         ls -l d\n\
         ls -ln d/b.txt\n\
         get d/link via-link.txt\n\
         -ln d/b.txt d/hard\n\
         -get no-such-file\n\
         -rmdir d\n\
         df\n",
        local.path(),
    );
    assert_ok(&out, "sftp");
    let text = stdout(&out);
    let line_of = |name: &str| {
        text.lines()
            .find(|l| l.ends_with(name) && !l.starts_with("sftp>"))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .to_string()
    };
    assert!(line_of(" b.txt").starts_with("-rw------- "), "{text}");
    assert!(line_of(" link").starts_with("lrwxrwxrwx "), "{text}");
    assert!(line_of("d/b.txt").contains("1000"), "{text}");
    assert_eq!(
        std::fs::read_to_string(local.path().join("via-link.txt")).unwrap(),
        "small\n"
    );
    let err = stderr(&out);
    assert!(err.contains("Operation unsupported"), "hard link: {err}");
    assert!(err.contains("not found"), "missing file: {err}");
    // The shell of the same connection sees the result.
    let shell = conn.ssh("ls -l d | cut -c1-10; readlink d/link; cat d/b.txt");
    assert_eq!(
        stdout(&shell),
        "total 4\n-rw-------\nlrwxrwxrwx\nb.txt\nsmall\n",
        "{}",
        stderr(&shell)
    );
    let out = conn.sftp("rm d/link\nrm d/b.txt\nrmdir d\nls\n", local.path());
    assert_ok(&out, "sftp cleanup");
    assert_eq!(
        stdout(&conn.ssh("ls")),
        "README.md\ndocs\nshared.txt\ntmp\n"
    );
}

#[test]
fn scp_copies_trees_both_ways_on_one_connection() {
    let server = Server::start();
    let local = tempfile::tempdir().unwrap();
    let src = local.path().join("tree");
    std::fs::create_dir_all(src.join("sub/deeper")).unwrap();
    std::fs::create_dir_all(src.join("empty")).unwrap();
    std::fs::write(src.join("a.txt"), "a\n").unwrap();
    write_noise(&src.join("sub/b.bin"), 3 * 1024 * 1024, 11);
    std::fs::write(src.join("sub/deeper/c.txt"), "c\n").unwrap();
    let conn = Conn::shared(&server);
    assert_ok(
        &conn.scp(&["-r", "tree", "host:up"], local.path()),
        "scp up",
    );
    let listing = conn.ssh("find up | sort; sha256sum up/sub/b.bin");
    assert_eq!(
        stdout(&listing),
        format!(
            "up\nup/a.txt\nup/empty\nup/sub\nup/sub/b.bin\nup/sub/deeper\nup/sub/deeper/c.txt\n{}  up/sub/b.bin\n",
            sha256(&src.join("sub/b.bin"))
        ),
        "{}",
        stderr(&listing)
    );
    assert_ok(
        &conn.scp(&["-r", "host:up", "down"], local.path()),
        "scp down",
    );
    assert_eq!(tree(&local.path().join("down")), tree(&src));
    // A tree from the base comes down as the base holds it.
    assert_ok(
        &conn.scp(&["-r", "host:docs", "docs"], local.path()),
        "scp docs",
    );
    assert_eq!(
        tree(&local.path().join("docs")),
        tree(&server.base.join("docs"))
    );
}

#[test]
fn legacy_scp_is_refused_with_a_reason() {
    let server = Server::start();
    let local = tempfile::tempdir().unwrap();
    std::fs::write(local.path().join("f.txt"), "f\n").unwrap();
    let conn = Conn::direct(&server);
    for args in [
        ["-O", "f.txt", "host:f.txt"],
        ["-O", "host:README.md", "r.md"],
    ] {
        let out = conn.scp(&args, local.path());
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert!(
            stderr(&out).contains("the legacy scp protocol (scp -O) is not supported"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(!local.path().join("r.md").exists());
}

#[test]
fn files_cross_between_sftp_and_the_shell_of_one_connection() {
    let server = Server::start();
    let local = tempfile::tempdir().unwrap();
    write_noise(&local.path().join("f.bin"), 2 * 1024 * 1024, 3);
    let conn = Conn::shared(&server);
    assert_ok(&conn.sftp("put f.bin\n", local.path()), "put");
    let out = conn.ssh("sha256sum f.bin; echo from-shell > s.txt");
    assert_eq!(
        stdout(&out),
        format!("{}  f.bin\n", sha256(&local.path().join("f.bin"))),
        "{}",
        stderr(&out)
    );
    assert_ok(&conn.sftp("get s.txt\n", local.path()), "get");
    assert_eq!(
        std::fs::read_to_string(local.path().join("s.txt")).unwrap(),
        "from-shell\n"
    );
    // Another connection is another session, with a fork of its own.
    let other = Conn::direct(&server).ssh("ls f.bin s.txt");
    assert_ne!(other.status.code(), Some(0));
    assert_eq!(stdout(&other), "");
}

#[test]
fn an_upload_over_quota_fails_and_the_session_goes_on() {
    let server = Server::start_with(&["--quota-bytes", "1M"]);
    let local = tempfile::tempdir().unwrap();
    write_noise(&local.path().join("big.bin"), 3 * 1024 * 1024, 5);
    std::fs::write(local.path().join("small.txt"), "fits\n").unwrap();
    let conn = Conn::shared(&server);
    let out = conn.sftp("put big.bin\n", local.path());
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stderr(&out).contains("Failure"), "{}", stderr(&out));
    // Nothing of it stays counted, and the session goes on: sftp and the shell both work.
    let out = conn.sftp("-rm big.bin\nput small.txt\n", local.path());
    assert_ok(&out, "sftp after the failure");
    let shell = conn.ssh("cat small.txt; echo more > more.txt && cat more.txt");
    assert_eq!(stdout(&shell), "fits\nmore\n", "{}", stderr(&shell));
}

#[test]
fn escapes_reach_nothing_outside_the_fork() {
    let server = Server::start();
    let local = tempfile::tempdir().unwrap();
    let out = Conn::direct(&server).sftp(
        "-get ../../etc/passwd p1\n\
         -get /etc/passwd p2\n\
         symlink / root\n\
         symlink ../../../../etc up\n\
         -get root/etc/passwd p3\n\
         -get up/passwd p4\n\
         -get /root/../../../etc/hostname p5\n\
         ls root\n\
         cd ../../..\n\
         pwd\n",
        local.path(),
    );
    assert_ok(&out, "sftp");
    for p in ["p1", "p2", "p3", "p4", "p5"] {
        assert!(!local.path().join(p).exists(), "{p} was fetched");
    }
    let text = stdout(&out);
    assert!(text.contains("README.md"), "{text}");
    assert!(text.contains("Remote working directory: /\n"), "{text}");
}

/// scp (OpenSSH's SFTP mode) meets the same rules as sftp: paths that climb out of the
/// fork or through a symlink to `/` fetch nothing of the host, an upload past the quota
/// fails, and the session goes on.
#[test]
fn scp_escapes_and_quota_overruns_fail_and_the_session_goes_on() {
    let server = Server::start_with(&["--quota-bytes", "1M"]);
    let local = tempfile::tempdir().unwrap();
    write_noise(&local.path().join("big.bin"), 3 * 1024 * 1024, 7);
    std::fs::write(local.path().join("small.txt"), "fits\n").unwrap();
    let conn = Conn::shared(&server);
    let shell = conn.ssh("ln -s / root && ln -s ../../../../etc up && echo linked");
    assert_eq!(stdout(&shell), "linked\n", "{}", stderr(&shell));
    for (from, to) in [
        ("host:../../etc/passwd", "p1"),
        ("host:/etc/passwd", "p2"),
        ("host:root/etc/passwd", "p3"),
        ("host:up/passwd", "p4"),
        ("host:/root/../../../etc/hostname", "p5"),
    ] {
        let out = conn.scp(&[from, to], local.path());
        assert_ne!(out.status.code(), Some(0), "{from}: {}", stdout(&out));
        assert!(
            stderr(&out).contains("No such file or directory"),
            "{from}: {}",
            stderr(&out)
        );
        assert!(!local.path().join(to).exists(), "{from} was fetched");
    }
    let out = conn.scp(&["big.bin", "host:big.bin"], local.path());
    assert_ne!(out.status.code(), Some(0), "an upload past the quota");
    assert!(stderr(&out).contains("Failure"), "{}", stderr(&out));
    let out = conn.scp(&["small.txt", "host:small.txt"], local.path());
    assert_ok(&out, "scp after the failures");
    let shell = conn.ssh("rm -f big.bin; cat small.txt; echo more > more.txt && cat more.txt");
    assert_eq!(stdout(&shell), "fits\nmore\n", "{}", stderr(&shell));
}

/// Runs one scenario of `sftp_probe.py` against `server`; what it printed.
fn probe(server: &Server, name: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/sftp_probe.py");
    let mut cmd = Command::new(s3::venv_python());
    cmd.arg(script).arg(server.port.to_string()).arg(name);
    let out = run_guarded(cmd, b"", Duration::from_secs(180));
    assert_ok(&out, name);
    serde_json::from_str(stdout(&out).trim()).expect("the probe prints JSON")
}

#[test]
fn the_handle_table_is_bounded_and_shared_with_the_shell() {
    let server = Server::start();
    let v = probe(&server, "handles");
    assert_eq!(v["shell_text"], "from shell\n");
    assert_eq!(v["back"], "from sftp\n");
    // 256 handles at once; the next open fails (SSH_FX_FAILURE) with a reason.
    assert_eq!(v["refused"][0], 256, "{v}");
    assert_eq!(v["refused"][1], 4, "{v}");
    assert!(
        v["refused"][2]
            .as_str()
            .unwrap()
            .contains("Too many open files"),
        "{v}"
    );
    assert_eq!(v["after"], "from shell\n");
}

#[test]
fn bad_packets_and_unknown_requests_do_not_hurt_the_server() {
    let server = Server::start();
    let v = probe(&server, "bad_packets");
    assert_eq!(v["version"], serde_json::json!([2]));
    assert_eq!(
        v["unknown_type"],
        serde_json::json!([101, 7, 8, "Operation unsupported (request type 250)"])
    );
    assert_eq!(
        v["unknown_extension"],
        serde_json::json!([101, 8, 8, "Operation unsupported (nope@example.com)"])
    );
    assert_eq!(
        v["truncated"],
        serde_json::json!([101, 9, 5, "Bad message"])
    );
    assert_eq!(
        v["hardlink"],
        serde_json::json!([101, 10, 8, "hard links are not supported"])
    );
    assert_eq!(v["after_oversized"], 0);
    assert_eq!(v["alive"], "alive\n");
    // The server still serves new connections.
    assert_eq!(stdout(&server.ssh("echo still")), "still\n");
}

#[test]
fn reads_far_beyond_the_window_in_flight_do_not_stall() {
    let server = Server::start();
    let v = probe(&server, "prefetch");
    assert_eq!(v["got"], v["shell"], "{v}");
}

/// A file well past any buffer goes up and comes back through SFTP with the server's
/// resident size growing by far less than the file: reads and writes are ranged, and
/// the server holds one request at a time.
#[test]
fn a_large_file_streams_both_ways_in_bounded_memory() {
    const SIZE: usize = 160 * 1024 * 1024;
    // Measured growth: 13 MiB for 160 MiB up and back down.
    const HEADROOM: u64 = 48 * 1024 * 1024;
    let server = Server::start();
    let local = tempfile::tempdir().unwrap();
    std::fs::write(local.path().join("warm.txt"), "warm\n").unwrap();
    let conn = Conn::shared(&server);
    // One transfer first, so what every transfer needs is loaded before the baseline.
    assert_ok(
        &conn.sftp("put warm.txt\nget warm.txt w2\n", local.path()),
        "warm",
    );
    write_noise(&local.path().join("huge.bin"), SIZE, 13);
    let idle = server.proc_status_bytes("VmRSS");
    let reset = server.reset_peak_rss();
    let out = conn.sftp("put huge.bin\nget huge.bin back.bin\n", local.path());
    let peak = server.proc_status_bytes("VmHWM");
    assert_ok(&out, "sftp");
    let digest = sha256(&local.path().join("huge.bin"));
    assert_eq!(sha256(&local.path().join("back.bin")), digest);
    let shell = conn.ssh("sha256sum huge.bin");
    assert_eq!(stdout(&shell), format!("{digest}  huge.bin\n"));
    println!(
        "idle RSS {} MiB, peak {} MiB (peak reset: {reset})",
        idle >> 20,
        peak >> 20
    );
    assert!(
        peak.saturating_sub(idle) < HEADROOM,
        "the server's resident size grew from {idle} to {peak} bytes for a {SIZE}-byte file"
    );
}

#[test]
fn sftp_over_the_s3_store() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = s3::client(&s3::shared().endpoint());
    let base = s3::unique_bucket("sftp");
    rt.block_on(async {
        s3::create_bucket(&client, &base).await;
        s3::create_bucket(&client, &format!("{base}-forks")).await;
        client
            .put_object()
            .bucket(&base)
            .key("docs/hello.txt")
            .body(aws_sdk_s3::primitives::ByteStream::from_static(
                b"hello from s3\n",
            ))
            .send()
            .await
            .unwrap();
    });
    let endpoint = s3::shared().endpoint();
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
            &base,
        ],
        s3::apply_env,
    );
    let local = tempfile::tempdir().unwrap();
    write_noise(&local.path().join("up.bin"), 3 * 1024 * 1024 + 5, 17);
    let conn = Conn::shared(&server);
    let out = conn.sftp(
        "put up.bin\nmkdir d\nrename up.bin d/up.bin\nget d/up.bin back.bin\nget docs/hello.txt\n",
        local.path(),
    );
    assert_ok(&out, "sftp");
    assert_eq!(
        sha256(&local.path().join("back.bin")),
        sha256(&local.path().join("up.bin"))
    );
    assert_eq!(
        std::fs::read_to_string(local.path().join("hello.txt")).unwrap(),
        "hello from s3\n"
    );
    let shell = conn.ssh("ls -l d/up.bin | cut -d' ' -f5");
    assert_eq!(stdout(&shell), format!("{}\n", 3 * 1024 * 1024 + 5));
}

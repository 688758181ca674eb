//! forkbox through the real protocol: a `forkbox serve` process on a loopback port and the
//! real OpenSSH client.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/server.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use support::{Server, run_with_stdin, stderr, stdout, tree};

#[test]
fn exec_runs_a_script_in_a_fresh_fork() {
    let server = Server::start();
    let out = server.ssh("echo hi > f && cat f && ls");
    assert_eq!(
        stdout(&out),
        "hi\nREADME.md\ndocs\nf\nshared.txt\ntmp\n",
        "stderr: {}",
        stderr(&out)
    );
    assert_eq!(stderr(&out), "");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn stdout_and_stderr_stay_apart() {
    let server = Server::start();
    let out = server.ssh("echo out; echo err >&2; cat missing; echo done");
    assert_eq!(stdout(&out), "out\ndone\n");
    assert_eq!(
        stderr(&out),
        "err\ncat: missing: No such file or directory\n"
    );
}

#[test]
fn env_requests_set_locale_terminal_and_forkbox_variables_only() {
    let server = Server::start();
    let mut cmd = server.ssh_cmd("anyone");
    // One SetEnv option carries them all (ssh takes the first value of an option).
    cmd.args([
        "-o",
        "SetEnv=LC_ALL=C LANG=de_DE.UTF-8 TZ=UTC FORKBOX_TAG=agent-7 FORKBOX_SESSION=forged PATH=/evil EVIL=1",
    ]);
    cmd.arg(r#"echo "$LC_ALL $LANG $TZ $FORKBOX_TAG [$EVIL] $PATH"; [ "$FORKBOX_SESSION" != forged ] && echo own-id"#);
    let out = run_with_stdin(cmd, b"");
    assert_eq!(
        stdout(&out),
        "C de_DE.UTF-8 UTC agent-7 [] /usr/local/bin:/usr/bin:/bin\nown-id\n",
        "stderr: {}",
        stderr(&out)
    );
}

#[test]
fn exit_statuses_come_back() {
    let server = Server::start();
    for (script, status) in [
        ("true", 0),
        ("false", 1),
        ("if then fi", 2),
        ("no-such-command", 127),
        ("exit 7", 7),
        ("(exit 300)", 44),
    ] {
        let out = server.ssh(script);
        assert_eq!(
            out.status.code(),
            Some(status),
            "script {script:?}: stderr {}",
            stderr(&out)
        );
    }
    let out = server.ssh("no-such-command");
    assert_eq!(
        stderr(&out),
        "bash: line 1: no-such-command: command not found\n"
    );
    let out = server.ssh("if then fi");
    assert!(stderr(&out).contains("syntax error"), "{}", stderr(&out));
}

/// The shell is bash by name as on a host (issue 11): `ssh host 'cmd'` runs `bash -c`, so
/// `$0` is `bash` and messages say `bash: line N:`; a session with no command is the login
/// shell, `-bash`, reading its script from stdin (`ssh -T host < script`).
#[test]
fn the_shell_is_bash_by_name() {
    use std::io::Write;
    use std::process::Stdio;
    let server = Server::start();
    let out = server.ssh("echo $0\nnosuch");
    assert_eq!(stdout(&out), "bash\n");
    assert_eq!(stderr(&out), "bash: line 2: nosuch: command not found\n");
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("-T");
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"echo $0\nnosuch\nf() { nosuch; }\nf\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(stdout(&out), "-bash\n");
    assert_eq!(
        stderr(&out),
        "-bash: line 2: nosuch: command not found\nmain: line 3: nosuch: command not found\n"
    );
}

#[test]
fn stdin_streams_into_the_command() {
    let server = Server::start();
    let data = vec![b'x'; 300_000];
    let out = server.ssh_stdin("wc -c", &data);
    assert_eq!(stdout(&out).trim(), "300000");
    let out = server.ssh_stdin("sort | head -n 2", b"b\nc\na\n");
    assert_eq!(stdout(&out), "a\nb\n");
}

#[test]
fn pipelines_stop_when_the_reader_leaves() {
    let server = Server::start();
    let out = server.ssh("yes | head -n 1; seq 1 1000000 | grep -c 7");
    assert_eq!(stdout(&out), "y\n468559\n");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn concurrent_sessions_are_isolated() {
    use std::io::{BufRead, Write};
    let server = Server::start();
    // Each session writes, says so, and reads the file back only once both have written:
    // a barrier through their stdin, so the two sessions surely overlap.
    let spawn = |content: &str| {
        let mut cmd = server.ssh_cmd("anyone");
        cmd.arg(format!(
            "echo {content} > shared.txt; echo written; read go; cat shared.txt"
        ));
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut a = spawn("from-a");
    let mut b = spawn("from-b");
    let mut outs = Vec::new();
    for child in [&mut a, &mut b] {
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line, "written\n");
        outs.push(out);
    }
    for child in [&mut a, &mut b] {
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"go\n").unwrap();
    }
    for ((child, out), want) in [&mut a, &mut b]
        .into_iter()
        .zip(&mut outs)
        .zip(["from-a\n", "from-b\n"])
    {
        assert!(child.wait().unwrap().success());
        let mut rest = String::new();
        std::io::Read::read_to_string(out, &mut rest).unwrap();
        assert_eq!(rest, want, "each session sees only its own write");
    }
    let c = server.ssh("cat shared.txt");
    assert_eq!(stdout(&c), "base version\n");
}

#[test]
fn the_base_is_never_modified() {
    let server = Server::start();
    let before = tree(&server.base);
    let script = "echo changed > README.md; rm shared.txt; mv docs/guide.txt moved.txt; \
                  rm -r docs; mkdir docs; echo new > docs/new.txt; ln -s README.md link; \
                  cat README.md moved.txt docs/new.txt link; ls";
    let out = server.ssh(script);
    assert_eq!(
        stdout(&out),
        "changed\nline one\nline two\nline three\nnew\nchanged\nREADME.md\ndocs\nlink\nmoved.txt\ntmp\n",
        "stderr: {}",
        stderr(&out)
    );
    assert_eq!(tree(&server.base), before);
    // A later session sees the base as it was.
    let out = server.ssh("cat README.md; ls docs");
    assert_eq!(stdout(&out), "welcome\ndeep\nguide.txt\n");
}

#[test]
fn forks_are_deleted_after_disconnect() {
    let server = Server::start();
    let out = server.ssh("echo data > a; mkdir -p x/y; echo more > x/y/z");
    assert_eq!(out.status.code(), Some(0));
    server.wait_no_forks();
}

#[test]
fn forks_are_deleted_when_the_client_is_killed() {
    let server = Server::start();
    let mut child = server.long_session();
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    server.wait_no_forks();
}

#[test]
fn sigterm_drains_sessions_and_deletes_forks() {
    let mut server = Server::start();
    let mut child = server.long_session();
    server.signal("TERM");
    let status = server.wait_exit();
    assert!(status.success(), "server exit: {status:?}");
    assert!(
        server.forks_on_disk().is_empty(),
        "left: {:?}",
        server.forks_on_disk()
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// Short leases and janitor passes, so crash recovery happens within a test's patience.
/// The lease is renewed every second; three seconds leave room for a loaded machine.
const FAST_JANITOR: [&str; 4] = ["--lease-ttl", "3", "--janitor-interval", "1"];

#[test]
fn forks_left_by_a_crash_are_swept_after_restart() {
    let server = Server::start_with(&FAST_JANITOR);
    let mut child = server.long_session();
    let (tmp, base, data) = server.stop(); // SIGKILL: no cleanup ran
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(std::fs::read_dir(data.join("forks")).unwrap().count(), 1);
    let server = Server::restart(tmp, base, data, &FAST_JANITOR);
    server.wait_no_forks();
}

#[test]
fn servers_sharing_a_store_never_sweep_live_forks() {
    let a = Server::start_with(&FAST_JANITOR);
    let mut child = a.long_session();
    let log = a.data_dir.parent().unwrap().join("b.log");
    let b = Server::alongside(&a, &FAST_JANITOR, &log);
    // Several of b's janitor passes see a's fork; its lease is kept fresh, so it stays.
    Server::wait_log(&log, "examined=1 deleted=0", 3);
    assert_eq!(a.forks_on_disk().len(), 1);
    assert!(
        child.try_wait().unwrap().is_none(),
        "a's session was cut off"
    );
    // Once a is gone for good, b's janitor takes the fork away (the shared directory
    // itself lives on with `_dirs`).
    let _dirs = a.stop();
    b.wait_no_forks();
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn appending_to_a_large_file_keeps_all_of_it() {
    let server = Server::start();
    let out = server.ssh("head -c 5000000 < /dev/zero > f; echo b >> f; wc -c < f");
    assert_eq!(stdout(&out), "5000002\n", "{}", stderr(&out));
}

#[test]
fn memory_bombs_are_refused_and_the_session_goes_on() {
    let server = Server::start();
    let out = server.ssh("x=a; for i in $(seq 30); do x=$x$x; done; echo ${#x}; echo still here");
    assert_eq!(stdout(&out), "67108864\nstill here\n");
    assert!(
        stderr(&out).contains("x: value larger than 67108864 bytes"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn escapes_never_reach_the_host() {
    let server = Server::start();
    let out = server.ssh("cat ../../../etc/passwd");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "cat: ../../../etc/passwd: No such file or directory\n"
    );
    let out = server.ssh("cd /..; pwd; ls");
    assert_eq!(stdout(&out), "/\nREADME.md\ndocs\nshared.txt\ntmp\n");
    let out = server.ssh("ln -s /etc/passwd p; cat p");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "cat: p: No such file or directory\n");
    let out = server.ssh("cat /etc/passwd /etc/hostname; ls /etc; ls /root");
    assert_ne!(out.status.code(), Some(0));
    assert!(!stdout(&out).contains("root:"), "{}", stdout(&out));
    let out = server.ssh("cd docs/../../..; pwd; cat ../../README.md");
    assert_eq!(stdout(&out), "/\nwelcome\n");
}

#[test]
fn host_symlinks_in_the_base_are_not_followed() {
    let server = Server::start();
    std::os::unix::fs::symlink("/etc/passwd", server.base.join("hostlink")).unwrap();
    let out = server.ssh("cat hostlink");
    assert_eq!(out.status.code(), Some(1));
    assert!(!stdout(&out).contains("root:"));
}

#[test]
fn session_id_is_a_fresh_uuidv7() {
    let server = Server::start();
    let a = stdout(&server.ssh("echo $FORKBOX_SESSION"));
    let b = stdout(&server.ssh("echo $FORKBOX_SESSION"));
    let a = a.trim();
    assert_eq!(a.len(), 36, "{a:?}");
    assert_eq!(&a[14..15], "7", "not a v7 uuid: {a}");
    assert_ne!(a, b.trim());
}

#[test]
fn shell_without_pty_runs_a_piped_script_cleanly() {
    let server = Server::start();
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("-T");
    let script = b"x=1\nwhile [ $x -le 3 ]; do\n  echo line $x\n  x=$((x+1))\ndone\ncd docs\npwd\nexit 4\necho never\n";
    let out = run_with_stdin(cmd, script);
    assert_eq!(stdout(&out), "line 1\nline 2\nline 3\n/docs\n");
    assert_eq!(out.status.code(), Some(4));
}

#[test]
fn interactive_pty_session_keeps_state_between_lines() {
    let server = Server::start();
    let mut cmd = server.ssh_cmd("alice");
    cmd.arg("-tt");
    let input = b"cd docs\nX=$((6*7))\necho \"in $PWD x=$X\"\nexit 3\n";
    let out = run_with_stdin(cmd, input);
    let text = stdout(&out);
    assert!(text.contains("Welcome to forkbox"), "{text}");
    assert!(text.contains("in /docs x=42\r\n"), "{text}");
    assert!(text.contains("alice@forkbox"), "{text}");
    assert_eq!(out.status.code(), Some(3), "{text}");
}

#[test]
fn typed_lines_go_to_the_command_that_reads_them() {
    let server = Server::start();
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("-tt");
    let out = run_with_stdin(
        cmd,
        b"read name\nworld\necho \"hello $name\"\nhead -n 1\nfirst\necho after\nexit\n",
    );
    let text = stdout(&out);
    assert!(text.contains("hello world\r\n"), "{text}");
    // `head` got the typed line (echoed as it read it), not the shell.
    assert!(text.contains("first\r\nfirst\r\n"), "{text}");
    assert!(!text.contains("command not found"), "{text}");
    assert!(text.contains("after\r\n"), "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
}

#[test]
fn motd_is_never_mixed_into_exec_output() {
    let server = Server::start();
    let out = server.ssh("echo only-this");
    assert_eq!(stdout(&out), "only-this\n");
}

#[test]
fn port_forwarding_is_refused() {
    let server = Server::start();
    let mut cmd = server.ssh_cmd("anyone");
    cmd.args([
        "-o",
        "ExitOnForwardFailure=yes",
        "-R",
        "0:127.0.0.1:9",
        "echo",
        "forwarded",
    ]);
    let out = run_with_stdin(cmd, b"");
    assert_ne!(out.status.code(), Some(0));
    assert!(!stdout(&out).contains("forwarded"));
}

#[test]
fn host_key_survives_a_restart() {
    let server = Server::start();
    let known = server.data_dir.parent().unwrap().join("known_hosts");
    let login = |server: &Server| {
        let mut cmd = server.ssh_raw();
        cmd.args(["-o", "StrictHostKeyChecking=accept-new"])
            .args(["-o", "HostKeyAlias=forkbox-test"])
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", known.display()))
            .args([
                "-o",
                "IdentityFile=/nonexistent",
                "anyone@127.0.0.1",
                "echo ok",
            ]);
        run_with_stdin(cmd, b"")
    };
    assert_eq!(stdout(&login(&server)), "ok\n");
    let (tmp, base, data) = server.stop();
    let server = Server::restart(tmp, base, data, &[]);
    let out = login(&server);
    assert_eq!(stdout(&out), "ok\n", "{}", stderr(&out));
}

#[test]
fn key_auth_admits_listed_keys_only() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("id");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(st.success());
    let pubkey = dir.path().join("id.pub");
    let server = Server::start_with(&[
        "--auth",
        "keys",
        "--authorized-keys",
        pubkey.to_str().unwrap(),
    ]);
    let with_key = |identity: &str| {
        let mut cmd = server.ssh_raw();
        cmd.args(["-o", "StrictHostKeyChecking=no"])
            .args(["-o", "UserKnownHostsFile=/dev/null"])
            .args(["-o", "PasswordAuthentication=no"])
            .args(["-i", identity, "bob@127.0.0.1", "echo $USER"]);
        run_with_stdin(cmd, b"")
    };
    let ok = with_key(key.to_str().unwrap());
    assert_eq!(stdout(&ok), "bob\n", "{}", stderr(&ok));
    let denied = with_key("/nonexistent");
    assert_eq!(denied.status.code(), Some(255));
    assert!(
        stderr(&denied).contains("Permission denied"),
        "{}",
        stderr(&denied)
    );
}

/// An anonymous server lets in any key, as it lets in `none` and any password.
#[test]
fn anonymous_mode_lets_in_any_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("id");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(st.success());
    let server = Server::start();
    let mut cmd = server.ssh_raw();
    cmd.args(["-o", "StrictHostKeyChecking=no"])
        .args(["-o", "UserKnownHostsFile=/dev/null"])
        .args(["-o", "PreferredAuthentications=publickey"])
        .arg("-i")
        .arg(&key)
        .args(["carol@127.0.0.1", "echo $USER"]);
    let out = run_with_stdin(cmd, b"");
    assert_eq!(stdout(&out), "carol\n", "{}", stderr(&out));
}

/// The demo mode takes a password too (whatever it is), typed through OpenSSH's askpass.
#[test]
fn anonymous_mode_lets_in_any_password() {
    let dir = tempfile::tempdir().unwrap();
    let askpass = dir.path().join("askpass");
    std::fs::write(&askpass, "#!/bin/sh\necho any-password\n").unwrap();
    std::fs::set_permissions(
        &askpass,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let server = Server::start();
    // Not `ssh_raw`: its BatchMode=yes would forbid asking for a password.
    let mut cmd = Command::new("ssh");
    cmd.args(["-p", &server.port.to_string()])
        .args(["-o", "LogLevel=ERROR", "-o", "ConnectTimeout=20"])
        .args(["-o", "StrictHostKeyChecking=no"])
        .args(["-o", "UserKnownHostsFile=/dev/null"])
        .args(["-o", "PreferredAuthentications=password"])
        .args(["-o", "NumberOfPasswordPrompts=1"])
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .args(["dave@127.0.0.1", "echo $USER"]);
    let out = run_with_stdin(cmd, b"");
    assert_eq!(stdout(&out), "dave\n", "{}", stderr(&out));
}

/// What an interactive login shows first: the session's id, that its files go at logout,
/// how to keep them where snapshots are on, and things to try.
#[test]
fn the_motd_names_the_session_and_how_to_keep_work() {
    let server = Server::start_with(&["--snapshots", "on"]);
    let mut cmd = server.ssh_cmd("erin");
    cmd.arg("-tt");
    let out = run_with_stdin(cmd, b"echo id=$FORKBOX_SESSION\nexit\n");
    let text = stdout(&out);
    // The output line (after the terminal's mode sequences), not the echoed command.
    let id = text
        .lines()
        .filter(|l| !l.contains("echo"))
        .find_map(|l| l.trim_end_matches('\r').split("id=").nth(1))
        .unwrap_or_default();
    assert_eq!(id.len(), 36, "{text}");
    assert!(
        text.contains(&format!(
            "This session ({id}) has its own copy-on-write filesystem; it is deleted when you log out."
        )),
        "{text}"
    );
    assert!(text.contains("run 'snapshot'"), "{text}");
    assert!(text.contains("Try: ls -l;"), "{text}");
    // Without snapshots, no word of them.
    let plain = Server::start();
    let mut cmd = plain.ssh_cmd("erin");
    cmd.arg("-tt");
    let text = stdout(&run_with_stdin(cmd, b"exit\n"));
    assert!(text.contains("Try: ls -l;"), "{text}");
    assert!(!text.contains("snapshot"), "{text}");
}

/// `--auth keys` looks at the authorized_keys file at every login: a key added is let
/// in and one removed refused without a restart; a version that cannot be used keeps the
/// last good keys.
#[test]
fn authorized_keys_changes_apply_at_the_next_login() {
    let dir = tempfile::tempdir().unwrap();
    let keygen = |name: &str| {
        let key = dir.path().join(name);
        let st = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&key)
            .status()
            .unwrap();
        assert!(st.success());
        let public = std::fs::read_to_string(dir.path().join(format!("{name}.pub"))).unwrap();
        (key.to_str().unwrap().to_string(), public)
    };
    let (alice, alice_pub) = keygen("alice");
    let (bob, bob_pub) = keygen("bob");
    let authorized = dir.path().join("authorized_keys");
    std::fs::write(&authorized, &alice_pub).unwrap();
    let server = Server::start_with(&[
        "--auth",
        "keys",
        "--authorized-keys",
        authorized.to_str().unwrap(),
    ]);
    let logs_in = |identity: &str| {
        let mut cmd = server.ssh_raw();
        cmd.args(["-o", "StrictHostKeyChecking=no"])
            .args(["-o", "UserKnownHostsFile=/dev/null"])
            .args(["-o", "PasswordAuthentication=no"])
            .args(["-i", identity, "u@127.0.0.1", "echo in"]);
        let out = run_with_stdin(cmd, b"");
        match out.status.code() {
            Some(0) => {
                assert_eq!(stdout(&out), "in\n");
                true
            }
            _ => {
                assert!(
                    stderr(&out).contains("Permission denied"),
                    "{}",
                    stderr(&out)
                );
                false
            }
        }
    };
    assert!(logs_in(&alice));
    assert!(!logs_in(&bob));

    // Bob added (the file replaced, as editors and config tools do).
    let next = dir.path().join("authorized_keys.new");
    std::fs::write(&next, format!("{alice_pub}# bob, added\n{bob_pub}")).unwrap();
    std::fs::rename(&next, &authorized).unwrap();
    assert!(logs_in(&bob));
    assert!(logs_in(&alice));

    // Alice removed (the file rewritten in place).
    std::fs::write(&authorized, &bob_pub).unwrap();
    assert!(!logs_in(&alice));
    assert!(logs_in(&bob));

    // A broken version, then none at all: the last good keys (bob's) stay.
    std::fs::write(
        &authorized,
        format!("{alice_pub}ssh-ed25519 %%%not-a-key\n"),
    )
    .unwrap();
    assert!(logs_in(&bob));
    assert!(!logs_in(&alice));
    std::fs::remove_file(&authorized).unwrap();
    assert!(logs_in(&bob));
    assert!(!logs_in(&alice));
}

fn serve_error(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_forkbox"))
        .arg("serve")
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "expected failure for {args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn startup_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let data = data.to_str().unwrap();
    let err = Command::new(env!("CARGO_BIN_EXE_forkbox"))
        .args(["serve", "--listen", "nowhere:x"])
        .output()
        .unwrap();
    assert_eq!(err.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&err.stderr).contains("is not an address"));
    let err = serve_error(&[
        "--data-dir",
        data,
        "--base",
        "/no/such/base",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(
        err.contains("base directory /no/such/base is not readable"),
        "{err}"
    );
    let bad_key = dir.path().join("bad_key");
    std::fs::write(&bad_key, "not a key").unwrap();
    let err = serve_error(&[
        "--data-dir",
        data,
        "--host-key",
        bad_key.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(err.contains("cannot read host key"), "{err}");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let err = serve_error(&["--data-dir", data, "--listen", &addr]);
    assert!(err.contains("cannot listen on"), "{err}");
    let err = serve_error(&[
        "--data-dir",
        data,
        "--auth",
        "keys",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(err.contains("--authorized-keys"), "{err}");
}

/// Bytes of the regular files under `dir` on the host.
fn bytes_under(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let md = e.metadata().unwrap();
        total += if md.is_dir() {
            bytes_under(&e.path())
        } else {
            md.len()
        };
    }
    total
}

#[test]
fn quotas_stop_runaway_writes_and_df_shows_them() {
    use std::io::{BufRead, BufReader, Read, Write};
    let server = Server::start_with(&["--quota-bytes", "1M", "--quota-objects", "50"]);
    // The script pauses after the runaway write until the test has looked at the disk.
    let mut ssh = server.ssh_cmd("anyone");
    ssh.arg(
        "head -c 2000000 < /dev/zero > big; echo \"status $?\"; read go; \
         wc -c < big; df; df -i; rm big; echo small > s && cat s; \
         df -B1 --output=used,avail,pcent",
    );
    let mut child = ssh
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert_eq!(first, "status 1\n");
    // Nothing over the quota was ever stored: the session's layer holds no more than 1 MiB
    // (the failed file is given up), and neither does all of forks/.
    let forks = server.data_dir.join("forks");
    assert!(bytes_under(&forks) <= 1 << 20, "{}", bytes_under(&forks));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    drop(stdin);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(err, "bash: line 1: big: No space left on device\n");
    assert_eq!(
        rest,
        "0\n\
         Filesystem     1K-blocks  Used Available Use% Mounted on\n\
         forkbox             1024     0      1024   0% /\n\
         Filesystem     Inodes IUsed IFree IUse% Mounted on\n\
         forkbox            50     1    49    2% /\n\
         small\n\
         \u{20}Used   Avail Use%\n\
         \u{20}   6 1048570   1%\n"
    );
    assert_eq!(status.code(), Some(0));
}

/// A new file in a directory that only the base has so far (the session layer has no
/// such directory on disk yet), and a base file deleted then written again.
#[test]
fn new_files_in_base_directories() {
    let server = Server::start();
    let out = server.ssh(
        "echo new > docs/new.txt && cat docs/new.txt && rm docs/deep/note.txt && \
         echo again > docs/deep/note.txt && cat docs/deep/note.txt",
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "new\nagain\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success());
}

#[test]
fn ctrl_c_on_a_terminal_interrupts_the_foreground_command() {
    use std::io::Write;
    let server = Server::start();
    let tty = server.tty("anyone");
    let wait_for = |needle: &str| {
        tty.wait_for(needle, 0, Duration::from_secs(60));
    };
    let mut stdin = &tty.stdin;
    // Ctrl-C (0x03) once the command runs: a sleep and a tight shell loop both stop with
    // 130 and the prompt comes back.
    stdin.write_all(b"echo go-sleep; sleep 100\n").unwrap();
    wait_for("go-sleep\r\n");
    stdin.write_all(b"\x03").unwrap();
    stdin.write_all(b"echo sleep=$?\n").unwrap();
    wait_for("sleep=130\r\n");
    stdin
        .write_all(b"echo go-loop; while :; do :; done\n")
        .unwrap();
    wait_for("go-loop\r\n");
    stdin.write_all(b"\x03").unwrap();
    stdin.write_all(b"echo loop=$?\nexit\n").unwrap();
    wait_for("loop=130\r\n");
    let (status, text) = tty.finish();
    assert_eq!(status.code(), Some(0), "{text}");
}

/// An OpenSSH ControlMaster connection to `server`, up once its control socket exists;
/// [`Master::client`] runs `ssh` through it. The master and its socket go with it.
struct Master {
    child: std::process::Child,
    ctl: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Master {
    fn start(server: &Server) -> Master {
        let dir = tempfile::tempdir().unwrap();
        let ctl = dir.path().join("ctl");
        let child = server
            .ssh_cmd("anyone")
            .args(["-o", &format!("ControlPath={}", ctl.display())])
            .args(["-o", "ControlMaster=yes", "-N"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while !ctl.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no control socket"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Master {
            child,
            ctl,
            _dir: dir,
        }
    }

    /// `ssh` through the master (never a connection of its own) running `script`.
    fn client(&self, server: &Server, script: &str) -> Command {
        let mut c = server.ssh_cmd("anyone");
        c.args(["-o", &format!("ControlPath={}", self.ctl.display())])
            .args(["-o", "ControlMaster=no"])
            .arg(script);
        c
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Issue 14 (ControlMaster multiplexing): while one channel of the connection is busy —
/// its command writes without end and never reads its stdin (which stays open) — a second
/// `ssh` through the same master starts at once and finishes, whether the busy channel's
/// output is read or left unread (its window closed).
#[test]
fn a_channel_opened_beside_a_busy_one_starts_at_once() {
    let server = Server::start();
    for read_output in [true, false] {
        let master = Master::start(&server);
        let mut busy = master
            .client(&server, "yes forkbox-busy-channel")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = busy.stdout.take().unwrap();
        let mut first = [0u8; 9];
        std::io::Read::read_exact(&mut out, &mut first).unwrap();
        assert_eq!(&first, b"forkbox-b");
        let reader = std::thread::spawn(move || {
            if read_output {
                let _ = std::io::copy(&mut out, &mut std::io::sink());
            } else {
                // Left unread until the busy client ends.
                std::thread::park_timeout(Duration::from_secs(120));
            }
        });
        // Long enough for the busy channel's window to close when its output is unread.
        std::thread::sleep(Duration::from_secs(2));
        let start = std::time::Instant::now();
        let second = support::run_guarded(
            master.client(&server, "echo second"),
            b"",
            Duration::from_secs(60),
        );
        let took = start.elapsed();
        assert_eq!(
            (stdout(&second).as_str(), second.status.code()),
            ("second\n", Some(0)),
            "output read: {read_output}: {}",
            stderr(&second)
        );
        assert!(
            took < Duration::from_secs(20),
            "output read: {read_output}: the second channel took {took:?}"
        );
        let _ = busy.kill();
        let _ = busy.wait();
        reader.thread().unpark();
        let _ = reader.join();
    }
}

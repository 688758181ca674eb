//! Regressions of issue 9, "one anonymous user must not be able to take forkbox down",
//! through the real protocol: a `forkbox serve` process, raw TCP connections that never
//! speak, and the real OpenSSH client.
//!
//! Durations below are hang guards only: a test fails if something has not happened by
//! then, never because it happened fast or slow.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/server.rs"]
mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use support::{
    CLEANUP_WAIT, Fate, Server, fate, run_guarded, stderr, stdout, still_served, wait_closed,
};

/// Hang guard for one `ssh` run.
const SSH_GUARD: Duration = Duration::from_secs(30);

/// The script line limit of `forkbox` (`shell::MAX_LINE`).
const MAX_LINE: usize = 1024 * 1024;

/// The limit on an unfinished command (`shell::MAX_SCRIPT`).
const MAX_SCRIPT: usize = 16 * 1024 * 1024;

/// The typed line limit on a terminal (`terminal::MAX_LINE`).
const MAX_TYPED_LINE: usize = 64 * 1024;

/// The end of a long output, for failure messages (a short one whole).
fn tail(s: &str) -> String {
    let mut start = s.len().saturating_sub(300);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    let cut = if start > 0 { "…" } else { "" };
    format!("{cut}{}", &s[start..])
}

fn ssh_echo_hi(server: &Server) {
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("echo hi");
    let out = run_guarded(cmd, b"", SSH_GUARD);
    assert_eq!(stdout(&out), "hi\n", "stderr: {}", stderr(&out));
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn issue9_idle_connections_from_one_address_never_keep_others_out() {
    // The server's own admission defaults (the harness only lengthens the login deadline).
    let server = Server::start();
    let mut idle = server.connect_from("127.0.0.2", 300);
    ssh_echo_hi(&server);
    // With the defaults, one address holds at most 8 of them; the rest were closed at once.
    let greeted = idle
        .iter_mut()
        .map(fate)
        .filter(|f| *f == Fate::Greeted)
        .count();
    assert!((1..=8).contains(&greeted), "{greeted} greeted");
}

#[test]
fn issue9_idle_connections_from_many_addresses_never_keep_others_out() {
    let server = Server::start();
    // 38 addresses with 8 idle connections each: more than the 64 the server lets wait.
    let idle: Vec<_> = (2..40)
        .flat_map(|i| server.connect_from(&format!("127.0.0.{i}"), 8))
        .collect();
    ssh_echo_hi(&server);
    ssh_echo_hi(&server);
    drop(idle);
}

#[test]
fn issue9_connections_that_do_not_log_in_in_time_are_closed() {
    let server = Server::start_with(&["--auth-timeout", "2"]);
    // Never a word from the client.
    let mut silent = server.connect_from("127.0.0.2", 3);
    // An identification line, then nothing: the SSH transport is up, key exchange stalls.
    let mut stalled = server.connect_from("127.0.0.3", 1);
    for s in silent.iter_mut().chain(stalled.iter_mut()) {
        assert_eq!(fate(s), Fate::Greeted);
    }
    use std::io::Write;
    stalled[0].write_all(b"SSH-2.0-stall\r\n").unwrap();
    for s in silent.iter_mut().chain(stalled.iter_mut()) {
        wait_closed(s);
    }
    // A session is past the deadline's reach once it logged in. (On a loaded machine the
    // login itself may take longer than the deadline: that attempt is closed and retried.)
    for attempt in 1.. {
        let mut cmd = server.ssh_cmd("anyone");
        cmd.arg("sleep 3; echo still here");
        let out = run_guarded(cmd, b"", SSH_GUARD);
        if stderr(&out).contains("forkbox: authentication timed out") && attempt < 5 {
            continue;
        }
        assert_eq!(stdout(&out), "still here\n", "stderr: {}", stderr(&out));
        break;
    }
}

#[test]
fn issue9_pending_connections_are_bounded_per_address_and_in_total() {
    let server = Server::start_with(&[
        "--auth-timeout",
        "600",
        "--max-unauthenticated",
        "4",
        "--max-unauthenticated-per-ip",
        "2",
    ]);
    // One address: two taken, the rest closed at once.
    let mut a = server.connect_from("127.0.0.2", 5);
    let fates: Vec<_> = a.iter_mut().map(fate).collect();
    assert_eq!(
        fates,
        [
            Fate::Greeted,
            Fate::Greeted,
            Fate::Closed,
            Fate::Closed,
            Fate::Closed
        ]
    );
    let mut b = server.connect_from("127.0.0.3", 2);
    assert!(b.iter_mut().all(|s| fate(s) == Fate::Greeted));
    // The table is full (4). A newcomer from a third address takes the place of the
    // oldest of the busiest (2 each: 127.0.0.2's first); the next one that of
    // 127.0.0.3's first; a third one would make its own address the busiest: closed.
    let mut c = server.connect_from("127.0.0.4", 1);
    assert_eq!(fate(&mut c[0]), Fate::Greeted);
    wait_closed(&mut a[0]);
    let mut c2 = server.connect_from("127.0.0.4", 1);
    assert_eq!(fate(&mut c2[0]), Fate::Greeted);
    wait_closed(&mut b[0]);
    let mut c3 = server.connect_from("127.0.0.4", 1);
    assert_eq!(fate(&mut c3[0]), Fate::Closed);
    // The four in the table are still served.
    for s in [&mut a[1], &mut b[1], &mut c[0], &mut c2[0]] {
        assert!(still_served(s));
    }
    // A real client from a fresh address still gets in, and logging in frees its place.
    ssh_echo_hi(&server);
    ssh_echo_hi(&server);
}

#[test]
fn issue9_sessions_are_counted_from_login_and_refused_clearly() {
    let server = Server::start_with(&["--max-sessions", "1"]);
    let _idle = server.connect_from("127.0.0.2", 5);
    let mut long = server.long_session();
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("echo in");
    let out = run_guarded(cmd, b"", SSH_GUARD);
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("forkbox: too many sessions; try again later"),
        "{}",
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(255));
    assert_eq!(server.forks_on_disk().len(), 1, "a fork was made");
    let _ = long.kill();
    let _ = long.wait();
    server.wait_no_forks();
    // The slot comes back once the session is gone.
    let start = Instant::now();
    loop {
        let mut cmd = server.ssh_cmd("anyone");
        cmd.arg("echo in");
        let out = run_guarded(cmd, b"", SSH_GUARD);
        if out.status.code() == Some(0) {
            assert_eq!(stdout(&out), "in\n");
            break;
        }
        assert!(start.elapsed() < CLEANUP_WAIT, "{}", stderr(&out));
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn issue9_an_overlong_script_line_is_refused_whole() {
    let server = Server::start();
    let mut script = b"echo start\n".to_vec();
    // Cut at MAX_LINE bytes, the rest of this line would read `touch PWNED; echo PWNED`.
    let mut line = b"echo ".to_vec();
    line.resize(MAX_LINE, b'A');
    line.extend_from_slice(b"touch PWNED; echo PWNED\n");
    script.extend_from_slice(&line);
    script.extend_from_slice(b"ls; echo after\n");
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("-T");
    let out = run_guarded(cmd, &script, SSH_GUARD);
    assert!(
        !stdout(&out).contains("PWNED"),
        "the rest of the long line ran as a command: {}",
        tail(&stdout(&out))
    );
    assert!(stdout(&out) == "start\n", "{}", tail(&stdout(&out)));
    assert_eq!(
        tail(&stderr(&out)),
        format!("-bash: line longer than {MAX_LINE} bytes\n")
    );
    assert_eq!(out.status.code(), Some(2));

    // A line of exactly the limit is read whole.
    let mut line = b"x=".to_vec();
    line.resize(MAX_LINE, b'A');
    line.extend_from_slice(b"\necho ${#x}\n");
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("-T");
    let out = run_guarded(cmd, &line, SSH_GUARD);
    assert_eq!(
        stdout(&out),
        format!("{}\n", MAX_LINE - 2),
        "{}",
        tail(&stderr(&out))
    );
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn issue9_an_endless_unfinished_command_is_refused() {
    let server = Server::start();
    // An `if` that never closes: lines within the limit, more than 16 MiB of them.
    let mut script = b"echo start\nif true; then\n".to_vec();
    let mut comment = b"# ".to_vec();
    comment.resize(MAX_LINE - 1, b'A');
    comment.push(b'\n');
    for _ in 0..(MAX_SCRIPT / MAX_LINE + 1) {
        script.extend_from_slice(&comment);
    }
    script.extend_from_slice(b"fi\necho after\n");
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("-T");
    let out = run_guarded(cmd, &script, SSH_GUARD);
    assert!(stdout(&out) == "start\n", "{}", tail(&stdout(&out)));
    assert_eq!(
        tail(&stderr(&out)),
        format!("-bash: unfinished command longer than {MAX_SCRIPT} bytes\n")
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn issue9_an_overlong_typed_line_is_refused_and_the_prompt_comes_back() {
    let server = Server::start();
    let mut input = b"echo ".to_vec();
    input.resize(MAX_TYPED_LINE, b'A');
    input.extend_from_slice(b"; echo PWNED\necho after $?\nexit\n");
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("-tt");
    let out = run_guarded(cmd, &input, SSH_GUARD);
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "-bash: line longer than {MAX_TYPED_LINE} bytes\r\n"
        )),
        "{}",
        tail(&text)
    );
    assert!(!text.contains("PWNED"), "{}", tail(&text));
    assert!(text.contains("after 2\r\n"), "{}", tail(&text));
    assert_eq!(out.status.code(), Some(0));
}

/// Starts `ssh` (with `args` before the destination's command, if any) with `input` on its
/// stdin, and waits until a line of its stdout ends with `spinning`; the caller kills it.
fn start_spinning(server: &Server, args: &[&str], input: &[u8]) -> std::process::Child {
    use std::io::{BufRead, Write};
    let mut cmd = server.ssh_cmd("anyone");
    cmd.args(args);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    // The stdin pipe stays open (it is moved into the reader): no end-of-input arrives.
    let stdout = child.stdout.take().unwrap();
    let (seen, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _stdin = stdin;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            // On a terminal the output may follow the prompt on its line.
            if line.trim_end().ends_with("spinning") {
                let _ = seen.send(());
            }
        }
    });
    wait.recv_timeout(CLEANUP_WAIT)
        .expect("the session never started its loop");
    child
}

#[test]
fn issue9_sigterm_stops_spinning_sessions_and_deletes_their_forks() {
    let mut server = Server::start();
    let mut exec = start_spinning(&server, &["echo spinning; while :; do :; done"], b"");
    let mut pty = start_spinning(&server, &["-tt"], b"echo spinning; while :; do :; done\n");
    assert_eq!(server.forks_on_disk().len(), 2);
    server.signal("TERM");
    let status = server.wait_exit();
    assert!(status.success(), "server exit: {status:?}");
    assert!(
        server.forks_on_disk().is_empty(),
        "left: {:?}",
        server.forks_on_disk()
    );
    for child in [&mut exec, &mut pty] {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// One connection may hold at most `forkbox::session::MAX_CHANNELS` session channels: an
/// OpenSSH ControlMaster connection gets that many shells, the next one is refused, and a
/// channel can open again once one closes.
#[test]
fn channels_per_connection_are_bounded() {
    use std::io::BufRead;
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let ctl = dir.path().join("ctl");
    let ctl_opt = format!("ControlPath={}", ctl.display());
    let client = |extra: &[&str]| {
        let mut c = server.ssh_raw();
        c.args([
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
        ])
        .args(["-o", "IdentityFile=/nonexistent", "-o", &ctl_opt])
        .args(extra)
        .arg("anyone@127.0.0.1");
        c
    };
    let mut master = client(&["-o", "ControlMaster=yes", "-N"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !ctl.exists() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "no control socket"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut held = Vec::new();
    for _ in 0..forkbox::session::MAX_CHANNELS {
        let mut c = client(&["-o", "ControlMaster=no"])
            .arg("echo in; sleep 120")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(c.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "in\n");
        held.push(c);
    }
    // The next one is refused by the server (OpenSSH then falls back to a connection of
    // its own, where it runs).
    let extra = client(&["-o", "ControlMaster=no"])
        .arg("echo extra")
        .output()
        .unwrap();
    assert!(
        stderr(&extra).contains("Session open refused by peer"),
        "{}",
        stderr(&extra)
    );
    for mut c in held {
        let _ = c.kill();
        let _ = c.wait();
    }
    // The slots come back as the channels close.
    let start = std::time::Instant::now();
    loop {
        let again = client(&["-o", "ControlMaster=no"])
            .arg("echo again")
            .output()
            .unwrap();
        if stdout(&again) == "again\n" {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "{}",
            stderr(&again)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = master.kill();
    let _ = master.wait();
}

/// `ssh` from `from` (a loopback address) running `script`.
fn ssh_from(server: &Server, from: &str, script: &str) -> std::process::Output {
    let mut cmd = server.ssh_raw();
    cmd.args(["-o", &format!("BindAddress={from}")])
        .args(["-o", "StrictHostKeyChecking=no"])
        .args(["-o", "UserKnownHostsFile=/dev/null"])
        .args(["-o", "IdentityFile=/nonexistent"])
        .arg("anyone@127.0.0.1")
        .arg(script);
    run_guarded(cmd, b"", SSH_GUARD)
}

#[test]
fn sessions_are_bounded_per_address_and_refused_clearly() {
    let server = Server::start_with(&["--max-sessions-per-ip", "1"]);
    let mut long = server.long_session();
    let out = ssh_from(&server, "127.0.0.1", "echo in");
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("forkbox: too many sessions from your address (1 at once)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(255));
    // Another address still gets in.
    let out = ssh_from(&server, "127.0.0.2", "echo other");
    assert_eq!(stdout(&out), "other\n", "{}", stderr(&out));
    let _ = long.kill();
    let _ = long.wait();
    server.wait_no_forks();
    let out = ssh_from(&server, "127.0.0.1", "echo again");
    assert_eq!(stdout(&out), "again\n", "{}", stderr(&out));
}

#[test]
fn connections_per_minute_are_bounded_per_address() {
    let server = Server::start_with(&["--max-connections-per-minute-per-ip", "2"]);
    for i in 0..2 {
        let out = ssh_from(&server, "127.0.0.3", &format!("echo {i}"));
        assert_eq!(stdout(&out), format!("{i}\n"), "{}", stderr(&out));
    }
    let out = ssh_from(&server, "127.0.0.3", "echo over");
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("forkbox: too many connections from your address (2 a minute)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(255));
    let out = ssh_from(&server, "127.0.0.4", "echo elsewhere");
    assert_eq!(stdout(&out), "elsewhere\n", "{}", stderr(&out));
    server.wait_no_forks();
}

#[test]
fn idle_sessions_are_disconnected_but_busy_ones_are_not() {
    let server = Server::start_with(&["--idle-timeout", "2"]);
    // A command that runs longer than the idle timeout is not idle.
    let out = ssh_from(&server, "127.0.0.1", "sleep 4; echo done");
    assert_eq!(stdout(&out), "done\n", "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(0));
    // A terminal session at its prompt, with nothing typed, is.
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("-tt").stdin(Stdio::piped());
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < SSH_GUARD, "idle session never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        all.contains("forkbox: idle for 2s; disconnected"),
        "{}",
        tail(&all)
    );
    assert_eq!(out.status.code(), Some(255));
    server.wait_no_forks();
}

#[test]
fn sessions_end_at_their_maximum_lifetime() {
    let server = Server::start_with(&["--max-session-lifetime", "2"]);
    let out = ssh_from(&server, "127.0.0.1", "echo started; sleep 60; echo never");
    assert_eq!(stdout(&out), "started\n");
    assert!(
        stderr(&out).contains("forkbox: this session reached its maximum lifetime of 2s"),
        "{}",
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(255));
    server.wait_no_forks();
}

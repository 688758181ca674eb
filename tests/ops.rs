//! Operating forkbox, through real processes: the HTTP side port (`/healthz`, `/readyz`,
//! `/metrics` parsed by a Prometheus text-format parser), the drain on SIGTERM, the audit
//! trail, JSON logs and the public-demo profile — each with a real `forkbox serve` on
//! 127.0.0.1:0 and the real OpenSSH client.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/server.rs"]
mod support;

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime};

use prometheus_parse::{Scrape, Value};
use support::{CLEANUP_WAIT, Server, run_with_stdin, stderr, stdout};

/// A GET on the side port: the status code, the headers (lower-cased names) and the body.
fn http_get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(CLEANUP_WAIT)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: forkbox\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("bad status line in {head:?}"));
    (status, head.to_ascii_lowercase(), body.to_string())
}

fn scrape(addr: SocketAddr) -> Scrape {
    let (status, head, body) = http_get(addr, "/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(
        head.contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap()
}

/// The value of a counter or gauge sample with these labels; `None` if absent.
fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .find(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match &s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            other => panic!("{metric} is not a single value: {other:?}"),
        })
}

/// How many observations a histogram with these labels holds (its `+Inf` bucket).
fn observations(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .find(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match &s.value {
            Value::Histogram(buckets) => buckets
                .iter()
                .find(|b| b.less_than.is_infinite())
                .map_or(0.0, |b| b.count),
            other => panic!("{metric} is not a histogram: {other:?}"),
        })
        .unwrap_or(0.0)
}

/// Polls `/metrics` until `ready` holds of a scrape; fails the test after [`CLEANUP_WAIT`].
fn scrape_until(addr: SocketAddr, ready: impl Fn(&Scrape) -> bool) -> Scrape {
    let start = Instant::now();
    loop {
        let s = scrape(addr);
        if ready(&s) {
            return s;
        }
        assert!(
            start.elapsed() < CLEANUP_WAIT,
            "metrics never got there: {:?}",
            s.samples
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn metrics_count_a_scripted_session_and_health_answers() {
    let mut server = Server::start_with(&["--http-listen", "127.0.0.1:0", "--quota-bytes", "4K"]);
    let http = server.http_addr();
    assert_eq!(http_get(http, "/healthz").0, 200);
    let (status, _, body) = http_get(http, "/readyz");
    assert_eq!((status, body.as_str()), (200, "ready\n"));
    assert_eq!(http_get(http, "/nothing").0, 404);

    let before = scrape(http);
    // The start-up janitor pass has run before the server listened.
    assert!(value(&before, "forkbox_janitor_sweeps_total", &[]).unwrap_or(0.0) >= 1.0);
    let input = b"twelve bytes";
    let out = server.ssh_stdin(
        "echo hi; cat; echo; head -c 10000 /dev/zero > big; ls > /dev/null; true",
        input,
    );
    assert_eq!(stdout(&out), "hi\ntwelve bytes\n");
    assert!(
        stderr(&out).contains("No space left on device"),
        "{}",
        stderr(&out)
    );
    server.wait_no_forks();
    let s = scrape_until(http, |s| {
        value(
            s,
            "forkbox_sessions_total",
            &[("auth", "anonymous"), ("outcome", "closed")],
        ) == Some(1.0)
    });
    assert_eq!(
        value(&s, "forkbox_sessions_active", &[("auth", "anonymous")]),
        Some(0.0)
    );
    assert_eq!(observations(&s, "forkbox_fork_create_seconds", &[]), 1.0);
    assert_eq!(observations(&s, "forkbox_fork_delete_seconds", &[]), 1.0);
    // echo, echo and true are builtins; cat, head and ls native commands.
    assert!(
        observations(
            &s,
            "forkbox_command_duration_seconds",
            &[("kind", "builtin")]
        ) >= 3.0
    );
    assert!(
        observations(
            &s,
            "forkbox_command_duration_seconds",
            &[("kind", "native")]
        ) >= 3.0
    );
    let sent = value(&s, "forkbox_bytes_sent_total", &[]).unwrap();
    assert!(
        sent >= (out.stdout.len() + out.stderr.len()) as f64,
        "{sent}"
    );
    let received = value(&s, "forkbox_bytes_received_total", &[]).unwrap();
    assert!(received >= input.len() as f64, "{received}");
    assert!(value(&s, "forkbox_limit_hits_total", &[("kind", "quota")]).unwrap() >= 1.0);
    // Every metric says what it is.
    for name in [
        "forkbox_sessions_total",
        "forkbox_fork_create_seconds",
        "forkbox_command_duration_seconds",
        "forkbox_limit_hits_total",
    ] {
        assert!(s.docs.contains_key(name), "no HELP for {name}");
    }
}

/// Starts `ssh` running `script` on `server`, its output piped.
fn spawn_ssh(server: &Server, args: &[&str], script: Option<&str>) -> Child {
    let mut cmd = server.ssh_cmd("anyone");
    cmd.args(args);
    if let Some(script) = script {
        cmd.arg(script);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` and collects its output.
fn finish(child: Child) -> std::process::Output {
    child.wait_with_output().unwrap()
}

#[test]
fn drain_fails_readiness_at_once_lets_the_command_finish_and_exits_0() {
    let mut server = Server::start_with(&["--http-listen", "127.0.0.1:0", "--drain-grace", "30"]);
    let http = server.http_addr();
    let mut running = spawn_ssh(&server, &[], Some("echo started; sleep 3; echo finished"));
    let mut running_out = std::io::BufReader::new(running.stdout.take().unwrap());
    let mut first = String::new();
    running_out.read_line(&mut first).unwrap();
    assert_eq!(first, "started\n");
    let signalled = Instant::now();
    server.signal("TERM");
    // Readiness fails at once; liveness holds while the drain lasts.
    let start = Instant::now();
    loop {
        let (status, _, body) = http_get(http, "/readyz");
        if status == 503 {
            assert_eq!(body, "draining\n");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "/readyz still {status}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(http_get(http, "/healthz").0, 200);
    // No new session: the SSH listener is closed.
    let refused = server.ssh("echo new");
    assert_eq!(refused.status.code(), Some(255), "{}", stdout(&refused));
    // The running command finishes, and the server exits 0 once it has, within the grace.
    let mut rest = String::new();
    running_out.read_to_string(&mut rest).unwrap();
    let out = finish(running);
    assert_eq!(rest, "finished\n", "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(0));
    let exit = server.wait_exit();
    assert_eq!(exit.code(), Some(0));
    assert!(signalled.elapsed() < Duration::from_secs(30));
    assert!(
        server.forks_on_disk().is_empty(),
        "{:?}",
        server.forks_on_disk()
    );
}

#[test]
fn drain_tells_terminals_and_cancels_what_outlives_the_grace() {
    let mut server = Server::start_with(&["--drain-grace", "4"]);
    let mut endless = spawn_ssh(&server, &[], Some("echo up; sleep 600"));
    let mut endless_out = std::io::BufReader::new(endless.stdout.take().unwrap());
    let mut first = String::new();
    endless_out.read_line(&mut first).unwrap();
    assert_eq!(first, "up\n");
    // An interactive session at its prompt: its stdin stays open.
    let mut pty = spawn_ssh(&server, &["-tt"], None);
    let mut pty_in = pty.stdin.take().unwrap();
    pty_in.write_all(b"echo ready-$((40+2))\n").unwrap();
    let pty_out = pty.stdout.take().unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pty_out).lines() {
            let Ok(line) = line else { return };
            let _ = lines_tx.send(line);
        }
    });
    let wait_line = |needle: &str| loop {
        let line = lines
            .recv_timeout(CLEANUP_WAIT)
            .unwrap_or_else(|_| panic!("{needle:?} never shown"));
        if line.contains(needle) {
            return line;
        }
    };
    wait_line("ready-42");
    server.wait_forks(2);
    let signalled = Instant::now();
    server.signal("TERM");
    let notice = wait_line("shutting down");
    assert_eq!(
        notice.trim_end(),
        "forkbox: this server is shutting down; this session will be closed within 4s"
    );
    let exit = server.wait_exit();
    assert_eq!(exit.code(), Some(0));
    assert!(
        signalled.elapsed() < Duration::from_secs(4) + Duration::from_secs(2),
        "the drain took {:?}",
        signalled.elapsed()
    );
    assert!(
        server.forks_on_disk().is_empty(),
        "{:?}",
        server.forks_on_disk()
    );
    drop(pty_in);
    let _ = endless.wait();
    let _ = pty.wait();
}

#[test]
fn a_second_signal_ends_the_drain_at_once_and_still_deletes_the_forks() {
    // A grace far beyond the test's patience: only the second signal ends the drain in time.
    let mut server = Server::start_with(&["--http-listen", "127.0.0.1:0", "--drain-grace", "3600"]);
    let http = server.http_addr();
    let mut endless = spawn_ssh(&server, &[], Some("echo up; echo x > f; sleep 3600"));
    let mut endless_out = std::io::BufReader::new(endless.stdout.take().unwrap());
    let mut first = String::new();
    endless_out.read_line(&mut first).unwrap();
    assert_eq!(first, "up\n");
    server.wait_forks(1);
    server.signal("TERM");
    let start = Instant::now();
    while http_get(http, "/readyz").0 != 503 {
        assert!(start.elapsed() < CLEANUP_WAIT, "/readyz never failed");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Draining: the server lives on, and so does the running command with its fork.
    assert_eq!(http_get(http, "/healthz").0, 200);
    assert_eq!(server.forks_on_disk().len(), 1);
    // Asked again (Ctrl-C this time): what runs is cancelled, its fork deleted, exit 0.
    server.signal("INT");
    let exit = server.wait_exit();
    assert_eq!(exit.code(), Some(0));
    assert!(
        server.forks_on_disk().is_empty(),
        "{:?}",
        server.forks_on_disk()
    );
    let mut rest = String::new();
    endless_out.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "");
    let out = finish(endless);
    assert_ne!(out.status.code(), Some(0));
}

/// The audit file's records once it has `n` lines; fails the test if it never does.
fn audit_records(path: &Path, n: usize) -> Vec<serde_json::Value> {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= n {
            return text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
                .collect();
        }
        assert!(
            start.elapsed() < CLEANUP_WAIT,
            "audit trail has not {n} lines:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Milliseconds since the epoch of an RFC 3339 UTC time with milliseconds, as the audit
/// trail writes it (`2025-05-01T12:00:00.123Z`).
fn epoch_ms(t: &str) -> u128 {
    let (date, time) = t.strip_suffix('Z').unwrap().split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (hms, ms) = time.split_once('.').unwrap();
    let h: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if d[1] <= 2 {
        (d[0] - 1, d[1] + 9)
    } else {
        (d[0], d[1] - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d[2] - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h[0] * 3600 + h[1] * 60 + h[2];
    (secs as u128) * 1000 + ms.parse::<u128>().unwrap()
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

#[test]
fn the_audit_trail_records_every_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let trail = tmp.path().join("audit.jsonl");
    let target = format!("file:{}", trail.display());
    let server = Server::start_with(&["--audit", &target]);
    let begun = now_ms();

    // An exec request: one record, whatever it holds.
    let mut exec = server.ssh_cmd("alice");
    exec.arg("echo $FORKBOX_SESSION; sleep 1; false");
    let out = run_with_stdin(exec, b"");
    let exec_session = stdout(&out).trim().to_string();
    assert_eq!(out.status.code(), Some(1));
    // A script piped to a shell without a terminal: one record per complete command.
    let mut piped = server.ssh_cmd("bob");
    piped.arg("-T");
    let out = run_with_stdin(
        piped,
        b"echo $FORKBOX_SESSION\nfor i in 1 2; do\n  echo $i\ndone\n(exit 3)\n",
    );
    let piped_session = stdout(&out).lines().next().unwrap().to_string();
    // Lines typed at a terminal: one record each.
    let mut typed = server.ssh_cmd("carol");
    typed.arg("-tt");
    let out = run_with_stdin(typed, b"echo typed\nexit 5\n");
    assert_eq!(out.status.code(), Some(5));
    let ended = now_ms();

    let records = audit_records(&trail, 6);
    assert_eq!(records.len(), 6, "{records:#?}");
    let expected: [(&str, &str, &str, i64); 6] = [
        ("alice", "exec", "echo $FORKBOX_SESSION; sleep 1; false", 1),
        ("bob", "script", "echo $FORKBOX_SESSION", 0),
        ("bob", "script", "for i in 1 2; do\n  echo $i\ndone", 0),
        ("bob", "script", "(exit 3)", 3),
        ("carol", "terminal", "echo typed", 0),
        ("carol", "terminal", "exit 5", 5),
    ];
    for (r, (user, origin, command, status)) in records.iter().zip(&expected) {
        assert_eq!(r["user"], *user, "{r}");
        assert_eq!(r["origin"], *origin, "{r}");
        assert_eq!(r["command"], *command, "{r}");
        assert_eq!(r["status"], *status, "{r}");
        let peer: SocketAddr = r["peer"].as_str().unwrap().parse().unwrap();
        assert_eq!(peer.ip().to_string(), "127.0.0.1", "{r}");
        let start = epoch_ms(r["start"].as_str().unwrap());
        assert!(begun <= start + 1 && start <= ended, "{r}");
        assert!(r["duration_ms"].as_u64().is_some(), "{r}");
    }
    assert_eq!(records[0]["session"], exec_session.as_str());
    assert!(records[0]["duration_ms"].as_u64().unwrap() >= 1000);
    for r in &records[1..4] {
        assert_eq!(r["session"], piped_session.as_str());
    }
    assert_eq!(records[4]["session"], records[5]["session"]);
    assert_ne!(records[4]["session"], records[0]["session"]);
}

#[test]
fn json_logs_parse_and_carry_the_session_id() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("server.log");
    let log_arg = log.to_str().unwrap().to_string();
    let mut server = Server::start_with(&[
        "--log-format",
        "json",
        "--audit",
        "stdout",
        "--log-to-test-file",
        &log_arg,
    ]);
    let out = server.ssh("echo $FORKBOX_SESSION");
    let id = stdout(&out).trim().to_string();
    server.wait_no_forks();
    Server::wait_log(&log, "disconnected", 1);
    // The audit line on stdout names the same session.
    let audit: serde_json::Value = serde_json::from_str(&server.stdout_line()).unwrap();
    assert_eq!(audit["session"], id.as_str());
    assert_eq!(audit["command"], "echo $FORKBOX_SESSION");

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    // The session span is the line's own `span`, or one of its `spans` (an event logged
    // with the span as its explicit parent has only the former).
    let session_span = |v: &serde_json::Value, ours: &dyn Fn(&serde_json::Value) -> bool| {
        ours(&v["span"])
            || v["spans"]
                .as_array()
                .is_some_and(|spans| spans.iter().any(ours))
    };
    let with_id = |s: &serde_json::Value| s["name"] == "session" && s["id"] == id.as_str();
    // The id is settled at login (it may be a pooled fork's); before, the session's lines
    // carry its peer, which the lines with the id carry too.
    let peer = lines
        .iter()
        .flat_map(|v| {
            std::iter::once(&v["span"]).chain(v["spans"].as_array().into_iter().flatten())
        })
        .find(|s| with_id(s))
        .map(|s| s["peer"].clone())
        .expect("a line of the session");
    let mut seen = Vec::new();
    for v in &lines {
        let message = v["fields"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if message == "connected" {
            let with_peer = |s: &serde_json::Value| s["name"] == "session" && s["peer"] == peer;
            if session_span(v, &with_peer) {
                seen.push(message);
            }
            continue;
        }
        let in_session = session_span(v, &with_id);
        if [
            "authenticated",
            "fork created",
            "channel finished",
            "fork deleted",
            "disconnected",
        ]
        .contains(&message.as_str())
        {
            assert!(in_session, "a session's line without its id: {v}");
            seen.push(message);
        }
    }
    for m in [
        "connected",
        "authenticated",
        "fork created",
        "channel finished",
        "fork deleted",
        "disconnected",
    ] {
        assert!(seen.iter().any(|s| s == m), "{m:?} not logged:\n{text}");
    }
}

#[test]
fn the_public_demo_profile_limits_sessions_and_says_what_it_is() {
    // The harness's own --max-connections-per-minute-per-ip and --auth-timeout override
    // the profile's, as any explicit option does; --command-timeout is shortened here.
    let server = Server::start_with(&["--profile", "public-demo", "--command-timeout", "2"]);
    // The MOTD of the demo, then the usual session line.
    let mut typed = server.ssh_cmd("anyone");
    typed.arg("-tt");
    let out = run_with_stdin(typed, b"exit\n");
    let text = stdout(&out);
    assert!(
        text.contains("Welcome to the forkbox public demo"),
        "{text}"
    );
    assert!(
        text.contains("has its own copy-on-write filesystem"),
        "{text}"
    );
    // A command past its time is stopped.
    let out = server.ssh("echo before; sleep 30; echo never");
    assert_eq!(stdout(&out), "before\n");
    assert_eq!(stderr(&out), "forkbox: command timed out after 2s\n");
    // `exit-signal` TERM, on which OpenSSH's client exits 255.
    assert_eq!(out.status.code(), Some(255));
    // Snapshots are off; the fork holds 64M and 5000 objects.
    let out = server.ssh(
        "snapshot; df -i / | tail -n 1 | awk '{print $2}'; df -k / | tail -n 1 | awk '{print $2}'",
    );
    assert!(
        stderr(&out).contains("snapshots are disabled on this server"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "5000\n65536\n", "{}", stderr(&out));
    // Two sessions from one address at once, not three (the earlier ones gone first).
    server.wait_no_forks();
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(spawn_ssh(&server, &[], Some("sleep 600")));
    }
    server.wait_forks(2);
    let third = server.ssh("echo third");
    assert_eq!(stdout(&third), "");
    assert!(
        stderr(&third).contains("too many sessions from your address (2 at once)"),
        "{}",
        stderr(&third)
    );
    for mut child in held {
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[test]
fn spinning_sessions_are_slowed_and_another_session_still_answers() {
    // A small share, so that two spinners on any machine exceed it; the command timeout
    // ends them if the test fails half-way.
    let mut server = Server::start_with(&[
        "--http-listen",
        "127.0.0.1:0",
        "--session-cpu-share",
        "10",
        "--command-timeout",
        "120",
    ]);
    let http = server.http_addr();
    let spinners: Vec<Child> = (0..2)
        .map(|_| spawn_ssh(&server, &[], Some("echo spinning; while :; do :; done")))
        .collect();
    let mut spinners: Vec<(Child, std::io::BufReader<std::process::ChildStdout>)> = spinners
        .into_iter()
        .map(|mut c| {
            let out = std::io::BufReader::new(c.stdout.take().unwrap());
            (c, out)
        })
        .collect();
    for (_, out) in &mut spinners {
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        assert_eq!(first, "spinning\n");
    }
    // The governor pauses the spinners: its metric counts the pauses.
    let before = scrape_until(http, |s| {
        observations(s, "forkbox_cpu_pause_seconds", &[]) > 0.0
    });
    // A third session still gets its answer while they spin.
    let out = server.ssh("echo hi");
    assert_eq!(stdout(&out), "hi\n", "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(0));
    // And the spinners go on being slowed.
    let seen = observations(&before, "forkbox_cpu_pause_seconds", &[]);
    scrape_until(http, |s| {
        observations(s, "forkbox_cpu_pause_seconds", &[]) > seen
    });
    for (mut child, _) in spinners {
        child.kill().unwrap();
        let _ = child.wait();
    }
}

/// Short leases and janitor passes, so that a lapsed lease is swept within a test's
/// patience (renewed every second; three seconds leave room for a loaded machine).
const POOL_FAST_JANITOR: [&str; 4] = ["--lease-ttl", "3", "--janitor-interval", "1"];

/// The forks on disk, sorted, once there are exactly `n` (the pool refilled after a session
/// ended and its fork was deleted).
fn forks_settled_at(server: &Server, n: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let mut forks = server.forks_on_disk();
        if forks.len() == n {
            forks.sort();
            return forks;
        }
        assert!(
            start.elapsed() < CLEANUP_WAIT,
            "forks on disk: {forks:?}, expected {n}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn pooled_forks_are_taken_once_each_and_deleted_when_the_server_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("server.log");
    let log_arg = log.to_str().unwrap().to_string();
    let mut server = Server::start_with(&["--fork-pool", "2", "--log-to-test-file", &log_arg]);
    let mut before = forks_settled_at(&server, 2);
    let mut used = Vec::new();
    for _ in 0..3 {
        let out = server.ssh("echo $FORKBOX_SESSION; echo x > f; cat f");
        let text = stdout(&out);
        let id = text.lines().next().unwrap().to_string();
        assert_eq!(text, format!("{id}\nx\n"), "{}", stderr(&out));
        // The session's id is a waiting fork's, never one an earlier session had.
        assert!(before.contains(&id), "{id} was not waiting: {before:?}");
        assert!(!used.contains(&id), "{id} served two sessions");
        used.push(id.clone());
        // Its fork goes with it, and the pool is full again, of other forks.
        let start = Instant::now();
        while server.forks_on_disk().contains(&id) {
            assert!(start.elapsed() < CLEANUP_WAIT, "{id}'s fork stayed");
            std::thread::sleep(Duration::from_millis(20));
        }
        before = forks_settled_at(&server, 2);
    }
    Server::wait_log(&log, "fork created pooled=true", 3);
    // A login that asks for a snapshot forks it, not a pooled fork (there is none here:
    // it is refused, and the pool stays as it was).
    let out = server.ssh_as("snap-0000000000000000000000000001", "echo no");
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("no snapshot"), "{}", stderr(&out));
    assert_eq!(forks_settled_at(&server, 2), before);
    // A drain deletes the waiting forks before the server exits.
    server.signal("TERM");
    let status = server.wait_exit();
    assert!(status.success(), "server exit: {status:?}");
    assert_eq!(server.forks_on_disk(), Vec::<String>::new());
    Server::wait_log(&log, "fork pool emptied count=2 deleted=2", 1);
}

#[test]
fn waiting_forks_keep_their_leases_and_a_crash_leaves_them_to_the_janitor() {
    let mut args = POOL_FAST_JANITOR.to_vec();
    args.extend(["--fork-pool", "2"]);
    let a = Server::start_with(&args);
    let waiting = forks_settled_at(&a, 2);
    let log = a.data_dir.parent().unwrap().join("b.log");
    let b = Server::alongside(&a, &POOL_FAST_JANITOR, &log);
    // b's janitor passes see a's waiting forks for well over a lease period: their leases
    // are renewed, so they stay, the same two.
    Server::wait_log(&log, "examined=2 deleted=0", 8);
    assert_eq!(forks_settled_at(&a, 2), waiting);
    // a crashes (SIGKILL: no drain): b's janitor sweeps the forks once their leases lapse.
    let _dirs = a.stop();
    b.wait_no_forks();
}

#[test]
fn a_file_added_to_the_base_after_the_pool_filled_is_seen_by_the_next_login() {
    let mut server = Server::start_with(&["--fork-pool", "2"]);
    let waiting = forks_settled_at(&server, 2);
    // The base changes after both waiting forks were made: an overlay fork reads the base
    // when the session looks, so the login that takes one sees the new file.
    std::fs::write(server.base.join("added-later.txt"), "fresh\n").unwrap();
    let out = server.ssh("echo $FORKBOX_SESSION; cat added-later.txt");
    let text = stdout(&out);
    let id = text.lines().next().unwrap_or_default().to_string();
    assert_eq!(text, format!("{id}\nfresh\n"), "{}", stderr(&out));
    assert!(waiting.contains(&id), "{id} was not waiting: {waiting:?}");
    server.signal("TERM");
    assert!(server.wait_exit().success());
}

#[test]
fn aged_waiting_forks_are_replaced_and_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("server.log");
    let log_arg = log.to_str().unwrap().to_string();
    let mut server = Server::start_with(&[
        "--fork-pool",
        "2",
        "--fork-pool-max-age",
        "1",
        "--log-to-test-file",
        &log_arg,
    ]);
    let first = forks_settled_at(&server, 2);
    // Past the age limit each is deleted, and the pool is full again of new forks.
    Server::wait_log(&log, "aged pool forks replaced", 2);
    let start = Instant::now();
    while forks_settled_at(&server, 2)
        .iter()
        .any(|id| first.contains(id))
    {
        assert!(start.elapsed() < CLEANUP_WAIT, "{first:?} still on disk");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A login takes a fork waiting now, never a replaced one.
    let out = server.ssh("echo $FORKBOX_SESSION");
    let id = stdout(&out).trim().to_string();
    assert_eq!(id.len(), 36, "{}", stderr(&out));
    assert!(!first.contains(&id), "{id} was replaced, yet handed out");
    server.signal("TERM");
    assert!(server.wait_exit().success());
    assert_eq!(server.forks_on_disk(), Vec::<String>::new());
}

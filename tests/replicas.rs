//! Many replicas on one store, for real: three `forkbox serve` processes on one S3-compatible
//! store (the suite's moto), one shared host key, behind a real HAProxy in TCP mode on
//! loopback whose health checks ask each replica's `/readyz`. Clients are the real OpenSSH
//! client, pinned to the one host key (a replica presenting another would fail the login).
//!
//! Which replica served a session is read from the replicas' own logs: a session prints its
//! `$FORKBOX_SESSION`, and exactly one replica logs that id on its `authenticated` line. What is
//! in the store is read with a plain S3 client.
//!
//! - sessions spread across the replicas, and each one's fork lives while it is connected
//!   and is gone from the store once it disconnects;
//! - a replica killed with SIGKILL mid-session has its fork swept by the survivors'
//!   janitors once its lease lapses, while the survivors' sessions go on with their files;
//! - a replica sent SIGTERM drains: `/readyz` 503, HAProxy takes it out of rotation, its
//!   running command finishes and it exits 0, while the others serve the new sessions;
//! - a snapshot taken through one replica starts a session on another;
//! - a drain ends within its grace even when the store stops answering mid-drain (one
//!   server, its store behind a relay that stalls): the fork is left to a janitor.
//!
//! One cluster runs at a time (each is four processes on a small machine, and leases must
//! be renewed on time). Every process is killed when the test drops its handle, even when
//! it fails; nothing is timed, everything is polled with generous deadlines.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/s3.rs"]
mod s3;
#[path = "support/server.rs"]
mod support;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use support::{CLEANUP_WAIT, Server, run_with_stdin, stderr, stdout};

/// How many replicas serve behind the balancer.
const REPLICAS: usize = 3;

/// Leases short enough for a crash to be swept within a test's patience, long enough that
/// a loaded machine renews them in time (every third of the lease).
const LEASE_TTL: &str = "6";

/// Deadline for what a cluster takes longer to do than a single server: starting four
/// processes, a lease lapsing and being swept.
const CLUSTER_WAIT: Duration = Duration::from_secs(120);

/// What the base bucket holds.
const BASE: [(&str, &str); 2] = [("README.md", "welcome\n"), ("shared.txt", "base version\n")];

/// One cluster at a time in this test binary.
static SERIAL: Mutex<()> = Mutex::new(());

/// Polls `probe` until it gives a value; fails the test with `what` after `limit`.
fn poll<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(start.elapsed() < limit, "{what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A base bucket and its forks bucket on the shared moto, and a client to look at them.
type Store = s3::Buckets;

impl Store {
    fn new() -> Store {
        Store::with_files("replicas", &BASE)
    }

    /// Session ids with a fork in the forks bucket.
    fn forks(&self) -> BTreeSet<String> {
        self.rt
            .block_on(s3::forks_in(&self.client, &self.forks_bucket))
            .into_iter()
            .collect()
    }

    fn has_fork(&self, id: &str) -> bool {
        self.forks().contains(id)
    }

    /// The bytes of file `path` in session `id`'s fork, as stored; `None` if absent.
    fn fork_file(&self, id: &str, path: &str) -> Option<Vec<u8>> {
        self.rt.block_on(async {
            let got = self
                .client
                .get_object()
                .bucket(&self.forks_bucket)
                .key(format!("forks/{id}/root/{path}"))
                .send()
                .await
                .ok()?;
            Some(got.body.collect().await.ok()?.into_bytes().to_vec())
        })
    }

    /// Waits until session `id`'s fork is gone from the store.
    fn wait_gone(&self, id: &str) {
        poll(
            &format!("fork {id} stayed in the store"),
            CLUSTER_WAIT,
            || (!self.has_fork(id)).then_some(()),
        );
    }
}

/// HAProxy from `PATH`, or where Debian installs it (`/usr/sbin`, which a user's `PATH`
/// may lack).
fn haproxy_binary() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("haproxy"))
        .find(|p| p.is_file());
    on_path.unwrap_or_else(|| PathBuf::from("/usr/sbin/haproxy"))
}

/// A real HAProxy in TCP mode before the replicas, its admin socket in its directory.
struct HaProxy {
    child: Child,
    port: u16,
    socket: PathBuf,
    log: PathBuf,
}

impl HaProxy {
    /// Starts HAProxy on a free loopback port with one backend server per `(ssh, http)`
    /// address pair, health-checked by `GET /readyz` on the http port.
    fn start(dir: &Path, replicas: &[(u16, SocketAddr)]) -> HaProxy {
        // HAProxy cannot tell which port it got for `:0`: a free port is picked here and
        // given to it, and if another process takes it meanwhile HAProxy fails to bind and
        // is started again on another.
        for attempt in 0.. {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let socket = dir.join("admin.sock");
            let _ = std::fs::remove_file(&socket);
            let mut servers = String::new();
            for (i, (ssh, http)) in replicas.iter().enumerate() {
                servers.push_str(&format!(
                    "    server r{i} 127.0.0.1:{ssh} check port {}\n",
                    http.port()
                ));
            }
            let config = format!(
                "global\n\
                 \x20   maxconn 512\n\
                 \x20   stats socket {socket} mode 600 level admin\n\
                 defaults\n\
                 \x20   mode tcp\n\
                 \x20   timeout connect 10s\n\
                 \x20   timeout client 10m\n\
                 \x20   timeout server 10m\n\
                 \x20   timeout check 20s\n\
                 \x20   retries 3\n\
                 \x20   option redispatch\n\
                 frontend ssh\n\
                 \x20   bind 127.0.0.1:{port}\n\
                 \x20   default_backend replicas\n\
                 backend replicas\n\
                 \x20   balance roundrobin\n\
                 \x20   option httpchk\n\
                 \x20   http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host forkbox\n\
                 \x20   http-check expect status 200\n\
                 \x20   default-server inter 200ms fall 1 rise 1\n\
                 {servers}",
                socket = socket.display(),
            );
            let cfg = dir.join("haproxy.cfg");
            std::fs::write(&cfg, config).unwrap();
            let log = dir.join("haproxy.log");
            let child = Command::new(haproxy_binary())
                .arg("-f")
                .arg(&cfg)
                .arg("-db")
                .stdin(Stdio::null())
                .stdout(Stdio::from(std::fs::File::create(&log).unwrap()))
                .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
                .spawn()
                .expect("start haproxy (Debian package haproxy; .ci/run installs it)");
            let mut proxy = HaProxy {
                child,
                port,
                socket,
                log,
            };
            // It listens once its admin socket answers; it exits if it could not bind.
            let up = poll("haproxy never started", CLEANUP_WAIT, || {
                if proxy.child.try_wait().unwrap().is_some() {
                    return Some(false);
                }
                proxy.try_command("show info").map(|_| true)
            });
            if up {
                return proxy;
            }
            let log = std::fs::read_to_string(&proxy.log).unwrap_or_default();
            assert!(attempt < 5, "haproxy did not start:\n{log}");
        }
        unreachable!()
    }

    /// Sends one command on the admin socket; its answer, `None` if the socket is not up.
    fn try_command(&self, command: &str) -> Option<String> {
        let mut s = UnixStream::connect(&self.socket).ok()?;
        s.set_read_timeout(Some(CLEANUP_WAIT)).unwrap();
        s.write_all(format!("{command}\n").as_bytes()).ok()?;
        let mut answer = String::new();
        s.read_to_string(&mut answer).ok()?;
        Some(answer)
    }

    /// The state HAProxy holds of backend server `r<i>`: its status (`UP`, `DOWN`, …) and
    /// the result of its last health check (`L7OK`, `L7STS`, …).
    fn server_state(&self, i: usize) -> (String, String) {
        let csv = self
            .try_command("show stat")
            .expect("haproxy's admin socket");
        let mut lines = csv.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap()
            .trim_start_matches("# ")
            .split(',')
            .collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let (px, sv, status, check) = (
            col("pxname"),
            col("svname"),
            col("status"),
            col("check_status"),
        );
        let name = format!("r{i}");
        lines
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|f| f.len() > check && f[px] == "replicas" && f[sv] == name)
            .map(|f| (f[status].to_string(), f[check].to_string()))
            .unwrap_or_else(|| panic!("no server {name} in haproxy's stats:\n{csv}"))
    }

    /// Waits until HAProxy holds server `r<i>` to be `status` ("UP" or "DOWN").
    fn wait_status(&self, i: usize, status: &str) {
        let start = Instant::now();
        loop {
            let state = self.server_state(i);
            if state.0 == status {
                return;
            }
            assert!(
                start.elapsed() < CLUSTER_WAIT,
                "haproxy never saw r{i} {status}: {state:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One replica: its server process (gone once killed), side port and log.
struct Replica {
    server: Option<Server>,
    http: SocketAddr,
    log: PathBuf,
}

impl Replica {
    fn server(&self) -> &Server {
        self.server.as_ref().expect("the replica was killed")
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether this replica served session `id`.
    fn served(&self, id: &str) -> bool {
        self.log_text()
            .lines()
            .any(|l| l.contains(id) && l.contains("session{") && l.contains(": authenticated"))
    }

    /// How many janitor passes over forks it has logged.
    fn janitor_passes(&self) -> usize {
        self.log_text()
            .lines()
            .filter(|l| l.contains("janitor pass examined="))
            .count()
    }
}

/// Three replicas on one store behind HAProxy, and an SSH client pinned to their one key.
struct Cluster {
    // Dropped in this order: the balancer, the replicas, then the store and files.
    lb: HaProxy,
    replicas: Vec<Replica>,
    store: Store,
    known_hosts: PathBuf,
    dir: tempfile::TempDir,
    _serial: MutexGuard<'static, ()>,
}

impl Cluster {
    fn start() -> Cluster {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("host_ed25519");
        let st = Command::new("ssh-keygen")
            .args([
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "forkbox-replicas",
                "-f",
            ])
            .arg(&key)
            .status()
            .unwrap();
        assert!(st.success());
        let store = Store::new();
        let endpoint = s3::shared().endpoint();
        let replicas: Vec<Replica> = (0..REPLICAS)
            .map(|i| {
                let log = dir.path().join(format!("r{i}.log"));
                let args = [
                    "--backend",
                    "s3",
                    "--s3-endpoint",
                    &endpoint,
                    "--s3-path-style",
                    "--s3-region",
                    s3::REGION,
                    "--base-bucket",
                    &store.base_bucket,
                    "--host-key",
                    key.to_str().unwrap(),
                    "--http-listen",
                    "127.0.0.1:0",
                    "--lease-ttl",
                    LEASE_TTL,
                    "--janitor-interval",
                    "1",
                    "--drain-grace",
                    "300",
                    "--snapshots",
                    "on",
                    "--log-to-test-file",
                    log.to_str().unwrap(),
                ];
                let mut server = Server::start_configured(&args, s3::apply_env);
                let http = server.http_addr();
                Replica {
                    server: Some(server),
                    http,
                    log,
                }
            })
            .collect();
        let backends: Vec<(u16, SocketAddr)> =
            replicas.iter().map(|r| (r.server().port, r.http)).collect();
        let lb = HaProxy::start(dir.path(), &backends);
        for i in 0..REPLICAS {
            lb.wait_status(i, "UP");
        }
        // Every replica presents this one key; the client accepts no other.
        let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
        let known_hosts = dir.path().join("known_hosts");
        std::fs::write(
            &known_hosts,
            format!("[127.0.0.1]:{} {}", lb.port, public.trim()),
        )
        .unwrap();
        Cluster {
            lb,
            replicas,
            store,
            known_hosts,
            dir,
            _serial: serial,
        }
    }

    /// `ssh` through the balancer as `user`, checking the host key strictly.
    fn ssh_cmd(&self, user: &str) -> Command {
        let mut c = Command::new("ssh");
        c.args(["-p", &self.lb.port.to_string()])
            .args(["-o", "LogLevel=ERROR", "-o", "BatchMode=yes"])
            .args(["-o", "ConnectTimeout=30", "-o", "IdentitiesOnly=yes"])
            .args(["-o", "IdentityFile=/nonexistent"])
            .args(["-o", "StrictHostKeyChecking=yes"])
            .args(["-o", "GlobalKnownHostsFile=/dev/null"])
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", self.known_hosts.display()))
            .arg(format!("{user}@127.0.0.1"));
        c
    }

    /// Runs `script` as `user` through the balancer; stdin is empty.
    fn ssh_as(&self, user: &str, script: &str) -> Output {
        let mut cmd = self.ssh_cmd(user);
        cmd.arg(script);
        run_with_stdin(cmd, b"")
    }

    /// Runs `script` (which must begin by printing `$FORKBOX_SESSION`) as `user`; its
    /// output, and the index of the replica that served it.
    fn run(&self, user: &str, script: &str) -> (Output, usize) {
        let out = self.ssh_as(user, script);
        let text = stdout(&out);
        let id = text.lines().next().unwrap_or_else(|| {
            panic!(
                "no session id printed; status {:?}, stderr {}",
                out.status,
                stderr(&out)
            )
        });
        let at = self.served_by(id);
        (out, at)
    }

    /// Starts a session running `script` after printing its id; waits for the id.
    fn live(&self, script: &str) -> Live {
        let mut cmd = self.ssh_cmd("anyone");
        cmd.arg(format!("echo $FORKBOX_SESSION; {script}"));
        Live::spawn(cmd)
    }

    /// The index of the one replica that served session `id` (waiting for its log line).
    fn served_by(&self, id: &str) -> usize {
        let mut seen = Vec::new();
        let at = poll(
            &format!("no replica logged session {id}"),
            CLUSTER_WAIT,
            || {
                seen = (0..REPLICAS)
                    .filter(|&i| self.replicas[i].served(id))
                    .collect();
                seen.first().copied()
            },
        );
        assert_eq!(seen, [at], "session {id} logged by several replicas");
        at
    }

    fn replica(&self, i: usize) -> &Replica {
        &self.replicas[i]
    }

    /// The replicas' logs and HAProxy's, for a failure message.
    fn logs(&self) -> String {
        let mut all = String::new();
        for (i, r) in self.replicas.iter().enumerate() {
            all.push_str(&format!("--- r{i}\n{}", r.log_text()));
        }
        all.push_str(&format!(
            "--- haproxy\n{}",
            std::fs::read_to_string(&self.lb.log).unwrap_or_default()
        ));
        let _ = self.dir.path();
        all
    }
}

/// A running `ssh` session: its id, lines of stdout as they come, and its stdin. Killed
/// when dropped.
struct Live {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    err: Arc<Mutex<String>>,
    id: String,
}

impl Live {
    fn spawn(mut cmd: Command) -> Live {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run ssh");
        let stdin = child.stdin.take();
        let out = child.stdout.take().unwrap();
        let mut errs = child.stderr.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let err = Arc::new(Mutex::new(String::new()));
        let err_w = err.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = errs.read_to_string(&mut text);
            err_w.lock().unwrap().push_str(&text);
        });
        let mut live = Live {
            child,
            stdin,
            lines,
            err,
            id: String::new(),
        };
        live.id = live.line();
        live
    }

    /// The next line of its stdout; fails the test if none comes.
    fn line(&self) -> String {
        self.lines.recv_timeout(CLUSTER_WAIT).unwrap_or_else(|_| {
            panic!(
                "the session said nothing more; stderr: {}",
                self.err.lock().unwrap()
            )
        })
    }

    /// Sends a line to the session's stdin.
    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits for the client to end; its status and what it still printed.
    fn finish(mut self) -> (ExitStatus, Vec<String>) {
        drop(self.stdin.take());
        let status = poll("the ssh client never ended", CLUSTER_WAIT, || {
            self.child.try_wait().unwrap()
        });
        let mut rest = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(CLEANUP_WAIT) {
            rest.push(line);
        }
        (status, rest)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn sessions_spread_across_replicas_and_forks_live_and_die_with_their_connections() {
    let cluster = Cluster::start();
    // One-shot sessions, one after another: each lands on some replica, all are used.
    let mut served = Vec::new();
    for n in 0..2 * REPLICAS {
        let (out, at) = cluster.run(
            "anyone",
            &format!("echo $FORKBOX_SESSION; echo n{n} > f; cat f README.md"),
        );
        let text = stdout(&out);
        assert_eq!(
            text.lines().skip(1).collect::<Vec<_>>(),
            [format!("n{n}").as_str(), "welcome"],
            "stderr: {}",
            stderr(&out)
        );
        assert_eq!(out.status.code(), Some(0));
        served.push(at);
    }
    let used: BTreeSet<usize> = served.iter().copied().collect();
    assert_eq!(
        used.len(),
        REPLICAS,
        "sessions went to {served:?}\n{}",
        cluster.logs()
    );

    // Sessions held open at once: each has its fork, with its file, while connected.
    let mut live: Vec<Live> = (0..REPLICAS)
        .map(|n| cluster.live(&format!("echo live{n} > f; echo ready; read go; cat f")))
        .collect();
    for (n, session) in live.iter().enumerate() {
        assert_eq!(session.line(), "ready");
        assert_eq!(
            cluster.store.fork_file(&session.id, "f").as_deref(),
            Some(format!("live{n}\n").as_bytes())
        );
    }
    let at: BTreeSet<usize> = live.iter().map(|s| cluster.served_by(&s.id)).collect();
    assert_eq!(at.len(), REPLICAS, "held sessions went to {at:?}");
    // One ends: its fork goes, the others' stay.
    let first = live.remove(0);
    let first_id = first.id.clone();
    drop(first);
    cluster.store.wait_gone(&first_id);
    for session in &live {
        assert!(cluster.store.has_fork(&session.id));
    }
    // The others end by themselves, having seen their own files to the end.
    for (n, mut session) in live.into_iter().enumerate() {
        let id = session.id.clone();
        session.send("go");
        let (status, rest) = session.finish();
        assert_eq!(status.code(), Some(0));
        assert_eq!(rest, [format!("live{}", n + 1)]);
        cluster.store.wait_gone(&id);
    }
    // The one-shot sessions' forks went too: nothing is left.
    poll("forks left in the store", CLUSTER_WAIT, || {
        cluster.store.forks().is_empty().then_some(())
    });
}

#[test]
fn a_killed_replicas_forks_are_swept_by_the_survivors_who_keep_their_own() {
    let mut cluster = Cluster::start();
    let mut live: Vec<Live> = (0..REPLICAS)
        .map(|n| cluster.live(&format!("echo mine{n} > f; echo ready; read go; cat f")))
        .collect();
    for session in &live {
        assert_eq!(session.line(), "ready");
    }
    let at: Vec<usize> = live.iter().map(|s| cluster.served_by(&s.id)).collect();
    assert_eq!(
        at.iter().collect::<BTreeSet<_>>().len(),
        REPLICAS,
        "sessions went to {at:?}"
    );
    let victim = at[0];
    let doomed = live.remove(0);
    let doomed_id = doomed.id.clone();
    let survivors: Vec<usize> = at[1..].to_vec();

    // SIGKILL: nothing of the victim's cleanup runs; its fork stays behind, lease and all.
    let passes_before: Vec<usize> = survivors
        .iter()
        .map(|&i| cluster.replica(i).janitor_passes())
        .collect();
    let killed = cluster.replicas[victim].server.take().unwrap();
    drop(killed.stop());
    // HAProxy sees it gone; the client of its session is cut.
    cluster.lb.wait_status(victim, "DOWN");
    let (_, _) = doomed.finish();

    // Once its lease lapses, a survivor's janitor deletes the fork.
    cluster.store.wait_gone(&doomed_id);
    let sweeper =
        poll("no survivor logged sweeping the fork", CLUSTER_WAIT, || {
            survivors.iter().copied().find(|&i| {
                cluster.replica(i).log_text().lines().any(|l| {
                    l.contains("janitor deleted an abandoned fork") && l.contains(&doomed_id)
                })
            })
        });
    assert_ne!(sweeper, victim);
    // The survivors' janitors go on passing over the store (several passes each, with the
    // survivors' leases seen live every time) ...
    for (k, &i) in survivors.iter().enumerate() {
        poll("the survivors' janitors stopped", CLUSTER_WAIT, || {
            (cluster.replica(i).janitor_passes() >= passes_before[k] + 3).then_some(())
        });
    }
    // ... and never touched the forks of the sessions still running on them: each session
    // is still connected and reads back its own file.
    for (k, session) in live.iter_mut().enumerate() {
        assert!(session.running(), "a survivor's session was cut");
        assert!(cluster.store.has_fork(&session.id));
        assert_eq!(
            cluster.store.fork_file(&session.id, "f").as_deref(),
            Some(format!("mine{}\n", k + 1).as_bytes())
        );
    }
    for (k, mut session) in live.into_iter().enumerate() {
        let id = session.id.clone();
        session.send("go");
        let (status, rest) = session.finish();
        assert_eq!(status.code(), Some(0), "{}", cluster.logs());
        assert_eq!(rest, [format!("mine{}", k + 1)]);
        cluster.store.wait_gone(&id);
    }
    // New sessions are served by the survivors alone.
    for _ in 0..REPLICAS {
        let (out, at) = cluster.run("anyone", "echo $FORKBOX_SESSION; echo ok");
        assert_eq!(stdout(&out).lines().nth(1), Some("ok"));
        assert!(survivors.contains(&at), "served by {at}");
    }
}

#[test]
fn a_replica_told_to_stop_drains_while_the_others_serve() {
    let mut cluster = Cluster::start();
    // One command running on each replica, waiting for the test's word.
    let mut live: Vec<Live> = (0..REPLICAS)
        .map(|n| cluster.live(&format!("echo started; read go; echo finished{n} $go")))
        .collect();
    for session in &live {
        assert_eq!(session.line(), "started");
    }
    let at: Vec<usize> = live.iter().map(|s| cluster.served_by(&s.id)).collect();
    assert_eq!(
        at.iter().collect::<BTreeSet<_>>().len(),
        REPLICAS,
        "sessions went to {at:?}"
    );
    let draining = at[0];
    let others: Vec<usize> = at[1..].to_vec();
    cluster.replica(draining).server().signal("TERM");

    // Readiness fails, and HAProxy takes the replica out of rotation on its health check.
    poll("/readyz never failed", CLUSTER_WAIT, || {
        let (status, body) = http_get(cluster.replica(draining).http, "/readyz");
        (status == 503 && body == "draining\n").then_some(())
    });
    cluster.lb.wait_status(draining, "DOWN");
    let (_, check) = cluster.lb.server_state(draining);
    assert_eq!(check, "L7STS", "the health check failed on its status");

    // New sessions go to the others, spread over both.
    let mut used = BTreeSet::new();
    for _ in 0..2 * others.len() {
        let (out, at) = cluster.run("anyone", "echo $FORKBOX_SESSION; echo new");
        assert_eq!(stdout(&out).lines().nth(1), Some("new"), "{}", stderr(&out));
        assert!(others.contains(&at), "served by the draining replica");
        used.insert(at);
    }
    assert_eq!(used.len(), others.len(), "{used:?}");

    // The draining replica's running command finishes, and then the process exits 0,
    // having deleted its fork. The other sessions were never disturbed.
    let mut doomed = live.remove(0);
    let id = doomed.id.clone();
    assert!(doomed.running());
    doomed.send("now");
    let (status, rest) = doomed.finish();
    assert_eq!(status.code(), Some(0));
    assert_eq!(rest, ["finished0 now"]);
    let server = cluster.replicas[draining].server.as_mut().unwrap();
    assert_eq!(server.wait_exit().code(), Some(0), "{}", cluster.logs());
    assert!(!cluster.store.has_fork(&id));
    for (k, mut session) in live.into_iter().enumerate() {
        assert!(session.running());
        session.send("later");
        let (status, rest) = session.finish();
        assert_eq!(status.code(), Some(0));
        assert_eq!(rest, [format!("finished{} later", k + 1)]);
    }
    poll("forks left in the store", CLUSTER_WAIT, || {
        cluster.store.forks().is_empty().then_some(())
    });
}

#[test]
fn a_snapshot_taken_through_one_replica_starts_sessions_on_the_others() {
    let cluster = Cluster::start();
    let (out, taken_at) = cluster.run(
        "anyone",
        "echo $FORKBOX_SESSION; echo kept > k.txt; rm shared.txt; snapshot --name across",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let version = text
        .lines()
        .nth(1)
        .and_then(|l| l.strip_suffix(" across"))
        .unwrap_or_else(|| panic!("snapshot printed {text:?}"))
        .to_string();
    // Logins from it land on every replica in turn; each sees the snapshot's files.
    let user = format!("snap-{version}");
    let mut at = BTreeSet::new();
    for _ in 0..REPLICAS {
        let (out, i) = cluster.run(
            &user,
            "echo $FORKBOX_SESSION; cat k.txt; ls; echo $FORKBOX_SNAPSHOT",
        );
        assert_eq!(
            stdout(&out).lines().skip(1).collect::<Vec<_>>(),
            ["kept", "README.md", "k.txt", "tmp", version.as_str()],
            "stderr: {}",
            stderr(&out)
        );
        at.insert(i);
    }
    assert!(
        at.iter().any(|&i| i != taken_at),
        "every session from the snapshot ran on r{taken_at}, where it was taken"
    );
    assert_eq!(at.len(), REPLICAS, "{at:?}");
}

/// A GET on a side port: the status code and the body.
fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
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
    (status, body.to_string())
}

/// A TCP relay to the store that can be made to stall: from then on it forwards nothing,
/// in either direction, on old and new connections alike, as a store that stops answering
/// (its connections stay open). Its threads end when it is dropped.
struct StallingRelay {
    port: u16,
    stalled: Arc<AtomicBool>,
    closed: Arc<AtomicBool>,
}

impl StallingRelay {
    fn start(upstream: u16) -> StallingRelay {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stalled = Arc::new(AtomicBool::new(false));
        let closed = Arc::new(AtomicBool::new(false));
        let (st, cl) = (stalled.clone(), closed.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if cl.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = conn else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                for (from, to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let (st, cl) = (st.clone(), cl.clone());
                    std::thread::spawn(move || relay(from, to, &st, &cl));
                }
            }
        });
        StallingRelay {
            port,
            stalled,
            closed,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn stall(&self) {
        self.stalled.store(true, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until either closes, holding everything once `stalled` is set and
/// dropping both once `closed` is.
fn relay(mut from: TcpStream, mut to: TcpStream, stalled: &AtomicBool, closed: &AtomicBool) {
    from.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = [0u8; 16 * 1024];
    loop {
        if closed.load(Ordering::SeqCst) {
            return;
        }
        if stalled.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                // Read before the stall, held after it: nothing gets through once stalled.
                while stalled.load(Ordering::SeqCst) && !closed.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(100));
                }
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

impl Drop for StallingRelay {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees `closed`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

#[test]
fn a_drain_ends_within_its_grace_even_when_the_store_stops_answering() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let store = Store::new();
    let relay = StallingRelay::start(s3::shared().port);
    let endpoint = relay.endpoint();
    // Deleting a fork may take ten minutes, the drain only a few seconds: the drain wins.
    let mut server = Server::start_configured(
        &[
            "--backend",
            "s3",
            "--s3-endpoint",
            &endpoint,
            "--s3-path-style",
            "--s3-region",
            s3::REGION,
            "--base-bucket",
            &store.base_bucket,
            "--delete-deadline",
            "600",
            "--janitor-interval",
            "1",
            "--drain-grace",
            "6",
        ],
        s3::apply_env,
    );
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("echo $FORKBOX_SESSION; echo x > f; echo ready; sleep 3600");
    let session = Live::spawn(cmd);
    let id = session.id.clone();
    assert_eq!(session.line(), "ready");
    assert!(store.has_fork(&id));
    relay.stall();
    server.signal("TERM");
    // The command is cancelled at the end of its share of the grace; its fork cannot be
    // deleted, nor can the janitor's pass end: the process exits anyway, with status 0,
    // long before the fork deletion's own deadline (`wait_exit` gives up after 30 s).
    assert_eq!(server.wait_exit().code(), Some(0));
    let (status, _) = session.finish();
    assert_ne!(status.code(), Some(0));
    // The fork is left behind for a janitor, lease and all.
    assert!(store.has_fork(&id));
}

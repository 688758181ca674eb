//! Test support: a real `forkbox serve` process on an ephemeral loopback port, driven by
//! the real OpenSSH client.

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the harness"
)]

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Generous bound for asynchronous cleanup to be observed (fork deletion after a
/// disconnect); a test fails only if it has not happened by then.
pub const CLEANUP_WAIT: Duration = Duration::from_secs(30);

/// `--auth-timeout` of test servers unless a test sets its own: a login on a loaded test
/// machine (debug build, other test binaries running) can take seconds, and must not
/// fail because of the server's default deadline.
pub const TEST_AUTH_TIMEOUT: &str = "120";

pub struct Server {
    child: Child,
    /// The rest of the server's stdout; `None` once a test took it.
    _stdout: Option<BufReader<ChildStdout>>,
    pub port: u16,
    pub data_dir: PathBuf,
    pub base: PathBuf,
    _tmp: tempfile::TempDir,
}

/// The `forkbox` binary the tests start: cargo's build of it, or `$FORKBOX_TEST_BIN` when
/// set (a copy of that build, so a test run is immune to another build replacing the
/// file in a shared target directory meanwhile).
pub fn server_binary() -> PathBuf {
    std::env::var_os("FORKBOX_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_forkbox")))
}

/// A directory tree used as the base in tests.
pub fn seed_base(dir: &Path) {
    std::fs::create_dir_all(dir.join("docs/deep")).unwrap();
    std::fs::write(dir.join("README.md"), "welcome\n").unwrap();
    std::fs::write(
        dir.join("docs/guide.txt"),
        "line one\nline two\nline three\n",
    )
    .unwrap();
    std::fs::write(dir.join("docs/deep/note.txt"), "deep\n").unwrap();
    std::fs::write(dir.join("shared.txt"), "base version\n").unwrap();
}

impl Server {
    /// Starts a server over a freshly seeded base.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    pub fn start_with(extra: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("base");
        seed_base(&base);
        let data_dir = tmp.path().join("data");
        Server::spawn(tmp, base, data_dir, extra)
    }

    /// Starts a server on an existing data dir and base (for restart tests).
    pub fn restart(
        tmp: tempfile::TempDir,
        base: PathBuf,
        data_dir: PathBuf,
        extra: &[&str],
    ) -> Server {
        Server::spawn(tmp, base, data_dir, extra)
    }

    /// Starts a second server sharing `other`'s data dir and base; its log goes to `log`.
    pub fn alongside(other: &Server, extra: &[&str], log: &Path) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let mut args: Vec<&str> = extra.to_vec();
        let log_arg = log.to_str().unwrap().to_string();
        args.push("--log-to-test-file");
        args.push(&log_arg);
        Server::spawn(tmp, other.base.clone(), other.data_dir.clone(), &args)
    }

    fn spawn(tmp: tempfile::TempDir, base: PathBuf, data_dir: PathBuf, extra: &[&str]) -> Server {
        let base_arg = base.clone();
        Server::spawn_configured(tmp, base, data_dir, extra, |cmd| {
            cmd.arg("--base").arg(&base_arg);
        })
    }

    /// Starts a server whose storage is set by `extra` alone (`--backend s3 ...`) rather
    /// than a local base directory; `configure` adjusts its command (environment: storage
    /// credentials). `--log-to-test-file F` works as with [`Server::start_with`]. The
    /// returned server's `base` is an empty directory that nothing uses.
    pub fn start_configured(extra: &[&str], configure: impl FnOnce(&mut Command)) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("base");
        std::fs::create_dir_all(&base).unwrap();
        let data_dir = tmp.path().join("data");
        Server::spawn_configured(tmp, base, data_dir, extra, configure)
    }

    /// `forkbox serve` on an ephemeral port with `data_dir`; `configure` adds its own
    /// arguments before `extra` and may change the environment.
    fn spawn_configured(
        tmp: tempfile::TempDir,
        base: PathBuf,
        data_dir: PathBuf,
        extra: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> Server {
        // `--log-to-test-file F` is the harness's own option: the server's stderr goes to F.
        let mut extra: Vec<&str> = extra.to_vec();
        let mut stderr = Stdio::inherit();
        if let Some(i) = extra.iter().position(|a| *a == "--log-to-test-file") {
            let file = std::fs::File::create(extra[i + 1]).unwrap();
            stderr = Stdio::from(file);
            extra.drain(i..i + 2);
        }
        let mut cmd = Command::new(server_binary());
        cmd.arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .arg("--data-dir")
            .arg(&data_dir);
        configure(&mut cmd);
        // Loading every WASI module at start costs each test server half a gigabyte and a
        // second of CPU, and would count against the memory bounds tests measure; the
        // WASI tests load what they run.
        cmd.arg("--wasm-lazy-load");
        if !extra.contains(&"--delete-deadline") {
            cmd.args(["--delete-deadline", "20"]);
        }
        if !extra.contains(&"--auth-timeout") {
            cmd.args(["--auth-timeout", TEST_AUTH_TIMEOUT]);
        }
        // Tests count the forks on disk as their sessions' forks; the pool of forks made
        // ahead of logins has tests of its own.
        if !extra.contains(&"--fork-pool") {
            cmd.args(["--fork-pool", "0"]);
        }
        // Tests run many short sessions from one address, some in retry loops; the rate
        // bound has tests of its own.
        if !extra.contains(&"--max-connections-per-minute-per-ip") {
            cmd.args(["--max-connections-per-minute-per-ip", "100000"]);
        }
        let mut child = cmd
            .args(&extra)
            .env("RUST_LOG", "forkbox=debug,info")
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start forkbox");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line from forkbox: {line:?}"));
        Server {
            child,
            _stdout: Some(stdout),
            port,
            data_dir,
            base,
            _tmp: tmp,
        }
    }

    /// Stops the server and hands back its directories, for a restart.
    pub fn stop(mut self) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let tmp = std::mem::replace(&mut self._tmp, tempfile::tempdir().unwrap());
        (tmp, self.base.clone(), self.data_dir.clone())
    }

    /// The server's next line on stdout after the first (which gave the SSH port): with
    /// `--http-listen`, where the side port listens; with `--audit stdout`, audit lines.
    /// Blocks until one comes.
    pub fn stdout_line(&mut self) -> String {
        let mut line = String::new();
        let stdout = self._stdout.as_mut().expect("stdout was taken");
        stdout.read_line(&mut line).unwrap();
        line
    }

    /// The address of the HTTP side port, read from the second line of stdout (the
    /// server must run with `--http-listen`).
    pub fn http_addr(&mut self) -> SocketAddr {
        let line = self.stdout_line();
        line.trim()
            .strip_prefix("forkbox http listening on ")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("unexpected second line from forkbox: {line:?}"))
    }

    /// Hands over the server's stdout past the lines read so far (to read it on another
    /// thread).
    pub fn take_stdout(&mut self) -> BufReader<ChildStdout> {
        self._stdout.take().expect("stdout was taken")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A `kB` field of the server process's `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in
    /// bytes.
    pub fn proc_status_bytes(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .unwrap_or_else(|| panic!("no {field} in /proc/<pid>/status:\n{status}"));
        let kib: u64 = line
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("unexpected {field} line: {line:?}"));
        kib * 1024
    }

    /// Resets the process's peak resident size (`VmHWM`) to its current one, so a later
    /// reading shows the peak of what happened since; false when the kernel refuses.
    pub fn reset_peak_rss(&self) -> bool {
        std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5").is_ok()
    }

    /// Sends a signal to the server process.
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .args([&format!("-{sig}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// Waits for the server process to exit; its exit status.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(start.elapsed() < CLEANUP_WAIT, "server did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `ssh` to this server's port, non-interactive and quiet; host-key, identity and
    /// destination options are the caller's.
    pub fn ssh_raw(&self) -> Command {
        let mut c = Command::new("ssh");
        c.args(["-p", &self.port.to_string()])
            .args(["-o", "LogLevel=ERROR", "-o", "BatchMode=yes"])
            .args(["-o", "ConnectTimeout=20", "-o", "IdentitiesOnly=yes"]);
        c
    }

    /// An `ssh` command line for this server as `user`, with no key (no command yet).
    pub fn ssh_cmd(&self, user: &str) -> Command {
        let mut c = self.ssh_raw();
        c.args(["-o", "StrictHostKeyChecking=no"])
            .args(["-o", "UserKnownHostsFile=/dev/null"])
            .args(["-o", "IdentityFile=/nonexistent"])
            .arg(format!("{user}@127.0.0.1"));
        c
    }

    /// An interactive session through `ssh -tt` as `user`, typed into as a person does.
    pub fn tty(&self, user: &str) -> TtySession {
        let mut child = self
            .ssh_cmd(user)
            .arg("-tt")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut out = child.stdout.take().unwrap();
        let seen = Arc::new(Mutex::new(String::new()));
        let reader = {
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = out.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    seen.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            })
        };
        TtySession {
            child,
            stdin,
            seen,
            reader: Some(reader),
        }
    }

    /// Runs `script` as an exec request; stdin is empty.
    pub fn ssh(&self, script: &str) -> Output {
        self.ssh_stdin(script, b"")
    }

    /// Runs `script` in a session logged in as `user` (`snap-<version>` starts from a
    /// snapshot).
    pub fn ssh_as(&self, user: &str, script: &str) -> Output {
        let mut cmd = self.ssh_cmd(user);
        cmd.arg(script);
        run_with_stdin(cmd, b"")
    }

    /// Logs in from snapshot `version`, which does not exist: refused with a clear
    /// message, nothing run.
    pub fn assert_no_snapshot(&self, version: &str) {
        let out = self.ssh_as(&format!("snap-{version}"), "echo in");
        assert_eq!(stdout(&out), "");
        assert!(
            stderr(&out).contains(&format!("forkbox: no snapshot {version}")),
            "{}",
            stderr(&out)
        );
        assert_ne!(out.status.code(), Some(0));
    }

    /// Runs `script` as an exec request with `stdin` piped in.
    pub fn ssh_stdin(&self, script: &str, stdin: &[u8]) -> Output {
        let mut cmd = self.ssh_cmd("anyone");
        cmd.arg(script);
        run_with_stdin(cmd, stdin)
    }

    /// The session forks present on disk right now.
    pub fn forks_on_disk(&self) -> Vec<String> {
        match std::fs::read_dir(self.data_dir.join("forks")) {
            Ok(rd) => rd
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Waits until no fork is left on disk; fails the test if some stay.
    pub fn wait_no_forks(&self) {
        let start = Instant::now();
        while !self.forks_on_disk().is_empty() {
            assert!(
                start.elapsed() < CLEANUP_WAIT,
                "forks still on disk after disconnect: {:?}",
                self.forks_on_disk()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `log` has `n` lines containing `needle`; fails the test if it never does.
    pub fn wait_log(log: &Path, needle: &str, n: usize) {
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if text.lines().filter(|l| l.contains(needle)).count() >= n {
                return;
            }
            assert!(
                start.elapsed() < CLEANUP_WAIT,
                "{needle:?} not logged {n} times:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts a session that writes a file and then sleeps for minutes, and waits until
    /// its fork exists; the caller kills the returned `ssh` client.
    pub fn long_session(&self) -> std::process::Child {
        let mut cmd = self.ssh_cmd("anyone");
        cmd.arg("echo x > f; sleep 600");
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.wait_forks(1);
        child
    }

    /// Waits until at least `n` forks exist (a session is up).
    pub fn wait_forks(&self, n: usize) {
        let start = Instant::now();
        while self.forks_on_disk().len() < n {
            assert!(
                start.elapsed() < CLEANUP_WAIT,
                "session fork never appeared"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// What became of a raw TCP connection to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// The server sent its SSH identification line: it took the connection.
    Greeted,
    /// The server closed it without a word.
    Closed,
}

impl Server {
    /// Opens `n` TCP connections to the server from source address `from` (any
    /// `127.x.y.z` works on Linux), one after the other; they say nothing.
    pub fn connect_from(&self, from: &str, n: usize) -> Vec<TcpStream> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let to = SocketAddr::from(([127, 0, 0, 1], self.port));
        let from: IpAddr = from.parse().unwrap();
        rt.block_on(async {
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                let socket = tokio::net::TcpSocket::new_v4().unwrap();
                socket.bind(SocketAddr::new(from, 0)).unwrap();
                let stream = socket.connect(to).await.unwrap().into_std().unwrap();
                stream.set_nonblocking(false).unwrap();
                stream.set_read_timeout(Some(CLEANUP_WAIT)).unwrap();
                out.push(stream);
            }
            out
        })
    }
}

/// Reads the server's first line on `stream`: [`Fate::Greeted`] if it is forkbox's SSH
/// identification, [`Fate::Closed`] if the connection ends first. Fails the test if
/// neither happens within [`CLEANUP_WAIT`].
pub fn fate(stream: &mut TcpStream) -> Fate {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return Fate::Closed,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return Fate::Closed,
            Err(e) => panic!("no word from the server: {e}"),
        }
    }
    let line = String::from_utf8_lossy(&line);
    assert!(
        line.starts_with("SSH-2.0-forkbox"),
        "unexpected line {line:?}"
    );
    Fate::Greeted
}

/// Reads `stream` until the server closes it, discarding what comes; fails the test if it
/// stays open for [`CLEANUP_WAIT`].
pub fn wait_closed(stream: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return,
            Err(e) => panic!("the server never closed the connection: {e}"),
        }
    }
}

/// Whether the server still serves a connection that was greeted: sends a client
/// identification and looks for the server's key exchange answer.
pub fn still_served(stream: &mut TcpStream) -> bool {
    if stream.write_all(b"SSH-2.0-probe\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 1];
    match stream.read(&mut buf) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::ConnectionReset => false,
        Err(e) => panic!("no word from the server: {e}"),
    }
}

/// Runs `cmd` with `stdin` piped in, like [`run_with_stdin`], but fails the test instead
/// of hanging if it has not finished within `guard` (a hang guard, not a timing check).
pub fn run_guarded(mut cmd: Command, stdin: &[u8], guard: Duration) -> Output {
    let (mut child, writer) = spawn_with_stdin(&mut cmd, stdin);
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > guard {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {guard:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    writer.join().unwrap();
    Output {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd` with its streams piped and a thread feeding it `stdin` (so a command that
/// writes before it reads cannot deadlock against us).
fn spawn_with_stdin(
    cmd: &mut Command,
    stdin: &[u8],
) -> (std::process::Child, std::thread::JoinHandle<()>) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ssh");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    (child, writer)
}

pub fn run_with_stdin(mut cmd: Command, stdin: &[u8]) -> Output {
    let (child, writer) = spawn_with_stdin(&mut cmd, stdin);
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every file under `dir` with its bytes, and every directory, for byte-for-byte comparison.
pub fn tree(dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Option<Vec<u8>>)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                out.push((rel, None));
                walk(root, &p, out);
            } else {
                out.push((rel, Some(std::fs::read(&p).unwrap())));
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

/// An `ssh -tt` session ([`Server::tty`]): its stdin, and everything it printed so far,
/// gathered by a reader thread.
pub struct TtySession {
    child: Child,
    pub stdin: ChildStdin,
    seen: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl TtySession {
    /// Everything the session printed so far.
    pub fn text(&self) -> String {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until `needle` appears after byte `from` of the output, failing after
    /// `limit`; gives where it ends.
    pub fn wait_for(&self, needle: &str, from: usize, limit: Duration) -> usize {
        let start = Instant::now();
        loop {
            {
                let text = self.seen.lock().unwrap();
                if let Some(at) = text.get(from..).and_then(|t| t.find(needle)) {
                    return from + at + needle.len();
                }
            }
            assert!(
                start.elapsed() < limit,
                "never saw {needle:?} after byte {from} in {:?}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for `ssh` to exit and for the last of its output; gives its status and
    /// everything it printed.
    pub fn finish(mut self) -> (ExitStatus, String) {
        let status = self.child.wait().unwrap();
        if let Some(r) = self.reader.take() {
            r.join().unwrap();
        }
        (status, self.text())
    }
}

//! The WASI host from a guest's side: the probe guest (`wasm/guests/probe`, a Rust std
//! program built here for wasm32-wasip1) and small WAT modules run as [`WasiTool`]s over
//! the in-memory filesystem and over a real session `Vfs` (an overlay fork), checking
//! what they print, the files they leave and their exit statuses.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on a broken assumption"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use forkbox::fork::{ForkStrategy, Lease, Overlay, ServerId, SessionId};
use forkbox::storage::Store;
use forkbox::vfs::{Quota, Vfs};
use forkbox::wasi::{EngineConfig, Entry, ModuleSpec, WasiEngine, WasiTool};
use forkbox_commands::testing::{MemFs, NullLauncher};
use forkbox_commands::{
    Budget, Command, Context, FileSystem, Input, PullSource, Status, TermSize, WriteMode,
    exit_status, pipe,
};
use tokio_util::sync::CancellationToken;

/// The target dir cargo builds into (where the probe and the module cache go too).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// Builds the probe guest once per test run; fails loudly if it cannot.
fn probe_wasm() -> PathBuf {
    static PROBE: OnceLock<PathBuf> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let target = target_dir().join("wasi-probe");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
            let out = std::process::Command::new(cargo)
                .args([
                    "build",
                    "--release",
                    "--target",
                    "wasm32-wasip1",
                    "--manifest-path",
                ])
                .arg(root.join("wasm/guests/probe/Cargo.toml"))
                .arg("--target-dir")
                .arg(&target)
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_ENCODED_RUSTFLAGS")
                .output()
                .expect("running cargo to build the WASI probe guest");
            assert!(
                out.status.success(),
                "the WASI probe guest (wasm/guests/probe) could not be built for \
                 wasm32-wasip1 (is the target installed? `rustup target add wasm32-wasip1`):\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            target.join("wasm32-wasip1/release/forkbox-wasi-probe.wasm")
        })
        .clone()
}

/// One engine for the whole test binary, as a server has one.
fn engine() -> Arc<WasiEngine> {
    static ENGINE: OnceLock<Arc<WasiEngine>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            WasiEngine::new(EngineConfig {
                cache_dir: Some(target_dir().join("wasmtime-cache")),
                ..EngineConfig::default()
            })
            .expect("engine")
        })
        .clone()
}

fn probe() -> WasiTool {
    WasiTool::new(engine(), ModuleSpec::command("probe", probe_wasm()))
}

/// What one run gave.
#[derive(Debug)]
struct Ran {
    status: Status,
    out: String,
    err: String,
}

/// Everything a run needs besides the tool and its args.
struct Setup {
    fs: Arc<dyn FileSystem>,
    cwd: String,
    stdin: Input,
    env: BTreeMap<String, String>,
    cancel: CancellationToken,
    tty: Option<TermSize>,
}

impl Setup {
    fn on(fs: Arc<dyn FileSystem>) -> Setup {
        Setup {
            fs,
            cwd: "/".to_string(),
            stdin: Input::empty(),
            env: BTreeMap::new(),
            cancel: CancellationToken::new(),
            tty: None,
        }
    }

    fn cwd(mut self, cwd: &str) -> Setup {
        self.cwd = cwd.to_string();
        self
    }

    fn stdin(mut self, input: Input) -> Setup {
        self.stdin = input;
        self
    }

    async fn run(&self, tool: &WasiTool, args: &[&str]) -> Ran {
        let (out_w, out_r) = pipe();
        let (err_w, err_r) = pipe();
        let ctx = Context {
            stdin: self.stdin.clone(),
            stdout: out_w,
            stderr: err_w,
            env: self.env.clone(),
            env_last: Vec::new(),
            cwd: self.cwd.clone(),
            fs: self.fs.clone(),
            cancel: self.cancel.clone(),
            tty: self.tty,
            terminal: None,
            launcher: NullLauncher::new(&[]),
            budget: Budget::default(),
        };
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let run = async move {
            let r = tool.run(&ctx, args).await;
            exit_status(tool.name(), r, &ctx.stderr).await
        };
        let drain = |i: Input| async move { i.read_to_end(1 << 26).await.unwrap() };
        let (status, out, err) = tokio::join!(run, drain(out_r), drain(err_r));
        Ran {
            status,
            out: String::from_utf8_lossy(&out).into_owned(),
            err: String::from_utf8_lossy(&err).into_owned(),
        }
    }
}

/// A fresh overlay fork over an empty in-memory bucket: a real session filesystem.
async fn session_vfs() -> Arc<dyn FileSystem> {
    let overlay = Overlay::new(Store::memory(), Store::memory());
    let lease = Lease::new(ServerId::new(), Duration::from_secs(600));
    let view = overlay.create(SessionId::new(), &lease).await.unwrap();
    Arc::new(Vfs::with_quota(view, Quota::UNLIMITED))
}

async fn put(fs: &Arc<dyn FileSystem>, path: &str, data: &str) {
    let mut w = fs.open_write(path, WriteMode::Truncate).await.unwrap();
    w.write(data.as_bytes()).await.unwrap();
    w.close().await.unwrap();
}

async fn get(fs: &Arc<dyn FileSystem>, path: &str) -> String {
    let b = forkbox_commands::fs::read_all(fs.as_ref(), path, 1 << 20)
        .await
        .unwrap();
    String::from_utf8(b).unwrap()
}

/// Runs the probe and expects status 0 with no stderr; gives stdout.
async fn ok(s: &Setup, args: &[&str]) -> String {
    let r = s.run(&probe(), args).await;
    assert_eq!((r.status, r.err.as_str()), (0, ""), "probe {args:?}: {r:?}");
    r.out
}

/// File operations a guest does, over any filesystem.
async fn file_operations(fs: Arc<dyn FileSystem>) {
    fs.mkdir("/work").await.unwrap();
    let s = Setup::on(fs.clone()).cwd("/work");
    ok(&s, &["write", "a.txt", "hello"]).await;
    assert_eq!(get(&fs, "/work/a.txt").await, "hello");
    ok(&s, &["append", "a.txt", " world"]).await;
    assert_eq!(ok(&s, &["cat", "a.txt"]).await, "hello world");
    assert_eq!(
        ok(&s, &["stat", "a.txt"]).await,
        format!("file 11 {}\n", now_secs_prefix(&fs, "/work/a.txt").await)
    );
    let r = s.run(&probe(), &["create-new", "a.txt"]).await;
    assert_eq!(
        (r.status, r.out.as_str()),
        (1, "error: errno 20\n"),
        "EEXIST"
    );
    let r = s.run(&probe(), &["cat", "missing"]).await;
    assert_eq!(r.out, "error: errno 44\n", "ENOENT");

    ok(&s, &["mkdir", "d"]).await;
    ok(&s, &["mkdir-p", "d/e/f"]).await;
    ok(&s, &["write", "d/e/f/g", "x"]).await;
    assert_eq!(ok(&s, &["ls", "."]).await, "a.txt\nd/\n");
    let r = s.run(&probe(), &["rmdir", "d"]).await;
    assert_eq!(r.out, "error: errno 55\n", "ENOTEMPTY");
    ok(&s, &["rename", "d/e/f/g", "moved"]).await;
    assert_eq!(get(&fs, "/work/moved").await, "x");
    ok(&s, &["rm-r", "d"]).await;
    assert!(fs.stat("/work/d").await.is_err());

    ok(&s, &["symlink", "a.txt", "link"]).await;
    assert_eq!(ok(&s, &["readlink", "link"]).await, "a.txt\n");
    assert_eq!(ok(&s, &["cat", "link"]).await, "hello world");
    assert!(ok(&s, &["lstat", "link"]).await.starts_with("symlink 5 "));
    assert_eq!(ok(&s, &["ls", "."]).await, "a.txt\nlink@\nmoved\n");

    ok(&s, &["set-len", "a.txt", "5"]).await;
    assert_eq!(get(&fs, "/work/a.txt").await, "hello");
    ok(&s, &["utimes", "a.txt", "1000000000"]).await;
    assert_eq!(ok(&s, &["stat", "a.txt"]).await, "file 5 1000000000\n");

    assert_eq!(ok(&s, &["seek", "s.txt"]).await, "world 11\n");
    assert_eq!(ok(&s, &["pio", "p.txt"]).await, "2 4AB7 2\n");
    assert_eq!(get(&fs, "/work/p.txt").await, "01234AB789");
    ok(&s, &["rm", "p.txt"]).await;
    assert!(fs.stat("/work/p.txt").await.is_err());
}

/// The mtime of `path` in seconds, as the guest should report it.
async fn now_secs_prefix(fs: &Arc<dyn FileSystem>, path: &str) -> u64 {
    let m = fs.stat(path).await.unwrap();
    m.mtime
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn files_over_memfs() {
    file_operations(MemFs::new()).await;
}

#[tokio::test]
async fn files_over_a_session_vfs() {
    file_operations(session_vfs().await).await;
}

/// A listing bigger than any one `fd_readdir` buffer is served across calls by cookie,
/// and stays stable while the guest removes what it listed.
async fn big_directory(fs: Arc<dyn FileSystem>) {
    fs.mkdir("/big").await.unwrap();
    let mut want = Vec::new();
    for i in 0..600 {
        let name = format!("{i:04}-{}", "n".repeat(200));
        put(&fs, &format!("/big/{name}"), "").await;
        want.push(name);
    }
    want.sort();
    let s = Setup::on(fs.clone());
    let got = ok(&s, &["ls", "/big"]).await;
    assert_eq!(
        got,
        want.iter().map(|n| format!("{n}\n")).collect::<String>()
    );
    ok(&s, &["rm-r", "/big"]).await;
    assert!(fs.stat("/big").await.is_err());
}

#[tokio::test]
async fn big_directory_over_memfs() {
    big_directory(MemFs::new()).await;
}

#[tokio::test]
async fn big_directory_over_a_session_vfs() {
    big_directory(session_vfs().await).await;
}

#[tokio::test]
async fn cwd_args_and_environment() {
    let fs: Arc<dyn FileSystem> = MemFs::new();
    fs.mkdir("/home").await.unwrap();
    let mut s = Setup::on(fs.clone()).cwd("/home");
    s.env.insert("GREETING".into(), "hi there".into());
    assert_eq!(ok(&s, &["cwd"]).await, "/home\n");
    ok(&s, &["write", "rel", "1"]).await;
    assert_eq!(get(&fs, "/home/rel").await, "1");
    // Without chdir($PWD) a wasi-libc program thinks it is in `/` and hands the host `x`
    // for both `x` and `/x`; the host looks in the shell's directory first (cwd_first).
    assert_eq!(ok(&s, &["--no-chdir", "cwd"]).await, "/\n");
    ok(&s, &["--no-chdir", "write", "rel2", "2"]).await;
    assert_eq!(get(&fs, "/home/rel2").await, "2");
    assert!(
        fs.stat("/rel2").await.is_err(),
        "a new name goes to the shell's directory"
    );
    // A name only the root has is the root's; one both have is the shell directory's.
    put(&fs, "/top", "root").await;
    assert_eq!(ok(&s, &["--no-chdir", "cat", "/top"]).await, "root");
    put(&fs, "/home/top", "home").await;
    assert_eq!(ok(&s, &["--no-chdir", "cat", "top"]).await, "home");
    // A new name whose directory exists only from the root is made there.
    fs.mkdir("/only").await.unwrap();
    ok(&s, &["--no-chdir", "write", "/only/n", "3"]).await;
    assert_eq!(get(&fs, "/only/n").await, "3");
    // Without cwd_first the root is the only place names are looked for.
    let mut spec = ModuleSpec::command("probe", probe_wasm());
    spec.cwd_first = false;
    let rooted = WasiTool::new(engine(), spec);
    assert_eq!(
        s.run(&rooted, &["--no-chdir", "cat", "top"]).await.out,
        "root"
    );

    assert_eq!(
        ok(&s, &["args", "a b", "", "c"]).await,
        "probe\nargs\na b\n\nc\n"
    );
    assert_eq!(ok(&s, &["env"]).await, "GREETING=hi there\nPWD=/home\n");

    let mut spec = ModuleSpec::command("py", probe_wasm());
    spec.argv0 = Some("/usr/local/bin/python.wasm".into());
    spec.env = vec![
        ("PYTHONHOME".into(), "/usr/local".into()),
        ("GREETING".into(), "default".into()),
    ];
    let tool = WasiTool::new(engine(), spec);
    let r = s.run(&tool, &["args"]).await;
    assert_eq!(r.out, "/usr/local/bin/python.wasm\nargs\n");
    let r = s.run(&tool, &["env"]).await;
    assert_eq!(
        r.out, "GREETING=hi there\nPWD=/home\nPYTHONHOME=/usr/local\n",
        "the command's variables win"
    );
}

#[tokio::test]
async fn stdio_clock_and_random() {
    let s = Setup::on(MemFs::new()).stdin(Input::from_bytes("from stdin\n"));
    assert_eq!(ok(&s, &["stdin"]).await, "from stdin\n");
    let r = s.run(&probe(), &["stderr", "oops\n"]).await;
    assert_eq!(
        (r.status, r.out.as_str(), r.err.as_str()),
        (0, "", "oops\n")
    );
    assert_eq!(ok(&s, &["clock"]).await, "true true\n");
    assert_eq!(ok(&s, &["random"]).await, "ok true\n");
    assert_eq!(ok(&s, &["sleep", "30"]).await, "slept\n");
}

#[tokio::test]
async fn poll_waits_on_stdin_and_timers() {
    let s = Setup::on(MemFs::new()).stdin(Input::from_bytes("data\n"));
    assert_eq!(ok(&s, &["poll-stdin", "10000"]).await, "ready\ndata\n");
    let s = Setup::on(MemFs::new());
    assert_eq!(ok(&s, &["poll-stdin", "10000"]).await, "eof\n");
    // A pipe whose writer is alive but silent: the timer fires.
    let (w, r) = pipe();
    let s = Setup::on(MemFs::new()).stdin(r);
    assert_eq!(ok(&s, &["poll-stdin", "50"]).await, "timeout\n");
    // Data that arrives while the guest waits wakes it.
    let (w2, r2) = pipe();
    let s = Setup::on(MemFs::new()).stdin(r2);
    let feed = async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        w2.write_all(b"late\n").await.unwrap();
        drop(w2);
    };
    let (out, ()) = tokio::join!(ok(&s, &["poll-stdin", "60000"]), feed);
    assert_eq!(out, "ready\nlate\n");
    drop(w);
}

/// What a terminal's input is: bytes read on demand.
struct Keyboard(Option<bytes::Bytes>);

#[async_trait::async_trait]
impl PullSource for Keyboard {
    async fn next(&mut self) -> Option<bytes::Bytes> {
        self.0.take()
    }
}

#[tokio::test]
async fn the_terminal_is_a_character_device_and_pipes_are_not() {
    let s = Setup::on(MemFs::new());
    assert_eq!(ok(&s, &["raw", "fdstat", "0"]).await, "type 0 seek false\n");
    assert_eq!(ok(&s, &["raw", "fdstat", "1"]).await, "type 0 seek false\n");
    assert_eq!(ok(&s, &["raw", "fdstat", "3"]).await, "type 3 seek true\n");
    assert_eq!(ok(&s, &["raw", "fdstat", "9"]).await, "errno 8\n");
    let mut s = Setup::on(MemFs::new()).stdin(Input::from_source(Box::new(Keyboard(Some(
        bytes::Bytes::from_static(b"typed\n"),
    )))));
    s.tty = Some(TermSize { cols: 80, rows: 24 });
    // Both a terminal, as `isatty` asks: a character device that cannot seek.
    assert_eq!(ok(&s, &["raw", "fdstat", "0"]).await, "type 2 seek false\n");
    assert_eq!(ok(&s, &["raw", "fdstat", "1"]).await, "type 2 seek false\n");
    assert_eq!(ok(&s, &["stdin"]).await, "typed\n");
}

#[tokio::test]
async fn exit_status_trap_and_missing_module() {
    let s = Setup::on(MemFs::new());
    let r = s.run(&probe(), &["exit", "7"]).await;
    assert_eq!((r.status, r.err.as_str()), (7, ""));
    let r = s.run(&probe(), &["exit", "0"]).await;
    assert_eq!(r.status, 0);
    let r = s.run(&probe(), &["abort"]).await;
    assert_eq!(r.status, 134);
    assert!(r.err.starts_with("probe: wasm trap: "), "{r:?}");
    let r = s.run(&probe(), &["no-such-sub"]).await;
    assert_eq!(r.status, 2);

    let gone = WasiTool::new(
        engine(),
        ModuleSpec::command("gone", "/nonexistent/gone.wasm"),
    );
    let r = s.run(&gone, &[]).await;
    assert_eq!(
        (r.status, r.err.as_str()),
        (
            127,
            "gone: module not provisioned: /nonexistent/gone.wasm (run wasm/provision)\n"
        )
    );
}

#[tokio::test]
async fn escapes_stay_inside_the_session() {
    for fs in [MemFs::new() as Arc<dyn FileSystem>, session_vfs().await] {
        fs.mkdir("/work").await.unwrap();
        put(&fs, "/top.txt", "session top").await;
        let s = Setup::on(fs.clone()).cwd("/work");
        ok(&s, &["symlink", "/", "root"]).await;
        ok(&s, &["symlink", "../../../../..", "up"]).await;
        let out = ok(
            &s,
            &[
                "escape",
                "../../etc/passwd",
                "/etc/passwd",
                "../../../../../../top.txt",
                "root/../../top.txt",
                "up/../../top.txt",
                "up/etc/passwd",
                "root/etc/hostname",
            ],
        )
        .await;
        assert_eq!(
            out,
            "../../etc/passwd: errno 44\n\
             /etc/passwd: errno 44\n\
             ../../../../../../top.txt: session top\n\
             root/../../top.txt: session top\n\
             up/../../top.txt: session top\n\
             up/etc/passwd: errno 44\n\
             root/etc/hostname: errno 44\n"
        );
        // Writing through the same tricks lands in the session root, never the host.
        ok(&s, &["write", "up/../../escaped", "x"]).await;
        assert_eq!(get(&fs, "/escaped").await, "x");
        let r = s.run(&probe(), &["link", "/top.txt", "hard"]).await;
        assert_eq!(r.out, "error: errno 58\n", "hard links: ENOTSUP");
    }
}

#[tokio::test]
async fn errno_corners_of_raw_calls() {
    let s = Setup::on(MemFs::new());
    for (call, want) in [
        (&["link", "a", "b"][..], "errno 58"),
        (&["prestat"], "ok /"),
        (&["prestat-4"], "errno 8"),
        (&["renumber-bad"], "errno 8"),
        (&["close-bad"], "errno 8"),
        (&["seek-stdout"], "errno 70"),
        (&["raise"], "errno 52"),
        (&["sock"], "errno 58"),
        (&["yield"], "ok"),
        (&["open-abs", "/etc"], "errno 63"),
        (&["dir-read"], "errno 31"),
    ] {
        let mut args = vec!["raw"];
        args.extend_from_slice(call);
        assert_eq!(ok(&s, &args).await, format!("{want}\n"), "raw {call:?}");
    }
}

#[tokio::test]
async fn memory_limit_ends_the_guest_and_not_the_session() {
    let mut spec = ModuleSpec::command("probe", probe_wasm());
    spec.memory_limit = Some(64 << 20);
    let tool = WasiTool::new(engine(), spec);
    let s = Setup::on(MemFs::new());
    let r = s.run(&tool, &["alloc"]).await;
    assert_eq!(
        (r.status, r.err.as_str()),
        (137, "probe: out of memory (limit 64 MiB)\n")
    );
    let r = s.run(&tool, &["args"]).await;
    assert_eq!(r.status, 0, "the next guest runs: {r:?}");
}

#[tokio::test]
async fn cancel_stops_a_spinning_guest() {
    let s = Setup::on(MemFs::new());
    let cancel = s.cancel.clone();
    let stop = async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    };
    let tool = probe();
    let run = tokio::time::timeout(Duration::from_secs(30), s.run(&tool, &["spin"]));
    let (r, ()) = tokio::join!(run, stop);
    let r = r.expect("a cancelled guest ends");
    assert_eq!((r.status, r.err.as_str()), (130, ""));
}

#[tokio::test]
async fn cancel_stops_a_guest_blocked_on_stdin() {
    let (w, input) = pipe();
    let s = Setup::on(MemFs::new()).stdin(input);
    let cancel = s.cancel.clone();
    let stop = async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    };
    let tool = probe();
    let run = tokio::time::timeout(Duration::from_secs(30), s.run(&tool, &["stdin"]));
    let (r, ()) = tokio::join!(run, stop);
    assert_eq!(r.expect("a cancelled guest ends").status, 130);
    drop(w);
}

/// A guest that never stops computing still lets other tasks on its thread run: it
/// yields at every epoch tick.
#[tokio::test(flavor = "current_thread")]
async fn a_spinning_guest_yields_to_other_tasks() {
    let s = Setup::on(MemFs::new());
    let cancel = s.cancel.clone();
    let other = async move {
        // Needs the runtime's one thread several times over while the guest spins.
        for _ in 0..5 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cancel.cancel();
    };
    let tool = probe();
    let run = tokio::time::timeout(Duration::from_secs(30), s.run(&tool, &["spin"]));
    let (r, ()) = tokio::join!(run, other);
    assert_eq!(r.expect("the other task ran and cancelled it").status, 130);
}

#[tokio::test]
async fn a_closed_stdout_stops_the_guest_like_sigpipe() {
    let (out_w, out_r) = pipe();
    let (err_w, err_r) = pipe();
    drop(out_r);
    let ctx = Context {
        stdin: Input::empty(),
        stdout: out_w,
        stderr: err_w,
        env: BTreeMap::new(),
        env_last: Vec::new(),
        cwd: "/".into(),
        fs: MemFs::new(),
        cancel: CancellationToken::new(),
        tty: None,
        terminal: None,
        launcher: NullLauncher::new(&[]),
        budget: Budget::default(),
    };
    let tool = probe();
    let r = tool.run(&ctx, vec!["yes".into()]).await;
    let status = exit_status("probe", r, &ctx.stderr).await;
    drop(ctx);
    assert_eq!(status, 141);
    assert_eq!(err_r.read_to_end(1024).await.unwrap(), b"");
}

#[tokio::test]
async fn two_guests_at_once_see_only_their_own_files() {
    let a: Arc<dyn FileSystem> = MemFs::with_files(&[("/mine-a", "A")]);
    let b = session_vfs().await;
    put(&b, "/mine-b", "B").await;
    let (sa, sb) = (Setup::on(a.clone()), Setup::on(b.clone()));
    let (ra, rb) = tokio::join!(
        async {
            ok(&sa, &["write", "/new-a", "1"]).await;
            ok(&sa, &["ls", "/"]).await
        },
        async {
            ok(&sb, &["write", "/new-b", "2"]).await;
            ok(&sb, &["ls", "/"]).await
        }
    );
    assert_eq!(ra, "mine-a\nnew-a\n");
    assert!(!rb.contains("-a"), "{rb}");
    assert!(rb.contains("mine-b\nnew-b\n"), "{rb}");
}

/// Writes `wat` as a module file and gives a tool for it.
fn wat_tool(dir: &Path, name: &str, wat: &str, entry: Entry, stub: bool) -> WasiTool {
    let path = dir.join(format!("{name}.wasm"));
    std::fs::write(&path, wat).unwrap();
    let mut spec = ModuleSpec::command(name, path);
    spec.entry = entry;
    spec.host_call_stub = stub;
    WasiTool::new(engine(), spec)
}

const HELLO_WAT: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "hi\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 3))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#;

#[tokio::test]
async fn wat_modules_command_reactor_and_host_stub() {
    let dir = tempfile::tempdir().unwrap();
    let s = Setup::on(MemFs::new());
    let hello = wat_tool(dir.path(), "hello", HELLO_WAT, Entry::Command, false);
    let r = s.run(&hello, &[]).await;
    assert_eq!((r.status, r.out.as_str()), (0, "hi\n"));

    let reactor = wat_tool(
        dir.path(),
        "reactor",
        r#"(module
          (import "host" "call" (func $call (param i32 i32 i32 i32) (result i32)))
          (memory (export "memory") 1)
          (global $g (mut i32) (i32.const 0))
          (func (export "_initialize") (global.set $g (i32.const 40)))
          (func (export "run") (result i32)
            (i32.add (global.get $g) (call $call (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0)))))"#,
        Entry::Reactor {
            init: "_initialize".into(),
            run: "run".into(),
        },
        true,
    );
    let r = s.run(&reactor, &[]).await;
    assert_eq!(r.status, 39, "init ran, host::call answered -1: {r:?}");

    // Without the stub the import is missing: a clear error, not a panic.
    let unstubbed = wat_tool(
        dir.path(),
        "unstubbed",
        r#"(module (import "host" "call" (func (param i32 i32 i32 i32) (result i32))) (func (export "_start")))"#,
        Entry::Command,
        false,
    );
    let r = s.run(&unstubbed, &[]).await;
    assert_eq!(r.status, 126);
    assert!(r.err.starts_with("unstubbed: module "), "{r:?}");

    let trap = wat_tool(
        dir.path(),
        "trap",
        r#"(module (memory (export "memory") 1) (func (export "_start") unreachable))"#,
        Entry::Command,
        false,
    );
    let r = s.run(&trap, &[]).await;
    assert_eq!(r.status, 134);
    assert!(r.err.starts_with("trap: wasm trap: "), "{r:?}");

    // Unbounded recursion exhausts the guest's stack: a trap, the host goes on.
    let deep = wat_tool(
        dir.path(),
        "deep",
        r#"(module (func $f (call $f)) (func (export "_start") (call $f)))"#,
        Entry::Command,
        false,
    );
    let r = s.run(&deep, &[]).await;
    assert_eq!(r.status, 134);
    assert!(r.err.starts_with("deep: wasm trap: "), "{r:?}");

    // Initial memory past the limit: out of memory before the guest runs.
    let mut spec = ModuleSpec::command("huge", dir.path().join("huge.wasm"));
    std::fs::write(
        &spec.path,
        r#"(module (memory (export "memory") 2000) (func (export "_start")))"#,
    )
    .unwrap();
    spec.memory_limit = Some(64 << 20);
    let r = s.run(&WasiTool::new(engine(), spec), &[]).await;
    assert_eq!(
        (r.status, r.err.as_str()),
        (137, "huge: out of memory (limit 64 MiB)\n")
    );

    // A pointer outside memory is EFAULT (21), not a host crash.
    let fault = wat_tool(
        dir.path(),
        "fault",
        r#"(module
          (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
          (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
          (memory (export "memory") 1)
          (func (export "_start")
            (i32.store (i32.const 0) (i32.const 65530))
            (i32.store (i32.const 4) (i32.const 100))
            (call $exit (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#,
        Entry::Command,
        false,
    );
    let r = s.run(&fault, &[]).await;
    assert_eq!((r.status, r.out.as_str()), (21, ""));

    let bad = wat_tool(dir.path(), "bad", "not a module", Entry::Command, false);
    let r = s.run(&bad, &[]).await;
    assert_eq!(r.status, 126);
    assert!(r.err.starts_with("bad: module "), "{r:?}");
}

//! The WASI tools of `wasm/manifest.toml`, run by name through a real session shell over
//! a real fork (overlay on a local base), with the server's registry and system mounts,
//! exactly as `forkbox serve` sets them up from the `--wasm-dir` (`$FORKBOX_WASM_DIR`,
//! else `~/.cache/forkbox/wasm`: run `wasm/provision` first; `.ci/run` does).
//!
//! Every tool of the manifest has tests here named `<tool>_…`;
//! [`every_manifest_tool_has_a_test`] fails the run for one that has none.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on a broken assumption"
)]

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use forkbox::fork::{ForkStrategy, Lease, Overlay, ServerId, SessionId};
use forkbox::registry::Registry;
use forkbox::shell::{Shell, ShellConfig, Stdio};
use forkbox::vfs::system::SystemMounts;
use forkbox::wasi::manifest::Manifest;
use forkbox::wasi::tools::{Setup, WasiConfig};
use forkbox_commands::{FileSystem, Input, pipe};
use tokio_util::sync::CancellationToken;

/// The session's working directory: `/`, where an SSH session starts.
const WORK: &str = "/";

/// Longest any one script here may take (a first run may load a module from the cache).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);

struct Server {
    registry: Arc<Registry>,
    mounts: SystemMounts,
}

/// The server's WASI set-up, once per test binary (as once per server).
fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let config = WasiConfig {
            wasm_dir: forkbox::config::default_wasm_dir(),
            memory_limit: forkbox::config::DEFAULT_WASM_MEMORY,
        };
        let Setup {
            registry,
            mounts,
            missing,
            ..
        } = forkbox::wasi::tools::setup(&config).expect("WASI set-up");
        assert!(
            missing.is_empty(),
            "WASI tools not provisioned in {} (run wasm/provision): {:#?}",
            config.wasm_dir.display(),
            missing.iter().map(|m| &m.reason).collect::<Vec<_>>()
        );
        Server {
            registry: Arc::new(registry),
            mounts,
        }
    })
}

/// One session: a fork of an empty base, and a shell in `/`.
struct Session {
    shell: Shell,
    fs: Arc<dyn FileSystem>,
    _base: tempfile::TempDir,
}

struct Ran {
    status: i32,
    out: String,
    err: String,
}

impl std::fmt::Debug for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "status {}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.out, self.err
        )
    }
}

async fn session() -> Session {
    let server = server();
    let base_dir = tempfile::tempdir().unwrap();
    let base = forkbox::storage::Store::local(base_dir.path()).unwrap();
    let overlay = Overlay::new(base, forkbox::storage::Store::memory());
    let lease = Lease::new(ServerId::new(), Duration::from_secs(3600));
    let view = overlay.create(SessionId::new(), &lease).await.unwrap();
    let vfs: Arc<dyn FileSystem> = Arc::new(forkbox::vfs::Vfs::with_quota(
        view,
        forkbox::vfs::Quota::default(),
    ));
    let fs: Arc<dyn FileSystem> = Arc::new(forkbox::vfs::mounts::Mounts::with_system(
        vfs,
        &server.mounts,
    ));
    let shell = Shell::new(ShellConfig {
        fs: fs.clone(),
        registry: server.registry.clone(),
        env: vec![
            ("HOME".into(), WORK.into()),
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
            ("LC_ALL".into(), "C".into()),
        ],
        cwd: WORK.into(),
        interactive: false,
        budget: forkbox_commands::Budget::default(),
    });
    Session {
        shell,
        fs,
        _base: base_dir,
    }
}

impl Session {
    async fn run(&mut self, script: &str) -> Ran {
        self.run_with(script, CancellationToken::new()).await
    }

    async fn run_with(&mut self, script: &str, cancel: CancellationToken) -> Ran {
        let (out_w, out_r) = pipe();
        let (err_w, err_r) = pipe();
        let stdio = Stdio {
            stdin: Input::empty(),
            stdout: out_w,
            stderr: err_w,
            tty: None,
            terminal: None,
        };
        let read_out =
            tokio::spawn(async move { out_r.read_to_end(64 << 20).await.unwrap_or_default() });
        let read_err =
            tokio::spawn(async move { err_r.read_to_end(64 << 20).await.unwrap_or_default() });
        let status = tokio::time::timeout(
            SCRIPT_TIMEOUT,
            self.shell.run_script(script, &stdio, cancel),
        )
        .await
        .expect("the script did not finish in time (a cold module cache compiles the module first: wasm/provision precompiles)");
        drop(stdio);
        Ran {
            status,
            out: String::from_utf8_lossy(&read_out.await.unwrap()).into_owned(),
            err: String::from_utf8_lossy(&read_err.await.unwrap()).into_owned(),
        }
    }

    /// Runs `script` and expects status 0 and empty stderr; gives stdout.
    async fn ok(&mut self, script: &str) -> String {
        let r = self.run(script).await;
        assert_eq!((r.status, r.err.as_str()), (0, ""), "{script}\n{r:?}");
        r.out
    }
}

#[test]
fn every_manifest_tool_has_a_test() {
    let source = include_str!("wasi_tools.rs");
    for tool in Manifest::embedded().unwrap().tools {
        let prefix = format!("async fn {}_", tool.name);
        assert!(
            source.contains(&prefix),
            "the manifest tool `{}` has no test in tests/wasi_tools.rs (a test named `{}_…`)",
            tool.name,
            tool.name
        );
    }
}

// --- python3

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_runs_c_scripts_stdin_and_modules() {
    let mut s = session().await;
    assert_eq!(s.ok("python3 -c 'print(1+1)'").await, "2\n");
    assert_eq!(
        s.ok("python -c 'import sys; print(sys.argv[1:])' a 'b c'")
            .await,
        "['a', 'b c']\n"
    );
    s.ok("printf 'import sys\\nprint(\"args\", sys.argv[1:])\\n' > s.py")
        .await;
    assert_eq!(s.ok("python3 s.py x y").await, "args ['x', 'y']\n");
    assert_eq!(s.ok("printf 'print(6*7)\\n' | python3").await, "42\n");
    assert_eq!(
        s.ok("python3 - <<'EOF'\nprint('here')\nEOF").await,
        "here\n"
    );
    assert_eq!(
        s.ok("echo '{\"b\": 1, \"a\": [1, 2]}' | python3 -m json.tool --sort-keys")
            .await,
        "{\n    \"a\": [\n        1,\n        2\n    ],\n    \"b\": 1\n}\n"
    );
    let r = s.run("python3 -c 'import sys; sys.exit(3)'").await;
    assert_eq!(r.status, 3, "{r:?}");
    let r = s.run("python3 -c 'raise ValueError(\"boom\")'").await;
    assert_eq!(r.status, 1, "{r:?}");
    assert!(r.err.contains("ValueError: boom"), "{r:?}");
}

/// python's exit skips CPython's finalization (the manifest's prelude ends with
/// `os._exit`), so what of it a program can see is done by the prelude: atexit handlers
/// (after the program's output), then the program's globals dropped (`__del__` runs, a file
/// left open is flushed), then stdout and stderr flushed; and the exit status kept. The
/// expected texts are what CPython 3.11 on a host prints for the same scripts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_exit_keeps_what_cpython_does_at_exit() {
    let mut s = session().await;
    s.ok("printf 'import atexit, sys\\natexit.register(print, \"bye\")\\nclass A:\\n    def __del__(self):\\n        print(\"del\")\\na = A()\\nf = open(\"left-open.txt\", \"w\")\\nf.write(\"kept\")\\nsys.stdout.write(\"no newline\")\\nsys.stderr.write(\"err\")\\n' > exit.py").await;
    let r = s.run("python3 exit.py; cat left-open.txt").await;
    assert_eq!(
        (r.status, r.out.as_str(), r.err.as_str()),
        (0, "no newlinebye\ndel\nkept", "err"),
        "{r:?}"
    );
    let r = s
        .run("python3 -c 'import atexit; atexit.register(print, \"last\"); raise SystemExit(7)'")
        .await;
    assert_eq!((r.status, r.out.as_str()), (7, "last\n"), "{r:?}");
    // A program that closed its own stdout still exits cleanly.
    let r = s.run("python3 -c 'import sys; sys.stdout.close()'").await;
    assert_eq!((r.status, r.err.as_str()), (0, ""), "{r:?}");
}

/// Loads on a fresh engine (a server that just started): two sessions starting python at
/// once share one load, and a small module asked for meanwhile is not held up behind it
/// (python's load from the compiled cache takes hundreds of milliseconds).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_loads_once_and_does_not_hold_up_other_modules() {
    let config = WasiConfig {
        wasm_dir: forkbox::config::default_wasm_dir(),
        memory_limit: forkbox::config::DEFAULT_WASM_MEMORY,
    };
    let setup = forkbox::wasi::tools::setup(&config).unwrap();
    let py = setup
        .ready
        .iter()
        .find(|p| p.tool.name == "python3")
        .unwrap();
    let engine = setup.engine.clone();
    let (path, stub) = (py.module.clone(), py.tool.host_call_stub);
    let first = {
        let (engine, path) = (engine.clone(), path.clone());
        tokio::spawn(async move { engine.load(&path, stub).await })
    };
    let second = {
        let (engine, path) = (engine.clone(), path.clone());
        tokio::spawn(async move { engine.load(&path, stub).await })
    };
    // Both have taken python's lock by now.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.wat");
    std::fs::write(
        &small,
        "(module (memory (export \"memory\") 1) (func (export \"_start\")))",
    )
    .unwrap();
    engine.load(&small, false).await.unwrap();
    assert!(
        !first.is_finished() || !second.is_finished(),
        "a small module waited for python's load"
    );
    let (a, b) = (
        first.await.unwrap().unwrap(),
        second.await.unwrap().unwrap(),
    );
    assert!(
        wasmtime::Module::same(&a.module, &b.module),
        "python was loaded twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_shebang_scripts_run() {
    let mut s = session().await;
    s.ok("printf '#!/usr/bin/env python3\\nimport sys\\nprint(\"hi\", *sys.argv[1:])\\n' > hi && chmod +x hi")
        .await;
    assert_eq!(s.ok("./hi there").await, "hi there\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_reads_and_writes_session_files() {
    let mut s = session().await;
    s.ok("echo from-shell > in.txt").await;
    let out = s
        .ok("python3 -c \"open('out.txt','w').write(open('in.txt').read().upper())\"; cat out.txt")
        .await;
    assert_eq!(out, "FROM-SHELL\n");
    assert!(s.fs.stat("/out.txt").await.unwrap().is_file());
    // Relative names are the shell's working directory's.
    let out = s
        .ok("mkdir -p d/e && cd d && python3 -c \"import os; print(os.getcwd()); open('x','w').write('1')\" && cat x && cat /d/x")
        .await;
    assert_eq!(out, "/d\n11");
    assert_eq!(
        s.ok("cd /d/e && printf 'print(2)' > s.py && python3 s.py")
            .await,
        "2\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_imports_numpy_and_pandas() {
    let mut s = session().await;
    let out = s
        .ok("python3 -c 'import numpy, pandas; print(int(numpy.arange(10).sum()), pandas.DataFrame({\"a\": [1, 2]}).a.sum())'")
        .await;
    assert_eq!(out, "45 3\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_sees_nothing_of_the_host() {
    let mut s = session().await;
    let r = s.run("python3 -c \"open('/etc/passwd')\"").await;
    assert_eq!(r.status, 1, "{r:?}");
    assert!(r.err.contains("FileNotFoundError"), "{r:?}");
    let r = s
        .run("python3 -c \"import os; print(sorted(os.listdir('/../../..')))\"")
        .await;
    assert_eq!(r.out, "[]\n", "{r:?}");
    // The stdlib is a read-only system file, visible to the shell too, never the fork's.
    assert_eq!(s.ok("ls /usr/local/lib").await, "python315.zip\n");
    let r = s.run("echo x > /usr/local/lib/python315.zip").await;
    assert_eq!(r.status, 1);
    assert!(r.err.contains("Read-only file system"), "{r:?}");
    let r = s
        .run("python3 -c \"open('/usr/local/lib/python315.zip','w')\"")
        .await;
    assert!(r.err.contains("Read-only file system"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_is_stopped_by_timeout_and_the_session_goes_on() {
    let mut s = session().await;
    let started = Instant::now();
    let r = s
        .run("timeout 3 python3 -c 'while True: pass'; echo status $?")
        .await;
    let took = started.elapsed();
    assert_eq!(r.out, "status 124\n", "{r:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    // Ctrl-C (the command's cancellation) stops it too.
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        c.cancel();
    });
    let started = Instant::now();
    let r = s.run_with("python3 -c 'while True: pass'", cancel).await;
    assert_ne!(r.status, 0, "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(s.ok("echo still here").await, "still here\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_memory_blow_up_fails_cleanly() {
    let mut s = session().await;
    let r = s
        .run("python3 -c 'x = bytearray(1536 * 1024**2)'; echo status $?")
        .await;
    assert!(!r.out.starts_with("status 0"), "{r:?}");
    assert!(
        r.err.contains("MemoryError") || r.err.contains("out of memory"),
        "{r:?}"
    );
    assert_eq!(s.ok("python3 -c 'print(\"after\")'").await, "after\n");
}

/// A guest's linear memory is charged to the session's memory budget (256M here, the
/// default) while it runs and given back when it ends: the session's guests together
/// cannot hold more than the session may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_memory_is_charged_to_the_session() {
    let mut s = session().await;
    // Under the guest's own 1 GiB limit, over the session's 256M.
    let r = s
        .run("python3 -c 'x = bytearray(400 << 20)'; echo status $?")
        .await;
    assert_eq!(r.out, "status 137\n", "{r:?}");
    assert_eq!(r.err, "python3: out of memory (session limit 256M)\n");
    // Given back at each exit: one after another, each fits.
    assert_eq!(
        s.ok("for i in 1 2 3; do python3 -c 'print(len(bytearray(150 << 20)) >> 20)'; done")
            .await,
        "150\n150\n150\n"
    );
    // Two at once do not: the second is refused while the first holds its share.
    let script = r#"
python3 -c '
import os, time
x = bytearray(150 << 20)
open("ready", "w").close()
while not os.path.exists("done"):
    time.sleep(0.02)
' &
while [ ! -e ready ]; do sleep 0.02; done
python3 -c 'x = bytearray(150 << 20)'; echo second $?
touch done; wait $!; echo first $?
python3 -c 'x = bytearray(150 << 20)'; echo third $?
"#;
    let r = s.run(script).await;
    assert_eq!(r.out, "second 137\nfirst 0\nthird 0\n", "{r:?}");
    assert_eq!(r.err, "python3: out of memory (session limit 256M)\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_two_sessions_see_only_their_own_files() {
    let (mut a, mut b) = (session().await, session().await);
    a.ok("echo a > only-a").await;
    b.ok("echo b > only-b").await;
    let list = "python3 -c 'import os, time; time.sleep(0.2); print(sorted(os.listdir(\".\")))'";
    let (ra, rb) = tokio::join!(a.run(list), b.run(list));
    assert_eq!(ra.out, "['only-a']\n", "{ra:?}");
    assert_eq!(rb.out, "['only-b']\n", "{rb:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python3_in_pipelines_with_native_and_wasi_stages() {
    let mut s = session().await;
    s.ok("echo '[{\"n\": 1}, {\"n\": 2}, {\"n\": 39}]' > d.json")
        .await;
    let out = s
        .ok("cat d.json | jq -r '.[].n' | python3 -c 'import sys; print(sum(map(int, sys.stdin)))'")
        .await;
    assert_eq!(out, "42\n");
    assert_eq!(
        s.ok("python3 -c 'print(\"b\\na\\nb\")' | sort | uniq -c | rg -c b -")
            .await,
        "1\n"
    );
}

// --- qjs

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qjs_evaluates_and_runs_scripts() {
    let mut s = session().await;
    assert_eq!(s.ok("qjs -e 'console.log(6*7)'").await, "42\n");
    s.ok("echo 'console.log([1,2,3].map(x => x*2).join(\",\"))' > m.js")
        .await;
    assert_eq!(s.ok("qjs m.js").await, "2,4,6\n");
    let r = s.run("qjs -e 'throw new Error(\"nope\")'").await;
    assert_ne!(r.status, 0, "{r:?}");
    assert!(r.err.contains("nope") || r.out.contains("nope"), "{r:?}");
}

// --- rg

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rg_searches_session_files() {
    let mut s = session().await;
    s.ok("mkdir -p src/deep && printf 'alpha\\nbeta\\n' > src/a.txt && printf 'gamma\\nalphabet\\n' > src/deep/b.txt")
        .await;
    assert_eq!(
        s.ok("rg --sort path -n alpha src").await,
        "src/a.txt:1:alpha\nsrc/deep/b.txt:2:alphabet\n"
    );
    assert_eq!(s.ok("rg -c '^b' src/a.txt").await, "1\n");
    assert_eq!(s.ok("printf 'x\\ny\\n' | rg y -").await, "y\n");
    let r = s.run("rg nomatch src").await;
    assert_eq!((r.status, r.out.as_str()), (1, ""), "{r:?}");
    // Nothing outside the fork: `/` is the session's.
    assert_eq!(
        s.ok("rg --files / | sort").await,
        "/src/a.txt\n/src/deep/b.txt\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rg_in_a_subdirectory_searches_it() {
    let mut s = session().await;
    s.ok("mkdir d && echo needle > d/f").await;
    // The script's stdin is /dev/null, which rg does not search: the directory it is.
    assert_eq!(s.ok("cd d && rg -l needle").await, "f\n");
    assert_eq!(s.ok("rg -l needle < /dev/null").await, "f\n");
}

/// As on a host, rg given no path searches a piped or redirected stdin (its WASI build
/// cannot tell by itself: see src/wasi/rg_args.rs), and only when it would search.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rg_searches_piped_stdin_without_a_dash() {
    let mut s = session().await;
    s.ok("echo needle-in-file > f").await;
    assert_eq!(s.ok("printf 'x\\nneedle\\n' | rg needle").await, "needle\n");
    assert_eq!(s.ok("printf 'a\\nb\\na\\n' | rg -c a").await, "2\n");
    assert_eq!(
        s.ok("printf 'one\\ntwo\\n' | rg -n -e two").await,
        "2:two\n"
    );
    assert_eq!(
        s.ok("rg needle <<'EOF'\nfrom heredoc needle\nEOF").await,
        "from heredoc needle\n"
    );
    assert_eq!(s.ok("rg needle < f").await, "needle-in-file\n");
    // A path given: stdin is not read.
    assert_eq!(s.ok("echo needle | rg needle f").await, "needle-in-file\n");
    // Nothing on the pipe matches: status 1, the directory is not searched.
    let r = s.run("echo hay | rg needle").await;
    assert_eq!((r.status, r.out.as_str()), (1, ""), "{r:?}");
    // `--files` lists the directory whatever stdin is.
    assert_eq!(s.ok("echo x | rg --files").await, "f\n");
    // Patterns from stdin: the directory is searched.
    assert_eq!(s.ok("echo needle | rg -f -").await, "f:needle-in-file\n");
}

// --- jq

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jq_takes_gnu_jq_flags() {
    let mut s = session().await;
    s.ok("echo '{\"b\": 2, \"a\": [1, \"x\"]}' > d.json").await;
    assert_eq!(s.ok("jq -c . d.json").await, "{\"b\":2,\"a\":[1,\"x\"]}\n");
    assert_eq!(s.ok("jq -r '.a[1]' d.json").await, "x\n");
    assert_eq!(
        s.ok("jq -S -c . d.json").await,
        "{\"a\":[1,\"x\"],\"b\":2}\n"
    );
    assert_eq!(
        s.ok("echo '{\"z\": {\"y\": 1, \"x\": 2}, \"a\": 0}' | jq -cS .")
            .await,
        "{\"a\":0,\"z\":{\"x\":2,\"y\":1}}\n"
    );
    assert_eq!(s.ok("jq -n '1 + 2'").await, "3\n");
    assert_eq!(s.ok("printf '1 2 3' | jq -s -c .").await, "[1,2,3]\n");
    assert_eq!(
        s.ok("jq -n -c --arg x hi --argjson y '{\"z\":1}' '[$x, $y]'")
            .await,
        "[\"hi\",{\"z\":1}]\n"
    );
    assert_eq!(s.ok("jq --tab .a d.json").await, "[\n\t1,\n\t\"x\"\n]\n");
    let r = s.run("jq -e .missing d.json").await;
    assert_eq!((r.status, r.out.as_str()), (1, "null\n"), "{r:?}");
    // Input that is not JSON: jq 1.6's status 4, output before it kept.
    let r = s.run("echo '{' | jq .").await;
    assert_eq!(r.status, 4, "{r:?}");
    let r = s.run("echo '1 {' | jq -c -S .").await;
    assert_eq!((r.status, r.out.as_str()), (4, "1\n"), "{r:?}");
}

/// jaq's reports worded as GNU jq 1.6 words them, where that is known exactly (the
/// expected texts are jq 1.6's, captured from Debian's jq).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jq_errors_read_as_gnu_jq_writes_them() {
    let mut s = session().await;
    let r = s.run("jq . nofile.json").await;
    assert_eq!(
        (r.status, r.err.as_str()),
        (
            2,
            "jq: error: Could not open file nofile.json: No such file or directory\n"
        )
    );
    let r = s.run("echo 1 | jq foo").await;
    assert_eq!(
        (r.status, r.err.as_str()),
        (
            3,
            "jq: error: foo/0 is not defined at <top-level>, line 1:\nfoo\njq: 1 compile error\n"
        )
    );
    let r = s.run("echo 1 | jq 'foo | bar'").await;
    assert_eq!(
        r.err,
        "jq: error: foo/0 is not defined at <top-level>, line 1:\nfoo | bar\n\
         jq: error: bar/0 is not defined at <top-level>, line 1:\nfoo | bar      \n\
         jq: 2 compile errors\n"
    );
    let r = s.run("echo 1 | jq -c '[.] | foo(1)'").await;
    assert_eq!(
        r.err,
        "jq: error: foo/1 is not defined at <top-level>, line 1:\n[.] | foo(1)      \njq: 1 compile error\n"
    );
    let r = s.run("echo 1 | jq '$x'").await;
    assert_eq!(
        r.err,
        "jq: error: $x is not defined at <top-level>, line 1:\n$x\njq: 1 compile error\n"
    );
    // Runtime errors whose position is known: nowhere with -n, one value on stdin.
    for (script, err) in [
        (
            "jq -n '\"x\" + 1'",
            "jq: error (at <unknown>): string (\"x\") and number (1) cannot be added\n",
        ),
        (
            "echo '[1]' | jq .a",
            "jq: error (at <stdin>:1): Cannot index array with string \"a\"\n",
        ),
        (
            "printf '{\"a\":\\n{}}\\n\\n' | jq '.a - 1'",
            "jq: error (at <stdin>:2): object ({}) and number (1) cannot be subtracted\n",
        ),
        (
            "echo true | jq length",
            "jq: error (at <stdin>:1): boolean (true) has no length\n",
        ),
        (
            "echo 1 | jq -s '. + {}'",
            "jq: error (at <stdin>:1): array ([1]) and object ({}) cannot be added\n",
        ),
        (
            "printf '{\"a\":\n1}' > f2.json; jq '.a - \"b\"' f2.json",
            "jq: error (at f2.json:1): number (1) and string (\"b\") cannot be subtracted\n",
        ),
    ] {
        let r = s.run(script).await;
        assert_eq!((r.status, r.err.as_str()), (5, err), "{script}\n{r:?}");
    }
    // Several values: which one failed is not known, so jaq's words stay.
    let r = s.run("printf '[1] [2]' | jq -c '. - 1'").await;
    assert!(r.err.starts_with("Error: cannot calculate"), "{r:?}");
    // What jaq writes before a report is passed on as it was (jaq's `debug` format, not
    // jq's `["DEBUG:",1]`: a known difference), and stdout is untouched.
    let r = s.run("printf '1 2' | jq -c 'debug | .+1'").await;
    assert_eq!(r.out, "2\n3\n", "{r:?}");
    assert_eq!(r.err, "[DEBUG] 1\n[DEBUG] 2\n", "{r:?}");
}

/// Command lines jq refuses before reading input: its messages and status 2 (the texts
/// are Debian's jq 1.6's), and the guest is not run (stdin is left unread).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jq_command_line_errors_read_as_gnu_jq_writes_them() {
    const DIE: &str = "Use jq --help for help with command-line options,\n\
                       or see the jq manpage, or online docs  at https://stedolan.github.io/jq\n";
    let mut s = session().await;
    for (script, first) in [
        (
            "jq -n --arg x",
            "jq: --arg takes two parameters (e.g. --arg varname value)\n",
        ),
        (
            "jq -n --argjson x '{bad' '$x'",
            "jq: invalid JSON text passed to --argjson\n",
        ),
        (
            "jq --argjson x",
            "jq: --argjson takes two parameters (e.g. --argjson varname text)\n",
        ),
        ("jq --badflag .", "jq: Unknown option --badflag\n"),
        ("jq -rZ .", "jq: Unknown option -rZ\n"),
        (
            "jq --indent 9 .",
            "jq: --indent takes a number between -1 and 7\n",
        ),
    ] {
        let r = s.run(&format!("echo 1 | {script}")).await;
        assert_eq!(
            (r.status, r.out.as_str(), r.err.as_str()),
            (2, "", format!("{first}{DIE}").as_str()),
            "{script}"
        );
    }
    // A valid --argjson still runs.
    assert_eq!(s.ok("jq -n -c --argjson x ' [1] ' '$x'").await, "[1]\n");
}

// --- coreutils (uutils, for what the native set lacks)

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coreutils_fill_gaps_without_shadowing_native_commands() {
    let server = server();
    let manifest = Manifest::embedded().unwrap();
    let uu = manifest
        .tools
        .iter()
        .find(|t| t.name == "coreutils")
        .unwrap();
    let native: Vec<String> = forkbox_commands::all()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    for name in &uu.multicall {
        let entry = server.registry.resolve(name).unwrap();
        if native.contains(name) {
            assert_eq!(entry.kind, forkbox_commands::CommandKind::Native, "{name}");
        }
    }
    let mut s = session().await;
    assert_eq!(s.ok("echo hello | base32").await, "NBSWY3DPBI======\n");
    assert_eq!(s.ok("printf hi | basenc --base16").await, "6869\n");
}

// --- provisioning

#[test]
fn a_missing_module_names_wasm_provision() {
    let dir = tempfile::tempdir().unwrap();
    let setup = forkbox::wasi::tools::setup(&WasiConfig {
        wasm_dir: dir.path().to_path_buf(),
        memory_limit: 1 << 30,
    })
    .unwrap();
    let names: Vec<&str> = setup.missing.iter().map(|m| m.tool.name.as_str()).collect();
    assert_eq!(names.len(), Manifest::embedded().unwrap().tools.len());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let base_dir = tempfile::tempdir().unwrap();
        let base = forkbox::storage::Store::local(base_dir.path()).unwrap();
        let overlay = Overlay::new(base, forkbox::storage::Store::memory());
        let lease = Lease::new(ServerId::new(), Duration::from_secs(3600));
        let view = overlay.create(SessionId::new(), &lease).await.unwrap();
        let vfs: Arc<dyn FileSystem> = Arc::new(forkbox::vfs::Vfs::with_quota(
            view,
            forkbox::vfs::Quota::default(),
        ));
        let mut shell = Shell::new(ShellConfig {
            fs: Arc::new(forkbox::vfs::mounts::Mounts::with_system(
                vfs,
                &setup.mounts,
            )),
            registry: Arc::new(setup.registry),
            env: vec![],
            cwd: "/".into(),
            interactive: false,
            budget: forkbox_commands::Budget::default(),
        });
        let (out_w, out_r) = pipe();
        let (err_w, err_r) = pipe();
        let stdio = Stdio {
            stdin: Input::empty(),
            stdout: out_w,
            stderr: err_w,
            tty: None,
            terminal: None,
        };
        let status = shell
            .run_script("python3 -c 'print(1)'", &stdio, CancellationToken::new())
            .await;
        drop(stdio);
        let out = out_r.read_to_end(1 << 20).await.unwrap();
        let err = String::from_utf8(err_r.read_to_end(1 << 20).await.unwrap()).unwrap();
        assert_eq!((status, out.len()), (127, 0));
        assert!(
            err.starts_with("forkbox: python3: not provisioned on this server")
                && err.ends_with("run wasm/provision\n"),
            "{err}"
        );
    });
}

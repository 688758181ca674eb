//! WASI tool start-up: `cargo bench --bench wasi`.
//!
//! - `wasi/start`: a trivial WASI command (a module whose `_start` writes one line) run
//!   as a [`WasiTool`] through a command [`Context`], warm (the module loaded and its
//!   imports resolved; what every start after the first costs). Baseline: the native
//!   `printf` command through the same kind of context, in the same run.
//! - `wasi/first-load`: the first start of a module on an engine with an empty
//!   compiled-module cache (compile included), then the first start on a second engine
//!   with that cache filled (a server restart: no compile).
//!
//! - `wasi/python-*` (when `wasm/provision` installed the tools in the default wasm dir):
//!   the python module loaded by a new engine from a filled compiled-module cache (what a
//!   new process or a server start pays once), with the plain read of its file beside it;
//!   then, module loaded (a running server), `python3 -c 'print(1)'` and
//!   `python3 -c 'import numpy, pandas'` through the server's registry and system mounts.
//!
//! Times are medians; nothing here asserts a time (docs/BENCHMARKS.md records them).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use forkbox::wasi::{EngineConfig, ModuleSpec, WasiEngine, WasiTool};
use forkbox_commands::Command;
use forkbox_commands::testing::{Invocation, MemFs};

const HELLO_WAT: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "hi\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 3))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#;

/// Timed runs per measurement, after as many untimed ones.
const RUNS: usize = 200;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn time_runs(cmd: &dyn Command, args: &[&str]) -> Duration {
    let inv = Invocation {
        fs: MemFs::new(),
        ..Invocation::default()
    };
    for _ in 0..RUNS {
        let (status, out, _) = inv.run(cmd, args).await;
        assert_eq!((status, out.as_str()), (0, "hi\n"));
    }
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        let (status, _, _) = inv.run(cmd, args).await;
        times.push(t.elapsed());
        assert_eq!(status, 0);
    }
    median(times)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("wasi benchmark: run with `cargo bench --bench wasi`");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("hello.wasm");
        std::fs::write(&module, HELLO_WAT).unwrap();
        let cache = dir.path().join("cache");
        let engine = |cache: &std::path::Path| {
            WasiEngine::new(EngineConfig {
                cache_dir: Some(cache.to_path_buf()),
                ..EngineConfig::default()
            })
            .unwrap()
        };

        let first: Arc<WasiEngine> = engine(&cache);
        let tool = WasiTool::new(first.clone(), ModuleSpec::command("hello", &module));
        let inv = Invocation::default();
        let t = Instant::now();
        let (status, _, _) = inv.run(&tool, &[]).await;
        let cold = t.elapsed();
        assert_eq!(status, 0);

        let second = engine(&cache);
        let tool2 = WasiTool::new(second, ModuleSpec::command("hello", &module));
        let t = Instant::now();
        let (status, _, _) = inv.run(&tool2, &[]).await;
        let cached = t.elapsed();
        assert_eq!(status, 0);
        println!(
            "wasi/first-load   empty cache {:>10.3} ms   filled cache {:>10.3} ms",
            cold.as_secs_f64() * 1e3,
            cached.as_secs_f64() * 1e3
        );

        let printf = forkbox_commands::all()
            .into_iter()
            .find(|c| c.name() == "printf")
            .unwrap();
        let wasm = time_runs(&tool, &[]).await;
        let native = time_runs(printf.as_ref(), &["hi\n"]).await;
        println!(
            "wasi/start        wasi {:>10.1} µs   native printf {:>10.1} µs   ratio {:.1}×",
            wasm.as_secs_f64() * 1e6,
            native.as_secs_f64() * 1e6,
            wasm.as_secs_f64() / native.as_secs_f64()
        );

        python().await;
    });
}

/// Python's load and warm runs, with the server's own set-up of the provisioned tools.
async fn python() {
    let config = forkbox::wasi::tools::WasiConfig {
        wasm_dir: forkbox::config::default_wasm_dir(),
        memory_limit: forkbox::config::DEFAULT_WASM_MEMORY,
    };
    let setup = forkbox::wasi::tools::setup(&config).unwrap();
    let Some(py) = setup.ready.iter().find(|p| p.tool.name == "python3") else {
        println!("wasi/python       not provisioned (run wasm/provision): skipped");
        return;
    };
    // A first load from the filled cache, as a new process does it (the set-up above
    // made a fresh engine); the file's plain read beside it.
    let t = Instant::now();
    let bytes = tokio::fs::read(&py.module).await.unwrap();
    let read = t.elapsed();
    drop(bytes);
    let t = Instant::now();
    setup
        .engine
        .load(&py.module, py.tool.host_call_stub)
        .await
        .unwrap();
    let load = t.elapsed();
    println!(
        "wasi/python-load  first load {:>10.1} ms   (of it, reading the file alone {:.1} ms)",
        load.as_secs_f64() * 1e3,
        read.as_secs_f64() * 1e3
    );
    let cmd = setup.registry.command("python3").unwrap();
    let fs: Arc<dyn forkbox_commands::FileSystem> = Arc::new(
        forkbox::vfs::mounts::Mounts::with_system(MemFs::new(), &setup.mounts),
    );
    let inv = Invocation {
        fs,
        ..Invocation::default()
    };
    let time = |args: &'static [&'static str], runs: usize| {
        let inv = &inv;
        let cmd = cmd.clone();
        async move {
            let mut times = Vec::with_capacity(runs);
            for i in 0..runs + 1 {
                let t = Instant::now();
                let (status, _, err) = inv.run(cmd.as_ref(), args).await;
                assert_eq!((status, err.as_str()), (0, ""));
                // The first run is untimed.
                if i > 0 {
                    times.push(t.elapsed());
                }
            }
            median(times)
        }
    };
    let print = time(&["-c", "print(1)"], 30).await;
    let pandas = time(&["-c", "import numpy, pandas"], 5).await;
    println!(
        "wasi/python-warm  print(1) {:>10.1} ms   import numpy, pandas {:>10.1} ms",
        print.as_secs_f64() * 1e3,
        pandas.as_secs_f64() * 1e3
    );
}

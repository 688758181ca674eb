//! WASI tool start-up: `cargo bench --bench wasi`.
//!
//! - `wasi/start`: a trivial WASI command (a module whose `_start` writes one line) run
//!   as a [`WasiTool`] through a command [`Context`], warm (the module loaded and its
//!   imports resolved; what every start after the first costs). Baseline: the native
//!   `echo` command through the same kind of context, in the same run.
//! - `wasi/first-load`: the first start of a module on an engine with an empty
//!   compiled-module cache (compile included), then the first start on a second engine
//!   with that cache filled (a server restart: no compile).
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

        let echo = forkbox_commands::all()
            .into_iter()
            .find(|c| c.name() == "echo")
            .unwrap();
        let wasm = time_runs(&tool, &[]).await;
        let native = time_runs(echo.as_ref(), &["hi"]).await;
        println!(
            "wasi/start        wasi {:>10.1} µs   native echo {:>10.1} µs   ratio {:.1}×",
            wasm.as_secs_f64() * 1e6,
            native.as_secs_f64() * 1e6,
            wasm.as_secs_f64() / native.as_secs_f64()
        );
    });
}

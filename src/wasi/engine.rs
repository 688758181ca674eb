//! The one wasmtime [`Engine`] of a server: its configuration, the epoch ticker, the
//! on-disk compiled-module cache and the in-memory table of loaded modules.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use wasmtime::{
    Cache, CacheConfig, Config, Engine, InstanceAllocationStrategy, InstancePre, Linker, Module,
    PoolingAllocationConfig,
};

use super::p1::{self, Host};

/// Memory one guest instance may use unless its tool says otherwise: room for CPython
/// with numpy and pandas loaded, while one guest cannot take the machine.
pub const DEFAULT_MEMORY_LIMIT: u64 = 1 << 30;

/// How often the epoch advances. Each tick a running guest yields to the runtime (fair
/// time slicing: a CPU-bound guest cannot delay other sessions or the accept loop) and
/// checks its command's cancellation, so Ctrl-C and timeouts stop it within a tick or
/// two.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Guests that may run at once on one server (the pooling allocator's slots): each slot
/// reserves address space (not memory) for one linear memory of up to 4 GiB.
pub const DEFAULT_MAX_INSTANCES: u32 = 128;

/// Native stack a guest may use: deep recursion in an interpreter (CPython's eval loop)
/// needs more than wasmtime's 512 KiB default; past it the guest traps ("call stack
/// exhausted") instead of crashing the host.
pub const MAX_WASM_STACK: usize = 8 << 20;

/// The largest linear memory any instance can have (wasm32's 4 GiB); the per-instance
/// limit ([`EngineConfig::memory_limit`], a tool's own) is enforced below it by the
/// store's resource limiter.
const MAX_MEMORY_SIZE: usize = 4 << 30;

/// How the engine is set up.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Where compiled modules are cached on disk; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Memory one instance may use unless its tool says otherwise.
    pub memory_limit: u64,
    /// Guests that may run at once.
    pub max_instances: u32,
    /// Write `/tmp/perf-PID.map` for the compiled guest code, so `perf report` names
    /// guest functions (`FORKBOX_WASM_PERFMAP=1`; for profiling, off otherwise).
    pub perfmap: bool,
}

impl Default for EngineConfig {
    /// The cache in `$HOME/.cache/forkbox/wasmtime` (when `HOME` is set), 1 GiB per
    /// instance, [`DEFAULT_MAX_INSTANCES`] guests.
    fn default() -> Self {
        EngineConfig {
            cache_dir: default_cache_dir(),
            memory_limit: DEFAULT_MEMORY_LIMIT,
            max_instances: DEFAULT_MAX_INSTANCES,
            perfmap: std::env::var_os("FORKBOX_WASM_PERFMAP").is_some_and(|v| v == "1"),
        }
    }
}

/// `$HOME/.cache/forkbox/wasmtime`, where compiled modules are kept between runs.
pub fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/forkbox/wasmtime"))
}

/// What went wrong setting up the engine or loading a module.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("wasm engine: {0}")]
    Config(String),
    /// The module file is missing or unreadable.
    #[error("module not provisioned: {path}")]
    Missing {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is there but is no valid module, or it needs imports the host lacks.
    #[error("module {path} is not usable: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

/// A module ready to instantiate: compiled, with its imports resolved against the
/// preview-1 host, so a start does no lookup, no hashing and no compile.
#[derive(Clone)]
pub struct Loaded {
    pub module: Module,
    pub pre: InstancePre<Host>,
}

/// A module by its file and whether it gets the `host::call` stub.
type ModuleKey = (PathBuf, bool);

/// A lock held while one module loads.
type LoadLock = Arc<tokio::sync::Mutex<()>>;

/// A loaded module and the file state it was loaded from.
struct Entry {
    len: u64,
    mtime: Option<SystemTime>,
    loaded: Loaded,
}

/// The server's wasm engine. Cheap to share (`Arc`); one per server.
pub struct WasiEngine {
    engine: Engine,
    config: EngineConfig,
    /// The preview-1 host, and the same plus the `host::call` stub some modules import.
    linker: Linker<Host>,
    linker_stub: Linker<Host>,
    /// Loaded modules by (path, stub), checked against the file's size and mtime, so a
    /// second start of a tool neither reads nor hashes its file.
    modules: Mutex<HashMap<ModuleKey, Entry>>,
    /// One lock per module being loaded: two sessions starting the same tool load it
    /// once (the second waits for the first), while loads of other modules go on beside
    /// it (python's load takes most of a second; `jq` must not wait behind it).
    loading: Mutex<HashMap<ModuleKey, LoadLock>>,
    /// Tells the epoch ticker to stop.
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for WasiEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasiEngine")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl WasiEngine {
    /// Sets up the engine and starts its epoch ticker.
    pub fn new(config: EngineConfig) -> Result<Arc<WasiEngine>, EngineError> {
        let err = |e: wasmtime::Error| EngineError::Config(format!("{e:#}"));
        let mut c = Config::new();
        c.epoch_interruption(true)
            .wasm_gc(true)
            .wasm_function_references(true)
            .wasm_exceptions(true)
            .max_wasm_stack(MAX_WASM_STACK)
            .async_stack_size(MAX_WASM_STACK + (1 << 20));
        let mut pool = PoolingAllocationConfig::default();
        let n = config.max_instances.max(1);
        pool.total_core_instances(n)
            .total_memories(n)
            .total_tables(n.saturating_mul(4))
            .total_stacks(n)
            .total_gc_heaps(n)
            .total_component_instances(0)
            .max_tables_per_module(4)
            .max_memories_per_module(1)
            .table_elements(p1::MAX_TABLE_ELEMENTS)
            .max_core_instance_size(16 << 20)
            .max_memory_size(MAX_MEMORY_SIZE);
        c.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        if config.perfmap {
            c.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        if let Some(dir) = &config.cache_dir {
            let mut cc = CacheConfig::new();
            cc.with_directory(dir)
                // wasmtime recompresses an entry at zstd level 20 in a background thread
                // once it has been read 256 times: for python's ~290 MB of machine code
                // that is minutes of CPU in whichever `forkbox exec` process crosses the
                // count, to save disk space. Never.
                .with_optimized_compression_usage_counter_threshold(u64::MAX);
            c.cache(Some(Cache::new(cc).map_err(err)?));
        }
        let engine = Engine::new(&c).map_err(err)?;
        let mut linker = Linker::new(&engine);
        p1::add_to_linker(&mut linker).map_err(err)?;
        let mut linker_stub = linker.clone();
        linker_stub
            .func_wrap(
                "host",
                "call",
                // No host services are offered: -1 is "no host" to the guests that ask.
                |_a: i32, _b: i32, _c: i32, _d: i32| -> i32 { -1 },
            )
            .map_err(err)?;
        let stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), stop.clone())?;
        Ok(Arc::new(WasiEngine {
            engine,
            config,
            linker,
            linker_stub,
            modules: Mutex::new(HashMap::new()),
            loading: Mutex::new(HashMap::new()),
            stop,
        }))
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The module at `path` (a host file, provisioned read-only outside any fork),
    /// loaded once per server: compiled through the on-disk cache on the blocking pool,
    /// then kept in memory for as long as the file's size and mtime stay the same.
    pub async fn load(&self, path: &Path, host_call_stub: bool) -> Result<Loaded, EngineError> {
        let missing = |source| EngineError::Missing {
            path: path.to_path_buf(),
            source,
        };
        let meta = tokio::fs::metadata(path).await.map_err(missing)?;
        let key = (path.to_path_buf(), host_call_stub);
        let fresh = |e: &Entry| e.len == meta.len() && e.mtime == meta.modified().ok();
        if let Some(e) = self.cached(&key, &fresh) {
            return Ok(e);
        }
        let lock = self.load_lock(&key);
        let _guard = lock.lock().await;
        if let Some(e) = self.cached(&key, &fresh) {
            return Ok(e);
        }
        let bytes = tokio::fs::read(path).await.map_err(missing)?;
        let engine = self.engine.clone();
        let invalid = |reason: String| EngineError::Invalid {
            path: path.to_path_buf(),
            reason,
        };
        // Compiling (or reading back from the cache) is CPU work: off the runtime.
        let module = tokio::task::spawn_blocking(move || Module::new(&engine, &bytes))
            .await
            .map_err(|e| invalid(e.to_string()))?
            .map_err(|e| invalid(format!("{e:#}")))?;
        let linker = if host_call_stub {
            &self.linker_stub
        } else {
            &self.linker
        };
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|e| invalid(format!("{e:#}")))?;
        let loaded = Loaded { module, pre };
        let entry = Entry {
            len: meta.len(),
            mtime: meta.modified().ok(),
            loaded: loaded.clone(),
        };
        if let Ok(mut m) = self.modules.lock() {
            m.insert(key, entry);
        }
        Ok(loaded)
    }

    /// The lock that serialises loads of the module `key`. Kept for the life of the
    /// engine: one small entry per module the manifest names.
    fn load_lock(&self, key: &ModuleKey) -> LoadLock {
        match self.loading.lock() {
            Ok(mut locks) => locks.entry(key.clone()).or_default().clone(),
            // A poisoned table only costs the deduplication of this load.
            Err(_) => Arc::default(),
        }
    }

    fn cached(&self, key: &ModuleKey, fresh: &dyn Fn(&Entry) -> bool) -> Option<Loaded> {
        let m = self.modules.lock().ok()?;
        m.get(key).filter(|e| fresh(e)).map(|e| e.loaded.clone())
    }
}

impl Drop for WasiEngine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One thread for the whole server advances the epoch every [`EPOCH_TICK`] until told
/// to stop: a plain thread, so a busy runtime cannot delay the ticks that make its
/// guests yield.
fn spawn_ticker(engine: Engine, stop: Arc<AtomicBool>) -> Result<(), EngineError> {
    std::thread::Builder::new()
        .name("wasm-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                engine.increment_epoch();
            }
        })
        .map(|_| ())
        .map_err(|e| EngineError::Config(format!("epoch ticker: {e}")))
}

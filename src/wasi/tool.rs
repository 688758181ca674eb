//! A WASI module as a command: [`ModuleSpec`] says what to run, [`WasiTool`] runs it in
//! a command's [`Context`] (its args, exported environment, cwd, stdio, filesystem and
//! cancellation).
//!
//! Exit statuses, decided here and only here:
//!
//! | outcome | status | stderr |
//! |---|---|---|
//! | `_start` returns / reactor `run` returns `n` | 0 / `n & 0xff` | — |
//! | `proc_exit(n)` | `n & 0xff` | — |
//! | module file missing or unreadable | 127 | `NAME: module not provisioned: PATH (run wasm/provision)` |
//! | module invalid, or no slot to run it in | 126 | `NAME: …` |
//! | memory past the limit | 137 (as the kernel's OOM kill leaves) | `NAME: out of memory (limit 1 GiB)` |
//! | memory past what the session has left ([`forkbox_commands::Budget`]) | 137 | `NAME: out of memory (session limit 256M)` |
//! | a trap (`unreachable`, a bad access, stack overflow) | 134 (as an aborted process) | `NAME: wasm trap: …` |
//! | Ctrl-C, `timeout`, session end | 130 ([`Interrupt::Cancelled`]) | — |
//! | stdout's reader gone | 141 ([`Interrupt::BrokenPipe`]) | — |

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use forkbox_commands::{CmdResult, Command, Context, Interrupt, Status};
use wasmtime::{Store, UpdateDeadline};

use super::engine::{EngineError, Loaded, WasiEngine};
use super::p1::{GuestExit, Host, LimitHit, Stdio, table};

/// Status of a tool whose module is not there (as a command that is not found).
pub const STATUS_NOT_PROVISIONED: Status = 127;
/// Status of a tool whose module cannot run (as a file that cannot be executed).
pub const STATUS_CANNOT_RUN: Status = 126;
/// Status of a guest that trapped (as a process killed by SIGABRT).
pub const STATUS_TRAP: Status = 134;
/// Status of a guest stopped for memory (as a process the OOM killer took).
pub const STATUS_OUT_OF_MEMORY: Status = 137;

/// How a module is started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A WASI command: `_start` runs the program; it ends by returning (status 0) or
    /// by `proc_exit`.
    Command,
    /// A reactor: `init` (usually `_initialize`; skipped when the module lacks it) sets
    /// it up, then `run` runs the program and returns its exit status.
    Reactor { init: String, run: String },
}

/// One WASI tool: what the manifest says about a module.
#[derive(Clone, Debug)]
pub struct ModuleSpec {
    /// The command name.
    pub name: String,
    /// The module: a host `.wasm` file, provisioned read-only outside any fork.
    pub path: PathBuf,
    /// `argv[0]` the guest sees (python wants `/usr/local/bin/python.wasm`); the name
    /// when `None`.
    pub argv0: Option<String>,
    pub entry: Entry,
    /// Environment the tool always gets (`PYTHONHOME`); the command's exported
    /// variables override it.
    pub env: Vec<(String, String)>,
    /// Memory limit of one instance; the engine's default when `None`.
    pub memory_limit: Option<u64>,
    /// Provide the import `host::call(i32, i32, i32, i32) -> i32`, answering -1
    /// ("no host"), for modules built to ask their embedder for services.
    pub host_call_stub: bool,
    /// Resolve the guest's paths against the shell's directory first. wasi-libc starts
    /// every program in `/` and hands the host `x` and `/x` alike (both relative to the
    /// root preopen), so a guest that does not enter `$PWD` itself could not otherwise
    /// see the directory it was run in: with this, a name under the root preopen is the
    /// one in the shell's directory when that exists (or, when neither exists, when its
    /// parent directory does there), else the one from the root. See docs/SEMANTICS.md.
    pub cwd_first: bool,
}

impl ModuleSpec {
    /// A command module at `path` run as `name`, with no extras.
    pub fn command(name: &str, path: impl Into<PathBuf>) -> ModuleSpec {
        ModuleSpec {
            name: name.to_string(),
            path: path.into(),
            argv0: None,
            entry: Entry::Command,
            env: Vec::new(),
            memory_limit: None,
            host_call_stub: false,
            cwd_first: true,
        }
    }
}

/// A WASI module run as a command over the session's filesystem and streams.
pub struct WasiTool {
    engine: Arc<WasiEngine>,
    spec: ModuleSpec,
    name: &'static str,
}

impl std::fmt::Debug for WasiTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasiTool")
            .field("spec", &self.spec)
            .finish()
    }
}

impl WasiTool {
    pub fn new(engine: Arc<WasiEngine>, spec: ModuleSpec) -> WasiTool {
        let name = intern(&spec.name);
        WasiTool { engine, spec, name }
    }

    pub fn spec(&self) -> &ModuleSpec {
        &self.spec
    }
}

/// The `&'static str` for a tool name ([`Command::name`] wants one). Each distinct name
/// is kept once for the life of the process, so building tools per session (or per
/// test) does not grow memory.
fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let names = NAMES.get_or_init(|| Mutex::new(HashSet::new()));
    let Ok(mut names) = names.lock() else {
        return "wasm";
    };
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// `1 GiB`, `512 MiB` or bytes, for the out-of-memory message.
pub fn human_size(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    if bytes >= GIB && bytes.is_multiple_of(GIB) {
        format!("{} GiB", bytes / GIB)
    } else if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Instantiates the module and runs its entry; gives the status it returned.
async fn run_guest(
    store: &mut Store<Host>,
    loaded: &Loaded,
    entry: &Entry,
) -> wasmtime::Result<i32> {
    let instance = loaded.pre.instantiate_async(&mut *store).await?;
    let memory = instance.get_memory(&mut *store, "memory");
    store.data_mut().memory = memory;
    match entry {
        Entry::Command => {
            let start = instance.get_typed_func::<(), ()>(&mut *store, "_start")?;
            start.call_async(&mut *store, ()).await?;
            Ok(0)
        }
        Entry::Reactor { init, run } => {
            if let Ok(init) = instance.get_typed_func::<(), ()>(&mut *store, init) {
                init.call_async(&mut *store, ()).await?;
            }
            let run = instance.get_typed_func::<(), i32>(&mut *store, run)?;
            run.call_async(&mut *store, ()).await
        }
    }
}

/// The [`GuestExit`] an error carries, wherever in its chain.
fn guest_exit(e: &wasmtime::Error) -> Option<&GuestExit> {
    e.chain().find_map(|c| c.downcast_ref::<GuestExit>())
}

#[async_trait]
impl Command for WasiTool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn summary(&self) -> &'static str {
        "a WebAssembly tool"
    }

    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let name = self.name;
        let loaded = match self
            .engine
            .load(&self.spec.path, self.spec.host_call_stub)
            .await
        {
            Ok(l) => l,
            Err(EngineError::Missing { path, .. }) => {
                ctx.err(format!(
                    "{name}: module not provisioned: {} (run wasm/provision)\n",
                    path.display()
                ))
                .await;
                return Ok(STATUS_NOT_PROVISIONED);
            }
            Err(e) => {
                ctx.err(format!("{name}: {e} (run wasm/provision)\n")).await;
                return Ok(STATUS_CANNOT_RUN);
            }
        };
        let argv0 = self.spec.argv0.clone().unwrap_or_else(|| name.to_string());
        let argv: Vec<String> = std::iter::once(argv0).chain(args).collect();
        let mut env: BTreeMap<String, String> = self.spec.env.iter().cloned().collect();
        env.extend(ctx.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        // wasi-libc starts in `/`; `PWD` is how a guest learns the shell's directory.
        env.insert("PWD".to_string(), ctx.cwd.clone());
        let limit = self
            .spec
            .memory_limit
            .unwrap_or(self.engine.config().memory_limit);
        let stdio = Stdio {
            stdin: ctx.stdin.clone(),
            stdout: ctx.stdout.clone(),
            stderr: ctx.stderr.clone(),
            // Standard input is the terminal when it is read from it on demand (a PTY
            // session's foreground command; `echo x | python3` there reads a pipe).
            stdin_tty: ctx.stdin.is_pull_source(),
            stdout_tty: ctx.tty.is_some(),
        };
        let mut host = Host::new(
            argv,
            env.into_iter().collect(),
            ctx.fs.clone(),
            stdio,
            limit,
            &ctx.budget,
            ctx.cancel.clone(),
        );
        if self.spec.cwd_first && ctx.cwd != "/" {
            host.cwd_first = Some(ctx.cwd.clone());
        }
        let mut store = Store::new(self.engine.engine(), host);
        store.limiter(|h| &mut h.limits);
        store.set_epoch_deadline(1);
        let cancel = ctx.cancel.clone();
        let budget = ctx.budget.clone();
        store.epoch_deadline_callback(move |_| {
            if cancel.is_cancelled() {
                return Err(wasmtime::Error::new(GuestExit::Cancelled));
            }
            // Every tick the guest yields, and pauses when its session is over its CPU
            // share on a contended server (forkbox_commands::cpu).
            let pause = budget.pause();
            Ok(UpdateDeadline::YieldCustom(
                1,
                Box::pin(async move {
                    match pause {
                        Some(pause) => tokio::time::sleep(pause).await,
                        None => tokio::task::yield_now().await,
                    }
                    forkbox_commands::cpu::resumed();
                }),
            ))
        });
        let outcome = tokio::select! {
            r = run_guest(&mut store, &loaded, &self.spec.entry) => r,
            () = ctx.cancel.cancelled() => Err(wasmtime::Error::new(GuestExit::Cancelled)),
        };
        // Files the guest left open are stored now, on every way out.
        let mut close_failed = None;
        for fd in store.data_mut().fds.drain() {
            if let Err(e) = table::close(fd).await {
                close_failed.get_or_insert(e);
            }
        }
        let oom = store.data().limits.hit;
        drop(store);
        let oom_message = |hit: Option<LimitHit>| match hit {
            Some(LimitHit::Session(e)) => format!("{name}: {e}\n"),
            _ => format!("{name}: out of memory (limit {})\n", human_size(limit)),
        };
        let status = match outcome {
            Ok(status) => status & 0xff,
            Err(e) => match guest_exit(&e) {
                Some(GuestExit::Exit(n)) => (*n & 0xff) as Status,
                Some(GuestExit::BrokenPipe) => return Err(Interrupt::BrokenPipe),
                Some(GuestExit::Cancelled) => return Err(Interrupt::Cancelled),
                Some(GuestExit::OutOfMemory) => {
                    ctx.err(oom_message(oom)).await;
                    return Ok(STATUS_OUT_OF_MEMORY);
                }
                None if oom.is_some() => {
                    ctx.err(oom_message(oom)).await;
                    return Ok(STATUS_OUT_OF_MEMORY);
                }
                None if ctx.cancel.is_cancelled() => return Err(Interrupt::Cancelled),
                None => match e.downcast_ref::<wasmtime::Trap>() {
                    Some(trap) => {
                        ctx.err(format!("{name}: wasm trap: {trap}\n")).await;
                        return Ok(STATUS_TRAP);
                    }
                    None => {
                        ctx.err(format!("{name}: {}\n", first_line(&e))).await;
                        return Ok(STATUS_CANNOT_RUN);
                    }
                },
            },
        };
        if let Some(e) = close_failed {
            ctx.err(format!("{name}: closing a file: {e}\n")).await;
            if status == 0 {
                return Ok(1);
            }
        }
        Ok(status)
    }
}

/// The top message of an error, without wasmtime's backtrace or cause list.
fn first_line(e: &wasmtime::Error) -> String {
    let s = e.to_string();
    s.lines().next().unwrap_or("failed").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(human_size(1 << 30), "1 GiB");
        assert_eq!(human_size(64 << 20), "64 MiB");
        assert_eq!(human_size(1000), "1000 bytes");
    }

    #[test]
    fn names_are_interned_once() {
        let a = intern("probe-tool");
        let b = intern(&String::from("probe-tool"));
        assert!(std::ptr::eq(a, b));
    }
}

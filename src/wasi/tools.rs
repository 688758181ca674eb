//! The WASI tools a server offers: the manifest's tools found provisioned in its
//! `--wasm-dir`, registered after the builtins and the native commands, and their
//! read-only system files for the sessions' mount tables.
//!
//! Resolution stays the registry's: builtin → native → WASI, the first registration of a
//! name wins, so a WASI tool never shadows a native command (of uutils' multicall module
//! only the utilities the native set lacks are registered). A tool whose files are missing
//! or differ from the manifest is registered anyway, as a command that says so and names
//! `wasm/provision` (status 127), so `python3` on a server that was never provisioned
//! explains itself instead of being `command not found`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use forkbox_commands::{CmdResult, Command, CommandKind, Context};

use super::manifest::{
    ArgsAdapter, Manifest, ManifestError, Provisioned, Tool, ToolKind, Unprovisioned,
};
use super::tool::STATUS_NOT_PROVISIONED;
use super::{EngineConfig, EngineError, Entry, ModuleSpec, WasiEngine, WasiTool};
use crate::registry::{self, Registry};
use crate::vfs::system::{SystemMountError, SystemMounts};

/// Where a server's WASI tools live and how much memory a guest gets.
#[derive(Clone, Debug)]
pub struct WasiConfig {
    /// The provisioned tools (`wasm/provision` installs there).
    pub wasm_dir: PathBuf,
    /// Memory one guest may use; a tool's own manifest limit applies when it is lower.
    pub memory_limit: u64,
}

/// What setting up the WASI tools could not do.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("system mount: {0}")]
    Mount(#[from] SystemMountError),
}

/// A server's commands and system files, WASI tools included.
#[derive(Debug)]
pub struct Setup {
    pub registry: Registry,
    pub mounts: SystemMounts,
    /// The tools found provisioned, and those that are not (with why).
    pub ready: Vec<Provisioned>,
    pub missing: Vec<Unprovisioned>,
    pub engine: Arc<WasiEngine>,
}

/// Finds the manifest's tools in `config.wasm_dir` (checking them against the manifest,
/// which reads files: run it on the blocking pool) and builds the server's registry.
pub fn setup(config: &WasiConfig) -> Result<Setup, SetupError> {
    let manifest = Manifest::embedded()?;
    let found = manifest.check(&config.wasm_dir);
    let engine = WasiEngine::new(EngineConfig {
        memory_limit: config.memory_limit,
        ..EngineConfig::default()
    })?;
    let mut registry = Registry::with_native();
    for p in &found.ready {
        for spec in module_specs(&p.tool, &p.module, config.memory_limit) {
            let name = spec.name.clone();
            let summary = summary_of(&p.tool, &name);
            let tool = WasiTool::new(engine.clone(), spec);
            let command: Arc<dyn Command> =
                if p.tool.args_prefix.is_empty() && p.tool.args_adapter.is_none() {
                    Arc::new(tool)
                } else {
                    Arc::new(Wrapped {
                        tool,
                        prefix: p.tool.args_prefix.clone(),
                        adapter: p.tool.args_adapter,
                    })
                };
            register(&mut registry, &name, summary, command);
        }
    }
    for m in &found.missing {
        tracing::warn!(tool = %m.tool.name, "{}", m.reason);
        for name in m.tool.names() {
            let command: Arc<dyn Command> = Arc::new(NotProvisioned {
                reason: m.reason.clone(),
            });
            register(&mut registry, name, summary_of(&m.tool, name), command);
        }
    }
    let mounts = SystemMounts::open(found.ready.iter().flat_map(|p| {
        p.mounts
            .iter()
            .map(|(at, host)| (at.as_str(), host.as_path()))
    }))?;
    Ok(Setup {
        registry,
        mounts,
        ready: found.ready,
        missing: found.missing,
        engine,
    })
}

/// Registers `name` unless a builtin or native command has it.
fn register(registry: &mut Registry, name: &str, summary: String, command: Arc<dyn Command>) {
    registry.register(registry::Entry {
        name: name.to_string(),
        kind: CommandKind::Wasi,
        summary,
        command: Some(command),
    });
}

fn summary_of(tool: &Tool, name: &str) -> String {
    if tool.multicall.is_empty() {
        tool.summary.clone()
    } else {
        format!("{} ({name})", tool.summary)
    }
}

/// The module specs of one provisioned tool: one per command name it gets.
pub fn module_specs(tool: &Tool, module: &Path, server_limit: u64) -> Vec<ModuleSpec> {
    let entry = match &tool.kind {
        ToolKind::Command => Entry::Command,
        ToolKind::Reactor { init, run } => Entry::Reactor {
            // The engine skips an init the module does not export.
            init: init.clone().unwrap_or_else(|| "_initialize".into()),
            run: run.clone(),
        },
    };
    let memory_limit = Some(tool.memory_limit.unwrap_or(server_limit).min(server_limit));
    tool.names()
        .into_iter()
        .map(|name| ModuleSpec {
            name: name.to_string(),
            path: module.to_path_buf(),
            // A multicall module picks the utility by argv[0].
            argv0: if tool.multicall.is_empty() {
                tool.argv0.clone()
            } else {
                Some(name.to_string())
            },
            entry: entry.clone(),
            env: tool.env.clone(),
            memory_limit,
            host_call_stub: tool.host_call_stub,
            cwd_first: !tool.enters_pwd,
        })
        .collect()
}

/// Compiles every provisioned module into the engine's on-disk cache, so a server's
/// first run of a tool does no compiling (`forkbox wasm precompile`). Gives each tool's
/// name with how long it took (a cached module only loads) or why it failed.
pub async fn precompile(setup: &Setup) -> Vec<(String, Result<Duration, EngineError>)> {
    let mut out = Vec::new();
    for p in &setup.ready {
        let started = Instant::now();
        let r = setup
            .engine
            .load(&p.module, p.tool.host_call_stub)
            .await
            .map(|_| started.elapsed());
        out.push((p.tool.name.clone(), r));
    }
    out
}

/// Loads every provisioned module into the engine in the background (`forkbox serve` at
/// start), so the first session to run a tool after a server start finds it loaded:
/// reading a module back from the compiled cache costs a new process most of a second
/// for python (reading and hashing the 100 MB module, decompressing and mapping its
/// ~290 MB of machine code: see docs/BENCHMARKS.md), which a running server pays once.
/// A session that runs a tool before its turn comes waits on the same load, never a
/// second one. Loads run one after another on the blocking pool, python first (the
/// manifest's order).
pub fn preload(setup: &Setup) -> tokio::task::JoinHandle<()> {
    let engine = setup.engine.clone();
    let modules: Vec<(String, PathBuf, bool)> = setup
        .ready
        .iter()
        .map(|p| (p.tool.name.clone(), p.module.clone(), p.tool.host_call_stub))
        .collect();
    tokio::spawn(async move {
        for (name, module, stub) in modules {
            let started = Instant::now();
            match engine.load(&module, stub).await {
                Ok(_) => tracing::info!(
                    tool = %name,
                    ms = started.elapsed().as_millis() as u64,
                    "WASI module loaded"
                ),
                Err(e) => tracing::warn!(tool = %name, "WASI module not loaded: {e}"),
            }
        }
    })
}

/// The most of jaq's final error report kept to reword (its drawing of a long filter
/// included); past it the rest is dropped.
const MAX_JQ_REPORT: usize = 64 << 10;

/// A tool whose command line the manifest changes: arguments put before the command's
/// own, and a translation of them.
#[derive(Debug)]
struct Wrapped {
    tool: WasiTool,
    prefix: Vec<String>,
    adapter: Option<ArgsAdapter>,
}

#[async_trait]
impl Command for Wrapped {
    fn name(&self) -> &'static str {
        self.tool.name()
    }
    fn summary(&self) -> &'static str {
        self.tool.summary()
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut jq_report = None;
        if self.adapter == Some(ArgsAdapter::Jq)
            && let Some(message) = super::jq_args::cli_error(&args)
        {
            // jq refuses this command line before reading anything: in its words.
            ctx.stderr.write_str(&message).await?;
            return Ok(super::jq_args::STATUS_USAGE);
        }
        let args = match self.adapter {
            Some(ArgsAdapter::Jq) => {
                let (filter, files) = super::jq_args::filter_and_files(&args);
                let (null_input, slurp) = super::jq_args::input_flags(&args);
                // Where a runtime error happened: with `-n` nowhere, unless the filter
                // reads input itself (`input`, `inputs`).
                let nowhere = null_input && filter.as_deref().is_some_and(|f| !f.contains("input"));
                let input = JqInput {
                    at: nowhere.then(|| "<unknown>".to_string()),
                    stdin: !null_input && files.is_empty() && !ctx.stdin.is_pull_source(),
                    file: match files.as_slice() {
                        [one] if !null_input && one != "-" => Some(one.clone()),
                        _ => None,
                    },
                    slurp,
                };
                match super::jq_args::adapt(&args) {
                    Some(adapted) => {
                        // jaq draws the filter it was given, which is no longer the
                        // user's: reports that quote it are left alone.
                        jq_report = Some((None, files, input));
                        adapted
                    }
                    None => {
                        jq_report = Some((filter, files, input));
                        args
                    }
                }
            }
            Some(ArgsAdapter::Rg) => {
                // `/dev/null` is a character device to rg on a host: not "readable".
                let readable = !ctx.stdin.is_pull_source() && !ctx.stdin.is_null();
                super::rg_args::adapt(&args, readable).unwrap_or(args)
            }
            None => args,
        };
        let mut all = self.prefix.clone();
        all.extend(args);
        let Some((filter, files, input)) = jq_report else {
            return self.tool.run(ctx, all).await;
        };
        // The guest's stderr goes through a pipe: passed on line by line until jaq's
        // final report (`Error: …`, the last thing it writes), which is kept and given
        // in jq's words once the guest has ended (see [`super::jq_errors`]).
        let (err_w, err_r) = forkbox_commands::pipe();
        // Its stdin too, when it reads it: the first MAX_POSITION_INPUT bytes are kept
        // (charged to the session) as they pass, for the position of a runtime error.
        let (stdin, tee) = if input.stdin {
            let (w, r) = forkbox_commands::pipe();
            (r, Some(w))
        } else {
            (ctx.stdin.clone(), None)
        };
        let keep = async move {
            let tee = tee?;
            let mut kept = Some((Vec::new(), ctx.budget.empty_charge()));
            while let Some(chunk) = ctx.stdin.read_up_to(64 << 10).await.ok()? {
                if let Some((bytes, charge)) = &mut kept {
                    if bytes.len() + chunk.len() <= super::jq_errors::MAX_POSITION_INPUT
                        && charge.grow(chunk.len()).is_ok()
                    {
                        bytes.extend_from_slice(&chunk);
                    } else {
                        kept = None;
                    }
                }
                tee.write_all(&chunk).await.ok()?;
            }
            kept
        };
        let guest_ctx = Context {
            stderr: err_w,
            stdin,
            ..ctx.clone()
        };
        let run = async move {
            let r = self.tool.run(&guest_ctx, all).await;
            drop(guest_ctx);
            r
        };
        let forward = async {
            let mut report: Option<String> = None;
            while let Ok(Some(line)) = err_r.read_line(MAX_JQ_REPORT).await {
                if report.is_none() && line.starts_with(b"Error: ") {
                    report = Some(String::new());
                }
                match &mut report {
                    Some(r) if r.len() < MAX_JQ_REPORT => {
                        r.push_str(&String::from_utf8_lossy(&line));
                    }
                    Some(_) => {}
                    None => {
                        let _ = ctx.stderr.write_all(&line).await;
                    }
                }
            }
            report
        };
        let main = async { tokio::join!(run, forward) };
        tokio::pin!(main, keep);
        let mut kept = None;
        let (status, report) = loop {
            tokio::select! {
                // Standard input ends before the guest sees its end: taken first.
                biased;
                k = &mut keep, if kept.is_none() => kept = Some(k),
                out = &mut main => break out,
            }
        };
        let Some(report) = report else {
            return status;
        };
        let at = match (input.at, kept.flatten(), &input.file) {
            (Some(at), _, _) => Some(at),
            (None, Some((bytes, _charge)), _) => {
                super::jq_errors::input_position("<stdin>", &bytes, input.slurp)
            }
            (None, None, Some(file)) => file_position(ctx, file, input.slurp).await,
            (None, None, None) => None,
        };
        let text = super::jq_errors::rewrite(&report, filter.as_deref(), &files)
            .or_else(|| super::jq_errors::runtime(&report, at.as_deref()?))
            .unwrap_or_else(|| report.clone());
        let _ = ctx.stderr.write_str(&text).await;
        Ok(super::jq_errors::status(&report, status?))
    }
}

/// What the `jq` tool knows of its input, to say where a runtime error happened.
struct JqInput {
    /// The position when it is known from the command line (`<unknown>` with `-n`).
    at: Option<String>,
    /// The guest reads the command's stdin (no `-n`, no input files, not a terminal).
    stdin: bool,
    /// The one input file, read again for a runtime error's position.
    file: Option<String>,
    /// `--slurp`: an error's position is the end of the input.
    slurp: bool,
}

/// Where in the input file `file` jq would place a runtime error
/// ([`super::jq_errors::input_position`]); `None` for a file past
/// [`super::jq_errors::MAX_POSITION_INPUT`] or past what the session's memory has left.
async fn file_position(ctx: &Context, file: &str, slurp: bool) -> Option<String> {
    let path = ctx.path(file);
    let len = ctx.fs.stat(&path).await.ok()?.len;
    let max = super::jq_errors::MAX_POSITION_INPUT as u64;
    if len > max {
        return None;
    }
    let _charge = ctx.budget.charge(len as usize).ok()?;
    let bytes = forkbox_commands::fs::read_all(ctx.fs.as_ref(), &path, max)
        .await
        .ok()?;
    super::jq_errors::input_position(file, &bytes, slurp)
}

/// A tool the manifest names whose module is missing or corrupt on this server.
#[derive(Debug)]
struct NotProvisioned {
    /// Names the tool and the command that fixes it.
    reason: String,
}

#[async_trait]
impl Command for NotProvisioned {
    fn name(&self) -> &'static str {
        "wasm"
    }
    fn summary(&self) -> &'static str {
        "a WASI tool not provisioned on this server"
    }
    async fn run(&self, ctx: &Context, _args: Vec<String>) -> CmdResult {
        ctx.stderr
            .write_str(&format!("forkbox: {}\n", self.reason))
            .await?;
        Ok(STATUS_NOT_PROVISIONED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_follow_the_manifest() {
        let m = Manifest::embedded().unwrap();
        let python = m.tools.iter().find(|t| t.name == "python3").unwrap();
        let specs = module_specs(python, Path::new("/x/p.wasm"), 4 << 30);
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["python3", "python"]);
        assert_eq!(
            specs[0].argv0.as_deref(),
            Some("/usr/local/bin/python.wasm")
        );
        assert!(specs[0].host_call_stub);
        assert!(matches!(&specs[0].entry, Entry::Reactor { run, .. } if run == "run"));
        // The tool's own limit, unless the server's is lower.
        assert_eq!(specs[0].memory_limit, Some(1 << 30));
        let specs = module_specs(python, Path::new("/x/p.wasm"), 256 << 20);
        assert_eq!(specs[0].memory_limit, Some(256 << 20));

        let uu = m.tools.iter().find(|t| t.name == "coreutils").unwrap();
        let specs = module_specs(uu, Path::new("/x/c.wasm"), 1 << 30);
        let fmt = specs.iter().find(|s| s.name == "fmt").unwrap();
        assert_eq!(fmt.argv0.as_deref(), Some("fmt"));
        assert_eq!(fmt.entry, Entry::Command);
    }

    #[tokio::test]
    async fn native_commands_win_and_missing_tools_say_how_to_fix_it() {
        let dir = tempfile::tempdir().unwrap();
        let setup = setup(&WasiConfig {
            wasm_dir: dir.path().to_path_buf(),
            memory_limit: 1 << 30,
        })
        .unwrap();
        assert!(setup.ready.is_empty());
        assert!(setup.mounts.is_empty());
        // uutils never shadows a native command.
        let cat = setup.registry.resolve("cat").unwrap();
        assert_eq!(cat.kind, CommandKind::Native);
        let echo = setup.registry.resolve("echo").unwrap();
        assert_eq!(echo.kind, CommandKind::Builtin);
        for name in ["python3", "python", "qjs", "rg", "jq", "ptx"] {
            let e = setup.registry.resolve(name).unwrap();
            assert_eq!(e.kind, CommandKind::Wasi, "{name}");
        }
        let py = setup.registry.command("python").unwrap();
        let (status, out, err) = forkbox_commands::testing::Invocation::default()
            .run(py.as_ref(), &["-c", "print(1)"])
            .await;
        assert_eq!((status, out.as_str()), (127, ""));
        assert!(
            err.starts_with("forkbox: python3: not provisioned"),
            "{err}"
        );
        assert!(err.contains("run wasm/provision"), "{err}");
    }
}

//! WASI tools: WebAssembly modules run as commands over the session filesystem.
//!
//! - [`engine`]: the server's one wasmtime engine (async, epoch interruption, pooling
//!   allocator, GC and exceptions for the python module), its epoch ticker, the on-disk
//!   compiled-module cache and the in-memory table of loaded modules.
//! - [`p1`]: `wasi_snapshot_preview1` written over the filesystem port and the
//!   command's streams (never a host directory).
//! - [`manifest`]: `wasm/manifest.toml` (embedded in the binary), validated, and what a
//!   `--wasm-dir` holds of it (checked against the manifest's sha256).
//! - [`jq_args`]: GNU jq's `--argjson` and `-S` over jaq's command line.
//! - [`jq_errors`]: jaq's error reports in GNU jq's words, where those are known exactly.
//! - [`rg_args`]: ripgrep's implicit standard input, which its WASI build cannot detect.
//! - [`tools`]: the provisioned tools registered after builtins and native commands, and
//!   their read-only system files for the sessions' mount tables.
//! - [`tool`]: [`ModuleSpec`] (what the manifest says of a module) and [`WasiTool`], the
//!   [`forkbox_commands::Command`] that runs one, with the one table of exit statuses.
//!
//! The path of one run: the registry resolves `NAME` to a [`WasiTool`] → it asks the
//! [`WasiEngine`] for the module (compiled once per machine, loaded once per server) →
//! a fresh store with the command's args, env (plus `PWD`), streams, filesystem and
//! memory limit → `_start` (or the reactor's init and run) → the status, after every file
//! the guest left open is stored.
//!
//! The guest's working directory: wasi-libc starts every program in `/` and never
//! reads `PWD`, so a relative path names a file under the session root unless the
//! program changes directory itself (`chdir($PWD)`, which wasi-libc supports). The host
//! cannot do it for the guest: an absolute and a relative name reach it alike.

pub mod engine;
pub mod jq_args;
pub mod jq_errors;
pub mod manifest;
pub mod p1;
pub mod rg_args;
pub mod tool;
pub mod tools;

pub use engine::{DEFAULT_MEMORY_LIMIT, EngineConfig, EngineError, WasiEngine};
pub use tool::{Entry, ModuleSpec, WasiTool};

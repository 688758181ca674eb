//! forkbox: an SSH server that gives every connection its own disposable world.
//!
//! # Layout
//!
//! - [`config`]: command-line configuration (`forkbox serve`, `forkbox exec`).
//! - [`server`]: accepts TCP connections, bounds those still logging in (in total, per
//!   address, in time) apart from sessions, and drains them on shutdown.
//! - [`ssh`]: the russh handler: authentication, channels, exec/shell/pty requests;
//!   [`ssh::sftp`], the SFTP subsystem over the session's filesystem.
//! - [`session`]: one task per connection that owns its fork, runs its shells and deletes
//!   the fork on every exit path; [`session::pool`] keeps forks ready for logins.
//! - [`fork`]: fork strategies (overlay on any store, Tigris bucket forks), the
//!   [`fork::SessionId`], fork leases, and the S3 control plane (aws-sdk-s3).
//! - [`janitor`]: deletes forks whose server is gone (expired leases) and snapshots past
//!   their age or count limit, safely with many servers on one store.
//! - [`storage`]: object storage through opendal.
//! - [`vfs`]: the session filesystem over a fork; the only filesystem API above storage.
//! - [`shell`]: the bash-compatible interpreter over brush-parser's AST.
//! - [`registry`]: the one command resolver: builtins, native commands, (later) WASI tools.
//! - [`wasi`]: WebAssembly tools: the wasmtime engine, `wasi_snapshot_preview1` over the
//!   session filesystem, and the command that runs a module.
//! - [`terminal`]: a PTY channel's terminal over its byte stream, below both [`ssh`] and
//!   [`session`]: the typed-input queue (cooked and raw modes, Ctrl-C), the prompt's line
//!   editor (keys, history, completion, wrap-aware redraw) and the `Terminal` seam commands
//!   get.
//! - [`telemetry`]: logs (text or JSON lines), Prometheus metrics and the HTTP side port
//!   (`/healthz`, `/readyz`, `/metrics`).
//! - [`audit`]: the audit trail of every command line sessions run (stdout, a file, or
//!   the store).
//! - [`app`]: wiring of `forkbox serve`, `forkbox exec` and `forkbox snapshots`.
//!
//! # The path of one request
//!
//! `ssh host 'echo hi > f'` → [`server`] accepts → [`ssh`] authenticates → [`session`] takes
//! a fork made ahead from the pool, its [`fork::SessionId`] the session's (or mints one and
//! creates the fork) → the exec request runs in a [`shell::Shell`]
//! whose commands see the [`vfs::Vfs`] → stdout/stderr stream back over the channel, then
//! `exit-status`, EOF and close → on disconnect the session deletes the fork.

pub mod app;
pub mod audit;
pub mod config;
pub mod fork;
pub mod janitor;
pub mod registry;
pub mod server;
pub mod session;
pub mod shell;
pub mod ssh;
pub mod storage;
pub mod telemetry;
pub mod terminal;
pub mod vfs;
pub mod wasi;

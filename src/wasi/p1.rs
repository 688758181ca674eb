//! `wasi_snapshot_preview1` over the session filesystem port and the command's stdio.
//!
//! wasmtime-wasi's own preview 1 only maps host directories, so forkbox writes the
//! imports itself (DESIGN.md, "WASI runs on the VFS"): each is a host function on a
//! [`wasmtime::Linker`], async where it waits (files, pipes, timers), so a guest blocked
//! on a pipe or on object storage parks its task, never a thread. Semantics and errno
//! values follow wasmtime-wasi's preview 1.
//!
//! - [`abi`]: errno values, flags, struct layouts, checked guest memory.
//! - [`table`]: the descriptor table.
//! - [`basics`]: args, environment, clocks, random, exit, yield, sockets (refused).
//! - [`fd`]: `fd_*` calls.
//! - [`path`]: `path_*` calls, relative to directory descriptors.
//! - [`poll`]: the `poll_oneoff` call.
//!
//! The guest sees one preopened directory, fd 3 named `/`: the session root. Absolute
//! paths in the guest (`/etc/passwd`) are the session's own; `..` stops at its root and
//! symlinks resolve inside it, because the port is the whole world: no host path is
//! reachable at all.

use std::sync::Arc;
use std::time::Instant;

use forkbox_commands::{Budget, Charge, FileSystem, Input, OutOfMemory, Output, bytetext};
use tokio_util::sync::CancellationToken;
use wasmtime::{Caller, Linker, Memory};

pub mod abi;
pub mod basics;
pub mod fd;
pub mod path;
pub mod poll;
pub mod table;

use abi::{Errno, Mem};
use table::{Fd, FdTable, ROOT_FD};

/// The WASI module name the imports live under.
pub const MODULE: &str = "wasi_snapshot_preview1";

/// Why a guest stopped other than by returning: carried as the error of the trap a host
/// function raises, and turned into an exit status by the tool.
#[derive(Debug, thiserror::Error)]
pub enum GuestExit {
    /// `proc_exit(code)`.
    #[error("exit status {0}")]
    Exit(u32),
    /// Standard output's reader went away (what SIGPIPE does to a process).
    #[error("broken pipe")]
    BrokenPipe,
    /// Ctrl-C, a timeout or the session ending.
    #[error("interrupted")]
    Cancelled,
    /// Linear memory would grow past the instance's limit.
    #[error("out of memory")]
    OutOfMemory,
}

/// What a host function gives up with: an errno for the guest, or a trap that ends it.
#[derive(Debug)]
pub enum Fail {
    Errno(Errno),
    Trap(wasmtime::Error),
}

impl From<Errno> for Fail {
    fn from(e: Errno) -> Fail {
        Fail::Errno(e)
    }
}

impl From<forkbox_commands::FsError> for Fail {
    fn from(e: forkbox_commands::FsError) -> Fail {
        Fail::Errno(e.into())
    }
}

impl From<GuestExit> for Fail {
    fn from(e: GuestExit) -> Fail {
        Fail::Trap(wasmtime::Error::new(e))
    }
}

/// The result of one host function body.
pub type HostResult<T = ()> = Result<T, Fail>;

/// The errno a call returns, or the trap it raises.
pub fn finish(r: HostResult) -> wasmtime::Result<i32> {
    match r {
        Ok(()) => Ok(0),
        Err(Fail::Errno(e)) => Ok(i32::from(e.0)),
        Err(Fail::Trap(t)) => Err(t),
    }
}

/// Everything one guest instance runs with: the store's data.
pub struct Host {
    /// `argv`, each without its NUL.
    pub args: Vec<Vec<u8>>,
    /// `KEY=value` entries, each without its NUL.
    pub env: Vec<Vec<u8>>,
    pub fs: Arc<dyn FileSystem>,
    pub fds: FdTable,
    /// The guest's exported memory, set once it is instantiated.
    pub memory: Option<Memory>,
    /// The instance's memory bound (see [`Limits`]).
    pub limits: Limits,
    /// When the guest started: its monotonic clock and CPU-time clocks count from here.
    pub start: Instant,
    pub cancel: CancellationToken,
    /// The shell's directory, when names under the root preopen are looked for there
    /// first ([`crate::wasi::ModuleSpec::cwd_first`]).
    pub cwd_first: Option<String>,
}

/// Standard streams and whether each is the session's terminal.
pub struct Stdio {
    pub stdin: Input,
    pub stdout: Output,
    pub stderr: Output,
    /// Standard input is the terminal (`python3` alone gives its REPL).
    pub stdin_tty: bool,
    /// Standard output and error are the terminal.
    pub stdout_tty: bool,
}

impl Host {
    /// A guest with `args`, `env` (`KEY`, `value`), the filesystem, stdio as fds 0–2 and
    /// the session root preopened as fd 3; its memory bounded by `memory_limit` and
    /// charged to the session's `budget`.
    pub fn new(
        args: Vec<String>,
        env: Vec<(String, String)>,
        fs: Arc<dyn FileSystem>,
        stdio: Stdio,
        memory_limit: u64,
        budget: &Budget,
        cancel: CancellationToken,
    ) -> Host {
        let mut fds = FdTable::new();
        fds.insert_at(
            0,
            Fd::In {
                input: stdio.stdin,
                tty: stdio.stdin_tty,
                nonblock: false,
            },
        );
        fds.insert_at(
            1,
            Fd::Out {
                output: stdio.stdout,
                tty: stdio.stdout_tty,
            },
        );
        fds.insert_at(
            2,
            Fd::Out {
                output: stdio.stderr,
                tty: stdio.stdout_tty,
            },
        );
        fds.insert_at(
            ROOT_FD,
            Fd::Dir {
                path: "/".to_string(),
                preopen: Some("/".to_string()),
                listing: Vec::new(),
            },
        );
        Host {
            args: args
                .iter()
                .map(|a| bytetext::encode(a).into_owned())
                .collect(),
            env: env
                .into_iter()
                .map(|(k, v)| bytetext::encode(&format!("{k}={v}")).into_owned())
                .collect(),
            fs,
            fds,
            memory: None,
            limits: Limits::new(memory_limit, budget),
            start: Instant::now(),
            cancel,
            cwd_first: None,
        }
    }
}

/// The per-instance memory bound, as wasmtime asks it before every growth (and when the
/// memory is first created), and the session's share of it. Going past either ends the
/// guest with [`GuestExit::OutOfMemory`] rather than failing the growth: a guest that is
/// refused memory usually dies confusingly (an abort, a `MemoryError` traceback), and the
/// user should be told plainly which limit was hit.
///
/// The guest's linear memory is charged to the session's [`Budget`] as it grows and given
/// back when the store (and with it this charge) is dropped at the guest's end, so a
/// session's guests together stay under the session's memory limit, as its buffers and
/// variables do: two sessions cannot each hold a guest of the full per-instance limit past
/// their own.
pub struct Limits {
    pub limit: u64,
    /// The session's memory taken for the guest's linear memory.
    pub charge: Charge,
    /// Set when a growth was refused, with which limit refused it.
    pub hit: Option<LimitHit>,
}

/// Which bound refused a guest's memory growth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitHit {
    /// The instance's own limit ([`Limits::limit`]).
    Instance,
    /// The session's memory budget, with its limit.
    Session(OutOfMemory),
}

impl Limits {
    /// `limit` bytes for the instance, charged to `budget` as it grows.
    pub fn new(limit: u64, budget: &Budget) -> Limits {
        Limits {
            limit,
            charge: budget.empty_charge(),
            hit: None,
        }
    }
}

/// Tables (function references) one instance may hold: far more than real programs use
/// (the python module has ~100,000), few enough that a guest cannot take host memory
/// through them.
pub const MAX_TABLE_ELEMENTS: usize = 10_000_000;

impl wasmtime::ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.limit {
            self.hit = Some(LimitHit::Instance);
            return Err(wasmtime::Error::new(GuestExit::OutOfMemory));
        }
        // Linear memory never shrinks: the charge follows its size.
        if let Err(e) = self.charge.resize(desired.max(self.charge.bytes())) {
            self.hit = Some(LimitHit::Session(e));
            return Err(wasmtime::Error::new(GuestExit::OutOfMemory));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// The guest's memory and the host state, borrowed together.
pub fn split<'a>(caller: &'a mut Caller<'_, Host>) -> Result<(Mem<'a>, &'a mut Host), Errno> {
    let memory = match caller.data().memory {
        Some(m) => m,
        None => caller
            .get_export("memory")
            .and_then(|e| e.into_memory())
            .ok_or(Errno::FAULT)?,
    };
    let (data, host) = memory.data_and_store_mut(caller);
    Ok((Mem(data), host))
}

/// Registers every preview-1 import on `linker`.
pub fn add_to_linker(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    basics::add_to_linker(linker)?;
    fd::add_to_linker(linker)?;
    path::add_to_linker(linker)?;
    poll::add_to_linker(linker)?;
    Ok(())
}

/// Pointer arguments arrive as `i32`; the ABI means them unsigned.
pub fn ptr(p: i32) -> u32 {
    p as u32
}

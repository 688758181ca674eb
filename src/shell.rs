//! The userspace bash-compatible shell of a forkbox session.
//!
//! brush-parser turns text into an AST; this module interprets it asynchronously over the
//! session's [`FileSystem`] and the command [`Registry`], owning no OS resources: no host
//! process, file or descriptor is ever touched.
//!
//! # Layout
//!
//! - this file: the public surface ([`Shell`], [`ShellConfig`], [`Stdio`], [`Completeness`])
//!   and the shell state (variables, functions, options, positional parameters).
//! - [`error`]: every interpreter error, its exit status and its stderr wording, in one place.
//! - `exec`: one method per AST node (lists, pipelines, compound and simple commands).
//! - `expand`: word expansion (parameters, command substitution, arithmetic, splitting, globbing).
//! - `redirect`: the descriptor table of a command and `<`, `>`, `2>&1`, here-documents.
//! - `arith`: arithmetic evaluation. `pattern`: glob patterns. `builtins/`: one file per builtin.
//! - `launcher`: lets native commands (`env`, `xargs`) launch commands and nested shells.
//! - `jobs`: background jobs, pids and signals as messages; `trap`: running handlers;
//!   `procsubst`: `<(…)`/`>(…)` and `/dev/fd/N` for a command's descriptors.
//!
//! The path of one line: [`Shell::run_script`] parses it, `exec` walks the AST, each simple
//! command expands its words, applies its redirections, and runs a function, a builtin or a
//! registry command with a [`forkbox_commands::Context`]; pipeline stages run concurrently,
//! joined by bounded pipes.
//!
//! # What is not supported (each gives `bash: line N: <feature>: not supported`, status 2)
//!
//! Job control proper (stopping/resuming; `&` jobs, `coproc`, signals and `set -m`'s job
//! reports are in [`jobs`]),
//! `enable -n`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use brush_parser::ast;
use forkbox_commands::{Budget, FileSystem, Input, Output, TermSize};
use tokio_util::sync::CancellationToken;

use crate::registry::Registry;

pub mod error;

mod arith;
mod assoc;
mod builtins;
mod cond;
mod exec;
mod expand;
mod jobs;
mod launcher;
mod lines;
mod parse;
mod pattern;
mod printer;
mod procsubst;
mod redirect;
#[cfg(test)]
pub(crate) mod testing;
mod trap;
mod umask_fs;
mod vars;
mod varstore;

use varstore::VarsCharge;

pub use builtins::snapshot::{
    SnapshotControl, SnapshotError, SnapshotInfo, human_size, iso8601, json_str,
};
pub use error::ShellError;
pub use launcher::ShellLauncher;
pub use parse::{Completeness, PendingInput};

use redirect::Fds;

pub(crate) use assoc::AssocArray;
pub(crate) use vars::Attrs;

/// Deepest nesting of shell function calls (bash has no default limit and crashes instead);
/// deeper calls fail with an error instead of exhausting the task's stack.
pub const MAX_CALL_DEPTH: usize = 1000;

/// PATH when the environment gives none: bash's default, which finds the commands in
/// `/usr/bin` and `/bin`.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.";

/// Largest value one variable (or array element) may hold. Without a bound, a doubling
/// loop (`x=$x$x`) would take the whole server's memory; an assignment past it fails.
pub const MAX_VALUE: usize = 64 * 1024 * 1024;

/// Most elements one array may hold, for the same reason.
pub const MAX_ARRAY_LEN: usize = 1 << 20;

fn too_large(name: &str) -> ShellError {
    ShellError::Limit(format!("{name}: value larger than {MAX_VALUE} bytes"))
}

fn check_value_size(name: &str, value: &Value) -> Result<(), ShellError> {
    match value {
        Value::Str(s) if s.len() > MAX_VALUE => Err(too_large(name)),
        Value::Array(a) if a.len() > MAX_ARRAY_LEN => Err(ShellError::Limit(format!(
            "{name}: more than {MAX_ARRAY_LEN} array elements"
        ))),
        Value::Array(a) if a.values().map(String::len).sum::<usize>() > MAX_VALUE => {
            Err(too_large(name))
        }
        Value::Assoc(a) if a.len() > MAX_ARRAY_LEN => Err(ShellError::Limit(format!(
            "{name}: more than {MAX_ARRAY_LEN} array elements"
        ))),
        Value::Assoc(a) if a.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() > MAX_VALUE => {
            Err(too_large(name))
        }
        _ => Ok(()),
    }
}

/// Largest output a command substitution may capture; beyond it the substitution fails,
/// so `x=$(yes)` cannot exhaust the server's memory.
pub const MAX_SUBSTITUTION_OUTPUT: usize = 16 * 1024 * 1024;

/// Largest here-document or here-string body after expansion.
pub const MAX_HEREDOC: usize = 16 * 1024 * 1024;

/// Longest line `read` accepts before splitting it, and the longest line of a script
/// [`Shell::run_stream`] reads at all: bounds memory per line. A script line is never
/// split, since its second half would run as a command of its own; a longer one is
/// refused ([`line_too_long`]) and nothing after it runs.
pub const MAX_LINE: usize = 1024 * 1024;

/// Largest script `source`, `sh FILE` or a `#!` script may be, and the most unfinished
/// input (an open `if`, quote or here-document) [`Shell::run_stream`] or a terminal
/// holds while waiting for the rest of a command ([`command_too_long`]).
pub const MAX_SCRIPT: u64 = 16 * 1024 * 1024;

/// The error for a script line longer than `max` bytes: the script is refused there,
/// with status 2 like a syntax error, since the line cannot be read as it was written.
pub fn line_too_long(max: usize) -> ShellError {
    ShellError::Syntax(format!("line longer than {max} bytes"))
}

/// The error for an unfinished command that grew past [`MAX_SCRIPT`] bytes.
pub fn command_too_long() -> ShellError {
    ShellError::Syntax(format!("unfinished command longer than {MAX_SCRIPT} bytes"))
}

/// Commands run between two forced yields to the runtime, so a busy loop of builtins
/// cannot starve other sessions on the same worker thread.
pub const YIELD_EVERY: u64 = 64;

/// Function calls nested on one task before the next call moves to a fresh task: each
/// nesting level costs stack while its future is polled, and a task starts on a fresh
/// poll stack, so deep recursion costs heap instead of overflowing the worker's stack.
pub const CALLS_PER_TASK: usize = 8;

/// The maps looked up on every command (variables, functions): keyed by short names the
/// script chooses, so a fast hasher (foldhash, randomly seeded per process) instead of
/// SipHash, which costs more than the rest of a variable read.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

pub(crate) type BoxFut<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Stack the interpreter wants left before it polls one more nested step (a command inside
/// a compound command, a word inside a `${ }`): more than the deepest single step takes.
/// A step can be long in a debug build (a function called inside `eval` inside a pipeline
/// stage: the fuzz test's deep scripts overflowed a 2 MiB worker stack with 256 KiB), so
/// half a default worker stack.
const STACK_RED_ZONE: usize = 1024 * 1024;

/// Size of a fresh stack segment when less than [`STACK_RED_ZONE`] is left.
const STACK_SEGMENT: usize = 8 * 1024 * 1024;

/// Polls `fut` with at least [`STACK_RED_ZONE`] of stack, moving to a fresh segment on the
/// heap when less is left: a deeply nested script costs heap, never a stack overflow.
pub(crate) fn grow<'a, T: 'a>(mut fut: BoxFut<'a, T>) -> BoxFut<'a, T> {
    Box::pin(std::future::poll_fn(move |cx| {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || fut.as_mut().poll(cx))
    }))
}

/// Runs `fut` as its own task of the session (so it is polled from a fresh stack) and
/// waits for it; dropping the returned future aborts the task. `None` if the task panicked.
pub(crate) async fn on_fresh_task<T: Send + 'static>(
    budget: &Budget,
    fut: impl std::future::Future<Output = T> + Send + 'static,
) -> Option<T> {
    struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);
    impl<T> Drop for AbortOnDrop<T> {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let mut guard = AbortOnDrop(budget.spawn(fut));
    (&mut guard.0).await.ok()
}

/// How a session's shell starts.
pub struct ShellConfig {
    pub fs: Arc<dyn FileSystem>,
    pub registry: Arc<Registry>,
    /// Initial exported variables (HOME, USER, PATH, FORKBOX_SESSION, ...).
    pub env: Vec<(String, String)>,
    /// Initial working directory, absolute.
    pub cwd: String,
    pub interactive: bool,
    /// The session's memory and task bounds, shared by every shell of the session.
    pub budget: Budget,
}

/// The streams a script runs with. `tty` is `Some` when stdout is the session's terminal.
#[derive(Clone, Debug)]
pub struct Stdio {
    pub stdin: Input,
    pub stdout: Output,
    pub stderr: Output,
    pub tty: Option<TermSize>,
    /// The session's terminal for full-screen programs; `Some` exactly when `tty` is.
    pub terminal: Option<TerminalHandle>,
}

/// The session's terminal as the shell carries it (a command gets it in its `Context`).
#[derive(Clone)]
pub struct TerminalHandle(pub Arc<dyn forkbox_commands::Terminal>);

impl std::fmt::Debug for TerminalHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TerminalHandle")
    }
}

/// The value of a shell variable.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Str(String),
    /// An indexed array (`a=(x y)`), sparse like bash's.
    Array(BTreeMap<i64, String>),
    /// An associative array (`declare -A`), in bash's iteration order.
    Assoc(AssocArray),
}

impl Value {
    /// The scalar view: a string, or an array's element 0.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            Value::Array(a) => a.get(&0).map(String::as_str),
            Value::Assoc(a) => a.get("0").map(String::as_str),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Var {
    pub value: Value,
    pub exported: bool,
    pub readonly: bool,
    /// `declare`'s other attributes (`-i -l -u -n -t`, declared without a value).
    pub attrs: Attrs,
}

/// `set -o` options.
#[derive(Clone, Debug, Default)]
pub(crate) struct Options {
    pub errexit: bool,
    pub nounset: bool,
    pub pipefail: bool,
    pub xtrace: bool,
    pub noglob: bool,
    pub noclobber: bool,
    pub verbose: bool,
    /// `set -a`: every variable assigned is exported.
    pub allexport: bool,
    /// `set -n`: commands are read but not run.
    pub noexec: bool,
    /// `set -o emacs`: shown by `set -o`; the terminal's editor is emacs-style anyway.
    pub emacs: bool,
    /// `set -o vi`: recorded and shown (turning it on turns emacs off, as in bash); the
    /// terminal's editor keeps its emacs-style keys.
    pub vi: bool,
    /// `set -m`: job control. A session has no terminal process groups, so what it changes
    /// is what bash's does without a terminal: job reports (`[1]+  Done  cmd`) as jobs end,
    /// and `lastpipe` no longer applies.
    pub monitor: bool,
    /// `set -k`: assignment words anywhere among a command's words go to its environment.
    pub keyword: bool,
    /// `set -t`: a shell reading commands from its input ends after the command that set
    /// it (a `-c` string only shows it in `$-`, as bash's does).
    pub onecmd: bool,
    /// `set -h`: shown by `set -o`; there is no command hash either way.
    pub hashall: bool,
    /// `set -E`: the ERR trap is inherited by functions, substitutions and subshells.
    pub errtrace: bool,
    /// `set -T`: the DEBUG and RETURN traps are inherited likewise.
    pub functrace: bool,
    /// `set -o posix`: command substitutions inherit `set -e`, and an expansion error ends
    /// a non-interactive shell instead of only the current command.
    pub posix: bool,
    /// `set -B` (on by default): brace expansion.
    pub braceexpand: bool,
    /// `set -H` (on by default in an interactive shell): `!` history expansion of the
    /// lines the terminal's editor reads.
    pub histexpand: bool,
    /// `set -o history` (on by default in an interactive shell): typed commands are
    /// remembered.
    pub history: bool,
    /// `set -b`: shown by `$-` and `set -o`; a script's job reports come when bash's would.
    pub notify: bool,
    /// `set -p`: shown only; a session has no set-user-id to keep or drop.
    pub privileged: bool,
    /// `set -o ignoreeof`: shown only; it matters to an interactive shell reading EOF.
    pub ignoreeof: bool,
    /// `set -o nolog`: shown only, as in bash (which ignores it).
    pub nolog: bool,
    /// `set -P`: `cd` and `pwd` resolve symbolic links unless given `-L`.
    pub physical: bool,
}

/// Told of each complete command a shell reads from a stream and runs: the session's
/// audit trail of a script piped to a shell without a terminal.
#[async_trait::async_trait]
pub trait CommandLog: Send + Sync {
    /// `command` (its text as read) started at `started`, ran for `duration` and left
    /// `status`.
    async fn ran(
        &self,
        command: &str,
        started: std::time::SystemTime,
        duration: std::time::Duration,
        status: i32,
    );
}

/// A shell: all the state one session's interpreter keeps between commands.
///
/// Subshells (`( … )`, pipeline stages, command substitution) are clones: changes in
/// them never reach the parent.
#[derive(Clone)]
pub struct Shell {
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) registry: Arc<Registry>,
    pub(crate) vars: FastMap<String, Var>,
    pub(crate) functions: FastMap<String, Arc<ast::FunctionDefinition>>,
    /// Functions made readonly (`readonly -f`): redefining or unsetting them fails.
    pub(crate) readonly_functions: std::collections::HashSet<String>,
    /// Functions with the trace attribute (`declare -ft`): they inherit the DEBUG and
    /// RETURN traps as every function does under `set -T`.
    pub(crate) traced_functions: std::collections::HashSet<String>,
    /// Whether the running function call sees the DEBUG and RETURN traps through the
    /// trace attribute (its own, with the caller seeing them too).
    pub(crate) traced_call: bool,
    /// Logical working directory (`$PWD`), absolute and normalized.
    pub(crate) cwd: String,
    /// Whether the logical working directory was reached through a path that starts
    /// with exactly two slashes (`cd //tmp`): bash keeps them in `$PWD` (POSIX leaves
    /// their meaning to the system), while `cwd` stays normalized for the filesystem.
    pub(crate) cwd_double_slash: bool,
    pub(crate) arg0: String,
    pub(crate) positional: Vec<String>,
    /// Counts `set`'s changes of the positional parameters (a function
    /// call's own do not count after it returns): `source FILE ARGS` keeps the ones the
    /// file set instead of restoring the caller's.
    pub(crate) positional_changes: u64,
    pub(crate) last_status: i32,
    pub(crate) pipestatus: Vec<i32>,
    /// The number of stages of the pipeline this shell is running, while it runs: when
    /// Ctrl-C drops a command line mid-pipeline, `PIPESTATUS` gets 130 for each stage,
    /// as bash's whole foreground pipeline gets SIGINT.
    pub(crate) pipeline_in_flight: Option<usize>,
    pub(crate) opts: Options,
    /// `shopt` options.
    pub(crate) shopts: builtins::shopt::Shopts,
    /// Where `getopts` stands inside a cluster of option letters.
    pub(crate) getopts: builtins::getopts::GetoptsPos,
    /// The directory stack of `pushd`/`popd` below the working directory, top first.
    pub(crate) dirstack: Vec<String>,
    /// `complete` specifications.
    pub(crate) completions: builtins::complete::Completions,
    /// `umask`: the file mode creation mask.
    pub(crate) umask: u32,
    /// `alias` definitions.
    pub(crate) aliases: builtins::alias::Aliases,
    /// Aliases being expanded (not replaced again inside their own expansion).
    pub(crate) alias_active: Vec<String>,
    /// Saved values of variables made `local`, one frame per function call being run
    /// (and one more under it for the call's temporary bindings, `x=1 f`).
    pub(crate) local_frames: Vec<varstore::Frame>,
    pub(crate) interactive: bool,
    pub(crate) exit_requested: Option<i32>,
    /// `$$`: stable for the shell's life and shared by its subshells, like bash.
    pub(crate) pid: u32,
    pub(crate) call_depth: usize,
    pub(crate) loop_depth: usize,
    /// Non-zero while running a condition (`if`, `while`, `&&` left side, `!`): `set -e`
    /// does not fire there.
    pub(crate) errexit_suppressed: usize,
    /// Depth of `source` being run (`return` is allowed there).
    pub(crate) source_depth: usize,
    /// Depth of `eval` and `source` being run together, bounded like function calls
    /// ([`MAX_CALL_DEPTH`]): `e='eval "$e"'; eval "$e"` recurses without any function.
    pub(crate) input_depth: usize,
    pub(crate) cancel: CancellationToken,
    /// Commands run since the last forced yield (see [`YIELD_EVERY`]).
    pub(crate) steps: u64,
    pub(crate) random_state: u64,
    /// True in a subshell: `exit` ends only the subshell.
    pub(crate) is_subshell: bool,
    /// True while the shell runs a script read from a file or its input rather than a
    /// `-c` string: bash ends such a script with status 1, not 127, on an unset
    /// variable under `set -u` or a `${x:?}` error.
    pub(crate) reads_input: bool,
    /// The last letter of `$-` in a non-interactive shell, for where it reads its
    /// commands: `c` for a `-c` string (and a session's commands), `s` for its standard
    /// input, none for a script file.
    pub(crate) input_letter: Option<char>,
    /// True in the subshell that runs `command_not_found_handle` (which is not run again
    /// for a command missing there).
    pub(crate) in_not_found_handler: bool,
    /// The session user's home as the password database would give it (the `HOME` the
    /// session started with): what `~` is once `HOME` is unset, as in bash.
    pub(crate) login_home: String,
    /// Set by a special builtin that met an error POSIX makes fatal beyond a usage error
    /// (`.` of a file it cannot read, a syntax error in `eval`, `export`/`readonly` of a
    /// readonly variable); taken where special builtins are run, which ends a
    /// non-interactive POSIX shell then (not when run through `command`).
    pub(crate) special_failed: bool,
    /// bash's table of command paths (`hash`): name, path, times run through it; in the
    /// order they were remembered. Assigning `PATH` empties it.
    pub(crate) hashed: Vec<(String, String, u32)>,
    /// The builtins `enable -n` turned off: looked up as commands instead.
    pub(crate) disabled_builtins: std::collections::BTreeSet<String>,
    /// Command substitutions run so far: `x=$(false)` takes its status from the last one.
    pub(crate) subst_runs: u64,
    /// The session's fork, for the `snapshot` builtin; `None` where there is no session.
    pub(crate) snapshots: Option<Arc<dyn SnapshotControl>>,
    /// Descriptors above 2 a nested `sh`/`bash` inherits from the command that started
    /// it (`exec 3>f; sh -c 'echo x >&3'`), open beside its standard streams.
    pub(crate) inherited_fds: BTreeMap<i32, redirect::Fd>,
    /// Told of every complete command [`Shell::run_stream`] reads and runs (the
    /// session's audit trail); `None` where nobody listens.
    pub(crate) command_log: Option<Arc<dyn CommandLog>>,
    /// The session's memory and task bounds.
    pub(crate) budget: Budget,
    /// The task slot this (sub)shell holds; copies made to continue on a fresh task
    /// share it.
    pub(crate) slot: Option<Arc<forkbox_commands::TaskSlot>>,
    /// What this shell's variables cost the session's memory budget; a copy of the shell
    /// (a subshell) counts again, as it holds its own copy of them.
    pub(crate) vars_mem: VarsCharge,
    /// Every shell and job of this shell tree by pid, for `kill` (see [`jobs`]).
    pub(crate) procs: Arc<jobs::Procs>,
    /// This (sub)shell as `kill` sees it; `bashpid` is its pid (`$BASHPID`).
    pub(crate) me: Arc<jobs::Proc>,
    pub(crate) bashpid: u32,
    /// The background jobs this shell started.
    pub(crate) jobs: jobs::Jobs,
    /// The root of every job's cancellation: cancelled when the top shell goes away, so
    /// no job outlives it. Subshells share it; only the top shell holds `jobs_guard`.
    pub(crate) jobs_root: Arc<jobs::JobsRoot>,
    pub(crate) jobs_guard: Option<Arc<jobs::JobsGuard>>,
    /// True in a background job (and its subshells): its jobs are children of its own
    /// cancellation, so stopping it stops them.
    pub(crate) in_job: bool,
    /// Active traps; `shown_traps` are the parent's, which a subshell lists with
    /// `trap -p` but does not run (bash's behaviour).
    pub(crate) traps: jobs::TrapTable,
    pub(crate) shown_traps: jobs::TrapTable,
    /// Non-zero while a trap handler runs (traps do not nest).
    pub(crate) in_trap: usize,
    /// The condition of the innermost running handler and `$?` before it: `exit` without
    /// an argument in an EXIT handler, and `return` without one in any handler but
    /// DEBUG's, end with that status rather than the handler's last command's.
    pub(crate) trap_saved: Option<(i32, i32)>,
    /// `$BASH_COMMAND`: the command running (as bash prints it), kept up to date only
    /// while a trap is set or the command itself reads it; a trap handler sees the
    /// command it interrupted.
    pub(crate) bash_command: String,
    /// The descriptor table `exec` with only redirections made permanent; lists switch to
    /// it between commands (its `generation` is newer than theirs).
    pub(crate) exec_fds: Option<Fds>,
    pub(crate) exec_gen: u64,
    /// Files `exec` opened for writing, by the descriptors they are on: closed when those
    /// are redirected again and when the shell ends.
    pub(crate) exec_closers: ExecClosers,
    /// Functions `export -f` marked: nested shells get them through the environment.
    pub(crate) exported_functions: std::collections::BTreeSet<String>,
    /// Whether the locale was not UTF-8 when the running command was read: `$'\u…'` is
    /// decoded as it was then.
    pub(crate) read_byte_locale: bool,
    /// The functions being run, outermost first (`FUNCNAME` lists them innermost first).
    pub(crate) funcnames: Vec<String>,
    /// `LINENO`, the stack behind `BASH_LINENO`/`BASH_SOURCE`, and read order (aliases).
    pub(crate) lines: lines::Lines,
    /// `ulimit`'s limits: recorded and reported, not enforced (see `builtins::ulimit`).
    pub(crate) ulimits: builtins::ulimit::Limits,
    /// `$BASH_SUBSHELL`: how many subshells deep this shell is.
    pub(crate) subshell_level: u32,
    /// Set in the subshell of a pipeline stage that is a simple command: bash expands
    /// its words one `$BASH_SUBSHELL` level up, and counts the level only when the
    /// command runs (a function's body, `eval`'s input are one deeper).
    pub(crate) stage_level_pending: bool,
    /// How many command substitutions, `eval`s and `source`s deep the running command is:
    /// `set -x` repeats the first character of `PS4` once more per level (`++ cmd`).
    pub(crate) trace_depth: usize,
    /// When `$SECONDS` was last set, and to what (0 at start, N by `SECONDS=N`, which
    /// may be negative): it reads as N plus the whole seconds since.
    pub(crate) seconds_base: (std::time::Instant, i64),
    /// The computed variables (`vars::DYNAMIC_VARS`) that `unset` made ordinary ones,
    /// as bash does: `unset RANDOM; RANDOM=5` keeps 5.
    pub(crate) unspecial: std::collections::BTreeSet<&'static str>,
    /// Words already parsed, by their text (shared with subshells).
    pub(crate) word_cache: expand::WordCache,
    /// Set when a session limit (memory, tasks) abandoned this top-level shell's script:
    /// the line that said so, for the channel's `exit-signal`. Never set in a subshell.
    pub(crate) limit_abort: Option<String>,
    /// True while `exec` opens its redirections: files it opens for writing are written
    /// through open files, so the rest of the script reads what went to them while they
    /// stay open (see `redirect::open_exec_file`).
    pub(crate) exec_opening: bool,
    /// The command history (`history`, `fc -l`): the terminal editor's list in an
    /// interactive session, an empty one elsewhere (`history -s` still adds to it).
    pub(crate) history: crate::terminal::SharedHistory,
}

/// See [`Shell::exec_closers`]; shared by copies of a shell, not by subshells.
pub(crate) type ExecClosers = Arc<std::sync::Mutex<Vec<(Vec<i32>, redirect::Closer)>>>;

impl std::fmt::Debug for Shell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shell")
            .field("cwd", &self.cwd)
            .field("last_status", &self.last_status)
            .finish_non_exhaustive()
    }
}

/// The byte offset of the start of line `n` (from 0) of `text`.
fn line_offset(text: &str, n: usize) -> Option<usize> {
    if n == 0 {
        return Some(0);
    }
    text.match_indices('\n').nth(n - 1).map(|(i, _)| i + 1)
}

/// How many times a script that does not parse is read again with the aliases at the
/// start of its failing command replaced (each may uncover another).
const MAX_ALIAS_REREADS: usize = 16;

impl Shell {
    pub fn new(cfg: ShellConfig) -> Shell {
        let pid = 1000 + (rand::random::<u32>() % 30000);
        let procs = jobs::Procs::new(pid + 1);
        let me = Arc::new(jobs::Proc::default());
        procs.register_as(pid, &me);
        let jobs_root = Arc::new(jobs::JobsRoot::default());
        let login_home = cfg
            .env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map_or_else(|| "/".to_string(), |(_, v)| v.clone());
        let mut sh = Shell {
            fs: cfg.fs,
            registry: cfg.registry,
            vars: FastMap::default(),
            functions: FastMap::default(),
            readonly_functions: Default::default(),
            traced_functions: Default::default(),
            traced_call: false,
            cwd: forkbox_commands::fs::normalize(&cfg.cwd),
            cwd_double_slash: false,
            arg0: if cfg.interactive {
                // A terminal session is a login shell, as `ssh -tt host` gets on a host.
                format!("-{}", error::PROGRAM)
            } else {
                error::PROGRAM.to_string()
            },
            positional: Vec::new(),
            positional_changes: 0,
            last_status: 0,
            pipestatus: vec![0],
            pipeline_in_flight: None,
            shopts: builtins::shopt::Shopts::default(),
            getopts: Default::default(),
            dirstack: Vec::new(),
            aliases: Default::default(),
            completions: Default::default(),
            umask: builtins::umask::DEFAULT_UMASK,
            alias_active: Vec::new(),
            opts: Options {
                hashall: true,
                braceexpand: true,
                histexpand: cfg.interactive,
                history: cfg.interactive,
                ..Options::default()
            },
            local_frames: Vec::new(),
            interactive: cfg.interactive,
            exit_requested: None,
            pid,
            call_depth: 0,
            loop_depth: 0,
            errexit_suppressed: 0,
            source_depth: 0,
            input_depth: 0,
            cancel: CancellationToken::new(),
            steps: 0,
            random_state: u64::from(pid) ^ rand::random::<u64>(),
            is_subshell: false,
            reads_input: false,
            input_letter: Some('c'),
            in_not_found_handler: false,
            login_home,
            special_failed: false,
            hashed: Vec::new(),
            disabled_builtins: std::collections::BTreeSet::new(),
            subst_runs: 0,
            snapshots: None,
            inherited_fds: BTreeMap::new(),
            command_log: None,
            vars_mem: VarsCharge(cfg.budget.empty_charge()),
            budget: cfg.budget,
            slot: None,
            procs,
            me,
            bashpid: pid,
            jobs: jobs::Jobs::default(),
            jobs_guard: Some(Arc::new(jobs::JobsGuard(jobs_root.clone()))),
            jobs_root,
            in_job: false,
            traps: jobs::TrapTable::new(),
            shown_traps: jobs::TrapTable::new(),
            in_trap: 0,
            trap_saved: None,
            bash_command: String::new(),
            exec_fds: None,
            exec_gen: 0,
            exec_closers: ExecClosers::default(),
            exported_functions: std::collections::BTreeSet::new(),
            read_byte_locale: false,
            funcnames: Vec::new(),
            lines: lines::Lines::default(),
            ulimits: builtins::ulimit::Limits::default(),
            subshell_level: 0,
            stage_level_pending: false,
            trace_depth: 0,
            seconds_base: (std::time::Instant::now(), 0),
            unspecial: std::collections::BTreeSet::new(),
            word_cache: Default::default(),
            limit_abort: None,
            exec_opening: false,
            history: Default::default(),
        };
        for (k, v) in cfg.env {
            if let Some(name) = k
                .strip_prefix("BASH_FUNC_")
                .and_then(|n| n.strip_suffix("%%"))
            {
                sh.import_function(name, &v);
                continue;
            }
            sh.vars.insert(
                k,
                Var {
                    value: Value::Str(v),
                    exported: true,
                    readonly: false,
                    attrs: Attrs::default(),
                },
            );
        }
        if !sh.vars.contains_key("PATH") {
            sh.set_plain("PATH", DEFAULT_PATH);
        }
        sh.init_special_vars();
        sh.recount_vars();
        let cwd = sh.cwd.clone();
        sh.set_exported("PWD", &cwd);
        if !sh.vars.contains_key("IFS") {
            sh.set_plain("IFS", " \t\n");
        }
        sh
    }

    /// Tells `log` of every complete command [`Shell::run_stream`] runs.
    pub fn set_command_log(&mut self, log: Arc<dyn CommandLog>) {
        self.command_log = Some(log);
    }

    /// Lets the `snapshot` builtin act on the session's fork through `ctl`.
    pub fn set_snapshots(&mut self, ctl: Arc<dyn SnapshotControl>) {
        self.snapshots = Some(ctl);
    }

    /// Parses and runs a whole script. State persists across calls. A syntax error prints
    /// `bash: line 1: syntax error ...` and gives 2; `cancel` stops the running command (130).
    pub async fn run_script(&mut self, script: &str, io: &Stdio, cancel: CancellationToken) -> i32 {
        self.limit_abort = None;
        // A non-interactive shell given its script as a string is bash's `bash -c`, which
        // keeps the string (a nested `bash -c` has set it already; a script file does not).
        if !self.interactive
            && !self.reads_input
            && !self.vars.contains_key("BASH_EXECUTION_STRING")
        {
            let _ = self.set_var("BASH_EXECUTION_STRING", script);
        }
        let mut fds = Fds::from_stdio(io);
        for (n, d) in std::mem::take(&mut self.inherited_fds) {
            fds.set_fd(n, d);
        }
        let program = match parse::program_async(script).await {
            Ok(p) => p,
            Err(e) => return self.run_up_to_error(script, e, &fds, cancel).await,
        };
        let status = self
            .run_program_cancellable(&program, Some(script), &fds, cancel)
            .await;
        self.finish_run(status, &fds).await
    }

    /// A script with a syntax error: as bash reads one command at a time, the commands
    /// before the error run, then the error ends the script with status 2.
    async fn run_up_to_error(
        &mut self,
        script: &str,
        whole: ShellError,
        fds: &Fds,
        cancel: CancellationToken,
    ) -> i32 {
        self.run_up_to_error_from(script.to_string(), whole, fds, cancel, 0, 0)
            .await
    }

    /// [`Shell::run_up_to_error`] for the part of the script that starts `base` lines
    /// in, after `aliased` alias replacements made it parse further.
    fn run_up_to_error_from<'a>(
        &'a mut self,
        script: String,
        whole: ShellError,
        fds: &'a Fds,
        cancel: CancellationToken,
        base: usize,
        aliased: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = i32> + Send + 'a>> {
        Box::pin(async move {
            self.run_up_to_error_inner(&script, whole, fds, cancel, base, aliased)
                .await
        })
    }

    async fn run_up_to_error_inner(
        &mut self,
        script: &str,
        whole: ShellError,
        fds: &Fds,
        cancel: CancellationToken,
        base: usize,
        aliased: usize,
    ) -> i32 {
        /// What a script with a syntax error turns out to be.
        enum Broken {
            /// Only its last here-document is open: bash closes it at the end of input.
            OpenHeredoc(ast::Program, String),
            /// The whole commands before the error, the error, and where the command
            /// with the error starts and ends in the script.
            Leading(Vec<(ast::Program, usize)>, ShellError, (usize, usize)),
        }
        let owned = script.to_string();
        // Parsing again costs time in proportion to the script: not on a runtime thread.
        let broken = tokio::task::spawn_blocking(move || match parse::close_open_heredoc(&owned) {
            Some((program, warning)) => Broken::OpenHeredoc(program, warning),
            None => {
                let (programs, e, read) = parse::leading_commands_read(&owned, whole);
                Broken::Leading(programs, e, read)
            }
        })
        .await
        .unwrap_or_else(|_| {
            let e = ShellError::Syntax("syntax error: the script could not be parsed".to_string());
            Broken::Leading(Vec::new(), e, (0, script.len()))
        });
        let (programs, e, (start, end)) = match broken {
            Broken::OpenHeredoc(program, warning) => {
                // bash warns when it reaches the end of the input, on its last line.
                let msg = format!(
                    "{}{warning}\n",
                    self.warning_prefix(script.lines().count().max(1))
                );
                let _ = fds.stderr().write_str(&msg).await;
                let status = self
                    .run_program_cancellable(&program, None, fds, cancel)
                    .await;
                return self.finish_run(status, fds).await;
            }
            Broken::Leading(programs, e, read) => (programs, e, read),
        };
        for (program, before) in &programs {
            // A command that starts with an alias for a keyword (`alias when=if`) is not
            // what bash read: read the script again from there with it replaced.
            if aliased < MAX_ALIAS_REREADS
                && let Some(at) = line_offset(script, *before)
                && let Some(rest) = self.alias_reread(&script[at..])
                && let Ok(status) = self
                    .alias_rerun(rest, fds, cancel.clone(), base + *before, aliased)
                    .await
            {
                return status;
            }
            // Each command was parsed alone: its lines count from where it starts.
            self.lines.line_base = base + *before;
            let status = self
                .run_program_cancellable(program, None, fds, cancel.clone())
                .await;
            if self.exit_requested.is_some() || cancel.is_cancelled() {
                return self.finish_run(status, fds).await;
            }
        }
        let before = script.get(..start).unwrap_or("").matches('\n').count();
        // bash replaces aliases as it reads, so one may make the command that does not
        // parse as written (`alias when=if`): read the rest again with it replaced.
        let mut e = e;
        if aliased < MAX_ALIAS_REREADS
            && let Some(rest) = self.alias_reread(script.get(start..).unwrap_or(""))
        {
            match self
                .alias_rerun(rest, fds, cancel.clone(), base + before, aliased)
                .await
            {
                Ok(status) => return status,
                // The error is the one of the command read with the alias replaced.
                Err(replaced) => e = replaced,
            }
        }
        let before = base + before;
        let text = script.get(start..end).unwrap_or("");
        let msg = self.syntax_message(&e, self.lines.input_name(), text, before);
        let _ = fds.stderr().write_str(&msg).await;
        // A malformed `[[ ]]` stops bash with the status of the last command.
        let status = match e {
            ShellError::CondSyntax(_) => self.last_status,
            _ => e.status(),
        };
        self.last_status = status;
        if !self.interactive {
            self.exit_requested = Some(status);
        }
        self.finish_run(status, fds).await
    }

    /// `text` (a script from the start of a command) with the aliases at its start
    /// replaced as bash's reader replaces them, when that makes a keyword appear there
    /// (other aliases are replaced as the command runs).
    fn alias_reread(&self, text: &str) -> Option<String> {
        if self.aliases.is_empty() || !(self.interactive || self.shopts.on("expand_aliases")) {
            return None;
        }
        let body = text.trim_start_matches([' ', '\t', '\n']);
        let lead = &text[..text.len() - body.len()];
        // The plain words at the start of the line, up to an operator or a quote; a word
        // cut by a quote or a parenthesis is left with the rest.
        let stop = |c: char| {
            matches!(
                c,
                '\n' | ';' | '|' | '&' | '<' | '>' | '(' | ')' | '\'' | '"' | '`' | '\\'
            )
        };
        let mut end = body.find(stop).unwrap_or(body.len());
        if body[end..].starts_with(['(', '\'', '"', '`', '\\'])
            && !body[..end].ends_with([' ', '\t'])
        {
            end = body[..end].rfind([' ', '\t']).map_or(0, |i| i + 1);
        }
        let words: Vec<(String, bool)> = body[..end]
            .split([' ', '\t'])
            .filter(|w| !w.is_empty())
            .map(|w| (w.to_string(), true))
            .collect();
        if !words
            .first()
            .is_some_and(|(w, _)| self.aliases.contains_key(w))
        {
            return None;
        }
        let lookup = |name: &str| self.aliases.get(name);
        let (out, _) = builtins::alias::expand_words(words, &lookup);
        let keyword = out.iter().any(|w| {
            matches!(
                w.trim_end_matches(';'),
                "if" | "then"
                    | "else"
                    | "elif"
                    | "fi"
                    | "do"
                    | "done"
                    | "while"
                    | "until"
                    | "for"
                    | "case"
                    | "esac"
                    | "select"
                    | "function"
                    | "{"
                    | "}"
                    | "[["
                    | "time"
            )
        });
        keyword.then(|| format!("{lead}{} {}", out.join(" "), &body[end..]))
    }

    /// Runs `rest`, the script from `base` lines in read again with an alias replaced;
    /// when the replaced command itself still does not parse, nothing runs and the error
    /// comes back, to be shown with the command as written, as bash shows it.
    async fn alias_rerun(
        &mut self,
        rest: String,
        fds: &Fds,
        cancel: CancellationToken,
        base: usize,
        aliased: usize,
    ) -> Result<i32, ShellError> {
        match parse::program_async(&rest).await {
            Ok(program) => {
                self.lines.line_base = base;
                let status = self
                    .run_program_cancellable(&program, None, fds, cancel)
                    .await;
                Ok(self.finish_run(status, fds).await)
            }
            Err(e) => {
                let units = parse::read_units(&rest);
                if units.read.is_empty() {
                    return Err(units.stop.and_then(|(e, _)| e).unwrap_or(e));
                }
                Ok(self
                    .run_up_to_error_from(rest, e, fds, cancel, base, aliased + 1)
                    .await)
            }
        }
    }

    /// Runs the EXIT trap when the shell is done: at the end of a non-interactive script,
    /// or once `exit` ran.
    async fn finish_run(&mut self, status: i32, fds: &Fds) -> i32 {
        if self.interactive && self.exit_requested.is_none() {
            return status;
        }
        let status = self.run_exit_trap(status, fds).await;
        if self.exit_requested.is_some() {
            self.exit_requested = Some(status);
        }
        self.last_status = status;
        status
    }

    /// Like [`Shell::run_script`], reading the script from `io.stdin` and running each
    /// complete command as soon as it is read; commands may read the rest of stdin.
    ///
    /// A line longer than [`MAX_LINE`], or an unfinished command longer than
    /// [`MAX_SCRIPT`], ends the script with an error and status 2; the rest of the input is
    /// never read as commands, since it may start in the middle of that line.
    pub async fn run_stream(&mut self, io: &Stdio, cancel: CancellationToken) -> i32 {
        self.reads_input = true;
        self.lines.stdin = true;
        let fds = Fds::from_stdio(io);
        let mut buf = PendingInput::default();
        // Lines read before the command being parsed: each command is parsed on its own,
        // and `LINENO` counts from the start of the input, as bash's does.
        let mut lines_before = 0usize;
        loop {
            if self.exit_requested.is_some() || cancel.is_cancelled() {
                break;
            }
            // One byte over the bound tells a line of exactly MAX_LINE bytes and its
            // newline from a longer one, which comes back cut at MAX_LINE + 1 bytes.
            let line = tokio::select! {
                l = io.stdin.read_line(MAX_LINE + 1) => l,
                _ = cancel.cancelled() => { self.last_status = forkbox_commands::STATUS_INTERRUPTED; break; }
            };
            let refused = match &line {
                Ok(Some(l)) if l.len() > MAX_LINE && l.last() != Some(&b'\n') => {
                    Some(line_too_long(MAX_LINE))
                }
                Ok(Some(l)) if (buf.len() + l.len()) as u64 > MAX_SCRIPT => {
                    Some(command_too_long())
                }
                _ => None,
            };
            if let Some(e) = refused {
                // forkbox's own bound, not bash's: named by the shell alone, with no line.
                let prefix = format!("{}: ", self.error_name());
                let _ = io.stderr.write_str(&e.message_with(&prefix)).await;
                self.last_status = e.status();
                return self.last_status;
            }
            let line = match line {
                Ok(Some(l)) => l,
                Ok(None) | Err(_) => {
                    if !buf.text().trim().is_empty() {
                        let e = match parse_program(buf.text()) {
                            Err(e) => e,
                            Ok(_) => {
                                ShellError::Syntax("syntax error: unexpected end of file".into())
                            }
                        };
                        let msg = self.syntax_message(&e, None, buf.text(), lines_before);
                        let _ = io.stderr.write_str(&msg).await;
                        self.last_status = 2;
                    }
                    break;
                }
            };
            let line = forkbox_commands::bytetext::decode_slice(&line);
            if self.opts.verbose {
                // `set -v`: input lines are shown as they are read.
                let _ = io.stderr.write_str(&line).await;
            }
            buf.push(&line);
            let state;
            (buf, state) = buf.completeness_async().await;
            match state {
                Completeness::Incomplete => continue,
                Completeness::Invalid => {
                    if let Err(e) = parse_program(buf.text()) {
                        let msg = self.syntax_message(&e, None, buf.text(), lines_before);
                        let _ = io.stderr.write_str(&msg).await;
                    }
                    self.last_status = 2;
                    lines_before += buf.take().matches('\n').count();
                    if !self.interactive {
                        break;
                    }
                }
                Completeness::Complete => {
                    let text = buf.take();
                    self.lines.line_base = lines_before;
                    lines_before += text.matches('\n').count();
                    if let Ok(program) = parse_program(&text) {
                        let (started, clock) =
                            (std::time::SystemTime::now(), std::time::Instant::now());
                        // Only the command that ends the input counts for `exit-signal`.
                        self.limit_abort = None;
                        self.run_program_cancellable(&program, None, &fds, cancel.clone())
                            .await;
                        if let Some(log) = self.command_log.clone() {
                            log.ran(&text, started, clock.elapsed(), self.last_status)
                                .await;
                        }
                        if self.opts.onecmd {
                            // `set -t`: a shell reading commands ends after this one.
                            break;
                        }
                    }
                }
            }
        }
        let status = self.exit_requested.unwrap_or(self.last_status);
        self.finish_run(status, &fds).await
    }

    /// Whether `text` is a complete command, needs more lines, or can never parse.
    pub fn completeness(&self, text: &str) -> Completeness {
        parse::completeness(text)
    }

    /// `Some(status)` once `exit` ran; the session then closes.
    pub fn exit_requested(&self) -> Option<i32> {
        self.exit_requested
    }

    /// The expanded PS1 for the prompt.
    pub fn prompt(&self) -> String {
        let ps1 = self
            .get_str("PS1")
            .unwrap_or_else(|| "\\u@\\h:\\w\\$ ".to_string());
        self.prompt_expand(&ps1)
    }

    /// The backslash escapes of a prompt string (`PS1`, `${x@P}`).
    pub(crate) fn prompt_expand(&self, ps1: &str) -> String {
        self.prompt_decode(ps1, false)
    }

    /// Decodes a prompt string's backslash escapes. With `quote`, the result is the body of
    /// a double-quoted word for the expansions bash's `promptvars` then does: what the
    /// escapes produced is protected, the rest (`$x`, `$(…)`) is left to expand.
    pub(crate) fn prompt_decode(&self, ps1: &str, quote: bool) -> String {
        let user = self.get_str("USER").unwrap_or_else(|| "user".to_string());
        let home = self.get_str("HOME").unwrap_or_default();
        let w = tilde_abbrev(&self.cwd, &home);
        let now = chrono::Local::now();
        let mut out = String::new();
        let lit = |out: &mut String, s: &str| {
            for c in s.chars() {
                if quote && matches!(c, '\\' | '$' | '`' | '"') {
                    out.push('\\');
                }
                out.push(c);
            }
        };
        let chars: Vec<char> = ps1.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            i += 1;
            if c != '\\' {
                if quote && c == '"' {
                    out.push('\\');
                }
                out.push(c);
                continue;
            }
            let Some(&e) = chars.get(i) else {
                lit(&mut out, "\\");
                break;
            };
            i += 1;
            match e {
                'u' => lit(&mut out, &user),
                'h' | 'H' => lit(&mut out, "forkbox"),
                'w' => {
                    let keep = self.get_str("PROMPT_DIRTRIM");
                    lit(&mut out, &trim_pathname(&w, keep.as_deref()));
                }
                'W' => {
                    let base = if w == "/" || w == "~" {
                        w.clone()
                    } else {
                        w.rsplit('/').next().unwrap_or("").to_string()
                    };
                    lit(&mut out, &base);
                }
                '$' => lit(&mut out, if user == "root" { "#" } else { "$" }),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                'a' => out.push('\x07'),
                'e' => out.push('\x1b'),
                's' => {
                    let name = self
                        .arg0
                        .rsplit('/')
                        .next()
                        .unwrap_or(&self.arg0)
                        .to_string();
                    lit(&mut out, &name);
                }
                'v' => lit(
                    &mut out,
                    &format!("{}.{}", vars::BASH_VERSINFO[0], vars::BASH_VERSINFO[1]),
                ),
                'V' => lit(
                    &mut out,
                    &format!(
                        "{}.{}.{}",
                        vars::BASH_VERSINFO[0],
                        vars::BASH_VERSINFO[1],
                        vars::BASH_VERSINFO[2]
                    ),
                ),
                'd' => lit(&mut out, &now.format("%a %b %d").to_string()),
                't' => lit(&mut out, &now.format("%H:%M:%S").to_string()),
                'T' => lit(&mut out, &now.format("%I:%M:%S").to_string()),
                '@' => lit(&mut out, &now.format("%I:%M %p").to_string()),
                'A' => lit(&mut out, &now.format("%H:%M").to_string()),
                'D' if chars.get(i) == Some(&'{') => {
                    let Some(end) = chars[i..].iter().position(|&c| c == '}') else {
                        lit(&mut out, "\\D");
                        continue;
                    };
                    let fmt: String = chars[i + 1..i + end].iter().collect();
                    i += end + 1;
                    let fmt = if fmt.is_empty() {
                        "%X".to_string()
                    } else {
                        fmt
                    };
                    let mut text = String::new();
                    // An invalid format gives nothing rather than an error.
                    if std::fmt::write(&mut text, format_args!("{}", now.format(&fmt))).is_ok() {
                        lit(&mut out, &text);
                    }
                }
                'j' => lit(&mut out, &self.jobs.visible().len().to_string()),
                'l' => lit(&mut out, "tty"),
                '!' => lit(&mut out, "1"),
                '#' => lit(&mut out, "0"),
                '\\' => lit(&mut out, "\\"),
                '[' | ']' => {}
                '0'..='7' => {
                    // `\nnn`: up to three octal digits, one byte.
                    let mut v = e.to_digit(8).unwrap_or(0);
                    let mut n = 1;
                    while n < 3 && chars.get(i).is_some_and(|c| c.is_digit(8)) {
                        v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                        i += 1;
                        n += 1;
                    }
                    let byte = forkbox_commands::bytetext::decode(vec![(v & 0xff) as u8]);
                    lit(&mut out, &byte);
                }
                o => {
                    lit(&mut out, "\\");
                    if quote && matches!(o, '$' | '`' | '"') {
                        out.push('\\');
                    }
                    out.push(o);
                }
            }
        }
        out
    }

    pub fn last_status(&self) -> i32 {
        self.last_status
    }

    /// Why a session limit (memory, tasks) abandoned the last script this shell ran, in
    /// one line without its newline; `None` if none did.
    pub fn limit_abort(&self) -> Option<&str> {
        self.limit_abort.as_deref()
    }

    /// The logical working directory.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// Sets `$1`, `$2`, … (for `forkbox exec -c SCRIPT ARGS…`).
    pub fn set_positional(&mut self, args: Vec<String>) {
        self.positional = args;
    }

    /// Sets the positional parameters and `$0` (for `sh script.sh args`).
    pub fn set_args(&mut self, arg0: &str, args: Vec<String>) {
        self.arg0 = arg0.to_string();
        self.positional = args;
    }

    async fn run_program_cancellable(
        &mut self,
        program: &ast::Program,
        read: Option<&str>,
        fds: &Fds,
        cancel: CancellationToken,
    ) -> i32 {
        self.cancel = cancel.clone();
        let frames = self.local_frames.len();
        let depth = (
            self.call_depth,
            self.loop_depth,
            self.errexit_suppressed,
            self.source_depth,
            self.input_depth,
        );
        self.pipeline_in_flight = None;
        let status = tokio::select! {
            r = self.run_program(program, read, fds) => r,
            _ = cancel.cancelled() => {
                let stages = self.pipeline_in_flight.unwrap_or(1);
                self.pipestatus = vec![forkbox_commands::STATUS_INTERRUPTED; stages];
                forkbox_commands::STATUS_INTERRUPTED
            }
        };
        self.pipeline_in_flight = None;
        // A cancelled run may have stopped inside a function: undo its frames.
        while self.local_frames.len() > frames {
            self.pop_local_frame();
        }
        (
            self.call_depth,
            self.loop_depth,
            self.errexit_suppressed,
            self.source_depth,
            self.input_depth,
        ) = depth;
        self.last_status = status;
        status
    }

    /// A copy for a subshell: state changes in it never reach `self`. It is one of the
    /// session's tasks while it lives, and fails when the session has no more.
    pub(crate) fn subshell(&self) -> Result<Shell, ShellError> {
        let slot = self.budget.task()?;
        let mut s = self.clone();
        s.recount_vars();
        if let Some(source) = self.budget.over_limit() {
            return Err(ShellError::OutOfMemory {
                what: "subshell".to_string(),
                source,
            });
        }
        s.slot = Some(Arc::new(slot));
        s.is_subshell = true;
        s.subshell_level += 1;
        s.stage_level_pending = false;
        // A subshell draws its own `$RANDOM` numbers, even after `RANDOM=seed` (bash
        // reseeds one unless it assigns RANDOM itself).
        s.seed_random(i64::from(rand::random::<u32>()));
        s.exit_requested = None;
        s.me = Arc::new(jobs::Proc::default());
        s.bashpid = self.procs.register(&s.me);
        s.jobs = jobs::Jobs {
            last_pid: self.jobs.last_pid,
            inherited: self.jobs.visible(),
            ..jobs::Jobs::default()
        };
        s.jobs_guard = None;
        s.exec_closers = ExecClosers::default();
        // Traps are reset in a subshell, except ignored signals (and the ERR, DEBUG and
        // RETURN traps under `set -E`/`set -T`).
        let traps = std::mem::take(&mut s.traps);
        // `trap -p` in a subshell lists the traps of the shell it came from; in a subshell
        // of a subshell that has not set its own, those its parent listed.
        s.shown_traps = if traps.is_empty() && self.is_subshell {
            self.shown_traps.clone()
        } else {
            traps.clone()
        };
        for (n, action) in traps {
            let keep = action.is_empty()
                || (n == jobs::TRAP_ERR && s.errtrace())
                || ((n == jobs::TRAP_DEBUG || n == jobs::TRAP_RETURN) && s.functrace());
            if keep {
                s.traps.insert(n, action);
            }
        }
        s.sync_caught();
        Ok(s)
    }

    /// Writes a shell error on `stderr` and gives its status: the one place errors are shown.
    /// Runs `program` as input read by `what` (`eval`, `source`) one level deeper; past
    /// [`MAX_CALL_DEPTH`] levels it is an error instead, as bash's recursion would crash.
    /// `read` is the text it was parsed from, for `set -v` (see [`Shell::exec_program`]).
    pub(crate) async fn exec_nested_input(
        &mut self,
        what: &str,
        program: &ast::Program,
        read: Option<&str>,
        fds: &Fds,
    ) -> exec::Exec<i32> {
        if self.input_depth >= MAX_CALL_DEPTH {
            let e = ShellError::Limit(format!(
                "{what}: maximum nesting level exceeded ({MAX_CALL_DEPTH})"
            ));
            return self.fail(e, fds).await;
        }
        self.input_depth += 1;
        self.lines.inputs.push((what.to_string(), self.call_depth));
        let saved = (self.lines.line_base, self.lines.unit);
        if !matches!(what, "source" | ".") {
            // An `eval` string or alias expansion starts on the line of its command.
            self.lines.line_base = self.lines.lineno.saturating_sub(1);
        }
        // Text read now (`eval`, `source`) takes the aliases defined now.
        let read_aliases = self.lines.read_aliases.take();
        self.trace_depth += 1;
        let r = self.exec_program(program, read, fds).await;
        self.trace_depth -= 1;
        (self.lines.line_base, self.lines.unit) = saved;
        self.lines.read_aliases = read_aliases;
        self.lines.inputs.pop();
        self.input_depth -= 1;
        r
    }

    /// The command whose input or body is running, as bash's messages about a
    /// `declare` with a compound value name it: the innermost `eval` or `source` (as it
    /// was called), else the function running; `None` at the top level.
    pub(crate) fn enclosing_command(&self) -> Option<&str> {
        match self.lines.inputs.last() {
            Some((what, depth)) if *depth == self.call_depth && what != "alias" => {
                Some(what.as_str())
            }
            _ if self.call_depth > 0 => self.funcnames.last().map(String::as_str),
            _ => None,
        }
    }

    /// Parses and runs `text` as input read by `what` (`eval`, `source`). Text with a
    /// syntax error runs the commands before it, then fails with it, as bash does.
    pub(crate) async fn exec_nested_text(
        &mut self,
        what: &str,
        text: &str,
        fds: &Fds,
    ) -> exec::Exec<i32> {
        match parse_program(text) {
            Ok(program) => {
                self.exec_nested_input(what, &program, Some(text), fds)
                    .await
            }
            Err(whole) => {
                let (programs, e, (start, end)) = parse::leading_commands_read(text, whole);
                for (program, _) in &programs {
                    self.exec_nested_input(what, program, None, fds).await?;
                }
                let unit = text.get(start..end).unwrap_or("");
                let before = text.get(..start).unwrap_or("").matches('\n').count();
                let e = match e {
                    // A misplaced token: bash names the line it read last and shows it.
                    ShellError::Syntax(m) if m.contains("near unexpected token") => {
                        self.lines.lineno =
                            self.lines.line_base + before + unit.lines().count().max(1);
                        let shown = unit.lines().last().unwrap_or("");
                        ShellError::Syntax(format!("{m}\n`{shown}'"))
                    }
                    e => e,
                };
                if e.to_string().contains("unexpected end of file") {
                    // bash reads to the end first: the message names the line past it.
                    self.lines.lineno = self.lines.line_base + text.lines().count() + 1;
                } else if let ShellError::Unclosed { line, .. } = &e {
                    // The line is counted in the command that stopped the reading, never
                    // past the line after it.
                    let line = (*line).min(unit.lines().count() + 1);
                    self.lines.lineno = self.lines.line_base + before + line;
                }
                self.fail(e, fds).await
            }
        }
    }

    /// Writes one `set -x` line: `PS4` expanded, its first character repeated once per
    /// [`Shell::trace_depth`] level, then `body`.
    pub(crate) async fn trace_line(&mut self, body: &str, fds: &Fds) {
        let ps4 = self.get_str("PS4");
        self.trace_line_with(ps4, body, fds).await;
    }

    /// [`Shell::trace_line`] with `ps4` as the value of `PS4` (an assignment to `PS4` is
    /// traced with the value it replaces).
    pub(crate) async fn trace_line_with(&mut self, ps4: Option<String>, body: &str, fds: &Fds) {
        let ps4 = match ps4 {
            Some(p) => {
                let saved = self.opts.xtrace;
                // Expanding PS4 is not itself traced.
                self.opts.xtrace = false;
                let r = match self.expand_str(&p, fds).await {
                    Ok(r) => r,
                    // bash reports the error and shows PS4 as it is written.
                    Err(e) => {
                        self.report(&fds.stderr(), &e).await;
                        p
                    }
                };
                self.opts.xtrace = saved;
                r
            }
            // `unset PS4`: no prefix at all.
            None => String::new(),
        };
        let mut line = String::new();
        if let Some(first) = ps4.chars().next() {
            for _ in 0..self.trace_depth {
                line.push(first);
            }
        }
        line.push_str(&ps4);
        line.push_str(body);
        line.push('\n');
        // `BASH_XTRACEFD=N`: the trace goes to descriptor N while it is open.
        let out = self
            .get_str("BASH_XTRACEFD")
            .and_then(|n| n.trim().parse::<i32>().ok())
            .and_then(|n| fds.open_output(n))
            .unwrap_or_else(|| fds.stderr());
        let _ = out.write_str(&line).await;
    }

    pub(crate) async fn report(&self, stderr: &Output, err: &ShellError) -> i32 {
        let _ = stderr
            .write_str(&err.message_with(&self.message_prefix()))
            .await;
        err.status()
    }

    /// What the shell's messages start with here, as bash words it: the name (see
    /// [`Shell::error_name`]) alone in an interactive shell (`-bash: `), else followed by
    /// the line of the command running (`bash: line 2: `).
    pub(crate) fn message_prefix(&self) -> String {
        self.warning_prefix(self.lines.lineno)
    }

    /// The name bash starts its messages with: the shell's own in an interactive shell,
    /// else `BASH_SOURCE[0]` when set (a file, or `environment`/`main` in a function
    /// defined in the `-c` string or the standard input), else `$0`.
    pub(crate) fn error_name(&self) -> &str {
        if self.interactive {
            return &self.arg0;
        }
        self.lines
            .frames
            .last()
            .map(|f| f.source.as_str())
            .filter(|s| !s.is_empty())
            .unwrap_or(&self.arg0)
    }

    /// What a warning bash gives at line `line` of the input starts with
    /// (`bash: line 2: warning: …`).
    pub(crate) fn warning_prefix(&self, line: usize) -> String {
        // Before it reads a command bash still names a line: 0 (`bash -O nosuch -c …`).
        if self.interactive {
            return format!("{}: ", self.error_name());
        }
        format!("{}: line {line}: ", self.error_name())
    }

    /// A syntax error as bash reports it (`bash: -c: line 2: syntax error near unexpected
    /// token `fi'` and then the line itself): `input` names what was read (`-c`, a file,
    /// `eval`; none for the standard input), `text` is the command with the error, read
    /// after `before` lines of that input.
    pub(crate) fn syntax_message(
        &self,
        e: &ShellError,
        input: Option<&str>,
        text: &str,
        before: usize,
    ) -> String {
        let lines = text.lines().count().max(1);
        let (line, body, shown) = match e {
            ShellError::CondSyntax(m) if m.is_empty() => return String::new(),
            ShellError::Syntax(m) if m.contains("unexpected end of file") => {
                (lines + 1, m.clone(), None)
            }
            ShellError::Syntax(m) if m.contains("near unexpected token") => {
                (lines, m.clone(), Some(text.lines().last().unwrap_or("")))
            }
            ShellError::SubstSyntax { message, line } => {
                (lines, message.clone(), Some(line.as_str()))
            }
            // Input ends before the closing character: never past the line after the end.
            ShellError::Unclosed { message, line, .. } => {
                ((*line).min(lines + 1), message.clone(), None)
            }
            // bash finds a bad `[[ ]]` on the line of its `[[`.
            ShellError::CondSyntax(m) => {
                let at = text.lines().position(|l| l.contains("[[")).unwrap_or(0);
                (at + 1, m.clone(), None)
            }
            other => (lines, other.to_string(), None),
        };
        let name = self.error_name();
        let prefix = match input {
            _ if self.interactive && input.is_none() => format!("{name}: "),
            Some(input) if input != name => {
                format!("{name}: {input}: line {}: ", before + line)
            }
            _ => format!("{name}: line {}: ", before + line),
        };
        // A message of two lines (`syntax error: `((a;b))'` after its reason) carries the
        // prefix on each.
        let mut msg = error::two_lines(&prefix, &body);
        if let Some(shown) = shown.filter(|_| !(self.interactive && input.is_none())) {
            msg.push_str(&format!("{prefix}`{shown}'\n"));
        }
        msg
    }

    /// [`Shell::syntax_message`] for an `eval` string: its lines count on from the line
    /// of the `eval` command (the line its last argument ends on, as `LINENO` says).
    pub(crate) fn eval_syntax_message(&self, e: &ShellError, text: &str, before: usize) -> String {
        let before = self.lines.lineno.saturating_sub(1) + before;
        self.syntax_message(e, Some("eval"), text, before)
    }
}

/// One past an array's highest index: where `a+=(x)` puts `x` and what `a[-1]` counts
/// back from. Wraps past `i64::MAX` as bash does (`a[9223372036854775807]=x; a+=(y)`
/// puts `y` at the lowest index) rather than overflowing.
pub(crate) fn next_index(a: &BTreeMap<i64, String>) -> i64 {
    a.keys().next_back().map_or(0, |k| k.wrapping_add(1))
}

fn tilde_abbrev(path: &str, home: &str) -> String {
    if !home.is_empty() && home != "/" {
        if path == home {
            return "~".to_string();
        }
        if let Some(rest) = path.strip_prefix(home)
            && rest.starts_with('/')
        {
            return format!("~{rest}");
        }
    }
    path.to_string()
}

/// `\w` under `PROMPT_DIRTRIM=N`: the directories before the last `N` replaced by
/// `...` (after a leading `~/`), as bash's `trim_pathname` does, which also leaves a path
/// alone when no more than three characters would go.
fn trim_pathname(path: &str, keep: Option<&str>) -> String {
    let Some(keep) = keep
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|&n| n > 0)
    else {
        return path.to_string();
    };
    let begin = match path.strip_prefix('~') {
        Some(rest) => rest.find('/').map_or(path.len(), |i| i + 2),
        None => 0,
    };
    let tail = &path.as_bytes()[begin..];
    let dirs = tail.iter().filter(|&&b| b == b'/').count();
    if tail.is_empty() || (dirs as i64) < keep {
        return path.to_string();
    }
    // The slash that starts the last `keep` components, searching back to (not onto)
    // the start.
    let mut left = keep;
    let mut cut = None;
    for i in (1..tail.len()).rev() {
        if tail[i] == b'/' {
            left -= 1;
            if left == 0 {
                cut = Some(i);
                break;
            }
        }
    }
    match cut {
        Some(i) if i > 3 => format!("{}...{}", &path[..begin], &path[begin + i..]),
        _ => path.to_string(),
    }
}

/// Parses a whole script (bounded in depth; see [`parse`]).
pub(crate) fn parse_program(text: &str) -> Result<ast::Program, ShellError> {
    parse::program(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tilde_in_prompt() {
        assert_eq!(tilde_abbrev("/home/u/x", "/home/u"), "~/x");
        assert_eq!(tilde_abbrev("/home/u", "/home/u"), "~");
        assert_eq!(tilde_abbrev("/", "/home/u"), "/");
    }
}

#[cfg(test)]
mod api_tests {
    use super::*;
    use crate::shell::testing::{run_with_stdin as run, shell_on};
    use forkbox_commands::pipe;
    use forkbox_commands::testing::MemFs;
    use std::time::Duration;

    #[tokio::test]
    async fn state_persists_across_calls() {
        let fs = MemFs::new();
        fs.put_dir("/d");
        let mut sh = shell_on(fs);
        run(&mut sh, "cd d; x=1; f() { echo f$x; }", Input::empty()).await;
        let (status, out, _) = run(&mut sh, "pwd; f; echo $PWD", Input::empty()).await;
        assert_eq!((status, out.as_str()), (0, "/d\nf1\n/d\n"));
        assert_eq!(sh.cwd(), "/d");
    }

    #[tokio::test]
    async fn exit_is_requested() {
        let mut sh = shell_on(MemFs::new());
        let (status, _, _) = run(&mut sh, "exit 3; echo no", Input::empty()).await;
        assert_eq!(status, 3);
        assert_eq!(sh.exit_requested(), Some(3));
    }

    #[tokio::test]
    async fn reader_going_away_stops_writer() {
        let mut sh = shell_on(MemFs::new());
        let (status, out, _) = run(&mut sh, "yes | { read x; echo got $x; }", Input::empty()).await;
        assert_eq!((status, out.as_str()), (0, "got y\n"));
    }

    #[tokio::test]
    async fn cancel_stops_an_infinite_loop() {
        let mut sh = shell_on(MemFs::new());
        let (ow, _or) = pipe();
        let io = Stdio {
            stdin: Input::empty(),
            stdout: Output::null(),
            stderr: ow,
            tty: None,
            terminal: None,
        };
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            c2.cancel();
        });
        let status = tokio::time::timeout(
            Duration::from_secs(10),
            sh.run_script("while true; do x=$((x+1)); done", &io, cancel),
        )
        .await
        .expect("cancel must stop the loop");
        assert_eq!(status, 130);
        // The shell is still usable afterwards.
        let (status, out, _) = run(&mut sh, "echo alive", Input::empty()).await;
        assert_eq!((status, out.as_str()), (0, "alive\n"));
    }

    #[tokio::test]
    async fn close_failure_is_reported() {
        let fs = MemFs::new();
        fs.fail_close_on("/f");
        let mut sh = shell_on(fs);
        let (status, _, err) = run(&mut sh, "echo hi > f", Input::empty()).await;
        assert_eq!(status, 1);
        assert!(err.starts_with("bash: line 1: f: "), "{err}");
    }

    #[tokio::test]
    async fn unsupported_features_say_so() {
        let mut sh = shell_on(MemFs::new());
        for (script, word) in [("history -r", "history -r"), ("history -a", "history -a")] {
            let (status, _, err) = run(&mut sh, script, Input::empty()).await;
            assert_eq!(status, 2, "{script}");
            assert!(
                err.ends_with(&format!("{word}: not supported\n")),
                "{script}: {err}"
            );
        }
    }

    fn shell_with_budget(budget: Budget) -> Shell {
        let mut sh = shell_on(MemFs::new());
        sh.budget = budget;
        sh.vars_mem = VarsCharge(sh.budget.empty_charge());
        sh.recount_vars();
        sh
    }

    #[tokio::test]
    async fn background_fork_bombs_are_stopped_at_the_task_limit() {
        let budget = Budget::new(64 << 20, 64);
        let mut sh = shell_with_budget(budget.clone());
        // `:` returns at once (its job runs in the background); the bomb grows until the
        // session's limit refuses a task, which stops every job of the shell. Reading
        // stderr to its end waits for that, as every job holds it.
        let (status, _, err) = run(&mut sh, ":(){ :|:& };:", Input::empty()).await;
        assert_eq!(status, 0);
        assert_eq!(
            err,
            "environment: line 1: fork: Resource temporarily unavailable (session limit of 64 tasks)\n"
        );
        for _ in 0..200 {
            if budget.tasks() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(budget.tasks(), 0, "every task ended");
        let (status, out, _) = run(&mut sh, "echo a | cat; echo $(echo b)", Input::empty()).await;
        assert_eq!((status, out.as_str()), (0, "a\nb\n"));
    }

    #[tokio::test]
    async fn jobs_stop_when_the_shell_goes_away() {
        let budget = Budget::new(64 << 20, 64);
        let mut sh = shell_with_budget(budget.clone());
        let (ow, or) = pipe();
        let io = Stdio {
            stdin: Input::empty(),
            stdout: ow,
            stderr: Output::null(),
            tty: None,
            terminal: None,
        };
        let status = sh
            .run_script(
                "while :; do sleep 1; done & echo started",
                &io,
                CancellationToken::new(),
            )
            .await;
        assert_eq!(status, 0);
        drop(io);
        drop(sh);
        let out = tokio::time::timeout(Duration::from_secs(10), or.read_to_end(1 << 10))
            .await
            .expect("the job stopped and let go of stdout");
        assert_eq!(out.unwrap_or_default(), b"started\n");
    }

    #[tokio::test]
    async fn fork_bombs_hit_the_task_limit_and_the_shell_goes_on() {
        for bomb in ["f(){ f|f; }; f"] {
            let budget = Budget::new(64 << 20, 64);
            let mut sh = shell_with_budget(budget.clone());
            let (status, _, err) = run(&mut sh, bomb, Input::empty()).await;
            assert_eq!(status, 1, "{bomb}");
            assert_eq!(
                err,
                "environment: line 1: fork: Resource temporarily unavailable (session limit of 64 tasks)\n",
                "{bomb}: one message"
            );
            assert_eq!(budget.tasks(), 0, "{bomb}: every task ended");
            let (status, out, _) =
                run(&mut sh, "echo a | cat; echo $(echo b)", Input::empty()).await;
            assert_eq!((status, out.as_str()), (0, "a\nb\n"), "{bomb}");
        }
    }

    #[tokio::test]
    async fn nested_shells_count_as_tasks() {
        let budget = Budget::new(64 << 20, 16);
        let mut sh = shell_with_budget(budget.clone());
        let (status, _, err) = run(
            &mut sh,
            "echo 'sh b.sh | sh b.sh' > b.sh; sh b.sh; echo status $?",
            Input::empty(),
        )
        .await;
        assert_eq!(status, 0);
        assert_eq!(
            err.matches("session limit of 16 tasks").count(),
            1,
            "one message: {err}"
        );
        assert_eq!(budget.tasks(), 0);
    }

    #[tokio::test]
    async fn variables_are_charged_to_the_session() {
        let budget = Budget::new(1 << 20, 64);
        let mut sh = shell_with_budget(budget.clone());
        let script = "b=$(yes abcdefg | head -c 200000); for i in 1 2 3 4 5 6 7 8; do eval \"v$i=\\$b\"; done; echo no";
        let (status, out, err) = run(&mut sh, script, Input::empty()).await;
        assert_eq!(status, 1);
        assert_eq!(out, "");
        assert_eq!(err, "bash: line 1: v5: out of memory (session limit 1M)\n");
        // Unsetting gives the memory back; the shell goes on.
        let (status, out, _) =
            run(&mut sh, "unset v1 v2 v3 v4; v9=$b; echo ok", Input::empty()).await;
        assert_eq!((status, out.as_str()), (0, "ok\n"));
        let used = budget.mem_used();
        assert!(used > 400_000 && used < 500_000, "{used}");
    }

    #[tokio::test]
    async fn subshells_pay_for_their_copy_of_the_variables() {
        let budget = Budget::new(1 << 20, 64);
        let mut sh = shell_with_budget(budget.clone());
        let (status, _, err) = run(
            &mut sh,
            "b=$(yes abcdefg | head -c 400000); ( echo in ) | ( echo in2 ) | cat",
            Input::empty(),
        )
        .await;
        assert_eq!(status, 1);
        assert!(
            err.contains("subshell: out of memory (session limit 1M)"),
            "{err}"
        );
        let (status, out, _) = run(&mut sh, "b=; (echo fits)", Input::empty()).await;
        assert_eq!((status, out.as_str()), (0, "fits\n"));
    }

    #[tokio::test]
    async fn substitution_output_is_charged() {
        let budget = Budget::new(1 << 20, 64);
        let mut sh = shell_with_budget(budget.clone());
        let (status, _, err) = run(
            &mut sh,
            "x=$(yes | head -c 2000000); echo no",
            Input::empty(),
        )
        .await;
        assert_eq!(status, 1);
        assert_eq!(
            err,
            "bash: line 1: command substitution: out of memory (session limit 1M)\n"
        );
        assert_eq!(budget.tasks(), 0);
    }

    #[tokio::test]
    async fn deep_and_exponential_input_is_refused_quickly() {
        let mut sh = shell_on(MemFs::new());
        let braces = r#"eval "$(printf "{ %.0s" {1..500})true; $(printf "}; %.0s" {1..500})""#;
        let (status, _, err) = run(&mut sh, braces, Input::empty()).await;
        assert_eq!(status, 2);
        assert_eq!(
            err,
            "bash: line 1: syntax error: nested more than 256 levels deep\n"
        );
        let parens = r#"eval "$(printf '(%.0s' {1..32})""#;
        let (status, _, err) = run(&mut sh, parens, Input::empty()).await;
        assert_eq!(status, 2);
        assert_eq!(
            err,
            "bash: line 1: syntax error: parentheses nested more than 12 levels deep\n"
        );
        // Deep but within the bound: runs, on stack segments of its own.
        let deep = r#"eval "$(printf "if true; then %.0s" {1..250}) echo deep; $(printf "fi; %.0s" {1..250})""#;
        let (status, out, _) = run(&mut sh, deep, Input::empty()).await;
        assert_eq!((status, out.as_str()), (0, "deep\n"));
        let words =
            r#"x=$(printf '${y:-%.0s' {1..250})v$(printf '}%.0s' {1..250}); eval "echo $x""#;
        let (status, out, _) = run(&mut sh, words, Input::empty()).await;
        assert_eq!((status, out.as_str()), (0, "v\n"));
        let arith = r#"x=$(printf '%.0s-' {1..100000})1; echo $((x)); echo after"#;
        let (status, _, err) = run(&mut sh, arith, Input::empty()).await;
        assert_ne!(status, 0, "{err}");
        assert!(err.contains("expression recursion level exceeded"), "{err}");
    }

    #[tokio::test]
    async fn options_without_a_terminal_are_kept_and_bad_ones_refused() {
        let mut sh = shell_on(MemFs::new());
        // `set -m` and `set -o vi` are recorded as bash records them without a terminal.
        let script = "set -m; set -o vi; echo $-; set -o | grep -E '^(emacs|monitor|vi) '";
        let (status, out, err) = run(&mut sh, script, Input::empty()).await;
        assert_eq!((status, err.as_str()), (0, ""));
        assert_eq!(
            out.split_whitespace().collect::<Vec<_>>(),
            ["hmBc", "emacs", "off", "monitor", "on", "vi", "on"]
        );
        let (status, _, err) = run(&mut sh, "set -y", Input::empty()).await;
        assert_eq!(
            (status, err.as_str()),
            (
                2,
                "bash: line 1: set: -y: invalid option\nset: usage: set [-abefhkmnptuvxBCEHPT] [-o option-name] [--] [-] [arg ...]\n"
            )
        );
    }

    #[tokio::test]
    async fn verbose_shows_input_lines_as_read() {
        let mut sh = shell_on(MemFs::new());
        let (ow, or) = pipe();
        let (ew, er) = pipe();
        let io = Stdio {
            stdin: Input::from_bytes(&b"echo a\nset -v\necho b\n"[..]),
            stdout: ow,
            stderr: ew,
            tty: None,
            terminal: None,
        };
        let status = sh.run_stream(&io, CancellationToken::new()).await;
        drop(io);
        assert_eq!(status, 0);
        assert_eq!(or.read_to_end(1 << 10).await.unwrap_or_default(), b"a\nb\n");
        assert_eq!(
            er.read_to_end(1 << 10).await.unwrap_or_default(),
            b"echo b\n"
        );
    }

    /// Found by the fuzz harness: each of these panicked inside brush-parser.
    #[tokio::test]
    async fn numbers_too_large_for_the_parser() {
        let mut sh = shell_on(MemFs::new());
        let (status, out, _) = run(&mut sh, "echo {1..99999999999999999999}", Input::empty()).await;
        assert_eq!((status, out.as_str()), (0, "{1..99999999999999999999}\n"));
        let (status, _, err) = run(&mut sh, "echo ~+99999999999999999999", Input::empty()).await;
        assert_eq!(status, 1);
        assert!(err.contains("bad substitution"), "{err}");
        let (status, _, err) = run(&mut sh, "echo 99999999999>&1", Input::empty()).await;
        assert_eq!(
            (status, err.as_str()),
            (2, "bash: -c: line 1: syntax error: number out of range\n")
        );
    }

    /// Found by the fuzz harness: the index after `i64::MAX` overflowed (a panic in debug
    /// builds). Same output as bash.
    #[tokio::test]
    async fn array_indices_wrap_like_bash() {
        let mut sh = shell_on(MemFs::new());
        let script = r#"a[9223372036854775807]=x; a+=(z); a[-1]=y; echo "${a[-1]} ${#a[@]} ${a[@]}"
c=([9223372036854775807]=p q); echo "${c[@]}""#;
        let (status, out, _) = run(&mut sh, script, Input::empty()).await;
        assert_eq!((status, out.as_str()), (0, "y 2 z y\nq p\n"));
    }

    #[tokio::test]
    async fn recursion_is_bounded() {
        let mut sh = shell_on(MemFs::new());
        let (status, _, err) = run(&mut sh, "f() { f; }; f; echo after", Input::empty()).await;
        assert_eq!(status, 1);
        assert!(
            err.contains("maximum function nesting level exceeded"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn substitution_output_is_bounded() {
        let mut sh = shell_on(MemFs::new());
        let (status, _, err) = run(&mut sh, "x=$(yes); echo after", Input::empty()).await;
        assert_eq!(status, 1);
        assert!(
            err.contains("command substitution: output larger than"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn syntax_error_and_not_found() {
        let mut sh = shell_on(MemFs::new());
        let (status, _, err) = run(&mut sh, "echo a; fi", Input::empty()).await;
        assert_eq!(status, 2);
        assert_eq!(
            err,
            "bash: -c: line 1: syntax error near unexpected token `fi'\nbash: -c: line 1: `echo a; fi'\n"
        );
        let (status, _, err) = run(&mut sh, "nope_cmd", Input::empty()).await;
        assert_eq!(
            (status, err.as_str()),
            (127, "bash: line 1: nope_cmd: command not found\n")
        );
    }

    #[tokio::test]
    async fn stream_runs_each_command_and_shares_stdin() {
        let mut sh = shell_on(MemFs::new());
        let (ow, or) = pipe();
        let (ew, _er) = pipe();
        let stdin = Input::from_bytes(
            &b"x=1\necho $x\nread y\nhello\necho $y\nif true\nthen echo multi\nfi\n"[..],
        );
        let io = Stdio {
            stdin,
            stdout: ow,
            stderr: ew,
            tty: None,
            terminal: None,
        };
        let out = tokio::spawn(async move { or.read_to_end(1 << 20).await.unwrap_or_default() });
        let status = sh.run_stream(&io, CancellationToken::new()).await;
        drop(io);
        assert_eq!(status, 0);
        assert_eq!(out.await.unwrap_or_default(), b"1\nhello\nmulti\n");
    }

    #[tokio::test]
    async fn stream_counts_lines_from_the_start_of_the_input() {
        let mut sh = shell_on(MemFs::new());
        let (ow, or) = pipe();
        let (ew, _er) = pipe();
        let stdin = Input::from_bytes(&b"echo $LINENO\n\nif true\nthen echo $LINENO\nfi\n"[..]);
        let io = Stdio {
            stdin,
            stdout: ow,
            stderr: ew,
            tty: None,
            terminal: None,
        };
        let out = tokio::spawn(async move { or.read_to_end(1 << 20).await.unwrap_or_default() });
        sh.run_stream(&io, CancellationToken::new()).await;
        drop(io);
        assert_eq!(out.await.unwrap_or_default(), b"1\n4\n");
    }

    #[tokio::test]
    async fn launcher_runs_nested_shells() {
        use forkbox_commands::{Context, Launcher};
        let fs = MemFs::new();
        let launcher = Arc::new(ShellLauncher::new(Arc::new(Registry::with_native())));
        let (ow, or) = pipe();
        let (ew, _er) = pipe();
        let ctx = Context {
            stdin: Input::empty(),
            stdout: ow,
            stderr: ew,
            env: [("V".to_string(), "env-value".to_string())]
                .into_iter()
                .collect(),
            env_last: Vec::new(),
            cwd: "/".into(),
            fs,
            cancel: CancellationToken::new(),
            tty: None,
            terminal: None,
            launcher: launcher.clone(),
            budget: Budget::default(),
        };
        let status = launcher
            .launch(
                ctx,
                vec!["sh".into(), "-c".into(), "echo $V; exit 4".into()],
            )
            .await;
        assert_eq!(status, 4);
        assert_eq!(
            or.read_to_end(1024).await.unwrap_or_default(),
            b"env-value\n"
        );
        assert!(launcher.commands().iter().any(|c| c.name == "cd"));
    }

    #[test]
    fn default_prompt() {
        let fs = MemFs::new();
        let mut sh = shell_on(fs);
        assert_eq!(sh.prompt(), "u@forkbox:/$ ");
        sh.cwd = "/home/u/src".into();
        assert_eq!(sh.prompt(), "u@forkbox:~/src$ ");
    }
}

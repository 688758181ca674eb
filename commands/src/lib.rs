//! forkbox-commands: the native commands of a forkbox session and the contract they
//! are written against.
//!
//! # Layout
//!
//! - [`bytetext`]: bytes that are not UTF-8 carried in text (a character per byte), and
//!   the C locale's view of text as bytes.
//! - [`io`]: bounded in-process pipes ([`Output`], [`Input`]) that carry stdin/stdout/stderr.
//! - [`fs`]: the [`FileSystem`] port, the only way a command touches files: path calls,
//!   open files ([`FileHandle`]), validated paths ([`VfsPath`]) and the one path resolver
//!   every implementation uses.
//! - this file: the [`Command`] trait, the [`Context`] an invocation runs in, and the one
//!   place where a command's outcome becomes an exit status ([`exit_status`]).
//! - [`signal`]: signal numbers and names.
//! - [`gnu_regex`]: GNU's BRE/ERE dialect (parse, GNU's errors, POSIX longest matches,
//!   back-references) for `grep`, `sed` and the tools to come.
//! - [`cmd`]: one file per native command; [`all`] lists them for the registry.
//! - [`testing`]: an in-memory [`FileSystem`] and a harness for unit tests.
//!
//! The crate knows nothing of SSH, object storage or the shell interpreter: the shell
//! hands a command a [`Context`] and gets back an exit status.

use std::collections::BTreeMap;

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

pub mod budget;
pub mod bytetext;
pub mod cmd;
pub mod cpu;
pub mod fs;
pub mod gnu_regex;
pub mod io;
pub mod signal;
pub mod testing;

pub use budget::{Budget, Charge, OutOfMemory, TaskSlot, TooManyTasks};
pub use fs::{
    DirEntry, FileHandle, FileKind, FileSystem, FsError, FsResult, Metadata, OpenOptions, VfsPath,
    WriteHandle, WriteMode,
};
pub use io::{
    FileCloser, Input, Output, PullSource, Readiness, SharedFile, file_input, pipe, pipe_in,
    shared_file,
};

/// Exit status of a command (0–255, as the shell sees it).
pub type Status = i32;

/// Status of a command stopped because its reader went away (128 + SIGPIPE), as bash reports it.
pub const STATUS_BROKEN_PIPE: Status = 141;
/// Status of a command stopped by Ctrl-C or cancellation (128 + SIGINT).
pub const STATUS_INTERRUPTED: Status = 130;
/// Status for bad usage (unknown flag, missing operand), as GNU tools give it.
pub const STATUS_USAGE: Status = 2;

/// Why a command stopped early instead of returning a status of its own.
#[derive(Debug, thiserror::Error)]
pub enum Interrupt {
    /// stdout's reader went away (`yes | head -n 1`): stop quietly.
    #[error("broken pipe")]
    BrokenPipe,
    /// Ctrl-C, a timeout or the session ending.
    #[error("interrupted")]
    Cancelled,
    /// Writing to stdout failed for another reason.
    #[error("write error: {0}")]
    Write(#[source] std::io::Error),
    /// The session's memory budget is spent (a buffer could not grow).
    #[error(transparent)]
    OutOfMemory(#[from] OutOfMemory),
}

impl From<std::io::Error> for Interrupt {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::BrokenPipe => Interrupt::BrokenPipe,
            std::io::ErrorKind::OutOfMemory => {
                match e
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<OutOfMemory>())
                {
                    Some(oom) => Interrupt::OutOfMemory(*oom),
                    None => Interrupt::Write(e),
                }
            }
            _ => Interrupt::Write(e),
        }
    }
}

/// What a command returns: its own status, or why it was stopped.
pub type CmdResult = Result<Status, Interrupt>;

/// The one place a command's outcome becomes an exit status and, where needed, a message.
pub async fn exit_status(name: &str, result: CmdResult, stderr: &Output) -> Status {
    match result {
        Ok(status) => status & 0xff,
        Err(Interrupt::BrokenPipe) => STATUS_BROKEN_PIPE,
        Err(Interrupt::Cancelled) => STATUS_INTERRUPTED,
        Err(Interrupt::Write(e)) => {
            let _ = stderr
                .write_str(&format!("{name}: write error: {e}\n"))
                .await;
            1
        }
        Err(Interrupt::OutOfMemory(e)) => {
            let _ = stderr.write_str(&format!("forkbox: {name}: {e}\n")).await;
            1
        }
    }
}

/// Tools that name themselves by their own name whatever path they were run by (gawk,
/// the gzip and bzip2 families, Info-ZIP, tree): their messages are not renamed.
const NAMED_BY_BASENAME: &[&str] = &[
    "awk", "gawk", "gzip", "gunzip", "zcat", "bzip2", "bunzip2", "bzcat", "zip", "unzip", "tree",
    "xxd",
];

/// Tools whose usage hint keeps the plain name (`Try 'grep --help'`) though their
/// messages start with the path: grep, tar and the util-linux tools.
const HINT_BY_BASENAME: &[&str] = &[
    "grep", "egrep", "fgrep", "tar", "hexdump", "column", "getopt", "iconv",
];

/// Runs the native command `cmd` as the program `argv0` (its name, or the path it was run
/// by, `/usr/bin/cat`) and gives its exit status: GNU's tools name themselves in their
/// messages by the `argv[0]` they were given, so a path shows in them as it would.
pub async fn run_as(cmd: &dyn Command, ctx: &Context, argv0: &str, args: Vec<String>) -> Status {
    let name = cmd.name();
    let renamed;
    let ctx = if argv0 != name && !NAMED_BY_BASENAME.contains(&name) {
        let mut c = ctx.clone();
        c.stderr = c
            .stderr
            .renamed(name, argv0, !HINT_BY_BASENAME.contains(&name));
        renamed = c;
        &renamed
    } else {
        ctx
    };
    let r = cmd.run(ctx, args).await;
    exit_status(name, r, &ctx.stderr).await
}

/// Size of the terminal a command's stdout is connected to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TermSize {
    pub cols: u16,
    pub rows: u16,
}

/// The session's terminal, for full-screen programs (`nano`, `vi`, `less`). A command
/// gets one only on a PTY with its stdout on the terminal (stdin may be a pipe: a pager
/// reads its text there and its keys from [`Terminal::raw`]).
pub trait Terminal: Send + Sync {
    /// The window's size now (it follows the client's window-change requests).
    fn size(&self) -> TermSize;
    /// Switches the terminal to raw keystrokes for as long as the returned reader lives:
    /// keys reach it exactly as typed (no echo, no line editing; Ctrl-C arrives as byte
    /// 0x03 instead of interrupting). Dropping it, or the command ending, restores the
    /// cooked line discipline.
    fn raw(&self) -> Box<dyn RawKeys>;
}

/// Keystrokes from a terminal in raw mode; see [`Terminal::raw`].
#[async_trait]
pub trait RawKeys: Send + Sync {
    /// The next burst of keystrokes, as typed; `None` once the client has gone.
    async fn read(&mut self) -> Option<bytes::Bytes>;
}

/// What implements a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// The shell's own: it reads or changes shell state, or runs too often to leave it.
    Builtin,
    /// A command of this crate.
    Native,
    /// A WebAssembly tool.
    Wasi,
}

/// One command the shell can run, for `help`, `which` and completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: String,
    pub summary: String,
    pub kind: CommandKind,
    /// The file it is (`/usr/bin/cat`), for `which`; `None` for builtins that are no file.
    pub path: Option<String>,
}

impl CommandInfo {
    /// A native command's entry.
    pub fn native(name: &str, summary: &str) -> CommandInfo {
        CommandInfo {
            name: name.to_string(),
            summary: summary.to_string(),
            kind: CommandKind::Native,
            path: Some(format!("/usr/bin/{name}")),
        }
    }
}

/// The shell's side of the contract: lets a command run another command (`env CMD`,
/// `xargs`) and list what exists (`help`), without knowing the interpreter.
#[async_trait]
pub trait Launcher: Send + Sync {
    /// Runs `argv` (a builtin, native command or tool; never a shell function) in `ctx`.
    /// Unknown commands print `forkbox: NAME: command not found` and give 127.
    async fn launch(&self, ctx: Context, argv: Vec<String>) -> Status;
    /// Runs `sh -c command` for a program that reads the wait status itself, as awk's
    /// `system()` and pipes do: a shell that a signal ended gives `Err(signal)`, and no
    /// word about it on stderr (its parent is no shell to say `Killed`). By default, as
    /// [`Launcher::launch`] runs it.
    async fn launch_sh(&self, ctx: Context, command: String) -> Result<Status, i32> {
        Ok(self
            .launch(ctx, vec!["sh".to_string(), "-c".to_string(), command])
            .await)
    }
    /// Every command, builtin and tool by name, sorted.
    fn commands(&self) -> Vec<CommandInfo>;
    /// Whether [`Launcher::launch`] would find `name` (a command, or a path to a file): the
    /// tools that run another command (`env`, `xargs`, `find -exec`, `timeout`) word a
    /// missing one themselves, as GNU's do.
    fn resolves(&self, name: &str) -> bool {
        name.contains('/') || self.commands().iter().any(|c| c.name == name)
    }
    /// Ids for a program that reports its process (awk's `PROCINFO["pid"]`): a fresh pid
    /// from the session's counter, as a new process would get, and the session shell's
    /// (`$$`), its parent as bash runs a command. `None` for a launcher that sees no
    /// processes.
    fn process_ids(&self) -> Option<(u32, u32)> {
        None
    }
    /// Sends signal `sig` to the session's process `pid` (signal 0 only asks whether it
    /// is there), as `kill(2)` does; false when there is no such process. A launcher that
    /// sees no processes has none.
    fn signal(&self, pid: u32, sig: i32) -> bool {
        let _ = (pid, sig);
        false
    }
    /// Why `name` cannot be run in `ctx` (no such command or file, a file that is not
    /// executable), asked before launching so the launching tool words the failure itself
    /// (`xargs: ./f: Permission denied`); `None` when [`Launcher::launch`] can run it.
    async fn unrunnable(&self, ctx: &Context, name: &str) -> Option<FsError> {
        let _ = ctx;
        (!self.resolves(name)).then_some(FsError::NotFound)
    }
}

/// The status for a command that could not be run for `e`, as a shell or `env` gives it:
/// 127 when there is no such file, 126 when there is one that cannot be executed.
pub fn unrunnable_status(e: &FsError) -> Status {
    if matches!(e, FsError::NotFound | FsError::NotADirectory) {
        127
    } else {
        126
    }
}

/// Everything one invocation of a command runs with. Cheap to clone: the streams and the
/// filesystem are shared handles.
#[derive(Clone)]
pub struct Context {
    pub stdin: Input,
    pub stdout: Output,
    pub stderr: Output,
    /// Exported variables (what a child process would get as its environment).
    pub env: BTreeMap<String, String>,
    /// Names of `env` that a program running this command added to it, in the order it
    /// set them: a program's environment lists them after the inherited names, as
    /// glibc's `putenv` appends them (see `env`).
    pub env_last: Vec<String>,
    /// Absolute working directory (logical, as in `$PWD`).
    pub cwd: String,
    pub fs: Arc<dyn FileSystem>,
    /// Fired on Ctrl-C, timeout or session end. Commands awaiting I/O are simply dropped;
    /// loops that compute without awaiting must check it.
    pub cancel: CancellationToken,
    /// `Some` when stdout is the session's terminal (`ls` then prints columns).
    pub tty: Option<TermSize>,
    /// The terminal itself, for full-screen programs; see [`Terminal`].
    pub terminal: Option<Arc<dyn Terminal>>,
    pub launcher: Arc<dyn Launcher>,
    /// The session's memory and task bounds: a command that buffers data (`sort`)
    /// charges it here, and fails with [`Interrupt::OutOfMemory`] past the limit.
    pub budget: Budget,
}

impl Context {
    /// The absolute path for a user's path argument.
    pub fn path(&self, arg: &str) -> String {
        fs::join(&self.cwd, arg)
    }

    /// Writes to stdout.
    pub async fn out(&self, data: impl AsRef<[u8]>) -> Result<(), Interrupt> {
        Ok(self.stdout.write_all(data.as_ref()).await?)
    }

    /// Writes text to stdout: the bytes it stands for (a byte that is not UTF-8, held in
    /// an argument or a variable as a character of its own, goes out as that byte; see
    /// [`bytetext`]). [`Context::out`] writes its data as it is.
    pub async fn out_text(&self, text: impl AsRef<str>) -> Result<(), Interrupt> {
        Ok(self.stdout.write_str(text.as_ref()).await?)
    }

    /// Writes a message to stderr; a failure to do so is ignored, as there is nowhere
    /// else to report it.
    pub async fn err(&self, msg: impl AsRef<str>) {
        let _ = self.stderr.write_str(msg.as_ref()).await;
    }

    /// Writes `name: msg\n` to stderr, the GNU way of reporting one problem.
    pub async fn warn(&self, name: &str, msg: impl std::fmt::Display) {
        self.err(format!("{name}: {msg}\n")).await;
    }

    /// Fails with [`Interrupt::Cancelled`] once the invocation was cancelled; for loops
    /// that compute without awaiting I/O. Also yields to the runtime, so one busy command
    /// cannot starve other sessions, and paces a session over its CPU share
    /// ([`Budget::pace`]).
    pub async fn checkpoint(&self) -> Result<(), Interrupt> {
        if self.cancel.is_cancelled() {
            return Err(Interrupt::Cancelled);
        }
        self.budget.pace().await;
        Ok(())
    }
}

/// A native command.
#[async_trait]
pub trait Command: Send + Sync {
    /// The name it is invoked by.
    fn name(&self) -> &'static str;
    /// One line for `help`.
    fn summary(&self) -> &'static str;
    /// Runs it. `args` excludes the command name. Errors on files are reported on stderr
    /// as `name: path: reason` and turn into a non-zero status; only stream failures and
    /// cancellation come back as [`Interrupt`].
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult;
}

/// Parses `args` with a clap-derived struct whose doc comments are the command's `--help`.
///
/// `--help` prints to stdout and gives `Err(0)`; a usage error prints
/// `name: message` plus a hint to stderr and gives `Err(2)`.
pub async fn parse_args<T: clap::Parser>(
    ctx: &Context,
    name: &str,
    args: &[String],
) -> Result<T, Result<Status, Interrupt>> {
    match parse_usage::<T>(name, args) {
        Usage::Args(parsed) => Ok(parsed),
        Usage::Help(text) => Err(ctx.out(text).await.map(|_| 0)),
        Usage::Error(msg) => {
            ctx.err(msg).await;
            Err(Ok(usage_status(name)))
        }
    }
}

/// The status a GNU tool exits with on a usage error: most give 1 (`EXIT_FAILURE`); `ls`
/// and `sort` keep 2 for trouble, `printenv` and `tty` too; the tools that run another
/// command keep 125 for their own mistakes.
pub fn usage_status(name: &str) -> Status {
    match name {
        "ls" | "dir" | "vdir" | "sort" | "printenv" | "tty" | "which" => 2,
        "timeout" | "env" | "nice" | "nohup" | "stdbuf" | "chroot" => 125,
        _ => 1,
    }
}

/// What parsing a command line with clap gave, before anything is printed.
#[derive(Debug)]
pub enum Usage<T> {
    Args(T),
    /// `--help` or `--version`: the text for stdout.
    Help(String),
    /// A usage error: `name: message` plus a hint, for stderr.
    Error(String),
}

/// Parses `args` (without the command name) with a clap-derived struct; shared by native
/// commands ([`parse_args`]) and shell builtins so both word usage errors alike.
pub fn parse_usage<T: clap::Parser>(name: &str, args: &[String]) -> Usage<T> {
    let split = split_attached_equals(&T::command(), args);
    let argv = std::iter::once(name.to_string()).chain(split);
    match T::try_parse_from(argv) {
        Ok(parsed) => Usage::Args(parsed),
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                Usage::Help(e.render().to_string())
            }
            _ => Usage::Error(format!(
                "{name}: {}\nTry '{name} --help' for more information.\n",
                gnu_usage_message(&e, args)
            )),
        },
    }
}

/// GNU's getopt takes everything after a short option as its value, `=` included
/// (`cut -d= -f2` splits at `=`), where clap would drop a leading `=`: a value that starts
/// with `=` is handed to clap as a separate word, which clap takes verbatim.
fn split_attached_equals(cmd: &clap::Command, args: &[String]) -> Vec<String> {
    let takes_value = |arg: &clap::Arg| arg.get_action().takes_values();
    let mut out = Vec::with_capacity(args.len());
    let mut value_next = false;
    let mut options_done = false;
    for a in args {
        if value_next || options_done || a == "-" || !a.starts_with('-') {
            value_next = false;
            out.push(a.clone());
            continue;
        }
        if a == "--" {
            options_done = true;
            out.push(a.clone());
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            // `--name VALUE`: the next word is the value.
            value_next = !long.contains('=')
                && cmd
                    .get_arguments()
                    .any(|arg| arg.get_long() == Some(long) && takes_value(arg));
            out.push(a.clone());
            continue;
        }
        // A cluster of short options: the first that takes a value takes the rest.
        let mut pushed = false;
        for (i, c) in a.char_indices().skip(1) {
            let Some(arg) = cmd.get_arguments().find(|arg| arg.get_short() == Some(c)) else {
                continue;
            };
            if !takes_value(arg) {
                continue;
            }
            let rest = &a[i + c.len_utf8()..];
            if rest.is_empty() {
                value_next = true;
            } else if rest.starts_with('=') {
                out.push(a[..i + c.len_utf8()].to_string());
                out.push(rest.to_string());
                pushed = true;
            }
            break;
        }
        if !pushed {
            out.push(a.clone());
        }
    }
    out
}

/// Words a clap error as GNU's `getopt_long` and coreutils word the same mistake.
fn gnu_usage_message(e: &clap::Error, args: &[String]) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let invalid_arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    match (e.kind(), invalid_arg) {
        (ErrorKind::UnknownArgument, Some(arg)) => {
            if arg.starts_with("--") {
                // GNU names the whole word, `=VALUE` included.
                let word = args
                    .iter()
                    .find(|a| a.split('=').next() == Some(arg))
                    .map_or(arg, String::as_str);
                format!("unrecognized option '{word}'")
            } else if let Some(letter) = arg.strip_prefix('-').filter(|l| l.chars().count() == 1) {
                format!("invalid option -- '{letter}'")
            } else {
                format!("extra operand '{arg}'")
            }
        }
        (ErrorKind::MissingRequiredArgument, _) => "missing operand".to_string(),
        (ErrorKind::InvalidValue, _)
            if args
                .last()
                .is_some_and(|a| a.starts_with('-') && a.len() > 1)
                && e.to_string().contains("a value is required") =>
        {
            // The option that wants a value is the last word.
            let last = args.last().map_or("", String::as_str);
            match last.strip_prefix("--") {
                Some(long) => format!("option '--{long}' requires an argument"),
                None => format!(
                    "option requires an argument -- '{}'",
                    last.chars().last().unwrap_or('?')
                ),
            }
        }
        _ => {
            let rendered = e.render().to_string();
            rendered
                .lines()
                .next()
                .unwrap_or("invalid usage")
                .trim_start_matches("error: ")
                .to_string()
        }
    }
}

/// Every native command, for the shell's registry.
pub fn all() -> Vec<Arc<dyn Command>> {
    cmd::all()
}

/// Programs that differ from the shell's command of their name (GNU's `printf` program
/// beside bash's builtin): what a command run without the shell (`env printf`) or by its
/// path (`/usr/bin/printf`) gets.
pub fn programs() -> Vec<Arc<dyn Command>> {
    cmd::programs()
}

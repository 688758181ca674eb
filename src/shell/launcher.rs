//! The shell's side of [`forkbox_commands::Launcher`]: lets `env`, `xargs` and friends
//! launch registry commands and nested shells (`xargs sh -c '…'`), and nested shells
//! themselves (`sh -c`, `bash script.sh`, a script on stdin).

use std::sync::Arc;

use async_trait::async_trait;
use forkbox_commands::{CommandInfo, Context, Launcher, Status, fs};
use tokio_util::sync::CancellationToken;

use super::builtins::type_::{InPath, PathSearch};
use super::error::ShellError;
use super::{MAX_SCRIPT, Shell, ShellConfig, SnapshotControl, Stdio, builtins};
use crate::registry::Registry;

/// Launches commands on behalf of a native command. Holds no shell state beyond the
/// session's snapshot control (so `xargs sh -c 'snapshot'` works like `snapshot`): what
/// it launches sees only the [`Context`] it is given.
#[derive(Clone)]
pub struct ShellLauncher {
    registry: Arc<Registry>,
    snapshots: Option<Arc<dyn SnapshotControl>>,
    /// The session's processes, for a program that signals them (`env kill -0 $$`).
    procs: Option<Arc<super::jobs::Procs>>,
}

impl std::fmt::Debug for ShellLauncher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShellLauncher")
            .field("snapshots", &self.snapshots.is_some())
            .finish_non_exhaustive()
    }
}

impl ShellLauncher {
    pub fn new(registry: Arc<Registry>) -> ShellLauncher {
        ShellLauncher {
            registry,
            snapshots: None,
            procs: None,
        }
    }

    /// How a shell launched for a command starts: what the context gives it, as a
    /// separate process would get it (exported environment, cwd, streams, the session's
    /// budget).
    fn fresh_shell(&self, ctx: &Context) -> (ShellConfig, Stdio) {
        let cfg = ShellConfig {
            fs: ctx.fs.clone(),
            registry: self.registry.clone(),
            env: ctx.env.clone().into_iter().collect(),
            cwd: ctx.cwd.clone(),
            interactive: false,
            budget: ctx.budget.clone(),
        };
        let stdio = Stdio {
            stdin: ctx.stdin.clone(),
            stdout: ctx.stdout.clone(),
            stderr: ctx.stderr.clone(),
            tty: ctx.tty,
            terminal: ctx.terminal.clone().map(crate::shell::TerminalHandle),
        };
        (cfg, stdio)
    }

    /// Where the context's PATH leads program `name`, as execvp searches it (PATH unset
    /// is `/bin:/usr/bin`); `None` for a name with a slash, and for a builtin of bash's
    /// that is no file (`env cd`), which runs as before in a shell of its own.
    async fn search(&self, ctx: &Context, name: &str) -> Option<InPath> {
        if name.contains('/') || name.is_empty() {
            return None;
        }
        if self
            .registry
            .resolve_program(name)
            .is_some_and(|e| e.path().is_none())
        {
            return None;
        }
        let path = ctx.env.get("PATH").map_or("/bin:/usr/bin", String::as_str);
        let search = PathSearch {
            registry: Some(self.registry.clone()),
            fs: ctx.fs.clone(),
            cwd: ctx.cwd.clone(),
        };
        Some(search.find(name, path).await)
    }

    /// Lets programs signal the session's processes `procs`.
    pub(crate) fn with_procs(mut self, procs: Arc<super::jobs::Procs>) -> ShellLauncher {
        self.procs = Some(procs);
        self
    }

    /// Gives nested shells the session's `snapshot` builtin.
    pub(crate) fn with_snapshots(mut self, ctl: Option<Arc<dyn SnapshotControl>>) -> ShellLauncher {
        self.snapshots = ctl;
        self
    }
}

#[async_trait]
impl Launcher for ShellLauncher {
    async fn launch(&self, ctx: Context, mut argv: Vec<String>) -> Status {
        let Some(name) = argv.first().cloned() else {
            return 0;
        };
        match self.search(&ctx, &name).await {
            Some(InPath::File(file)) => {
                // The program runs by the path it was found at (its `$0`).
                argv[0] = file;
                return Box::pin(self.run_file(ctx, argv)).await;
            }
            Some(InPath::Refused(file)) => {
                let e = ShellError::Exec {
                    path: file,
                    source: fs::FsError::PermissionDenied,
                };
                ctx.err(e.message()).await;
                return 126;
            }
            Some(InPath::Missing) => {
                ctx.err(ShellError::CommandNotFound(name).message()).await;
                return 127;
            }
            Some(InPath::Command) | None => {}
        }
        let Some(entry) = self.registry.resolve_program(&name).cloned() else {
            if name.contains('/') {
                return Box::pin(self.run_file(ctx, argv)).await;
            }
            ctx.err(ShellError::CommandNotFound(name).message()).await;
            return 127;
        };
        let base = entry.name.clone();
        if matches!(base.as_str(), "sh" | "bash") {
            return Box::pin(self.run_sh(&ctx, argv, true)).await.0;
        }
        if let Some(cmd) = entry.command.clone() {
            let _ran = crate::telemetry::metrics::command(entry.kind);
            return forkbox_commands::run_as(cmd.as_ref(), &ctx, &name, argv[1..].to_vec()).await;
        }
        // Another builtin (`env true`, `xargs kill`): run in a shell of its own, which sees
        // only what the context gives it, as a separate process would.
        let (cfg, stdio) = self.fresh_shell(&ctx);
        let mut sh = Shell::new(cfg);
        sh.snapshots = self.snapshots.clone();
        sh.cancel = ctx.cancel.clone();
        let fds = super::redirect::Fds::from_stdio(&stdio);
        let r = builtins::run(&mut sh, &base, argv[1..].to_vec(), &fds).await;
        super::exec::flow_status(r, sh.last_status)
    }

    async fn launch_sh(&self, ctx: Context, command: String) -> Result<Status, i32> {
        let argv = vec!["sh".to_string(), "-c".to_string(), command];
        let nested = matches!(self.search(&ctx, "sh").await, Some(InPath::Command) | None)
            && self
                .registry
                .resolve_program("sh")
                .is_some_and(|e| matches!(e.name.as_str(), "sh" | "bash"));
        if !nested {
            return Ok(self.launch(ctx, argv).await);
        }
        let (status, killed) = Box::pin(self.run_sh(&ctx, argv, false)).await;
        killed.map_or(Ok(status), Err)
    }

    fn commands(&self) -> Vec<CommandInfo> {
        self.registry.infos()
    }

    fn process_ids(&self) -> Option<(u32, u32)> {
        let procs = self.procs.as_ref()?;
        Some((procs.allocate(), procs.root()))
    }

    fn signal(&self, pid: u32, sig: i32) -> bool {
        self.procs
            .as_ref()
            .is_some_and(|p| p.kill(pid, sig) != super::jobs::Delivery::NoSuchProcess)
    }

    fn resolves(&self, name: &str) -> bool {
        self.registry.resolve(name).is_some()
    }

    async fn unrunnable(&self, ctx: &Context, name: &str) -> Option<fs::FsError> {
        match self.search(ctx, name).await {
            Some(InPath::Command | InPath::File(_)) => return None,
            Some(InPath::Refused(_)) => return Some(fs::FsError::PermissionDenied),
            Some(InPath::Missing) => return Some(fs::FsError::NotFound),
            None => {}
        }
        if self.registry.resolve_program(name).is_some() {
            return None;
        }
        if !name.contains('/') {
            return Some(fs::FsError::NotFound);
        }
        executable(ctx, name).await.err()
    }
}

/// Whether the file `name` (relative to the context's directory) may be executed: a
/// directory or a file without an execute bit may not (EACCES, as execve says).
async fn executable(ctx: &Context, name: &str) -> Result<String, fs::FsError> {
    let path = fs::join(&ctx.cwd, name);
    let meta = ctx.fs.stat(&path).await?;
    if meta.is_dir() || meta.mode & 0o111 == 0 {
        return Err(fs::FsError::PermissionDenied);
    }
    Ok(path)
}

impl ShellLauncher {
    /// Runs `sh`/`bash` with `argv` as a program `ctx` starts (a fresh shell that inherits
    /// no descriptor past 2): its status, and the signal that ended it if one did, which
    /// `announce` has named on stderr as bash names it for a child.
    async fn run_sh(&self, ctx: &Context, argv: Vec<String>, announce: bool) -> (i32, Option<i32>) {
        let (cfg, stdio) = self.fresh_shell(ctx);
        let stderr = stdio.stderr.clone();
        let snapshots = self.snapshots.clone();
        let high = Default::default();
        let (status, killed) =
            run_nested_waited(cfg, snapshots, argv, stdio, high, ctx.cancel.clone()).await;
        if announce {
            announce_signal(&stderr, killed).await;
        }
        (status, killed)
    }

    /// Runs a script file by path (`xargs ./s.sh`, `env /tmp/run`) as the shell runs
    /// `./s.sh`: by its `#!` interpreter (a shell, or a registry command such as
    /// `python3`), or a shell when it has none.
    async fn run_file(&self, ctx: Context, argv: Vec<String>) -> Status {
        let name = argv.first().cloned().unwrap_or_default();
        let failed = |e: &fs::FsError| {
            ShellError::Exec {
                path: name.clone(),
                source: e.clone(),
            }
            .message()
        };
        let path = match executable(&ctx, &name).await {
            Ok(p) => p,
            Err(e) => {
                ctx.err(failed(&e)).await;
                return forkbox_commands::unrunnable_status(&e);
            }
        };
        let content = match fs::read_all(ctx.fs.as_ref(), &path, MAX_SCRIPT).await {
            Ok(c) => c,
            Err(e) => {
                ctx.err(failed(&e)).await;
                return 126;
            }
        };
        let mut script_argv = super::exec::shebang_command(&String::from_utf8_lossy(&content));
        let interp = script_argv[0].clone();
        script_argv.push(name.clone());
        script_argv.extend(argv[1..].iter().cloned());
        if matches!(interp.as_str(), "sh" | "bash") {
            return Box::pin(self.run_sh(&ctx, script_argv, true)).await.0;
        }
        match self.registry.command(&interp) {
            Some(cmd) => {
                let r = cmd.run(&ctx, script_argv[1..].to_vec()).await;
                forkbox_commands::exit_status(&interp, r, &ctx.stderr).await
            }
            None => {
                let e =
                    ShellError::Builtin(format!("{name}: cannot execute: required file not found"));
                ctx.err(e.message()).await;
                127
            }
        }
    }
}

/// Runs `sh`/`bash` with `argv` (`argv[0]` is the shell's name): `-c STRING [ARG0 ARGS…]`,
/// `FILE [ARGS…]`, or the script on stdin. Options `-e -u -x -f -C -o NAME`, `-O NAME`
/// (`shopt`) and `--posix` are honoured; `--version` prints bash's version line.
/// `snapshots` is the session's snapshot control, if it has one.
pub(crate) async fn run_nested(
    cfg: ShellConfig,
    snapshots: Option<Arc<dyn SnapshotControl>>,
    argv: Vec<String>,
    stdio: Stdio,
    high_fds: std::collections::BTreeMap<i32, super::redirect::Fd>,
    cancel: CancellationToken,
) -> i32 {
    let stderr = stdio.stderr.clone();
    let (status, killed) = run_nested_waited(cfg, snapshots, argv, stdio, high_fds, cancel).await;
    announce_signal(&stderr, killed).await;
    status
}

/// A shell a signal ended: its parent names the signal, as bash does (not SIGINT or
/// SIGPIPE).
async fn announce_signal(stderr: &forkbox_commands::Output, killed: Option<i32>) {
    if let Some(sig) = killed.filter(|s| *s != 2 && *s != 13) {
        let msg = format!("{}\n", super::jobs::signal_description(sig));
        let _ = stderr.write_str(&msg).await;
    }
}

/// [`run_nested`] without the word about a signal that ended the shell: its status, and
/// the signal if one did.
async fn run_nested_waited(
    cfg: ShellConfig,
    snapshots: Option<Arc<dyn SnapshotControl>>,
    argv: Vec<String>,
    stdio: Stdio,
    high_fds: std::collections::BTreeMap<i32, super::redirect::Fd>,
    cancel: CancellationToken,
) -> (i32, Option<i32>) {
    let name = argv.first().cloned().unwrap_or_else(|| "sh".into());
    // A nested shell is one of the session's tasks while it runs.
    let slot = match cfg.budget.task() {
        Ok(slot) => slot,
        Err(e) => {
            if cfg.budget.first_refusal() {
                let _ = stdio.stderr.write_str(&ShellError::from(e).message()).await;
            }
            return (1, None);
        }
    };
    let mut sh = Shell::new(cfg);
    sh.slot = Some(Arc::new(slot));
    sh.snapshots = snapshots;
    sh.inherited_fds = high_fds;
    sh.arg0 = name.clone();
    let mut i = 1;
    let mut command: Option<String> = None;
    let mut want_c = false;
    // `-s`: the script is stdin, the operands are the positional parameters.
    let mut want_s = false;
    while i < argv.len() {
        let a = &argv[i];
        if a == "--" || a == "-" {
            i += 1;
            break;
        }
        if matches!(
            a.as_str(),
            "--login" | "--norc" | "--noprofile" | "--noediting" | "--restricted"
        ) {
            // No startup files exist to skip or read; a session is no login to begin.
            i += 1;
            continue;
        }
        if matches!(a.as_str(), "--rcfile" | "--init-file") {
            // The startup file it names is never read (see above).
            i += 2;
            continue;
        }
        if matches!(a.as_str(), "--debug" | "--debugger") {
            i += 1;
            continue;
        }
        if a == "--verbose" {
            let _ = sh.set_option_name("verbose", true);
            i += 1;
            continue;
        }
        if a == "--posix" {
            let _ = sh.set_option_name("posix", true);
            i += 1;
            continue;
        }
        if a == "--version" {
            let v = super::vars::BASH_VERSINFO;
            let text = format!(
                "GNU bash, version {}.{}.{}({})-{} ({})\n",
                v[0], v[1], v[2], v[3], v[4], v[5]
            );
            let _ = stdio.stdout.write_str(&text).await;
            return (0, None);
        }
        if a == "-O" || a == "+O" {
            // `-O NAME`: a `shopt` option, set before the script runs.
            let on = a == "-O";
            if let Some(opt) = argv.get(i + 1)
                && !sh.shopts.set(opt, on)
            {
                let _ = stdio
                    .stderr
                    // Before it reads a command bash's line is 0, and it says so.
                    .write_str(&format!(
                        "{name}: line 0: {opt}: invalid shell option name\n"
                    ))
                    .await;
                return (2, None);
            }
            i += 2;
            continue;
        }
        if a == "-o" || a == "+o" {
            let on = a == "-o";
            if let Some(opt) = argv.get(i + 1)
                && sh.set_option_name(opt, on).is_err()
            {
                // Before it reads a command bash's line is 0, and it names itself twice.
                let msg = format!("{name}: line 0: {name}: {opt}: invalid option name\n");
                let _ = stdio.stderr.write_str(&msg).await;
                return (2, None);
            }
            i += 2;
            continue;
        }
        if a.starts_with("--") {
            let _ = stdio.stderr.write_str(&invalid_option(&name, a)).await;
            return (2, None);
        }
        if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            let on = a.starts_with('-');
            for c in a[1..].chars() {
                match c {
                    'c' => want_c = true,
                    's' => want_s = true,
                    'i' | 'l' | 'r' | 'D' => {}
                    _ => {
                        if sh.set_option_letter(c, on).is_err() {
                            let sign = if on { '-' } else { '+' };
                            let text = invalid_option(&name, &format!("{sign}{c}"));
                            let _ = stdio.stderr.write_str(&text).await;
                            return (2, None);
                        }
                    }
                }
            }
            i += 1;
            continue;
        }
        break;
    }
    let rest: Vec<String> = argv[i.min(argv.len())..].to_vec();
    if want_c {
        let mut rest = rest.clone().into_iter();
        let Some(cmd) = rest.next() else {
            let _ = stdio
                .stderr
                .write_str(&format!("{name}: -c: option requires an argument\n"))
                .await;
            return (2, None);
        };
        command = Some(cmd);
        if let Some(a0) = rest.next() {
            sh.arg0 = a0;
        }
        sh.positional = rest.collect();
    }
    if want_s && command.is_none() {
        sh.positional = rest.clone();
    }
    let status = if let Some(cmd) = command {
        // bash keeps the string it was given to run, for the script to see.
        let _ = sh.set_var("BASH_EXECUTION_STRING", &cmd);
        sh.run_script(&cmd, &stdio, cancel).await
    } else if let Some(file) = rest.first().filter(|_| !want_s) {
        let path = fs::join(&sh.cwd, file);
        sh.input_letter = None;
        if sh.fs.stat(&path).await.is_ok_and(|m| m.is_dir()) {
            // bash has taken the file's name as `$0` when it finds it cannot read it.
            let msg = format!("{file}: {file}: Is a directory\n");
            let _ = stdio.stderr.write_str(&msg).await;
            return (126, None);
        }
        match fs::read_all(sh.fs.as_ref(), &path, MAX_SCRIPT).await {
            Ok(bytes) => {
                sh.arg0 = file.clone();
                sh.positional = rest[1..].to_vec();
                // A script file is the bottom frame of its call stack, as in bash:
                // `BASH_SOURCE` names it, `FUNCNAME` ends with `main`, and its messages
                // start with `FILE: line N:`.
                sh.lines.source = file.clone();
                sh.reads_input = true;
                sh.funcnames.push("main".to_string());
                sh.lines.frames.push(super::lines::Frame {
                    call_line: 0,
                    source: file.clone(),
                    argv: None,
                });
                let text = forkbox_commands::bytetext::decode(bytes);
                sh.run_script(&text, &stdio, cancel).await
            }
            Err(e) => {
                let _ = stdio
                    .stderr
                    .write_str(&format!("{name}: {file}: {e}\n"))
                    .await;
                127
            }
        }
    } else {
        sh.input_letter = Some('s');
        sh.run_stream(&stdio, cancel).await
    };
    let status = sh.exit_requested().unwrap_or(status);
    let killed = *sh.me.killed.lock().unwrap_or_else(|p| p.into_inner());
    (status, killed)
}

/// bash's complaint about an option it does not know (`-Z`, `--bogus`), with its usage.
fn invalid_option(name: &str, option: &str) -> String {
    let long = [
        "debug",
        "debugger",
        "dump-po-strings",
        "dump-strings",
        "help",
        "init-file",
        "login",
        "noediting",
        "noprofile",
        "norc",
        "posix",
        "pretty-print",
        "rcfile",
        "restricted",
        "verbose",
        "version",
    ];
    let mut text = format!(
        "{name}: {option}: invalid option\nUsage:\t{name} [GNU long option] [option] ...\n\t{name} [GNU long option] [option] script-file ...\nGNU long options:\n"
    );
    for l in long {
        text.push_str(&format!("\t--{l}\n"));
    }
    text.push_str("Shell options:\n\t-ilrsD or -c command or -O shopt_option\t\t(invocation only)\n\t-abefhkmnptuvxBCEHPT or -o option\n");
    text
}

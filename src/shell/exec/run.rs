//! Running what a simple command names: a function, a builtin, a registry command, a
//! nested shell or a script file of the fork.

use super::*;
use crate::shell::builtins::type_::{InPath, PathSearch};

impl Shell {
    /// Resolves and runs a command by name: function, builtin, nested shell, registry
    /// command, or script file.
    pub(crate) async fn run_command(
        &mut self,
        argv: Vec<String>,
        env_extra: Vec<(String, String)>,
        fds: &Fds,
    ) -> Exec<i32> {
        let mut args = argv;
        if args.is_empty() {
            return Ok(0);
        }
        let name = args.remove(0);
        if let Some(f) = self.functions.get(&name).cloned() {
            if env_extra.is_empty() {
                return self.call_function(f, args, fds).await;
            }
            let frames = self.local_frames.len();
            self.push_temp_frame(&env_extra);
            let r = self.call_function(f, args, fds).await;
            while self.local_frames.len() > frames {
                self.pop_local_frame();
            }
            return r;
        }
        if !self.disabled_builtins.is_empty() && self.disabled_builtins.contains(&name) {
            return self
                .run_disabled_builtin(&name, args, &env_extra, fds)
                .await;
        }
        if matches!(name.as_str(), "test" | "[" | "printf" | "help") {
            return self.run_builtin_command(&name, args, &env_extra, fds).await;
        }
        let builtin = self.registry.resolve(&name).is_some_and(|e| {
            e.kind == forkbox_commands::CommandKind::Builtin && self.in_path(&name, e, &env_extra)
        }) && !name.contains('/');
        if builtin {
            let _ran = crate::telemetry::metrics::command(forkbox_commands::CommandKind::Builtin);
            let saved = self.push_temp_env(&env_extra);
            // POSIX mode: assignments before a special builtin stay (exported, as bash
            // leaves them).
            let keep = self.opts.posix && is_special_builtin(&name);
            let kept = attribute_names(&name, &args);
            let r = builtins::run(self, &name, args, fds).await;
            let r = self.special_outcome(&name, r);
            if !keep {
                // `x=2 export x` (or `readonly x`, `declare -x x`): the temporary value
                // stays, with the attribute, where bash otherwise drops it.
                let saved = saved
                    .into_iter()
                    .filter(|(k, _)| !kept.contains(k))
                    .collect();
                self.pop_temp_env(saved);
            }
            return r;
        }
        self.run_external(&name, args, &env_extra, fds).await
    }

    /// A builtin `enable -n` turned off, run as the file bash would find: the program
    /// of that name (GNU's `test`, `printf`, `echo`, procps' `kill`), the builtin
    /// standing in for the file (`true`, `false`), or not found.
    async fn run_disabled_builtin(
        &mut self,
        name: &str,
        args: Vec<String>,
        env_extra: &[(String, String)],
        fds: &Fds,
    ) -> Exec<i32> {
        let registry = self.registry.clone();
        match registry.resolve_program(name) {
            Some(entry) if entry.kind != forkbox_commands::CommandKind::Builtin => {
                if let Some(cmd) = entry.command.clone() {
                    let ctx = self.context(fds, env_extra);
                    let r = cmd.run(&ctx, args).await;
                    let status = forkbox_commands::exit_status(&entry.name, r, &ctx.stderr).await;
                    return Ok(status);
                }
            }
            Some(entry) if entry.path().is_some() && !matches!(name, "sh" | "bash") => {
                let saved = self.push_temp_env(env_extra);
                let r = builtins::run(self, &entry.name, args, fds).await;
                self.pop_temp_env(saved);
                return r;
            }
            _ => {}
        }
        let e = ShellError::CommandNotFound(name.to_string());
        self.fail(e, fds).await
    }

    /// `test`, `[` and `printf`: bash's builtins, which run the native commands with the
    /// builtins' wording (and `printf -v`).
    async fn run_builtin_command(
        &mut self,
        name: &str,
        args: Vec<String>,
        env_extra: &[(String, String)],
        fds: &Fds,
    ) -> Exec<i32> {
        let _ran = crate::telemetry::metrics::command(forkbox_commands::CommandKind::Builtin);
        let saved = self.push_temp_env(env_extra);
        let r = if name == "printf" {
            builtins::printf(self, args, fds).await
        } else if name == "help" {
            match forkbox_commands::cmd::help::bash_help(&args, &self.registry.infos()) {
                Some(answer) => builtins::help(self, answer, fds).await,
                // No pattern: the list of the shell's commands.
                None => {
                    self.pop_temp_env(saved);
                    return Box::pin(self.run_external(name, args, env_extra, fds)).await;
                }
            }
        } else {
            builtins::test(self, name, args, fds).await
        };
        self.pop_temp_env(saved);
        r
    }

    /// Runs a non-function, non-builtin command (also used by `command`, `builtin` and
    /// `exec`).
    pub(crate) async fn run_external(
        &mut self,
        name: &str,
        args: Vec<String>,
        env_extra: &[(String, String)],
        fds: &Fds,
    ) -> Exec<i32> {
        if matches!(name, "test" | "[" | "printf") {
            return self.run_builtin_command(name, args, env_extra, fds).await;
        }
        // A path `hash -p` gave the name is what runs (it may name no command at all);
        // with its own PATH (`PATH=… cmd`) a command is looked up afresh, as in bash.
        let own_path = env_extra.iter().any(|(k, _)| k == "PATH");
        let set_path = if own_path {
            None
        } else {
            self.hashed_elsewhere(name)
        };
        let name = set_path.as_deref().unwrap_or(name);
        let registry = self.registry.clone();
        // A file of the fork in a directory of PATH before the registry's (`~/bin/ls`)
        // is what bash would find first. A name the hash table already holds as the
        // registry's file is not searched for again, as bash uses its table (and PATH's
        // other directories cost a lookup in the fork each).
        if set_path.is_none()
            && !name.contains('/')
            && (own_path || !self.hashed_as_command(name))
            && registry
                .resolve(name)
                .is_some_and(|e| e.kind != forkbox_commands::CommandKind::Builtin)
            && let Some(path) = self.search_path(env_extra)
            && let InPath::File(file) = self.path_search().find(name, &path).await
        {
            if !own_path {
                self.remember_path(name, Some(file.clone()));
            }
            return self.run_script_file(&file, args, env_extra, fds).await;
        }
        match registry.resolve(name) {
            // A command whose file no directory of PATH holds is not found.
            Some(entry) if !name.contains('/') && !self.in_path(name, entry, env_extra) => {}
            Some(entry) if entry.kind == forkbox_commands::CommandKind::Builtin => {
                // A builtin reached by its file's path (`/bin/echo`, `/bin/sh`) or from
                // `command`/`exec`.
                let _ran = crate::telemetry::metrics::command(entry.kind);
                let saved = self.push_temp_env(env_extra);
                let r = builtins::run(self, &entry.name, args, fds).await;
                // Through `command`, a special builtin's error does not end the shell.
                self.special_failed = false;
                self.pop_temp_env(saved);
                return r;
            }
            Some(entry) => {
                if let Some(cmd) = entry.command.clone() {
                    if !name.contains('/') && !own_path {
                        self.remember_path(name, None);
                    }
                    let _ran = crate::telemetry::metrics::command(entry.kind);
                    let ctx = self.context(fds, env_extra);
                    let status = forkbox_commands::run_as(cmd.as_ref(), &ctx, name, args).await;
                    drop(ctx);
                    return Ok(status);
                }
            }
            None => {}
        }
        if name.contains('/') {
            return self.run_script_file(name, args, env_extra, fds).await;
        }
        let path = self.search_path(env_extra).unwrap_or_default();
        if path.is_empty() {
            // Without a PATH bash runs the name as a file of the working directory.
            let e = ShellError::Exec {
                path: name.to_string(),
                source: FsError::NotFound,
            };
            return self.fail(e, fds).await;
        }
        match builtins::type_::fork_file(self, name, &path).await {
            Some((file, true)) => {
                if !own_path {
                    self.remember_path(name, Some(file.clone()));
                }
                return self.run_script_file(&file, args, env_extra, fds).await;
            }
            Some((file, false)) => {
                let e = ShellError::Exec {
                    path: file,
                    source: FsError::PermissionDenied,
                };
                return self.fail(e, fds).await;
            }
            None => {}
        }
        if !self.in_not_found_handler
            && let Some(handler) = self.functions.get("command_not_found_handle").cloned()
        {
            return self.not_found_handler(handler, name, args, fds).await;
        }
        let e = ShellError::CommandNotFound(name.to_string());
        self.fail(e, fds).await
    }

    /// Whether the registry's `entry` for `name` is found as bash would: a builtin of
    /// bash's always, a command (and `sh`, `bash`) only through a directory of PATH.
    fn in_path(
        &self,
        name: &str,
        entry: &crate::registry::Entry,
        env_extra: &[(String, String)],
    ) -> bool {
        if (entry.kind == forkbox_commands::CommandKind::Builtin && !matches!(name, "sh" | "bash"))
            || crate::registry::BASH_BUILTIN_COMMANDS.contains(&name)
        {
            return true;
        }
        let path = self.search_path(env_extra).unwrap_or_default();
        !builtins::type_::file_paths_in(self, name, &path).is_empty()
    }

    /// The search of PATH from this shell's working directory (see [`PathSearch`]).
    pub(crate) fn path_search(&self) -> PathSearch {
        PathSearch {
            registry: Some(self.registry.clone()),
            fs: self.fs.clone(),
            cwd: self.cwd.clone(),
        }
    }

    /// The PATH a command is looked up in: its own prefix assignment's, else the shell's.
    fn search_path(&self, env_extra: &[(String, String)]) -> Option<String> {
        match env_extra.iter().rev().find(|(k, _)| k == "PATH") {
            Some((_, v)) => Some(v.clone()),
            None => self.get_str("PATH"),
        }
    }

    /// The path `hash -p` set for `name`, when it is not where PATH finds it (counted
    /// as a use of the table).
    fn hashed_elsewhere(&mut self, name: &str) -> Option<String> {
        if name.contains('/') || !self.opts.hashall {
            return None;
        }
        let at = self.hashed.iter().position(|(n, _, _)| n == name)?;
        let found = builtins::type_::file_path(self, name);
        let (_, path, hits) = &mut self.hashed[at];
        if found.as_deref() == Some(path.as_str()) {
            return None;
        }
        *hits = hits.saturating_add(1);
        Some(path.clone())
    }

    /// Whether the `hash` table holds `name` at a file of a directory where the
    /// registry's commands are (`/usr/bin/ls`).
    fn hashed_as_command(&self, name: &str) -> bool {
        self.opts.hashall
            && self.hashed.iter().any(|(n, path, _)| {
                n == name
                    && path
                        .rsplit_once('/')
                        .is_some_and(|(dir, _)| builtins::type_::command_dir(&self.cwd, dir))
            })
    }

    /// Counts a run of command `name` found in PATH in the `hash` table (adding it).
    /// `found` is where it was found, when known.
    fn remember_path(&mut self, name: &str, found: Option<String>) {
        if !self.opts.hashall {
            return;
        }
        match self.hashed.iter_mut().find(|(n, _, _)| n == name) {
            Some((_, _, hits)) => *hits = hits.saturating_add(1),
            None => {
                if let Some(path) = found.or_else(|| builtins::type_::file_path(self, name)) {
                    self.hashed.push((name.to_string(), path, 1));
                }
            }
        }
    }

    /// bash's hook for a command that is not found: the function
    /// `command_not_found_handle` runs in a subshell with the command and its arguments;
    /// its status is the command's.
    async fn not_found_handler(
        &mut self,
        handler: Arc<ast::FunctionDefinition>,
        name: &str,
        args: Vec<String>,
        fds: &Fds,
    ) -> Exec<i32> {
        let mut sub = match self.subshell() {
            Ok(sub) => sub,
            Err(e) => return self.fail(e, fds).await,
        };
        sub.in_not_found_handler = true;
        sub.loop_depth = 0;
        let mut argv = Vec::with_capacity(args.len() + 1);
        argv.push(name.to_string());
        argv.extend(args);
        let r = sub.call_function(handler, argv, fds).await;
        let status = flow_status(r, sub.last_status);
        let status = sub.run_exit_trap(status, fds).await;
        self.report_killed(&sub, fds).await;
        Ok(status)
    }

    pub(crate) fn context(&self, fds: &Fds, env_extra: &[(String, String)]) -> Context {
        let fs = self.fs_for(fds);
        Context {
            stdin: fds.stdin(),
            stdout: fds.stdout(),
            stderr: fds.stderr(),
            env: self.exported_env(env_extra),
            env_last: Vec::new(),
            cwd: self.cwd.clone(),
            fs,
            cancel: self.cancel.clone(),
            tty: fds.tty,
            terminal: fds.terminal.as_ref().map(|t| t.0.clone()),
            launcher: Arc::new(
                crate::shell::ShellLauncher::new(self.registry.clone())
                    .with_snapshots(self.snapshots.clone())
                    .with_procs(self.procs.clone()),
            ),
            budget: self.budget.clone(),
        }
    }

    pub(crate) fn push_temp_env(
        &mut self,
        env: &[(String, String)],
    ) -> Vec<(String, Option<crate::shell::Var>)> {
        let mut saved = Vec::new();
        for (k, v) in env {
            saved.push((k.clone(), self.vars.get(k).cloned()));
            // bash's temporary variable is a new one: the shell's `-i`, `-u`, `-l`, `-c`
            // or array do not apply to it (`declare -u v; v=abc f` shows `abc`).
            if let Some(var) = self.vars.get_mut(k).filter(|var| {
                let a = var.attrs;
                !var.readonly
                    && !a.nameref
                    && (a.integer
                        || a.upper
                        || a.lower
                        || a.capcase
                        || !matches!(var.value, crate::shell::Value::Str(_)))
            }) {
                *var = crate::shell::Var {
                    value: crate::shell::Value::Str(v.clone()),
                    exported: true,
                    readonly: false,
                    attrs: crate::shell::Attrs::default(),
                };
                continue;
            }
            self.set_exported(k, v);
        }
        saved
    }

    pub(crate) fn pop_temp_env(&mut self, saved: Vec<(String, Option<crate::shell::Var>)>) {
        for (k, old) in saved.into_iter().rev() {
            self.restore_var(k, old);
        }
    }

    pub(super) async fn call_function(
        &mut self,
        f: Arc<ast::FunctionDefinition>,
        args: Vec<String>,
        fds: &Fds,
    ) -> Exec<i32> {
        if self.call_depth % CALLS_PER_TASK == CALLS_PER_TASK - 1 {
            // Continue on a fresh task; `self` keeps a copy in case this future is dropped.
            let moved = self.clone();
            let fds = fds.clone();
            let task = on_fresh_task(&self.budget, async move {
                let mut sh = moved;
                let r = sh.call_function_here(&f, args, &fds).await;
                (sh, r)
            });
            return match task.await {
                Some((sh, r)) => {
                    *self = sh;
                    r
                }
                None => Err(Flow::Abort(1)),
            };
        }
        self.call_function_here(&f, args, fds).await
    }

    pub(super) fn call_function_here<'a>(
        &'a mut self,
        f: &'a ast::FunctionDefinition,
        args: Vec<String>,
        fds: &'a Fds,
    ) -> BoxFut<'a, Exec<i32>> {
        Box::pin(async move {
            // `FUNCNEST`, when a positive number, is a lower bound of the script's own.
            let limit = self
                .vars
                .get("FUNCNEST")
                .and_then(|v| v.value.as_str())
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|n| *n > 0)
                .map_or(MAX_CALL_DEPTH, |n| n.min(MAX_CALL_DEPTH));
            if self.call_depth >= limit {
                let e = ShellError::RecursionLimit(f.fname.value.clone(), limit);
                return self.fail(e, fds).await;
            }
            let argv = self.frame_argv(&args);
            let saved = std::mem::replace(&mut self.positional, args);
            let saved_changes = self.positional_changes;
            self.funcnames.push(f.fname.value.clone());
            let origin = self
                .lines
                .functions
                .get(&f.fname.value)
                .cloned()
                .unwrap_or_default();
            self.lines.frames.push(crate::shell::lines::Frame {
                call_line: self.lines.lineno,
                source: origin.source.clone(),
                argv,
            });
            let saved_lines = (
                self.lines.line_base,
                self.lines.unit,
                std::mem::replace(&mut self.lines.source, origin.source),
                self.lines.lineno,
            );
            self.lines.line_base = origin.line_base;
            self.lines.unit = origin.unit;
            let saved_aliases =
                std::mem::replace(&mut self.lines.read_aliases, origin.aliases.clone());
            self.local_frames.push(Default::default());
            // A function with the trace attribute sees the traps its caller sees.
            let saved_traced = self.traced_call;
            self.traced_call = self.traced_functions.contains(&f.fname.value)
                && (self.call_depth == 0 || self.functrace() || saved_traced);
            self.call_depth += 1;
            // Loops do not reach into a function: `break` there is outside any loop.
            let saved_loops = std::mem::replace(&mut self.loop_depth, 0);
            let body = &f.body;
            // A function does not inherit the RETURN trap (unless `set -T`): it is put
            // aside for the call, and what the function itself sets runs as it returns.
            let outer_return_trap =
                if self.functrace() || self.traced_functions.contains(&f.fname.value) {
                    None
                } else {
                    self.traps.remove(&crate::shell::jobs::TRAP_RETURN)
                };
            let rs: Vec<&IoRedirect> = body.1.iter().flat_map(|r| r.0.iter()).collect();
            // Under `set -T` the DEBUG trap also runs as the function starts (still
            // showing the call as `$BASH_COMMAND`).
            let entry = if self.in_trap == 0
                && (self.functrace() || self.traced_call)
                && self.traps.contains_key(&crate::shell::jobs::TRAP_DEBUG)
            {
                self.run_debug_trap(fds).await
            } else {
                Ok(false)
            };
            let r = if let Err(fl) = entry {
                Err(fl)
            } else if rs.is_empty() {
                // The common body without redirections runs on the caller's descriptors.
                self.exec_compound(&body.0, fds).await
            } else {
                match self.begin_redirects(&rs, fds).await {
                    Ok((f, closers)) => {
                        let r = self.exec_compound(&body.0, &f).await;
                        self.end_redirects(f, closers, r, fds).await
                    }
                    Err(r) => r,
                }
            };
            let r = if self.traps.contains_key(&crate::shell::jobs::TRAP_RETURN) {
                let status = match &r {
                    Ok(s) | Err(Flow::Return(s)) => Some(*s),
                    _ => None,
                };
                match status {
                    Some(s) => {
                        // The handler sees `$?` of the last command before `return`.
                        if r.is_ok() {
                            self.last_status = s;
                        }
                        self.run_return_trap(fds).await.map(|()| s)
                    }
                    None => r,
                }
            } else {
                r
            };
            // The caller's trap comes back unless the function set one of its own.
            if let Some(t) = outer_return_trap
                && !self.traps.contains_key(&crate::shell::jobs::TRAP_RETURN)
            {
                self.traps.insert(crate::shell::jobs::TRAP_RETURN, t);
            }
            if self
                .lines
                .local_opts
                .last()
                .is_some_and(|(d, _)| *d == self.call_depth)
                && let Some((_, opts)) = self.lines.local_opts.pop()
            {
                self.opts = opts;
            }
            self.call_depth -= 1;
            self.traced_call = saved_traced;
            self.loop_depth = saved_loops;
            self.funcnames.pop();
            self.lines.frames.pop();
            (
                self.lines.line_base,
                self.lines.unit,
                self.lines.source,
                self.lines.lineno,
            ) = saved_lines;
            self.lines.read_aliases = saved_aliases;
            self.pop_local_frame();
            self.positional = saved;
            self.positional_changes = saved_changes;
            match r {
                Err(Flow::Return(s)) => Ok(s),
                other => other,
            }
        })
    }

    /// `sh …`/`bash …`: a fresh shell with the exported environment.
    pub(crate) async fn run_nested(
        &mut self,
        argv: Vec<String>,
        env_extra: &[(String, String)],
        fds: &Fds,
    ) -> i32 {
        let cfg = ShellConfig {
            fs: self.fs_for(fds),
            registry: self.registry.clone(),
            env: self.exported_env(env_extra).into_iter().collect(),
            cwd: self.cwd.clone(),
            interactive: false,
            budget: self.budget.clone(),
        };
        let stdio = Stdio {
            stdin: fds.stdin(),
            stdout: fds.stdout(),
            stderr: fds.stderr(),
            tty: fds.tty,
            terminal: fds.terminal.clone(),
        };
        let cancel = self.cancel.child_token();
        let snapshots = self.snapshots.clone();
        Box::pin(crate::shell::launcher::run_nested(
            cfg,
            snapshots,
            argv,
            stdio,
            fds.high_fds(),
            cancel,
        ))
        .await
    }

    /// `./script.sh`: a file in the session's filesystem run by its `#!` interpreter.
    pub(super) async fn run_script_file(
        &mut self,
        name: &str,
        args: Vec<String>,
        env_extra: &[(String, String)],
        fds: &Fds,
    ) -> Exec<i32> {
        let path = fs::join(&self.cwd, name);
        let exec_err = |source| ShellError::Exec {
            path: name.to_string(),
            source,
        };
        let meta = match self.fs.stat(&path).await {
            Ok(m) => m,
            Err(e) => return self.fail(exec_err(e), fds).await,
        };
        if meta.is_dir() {
            return self.fail(exec_err(FsError::IsADirectory), fds).await;
        }
        if meta.mode & 0o111 == 0 {
            return self.fail(exec_err(FsError::PermissionDenied), fds).await;
        }
        let content = match fs::read_all(self.fs.as_ref(), &path, MAX_SCRIPT).await {
            Ok(c) => c,
            Err(e) => return self.fail(exec_err(e), fds).await,
        };
        let mut argv = shebang_command(&String::from_utf8_lossy(&content));
        let interp = argv[0].clone();
        argv.push(name.to_string());
        argv.extend(args);
        if matches!(interp.as_str(), "sh" | "bash") {
            return Ok(self.run_nested(argv, env_extra, fds).await);
        }
        match self.registry.command(&interp) {
            Some(cmd) => {
                let ctx = self.context(fds, env_extra);
                let r = cmd.run(&ctx, argv[1..].to_vec()).await;
                let status = forkbox_commands::exit_status(&interp, r, &ctx.stderr).await;
                Ok(status)
            }
            None => {
                // bash's words for a `#!` naming a program that is not there.
                let e =
                    ShellError::Builtin(format!("{name}: cannot execute: required file not found"));
                self.report(&fds.stderr(), &e).await;
                self.last_status = 127;
                Ok(127)
            }
        }
    }
}

/// The command a script's `#!` line runs it with, before the script's name: the program
/// (its base name; `env PROG` gives PROG, `env -S PROG ARGS` all of them) and, as Linux
/// passes it, the rest of the line as one argument (`#!/usr/bin/awk -f` runs `awk -f`);
/// `sh` for a script without one. Shared by the shell (`./s.sh`) and its launcher
/// (`xargs ./s.sh`).
pub(crate) fn shebang_command(text: &str) -> Vec<String> {
    let first = text.lines().next().unwrap_or("");
    let Some(line) = first.strip_prefix("#!") else {
        return vec!["sh".to_string()];
    };
    let line = line.trim();
    let (prog, rest) = line
        .split_once(|c: char| c.is_ascii_whitespace())
        .unwrap_or((line, ""));
    let prog = if prog.is_empty() { "sh" } else { prog };
    let base = prog.rsplit('/').next().unwrap_or(prog);
    let rest = rest.trim();
    if base == "env" {
        let mut parts = rest.split_whitespace();
        return match parts.next() {
            Some(s) if s.starts_with("-S") => {
                let first = s.strip_prefix("-S").filter(|w| !w.is_empty());
                let words: Vec<String> = first.into_iter().chain(parts).map(String::from).collect();
                if words.is_empty() {
                    vec!["sh".to_string()]
                } else {
                    words
                }
            }
            Some(s) if !s.starts_with('-') => vec![s.to_string()],
            _ => vec![
                parts
                    .find(|p| !p.starts_with('-'))
                    .unwrap_or("sh")
                    .to_string(),
            ],
        };
    }
    let mut cmd = vec![base.to_string()];
    if !rest.is_empty() {
        cmd.push(rest.to_string());
    }
    cmd
}

impl Shell {
    /// What running builtin `name` comes to: in a non-interactive POSIX shell, a special
    /// builtin's usage error (status 2; not `eval`'s or `.`'s, which are their input's) or
    /// an error it marked fatal ([`Shell::special_failed`]) ends the shell, as in bash.
    fn special_outcome(&mut self, name: &str, r: Exec<i32>) -> Exec<i32> {
        let failed = std::mem::take(&mut self.special_failed);
        if !self.opts.posix || self.interactive || !is_special_builtin(name) {
            return r;
        }
        match r {
            Ok(status) if failed || (status == 2 && !matches!(name, "eval" | "." | "source")) => {
                Err(Flow::Exit(status))
            }
            r => r,
        }
    }
}

/// The POSIX special builtins: a syntax error in one ends a POSIX shell, and assignments
/// before one outlive it in POSIX mode.
pub(crate) fn is_special_builtin(name: &str) -> bool {
    matches!(
        name,
        "break"
            | ":"
            | "."
            | "continue"
            | "eval"
            | "exec"
            | "exit"
            | "export"
            | "readonly"
            | "return"
            | "set"
            | "shift"
            | "source"
            | "times"
            | "trap"
            | "unset"
    )
}

/// The variables `export`, `readonly` (or `declare`/`typeset` with `-x` or `-r`) give an
/// attribute to in `args`: a temporary assignment to one of them outlives the command.
fn attribute_names(name: &str, args: &[String]) -> Vec<String> {
    let flags = || {
        args.iter()
            .take_while(|a| a.starts_with(['-', '+']) && *a != "--")
    };
    let applies = match name {
        "export" | "readonly" => !flags().any(|a| a.contains('n') || a.contains('f')),
        "declare" | "typeset" => {
            flags().any(|a| a.starts_with('-') && (a.contains('x') || a.contains('r')))
                && !flags().any(|a| a.starts_with('+') || a.contains('f'))
        }
        _ => false,
    };
    if !applies {
        return Vec::new();
    }
    args.iter()
        .filter(|a| !a.starts_with(['-', '+']))
        .map(|a| {
            let end = a.find(['=', '[', '+']).unwrap_or(a.len());
            a[..end].to_string()
        })
        .collect()
}

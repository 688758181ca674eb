//! The interpreter: one method per AST node.
//!
//! Every method returns [`Exec`]: `Ok(status)`, or a [`Flow`] that unwinds to the construct
//! that handles it (`break` to its loop, `return` to its function, `exit` to the shell).
//!
//! `&` runs the command as a background job (`background`, and [`super::jobs`]).
//!
//! # Layout
//!
//! - this file: lists, `&&`/`||`, pipelines, one command, redirections around it.
//! - `compound`: groups, subshells, loops, `if`, `case`.
//! - `simple`: a simple command's words, assignments and tracing.
//! - `run`: what a name runs: function, builtin, registry command, nested shell, script.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use brush_parser::ast::{
    self, AndOr, Assignment, AssignmentName, AssignmentValue, CaseItemPostAction, Command,
    CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoRedirect, Pipeline,
    SeparatorOperator, SimpleCommand,
};
use forkbox_commands::{Context, FsError, fs};

use super::error::ShellError;
use super::expand::shell_quote;
use super::redirect::{self, Closer, Fds};
use super::{
    CALLS_PER_TASK, MAX_CALL_DEPTH, MAX_SCRIPT, Shell, ShellConfig, Stdio, Value, YIELD_EVERY,
    builtins, on_fresh_task,
};

mod background;
mod compound;
mod run;
mod select;
mod simple;
mod timed;

pub(crate) use run::{is_special_builtin, shebang_command};
pub(crate) use select::SELECT_MARK;

/// Non-local control flow unwinding through the interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// `break N`: N loops still to leave, and the status the last one ends with (1 after
    /// a count out of range, which leaves every loop).
    Break(usize, i32),
    Continue(usize),
    Return(i32),
    /// `exit N` or `set -e`: ends the (sub)shell.
    Exit(i32),
    /// A fatal error or cancellation: stops the current script (already reported).
    Abort(i32),
    /// An expansion error bash answers by discarding the rest of the current top-level
    /// command (`echo $((1/0)); echo skipped`): unwinds to the script, `eval` or `source`
    /// being read, which goes on with its next command; a subshell ends with it.
    Discard(i32),
}

pub(crate) type Exec<T> = Result<T, Flow>;
type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

enum LoopCtl {
    Next,
    Stop,
    Out(Flow),
}

fn loop_ctl(r: Exec<i32>, status: &mut i32) -> LoopCtl {
    match r {
        Ok(s) => {
            *status = s;
            LoopCtl::Next
        }
        Err(Flow::Break(n, s)) => {
            if n > 1 {
                LoopCtl::Out(Flow::Break(n - 1, s))
            } else {
                *status = s;
                LoopCtl::Stop
            }
        }
        Err(Flow::Continue(n)) => {
            if n > 1 {
                LoopCtl::Out(Flow::Continue(n - 1))
            } else {
                *status = 0;
                LoopCtl::Next
            }
        }
        Err(f) => LoopCtl::Out(f),
    }
}

/// A pipeline stage's status: 130 when it ended after Ctrl-C or a `signal` request
/// interrupted the command, as SIGINT reaches every process of bash's foreground pipeline
/// (`cat` reading an interrupted writer sees end-of-file before it could see the signal).
fn interrupted_or(cancel: &tokio_util::sync::CancellationToken, status: i32) -> i32 {
    if cancel.is_cancelled() {
        forkbox_commands::STATUS_INTERRUPTED
    } else {
        status
    }
}

/// The status a subshell ends with, whatever flow ended it.
pub(crate) fn flow_status(r: Exec<i32>, last: i32) -> i32 {
    match r {
        Ok(s) => s,
        Err(Flow::Exit(s) | Flow::Abort(s) | Flow::Return(s) | Flow::Discard(s)) => s,
        Err(Flow::Break(..) | Flow::Continue(_)) => last,
    }
}

impl Shell {
    /// Runs a parsed program, catching every flow: the status it ends with.
    pub(crate) async fn run_program(
        &mut self,
        program: &ast::Program,
        read: Option<&str>,
        fds: &Fds,
    ) -> i32 {
        let r = self.exec_program(program, read, fds).await;
        let aborted = matches!(r, Err(Flow::Abort(_)));
        let status = match r {
            Ok(s) => s,
            Err(Flow::Exit(s)) => {
                if !self.is_subshell {
                    self.exit_requested = Some(s);
                }
                s
            }
            Err(Flow::Abort(s)) => {
                if !self.is_subshell && !self.interactive {
                    self.exit_requested = Some(s);
                }
                s
            }
            Err(Flow::Return(s) | Flow::Discard(s)) => s,
            Err(Flow::Break(..) | Flow::Continue(_)) => self.last_status,
        };
        if !aborted {
            // The program ended otherwise than abandoned: no limit ended it.
            self.limit_abort = None;
        }
        self.last_status = status;
        status
    }

    /// Runs a parsed program, letting flows through (for `eval` and `source`). `read` is
    /// the text it was parsed from when that is input the shell reads (the script, an
    /// `eval` string, a sourced file): `set -v` shows its lines as they are reached.
    pub(crate) async fn exec_program(
        &mut self,
        program: &ast::Program,
        read: Option<&str>,
        fds: &Fds,
    ) -> Exec<i32> {
        let mut status = 0;
        let mut echo = read.map(super::lines::ReadEcho::new);
        let total = program.complete_commands.len();
        for (i, cc) in program.complete_commands.iter().enumerate() {
            self.echo_read(echo.as_mut(), i, total, fds).await;
            self.lines.next_unit();
            // bash reads (and decodes `$'…'` in) one command at a time.
            self.read_byte_locale = self.byte_locale();
            status = match self.exec_list(cc, fds).await {
                // In a subshell the error ends the subshell, even inside its `eval`.
                Err(Flow::Discard(s)) if !self.is_subshell => {
                    self.last_status = s;
                    s
                }
                r => r?,
            };
        }
        self.echo_read(echo.as_mut(), total, total, fds).await;
        Ok(status)
    }

    /// `set -v`: shows the input lines read before complete command `i` of `total`.
    async fn echo_read(
        &mut self,
        echo: Option<&mut super::lines::ReadEcho<'_>>,
        i: usize,
        total: usize,
        fds: &Fds,
    ) {
        if let Some(echo) = echo.filter(|_| self.opts.verbose) {
            let shown = echo.before(i, total);
            if !shown.is_empty() {
                let _ = fds.stderr().write_str(&shown).await;
            }
        }
    }

    pub(crate) fn exec_list<'a>(
        &'a mut self,
        list: &'a CompoundList,
        fds: &'a Fds,
    ) -> BoxFut<'a, Exec<i32>> {
        Box::pin(async move {
            let mut status = 0;
            let mut newer: Option<Fds> = None;
            for item in &list.0 {
                // A newer `exec` table replaces this list's descriptors from here on.
                if let Some(x) = &self.exec_fds
                    && x.generation > newer.as_ref().unwrap_or(fds).generation
                {
                    newer = Some(x.clone());
                }
                let fds = newer.as_ref().unwrap_or(fds);
                status = if matches!(item.1, SeparatorOperator::Async) {
                    self.spawn_job(&item.0, fds).await?
                } else {
                    self.exec_and_or(&item.0, fds).await?
                };
            }
            Ok(status)
        })
    }

    pub(crate) async fn exec_and_or(&mut self, list: &ast::AndOrList, fds: &Fds) -> Exec<i32> {
        let n = list.additional.len();
        let mut status;
        if n > 0 {
            self.errexit_suppressed += 1;
        }
        let first = self.exec_pipeline(&list.first, fds).await;
        if n > 0 {
            self.errexit_suppressed -= 1;
        }
        status = first?;
        let mut last_ran: Option<&Pipeline> = Some(&list.first);
        for (i, ao) in list.additional.iter().enumerate() {
            let (run, p) = match ao {
                AndOr::And(p) => (status == 0, p),
                AndOr::Or(p) => (status != 0, p),
            };
            if !run {
                last_ran = None;
                continue;
            }
            let is_last = i + 1 == n;
            if !is_last {
                self.errexit_suppressed += 1;
            }
            let r = self.exec_pipeline(p, fds).await;
            if !is_last {
                self.errexit_suppressed -= 1;
            }
            status = r?;
            last_ran = if is_last { Some(p) } else { None };
        }
        if n > 0 && last_ran.is_some_and(|p| std::ptr::eq(p, &list.first)) {
            last_ran = None;
        }
        if status != 0
            && self.errexit_suppressed == 0
            && (n == 0 || last_ran.is_some())
            && !last_ran.unwrap_or(&list.first).bang
        {
            self.run_err_trap(fds).await?;
            if self.opts.errexit {
                return Err(Flow::Exit(status));
            }
        }
        Ok(status)
    }

    async fn exec_pipeline(&mut self, p: &Pipeline, fds: &Fds) -> Exec<i32> {
        // Only a timed pipeline reads the clock.
        let started = p.timed.as_ref().map(|_| std::time::Instant::now());
        if p.bang {
            self.errexit_suppressed += 1;
        }
        let r = self.exec_pipeline_inner(p, fds).await;
        // What the pipeline wrote to files `exec` holds open is in them before the next
        // command looks.
        self.sync_exec_files().await;
        if p.bang {
            self.errexit_suppressed -= 1;
        }
        let mut status = r?;
        if p.bang {
            status = i32::from(status == 0);
        }
        if let (Some(t), Some(started)) = (&p.timed, started) {
            let secs = started.elapsed().as_secs_f64();
            let format = self.get_str("TIMEFORMAT");
            if let Some(line) = timed::report(format.as_deref(), t.is_posix_output(), secs) {
                let _ = fds.stderr().write_str(&line).await;
            }
        }
        self.last_status = status;
        Ok(status)
    }

    async fn exec_pipeline_inner(&mut self, p: &Pipeline, fds: &Fds) -> Exec<i32> {
        if p.seq.len() == 1 {
            let status = self.exec_command(&p.seq[0], fds).await?;
            self.pipestatus.clear();
            self.pipestatus.push(status);
            return Ok(status);
        }
        let n = p.seq.len();
        let mut stage_fds = Vec::with_capacity(n);
        let mut next_in = None;
        for i in 0..n {
            let mut f = fds.clone();
            if let Some(input) = next_in.take() {
                f = f.with_stdin(input);
            }
            if i + 1 < n {
                let (out, input) = forkbox_commands::pipe_in(&self.budget);
                f = f.with_stdout(out);
                next_in = Some(input);
            }
            stage_fds.push(f);
        }
        // `shopt -s lastpipe` without job control: the last stage runs in this shell, so
        // `echo x | read v` sets v.
        let last = if self.shopts.on("lastpipe") && !self.job_control() {
            stage_fds.pop()
        } else {
            None
        };
        let mut futs = Vec::with_capacity(n);
        for (cmd, f) in p.seq.iter().zip(stage_fds) {
            // bash runs the DEBUG trap for each simple command of a pipeline in the shell
            // itself, before the stage starts (the stage's subshell has no DEBUG trap).
            if let Command::Simple(sc) = cmd
                && self.in_trap == 0
                && !self.functrace()
                && self.traps.contains_key(&super::jobs::TRAP_DEBUG)
            {
                self.bash_command = super::printer::simple_command(sc);
                self.run_debug_trap(fds).await?;
            } else if let Command::Simple(sc) = cmd
                && self.in_trap == 0
                && !self.traps.is_empty()
            {
                // This shell starts each stage: an ERR trap after the pipeline sees the
                // last stage's command, as in bash.
                self.bash_command = super::printer::simple_command(sc);
            }
            let mut sub = match self.subshell() {
                Ok(sub) => sub,
                Err(e) => return self.fail(e, fds).await,
            };
            // A stage is one `$BASH_SUBSHELL` level down only once it runs: a simple
            // command when its command starts (see `stage_level_pending`), a `( )` by
            // itself (its shell is the stage's).
            match cmd {
                Command::Simple(_) => {
                    sub.subshell_level -= 1;
                    sub.stage_level_pending = true;
                }
                Command::Compound(ast::CompoundCommand::Subshell(_), _) => {
                    sub.subshell_level -= 1;
                    sub.loop_depth = 0;
                }
                // A compound stage starts outside any loop (`break` there is only a
                // warning); a simple command's stage keeps the loops around it, as bash's.
                _ => sub.loop_depth = 0,
            }
            futs.push(async move {
                let r = sub.exec_command(cmd, &f).await;
                let status = flow_status(r, sub.last_status);
                let status = sub.run_exit_trap(status, &f).await;
                drop(f);
                interrupted_or(&sub.cancel, status)
            });
        }
        self.pipeline_in_flight = Some(n);
        let statuses = match (last, p.seq.last()) {
            (Some(f), Some(cmd)) => {
                let (mut statuses, r) = futures::future::join(
                    futures::future::join_all(futs),
                    self.exec_command(cmd, &f),
                )
                .await;
                drop(f);
                // The last stage is this shell: its `exit`, `return` or `break` leaves
                // what this shell is running, as in bash.
                if r.is_err() {
                    self.pipeline_in_flight = None;
                }
                statuses.push(interrupted_or(&self.cancel, r?));
                statuses
            }
            _ => futures::future::join_all(futs).await,
        };
        let status = if self.opts.pipefail {
            statuses
                .iter()
                .rev()
                .find(|s| **s != 0)
                .copied()
                .unwrap_or(0)
        } else {
            statuses.last().copied().unwrap_or(0)
        };
        self.pipestatus = statuses;
        self.pipeline_in_flight = None;
        if self.cancel.is_cancelled() {
            return Err(Flow::Abort(forkbox_commands::STATUS_INTERRUPTED));
        }
        Ok(status)
    }

    /// Runs one command (simple, compound, function definition or `[[ ]]`).
    pub(crate) fn exec_command<'a>(
        &'a mut self,
        cmd: &'a Command,
        fds: &'a Fds,
    ) -> BoxFut<'a, Exec<i32>> {
        super::grow(Box::pin(async move {
            self.steps += 1;
            if self.steps.is_multiple_of(YIELD_EVERY) {
                self.budget.pace().await;
            }
            if self.cancel.is_cancelled() {
                return Err(Flow::Abort(forkbox_commands::STATUS_INTERRUPTED));
            }
            if self.opts.noexec && !self.interactive {
                // `set -n`: read, not run (an interactive shell ignores it, like bash).
                return Ok(0);
            }
            if self.in_trap == 0
                && !self.traps.is_empty()
                && matches!(
                    cmd,
                    Command::ExtendedTest(..)
                        | Command::Compound(
                            CompoundCommand::Subshell(_) | CompoundCommand::Arithmetic(_),
                            _
                        )
                )
            {
                self.bash_command = super::printer::command_line(cmd);
                if !matches!(cmd, Command::Compound(CompoundCommand::Subshell(_), _)) {
                    // bash runs the DEBUG trap before `[[ ]]` and `(( ))` as before a
                    // simple command (and `extdebug` may skip them too).
                    if self.run_debug_trap(fds).await? {
                        return Ok(0);
                    }
                }
            }
            let status = match cmd {
                Command::Simple(sc) => self.exec_simple(sc, fds).await?,
                // Without redirections the compound runs on these descriptors as they are
                // (no copy of the table per loop or group).
                Command::Compound(cc, None) => self.exec_compound(cc, fds).await?,
                Command::Compound(cc, redirs) => {
                    let rs: Vec<&IoRedirect> = redirs.iter().flat_map(|r| r.0.iter()).collect();
                    // A failed redirection's message names the compound's last line, where
                    // bash's reader was when it ran it.
                    let saved = self.lines.lineno;
                    if let Some(loc) = brush_parser::ast::SourceLocation::location(cc) {
                        self.lines.lineno = self.lines.line_base + loc.end.line;
                    }
                    let begun = self.begin_redirects_keeping_named(&rs, fds).await;
                    let (f, closers, kept, keep) = match begun {
                        Ok(x) => x,
                        Err(r) => return r,
                    };
                    self.lines.lineno = saved;
                    let r = self.exec_compound(cc, &f).await;
                    // `{ …; } {fd}>file`: the descriptor stays open in the shell.
                    if !keep.is_empty() {
                        self.keep_fds(&f, &keep, kept, fds);
                    }
                    self.end_redirects(f, closers, r, fds).await?
                }
                Command::Function(def) => {
                    if self.readonly_functions.contains(&def.fname.value) {
                        // Named at the definition's last line, as bash does.
                        if let Some(loc) = brush_parser::ast::SourceLocation::location(def) {
                            self.lines.lineno = self.lines.line_base + loc.end.line;
                        }
                        let e = ShellError::ReadonlyFunction(def.fname.value.clone());
                        return self.fail(e, fds).await;
                    }
                    if let Some(why) = self.posix_bad_function_name(&def.fname.value) {
                        if let Some(loc) = brush_parser::ast::SourceLocation::location(def) {
                            self.lines.lineno = self.lines.line_base + loc.end.line;
                        }
                        self.report(&fds.stderr(), &ShellError::Builtin(why)).await;
                        let status = 2;
                        self.last_status = status;
                        // A non-interactive POSIX shell ends there, as bash's does.
                        return if self.interactive {
                            Ok(status)
                        } else {
                            Err(Flow::Abort(status))
                        };
                    }
                    self.functions
                        .insert(def.fname.value.clone(), Arc::new(def.clone()));
                    let mut origin = self.lines.origin_here();
                    // A definition run by a function was read with that function's body.
                    if !self.alias_table().is_empty() {
                        let on = self.lines.read_aliases.is_some()
                            || self.interactive
                            || self.shopts.on("expand_aliases");
                        origin.aliases = Some(Arc::new(if on {
                            self.alias_table().clone()
                        } else {
                            Default::default()
                        }));
                    }
                    self.lines.functions.insert(def.fname.value.clone(), origin);
                    // `set -a` exports functions as they are defined too.
                    if self.opts.allexport {
                        self.exported_functions.insert(def.fname.value.clone());
                    }
                    0
                }
                Command::ExtendedTest(test, redirs) => {
                    self.lines.lineno = self.lines.line_base + test.loc.start.line;
                    let rs: Vec<&IoRedirect> = redirs.iter().flat_map(|r| r.0.iter()).collect();
                    let (f, closers) = match self.begin_redirects(&rs, fds).await {
                        Ok(x) => x,
                        Err(r) => return r,
                    };
                    let r = match self.eval_ext_test(&test.expr, &f).await {
                        Ok(true) => Ok(0),
                        Ok(false) => Ok(1),
                        // bash says nothing about a regular expression it cannot compile.
                        Err(ShellError::BadRegex(_)) => Ok(2),
                        Err(e) => self.fail(e, &f).await,
                    };
                    self.end_redirects(f, closers, r, fds).await?
                }
            };
            self.last_status = status;
            self.check_signals(fds).await?;
            Ok(status)
        }))
    }

    /// In POSIX mode, why `name` cannot be a function's (bash's message): not a valid
    /// identifier, or a special builtin's name.
    fn posix_bad_function_name(&self, name: &str) -> Option<String> {
        if !self.opts.posix {
            None
        } else if !super::builtins::is_name(name) {
            Some(format!("`{name}': not a valid identifier"))
        } else if run::is_special_builtin(name) {
            Some(format!("`{name}': is a special builtin"))
        } else {
            None
        }
    }

    /// Applies redirections to a copy of `fds`; on failure, the status to give instead.
    pub(crate) async fn begin_redirects(
        &mut self,
        redirs: &[&IoRedirect],
        fds: &Fds,
    ) -> Result<(Fds, Vec<Closer>), Exec<i32>> {
        // No descriptor stays open past the command: nothing is kept apart.
        let (out, closers, _) = self.begin_redirects_keeping(redirs, &[], fds).await?;
        Ok((out, closers))
    }

    /// Drops the command's descriptors and waits for redirected files to be closed: a
    /// failure to write or close one makes the status 1.
    pub(crate) async fn end_redirects(
        &mut self,
        cmd_fds: Fds,
        closers: Vec<Closer>,
        r: Exec<i32>,
        fds: &Fds,
    ) -> Exec<i32> {
        drop(cmd_fds);
        if closers.is_empty() {
            return r;
        }
        let ok = redirect::finish(closers, &fds.stderr(), self).await;
        let status = r?;
        Ok(if ok { status } else { 1 })
    }

    /// Reports an interpreter error: its status, or an abort if it is fatal.
    pub(crate) async fn fail(&mut self, e: ShellError, fds: &Fds) -> Exec<i32> {
        if !self.is_subshell {
            // A session limit abandons the script, unless something catches the abort
            // ([`Shell::run_program`] keeps only an abort that ended the program): its
            // channel then reports it as killed.
            self.limit_abort = matches!(
                e,
                ShellError::TooManyTasks(_) | ShellError::OutOfMemory { .. }
            )
            .then(|| e.to_string());
        }
        if matches!(e, ShellError::TooManyTasks(_)) && !self.budget.first_refusal() {
            // Every branch of a fork bomb is refused; one message says it.
            self.last_status = e.status();
            return Err(Flow::Abort(e.status()));
        }
        crate::telemetry::metrics::shell_error(&e);
        let mut status = self.report(&fds.stderr(), &e).await;
        if (self.is_subshell || self.reads_input)
            && matches!(e, ShellError::Unbound(_) | ShellError::ParamError { .. })
        {
            // bash exits a subshell, or a script read from a file, with 1 where the `-c`
            // string would give 127.
            status = 1;
        }
        self.last_status = status;
        if self.opts.posix
            && !self.interactive
            && matches!(
                e,
                ShellError::BadSubstitution(_) | ShellError::Arithmetic { .. }
            )
        {
            // POSIX mode: an expansion error ends a non-interactive shell (bash: 127).
            self.last_status = 127;
            Err(Flow::Abort(127))
        } else if e.discards_command() {
            Err(Flow::Discard(status))
        } else if e.is_fatal() {
            Err(Flow::Abort(status))
        } else {
            Ok(status)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::{run, run_on, shell, var};

    #[test]
    fn shebang_lines() {
        let cmd = |t: &str| super::shebang_command(t);
        assert_eq!(cmd("echo hi\n"), ["sh"]);
        assert_eq!(cmd("#!/bin/bash\n"), ["bash"]);
        assert_eq!(cmd("#!/usr/bin/awk -f\nBEGIN {}\n"), ["awk", "-f"]);
        assert_eq!(cmd("#! /bin/sh -e -u \n"), ["sh", "-e -u"]);
        assert_eq!(cmd("#!/usr/bin/env python3\n"), ["python3"]);
        assert_eq!(cmd("#!/usr/bin/env -S awk -f\n"), ["awk", "-f"]);
        assert_eq!(cmd("#!/usr/bin/env -i sed\n"), ["sed"]);
    }

    #[tokio::test]
    async fn and_or_lists() {
        let script = "true && echo a || echo b; false && echo c || echo d; false || false && echo e; echo $?";
        let expected = (0, "a\nd\n1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn semicolon_list_status_is_last() {
        let script = "false; true; echo $?; true; false; echo $?";
        let expected = (0, "0\n1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn pipeline_status_is_last_stage() {
        let script = "false | true; echo $?; true | false; echo $?";
        let expected = (0, "0\n1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn pipestatus_collects_every_stage() {
        let script = "true | false | (exit 3); echo ${PIPESTATUS[@]}";
        let expected = (0, "0 1 3\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn pipestatus_of_a_simple_command() {
        let script = "(exit 2); echo ${PIPESTATUS[@]}";
        let expected = (0, "2\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn pipefail_takes_last_failure() {
        let script = "set -o pipefail; (exit 2) | (exit 3) | true; echo $?; true | true; echo $?";
        let expected = (0, "3\n0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn bang_negates() {
        let script = "! true; echo $?; ! false; echo $?; ! false | true; echo $?";
        let expected = (0, "1\n0\n1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn pipeline_passes_data() {
        let script = "printf 'b\\na\\n' | sort | head -1";
        let expected = (0, "a\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn pipeline_stages_are_subshells() {
        let script = "x=1; echo 2 | read x; echo $x";
        let expected = (0, "1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn if_elif_else() {
        let script = "for v in 1 2 3; do if [ $v = 1 ]; then echo one; elif [ $v = 2 ]; then echo two; else echo other; fi; done";
        let expected = (0, "one\ntwo\nother\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn if_status_without_branch_is_zero() {
        let script = "if false; then :; fi; echo $?";
        let expected = (0, "0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn while_and_until() {
        let script = "i=0; while [ $i -lt 2 ]; do echo w$i; i=$((i+1)); done; until [ $i = 0 ]; do echo u$i; i=$((i-1)); done";
        let expected = (0, "w0\nw1\nu2\nu1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn for_over_words_and_positionals() {
        let script = "set -- p q; for a in x y; do echo $a; done; for b; do echo $b; done";
        let expected = (0, "x\ny\np\nq\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn arith_for() {
        let script = "for ((i=0; i<3; i++)); do echo $i; done";
        let expected = (0, "0\n1\n2\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn brace_group_runs_in_current_shell() {
        let script = "{ x=1; echo in; }; echo $x";
        let expected = (0, "in\n1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn subshell_is_isolated() {
        let script = "x=1; (x=2; cd /tmp 2>/dev/null; echo $x); echo $x; pwd";
        let expected = (0, "2\n1\n/\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn subshell_exit_status() {
        let script = "(false); echo $?; (exit 9); echo $?";
        let expected = (0, "1\n9\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn function_args_and_return() {
        let script = "f() { echo $# $1; return 5; }; f a b; echo $?";
        let expected = (0, "2 a\n5\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn function_locals_restored() {
        let script = "x=g; f() { local x=l; g; }; g() { echo $x; }; f; echo $x";
        let expected = (0, "l\ng\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn function_recursion() {
        let script = "fact() { if [ $1 -le 1 ]; then echo 1; else echo $(( $1 * $(fact $(( $1 - 1 ))) )); fi; }; fact 5";
        let expected = (0, "120\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn function_positional_restored() {
        let script = "set -- a; f() { echo $1; }; f b; echo $1";
        let expected = (0, "b\na\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn errexit_stops_on_failure() {
        let script = "set -e; echo a; false; echo b";
        let expected = (1, "a\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn errexit_ignores_conditions() {
        let script = "set -e; if false; then :; fi; false || true; ! false; while false; do :; done; false && true; echo survived";
        let expected = (0, "survived\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn errexit_in_pipeline_last_stage() {
        let script = "set -e; false | true; echo a; true | false; echo b";
        let expected = (1, "a\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn errexit_in_function_with_or() {
        let script = "set -e; f() { false; echo inside; }; f || echo caught; echo end";
        let expected = (0, "inside\nend\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn errexit_subshell() {
        let script = "set -e; (false; echo no); echo after";
        let expected = (1, "".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn command_not_found_127() {
        let script = "nope_cmd; echo $?";
        let expected = (
            0,
            "127\n".to_string(),
            "bash: line 1: nope_cmd: command not found\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn assignment_only_command_status() {
        let script = "x=$(exit 3); echo $?";
        let expected = (0, "3\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn prefix_assignment_is_temporary() {
        let script = "x=1; x=2 env | grep '^x='; echo $x";
        let expected = (0, "x=2\n1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn arith_command_status() {
        let script = "(( 0 )); echo $?; (( 2 )); echo $?";
        let expected = (0, "1\n0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn cond_command() {
        let script = "[[ abc == a* ]]; echo $?; [[ -z x ]]; echo $?";
        let expected = (0, "0\n1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn nested_function_definition() {
        let script = "outer() { inner() { echo inner; }; }; outer; inner";
        let expected = (0, "inner\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn loop_body_status() {
        let script = "for i in 1; do false; done; echo $?; for i in; do false; done; echo $?";
        let expected = (0, "1\n0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn subshell_changes_do_not_reach_the_parent() {
        let mut sh = shell();
        run_on(&mut sh, "x=1; (x=2; y=3; f() { :; }); echo | z=4").await;
        assert_eq!(var(&sh, "x").as_deref(), Some("1"));
        assert_eq!(var(&sh, "y"), None);
        assert_eq!(var(&sh, "z"), None);
        assert!(!sh.functions.contains_key("f"));
    }

    #[tokio::test]
    async fn function_locals_are_gone_after_return() {
        let mut sh = shell();
        run_on(&mut sh, "f() { local a=1; b=2; }; f").await;
        assert_eq!(var(&sh, "a"), None);
        assert_eq!(var(&sh, "b").as_deref(), Some("2"));
        assert!(sh.local_frames.is_empty());
    }
}

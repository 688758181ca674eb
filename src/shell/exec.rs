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
use super::pattern::Pattern;
use super::redirect::{self, Closer, Fds};
use super::{
    CALLS_PER_TASK, MAX_CALL_DEPTH, MAX_SCRIPT, Shell, ShellConfig, Stdio, Value, YIELD_EVERY,
    builtins, on_fresh_task,
};

mod background;
mod compound;
mod run;
mod simple;
mod timed;

/// Non-local control flow unwinding through the interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// `break N`: N loops still to leave.
    Break(usize),
    Continue(usize),
    Return(i32),
    /// `exit N` or `set -e`: ends the (sub)shell.
    Exit(i32),
    /// A fatal error or cancellation: stops the current script (already reported).
    Abort(i32),
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
        Err(Flow::Break(n)) => {
            if n > 1 {
                LoopCtl::Out(Flow::Break(n - 1))
            } else {
                *status = 0;
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

/// The status a subshell ends with, whatever flow ended it.
pub(crate) fn flow_status(r: Exec<i32>, last: i32) -> i32 {
    match r {
        Ok(s) => s,
        Err(Flow::Exit(s) | Flow::Abort(s) | Flow::Return(s)) => s,
        Err(Flow::Break(_) | Flow::Continue(_)) => last,
    }
}

impl Shell {
    /// Runs a parsed program, catching every flow: the status it ends with.
    pub(crate) async fn run_program(&mut self, program: &ast::Program, fds: &Fds) -> i32 {
        let r = self.exec_program(program, fds).await;
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
            Err(Flow::Return(s)) => s,
            Err(Flow::Break(_) | Flow::Continue(_)) => self.last_status,
        };
        self.last_status = status;
        status
    }

    /// Runs a parsed program, letting flows through (for `eval` and `source`).
    pub(crate) async fn exec_program(&mut self, program: &ast::Program, fds: &Fds) -> Exec<i32> {
        let mut status = 0;
        for cc in &program.complete_commands {
            status = self.exec_list(cc, fds).await?;
        }
        Ok(status)
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
        let started = std::time::Instant::now();
        if p.bang {
            self.errexit_suppressed += 1;
        }
        let r = self.exec_pipeline_inner(p, fds).await;
        if p.bang {
            self.errexit_suppressed -= 1;
        }
        let mut status = r?;
        if p.bang {
            status = i32::from(status == 0);
        }
        if let Some(t) = &p.timed {
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
            self.pipestatus = vec![status];
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
        let mut futs = Vec::with_capacity(n);
        for (cmd, f) in p.seq.iter().zip(stage_fds) {
            let mut sub = match self.subshell() {
                Ok(sub) => sub,
                Err(e) => return self.fail(e, fds).await,
            };
            futs.push(async move {
                let r = sub.exec_command(cmd, &f).await;
                let status = flow_status(r, sub.last_status);
                let status = sub.run_exit_trap(status, &f).await;
                drop(f);
                status
            });
        }
        let statuses = futures::future::join_all(futs).await;
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
                tokio::task::yield_now().await;
            }
            if self.cancel.is_cancelled() {
                return Err(Flow::Abort(forkbox_commands::STATUS_INTERRUPTED));
            }
            if self.opts.noexec && !self.interactive {
                // `set -n`: read, not run (an interactive shell ignores it, like bash).
                return Ok(0);
            }
            let status = match cmd {
                Command::Simple(sc) => self.exec_simple(sc, fds).await?,
                Command::Compound(cc, redirs) => {
                    let rs: Vec<&IoRedirect> = redirs.iter().flat_map(|r| r.0.iter()).collect();
                    let (f, closers) = match self.begin_redirects(&rs, fds).await {
                        Ok(x) => x,
                        Err(r) => return r,
                    };
                    let r = self.exec_compound(cc, &f).await;
                    self.end_redirects(f, closers, r, fds).await?
                }
                Command::Function(def) => {
                    self.functions
                        .insert(def.fname.value.clone(), Arc::new(def.clone()));
                    0
                }
                Command::ExtendedTest(test, redirs) => {
                    let rs: Vec<&IoRedirect> = redirs.iter().flat_map(|r| r.0.iter()).collect();
                    let (f, closers) = match self.begin_redirects(&rs, fds).await {
                        Ok(x) => x,
                        Err(r) => return r,
                    };
                    let r = match self.eval_ext_test(&test.expr, &f).await {
                        Ok(true) => Ok(0),
                        Ok(false) => Ok(1),
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

    /// Applies redirections to a copy of `fds`; on failure, the status to give instead.
    pub(crate) async fn begin_redirects(
        &mut self,
        redirs: &[&IoRedirect],
        fds: &Fds,
    ) -> Result<(Fds, Vec<Closer>), Exec<i32>> {
        let mut closers: Vec<Closer> = Vec::new();
        match self.apply_redirects(redirs, fds, &mut closers).await {
            Ok(f) => Ok((f, closers)),
            Err(e) => {
                redirect::finish(closers, &fds.stderr(), self).await;
                Err(self.fail(e, fds).await)
            }
        }
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
        if matches!(e, ShellError::TooManyTasks(_)) && !self.budget.first_refusal() {
            // Every branch of a fork bomb is refused; one message says it.
            self.last_status = e.status();
            return Err(Flow::Abort(e.status()));
        }
        let status = self.report(&fds.stderr(), &e).await;
        self.last_status = status;
        if e.is_fatal() {
            Err(Flow::Abort(status))
        } else {
            Ok(status)
        }
    }
}

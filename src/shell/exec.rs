//! The interpreter: one method per AST node.
//!
//! Every method returns [`Exec`]: `Ok(status)`, or a [`Flow`] that unwinds to the construct
//! that handles it (`break` to its loop, `return` to its function, `exit` to the shell).
//!
//! `&` (background) is not job control here: the command runs in the foreground and the
//! list goes on when it is done, so `cmd & wait` gives the same output as in bash, only
//! without the parallelism. `$!` stays unset.

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
    builtins, next_index, on_fresh_task,
};

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
fn flow_status(r: Exec<i32>, last: i32) -> i32 {
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
            for item in &list.0 {
                // `&`: see the module doc — run in the foreground.
                let _ = matches!(item.1, SeparatorOperator::Async);
                status = self.exec_and_or(&item.0, fds).await?;
            }
            Ok(status)
        })
    }

    async fn exec_and_or(&mut self, list: &ast::AndOrList, fds: &Fds) -> Exec<i32> {
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
            && self.opts.errexit
            && self.errexit_suppressed == 0
            && (n == 0 || last_ran.is_some())
            && !last_ran.unwrap_or(&list.first).bang
        {
            return Err(Flow::Exit(status));
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
        if p.timed.is_some() {
            let secs = started.elapsed().as_secs_f64();
            let line = format!(
                "\nreal\t{}m{:.3}s\nuser\t0m0.000s\nsys\t0m0.000s\n",
                (secs / 60.0).floor(),
                secs % 60.0
            );
            let _ = fds.stderr().write_str(&line).await;
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
                let (out, input) = forkbox_commands::pipe();
                f = f.with_stdout(out);
                next_in = Some(input);
            }
            stage_fds.push(f);
        }
        let mut futs = Vec::with_capacity(n);
        for (cmd, f) in p.seq.iter().zip(stage_fds) {
            let mut sub = self.subshell();
            futs.push(async move {
                let r = sub.exec_command(cmd, &f).await;
                drop(f);
                flow_status(r, sub.last_status)
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
        Box::pin(async move {
            self.steps += 1;
            if self.steps.is_multiple_of(YIELD_EVERY) {
                tokio::task::yield_now().await;
            }
            if self.cancel.is_cancelled() {
                return Err(Flow::Abort(forkbox_commands::STATUS_INTERRUPTED));
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
            Ok(status)
        })
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
        let status = self.report(&fds.stderr(), &e).await;
        self.last_status = status;
        if e.is_fatal() {
            Err(Flow::Abort(status))
        } else {
            Ok(status)
        }
    }

    fn exec_compound<'a>(
        &'a mut self,
        cc: &'a CompoundCommand,
        fds: &'a Fds,
    ) -> BoxFut<'a, Exec<i32>> {
        Box::pin(async move {
            match cc {
                CompoundCommand::BraceGroup(g) => self.exec_list(&g.list, fds).await,
                CompoundCommand::Subshell(s) => {
                    let mut sub = self.subshell();
                    let r = sub.exec_list(&s.list, fds).await;
                    Ok(flow_status(r, sub.last_status))
                }
                CompoundCommand::ForClause(f) => self.exec_for(f, fds).await,
                CompoundCommand::ArithmeticForClause(f) => self.exec_arith_for(f, fds).await,
                CompoundCommand::WhileClause(w) => self.exec_while(w, true, fds).await,
                CompoundCommand::UntilClause(w) => self.exec_while(w, false, fds).await,
                CompoundCommand::IfClause(i) => self.exec_if(i, fds).await,
                CompoundCommand::CaseClause(c) => self.exec_case(c, fds).await,
                CompoundCommand::Arithmetic(a) => {
                    match self.eval_arith(&a.expr.value, fds, false).await {
                        Ok(v) => Ok(i32::from(v == 0)),
                        Err(e) => self.fail(e, fds).await,
                    }
                }
                CompoundCommand::Coprocess(_) => {
                    self.fail(ShellError::Unsupported("coproc".into()), fds)
                        .await
                }
            }
        })
    }

    async fn loop_tick(&mut self) -> Exec<()> {
        if self.cancel.is_cancelled() {
            return Err(Flow::Abort(forkbox_commands::STATUS_INTERRUPTED));
        }
        tokio::task::yield_now().await;
        Ok(())
    }

    async fn exec_for(&mut self, f: &ast::ForClauseCommand, fds: &Fds) -> Exec<i32> {
        let values = match &f.values {
            None => self.positional.clone(),
            Some(words) => {
                let ws: Vec<&ast::Word> = words.iter().collect();
                match self.expand_words(&ws, fds).await {
                    Ok(v) => v,
                    Err(e) => return self.fail(e, fds).await,
                }
            }
        };
        let mut status = 0;
        self.loop_depth += 1;
        let mut out = Ok(());
        for v in values {
            if let Err(fl) = self.loop_tick().await {
                out = Err(fl);
                break;
            }
            if let Err(e) = self.set_var(&f.variable_name, &v) {
                self.loop_depth -= 1;
                return self.fail(e, fds).await;
            }
            let r = self.exec_list(&f.body.list, fds).await;
            match loop_ctl(r, &mut status) {
                LoopCtl::Next => {}
                LoopCtl::Stop => break,
                LoopCtl::Out(fl) => {
                    out = Err(fl);
                    break;
                }
            }
        }
        self.loop_depth -= 1;
        out.map(|_| status)
    }

    async fn exec_arith_for(
        &mut self,
        f: &ast::ArithmeticForClauseCommand,
        fds: &Fds,
    ) -> Exec<i32> {
        if let Some(init) = &f.initializer
            && let Err(e) = self.eval_arith(&init.value, fds, false).await
        {
            return self.fail(e, fds).await;
        }
        let mut status = 0;
        self.loop_depth += 1;
        let mut out = Ok(());
        loop {
            if let Err(fl) = self.loop_tick().await {
                out = Err(fl);
                break;
            }
            if let Some(cond) = &f.condition {
                match self.eval_arith(&cond.value, fds, false).await {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) => {
                        self.loop_depth -= 1;
                        return self.fail(e, fds).await;
                    }
                }
            }
            let r = self.exec_list(&f.body.list, fds).await;
            match loop_ctl(r, &mut status) {
                LoopCtl::Next => {}
                LoopCtl::Stop => break,
                LoopCtl::Out(fl) => {
                    out = Err(fl);
                    break;
                }
            }
            if let Some(upd) = &f.updater
                && let Err(e) = self.eval_arith(&upd.value, fds, false).await
            {
                self.loop_depth -= 1;
                return self.fail(e, fds).await;
            }
        }
        self.loop_depth -= 1;
        out.map(|_| status)
    }

    async fn exec_while(
        &mut self,
        w: &ast::WhileOrUntilClauseCommand,
        is_while: bool,
        fds: &Fds,
    ) -> Exec<i32> {
        let mut status = 0;
        self.loop_depth += 1;
        let mut out = Ok(());
        loop {
            if let Err(fl) = self.loop_tick().await {
                out = Err(fl);
                break;
            }
            self.errexit_suppressed += 1;
            let c = self.exec_list(&w.0, fds).await;
            self.errexit_suppressed -= 1;
            let c = match c {
                Ok(s) => s,
                Err(fl) => match loop_ctl(Err(fl), &mut status) {
                    LoopCtl::Next => continue,
                    LoopCtl::Stop => break,
                    LoopCtl::Out(fl) => {
                        out = Err(fl);
                        break;
                    }
                },
            };
            if (c == 0) != is_while {
                break;
            }
            let r = self.exec_list(&w.1.list, fds).await;
            match loop_ctl(r, &mut status) {
                LoopCtl::Next => {}
                LoopCtl::Stop => break,
                LoopCtl::Out(fl) => {
                    out = Err(fl);
                    break;
                }
            }
        }
        self.loop_depth -= 1;
        out.map(|_| status)
    }

    async fn exec_cond(&mut self, list: &CompoundList, fds: &Fds) -> Exec<i32> {
        self.errexit_suppressed += 1;
        let r = self.exec_list(list, fds).await;
        self.errexit_suppressed -= 1;
        r
    }

    async fn exec_if(&mut self, i: &ast::IfClauseCommand, fds: &Fds) -> Exec<i32> {
        if self.exec_cond(&i.condition, fds).await? == 0 {
            return self.exec_list(&i.then, fds).await;
        }
        for e in i.elses.iter().flatten() {
            match &e.condition {
                Some(c) => {
                    if self.exec_cond(c, fds).await? == 0 {
                        return self.exec_list(&e.body, fds).await;
                    }
                }
                None => return self.exec_list(&e.body, fds).await,
            }
        }
        Ok(0)
    }

    async fn exec_case(&mut self, c: &ast::CaseClauseCommand, fds: &Fds) -> Exec<i32> {
        let word = match self.expand_no_split(&c.value, fds).await {
            Ok(w) => w,
            Err(e) => return self.fail(e, fds).await,
        };
        let mut status = 0;
        let mut fall_through = false;
        for item in &c.cases {
            let mut hit = fall_through;
            if !hit {
                for p in &item.patterns {
                    let pat = match self.expand_pattern(&p.value, fds).await {
                        Ok(p) => p,
                        Err(e) => return self.fail(e, fds).await,
                    };
                    if Pattern::new(&pat).matches(&word) {
                        hit = true;
                        break;
                    }
                }
            }
            if !hit {
                continue;
            }
            status = match &item.cmd {
                Some(list) => self.exec_list(list, fds).await?,
                None => 0,
            };
            match item.post_action {
                CaseItemPostAction::ExitCase => return Ok(status),
                CaseItemPostAction::UnconditionallyExecuteNextCaseItem => fall_through = true,
                CaseItemPostAction::ContinueEvaluatingCases => fall_through = false,
            }
        }
        Ok(status)
    }

    async fn exec_simple(&mut self, sc: &SimpleCommand, fds: &Fds) -> Exec<i32> {
        let mut assigns: Vec<&Assignment> = Vec::new();
        let mut words: Vec<&ast::Word> = Vec::new();
        let mut redirs: Vec<&IoRedirect> = Vec::new();
        for item in sc.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                CommandPrefixOrSuffixItem::AssignmentWord(a, _) => assigns.push(a),
                CommandPrefixOrSuffixItem::IoRedirect(r) => redirs.push(r),
                CommandPrefixOrSuffixItem::Word(w) => words.push(w),
                CommandPrefixOrSuffixItem::ProcessSubstitution(..) => {
                    return self
                        .fail(ShellError::Unsupported("process substitution".into()), fds)
                        .await;
                }
            }
        }
        if let Some(w) = &sc.word_or_name {
            words.push(w);
        }
        let mut assign_words: Vec<&ast::Word> = Vec::new();
        for item in sc.suffix.iter().flat_map(|p| p.0.iter()) {
            match item {
                CommandPrefixOrSuffixItem::AssignmentWord(_, w) => {
                    assign_words.push(w);
                    words.push(w);
                }
                CommandPrefixOrSuffixItem::Word(w) => words.push(w),
                CommandPrefixOrSuffixItem::IoRedirect(r) => redirs.push(r),
                CommandPrefixOrSuffixItem::ProcessSubstitution(..) => {
                    return self
                        .fail(ShellError::Unsupported("process substitution".into()), fds)
                        .await;
                }
            }
        }
        let subst_before = self.subst_runs;
        // `local x=$1`: declaration builtins take assignment words unsplit, like bash.
        let decl = words.first().is_some_and(|w| {
            matches!(
                w.value.as_str(),
                "export" | "local" | "declare" | "typeset" | "readonly"
            )
        });
        let mut argv = Vec::new();
        for w in &words {
            let r = if decl && assign_words.iter().any(|a| std::ptr::eq(*a, *w)) {
                self.expand_str(&w.value, fds).await.map(|s| vec![s])
            } else {
                self.expand_words(&[w], fds).await
            };
            match r {
                Ok(v) => argv.extend(v),
                Err(e) => return self.fail(e, fds).await,
            }
        }
        if argv.is_empty() {
            // Assignments (and redirections) only: they persist in this shell.
            let prev = self.last_status;
            for a in &assigns {
                if let Err(e) = self.assign(a, fds).await {
                    return self.fail(e, fds).await;
                }
                if self.opts.xtrace {
                    let _ = fds
                        .stderr()
                        .write_str(&format!("+ {}\n", self.trace_assignment(a)))
                        .await;
                }
            }
            let status = if self.subst_runs != subst_before {
                self.last_status
            } else {
                0
            };
            let _ = prev;
            if !redirs.is_empty() {
                let (f, closers) = match self.begin_redirects(&redirs, fds).await {
                    Ok(x) => x,
                    Err(r) => return r,
                };
                return self.end_redirects(f, closers, Ok(status), fds).await;
            }
            return Ok(status);
        }
        let mut env_extra = Vec::new();
        for a in &assigns {
            match self.assignment_value(a, fds).await {
                Ok(v) => env_extra.push(v),
                Err(e) => return self.fail(e, fds).await,
            }
        }
        if self.opts.xtrace {
            let mut line = String::from("+ ");
            for (k, v) in &env_extra {
                line.push_str(&format!("{k}={} ", trace_word(v)));
            }
            line.push_str(
                &argv
                    .iter()
                    .map(|a| trace_word(a))
                    .collect::<Vec<_>>()
                    .join(" "),
            );
            line.push('\n');
            let _ = fds.stderr().write_str(&line).await;
        }
        let (f, closers) = match self.begin_redirects(&redirs, fds).await {
            Ok(x) => x,
            Err(r) => return r,
        };
        let r = self.run_command(argv, env_extra, &f).await;
        self.end_redirects(f, closers, r, fds).await
    }

    /// The `(name, value)` of a prefix assignment (`A=1 cmd`), scalar only.
    async fn assignment_value(
        &mut self,
        a: &Assignment,
        fds: &Fds,
    ) -> Result<(String, String), ShellError> {
        let name = match &a.name {
            AssignmentName::VariableName(n) => n.clone(),
            AssignmentName::ArrayElementName(n, _) => n.clone(),
        };
        let value = match &a.value {
            AssignmentValue::Scalar(w) => self.expand_no_split(w, fds).await?,
            AssignmentValue::Array(_) => {
                return Err(ShellError::Unsupported(
                    "array assignment before a command".into(),
                ));
            }
        };
        Ok((name, value))
    }

    /// Performs an assignment in this shell (`x=1`, `x+=1`, `a=(1 2)`, `a[3]=x`).
    pub(crate) async fn assign(&mut self, a: &Assignment, fds: &Fds) -> Result<(), ShellError> {
        match (&a.name, &a.value) {
            (AssignmentName::VariableName(name), AssignmentValue::Scalar(w)) => {
                let mut v = self.expand_no_split(w, fds).await?;
                if a.append {
                    if let Some(Value::Array(_)) = self.vars.get(name).map(|v| &v.value) {
                        let next = match self.vars.get(name).map(|v| &v.value) {
                            Some(Value::Array(m)) => next_index(m),
                            _ => 0,
                        };
                        return self.set_elem(name, next, &v);
                    }
                    v = format!("{}{}", self.get_str(name).unwrap_or_default(), v);
                }
                self.set_var(name, &v)
            }
            (AssignmentName::ArrayElementName(name, index), AssignmentValue::Scalar(w)) => {
                let idx = self.eval_arith(index, fds, true).await?;
                let mut v = self.expand_no_split(w, fds).await?;
                if a.append {
                    let old = match self.vars.get(name).map(|v| &v.value) {
                        Some(Value::Array(m)) => m.get(&idx).cloned().unwrap_or_default(),
                        Some(Value::Str(s)) if idx == 0 => s.clone(),
                        _ => String::new(),
                    };
                    v = format!("{old}{v}");
                }
                self.set_elem(name, idx, &v)
            }
            (AssignmentName::VariableName(name), AssignmentValue::Array(elems)) => {
                let mut map = std::collections::BTreeMap::new();
                let mut next: i64 = 0;
                if a.append
                    && let Some(Value::Array(m)) = self.vars.get(name).map(|v| &v.value)
                {
                    map = m.clone();
                    next = next_index(m);
                }
                for (key, value) in elems {
                    match key {
                        Some(k) => {
                            let idx = self.eval_arith(&k.value, fds, true).await?;
                            let v = self.expand_no_split(value, fds).await?;
                            map.insert(idx, v);
                            next = idx.wrapping_add(1);
                        }
                        None => {
                            for v in self.expand_words(&[value], fds).await? {
                                map.insert(next, v);
                                next = next.wrapping_add(1);
                            }
                        }
                    }
                }
                self.set_value(name, Value::Array(map))
            }
            (AssignmentName::ArrayElementName(name, _), AssignmentValue::Array(_)) => Err(
                ShellError::Builtin(format!("{name}: cannot assign list to array member")),
            ),
        }
    }

    /// Resolves and runs a command by name: function, builtin, nested shell, registry
    /// command, or script file.
    pub(crate) async fn run_command(
        &mut self,
        argv: Vec<String>,
        env_extra: Vec<(String, String)>,
        fds: &Fds,
    ) -> Exec<i32> {
        let name = argv[0].clone();
        let args: Vec<String> = argv[1..].to_vec();
        if let Some(f) = self.functions.get(&name).cloned() {
            let saved = self.push_temp_env(&env_extra);
            let r = self.call_function(f, args, fds).await;
            self.pop_temp_env(saved);
            return r;
        }
        if builtins::is_builtin(&name) {
            let saved = self.push_temp_env(&env_extra);
            let r = builtins::run(self, &name, args, fds).await;
            self.pop_temp_env(saved);
            return r;
        }
        self.run_external(&name, args, &env_extra, fds).await
    }

    /// Runs a non-function, non-builtin command (also used by `command` and `exec`).
    pub(crate) async fn run_external(
        &mut self,
        name: &str,
        args: Vec<String>,
        env_extra: &[(String, String)],
        fds: &Fds,
    ) -> Exec<i32> {
        let base = name
            .strip_prefix("/usr/bin/")
            .or_else(|| name.strip_prefix("/bin/"))
            .or_else(|| name.strip_prefix("/usr/local/bin/"))
            .unwrap_or(name);
        if matches!(base, "sh" | "bash") {
            let mut argv = vec![base.to_string()];
            argv.extend(args);
            return Ok(self.run_nested(argv, env_extra, fds).await);
        }
        if let Some(cmd) = self.registry.get(base) {
            let ctx = self.context(fds, env_extra);
            let r = cmd.run(&ctx, args).await;
            let status = forkbox_commands::exit_status(base, r, &ctx.stderr).await;
            drop(ctx);
            return Ok(status);
        }
        if name.contains('/') {
            return self.run_script_file(name, args, env_extra, fds).await;
        }
        let e = ShellError::CommandNotFound(name.to_string());
        self.fail(e, fds).await
    }

    pub(crate) fn context(&self, fds: &Fds, env_extra: &[(String, String)]) -> Context {
        Context {
            stdin: fds.stdin(),
            stdout: fds.stdout(),
            stderr: fds.stderr(),
            env: self.exported_env(env_extra),
            cwd: self.cwd.clone(),
            fs: self.fs.clone(),
            cancel: self.cancel.clone(),
            tty: fds.tty,
            launcher: Arc::new(
                super::ShellLauncher::new(self.registry.clone())
                    .with_snapshots(self.snapshots.clone()),
            ),
            budget: self.budget.clone(),
        }
    }

    fn push_temp_env(&mut self, env: &[(String, String)]) -> Vec<(String, Option<super::Var>)> {
        let mut saved = Vec::new();
        for (k, v) in env {
            saved.push((k.clone(), self.vars.get(k).cloned()));
            self.set_exported(k, v);
        }
        saved
    }

    fn pop_temp_env(&mut self, saved: Vec<(String, Option<super::Var>)>) {
        for (k, old) in saved.into_iter().rev() {
            match old {
                Some(v) => {
                    self.vars.insert(k, v);
                }
                None => {
                    self.vars.remove(&k);
                }
            }
        }
    }

    async fn call_function(
        &mut self,
        f: Arc<ast::FunctionDefinition>,
        args: Vec<String>,
        fds: &Fds,
    ) -> Exec<i32> {
        if self.call_depth % CALLS_PER_TASK == CALLS_PER_TASK - 1 {
            // Continue on a fresh task; `self` keeps a copy in case this future is dropped.
            let moved = self.clone();
            let fds = fds.clone();
            let task = on_fresh_task(async move {
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

    fn call_function_here<'a>(
        &'a mut self,
        f: &'a ast::FunctionDefinition,
        args: Vec<String>,
        fds: &'a Fds,
    ) -> BoxFut<'a, Exec<i32>> {
        Box::pin(async move {
            if self.call_depth >= MAX_CALL_DEPTH {
                let e = ShellError::RecursionLimit(f.fname.value.clone(), MAX_CALL_DEPTH);
                return self.fail(e, fds).await;
            }
            let saved = std::mem::replace(&mut self.positional, args);
            self.local_frames.push(Vec::new());
            self.call_depth += 1;
            let body = &f.body;
            let rs: Vec<&IoRedirect> = body.1.iter().flat_map(|r| r.0.iter()).collect();
            let r = match self.begin_redirects(&rs, fds).await {
                Ok((f, closers)) => {
                    let r = self.exec_compound(&body.0, &f).await;
                    self.end_redirects(f, closers, r, fds).await
                }
                Err(r) => r,
            };
            self.call_depth -= 1;
            self.pop_local_frame();
            self.positional = saved;
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
            fs: self.fs.clone(),
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
        };
        let cancel = self.cancel.child_token();
        let snapshots = self.snapshots.clone();
        Box::pin(super::launcher::run_nested(
            cfg, snapshots, argv, stdio, cancel,
        ))
        .await
    }

    /// `./script.sh`: a file in the session's filesystem run by its `#!` interpreter.
    async fn run_script_file(
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
        let text = String::from_utf8_lossy(&content);
        let first = text.lines().next().unwrap_or("");
        let mut interp = "sh".to_string();
        if let Some(line) = first.strip_prefix("#!") {
            let mut parts = line.split_whitespace();
            let prog = parts.next().unwrap_or("sh");
            let base = prog.rsplit('/').next().unwrap_or(prog);
            interp = if base == "env" {
                parts
                    .find(|p| !p.starts_with('-'))
                    .unwrap_or("sh")
                    .to_string()
            } else {
                base.to_string()
            };
        }
        let mut argv = vec![interp.clone(), name.to_string()];
        argv.extend(args);
        if matches!(interp.as_str(), "sh" | "bash") {
            return Ok(self.run_nested(argv, env_extra, fds).await);
        }
        match self.registry.get(&interp) {
            Some(cmd) => {
                let ctx = self.context(fds, env_extra);
                let r = cmd.run(&ctx, argv[1..].to_vec()).await;
                let status = forkbox_commands::exit_status(&interp, r, &ctx.stderr).await;
                Ok(status)
            }
            None => {
                let e = ShellError::Exec {
                    path: format!("{name}: {interp}"),
                    source: FsError::NotFound,
                };
                self.fail(e, fds).await
            }
        }
    }
}

impl Shell {
    /// `name=value` as `set -x` shows an assignment (its value after expansion).
    fn trace_assignment(&self, a: &Assignment) -> String {
        match &a.name {
            AssignmentName::VariableName(n) => {
                let op = if a.append { "+=" } else { "=" };
                match self.vars.get(n).map(|v| &v.value) {
                    Some(Value::Str(s)) if !a.append => format!("{n}{op}{}", trace_word(s)),
                    _ => format!("{n}{op}{}", a.value),
                }
            }
            AssignmentName::ArrayElementName(n, i) => format!("{n}[{i}]={}", a.value),
        }
    }
}

fn trace_word(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        w.to_string()
    } else {
        shell_quote(w)
    }
}

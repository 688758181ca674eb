//! Compound commands: groups, subshells, loops, `if`, `case`.

use super::*;

impl Shell {
    pub(super) fn exec_compound<'a>(
        &'a mut self,
        cc: &'a CompoundCommand,
        fds: &'a Fds,
    ) -> BoxFut<'a, Exec<i32>> {
        Box::pin(async move {
            // The commands whose own words or expressions bash expands show their first
            // line as `LINENO` (`for i in $LINENO`, `(( x = LINENO ))`).
            let line = match cc {
                CompoundCommand::ForClause(f) => Some(&f.loc),
                CompoundCommand::ArithmeticForClause(f) => Some(&f.loc),
                CompoundCommand::CaseClause(c) => Some(&c.loc),
                CompoundCommand::Arithmetic(a) => Some(&a.loc),
                // Its warnings name the line it starts on.
                CompoundCommand::Coprocess(c) => Some(&c.loc),
                _ => None,
            };
            if let Some(loc) = line {
                self.lines.lineno = self.lines.line_base + loc.start.line;
            }
            match cc {
                CompoundCommand::BraceGroup(g) => self.exec_list(&g.list, fds).await,
                CompoundCommand::Subshell(s) => {
                    let mut sub = match self.subshell() {
                        Ok(sub) => sub,
                        Err(e) => return self.fail(e, fds).await,
                    };
                    // `( … )` starts outside any loop: `break` there is only a warning.
                    sub.loop_depth = 0;
                    let r = sub.exec_list(&s.list, fds).await;
                    let status = flow_status(r, sub.last_status);
                    let status = sub.run_exit_trap(status, fds).await;
                    self.report_killed(&sub, fds).await;
                    Ok(status)
                }
                CompoundCommand::ForClause(f) => self.exec_for(f, fds).await,
                CompoundCommand::ArithmeticForClause(f) => self.exec_arith_for(f, fds).await,
                CompoundCommand::WhileClause(w) => self.exec_while(w, true, fds).await,
                CompoundCommand::UntilClause(w) => self.exec_while(w, false, fds).await,
                CompoundCommand::IfClause(i) => self.exec_if(i, fds).await,
                CompoundCommand::CaseClause(c) => self.exec_case(c, fds).await,
                CompoundCommand::Arithmetic(a) => {
                    // The parser keeps the expression without the blanks around it; bash's
                    // messages show the one before `))` (`(( 1/0 ))` fails on "1/0 ").
                    let span = a.loc.end.index.saturating_sub(a.loc.start.index);
                    let text = if span >= a.expr.value.chars().count() + 6 {
                        format!("{} ", a.expr.value)
                    } else {
                        a.expr.value.clone()
                    };
                    if self.opts.xtrace {
                        let inner = if span >= a.expr.value.chars().count() + 6 {
                            format!(" {} ", a.expr.value)
                        } else {
                            a.expr.value.clone()
                        };
                        self.trace_line(&format!("(( {inner} ))"), fds).await;
                    }
                    match self.eval_arith(&text, fds, false).await {
                        Ok(v) => Ok(i32::from(v == 0)),
                        Err(e) => self.fail(e, fds).await,
                    }
                }
                CompoundCommand::Coprocess(c) => self.exec_coproc(c, fds).await,
            }
        })
    }

    pub(super) async fn loop_tick(&mut self) -> Exec<()> {
        if self.cancel.is_cancelled() {
            return Err(Flow::Abort(forkbox_commands::STATUS_INTERRUPTED));
        }
        // The session's share of the server's CPU is kept here, too (a spinning loop).
        self.budget.pace().await;
        Ok(())
    }

    pub(super) async fn exec_for(&mut self, f: &ast::ForClauseCommand, fds: &Fds) -> Exec<i32> {
        if let Some(name) = f.variable_name.strip_prefix(super::SELECT_MARK) {
            return self.exec_select(f, name, fds).await;
        }
        if !crate::shell::builtins::is_name(&f.variable_name) {
            // bash checks the loop variable before expanding the list: status 1.
            let name = &f.variable_name;
            let e = ShellError::Builtin(format!("`{name}': not a valid identifier"));
            return self.fail(e, fds).await;
        }
        let values = match &f.values {
            None => self.positional.clone(),
            Some(words) => {
                let ws: Vec<&ast::Word> = words
                    .iter()
                    .filter(|w| w.value != crate::shell::parse::rewrite::EMPTY_IN)
                    .collect();
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
            let list = || match &f.values {
                Some(words) => words
                    .iter()
                    .map(|w| w.value.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                None => "\"$@\"".to_string(),
            };
            // bash traces the loop's head, then runs the DEBUG trap before each round.
            if self.opts.xtrace {
                let line = format!("for {} in {}", f.variable_name, list());
                self.trace_line(&line, fds).await;
            }
            match self
                .debug_trap_before(|| format!("for {} in {}", f.variable_name, list()), fds)
                .await
            {
                Ok(true) => continue,
                Ok(false) => {}
                Err(fl) => {
                    out = Err(fl);
                    break;
                }
            }
            // A name reference as the loop variable names each word in turn, as in bash.
            let r = if self
                .vars
                .get(&f.variable_name)
                .is_some_and(|x| x.attrs.nameref)
            {
                self.store_str(&f.variable_name, &v)
            } else {
                self.set_var(&f.variable_name, &v)
            };
            if let Err(e) = r {
                self.loop_depth -= 1;
                // A readonly loop variable fails the loop only (status 1), as in bash.
                let e = match e {
                    ShellError::Readonly(n) => {
                        ShellError::Builtin(format!("{n}: readonly variable"))
                    }
                    other => other,
                };
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

    pub(super) async fn exec_arith_for(
        &mut self,
        f: &ast::ArithmeticForClauseCommand,
        fds: &Fds,
    ) -> Exec<i32> {
        // bash's DEBUG trap shows each part as `((part))`, an empty one as `((1))`.
        let shown = |part: &Option<ast::UnexpandedArithmeticExpr>| match part {
            Some(p) if !p.value.trim().is_empty() => format!("(({}))", p.value),
            _ => "((1))".to_string(),
        };
        // `set -x` shows each part as `(( part ))`, as written after its leading blanks.
        let traced = |part: &Option<ast::UnexpandedArithmeticExpr>| match part {
            Some(p) if !p.value.trim().is_empty() => format!("(( {} ))", p.value),
            _ => "(( 1 ))".to_string(),
        };
        self.debug_header(|| shown(&f.initializer), fds).await?;
        if self.opts.xtrace {
            self.trace_line(&traced(&f.initializer), fds).await;
        }
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
            if let Err(fl) = self.debug_header(|| shown(&f.condition), fds).await {
                out = Err(fl);
                break;
            }
            if self.opts.xtrace {
                self.trace_line(&traced(&f.condition), fds).await;
            }
            // An empty condition is true (`for (( i=0; ; i++ ))`).
            if let Some(cond) = f.condition.as_ref().filter(|c| !c.value.trim().is_empty()) {
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
            if let Err(fl) = self.debug_header(|| shown(&f.updater), fds).await {
                out = Err(fl);
                break;
            }
            if self.opts.xtrace {
                self.trace_line(&traced(&f.updater), fds).await;
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

    pub(super) async fn exec_while(
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

    pub(super) async fn exec_cond(&mut self, list: &CompoundList, fds: &Fds) -> Exec<i32> {
        self.errexit_suppressed += 1;
        let r = self.exec_list(list, fds).await;
        self.errexit_suppressed -= 1;
        r
    }

    pub(super) async fn exec_if(&mut self, i: &ast::IfClauseCommand, fds: &Fds) -> Exec<i32> {
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

    pub(super) async fn exec_case(&mut self, c: &ast::CaseClauseCommand, fds: &Fds) -> Exec<i32> {
        // bash traces the header, then runs the DEBUG trap, then expands the word.
        if self.opts.xtrace {
            let line = format!("case {} in", c.value.value);
            self.trace_line(&line, fds).await;
        }
        if self
            .debug_trap_before(|| format!("case {} in ", c.value.value), fds)
            .await?
        {
            return Ok(0);
        }
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
                    if self
                        .pattern(&pat, self.shopts.on("nocasematch"))
                        .matches(&word)
                    {
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
}

//! Simple commands: expansion of words, assignments, redirections, `set -x` tracing.

use super::*;

impl Shell {
    pub(super) async fn exec_simple(&mut self, sc: &SimpleCommand, fds: &Fds) -> Exec<i32> {
        self.lines.lineno = self.lines.line_base + crate::shell::lines::simple_line(sc);
        if let Some((text, used)) = self.alias_text(sc) {
            return self.run_alias(text, used, fds).await;
        }
        if self.in_trap == 0 && (!self.traps.is_empty() || mentions_bash_command(sc)) {
            self.bash_command = crate::shell::printer::simple_command(sc);
        }
        if !self.traps.is_empty() && self.run_debug_trap(fds).await? {
            return Ok(0);
        }
        let mut assigns: Vec<&Assignment> = Vec::new();
        let mut words: Vec<&ast::Word> = Vec::new();
        let mut redirs: Vec<&IoRedirect> = Vec::new();
        // `<(…)`/`>(…)` arguments: their place among the words, and what they are.
        let mut substs = Vec::new();
        for item in sc.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                CommandPrefixOrSuffixItem::AssignmentWord(a, _) => assigns.push(a),
                CommandPrefixOrSuffixItem::IoRedirect(r) => redirs.push(r),
                CommandPrefixOrSuffixItem::Word(w) => words.push(w),
                CommandPrefixOrSuffixItem::ProcessSubstitution(k, c) => {
                    substs.push((words.len(), k, c));
                }
            }
        }
        if let Some(w) = &sc.word_or_name {
            words.push(w);
        }
        // `{name}>file`: the word and the redirection after it become one redirection to a
        // descriptor the shell picks (10 and up) and stores in `name`.
        let (named, named_pending) = match self.named_fd_redirects(sc, fds) {
            Ok(n) => n,
            Err(e) => return self.fail(e, fds).await,
        };
        let mut assign_words: Vec<&ast::Word> = Vec::new();
        // `declare a=(…)`: compound values reach the builtin as written, to be assigned there.
        let mut compound_words: Vec<&ast::Word> = Vec::new();
        for (at, item) in sc.suffix.iter().flat_map(|p| p.0.iter()).enumerate() {
            if let Some((_, r)) = named.iter().find(|(i, _)| *i + 1 == at) {
                redirs.push(r);
                continue;
            }
            if named.iter().any(|(i, _)| *i == at) {
                continue;
            }
            match item {
                // `set -k`: an assignment word after the command name goes to the
                // command's environment too, as one before it would.
                CommandPrefixOrSuffixItem::AssignmentWord(a, _)
                    if self.opts.keyword && matches!(a.value, AssignmentValue::Scalar(_)) =>
                {
                    assigns.push(a);
                }
                CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                    if matches!(a.value, AssignmentValue::Array(_)) {
                        compound_words.push(w);
                    }
                    assign_words.push(w);
                    words.push(w);
                }
                CommandPrefixOrSuffixItem::Word(w) => words.push(w),
                CommandPrefixOrSuffixItem::IoRedirect(r) => redirs.push(r),
                CommandPrefixOrSuffixItem::ProcessSubstitution(k, c) => {
                    substs.push((words.len(), k, c));
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
        let mut subst_fds = Vec::new();
        let mut writers = Vec::new();
        let mut next_fd = crate::shell::procsubst::FIRST_FD;
        // Where in `argv` a declaration builtin's compound assignments (`a=(…)`) are.
        let mut compound_at: Vec<usize> = Vec::new();
        for (i, w) in words.iter().enumerate() {
            for (_, k, c) in substs.iter().filter(|(at, _, _)| *at == i) {
                next_fd = fds.free_fd_below(next_fd);
                match self.start_procsubst(k, c, fds) {
                    Ok((d, task)) => {
                        if matches!(d, crate::shell::redirect::Fd::Write(_)) {
                            writers.push(task);
                        }
                        subst_fds.push((next_fd, d));
                        argv.push(crate::shell::procsubst::fd_path(next_fd));
                        next_fd -= 1;
                    }
                    Err(e) => return self.fail(e, fds).await,
                }
            }
            let r = if decl && compound_words.iter().any(|a| std::ptr::eq(*a, *w)) {
                compound_at.push(argv.len());
                Ok(vec![w.value.clone()])
            } else if decl && assign_words.iter().any(|a| std::ptr::eq(*a, *w)) {
                self.expand_declaration_word(&w.value, fds).await
            } else {
                self.expand_words(&[w], fds).await
            };
            match r {
                Ok(v) => argv.extend(v),
                Err(e) => return self.fail(e, fds).await,
            }
        }
        for (_, k, c) in substs.iter().filter(|(at, _, _)| *at >= words.len()) {
            next_fd = fds.free_fd_below(next_fd);
            match self.start_procsubst(k, c, fds) {
                Ok((d, task)) => {
                    if matches!(d, crate::shell::redirect::Fd::Write(_)) {
                        writers.push(task);
                    }
                    subst_fds.push((next_fd, d));
                    argv.push(crate::shell::procsubst::fd_path(next_fd));
                    next_fd -= 1;
                }
                Err(e) => return self.fail(e, fds).await,
            }
        }
        if argv.is_empty() {
            // Assignments (and redirections) only: they persist in this shell.
            let prev = self.last_status;
            for a in &assigns {
                // The trace comes before the assignment takes effect: `PS4=…` shows
                // with the old `PS4`.
                let ps4 = self.opts.xtrace.then(|| self.get_str("PS4"));
                if let Err(e) = self.assign(a, fds).await {
                    // POSIX mode: assigning a readonly variable ends a non-interactive
                    // shell, with bash's 127.
                    let fatal = matches!(e, ShellError::Readonly(_))
                        && self.opts.posix
                        && !self.interactive;
                    let r = self.fail(e, fds).await;
                    // A subshell ends with the failed assignment's status instead.
                    let status = if self.is_subshell { 1 } else { 127 };
                    return if fatal { Err(Flow::Abort(status)) } else { r };
                }
                if let Some(ps4) = ps4
                    && self.opts.xtrace
                {
                    let body = self.trace_assignment(a);
                    self.trace_line_with(ps4, &body, fds).await;
                }
            }
            let status = if self.subst_runs != subst_before {
                self.last_status
            } else {
                0
            };
            let _ = prev;
            // bash leaves `$_` empty after a command of assignments only.
            let _ = self.store_str("_", "");
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
            if matches!(a.value, AssignmentValue::Array(_)) {
                // `a=(1 2) cmd`: bash runs cmd and lets the array go.
                continue;
            }
            match self.assignment_value(a, fds).await {
                Ok((name, _)) if self.vars.get(&name).is_some_and(|v| v.readonly) => {
                    // bash reports it and runs the command without that variable. A
                    // non-interactive POSIX shell abandons the command instead (status
                    // 1), and before a special builtin ends, with 127 as after an
                    // assignment alone.
                    let _ = fds
                        .stderr()
                        .write_str(&ShellError::Readonly(name).message_with(&self.message_prefix()))
                        .await;
                    if self.opts.posix && !self.interactive {
                        let special = argv
                            .first()
                            .is_some_and(|n| super::run::is_special_builtin(n));
                        self.last_status = if special { 127 } else { 1 };
                        return Err(if special {
                            Flow::Abort(127)
                        } else {
                            Flow::Discard(1)
                        });
                    }
                }
                Ok(v) => env_extra.push(v),
                Err(e) => return self.fail(e, fds).await,
            }
        }
        // A declaration builtin's compound assignments trace themselves as they are
        // made (`+ a=('x')`); the command (`+ declare -a a`) follows them.
        let mut traced_after = Vec::new();
        if self.opts.xtrace {
            // bash shows each prefix assignment on a line of its own, then the command.
            for (k, v) in &env_extra {
                let v = trace_value(v, self.byte_locale());
                self.trace_line(&format!("{k}={v}"), fds).await;
            }
            let bytes = self.byte_locale();
            let mut lines = vec![
                argv.iter()
                    .enumerate()
                    .map(|(i, a)| match a.split_once('=') {
                        Some((name, _)) if compound_at.contains(&i) => {
                            name.trim_end_matches('+').to_string()
                        }
                        _ => trace_word(a, bytes),
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
            ];
            if matches!(argv[0].as_str(), "export" | "readonly")
                && !self.functions.contains_key(&argv[0])
            {
                // bash traces the assignments these two make as assignments too.
                for (i, a) in argv.iter().enumerate().skip(1) {
                    if let Some(at) = crate::shell::expand::assignment_prefix(a)
                        && !compound_at.contains(&i)
                    {
                        lines.push(format!("{}{}", &a[..at], trace_value(&a[at..], bytes)));
                    }
                }
            }
            if compound_at.is_empty() {
                for line in lines {
                    self.trace_line(&line, fds).await;
                }
            } else {
                traced_after = lines;
            }
        }
        // A PATH of the command's own empties the hash table, as assigning PATH does.
        if env_extra.iter().any(|(k, _)| k == "PATH") {
            self.hashed.clear();
        }
        if std::mem::take(&mut self.stage_level_pending) {
            self.subshell_level += 1;
        }
        if argv.len() == 1 && argv[0] == "exec" && !self.functions.contains_key("exec") {
            let _ = self.store_str("_", "exec");
            let r = self.exec_redirections(&redirs, fds).await;
            if matches!(r, Ok(0))
                && let Some(status) = self.store_named_fds(&named_pending, fds).await
            {
                return Ok(status);
            }
            return r;
        }
        // `$_`: the last argument of the previous command. It is set when the command
        // is done, as bash does: the command itself (`declare -p _`, a function's body)
        // still sees the one before.
        let fn_last = argv.last().cloned();
        // Under `set -m`, jobs that ended while a program ran are reported after it.
        let external = self.job_control()
            && !self.jobs.list.is_empty()
            && !self.functions.contains_key(&argv[0])
            && self
                .registry
                .resolve(&argv[0])
                .is_none_or(|e| e.kind != forkbox_commands::CommandKind::Builtin);
        if redirs.is_empty() && subst_fds.is_empty() {
            // Nothing to change in the descriptor table: no copy of it per command.
            let r = self.run_command(argv, env_extra, fds).await;
            if external {
                self.report_ended_jobs(fds).await;
            }
            for line in traced_after {
                self.trace_line(&line, fds).await;
            }
            if let Some(l) = fn_last {
                let _ = self.store_str("_", &l);
            }
            return r;
        }
        // `cmd {fd}>file`: bash leaves the descriptor it opened open after the command,
        // unless `shopt -s varredir_close`.
        let keep: Vec<i32> = if self.shopts.on("varredir_close") {
            Vec::new()
        } else {
            named_pending.iter().map(|p| p.fd).collect()
        };
        let (mut f, closers, kept) = match self.begin_redirects_keeping(&redirs, &keep, fds).await {
            Ok(x) => x,
            // POSIX mode: a redirection error of a special builtin ends the script.
            Err(Ok(status))
                if self.opts.posix
                    && !self.interactive
                    && argv
                        .first()
                        .is_some_and(|n| super::run::is_special_builtin(n)) =>
            {
                return Err(Flow::Exit(status));
            }
            Err(r) => return r,
        };
        for (n, d) in subst_fds {
            f.set_fd(n, d);
        }
        if let Some(status) = self.store_named_fds(&named_pending, fds).await {
            let mut closers = closers;
            closers.extend(kept);
            return self.end_redirects(f, closers, Ok(status), fds).await;
        }
        let r = self.run_command(argv, env_extra, &f).await;
        if external {
            self.report_ended_jobs(fds).await;
        }
        for line in traced_after {
            self.trace_line(&line, fds).await;
        }
        if let Some(l) = fn_last {
            let _ = self.store_str("_", &l);
        }
        if !keep.is_empty() {
            self.keep_fds(&f, &keep, kept, fds);
        }
        let r = self.end_redirects(f, closers, r, fds).await;
        for w in writers {
            let _ = w.await;
        }
        r
    }

    /// The `{name}>file` pairs of `sc`'s suffix: the index of the `{name}` word and the
    /// redirection to the descriptor it names (a file, a here-document or a here-string).
    /// A new descriptor is the lowest free from 10, stored in `name` (or `name[N]`) once
    /// the redirections are in place ([`NamedFd`]); `{name}>&-` closes the one `name` holds.
    fn named_fd_redirects(
        &mut self,
        sc: &SimpleCommand,
        fds: &Fds,
    ) -> Result<NamedFds, ShellError> {
        let Some(suffix) = &sc.suffix else {
            return Ok((Vec::new(), Vec::new()));
        };
        let mut out: Vec<(usize, IoRedirect)> = Vec::new();
        let mut pending = Vec::new();
        let taken = fds.high_fds();
        for (at, pair) in suffix.0.windows(2).enumerate() {
            let (CommandPrefixOrSuffixItem::Word(w), CommandPrefixOrSuffixItem::IoRedirect(r)) =
                (&pair[0], &pair[1])
            else {
                continue;
            };
            let closing = match r {
                ast::IoRedirect::File(None, _, target) => {
                    matches!(target, ast::IoFileRedirectTarget::Duplicate(t) if t.value == "-")
                }
                ast::IoRedirect::HereString(None, _) | ast::IoRedirect::HereDocument(None, _) => {
                    false
                }
                _ => continue,
            };
            let Some(inner) = w.value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) else {
                continue;
            };
            // `{name}`, or `{name[N]}` (an element of an indexed array, `COPROC[1]`).
            let (name, index) = match inner.split_once('[') {
                Some((n, rest)) => match rest.strip_suffix(']').map(|i| i.parse::<i64>()) {
                    Some(Ok(i)) => (n, Some(i)),
                    _ => continue,
                },
                None => (inner, None),
            };
            if !crate::shell::builtins::is_name(name) {
                continue;
            }
            let n = if closing {
                let held = match index {
                    None => self.get_str(name),
                    Some(i) => match self.vars.get(name).map(|v| &v.value) {
                        Some(crate::shell::Value::Array(a)) => a.get(&i).cloned(),
                        _ => None,
                    },
                };
                match held.as_deref().map(str::trim) {
                    None | Some("") => return Err(ShellError::AmbiguousRedirect(inner.into())),
                    // bash reads the value as a number and, failing that, closes 0.
                    Some(v) => v.parse::<i32>().unwrap_or(0),
                }
            } else {
                let mut n = 10;
                while taken.contains_key(&n) || out.iter().any(|(_, r)| redirect_fd(r) == Some(n)) {
                    n += 1;
                }
                pending.push(NamedFd {
                    name: name.to_string(),
                    index,
                    fd: n,
                });
                n
            };
            let with_fd = match r {
                ast::IoRedirect::File(_, kind, target) => {
                    ast::IoRedirect::File(Some(n), kind.clone(), target.clone())
                }
                ast::IoRedirect::HereString(_, w) => {
                    ast::IoRedirect::HereString(Some(n), w.clone())
                }
                ast::IoRedirect::HereDocument(_, d) => {
                    ast::IoRedirect::HereDocument(Some(n), d.clone())
                }
                ast::IoRedirect::OutputAndError(..) => continue,
            };
            out.push((at, with_fd));
        }
        Ok((out, pending))
    }

    /// Stores the descriptors of `{name}>file` redirections that are now open in their
    /// variables; one that cannot be stored (a readonly `name`) is reported as bash does,
    /// and the command fails with 1 without running.
    async fn store_named_fds(&mut self, pending: &[NamedFd], fds: &Fds) -> Option<i32> {
        for p in pending {
            let r = match p.index {
                None => self.assign_str(&p.name, &p.fd.to_string(), false),
                Some(i) => self.assign_index(&p.name, i, &p.fd.to_string(), false),
            };
            if let Err(e) = r {
                let stderr = fds.stderr();
                self.report(&stderr, &e).await;
                let msg = format!("{}: cannot assign fd to variable", p.name);
                self.report(&stderr, &ShellError::Builtin(msg)).await;
                self.last_status = 1;
                return Some(1);
            }
        }
        None
    }

    /// The `(name, value)` of a prefix assignment (`A=1 cmd`), scalar only.
    pub(super) async fn assignment_value(
        &mut self,
        a: &Assignment,
        fds: &Fds,
    ) -> Result<(String, String), ShellError> {
        let name = match &a.name {
            AssignmentName::VariableName(n) => n.clone(),
            AssignmentName::ArrayElementName(n, _) => n.clone(),
        };
        let value = match &a.value {
            // `x+=b cmd`: the command sees the value with `b` appended.
            AssignmentValue::Scalar(w) if a.append => {
                let tail = self.expand_assignment_value(w, fds).await?;
                self.get_str(&name).unwrap_or_default() + &tail
            }
            AssignmentValue::Scalar(w) => self.expand_assignment_value(w, fds).await?,
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
                let v = self.expand_assignment_value(w, fds).await?;
                self.assign_str(name, &v, a.append)
            }
            (AssignmentName::ArrayElementName(name, index), AssignmentValue::Scalar(w)) => {
                if self.is_assoc(name) {
                    let key = self.expand_str(index, fds).await?;
                    if key.is_empty() {
                        return Err(ShellError::BadSubscript(format!("{name}[{index}]")));
                    }
                    let v = self.expand_no_split(w, fds).await?;
                    return self.assign_key(name, &key, &v, a.append);
                }
                if matches!(index.as_str(), "*" | "@") || index.trim().is_empty() {
                    return Err(ShellError::BadSubscript(format!("{name}[{index}]")));
                }
                let idx = self.eval_arith(index, fds, true).await?;
                let v = self.expand_no_split(w, fds).await?;
                self.assign_index(name, idx, &v, a.append)
            }
            (AssignmentName::VariableName(name), AssignmentValue::Array(elems)) => {
                let elems: Vec<(Option<&str>, &ast::Word)> = elems
                    .iter()
                    .map(|(k, v)| (k.as_ref().map(|k| k.value.as_str()), v))
                    .collect();
                self.assign_compound(name, &elems, a.append, false, fds)
                    .await
            }
            (AssignmentName::ArrayElementName(name, _), AssignmentValue::Array(_)) => Err(
                ShellError::Builtin(format!("{name}: cannot assign list to array member")),
            ),
        }
    }

    /// `name=(…)` and `name+=(…)`: keys of an associative array (bash 5.2 also takes
    /// `k1 v1 k2 v2` there, unless the list starts with a `[k]=v`: then a word without
    /// a subscript is refused with a warning), or indices and values of an indexed one.
    /// `declared` when `declare` assigns it (its warnings quote the word).
    pub(crate) async fn assign_compound(
        &mut self,
        name: &str,
        elems: &[(Option<&str>, &ast::Word)],
        append: bool,
        declared: bool,
        fds: &Fds,
    ) -> Result<(), ShellError> {
        let target = self.resolve_ref(name).into_owned();
        if self.vars.get(&target).is_some_and(|v| v.readonly) {
            return Err(ShellError::Readonly(target));
        }
        // `set -x` shows what `declare` assigns: each element quoted (`+ a=('x' [k]='v')`).
        let mut trace = (declared && self.opts.xtrace).then(Vec::new);
        // `[k]+=v` (which the parser leaves a plain word) appends v to k's value.
        let split: Vec<(Option<&str>, ast::Word, bool)> = elems
            .iter()
            .map(|&(k, w)| match (k, keyed_word(&w.value)) {
                (None, Some((key, v, append))) => (
                    Some(key),
                    ast::Word {
                        value: v.to_string(),
                        loc: w.loc.clone(),
                    },
                    append,
                ),
                _ => (k, w.clone(), false),
            })
            .collect();
        let bytes = self.byte_locale();
        let sq = |s: &str| crate::shell::vars::single_quote(s, bytes);
        // `[k]+=v` of an integer array adds: the element becomes `old+(v)`, evaluated.
        let integer = self.vars.get(&target).is_some_and(|v| v.attrs.integer);
        let join = |old: &str, v: &str| {
            if integer {
                format!("{old}+({v})")
            } else {
                format!("{old}{v}")
            }
        };
        if self.is_assoc(&target) {
            let mut map = match self.vars.get(&target).map(|v| &v.value) {
                Some(Value::Assoc(m)) if append => m.clone(),
                _ => crate::shell::AssocArray::new(),
            };
            let mut pending: Option<String> = None;
            let keyed = matches!(split.first(), Some((Some(_), _, _)));
            for (key, value, elem_append) in &split {
                let (key, value) = (*key, value);
                let literal;
                let (key, value) = match key {
                    // In a list of pairs a `[k]=v` is a word like the others.
                    Some(k) if !keyed => {
                        literal = ast::Word {
                            value: format!("[{k}]={}", value.value),
                            loc: value.loc.clone(),
                        };
                        (None, &literal)
                    }
                    _ => (key, value),
                };
                match key {
                    None if keyed => {
                        for w in self.expand_words(&[value], fds).await? {
                            if let Some(t) = &mut trace {
                                t.push(sq(&w));
                            }
                            let w = if declared { format!("'{w}'") } else { w };
                            let msg = format!(
                                "{target}: {w}: must use subscript when assigning associative array"
                            );
                            self.report(&fds.stderr(), &ShellError::Builtin(msg)).await;
                        }
                    }
                    Some(k) => {
                        let key = self.expand_str(k, fds).await?;
                        if key.is_empty() {
                            return Err(ShellError::BadSubscript(format!("{target}[{k}]")));
                        }
                        // `h+=([k]=v)` replaces k's value: only `[k]+=v` appends to it.
                        // A `~` leading an associative value stays as it is in bash.
                        let v = if value.value.starts_with('~') {
                            let literal = ast::Word {
                                value: format!("\\{}", value.value),
                                loc: value.loc.clone(),
                            };
                            self.expand_no_split(&literal, fds).await?
                        } else {
                            self.expand_no_split(value, fds).await?
                        };
                        if let Some(t) = &mut trace {
                            t.push(format!("[{}]={}", sq(&key), sq(&v)));
                        }
                        let v = match map.get(&key) {
                            Some(old) if *elem_append => join(old, &v),
                            _ => v,
                        };
                        map.insert(key, v);
                    }
                    None => {
                        for w in self.expand_words(&[value], fds).await? {
                            if let Some(t) = &mut trace {
                                t.push(sq(&w));
                            }
                            match pending.take() {
                                None => pending = Some(w),
                                Some(k) => {
                                    let v = self.assoc_elem_value(&map, &k, w, append)?;
                                    map.insert(k, v);
                                }
                            }
                        }
                    }
                }
            }
            if let Some(k) = pending {
                map.insert(k, String::new());
            }
            self.trace_compound(name, append, trace, fds).await;
            return self.set_value(&target, Value::Assoc(map));
        }
        let mut map = std::collections::BTreeMap::new();
        let mut next: i64 = 0;
        if append {
            match self.vars.get(&target).map(|v| &v.value) {
                Some(Value::Array(m)) => {
                    map = m.clone();
                    next = crate::shell::next_index(m);
                }
                Some(Value::Str(s)) if !self.vars.get(&target).is_some_and(|v| v.attrs.unset) => {
                    map.insert(0, s.clone());
                    next = 1;
                }
                _ => {}
            }
        }
        for (key, value, elem_append) in &split {
            match key {
                Some(k) => {
                    let mut idx = self.eval_arith(k, fds, true).await?;
                    if idx < 0 {
                        idx = crate::shell::next_index(&map).wrapping_add(idx);
                        if idx < 0 {
                            return Err(ShellError::BadSubscript(format!("{target}[{k}]")));
                        }
                    }
                    let v = self.expand_no_split(value, fds).await?;
                    if let Some(t) = &mut trace {
                        t.push(format!("[{}]={}", sq(k), sq(&v)));
                    }
                    let v = match map.get(&idx) {
                        Some(old) if *elem_append => join(old, &v),
                        _ => v,
                    };
                    map.insert(idx, v);
                    next = idx.wrapping_add(1);
                }
                None => {
                    for v in self.expand_words(&[value], fds).await? {
                        if let Some(t) = &mut trace {
                            t.push(sq(&v));
                        }
                        map.insert(next, v);
                        next = next.wrapping_add(1);
                    }
                }
            }
        }
        self.trace_compound(name, append, trace, fds).await;
        // Integer elements evaluate to themselves again: `-i` applies to all of them.
        self.set_value(&target, Value::Array(map))
    }

    /// Traces a compound assignment `declare` made (see [`Shell::assign_compound`]).
    async fn trace_compound(
        &mut self,
        name: &str,
        append: bool,
        trace: Option<Vec<String>>,
        fds: &Fds,
    ) {
        if let Some(t) = trace {
            let op = if append { "+=" } else { "=" };
            let line = format!("{name}{op}({})", t.join(" "));
            self.trace_line(&line, fds).await;
        }
    }

    fn assoc_elem_value(
        &self,
        map: &crate::shell::AssocArray,
        key: &str,
        v: String,
        append: bool,
    ) -> Result<String, ShellError> {
        Ok(match (append, map.get(key)) {
            (true, Some(old)) => format!("{old}{v}"),
            _ => v,
        })
    }
}

impl Shell {
    /// `name=value` as `set -x` shows an assignment (its value after expansion).
    fn trace_assignment(&self, a: &Assignment) -> String {
        match &a.name {
            AssignmentName::VariableName(n) => {
                let op = if a.append { "+=" } else { "=" };
                // Through a name reference: the value the referenced variable got.
                let target = self.resolve_ref(n);
                match self.vars.get(target.as_ref()).map(|v| &v.value) {
                    Some(Value::Str(s)) if !a.append => {
                        format!("{n}{op}{}", trace_value(s, self.byte_locale()))
                    }
                    _ => format!("{n}{op}{}", a.value),
                }
            }
            AssignmentName::ArrayElementName(n, i) => format!("{n}[{i}]={}", a.value),
        }
    }
}

/// The value of an assignment as `set -x` shows it: as a word, but nothing for an empty
/// one (`+ x=`).
fn trace_value(v: &str, bytes: bool) -> String {
    if v.is_empty() {
        String::new()
    } else {
        trace_word(v, bytes)
    }
}

/// A word as `set -x` shows it: quoted when it holds a character the shell would treat
/// specially (a `#` or `~` only where it would start a comment or a tilde expansion).
/// `bytes`: the locale is not UTF-8, where no character past ASCII prints.
pub(crate) fn trace_word(w: &str, bytes: bool) -> String {
    // A byte that is not UTF-8 does not print in any locale.
    let byte_char = |c: char| forkbox_commands::bytetext::char_byte(c).is_some();
    let special = |(i, c): (usize, char)| {
        " \t\n'\"\\|&;()<>!{}*[]?^$`".contains(c)
            || !(bytes || c.is_ascii() || c.is_alphanumeric() || byte_char(c))
            || (c == '#' && i == 0)
            || (c == '~' && (i == 0 || matches!(w.as_bytes().get(i - 1), Some(b'=' | b':'))))
    };
    if w.is_empty() || w.char_indices().any(special) {
        shell_quote(w)
    } else if w
        .chars()
        .any(|c| c.is_control() || (bytes && !c.is_ascii()) || byte_char(c))
    {
        // No character the shell treats specially, but one that does not print: bash
        // shows it as `$'\001'` (what has both is single-quoted as it is).
        crate::shell::vars::ansi_c_quote(w, bytes)
    } else {
        w.to_string()
    }
}

/// The descriptor a file redirection sets, when written out.
fn redirect_fd(r: &IoRedirect) -> Option<i32> {
    match r {
        IoRedirect::File(n, _, _)
        | IoRedirect::HereString(n, _)
        | IoRedirect::HereDocument(n, _) => *n,
        IoRedirect::OutputAndError(..) => None,
    }
}

/// `[key]=value` or `[key]+=value` as a word the parser left without a subscript (it does
/// for `[k]+=v`, and for a quoted key holding `]`, `['a]b']=v`): the key as written, the
/// value, and whether it appends.
fn keyed_word(word: &str) -> Option<(&str, &str, bool)> {
    let rest = word.strip_prefix('[')?;
    let (mut quote, mut escaped) = (None, false);
    for (i, c) in rest.char_indices() {
        match (quote, c) {
            _ if escaped => escaped = false,
            (None | Some('"'), '\\') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, ']') => {
                let key = &rest[..i];
                let after = &rest[i + 1..];
                if key.is_empty() {
                    return None;
                }
                return match after.strip_prefix("+=") {
                    Some(v) => Some((key, v, true)),
                    None => after.strip_prefix('=').map(|v| (key, v, false)),
                };
            }
            _ => {}
        }
    }
    None
}

/// What [`Shell::named_fd_redirects`] finds: each `{name}` word's index in the suffix with
/// the redirection it becomes, and the descriptors to store once they are open.
type NamedFds = (Vec<(usize, IoRedirect)>, Vec<NamedFd>);

/// A descriptor a `{name}>file` redirection opened, to be stored in `name` (element
/// `index` of it for `{name[N]}`) once the command's redirections are in place: a
/// redirection that fails assigns nothing.
struct NamedFd {
    name: String,
    index: Option<i64>,
    fd: i32,
}

/// Whether a word of `sc` reads `$BASH_COMMAND` (so it must be kept even without traps).
fn mentions_bash_command(sc: &SimpleCommand) -> bool {
    let items = (sc.prefix.iter().flat_map(|p| p.0.iter()))
        .chain(sc.suffix.iter().flat_map(|p| p.0.iter()));
    let mut words = items.filter_map(|item| match item {
        CommandPrefixOrSuffixItem::Word(w) | CommandPrefixOrSuffixItem::AssignmentWord(_, w) => {
            Some(w)
        }
        _ => None,
    });
    words.any(|w| w.value.contains("BASH_COMMAND"))
        || sc
            .word_or_name
            .as_ref()
            .is_some_and(|w| w.value.contains("BASH_COMMAND"))
}

#[cfg(test)]
mod tests {
    use super::keyed_word;

    #[test]
    fn keyed_words_the_parser_leaves_plain() {
        assert_eq!(keyed_word("[a]+=9"), Some(("a", "9", true)));
        assert_eq!(keyed_word("['c]d']=2"), Some(("'c]d'", "2", false)));
        assert_eq!(keyed_word("[\"x]\"]+=y"), Some(("\"x]\"", "y", true)));
        assert_eq!(keyed_word("[]=x"), None);
        assert_eq!(keyed_word("[a]"), None);
        assert_eq!(keyed_word("plain"), None);
    }
}

//! Prints a function's syntax tree back as text, in the layout bash uses for `declare -f`
//! and `type`: four-space indentation, `;` closing each command of a multi-line list, `do`
//! and `then` placed as bash places them, words as they were written.

use brush_parser::ast::{
    AndOr, AndOrList, CaseItemPostAction, Command, CommandPrefixOrSuffixItem, CompoundCommand,
    CompoundList, ExtendedTestExpr, FunctionDefinition, IoFileRedirectKind, IoFileRedirectTarget,
    IoRedirect, Pipeline, SeparatorOperator, SimpleCommand,
};

/// Spaces per indentation level (bash's `indentation_amount`).
const INDENT: usize = 4;

/// `name () \n{ \n    …\n}` as bash prints function `name`.
pub(crate) fn function(name: &str, def: &FunctionDefinition) -> String {
    let mut p = Printer::default();
    p.out.push_str(&format!("{name} () \n"));
    p.function_body(def);
    p.finish()
}

/// A command as `$BASH_COMMAND` shows it: a simple command, a subshell, `[[ ]]` or
/// `(( ))` on one line.
pub(crate) fn command_line(c: &Command) -> String {
    let mut p = Printer::default();
    p.command(c);
    p.finish()
}

/// A background job's command as `jobs` shows it: as bash prints a command outside a
/// function definition, groups and subshells on one line (`{ a; b; }`, `( a; b )`), other
/// compound commands laid out as `declare -f` does.
pub(crate) fn job_line(l: &AndOrList) -> String {
    let mut p = Printer {
        flat: true,
        ..Printer::default()
    };
    p.and_or(l);
    p.finish()
}

/// A simple command as `$BASH_COMMAND` shows it.
pub(crate) fn simple_command(s: &SimpleCommand) -> String {
    let mut p = Printer::default();
    p.simple(s);
    p.finish()
}

#[derive(Default)]
struct Printer {
    out: String,
    indent: usize,
    skip_indent: usize,
    /// Groups and subshells on one line (see [`job_line`]).
    flat: bool,
    /// Bodies of here-documents whose operators were printed: bash writes them after the
    /// line's other redirections and the connector that follows (`|`, `&&`, `;`).
    pending: String,
    /// Whether here-document bodies were written inside the current list item: bash
    /// then ends the item with a line break alone, no `;`.
    flushed: bool,
}

impl Printer {
    /// The text, with here-document bodies still pending at its end.
    fn finish(mut self) -> String {
        self.flush_heredocs();
        self.out
    }

    /// Ends the line with the pending here-document bodies, if there are any. Returns
    /// whether there were.
    fn flush_heredocs(&mut self) -> bool {
        if self.pending.is_empty() {
            return false;
        }
        self.out.push('\n');
        let bodies = std::mem::take(&mut self.pending);
        self.out.push_str(&bodies);
        self.flushed = true;
        true
    }

    fn function_body(&mut self, def: &FunctionDefinition) {
        let old = self.indent;
        self.indent += INDENT;
        self.out.push_str("{ \n");
        match &def.body.0 {
            CompoundCommand::BraceGroup(g) => self.list(&g.list),
            other => {
                self.pad();
                self.compound(other);
            }
        }
        self.indent = old;
        self.newline("}");
        if let Some(r) = &def.body.1 {
            self.out.push(' ');
            self.redirects(&r.0);
        }
    }

    fn newline(&mut self, s: &str) {
        self.out.push('\n');
        self.pad();
        self.out.push_str(s);
    }

    fn pad(&mut self) {
        self.out.push_str(&" ".repeat(self.indent));
    }

    fn start_command(&mut self) {
        if self.skip_indent > 0 {
            self.skip_indent -= 1;
        } else {
            self.pad();
        }
    }

    /// bash's `semicolon ()`: a `;` unless the text already ends a command.
    fn semicolon(&mut self) {
        if !matches!(self.out.chars().last(), Some('&' | '\n')) {
            self.out.push(';');
        }
    }

    fn list(&mut self, list: &CompoundList) {
        let n = list.0.len();
        let outer = self.flushed;
        for (i, item) in list.0.iter().enumerate() {
            self.flushed = false;
            self.and_or(&item.0);
            let last = i + 1 == n;
            if matches!(item.1, SeparatorOperator::Sequence) {
                self.flush_heredocs();
            }
            match item.1 {
                SeparatorOperator::Async => {
                    self.out.push_str(" &");
                    let bodies = self.flush_heredocs();
                    if !last {
                        // bash keeps the next command on the same line, `a & b`; after
                        // here-document bodies it starts the next line with two blanks.
                        self.out.push_str(if bodies { "  " } else { " " });
                        self.skip_indent += 1;
                    }
                }
                SeparatorOperator::Sequence => {
                    if !last {
                        // A here-document's body already ended the line (or came
                        // before the item's last command).
                        if self.out.ends_with('\n') || self.flushed {
                            self.out.push('\n');
                        } else if self.flat {
                            // Outside a function definition bash keeps the next
                            // command on the same line: `a; b`.
                            self.out.push_str("; ");
                            self.skip_indent += 1;
                        } else {
                            self.out.push_str(";\n");
                        }
                    }
                }
            }
        }
        self.flushed = outer;
    }

    fn and_or(&mut self, l: &AndOrList) {
        self.pipeline(&l.first);
        for a in &l.additional {
            let (op, p) = match a {
                AndOr::And(p) => (" && ", p),
                AndOr::Or(p) => (" || ", p),
            };
            self.out.push_str(op);
            if self.flush_heredocs() {
                // bash goes on after the bodies with a blank where the line broke.
                self.out.push(' ');
            }
            self.skip_indent += 1;
            self.pipeline(p);
        }
    }

    fn pipeline(&mut self, p: &Pipeline) {
        for (i, c) in p.seq.iter().enumerate() {
            if i == 0 {
                self.start_command();
                self.time_and_bang(p);
            } else if self.pending.is_empty() {
                self.out.push_str(" | ");
            } else {
                // The bodies follow the `|`; bash indents what comes after by two.
                self.out.push_str(" |");
                self.flush_heredocs();
                self.out.push_str("  ");
            }
            self.command(c);
        }
        if p.seq.is_empty() {
            // `time` alone.
            self.start_command();
            self.time_and_bang(p);
        }
    }

    fn time_and_bang(&mut self, p: &Pipeline) {
        match p.timed {
            Some(brush_parser::ast::PipelineTimed::TimedWithPosixOutput(_)) => {
                self.out.push_str("time -p ");
            }
            Some(brush_parser::ast::PipelineTimed::Timed(_)) => self.out.push_str("time "),
            None => {}
        }
        if p.bang {
            self.out.push_str("! ");
        }
    }

    fn command(&mut self, c: &Command) {
        match c {
            Command::Simple(s) => self.simple(s),
            Command::Compound(cc, redirs) => {
                self.compound(cc);
                if let Some(r) = redirs {
                    self.out.push(' ');
                    self.redirects(&r.0);
                }
            }
            Command::Function(f) => {
                // A function defined inside another is shown with `function`, indented.
                self.out
                    .push_str(&format!("function {} () \n", f.fname.value));
                self.pad();
                self.function_body(f);
            }
            Command::ExtendedTest(t, redirs) => {
                self.out.push_str(&format!("[[ {} ]]", cond(&t.expr)));
                if let Some(r) = redirs {
                    self.out.push(' ');
                    self.redirects(&r.0);
                }
            }
        }
    }

    /// A nested command that starts right after text on the current line.
    fn inline_list(&mut self, list: &CompoundList) {
        self.skip_indent += 1;
        self.list(list);
    }

    fn compound(&mut self, c: &CompoundCommand) {
        match c {
            CompoundCommand::BraceGroup(g) if self.flat => {
                self.out.push_str("{ ");
                self.inline_list(&g.list);
                self.semicolon();
                self.out.push_str(" }");
            }
            CompoundCommand::BraceGroup(g) => {
                self.out.push_str("{ \n");
                self.indent += INDENT;
                self.list(&g.list);
                self.out.push('\n');
                self.indent -= INDENT;
                self.pad();
                self.out.push('}');
            }
            CompoundCommand::Subshell(s) => {
                self.out.push_str("( ");
                self.inline_list(&s.list);
                self.out.push_str(" )");
            }
            CompoundCommand::Arithmetic(a) => {
                // The parser drops the blanks inside `(( ))`; bash shows them as written.
                let span = a.loc.end.index.saturating_sub(a.loc.start.index);
                if span >= a.expr.value.chars().count() + 6 {
                    self.out.push_str(&format!("(( {} ))", a.expr.value));
                } else {
                    self.out.push_str(&format!("(({}))", a.expr.value));
                }
            }
            CompoundCommand::ArithmeticForClause(f) => {
                let part = |e: &Option<brush_parser::ast::UnexpandedArithmeticExpr>| {
                    e.as_ref()
                        .map(|e| e.value.trim_start().to_string())
                        .filter(|v| !v.is_empty())
                        // bash shows an absent part as the `1` it stands for.
                        .unwrap_or_else(|| "1".to_string())
                };
                self.out.push_str(&format!(
                    "for (({}; {}; {}))",
                    part(&f.initializer),
                    part(&f.condition),
                    part(&f.updater)
                ));
                self.newline("do\n");
                self.indent += INDENT;
                self.list(&f.body.list);
                self.semicolon();
                self.indent -= INDENT;
                self.newline("done");
            }
            CompoundCommand::ForClause(f) => {
                match f
                    .variable_name
                    .strip_prefix(crate::shell::exec::SELECT_MARK)
                {
                    Some(name) => self.out.push_str(&format!("select {name}")),
                    None => self.out.push_str(&format!("for {}", f.variable_name)),
                }
                match &f.values {
                    Some(words) => {
                        self.out.push_str(" in");
                        let empty_in = super::parse::rewrite::EMPTY_IN;
                        for w in words.iter().filter(|w| w.value != empty_in) {
                            self.out.push(' ');
                            self.out.push_str(&word_text(&w.value));
                        }
                        if words.iter().all(|w| w.value == empty_in) {
                            // `for x in ;`
                            self.out.push(' ');
                        }
                    }
                    // bash writes out what a `for` without `in` goes over.
                    None => self.out.push_str(" in \"$@\""),
                }
                self.out.push(';');
                self.newline("do\n");
                self.indent += INDENT;
                self.list(&f.body.list);
                self.semicolon();
                self.indent -= INDENT;
                self.newline("done");
            }
            CompoundCommand::CaseClause(c) => {
                self.out
                    .push_str(&format!("case {} in ", word_text(&c.value.value)));
                self.indent += INDENT;
                for item in &c.cases {
                    let pats: Vec<&str> = item.patterns.iter().map(|w| w.value.as_str()).collect();
                    self.newline(&format!("{})\n", pats.join(" | ")));
                    self.indent += INDENT;
                    if let Some(cmd) = &item.cmd {
                        self.list(cmd);
                    }
                    self.indent -= INDENT;
                    self.newline(match item.post_action {
                        CaseItemPostAction::ExitCase => ";;",
                        CaseItemPostAction::UnconditionallyExecuteNextCaseItem => ";&",
                        CaseItemPostAction::ContinueEvaluatingCases => ";;&",
                    });
                }
                self.indent -= INDENT;
                self.newline("esac");
            }
            CompoundCommand::IfClause(i) => {
                let elses: Vec<&brush_parser::ast::ElseClause> = i.elses.iter().flatten().collect();
                self.if_chain(&i.condition, &i.then, &elses);
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                let word = if matches!(c, CompoundCommand::WhileClause(_)) {
                    "while "
                } else {
                    "until "
                };
                self.out.push_str(word);
                self.inline_list(&w.0);
                self.semicolon();
                self.out.push_str(" do\n");
                self.indent += INDENT;
                self.list(&w.1.list);
                self.indent -= INDENT;
                self.semicolon();
                self.newline("done");
            }
            CompoundCommand::Coprocess(c) => {
                // bash names an unnamed coprocess as it is named: COPROC.
                self.out.push_str("coproc ");
                self.out
                    .push_str(c.name.as_ref().map_or("COPROC", |n| n.value.as_str()));
                self.out.push(' ');
                self.command(&c.body);
            }
        }
    }

    /// `if … fi`; bash shows each `elif` as an `if` nested in the `else`.
    fn if_chain(
        &mut self,
        condition: &CompoundList,
        then: &CompoundList,
        elses: &[&brush_parser::ast::ElseClause],
    ) {
        self.out.push_str("if ");
        self.inline_list(condition);
        self.semicolon();
        self.out.push_str(" then\n");
        self.indent += INDENT;
        self.list(then);
        self.indent -= INDENT;
        if let Some((first, rest)) = elses.split_first() {
            self.semicolon();
            self.newline("else\n");
            self.indent += INDENT;
            match &first.condition {
                Some(c) => {
                    self.pad();
                    self.if_chain(c, &first.body, rest);
                }
                None => self.list(&first.body),
            }
            self.indent -= INDENT;
        }
        self.semicolon();
        self.newline("fi");
    }

    fn simple(&mut self, s: &SimpleCommand) {
        let mut words: Vec<String> = Vec::new();
        let mut redirs: Vec<&IoRedirect> = Vec::new();
        let mut named: Vec<(String, &IoRedirect)> = Vec::new();
        let items: Vec<Option<&CommandPrefixOrSuffixItem>> = s
            .prefix
            .iter()
            .flat_map(|p| p.0.iter())
            .map(Some)
            .chain(std::iter::once(None))
            .chain(s.suffix.iter().flat_map(|p| p.0.iter()).map(Some))
            .collect();
        let mut skip = false;
        for (i, item) in items.iter().copied().enumerate() {
            if std::mem::take(&mut skip) {
                continue;
            }
            // `{name}>file`: the word before the redirection names its descriptor.
            if let (
                Some(CommandPrefixOrSuffixItem::Word(w)),
                Some(Some(CommandPrefixOrSuffixItem::IoRedirect(r @ IoRedirect::File(None, ..)))),
            ) = (item, items.get(i + 1))
                && is_fd_name(&w.value)
            {
                named.push((w.value.clone(), r));
                skip = true;
                continue;
            }
            match item {
                None => {
                    if let Some(w) = &s.word_or_name {
                        words.push(word_text(&w.value));
                    }
                }
                Some(CommandPrefixOrSuffixItem::Word(w)) => words.push(word_text(&w.value)),
                Some(CommandPrefixOrSuffixItem::AssignmentWord(_, w)) => {
                    words.push(word_text(&w.value));
                }
                Some(CommandPrefixOrSuffixItem::IoRedirect(r)) => redirs.push(r),
                Some(CommandPrefixOrSuffixItem::ProcessSubstitution(kind, sub)) => {
                    let k = match kind {
                        brush_parser::ast::ProcessSubstitutionKind::Read => '<',
                        brush_parser::ast::ProcessSubstitutionKind::Write => '>',
                    };
                    words.push(format!("{k}({})", sub.list));
                }
            }
        }
        self.out.push_str(&words.join(" "));
        let mut texts: Vec<String> = Vec::new();
        for r in redirs {
            texts.push(self.redirect_text(r, None));
        }
        for (label, r) in named {
            texts.push(self.redirect_text(r, Some(&label)));
        }
        if !texts.is_empty() {
            if !words.is_empty() {
                self.out.push(' ');
            }
            self.out.push_str(&texts.join(" "));
        }
    }

    fn redirects(&mut self, rs: &[IoRedirect]) {
        let texts: Vec<String> = rs.iter().map(|r| self.redirect_text(r, None)).collect();
        self.out.push_str(&texts.join(" "));
    }

    /// One redirection's text; a here-document's body goes to [`Printer::pending`].
    fn redirect_text(&mut self, r: &IoRedirect, fd_name: Option<&str>) -> String {
        let (text, body) = redirect(r, fd_name);
        self.pending.push_str(&body);
        text
    }
}

/// Whether a word is a `{name}` (or `{name[N]}`) naming a redirection's descriptor.
fn is_fd_name(word: &str) -> bool {
    word.strip_prefix('{')
        .and_then(|v| v.strip_suffix('}'))
        .is_some_and(|inner| {
            let name = inner.split_once('[').map_or(inner, |(n, _)| n);
            crate::shell::builtins::is_name(name)
        })
}

/// A word of a simple command as bash shows it: `$'…'` decoded ([`ansi_c_as_single`]) and
/// command substitutions printed from their parsed form ([`substitutions_reprinted`]).
fn word_text(word: &str) -> String {
    substitutions_reprinted(&ansi_c_as_single(word))
}

/// `word` with the body of each `$( )` printed as bash prints a command it parsed:
/// `$( echo  a ;  echo b )` is shown as `$(echo a; echo b)`. Only bodies of one line made
/// of simple commands are reprinted (bash's layout of compound commands there is its own).
fn substitutions_reprinted(word: &str) -> String {
    if !word.contains("$(") || word.contains(super::parse::rewrite::SUBST_MARK) {
        return word.to_string();
    }
    let mut out = word.to_string();
    for (start, end) in super::parse::rewrite::substitution_bodies(word)
        .into_iter()
        .rev()
    {
        let Some(body) = word.get(start..end) else {
            continue;
        };
        if body.trim().is_empty() || body.contains("<<") {
            continue;
        }
        let Ok(program) = super::parse::program(body) else {
            continue;
        };
        // Each line of the body printed as outside a function, the lines kept.
        if program.complete_commands.is_empty() {
            continue;
        }
        let mut p = Printer {
            flat: true,
            ..Printer::default()
        };
        for (i, line) in program.complete_commands.iter().enumerate() {
            if i > 0 {
                p.out.push('\n');
            }
            p.list(line);
        }
        // `$( (…) )` keeps its blank: `$((` would open arithmetic.
        if p.out.starts_with('(') {
            p.out.insert(0, ' ');
        }
        out.replace_range(start..end, &p.finish());
    }
    out
}

/// A word with each `$'…'` outside double quotes as bash keeps it once read: its text,
/// decoded, in single quotes (`$'a\tb'` is shown as `'a<TAB>b'`).
fn ansi_c_as_single(word: &str) -> String {
    if !word.contains("$'") && !word.contains("$\"") {
        return word.to_string();
    }
    let chars: Vec<char> = word.chars().collect();
    let mut out = String::with_capacity(word.len());
    let mut in_double = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                out.push(c);
                if let Some(&n) = chars.get(i + 1) {
                    out.push(n);
                }
                i += 2;
                continue;
            }
            '"' => in_double = !in_double,
            '\'' if !in_double => {
                // A single-quoted string is copied as it is.
                let end = chars[i + 1..]
                    .iter()
                    .position(|&q| q == '\'')
                    .map_or(chars.len(), |p| i + 1 + p);
                out.extend(&chars[i..(end + 1).min(chars.len())]);
                i = end + 1;
                continue;
            }
            // `$"…"` (a translatable string) is kept as the plain `"…"` it reads as.
            '$' if !in_double && chars.get(i + 1) == Some(&'"') => {
                i += 1;
                continue;
            }
            '$' if !in_double && chars.get(i + 1) == Some(&'\'') => {
                let mut j = i + 2;
                while j < chars.len() && chars[j] != '\'' {
                    j += if chars[j] == '\\' { 2 } else { 1 };
                }
                let body: String = chars[i + 2..j.min(chars.len())].iter().collect();
                let text = crate::shell::expand::ansi_c_decode(&body);
                if text == "'" {
                    // bash's `sh_single_quote` writes a lone quote as `\'`.
                    out.push_str("\\'");
                } else {
                    out.push('\'');
                    out.push_str(&text.replace('\'', "'\\''"));
                    out.push('\'');
                }
                i = j + 1;
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    out
}

/// One redirection as bash prints it: `> file`, `2>&1`, `<<< word`, with the body of a
/// here-document apart (empty for the others). `fd_name` is the `{name}` that names its
/// descriptor.
fn redirect(r: &IoRedirect, fd_name: Option<&str>) -> (String, String) {
    let text = match r {
        IoRedirect::File(fd, kind, target) => {
            let mut fd = fd.map(|n| n.to_string()).unwrap_or_default();
            if let Some(name) = fd_name {
                fd = name.to_string();
            }
            let target = match target {
                IoFileRedirectTarget::Filename(w) | IoFileRedirectTarget::Duplicate(w) => {
                    // `{name}>file` after a compound command (see parse::rewrite).
                    match super::parse::rewrite::named_fd_target(&w.value) {
                        Some((name, rest)) => {
                            fd = format!("{{{name}}}");
                            rest.to_string()
                        }
                        None => word_text(&w.value),
                    }
                }
                IoFileRedirectTarget::Fd(n) => n.to_string(),
                IoFileRedirectTarget::ProcessSubstitution(k, s) => {
                    let k = match k {
                        brush_parser::ast::ProcessSubstitutionKind::Read => '<',
                        brush_parser::ast::ProcessSubstitutionKind::Write => '>',
                    };
                    format!("{k}({})", s.list)
                }
            };
            match kind {
                // bash names the descriptor of a duplication, and closes with `>&-`.
                IoFileRedirectKind::DuplicateInput | IoFileRedirectKind::DuplicateOutput => {
                    let input = matches!(kind, IoFileRedirectKind::DuplicateInput);
                    // A descriptor number or `-` gets its default descriptor named; a word
                    // to expand (`>&$fd`) is printed as written.
                    let number = target == "-"
                        || (!target.is_empty() && target.bytes().all(|b| b.is_ascii_digit()));
                    let fd = if fd.is_empty() && !number || fd_name.is_some() {
                        fd
                    } else if fd.is_empty() {
                        if input { "0" } else { "1" }.to_string()
                    } else {
                        fd
                    };
                    if target == "-" {
                        format!("{fd}>&-")
                    } else {
                        format!("{fd}{kind}{target}")
                    }
                }
                // bash names the descriptor of `<>` unless it is 1 (its printer tests
                // for the default of `>`).
                IoFileRedirectKind::ReadAndWrite if fd_name.is_none() => {
                    let fd = match fd.as_str() {
                        "" => "0",
                        "1" => "",
                        other => other,
                    };
                    format!("{fd}{kind} {target}")
                }
                _ => format!("{fd}{kind} {target}"),
            }
        }
        IoRedirect::OutputAndError(w, append) => {
            format!(
                "&>{} {}",
                if *append { ">" } else { "" },
                word_text(&w.value)
            )
        }
        IoRedirect::HereString(fd, w) => {
            let fd = fd.map(|n| n.to_string()).unwrap_or_default();
            format!("{fd}<<< {}", word_text(&w.value))
        }
        IoRedirect::HereDocument(fd, h) => {
            let fd = fd.map(|n| n.to_string()).unwrap_or_default();
            let dash = if h.remove_tabs { "-" } else { "" };
            let end = &h.here_end.value;
            let bare: String = end
                .chars()
                .filter(|c| !matches!(c, '\'' | '"' | '\\'))
                .collect();
            // A quoted delimiter in any form is shown in single quotes.
            let open = if bare.len() == end.len() {
                bare.clone()
            } else {
                format!("'{bare}'")
            };
            let body = if h.remove_tabs {
                h.doc
                    .value
                    .split_inclusive('\n')
                    .map(|l| l.trim_start_matches('\t'))
                    .collect()
            } else {
                h.doc.value.clone()
            };
            return (format!("{fd}<<{dash}{open}"), format!("{body}{bare}\n"));
        }
    };
    (text, String::new())
}

/// A `[[ ]]` expression as bash prints it.
fn cond(e: &ExtendedTestExpr) -> String {
    match e {
        ExtendedTestExpr::And(l, r) => format!("{} && {}", cond(l), cond(r)),
        ExtendedTestExpr::Or(l, r) => format!("{} || {}", cond(l), cond(r)),
        ExtendedTestExpr::Not(x) => format!("! {}", cond(x)),
        ExtendedTestExpr::Parenthesized(x) => format!("( {} )", cond(x)),
        ExtendedTestExpr::UnaryTest(p, w) => format!("{p} {}", word_text(&w.value)),
        ExtendedTestExpr::BinaryTest(p, l, r) => {
            format!("{} {p} {}", word_text(&l.value), word_text(&r.value))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(src: &str) -> String {
        let program = crate::shell::parse_program(src).expect("parses");
        let item = &program.complete_commands[0].0[0];
        let Command::Function(f) = &item.0.first.seq[0] else {
            panic!("not a function");
        };
        function(&f.fname.value, f)
    }

    #[test]
    fn substitutions_are_reprinted() {
        assert_eq!(
            printed("f() { x=$( echo  a ;  echo b ); y=\"$(  ls   -l  )\"; }"),
            "f () \n{ \n    x=$(echo a; echo b);\n    y=\"$(ls -l)\"\n}"
        );
        assert_eq!(
            printed("f() { echo $(a & b) $(( 1+2 )) `x   y`; }"),
            "f () \n{ \n    echo $(a & b) $(( 1+2 )) `x   y`\n}"
        );
    }

    /// Layouts observed from bash 5.2.15's `declare -f`.
    #[test]
    fn layouts_like_bash() {
        assert_eq!(printed("f() { echo hi; }"), "f () \n{ \n    echo hi\n}");
        assert_eq!(
            printed(
                "f() { local x=1; if [ \"$x\" = 1 ]; then echo one; else echo other; fi; for i in a b; do echo $i; done; }"
            ),
            "f () \n{ \n    local x=1;\n    if [ \"$x\" = 1 ]; then\n        echo one;\n    else\n        echo other;\n    fi;\n    for i in a b;\n    do\n        echo $i;\n    done\n}"
        );
        assert_eq!(
            printed("f() { echo x > /dev/null 2>&1 && echo y || echo z; }"),
            "f () \n{ \n    echo x > /dev/null 2>&1 && echo y || echo z\n}"
        );
    }
}

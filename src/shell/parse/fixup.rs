//! Puts into a parsed program what brush-parser loses of the text it read:
//!
//! - the blanks of subscripts and `${ }` that [`super::rewrite`] carried through the
//!   tokenizer as private-use characters (`h[three word]=3`, `${x:-a   b}`), in every word
//!   of the tree;
//! - the bodies of command substitutions that the rewrite hid from the tokenizer;
//! - the parts of an arithmetic `for` header as written: brush-parser rebuilds each part
//!   from its tokens and drops the blanks around them, which `declare -f` shows (bash keeps
//!   a part as written after its leading blanks).

use brush_parser::ast::{
    self, AndOrList, ArithmeticForClauseCommand, Assignment, AssignmentName, AssignmentValue,
    Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoRedirect, Program,
    SimpleCommand,
};

use super::rewrite;

/// What a parsed program needs put back, read from the text it was parsed from.
pub struct Fixup<'a> {
    /// The text the parser read (after [`rewrite::for_parser`]).
    src: &'a str,
    /// Whether blank markers may be in the program.
    markers: bool,
    /// Whether command substitution bodies hidden from the tokenizer may be in it.
    hidden: bool,
    /// Byte offset of each character of `src`, when it is not all ASCII (the parser's
    /// positions count characters).
    char_offsets: Option<Vec<usize>>,
}

impl<'a> Fixup<'a> {
    pub fn new(src: &'a str) -> Self {
        Fixup {
            src,
            markers: src.contains(rewrite::MARKERS),
            hidden: src.contains(rewrite::SUBST_MARK),
            char_offsets: None,
        }
    }

    /// Whether anything in a program parsed from `src` may need fixing.
    pub fn needed(&self) -> bool {
        self.markers || self.hidden || self.src.contains("for") || spaced_paren_pair(self.src)
    }

    pub fn program(&mut self, p: &mut Program) {
        for c in &mut p.complete_commands {
            self.list(c);
        }
    }

    fn list(&mut self, l: &mut CompoundList) {
        for item in &mut l.0 {
            self.and_or(&mut item.0);
        }
    }

    fn and_or(&mut self, a: &mut AndOrList) {
        for c in &mut a.first.seq {
            self.command(c);
        }
        for more in &mut a.additional {
            let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = more;
            for c in &mut p.seq {
                self.command(c);
            }
        }
    }

    fn command(&mut self, c: &mut Command) {
        match c {
            Command::Simple(s) => self.simple(s),
            Command::Compound(c, r) => {
                self.compound(c);
                if let Some(r) = r {
                    self.redirects(&mut r.0);
                }
            }
            Command::Function(f) => {
                self.word(&mut f.fname);
                self.compound(&mut f.body.0);
                if let Some(r) = &mut f.body.1 {
                    self.redirects(&mut r.0);
                }
            }
            Command::ExtendedTest(t, r) => {
                self.test_expr(&mut t.expr);
                if let Some(r) = r {
                    self.redirects(&mut r.0);
                }
            }
        }
    }

    fn compound(&mut self, c: &mut CompoundCommand) {
        if let CompoundCommand::Arithmetic(a) = c
            && let Some(sub) = self.subshell_of_arithmetic(a)
        {
            *c = CompoundCommand::Subshell(sub);
        }
        match c {
            CompoundCommand::Arithmetic(a) => self.text(&mut a.expr.value),
            CompoundCommand::ArithmeticForClause(f) => {
                self.arith_for(f);
                self.list(&mut f.body.list);
            }
            CompoundCommand::BraceGroup(b) => self.list(&mut b.list),
            CompoundCommand::Subshell(s) => self.list(&mut s.list),
            CompoundCommand::ForClause(f) => {
                for w in f.values.iter_mut().flatten() {
                    self.word(w);
                }
                self.list(&mut f.body.list);
            }
            CompoundCommand::CaseClause(c) => {
                self.word(&mut c.value);
                for item in &mut c.cases {
                    for w in &mut item.patterns {
                        self.word(w);
                    }
                    if let Some(l) = &mut item.cmd {
                        self.list(l);
                    }
                }
            }
            CompoundCommand::IfClause(i) => {
                self.list(&mut i.condition);
                self.list(&mut i.then);
                for e in i.elses.iter_mut().flatten() {
                    if let Some(c) = &mut e.condition {
                        self.list(c);
                    }
                    self.list(&mut e.body);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&mut w.0);
                self.list(&mut w.1.list);
            }
            CompoundCommand::Coprocess(c) => {
                if let Some(w) = &mut c.name {
                    self.word(w);
                }
                self.command(&mut c.body);
            }
        }
    }

    fn redirects(&mut self, r: &mut [IoRedirect]) {
        for r in r {
            match r {
                IoRedirect::File(_, _, ast::IoFileRedirectTarget::ProcessSubstitution(_, s)) => {
                    self.list(&mut s.list);
                }
                IoRedirect::File(
                    _,
                    _,
                    ast::IoFileRedirectTarget::Filename(w)
                    | ast::IoFileRedirectTarget::Duplicate(w),
                )
                | IoRedirect::HereString(_, w)
                | IoRedirect::OutputAndError(w, _) => self.word(w),
                IoRedirect::File(_, _, ast::IoFileRedirectTarget::Fd(_))
                | IoRedirect::HereDocument(..) => {}
            }
        }
    }

    fn test_expr(&mut self, e: &mut ast::ExtendedTestExpr) {
        match e {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.test_expr(a);
                self.test_expr(b);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => {
                self.test_expr(a);
            }
            ast::ExtendedTestExpr::UnaryTest(_, w) => self.word(w),
            ast::ExtendedTestExpr::BinaryTest(_, a, b) => {
                self.word(a);
                self.word(b);
            }
        }
    }

    /// Puts back what the rewrite hid of one word.
    fn word(&mut self, w: &mut ast::Word) {
        self.text(&mut w.value);
    }

    /// Puts back the hidden substitution bodies and the marked blanks of a piece of text.
    fn text(&mut self, t: &mut String) {
        if self.hidden {
            rewrite::decode_all(t);
        }
        if self.markers {
            rewrite::restore_blanks(t);
        }
    }

    fn simple(&mut self, s: &mut SimpleCommand) {
        let items = s
            .prefix
            .iter_mut()
            .flat_map(|p| p.0.iter_mut())
            .chain(s.suffix.iter_mut().flat_map(|p| p.0.iter_mut()));
        for item in items {
            match item {
                CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                    self.assignment(a);
                    self.word(w);
                }
                CommandPrefixOrSuffixItem::Word(w) => self.word(w),
                CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    self.list(&mut sub.list);
                }
                CommandPrefixOrSuffixItem::IoRedirect(r) => {
                    self.redirects(std::slice::from_mut(r));
                }
            }
        }
        if let Some(w) = &mut s.word_or_name {
            self.word(w);
        }
    }

    fn assignment(&mut self, a: &mut Assignment) {
        if let AssignmentName::ArrayElementName(_, index) = &mut a.name {
            self.text(index);
        }
        match &mut a.value {
            AssignmentValue::Scalar(w) => self.word(w),
            AssignmentValue::Array(items) => {
                for (k, v) in items {
                    if let Some(k) = k {
                        self.word(k);
                    }
                    self.word(v);
                }
            }
        }
    }

    /// `( ((expr)) )` as bash reads it: a subshell around an arithmetic command. brush's
    /// parser takes the first two `(` for the `((` of the command and the inner `(( ))`
    /// for parentheses of its expression; `None` unless the text has a blank between
    /// the first two `(`.
    fn subshell_of_arithmetic(
        &mut self,
        a: &ast::ArithmeticCommand,
    ) -> Option<ast::SubshellCommand> {
        let start = self.byte_at(a.loc.start.index)?;
        let rest = self.src[start..].strip_prefix('(')?;
        let inner = rest.trim_start_matches([' ', '\t', '\n']);
        if inner.len() == rest.len() || !inner.starts_with("((") {
            return None;
        }
        let inner = a.expr.value.trim().strip_prefix('(')?.strip_suffix(')')?;
        let value = inner.trim().to_string();
        // The interpreter and printer tell `(( x ))` from `((x))` by the command's span
        // (the parser drops the blanks): the inner command's is as if written alone.
        let blanks = if inner.starts_with([' ', '\t']) { 6 } else { 4 };
        let mut end = (*a.loc.start).clone();
        end.index += value.chars().count() + blanks;
        let loc = brush_parser::SourceSpan {
            start: a.loc.start.clone(),
            end: std::sync::Arc::new(end),
        };
        let arith = ast::ArithmeticCommand {
            expr: ast::UnexpandedArithmeticExpr { value },
            loc,
        };
        let pipeline = ast::Pipeline {
            timed: None,
            bang: false,
            seq: vec![Command::Compound(CompoundCommand::Arithmetic(arith), None)],
        };
        let item = ast::CompoundListItem(
            AndOrList {
                first: pipeline,
                additional: Vec::new(),
            },
            ast::SeparatorOperator::Sequence,
        );
        Some(ast::SubshellCommand {
            list: CompoundList(vec![item]),
            loc: a.loc.clone(),
        })
    }

    /// Byte offset in `src` of the parser's character position `index`.
    fn byte_at(&mut self, index: usize) -> Option<usize> {
        if self.src.is_ascii() {
            return (index <= self.src.len()).then_some(index);
        }
        let offsets = self
            .char_offsets
            .get_or_insert_with(|| self.src.char_indices().map(|(b, _)| b).collect::<Vec<_>>());
        offsets.get(index).copied()
    }

    /// The header parts of an arithmetic `for` as written.
    fn arith_for(&mut self, f: &mut ArithmeticForClauseCommand) {
        let Some(start) = self.byte_at(f.loc.start.index) else {
            return;
        };
        let Some(parts) = header_parts(&self.src[start..]) else {
            return;
        };
        let slots = [&mut f.initializer, &mut f.condition, &mut f.updater];
        for (slot, part) in slots.into_iter().zip(parts) {
            let part = part.trim_start_matches([' ', '\t', '\n']);
            // A part that is only blanks is as absent as an empty one.
            if part.trim().is_empty() {
                *slot = None;
            } else {
                let mut value = part.to_string();
                self.text(&mut value);
                *slot = Some(ast::UnexpandedArithmeticExpr { value });
            }
        }
    }
}

/// Whether `src` has a `(` followed by blanks and `((` (see
/// [`Fixup::subshell_of_arithmetic`]).
fn spaced_paren_pair(src: &str) -> bool {
    src.match_indices('(').any(|(at, _)| {
        let rest = &src[at + 1..];
        let inner = rest.trim_start_matches([' ', '\t', '\n']);
        inner.len() < rest.len() && inner.starts_with("((")
    })
}

/// The three parts of the header of the arithmetic `for` that `text` starts with
/// (`for ((a; b; c))`), as written; `None` when it is not one.
fn header_parts(text: &str) -> Option<[&str; 3]> {
    let rest = text.strip_prefix("for")?;
    let rest = rest.trim_start_matches([' ', '\t']);
    let rest = rest.strip_prefix("((")?;
    let base = text.len() - rest.len();
    let b = text.as_bytes();
    let mut i = base;
    let mut depth = 0usize;
    let mut cuts = Vec::with_capacity(2);
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == b'\\' && q == b'"' {
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'\\' => {
                i += 2;
                continue;
            }
            b'\'' | b'"' | b'`' => quote = Some(c),
            b'(' => depth += 1,
            b')' if depth > 0 => depth -= 1,
            b')' => {
                if cuts.len() != 2 || b.get(i + 1) != Some(&b')') {
                    return None;
                }
                let (a, c2) = (cuts[0], cuts[1]);
                return Some([&text[base..a], &text[a + 1..c2], &text[c2 + 1..i]]);
            }
            b';' if depth == 0 => {
                if cuts.len() == 2 {
                    return None;
                }
                cuts.push(i);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_for_headers_split_as_written() {
        assert_eq!(
            header_parts("for (( i = 0 ; i < 3 ; i++ )); do :; done"),
            Some([" i = 0 ", " i < 3 ", " i++ "])
        );
        assert_eq!(header_parts("for ((; ;)); do"), Some(["", " ", ""]));
        assert_eq!(
            header_parts("for ((i=$((1+1)); i<(3); i++))"),
            Some(["i=$((1+1))", " i<(3)", " i++"])
        );
        assert_eq!(header_parts("for x in a"), None);
    }
}

//! [`Node`] → the `regex` crate's syntax, for patterns without back-references: the
//! crate's automata keep `grep` fast on big files.

use std::fmt::Write as _;

use super::ast::{DOTLESS_I, Item, Look, Node, Set, high_byte, other_cases};

/// The pattern in the `regex` crate's syntax; `None` when it has a back-reference.
/// `ascii`: the C locale, for the crate's Unicode mode off (bytes of the upper half are
/// written `\xNN`). `icase`: the crate matches ignoring case; what its folding misses of
/// GNU's is spelled out.
pub(crate) fn translate(node: &Node, ascii: bool, icase: bool) -> Option<String> {
    translate_with(
        node,
        Mode {
            ascii,
            lines: false,
            icase,
        },
    )
}

/// The pattern for searching many newline-ended lines at once (`grep`'s whole-buffer
/// search, see [`super::LineFinder`]): nothing matches a newline (`.` and every bracket
/// expression leave it out), and the text's edges (`` \` ``, `\'`, `-x`) are the line's,
/// so with the crate's multi-line mode a match in the buffer lies within one line and is
/// exactly a match of that line alone. `None` when it has a back-reference or a newline.
pub(crate) fn translate_lines(node: &Node, ascii: bool, icase: bool) -> Option<String> {
    if node.has_char('\n') {
        return None;
    }
    translate_with(
        node,
        Mode {
            ascii,
            lines: true,
            icase,
        },
    )
}

#[derive(Clone, Copy)]
struct Mode {
    /// The C locale (the crate's Unicode mode off).
    ascii: bool,
    /// Lines mode: see [`translate_lines`].
    lines: bool,
    /// Case is ignored (the crate's own folding, and [`DOTLESS_I`] spelled out).
    icase: bool,
}

impl Mode {
    /// Whether `c` is folded with the letters of [`DOTLESS_I`] here.
    fn dotless(self, c: char) -> bool {
        self.icase && !self.ascii && DOTLESS_I.contains(&c)
    }
}

fn translate_with(node: &Node, mode: Mode) -> Option<String> {
    if node.has_backref() {
        return None;
    }
    let mut out = String::new();
    emit(node, mode, &mut out);
    Some(out)
}

fn emit(node: &Node, mode: Mode, out: &mut String) {
    match node {
        Node::Empty => out.push_str("(?:)"),
        // A letter is spelled out with GNU's counterparts, the crate's folding off.
        Node::Char(c) if mode.icase && !mode.ascii && c.is_alphabetic() => {
            out.push_str("(?-i:[");
            push_char(*c, out);
            for o in other_cases(*c) {
                push_char(o, out);
            }
            out.push_str("])");
        }
        // A byte that is no UTF-8 (held as its byte character) is that byte, even inside
        // a character of the text: GNU's matchers compare bytes.
        Node::Char(c) if !mode.ascii && high_byte(*c).is_some() => {
            out.push_str("(?-u:");
            push_char(*c, out);
            out.push(')');
        }
        Node::Char(c) => push_char(*c, out),
        Node::Any if mode.lines => out.push_str(r"[^\n]"),
        Node::Any => out.push('.'),
        Node::Set(set) => emit_set(set, mode, out),
        Node::Look(l) => out.push_str(match l {
            Look::LineStart => "^",
            Look::LineEnd => "$",
            Look::TextStart if mode.lines => "^",
            Look::TextEnd if mode.lines => "$",
            Look::TextStart => r"\A",
            Look::TextEnd => r"\z",
            Look::WordBoundary => r"\b",
            Look::NotWordBoundary => r"\B",
            Look::WordStart => r"\b{start}",
            Look::WordEnd => r"\b{end}",
            Look::NoWordBefore => r"\b{start-half}",
            Look::NoWordAfter => r"\b{end-half}",
        }),
        Node::Group(n, _) => {
            out.push('(');
            emit(n, mode, out);
            out.push(')');
        }
        Node::Backref(_) => out.push_str("[^\\s\\S]"),
        Node::Concat(v) => {
            for n in v {
                // Only an alternation needs a group to stay one item of a sequence.
                if matches!(n, Node::Alt(_)) {
                    out.push_str("(?:");
                    emit(n, mode, out);
                    out.push(')');
                } else {
                    emit(n, mode, out);
                }
            }
        }
        Node::Alt(v) => {
            for (i, n) in v.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                out.push_str("(?:");
                emit(n, mode, out);
                out.push(')');
            }
        }
        Node::Repeat(n, min, max) => {
            out.push_str("(?:");
            emit(n, mode, out);
            out.push(')');
            match (min, max) {
                (0, None) => out.push('*'),
                (1, None) => out.push('+'),
                (0, Some(1)) => out.push('?'),
                (a, None) => {
                    let _ = write!(out, "{{{a},}}");
                }
                (a, Some(b)) => {
                    let _ = write!(out, "{{{a},{b}}}");
                }
            }
        }
    }
}

fn push_char(c: char, out: &mut String) {
    if let Some(b) = high_byte(c) {
        let _ = write!(out, "\\x{b:02X}");
        return;
    }
    if regex_syntax_special(c) {
        out.push('\\');
    }
    out.push(c);
}

fn regex_syntax_special(c: char) -> bool {
    matches!(
        c,
        '\\' | '.'
            | '+'
            | '*'
            | '?'
            | '('
            | ')'
            | '|'
            | '['
            | ']'
            | '{'
            | '}'
            | '^'
            | '$'
            | '#'
            | '&'
            | '-'
            | '~'
    )
}

fn emit_set(set: &Set, mode: Mode, out: &mut String) {
    let ascii = mode.ascii;
    if set.items.is_empty() {
        out.push_str(match (set.negated, mode.lines) {
            (true, true) => r"[^\n]",
            (true, false) => r"[\s\S]",
            (false, _) => r"[^\s\S]",
        });
        return;
    }
    if mode.lines {
        // The set less the newline (a class such as [:space:] holds it too).
        out.push('[');
    }
    out.push('[');
    if set.negated {
        out.push('^');
    }
    for item in &set.items {
        match *item {
            Item::Char(c) => push_char(c, out),
            Item::Range(a, b) => {
                push_char(a, out);
                out.push('-');
                push_char(b, out);
            }
            Item::Class(n) => out.push_str(n.crate_syntax(ascii)),
        }
    }
    // The set's own members (before any `^`) that fold with ı take in all three.
    if DOTLESS_I
        .iter()
        .any(|&c| mode.dotless(c) && set.contains(c, false) != set.negated)
    {
        out.push_str("iIı");
    }
    out.push(']');
    if mode.lines {
        out.push_str(r"--\n]");
    }
}

//! [`Node`] → the `regex` crate's syntax, for patterns without back-references: the
//! crate's automata keep `grep` fast on big files.

use std::fmt::Write as _;

use super::ast::{Item, Look, Node, Set, high_byte};

/// The pattern in the `regex` crate's syntax; `None` when it has a back-reference.
/// `ascii`: the C locale, for the crate's Unicode mode off (bytes of the upper half are
/// written `\xNN`).
pub(crate) fn translate(node: &Node, ascii: bool) -> Option<String> {
    if node.has_backref() {
        return None;
    }
    let mut out = String::new();
    emit(node, ascii, &mut out);
    Some(out)
}

fn emit(node: &Node, ascii: bool, out: &mut String) {
    match node {
        Node::Empty => out.push_str("(?:)"),
        Node::Char(c) => push_char(*c, out),
        Node::Any => out.push('.'),
        Node::Set(set) => emit_set(set, ascii, out),
        Node::Look(l) => out.push_str(match l {
            Look::LineStart => "^",
            Look::LineEnd => "$",
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
            emit(n, ascii, out);
            out.push(')');
        }
        Node::Backref(_) => out.push_str("[^\\s\\S]"),
        Node::Concat(v) => {
            for n in v {
                // Only an alternation needs a group to stay one item of a sequence.
                if matches!(n, Node::Alt(_)) {
                    out.push_str("(?:");
                    emit(n, ascii, out);
                    out.push(')');
                } else {
                    emit(n, ascii, out);
                }
            }
        }
        Node::Alt(v) => {
            for (i, n) in v.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                out.push_str("(?:");
                emit(n, ascii, out);
                out.push(')');
            }
        }
        Node::Repeat(n, min, max) => {
            out.push_str("(?:");
            emit(n, ascii, out);
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

fn emit_set(set: &Set, ascii: bool, out: &mut String) {
    if set.items.is_empty() {
        out.push_str(if set.negated { r"[\s\S]" } else { r"[^\s\S]" });
        return;
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
    out.push(']');
}

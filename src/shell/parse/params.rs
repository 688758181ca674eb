//! `${ }` expressions brush-parser's word parser reads differently from bash, marked in the
//! word's text before it parses and put back in the pieces after:
//!
//! - `${!-word}`, `${!=word}`, `${!+word}`, `${!:-word}` (and `${!:1}`…): bash reads the
//!   `!` as the special parameter `$!` followed by the operator, since `-`, `=`, `+` and `:`
//!   cannot be indirected through; brush takes the `!` for indirection and fails. The `!`
//!   is written as the name [`BANG`].
//! - `${#-}`, `${#?}`: the length of `$-` and `$?`; brush reads `$#` with an empty default
//!   or error message. The `-` or `?` is written as the name [`DASH`] or [`QUESTION`].
//! - `${a:1:2:3}`: bash's substring length runs to the `}`, colons included (and is then
//!   an arithmetic error); brush stops it at the next `:` and fails. Those colons are
//!   written as [`COLON`].
//!
//! The scan runs on the text with its command substitutions already encoded (see
//! [`super::rewrite::encode_substitutions`]), so it never looks inside one; it steps over
//! single quotes and backslash escapes. Marks that land in literal text are put back as
//! written.

use brush_parser::word::{
    Parameter, ParameterExpr, SpecialParameter, WordPiece, WordPieceWithSource,
};

use super::rewrite::Shift;

/// Stands for the `!` of `${!-word}` (a name no script uses).
pub const BANG: &str = "__forkbox_special_bang__";
/// Stands for the `-` of `${#-}`.
pub const DASH: &str = "__forkbox_special_dash__";
/// Stands for the `?` of `${#?}`.
pub const QUESTION: &str = "__forkbox_special_question__";
/// Stands for a `:` in the length of `${a:1:2:3}`.
pub const COLON: char = '\u{F0104}';

/// `text` with the constructs of the module header marked, and where it grew; `None` when
/// it has none.
/// In a here-document body (`heredoc`) single quotes are ordinary characters.
pub fn mark(text: &str, heredoc: bool) -> Option<(String, Vec<Shift>)> {
    if !text.contains("${") {
        return None;
    }
    let s = text.as_bytes();
    let mut edits: Vec<(usize, usize, &str)> = Vec::new();
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'\'' if !heredoc => {
                i = s[i + 1..]
                    .iter()
                    .position(|&b| b == b'\'')
                    .map_or(s.len(), |p| i + p + 2)
            }
            b'$' if s.get(i + 1) == Some(&b'{') => {
                head(s, i + 2, &mut edits);
                i += 2;
            }
            _ => i += 1,
        }
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 32);
    let mut shifts = Vec::with_capacity(edits.len());
    let mut copied = 0;
    for (from, to, with) in edits {
        out.push_str(&text[copied..from]);
        out.push_str(with);
        copied = to;
        shifts.push(Shift {
            end: out.len(),
            added: with.len() as isize - (to - from) as isize,
        });
    }
    out.push_str(&text[copied..]);
    Some((out, shifts))
}

/// Looks at the inside of one `${` (from `i`) and records the edits it needs.
fn head(s: &[u8], i: usize, edits: &mut Vec<(usize, usize, &'static str)>) {
    const COLON_STR: &str = "\u{F0104}";
    match (s.get(i), s.get(i + 1), s.get(i + 2)) {
        (Some(b'!'), Some(b'-' | b'=' | b'+' | b':'), _) => {
            edits.push((i, i + 1, BANG));
            return;
        }
        (Some(b'#'), Some(b'-'), Some(b'}')) => {
            edits.push((i + 1, i + 2, DASH));
            return;
        }
        (Some(b'#'), Some(b'?'), Some(b'}')) => {
            edits.push((i + 1, i + 2, QUESTION));
            return;
        }
        _ => {}
    }
    // `${name:offset:length}` (a name, a positional or special parameter, a subscript).
    let mut j = i;
    if s.get(j) == Some(&b'!') {
        j += 1;
    }
    match s.get(j) {
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
            while s
                .get(j)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            {
                j += 1;
            }
            if s.get(j) == Some(&b'[') {
                match close(s, j + 1, b']') {
                    Some(e) => j = e + 1,
                    None => return,
                }
            }
        }
        Some(c) if c.is_ascii_digit() => {
            while s.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
        }
        Some(b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!') => j += 1,
        _ => return,
    }
    if s.get(j) != Some(&b':') || matches!(s.get(j + 1), Some(b'-' | b'=' | b'?' | b'+')) {
        return;
    }
    let Some(after_offset) = close(s, j + 1, b':') else {
        return;
    };
    if s.get(after_offset) != Some(&b':') {
        return;
    }
    // The length: every top-level `:` up to the closing `}` is part of it.
    let mut k = after_offset + 1;
    while let Some(e) = close(s, k, b':') {
        if s.get(e) != Some(&b':') {
            return;
        }
        edits.push((e, e + 1, COLON_STR));
        k = e + 1;
    }
}

/// From `i` inside a `${ }`: the index of the first top-level `stop` or closing `}`
/// (whichever comes first), stepping over quotes and nested brackets; `None` at the end.
fn close(s: &[u8], mut i: usize, stop: u8) -> Option<usize> {
    let mut depth = 0usize;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'\'' => i += s[i + 1..].iter().position(|&b| b == b'\'')? + 2,
            b'"' => {
                i += 1;
                while i < s.len() && s[i] != b'"' {
                    i += if s[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' if depth > 0 => {
                depth -= 1;
                i += 1;
            }
            b'}' if depth > 0 => {
                depth -= 1;
                i += 1;
            }
            c if depth == 0 && (c == stop || c == b'}') => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Puts back what [`mark`] wrote: the special parameters in expansions, the text as
/// written everywhere else.
pub fn unmark(pieces: &mut [WordPieceWithSource]) {
    for p in pieces {
        match &mut p.piece {
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                unmark(inner);
            }
            WordPiece::ParameterExpansion(e) => expression(e),
            WordPiece::Text(t)
            | WordPiece::SingleQuotedText(t)
            | WordPiece::AnsiCQuotedText(t)
            | WordPiece::EscapeSequence(t)
            | WordPiece::BackquotedCommandSubstitution(t) => restore(t),
            WordPiece::ArithmeticExpression(a) => restore(&mut a.value),
            _ => {}
        }
    }
}

/// `text` as written.
pub fn restore(text: &mut String) {
    if text.contains("__forkbox_special_") || text.contains(COLON) {
        *text = text
            .replace(BANG, "!")
            .replace(DASH, "-")
            .replace(QUESTION, "?")
            .replace(COLON, ":");
    }
}

fn expression(e: &mut ParameterExpr) {
    use ParameterExpr as E;
    let (parameter, words): (&mut Parameter, Vec<&mut String>) = match e {
        E::Parameter { parameter, .. }
        | E::ParameterLength { parameter, .. }
        | E::Transform { parameter, .. } => (parameter, Vec::new()),
        E::UseDefaultValues {
            parameter,
            default_value: w,
            ..
        }
        | E::AssignDefaultValues {
            parameter,
            default_value: w,
            ..
        }
        | E::IndicateErrorIfNullOrUnset {
            parameter,
            error_message: w,
            ..
        }
        | E::UseAlternativeValue {
            parameter,
            alternative_value: w,
            ..
        }
        | E::RemoveSmallestSuffixPattern {
            parameter,
            pattern: w,
            ..
        }
        | E::RemoveLargestSuffixPattern {
            parameter,
            pattern: w,
            ..
        }
        | E::RemoveSmallestPrefixPattern {
            parameter,
            pattern: w,
            ..
        }
        | E::RemoveLargestPrefixPattern {
            parameter,
            pattern: w,
            ..
        }
        | E::UppercaseFirstChar {
            parameter,
            pattern: w,
            ..
        }
        | E::UppercasePattern {
            parameter,
            pattern: w,
            ..
        }
        | E::LowercaseFirstChar {
            parameter,
            pattern: w,
            ..
        }
        | E::LowercasePattern {
            parameter,
            pattern: w,
            ..
        } => (parameter, w.iter_mut().collect()),
        E::Substring {
            parameter,
            offset,
            length,
            ..
        } => {
            let mut w = vec![&mut offset.value];
            if let Some(l) = length {
                w.push(&mut l.value);
            }
            (parameter, w)
        }
        E::ReplaceSubstring {
            parameter,
            pattern,
            replacement,
            ..
        } => {
            let mut w = vec![pattern];
            w.extend(replacement.iter_mut());
            (parameter, w)
        }
        _ => return,
    };
    if let Parameter::Named(name) = parameter {
        let special = match name.as_str() {
            BANG => Some(SpecialParameter::LastBackgroundProcessId),
            DASH => Some(SpecialParameter::CurrentOptionFlags),
            QUESTION => Some(SpecialParameter::LastExitStatus),
            _ => None,
        };
        if let Some(sp) = special {
            *parameter = Parameter::Special(sp);
        }
    }
    for w in words {
        restore(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(t: &str) -> String {
        mark(t, false)
            .map(|(s, _)| s)
            .unwrap_or_else(|| t.to_string())
    }

    #[test]
    fn marks_what_brush_misreads_only() {
        assert_eq!(marked("${!-none}"), format!("${{{BANG}-none}}"));
        assert_eq!(marked("${#-}"), format!("${{#{DASH}}}"));
        assert_eq!(marked("${#?}"), format!("${{#{QUESTION}}}"));
        assert_eq!(marked("${a:1:2:3}"), format!("${{a:1:2{COLON}3}}"));
        for same in [
            "${!x}",
            "${#-x}",
            "${#}",
            "${a:1:2}",
            "${a:-x:y}",
            "'${!-x}'",
            "${!#}",
        ] {
            assert_eq!(marked(same), same);
        }
        assert_eq!(
            marked("${a[1:2]:(1?2:3):4:5}"),
            format!("${{a[1:2]:(1?2:3):4{COLON}5}}")
        );
    }
}

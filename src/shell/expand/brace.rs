//! Brace expansion: `a{b,c}d`, `{1..10..2}`, `{a..z}`, bounded in words and in the
//! unclosed braces it parses.

use super::*;

/// Most `{` left unclosed in a word that brace expansion still parses. brush-parser's
/// brace parser backtracks over each of them (18 take seconds, 24 hours); real words have
/// none or one.
pub(super) const MAX_UNCLOSED_BRACES: usize = 4;

/// How many `{` of `word` no `}` closes, outside quotes, escapes and `${ }`.
pub(super) fn unclosed_braces(word: &str) -> usize {
    let b = word.as_bytes();
    let (mut open, mut params, mut i) = (0usize, 0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'\'' => {
                while i + 1 < b.len() && b[i + 1] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b'$' if b.get(i + 1) == Some(&b'{') => {
                params += 1;
                i += 1;
            }
            b'{' => open += 1,
            b'}' if params > 0 && open == 0 => params -= 1,
            b'}' => open = open.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    open
}

/// Most words one brace expansion may produce (`{1..100000000}` would exhaust memory).
pub const MAX_BRACE_WORDS: usize = 1 << 20;

/// Brace expansion of one raw word (`a{b,c}` → `ab ac`); words without braces pass through.
pub(crate) fn brace_expand(word: &str) -> R<Vec<String>> {
    if !word.contains('{') || unclosed_braces(word) > MAX_UNCLOSED_BRACES {
        // Past the bound the word stays as it is: unclosed braces are literal in bash
        // anyway, and brush-parser's brace parser takes time exponential in them.
        return Ok(vec![word.to_string()]);
    }
    // A word brush-parser cannot take (a bound past `i64`, nesting past the bound) stays
    // as it is, like bash.
    match crate::shell::parse::guarded(word, word::parse_brace_expansions) {
        Ok(Some(Some(pieces))) => {
            let mut out = vec![String::new()];
            let mut widths = sequence_widths(word).into_iter();
            expand_brace_pieces(&pieces, &mut out, &mut widths)?;
            Ok(out)
        }
        _ => Ok(vec![word.to_string()]),
    }
}

/// The zero-padded width of each numeric sequence `{A..B[..C]}` of `word`, in order (0 for
/// none): bash pads every term to the longer bound when either bound has a leading zero
/// (`{01..10}`, `{-05..3}`). Brace expansion's parse keeps only the numbers, and visits its
/// sequences in the order they appear in the text, which is the order given here.
fn sequence_widths(word: &str) -> Vec<usize> {
    let b = word.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'\'' => {
                while i + 1 < b.len() && b[i + 1] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b'{' => {
                if let Some((w, len)) = numeric_sequence(&word[i + 1..]) {
                    out.push(w);
                    i += len;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// For text just after a `{`: if it is `A..B[..C]}` with integers, the padded width of the
/// terms (0 for none) and the length of the text up to the `}`.
fn numeric_sequence(text: &str) -> Option<(usize, usize)> {
    let end = text.find('}')?;
    let inner = &text[..end];
    let mut parts = inner.split("..");
    let (a, b) = (parts.next()?, parts.next()?);
    let c = parts.next();
    if parts.next().is_some() {
        return None;
    }
    let is_int = |s: &str| {
        let d = s.strip_prefix(['-', '+']).unwrap_or(s);
        !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())
    };
    if !is_int(a) || !is_int(b) || !c.is_none_or(is_int) {
        return None;
    }
    let padded = |s: &str| {
        let d = s.strip_prefix(['-', '+']).unwrap_or(s);
        d.len() > 1 && d.starts_with('0')
    };
    let width = if padded(a) || padded(b) {
        a.len().max(b.len())
    } else {
        0
    };
    Some((width, end + 1))
}

/// A character from a `{a..z}` sequence as word text: characters that mean something in
/// a word (`` ` ``, `$`, quotes) are escaped, so they stay themselves.
fn literal_char(c: char) -> String {
    if c.is_ascii_alphanumeric() {
        c.to_string()
    } else if c == '\\' {
        // bash's quote removal takes a lone backslash away, leaving an empty word.
        "''".to_string()
    } else {
        format!("\\{c}")
    }
}

pub(super) fn expand_brace_pieces(
    pieces: &[BraceExpressionOrText],
    acc: &mut Vec<String>,
    widths: &mut std::vec::IntoIter<usize>,
) -> R<()> {
    for p in pieces {
        match p {
            BraceExpressionOrText::Text(t) => {
                for a in acc.iter_mut() {
                    a.push_str(t);
                }
            }
            BraceExpressionOrText::Expr(members) => {
                let mut alts: Vec<String> = Vec::new();
                for m in members {
                    match m {
                        BraceExpressionMember::NumberSequence {
                            start,
                            end,
                            increment,
                        } => {
                            let terms = sequence(*start, *end, *increment, MAX_BRACE_WORDS)
                                .ok_or_else(brace_limit)?;
                            let width = widths.next().unwrap_or(0);
                            alts.extend(terms.into_iter().map(|v| format!("{v:0width$}")));
                            if alts.len() > MAX_BRACE_WORDS {
                                return Err(brace_limit());
                            }
                        }
                        BraceExpressionMember::CharSequence {
                            start,
                            end,
                            increment,
                        } => {
                            let (s, e) = (i64::from(u32::from(*start)), i64::from(u32::from(*end)));
                            let terms = sequence(s, e, *increment, MAX_BRACE_WORDS)
                                .ok_or_else(brace_limit)?;
                            alts.extend(
                                terms
                                    .into_iter()
                                    .filter_map(|v| u32::try_from(v).ok().and_then(char::from_u32))
                                    .map(literal_char),
                            );
                            if alts.len() > MAX_BRACE_WORDS {
                                return Err(brace_limit());
                            }
                        }
                        BraceExpressionMember::Child(children) => {
                            let mut sub = vec![String::new()];
                            expand_brace_pieces(children, &mut sub, widths)?;
                            alts.extend(sub);
                        }
                    }
                }
                let mut next = Vec::with_capacity(acc.len() * alts.len());
                for a in acc.iter() {
                    for alt in &alts {
                        next.push(format!("{a}{alt}"));
                        if next.len() > MAX_BRACE_WORDS {
                            return Err(brace_limit());
                        }
                    }
                }
                *acc = next;
            }
        }
    }
    Ok(())
}

/// The terms of a brace sequence `{start..end..increment}`: from `start` towards `end` in
/// steps of `|increment|` (0 counts as 1, the sign is ignored, like bash), `end` included
/// when a step lands on it. `None` past `max` terms. Computed in `i128`, so no bound or
/// step near the ends of `i64` overflows.
pub(super) fn sequence(start: i64, end: i64, increment: i64, max: usize) -> Option<Vec<i64>> {
    let step = i128::from(increment).abs().max(1);
    let (start, end) = (i128::from(start), i128::from(end));
    let step = if start <= end { step } else { -step };
    let mut terms = Vec::new();
    let mut v = start;
    while (step > 0 && v <= end) || (step < 0 && v >= end) {
        if terms.len() >= max {
            return None;
        }
        // Between start and end, so within i64.
        terms.push(i64::try_from(v).ok()?);
        v += step;
    }
    Some(terms)
}

pub(super) fn brace_limit() -> ShellError {
    ShellError::Limit(format!(
        "brace expansion: more than {MAX_BRACE_WORDS} words"
    ))
}

//! Extended glob groups: parsing `@(a|b)`-style groups, and the matcher for patterns a
//! regular expression cannot express (`!(…)`).
//!
//! The matcher backtracks over the tokens but remembers every (tokens, text span) it has
//! decided, so its cost is bounded by a polynomial in the lengths of pattern and text,
//! never exponential (`+(a|aa)+(a|aa)…` against a long run of `a`s stays fast). Its
//! work is bounded by [`MAX_STEPS`]: a pattern with `!(…)` against a text so long that
//! deciding would take longer does not match (bash would take minutes there).

use std::collections::HashMap;

use super::{Tok, tok_matches};

/// Whether `t` is or holds a group.
pub(super) fn has_group(t: &Tok) -> bool {
    matches!(t, Tok::Group { .. })
}

/// Whether `t` is or holds a `!(…)` group.
pub(super) fn has_negation(t: &Tok) -> bool {
    match t {
        Tok::Group { kind, alts } => *kind == '!' || alts.iter().flatten().any(has_negation),
        _ => false,
    }
}

/// Parses the alternatives of a group whose `(` is just before `start`: the text of
/// each alternative and the index after the closing `)`, or `None` when it is not closed.
/// Backslash escapes and bracket expressions may hold `|` and `)`.
pub(super) fn parse_group(chars: &[char], start: usize) -> Option<(Vec<Vec<char>>, usize)> {
    let mut alts = Vec::new();
    let mut cur = Vec::new();
    let mut depth = 0usize;
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                cur.push(c);
                if let Some(&n) = chars.get(i + 1) {
                    cur.push(n);
                }
                i += 2;
                continue;
            }
            '[' => {
                // Copy a bracket expression whole when it is closed.
                let mut j = i + 1;
                if matches!(chars.get(j), Some('!') | Some('^')) {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j < chars.len() {
                    cur.extend_from_slice(&chars[i..=j]);
                    i = j + 1;
                    continue;
                }
                cur.push(c);
            }
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' if depth == 0 => {
                alts.push(cur);
                return Some((alts, i + 1));
            }
            ')' => {
                depth -= 1;
                cur.push(c);
            }
            '|' if depth == 0 => alts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
        i += 1;
    }
    None
}

/// Decisions already taken: (address of the token slice, its length, text start, text
/// end) → matched.
type Memo = HashMap<(usize, usize, usize, usize), bool>;

/// Most (tokens, span) decisions one match may take before it gives up: about a second
/// of work, and a bounded memo.
pub(super) const MAX_STEPS: usize = 2_000_000;

/// Whether the whole of `t` matches the tokens `p`.
pub(super) fn full_match(p: &[Tok], t: &[char], nocase: bool) -> bool {
    let mut m = Matcher {
        text: t,
        nocase,
        memo: HashMap::new(),
        steps: 0,
    };
    m.seq(p, 0, t.len())
}

struct Matcher<'t> {
    text: &'t [char],
    nocase: bool,
    memo: Memo,
    steps: usize,
}

impl Matcher<'_> {
    /// Whether `text[s..e]` matches the token sequence `p` exactly.
    fn seq(&mut self, p: &[Tok], s: usize, e: usize) -> bool {
        let key = (p.as_ptr() as usize, p.len(), s, e);
        if let Some(&v) = self.memo.get(&key) {
            return v;
        }
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return false;
        }
        // Recursion is as deep as the text is long: continue on a fresh heap segment
        // rather than overflow the stack.
        let v = stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.seq_uncached(p, s, e));
        self.memo.insert(key, v);
        v
    }

    fn seq_uncached(&mut self, p: &[Tok], s: usize, e: usize) -> bool {
        let Some(first) = p.first() else {
            return s == e;
        };
        let rest = &p[1..];
        match first {
            Tok::Star => (s..=e).any(|k| self.seq(rest, k, e)),
            Tok::Group { kind, alts } => match kind {
                '@' => (s..=e).any(|k| self.any_alt(alts, s, k) && self.seq(rest, k, e)),
                '?' => {
                    self.seq(rest, s, e)
                        || (s..=e).any(|k| self.any_alt(alts, s, k) && self.seq(rest, k, e))
                }
                '!' => (s..=e).any(|k| !self.any_alt(alts, s, k) && self.seq(rest, k, e)),
                // `*(…)` and `+(…)`: `p` itself (the group and what follows) after one
                // non-empty repetition.
                '+' => (s..=e).any(|k| {
                    self.any_alt(alts, s, k) && (self.seq(rest, k, e) || self.more(p, k, e))
                }),
                _ => self.seq(rest, s, e) || self.more(p, s, e),
            },
            tok => s < e && tok_matches(tok, self.text[s], self.nocase) && self.seq(rest, s + 1, e),
        }
    }

    /// One or more non-empty repetitions of the group `p[0]`, then `p[1..]`.
    fn more(&mut self, p: &[Tok], s: usize, e: usize) -> bool {
        let Some(Tok::Group { alts, .. }) = p.first() else {
            return false;
        };
        let rest = &p[1..];
        if self.steps > MAX_STEPS {
            return false;
        }
        self.steps += 1;
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            (s + 1..=e)
                .any(|k| self.any_alt(alts, s, k) && (self.seq(rest, k, e) || self.more(p, k, e)))
        })
    }

    fn any_alt(&mut self, alts: &[Vec<Tok>], s: usize, e: usize) -> bool {
        alts.iter().any(|a| self.seq(a, s, e))
    }
}

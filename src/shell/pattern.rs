//! Shell pattern matching (`*`, `?`, `[...]`) for `case`, `[[ == ]]`, `${x#pat}` and
//! pathname expansion.
//!
//! A pattern string uses backslash to quote the next character: the expander escapes
//! every character that came from a quoted part of the word, so `"*"` matches only a star.
//! Extended globs (`@(…)`) are not supported: they match literally.

/// One element of a compiled pattern.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Lit(char),
    /// `?`
    One,
    /// `*`
    Star,
    Class {
        negated: bool,
        items: Vec<ClassItem>,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum ClassItem {
    Char(char),
    Range(char, char),
    Named(String),
}

/// A compiled shell pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    toks: Vec<Tok>,
}

/// True when `pattern` has an unescaped `*`, `?` or `[` (so it needs matching at all).
pub fn has_glob_chars(pattern: &str) -> bool {
    let mut escaped = false;
    for c in pattern.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if matches!(c, '*' | '?' | '[') {
            return true;
        }
    }
    false
}

/// Removes the backslash escapes of a pattern, giving the literal text it stands for.
pub fn unescape(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            } else {
                out.push('\\');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Escapes every pattern metacharacter of `text` so it matches only itself.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        // Every punctuation character, so the same escaping serves `=~` regexes too.
        if c.is_ascii_punctuation() && c != '/' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Pattern {
    pub fn new(pattern: &str) -> Pattern {
        let chars: Vec<char> = pattern.chars().collect();
        let mut toks = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '\\' => {
                    if let Some(&n) = chars.get(i + 1) {
                        toks.push(Tok::Lit(n));
                        i += 2;
                    } else {
                        toks.push(Tok::Lit('\\'));
                        i += 1;
                    }
                }
                '*' => {
                    if toks.last() != Some(&Tok::Star) {
                        toks.push(Tok::Star);
                    }
                    i += 1;
                }
                '?' => {
                    toks.push(Tok::One);
                    i += 1;
                }
                '[' => match parse_class(&chars, i + 1) {
                    Some((tok, next)) => {
                        toks.push(tok);
                        i = next;
                    }
                    None => {
                        toks.push(Tok::Lit('['));
                        i += 1;
                    }
                },
                _ => {
                    toks.push(Tok::Lit(c));
                    i += 1;
                }
            }
        }
        Pattern { toks }
    }

    /// Whether the whole of `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        let t: Vec<char> = text.chars().collect();
        self.matches_chars(&t)
    }

    fn matches_chars(&self, t: &[char]) -> bool {
        let p = &self.toks;
        let (mut pi, mut ti) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while ti < t.len() {
            if pi < p.len() {
                match &p[pi] {
                    Tok::Star => {
                        star = Some((pi, ti));
                        pi += 1;
                        continue;
                    }
                    tok if tok_matches(tok, t[ti]) => {
                        pi += 1;
                        ti += 1;
                        continue;
                    }
                    _ => {}
                }
            }
            match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            }
        }
        p[pi..].iter().all(|t| *t == Tok::Star)
    }

    /// Whether the pattern starts with a literal `.` (so it may match hidden files).
    pub fn starts_with_dot(&self) -> bool {
        self.toks.first() == Some(&Tok::Lit('.'))
    }

    /// Length in chars of the shortest (or longest) prefix of `text` that matches.
    pub fn match_prefix(&self, text: &str, longest: bool) -> Option<usize> {
        self.anchored(text.chars(), longest)
    }

    /// Length in chars of the shortest (or longest) suffix of `text` that matches.
    pub fn match_suffix(&self, text: &str, longest: bool) -> Option<usize> {
        let reversed = Pattern {
            toks: self.toks.iter().rev().cloned().collect(),
        };
        reversed.anchored(text.chars().rev(), longest)
    }

    /// The first (leftmost, then longest) match in `t` at or after `from`: (start, len) in chars.
    ///
    /// One pass over `t` (see [`Pattern::enter`]), so `${x//0/1}` on a megabyte stays
    /// linear; trying every start and end instead was cubic and held a worker thread for
    /// minutes.
    pub fn find(&self, t: &[char], from: usize) -> Option<(usize, usize)> {
        if from > t.len() {
            return None;
        }
        let m = self.toks.len();
        let (mut cur, mut next) = (vec![None; m + 1], vec![None; m + 1]);
        // (start, end) of the best match so far.
        let mut best: Option<(usize, usize)> = None;
        let mut pos = from;
        loop {
            if best.is_none() {
                self.enter(&mut cur, 0, pos);
            }
            if let Some(s) = cur[m]
                && best.is_none_or(|(b, _)| s <= b)
            {
                best = Some((s, pos));
            }
            if let Some((b, _)) = best {
                // Only a match starting no later than the best one can still win.
                for q in cur.iter_mut() {
                    if q.is_some_and(|s| s > b) {
                        *q = None;
                    }
                }
                if cur.iter().all(Option::is_none) {
                    break;
                }
            }
            let Some(&c) = t.get(pos) else { break };
            self.step(&cur, c, &mut next);
            std::mem::swap(&mut cur, &mut next);
            pos += 1;
        }
        best.map(|(s, e)| (s, e - s))
    }

    /// Length in chars of the shortest (or longest) prefix of `text` that matches.
    fn anchored(&self, text: impl Iterator<Item = char>, longest: bool) -> Option<usize> {
        let m = self.toks.len();
        let (mut cur, mut next) = (vec![None; m + 1], vec![None; m + 1]);
        self.enter(&mut cur, 0, 0);
        let mut found = None;
        let mut text = text;
        let mut n = 0;
        loop {
            if cur[m].is_some() {
                found = Some(n);
                if !longest {
                    break;
                }
            }
            if cur.iter().all(Option::is_none) {
                break;
            }
            let Some(c) = text.next() else { break };
            self.step(&cur, c, &mut next);
            std::mem::swap(&mut cur, &mut next);
            n += 1;
        }
        found
    }

    /// Puts a thread in pattern position `q` (tokens `..q` matched), with `start`, the
    /// char index where its match began; a `*` there matches nothing too, so the thread is
    /// also in the position after it. Each position keeps only its leftmost start: threads
    /// in one position match the same text from then on, and the leftmost match wins.
    fn enter(&self, set: &mut [Option<usize>], mut q: usize, start: usize) {
        loop {
            match set[q] {
                Some(s) if s <= start => return,
                _ => set[q] = Some(start),
            }
            if self.toks.get(q) != Some(&Tok::Star) {
                return;
            }
            q += 1;
        }
    }

    /// Advances every thread of `cur` over `c` into `next`.
    fn step(&self, cur: &[Option<usize>], c: char, next: &mut [Option<usize>]) {
        next.fill(None);
        for (q, start) in cur.iter().enumerate() {
            let Some(start) = *start else { continue };
            match self.toks.get(q) {
                Some(Tok::Star) => self.enter(next, q, start),
                Some(tok) if tok_matches(tok, c) => self.enter(next, q + 1, start),
                _ => {}
            }
        }
    }
}

fn tok_matches(tok: &Tok, c: char) -> bool {
    match tok {
        Tok::Lit(l) => *l == c,
        Tok::One => true,
        Tok::Star => true,
        Tok::Class { negated, items } => {
            let hit = items.iter().any(|it| match it {
                ClassItem::Char(x) => *x == c,
                ClassItem::Range(a, b) => *a <= c && c <= *b,
                ClassItem::Named(name) => named_class(name, c),
            });
            hit != *negated
        }
    }
}

fn named_class(name: &str, c: char) -> bool {
    match name {
        "alpha" => c.is_ascii_alphabetic(),
        "digit" => c.is_ascii_digit(),
        "alnum" => c.is_ascii_alphanumeric(),
        "upper" => c.is_ascii_uppercase(),
        "lower" => c.is_ascii_lowercase(),
        "space" => c.is_ascii_whitespace() || c == '\x0b',
        "blank" => c == ' ' || c == '\t',
        "punct" => c.is_ascii_punctuation(),
        "xdigit" => c.is_ascii_hexdigit(),
        "cntrl" => c.is_ascii_control(),
        "print" => (' '..='~').contains(&c),
        "graph" => ('!'..='~').contains(&c),
        _ => false,
    }
}

/// Parses a bracket expression whose `[` is just before `start`; returns the token and the
/// index after the closing `]`, or `None` when there is no closing bracket.
fn parse_class(chars: &[char], start: usize) -> Option<(Tok, usize)> {
    let mut i = start;
    let mut negated = false;
    if matches!(chars.get(i), Some('!') | Some('^')) {
        negated = true;
        i += 1;
    }
    let mut items = Vec::new();
    let mut first = true;
    loop {
        let c = *chars.get(i)?;
        if c == ']' && !first {
            return Some((Tok::Class { negated, items }, i + 1));
        }
        first = false;
        if c == '[' && chars.get(i + 1) == Some(&':') {
            let rest: String = chars[i + 2..].iter().collect();
            if let Some(end) = rest.find(":]") {
                items.push(ClassItem::Named(rest[..end].to_string()));
                i += 2 + rest[..end].chars().count() + 2;
                continue;
            }
        }
        let (lo, next) = if c == '\\' {
            (*chars.get(i + 1)?, i + 2)
        } else {
            (c, i + 1)
        };
        if chars.get(next) == Some(&'-') && chars.get(next + 1).is_some_and(|&n| n != ']') {
            let hi_raw = chars[next + 1];
            let (hi, after) = if hi_raw == '\\' {
                (*chars.get(next + 2)?, next + 3)
            } else {
                (hi_raw, next + 2)
            };
            items.push(ClassItem::Range(lo, hi));
            i = after;
        } else {
            items.push(ClassItem::Char(lo));
            i = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        Pattern::new(p).matches(t)
    }

    #[test]
    fn basics() {
        assert!(m("*", ""));
        assert!(m("a*c", "abbbc"));
        assert!(!m("a*c", "abbb"));
        assert!(m("?b", "ab"));
        assert!(m("[a-c]x", "bx"));
        assert!(!m("[!a-c]x", "bx"));
        assert!(m("[^a-c]x", "dx"));
        assert!(m("[[:digit:]]*", "1abc"));
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("[]]", "]"));
        assert!(m("[", "["));
        assert!(m("*.txt", "a.txt"));
        assert!(m("a*b*c", "aXbYbZc"));
    }

    #[test]
    fn prefix_suffix() {
        let p = Pattern::new("*/");
        assert_eq!(p.match_prefix("a/b/c", false), Some(2));
        assert_eq!(p.match_prefix("a/b/c", true), Some(4));
        let s = Pattern::new(".*");
        assert_eq!(s.match_suffix("f.tar.gz", false), Some(3));
        assert_eq!(s.match_suffix("f.tar.gz", true), Some(7));
    }

    /// The matching this module had before: every start and end tried, each checked with
    /// `matches_chars`. Slow, but obviously right.
    fn naive_find(p: &Pattern, t: &[char], from: usize) -> Option<(usize, usize)> {
        for start in from..=t.len() {
            for end in (start..=t.len()).rev() {
                if p.matches_chars(&t[start..end]) {
                    return Some((start, end - start));
                }
            }
        }
        None
    }

    fn naive_prefix(p: &Pattern, t: &[char], longest: bool) -> Option<usize> {
        let lens: Vec<usize> = (0..=t.len()).collect();
        let mut ok = lens.into_iter().filter(|&n| p.matches_chars(&t[..n]));
        if longest { ok.next_back() } else { ok.next() }
    }

    fn naive_suffix(p: &Pattern, t: &[char], longest: bool) -> Option<usize> {
        let lens: Vec<usize> = (0..=t.len()).collect();
        let mut ok = lens
            .into_iter()
            .filter(|&n| p.matches_chars(&t[t.len() - n..]));
        if longest { ok.next_back() } else { ok.next() }
    }

    /// The one-pass matcher agrees with the naive one on every small pattern and text.
    #[test]
    fn one_pass_matching_agrees_with_trying_every_substring() {
        const PIECES: &[&str] = &["a", "b", "?", "*", "[ab]", "[!a]", "/", "\\*", "**"];
        const TEXT: &[char] = &['a', 'b', '/', '*'];
        let mut seed: u64 = 0x5eed;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..20_000 {
            let pat: String = (0..next(6)).map(|_| PIECES[next(PIECES.len())]).collect();
            let text: Vec<char> = (0..next(9)).map(|_| TEXT[next(TEXT.len())]).collect();
            let p = Pattern::new(&pat);
            let s: String = text.iter().collect();
            for from in 0..=text.len() + 1 {
                assert_eq!(
                    p.find(&text, from),
                    naive_find(&p, &text, from),
                    "find {pat:?} in {s:?} from {from}"
                );
            }
            for longest in [false, true] {
                assert_eq!(
                    p.match_prefix(&s, longest),
                    naive_prefix(&p, &text, longest),
                    "prefix {pat:?} of {s:?}, longest {longest}"
                );
                assert_eq!(
                    p.match_suffix(&s, longest),
                    naive_suffix(&p, &text, longest),
                    "suffix {pat:?} of {s:?}, longest {longest}"
                );
            }
        }
    }

    #[test]
    fn glob_chars() {
        assert!(has_glob_chars("a*"));
        assert!(!has_glob_chars("a\\*"));
        assert_eq!(unescape("a\\*b"), "a*b");
        assert!(m(&escape("a*[b]"), "a*[b]"));
    }
}

//! Shell pattern matching (`*`, `?`, `[...]`) for `case`, `[[ == ]]`, `${x#pat}` and
//! pathname expansion.
//!
//! A pattern string uses backslash to quote the next character: the expander escapes
//! every character that came from a quoted part of the word, so `"*"` matches only a star.
//! Extended globs (`@(…)` `*(…)` `+(…)` `?(…)` `!(…)`) are recognised when asked for
//! ([`Pattern::with`]); `nocase` matches letters of either case.
//!
//! Matching runs on automata compiled from the pattern as a regular expression (linear in
//! the text); a pattern with `!(…)`, which no regular expression of the `regex` crate
//! expresses, is matched by a memoised backtracker in [`ext`] (polynomial, never
//! exponential).

mod ext;
mod search;

use forkbox_commands::bytetext;

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
    /// An extended glob group: `kind` is one of `@ * + ? !`, `alts` its alternatives.
    Group {
        kind: char,
        alts: Vec<Vec<Tok>>,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum ClassItem {
    Char(char),
    Range(char, char),
    Named(String),
    /// A named class in a UTF-8 locale: letters past ASCII are in `[:alpha:]` there.
    Wide(String),
}

/// A compiled shell pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    toks: Vec<Tok>,
    /// Letters match either case (`nocaseglob`, `nocasematch`).
    nocase: bool,
    /// Has a group (needs more than the flat matcher).
    grouped: bool,
    /// Has a `!(…)` group (no regular expression for it).
    negated: bool,
    /// The C locale's pattern: it matches bytes, and its characters past ASCII are bytes
    /// (see [`bytetext::byte_view`]); the text it is matched against must be seen so too
    /// ([`Pattern::view`]).
    bytes: bool,
}

/// True when `pattern` has an unescaped `*`, `?` or `[` (so it needs matching at all).
pub fn has_glob_chars(pattern: &str) -> bool {
    let mut escaped = false;
    // Once one `[` finds no `]` after it, no later one will: each is looked at once.
    let mut unclosed = false;
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if matches!(c, '*' | '?')
            || (matches!(c, '@' | '+' | '!') && chars.peek() == Some(&'('))
        {
            return true;
        } else if c == '[' && !unclosed {
            if bracket_closes(chars.clone()) {
                return true;
            }
            unclosed = true;
        }
    }
    false
}

/// Whether the text after a `[` closes a bracket expression: a `[` with no `]` after it
/// (`echo [`, `x[`) is an ordinary character, so the word is no pattern at all.
fn bracket_closes(chars: impl Iterator<Item = char>) -> bool {
    let rest: Vec<char> = chars.collect();
    let mut i = 0;
    if matches!(rest.first(), Some('!' | '^')) {
        i += 1;
    }
    // A `]` first is a member, not the end.
    if rest.get(i) == Some(&']') {
        i += 1;
    }
    while let Some(&c) = rest.get(i) {
        match c {
            ']' => return true,
            '\\' => i += 1,
            '[' if matches!(rest.get(i + 1), Some(':' | '.' | '=')) => {
                // `[:alpha:]` inside: on to its closing `:]`, if it has one.
                let kind = rest[i + 1];
                if let Some(end) = (i + 2..rest.len().saturating_sub(1))
                    .find(|&j| rest[j] == kind && rest[j + 1] == ']')
                {
                    i = end + 1;
                }
            }
            _ => {}
        }
        i += 1;
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
    /// A plain pattern: no extended globs, case-sensitive.
    #[cfg(test)]
    pub fn new(pattern: &str) -> Pattern {
        Pattern::with(pattern, false, false)
    }

    /// A pattern with extended globs recognised if `extglob`, matching either case if
    /// `nocase`.
    pub fn with(pattern: &str, extglob: bool, nocase: bool) -> Pattern {
        let chars: Vec<char> = pattern.chars().collect();
        let toks = parse_toks(&chars, extglob);
        let grouped = toks.iter().any(ext::has_group);
        let negated = toks.iter().any(ext::has_negation);
        Pattern {
            toks,
            nocase,
            grouped,
            negated,
            bytes: false,
        }
    }

    /// The pattern as the locale has it: in a UTF-8 one (`utf8`) the named classes
    /// (`[[:alpha:]]`) hold the letters, digits and marks past ASCII too.
    pub fn in_locale(mut self, utf8: bool) -> Pattern {
        fn widen(toks: &mut [Tok]) {
            for t in toks {
                match t {
                    Tok::Class { items, .. } => {
                        for it in items.iter_mut() {
                            if let ClassItem::Named(n) = it {
                                *it = ClassItem::Wide(std::mem::take(n));
                            }
                        }
                    }
                    Tok::Group { alts, .. } => alts.iter_mut().for_each(|a| widen(a)),
                    _ => {}
                }
            }
        }
        if utf8 && has_class(&self.toks) {
            widen(&mut self.toks);
        }
        if !utf8 && !all_ascii(&self.toks) {
            self.toks = byte_toks(std::mem::take(&mut self.toks));
        }
        self.bytes = !utf8;
        self
    }

    /// Whether the pattern matches bytes (the C locale's): the text given to
    /// [`Pattern::match_prefix`], [`Pattern::match_suffix`] and [`Pattern::find_in`] must
    /// be its [`Pattern::view`], and what is cut out of it [`bytetext::normalise`]d.
    pub fn on_bytes(&self) -> bool {
        self.bytes
    }

    /// `text` as this pattern sees it: in the C locale each byte past ASCII is a
    /// character of its own.
    pub fn view<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if self.bytes {
            bytetext::byte_view(text)
        } else {
            std::borrow::Cow::Borrowed(text)
        }
    }

    /// Whether the whole of `text` matches.
    pub fn matches(&self, text: &str) -> bool {
        let t: Vec<char> = self.view(text).chars().collect();
        self.matches_chars(&t)
    }

    fn matches_chars(&self, t: &[char]) -> bool {
        if self.grouped || self.nocase {
            if !self.negated
                && let Some(re) = self.regex()
                && let Some(a) = search::automata(&re)
            {
                let text: String = t.iter().collect();
                return a.prefix(&text, true) == Some(text.len());
            }
            return ext::full_match(&self.toks, t, self.nocase);
        }
        flat_match(&self.toks, t)
    }
}

/// Compiles pattern text into tokens.
fn parse_toks(chars: &[char], extglob: bool) -> Vec<Tok> {
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if extglob
            && matches!(c, '@' | '*' | '+' | '?' | '!')
            && chars.get(i + 1) == Some(&'(')
            && let Some((alts, next)) = ext::parse_group(chars, i + 2)
        {
            let alts = alts.iter().map(|a| parse_toks(a, extglob)).collect();
            toks.push(Tok::Group { kind: c, alts });
            i = next;
            continue;
        }
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
            '[' => match parse_class(chars, i + 1) {
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
    toks
}

/// The matcher of patterns without groups: linear backtracking over the last `*`.
fn flat_match(p: &[Tok], t: &[char]) -> bool {
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
                tok if tok_matches(tok, t[ti], false) => {
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

impl Pattern {
    /// Whether the pattern starts with a literal `.` (so it may match hidden files).
    pub fn starts_with_dot(&self) -> bool {
        self.toks.first() == Some(&Tok::Lit('.'))
    }

    /// Whether the pattern may match a name that starts with a dot without `dotglob`: it
    /// starts with one, or with an extended group (not `!(…)`) one of whose alternatives
    /// does (`@(.a|b)`, `*(.)x`), as bash's globbing allows.
    pub fn may_match_dot(&self) -> bool {
        match self.toks.first() {
            Some(Tok::Lit('.')) => true,
            Some(Tok::Group { kind, alts }) if *kind != '!' => {
                alts.iter().any(|a| a.first() == Some(&Tok::Lit('.')))
            }
            _ => false,
        }
    }

    /// The pattern as a regular expression (for the automata of [`search`]); `None` for a
    /// pattern with `!(…)`.
    fn regex(&self) -> Option<String> {
        // Without case a named class still tests the character as it is, which `(?i)`
        // would not: such a pattern is matched by backtracking.
        if self.negated || (self.nocase && has_named_class(&self.toks)) {
            return None;
        }
        let mut re = String::from(if self.nocase { "(?is)" } else { "(?s)" });
        push_regex(&mut re, &self.toks);
        Some(re)
    }
}

/// Whether a bracket expression of `toks` (or of a group in them) holds `[:class:]`.
fn has_named_class(toks: &[Tok]) -> bool {
    toks.iter().any(|t| match t {
        Tok::Group { alts, .. } => alts.iter().any(|a| has_named_class(a)),
        Tok::Class { items, .. } => items
            .iter()
            .any(|it| matches!(it, ClassItem::Named(_) | ClassItem::Wide(_))),
        _ => false,
    })
}

fn push_regex(re: &mut String, toks: &[Tok]) {
    for tok in toks {
        match tok {
            Tok::Group { kind, alts } => {
                re.push_str("(?:");
                for (n, alt) in alts.iter().enumerate() {
                    if n > 0 {
                        re.push('|');
                    }
                    push_regex(re, alt);
                }
                re.push(')');
                match kind {
                    '*' => re.push('*'),
                    '+' => re.push('+'),
                    '?' => re.push('?'),
                    _ => {}
                }
            }
            Tok::Lit(c) => re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
            Tok::One => re.push('.'),
            Tok::Star => re.push_str(".*"),
            Tok::Class { negated, items } => {
                re.push_str(if *negated { "[^" } else { "[" });
                for it in items {
                    match it {
                        ClassItem::Char(c) => re.push_str(&format!("\\x{{{:x}}}", *c as u32)),
                        ClassItem::Range(a, b) => {
                            re.push_str(&format!("\\x{{{:x}}}-\\x{{{:x}}}", *a as u32, *b as u32))
                        }
                        ClassItem::Named(n) => re.push_str(&format!("[:{n}:]")),
                        ClassItem::Wide(n) => re.push_str(&format!("[:{n}:]{}", wide_class(n))),
                    }
                }
                re.push(']');
            }
        }
    }
}

impl Pattern {
    /// The text of a pattern made only of literal characters (matched case-sensitively).
    pub(crate) fn literal(&self) -> Option<String> {
        if self.nocase {
            return None;
        }
        self.toks
            .iter()
            .map(|t| match t {
                Tok::Lit(c) => Some(*c),
                _ => None,
            })
            .collect()
    }

    /// Length in chars of the shortest (or longest) prefix of `text` that matches.
    pub fn match_prefix(&self, text: &str, longest: bool) -> Option<usize> {
        if let Some(lit) = self.literal() {
            return text.starts_with(&lit).then(|| lit.chars().count());
        }
        if let Some(a) = self.regex().and_then(|re| search::automata(&re)) {
            return a
                .prefix(text, longest)
                .map(|end| text[..end].chars().count());
        }
        let t: Vec<char> = text.chars().collect();
        let mut lens: Box<dyn Iterator<Item = usize>> = if longest {
            Box::new((0..=t.len()).rev())
        } else {
            Box::new(0..=t.len())
        };
        lens.find(|&n| self.matches_chars(&t[..n]))
    }

    /// Length in chars of the shortest (or longest) suffix of `text` that matches.
    pub fn match_suffix(&self, text: &str, longest: bool) -> Option<usize> {
        if let Some(lit) = self.literal() {
            return text.ends_with(&lit).then(|| lit.chars().count());
        }
        if let Some(a) = self.regex().and_then(|re| search::automata(&re)) {
            return a
                .suffix(text, longest)
                .map(|start| text[start..].chars().count());
        }
        let t: Vec<char> = text.chars().collect();
        let mut lens: Box<dyn Iterator<Item = usize>> = if longest {
            Box::new((0..=t.len()).rev())
        } else {
            Box::new(0..=t.len())
        };
        lens.find(|&n| self.matches_chars(&t[t.len() - n..]))
    }

    /// The first (leftmost, then longest) match in `text` at or after byte `from`:
    /// (start, end) in bytes. Linear in the text.
    pub fn find_in(&self, text: &str, from: usize) -> Option<(usize, usize)> {
        if let Some(lit) = self.literal() {
            return text[from..]
                .find(&lit)
                .map(|i| (from + i, from + i + lit.len()));
        }
        if let Some(a) = self.regex().and_then(|re| search::automata(&re)) {
            return a.find(text, from);
        }
        let t: Vec<char> = text.chars().collect();
        let from_char = text[..from].chars().count();
        let (start, len) = self.find(&t, from_char)?;
        let to_byte = |n: usize| t[..n].iter().map(|c| c.len_utf8()).sum::<usize>();
        Some((to_byte(start), to_byte(start + len)))
    }

    /// The first (leftmost, then longest) match in `t` at or after `from`: (start, len) in
    /// chars, by backtracking (the fallback when no automaton can be built).
    fn find(&self, t: &[char], from: usize) -> Option<(usize, usize)> {
        for start in from..=t.len() {
            for end in (start..=t.len()).rev() {
                if self.matches_chars(&t[start..end]) {
                    return Some((start, end - start));
                }
            }
        }
        None
    }
}

fn tok_matches(tok: &Tok, c: char, nocase: bool) -> bool {
    match tok {
        Tok::Group { .. } => false,
        Tok::Lit(l) if nocase && c.is_alphabetic() => *l == lower(c) || *l == upper(c),
        Tok::Lit(l) => *l == c,
        Tok::One => true,
        Tok::Star => true,
        Tok::Class { negated, items } => {
            // Without case, a letter or range matches either case, but a named class
            // tests the character as it is (`Q` is not `[[:lower:]]`), as in bash.
            let hit = items.iter().any(|it| match it {
                ClassItem::Char(_) | ClassItem::Range(..) if nocase && c.is_alphabetic() => {
                    class_item_matches(it, lower(c)) || class_item_matches(it, upper(c))
                }
                it => class_item_matches(it, c),
            });
            hit != *negated
        }
    }
}

fn class_item_matches(it: &ClassItem, c: char) -> bool {
    match it {
        ClassItem::Char(x) => *x == c,
        ClassItem::Range(a, b) => *a <= c && c <= *b,
        ClassItem::Named(name) => named_class(name, c),
        ClassItem::Wide(name) if c.is_ascii() => named_class(name, c),
        ClassItem::Wide(name) => match name.as_str() {
            "alpha" | "alnum" => c.is_alphabetic(),
            "upper" => c.is_uppercase(),
            "lower" => c.is_lowercase(),
            "space" => c.is_whitespace(),
            "punct" => !c.is_alphanumeric() && !c.is_control() && !c.is_whitespace(),
            "print" => !c.is_control(),
            "graph" => !c.is_control() && !c.is_whitespace(),
            _ => false,
        },
    }
}

fn lower(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

fn upper(c: char) -> char {
    c.to_uppercase().next().unwrap_or(c)
}

/// A character's upper case as C's `towupper` gives it: one character for one, so a
/// character whose upper case is longer (`ß`) stays as it is. `ascii`: the locale is not
/// UTF-8, where only ASCII letters have cases.
pub(crate) fn upper_char(c: char, ascii: bool) -> char {
    if ascii && !c.is_ascii() {
        return c;
    }
    let mut m = c.to_uppercase();
    match (m.next(), m.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// A character's lower case as C's `towlower` gives it (see [`upper_char`]).
pub(crate) fn lower_char(c: char, ascii: bool) -> char {
    if ascii && !c.is_ascii() {
        return c;
    }
    let mut m = c.to_lowercase();
    match (m.next(), m.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// `s` in upper case, character by character (bash's `${s^^}`).
pub(crate) fn upper_str(s: &str, ascii: bool) -> String {
    s.chars().map(|c| upper_char(c, ascii)).collect()
}

/// `s` in lower case, character by character (bash's `${s,,}`).
pub(crate) fn lower_str(s: &str, ascii: bool) -> String {
    s.chars().map(|c| lower_char(c, ascii)).collect()
}

/// Whether every character of `toks` is ASCII (so they read the same as bytes).
fn all_ascii(toks: &[Tok]) -> bool {
    toks.iter().all(|t| match t {
        Tok::Lit(c) => c.is_ascii(),
        Tok::Class { items, .. } => items.iter().all(|i| match i {
            ClassItem::Char(c) => c.is_ascii(),
            ClassItem::Range(a, b) => a.is_ascii() && b.is_ascii(),
            _ => true,
        }),
        Tok::Group { alts, .. } => alts.iter().all(|a| all_ascii(a)),
        _ => true,
    })
}

/// The bytes of `c` as byte characters (`c` itself when it is ASCII or a byte).
fn char_bytes(c: char) -> Vec<char> {
    bytetext::byte_view(c.encode_utf8(&mut [0; 4]))
        .chars()
        .collect()
}

/// `toks` as the C locale reads them: each character past ASCII is its bytes, as if the
/// pattern had been written byte by byte (`[é]` holds both bytes of `é`; `[à-é]` is the
/// first byte of `à`, a range from its last to the first of `é`, and the rest of `é`).
fn byte_toks(toks: Vec<Tok>) -> Vec<Tok> {
    let mut out = Vec::with_capacity(toks.len());
    for t in toks {
        match t {
            Tok::Lit(c) => out.extend(char_bytes(c).into_iter().map(Tok::Lit)),
            Tok::Class { negated, items } => {
                let mut new = Vec::with_capacity(items.len());
                for it in items {
                    match it {
                        ClassItem::Char(c) => {
                            new.extend(char_bytes(c).into_iter().map(ClassItem::Char))
                        }
                        ClassItem::Range(a, b) => {
                            let (a, b) = (char_bytes(a), char_bytes(b));
                            if let (Some((last, a)), Some((first, b))) =
                                (a.split_last(), b.split_first())
                            {
                                new.extend(a.iter().copied().map(ClassItem::Char));
                                new.push(ClassItem::Range(*last, *first));
                                new.extend(b.iter().copied().map(ClassItem::Char));
                            }
                        }
                        other => new.push(other),
                    }
                }
                out.push(Tok::Class {
                    negated,
                    items: new,
                });
            }
            Tok::Group { kind, alts } => out.push(Tok::Group {
                kind,
                alts: alts.into_iter().map(byte_toks).collect(),
            }),
            other => out.push(other),
        }
    }
    out
}

/// Whether `toks` have a named class (`[[:alpha:]]`), in groups too.
fn has_class(toks: &[Tok]) -> bool {
    toks.iter().any(|t| match t {
        Tok::Class { items, .. } => items.iter().any(|i| matches!(i, ClassItem::Named(_))),
        Tok::Group { alts, .. } => alts.iter().any(|a| has_class(a)),
        _ => false,
    })
}

/// The characters past ASCII a named class holds in a UTF-8 locale, as regular
/// expression class items (after its ASCII ones).
fn wide_class(name: &str) -> &'static str {
    match name {
        "alpha" | "alnum" => r"\p{Alphabetic}",
        "upper" => r"\p{Uppercase}",
        "lower" => r"\p{Lowercase}",
        "space" => r"\p{White_Space}",
        "punct" => r"\p{P}\p{S}",
        "print" => r"\p{L}\p{M}\p{N}\p{P}\p{S}\p{Zs}",
        "graph" => r"\p{L}\p{M}\p{N}\p{P}\p{S}",
        _ => "",
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
        // `[.c.]` (a collating symbol) and `[=c=]` (an equivalence class) of one
        // character stand for that character.
        if c == '['
            && let Some(&d @ ('.' | '=')) = chars.get(i + 1)
            && chars.get(i + 3) == Some(&d)
            && chars.get(i + 4) == Some(&']')
        {
            items.push(ClassItem::Char(chars[i + 2]));
            i += 5;
            continue;
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

    /// In the C locale a pattern matches bytes: `?` is one byte of `é`, `[é]` either.
    #[test]
    fn c_locale_matches_bytes() {
        let c = |p: &str, t: &str| Pattern::new(p).in_locale(false).matches(t);
        assert!(!c("?", "é"));
        assert!(c("??", "é"));
        assert!(c("[é][é]", "é"));
        assert!(c("é", "é"));
        assert!(c("?", "\u{10FFE9}"));
        let utf8 = |p: &str, t: &str| Pattern::new(p).in_locale(true).matches(t);
        assert!(utf8("?", "é"));
        assert!(utf8("?", "\u{10FFE9}"));
        let p = Pattern::new("?").in_locale(false);
        let view = p.view("éx");
        assert_eq!(p.match_prefix(&view, false), Some(1));
    }

    /// The automata agree with the backtracking matcher on every small case.
    #[test]
    fn automata_agree_with_backtracking() {
        let atoms = [
            "a",
            "b",
            "é",
            "*",
            "?",
            "[ab]",
            "[!a]",
            "[[:digit:]]",
            "\\*",
        ];
        let alphabet = ['a', 'b', 'é', '1', '*'];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..3000 {
            let pat: String = (0..next(4) + 1).map(|_| atoms[next(atoms.len())]).collect();
            let text: String = (0..next(7))
                .map(|_| alphabet[next(alphabet.len())])
                .collect();
            let p = Pattern::new(&pat);
            let t: Vec<char> = text.chars().collect();
            for longest in [false, true] {
                let lens: Vec<usize> = if longest {
                    (0..=t.len()).rev().collect()
                } else {
                    (0..=t.len()).collect()
                };
                let prefix = lens.iter().copied().find(|&n| p.matches_chars(&t[..n]));
                assert_eq!(
                    p.match_prefix(&text, longest),
                    prefix,
                    "{pat} {text} {longest}"
                );
                let suffix = lens
                    .iter()
                    .copied()
                    .find(|&n| p.matches_chars(&t[t.len() - n..]));
                assert_eq!(
                    p.match_suffix(&text, longest),
                    suffix,
                    "{pat} {text} {longest}"
                );
            }
            let to_byte = |n: usize| t[..n].iter().map(|c| c.len_utf8()).sum::<usize>();
            for from in 0..=t.len() {
                let want = p.find(&t, from).map(|(s, l)| (to_byte(s), to_byte(s + l)));
                assert_eq!(p.find_in(&text, to_byte(from)), want, "{pat} {text} {from}");
            }
        }
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

    fn x(p: &str, t: &str) -> bool {
        Pattern::with(p, true, false).matches(t)
    }

    #[test]
    fn extended_globs() {
        assert!(x("@(foo|bar)", "bar"));
        assert!(!x("@(foo|bar)", "baz"));
        assert!(x("*(ab)", "") && x("*(ab)", "abab") && !x("*(ab)", "aba"));
        assert!(!x("+(ab)", "") && x("+(ab)", "ab"));
        assert!(x("x?(.c)", "x") && x("x?(.c)", "x.c") && !x("x?(.c)", "x.c.c"));
        assert!(x("!(*.c)", "a.h") && !x("!(*.c)", "a.c"));
        assert!(x("a!(b)c", "ac") && x("a!(b)c", "axc") && !x("a!(b)c", "abc"));
        assert!(x("+(a@(b|x)c)", "axcabc"));
        assert!(x("+([a-z][0-9])", "a1b2"));
        // Without extglob the group is literal text.
        assert!(Pattern::new("@(a)").matches("@(a)"));
        // nocase
        assert!(Pattern::with("*.TXT", false, true).matches("a.txt"));
        assert!(Pattern::with("!(A*)", true, true).matches("bcd"));
        assert!(!Pattern::with("!(A*)", true, true).matches("abc"));
        // Prefix and suffix removal with groups.
        let p = Pattern::with("+(a)", true, false);
        assert_eq!(p.match_prefix("aaab", true), Some(3));
        assert_eq!(p.match_prefix("aaab", false), Some(1));
    }

    /// The backtracker stays polynomial: a pathological `!(…)` pattern on a long text
    /// finishes (bounded by its step limit).
    #[test]
    fn negation_is_bounded() {
        let text = "a".repeat(2000);
        let started = std::time::Instant::now();
        let _ = x("!(b)+(a|aa)+(a|aa)b", &text);
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }

    #[test]
    fn glob_chars() {
        assert!(has_glob_chars("a*"));
        assert!(!has_glob_chars("a\\*"));
        assert_eq!(unescape("a\\*b"), "a*b");
        assert!(m(&escape("a*[b]"), "a*[b]"));
    }
}

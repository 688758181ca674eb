//! History expansion, as bash does it on the lines an interactive shell reads (`set -H`):
//! event designators (`!!`, `!n`, `!-n`, `!string`, `!?string?`, `!#`), word designators
//! (`:n`, `^`, `$`, `*`, `x-y`, `x-`, `x*`, with the colon optional before `^ $ * -`),
//! modifiers (`:h :t :r :e :p :q :x :s/old/new/ :& :g :a :G`) and `^old^new^` at the
//! start of a line.
//!
//! `!` stays as it is inside single quotes, after a backslash, before a blank, `=`, the
//! end of the line or (inside double quotes) the closing quote, and where bash's own
//! exceptions keep it: `$!`, `${!name}`, `[!…]`, and `!(…)` when extglob is on.
//!
//! Errors read as bash's (`!foo: event not found`, `:3: bad word specifier`, …); the
//! caller prefixes the shell's name, and neither runs nor remembers the line.

use super::history::History;

/// A line after expansion.
#[derive(Debug, PartialEq, Eq)]
pub struct Expansion {
    pub line: String,
    /// Something was expanded: the shell shows the new line before running it.
    pub changed: bool,
    /// A `:p` modifier: show and remember the line, but do not run it.
    pub print_only: bool,
}

/// Longest line an expansion may make: `!#` doubles the line each time and `!!` copies
/// an entry of up to a mebibyte, so a short line could otherwise ask for gigabytes.
pub const MAX_EXPANSION: usize = 4 * 1024 * 1024;

/// Characters that end an `!string` event (bash's history search delimiters and blanks).
const EVENT_END: &[char] = &[' ', '\t', '\n', ':', ';', '&', '(', ')', '|', '<', '>'];

/// Expands `line` against `history`. The error is the message without the shell's name.
pub fn expand(line: &str, history: &mut History, extglob: bool) -> Result<Expansion, String> {
    let src: Vec<char> = if line.starts_with('^') {
        // `^old^new^` is `!!:s^old^new^`.
        "!!:s".chars().chain(line.chars()).collect()
    } else {
        line.chars().collect()
    };
    let mut out = String::with_capacity(line.len());
    let mut changed = false;
    let mut print_only = false;
    let mut in_dq = false;
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        match c {
            '\\' => {
                out.push(c);
                if let Some(&n) = src.get(i + 1) {
                    out.push(n);
                }
                i += 2;
                continue;
            }
            '\'' if !in_dq => {
                let end = src[i + 1..]
                    .iter()
                    .position(|&q| q == '\'')
                    .map_or(src.len(), |p| i + 2 + p);
                out.extend(&src[i..end]);
                i = end;
                continue;
            }
            '"' => in_dq = !in_dq,
            '!' if !literal_bang(&src, i, in_dq, extglob) => {
                let mut x = Expander {
                    src: &src,
                    history: &mut *history,
                    in_dq,
                };
                let (text, next, print) = x.one(i, &out)?;
                if out.len() + text.len() > MAX_EXPANSION {
                    return Err(format!(
                        "{}: history expansion longer than {MAX_EXPANSION} bytes",
                        src[i..next.min(src.len())].iter().collect::<String>()
                    ));
                }
                out.push_str(&text);
                changed = true;
                print_only |= print;
                i = next;
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    Ok(Expansion {
        line: out,
        changed,
        print_only,
    })
}

/// Whether the `!` at `i` is text, not an expansion.
fn literal_bang(src: &[char], i: usize, in_dq: bool, extglob: bool) -> bool {
    let next = src.get(i + 1).copied();
    let closes_later = |c: char| src[i + 1..].contains(&c);
    match next {
        None | Some(' ' | '\t' | '\n' | '=') => return true,
        Some('"') if in_dq => return true,
        Some('(') if extglob && closes_later(')') => return true,
        _ => {}
    }
    let prev = i.checked_sub(1).map(|p| src[p]);
    let prev2 = i.checked_sub(2).map(|p| src[p]);
    prev == Some('$')
        || (prev == Some('{') && prev2 == Some('$') && closes_later('}'))
        || (prev == Some('[') && closes_later(']'))
}

struct Expander<'a> {
    src: &'a [char],
    history: &'a mut History,
    in_dq: bool,
}

impl Expander<'_> {
    fn text(&self, from: usize, to: usize) -> String {
        self.src[from..to.min(self.src.len())].iter().collect()
    }

    /// Expands the designator whose `!` is at `at`; `so_far` is the line expanded up
    /// to it (for `!#`). Returns the text, where scanning goes on, and whether `:p` was
    /// given.
    fn one(&mut self, at: usize, so_far: &str) -> Result<(String, usize, bool), String> {
        let src = self.src;
        let mut j = at + 1;
        let not_found = |to: usize, x: &Self| format!("{}: event not found", x.text(at, to));
        let event: String = match src.get(j).copied() {
            Some('!') => {
                j += 1;
                self.history
                    .last()
                    .ok_or_else(|| not_found(j, self))?
                    .to_string()
            }
            Some('#') => {
                j += 1;
                so_far.to_string()
            }
            Some(c) if c.is_ascii_digit() || (c == '-' && digit_at(src, j + 1)) => {
                let negative = c == '-';
                if negative {
                    j += 1;
                }
                let start = j;
                while digit_at(src, j) {
                    j += 1;
                }
                let n: usize = self.text(start, j).parse().unwrap_or(usize::MAX);
                let len = self.history.len();
                let found = if negative {
                    len.checked_sub(n)
                        .filter(|_| n > 0)
                        .and_then(|i| self.history.get(i))
                } else {
                    self.history.by_number(n)
                };
                found.ok_or_else(|| not_found(j, self))?.to_string()
            }
            Some('?') => {
                let start = j + 1;
                let end = src[start..]
                    .iter()
                    .position(|&c| c == '?' || c == '\n')
                    .map_or(src.len(), |p| start + p);
                let pattern = self.text(start, end);
                j = if src.get(end) == Some(&'?') {
                    end + 1
                } else {
                    end
                };
                let found = (!pattern.is_empty())
                    .then(|| {
                        self.history
                            .search_back(&pattern, usize::MAX - 1)
                            .and_then(|(i, _)| self.history.get(i))
                            .map(str::to_string)
                    })
                    .flatten();
                self.history.last_search = Some(pattern);
                found.ok_or_else(|| not_found(j, self))?
            }
            Some('^' | '$' | '*' | '%' | ':' | '-') => self
                .history
                .last()
                .ok_or_else(|| not_found(j, self))?
                .to_string(),
            _ => {
                let start = j;
                while let Some(&c) = src.get(j) {
                    if EVENT_END.contains(&c) || (self.in_dq && c == '"') {
                        break;
                    }
                    j += 1;
                }
                let prefix = self.text(start, j);
                let found = (!prefix.is_empty())
                    .then(|| {
                        (0..self.history.len())
                            .rev()
                            .filter_map(|i| self.history.get(i))
                            .find(|l| l.starts_with(&prefix))
                    })
                    .flatten();
                found.ok_or_else(|| not_found(j, self))?.to_string()
            }
        };
        let (mut value, mut j) = self.words(&event, j)?;
        // Modifiers.
        let mods_start = j;
        let mut print = false;
        while src.get(j) == Some(&':') {
            let Some(&m) = src.get(j + 1) else {
                break;
            };
            j += 2;
            let (global, each, op) = match m {
                'g' | 'a' | 'G' => match src.get(j) {
                    Some(&op @ ('s' | '&')) => {
                        j += 1;
                        (m != 'G', m == 'G', op)
                    }
                    _ => {
                        return Err(format!(
                            "{}: unrecognized history modifier",
                            self.text(j - 1, j)
                        ));
                    }
                },
                _ => (false, false, m),
            };
            match op {
                'h' => {
                    if let Some(p) = value.rfind('/') {
                        value.truncate(p);
                    }
                }
                't' => {
                    if let Some(p) = value.rfind('/') {
                        value = value[p + 1..].to_string();
                    }
                }
                'r' => {
                    if let Some(p) = value.rfind('.') {
                        value.truncate(p);
                    }
                }
                'e' => {
                    if let Some(p) = value.rfind('.') {
                        value = value[p..].to_string();
                    }
                }
                'p' => print = true,
                'q' => value = quote(&value),
                'x' => {
                    value = value
                        .split_whitespace()
                        .map(quote)
                        .collect::<Vec<_>>()
                        .join(" ");
                }
                's' | '&' => {
                    let (old, new) = if op == 's' {
                        let (old, new, next) = self.subst_args(j);
                        j = next;
                        let old = match old {
                            Some(o) => o,
                            None => self
                                .history
                                .last_subst
                                .as_ref()
                                .map(|(o, _)| o.clone())
                                .or_else(|| self.history.last_search.clone())
                                .ok_or_else(|| {
                                    format!(
                                        "{}: no previous substitution",
                                        self.text(mods_start, j)
                                    )
                                })?,
                        };
                        let new = new.replace_amp(&old);
                        self.history.last_subst = Some((old.clone(), new.clone()));
                        (old, new)
                    } else {
                        self.history.last_subst.clone().ok_or_else(|| {
                            format!("{}: no previous substitution", self.text(mods_start, j))
                        })?
                    };
                    // What the substitution would make, before making it.
                    let hits = if each {
                        value
                            .split(' ')
                            .filter(|w| w.contains(old.as_str()))
                            .count()
                    } else if global {
                        value.matches(old.as_str()).count()
                    } else {
                        usize::from(value.contains(old.as_str()))
                    };
                    let size = value.len().saturating_add(hits.saturating_mul(new.len()));
                    if size > MAX_EXPANSION {
                        return Err(format!(
                            "{}: history expansion longer than {MAX_EXPANSION} bytes",
                            self.text(mods_start, j)
                        ));
                    }
                    let done = if each {
                        let words: Vec<String> = value
                            .split(' ')
                            .map(|w| w.replacen(&old, &new, 1))
                            .collect();
                        let joined = words.join(" ");
                        let hit = joined != value;
                        value = joined;
                        hit
                    } else if value.contains(&old) {
                        value = if global {
                            value.replace(&old, &new)
                        } else {
                            value.replacen(&old, &new, 1)
                        };
                        true
                    } else {
                        false
                    };
                    if !done {
                        return Err(format!("{}: substitution failed", self.text(mods_start, j)));
                    }
                }
                other => {
                    return Err(format!("{other}: unrecognized history modifier"));
                }
            }
        }
        Ok((value, j, print))
    }

    /// Applies the word designator at `j`, if any, to the event's line: the words
    /// chosen, and where scanning goes on.
    fn words(&self, event: &str, mut j: usize) -> Result<(String, usize), String> {
        let src = self.src;
        let starts_spec = |c: char| c.is_ascii_digit() || matches!(c, '^' | '$' | '*' | '-' | '%');
        let spec_start = j;
        match src.get(j).copied() {
            Some(':') if src.get(j + 1).copied().is_some_and(starts_spec) => j += 1,
            Some('^' | '$' | '*' | '-' | '%') => {}
            _ => return Ok((event.to_string(), j)),
        }
        let words = tokenize(event);
        let last = words.len().saturating_sub(1);
        let bad = |to: usize| format!("{}: bad word specifier", self.text(spec_start, to));
        let number = |j: &mut usize| -> Option<usize> {
            let start = *j;
            while digit_at(src, *j) {
                *j += 1;
            }
            (start < *j).then(|| self.text(start, *j).parse().unwrap_or(usize::MAX))
        };
        let (from, to): (usize, Option<usize>) = match src.get(j).copied() {
            Some('^') => {
                j += 1;
                (1, Some(1))
            }
            Some('$') => {
                j += 1;
                (last, Some(last))
            }
            Some('*') => {
                j += 1;
                if words.len() < 2 {
                    return Ok((String::new(), j));
                }
                (1, Some(last))
            }
            Some('%') => return Err(bad(j + 1)),
            _ => {
                let x = number(&mut j).unwrap_or(0);
                match src.get(j).copied() {
                    Some('*') => {
                        j += 1;
                        if x > last {
                            return Err(bad(j));
                        }
                        (x, Some(last))
                    }
                    Some('-') => {
                        j += 1;
                        if src.get(j) == Some(&'$') {
                            j += 1;
                            (x, Some(last))
                        } else {
                            match number(&mut j) {
                                Some(y) => (x, Some(y)),
                                // `x-`: up to the word before the last.
                                None => (x, None),
                            }
                        }
                    }
                    _ => (x, Some(x)),
                }
            }
        };
        let to = match to {
            Some(t) => t,
            None => match last.checked_sub(1) {
                Some(t) if t >= from => t,
                _ => return Err(bad(j)),
            },
        };
        if words.is_empty() || from > to || to > last {
            return Err(bad(j));
        }
        Ok((words[from..=to].join(" "), j))
    }

    /// The `old` and `new` of `:s` whose delimiter is at `j`, and where scanning goes on.
    /// An empty `old` is `None`. A backslash quotes the delimiter (and `&` in `new`).
    fn subst_args(&self, mut j: usize) -> (Option<String>, Replacement, usize) {
        let src = self.src;
        let Some(&delim) = src.get(j) else {
            return (None, Replacement(Vec::new()), j);
        };
        j += 1;
        let mut old = String::new();
        while let Some(&c) = src.get(j) {
            if c == delim || c == '\n' {
                break;
            }
            if c == '\\' && src.get(j + 1) == Some(&delim) {
                old.push(delim);
                j += 2;
                continue;
            }
            old.push(c);
            j += 1;
        }
        if src.get(j) == Some(&delim) {
            j += 1;
        }
        let mut new = Vec::new();
        while let Some(&c) = src.get(j) {
            if c == delim || c == '\n' {
                break;
            }
            if c == '\\' && matches!(src.get(j + 1), Some(&n) if n == delim || n == '&') {
                new.push(Piece::Text(src[j + 1]));
                j += 2;
                continue;
            }
            new.push(if c == '&' { Piece::Old } else { Piece::Text(c) });
            j += 1;
        }
        if src.get(j) == Some(&delim) {
            j += 1;
        }
        ((!old.is_empty()).then_some(old), Replacement(new), j)
    }
}

/// The `new` of `:s`, where `&` stands for `old`.
struct Replacement(Vec<Piece>);

enum Piece {
    Text(char),
    Old,
}

impl Replacement {
    fn replace_amp(&self, old: &str) -> String {
        let mut s = String::new();
        for p in &self.0 {
            match p {
                Piece::Text(c) => s.push(*c),
                Piece::Old => s.push_str(old),
            }
        }
        s
    }
}

fn digit_at(src: &[char], j: usize) -> bool {
    src.get(j).is_some_and(char::is_ascii_digit)
}

/// `'…'` with each `'` inside as `'\''` (the `:q` and `:x` modifiers).
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The words of a history line as word designators count them: blank-separated, quotes
/// and `$( )` kept whole, and the shell's operators (`;`, `|`, `&&`, `>`, `2>>`, …)
/// words of their own.
pub fn tokenize(line: &str) -> Vec<String> {
    let cs: Vec<char> = line.chars().collect();
    let mut words = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        if cs[i].is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if is_operator(cs[i]) {
            i += 1;
            if let Some(&n) = cs.get(i) {
                let pair = matches!(
                    (cs[start], n),
                    ('&', '&')
                        | ('|', '|')
                        | (';', ';')
                        | ('>', '>')
                        | ('<', '<')
                        | ('>', '&')
                        | ('<', '&')
                        | ('&', '>')
                        | ('>', '|')
                        | ('|', '&')
                );
                if pair {
                    i += 1;
                }
            }
            words.push(cs[start..i].iter().collect());
            continue;
        }
        // A redirection's file descriptor goes with its operator (`2>`).
        let digits = cs[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 && matches!(cs.get(i + digits), Some('<' | '>')) {
            i += digits + 1;
            if matches!(cs.get(i), Some('>' | '&')) {
                i += 1;
            }
            words.push(cs[start..i].iter().collect());
            continue;
        }
        let mut depth = 0usize;
        while i < cs.len() {
            let c = cs[i];
            if depth == 0 && (c.is_whitespace() || is_operator(c)) {
                break;
            }
            match c {
                '\\' => i += 1,
                '\'' | '"' | '`' => {
                    let mut k = i + 1;
                    while k < cs.len() && cs[k] != c {
                        if cs[k] == '\\' && c != '\'' {
                            k += 1;
                        }
                        k += 1;
                    }
                    i = k;
                }
                '$' if matches!(cs.get(i + 1), Some('(' | '{')) => {
                    depth += 1;
                    i += 1;
                }
                '(' | '{' if depth > 0 => depth += 1,
                ')' | '}' if depth > 0 => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        let end = i.min(cs.len());
        words.push(cs[start..end].iter().collect());
    }
    words
}

fn is_operator(c: char) -> bool {
    matches!(c, ';' | '&' | '|' | '<' | '>' | '(' | ')')
}

/// How bash's `cmdhist` joins the lines of one command into one history entry: a
/// backslash-newline disappears, a line break inside quotes stays, a newline after a
/// keyword or operator that wants more becomes a space, and any other a `; `.
pub fn join_lines(entry: &mut String, line: &str) {
    if entry.is_empty() {
        entry.push_str(line);
        return;
    }
    if let Some(stripped) = entry.strip_suffix('\\') {
        let len = stripped.len();
        entry.truncate(len);
    } else if open_quote(entry) {
        entry.push('\n');
    } else {
        let t = entry.trim_end();
        let last_word = t.rsplit(char::is_whitespace).next().unwrap_or("");
        let wants_more = matches!(
            last_word,
            "then" | "do" | "else" | "elif" | "{" | "in" | "while" | "until" | "if"
        ) || t.ends_with(['|', '&', ';', '('])
            || t.is_empty();
        entry.push_str(if wants_more { " " } else { "; " });
    }
    entry.push_str(line);
}

/// Whether `text` ends inside single or double quotes.
fn open_quote(text: &str) -> bool {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), _) => {}
            (_, '\\') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some('"'), '"') => quote = None,
            _ => {}
        }
    }
    quote.is_some()
}

#[cfg(test)]
#[path = "histexpand_tests.rs"]
mod tests;

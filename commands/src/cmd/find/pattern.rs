//! The patterns `find` matches names with: shell globs as `fnmatch(3)` without flags
//! (`*` matches `/` and a leading `.`), and GNU regular expressions translated to the
//! `regex` crate's syntax by [`translate_regex`], the one place that knows the dialects
//! (a GNU regex engine will replace it).

use regex::{Regex, RegexBuilder};

/// The regular expression dialects `-regextype` accepts, grouped by what they mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegexType {
    /// `emacs`, `findutils-default`: `\(`, `\)`, `\|` groups; `+`, `?` operators; no
    /// intervals.
    Emacs,
    /// `posix-basic`, `ed`, `sed`, `grep`, `posix-minimal-basic`: `\(`, `\)`, `\{`, `\}`;
    /// GNU's `\+`, `\?`, `\|`.
    Basic,
    /// `posix-extended`, `egrep`, `posix-egrep`, `awk`, `posix-awk`, `gnu-awk`.
    Extended,
}

/// Every name `-regextype` takes, in the order GNU lists them.
pub(crate) const REGEX_TYPES: [&str; 13] = [
    "findutils-default",
    "ed",
    "emacs",
    "gnu-awk",
    "grep",
    "posix-awk",
    "awk",
    "posix-basic",
    "posix-egrep",
    "egrep",
    "posix-extended",
    "posix-minimal-basic",
    "sed",
];

impl RegexType {
    pub(crate) fn from_name(name: &str) -> Option<RegexType> {
        Some(match name {
            "findutils-default" | "emacs" => RegexType::Emacs,
            "ed" | "sed" | "grep" | "posix-basic" | "posix-minimal-basic" => RegexType::Basic,
            "gnu-awk" | "posix-awk" | "awk" | "posix-egrep" | "egrep" | "posix-extended" => {
                RegexType::Extended
            }
            _ => return None,
        })
    }
}

/// Compiles a GNU regular expression that must match a whole path.
pub(crate) fn compile_regex(pat: &str, kind: RegexType, icase: bool) -> Result<Regex, String> {
    let body = translate_regex(pat, kind)?;
    RegexBuilder::new(&format!(r"\A(?s:{body})\z"))
        .case_insensitive(icase)
        .build()
        .map_err(|_| "Invalid regular expression".to_string())
}

/// Translates `pat` from a GNU dialect to the `regex` crate's syntax.
pub(crate) fn translate_regex(pat: &str, kind: RegexType) -> Result<String, String> {
    let chars: Vec<char> = pat.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    // Whether an operator here would have nothing to apply to (start of the pattern or
    // of a group or alternative): then `*` is literal, and `^` is an anchor.
    let mut at_start = true;
    let mut depth = 0usize;
    while i < chars.len() {
        let c = chars[i];
        let start = at_start;
        at_start = false;
        match c {
            '\\' => {
                let Some(&n) = chars.get(i + 1) else {
                    return Err("Trailing backslash".into());
                };
                i += 2;
                let grouping = kind != RegexType::Extended;
                match n {
                    '(' if grouping => {
                        out.push('(');
                        depth += 1;
                        at_start = true;
                    }
                    ')' if grouping => {
                        if depth == 0 {
                            return Err("Unmatched ) or \\)".into());
                        }
                        depth -= 1;
                        out.push(')');
                    }
                    '|' if grouping => {
                        out.push('|');
                        at_start = true;
                    }
                    '{' if kind == RegexType::Basic => {
                        let (interval, used) = interval(&chars[i..], true)?;
                        out.push_str(&interval);
                        i += used;
                    }
                    '+' | '?' if kind == RegexType::Basic => {
                        if start {
                            out.push_str(&regex::escape(&n.to_string()));
                        } else {
                            out.push(n);
                        }
                    }
                    'w' | 'W' | 's' | 'S' | 'b' | 'B' => {
                        out.push('\\');
                        out.push(n);
                    }
                    '<' | '>' => out.push_str(r"\b"),
                    '`' => out.push_str(r"\A"),
                    '\'' => out.push_str(r"\z"),
                    '1'..='9' => return Err("Back-references are not supported".into()),
                    other => out.push_str(&regex::escape(&other.to_string())),
                }
                continue;
            }
            '[' => {
                let (class, used) = bracket(&chars[i..])?;
                out.push_str(&class);
                i += used;
                continue;
            }
            '.' => out.push('.'),
            '^' if start || kind == RegexType::Extended => out.push('^'),
            '$' => {
                let next = chars.get(i + 1..i + 3);
                let at_end = i + 1 == chars.len()
                    || kind == RegexType::Extended
                    || matches!(next, Some(['\\', ')' | '|']));
                out.push_str(if at_end { "$" } else { r"\$" });
            }
            '*' if !start => out.push('*'),
            '+' | '?' if !start && kind != RegexType::Basic => out.push(c),
            '(' if kind == RegexType::Extended => {
                out.push('(');
                depth += 1;
                at_start = true;
            }
            ')' if kind == RegexType::Extended && depth > 0 => {
                depth -= 1;
                out.push(')');
            }
            '|' if kind == RegexType::Extended => {
                out.push('|');
                at_start = true;
            }
            '{' if kind == RegexType::Extended && !start => {
                match interval(&chars[i + 1..], false) {
                    Ok((interval, used)) => {
                        out.push_str(&interval);
                        i += used;
                    }
                    Err(_) => out.push_str(r"\{"),
                }
            }
            other => out.push_str(&regex::escape(&other.to_string())),
        }
        i += 1;
    }
    if depth > 0 {
        return Err("Unmatched ( or \\(".into());
    }
    Ok(out)
}

/// An interval `m,n}` (after its `{`; with `\}` when `escaped`): the `regex` crate's text
/// and how many characters it used.
fn interval(chars: &[char], escaped: bool) -> Result<(String, usize), String> {
    let mut body = String::new();
    let mut i = 0;
    loop {
        match chars.get(i) {
            Some('\\') if escaped && chars.get(i + 1) == Some(&'}') => {
                i += 2;
                break;
            }
            Some('}') if !escaped => {
                i += 1;
                break;
            }
            Some(c) if c.is_ascii_digit() || *c == ',' => body.push(*c),
            _ => return Err("Unmatched \\{".into()),
        }
        i += 1;
    }
    let valid = match body.split_once(',') {
        None => !body.is_empty(),
        Some((a, b)) => !(b.contains(',') || a.is_empty() && b.is_empty()),
    };
    if !valid {
        return Err("Invalid content of \\{\\}".into());
    }
    let body = if body.starts_with(',') {
        format!("0{body}")
    } else {
        body
    };
    Ok((format!("{{{body}}}"), i))
}

/// A POSIX bracket expression starting at `[`: the `regex` crate's class and the
/// characters used. Backslash is literal inside; `]` first is literal.
fn bracket(chars: &[char]) -> Result<(String, usize), String> {
    let mut out = String::from("[");
    let mut i = 1;
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    let mut first = true;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err("Unmatched [, [^, [:, [., or [=".into());
        };
        if c == ']' && !first {
            out.push(']');
            return Ok((out, i + 1));
        }
        first = false;
        if c == '[' && matches!(chars.get(i + 1), Some(':' | '.' | '=')) {
            let kind = chars[i + 1];
            let rest = &chars[i + 2..];
            let Some(end) = rest.windows(2).position(|w| w[0] == kind && w[1] == ']') else {
                return Err("Unmatched [, [^, [:, [., or [=".into());
            };
            let name: String = rest[..end].iter().collect();
            if kind == ':' {
                out.push_str(&format!("[:{name}:]"));
            } else {
                out.push_str(&regex::escape(&name));
            }
            i += 2 + end + 2;
            continue;
        }
        if c == '-' {
            let is_range = out.len() > 1
                && !out.ends_with('[')
                && !out.ends_with('^')
                && chars.get(i + 1).is_some_and(|n| *n != ']');
            out.push_str(if is_range { "-" } else { r"\-" });
        } else {
            out.push_str(&regex::escape(&c.to_string()));
            if matches!(c, '&' | '~') {
                // `&&` and `~~` are set operations in the regex crate.
                out.insert(out.len() - 1, '\\');
            }
        }
        i += 1;
    }
}

/// Whether `name` matches the glob `pat` (`fnmatch` without flags; `icase` for
/// `-iname`).
pub(crate) fn glob_match(pat: &str, name: &str, icase: bool) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    glob_at(&p, &n, icase)
}

fn fold(c: char, icase: bool) -> char {
    if icase {
        c.to_lowercase().next().unwrap_or(c)
    } else {
        c
    }
}

fn glob_at(p: &[char], n: &[char], icase: bool) -> bool {
    // Iterative with one backtrack point for the last `*`: linear enough for names.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some('?') => Some(1),
            Some('[') => match class_match(&p[pi..], n[ni], icase) {
                Some((true, used)) => Some(used),
                Some((false, _)) => None,
                None => (n[ni] == '[').then_some(1),
            },
            Some('\\') if pi + 1 < p.len() => {
                (fold(p[pi + 1], icase) == fold(n[ni], icase)).then_some(2)
            }
            Some(&c) => (fold(c, icase) == fold(n[ni], icase)).then_some(1),
            None => None,
        };
        match step {
            Some(used) => {
                pi += used;
                ni += 1;
            }
            None => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Matches `c` against the bracket expression at the start of `p`: whether it matched
/// and the pattern characters used, or `None` when the `[` opens no valid expression.
fn class_match(p: &[char], c: char, icase: bool) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let c = fold(c, icase);
    let mut matched = false;
    let mut first = true;
    loop {
        let &pc = p.get(i)?;
        if pc == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if pc == '[' && p.get(i + 1) == Some(&':') {
            let rest = &p[i + 2..];
            let end = rest.windows(2).position(|w| w == [':', ']'])?;
            let name: String = rest[..end].iter().collect();
            matched |= char_class(&name, c);
            i += 2 + end + 2;
            continue;
        }
        let (lo, used) = if pc == '\\' {
            (*p.get(i + 1)?, 2)
        } else {
            (pc, 1)
        };
        i += used;
        if p.get(i) == Some(&'-') && p.get(i + 1).is_some_and(|h| *h != ']') {
            let (hi, used) = if p[i + 1] == '\\' {
                (*p.get(i + 2)?, 3)
            } else {
                (p[i + 1], 2)
            };
            i += used;
            let (lo, hi) = (fold(lo, icase), fold(hi, icase));
            matched |= lo <= c && c <= hi;
        } else {
            matched |= fold(lo, icase) == c;
        }
    }
}

fn char_class(name: &str, c: char) -> bool {
    match name {
        "alpha" => c.is_alphabetic(),
        "digit" => c.is_ascii_digit(),
        "alnum" => c.is_alphanumeric(),
        "upper" => c.is_uppercase(),
        "lower" => c.is_lowercase(),
        "space" => c.is_whitespace(),
        "blank" => c == ' ' || c == '\t',
        "punct" => c.is_ascii_punctuation(),
        "xdigit" => c.is_ascii_hexdigit(),
        "cntrl" => c.is_control(),
        "print" => !c.is_control(),
        "graph" => !c.is_control() && c != ' ',
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("*.txt", "a.txt", false));
        assert!(glob_match("*", ".hidden", false));
        assert!(glob_match("*b*", "a/b/c", false));
        assert!(!glob_match("*.txt", "a.TXT", false));
        assert!(glob_match("*.txt", "a.TXT", true));
        assert!(glob_match("[a-c]?", "bz", false));
        assert!(glob_match("[!a-c]?", "dz", false));
        assert!(!glob_match("[!a-c]?", "az", false));
        assert!(glob_match("[[:digit:]]x", "7x", false));
        assert!(glob_match("\\*", "*", false));
        assert!(!glob_match("\\*", "a", false));
        assert!(glob_match("[", "[", false));
        assert!(glob_match("a*b*c", "aXbYbZc", false));
        assert!(!glob_match("a*b*c", "aXbYbZ", false));
    }

    fn m(pat: &str, kind: RegexType, s: &str) -> bool {
        compile_regex(pat, kind, false).is_ok_and(|r| r.is_match(s))
    }

    #[test]
    fn regex_dialects() {
        use RegexType::*;
        assert!(m(r".*\.\(c\|h\)", Emacs, "./a.c"));
        assert!(!m(r".*\.(c|h)", Emacs, "./a.c"));
        assert!(m(r".*\.(c|h)", Emacs, "./a.(c|h)"));
        assert!(m(r".*\.(c|h)", Extended, "./a.h"));
        assert!(m(r"\./a+", Emacs, "./aaa"));
        assert!(m(r"\./a+", Basic, "./a+"));
        assert!(m(r"\./a\+", Basic, "./aa"));
        assert!(m(r"\./a\{2\}", Basic, "./aa"));
        assert!(m(r"\./a{2}", Extended, "./aa"));
        assert!(m(r"\./a{2}", Emacs, "./a{2}"));
        assert!(m(r"[[:alpha:]/.]*", Extended, "./abc"));
        assert!(m(r"[]a]*", Extended, "]a]"));
        assert!(m(r"[\]*", Extended, "\\\\"));
        assert!(!m(r"a", Emacs, "./a"));
        assert!(compile_regex(r"\(", Emacs, false).is_err());
        assert!(compile_regex(r"[a", Extended, false).is_err());
        assert!(compile_regex(r"a\1", Basic, false).is_err());
    }
}

//! The patterns `find` matches names with: shell globs as `fnmatch(3)` without flags
//! (`*` matches `/` and a leading `.`), and GNU regular expressions on the GNU regex
//! engine ([`compile_regex`], the one place that knows the `-regextype` dialects).

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

/// A compiled `-regex`: GNU's regex engine, matching the whole path.
#[derive(Debug)]
pub(crate) struct PathRegex(crate::gnu_regex::Regex);

impl PathRegex {
    pub(crate) fn is_match(&self, path: &str) -> bool {
        self.0.is_match(path.as_bytes()).unwrap_or(false)
    }
}

/// Compiles a GNU regular expression that must match a whole path, on the GNU regex
/// engine (`gnu_regex`): `posix-basic` and `posix-extended` as they are, and the emacs
/// syntax of find's default rewritten into a basic one (where `+`, `?` are operators and
/// `\(`, `\)`, `\|` group, and back-references work).
pub(crate) fn compile_regex(pat: &str, kind: RegexType, icase: bool) -> Result<PathRegex, String> {
    use crate::gnu_regex::{Dialect, Flags, compile};
    let flags = Flags {
        icase,
        whole_line: true,
        ..Flags::default()
    };
    let (text, dialect) = match kind {
        RegexType::Extended => (pat.to_string(), Dialect::Extended),
        RegexType::Basic => (pat.to_string(), Dialect::Basic),
        RegexType::Emacs => (emacs_to_basic(pat), Dialect::Basic),
    };
    compile(&text, dialect, flags).map(PathRegex).map_err(|e| {
        format!(
            "failed to compile regular expression {}: {}",
            crate::cmd::util::quote(pat),
            e.msg
        )
    })
}

/// Rewrites an emacs-syntax regex as a GNU basic one: unescaped `+`/`?` (operators in
/// emacs) become `\+`/`\?` (literal at the start of a group or the pattern, as in
/// emacs), `\{`/`\}` are literal braces (emacs has no intervals), bracket expressions
/// are copied as they are.
fn emacs_to_basic(pat: &str) -> String {
    let chars: Vec<char> = pat.chars().collect();
    let mut out = String::with_capacity(pat.len() + 8);
    let mut i = 0;
    let mut at_start = true;
    while i < chars.len() {
        let c = chars[i];
        let start = at_start;
        at_start = false;
        match c {
            '\\' => match chars.get(i + 1) {
                Some('(') | Some('|') => {
                    out.push('\\');
                    out.push(chars[i + 1]);
                    at_start = true;
                    i += 2;
                }
                Some('{') | Some('}') => {
                    out.push(chars[i + 1]);
                    i += 2;
                }
                Some('+') | Some('?') => {
                    out.push(chars[i + 1]);
                    i += 2;
                }
                Some(&n) => {
                    out.push('\\');
                    out.push(n);
                    i += 2;
                }
                None => {
                    out.push('\\');
                    i += 1;
                }
            },
            '+' | '?' => {
                if !start {
                    out.push('\\');
                }
                out.push(c);
                i += 1;
            }
            '[' => {
                // Copy the bracket expression through its closing `]`.
                let mut j = i + 1;
                if chars.get(j) == Some(&'^') {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    if chars[j] == '[' && matches!(chars.get(j + 1), Some(':' | '.' | '=')) {
                        let close = chars[j + 1];
                        j += 2;
                        while j + 1 < chars.len() && !(chars[j] == close && chars[j + 1] == ']') {
                            j += 1;
                        }
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                let end = (j + 1).min(chars.len());
                out.extend(&chars[i..end]);
                i = end;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
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

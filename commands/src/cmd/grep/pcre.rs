//! PCRE2's messages for `grep -P` patterns: the `fancy-regex` crate takes some that
//! PCRE2 refuses and words its errors its own way, so the common mistakes are found here.

/// PCRE2's word for what is wrong with a pattern `fancy-regex` refused, for the
/// common mistakes (GNU grep -P prints PCRE2's message); `None` leaves the crate's.
pub(super) fn pcre_syntax_error(p: &str) -> Option<&'static str> {
    let c: Vec<char> = p.chars().collect();
    let mut i = 0;
    let mut depth = 0usize;
    // Whether the item before a quantifier can be repeated.
    let mut repeatable = false;
    while i < c.len() {
        match c[i] {
            '\\' => {
                if i + 1 >= c.len() {
                    return Some("\\ at end of pattern");
                }
                i += 2;
                repeatable = true;
                continue;
            }
            '[' => {
                let mut j = i + 1;
                if c.get(j) == Some(&'^') {
                    j += 1;
                }
                if c.get(j) == Some(&']') {
                    j += 1;
                }
                let mut prev: Option<char> = None;
                loop {
                    match c.get(j) {
                        None => return Some("missing terminating ] for character class"),
                        Some(']') => break,
                        Some('\\') => {
                            j += 2;
                            prev = None;
                        }
                        Some('[') if c.get(j + 1) == Some(&':') => {
                            let close = (j + 2..c.len().saturating_sub(1))
                                .find(|&k| c[k] == ':' && c[k + 1] == ']');
                            j = close.map_or(j + 1, |k| k + 2);
                            prev = None;
                            // A class can end no range.
                            if close.is_some()
                                && c.get(j) == Some(&'-')
                                && c.get(j + 1).is_some_and(|&x| x != ']')
                            {
                                return Some("invalid range in character class");
                            }
                        }
                        Some('-') if prev.is_some() && c.get(j + 1).is_some_and(|&x| x != ']') => {
                            let hi = c[j + 1];
                            if hi != '\\' && hi != '[' && prev.is_some_and(|lo| hi < lo) {
                                return Some("range out of order in character class");
                            }
                            j += 2;
                            prev = None;
                        }
                        Some(&x) => {
                            prev = Some(x);
                            j += 1;
                        }
                    }
                }
                i = j + 1;
                repeatable = true;
                continue;
            }
            '(' => {
                depth += 1;
                repeatable = false;
                if c.get(i + 1) == Some(&'?') {
                    let mut j = i + 2;
                    if c.get(j) == Some(&'#') {
                        // A comment, to its `)`.
                        while j < c.len() && c[j] != ')' {
                            j += 1;
                        }
                        depth -= 1;
                        i = j + 1;
                        continue;
                    }
                    while c.get(j).is_some_and(|x| "imsxnUJ-^".contains(*x)) {
                        j += 1;
                    }
                    match c.get(j) {
                        Some(')') if j > i + 2 => {
                            depth -= 1;
                            i = j + 1;
                            continue;
                        }
                        Some(':') if j > i + 2 => {
                            i = j + 1;
                            continue;
                        }
                        Some(x) if j == i + 2 && ":=!<>P'|R&+0123456789".contains(*x) => {
                            i += 2;
                            continue;
                        }
                        _ => return Some("unrecognized character after (? or (?-"),
                    }
                }
            }
            ')' => {
                if depth == 0 {
                    return Some("unmatched closing parenthesis");
                }
                depth -= 1;
                repeatable = true;
            }
            '|' => repeatable = false,
            '*' | '+' | '?' => {
                if !repeatable {
                    return Some("quantifier does not follow a repeatable item");
                }
                if matches!(c.get(i + 1), Some('+' | '?')) {
                    i += 1;
                }
                repeatable = false;
            }
            '{' => {
                let rest: String = c[i + 1..].iter().take_while(|&&x| x != '}').collect();
                let closed = c[i + 1..].contains(&'}');
                let mut parts = rest.splitn(2, ',');
                let lo = parts.next().unwrap_or_default();
                let hi = parts.next();
                let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
                let quantifier =
                    closed && digits(lo) && hi.is_none_or(|h| h.is_empty() || digits(h));
                if quantifier {
                    if !repeatable {
                        return Some("quantifier does not follow a repeatable item");
                    }
                    let n = |s: &str| s.parse::<u64>().unwrap_or(u64::MAX);
                    if n(lo) > 65535 || hi.is_some_and(|h| !h.is_empty() && n(h) > 65535) {
                        return Some("number too big in {} quantifier");
                    }
                    if hi.is_some_and(|h| !h.is_empty() && n(h) < n(lo)) {
                        return Some("numbers out of order in {} quantifier");
                    }
                    i += rest.chars().count() + 2;
                    repeatable = false;
                    continue;
                }
                repeatable = true;
            }
            _ => repeatable = true,
        }
        i += 1;
    }
    (depth > 0).then_some("missing closing parenthesis")
}

/// ASCII's word characters, as PCRE2 without its UCP option has them.
const WORD: &str = "A-Za-z0-9_";

/// `pattern` with PCRE2's ASCII readings of `\w \W \d \D \s \S \b \B` spelled out: GNU
/// grep 3.8 compiles without PCRE2_UCP, so they ignore letters and digits outside ASCII
/// (where the `fancy-regex` crate's are Unicode's). Inside a bracket expression the
/// positive classes become their ranges; anything else is copied as it is.
pub(super) fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    let mut class_start = false;
    while let Some(c) = chars.next() {
        let at_start = std::mem::take(&mut class_start);
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push(c);
                    break;
                };
                let spelled = match (n, in_class) {
                    ('w', false) => format!("[{WORD}]"),
                    ('W', false) => format!("[^{WORD}]"),
                    ('d', false) => "[0-9]".to_string(),
                    ('D', false) => "[^0-9]".to_string(),
                    ('s', false) => "[\\t\\n\\x0B\\f\\r ]".to_string(),
                    ('S', false) => "[^\\t\\n\\x0B\\f\\r ]".to_string(),
                    ('b', false) => {
                        format!("(?:(?<=[{WORD}])(?![{WORD}])|(?<![{WORD}])(?=[{WORD}]))")
                    }
                    ('B', false) => {
                        format!("(?:(?<=[{WORD}])(?=[{WORD}])|(?<![{WORD}])(?![{WORD}]))")
                    }
                    ('w', true) => WORD.to_string(),
                    ('d', true) => "0-9".to_string(),
                    ('s', true) => "\\t\\n\\x0B\\f\\r ".to_string(),
                    _ => format!("\\{n}"),
                };
                out.push_str(&spelled);
            }
            '[' if !in_class => {
                out.push(c);
                in_class = true;
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                class_start = true;
            }
            '[' if chars.peek() == Some(&':') => {
                // A POSIX class inside brackets, copied to its `:]`.
                out.push(c);
                for k in chars.by_ref() {
                    out.push(k);
                    if k == ']' {
                        break;
                    }
                }
            }
            ']' if in_class && !at_start => {
                out.push(c);
                in_class = false;
            }
            c => out.push(c),
        }
    }
    out
}

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
                // `\K` sets where the match starts: nothing to repeat.
                repeatable = c[i + 1] != 'K';
                i += 2;
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
                    // A lazy or possessive quantifier (`{2,}?`).
                    if matches!(c.get(i), Some('+' | '?')) {
                        i += 1;
                    }
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

/// `pattern` with each `\Q…\E` (quoted text, to `\E` or the end) spelled as escaped
/// characters, which the `fancy-regex` crate does not read.
pub(super) fn quote_literals(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Q') => {
                while let Some(q) = chars.next() {
                    if q == '\\' && chars.peek() == Some(&'E') {
                        chars.next();
                        break;
                    }
                    if q.is_ascii_punctuation() || q == ' ' {
                        out.push('\\');
                    }
                    out.push(q);
                }
            }
            // A stray `\E` ends nothing.
            Some('E') => {}
            Some(n) => {
                out.push('\\');
                out.push(n);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// PCRE2's horizontal white space (`\\h`), as a bracket expression's content.
const HSPACE: &str = "\\t \\x{A0}\\x{1680}\\x{180E}\\x{2000}-\\x{200A}\\x{202F}\\x{205F}\\x{3000}";

/// `pattern` with what PCRE2 reads and the `fancy-regex` crate does not (or reads
/// otherwise) spelled in the crate's terms: the verbs that open a pattern (`(*UCP)`,
/// dropped; the flag says whether it asked for Unicode's classes), `\h \H \N \R`, octal
/// `\o{..}` and `\101`, `\g` back-references (numbered, relative, named), and the `{`
/// of `{,n}`, which PCRE2 10.42 reads as itself.
pub(super) fn perl_rewrite(pattern: &str) -> (String, bool) {
    let mut rest = pattern;
    let mut ucp = false;
    while let Some(body) = rest.strip_prefix("(*") {
        let Some(end) = body.find(')') else { break };
        let verb = &body[..end];
        if verb.is_empty()
            || !verb
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_' || b == b'=')
        {
            break;
        }
        ucp |= verb == "UCP";
        rest = &body[end + 1..];
    }
    let c: Vec<char> = rest.chars().collect();
    let mut out = String::with_capacity(rest.len());
    let mut groups = 0usize;
    let mut in_class = false;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        match ch {
            '\\' if i + 1 < c.len() => {
                let n = c[i + 1];
                i += 2;
                match n {
                    'h' if in_class => out.push_str(HSPACE),
                    'h' => out.push_str(&format!("[{HSPACE}]")),
                    'H' if !in_class => out.push_str(&format!("[^{HSPACE}]")),
                    'N' if !in_class && c.get(i) != Some(&'{') => out.push_str("[^\\n]"),
                    'R' if !in_class => {
                        out.push_str("(?:\\r\\n|[\\n\\x0B\\f\\r\\x{85}\\x{2028}\\x{2029}])");
                    }
                    'o' if c.get(i) == Some(&'{') => {
                        let end = c[i..].iter().position(|&x| x == '}').map(|k| k + i);
                        let digits: String =
                            end.map_or(String::new(), |e| c[i + 1..e].iter().collect());
                        match (end, u32::from_str_radix(&digits, 8)) {
                            (Some(e), Ok(v)) => {
                                out.push_str(&format!("\\x{{{v:X}}}"));
                                i = e + 1;
                            }
                            _ => out.push_str("\\o"),
                        }
                    }
                    '1'..='9' if !in_class => {
                        let start = i - 1;
                        let mut j = start;
                        while c.get(j).is_some_and(char::is_ascii_digit) {
                            j += 1;
                        }
                        let dec: String = c[start..j].iter().collect();
                        let value = dec.parse::<usize>().unwrap_or(usize::MAX);
                        if value < 10 || n == '8' || n == '9' || value <= groups {
                            out.push('\\');
                            out.push_str(&dec);
                            i = j;
                        } else {
                            // Up to three octal digits make a character.
                            let mut k = start;
                            let mut v = 0u32;
                            while k < start + 3 && c.get(k).is_some_and(|d| ('0'..='7').contains(d))
                            {
                                v = v * 8 + c[k].to_digit(8).unwrap_or(0);
                                k += 1;
                            }
                            out.push_str(&format!("\\x{{{v:X}}}"));
                            i = k;
                        }
                    }
                    'g' if !in_class => {
                        let braced = c.get(i) == Some(&'{');
                        let from = i + usize::from(braced);
                        let mut j = from;
                        if c.get(j) == Some(&'-') || c.get(j) == Some(&'+') {
                            j += 1;
                        }
                        while c.get(j).is_some_and(|x| x.is_alphanumeric() || *x == '_') {
                            j += 1;
                        }
                        let name: String = c[from..j].iter().collect();
                        let closed = !braced || c.get(j) == Some(&'}');
                        let number = if let Some(rel) = name.strip_prefix('-') {
                            rel.parse::<usize>()
                                .ok()
                                .and_then(|r| (groups + 1).checked_sub(r))
                        } else {
                            name.parse::<usize>().ok()
                        };
                        match (closed, number) {
                            (true, Some(num)) if !name.starts_with('+') => {
                                out.push_str(&format!("(?:\\{num})"));
                                i = j + usize::from(braced);
                            }
                            (true, None)
                                if braced && !name.is_empty() && !name.starts_with(['-', '+']) =>
                            {
                                out.push_str(&format!("\\k<{name}>"));
                                i = j + 1;
                            }
                            _ => out.push_str("\\g"),
                        }
                    }
                    _ => {
                        out.push('\\');
                        out.push(n);
                    }
                }
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push(ch);
                i += 1;
                if c.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if c.get(i) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
                continue;
            }
            '[' if c.get(i + 1) == Some(&':') => {
                // A POSIX class inside brackets, copied to its `:]`.
                while i < c.len() {
                    out.push(c[i]);
                    i += 1;
                    if c[i - 1] == ']' {
                        break;
                    }
                }
                continue;
            }
            ']' if in_class => in_class = false,
            '(' if !in_class => {
                let capturing = match c.get(i + 1) {
                    Some('?') => match (c.get(i + 2), c.get(i + 3)) {
                        (Some('<'), Some('=' | '!')) => false,
                        (Some('<' | '\''), _) => true,
                        (Some('P'), Some('<')) => true,
                        _ => false,
                    },
                    Some('*') => false,
                    _ => true,
                };
                groups += usize::from(capturing);
            }
            '{' if !in_class && c.get(i + 1) == Some(&',') => {
                out.push_str("\\{");
                i += 1;
                continue;
            }
            _ => {}
        }
        out.push(ch);
        i += 1;
    }
    (out, ucp)
}

/// PCRE2's error for what the crate would take or word otherwise: two groups of one
/// name, a reference to a group that is not there, an unknown POSIX class.
pub(super) fn pcre_reference_error(pattern: &str) -> Option<&'static str> {
    let c: Vec<char> = pattern.chars().collect();
    let mut names: Vec<String> = Vec::new();
    let mut refs: Vec<String> = Vec::new();
    let mut numbers: Vec<usize> = Vec::new();
    let mut groups = 0usize;
    let mut in_class = false;
    let read_name = |from: usize, end: char| -> Option<(String, usize)> {
        let close = c[from..].iter().position(|&x| x == end)? + from;
        Some((c[from..close].iter().collect(), close))
    };
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' => {
                match (c.get(i + 1), c.get(i + 2)) {
                    (Some('k'), Some(&open @ ('<' | '\'' | '{'))) if !in_class => {
                        let end = match open {
                            '<' => '>',
                            '{' => '}',
                            _ => '\'',
                        };
                        if let Some((name, _)) = read_name(i + 3, end) {
                            refs.push(name);
                        }
                    }
                    (Some(d), next)
                        if !in_class
                            && d.is_ascii_digit()
                            && *d != '0'
                            && !next.is_some_and(char::is_ascii_digit) =>
                    {
                        numbers.push(d.to_digit(10).map_or(0, |v| v as usize));
                    }
                    _ => {}
                }
                i += 2;
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                i += 1;
                if c.get(i) == Some(&'^') {
                    i += 1;
                }
                if c.get(i) == Some(&']') {
                    i += 1;
                }
                continue;
            }
            '[' if c.get(i + 1) == Some(&':') => {
                if let Some((name, close)) = read_name(i + 2, ':')
                    && c.get(close + 1) == Some(&']')
                {
                    let known = [
                        "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower",
                        "print", "punct", "space", "upper", "word", "xdigit",
                    ];
                    if !known.contains(&name.trim_start_matches('^')) {
                        return Some("unknown POSIX class name");
                    }
                    i = close + 2;
                    continue;
                }
            }
            ']' if in_class => in_class = false,
            '(' if !in_class => match (c.get(i + 1), c.get(i + 2), c.get(i + 3)) {
                (Some('?'), Some('<'), Some('=' | '!')) => {}
                (Some('?'), Some(&open @ ('<' | '\'')), _) => {
                    groups += 1;
                    let end = if open == '<' { '>' } else { '\'' };
                    if let Some((name, _)) = read_name(i + 3, end) {
                        if names.contains(&name) {
                            return Some(
                                "two named subpatterns have the same name (PCRE2_DUPNAMES not set)",
                            );
                        }
                        names.push(name);
                    }
                }
                (Some('?'), Some('P'), Some('<')) => {
                    groups += 1;
                    if let Some((name, _)) = read_name(i + 4, '>') {
                        if names.contains(&name) {
                            return Some(
                                "two named subpatterns have the same name (PCRE2_DUPNAMES not set)",
                            );
                        }
                        names.push(name);
                    }
                }
                (Some('?'), Some('P'), Some('=')) => {
                    if let Some((name, _)) = read_name(i + 4, ')') {
                        refs.push(name);
                    }
                }
                (Some('?' | '*'), _, _) => {}
                _ => groups += 1,
            },
            _ => {}
        }
        i += 1;
    }
    let missing_name = refs.iter().any(|r| !names.contains(r));
    let missing_number = numbers.iter().any(|&n| n > groups);
    (missing_name || missing_number).then_some("reference to non-existent subpattern")
}

/// Whether a lookbehind of `pattern` can match texts of different lengths, which PCRE2
/// refuses ("lookbehind assertion is not fixed length") and the crate takes: each of
/// its alternatives must have one length.
pub(super) fn variable_lookbehind(pattern: &str) -> bool {
    let c: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '[' => i = class_end(&c, i) + 1,
            '(' if c[i + 1..].starts_with(&['?', '<', '='])
                || c[i + 1..].starts_with(&['?', '<', '!']) =>
            {
                let end = group_end(&c, i);
                let inner = &c[(i + 4).min(end)..end];
                if alternatives(inner)
                    .iter()
                    .any(|alt| fixed_len(alt).is_none())
                {
                    return true;
                }
                i += 4;
            }
            _ => i += 1,
        }
    }
    false
}

/// Index of the `]` that closes the bracket expression opened at `c[at]` (or the end).
fn class_end(c: &[char], at: usize) -> usize {
    let mut j = at + 1;
    if c.get(j) == Some(&'^') {
        j += 1;
    }
    if c.get(j) == Some(&']') {
        j += 1;
    }
    while j < c.len() && c[j] != ']' {
        if c[j] == '\\' {
            j += 1;
        } else if c[j] == '[' && c.get(j + 1) == Some(&':') {
            j += 1;
            while j < c.len() && !(c[j] == ':' && c.get(j + 1) == Some(&']')) {
                j += 1;
            }
            j += 1;
        }
        j += 1;
    }
    j.min(c.len())
}

/// Index of the `)` that closes the group opened at `c[at]` (or the end).
fn group_end(c: &[char], at: usize) -> usize {
    let mut depth = 0;
    let mut j = at;
    while j < c.len() {
        match c[j] {
            '\\' => j += 1,
            '[' => j = class_end(c, j),
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
        j += 1;
    }
    c.len()
}

/// The top-level alternatives of a group's content.
fn alternatives(c: &[char]) -> Vec<&[char]> {
    let mut out = Vec::new();
    let (mut depth, mut start, mut j) = (0, 0, 0);
    while j < c.len() {
        match c[j] {
            '\\' => j += 1,
            '[' => j = class_end(c, j),
            '(' => depth += 1,
            ')' => depth -= 1,
            '|' if depth == 0 => {
                out.push(&c[start..j]);
                start = j + 1;
            }
            _ => {}
        }
        j += 1;
    }
    out.push(&c[start.min(c.len())..]);
    out
}

/// The one length of text `c` (no alternatives at its top) matches, if it has one.
fn fixed_len(c: &[char]) -> Option<usize> {
    let mut total = 0usize;
    let mut j = 0;
    while j < c.len() {
        let (len, next) = match c[j] {
            '\\' => match c.get(j + 1) {
                Some('b' | 'B' | 'A' | 'z' | 'Z' | 'G') => (0, j + 2),
                Some(d) if d.is_ascii_digit() => return None,
                Some('k' | 'g' | 'K') => return None,
                _ => (1, j + 2),
            },
            '[' => (1, class_end(c, j) + 1),
            '^' | '$' => (0, j + 1),
            '(' => {
                let end = group_end(c, j);
                let inner = &c[(j + 1).min(end)..end];
                let len = match inner {
                    ['?', '=' | '!', ..] | ['?', '<', '=' | '!', ..] => 0,
                    ['?', ':', rest @ ..] => same_len(rest)?,
                    ['?', ..] if inner.contains(&')') => return None,
                    _ => same_len(inner)?,
                };
                (len, end + 1)
            }
            _ => (1, j + 1),
        };
        j = next;
        // A quantifier after the item.
        let times = match c.get(j) {
            Some('*' | '+' | '?') => return None,
            Some('{') => {
                let close = c[j..].iter().position(|&x| x == '}')? + j;
                let body: String = c[j + 1..close].iter().collect();
                let (lo, hi) = body.split_once(',').unwrap_or((&body, &body));
                if lo != hi || lo.is_empty() {
                    return None;
                }
                j = close + 1;
                lo.parse::<usize>().ok()?
            }
            _ => 1,
        };
        total += len * times;
    }
    Some(total)
}

/// The length every alternative of a group has, if they share one.
fn same_len(c: &[char]) -> Option<usize> {
    let mut lens = alternatives(c).into_iter().map(fixed_len);
    let first = lens.next()??;
    lens.all(|l| l == Some(first)).then_some(first)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_spellings_the_crate_lacks() {
        let r = |p: &str| perl_rewrite(p).0;
        assert_eq!(r(r"\N+"), r"[^\n]+");
        assert_eq!(r(r"\o{101}"), r"\x{41}");
        assert_eq!(r(r"\101"), r"\x{41}");
        assert_eq!(r(r"(a)\1"), r"(a)\1");
        assert_eq!(r(r"(a)\g1\g{-1}"), r"(a)(?:\1)(?:\1)");
        assert_eq!(r(r"(?<d>x)\g{d}"), r"(?<d>x)\k<d>");
        assert_eq!(r("a{,2}"), r"a\{,2}");
        assert_eq!(r("[{,]"), "[{,]");
        assert_eq!(perl_rewrite(r"(*UCP)\w"), (r"\w".to_string(), true));
        assert!(r(r"\h").starts_with(r"[\t "));
    }

    #[test]
    fn references_and_names_pcre2_refuses() {
        let dup = "two named subpatterns have the same name (PCRE2_DUPNAMES not set)";
        assert_eq!(pcre_reference_error("(?<n>a)(?<n>b)"), Some(dup));
        assert_eq!(pcre_reference_error("(?P<n>a)(?'n'b)"), Some(dup));
        let missing = Some("reference to non-existent subpattern");
        assert_eq!(pcre_reference_error(r"\k<zz>"), missing);
        assert_eq!(pcre_reference_error(r"\1"), missing);
        assert_eq!(pcre_reference_error(r"(a)\2"), missing);
        assert_eq!(pcre_reference_error(r"(\2two|(one))+"), None);
        assert_eq!(pcre_reference_error(r"(?<n>a)\k<n>(?P=n)"), None);
        assert_eq!(
            pcre_reference_error("[[:foo:]]"),
            Some("unknown POSIX class name")
        );
        assert_eq!(pcre_reference_error("[[:alpha:][:^digit:]]"), None);
    }

    #[test]
    fn quoted_text_is_escaped() {
        assert_eq!(quote_literals(r"\Qa.b\E+"), r"a\.b+");
        assert_eq!(quote_literals(r"x\Q(*"), r"x\(\*");
        assert_eq!(quote_literals(r"\d\E"), r"\d");
    }

    #[test]
    fn lookbehinds_of_one_length() {
        for fixed in [
            r"(?<=ab)c",
            r"(?<=a|bc)d",
            r"(?<!x{2})y",
            r"(?<=(?:ab|cd))e",
            r"\(?<=a+)",
        ] {
            assert!(!variable_lookbehind(fixed), "{fixed}");
        }
        for variable in [
            r"(?<=a+)b",
            r"(?<=a?)b",
            r"(?<=(a|bc))d",
            r"(?<=a{1,2})b",
            r"(?<=(a)\1)b",
        ] {
            assert!(variable_lookbehind(variable), "{variable}");
        }
    }
}

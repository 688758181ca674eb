//! awk's regular expressions (POSIX ERE with gawk's extensions) translated to the
//! `regex` crate. [`compile`] is the one entry point, so another engine can replace it.

use regex::bytes::{Regex, RegexBuilder};

/// Compiled size a single regex may reach: bounds what a hostile pattern can allocate.
const REGEX_SIZE_LIMIT: usize = 16 * 1024 * 1024;

/// Compiles an awk ERE (`ignore_case` for IGNORECASE); `Err` is a message.
pub fn compile(ere: &[u8], ignore_case: bool) -> Result<Regex, String> {
    let pat = translate(ere);
    RegexBuilder::new(&pat)
        .case_insensitive(ignore_case)
        .unicode(super::value::utf8_mode())
        .dot_matches_new_line(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            let first = e.to_string();
            let last = first.lines().last().unwrap_or("").trim().to_string();
            format!(
                "{}: /{}/",
                last.trim_start_matches("error: "),
                String::from_utf8_lossy(ere)
            )
        })
}

fn push_lit(out: &mut String, c: char) {
    if matches!(
        c,
        '\\' | '.'
            | '+'
            | '*'
            | '?'
            | '('
            | ')'
            | '|'
            | '['
            | ']'
            | '{'
            | '}'
            | '^'
            | '$'
            | '#'
            | '&'
            | '-'
            | '~'
    ) {
        out.push('\\');
    }
    out.push(c);
}

/// Turns an ERE into the `regex` crate's syntax.
pub fn translate(ere: &[u8]) -> String {
    let s = String::from_utf8_lossy(ere);
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(chars.len() + 8);
    let mut i = 0;
    // Whether what precedes can take a quantifier.
    let mut operand = false;
    let mut after_quant = false;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '\\' => {
                let Some(&e) = chars.get(i) else {
                    out.push_str("\\\\");
                    operand = true;
                    after_quant = false;
                    continue;
                };
                i += 1;
                match e {
                    'n' => out.push_str("\\n"),
                    't' => out.push_str("\\t"),
                    'r' => out.push_str("\\r"),
                    'f' => out.push_str("\\x0C"),
                    'v' => out.push_str("\\x0B"),
                    'a' => out.push_str("\\x07"),
                    'b' => out.push_str("\\x08"),
                    'y' => out.push_str("\\b"),
                    'B' => out.push_str("\\B"),
                    '<' => out.push_str("\\b{start}"),
                    '>' => out.push_str("\\b{end}"),
                    '`' => out.push_str("\\A"),
                    '\'' => out.push_str("\\z"),
                    'w' | 'W' | 's' | 'S' => {
                        out.push('\\');
                        out.push(e);
                    }
                    '0'..='7' => {
                        let mut v = e as u32 - '0' as u32;
                        let mut n = 1;
                        while n < 3 && i < chars.len() && ('0'..='7').contains(&chars[i]) {
                            v = v * 8 + (chars[i] as u32 - '0' as u32);
                            i += 1;
                            n += 1;
                        }
                        out.push_str(&format!("\\x{{{:X}}}", v & 0xff));
                    }
                    other => push_lit(&mut out, other),
                }
                operand = !matches!(e, 'y' | 'B' | '<' | '>' | '`' | '\'');
                after_quant = false;
            }
            '[' => {
                i = bracket(&chars, i, &mut out);
                operand = true;
                after_quant = false;
            }
            '*' | '+' | '?' => {
                if after_quant {
                    // `a**` is `a*`; the regex crate would read `*?` as lazy.
                    continue;
                }
                if !operand {
                    push_lit(&mut out, c);
                    operand = true;
                    continue;
                }
                out.push(c);
                after_quant = true;
            }
            '{' => {
                // An interval if well formed after an operand, else a literal brace.
                let mut j = i;
                let mut body = String::new();
                while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == ',') {
                    body.push(chars[j]);
                    j += 1;
                }
                let valid = operand
                    && !after_quant
                    && j < chars.len()
                    && chars[j] == '}'
                    && !body.is_empty()
                    && body.chars().next().is_some_and(|c| c.is_ascii_digit())
                    && body.matches(',').count() <= 1;
                if valid {
                    out.push('{');
                    out.push_str(&body);
                    out.push('}');
                    i = j + 1;
                    after_quant = true;
                } else {
                    out.push_str("\\{");
                    operand = true;
                    after_quant = false;
                }
            }
            '(' => {
                if chars.get(i) == Some(&')') {
                    // `()` matches the empty string.
                    out.push_str("(?:)");
                    i += 1;
                    operand = true;
                } else {
                    out.push('(');
                    operand = false;
                }
                after_quant = false;
            }
            ')' => {
                out.push(')');
                operand = true;
                after_quant = false;
            }
            '|' => {
                out.push('|');
                operand = false;
                after_quant = false;
            }
            '^' | '$' => {
                out.push(c);
                operand = false;
                after_quant = false;
            }
            '.' => {
                out.push('.');
                operand = true;
                after_quant = false;
            }
            '}' => {
                out.push_str("\\}");
                operand = true;
                after_quant = false;
            }
            other => {
                push_lit(&mut out, other);
                operand = true;
                after_quant = false;
            }
        }
    }
    out
}

/// Copies a bracket expression starting after `[`; returns the index after its `]`.
/// An unterminated bracket becomes a literal `[`.
fn bracket(chars: &[char], start: usize, out: &mut String) -> usize {
    let mut i = start;
    let mut body = String::from("[");
    if chars.get(i) == Some(&'^') {
        body.push('^');
        i += 1;
    }
    let mut first = true;
    while i < chars.len() {
        let c = chars[i];
        if c == ']' && !first {
            body.push(']');
            out.push_str(&body);
            return i + 1;
        }
        first = false;
        i += 1;
        match c {
            '[' if matches!(chars.get(i), Some(':' | '.' | '=')) => {
                let delim = chars[i];
                let mut j = i + 1;
                let mut name = String::new();
                while j + 1 < chars.len() && !(chars[j] == delim && chars[j + 1] == ']') {
                    name.push(chars[j]);
                    j += 1;
                }
                if j + 1 < chars.len() {
                    if delim == ':' {
                        body.push_str(&format!("[:{name}:]"));
                    } else {
                        for ch in name.chars() {
                            body.push('\\');
                            body.push(ch);
                        }
                    }
                    i = j + 2;
                } else {
                    body.push_str("\\[");
                }
            }
            '\\' => {
                if let Some(&e) = chars.get(i) {
                    i += 1;
                    match e {
                        'n' => body.push_str("\\n"),
                        't' => body.push_str("\\t"),
                        'r' => body.push_str("\\r"),
                        'f' => body.push_str("\\x0C"),
                        'v' => body.push_str("\\x0B"),
                        'a' => body.push_str("\\x07"),
                        'b' => body.push_str("\\x08"),
                        'w' | 's' | 'd' | 'W' | 'S' | 'D' => {
                            body.push('\\');
                            body.push(e);
                        }
                        other => {
                            body.push('\\');
                            body.push(other);
                        }
                    }
                } else {
                    body.push_str("\\\\");
                }
            }
            '[' | '&' | '~' | '^' => {
                body.push('\\');
                body.push(c);
            }
            '-' if chars.get(i) == Some(&'-') => {
                body.push_str("\\-");
            }
            c => body.push(c),
        }
    }
    // No closing bracket: a literal `[` and the rest as ordinary text.
    out.push_str("\\[");
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(re: &str, s: &str) -> bool {
        compile(re.as_bytes(), false)
            .unwrap()
            .is_match(s.as_bytes())
    }

    #[test]
    fn ere_basics() {
        assert!(m("^a.c$", "abc"));
        assert!(m("a|b", "b"));
        assert!(m("[]x]", "]"));
        assert!(m("[^]x]", "a"));
        assert!(!m("[^]x]", "]"));
        assert!(m("[[:alpha:]]+", "abc"));
        assert!(m("a{2}", "aa"));
        assert!(!m("^a{2}$", "a"));
        assert!(m("a{", "a{"));
        assert!(m("\\.", "."));
        assert!(!m("\\.", "a"));
        assert!(m("[a-c&]", "&"));
        assert!(m("*a", "*a"));
        assert!(m("a.b", "a\nb"));
        assert!(m("\\/", "/"));
        assert!(m("[\\/]", "/"));
        assert!(m("\\yfoo\\y", "a foo b"));
    }

    #[test]
    fn case_folding() {
        assert!(compile(b"abc", true).unwrap().is_match(b"ABC"));
    }
}

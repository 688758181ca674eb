//! `--debug` (GNU sed 4.6+): the program printed in canonical form before any input is
//! read, then, on standard output among the script's own output, each input line
//! (`INPUT:`), each command as it is reached (`COMMAND:`), the spaces a command changed
//! (`PATTERN:`, `HOLD:`), an `s` command's first match (`MATCHED REGEX REGISTERS`) and
//! the end of each cycle (`END-OF-CYCLE:`).
//!
//! A command's canonical text is made while it is parsed ([`super::parse::Cmd::show`]);
//! this module spells its parts as GNU's `debug.c` does.

use super::parse::simple_escape;
use crate::gnu_regex;

/// One byte as GNU's debug output shows it: printable ASCII as itself, C's escapes for
/// BEL, FF, CR, TAB, VT and newline, a backslash doubled, anything else in octal (a byte
/// of the upper half as the `char` it is in C, negative, as a 32-bit `unsigned`).
pub(super) fn push_byte(out: &mut Vec<u8>, b: u8) {
    if (0x20..0x7f).contains(&b) && b != b'\\' {
        out.push(b);
        return;
    }
    out.push(b'\\');
    match b {
        0x07 => out.push(b'a'),
        0x0c => out.push(b'f'),
        b'\r' => out.push(b'r'),
        b'\t' => out.push(b't'),
        0x0b => out.push(b'v'),
        b'\n' => out.push(b'n'),
        b'\\' => out.push(b'\\'),
        _ => {
            // `(unsigned int) c` of a signed `char`: bytes from 0x80 sign-extend.
            let wide = u32::from_ne_bytes(i32::from(b.cast_signed()).to_ne_bytes());
            out.extend_from_slice(format!("o{wide:03o}").as_bytes());
        }
    }
}

/// `PATTERN: ` or `HOLD:    ` and the space's bytes, escaped, and a newline.
pub(super) fn space(label: &str, data: &[u8]) -> Vec<u8> {
    let mut out = label.as_bytes().to_vec();
    for &b in data {
        push_byte(&mut out, b);
    }
    out.push(b'\n');
    out
}

/// The bytes a parsed character stands for (a byte of the C locale's upper half is that
/// byte; see [`gnu_regex::byte_char`]).
fn char_bytes(c: char, out: &mut Vec<u8>) {
    match gnu_regex::char_byte(c) {
        Some(b) => out.push(b),
        None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
    }
}

/// A regex between slashes, as GNU stores it (escapes such as `\t` already made
/// characters): each byte escaped, a slash as `\/`.
pub(super) fn regex(pattern: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    for c in pattern.chars() {
        char_bytes(c, &mut bytes);
    }
    let mut out = vec![b'/'];
    for b in bytes {
        if b == b'/' {
            out.extend_from_slice(b"\\/");
        } else {
            push_byte(&mut out, b);
        }
    }
    out.push(b'/');
    out
}

/// How a piece of GNU's replacement converts case.
#[derive(Clone, Copy, PartialEq, Eq)]
struct CaseKind {
    /// 0: as is, 1: `\U`, 2: `\L`.
    whole: u8,
    /// 0: none, 1: `\u`, 2: `\l` (the next character only).
    first: u8,
}

/// The right-hand side of `s` (as read between the delimiters) as GNU's debug output
/// spells it: GNU cuts it into pieces at each `\` and `&`, each piece with a case
/// conversion, and names a piece's conversion (`\U`, `\L`, `\u`, `\l`, `\E`) only where it
/// differs from the previous piece's; literal text goes out raw.
pub(super) fn replacement(rep: &str, posix: bool) -> Vec<u8> {
    // GNU's normalisation first: the escapes for characters become those characters.
    let c: Vec<char> = rep.chars().collect();
    let mut text: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i] == '\\' && i + 1 < c.len() {
            if let Some(b) = simple_escape(c[i + 1]) {
                text.push(b);
                i += 2;
                continue;
            }
            if let Some((b, used)) = super::parse::numeric_escape(&c, i + 1) {
                text.push(b);
                i += 1 + used;
                continue;
            }
        }
        char_bytes(c[i], &mut text);
        i += 1;
    }
    // Then GNU's cutting: (prefix, back-reference, conversion) per piece.
    let mut pieces: Vec<(Vec<u8>, Option<u8>, CaseKind)> = Vec::new();
    let asis = CaseKind { whole: 0, first: 0 };
    let (mut kind, mut saved) = (asis, asis);
    let mut base = Vec::new();
    let mut p = 0;
    while p < text.len() {
        match text[p] {
            b'\\' => {
                let mut piece = (std::mem::take(&mut base), None, kind);
                kind = saved;
                p += 1;
                match text.get(p) {
                    None => piece.0.push(b'\\'),
                    Some(&d) if posix && !d.is_ascii_digit() => piece.0.push(d),
                    Some(&d) if d.is_ascii_digit() => piece.1 = Some(d - b'0'),
                    Some(b'L') => (kind, saved) = (CaseKind { whole: 2, first: 0 }, kind_of(2)),
                    Some(b'U') => (kind, saved) = (CaseKind { whole: 1, first: 0 }, kind_of(1)),
                    Some(b'E') => (kind, saved) = (asis, asis),
                    Some(b'l') => (saved, kind) = (kind, CaseKind { first: 2, ..kind }),
                    Some(b'u') => (saved, kind) = (kind, CaseKind { first: 1, ..kind }),
                    Some(&d) => piece.0.push(d),
                }
                pieces.push(piece);
            }
            b'&' => {
                pieces.push((std::mem::take(&mut base), Some(0), kind));
                kind = saved;
            }
            b => base.push(b),
        }
        p += 1;
    }
    if !base.is_empty() {
        pieces.push((base, None, kind));
    }
    let mut out = Vec::new();
    let mut last = asis;
    for (prefix, group, k) in pieces {
        if k != last {
            out.push(b'\\');
            out.push(match (k.whole, k.first) {
                (0, 0) => b'E',
                (1, 0) => b'U',
                (2, 0) => b'L',
                (_, 1) => b'u',
                _ => b'l',
            });
            last = k;
        }
        out.extend_from_slice(&prefix);
        match group {
            Some(0) => out.push(b'&'),
            Some(n) => out.extend_from_slice(format!("\\{n}").as_bytes()),
            None => {}
        }
    }
    out
}

fn kind_of(whole: u8) -> CaseKind {
    CaseKind { whole, first: 0 }
}

/// The two strings of `y`, as GNU's debug output gives them: in the C locale the bytes
/// it changes, in byte order; otherwise every pair as written.
pub(super) fn translation(from: &[char], to: &[char], c_locale: bool) -> Vec<u8> {
    let mut src = Vec::new();
    let mut dst = Vec::new();
    if c_locale {
        let mut table: Vec<u8> = (0..=255).collect();
        let mut set = [false; 256];
        for (a, b) in from.iter().zip(to) {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            char_bytes(*a, &mut x);
            char_bytes(*b, &mut y);
            if let ([x], [y]) = (x.as_slice(), y.as_slice())
                && !set[usize::from(*x)]
            {
                set[usize::from(*x)] = true;
                table[usize::from(*x)] = *y;
            }
        }
        for (i, &t) in table.iter().enumerate() {
            if usize::from(t) != i {
                src.push(u8::try_from(i).unwrap_or(0));
                dst.push(t);
            }
        }
    } else {
        for c in from {
            char_bytes(*c, &mut src);
        }
        for c in to {
            char_bytes(*c, &mut dst);
        }
    }
    let mut out = vec![b'/'];
    out.extend_from_slice(&src);
    out.push(b'/');
    out.extend_from_slice(&dst);
    out.push(b'/');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_as_gnu_shows_them() {
        let mut out = Vec::new();
        for b in [b'a', b'\\', b'\t', 0x08, 0xc3] {
            push_byte(&mut out, b);
        }
        assert_eq!(out, b"a\\\\\\t\\o010\\o37777777703".to_vec());
    }

    #[test]
    fn replacement_pieces() {
        let r = |s: &str| String::from_utf8(replacement(s, false)).unwrap_or_default();
        assert_eq!(r(r"\U\1x\E&\l\2y\uz"), r"\U\1x\E&\l\2\Ey\uz");
        assert_eq!(r(r"a\Ub&c"), r"a\Ub&c");
        assert_eq!(r(r"x\ty"), "x\ty");
        assert_eq!(r(r"\ua\.b"), r"\ua.\Eb");
    }
}

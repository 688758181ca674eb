//! `iconv`: convert text between character encodings, as glibc's `iconv` does for the
//! encodings agents meet: UTF-8, UTF-16 and UTF-32 (with a byte-order mark; LE/BE
//! variants without; input without a mark is little-endian, as glibc reads it), ISO-8859-1 (LATIN1), ASCII and Windows-1252. `//TRANSLIT` replaces
//! what the target cannot hold (a few common characters by look-alikes, the rest by `?`,
//! as in the C locale), `-c`/`//IGNORE` drops it; otherwise the first such character, or
//! invalid input, stops the conversion with `illegal input sequence at position N` (the
//! byte offset in the input) and status 1, after what converted before it is written.

use async_trait::async_trait;

use super::getopt::{Arg, Spec, opt, parse};
use super::util::BufOut;
use crate::{CmdResult, Command, Context};

const SPECS: &[Spec] = &[
    opt('f', Some('f'), Some("from-code"), Arg::Required),
    opt('t', Some('t'), Some("to-code"), Arg::Required),
    opt('c', Some('c'), None, Arg::No),
    opt('l', Some('l'), Some("list"), Arg::No),
    opt('o', Some('o'), Some("output"), Arg::Required),
    opt('s', Some('s'), Some("silent"), Arg::No),
    opt('h', None, Some("help"), Arg::No),
    opt('V', Some('V'), Some("version"), Arg::No),
];

const HELP: &str = "Usage: iconv [OPTION...] [FILE...]
Convert encoding of given files from one encoding to another.

 Input/Output format specification:
  -f, --from-code=NAME       encoding of original text
  -t, --to-code=NAME         encoding for output

 Information:
  -l, --list                 list all known coded character sets

 Output control:
  -c                         omit invalid characters from output
  -o, --output=FILE          output file
  -s, --silent               suppress warnings
      --help                 Give this help list
  -V, --version              Print program version
";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Enc {
    Utf8,
    Utf16,
    Utf16Le,
    Utf16Be,
    Utf32,
    Utf32Le,
    Utf32Be,
    Latin1,
    Ascii,
    Cp1252,
}

/// The encoding a name means (case and punctuation as glibc accepts them), and the
/// `//TRANSLIT` / `//IGNORE` suffixes.
fn encoding(name: &str) -> Option<(Enc, bool, bool)> {
    let mut parts = name.split("//");
    let base = parts.next().unwrap_or("").to_ascii_uppercase();
    let (mut translit, mut ignore) = (false, false);
    for p in parts {
        for s in p.split(',') {
            match s.to_ascii_uppercase().as_str() {
                "TRANSLIT" => translit = true,
                "IGNORE" => ignore = true,
                _ => {}
            }
        }
    }
    let enc = match base.as_str() {
        "UTF-8" | "UTF8" => Enc::Utf8,
        "UTF-16" | "UTF16" => Enc::Utf16,
        "UTF-16LE" | "UTF16LE" => Enc::Utf16Le,
        "UTF-16BE" | "UTF16BE" => Enc::Utf16Be,
        "UTF-32" | "UTF32" | "UCS-4" => Enc::Utf32,
        "UTF-32LE" | "UTF32LE" | "UCS-4LE" => Enc::Utf32Le,
        "UTF-32BE" | "UTF32BE" | "UCS-4BE" => Enc::Utf32Be,
        "ISO-8859-1" | "ISO8859-1" | "ISO_8859-1" | "LATIN1" | "LATIN-1" | "L1" | "CP819"
        | "IBM819" => Enc::Latin1,
        "ASCII" | "US-ASCII" | "ANSI_X3.4-1968" | "646" | "US" => Enc::Ascii,
        "CP1252" | "WINDOWS-1252" | "MS-ANSI" => Enc::Cp1252,
        _ => return None,
    };
    Some((enc, translit, ignore))
}

/// Windows-1252's 0x80..0x9f (0 where undefined).
const CP1252_HIGH: [u32; 32] = [
    0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039,
    0x0152, 0, 0x017d, 0, 0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc,
    0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
];

/// What decoding found at one place of the input.
enum Decoded {
    Char(char, usize),
    /// Not valid in the source encoding (this many bytes skipped by `-c`).
    Invalid(usize),
    /// The input ends inside a character.
    Incomplete,
}

/// Decodes one character of `d` at `i`.
fn decode(enc: Enc, d: &[u8], i: usize, big: bool) -> Decoded {
    let rest = &d[i..];
    match enc {
        Enc::Utf8 => {
            let b = rest[0];
            let len = match b {
                0x00..=0x7f => 1,
                0xc2..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf4 => 4,
                _ => return Decoded::Invalid(1),
            };
            if rest.len() < len {
                // A truncated but so far valid sequence at the very end.
                let ok = rest[1..].iter().all(|c| c & 0xc0 == 0x80);
                return if ok {
                    Decoded::Incomplete
                } else {
                    Decoded::Invalid(1)
                };
            }
            match std::str::from_utf8(&rest[..len]) {
                Ok(s) => match s.chars().next() {
                    Some(c) => Decoded::Char(c, len),
                    None => Decoded::Invalid(1),
                },
                Err(_) => Decoded::Invalid(1),
            }
        }
        Enc::Latin1 => Decoded::Char(char::from(rest[0]), 1),
        Enc::Ascii => {
            if rest[0] < 0x80 {
                Decoded::Char(char::from(rest[0]), 1)
            } else {
                Decoded::Invalid(1)
            }
        }
        Enc::Cp1252 => {
            let b = rest[0];
            let cp = if (0x80..0xa0).contains(&b) {
                CP1252_HIGH[usize::from(b - 0x80)]
            } else {
                u32::from(b)
            };
            match char::from_u32(cp) {
                Some(c) if cp != 0 || b == 0 => Decoded::Char(c, 1),
                _ => Decoded::Invalid(1),
            }
        }
        Enc::Utf16 | Enc::Utf16Le | Enc::Utf16Be => {
            if rest.len() < 2 {
                return Decoded::Incomplete;
            }
            let unit = |p: &[u8]| {
                if big {
                    u16::from_be_bytes([p[0], p[1]])
                } else {
                    u16::from_le_bytes([p[0], p[1]])
                }
            };
            let u = unit(rest);
            if (0xd800..0xdc00).contains(&u) {
                if rest.len() < 4 {
                    return Decoded::Incomplete;
                }
                let lo = unit(&rest[2..]);
                if !(0xdc00..0xe000).contains(&lo) {
                    return Decoded::Invalid(2);
                }
                let cp = 0x10000 + ((u32::from(u) - 0xd800) << 10) + (u32::from(lo) - 0xdc00);
                return match char::from_u32(cp) {
                    Some(c) => Decoded::Char(c, 4),
                    None => Decoded::Invalid(4),
                };
            }
            match char::from_u32(u32::from(u)) {
                Some(c) => Decoded::Char(c, 2),
                None => Decoded::Invalid(2),
            }
        }
        Enc::Utf32 | Enc::Utf32Le | Enc::Utf32Be => {
            if rest.len() < 4 {
                return Decoded::Incomplete;
            }
            let b = [rest[0], rest[1], rest[2], rest[3]];
            let cp = if big {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            };
            match char::from_u32(cp) {
                Some(c) => Decoded::Char(c, 4),
                None => Decoded::Invalid(4),
            }
        }
    }
}

/// Appends `c` in `enc`; false when `enc` cannot hold it.
fn encode(enc: Enc, c: char, out: &mut Vec<u8>) -> bool {
    let cp = u32::from(c);
    match enc {
        Enc::Utf8 => {
            let mut b = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
        }
        Enc::Latin1 => match u8::try_from(cp) {
            Ok(b) => out.push(b),
            Err(_) => return false,
        },
        Enc::Ascii => match u8::try_from(cp) {
            Ok(b) if b < 0x80 => out.push(b),
            _ => return false,
        },
        Enc::Cp1252 => {
            if cp < 0x80 || (0xa0..0x100).contains(&cp) {
                out.push(cp as u8);
            } else if let Some(i) = CP1252_HIGH.iter().position(|&h| h == cp && h != 0) {
                out.push(0x80 + i as u8);
            } else {
                return false;
            }
        }
        Enc::Utf16 | Enc::Utf16Le | Enc::Utf16Be => {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                if enc == Enc::Utf16Be {
                    out.extend_from_slice(&u.to_be_bytes());
                } else {
                    out.extend_from_slice(&u.to_le_bytes());
                }
            }
        }
        Enc::Utf32 | Enc::Utf32Le => out.extend_from_slice(&cp.to_le_bytes()),
        Enc::Utf32Be => out.extend_from_slice(&cp.to_be_bytes()),
    }
    true
}

/// The C locale's transliterations of common characters a narrow charset lacks.
fn translit(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{20ac}' => "EUR",
        '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{00ab}' | '\u{00bb}' => "\"",
        '\u{2018}' | '\u{2019}' | '\u{201a}' => "'",
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' => "-",
        '\u{2026}' => "...",
        '\u{00a0}' => " ",
        '\u{00a9}' => "(C)",
        '\u{00ae}' => "(R)",
        '\u{2122}' => "(TM)",
        _ => return None,
    })
}

pub struct Iconv;

#[async_trait]
impl Command for Iconv {
    fn name(&self) -> &'static str {
        "iconv"
    }
    fn summary(&self) -> &'static str {
        "convert text from one character encoding to another"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let p = match parse(SPECS, &args, true) {
            Ok(p) => p,
            Err(msg) => {
                ctx.err(format!(
                    "iconv: {msg}\nTry 'iconv --help' or 'iconv --usage' for more information.\n"
                ))
                .await;
                return Ok(64);
            }
        };
        if p.has('h') {
            ctx.out(HELP).await?;
            return Ok(0);
        }
        if p.has('V') {
            ctx.out("iconv (Debian GLIBC 2.36-9+deb12u13) 2.36\n")
                .await?;
            return Ok(0);
        }
        if p.has('l') {
            ctx.out(
                "ANSI_X3.4-1968//, ASCII//, CP1252//, ISO-8859-1//, LATIN1//, US-ASCII//,\n  \
                 UTF-16//, UTF-16BE//, UTF-16LE//, UTF-32//, UTF-32BE//, UTF-32LE//, UTF-8//,\n  \
                 UTF8//, WINDOWS-1252//\n",
            )
            .await?;
            return Ok(0);
        }
        let locale_utf8 = ["LC_ALL", "LC_CTYPE", "LANG"]
            .iter()
            .find_map(|v| ctx.env.get(*v).filter(|s| !s.is_empty()))
            .map(|s| s.to_ascii_lowercase())
            .is_some_and(|s| s.contains("utf-8") || s.contains("utf8"));
        let default = if locale_utf8 { "UTF-8" } else { "ASCII" };
        let from = p.last('f').unwrap_or(default).to_string();
        let to = p.last('t').unwrap_or(default).to_string();
        let (Some((src, _, _)), Some((dst, translit_on, ignore))) =
            (encoding(&from), encoding(&to))
        else {
            ctx.err("iconv: failed to start conversion processing\n")
                .await;
            return Ok(1);
        };
        let skip = ignore || p.has('c');
        let files = if p.operands.is_empty() {
            vec!["-".to_string()]
        } else {
            p.operands.clone()
        };
        let mut converted: Vec<u8> = Vec::new();
        let mut charge = ctx.budget.empty_charge();
        let mut status = 0;
        let mut wrote_bom = false;
        let mut failure: Option<String> = None;
        'files: for f in &files {
            let mut fcharge = ctx.budget.empty_charge();
            let data = {
                let mut reader = match super::util::Reader::open(ctx, f).await {
                    Ok(r) => r,
                    Err(e) => {
                        failure = Some(format!("cannot open input file `{f}': {e}"));
                        status = 1;
                        break;
                    }
                };
                match reader.read_to_end(usize::MAX, &mut fcharge).await? {
                    Ok(d) => d,
                    Err(e) => {
                        failure = Some(format!("unable to read `{f}': {e}"));
                        status = 1;
                        break;
                    }
                }
            };
            // Byte order of the source: a BOM decides for UTF-16/32 (BE without one).
            let mut i = 0;
            let mut big = matches!(src, Enc::Utf16Be | Enc::Utf32Be);
            match src {
                Enc::Utf16 if data.starts_with(&[0xff, 0xfe]) => i = 2,
                Enc::Utf16 if data.starts_with(&[0xfe, 0xff]) => {
                    i = 2;
                    big = true;
                }
                Enc::Utf32 if data.starts_with(&[0xff, 0xfe, 0, 0]) => i = 4,
                Enc::Utf32 if data.starts_with(&[0, 0, 0xfe, 0xff]) => {
                    i = 4;
                    big = true;
                }
                _ => {}
            }
            if !wrote_bom && !data.is_empty() {
                wrote_bom = true;
                match dst {
                    Enc::Utf16 => converted.extend_from_slice(&[0xff, 0xfe]),
                    Enc::Utf32 => converted.extend_from_slice(&[0xff, 0xfe, 0, 0]),
                    _ => {}
                }
            }
            let mut n = 0u32;
            while i < data.len() {
                n += 1;
                if n.is_multiple_of(4096) {
                    ctx.checkpoint().await?;
                    charge.resize(converted.capacity())?;
                }
                match decode(src, &data, i, big) {
                    Decoded::Char(c, len) => {
                        if !encode(dst, c, &mut converted) {
                            if translit_on {
                                match translit(c) {
                                    Some(t)
                                        if t.chars().all(|t| encode(dst, t, &mut Vec::new())) =>
                                    {
                                        for t in t.chars() {
                                            encode(dst, t, &mut converted);
                                        }
                                    }
                                    _ => {
                                        encode(dst, '?', &mut converted);
                                    }
                                }
                            } else if !skip {
                                failure = Some(format!("illegal input sequence at position {i}"));
                                status = 1;
                                break 'files;
                            }
                        }
                        i += len;
                    }
                    Decoded::Invalid(len) => {
                        if skip {
                            i += len;
                            continue;
                        }
                        failure = Some(format!("illegal input sequence at position {i}"));
                        status = 1;
                        break 'files;
                    }
                    Decoded::Incomplete => {
                        failure =
                            Some("incomplete character or shift sequence at end of buffer".into());
                        status = 1;
                        break 'files;
                    }
                }
            }
        }
        if let Some(path) = p.last('o') {
            let abs = ctx.path(path);
            let r = async {
                let mut h = ctx
                    .fs
                    .open_write(&abs, crate::fs::WriteMode::Truncate)
                    .await?;
                h.write(&converted).await?;
                h.close().await
            }
            .await;
            if let Err(e) = r {
                ctx.err(format!("iconv: cannot open output file: {e}\n"))
                    .await;
                return Ok(1);
            }
        } else {
            let mut out = BufOut::new(ctx);
            out.write(&converted).await?;
            out.flush().await?;
        }
        if let Some(msg) = failure {
            ctx.err(format!("iconv: {msg}\n")).await;
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut out = Vec::new();
        for c in "café€".chars() {
            assert!(encode(Enc::Utf16Be, c, &mut out));
        }
        let mut back = String::new();
        let mut i = 0;
        while i < out.len() {
            match decode(Enc::Utf16Be, &out, i, true) {
                Decoded::Char(c, n) => {
                    back.push(c);
                    i += n;
                }
                _ => panic!("bad decode"),
            }
        }
        assert_eq!(back, "café€");
        assert!(!encode(Enc::Latin1, '€', &mut out));
        assert!(encode(Enc::Cp1252, '€', &mut out));
        assert_eq!(out.last(), Some(&0x80));
    }
}

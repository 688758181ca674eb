//! `tr`: translate, squeeze and delete bytes from stdin to stdout, streaming.
//!
//! Works on bytes in the C locale, as GNU tr does: classes are ASCII, and a multi-byte
//! UTF-8 character in a set is several bytes.

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, Pacer, quote};
use crate::{CmdResult, Command, Context, parse_args};

/// Translate, squeeze, and/or delete characters from standard input, writing to
/// standard output.
///
/// SETs are strings of characters (bytes). Interpreted sequences:
/// `\NNN` (octal), `\\`, `\a`, `\b`, `\f`, `\n`, `\r`, `\t`, `\v`; `CHAR1-CHAR2` (the
/// characters from CHAR1 to CHAR2 in ascending order); `[CHAR*]` (in SET2, copies of
/// CHAR until as long as SET1); `[CHAR*REPEAT]` (REPEAT copies, octal if it starts
/// with 0); `[:alnum:]`, `[:alpha:]`, `[:blank:]`, `[:cntrl:]`, `[:digit:]`,
/// `[:graph:]`, `[:lower:]`, `[:print:]`, `[:punct:]`, `[:space:]`, `[:upper:]`,
/// `[:xdigit:]`; `[=CHAR=]`.
///
/// Translation happens if -d is not given and both SETs are; -t is possible only when
/// translating. SET2 is extended to the length of SET1 by repeating its last character.
/// Squeezing uses SET1 when no SET2 is given or deleting, else SET2.
#[derive(Parser, Debug)]
#[command(name = "tr", override_usage = "tr [OPTION]... SET1 [SET2]")]
struct Args {
    /// Use the complement of SET1.
    #[arg(short = 'c', short_alias = 'C', long)]
    complement: bool,
    /// Delete characters in SET1, do not translate.
    #[arg(short = 'd', long)]
    delete: bool,
    /// Replace each sequence of a repeated character that is listed in the last
    /// specified SET with a single occurrence of that character.
    #[arg(short = 's', long = "squeeze-repeats")]
    squeeze: bool,
    /// First truncate SET1 to the length of SET2.
    #[arg(short = 't', long = "truncate-set1")]
    truncate: bool,
    /// SET1 and, for translating or deleting and squeezing, SET2.
    sets: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Alnum,
    Alpha,
    Blank,
    Cntrl,
    Digit,
    Graph,
    Lower,
    Print,
    Punct,
    Space,
    Upper,
    Xdigit,
}

impl Class {
    fn from_name(name: &[u8]) -> Option<Class> {
        Some(match name {
            b"alnum" => Class::Alnum,
            b"alpha" => Class::Alpha,
            b"blank" => Class::Blank,
            b"cntrl" => Class::Cntrl,
            b"digit" => Class::Digit,
            b"graph" => Class::Graph,
            b"lower" => Class::Lower,
            b"print" => Class::Print,
            b"punct" => Class::Punct,
            b"space" => Class::Space,
            b"upper" => Class::Upper,
            b"xdigit" => Class::Xdigit,
            _ => return None,
        })
    }

    fn contains(self, b: u8) -> bool {
        match self {
            Class::Alnum => b.is_ascii_alphanumeric(),
            Class::Alpha => b.is_ascii_alphabetic(),
            Class::Blank => b == b' ' || b == b'\t',
            Class::Cntrl => b.is_ascii_control(),
            Class::Digit => b.is_ascii_digit(),
            Class::Graph => b.is_ascii_graphic(),
            Class::Lower => b.is_ascii_lowercase(),
            Class::Print => b.is_ascii_graphic() || b == b' ',
            Class::Punct => b.is_ascii_punctuation(),
            Class::Space => matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'),
            Class::Upper => b.is_ascii_uppercase(),
            Class::Xdigit => b.is_ascii_hexdigit(),
        }
    }

    fn members(self) -> impl Iterator<Item = u8> {
        (0..=255u8).filter(move |&b| self.contains(b))
    }
}

/// One element of a SET as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Elem {
    Byte(u8),
    Range(u8, u8),
    Class(Class),
    /// `[c*n]`; `None` is `[c*]`, which fills SET2 up to SET1's length.
    Repeat(u8, Option<usize>),
}

/// A SET that could not be parsed or used, worded as GNU tr words it.
type SetError = String;

/// Longest a `[c*n]` repeat may be: more than every byte value many times over, but
/// small enough that a huge count cannot exhaust memory.
const MAX_REPEAT: usize = 1 << 20;

/// Reads one possibly escaped character at `i`; returns it, where the next starts, and
/// whether it was escaped.
fn one_char(s: &[u8], i: usize, warn: &mut bool) -> (u8, usize) {
    if s[i] != b'\\' {
        return (s[i], i + 1);
    }
    let Some(&e) = s.get(i + 1) else {
        *warn = true;
        return (b'\\', i + 1);
    };
    let simple = match e {
        b'a' => Some(0x07),
        b'b' => Some(0x08),
        b'f' => Some(0x0c),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        b'v' => Some(0x0b),
        b'0'..=b'7' => None,
        other => Some(other),
    };
    if let Some(c) = simple {
        return (c, i + 2);
    }
    let mut v: u32 = 0;
    let mut j = i + 1;
    while j < s.len() && j < i + 4 && (b'0'..=b'7').contains(&s[j]) {
        let next = v * 8 + u32::from(s[j] - b'0');
        if next > 0o377 {
            break;
        }
        v = next;
        j += 1;
    }
    (v as u8, j)
}

/// Parses a SET into elements; `warn` is set for a trailing lone backslash.
fn parse_set(s: &[u8], warn: &mut bool) -> Result<Vec<Elem>, SetError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'[' {
            // [:class:]
            if s.get(i + 1) == Some(&b':')
                && let Some(end) = find(s, i + 2, b":]")
            {
                let name = &s[i + 2..end];
                return_class(name, &mut out)?;
                i = end + 2;
                continue;
            }
            // [=c=]
            if s.get(i + 1) == Some(&b'=') && i + 2 < s.len() {
                let (c, next) = one_char(s, i + 2, warn);
                if s.get(next..next + 2) == Some(b"=]") {
                    out.push(Elem::Byte(c));
                    i = next + 2;
                    continue;
                }
            }
            // [c*n]
            if i + 1 < s.len() {
                let (c, next) = one_char(s, i + 1, warn);
                if s.get(next) == Some(&b'*')
                    && let Some(end) = s[next + 1..].iter().position(|&b| b == b']')
                {
                    let count = &s[next + 1..next + 1 + end];
                    let n = parse_repeat(count)?;
                    out.push(Elem::Repeat(c, n));
                    i = next + 2 + end;
                    continue;
                }
            }
        }
        let (c, next) = one_char(s, i, warn);
        if s.get(next) == Some(&b'-') && next + 1 < s.len() {
            let (hi, after) = one_char(s, next + 1, warn);
            if hi < c {
                return Err(format!(
                    "range-endpoints of '{}-{}' are in reverse collating sequence order",
                    show(c),
                    show(hi)
                ));
            }
            out.push(Elem::Range(c, hi));
            i = after;
            continue;
        }
        out.push(Elem::Byte(c));
        i = next;
    }
    Ok(out)
}

fn return_class(name: &[u8], out: &mut Vec<Elem>) -> Result<(), SetError> {
    match Class::from_name(name) {
        Some(c) => {
            out.push(Elem::Class(c));
            Ok(())
        }
        None => Err(format!(
            "invalid character class {}",
            quote(&String::from_utf8_lossy(name))
        )),
    }
}

fn parse_repeat(count: &[u8]) -> Result<Option<usize>, SetError> {
    if count.is_empty() {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(count);
    let radix = if count[0] == b'0' { 8 } else { 10 };
    match usize::from_str_radix(&text, radix) {
        Ok(0) => Ok(None),
        Ok(n) if n <= MAX_REPEAT => Ok(Some(n)),
        _ => Err(format!(
            "invalid repeat count {} in [c*n] construct",
            quote(&text)
        )),
    }
}

fn find(s: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    s.get(from..)?
        .windows(pat.len())
        .position(|w| w == pat)
        .map(|p| p + from)
}

/// A byte as GNU shows it in a message: itself when printable, else octal.
fn show(b: u8) -> String {
    if b.is_ascii_graphic() || b == b' ' {
        (b as char).to_string()
    } else {
        format!("\\{b:03o}")
    }
}

/// The bytes of a SET in order; `fill` is the length a `[c*]` takes.
fn expand(set: &[Elem], fill: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for e in set {
        match *e {
            Elem::Byte(b) => out.push(b),
            Elem::Range(lo, hi) => out.extend(lo..=hi),
            Elem::Class(c) => out.extend(c.members()),
            Elem::Repeat(c, n) => out.extend(std::iter::repeat_n(c, n.unwrap_or(fill))),
        }
    }
    out
}

fn member_table(bytes: &[u8], complement: bool) -> [bool; 256] {
    let mut t = [complement; 256];
    for &b in bytes {
        t[usize::from(b)] = !complement;
    }
    t
}

/// What tr does to each byte, worked out from the options and SETs.
struct Plan {
    delete: [bool; 256],
    squeeze: [bool; 256],
    map: [u8; 256],
}

fn plan(args: &Args, sets: &[Vec<Elem>]) -> Result<Plan, SetError> {
    let mut map = [0u8; 256];
    for (i, m) in map.iter_mut().enumerate() {
        *m = i as u8;
    }
    let mut delete = [false; 256];
    let mut squeeze = [false; 256];
    let s1 = &sets[0];
    if s1.iter().any(|e| matches!(e, Elem::Repeat(..))) {
        return Err("the [c*] repeat construct may not appear in string1".into());
    }
    let set1 = expand(s1, 0);
    let translating = !args.delete && sets.len() == 2;
    if args.delete {
        delete = member_table(&set1, args.complement);
        if let Some(s2) = sets.get(1) {
            squeeze = member_table(&expand(s2, 0), false);
        }
    } else if !translating {
        squeeze = member_table(&set1, args.complement);
    }
    if translating {
        let s2 = &sets[1];
        let fills = s2
            .iter()
            .filter(|e| matches!(e, Elem::Repeat(_, None)))
            .count();
        if fills > 1 {
            return Err("only one [c*] repeat construct may appear in string2".into());
        }
        check_classes(s1, s2, args.complement)?;
        let from: Vec<u8> = if args.complement {
            let t = member_table(&set1, true);
            (0..=255u8).filter(|&b| t[usize::from(b)]).collect()
        } else {
            set1
        };
        let fixed = expand(s2, 0).len();
        let mut to = expand(s2, from.len().saturating_sub(fixed));
        let mut from = from;
        if args.truncate {
            from.truncate(to.len());
        } else if to.len() < from.len() {
            let Some(&last) = to.last() else {
                return Err("when not truncating set1, string2 must be non-empty".into());
            };
            to.resize(from.len(), last);
        }
        for (f, t) in from.iter().zip(to.iter()) {
            map[usize::from(*f)] = *t;
        }
        if args.squeeze {
            squeeze = member_table(&to, false);
        }
    }
    Ok(Plan {
        delete,
        squeeze,
        map,
    })
}

/// When translating, SET2 may hold only `[:upper:]`/`[:lower:]`, each facing the other
/// case's class at the same position in SET1.
fn check_classes(s1: &[Elem], s2: &[Elem], complement: bool) -> Result<(), SetError> {
    let mut pos1 = Vec::new();
    let mut at = 0;
    for e in s1 {
        if let Elem::Class(c) = e {
            pos1.push((at, *c));
        }
        at += expand(std::slice::from_ref(e), 0).len();
    }
    let mut at = 0;
    for e in s2 {
        if let Elem::Class(c) = e {
            let want = match c {
                Class::Upper => Class::Lower,
                Class::Lower => Class::Upper,
                _ => {
                    return Err("when translating, the only character classes that may \
                                appear in string2 are 'upper' and 'lower'"
                        .into());
                }
            };
            if complement || !pos1.iter().any(|&(p, k)| p == at && (k == want || k == *c)) {
                return Err("misaligned [:upper:] and/or [:lower:] construct".into());
            }
        }
        at += expand(std::slice::from_ref(e), 0).len();
    }
    Ok(())
}

async fn usage(ctx: &Context, msg: &str) -> i32 {
    ctx.err(format!(
        "tr: {msg}\nTry 'tr --help' for more information.\n"
    ))
    .await;
    1
}

pub struct Tr;

#[async_trait]
impl Command for Tr {
    fn name(&self) -> &'static str {
        "tr"
    }
    fn summary(&self) -> &'static str {
        "translate, squeeze or delete characters"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let n = args.sets.len();
        let (min, max) = match (args.delete, args.squeeze) {
            (true, true) => (2, 2),
            (true, false) => (1, 1),
            (false, true) => (1, 2),
            (false, false) => (2, 2),
        };
        if n == 0 {
            return Ok(usage(ctx, "missing operand").await);
        }
        if n < min {
            let why = if args.delete {
                "Two strings must be given when both deleting and squeezing repeats."
            } else {
                "Two strings must be given when translating."
            };
            let msg = format!("missing operand after {}\n{why}", quote(&args.sets[n - 1]));
            return Ok(usage(ctx, &msg).await);
        }
        if n > max {
            let mut msg = format!("extra operand {}", quote(&args.sets[max]));
            if args.delete && !args.squeeze {
                msg.push_str(
                    "\nOnly one string may be given when deleting without squeezing repeats.",
                );
            }
            return Ok(usage(ctx, &msg).await);
        }
        let mut warn = false;
        let mut sets = Vec::new();
        for s in &args.sets {
            match parse_set(&crate::bytetext::encode(s), &mut warn) {
                Ok(set) => sets.push(set),
                Err(msg) => {
                    ctx.warn("tr", msg).await;
                    return Ok(1);
                }
            }
        }
        if warn {
            ctx.warn(
                "tr",
                "warning: an unescaped backslash at end of string is not portable",
            )
            .await;
        }
        let plan = match plan(&args, &sets) {
            Ok(p) => p,
            Err(msg) => {
                ctx.warn("tr", msg).await;
                return Ok(1);
            }
        };
        let mut out = BufOut::new(ctx);
        let mut pacer = Pacer::default();
        let mut last: Option<u8> = None;
        let mut piece = Vec::new();
        loop {
            let chunk = match ctx.stdin.read_chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => {
                    ctx.warn("tr", format!("read error: {e}")).await;
                    out.flush().await?;
                    return Ok(1);
                }
            };
            piece.clear();
            for &b in chunk.iter() {
                if plan.delete[usize::from(b)] {
                    continue;
                }
                let t = plan.map[usize::from(b)];
                if plan.squeeze[usize::from(t)] && last == Some(t) {
                    continue;
                }
                last = Some(t);
                piece.push(t);
            }
            out.write(&piece).await?;
            pacer.tick(ctx).await?;
        }
        out.flush().await?;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn tr(input: &str, args: &[&str]) -> (i32, String, String) {
        Invocation {
            stdin: input.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(&Tr, args)
        .await
    }

    async fn out(input: &str, args: &[&str]) -> String {
        let (st, out, err) = tr(input, args).await;
        assert_eq!((st, err.as_str()), (0, ""), "tr {args:?}");
        out
    }

    #[tokio::test]
    async fn translates_like_gnu() {
        assert_eq!(out("hello\n", &["a-z", "A-Z"]).await, "HELLO\n");
        assert_eq!(out("abc\n", &["abc", "x"]).await, "xxx\n");
        assert_eq!(out("abc\n", &["-t", "abc", "xy"]).await, "xyc\n");
        assert_eq!(out("hello\n", &["-c", "a-z", "_"]).await, "hello_");
        assert_eq!(out("hello\n", &["-C", "l\\n", "x"]).await, "xxllx\n");
        assert_eq!(out("AbC\n", &["[:upper:]", "[:lower:]"]).await, "abc\n");
        assert_eq!(out("abc\n", &["[:lower:]", "x"]).await, "xxx\n");
        assert_eq!(out("abc\n", &["a-c", "[x*]"]).await, "xxx\n");
        assert_eq!(out("abcdef\n", &["a-f", "[x*2]yz"]).await, "xxyzzz\n");
        assert_eq!(out("abc\n", &["-c", "a", "[x*]"]).await, "axxx");
        assert_eq!(out("abc\n", &["[=a=]", "x"]).await, "xbc\n");
        assert_eq!(out("a\tb\n", &["\\t\\n", "TN"]).await, "aTbN");
        assert_eq!(out("abc\n", &["\\141", "X"]).await, "Xbc\n");
        assert_eq!(out("a\\b\n", &["\\\\", "/"]).await, "a/b\n");
        assert_eq!(out("abc\n", &["a\\-c", "xyz"]).await, "xbz\n");
        assert_eq!(out("x-a\n", &["a-", "b_"]).await, "x_b\n");
        assert_eq!(out("[]\n", &["[]", "xy"]).await, "xy\n");
    }

    #[tokio::test]
    async fn deletes_and_squeezes() {
        assert_eq!(out("hello\n", &["-d", "l"]).await, "heo\n");
        assert_eq!(
            out("hello   world\n", &["-cs", "a-z", "\\n"]).await,
            "hello\nworld\n"
        );
        assert_eq!(out("abc\n", &["-s", "a-c", "x"]).await, "x\n");
        assert_eq!(out("a1b2\n", &["-cd", "[:digit:]"]).await, "12");
        assert_eq!(out("aabbcc  dd\n", &["-s", "a-c "]).await, "abc dd\n");
        assert_eq!(out("a  \t b\n", &["-s", "[:space:]"]).await, "a \t b\n");
        assert_eq!(out("hello\n", &["-ds", "l", "o"]).await, "heo\n");
        assert_eq!(out("aabbxx\n", &["-s", "ab", "xy"]).await, "xyx\n");
        assert_eq!(out("ab\n", &["-d", ""]).await, "ab\n");
        assert_eq!(out("a,b;c\n", &["-d", "[:punct:]"]).await, "abc\n");
        assert_eq!(out("a1 B\n", &["-d", "[:alnum:]"]).await, " \n");
    }

    #[tokio::test]
    async fn bytes_pass_through() {
        let inv = Invocation {
            stdin: vec![0xff, 0x00, b'a', 0xc3, 0xa9],
            ..Invocation::default()
        };
        let (st, out, _) = inv.run_bytes(&Tr, &["a\\377", "b\\001"]).await;
        assert_eq!((st, out), (0, vec![1, 0, b'b', 0xc3, 0xa9]));
    }

    #[tokio::test]
    async fn operand_errors() {
        let try_help = "Try 'tr --help' for more information.\n";
        assert_eq!(
            tr("", &[]).await,
            (1, "".into(), format!("tr: missing operand\n{try_help}"))
        );
        assert_eq!(
            tr("", &["a"]).await.2,
            format!(
                "tr: missing operand after 'a'\nTwo strings must be given when translating.\n{try_help}"
            )
        );
        assert_eq!(
            tr("", &["a", "b", "c"]).await,
            (1, "".into(), format!("tr: extra operand 'c'\n{try_help}"))
        );
        assert_eq!(
            tr("", &["-d", "a", "b"]).await.2,
            format!(
                "tr: extra operand 'b'\nOnly one string may be given when deleting without squeezing repeats.\n{try_help}"
            )
        );
        assert_eq!(tr("", &["-ds", "a"]).await.0, 1);
        assert_eq!(tr("", &["-x", "a"]).await.0, 1);
    }

    #[tokio::test]
    async fn set_errors() {
        let e = |msg: &str| (1, String::new(), format!("tr: {msg}\n"));
        assert_eq!(
            tr("abc", &["z-a", "x"]).await,
            e("range-endpoints of 'z-a' are in reverse collating sequence order")
        );
        assert_eq!(
            tr("abc", &["-d", "[:foo:]"]).await,
            e("invalid character class 'foo'")
        );
        assert_eq!(
            tr("abc", &["a", "[:upper:]"]).await,
            e("misaligned [:upper:] and/or [:lower:] construct")
        );
        assert_eq!(
            tr("abc", &["a-z", "[:digit:]"]).await,
            e(
                "when translating, the only character classes that may appear in string2 are 'upper' and 'lower'"
            )
        );
        assert_eq!(
            tr("abc", &["ab", ""]).await,
            e("when not truncating set1, string2 must be non-empty")
        );
        assert_eq!(
            tr("abc", &["[a*]", "x"]).await,
            e("the [c*] repeat construct may not appear in string1")
        );
        assert_eq!(
            tr("abc", &["a", "[x*9z]"]).await,
            e("invalid repeat count '9z' in [c*n] construct")
        );
        // A trailing backslash is a warning, not an error.
        let (st, out, err) = tr("a\\", &["\\", "x"]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (
                0,
                "ax",
                "tr: warning: an unescaped backslash at end of string is not portable\n"
            )
        );
    }
}

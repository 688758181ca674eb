//! `hexdump` and `hd` (util-linux): display bytes through format strings. The canned
//! displays (`-C`, `-b`, `-c`, `-d`, `-o`, `-x` and the default) are format strings like
//! the ones `-e` takes, so one engine prints them all: input is read in blocks as long as
//! the longest format string consumes, each format string prints each block, a repeated
//! block shows as `*` (unless `-v`), and the last, short block is padded with blanks.
//! Input streams across the files in chunks.

use async_trait::async_trait;

use super::getopt::{Arg, Spec, opt, parse};
use super::printf::sprintf;
use super::util::{BufOut, Pacer, Reader};
use crate::{CmdResult, Command, Context};

const HELP: &str = "
Usage:
 hexdump [options] <file>...

Display file contents in hexadecimal, decimal, octal, or ascii.

Options:
 -b, --one-byte-octal      one-byte octal display
 -c, --one-byte-char       one-byte character display
 -C, --canonical           canonical hex+ASCII display
 -d, --two-bytes-decimal   two-byte decimal display
 -o, --two-bytes-octal     two-byte octal display
 -x, --two-bytes-hex       two-byte hexadecimal display
 -L, --color[=<mode>]      interpret color formatting specifiers
 -e, --format <format>     format string to be used for displaying data
 -f, --format-file <file>  file that contains format strings
 -n, --length <length>     interpret only length bytes of input
 -s, --skip <offset>       skip offset bytes from the beginning
 -v, --no-squeezing        output identical lines

 -h, --help                display this help
 -V, --version             display version
";

const DEFAULT: [&str; 2] = [r#""%07.7_Ax\n""#, r#""%07.7_ax " 8/2 "%04x " "\n""#];
const CANONICAL: [&str; 3] = [
    r#""%08.8_Ax\n""#,
    r#""%08.8_ax  " 8/1 "%02x " "  " 8/1 "%02x ""#,
    r#""  |" 16/1 "%_p" "|\n""#,
];
const ONE_BYTE_OCTAL: [&str; 2] = [r#""%07.7_Ax\n""#, r#""%07.7_ax " 16/1 "%03o " "\n""#];
const ONE_BYTE_CHAR: [&str; 2] = [r#""%07.7_Ax\n""#, r#""%07.7_ax " 16/1 "%3_c " "\n""#];
const TWO_BYTES_DECIMAL: [&str; 2] = [r#""%07.7_Ax\n""#, r#""%07.7_ax " 8/2 "  %05u " "\n""#];
const TWO_BYTES_OCTAL: [&str; 2] = [r#""%07.7_Ax\n""#, r#""%07.7_ax " 8/2 " %06o " "\n""#];
const TWO_BYTES_HEX: [&str; 2] = [r#""%07.7_Ax\n""#, r#""%07.7_ax " 8/2 "   %04x " "\n""#];

/// Control characters' names for `%_u`.
const NAMES: [&str; 32] = [
    "nul", "soh", "stx", "etx", "eot", "enq", "ack", "bel", "bs", "ht", "lf", "vt", "ff", "cr",
    "so", "si", "dle", "dc1", "dc2", "dc3", "dc4", "nak", "syn", "etb", "can", "em", "sub", "esc",
    "fs", "gs", "rs", "us",
];

/// What one print unit converts.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Conv {
    /// Text alone.
    Text,
    /// `%d %i %o %u %x %X` over 1, 2, 4 or 8 bytes.
    Int(u8),
    /// `%e %E %f %g %G` over 4 or 8 bytes.
    Float(u8),
    /// `%c`.
    Char,
    /// `%s`, as many bytes as the precision or byte count.
    Str,
    /// `%_a[dox]`: the offset of the next byte.
    Addr(u8),
    /// `%_A[dox]`: the offset after all input, printed once at the end.
    EndAddr(u8),
    /// `%_c`: a character or its escape or octal form.
    CharEsc,
    /// `%_p`: a printable character or `.`.
    Printable,
    /// `%_u`: a character or its name.
    Named,
}

/// One print unit: text, then at most one conversion.
#[derive(Clone, Debug)]
struct Pr {
    text: String,
    /// The conversion's flags, width and precision: `%08.8`.
    spec: String,
    conv: Conv,
    bytes: usize,
    /// Replaced by a blank field once the data has run out.
    blank: bool,
}

/// A format unit: `iterations/bytes "format"`.
#[derive(Clone, Debug)]
struct Fu {
    reps: usize,
    reps_given: bool,
    bytes_given: Option<usize>,
    prs: Vec<Pr>,
}

impl Fu {
    fn bytes(&self) -> usize {
        self.prs.iter().map(|p| p.bytes).sum()
    }
    fn has_end_addr(&self) -> bool {
        self.prs.iter().any(|p| matches!(p.conv, Conv::EndAddr(_)))
    }
}

/// A format string: its format units; all of them print each block.
#[derive(Clone, Debug, Default)]
struct Fs {
    fus: Vec<Fu>,
}

impl Fs {
    fn bytes(&self) -> usize {
        self.fus.iter().map(|f| f.reps * f.bytes()).sum()
    }
}

/// The text of a quoted format with its escapes read.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(e) if super::util::c_escape(e).is_some() => {
                out.extend(super::util::c_escape(e));
            }
            Some('v') => out.push('\x0b'),
            Some('0') => out.push('\0'),
            Some(c) => out.push(c),
            None => out.push('\\'),
        }
    }
    out
}

/// Splits a format unit's text into print units, one conversion each.
fn print_units(fmt: &str, bytes_given: Option<usize>) -> Result<Vec<Pr>, String> {
    let mut prs = Vec::new();
    let mut rest = fmt;
    let mut conversions = 0;
    loop {
        // Text up to the next conversion (`%%` is a literal percent).
        let mut text = String::new();
        let mut i = 0;
        let b = rest.as_bytes();
        while i < b.len() {
            if b[i] == b'%' && b.get(i + 1) == Some(&b'%') {
                text.push('%');
                i += 2;
            } else if b[i] == b'%' {
                break;
            } else {
                let ch = rest[i..].chars().next().unwrap_or('\0');
                text.push(ch);
                i += ch.len_utf8();
            }
        }
        if i >= b.len() {
            if !text.is_empty() || prs.is_empty() {
                prs.push(Pr {
                    text,
                    spec: String::new(),
                    conv: Conv::Text,
                    bytes: 0,
                    blank: false,
                });
            }
            break;
        }
        let start = i;
        i += 1;
        while i < b.len() && b"-+ #0".contains(&b[i]) {
            i += 1;
        }
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let mut precision = None;
        if i < b.len() && b[i] == b'.' {
            i += 1;
            let p0 = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            precision = rest[p0..i].parse::<usize>().ok().or(Some(0));
        }
        let spec = rest[start..i].to_string();
        let Some(&c) = b.get(i) else {
            return Err(format!("bad format {{{fmt}}}"));
        };
        i += 1;
        let int_bytes = |conv: &str| match bytes_given {
            None | Some(4) => Ok(4),
            Some(n @ (1 | 2 | 8)) => Ok(n),
            Some(_) => Err(format!("bad byte count for conversion character {conv}")),
        };
        let (conv, bytes) = match c {
            b'd' | b'i' | b'o' | b'u' | b'x' | b'X' => {
                (Conv::Int(c), int_bytes(&(c as char).to_string())?)
            }
            b'e' | b'E' | b'f' | b'g' | b'G' => match bytes_given {
                None | Some(8) => (Conv::Float(c), 8),
                Some(4) => (Conv::Float(c), 4),
                Some(_) => {
                    return Err(format!(
                        "bad byte count for conversion character {}",
                        c as char
                    ));
                }
            },
            b'c' => match bytes_given {
                None | Some(1) => (Conv::Char, 1),
                Some(_) => return Err("bad byte count for conversion character c".into()),
            },
            b's' => match bytes_given.or(precision) {
                Some(n) if n > 0 => (Conv::Str, n),
                _ => return Err("%s requires a precision or a byte count".into()),
            },
            b'_' => {
                let Some(&d) = b.get(i) else {
                    return Err(format!("bad format {{{fmt}}}"));
                };
                i += 1;
                match d {
                    b'a' | b'A' => {
                        let radix = match b.get(i) {
                            Some(&r @ (b'd' | b'o' | b'x')) => {
                                i += 1;
                                r
                            }
                            _ => return Err(format!("bad conversion character %_{}", d as char)),
                        };
                        if d == b'a' {
                            (Conv::Addr(radix), 0)
                        } else {
                            (Conv::EndAddr(radix), 0)
                        }
                    }
                    b'c' => (Conv::CharEsc, 1),
                    b'p' => (Conv::Printable, 1),
                    b'u' => (Conv::Named, 1),
                    _ => return Err(format!("bad conversion character %_{}", d as char)),
                }
            }
            _ => {
                let ch = rest[i - 1..].chars().next().unwrap_or('?');
                return Err(format!("bad conversion character %{ch}"));
            }
        };
        if !matches!(conv, Conv::Addr(_) | Conv::EndAddr(_)) {
            conversions += 1;
        }
        prs.push(Pr {
            text,
            spec,
            conv,
            bytes,
            blank: false,
        });
        rest = &rest[i..];
    }
    if bytes_given.is_some() && conversions > 1 {
        return Err("byte count with multiple conversion characters".into());
    }
    Ok(prs)
}

/// Parses one format string: `[iterations][/bytes] "format"` units.
fn parse_format(s: &str) -> Result<Fs, String> {
    let bad = || format!("bad format {{{s}}}");
    let mut fs = Fs::default();
    let b = s.as_bytes();
    let mut i = 0;
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let mut reps = 1;
        let mut reps_given = false;
        if b[i].is_ascii_digit() {
            let s0 = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            reps = s[s0..i].parse().map_err(|_| bad())?;
            reps_given = true;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
        }
        let mut bytes_given = None;
        if i < b.len() && b[i] == b'/' {
            i += 1;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            let s0 = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            bytes_given = Some(s[s0..i].parse::<usize>().map_err(|_| bad())?);
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
        }
        if i >= b.len() || b[i] != b'"' {
            return Err(bad());
        }
        i += 1;
        let s0 = i;
        while i < b.len() && b[i] != b'"' {
            if b[i] == b'\\' {
                i += 1;
            }
            i += 1;
        }
        if i >= b.len() {
            return Err(bad());
        }
        let text = unescape(&s[s0..i]);
        i += 1;
        let prs = print_units(&text, bytes_given)?;
        fs.fus.push(Fu {
            reps,
            reps_given,
            bytes_given,
            prs,
        });
    }
    Ok(fs)
}

/// Settles the block size and each format string's last unit's repetitions, as hexdump
/// does: a format string consuming less than a block repeats its last unit to fill it.
fn settle(fss: &mut [Fs]) -> usize {
    let block = fss.iter().map(Fs::bytes).max().unwrap_or(0);
    for fs in fss.iter_mut() {
        let total = fs.bytes();
        if let Some(last) = fs.fus.last_mut() {
            let per = last.bytes_given.unwrap_or_else(|| last.bytes());
            if total < block && !last.reps_given && per > 0 {
                last.reps += (block - total) / per;
            }
        }
    }
    block
}

/// `%-4` → (left-aligned, width).
fn width_of(spec: &str) -> (bool, usize) {
    let flags = spec.trim_start_matches('%');
    let left = flags.contains('-');
    let digits: String = flags
        .trim_start_matches(['-', '+', ' ', '#', '0'])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (left, digits.parse().unwrap_or(0))
}

fn pad(out: &mut Vec<u8>, body: &[u8], spec: &str) {
    let (left, width) = width_of(spec);
    let fill = width.saturating_sub(body.len());
    if !left {
        out.resize(out.len() + fill, b' ');
    }
    out.extend_from_slice(body);
    if left {
        out.resize(out.len() + fill, b' ');
    }
}

/// The little-endian integer in `data` (as many bytes as it holds).
fn le(data: &[u8]) -> u64 {
    data.iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

fn sign_extend(v: u64, bytes: usize) -> i64 {
    let shift = 64 - 8 * bytes as u32;
    ((v << shift) as i64) >> shift
}

/// Prints one print unit over `data` (zero-padded to its byte count).
fn print(out: &mut Vec<u8>, pr: &Pr, data: &[u8], addr: u64) {
    out.extend_from_slice(pr.text.as_bytes());
    if pr.blank {
        pad(out, b"", &pr.spec);
        return;
    }
    let spec = &pr.spec;
    match pr.conv {
        Conv::Text => {}
        Conv::Int(c) => {
            let v = le(data);
            let arg = if matches!(c, b'd' | b'i') {
                sign_extend(v, pr.bytes).to_string()
            } else {
                v.to_string()
            };
            out.extend(sprintf(&format!("{spec}{}", c as char), &[arg]));
        }
        Conv::Float(c) => {
            let v = if pr.bytes == 4 {
                f64::from(f32::from_bits(le(data) as u32))
            } else {
                f64::from_bits(le(data))
            };
            out.extend(sprintf(&format!("{spec}{}", c as char), &[v.to_string()]));
        }
        Conv::Addr(r) | Conv::EndAddr(r) => {
            out.extend(sprintf(
                &format!("{spec}{}", r as char),
                &[addr.to_string()],
            ));
        }
        Conv::Char => pad(out, &data[..1], spec),
        Conv::Str => {
            let end = memchr::memchr(0, data).unwrap_or(data.len());
            pad(out, &data[..end], spec);
        }
        Conv::Printable => {
            let b = data[0];
            let shown = if (0x20..0x7f).contains(&b) { b } else { b'.' };
            pad(out, &[shown], spec);
        }
        Conv::CharEsc => {
            let esc: Option<&[u8]> = match data[0] {
                0 => Some(b"\\0"),
                7 => Some(b"\\a"),
                8 => Some(b"\\b"),
                12 => Some(b"\\f"),
                b'\n' => Some(b"\\n"),
                b'\r' => Some(b"\\r"),
                b'\t' => Some(b"\\t"),
                11 => Some(b"\\v"),
                _ => None,
            };
            match esc {
                Some(e) => pad(out, e, spec),
                None if (0x20..0x7f).contains(&data[0]) => pad(out, &data[..1], spec),
                None => {
                    let body = format!("{:03o}", data[0]);
                    pad(out, body.as_bytes(), spec);
                }
            }
        }
        Conv::Named => {
            let b = data[0];
            let body = match b {
                0..=31 => NAMES[usize::from(b)].to_string(),
                127 => "del".to_string(),
                0x20..=0x7e => (b as char).to_string(),
                _ => format!("{b:02x}"),
            };
            pad(out, body.as_bytes(), spec);
        }
    }
}

/// Prints one block through every format string.
fn display(out: &mut Vec<u8>, fss: &mut [Fs], block: &[u8], start: u64, end: Option<u64>) {
    for fs in fss.iter_mut() {
        let mut pos = 0usize;
        let mut addr = start;
        for fu in fs.fus.iter_mut() {
            if fu.has_end_addr() {
                break;
            }
            for rep in (1..=fu.reps).rev() {
                let count = fu.prs.len();
                for (k, pr) in fu.prs.iter_mut().enumerate() {
                    if end.is_some_and(|e| addr >= e) && pr.conv != Conv::Text {
                        pr.blank = true;
                    }
                    let mut data = [0u8; 16];
                    let have = block.len().saturating_sub(pos).min(pr.bytes);
                    let mut owned = Vec::new();
                    let slice: &[u8] = if pr.bytes <= 16 {
                        data[..have].copy_from_slice(&block[pos..pos + have]);
                        &data[..pr.bytes.max(1)]
                    } else {
                        owned.extend_from_slice(&block[pos..pos + have]);
                        owned.resize(pr.bytes, 0);
                        &owned
                    };
                    // No trailing blank after the last repetition of a repeated unit.
                    let last = rep == 1 && fu.reps > 1 && k + 1 == count;
                    if last
                        && pr.conv == Conv::Text
                        && pr.text.ends_with(|c: char| c.is_ascii_whitespace())
                    {
                        out.extend_from_slice(&pr.text.as_bytes()[..pr.text.len() - 1]);
                    } else {
                        print(out, pr, slice, addr);
                    }
                    addr += pr.bytes as u64;
                    pos += pr.bytes;
                }
            }
        }
    }
}

/// A count with hexdump's suffixes: `0x` hex, leading-`0` octal, `b` (512), `k`/`K`/`KiB`
/// (1024), `KB` (1000), `m`/`M`/`MiB`, `g`/`G`/`GiB`…
fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    let (digits, suffix) = if let Some(hex) = t.strip_prefix("0x").or(t.strip_prefix("0X")) {
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        (u64::from_str_radix(&hex[..end], 16).ok()?, &hex[end..])
    } else {
        let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let d = &t[..end];
        let n = if d.len() > 1 && d.starts_with('0') {
            u64::from_str_radix(&d[1..], 8).ok()?
        } else {
            d.parse().ok()?
        };
        (n, &t[end..])
    };
    let mult: u64 = match suffix {
        "" => 1,
        "b" => 512,
        _ => {
            let mut cs = suffix.chars();
            let unit = cs.next()?.to_ascii_uppercase();
            let power = "KMGTPEZY".find(unit)? as u32 + 1;
            let base: u64 = match cs.as_str() {
                "" | "iB" => 1024,
                "B" => 1000,
                _ => return None,
            };
            base.checked_pow(power)?
        }
    };
    digits.checked_mul(mult)
}

pub struct Hexdump;
pub struct Hd;

#[async_trait]
impl Command for Hexdump {
    fn name(&self) -> &'static str {
        "hexdump"
    }
    fn summary(&self) -> &'static str {
        "display file contents in hexadecimal, decimal, octal, or ascii"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        run(ctx, "hexdump", &args, false).await
    }
}

#[async_trait]
impl Command for Hd {
    fn name(&self) -> &'static str {
        "hd"
    }
    fn summary(&self) -> &'static str {
        "display file contents in canonical hex+ASCII (hexdump -C)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        run(ctx, "hd", &args, true).await
    }
}

async fn run(ctx: &Context, name: &str, args: &[String], canonical: bool) -> CmdResult {
    const SPECS: [Spec; 14] = [
        opt('b', Some('b'), Some("one-byte-octal"), Arg::No),
        opt('c', Some('c'), Some("one-byte-char"), Arg::No),
        opt('C', Some('C'), Some("canonical"), Arg::No),
        opt('d', Some('d'), Some("two-bytes-decimal"), Arg::No),
        opt('o', Some('o'), Some("two-bytes-octal"), Arg::No),
        opt('x', Some('x'), Some("two-bytes-hex"), Arg::No),
        opt('L', Some('L'), Some("color"), Arg::Optional),
        opt('e', Some('e'), Some("format"), Arg::Required),
        opt('f', Some('f'), Some("format-file"), Arg::Required),
        opt('n', Some('n'), Some("length"), Arg::Required),
        opt('s', Some('s'), Some("skip"), Arg::Required),
        opt('v', Some('v'), Some("no-squeezing"), Arg::No),
        opt('h', Some('h'), Some("help"), Arg::No),
        opt('V', Some('V'), Some("version"), Arg::No),
    ];
    let parsed = match parse(&SPECS, args, true) {
        Ok(p) => p,
        Err(msg) => return Ok(super::util::usage_error(ctx, name, &msg).await),
    };
    let mut formats: Vec<String> = Vec::new();
    // The canned displays are format strings too: the end address, then the lines.
    if canonical {
        formats.extend(CANONICAL.map(String::from));
    }
    let mut length: Option<u64> = None;
    let mut skip: u64 = 0;
    let mut squeeze = true;
    for (key, value) in &parsed.opts {
        let value = value.clone().unwrap_or_default();
        match key {
            'b' => formats.extend(ONE_BYTE_OCTAL.map(String::from)),
            'c' => formats.extend(ONE_BYTE_CHAR.map(String::from)),
            'C' => formats.extend(CANONICAL.map(String::from)),
            'd' => formats.extend(TWO_BYTES_DECIMAL.map(String::from)),
            'o' => formats.extend(TWO_BYTES_OCTAL.map(String::from)),
            'x' => formats.extend(TWO_BYTES_HEX.map(String::from)),
            'e' => formats.push(value),
            'f' => {
                let mut charge = ctx.budget.empty_charge();
                let text = match Reader::open(ctx, &value).await {
                    Ok(mut r) => r.read_to_end(1 << 20, &mut charge).await?,
                    Err(e) => Err(e),
                };
                match text {
                    Ok(t) => {
                        let t = String::from_utf8_lossy(&t).into_owned();
                        for line in t.lines() {
                            let line = line.trim_start();
                            if !line.is_empty() && !line.starts_with('#') {
                                formats.push(line.to_string());
                            }
                        }
                    }
                    Err(e) => {
                        ctx.warn(name, format!("{value}: {e}")).await;
                        return Ok(1);
                    }
                }
            }
            'n' => match parse_size(&value) {
                Some(n) => length = Some(n),
                None => {
                    let msg = format!("failed to parse length: '{value}': Invalid argument");
                    ctx.warn(name, msg).await;
                    return Ok(1);
                }
            },
            's' => match parse_size(&value) {
                Some(n) => skip = n,
                None => {
                    let msg = format!("failed to parse offset: '{value}': Invalid argument");
                    ctx.warn(name, msg).await;
                    return Ok(1);
                }
            },
            'v' => squeeze = false,
            'h' => {
                ctx.out(HELP).await?;
                return Ok(0);
            }
            'V' => {
                ctx.out(format!("{name} from forkbox (util-linux 2.38.1)\n"))
                    .await?;
                return Ok(0);
            }
            _ => {}
        }
    }
    if formats.is_empty() {
        formats.extend(DEFAULT.map(String::from));
    }
    let mut fss = Vec::new();
    for f in &formats {
        match parse_format(f) {
            Ok(fs) => fss.push(fs),
            Err(msg) => {
                ctx.warn(name, msg).await;
                return Ok(1);
            }
        }
    }
    let block_len = settle(&mut fss);
    // The last end-address unit given is the one printed.
    let end_fu = fss
        .iter()
        .flat_map(|fs| fs.fus.iter())
        .rfind(|fu| fu.has_end_addr())
        .cloned();

    let mut files: Vec<String> = parsed.operands.clone();
    let stdin = files.is_empty();
    if stdin {
        files.push("-".into());
    }
    let mut status = 0;
    let mut out = BufOut::new(ctx);
    let mut pacer = Pacer::default();
    let mut text = Vec::new();
    let mut block: Vec<u8> = Vec::with_capacity(block_len);
    let mut prev: Option<Vec<u8>> = None;
    let mut starred = false;
    let mut to_skip = skip;
    let mut addr: u64 = 0;
    let mut remaining = length;
    let mut any_data = false;
    let mut files = files.into_iter();
    let mut reader: Option<(String, Reader)> = None;
    let mut carry = bytes::Bytes::new();
    'input: loop {
        // Fill one block from the files in turn.
        while block.len() < block_len.max(1) && (remaining != Some(0) || !carry.is_empty()) {
            if reader.is_none() && carry.is_empty() {
                let Some(f) = files.next() else { break 'input };
                let opened = if stdin {
                    Ok(Reader::stdin(ctx))
                } else {
                    Reader::open(ctx, &f).await
                };
                match opened {
                    Ok(r) => reader = Some((f, r)),
                    Err(e) => {
                        out.flush().await?;
                        ctx.warn(name, format!("{f}: {e}")).await;
                        status = 1;
                        continue;
                    }
                }
            }
            if carry.is_empty() {
                let Some((f, r)) = reader.as_mut() else { break };
                match r.chunk().await {
                    Ok(Some(mut c)) => {
                        let drop = to_skip.min(c.len() as u64) as usize;
                        to_skip -= drop as u64;
                        addr += drop as u64;
                        carry = c.split_off(drop);
                        if let Some(rem) = remaining.as_mut() {
                            let take = (*rem).min(carry.len() as u64) as usize;
                            *rem -= take as u64;
                            carry.truncate(take);
                        }
                    }
                    Ok(None) => reader = None,
                    Err(e) => {
                        out.flush().await?;
                        ctx.warn(name, format!("{f}: {e}")).await;
                        status = 1;
                        reader = None;
                    }
                }
                continue;
            }
            // Whatever does not fit this block is kept for the next.
            let room = block_len.max(1) - block.len();
            let piece = carry.split_to(carry.len().min(room));
            block.extend_from_slice(&piece);
        }
        if block.len() < block_len.max(1) {
            break;
        }
        any_data = true;
        if squeeze && prev.as_deref() == Some(&block[..]) {
            if !starred {
                out.write(b"*\n").await?;
                starred = true;
            }
        } else {
            starred = false;
            text.clear();
            display(&mut text, &mut fss, &block, addr, None);
            out.write(&text).await?;
        }
        addr += block.len() as u64;
        prev = Some(std::mem::replace(&mut block, Vec::with_capacity(block_len)));
        pacer.tick(ctx).await?;
        if block_len == 0 {
            break;
        }
    }
    // The last, short block: padded with zeros, printed with blanks past the data.
    let mut end = addr;
    if !block.is_empty() {
        any_data = true;
        end = addr + block.len() as u64;
        let valid = end;
        block.resize(block_len, 0);
        text.clear();
        display(&mut text, &mut fss, &block, addr, Some(valid));
        out.write(&text).await?;
    }
    if let Some(fu) = end_fu
        && (any_data || end > 0)
    {
        text.clear();
        for pr in &fu.prs {
            match pr.conv {
                Conv::EndAddr(_) => print(&mut text, pr, &[0], end),
                _ => text.extend_from_slice(pr.text.as_bytes()),
            }
        }
        out.write(&text).await?;
    }
    out.flush().await?;
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn dump(stdin: &[u8], args: &[&str]) -> (i32, String, String) {
        let inv = Invocation {
            stdin: stdin.to_vec(),
            ..Invocation::default()
        };
        inv.run(&Hexdump, args).await
    }

    #[tokio::test]
    async fn canonical_display() {
        let (st, out, _) = dump(b"hello world\n\0\x01\x7f\x80abc", &["-C"]).await;
        assert_eq!(st, 0);
        assert_eq!(
            out,
            "00000000  68 65 6c 6c 6f 20 77 6f  72 6c 64 0a 00 01 7f 80  |hello world.....|\n\
             00000010  61 62 63                                          |abc|\n\
             00000013\n"
        );
    }

    #[tokio::test]
    async fn default_display_pads_the_last_line() {
        let (_, out, _) = dump(b"abc", &[]).await;
        assert_eq!(
            out,
            format!("0000000 6261 0063{}\n0000003\n", " ".repeat(30))
        );
    }

    #[tokio::test]
    async fn repeated_blocks_squeeze_unless_v() {
        let zeros = [0u8; 48];
        let (_, out, _) = dump(&zeros, &["-C"]).await;
        assert_eq!(out.lines().nth(1), Some("*"));
        let (_, out, _) = dump(&zeros, &["-vC"]).await;
        assert!(!out.contains('*'));
        assert_eq!(out.lines().count(), 4);
    }

    #[tokio::test]
    async fn format_strings() {
        let (_, out, _) = dump(b"abcdefghij", &["-e", r#"2/4 "%08x  " "\n""#]).await;
        assert_eq!(out, "64636261  68676665 \n00006a69           \n");
        let (_, out, _) = dump(b"\x01\n\x80A", &["-e", r#"4/1 "%5_c|" "\n""#]).await;
        assert_eq!(out, "  001|   \\n|  200|    A|\n");
        let (_, out, _) = dump(b"\x01\n\x80A\x7f ", &["-e", r#"6/1 "%_u|" "\n""#]).await;
        assert_eq!(out, "soh|lf|80|A|del| |\n");
        let (st, _, err) = dump(b"x", &["-e", r#""%s""#]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "hexdump: %s requires a precision or a byte count\n")
        );
        let (st, _, err) = dump(b"x", &["-e", r#"4/1 "%q""#]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "hexdump: bad conversion character %q\n")
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("10"), Some(10));
        assert_eq!(parse_size("0x10"), Some(16));
        assert_eq!(parse_size("1k"), Some(1024));
        assert_eq!(parse_size("1KB"), Some(1000));
        assert_eq!(parse_size("2b"), Some(1024));
        assert_eq!(parse_size("x"), None);
    }
}

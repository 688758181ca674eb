//! `xxd`: a hex dump, or the reverse, as vim's xxd (2022-01-14) gives it: the default
//! grouped dump with text, `-p` plain hex, `-i` a C include, `-b` bits, `-e` little-endian
//! groups, `-r` (with or without `-p`) back to bytes. Hand-parsed: xxd's options are
//! single-dash words (`-ps`, `-cols 8`, `-c8`).

use async_trait::async_trait;

use super::util::{BufOut, Pacer, Reader, quotef};
use crate::fs::WriteMode;
use crate::{CmdResult, Command, Context};

const VERSION: &str = "xxd 2022-01-14 by Juergen Weigert et al.";

const USAGE: &str = "Usage:
       xxd [options] [infile [outfile]]
    or
       xxd -r [-s [-]offset] [-c cols] [-ps] [infile [outfile]]
Options:
    -a          toggle autoskip: A single '*' replaces nul-lines. Default off.
    -b          binary digit dump (incompatible with -ps,-i,-r). Default hex.
    -C          capitalize variable names in C include file style (-i).
    -c cols     format <cols> octets per line. Default 16 (-i: 12, -ps: 30).
    -E          show characters in EBCDIC. Default ASCII.
    -e          little-endian dump (incompatible with -ps,-i,-r).
    -g bytes    number of octets per group in normal output. Default 2 (-e: 4).
    -h          print this summary.
    -i          output in C include file style.
    -l len      stop after <len> octets.
    -n name     set the variable name used in C include output (-i).
    -o off      add <off> to the displayed file position.
    -ps         output in postscript plain hexdump style.
    -r          reverse operation: convert (or patch) hexdump into binary.
    -r -s off   revert with <off> added to file positions found in hexdump.
    -d          show offset in decimal instead of hex.
    -s [+][-]seek  start at <seek> bytes abs. (or +: rel.) infile offset.
    -u          use upper case hex letters.
    -v          show version: \"xxd 2022-01-14 by Juergen Weigert et al.\".
";

/// Most columns xxd allows (`-c`).
const MAX_COLS: i64 = 256;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Hex,
    Bits,
    Plain,
    Include,
}

struct Opts {
    mode: Mode,
    little: bool,
    upper: bool,
    capitalize: bool,
    revert: bool,
    cols: Option<i64>,
    group: Option<i64>,
    len: Option<i64>,
    seek: Option<String>,
    display_off: i64,
    name: Option<String>,
}

/// C's `strtol(s, NULL, 0)`: leading blanks, a sign, `0x` hex or `0` octal; stops at
/// the first character that does not fit; 0 when nothing does.
fn strtol(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.starts_with('0') {
        (s, 8)
    } else {
        (s, 10)
    };
    let mut n: i64 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else { break };
        n = n
            .saturating_mul(i64::from(radix))
            .saturating_add(i64::from(d));
    }
    if neg { -n } else { n }
}

pub struct Xxd;

async fn usage(ctx: &Context) -> CmdResult {
    ctx.err(USAGE).await;
    Ok(1)
}

#[async_trait]
impl Command for Xxd {
    fn name(&self) -> &'static str {
        "xxd"
    }
    fn summary(&self) -> &'static str {
        "make a hex dump or do the reverse"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut o = Opts {
            mode: Mode::Hex,
            little: false,
            upper: false,
            capitalize: false,
            revert: false,
            cols: None,
            group: None,
            len: None,
            seek: None,
            display_off: 0,
            name: None,
        };
        let mut operands: Vec<String> = Vec::new();
        let mut i = 0;
        let mut opts_done = false;
        while i < args.len() {
            let a = args[i].clone();
            i += 1;
            if opts_done || !a.starts_with('-') || a == "-" {
                operands.push(a);
                continue;
            }
            if a == "--" {
                opts_done = true;
                continue;
            }
            if a == "--help" {
                ctx.out(USAGE).await?;
                return Ok(0);
            }
            let b = a.as_bytes();
            let letter = b.get(1).copied().unwrap_or(b'-');
            let words: &[&str] = match letter {
                b'c' => &["-cols"],
                b'g' => &["-groupsize"],
                b'l' => &["-len"],
                b's' => &["-seek"],
                b'n' => &["-name"],
                b'o' => &[],
                _ => &[],
            };
            if a.starts_with("-capitalize") || a == "-C" {
                o.capitalize = true;
                continue;
            }
            match letter {
                b'b' => o.mode = Mode::Bits,
                b'e' => o.little = true,
                b'i' => o.mode = Mode::Include,
                b'p' => o.mode = Mode::Plain,
                b'r' => o.revert = true,
                b'u' => o.upper = true,
                b'v' => {
                    ctx.err(format!("{VERSION}\n")).await;
                    return Ok(0);
                }
                b'c' | b'g' | b'l' | b's' | b'n' | b'o' => {
                    let value = if a.len() > 2 && !words.iter().any(|w| w.starts_with(&a)) {
                        a[2..].to_string()
                    } else if let Some(v) = args.get(i) {
                        i += 1;
                        v.clone()
                    } else {
                        return usage(ctx).await;
                    };
                    match letter {
                        b'c' => o.cols = Some(strtol(&value)),
                        b'g' => o.group = Some(strtol(&value)),
                        b'l' => o.len = Some(strtol(&value)),
                        b's' => o.seek = Some(value),
                        b'o' => o.display_off = strtol(&value),
                        _ => o.name = Some(value),
                    }
                }
                _ => return usage(ctx).await,
            }
        }
        if operands.len() > 2 {
            return usage(ctx).await;
        }
        if let Some(c) = o.cols
            && !(0..=MAX_COLS).contains(&c)
        {
            ctx.err("xxd: invalid number of columns (max. 256).\n")
                .await;
            return Ok(1);
        }
        let input = operands.first().cloned().unwrap_or_else(|| "-".into());
        let output = operands.get(1).cloned().filter(|s| s != "-");
        if o.revert {
            return revert(ctx, &o, &input, output.as_deref()).await;
        }
        dump(ctx, &o, &input, output.as_deref()).await
    }
}

/// Where the result goes: stdout, or the outfile operand.
enum Sink<'a> {
    Out(BufOut<'a>),
    File(Box<dyn crate::fs::WriteHandle>, String),
}

impl Sink<'_> {
    async fn write(&mut self, ctx: &Context, data: &[u8]) -> Result<bool, crate::Interrupt> {
        match self {
            Sink::Out(out) => out.write(data).await.map(|_| true),
            Sink::File(h, name) => match h.write(data).await {
                Ok(()) => Ok(true),
                Err(e) => {
                    ctx.warn("xxd", format!("{}: {e}", quotef(name))).await;
                    Ok(false)
                }
            },
        }
    }
}

async fn open_sink<'a>(
    ctx: &'a Context,
    output: Option<&str>,
    mode: WriteMode,
) -> Option<Sink<'a>> {
    match output {
        None => Some(Sink::Out(BufOut::new(ctx))),
        Some(name) => match ctx.fs.open_write(&ctx.path(name), mode).await {
            Ok(h) => Some(Sink::File(h, name.to_string())),
            Err(e) => {
                ctx.warn("xxd", format!("{}: {e}", quotef(name))).await;
                None
            }
        },
    }
}

async fn finish(ctx: &Context, sink: Sink<'_>) -> CmdResult {
    match sink {
        Sink::Out(mut out) => {
            out.flush().await?;
            Ok(0)
        }
        Sink::File(h, name) => match h.close().await {
            Ok(()) => Ok(0),
            Err(e) => {
                ctx.warn("xxd", format!("{}: {e}", quotef(&name))).await;
                Ok(3)
            }
        },
    }
}

/// The C variable name xxd derives from a file name.
fn var_name(file: &str, capitalize: bool) -> String {
    let mut s = String::new();
    if file.starts_with(|c: char| c.is_ascii_digit()) {
        s.push_str("__");
    }
    for c in file.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        s.push(if capitalize {
            c.to_ascii_uppercase()
        } else {
            c
        });
    }
    s
}

async fn dump(ctx: &Context, o: &Opts, input: &str, output: Option<&str>) -> CmdResult {
    let mut reader = match Reader::open(ctx, input).await {
        Ok(r) => r,
        Err(e) => {
            ctx.warn("xxd", format!("{}: {e}", quotef(input))).await;
            return Ok(2);
        }
    };
    let (cols, group) = match o.mode {
        Mode::Hex => (
            o.cols.filter(|&c| c > 0).unwrap_or(16) as usize,
            o.group.unwrap_or(if o.little { 4 } else { 2 }),
        ),
        Mode::Bits => (
            o.cols.filter(|&c| c > 0).unwrap_or(6) as usize,
            o.group.unwrap_or(1),
        ),
        // `-p -c 0`: everything on one line.
        Mode::Plain => (o.cols.unwrap_or(30) as usize, 0),
        Mode::Include => (o.cols.filter(|&c| c > 0).unwrap_or(12) as usize, 0),
    };
    let group = if group < 1 || group as usize > cols {
        cols
    } else {
        group as usize
    };
    if o.little && o.mode == Mode::Hex && !group.is_power_of_two() {
        ctx.err("xxd: number of octets per group must be a power of 2 with -e.\n")
            .await;
        return Ok(1);
    }
    // Seeking: +N and N from the start (read and dropped), -N from the end of a file.
    let mut start: u64 = 0;
    if let Some(s) = &o.seek {
        let rel_end = s.trim_start().trim_start_matches('+').starts_with('-');
        let n = strtol(s.trim_start().trim_start_matches('+')).unsigned_abs();
        if rel_end {
            let size = if input == "-" {
                None
            } else {
                ctx.fs.stat(&ctx.path(input)).await.ok().map(|m| m.len)
            };
            match size {
                Some(len) => start = len.saturating_sub(n),
                None => {
                    ctx.err("xxd: Sorry, cannot seek.\n").await;
                    return Ok(4);
                }
            }
        } else {
            start = n;
        }
    }
    let Some(mut sink) = open_sink(ctx, output, WriteMode::Truncate).await else {
        return Ok(2);
    };
    let mut left: Option<u64> = o.len.map(|l| l.max(0) as u64);
    let mut to_skip = start;
    let mut offset = start;
    let mut line: Vec<u8> = Vec::new();
    let mut total: u64 = 0;
    let mut pacer = Pacer::default();
    let name = var_name(input, o.capitalize);
    let name = o.name.clone().unwrap_or(name);
    if o.mode == Mode::Include && input != "-" {
        let head = format!("unsigned char {name}[] = {{\n");
        if !sink.write(ctx, head.as_bytes()).await? {
            return Ok(3);
        }
    }
    let mut first_include = true;
    let mut done = false;
    while !done {
        let chunk = match reader.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => break,
            Err(e) => {
                ctx.warn("xxd", format!("{}: {e}", quotef(input))).await;
                return Ok(2);
            }
        };
        pacer.tick(ctx).await?;
        let mut data: &[u8] = &chunk;
        if to_skip > 0 {
            let k = (to_skip as usize).min(data.len());
            to_skip -= k as u64;
            data = &data[k..];
        }
        if let Some(l) = left.as_mut() {
            let k = (*l as usize).min(data.len());
            data = &data[..k];
            *l -= k as u64;
            done = *l == 0;
        }
        if cols == 0 {
            let text: String = data
                .iter()
                .map(|&b| {
                    if o.upper {
                        format!("{b:02X}")
                    } else {
                        format!("{b:02x}")
                    }
                })
                .collect();
            total += data.len() as u64;
            if !sink.write(ctx, text.as_bytes()).await? {
                return Ok(3);
            }
            continue;
        }
        for &byte in data {
            line.push(byte);
            if line.len() == cols {
                let text = render(o, &line, offset, cols, group, &mut first_include);
                if !sink.write(ctx, text.as_bytes()).await? {
                    return Ok(3);
                }
                offset += cols as u64;
                total += cols as u64;
                line.clear();
                pacer.tick(ctx).await?;
            }
        }
    }
    if !line.is_empty() {
        let text = render(o, &line, offset, cols, group, &mut first_include);
        total += line.len() as u64;
        if !sink.write(ctx, text.as_bytes()).await? {
            return Ok(3);
        }
    }
    let tail = match o.mode {
        Mode::Plain if cols == 0 && total > 0 => "\n".to_string(),
        Mode::Include => {
            let mut t = String::new();
            if !first_include {
                t.push('\n');
            }
            if input != "-" {
                let len_name = if o.capitalize { "_LEN" } else { "_len" };
                t.push_str(&format!("}};\nunsigned int {name}{len_name} = {total};\n"));
            }
            t
        }
        _ => String::new(),
    };
    if !sink.write(ctx, tail.as_bytes()).await? {
        return Ok(3);
    }
    finish(ctx, sink).await
}

/// One line of output for `line` (the last may be short).
fn render(
    o: &Opts,
    line: &[u8],
    offset: u64,
    cols: usize,
    group: usize,
    first_include: &mut bool,
) -> String {
    let hex = |b: u8| -> String {
        if o.upper {
            format!("{b:02X}")
        } else {
            format!("{b:02x}")
        }
    };
    match o.mode {
        Mode::Plain => {
            let mut s: String = line.iter().map(|&b| hex(b)).collect();
            s.push('\n');
            s
        }
        Mode::Include => {
            let mut s = String::new();
            if !*first_include {
                s.push_str(",\n");
            }
            *first_include = false;
            let items: Vec<String> = line
                .iter()
                .map(|&b| {
                    if o.upper {
                        format!("0X{b:02X}")
                    } else {
                        format!("0x{b:02x}")
                    }
                })
                .collect();
            s.push_str("  ");
            s.push_str(&items.join(", "));
            s
        }
        Mode::Hex | Mode::Bits => {
            let digits = if o.mode == Mode::Bits { 8 } else { 2 };
            let grplen = digits * group + 1;
            let ascii_at = (grplen * cols - 1) / group + 2;
            let mut area = vec![b' '; ascii_at + line.len()];
            for (p, &b) in line.iter().enumerate() {
                let x = if o.little && o.mode == Mode::Hex {
                    p ^ (group - 1)
                } else {
                    p
                };
                let at = grplen * x / group;
                let text = if o.mode == Mode::Bits {
                    format!("{b:08b}")
                } else {
                    hex(b)
                };
                area[at..at + digits].copy_from_slice(text.as_bytes());
                area[ascii_at + p] = if (0x20..0x7f).contains(&b) { b } else { b'.' };
            }
            let addr = offset.wrapping_add(o.display_off as u64);
            format!("{addr:08x}: {}\n", String::from_utf8_lossy(&area))
        }
    }
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// `-r`: hex back to bytes. A dump's lines are `address: hex…  text`; the text after two
/// spaces (or past `-c` bytes) is ignored. With `-p`, every hex pair is a byte.
async fn revert(ctx: &Context, o: &Opts, input: &str, output: Option<&str>) -> CmdResult {
    let mut reader = match Reader::open(ctx, input).await {
        Ok(r) => r,
        Err(e) => {
            ctx.warn("xxd", format!("{}: {e}", quotef(input))).await;
            return Ok(2);
        }
    };
    let Some(mut sink) = open_sink(ctx, output, WriteMode::Update).await else {
        return Ok(2);
    };
    let cols = o.cols.unwrap_or(16).max(1) as usize;
    let base = o.seek.as_deref().map(strtol).unwrap_or(0);
    let mut pacer = Pacer::default();
    // Bytes written so far: stdout can only grow forward (gaps become zeros).
    let mut pos: u64 = 0;
    let mut nibble: Option<u8> = None;
    let mut file_pos: u64 = u64::try_from(base.max(0)).unwrap_or(0);
    loop {
        let line = match reader.line(super::util::MAX_LINE).await? {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                ctx.warn("xxd", format!("{}: {e}", quotef(input))).await;
                return Ok(2);
            }
        };
        pacer.tick(ctx).await?;
        let mut bytes = Vec::new();
        if o.mode == Mode::Plain {
            for &c in &line {
                if let Some(v) = hex_value(c) {
                    match nibble.take() {
                        Some(h) => bytes.push(h << 4 | v),
                        None => nibble = Some(v),
                    }
                }
            }
        } else {
            let text = &line[..];
            let Some(colon) = text.iter().position(|&c| c == b':') else {
                continue;
            };
            let mut addr: u64 = 0;
            for &c in &text[..colon] {
                if let Some(v) = hex_value(c) {
                    addr = addr.wrapping_mul(16).wrapping_add(u64::from(v));
                }
            }
            file_pos = addr.wrapping_add(base as u64);
            let mut k = colon + 1;
            let mut spaces = 0;
            let mut half: Option<u8> = None;
            while k < text.len() && bytes.len() < cols {
                let c = text[k];
                k += 1;
                if let Some(v) = hex_value(c) {
                    spaces = 0;
                    match half.take() {
                        Some(h) => bytes.push(h << 4 | v),
                        None => half = Some(v),
                    }
                } else if c == b' ' || c == b'\t' {
                    spaces += 1;
                    half = None;
                    if spaces >= 2 && !bytes.is_empty() {
                        break;
                    }
                } else {
                    break;
                }
            }
        }
        if bytes.is_empty() {
            continue;
        }
        match &mut sink {
            Sink::Out(out) => {
                if file_pos > pos {
                    let gap = file_pos - pos;
                    if gap > super::util::MAX_LINE as u64 {
                        ctx.err("xxd: Sorry, cannot seek.\n").await;
                        return Ok(4);
                    }
                    out.write(&vec![0; gap as usize]).await?;
                    pos = file_pos;
                }
                if file_pos == pos {
                    out.write(&bytes).await?;
                    pos += bytes.len() as u64;
                } else {
                    ctx.err("xxd: Sorry, cannot seek.\n").await;
                    return Ok(4);
                }
            }
            Sink::File(h, name) => {
                if let Err(e) = h.write_at(file_pos, &bytes).await {
                    ctx.warn("xxd", format!("{}: {e}", quotef(name))).await;
                    return Ok(3);
                }
            }
        }
        file_pos += bytes.len() as u64;
    }
    finish(ctx, sink).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn xxd(input: &[u8], args: &[&str]) -> (i32, String, String) {
        let inv = Invocation {
            stdin: input.to_vec(),
            ..Invocation::default()
        };
        inv.run(&Xxd, args).await
    }

    #[tokio::test]
    async fn dumps() {
        assert_eq!(
            xxd(b"abc", &[]).await.1,
            "00000000: 6162 63                                  abc\n"
        );
        assert_eq!(xxd(b"ab\n", &["-p"]).await.1, "61620a\n");
        assert_eq!(
            xxd(b"ab", &["-b"]).await.1,
            "00000000: 01100001 01100010                                      ab\n"
        );
        assert_eq!(xxd(b"ab", &["-i"]).await.1, "  0x61, 0x62\n");
    }

    #[tokio::test]
    async fn reverts() {
        let dump = xxd(b"hello world 12345678", &[]).await.1;
        let inv = Invocation {
            stdin: dump.into_bytes(),
            ..Invocation::default()
        };
        assert_eq!(inv.run(&Xxd, &["-r"]).await.1, "hello world 12345678");
        assert_eq!(xxd(b"68 69\n0a", &["-r", "-p"]).await.1, "hi\n");
        let (st, _, err) = xxd(b"a", &["-c", "300"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "xxd: invalid number of columns (max. 256).\n")
        );
    }
}

//! `od`: dump files in octal and other formats, GNU coreutils-style. The operands are read
//! as one stream in chunks; `-j` skips into it, `-N` bounds it, and a block equal to the
//! one before is shown as `*` unless `-v`. Hand-parsed, as `-w` takes an optional value.

use async_trait::async_trait;

use super::getopt::{self, Arg, opt, parse};

use super::util::{Pacer, Reader, quote, quotef};
use crate::{CmdResult, Command, Context};

const HELP: &str = "Usage: od [OPTION]... [FILE]...
Write an unambiguous representation, octal bytes by default,
of FILE to standard output.  With more than one FILE argument,
concatenate them in the listed order to form the input.

With no FILE, or when FILE is -, read standard input.

Mandatory arguments to long options are mandatory for short options too.
  -A, --address-radix=RADIX   output format for file offsets; RADIX is one
                                of [doxn], for Decimal, Octal, Hex or None
  -j, --skip-bytes=BYTES      skip BYTES input bytes first
  -N, --read-bytes=BYTES      limit dump to BYTES input bytes
  -S BYTES, --strings[=BYTES]  output strings of at least BYTES graphic chars;
                                3 is implied when BYTES is not specified
  -t, --format=TYPE           select output format or formats
  -v, --output-duplicates     do not use * to mark line suppression
  -w[BYTES], --width[=BYTES]  output BYTES bytes per output line;
                                32 is implied when BYTES is not specified
      --help                  display this help and exit

Traditional format specifications may be intermixed; they accumulate:
  -a   same as -t a,  select named characters, ignoring high-order bit
  -b   same as -t o1, select octal bytes
  -c   same as -t c,  select printable characters or backslash escapes
  -d   same as -t u2, select unsigned decimal 2-byte units
  -f   same as -t fF, select floats
  -i   same as -t dI, select decimal ints
  -l   same as -t dL, select decimal longs
  -o   same as -t o2, select octal 2-byte units
  -s   same as -t d2, select decimal 2-byte units
  -x   same as -t x2, select hexadecimal 2-byte units
";

/// How one output line of a format shows its bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Signed,
    Unsigned,
    Octal,
    Hex,
    Float,
    Named,
    Char,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Spec {
    kind: Kind,
    /// Bytes per value.
    size: usize,
    /// Characters of the widest value.
    width: usize,
    /// `z`: the bytes as text after the line.
    trailer: bool,
}

const OCT_DIGITS: [usize; 9] = [0, 3, 6, 8, 11, 14, 16, 19, 22];
const SDEC_DIGITS: [usize; 9] = [1, 4, 6, 8, 11, 13, 16, 18, 20];
const UDEC_DIGITS: [usize; 9] = [0, 3, 5, 8, 10, 13, 15, 17, 20];

fn spec(kind: Kind, size: usize) -> Spec {
    let width = match kind {
        Kind::Signed => SDEC_DIGITS[size],
        Kind::Unsigned => UDEC_DIGITS[size],
        Kind::Octal => OCT_DIGITS[size],
        Kind::Hex => 2 * size,
        Kind::Float if size == 4 => 15,
        Kind::Float => 24,
        Kind::Named | Kind::Char => 3,
    };
    Spec {
        kind,
        size,
        width,
        trailer: false,
    }
}

/// Parses one `-t` argument (several formats may follow each other) into `out`.
fn parse_type(s: &str, out: &mut Vec<Spec>) -> Result<(), String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        i += 1;
        let kind = match c {
            b'a' => Kind::Named,
            b'c' => Kind::Char,
            b'd' => Kind::Signed,
            b'u' => Kind::Unsigned,
            b'o' => Kind::Octal,
            b'x' => Kind::Hex,
            b'f' => Kind::Float,
            _ => {
                return Err(format!(
                    "invalid character '{}' in type string {}",
                    c as char,
                    quote(s)
                ));
            }
        };
        let mut size = match kind {
            Kind::Named | Kind::Char => 1,
            Kind::Float => 8,
            _ => 4,
        };
        if !matches!(kind, Kind::Named | Kind::Char) {
            let letter = b.get(i).copied();
            let sized = match (kind, letter) {
                (Kind::Float, Some(b'F')) => Some(4),
                (Kind::Float, Some(b'D')) => Some(8),
                (Kind::Float, Some(b'L')) => Some(16),
                (Kind::Float, _) => None,
                (_, Some(b'C')) => Some(1),
                (_, Some(b'S')) => Some(2),
                (_, Some(b'I')) => Some(4),
                (_, Some(b'L')) => Some(8),
                _ => None,
            };
            if let Some(n) = sized {
                i += 1;
                size = n;
            } else {
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                if i > start {
                    size = s[start..i].parse().unwrap_or(usize::MAX);
                }
            }
            let ok = match kind {
                Kind::Float => size == 4 || size == 8,
                _ => matches!(size, 1 | 2 | 4 | 8),
            };
            if !ok {
                let what = if kind == Kind::Float {
                    "floating point"
                } else {
                    "integral"
                };
                return Err(format!(
                    "invalid type string {};\nthis system doesn't provide a {size}-byte {what} type",
                    quote(s)
                ));
            }
        }
        let mut sp = spec(kind, size);
        if b.get(i) == Some(&b'z') {
            i += 1;
            sp.trailer = true;
        }
        out.push(sp);
    }
    Ok(())
}

/// A byte count as GNU's `xstrtoumax` reads one (`0x`/`0` prefixes, `b`, `K`, `KB`, `KiB`…).
pub(crate) fn parse_bytes(s: &str) -> Result<u64, &'static str> {
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    // No number but a suffix: the number is 1 (`-S b` is 512), as GNU's xstrtoumax.
    let suffix_only = end == 0 && radix == 10 && digits.starts_with(|c| "bkKMGTPE".contains(c));
    if end == 0 && !(radix == 8 && digits.is_empty()) && !suffix_only {
        return Err("invalid");
    }
    let n = if suffix_only {
        1
    } else if end == 0 {
        0
    } else {
        u64::from_str_radix(&digits[..end], radix).map_err(|_| "too large")?
    };
    let suffix = &digits[end..];
    let mult: u64 = match suffix {
        "" => 1,
        "b" => 512,
        "c" => 1,
        "w" => 2,
        _ => {
            let mut it = suffix.chars();
            let letter = it.next().unwrap_or(' ');
            let rest: String = it.collect();
            let power = match letter.to_ascii_uppercase() {
                'K' => 1,
                'M' => 2,
                'G' => 3,
                'T' => 4,
                'P' => 5,
                'E' => 6,
                _ => return Err("invalid suffix"),
            };
            if letter == 'k' && rest.is_empty() {
                1024
            } else {
                let base: u64 = match rest.as_str() {
                    "" | "iB" => 1024,
                    "B" => 1000,
                    _ => return Err("invalid suffix"),
                };
                base.checked_pow(power).ok_or("too large")?
            }
        }
    };
    n.checked_mul(mult).ok_or("too large")
}

pub struct Od;

struct Opts {
    radix: char,
    skip: u64,
    limit: Option<u64>,
    specs: Vec<Spec>,
    verbose: bool,
    width: Option<usize>,
    /// `--endian=big`: multi-byte numbers are read most significant byte first.
    big_endian: bool,
    /// `-S N`: dump the NUL-terminated strings of at least N printable bytes instead.
    strings: Option<usize>,
    files: Vec<String>,
}

async fn usage(ctx: &Context, msg: String) -> CmdResult {
    Ok(super::util::usage_error(ctx, "od", &msg).await)
}

#[async_trait]
impl Command for Od {
    fn name(&self) -> &'static str {
        "od"
    }
    fn summary(&self) -> &'static str {
        "dump files in octal and other formats"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut o = Opts {
            radix: 'o',
            skip: 0,
            limit: None,
            specs: Vec::new(),
            verbose: false,
            width: None,
            big_endian: false,
            strings: None,
            files: Vec::new(),
        };
        const SPECS: [getopt::Spec; 22] = [
            opt('a', Some('a'), None, Arg::No),
            opt('b', Some('b'), None, Arg::No),
            opt('c', Some('c'), None, Arg::No),
            opt('d', Some('d'), None, Arg::No),
            opt('f', Some('f'), None, Arg::No),
            opt('i', Some('i'), None, Arg::No),
            opt('l', Some('l'), None, Arg::No),
            opt('o', Some('o'), None, Arg::No),
            opt('s', Some('s'), None, Arg::No),
            opt('x', Some('x'), None, Arg::No),
            opt('v', Some('v'), Some("output-duplicates"), Arg::No),
            opt('A', Some('A'), Some("address-radix"), Arg::Required),
            opt('j', Some('j'), Some("skip-bytes"), Arg::Required),
            opt('N', Some('N'), Some("read-bytes"), Arg::Required),
            opt('S', Some('S'), None, Arg::Required),
            opt('g', None, Some("strings"), Arg::Optional),
            opt('t', Some('t'), Some("format"), Arg::Required),
            opt('w', Some('w'), Some("width"), Arg::Optional),
            opt('T', None, Some("traditional"), Arg::No),
            opt('E', None, Some("endian"), Arg::Required),
            opt('h', None, Some("help"), Arg::No),
            opt('V', None, Some("version"), Arg::No),
        ];
        let parsed = match parse(&SPECS, &args, true) {
            Ok(p) => p,
            Err(msg) => return usage(ctx, msg).await,
        };
        o.files = parsed.operands;
        for (c, val) in parsed.opts {
            let implied = match c {
                'a' => "a",
                'b' => "o1",
                'c' => "c",
                'd' => "u2",
                'f' => "fF",
                'i' => "dI",
                'l' => "dL",
                'o' => "o2",
                's' => "d2",
                'x' => "x2",
                'v' => {
                    o.verbose = true;
                    continue;
                }
                'T' => continue,
                'h' => {
                    ctx.out(HELP).await?;
                    return Ok(0);
                }
                'V' => {
                    ctx.out("od (GNU coreutils) 9.1\n").await?;
                    return Ok(0);
                }
                _ => {
                    if let Some(st) = apply(ctx, &mut o, c, val).await {
                        return Ok(st);
                    }
                    continue;
                }
            };
            let _ = parse_type(implied, &mut o.specs);
        }
        if o.strings.is_some() && !o.specs.is_empty() {
            ctx.warn("od", "no type may be specified when dumping strings")
                .await;
            return Ok(1);
        }
        if o.specs.is_empty() {
            o.specs.push(spec(Kind::Octal, 2));
        }
        dump(ctx, o).await
    }
}

/// Applies an option with a value; `Some(status)` when it was bad (after reporting it).
async fn apply(ctx: &Context, o: &mut Opts, c: char, val: Option<String>) -> Option<i32> {
    let bytes = |v: &str| -> Result<u64, String> {
        parse_bytes(v).map_err(|why| match why {
            "invalid suffix" => format!("invalid suffix in -{c} argument {}", quote(v)),
            "too large" => format!("-{c} argument {} too large", quote(v)),
            _ => format!("invalid -{c} argument {}", quote(v)),
        })
    };
    let result = match (c, val) {
        ('A', Some(v)) => match v.as_str() {
            "d" | "o" | "x" | "n" => {
                o.radix = v.chars().next().unwrap_or('o');
                Ok(())
            }
            _ => Err(format!(
                "invalid output address radix {}; it must be one character from [doxn]",
                quote(&v)
            )),
        },
        ('j', Some(v)) => bytes(&v).map(|n| o.skip = n),
        ('N', Some(v)) => bytes(&v).map(|n| o.limit = Some(n)),
        ('S', Some(v)) => {
            bytes(&v).map(|n| o.strings = Some(usize::try_from(n).unwrap_or(usize::MAX)))
        }
        ('g', Some(v)) => match parse_bytes(&v) {
            Ok(n) => {
                o.strings = Some(usize::try_from(n).unwrap_or(usize::MAX));
                Ok(())
            }
            Err(_) => Err(format!("invalid --strings argument {}", quote(&v))),
        },
        ('g', None) => {
            o.strings = Some(3);
            Ok(())
        }
        ('t', Some(v)) => parse_type(&v, &mut o.specs),
        ('E', Some(v)) => match v.as_str() {
            "big" => {
                o.big_endian = true;
                Ok(())
            }
            "little" => {
                o.big_endian = false;
                Ok(())
            }
            _ => {
                ctx.err(format!(
                    "od: invalid argument {} for '--endian'\nValid arguments are:\n  \
                     - 'little'\n  - 'big'\nTry 'od --help' for more information.\n",
                    quote(&v)
                ))
                .await;
                return Some(1);
            }
        },
        ('w', None) => {
            o.width = Some(32);
            Ok(())
        }
        ('w', Some(v)) => match parse_bytes(&v) {
            Ok(n) => {
                o.width = Some(usize::try_from(n).unwrap_or(usize::MAX));
                Ok(())
            }
            Err(_) => Err(format!("invalid -w argument {}", quote(&v))),
        },
        _ => Ok(()),
    };
    match result {
        Ok(()) => None,
        Err(msg) => {
            ctx.warn("od", msg).await;
            Some(1)
        }
    }
}

/// The operands read one after another as one stream; a file that cannot be opened or read
/// is reported and skipped.
struct Stream {
    files: Vec<String>,
    next: usize,
    cur: Option<(String, Reader)>,
    /// Bytes the current reader gave so far.
    from_cur: usize,
    /// The reader the last bytes came from, kept past its end, and how many it gave.
    last: Option<(Reader, usize)>,
    failed: bool,
}

impl Stream {
    async fn chunk(&mut self, ctx: &Context) -> Option<bytes::Bytes> {
        loop {
            if self.cur.is_none() {
                let name = self.files.get(self.next)?.clone();
                self.next += 1;
                match Reader::open(ctx, &name).await {
                    Ok(r) => self.cur = Some((name, r)),
                    Err(e) => {
                        ctx.warn("od", format!("{}: {e}", quotef(&name))).await;
                        self.failed = true;
                    }
                }
                continue;
            }
            let (name, r) = self.cur.as_mut()?;
            match r.chunk().await {
                Ok(Some(c)) => {
                    self.last = None;
                    self.from_cur += c.len();
                    return Some(c);
                }
                Ok(None) => {
                    if let Some((_, r)) = self.cur.take() {
                        self.last = Some((r, std::mem::take(&mut self.from_cur)));
                    }
                }
                Err(e) => {
                    ctx.warn("od", format!("{}: read error: {e}", quotef(name)))
                        .await;
                    self.failed = true;
                    self.cur = None;
                }
            }
        }
    }
}

impl Stream {
    /// Hands the last `unused` bytes read back to the reader they came from (as much of
    /// them as it gave).
    async fn give_back(&mut self, unused: usize) {
        let (r, gave) = match (&mut self.cur, &mut self.last) {
            (Some((_, r)), _) => (r, self.from_cur),
            (None, Some((r, gave))) => (r, *gave),
            (None, None) => return,
        };
        r.give_back(unused.min(gave)).await;
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

async fn dump(ctx: &Context, o: Opts) -> CmdResult {
    let lcm = o
        .specs
        .iter()
        .fold(1usize, |l, s| l / gcd(l, s.size) * s.size);
    let per_line = match o.width {
        Some(w) if w != 0 && w % lcm == 0 => w,
        Some(w) => {
            ctx.warn(
                "od",
                format!("warning: invalid width {w}; using {lcm} instead"),
            )
            .await;
            lcm
        }
        None => lcm * if lcm < 16 { 16 / lcm } else { 1 },
    };
    // Bound the line buffer: a huge -w would otherwise allocate it at once.
    let _charge = match ctx.budget.charge(per_line.saturating_mul(2)) {
        Ok(c) => c,
        Err(e) => return Err(e.into()),
    };
    let width_per_block = o
        .specs
        .iter()
        .map(|s| (s.width + 1) * (per_line / s.size))
        .max()
        .unwrap_or(0);
    let files = if o.files.is_empty() {
        vec!["-".to_string()]
    } else {
        o.files.clone()
    };
    let mut stream = Stream {
        files,
        next: 0,
        cur: None,
        from_cur: 0,
        last: None,
        failed: false,
    };
    let mut out = super::util::BufOut::new(ctx);
    let mut pacer = Pacer::default();
    // Skip.
    let mut to_skip = o.skip;
    let mut pending: Vec<u8> = Vec::new();
    // Bytes at the front of `pending` already dumped.
    let mut used = 0usize;
    while to_skip > 0 {
        let Some(c) = stream.chunk(ctx).await else {
            break;
        };
        pacer.tick(ctx).await?;
        if (c.len() as u64) <= to_skip {
            to_skip -= c.len() as u64;
        } else {
            pending.extend_from_slice(&c[to_skip as usize..]);
            to_skip = 0;
        }
    }
    if to_skip > 0 {
        out.flush().await?;
        ctx.warn("od", "cannot skip past end of combined input")
            .await;
        return Ok(1);
    }
    if let Some(min) = o.strings {
        pending.drain(..used);
        strings(ctx, &o, min, &mut stream, pending, &mut out).await?;
        out.flush().await?;
        return Ok(i32::from(stream.failed));
    }
    let mut offset = o.skip;
    let mut left = o.limit;
    let mut prev: Option<Vec<u8>> = None;
    let mut star = false;
    let mut eof = false;
    loop {
        while !eof && pending.len() - used < per_line {
            // Drop what was dumped before growing, so the buffer stays about a chunk.
            pending.drain(..used);
            used = 0;
            match stream.chunk(ctx).await {
                Some(c) => pending.extend_from_slice(&c),
                None => eof = true,
            }
        }
        let mut n = (pending.len() - used).min(per_line);
        if let Some(l) = left {
            n = n.min(usize::try_from(l).unwrap_or(usize::MAX));
        }
        if n == 0 {
            break;
        }
        let block: Vec<u8> = pending[used..used + n].to_vec();
        used += n;
        if let Some(l) = left.as_mut() {
            *l -= n as u64;
        }
        pacer.tick(ctx).await?;
        if !o.verbose && n == per_line && prev.as_deref() == Some(&block[..]) {
            if !star {
                out.write(b"*\n").await?;
                star = true;
            }
        } else {
            star = false;
            let text = render(&o, &block, per_line, width_per_block, offset);
            out.write(text.as_bytes()).await?;
            prev = Some(block);
        }
        offset += n as u64;
        if n < per_line {
            break;
        }
    }
    // What -N left unread goes back to a file on standard input, as GNU od leaves it.
    stream.give_back(pending.len() - used).await;
    if o.radix != 'n' {
        out.write(format!("{}\n", address(o.radix, offset)).as_bytes())
            .await?;
    }
    out.flush().await?;
    Ok(i32::from(stream.failed))
}

/// `-S MIN`: each run of at least `min` printable bytes ended by a NUL, at its offset
/// (GNU's `dump_strings`). A run that `-N` cuts off is shown too (its offset one less, as
/// GNU counts it); one that the input's end cuts off is not.
async fn strings(
    ctx: &Context,
    o: &Opts,
    min: usize,
    stream: &mut Stream,
    mut pending: Vec<u8>,
    out: &mut super::util::BufOut<'_>,
) -> Result<(), crate::Interrupt> {
    let end = o.limit.map(|l| o.skip.saturating_add(l));
    let mut addr = o.skip;
    let mut pos = 0usize;
    let mut pacer = Pacer::default();
    let mut s: Vec<u8> = Vec::new();
    let mut charge = ctx.budget.empty_charge();
    let printable = |c: u8| (0x20..0x7f).contains(&c);
    'run: loop {
        if let Some(e) = end
            && (e < min as u64 || e - min as u64 <= addr)
        {
            break;
        }
        s.clear();
        loop {
            if s.len() >= min && end.is_some_and(|e| addr >= e) {
                break;
            }
            if pos == pending.len() {
                pacer.tick(ctx).await?;
                match stream.chunk(ctx).await {
                    Some(c) => {
                        pending.clear();
                        pending.extend_from_slice(&c);
                        pos = 0;
                    }
                    None => break 'run,
                }
            }
            let c = pending[pos];
            pos += 1;
            addr += 1;
            if c == 0 && s.len() >= min {
                break;
            }
            if !printable(c) {
                continue 'run;
            }
            if s.len() == s.capacity() && s.len() >= 4096 {
                s.reserve(s.len());
                charge = ctx.budget.charge(s.capacity())?;
            }
            s.push(c);
        }
        let mut line = Vec::with_capacity(s.len() + 12);
        if o.radix != 'n' {
            line.extend_from_slice(address(o.radix, addr - s.len() as u64 - 1).as_bytes());
            line.push(b' ');
        }
        line.extend_from_slice(&s);
        line.push(b'\n');
        out.write(&line).await?;
    }
    drop(charge);
    Ok(())
}

fn address(radix: char, n: u64) -> String {
    match radix {
        'd' => format!("{n:07}"),
        'x' => format!("{n:06x}"),
        'n' => String::new(),
        _ => format!("{n:07o}"),
    }
}

/// The lines of one block: one per format, the first after the address.
fn render(o: &Opts, block: &[u8], per_line: usize, width_per_block: usize, offset: u64) -> String {
    let mut data = block.to_vec();
    data.resize(per_line, 0);
    let mut s = String::new();
    let addr = address(o.radix, offset);
    for (k, sp) in o.specs.iter().enumerate() {
        if k == 0 {
            s.push_str(&addr);
        } else {
            s.push_str(&" ".repeat(addr.len()));
        }
        let fields = per_line / sp.size;
        let blank = (per_line - block.len()) / sp.size;
        let pad = width_per_block - sp.width * fields;
        let mut pad_left = pad;
        let mut used = 0;
        for (f, i) in (blank + 1..=fields).rev().enumerate() {
            let next_pad = pad * (i - 1) / fields;
            let w = pad_left - next_pad + sp.width;
            pad_left = next_pad;
            let v = &data[f * sp.size..(f + 1) * sp.size];
            let text = if o.big_endian && sp.size > 1 {
                let mut swapped = v.to_vec();
                swapped.reverse();
                value(sp, &swapped)
            } else {
                value(sp, v)
            };
            s.push_str(&format!("{text:>w$}"));
            used += w;
        }
        if sp.trailer {
            s.push_str(&" ".repeat(width_per_block.saturating_sub(used)));
            s.push_str("  >");
            for &b in block {
                s.push(if (0x20..0x7f).contains(&b) {
                    b as char
                } else {
                    '.'
                });
            }
            s.push('<');
        }
        s.push('\n');
    }
    s
}

const NAMES: [&str; 33] = [
    "nul", "soh", "stx", "etx", "eot", "enq", "ack", "bel", "bs", "ht", "nl", "vt", "ff", "cr",
    "so", "si", "dle", "dc1", "dc2", "dc3", "dc4", "nak", "syn", "etb", "can", "em", "sub", "esc",
    "fs", "gs", "rs", "us", "sp",
];

fn value(sp: &Spec, v: &[u8]) -> String {
    let mut le = [0u8; 8];
    le[..v.len().min(8)].copy_from_slice(&v[..v.len().min(8)]);
    let u = u64::from_le_bytes(le);
    match sp.kind {
        Kind::Named => {
            let c = v[0] & 0x7f;
            match c {
                0..=32 => NAMES[c as usize].to_string(),
                127 => "del".to_string(),
                _ => (c as char).to_string(),
            }
        }
        Kind::Char => match v[0] {
            0 => "\\0".into(),
            7 => "\\a".into(),
            8 => "\\b".into(),
            12 => "\\f".into(),
            10 => "\\n".into(),
            13 => "\\r".into(),
            9 => "\\t".into(),
            11 => "\\v".into(),
            c @ 0x20..=0x7e => (c as char).to_string(),
            c => format!("{c:03o}"),
        },
        Kind::Unsigned => u.to_string(),
        Kind::Signed => {
            let shift = 64 - 8 * sp.size as u32;
            (((u << shift) as i64) >> shift).to_string()
        }
        Kind::Octal => format!("{u:0w$o}", w = sp.width),
        Kind::Hex => format!("{u:0w$x}", w = sp.width),
        Kind::Float if sp.size == 4 => shortest(f64::from(f32::from_bits(u as u32)), true),
        Kind::Float => shortest(f64::from_bits(u), false),
    }
}

/// The shortest `%g` rendering that reads back as the same value (GNU's `ftoastr`).
fn shortest(x: f64, single: bool) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    let max = if single { 9 } else { 17 };
    let mut text = String::new();
    for p in 1..=max {
        text = format_g(x, p);
        let back_same = if single {
            text.parse::<f32>().ok() == Some(x as f32)
        } else {
            text.parse::<f64>().ok() == Some(x)
        };
        if back_same {
            break;
        }
    }
    text
}

/// C's `%.{p}g`.
pub(crate) fn format_g(x: f64, p: usize) -> String {
    let p = p.max(1);
    let e = format!("{:.*e}", p - 1, x);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let mant = trim_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn od(input: &[u8], args: &[&str]) -> (i32, String, String) {
        let inv = Invocation {
            stdin: input.to_vec(),
            ..Invocation::default()
        };
        inv.run(&Od, args).await
    }

    #[tokio::test]
    async fn default_and_char_formats() {
        assert_eq!(od(b"abc", &[]).await.1, "0000000 061141 000143\n0000003\n");
        assert_eq!(od(b"a\n", &["-An", "-c"]).await.1, "   a  \\n\n");
        assert_eq!(
            od(b"\x01 ", &["-t", "a"]).await.1,
            "0000000 soh  sp\n0000002\n"
        );
    }

    #[tokio::test]
    async fn duplicates_are_starred() {
        let data = [b'x'; 64];
        let out = od(&data, &["-t", "x1"]).await.1;
        assert_eq!(
            out,
            "0000000 78 78 78 78 78 78 78 78 78 78 78 78 78 78 78 78\n*\n0000100\n"
        );
    }

    #[tokio::test]
    async fn bad_type_and_skip() {
        let (st, _, err) = od(b"ab", &["-t", "d3"]).await;
        assert_eq!(st, 1);
        assert!(err.contains("3-byte integral type"));
        let (st, _, err) = od(b"ab", &["-j", "9"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "od: cannot skip past end of combined input\n")
        );
    }

    #[test]
    fn g_formatting() {
        assert_eq!(format_g(1.0, 1), "1");
        assert_eq!(format_g(1.875, 4), "1.875");
        assert_eq!(shortest(0.1, false), "0.1");
        assert_eq!(shortest(1e300, false), "1e+300");
        assert_eq!(parse_bytes("1k"), Ok(1024));
        assert_eq!(parse_bytes("0x10"), Ok(16));
        assert_eq!(parse_bytes("2KB"), Ok(2000));
    }
}

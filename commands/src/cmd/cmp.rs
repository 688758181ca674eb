//! `cmp`: compare two files byte by byte (GNU diffutils). Reports the first difference
//! (`a b differ: byte 6, line 2`), every difference with `-l`, or nothing with `-s`; a
//! file that ends first gives `EOF on a after byte N, line L`. Both files stream in
//! chunks side by side, so neither is held whole. Status 0 when equal, 1 when they
//! differ, 2 on trouble.

use async_trait::async_trait;
use bytes::Bytes;

use super::getopt::{Arg, Spec, opt, parse};
use super::util::{BufOut, Pacer, Reader, quote};
use crate::fs::FsResult;
use crate::{CmdResult, Command, Context};

const HELP: &str = "Usage: cmp [OPTION]... FILE1 [FILE2 [SKIP1 [SKIP2]]]
Compare two files byte by byte.

The optional SKIP1 and SKIP2 specify the number of bytes to skip
at the beginning of each file (zero by default).

Mandatory arguments to long options are mandatory for short options too.
  -b, --print-bytes          print differing bytes
  -i, --ignore-initial=SKIP         skip first SKIP bytes of both inputs
  -i, --ignore-initial=SKIP1:SKIP2  skip first SKIP1 bytes of FILE1 and
                                      first SKIP2 bytes of FILE2
  -l, --verbose              output byte numbers and differing byte values
  -n, --bytes=LIMIT          compare at most LIMIT bytes
  -s, --quiet, --silent      suppress all normal output
      --help                 display this help and exit
  -v, --version              output version information and exit

SKIP values may be followed by the following multiplicative suffixes:
kB 1000, K 1024, MB 1,000,000, M 1,048,576,
GB 1,000,000,000, G 1,073,741,824, and so on for T, P, E, Z, Y.
SKIP and LIMIT values may be in decimal, hexadecimal (0x) or octal (leading 0).

If a FILE is '-' or missing, read standard input.
Exit status is 0 if inputs are the same, 1 if different, 2 if trouble.
";

pub struct Cmp;

/// What to print about differences.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    First,
    All,
    Silent,
}

/// A count with GNU's optional multiplicative suffix: `1k`, `2MB`, `3KiB`; decimal, `0x`
/// hexadecimal or leading-`0` octal.
fn parse_count(s: &str) -> Option<u64> {
    let split = s
        .char_indices()
        .find(|(i, c)| {
            let hex = s.starts_with("0x") || s.starts_with("0X");
            !(c.is_ascii_digit() || (hex && (*i == 1 || c.is_ascii_hexdigit())))
        })
        .map_or(s.len(), |(i, _)| i);
    let (digits, suffix) = s.split_at(split);
    let n = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(hex, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    let mut chars = suffix.chars();
    let Some(unit) = chars.next() else {
        return Some(n);
    };
    let power = "kKMGTPEZY".find(unit)?.max(1) as u32;
    let base: u64 = match chars.as_str() {
        "" | "iB" => 1024,
        "B" => 1000,
        _ => return None,
    };
    n.checked_mul(base.checked_pow(power)?)
}

/// How cmp shows a byte with `-b`: printable as itself, controls as `^X`, high bytes as
/// `M-` and the low byte's form.
fn show_byte(b: u8) -> String {
    let mut s = String::new();
    let mut b = b;
    if b >= 0x80 {
        s.push_str("M-");
        b -= 0x80;
    }
    match b {
        0..=31 => {
            s.push('^');
            s.push((b + 64) as char);
        }
        127 => s.push_str("^?"),
        _ => s.push(b as char),
    }
    s
}

/// One input: its reader, the bytes read but not compared yet, and the bytes still to
/// skip.
struct Input {
    name: String,
    reader: Reader,
    buf: Bytes,
    skip: u64,
}

impl Input {
    /// Fills `buf` when it is empty; false at end-of-file. Skipped bytes are dropped here.
    async fn fill(&mut self) -> FsResult<bool> {
        while self.buf.is_empty() {
            match self.reader.chunk().await? {
                None => return Ok(false),
                Some(mut c) => {
                    let drop = self.skip.min(c.len() as u64) as usize;
                    self.skip -= drop as u64;
                    self.buf = c.split_off(drop);
                }
            }
        }
        Ok(true)
    }
}

#[async_trait]
impl Command for Cmp {
    fn name(&self) -> &'static str {
        "cmp"
    }
    fn summary(&self) -> &'static str {
        "compare two files byte by byte"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        const SPECS: [Spec; 9] = [
            opt('b', Some('b'), Some("print-bytes"), Arg::No),
            opt('i', Some('i'), Some("ignore-initial"), Arg::Required),
            opt('l', Some('l'), Some("verbose"), Arg::No),
            opt('n', Some('n'), Some("bytes"), Arg::Required),
            opt('s', Some('s'), Some("quiet"), Arg::No),
            opt('s', None, Some("silent"), Arg::No),
            opt('h', None, Some("help"), Arg::No),
            opt('v', Some('v'), Some("version"), Arg::No),
            opt('B', None, Some("print-chars"), Arg::No),
        ];
        // diffutils words the hint as a message of its own.
        let usage = |msg: String| async move {
            ctx.err(format!(
                "cmp: {msg}\ncmp: Try 'cmp --help' for more information.\n"
            ))
            .await;
            Ok(2)
        };
        let parsed = match parse(&SPECS, &args, true) {
            Ok(p) => p,
            Err(msg) => return usage(msg).await,
        };
        let mut mode = Mode::First;
        let mut bytes = false;
        let mut skips = [0u64; 2];
        let mut limit: Option<u64> = None;
        for (key, value) in &parsed.opts {
            let value = value.as_deref().unwrap_or("");
            match key {
                'b' | 'B' => bytes = true,
                'l' => {
                    if mode == Mode::Silent {
                        return usage("options -l and -s are incompatible".into()).await;
                    }
                    mode = Mode::All;
                }
                's' => {
                    if mode == Mode::All {
                        return usage("options -l and -s are incompatible".into()).await;
                    }
                    mode = Mode::Silent;
                }
                'i' => {
                    let (a, b) = value.split_once(':').unwrap_or((value, value));
                    match (parse_count(a), parse_count(b)) {
                        (Some(a), Some(b)) => skips = [a, b],
                        _ => {
                            let msg = format!("invalid --ignore-initial value {}", quote(value));
                            return usage(msg).await;
                        }
                    }
                }
                'n' => match parse_count(value) {
                    Some(n) => limit = Some(limit.map_or(n, |l| l.min(n))),
                    None => {
                        return usage(format!("invalid --bytes value {}", quote(value))).await;
                    }
                },
                'h' => {
                    ctx.out(HELP).await?;
                    return Ok(0);
                }
                'v' => {
                    ctx.out("cmp (forkbox) 3.8\n").await?;
                    return Ok(0);
                }
                _ => {}
            }
        }
        let ops = &parsed.operands;
        if ops.is_empty() {
            return usage("missing operand after 'cmp'".into()).await;
        }
        if let Some(extra) = ops.get(4) {
            return usage(format!("extra operand {}", quote(extra))).await;
        }
        for (i, op) in ops.iter().enumerate().skip(2) {
            match parse_count(op) {
                Some(n) => skips[i - 2] = n,
                None => {
                    let msg = format!("invalid --ignore-initial value {}", quote(op));
                    return usage(msg).await;
                }
            }
        }
        let names = [ops[0].clone(), ops.get(1).cloned().unwrap_or("-".into())];
        let say = mode != Mode::Silent;
        // The widest byte number `-l` can print: from the regular files' sizes and the
        // limit; a pipe could be as long as a file can be.
        let mut max_offset = limit.unwrap_or(i64::MAX as u64);
        let mut inputs = Vec::with_capacity(2);
        for (name, skip) in names.iter().zip(skips) {
            let reader = if name == "-" {
                Ok(Reader::stdin(ctx))
            } else {
                match ctx.fs.stat(&ctx.path(name)).await {
                    Ok(meta) if meta.is_dir() => Err(crate::fs::FsError::IsADirectory),
                    Ok(meta) => {
                        max_offset = max_offset.min(meta.len.saturating_sub(skip));
                        Reader::open(ctx, name).await
                    }
                    Err(e) => Err(e),
                }
            };
            match reader {
                Ok(reader) => inputs.push(Input {
                    name: name.clone(),
                    reader,
                    buf: Bytes::new(),
                    skip,
                }),
                Err(e) => {
                    if say {
                        ctx.warn("cmp", format!("{name}: {e}")).await;
                    }
                    return Ok(2);
                }
            }
        }
        let width = max_offset.to_string().len();
        let mut out = BufOut::new(ctx);
        let mut pacer = Pacer::default();
        let mut offset: u64 = 0;
        let mut newlines: u64 = 0;
        let mut last_was_newline = false;
        let mut differed = false;
        loop {
            if limit.is_some_and(|l| offset >= l) {
                break;
            }
            let mut more = [false; 2];
            for (i, input) in inputs.iter_mut().enumerate() {
                match input.fill().await {
                    Ok(m) => more[i] = m,
                    Err(e) => {
                        out.flush().await?;
                        if say {
                            ctx.warn("cmp", format!("{}: {e}", input.name)).await;
                        }
                        return Ok(2);
                    }
                }
            }
            if !more[0] || !more[1] {
                if more[0] == more[1] {
                    break;
                }
                // One input ended before the other.
                let short = &inputs[usize::from(more[0])].name;
                out.flush().await?;
                if say {
                    let msg = if offset == 0 {
                        format!("EOF on {short} which is empty")
                    } else if mode == Mode::All {
                        format!("EOF on {short} after byte {offset}")
                    } else if last_was_newline {
                        format!("EOF on {short} after byte {offset}, line {newlines}")
                    } else {
                        let line = newlines + 1;
                        format!("EOF on {short} after byte {offset}, in line {line}")
                    };
                    ctx.warn("cmp", msg).await;
                }
                return Ok(1);
            }
            let mut n = inputs[0].buf.len().min(inputs[1].buf.len());
            if let Some(l) = limit {
                n = n.min(usize::try_from(l - offset).unwrap_or(usize::MAX));
            }
            let (a, b) = (inputs[0].buf.split_to(n), inputs[1].buf.split_to(n));
            let mut start = 0;
            while start < n {
                let Some(i) = (start..n).find(|&i| a[i] != b[i]) else {
                    newlines += memchr::memchr_iter(b'\n', &a[start..n]).count() as u64;
                    last_was_newline = a[n - 1] == b'\n';
                    break;
                };
                newlines += memchr::memchr_iter(b'\n', &a[start..i]).count() as u64;
                differed = true;
                let at = offset + i as u64 + 1;
                match mode {
                    Mode::Silent => return Ok(1),
                    Mode::First => {
                        let (x, y) = (&inputs[0].name, &inputs[1].name);
                        let line = newlines + 1;
                        // In the C locale GNU says `char`, and `byte` with -b.
                        let unit = if bytes { "byte" } else { "char" };
                        let mut msg = format!("{x} {y} differ: {unit} {at}, line {line}");
                        if bytes {
                            let (p, q) = (a[i], b[i]);
                            msg.push_str(&format!(
                                " is {p:3o} {} {q:3o} {}",
                                show_byte(p),
                                show_byte(q)
                            ));
                        }
                        msg.push('\n');
                        out.write(msg.as_bytes()).await?;
                        out.flush().await?;
                        return Ok(1);
                    }
                    Mode::All => {
                        let (p, q) = (a[i], b[i]);
                        let line = if bytes {
                            let (sp, sq) = (show_byte(p), show_byte(q));
                            format!("{at:>width$} {p:3o} {sp:<4} {q:3o} {sq}\n")
                        } else {
                            format!("{at:>width$} {p:3o} {q:3o}\n")
                        };
                        out.write(line.as_bytes()).await?;
                        newlines += u64::from(a[i] == b'\n');
                        last_was_newline = a[i] == b'\n';
                        start = i + 1;
                    }
                }
            }
            offset += n as u64;
            pacer.tick(ctx).await?;
        }
        out.flush().await?;
        Ok(u8::from(differed).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[test]
    fn counts_take_bases_and_suffixes() {
        assert_eq!(parse_count("12"), Some(12));
        assert_eq!(parse_count("0x10"), Some(16));
        assert_eq!(parse_count("010"), Some(8));
        assert_eq!(parse_count("1k"), Some(1024));
        assert_eq!(parse_count("1kB"), Some(1000));
        assert_eq!(parse_count("2MiB"), Some(2 << 20));
        assert_eq!(parse_count("-1"), None);
        assert_eq!(parse_count("x"), None);
        assert_eq!(parse_count("1q"), None);
    }

    #[test]
    fn bytes_show_as_cmp_does() {
        assert_eq!(show_byte(b'a'), "a");
        assert_eq!(show_byte(0), "^@");
        assert_eq!(show_byte(127), "^?");
        assert_eq!(show_byte(0x80), "M-^@");
        assert_eq!(show_byte(0xff), "M-^?");
        assert_eq!(show_byte(0xe9), "M-i");
    }

    #[tokio::test]
    async fn first_difference_and_eof() {
        let inv = Invocation {
            fs: MemFs::with_files(&[("/a", "abc\ndef\n"), ("/b", "abc\ndxf\n"), ("/c", "abc\n")]),
            ..Invocation::default()
        };
        let (st, out, _) = inv.run(&Cmp, &["a", "b"]).await;
        assert_eq!((st, out.as_str()), (1, "a b differ: char 6, line 2\n"));
        let (st, _, err) = inv.run(&Cmp, &["c", "a"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "cmp: EOF on c after byte 4, line 1\n")
        );
        let (st, out, _) = inv.run(&Cmp, &["-l", "a", "b"]).await;
        assert_eq!((st, out.as_str()), (1, "6 145 170\n"));
        let (st, out, err) = inv.run(&Cmp, &["-s", "a", "nope"]).await;
        assert_eq!((st, out.as_str(), err.as_str()), (2, "", ""));
        assert_eq!(inv.run(&Cmp, &["a", "a"]).await.0, 0);
    }
}

//! `numfmt`: convert numbers to and from human-readable strings (SI and IEC suffixes),
//! operands or standard input line by line.

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, MAX_LINE, Pacer, Reader, quote};
use crate::{CmdResult, Command, Context, parse_args};

/// Reformat NUMBER(s), or the numbers from standard input if none are specified.
#[derive(Parser, Debug)]
#[command(name = "numfmt")]
struct Args {
    /// Use X instead of whitespace for field delimiter.
    #[arg(short = 'd', long, value_name = "X")]
    delimiter: Option<String>,
    /// Replace the numbers in these input fields (default 1): N, N-M, -M, N-, lists.
    #[arg(long, value_name = "FIELDS")]
    field: Option<String>,
    /// Use printf style floating-point FORMAT.
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// Auto-scale input numbers to UNITs (none, auto, si, iec, iec-i).
    #[arg(long, value_name = "UNIT")]
    from: Option<String>,
    /// Print (without converting) the first N header lines (default 1).
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "1")]
    header: Option<String>,
    /// Failure mode for invalid numbers: abort, fail, warn, ignore.
    #[arg(long, value_name = "MODE")]
    invalid: Option<String>,
    /// Use locale-defined grouping of digits, e.g. 1,000,000 (which means it has no
    /// effect in the C/POSIX locale, the session's).
    #[arg(long)]
    grouping: bool,
    /// Pad the output to N characters; positive N right-aligns, negative left-aligns.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    padding: Option<String>,
    /// Use METHOD for rounding when scaling: up, down, from-zero, towards-zero, nearest.
    #[arg(long, value_name = "METHOD")]
    round: Option<String>,
    /// Add SUFFIX to output numbers, and accept optional SUFFIX in input numbers.
    #[arg(long, value_name = "SUFFIX")]
    suffix: Option<String>,
    /// Auto-scale output numbers to UNITs.
    #[arg(long, value_name = "UNIT")]
    to: Option<String>,
    /// Line delimiter is NUL, not newline.
    #[arg(short = 'z', long = "zero-terminated")]
    zero: bool,
    /// NUMBERs.
    numbers: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Unit {
    None,
    Auto,
    Si,
    Iec,
    IecI,
}

fn unit(s: &str) -> Option<Unit> {
    Some(match s {
        "none" => Unit::None,
        "auto" => Unit::Auto,
        "si" => Unit::Si,
        "iec" => Unit::Iec,
        "iec-i" => Unit::IecI,
        _ => return None,
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Round {
    Up,
    Down,
    FromZero,
    TowardsZero,
    Nearest,
}

impl Round {
    fn apply(self, x: f64) -> f64 {
        match self {
            Round::Up => x.ceil(),
            Round::Down => x.floor(),
            Round::FromZero => x.signum() * x.abs().ceil(),
            Round::TowardsZero => x.trunc(),
            Round::Nearest => x.round(),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Invalid {
    Abort,
    Fail,
    Warn,
    Ignore,
}

const SUFFIXES: &[u8] = b"KMGTPEZYRQ";

/// A parsed printf-style `--format`: prefix, flags, width, precision, suffix.
#[derive(Default)]
struct Format {
    prefix: String,
    left: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
    suffix: String,
}

fn parse_format(s: &str) -> Result<Format, String> {
    let bad = || format!("invalid format {}", quote(s));
    let mut f = Format::default();
    let mut i = 0;
    let b = s.as_bytes();
    while i < b.len() {
        if b[i] == b'%' {
            if b.get(i + 1) == Some(&b'%') {
                f.prefix.push('%');
                i += 2;
                continue;
            }
            break;
        }
        f.prefix.push(b[i] as char);
        i += 1;
    }
    if i >= b.len() {
        return Err(format!("format {} has no % directive", quote(s)));
    }
    i += 1;
    while i < b.len() && matches!(b[i], b'-' | b'0' | b'\'' | b' ' | b'+') {
        match b[i] {
            b'-' => f.left = true,
            b'0' => f.zero = true,
            _ => {}
        }
        i += 1;
    }
    let w0 = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    f.width = s[w0..i].parse().unwrap_or(0);
    if b.get(i) == Some(&b'.') {
        i += 1;
        let p0 = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        f.precision = Some(s[p0..i].parse().unwrap_or(0));
    }
    if b.get(i) != Some(&b'f') {
        return Err(bad());
    }
    f.suffix = s[i + 1..].replace("%%", "%");
    if f.suffix.contains('%') {
        return Err(format!("format {} has too many % directives", quote(s)));
    }
    Ok(f)
}

struct Numfmt {
    from: Unit,
    to: Unit,
    round: Round,
    suffix: String,
    padding: i64,
    format: Option<Format>,
}

impl Numfmt {
    /// Parses one number with its unit suffix.
    fn parse(&self, s: &str) -> Result<(f64, usize, bool), String> {
        let s = s
            .strip_suffix(self.suffix.as_str())
            .filter(|_| !self.suffix.is_empty())
            .unwrap_or(s);
        let b = s.as_bytes();
        let mut i = 0;
        if b.first() == Some(&b'-') {
            i += 1;
        }
        let d0 = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let mut decimals = 0;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let f0 = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            decimals = i - f0;
        }
        if i == d0 || (i == d0 + 1 && b[d0] == b'.') {
            return Err(format!("invalid number: {}", quote(s)));
        }
        let v: f64 = s[..i]
            .parse()
            .map_err(|_| format!("invalid number: {}", quote(s)))?;
        let rest = &s[i..];
        if rest.is_empty() {
            return Ok((v, decimals, false));
        }
        // coreutils 9.1 reads suffixes up to Y; R and Q came later.
        let Some(p) = SUFFIXES[..8]
            .iter()
            .position(|c| rest.as_bytes()[0] == *c || (*c == b'K' && rest.as_bytes()[0] == b'k'))
        else {
            return Err(format!("invalid suffix in input: {}", quote(s)));
        };
        if self.from == Unit::None {
            return Err(format!(
                "rejecting suffix in input: {} (consider using --from)",
                quote(s)
            ));
        }
        let with_i = &rest[1..] == "i";
        if !rest[1..].is_empty() && !with_i {
            return Err(format!(
                "invalid suffix in input {}: {}",
                quote(s),
                quote(&rest[1..])
            ));
        }
        let base: f64 = match (self.from, with_i) {
            (Unit::Si, false) => 1000.0,
            (Unit::Iec, false) => 1024.0,
            (Unit::IecI, true) | (Unit::Auto, true) => 1024.0,
            (Unit::Auto, false) => 1000.0,
            (Unit::IecI, false) => {
                return Err(format!(
                    "missing 'i' suffix in input: {} (e.g. Ki/Mi/Gi)",
                    quote(s)
                ));
            }
            _ => return Err(format!("invalid suffix in input {}: 'i'", quote(s))),
        };
        Ok((v * base.powi(p as i32 + 1), decimals, true))
    }

    fn render(&self, v: f64, decimals: usize, scaled_in: bool) -> String {
        let prec = self.format.as_ref().and_then(|f| f.precision);
        let body = match self.to {
            Unit::None | Unit::Auto => match prec {
                Some(p) => {
                    let m = 10f64.powi(p as i32);
                    format!("{:.p$}", self.round.apply(v * m) / m)
                }
                None if scaled_in => format!("{:.0}", self.round.apply(v)),
                None => format!("{v:.decimals$}"),
            },
            to => {
                let base = if to == Unit::Si { 1000.0 } else { 1024.0 };
                let mut x = v;
                let mut power = 0usize;
                while x.abs() >= base && power < SUFFIXES.len() {
                    x /= base;
                    power += 1;
                }
                if power == 0 {
                    match prec {
                        Some(p) => format!("{x:.p$}"),
                        None => format!("{x:.0}"),
                    }
                } else {
                    let p = prec.unwrap_or(if x.abs() < 10.0 { 1 } else { 0 });
                    let m = 10f64.powi(p as i32);
                    let mut r = self.round.apply(x * m) / m;
                    if r.abs() >= base && power < SUFFIXES.len() {
                        r /= base;
                        power += 1;
                        let m = 10f64.powi(prec.unwrap_or(1) as i32);
                        r = self.round.apply(r * m) / m;
                    }
                    let shown = if prec.is_none() && r.abs() >= 10.0 {
                        format!("{r:.0}")
                    } else {
                        format!("{r:.p$}", p = prec.unwrap_or(1))
                    };
                    let i = if to == Unit::IecI { "i" } else { "" };
                    format!("{shown}{}{i}", SUFFIXES[power - 1] as char)
                }
            }
        };
        let mut s = body + &self.suffix;
        if let Some(f) = &self.format {
            if s.len() < f.width {
                let pad = f.width - s.len();
                s = if f.left {
                    s + &" ".repeat(pad)
                } else if f.zero && !s.starts_with('-') {
                    "0".repeat(pad) + &s
                } else {
                    " ".repeat(pad) + &s
                };
            }
            s = format!("{}{s}{}", f.prefix, f.suffix);
        }
        let w = self.padding.unsigned_abs() as usize;
        if s.len() < w {
            if self.padding < 0 {
                s = format!("{s:<w$}");
            } else {
                s = format!("{s:>w$}");
            }
        }
        s
    }

    fn convert(&self, s: &str) -> Result<String, String> {
        let (v, d, scaled) = self.parse(s)?;
        Ok(self.render(v, d, scaled))
    }
}

/// Which fields to convert: ranges of 1-based field numbers.
fn parse_fields(s: &str) -> Option<Vec<(usize, usize)>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let r = match part.split_once('-') {
            None => {
                let n: usize = part.parse().ok().filter(|n| *n > 0)?;
                (n, n)
            }
            Some(("", b)) => (1, b.parse().ok()?),
            Some((a, "")) => (a.parse().ok().filter(|n| *n > 0)?, usize::MAX),
            Some((a, b)) => (a.parse().ok().filter(|n| *n > 0)?, b.parse().ok()?),
        };
        out.push(r);
    }
    Some(out)
}

pub struct NumfmtCmd;

#[async_trait]
impl Command for NumfmtCmd {
    fn name(&self) -> &'static str {
        "numfmt"
    }
    fn summary(&self) -> &'static str {
        "convert numbers to and from human-readable strings"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mut units = [Unit::None, Unit::None];
        for (i, (v, what)) in [(&args.from, "--from"), (&args.to, "--to")]
            .into_iter()
            .enumerate()
        {
            if let Some(v) = v {
                match unit(v).filter(|u| i == 0 || *u != Unit::Auto) {
                    Some(u) => units[i] = u,
                    None => {
                        ctx.err(format!(
                            "numfmt: invalid argument {} for '{what}'\nTry 'numfmt --help' for more information.\n",
                            quote(v)
                        ))
                        .await;
                        return Ok(1);
                    }
                }
            }
        }
        let round = match args.round.as_deref().unwrap_or("from-zero") {
            "up" => Round::Up,
            "down" => Round::Down,
            "from-zero" => Round::FromZero,
            "towards-zero" => Round::TowardsZero,
            "nearest" => Round::Nearest,
            r => {
                ctx.err(format!(
                    "numfmt: invalid argument {} for '--round'\nTry 'numfmt --help' for more information.\n",
                    quote(r)
                ))
                .await;
                return Ok(1);
            }
        };
        let invalid = match args.invalid.as_deref().unwrap_or("abort") {
            "abort" => Invalid::Abort,
            "fail" => Invalid::Fail,
            "warn" => Invalid::Warn,
            "ignore" => Invalid::Ignore,
            r => {
                ctx.err(format!(
                    "numfmt: invalid argument {} for '--invalid'\nTry 'numfmt --help' for more information.\n",
                    quote(r)
                ))
                .await;
                return Ok(1);
            }
        };
        let padding = match args.padding.as_deref().map(str::parse::<i64>) {
            None => 0,
            Some(Ok(n)) if n != 0 => n,
            Some(_) => {
                let p = args.padding.clone().unwrap_or_default();
                ctx.warn("numfmt", format!("invalid padding value {}", quote(&p)))
                    .await;
                return Ok(1);
            }
        };
        let format = match args.format.as_deref().map(parse_format) {
            None => None,
            Some(Ok(f)) => Some(f),
            Some(Err(msg)) => {
                ctx.warn("numfmt", msg).await;
                return Ok(1);
            }
        };
        let fields = match parse_fields(args.field.as_deref().unwrap_or("1")) {
            Some(f) => f,
            None => {
                let f = args.field.clone().unwrap_or_default();
                ctx.warn("numfmt", format!("invalid field value {}", quote(&f)))
                    .await;
                return Ok(1);
            }
        };
        let delim = match args.delimiter.as_deref() {
            None => None,
            Some(d) if d.chars().count() == 1 => d.chars().next(),
            Some(d) => {
                ctx.warn(
                    "numfmt",
                    format!("the delimiter must be a single character: {}", quote(d)),
                )
                .await;
                return Ok(1);
            }
        };
        let header = match args.header.as_deref().map(str::parse::<u64>) {
            None => 0,
            Some(Ok(n)) if n > 0 => n,
            Some(_) => {
                let h = args.header.clone().unwrap_or_default();
                ctx.warn("numfmt", format!("invalid header value {}", quote(&h)))
                    .await;
                return Ok(1);
            }
        };
        let nf = Numfmt {
            from: units[0],
            to: units[1],
            round,
            suffix: args.suffix.clone().unwrap_or_default(),
            padding,
            format,
        };
        let conv = LineConv {
            nf: &nf,
            fields: &fields,
            delim,
            invalid,
            auto_pad: padding == 0 && delim.is_none() && args.numbers.is_empty(),
        };
        let eol = if args.zero { 0u8 } else { b'\n' };
        let mut out = BufOut::new(ctx);
        let mut failed = false;
        if !args.numbers.is_empty() {
            for n in &args.numbers {
                match conv.line(ctx, n).await {
                    Ok(s) => {
                        out.write(s.as_bytes()).await?;
                        out.write(&[eol]).await?;
                    }
                    Err((st, partial)) => {
                        if st == 2 && invalid == Invalid::Abort {
                            out.write(partial.as_bytes()).await?;
                            out.flush().await?;
                            return Ok(2);
                        }
                        out.flush().await?;
                        failed |= st == 2;
                        out.write(n.as_bytes()).await?;
                        out.write(&[eol]).await?;
                    }
                }
            }
            out.flush().await?;
            return Ok(if failed { 2 } else { 0 });
        }
        let mut reader = Reader::stdin(ctx);
        let mut pacer = Pacer::default();
        let mut lineno = 0u64;
        loop {
            let line = match reader.record(eol, MAX_LINE).await? {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    out.flush().await?;
                    ctx.warn("numfmt", format!("-: {e}")).await;
                    return Ok(2);
                }
            };
            lineno += 1;
            let body = line.strip_suffix(&[eol]).unwrap_or(&line);
            let text = String::from_utf8_lossy(body).into_owned();
            let converted = if lineno <= header {
                Ok(text.clone())
            } else {
                out.flush().await?;
                conv.line(ctx, &text).await
            };
            match converted {
                Ok(s) => out.write(s.as_bytes()).await?,
                Err((st, partial)) => {
                    if st == 2 && invalid == Invalid::Abort {
                        out.write(partial.as_bytes()).await?;
                        out.flush().await?;
                        return Ok(2);
                    }
                    failed |= st == 2;
                    out.write(body).await?;
                }
            }
            out.write(&[eol]).await?;
            pacer.tick(ctx).await?;
        }
        out.flush().await?;
        Ok(if failed { 2 } else { 0 })
    }
}

struct LineConv<'a> {
    nf: &'a Numfmt,
    fields: &'a [(usize, usize)],
    delim: Option<char>,
    invalid: Invalid,
    /// GNU's auto-padding (input lines split at blanks, no `--padding`): a converted
    /// field is as wide as it was.
    auto_pad: bool,
}

impl LineConv<'_> {
    /// Converts the selected fields of a line. `Err(2)` after an invalid number that
    /// fails the command, `Err(0)` for one that leaves the line as it is; with what was
    /// written before the bad field (GNU's output when it aborts there).
    async fn line(&self, ctx: &Context, line: &str) -> Result<String, (i32, String)> {
        // Fields with the separator text before each.
        let mut parts: Vec<(String, String)> = Vec::new();
        match self.delim {
            Some(d) => {
                for (i, f) in line.split(d).enumerate() {
                    let pre = if i == 0 { String::new() } else { d.to_string() };
                    parts.push((pre, f.to_string()));
                }
            }
            None => {
                // GNU's `process_line`: a field is the blanks before a word and the word;
                // one blank after it is the separator, written back as a space.
                let b = line.as_bytes();
                let blank = |c: u8| c == b' ' || c == b'\t';
                let mut pos = 0;
                loop {
                    let start = pos;
                    while pos < b.len() && blank(b[pos]) {
                        pos += 1;
                    }
                    while pos < b.len() && !blank(b[pos]) {
                        pos += 1;
                    }
                    let pre = if start == 0 { "" } else { " " };
                    parts.push((pre.to_string(), line[start..pos].to_string()));
                    if pos == b.len() {
                        break;
                    }
                    pos += 1;
                }
            }
        }
        let mut out = String::new();
        let mut partial = String::new();
        let mut result_err = None;
        for (i, (pre, f)) in parts.iter().enumerate() {
            let n = i + 1;
            let selected = self.fields.iter().any(|(a, b)| (*a..=*b).contains(&n));
            if !selected || result_err.is_some() {
                out.push_str(pre);
                out.push_str(f);
                continue;
            }
            let number = if self.delim.is_none() {
                f.trim_start_matches([' ', '\t'])
            } else {
                f.as_str()
            };
            match self.nf.convert(number) {
                Ok(s) => {
                    out.push_str(pre);
                    // Auto-padding: as wide as the field was, blanks included, when it
                    // had any (a first field that starts the line has none).
                    let blanks = !pre.is_empty() || f.starts_with([' ', '\t']);
                    if self.auto_pad && blanks && s.len() < f.len() {
                        out.push_str(&" ".repeat(f.len() - s.len()));
                    }
                    out.push_str(&s);
                }
                Err(msg) => {
                    match self.invalid {
                        Invalid::Ignore => {}
                        _ => ctx.warn("numfmt", &msg).await,
                    }
                    result_err = Some(match self.invalid {
                        Invalid::Abort | Invalid::Fail => 2,
                        _ => 0,
                    });
                    // What GNU wrote before it stopped on this field (under --invalid=abort).
                    out.push_str(pre);
                    partial = out.clone();
                    out.push_str(f);
                }
            }
        }
        match result_err {
            Some(st) => Err((st, partial)),
            None => Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn numfmt(stdin: &str, args: &[&str]) -> (i32, String, String) {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(&NumfmtCmd, args)
        .await
    }

    #[tokio::test]
    async fn scales_like_gnu() {
        let o = numfmt(
            "",
            &[
                "--to=si",
                "1000",
                "1500",
                "999",
                "1000000",
                "123456789",
                "999999",
            ],
        )
        .await
        .1;
        assert_eq!(o, "1.0K\n1.5K\n999\n1.0M\n124M\n1.0M\n");
        let o = numfmt("", &["--to=iec", "1024", "2047", "9999", "10239", "100"])
            .await
            .1;
        assert_eq!(o, "1.0K\n2.0K\n9.8K\n10K\n100\n");
        assert_eq!(numfmt("", &["--to=iec-i", "4096"]).await.1, "4.0Ki\n");
        assert_eq!(
            numfmt("", &["--from=si", "1K", "2.5M"]).await.1,
            "1000\n2500000\n"
        );
        assert_eq!(
            numfmt("", &["--from=auto", "1Ki", "1K"]).await.1,
            "1024\n1000\n"
        );
        assert_eq!(
            numfmt("0.5\n1.5\n2.5\n-1500\n", &["--to=si"]).await.1,
            "0\n2\n2\n-1.5K\n"
        );
        assert_eq!(
            numfmt("", &["--to=si", "--suffix=B", "2000"]).await.1,
            "2.0KB\n"
        );
        assert_eq!(
            numfmt("", &["--to=si", "--round=down", "1999"]).await.1,
            "1.9K\n"
        );
    }

    #[tokio::test]
    async fn fields_formats_and_padding() {
        assert_eq!(
            numfmt("a 2000 b\n", &["--field=2", "--to=si"]).await.1,
            "a 2.0K b\n"
        );
        assert_eq!(
            numfmt("x,3000\n", &["-d,", "--field=2", "--to=si"]).await.1,
            "x,3.0K\n"
        );
        assert_eq!(
            numfmt("", &["--format=%08.2f", "3.14159"]).await.1,
            "00003.15\n"
        );
        assert_eq!(numfmt("", &["--padding=8", "12"]).await.1, "      12\n");
        assert_eq!(
            numfmt("  12  34\n", &["--field=2", "--padding=5"]).await.1,
            "  12    34\n"
        );
        assert_eq!(
            numfmt("h 1\n2000\n", &["--header", "--to=si"]).await.1,
            "h 1\n2.0K\n"
        );
    }

    #[tokio::test]
    async fn invalid_numbers() {
        let (st, out, err) = numfmt("", &["abc"]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (2, "", "numfmt: invalid number: 'abc'\n")
        );
        let (st, out, _) = numfmt("", &["--invalid=warn", "abc", "5"]).await;
        assert_eq!((st, out.as_str()), (0, "abc\n5\n"));
        let (st, _, err) = numfmt("1K\n", &[]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                2,
                "numfmt: rejecting suffix in input: '1K' (consider using --from)\n"
            )
        );
    }
}

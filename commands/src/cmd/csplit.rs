//! `csplit`: split a file into pieces at line numbers (`N`) and at lines matching basic
//! regular expressions (`/RE/[+-OFFSET]` starts a piece, `%RE%[OFFSET]` skips to a line),
//! a pattern repeated with `{N}` or `{*}`, as GNU coreutils does it: pieces are
//! `xx00`, `xx01`… (`-f PREFIX`, `-n DIGITS`), each piece's size is printed (not with
//! `-s`), empty pieces are dropped with `-z`, and on an error the pieces made are removed
//! (kept with `-k`). The input is read whole (charged to the session's budget).

use async_trait::async_trait;

use super::getopt::{Arg, Spec, opt, parse};
use super::textin::slurp;
use super::util::{quote, usage_error};
use crate::fs::WriteMode;
use crate::gnu_regex::{self, Dialect, Flags, Regex};
use crate::{CmdResult, Command, Context, Interrupt};

const SPECS: &[Spec] = &[
    opt('b', Some('b'), Some("suffix-format"), Arg::Required),
    opt('f', Some('f'), Some("prefix"), Arg::Required),
    opt('n', Some('n'), Some("digits"), Arg::Required),
    opt('s', Some('s'), Some("quiet"), Arg::No),
    opt('s', None, Some("silent"), Arg::No),
    opt('z', Some('z'), Some("elide-empty-files"), Arg::No),
    opt('k', Some('k'), Some("keep-files"), Arg::No),
    opt('h', None, Some("help"), Arg::No),
    opt('V', None, Some("version"), Arg::No),
];

const HELP: &str = "Usage: csplit [OPTION]... FILE PATTERN...
Output pieces of FILE separated by PATTERN(s) to files 'xx00', 'xx01', ...,
and output byte counts of each piece to standard output.

Read standard input if FILE is -

  -b, --suffix-format=FORMAT  use sprintf FORMAT instead of %02d
  -f, --prefix=PREFIX        use PREFIX instead of 'xx'
  -k, --keep-files           do not remove output files on errors
  -n, --digits=DIGITS        use specified number of digits instead of 2
  -s, --quiet, --silent      do not print counts of output file sizes
  -z, --elide-empty-files    suppress empty output files
      --help        display this help and exit

Each PATTERN may be:
  INTEGER            copy up to but not including specified line number
  /REGEXP/[OFFSET]   copy up to but not including a matching line
  %REGEXP%[OFFSET]   skip to, but not including a matching line
  {INTEGER}          repeat the previous pattern specified number of times
  {*}                repeat the previous pattern as many times as possible

A line OFFSET is an integer optionally preceded by '+' or '-'
";

enum Pat {
    Line(usize),
    Re {
        text: String,
        re: Box<Regex>,
        offset: i64,
        skip: bool,
    },
}

/// How often a pattern applies: once plus `extra` more times (`None`: `{*}`).
struct Step {
    pat: Pat,
    extra: Option<usize>,
}

pub struct Csplit;

struct Out<'c> {
    ctx: &'c Context,
    prefix: String,
    digits: usize,
    /// `-b FORMAT`: the piece number through a printf conversion, instead of `digits`.
    suffix: Option<Suffix>,
    quiet: bool,
    elide: bool,
    next: usize,
    made: Vec<String>,
}

impl Out<'_> {
    /// Writes `lines` as the next piece.
    async fn piece(&mut self, lines: &[&[u8]]) -> Result<Result<(), String>, Interrupt> {
        let size: usize = lines.iter().map(|l| l.len()).sum();
        if self.elide && size == 0 {
            return Ok(Ok(()));
        }
        let name = match &self.suffix {
            Some(f) => format!("{}{}", self.prefix, f.format(self.next as u64)),
            None => format!("{}{:0w$}", self.prefix, self.next, w = self.digits),
        };
        self.next += 1;
        let path = self.ctx.path(&name);
        let r = async {
            let mut h = self.ctx.fs.open_write(&path, WriteMode::Truncate).await?;
            for l in lines {
                h.write(l).await?;
            }
            h.close().await
        }
        .await;
        if let Err(e) = r {
            return Ok(Err(format!("{}: {e}", quote(&name))));
        }
        self.made.push(path);
        if !self.quiet {
            self.ctx.out(format!("{size}\n")).await?;
        }
        Ok(Ok(()))
    }
}

/// `-b FORMAT`: text around one printf conversion of an unsigned number (`d`, `i`, `u`,
/// `o`, `x`, `X`, with the flags `-`, `0`, `#`, `'`, a width and a precision), checked as
/// GNU csplit checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Suffix {
    before: String,
    after: String,
    left: bool,
    zero: bool,
    alt: bool,
    width: usize,
    precision: Option<usize>,
    conv: char,
}

impl Suffix {
    fn parse(fmt: &str) -> Result<Suffix, String> {
        let chars: Vec<char> = fmt.chars().collect();
        let mut spec: Option<Suffix> = None;
        let mut text = String::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            i += 1;
            if c != '%' {
                text.push(c);
                continue;
            }
            if chars.get(i) == Some(&'%') {
                text.push('%');
                i += 1;
                continue;
            }
            if spec.is_some() {
                return Err("too many % conversion specifications in suffix".into());
            }
            let (mut left, mut zero, mut alt, mut thousands) = (false, false, false, false);
            while let Some(&f) = chars.get(i) {
                match f {
                    '-' => left = true,
                    '0' => zero = true,
                    '#' => alt = true,
                    '\'' => thousands = true,
                    _ => break,
                }
                i += 1;
            }
            let digits = |i: &mut usize| {
                let start = *i;
                while chars.get(*i).is_some_and(char::is_ascii_digit) {
                    *i += 1;
                }
                chars[start..*i].iter().collect::<String>()
            };
            let width = digits(&mut i).parse().unwrap_or(0);
            let precision = if chars.get(i) == Some(&'.') {
                i += 1;
                Some(digits(&mut i).parse().unwrap_or(0))
            } else {
                None
            };
            let conv = match chars.get(i) {
                None => return Err("missing conversion specifier in suffix".into()),
                Some(&c) => c,
            };
            i += 1;
            let alt_ok = match conv {
                'd' | 'i' | 'u' => false,
                'o' | 'x' | 'X' => true,
                c if c.is_ascii_graphic() || c == ' ' => {
                    return Err(format!("invalid conversion specifier in suffix: {c}"));
                }
                c => {
                    return Err(format!(
                        "invalid conversion specifier in suffix: \\{:03o}",
                        c as u32 & 0xff
                    ));
                }
            };
            if (alt && !alt_ok) || (thousands && alt_ok) {
                let flag = if alt && !alt_ok { '#' } else { '\'' };
                return Err(format!(
                    "invalid flags in conversion specification: %{flag}{conv}"
                ));
            }
            spec = Some(Suffix {
                before: std::mem::take(&mut text),
                after: String::new(),
                left,
                zero,
                alt,
                width,
                precision,
                conv,
            });
        }
        match spec {
            Some(mut s) => {
                s.after = text;
                Ok(s)
            }
            None => Err("missing % conversion specification in suffix".into()),
        }
    }

    /// The suffix of piece `n`, as `sprintf` writes it.
    fn format(&self, n: u64) -> String {
        let mut digits = match self.conv {
            'o' => format!("{n:o}"),
            'x' => format!("{n:x}"),
            'X' => format!("{n:X}"),
            _ => n.to_string(),
        };
        if self.precision == Some(0) && n == 0 {
            digits.clear();
        }
        if let Some(p) = self.precision
            && digits.len() < p
        {
            digits.insert_str(0, &"0".repeat(p - digits.len()));
        }
        let prefix = match self.conv {
            'o' if self.alt && !digits.starts_with('0') => "0",
            'x' if self.alt && n != 0 => "0x",
            'X' if self.alt && n != 0 => "0X",
            _ => "",
        };
        let len = prefix.len() + digits.len();
        let pad = self.width.saturating_sub(len);
        let body = if self.left {
            format!("{prefix}{digits}{}", " ".repeat(pad))
        } else if self.zero && self.precision.is_none() {
            format!("{prefix}{}{digits}", "0".repeat(pad))
        } else {
            format!("{}{prefix}{digits}", " ".repeat(pad))
        };
        format!("{}{body}{}", self.before, self.after)
    }
}

fn parse_pattern(arg: &str) -> Result<Pat, String> {
    if let Some(rest) = arg.strip_prefix('/').or_else(|| arg.strip_prefix('%')) {
        let delim = arg.as_bytes()[0] as char;
        let Some(end) = rest.rfind(delim) else {
            return Err(format!(
                "{}: closing delimiter '{delim}' missing",
                quote(arg)
            ));
        };
        let (text, off) = (&rest[..end], &rest[end + 1..]);
        let offset = if off.is_empty() {
            0
        } else {
            off.trim_start_matches('+')
                .parse::<i64>()
                .ok()
                .filter(|_| !off.starts_with("+-") && !off.starts_with("++"))
                .ok_or_else(|| format!("{}: integer expected after delimiter", quote(arg)))?
        };
        let re = gnu_regex::compile(text, Dialect::Basic, Flags::default())
            .map_err(|e| format!("{}: {}", quote(arg), e.msg))?;
        return Ok(Pat::Re {
            text: arg.to_string(),
            re: Box::new(re),
            offset,
            skip: delim == '%',
        });
    }
    match arg.parse::<usize>() {
        Ok(0) => Err(format!("{arg}: line number must be greater than zero")),
        Ok(n) => Ok(Pat::Line(n)),
        Err(_) => Err(format!("{}: invalid pattern", quote(arg))),
    }
}

#[async_trait]
impl Command for Csplit {
    fn name(&self) -> &'static str {
        "csplit"
    }
    fn summary(&self) -> &'static str {
        "split a file into sections determined by context lines"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        // Patterns such as `-5` offsets are operands; GNU stops option parsing at them too
        // only after FILE, so permute as getopt does.
        let p = match parse(SPECS, &args, true) {
            Ok(p) => p,
            Err(msg) => return Ok(usage_error(ctx, "csplit", &msg).await),
        };
        if p.has('h') {
            ctx.out(HELP).await?;
            return Ok(0);
        }
        if p.has('V') {
            ctx.out("csplit (GNU coreutils) 9.1\n").await?;
            return Ok(0);
        }
        let digits = match p.last('n') {
            None => 2,
            Some(d) => match d.parse::<usize>() {
                Ok(n) if n <= 64 => n,
                _ => {
                    ctx.warn("csplit", format!("invalid number: {}", quote(d)))
                        .await;
                    return Ok(1);
                }
            },
        };
        let [file, pats @ ..] = p.operands.as_slice() else {
            return Ok(usage_error(ctx, "csplit", "missing operand").await);
        };
        if pats.is_empty() {
            return Ok(usage_error(
                ctx,
                "csplit",
                &format!("missing operand after {}", quote(file)),
            )
            .await);
        }
        let suffix = match p.last('b').map(Suffix::parse) {
            None => None,
            Some(Ok(f)) => Some(f),
            Some(Err(msg)) => {
                ctx.warn("csplit", msg).await;
                return Ok(1);
            }
        };
        let mut steps: Vec<Step> = Vec::new();
        for a in pats {
            if let Some(inner) = a.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
                let Some(last) = steps.last_mut() else {
                    ctx.warn("csplit", format!("{}: invalid pattern", quote(a)))
                        .await;
                    return Ok(1);
                };
                if inner == "*" {
                    last.extra = None;
                } else {
                    match inner.parse::<usize>() {
                        Ok(n) => last.extra = Some(n),
                        Err(_) => {
                            ctx.warn(
                                "csplit",
                                format!("{}: integer required between '{{' and '}}'", quote(a)),
                            )
                            .await;
                            return Ok(1);
                        }
                    }
                }
                continue;
            }
            match parse_pattern(a) {
                Ok(pat) => steps.push(Step {
                    pat,
                    extra: Some(0),
                }),
                Err(msg) => {
                    ctx.warn("csplit", msg).await;
                    return Ok(1);
                }
            }
        }
        let mut charge = ctx.budget.empty_charge();
        let Some(data) = slurp(ctx, "csplit", file, &mut charge).await? else {
            return Ok(1);
        };
        let lines: Vec<&[u8]> = data.split_inclusive(|b| *b == b'\n').collect();
        let mut out = Out {
            ctx,
            prefix: p.last('f').unwrap_or("xx").to_string(),
            digits,
            suffix,
            quiet: p.has('s'),
            elide: p.has('z'),
            next: 0,
            made: Vec::new(),
        };
        let keep = p.has('k');
        match split(ctx, &lines, &steps, &mut out).await? {
            Ok(()) => Ok(0),
            Err(msg) => {
                ctx.warn("csplit", msg).await;
                if !keep {
                    for f in &out.made {
                        let _ = ctx.fs.unlink(f).await;
                    }
                }
                Ok(1)
            }
        }
    }
}

/// Applies the patterns; the error message of the first that fails.
async fn split(
    ctx: &Context,
    lines: &[&[u8]],
    steps: &[Step],
    out: &mut Out<'_>,
) -> Result<Result<(), String>, Interrupt> {
    // `start`: index of the first line not yet written or skipped; `current`: GNU's
    // current line (1-based; a search starts after it).
    let mut start = 0usize;
    let mut current = 0usize;
    for step in steps {
        let mut round = 0usize;
        loop {
            if let Some(extra) = step.extra
                && round > extra
            {
                break;
            }
            let forever = step.extra.is_none();
            round += 1;
            ctx.checkpoint().await?;
            match &step.pat {
                Pat::Line(n) => {
                    let target = n * round;
                    if forever && target > lines.len() {
                        break;
                    }
                    // The piece up to (not including) line `target`.
                    let end = (target - 1).min(lines.len());
                    if target - 1 < start {
                        return Ok(Err(format!(
                            "{}: line number out of range",
                            quote(&n.to_string())
                        )));
                    }
                    if let Err(e) = out.piece(&lines[start..end]).await? {
                        return Ok(Err(e));
                    }
                    if target > lines.len() {
                        let rep = match round {
                            1 => String::new(),
                            r => format!(" on repetition {}", r - 1),
                        };
                        return Ok(Err(format!(
                            "{}: line number out of range{rep}",
                            quote(&n.to_string())
                        )));
                    }
                    start = end;
                    current = end;
                }
                Pat::Re {
                    text,
                    re,
                    offset,
                    skip,
                } => {
                    let mut found = None;
                    for (i, l) in lines.iter().enumerate().skip(current) {
                        let body = l.strip_suffix(b"\n").unwrap_or(l);
                        if re.is_match(body).unwrap_or(false) {
                            found = Some(i);
                            break;
                        }
                    }
                    let Some(i) = found else {
                        if forever {
                            break;
                        }
                        if !skip && let Err(e) = out.piece(&lines[start..]).await? {
                            return Ok(Err(e));
                        }
                        let rep = match round {
                            1 => String::new(),
                            r => format!(" on repetition {}", r - 1),
                        };
                        return Ok(Err(format!("{}: match not found{rep}", quote(text))));
                    };
                    let target = i as i64 + offset;
                    if target < start as i64 || target > lines.len() as i64 {
                        return Ok(Err(format!("{}: line number out of range", quote(text))));
                    }
                    let target = target as usize;
                    if !skip && let Err(e) = out.piece(&lines[start..target]).await? {
                        return Ok(Err(e));
                    }
                    start = target;
                    current = target + 1;
                }
            }
        }
    }
    out.piece(&lines[start..]).await
}

#[cfg(test)]
mod tests {
    use super::Suffix;

    #[test]
    fn suffix_formats_like_sprintf() {
        let f = |fmt: &str, n: u64| Suffix::parse(fmt).map(|s| s.format(n));
        assert_eq!(f("%02d.txt", 3), Ok("03.txt".into()));
        assert_eq!(f("_%#5o_", 1), Ok("_   01_".into()));
        assert_eq!(f("%#x-%%", 26), Ok("0x1a-%".into()));
        assert_eq!(f("%-4d|", 7), Ok("7   |".into()));
        assert_eq!(f("%.3u", 5), Ok("005".into()));
        assert_eq!(
            f("abc", 0),
            Err("missing % conversion specification in suffix".into())
        );
        assert_eq!(
            f("%d%d", 0),
            Err("too many % conversion specifications in suffix".into())
        );
        assert_eq!(
            f("%#d", 0),
            Err("invalid flags in conversion specification: %#d".into())
        );
        assert_eq!(
            f("%5", 0),
            Err("missing conversion specifier in suffix".into())
        );
    }
}

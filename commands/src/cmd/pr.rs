//! `pr`: paginate text for printing, GNU-style, in one column: pages of `-l` lines (66)
//! with a five-line header (`DATE   TITLE   Page N`, centred in 72 columns) and a
//! five-line trailer, the last page padded; `-t`/`-T` (or a page of 10 lines or fewer)
//! leave headers, trailers and padding out. `-h` sets the title (the file name by
//! default), `-D` the date's strftime format (`%Y-%m-%d %H:%M`, UTC, of the file's
//! modification time; now for stdin), `-n[SEP[WIDTH]]` numbers lines, `-d` double-spaces,
//! `-o` indents. Multi-column output (`-COLUMN`, `-m`) is not supported and says so.

use async_trait::async_trait;

use super::textin::slurp;
use super::util::{BufOut, quote, usage_error, utc};
use crate::{CmdResult, Command, Context};

const HELP: &str = "Usage: pr [OPTION]... [FILE]...
Paginate or columnate FILE(s) for printing.

  -D, --date-format=FORMAT  use FORMAT for the header date
  -d, --double-space        double space the output
  -h, --header=HEADER       use a centered HEADER instead of filename in page header
  -l, --length=PAGE_LENGTH  set the page length to PAGE_LENGTH (66) lines
  -n, --number-lines[=SEP[DIGITS]]  number lines (default SEP TAB, DIGITS 5)
  -o, --indent=MARGIN       offset each line with MARGIN (zero) spaces
  -t, --omit-header         omit page headers and trailers
  -T, --omit-pagination     omit page headers and trailers, eliminate any pagination
      --help                display this help and exit
";

/// Width the header is laid out in (GNU's default page width).
const HEADER_WIDTH: usize = 72;
/// Header and trailer lines each.
const MARGIN_LINES: usize = 5;

pub struct Pr;

struct Opts {
    date_format: String,
    double: bool,
    header: Option<String>,
    length: usize,
    number: Option<(char, usize)>,
    indent: usize,
    omit: bool,
}

#[async_trait]
impl Command for Pr {
    fn name(&self) -> &'static str {
        "pr"
    }
    fn summary(&self) -> &'static str {
        "paginate text files for printing"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut o = Opts {
            date_format: "%Y-%m-%d %H:%M".into(),
            double: false,
            header: None,
            length: 66,
            number: None,
            indent: 0,
            omit: false,
        };
        let mut files = Vec::new();
        let mut i = 0;
        let mut only = false;
        while i < args.len() {
            let a = args[i].clone();
            i += 1;
            if only || a == "-" || !a.starts_with('-') {
                files.push(a);
                continue;
            }
            if a == "--" {
                only = true;
                continue;
            }
            let (name, inline): (String, Option<String>) = if let Some(l) = a.strip_prefix("--") {
                match l.split_once('=') {
                    Some((n, v)) => (n.to_string(), Some(v.to_string())),
                    None => (l.to_string(), None),
                }
            } else {
                let c = a[1..].chars().next().unwrap_or('-');
                let rest = &a[1 + c.len_utf8()..];
                (c.to_string(), (!rest.is_empty()).then(|| rest.to_string()))
            };
            let mut value = |what: &str| -> Result<String, String> {
                if let Some(v) = inline.clone() {
                    return Ok(v);
                }
                match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Ok(v.clone())
                    }
                    None => Err(what.to_string()),
                }
            };
            let r: Result<(), String> = match name.as_str() {
                "help" => {
                    ctx.out(HELP).await?;
                    return Ok(0);
                }
                "D" | "date-format" => {
                    value("option requires an argument -- 'D'").map(|v| o.date_format = v)
                }
                "d" | "double-space" => {
                    o.double = true;
                    more_flags(&inline, &mut o)
                }
                "t" | "omit-header" | "T" | "omit-pagination" => {
                    o.omit = true;
                    more_flags(&inline, &mut o)
                }
                "h" | "header" => {
                    value("option requires an argument -- 'h'").map(|v| o.header = Some(v))
                }
                "l" | "length" => value("option requires an argument -- 'l'").and_then(|v| {
                    v.parse::<usize>().map(|n| o.length = n).map_err(|_| {
                        format!("'-l PAGE_LENGTH' invalid number of lines: {}", quote(&v))
                    })
                }),
                "o" | "indent" => value("option requires an argument -- 'o'").and_then(|v| {
                    v.parse::<usize>()
                        .map(|n| o.indent = n.min(1000))
                        .map_err(|_| format!("'-o MARGIN' invalid line offset: {}", quote(&v)))
                }),
                "n" | "number-lines" => {
                    let spec = inline.clone().unwrap_or_default();
                    let mut chars = spec.chars();
                    let (sep, digits) = match chars.next() {
                        None => ('\t', 5),
                        Some(c) if c.is_ascii_digit() => ('\t', spec.parse().unwrap_or(5)),
                        Some(c) => (c, chars.as_str().parse().unwrap_or(5)),
                    };
                    o.number = Some((sep, digits.min(100)));
                    Ok(())
                }
                c if c.chars().all(|c| c.is_ascii_digit())
                    || c == "m"
                    || c == "merge"
                    || c == "columns" =>
                {
                    ctx.warn("pr", "multi-column output is not supported").await;
                    return Ok(1);
                }
                _ => {
                    let msg = if a.starts_with("--") {
                        format!("unrecognized option '{a}'")
                    } else {
                        format!("invalid option -- '{name}'")
                    };
                    return Ok(usage_error(ctx, "pr", &msg).await);
                }
            };
            if let Err(msg) = r {
                if msg.starts_with("option requires") {
                    return Ok(usage_error(ctx, "pr", &msg).await);
                }
                ctx.warn("pr", msg).await;
                return Ok(1);
            }
        }
        if files.is_empty() {
            files.push("-".into());
        }
        let mut out = BufOut::new(ctx);
        let mut status = 0;
        for f in &files {
            let mut charge = ctx.budget.empty_charge();
            let Some(data) = slurp(ctx, "pr", f, &mut charge).await? else {
                status = 1;
                continue;
            };
            let mtime = if f == "-" {
                std::time::SystemTime::now()
            } else {
                ctx.fs
                    .stat(&ctx.path(f))
                    .await
                    .map(|m| m.mtime)
                    .unwrap_or_else(|_| std::time::SystemTime::now())
            };
            let date = format_date(&o.date_format, mtime);
            let title = o
                .header
                .clone()
                .unwrap_or_else(|| if f == "-" { String::new() } else { f.clone() });
            let text = paginate(&o, &data, &date, &title);
            out.write(&text).await?;
            ctx.checkpoint().await?;
        }
        out.flush().await?;
        Ok(status)
    }
}

/// Letters after `-d`/`-t` in one word (`-dt`).
fn more_flags(rest: &Option<String>, o: &mut Opts) -> Result<(), String> {
    for c in rest.as_deref().unwrap_or("").chars() {
        match c {
            'd' => o.double = true,
            't' | 'T' => o.omit = true,
            other => return Err(format!("invalid option -- '{other}'")),
        }
    }
    Ok(())
}

fn format_date(fmt: &str, t: std::time::SystemTime) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    if write!(s, "{}", utc(t).format(fmt)).is_err() {
        return fmt.to_string();
    }
    s
}

/// The paginated text of one file.
fn paginate(o: &Opts, data: &[u8], date: &str, title: &str) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut n = 0usize;
    for l in super::textin::records(data, b'\n') {
        let mut line = vec![b' '; o.indent];
        if let Some((sep, w)) = o.number {
            n += 1;
            let num = format!("{n:>w$}");
            let num = &num[num.len().saturating_sub(w)..];
            line.extend_from_slice(num.as_bytes());
            let mut b = [0u8; 4];
            line.extend_from_slice(sep.encode_utf8(&mut b).as_bytes());
        }
        line.extend_from_slice(l);
        line.push(b'\n');
        lines.push(line);
        if o.double {
            lines.push(b"\n".to_vec());
        }
    }
    let paged = !o.omit && o.length > 2 * MARGIN_LINES;
    let mut out = Vec::new();
    if !paged {
        for l in lines {
            out.extend_from_slice(&l);
        }
        return out;
    }
    let body = o.length - 2 * MARGIN_LINES;
    for (page, chunk) in lines.chunks(body).enumerate() {
        let rhs = format!("Page {}", page + 1);
        let room = HEADER_WIDTH.saturating_sub(date.chars().count() + rhs.len());
        let t = title.chars().count();
        let (lpad, rpad) = if room > t {
            let l = (room - t) / 2;
            (l, room - t - l)
        } else {
            (1, 1)
        };
        out.extend_from_slice(b"\n\n");
        out.extend_from_slice(
            format!(
                "{date}{}{title}{}{rhs}\n\n\n",
                " ".repeat(lpad),
                " ".repeat(rpad)
            )
            .as_bytes(),
        );
        for l in chunk {
            out.extend_from_slice(l);
        }
        out.extend(std::iter::repeat_n(
            b'\n',
            body - chunk.len() + MARGIN_LINES,
        ));
    }
    out
}

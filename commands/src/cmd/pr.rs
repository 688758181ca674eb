//! `pr`: paginate text for printing, GNU-style, in one column: pages of `-l` lines (66)
//! with a five-line header (`DATE   TITLE   Page N`, centred in 72 columns) and a
//! five-line trailer, the last page padded; `-t`/`-T` (or a page of 10 lines or fewer)
//! leave headers, trailers and padding out. `-h` sets the title (the file name by
//! default), `-D` the date's strftime format (`%Y-%m-%d %H:%M`, UTC, of the file's
//! modification time; now for stdin), `-n[SEP[WIDTH]]` numbers lines, `-d` double-spaces,
//! `-o` indents. Columns: `-COLUMN` fills columns down (the last page balanced, its
//! first columns one line longer), `-a` across, `-m` one column per file; each column
//! is `(-w WIDTH - separators) / COLUMNS` wide, lines cut to it and padded (with tabs
//! where they reach a tab stop, as GNU writes it); `-s[CHAR]` separates by CHAR (TAB)
//! without padding or cutting (cutting kept with `-w`), `-J` joins whole lines with TABs.
//! Numbering (`-n`) in columns is not GNU's (it numbers before laying out).

use async_trait::async_trait;

use super::textin::slurp;
use super::util::{BufOut, quote, usage_error, utc};
use crate::{CmdResult, Command, Context};

const HELP: &str = "Usage: pr [OPTION]... [FILE]...
Paginate or columnate FILE(s) for printing.

  -COLUMN, --columns=COLUMN  output COLUMN columns and print columns down
  -a, --across              print columns across rather than down
  -D, --date-format=FORMAT  use FORMAT for the header date
  -d, --double-space        double space the output
  -h, --header=HEADER       use a centered HEADER instead of filename in page header
  -J, --join-lines          merge full lines, no column alignment
  -l, --length=PAGE_LENGTH  set the page length to PAGE_LENGTH (66) lines
  -m, --merge               print all files in parallel, one in each column
  -n, --number-lines[=SEP[DIGITS]]  number lines (default SEP TAB, DIGITS 5)
  -o, --indent=MARGIN       offset each line with MARGIN (zero) spaces
  -s[CHAR], --separator[=CHAR]  separate columns by a single character (TAB)
  -t, --omit-header         omit page headers and trailers
  -T, --omit-pagination     omit page headers and trailers, eliminate any pagination
  -w, --width=PAGE_WIDTH    set page width to PAGE_WIDTH (72) characters for
                              multiple text-column output only
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
    /// Text columns (`-COLUMN`); 1 is plain pagination.
    columns: usize,
    across: bool,
    merge: bool,
    /// `-s[CHAR]`: the separator given, which turns alignment off.
    separator: Option<String>,
    join: bool,
    /// `-w`: the page width for columns (72).
    width: Option<usize>,
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
            columns: 1,
            across: false,
            merge: false,
            separator: None,
            join: false,
            width: None,
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
                c if !c.is_empty() && c.chars().all(|c| c.is_ascii_digit()) => {
                    // `-3`: the digits are the whole word (`-12`).
                    let digits = format!("{c}{}", inline.clone().unwrap_or_default());
                    columns_arg(&digits, &mut o)
                }
                "columns" => value("option '--columns' requires an argument")
                    .and_then(|v| columns_arg(&v, &mut o)),
                "a" | "across" => {
                    o.across = true;
                    more_flags(&inline, &mut o)
                }
                "m" | "merge" => {
                    o.merge = true;
                    more_flags(&inline, &mut o)
                }
                "J" | "join-lines" => {
                    o.join = true;
                    more_flags(&inline, &mut o)
                }
                "s" | "separator" => {
                    o.separator = Some(inline.clone().unwrap_or_else(|| "\t".to_string()));
                    Ok(())
                }
                "w" | "width" => value("option requires an argument -- 'w'").and_then(|v| {
                    match v.parse::<usize>() {
                        Ok(n) if n > 0 => {
                            o.width = Some(n);
                            Ok(())
                        }
                        _ => Err(format!(
                            "'-w PAGE_WIDTH' invalid number of characters: {}",
                            quote(&v)
                        )),
                    }
                }),
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
        if o.merge && o.columns > 1 {
            ctx.warn(
                "pr",
                "cannot specify number of columns when printing in parallel",
            )
            .await;
            return Ok(1);
        }
        let mut out = BufOut::new(ctx);
        if o.merge || o.columns > 1 {
            let ncols = if o.merge { files.len() } else { o.columns };
            let Some(layout) = Layout::new(&o, ncols) else {
                ctx.warn("pr", "page width too narrow").await;
                return Ok(1);
            };
            let mut status = 0;
            let mut texts = Vec::new();
            let mut mtime = std::time::SystemTime::now();
            for f in &files {
                let mut charge = ctx.budget.empty_charge();
                let Some(data) = slurp(ctx, "pr", f, &mut charge).await? else {
                    status = 1;
                    continue;
                };
                if !o.merge && f != "-" {
                    mtime = ctx
                        .fs
                        .stat(&ctx.path(f))
                        .await
                        .map(|m| m.mtime)
                        .unwrap_or(mtime);
                }
                texts.push((f.clone(), data, mtime));
            }
            if o.merge {
                let cols: Vec<Vec<Vec<u8>>> =
                    texts.iter().map(|(_, d, _)| body_lines(&o, d)).collect();
                let date = format_date(&o.date_format, std::time::SystemTime::now());
                let title = o.header.clone().unwrap_or_default();
                if !cols.is_empty() {
                    out.write(&layout.merge(&o, &cols, &date, &title)).await?;
                }
            } else {
                for (f, data, mtime) in &texts {
                    let date = format_date(&o.date_format, *mtime);
                    let title = o
                        .header
                        .clone()
                        .unwrap_or_else(|| if f == "-" { String::new() } else { f.clone() });
                    let lines = body_lines(&o, data);
                    out.write(&layout.columns(&o, &lines, &date, &title))
                        .await?;
                    ctx.checkpoint().await?;
                }
            }
            out.flush().await?;
            return Ok(status);
        }
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

/// `-COLUMN` / `--columns=COLUMN`.
fn columns_arg(v: &str, o: &mut Opts) -> Result<(), String> {
    match v.parse::<usize>() {
        Ok(n) if n > 0 => {
            o.columns = n;
            Ok(())
        }
        _ => Err(format!("invalid number of columns: {}", quote(v))),
    }
}

/// Lines of one file as they go into a column: indent and numbering left to the layout,
/// double spacing applied. Without their newlines.
fn body_lines(o: &Opts, data: &[u8]) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    let mut n = 0usize;
    for l in super::textin::records(data, b'\n') {
        let mut line = Vec::new();
        if let Some((sep, w)) = o.number {
            n += 1;
            let num = format!("{n:>w$}");
            let num = &num[num.len().saturating_sub(w)..];
            line.extend_from_slice(num.as_bytes());
            let mut b = [0u8; 4];
            line.extend_from_slice(sep.encode_utf8(&mut b).as_bytes());
        }
        line.extend_from_slice(l);
        lines.push(line);
        if o.double {
            lines.push(Vec::new());
        }
    }
    lines
}

/// How text columns are laid out on a page.
struct Layout {
    ncols: usize,
    /// Width of each column.
    col_width: usize,
    /// What goes between columns.
    sep: Vec<u8>,
    /// Columns padded to their width (the default separator only).
    align: bool,
    /// Lines cut to the column width.
    truncate: bool,
    /// Lines of text per column on a page; `None`: one page, no header.
    body: usize,
    paged: bool,
}

impl Layout {
    fn new(o: &Opts, ncols: usize) -> Option<Layout> {
        let (sep, align, truncate) = if o.join {
            (b"\t".to_vec(), false, false)
        } else {
            match &o.separator {
                Some(s) => (s.as_bytes().to_vec(), false, o.width.is_some()),
                None => (b" ".to_vec(), true, true),
            }
        };
        let width = o.width.unwrap_or(HEADER_WIDTH);
        let seps = (ncols - 1) * sep.len();
        let col_width = width.checked_sub(seps)? / ncols;
        if col_width < 1 {
            return None;
        }
        let paged = !o.omit && o.length > 2 * MARGIN_LINES;
        let body = if paged {
            o.length - 2 * MARGIN_LINES
        } else {
            o.length.max(1)
        };
        Some(Layout {
            ncols,
            col_width,
            sep,
            align,
            truncate,
            body,
            paged,
        })
    }

    /// One row of cells (`None`: an empty cell) as a line.
    fn row(&self, o: &Opts, cells: &[Option<&[u8]>], out: &mut Vec<u8>) {
        let last = cells.iter().rposition(Option::is_some).unwrap_or(0);
        let mut pos = 0usize;
        // Spaces owed before the next text: written as tabs where they reach a stop.
        let mut pending = o.indent;
        for (j, cell) in cells.iter().enumerate().take(last + 1) {
            let text = cell.unwrap_or(b"");
            let text = if self.truncate {
                &text[..text.len().min(self.col_width)]
            } else {
                text
            };
            if !text.is_empty() {
                flush_space(out, &mut pos, &mut pending);
                out.extend_from_slice(text);
                pos += text.len();
            }
            if j == last {
                break;
            }
            if self.align {
                let target = o.indent + (j + 1) * (self.col_width + self.sep.len());
                let here = pos + pending;
                pending += target.saturating_sub(here);
            } else {
                flush_space(out, &mut pos, &mut pending);
                out.extend_from_slice(&self.sep);
                pos += self.sep.len();
            }
        }
        out.push(b'\n');
    }

    fn header(&self, out: &mut Vec<u8>, date: &str, title: &str, page: usize) {
        if self.paged {
            page_header(out, date, title, page);
        }
    }

    fn trailer(&self, out: &mut Vec<u8>, rows: usize) {
        if self.paged {
            out.extend(std::iter::repeat_n(
                b'\n',
                self.body.saturating_sub(rows) + MARGIN_LINES,
            ));
        }
    }

    /// `-COLUMN` (down, the last page balanced) or `-a -COLUMN` (across).
    fn columns(&self, o: &Opts, lines: &[Vec<u8>], date: &str, title: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let per_page = self.body * self.ncols;
        for (page, chunk) in lines.chunks(per_page).enumerate() {
            self.header(&mut out, date, title, page + 1);
            let mut cells: Vec<Option<&[u8]>> = vec![None; self.ncols];
            let rows;
            if o.across {
                rows = chunk.len().div_ceil(self.ncols);
                for r in 0..rows {
                    for (j, c) in cells.iter_mut().enumerate() {
                        *c = chunk.get(r * self.ncols + j).map(Vec::as_slice);
                    }
                    self.row(o, &cells, &mut out);
                }
            } else {
                // Column j's first line and length: full columns, or balanced ones.
                let (base, extra) = if chunk.len() == per_page {
                    (self.body, 0)
                } else {
                    (chunk.len() / self.ncols, chunk.len() % self.ncols)
                };
                let len = |j: usize| base + usize::from(j < extra);
                let starts: Vec<usize> = (0..self.ncols)
                    .scan(0, |acc, j| {
                        let s = *acc;
                        *acc += len(j);
                        Some(s)
                    })
                    .collect();
                rows = len(0);
                for r in 0..rows {
                    for (j, c) in cells.iter_mut().enumerate() {
                        *c = (r < len(j)).then(|| chunk[starts[j] + r].as_slice());
                    }
                    self.row(o, &cells, &mut out);
                }
            }
            self.trailer(&mut out, rows);
        }
        out
    }

    /// `-m`: one column per file.
    fn merge(&self, o: &Opts, files: &[Vec<Vec<u8>>], date: &str, title: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let total = files.iter().map(Vec::len).max().unwrap_or(0);
        let mut start = 0;
        let mut page = 0;
        while start < total {
            page += 1;
            let rows = self.body.min(total - start);
            self.header(&mut out, date, title, page);
            for r in start..start + rows {
                let cells: Vec<Option<&[u8]>> =
                    files.iter().map(|f| f.get(r).map(Vec::as_slice)).collect();
                self.row(o, &cells, &mut out);
            }
            self.trailer(&mut out, rows);
            start += rows;
        }
        out
    }
}

/// Writes `pending` spaces from column `pos`, as tabs up to the last tab stop they reach.
fn flush_space(out: &mut Vec<u8>, pos: &mut usize, pending: &mut usize) {
    let target = *pos + *pending;
    loop {
        let stop = (*pos / 8 + 1) * 8;
        if stop > target {
            break;
        }
        out.push(b'\t');
        *pos = stop;
    }
    while *pos < target {
        out.push(b' ');
        *pos += 1;
    }
    *pending = 0;
}

/// The five header lines of page `page`.
fn page_header(out: &mut Vec<u8>, date: &str, title: &str, page: usize) {
    let rhs = format!("Page {page}");
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
}

/// Letters after `-d`/`-t` in one word (`-dt`).
fn more_flags(rest: &Option<String>, o: &mut Opts) -> Result<(), String> {
    for c in rest.as_deref().unwrap_or("").chars() {
        match c {
            'd' => o.double = true,
            't' | 'T' => o.omit = true,
            'a' => o.across = true,
            'm' => o.merge = true,
            'J' => o.join = true,
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
        page_header(&mut out, date, title, page + 1);
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

//! `sort`: sort lines. The input is held in memory, up to [`MAX_SORT_INPUT`]; sorting
//! runs on the blocking pool so a big sort does not stall other sessions.

use std::cmp::Ordering;

use async_trait::async_trait;
use clap::Parser;

use super::util::{Reader, quote, quotef};
use crate::fs::{FsError, WriteMode};
use crate::{CmdResult, Command, Context, parse_args};

/// Most input bytes `sort` holds: it must see every line before printing the first, and
/// this keeps one session's sort from taking the server's memory.
const MAX_SORT_INPUT: usize = 256 * 1024 * 1024;

/// Write sorted concatenation of all FILE(s) to standard output.
/// With no FILE, or when FILE is -, read standard input.
///
/// KEYDEF is F[.C][OPTS][,F[.C][OPTS]] for start and stop position, where F is a field
/// number and C a character position in the field; both are origin 1. OPTS is one or
/// more single-letter ordering options [bdfghinMrV], which override global ordering
/// options for that key. Input over 256 MiB is refused.
#[derive(Parser, Debug, Clone)]
#[command(name = "sort", disable_help_flag = true)]
struct Args {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Ignore leading blanks.
    #[arg(short = 'b', long = "ignore-leading-blanks")]
    ignore_blanks: bool,
    /// Consider only blanks and alphanumeric characters.
    #[arg(short = 'd', long = "dictionary-order")]
    dictionary: bool,
    /// Fold lower case to upper case characters.
    #[arg(short = 'f', long = "ignore-case")]
    fold: bool,
    /// Compare according to general numerical value.
    #[arg(short = 'g', long = "general-numeric-sort")]
    general: bool,
    /// Compare human readable numbers (e.g., 2K 1G).
    #[arg(short = 'h', long = "human-numeric-sort")]
    human: bool,
    /// Compare (unknown) < 'JAN' < ... < 'DEC'.
    #[arg(short = 'M', long = "month-sort")]
    month: bool,
    /// Compare according to string numerical value.
    #[arg(short = 'n', long = "numeric-sort")]
    numeric: bool,
    /// Reverse the result of comparisons.
    #[arg(short = 'r', long)]
    reverse: bool,
    /// Natural sort of (version) numbers within text.
    #[arg(short = 'V', long = "version-sort")]
    version: bool,
    /// Check for sorted input; do not sort.
    #[arg(short = 'c', long)]
    check: bool,
    /// Sort via a key; KEYDEF gives location and type.
    #[arg(short = 'k', long = "key", value_name = "KEYDEF")]
    keys: Vec<String>,
    /// Write result to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<String>,
    /// Stabilize sort by disabling last-resort comparison.
    #[arg(short = 's', long)]
    stable: bool,
    /// Use SEP instead of non-blank to blank transition.
    #[arg(short = 't', long = "field-separator", value_name = "SEP")]
    separator: Option<String>,
    /// Output only the first of an equal run.
    #[arg(short = 'u', long)]
    unique: bool,
    /// Line delimiter is NUL, not newline.
    #[arg(short = 'z', long = "zero-terminated")]
    zero: bool,
    /// Files to sort.
    files: Vec<String>,
}

#[derive(Clone, Copy, Default, Debug)]
struct Opts {
    blanks: bool,
    dictionary: bool,
    fold: bool,
    general: bool,
    human: bool,
    month: bool,
    numeric: bool,
    reverse: bool,
    version: bool,
}

impl Opts {
    fn any(&self) -> bool {
        self.blanks
            || self.dictionary
            || self.fold
            || self.general
            || self.human
            || self.month
            || self.numeric
            || self.reverse
            || self.version
    }

    fn apply(&mut self, letters: &str) -> Result<(), char> {
        for c in letters.chars() {
            match c {
                'b' => self.blanks = true,
                'd' => self.dictionary = true,
                'f' => self.fold = true,
                'g' => self.general = true,
                'h' => self.human = true,
                'i' => {}
                'M' => self.month = true,
                'n' => self.numeric = true,
                'r' => self.reverse = true,
                'V' => self.version = true,
                other => return Err(other),
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
struct Key {
    start_field: usize,
    start_char: usize,
    /// `None`: to the end of the line.
    end_field: Option<usize>,
    /// 0: to the end of the field.
    end_char: usize,
    opts: Opts,
}

fn parse_pos(s: &str) -> Option<(usize, usize, &str)> {
    let end = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (pos, opts) = s.split_at(end);
    let (f, c) = match pos.split_once('.') {
        Some((f, c)) => (f.parse().ok()?, c.parse().ok()?),
        None => (pos.parse().ok()?, 0),
    };
    Some((f, c, opts))
}

fn parse_key(s: &str, global: Opts) -> Result<Key, String> {
    let bad = || {
        format!(
            "invalid number at field start: invalid count at start of {}",
            quote(s)
        )
    };
    let (start, end) = match s.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let (sf, sc, sopts) = parse_pos(start).ok_or_else(bad)?;
    if sf == 0 {
        return Err(format!(
            "field number is zero: invalid field specification {}",
            quote(s)
        ));
    }
    let mut opts = Opts::default();
    opts.apply(sopts).map_err(|c| {
        format!(
            "stray character in field spec: invalid field specification {} ({c})",
            quote(s)
        )
    })?;
    let (end_field, end_char) = match end {
        Some(e) => {
            let (ef, ec, eopts) = parse_pos(e).ok_or_else(bad)?;
            opts.apply(eopts)
                .map_err(|_| format!("invalid field specification {}", quote(s)))?;
            (Some(ef), ec)
        }
        None => (None, 0),
    };
    if !opts.any() {
        opts = global;
    }
    Ok(Key {
        start_field: sf,
        start_char: sc.max(1),
        end_field,
        end_char,
        opts,
    })
}

/// Fields as GNU sees them: with a separator, split on it; without, each field starts
/// at a blank-to-non-blank transition and keeps its leading blanks.
fn field_bounds(line: &[u8], sep: Option<u8>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    match sep {
        Some(t) => {
            let mut start = 0;
            for (i, &b) in line.iter().enumerate() {
                if b == t {
                    out.push((start, i));
                    start = i + 1;
                }
            }
            out.push((start, line.len()));
        }
        None => {
            let mut i = 0;
            while i < line.len() {
                let start = i;
                while i < line.len() && (line[i] == b' ' || line[i] == b'\t') {
                    i += 1;
                }
                while i < line.len() && line[i] != b' ' && line[i] != b'\t' {
                    i += 1;
                }
                out.push((start, i));
            }
        }
    }
    out
}

fn skip_blanks(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| **b == b' ' || **b == b'\t').count();
    &s[n..]
}

fn extract<'l>(line: &'l [u8], key: &Key, sep: Option<u8>) -> &'l [u8] {
    let fields = field_bounds(line, sep);
    let Some(&(fs, fe)) = fields.get(key.start_field - 1) else {
        return &[];
    };
    let mut field = &line[fs..fe];
    if key.opts.blanks {
        field = skip_blanks(field);
    }
    let offset = field.as_ptr() as usize - line.as_ptr() as usize;
    let start = (offset + key.start_char - 1).min(line.len());
    let end = match key.end_field {
        None => line.len(),
        Some(ef) => match fields.get(ef.saturating_sub(1)) {
            None => line.len(),
            Some(&(es, ee)) => {
                if key.end_char == 0 {
                    ee
                } else {
                    let mut f = &line[es..ee];
                    if key.opts.blanks {
                        f = skip_blanks(f);
                    }
                    let off = f.as_ptr() as usize - line.as_ptr() as usize;
                    (off + key.end_char).min(ee)
                }
            }
        },
    };
    if end <= start { &[] } else { &line[start..end] }
}

fn num_prefix(s: &[u8]) -> f64 {
    let s = skip_blanks(s);
    let mut end = 0;
    if s.first() == Some(&b'-') {
        end = 1;
    }
    let mut seen_dot = false;
    while end < s.len() && (s[end].is_ascii_digit() || (s[end] == b'.' && !seen_dot)) {
        seen_dot |= s[end] == b'.';
        end += 1;
    }
    std::str::from_utf8(&s[..end])
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0.0)
}

fn general_value(s: &[u8]) -> f64 {
    let t = String::from_utf8_lossy(skip_blanks(s));
    let t = t.trim_end();
    for end in (1..=t.len()).rev() {
        if t.is_char_boundary(end)
            && let Ok(v) = t[..end].parse::<f64>()
        {
            return v;
        }
    }
    f64::NEG_INFINITY
}

fn human_value(s: &[u8]) -> f64 {
    let s = skip_blanks(s);
    let v = num_prefix(s);
    let digits = s
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'.' || **b == b'-')
        .count();
    let mult = match s.get(digits) {
        Some(b'K' | b'k') => 1e3,
        Some(b'M') => 1e6,
        Some(b'G') => 1e9,
        Some(b'T') => 1e12,
        Some(b'P') => 1e15,
        Some(b'E') => 1e18,
        _ => 1.0,
    };
    v * mult
}

fn month_value(s: &[u8]) -> usize {
    const MONTHS: [&[u8]; 12] = [
        b"JAN", b"FEB", b"MAR", b"APR", b"MAY", b"JUN", b"JUL", b"AUG", b"SEP", b"OCT", b"NOV",
        b"DEC",
    ];
    let s = skip_blanks(s);
    if s.len() < 3 {
        return 0;
    }
    let up = s[..3].to_ascii_uppercase();
    MONTHS
        .iter()
        .position(|m| *m == up.as_slice())
        .map(|i| i + 1)
        .unwrap_or(0)
}

/// Version order: runs of digits compare as numbers, the rest byte-wise.
pub(crate) fn version_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let si = i;
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            let sj = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let na = a[si..i]
                .iter()
                .skip_while(|c| **c == b'0')
                .collect::<Vec<_>>();
            let nb = b[sj..j]
                .iter()
                .skip_while(|c| **c == b'0')
                .collect::<Vec<_>>();
            let ord = na.len().cmp(&nb.len()).then_with(|| na.cmp(&nb));
            if ord != Ordering::Equal {
                return ord;
            }
        } else {
            let ord = a[i].cmp(&b[j]);
            if ord != Ordering::Equal {
                return ord;
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

fn text_cmp(a: &[u8], b: &[u8], o: &Opts) -> Ordering {
    if !(o.fold || o.dictionary) {
        return a.cmp(b);
    }
    let norm = |s: &[u8]| -> Vec<u8> {
        s.iter()
            .filter(|c| {
                !o.dictionary
                    || c.is_ascii_alphanumeric()
                    || **c == b' '
                    || **c == b'\t'
                    || **c >= 0x80
            })
            .map(|c| if o.fold { c.to_ascii_uppercase() } else { *c })
            .collect()
    };
    norm(a).cmp(&norm(b))
}

fn key_cmp(a: &[u8], b: &[u8], o: &Opts) -> Ordering {
    let (a, b) = if o.blanks {
        (skip_blanks(a), skip_blanks(b))
    } else {
        (a, b)
    };
    let ord = if o.numeric {
        num_prefix(a)
            .partial_cmp(&num_prefix(b))
            .unwrap_or(Ordering::Equal)
    } else if o.general {
        general_value(a)
            .partial_cmp(&general_value(b))
            .unwrap_or(Ordering::Equal)
    } else if o.human {
        human_value(a)
            .partial_cmp(&human_value(b))
            .unwrap_or(Ordering::Equal)
    } else if o.month {
        month_value(a).cmp(&month_value(b))
    } else if o.version {
        version_cmp(a, b)
    } else {
        text_cmp(a, b, o)
    };
    if o.reverse { ord.reverse() } else { ord }
}

struct Sorter {
    keys: Vec<Key>,
    global: Opts,
    sep: Option<u8>,
    stable: bool,
}

impl Sorter {
    /// Compares by the keys only (what -u calls equal).
    fn keys_cmp(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.keys.is_empty() {
            return key_cmp(a, b, &self.global);
        }
        for k in &self.keys {
            let ord = key_cmp(extract(a, k, self.sep), extract(b, k, self.sep), &k.opts);
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    }

    fn cmp(&self, a: &[u8], b: &[u8]) -> Ordering {
        let ord = self.keys_cmp(a, b);
        if ord != Ordering::Equal || self.stable {
            return ord;
        }
        let last = a.cmp(b);
        if self.global.reverse {
            last.reverse()
        } else {
            last
        }
    }
}

pub struct Sort;

#[async_trait]
impl Command for Sort {
    fn name(&self) -> &'static str {
        "sort"
    }
    fn summary(&self) -> &'static str {
        "sort lines of text files"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let global = Opts {
            blanks: args.ignore_blanks,
            dictionary: args.dictionary,
            fold: args.fold,
            general: args.general,
            human: args.human,
            month: args.month,
            numeric: args.numeric,
            reverse: args.reverse,
            version: args.version,
        };
        let sep = match args.separator.as_deref() {
            None => None,
            Some(s) if s.len() == 1 => Some(s.as_bytes()[0]),
            Some("\\0") => Some(0),
            Some(s) => {
                ctx.warn("sort", format!("multi-character tab {}", quote(s)))
                    .await;
                return Ok(2);
            }
        };
        let mut keys = Vec::new();
        for k in &args.keys {
            match parse_key(k, global) {
                Ok(k) => keys.push(k),
                Err(msg) => {
                    ctx.warn("sort", msg).await;
                    return Ok(2);
                }
            }
        }
        let delim = if args.zero { 0u8 } else { b'\n' };
        let files = if args.files.is_empty() {
            vec!["-".to_string()]
        } else {
            args.files.clone()
        };
        let mut data = Vec::new();
        for f in &files {
            let mut reader = match Reader::open(ctx, f).await {
                Ok(r) => r,
                Err(e) => {
                    ctx.warn("sort", format!("cannot read: {}: {e}", quotef(f)))
                        .await;
                    return Ok(2);
                }
            };
            match reader.read_to_end(MAX_SORT_INPUT - data.len()).await {
                Ok(mut d) => {
                    if !d.is_empty() && d.last() != Some(&delim) {
                        d.push(delim);
                    }
                    data.extend_from_slice(&d);
                }
                Err(FsError::TooLarge) => {
                    ctx.warn(
                        "sort",
                        format!(
                            "input too large: sort holds at most {} MiB",
                            MAX_SORT_INPUT >> 20
                        ),
                    )
                    .await;
                    return Ok(2);
                }
                Err(e) => {
                    ctx.warn("sort", format!("read failed: {}: {e}", quotef(f)))
                        .await;
                    return Ok(2);
                }
            }
            ctx.checkpoint().await?;
        }
        let sorter = Sorter {
            keys,
            global,
            sep,
            stable: args.stable,
        };
        let check = args.check;
        let unique = args.unique;
        // Sorting is CPU work: do it on the blocking pool.
        let job = tokio::task::spawn_blocking(move || {
            let mut lines: Vec<&[u8]> = data.split(|b| *b == delim).collect();
            lines.pop();
            if check {
                let bad = lines.windows(2).position(|w| {
                    let o = sorter.cmp(w[0], w[1]);
                    o == Ordering::Greater
                        || (unique && sorter.keys_cmp(w[0], w[1]) == Ordering::Equal)
                });
                return Err(bad.map(|i| (i + 2, lines[i + 1].to_vec())));
            }
            lines.sort_by(|a, b| sorter.cmp(a, b));
            if unique {
                lines.dedup_by(|b, a| sorter.keys_cmp(a, b) == Ordering::Equal);
            }
            let mut out = Vec::with_capacity(data.len());
            for l in lines {
                out.extend_from_slice(l);
                out.push(delim);
            }
            Ok(out)
        });
        let out = tokio::select! {
            r = job => r,
            _ = ctx.cancel.cancelled() => return Err(crate::Interrupt::Cancelled),
        };
        let out = match out {
            Ok(Ok(out)) => out,
            Ok(Err(None)) => return Ok(0),
            Ok(Err(Some((lineno, line)))) => {
                let name = if files[0] == "-" {
                    "-".to_string()
                } else {
                    files[0].clone()
                };
                ctx.warn(
                    "sort",
                    format!(
                        "{name}:{lineno}: disorder: {}",
                        String::from_utf8_lossy(&line)
                    ),
                )
                .await;
                return Ok(1);
            }
            Err(_) => {
                ctx.warn("sort", "internal error").await;
                return Ok(2);
            }
        };
        match &args.output {
            None => ctx.out(out).await?,
            Some(f) => {
                let res = async {
                    let mut h = ctx.fs.open_write(&ctx.path(f), WriteMode::Truncate).await?;
                    h.write(&out).await?;
                    h.close().await
                }
                .await;
                if let Err(e) = res {
                    ctx.warn("sort", format!("open failed: {}: {e}", quotef(f)))
                        .await;
                    return Ok(2);
                }
            }
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    async fn sort(stdin: &str, args: &[&str]) -> (i32, String, String) {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(&Sort, args)
        .await
    }

    #[tokio::test]
    async fn orders() {
        assert_eq!(sort("b\na\nc", &[]).await.1, "a\nb\nc\n");
        assert_eq!(sort("b\na\nc\n", &["-r"]).await.1, "c\nb\na\n");
        assert_eq!(sort("10\n9\n-1\nx\n", &["-n"]).await.1, "-1\nx\n9\n10\n");
        assert_eq!(sort("b\nB\na\n", &["-f"]).await.1, "a\nB\nb\n");
        assert_eq!(sort("a\nb\na\n", &["-u"]).await.1, "a\nb\n");
        assert_eq!(sort("1G\n2K\n3M\n", &["-h"]).await.1, "2K\n3M\n1G\n");
        assert_eq!(
            sort("v1.10\nv1.9\nv1.2\n", &["-V"]).await.1,
            "v1.2\nv1.9\nv1.10\n"
        );
        assert_eq!(sort("Feb\nJan\nDec\n", &["-M"]).await.1, "Jan\nFeb\nDec\n");
    }

    #[tokio::test]
    async fn keys_and_separators() {
        let data = "b 2\na 10\nc 1\n";
        assert_eq!(sort(data, &["-k", "2,2n"]).await.1, "c 1\nb 2\na 10\n");
        assert_eq!(sort(data, &["-k2nr"]).await.1, "a 10\nb 2\nc 1\n");
        assert_eq!(
            sort("x:3\ny:1\nz:2\n", &["-t", ":", "-k", "2"]).await.1,
            "y:1\nz:2\nx:3\n"
        );
        assert_eq!(
            sort("a 1\nb 1\n", &["-s", "-r", "-k2,2"]).await.1,
            "a 1\nb 1\n"
        );
        assert_eq!(sort("ab\nba\n", &["-k1.2"]).await.1, "ba\nab\n");
    }

    #[tokio::test]
    async fn output_file_check_and_errors() {
        let fs = MemFs::with_files(&[("/f", "2\n1\n")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        assert_eq!(inv.run(&Sort, &["-o", "f", "f"]).await.0, 0);
        assert_eq!(fs.text("/f").unwrap(), "1\n2\n");
        let (st, _, err) = sort("b\na\n", &["-c"]).await;
        assert_eq!((st, err.as_str()), (1, "sort: -:2: disorder: a\n"));
        assert_eq!(sort("a\nb\n", &["-c"]).await.0, 0);
        let (st, _, err) = inv.run(&Sort, &["nofile"]).await;
        assert_eq!(
            (st, err.as_str()),
            (2, "sort: cannot read: nofile: No such file or directory\n")
        );
        assert_eq!(sort("", &["-k", "0"]).await.0, 2);
        assert_eq!(sort("", &["-t", "ab"]).await.0, 2);
        assert_eq!(sort("", &["--bogus"]).await.0, 2);
        assert_eq!(sort("\u{ff}\x00\n\x01\n", &[]).await.0, 0);
    }
}

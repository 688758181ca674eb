//! `diff`: compare files line by line, GNU diffutils-style: normal, unified (`-u`) and
//! context (`-c`) output, `-q`/`-s` reports, binary files, and directories (`-r`, `-N`).
//!
//! Lines are compared through keys (`-i`, `-w`, `-b` normalise them), the edit script is
//! Myers' (linear space, deletions first on ties, as GNU), and change runs are then slid the way GNU
//! slides them (up as far as they go, down as far as they go, back to meet a change in the
//! other file) so hunks land where GNU puts them. Both files are held in memory, charged to
//! the session's budget.

use std::collections::HashMap;
use std::time::SystemTime;

use async_trait::async_trait;

use super::util::{BufOut, MAX_DEPTH, utc};
use crate::fs::{FsError, Metadata};
use crate::{Charge, CmdResult, Command, Context, Interrupt};

/// Largest file diff reads: it holds both files whole, like GNU.
const MAX_FILE: u64 = 256 * 1024 * 1024;

/// How many bytes at the start decide whether a file is binary (a NUL among them).
const BINARY_PROBE: usize = 8 * 1024;

const HELP: &str = "Usage: diff [OPTION]... FILES
Compare FILES line by line.

  -q, --brief                   report only when files differ
  -s, --report-identical-files  report when two files are the same
  -c, -C NUM, --context[=NUM]   output NUM (default 3) lines of copied context
  -u, -U NUM, --unified[=NUM]   output NUM (default 3) lines of unified context
  -r, --recursive               recursively compare any subdirectories found
  -N, --new-file                treat absent files as empty
  -i, --ignore-case             ignore case differences in file contents
  -b, --ignore-space-change     ignore changes in the amount of white space
  -w, --ignore-all-space        ignore all white space
  -B, --ignore-blank-lines      ignore changes where lines are all blank
  -Z, --ignore-trailing-space   ignore white space at line end
      --strip-trailing-cr       strip trailing carriage return on input
  -a, --text                    treat all files as text
      --label LABEL             use LABEL instead of file name and timestamp
      --help                    display this help and exit

Exit status is 0 if inputs are the same, 1 if different, 2 if trouble.
";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Normal,
    Unified(usize),
    Context(usize),
}

#[derive(Debug, Default)]
struct Opts {
    format: Option<Format>,
    brief: bool,
    report_same: bool,
    recursive: bool,
    new_file: bool,
    icase: bool,
    space_change: bool,
    all_space: bool,
    blank_lines: bool,
    trailing_space: bool,
    /// `--strip-trailing-cr`: a CR before a line's end is not compared (it is still shown).
    strip_cr: bool,
    text: bool,
    labels: Vec<String>,
    /// The options as given, for the `diff -r a/x b/x` lines between files of directories.
    shown: Vec<String>,
    operands: Vec<String>,
}

fn usage_error(msg: &str) -> String {
    format!("diff: {msg}\ndiff: Try 'diff --help' for more information.\n")
}

fn parse_num(v: &str, what: &str) -> Result<usize, String> {
    v.parse()
        .map_err(|_| usage_error(&format!("invalid {what} length '{v}'")))
}

fn parse_opts(args: &[String]) -> Result<Option<Opts>, String> {
    let mut o = Opts::default();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if only_operands || a == "-" || !a.starts_with('-') {
            o.operands.push(a.clone());
            continue;
        }
        if a == "--" {
            only_operands = true;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, val) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let take = |i: &mut usize| -> Result<String, String> {
                if let Some(v) = &val {
                    return Ok(v.clone());
                }
                let v = args.get(*i).cloned().ok_or_else(|| {
                    usage_error(&format!("option '--{name}' requires an argument"))
                })?;
                *i += 1;
                Ok(v)
            };
            match name {
                "help" => return Ok(None),
                "brief" => o.brief = true,
                "report-identical-files" => o.report_same = true,
                "recursive" => o.recursive = true,
                "new-file" => o.new_file = true,
                "ignore-case" => o.icase = true,
                "ignore-space-change" => o.space_change = true,
                "ignore-all-space" => o.all_space = true,
                "ignore-blank-lines" => o.blank_lines = true,
                "ignore-trailing-space" => o.trailing_space = true,
                "strip-trailing-cr" => o.strip_cr = true,
                "text" => o.text = true,
                "normal" => o.format = Some(Format::Normal),
                "label" => o.labels.push(take(&mut i)?),
                "unified" => {
                    let n = match &val {
                        Some(v) => parse_num(v, "context")?,
                        None => 3,
                    };
                    o.format = Some(Format::Unified(n));
                }
                "context" => {
                    let n = match &val {
                        Some(v) => parse_num(v, "context")?,
                        None => 3,
                    };
                    o.format = Some(Format::Context(n));
                }
                _ => return Err(usage_error(&format!("unrecognized option '{a}'"))),
            }
            o.shown.push(a.clone());
            continue;
        }
        o.shown.push(a.clone());
        let flags: Vec<char> = a[1..].chars().collect();
        let mut k = 0;
        while k < flags.len() {
            let c = flags[k];
            k += 1;
            match c {
                'q' => o.brief = true,
                's' => o.report_same = true,
                'r' => o.recursive = true,
                'N' => o.new_file = true,
                'i' => o.icase = true,
                'b' => o.space_change = true,
                'w' => o.all_space = true,
                'B' => o.blank_lines = true,
                'Z' => o.trailing_space = true,
                'a' => o.text = true,
                'u' => o.format = Some(Format::Unified(3)),
                'c' => o.format = Some(Format::Context(3)),
                'U' | 'C' => {
                    let v: String = if k < flags.len() {
                        let v = flags[k..].iter().collect();
                        k = flags.len();
                        v
                    } else {
                        let v = args.get(i).cloned().ok_or_else(|| {
                            usage_error(&format!("option requires an argument -- '{c}'"))
                        })?;
                        i += 1;
                        o.shown.push(v.clone());
                        v
                    };
                    let n = parse_num(&v, "context")?;
                    o.format = Some(if c == 'U' {
                        Format::Unified(n)
                    } else {
                        Format::Context(n)
                    });
                }
                _ => return Err(usage_error(&format!("invalid option -- '{c}'"))),
            }
        }
    }
    Ok(Some(o))
}

/// One side of a comparison: its name as shown and its content, split in lines.
struct Side {
    name: String,
    /// What the header shows instead of the name and time (`--label`).
    label: Option<String>,
    mtime: Option<SystemTime>,
    data: Vec<u8>,
    _charge: Charge,
}

impl Side {
    /// Lines, each without its `\n`; and whether the last one had none.
    fn lines(&self) -> (Vec<&[u8]>, bool) {
        let mut lines: Vec<&[u8]> = self.data.split(|&b| b == b'\n').collect();
        let missing_nl = match lines.last() {
            Some(&[]) => {
                lines.pop();
                false
            }
            Some(_) => true,
            None => false,
        };
        (lines, missing_nl)
    }
}

struct Differ<'a> {
    ctx: &'a Context,
    o: Opts,
    out: BufOut<'a>,
}

pub struct Diff;

#[async_trait]
impl Command for Diff {
    fn name(&self) -> &'static str {
        "diff"
    }
    fn summary(&self) -> &'static str {
        "compare files line by line"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let o = match parse_opts(&args) {
            Ok(Some(o)) => o,
            Ok(None) => {
                ctx.out(HELP).await?;
                return Ok(0);
            }
            Err(msg) => {
                ctx.err(msg).await;
                return Ok(2);
            }
        };
        match o.operands.as_slice() {
            [] => {
                ctx.err(usage_error("missing operand after 'diff'")).await;
                return Ok(2);
            }
            [one] => {
                ctx.err(usage_error(&format!("missing operand after '{one}'")))
                    .await;
                return Ok(2);
            }
            [_, _, extra, ..] => {
                ctx.err(usage_error(&format!("extra operand '{extra}'")))
                    .await;
                return Ok(2);
            }
            [_, _] => {}
        }
        let (a, b) = (o.operands[0].clone(), o.operands[1].clone());
        let mut d = Differ {
            ctx,
            o,
            out: BufOut::new(ctx),
        };
        let st = d.top(&a, &b).await;
        d.out.flush().await?;
        st
    }
}

impl<'a> Differ<'a> {
    async fn meta(&self, name: &str) -> Result<Option<Metadata>, FsError> {
        if name == "-" {
            return Ok(None);
        }
        self.ctx.fs.stat(&self.ctx.path(name)).await.map(Some)
    }

    async fn top(&mut self, a: &str, b: &str) -> CmdResult {
        let ma = self.meta(a).await;
        let mb = self.meta(b).await;
        let (ma, mb) = match (ma, mb) {
            // GNU reports each operand it cannot find.
            (Err(e), Err(f)) => {
                self.trouble(a, e).await?;
                return self.trouble(b, f).await;
            }
            (Err(e), _) => return self.trouble(a, e).await,
            (_, Err(e)) => return self.trouble(b, e).await,
            (Ok(x), Ok(y)) => (x, y),
        };
        let da = ma.as_ref().is_some_and(Metadata::is_dir);
        let db = mb.as_ref().is_some_and(Metadata::is_dir);
        match (da, db) {
            (true, true) => self.dirs(a, b, 0).await,
            (true, false) => {
                let a2 = join(a, super::util::base_name(b));
                self.files(&a2, b, false).await
            }
            (false, true) => {
                let b2 = join(b, super::util::base_name(a));
                self.files(a, &b2, false).await
            }
            (false, false) => self.files(a, b, false).await,
        }
    }

    async fn trouble(&mut self, name: &str, e: FsError) -> CmdResult {
        self.out.flush().await?;
        self.ctx.warn("diff", format!("{name}: {e}")).await;
        Ok(2)
    }

    async fn read_side(
        &mut self,
        name: &str,
        absent: bool,
    ) -> Result<Result<Side, FsError>, Interrupt> {
        let mut charge = self.ctx.budget.empty_charge();
        if absent {
            return Ok(Ok(Side {
                name: name.to_string(),
                label: None,
                mtime: Some(SystemTime::UNIX_EPOCH),
                data: Vec::new(),
                _charge: charge,
            }));
        }
        let mut reader = match super::util::Reader::open(self.ctx, name).await {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let data = match reader.read_to_end(MAX_FILE as usize, &mut charge).await? {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        let mtime = if name == "-" {
            Some(SystemTime::now())
        } else {
            self.ctx
                .fs
                .stat(&self.ctx.path(name))
                .await
                .ok()
                .map(|m| m.mtime)
        };
        Ok(Ok(Side {
            name: name.to_string(),
            label: None,
            mtime,
            data,
            _charge: charge,
        }))
    }

    /// Compares two files (`in_dir`: reached from a directory comparison, which prints
    /// the `diff …` line before their differences).
    async fn files(&mut self, a: &str, b: &str, in_dir: bool) -> CmdResult {
        self.files_absent(a, b, in_dir, false, false).await
    }

    async fn files_absent(
        &mut self,
        a: &str,
        b: &str,
        in_dir: bool,
        a_absent: bool,
        b_absent: bool,
    ) -> CmdResult {
        let mut sa = match self.read_side(a, a_absent).await? {
            Ok(s) => s,
            Err(e) => return self.trouble(a, e).await,
        };
        let mut sb = match self.read_side(b, b_absent).await? {
            Ok(s) => s,
            Err(e) => return self.trouble(b, e).await,
        };
        if let Some(l) = self.o.labels.first() {
            sa.label = Some(l.clone());
        }
        if let Some(l) = self.o.labels.get(1) {
            sb.label = Some(l.clone());
        }
        if sa.data == sb.data {
            if self.o.report_same {
                self.out
                    .write(format!("Files {a} and {b} are identical\n").as_bytes())
                    .await?;
            }
            return Ok(0);
        }
        let binary = !self.o.text
            && (sa.data[..sa.data.len().min(BINARY_PROBE)].contains(&0)
                || sb.data[..sb.data.len().min(BINARY_PROBE)].contains(&0));
        if binary || self.o.brief {
            let what = if binary { "Binary files" } else { "Files" };
            self.out
                .write(format!("{what} {a} and {b} differ\n").as_bytes())
                .await?;
            return Ok(1);
        }
        let (la, na) = sa.lines();
        let (lb, nb) = sb.lines();
        let hunks = self.changes(&la, &lb, na, nb).await?;
        if hunks.is_empty() {
            return Ok(0);
        }
        if in_dir {
            let mut line = String::from("diff");
            for s in &self.o.shown {
                line.push(' ');
                line.push_str(s);
            }
            self.out
                .write(format!("{line} {a} {b}\n").as_bytes())
                .await?;
        }
        let text = match self.o.format.unwrap_or(Format::Normal) {
            Format::Normal => normal(&hunks, &la, &lb, na, nb),
            Format::Unified(n) => {
                let mut t = header("---", &sa, false);
                t.extend(header("+++", &sb, false));
                t.extend(unified(&hunks, &la, &lb, na, nb, n));
                t
            }
            Format::Context(n) => {
                let mut t = header("***", &sa, true);
                t.extend(header("---", &sb, true));
                t.extend(context(&hunks, &la, &lb, na, nb, n));
                t
            }
        };
        self.out.write(&text).await?;
        Ok(1)
    }

    /// The change runs between `a` and `b`, as GNU would place them.
    async fn changes(
        &self,
        a: &[&[u8]],
        b: &[&[u8]],
        na: bool,
        nb: bool,
    ) -> Result<Vec<Change>, Interrupt> {
        let mut ids: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut key = |l: &[u8]| {
            let k = self.key(l);
            let n = ids.len();
            *ids.entry(k).or_insert(n)
        };
        let ka: Vec<usize> = a.iter().map(|l| key(l)).collect();
        let kb: Vec<usize> = b.iter().map(|l| key(l)).collect();
        // A last line without its newline differs from the same text with one.
        let mut ka = ka;
        let mut kb = kb;
        let fresh = ids.len();
        if na && let Some(last) = ka.last_mut() {
            *last += fresh;
        }
        if nb && let Some(last) = kb.last_mut() {
            *last += fresh;
        }
        let (mut ca, mut cb) = (vec![false; ka.len()], vec![false; kb.len()]);
        myers(self.ctx, &ka, &kb, &mut ca, &mut cb).await?;
        self.ctx.checkpoint().await?;
        shift(&ka, &mut ca, &cb);
        shift(&kb, &mut cb, &ca);
        let mut changes = runs(&ca, &cb);
        if self.o.blank_lines {
            let blank = |l: &[u8]| l.iter().all(|c| c.is_ascii_whitespace());
            changes.retain(|c| {
                !(a[c.a..c.a_end].iter().all(|l| blank(l))
                    && b[c.b..c.b_end].iter().all(|l| blank(l)))
            });
        }
        Ok(changes)
    }

    /// A line as compared under `-i`, `-w`, `-b`.
    fn key(&self, l: &[u8]) -> Vec<u8> {
        let unix;
        let l = if !self.o.strip_cr {
            l
        } else if let Some(body) = l.strip_suffix(b"\r\n") {
            unix = [body, b"\n".as_slice()].concat();
            &unix
        } else {
            l.strip_suffix(b"\r").unwrap_or(l)
        };
        let mut k: Vec<u8> = if self.o.all_space {
            l.iter()
                .copied()
                .filter(|c| !c.is_ascii_whitespace())
                .collect()
        } else if self.o.space_change {
            let mut v = Vec::with_capacity(l.len());
            let mut space = false;
            for &c in l {
                if c.is_ascii_whitespace() {
                    space = true;
                } else {
                    if space {
                        v.push(b' ');
                    }
                    space = false;
                    v.push(c);
                }
            }
            v
        } else if self.o.trailing_space {
            let end = l
                .iter()
                .rposition(|c| !c.is_ascii_whitespace())
                .map_or(0, |i| i + 1);
            l[..end].to_vec()
        } else {
            l.to_vec()
        };
        if self.o.icase {
            k.make_ascii_lowercase();
        }
        k
    }

    fn dirs<'b>(
        &'b mut self,
        a: &'b str,
        b: &'b str,
        depth: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = CmdResult> + Send + 'b>> {
        Box::pin(async move {
            if depth >= MAX_DEPTH {
                self.out.flush().await?;
                self.ctx
                    .warn("diff", format!("{a}: directory nesting too deep"))
                    .await;
                return Ok(2);
            }
            let ea = match self.ctx.fs.read_dir(&self.ctx.path(a)).await {
                Ok(e) => e,
                Err(e) => return self.trouble(a, e).await,
            };
            let eb = match self.ctx.fs.read_dir(&self.ctx.path(b)).await {
                Ok(e) => e,
                Err(e) => return self.trouble(b, e).await,
            };
            let mut names: Vec<&str> = ea
                .iter()
                .chain(eb.iter())
                .map(|e| e.name.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            let mut status = 0;
            for name in names {
                self.ctx.checkpoint().await?;
                let pa = join(a, name);
                let pb = join(b, name);
                let ma = self.ctx.fs.stat(&self.ctx.path(&pa)).await.ok();
                let mb = self.ctx.fs.stat(&self.ctx.path(&pb)).await.ok();
                let st = match (ma, mb) {
                    (None, None) => 0,
                    (Some(m), None) | (None, Some(m)) if !self.o.new_file || m.is_dir() => {
                        let (dir, _) = if ea.iter().any(|e| e.name == name) {
                            (a, b)
                        } else {
                            (b, a)
                        };
                        self.out
                            .write(format!("Only in {dir}: {name}\n").as_bytes())
                            .await?;
                        1
                    }
                    (Some(_), None) => self.files_absent(&pa, &pb, true, false, true).await?,
                    (None, Some(_)) => self.files_absent(&pa, &pb, true, true, false).await?,
                    (Some(x), Some(y)) => match (x.is_dir(), y.is_dir()) {
                        (true, true) if self.o.recursive => self.dirs(&pa, &pb, depth + 1).await?,
                        (true, true) => {
                            self.out
                                .write(format!("Common subdirectories: {pa} and {pb}\n").as_bytes())
                                .await?;
                            0
                        }
                        (true, false) => {
                            self.out
                                .write(
                                    format!(
                                        "File {pa} is a directory while file {pb} is a regular file\n"
                                    )
                                    .as_bytes(),
                                )
                                .await?;
                            1
                        }
                        (false, true) => {
                            self.out
                                .write(
                                    format!(
                                        "File {pa} is a regular file while file {pb} is a directory\n"
                                    )
                                    .as_bytes(),
                                )
                                .await?;
                            1
                        }
                        (false, false) => self.files(&pa, &pb, true).await?,
                    },
                };
                status = status.max(st);
            }
            Ok(status)
        })
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Cost past which the search for a middle snake settles for the furthest-reaching
/// diagonal instead of the optimum, bounding the work on very different files (GNU has
/// the same kind of bound).
const TOO_EXPENSIVE: usize = 4096;

/// Marks in `ca`/`cb` the lines of a shortest edit script between `a` and `b`: Myers'
/// linear-space divide and conquer around middle snakes, preferring deletions on ties
/// as GNU does. Ranges wait on an explicit stack, so no input can deepen the call stack.
async fn myers(
    ctx: &Context,
    a: &[usize],
    b: &[usize],
    ca: &mut [bool],
    cb: &mut [bool],
) -> Result<(), Interrupt> {
    let size = a.len() + b.len() + 3;
    let off = b.len() as i64 + 1;
    let mut fd = vec![0i64; size];
    let mut bd = vec![0i64; size];
    let mut todo = vec![(0usize, a.len(), 0usize, b.len())];
    let mut pacer = super::util::Pacer::default();
    while let Some((mut x0, mut x1, mut y0, mut y1)) = todo.pop() {
        pacer.tick(ctx).await?;
        while x0 < x1 && y0 < y1 && a[x0] == b[y0] {
            x0 += 1;
            y0 += 1;
        }
        while x1 > x0 && y1 > y0 && a[x1 - 1] == b[y1 - 1] {
            x1 -= 1;
            y1 -= 1;
        }
        if x0 == x1 {
            cb[y0..y1].fill(true);
            continue;
        }
        if y0 == y1 {
            ca[x0..x1].fill(true);
            continue;
        }
        let (xm, ym) = middle_snake(a, b, (x0, x1, y0, y1), off, &mut fd, &mut bd);
        todo.push((xm, x1, ym, y1));
        todo.push((x0, xm, y0, ym));
    }
    Ok(())
}

/// A point on a shortest path from `(x0, y0)` to `(x1, y1)` that splits it in two.
fn middle_snake(
    a: &[usize],
    b: &[usize],
    (x0, x1, y0, y1): (usize, usize, usize, usize),
    off: i64,
    fd: &mut [i64],
    bd: &mut [i64],
) -> (usize, usize) {
    let (x0, x1, y0, y1) = (x0 as i64, x1 as i64, y0 as i64, y1 as i64);
    let ix = |d: i64| (d + off) as usize;
    let dmin = x0 - y1;
    let dmax = x1 - y0;
    let fmid = x0 - y0;
    let bmid = x1 - y1;
    let odd = (fmid - bmid) & 1 != 0;
    let (mut fmin, mut fmax, mut bmin, mut bmax) = (fmid, fmid, bmid, bmid);
    fd[ix(fmid)] = x0;
    bd[ix(bmid)] = x1;
    let mut cost = 0usize;
    loop {
        cost += 1;
        if fmin > dmin {
            fmin -= 1;
            fd[ix(fmin - 1)] = -1;
        } else {
            fmin += 1;
        }
        if fmax < dmax {
            fmax += 1;
            fd[ix(fmax + 1)] = -1;
        } else {
            fmax -= 1;
        }
        let mut d = fmax;
        while d >= fmin {
            let (lo, hi) = (fd[ix(d - 1)], fd[ix(d + 1)]);
            let mut x = if lo >= hi { lo + 1 } else { hi };
            let mut y = x - d;
            while x < x1 && y < y1 && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            fd[ix(d)] = x;
            if odd && bmin <= d && d <= bmax && bd[ix(d)] <= x {
                return (x as usize, y as usize);
            }
            d -= 2;
        }
        if bmin > dmin {
            bmin -= 1;
            bd[ix(bmin - 1)] = i64::MAX;
        } else {
            bmin += 1;
        }
        if bmax < dmax {
            bmax += 1;
            bd[ix(bmax + 1)] = i64::MAX;
        } else {
            bmax -= 1;
        }
        let mut d = bmax;
        while d >= bmin {
            let (lo, hi) = (bd[ix(d - 1)], bd[ix(d + 1)]);
            let mut x = if lo < hi { lo } else { hi - 1 };
            let mut y = x - d;
            while x > x0 && y > y0 && a[x as usize - 1] == b[y as usize - 1] {
                x -= 1;
                y -= 1;
            }
            bd[ix(d)] = x;
            if !odd && fmin <= d && d <= fmax && x <= fd[ix(d)] {
                return (x as usize, y as usize);
            }
            d -= 2;
        }
        if cost >= TOO_EXPENSIVE {
            // Settle for the forward diagonal that got furthest (largest x + y).
            let mut best = (x0, y0);
            let mut d = fmax;
            while d >= fmin {
                let x = fd[ix(d)].min(x1);
                let y = x - d;
                if (y0..=y1).contains(&y) && x + y > best.0 + best.1 {
                    best = (x, y);
                }
                d -= 2;
            }
            if best == (x0, y0) || best == (x1, y1) {
                best = (x0 + 1, y0);
            }
            return (best.0 as usize, best.1 as usize);
        }
    }
}

/// One change: lines `a..a_end` of the old file replaced by `b..b_end` of the new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Change {
    a: usize,
    a_end: usize,
    b: usize,
    b_end: usize,
}

/// Slides each run of changed lines of one file (flags `ch`, keys `k`) the way GNU does:
/// up as far as equal lines allow, merging with runs it meets, then down as far as they
/// allow, and finally back up to the last place where it sat against a change of the other
/// file (`other`), so insertions and deletions pair up into one hunk.
fn shift(k: &[usize], ch: &mut [bool], other: &[bool]) {
    let n = k.len();
    // Unchanged-line counts at which the other file has a change.
    let mut other_at = Vec::new();
    let mut unchanged = 0usize;
    let mut prev_changed = false;
    for &c in other {
        if c {
            if !prev_changed {
                other_at.push(unchanged);
            }
        } else {
            unchanged += 1;
        }
        prev_changed = c;
    }
    let aligned = |u: usize| other_at.binary_search(&u).is_ok();
    let mut i = 0;
    // Unchanged lines of this file before `i`.
    let mut u = 0usize;
    while i < n {
        if !ch[i] {
            i += 1;
            u += 1;
            continue;
        }
        let mut start = i;
        let mut end = i;
        while end < n && ch[end] {
            end += 1;
        }
        loop {
            let len = end - start;
            while start > 0 && k[start - 1] == k[end - 1] {
                start -= 1;
                end -= 1;
                ch[start] = true;
                ch[end] = false;
                u -= 1;
                while start > 0 && ch[start - 1] {
                    start -= 1;
                }
            }
            let mut best = if aligned(u) { Some(end) } else { None };
            while end < n && k[start] == k[end] {
                ch[start] = false;
                ch[end] = true;
                start += 1;
                end += 1;
                u += 1;
                while end < n && ch[end] {
                    end += 1;
                }
                if aligned(u) {
                    best = Some(end);
                }
            }
            if end - start == len {
                if let Some(b) = best {
                    while end > b {
                        start -= 1;
                        end -= 1;
                        ch[start] = true;
                        ch[end] = false;
                        u -= 1;
                    }
                }
                break;
            }
        }
        i = end;
    }
}

/// The changes as runs over both files walked together.
fn runs(ca: &[bool], cb: &[bool]) -> Vec<Change> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < ca.len() || j < cb.len() {
        let da = i < ca.len() && ca[i];
        let db = j < cb.len() && cb[j];
        if !da && !db {
            i += 1;
            j += 1;
            continue;
        }
        let (a, b) = (i, j);
        while i < ca.len() && ca[i] {
            i += 1;
        }
        while j < cb.len() && cb[j] {
            j += 1;
        }
        out.push(Change {
            a,
            a_end: i,
            b,
            b_end: j,
        });
    }
    out
}

const NO_NL: &[u8] = b"\n\\ No newline at end of file\n";

/// Appends `prefix`, line `idx` of `lines` and its end (the no-newline note for a last
/// line without one).
fn put(out: &mut Vec<u8>, prefix: &[u8], lines: &[&[u8]], idx: usize, missing_nl: bool) {
    out.extend_from_slice(prefix);
    out.extend_from_slice(lines[idx]);
    if missing_nl && idx + 1 == lines.len() {
        out.extend_from_slice(NO_NL);
    } else {
        out.push(b'\n');
    }
}

fn range(a: usize, end: usize) -> String {
    // 1-based inclusive; an empty range names the line before it.
    if end <= a {
        a.to_string()
    } else if end - a == 1 {
        end.to_string()
    } else {
        format!("{},{}", a + 1, end)
    }
}

fn normal(hunks: &[Change], a: &[&[u8]], b: &[&[u8]], na: bool, nb: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for c in hunks {
        let op = match (c.a == c.a_end, c.b == c.b_end) {
            (false, true) => 'd',
            (true, false) => 'a',
            _ => 'c',
        };
        out.extend_from_slice(
            format!("{}{op}{}\n", range(c.a, c.a_end), range(c.b, c.b_end)).as_bytes(),
        );
        for i in c.a..c.a_end {
            put(&mut out, b"< ", a, i, na);
        }
        if op == 'c' {
            out.extend_from_slice(b"---\n");
        }
        for j in c.b..c.b_end {
            put(&mut out, b"> ", b, j, nb);
        }
    }
    out
}

/// `--- name\t2020-01-01 00:00:00.000000000 +0000` (unified) or with a ctime-style date
/// (context).
fn header(mark: &str, s: &Side, ctime: bool) -> Vec<u8> {
    if let Some(label) = &s.label {
        return format!("{mark} {label}\n").into_bytes();
    }
    let t = s.mtime.unwrap_or(SystemTime::UNIX_EPOCH);
    let dt = utc(t);
    let when = if ctime {
        dt.format("%a %b %e %H:%M:%S %Y").to_string()
    } else {
        dt.format("%Y-%m-%d %H:%M:%S%.9f +0000").to_string()
    };
    format!("{mark} {}\t{when}\n", s.name).into_bytes()
}

/// Changes grouped into hunks: those whose gap is at most `2 * ctx` lines share one.
fn groups(hunks: &[Change], ctx: usize) -> Vec<&[Change]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=hunks.len() {
        if i == hunks.len() || hunks[i].a - hunks[i - 1].a_end > 2 * ctx {
            out.push(&hunks[start..i]);
            start = i;
        }
    }
    out
}

fn unified(hunks: &[Change], a: &[&[u8]], b: &[&[u8]], na: bool, nb: bool, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for g in groups(hunks, n) {
        let (first, last) = (g[0], g[g.len() - 1]);
        let a0 = first.a.saturating_sub(n);
        let b0 = first.b - (first.a - a0);
        let a1 = (last.a_end + n).min(a.len());
        let b1 = last.b_end + (a1 - last.a_end);
        let span = |s: usize, e: usize| match e - s {
            0 => format!("{s},0"),
            1 => format!("{}", s + 1),
            len => format!("{},{len}", s + 1),
        };
        out.extend_from_slice(format!("@@ -{} +{} @@\n", span(a0, a1), span(b0, b1)).as_bytes());
        let mut i = a0;
        for c in g {
            for k in i..c.a {
                put(&mut out, b" ", a, k, na);
            }
            for k in c.a..c.a_end {
                put(&mut out, b"-", a, k, na);
            }
            for k in c.b..c.b_end {
                put(&mut out, b"+", b, k, nb);
            }
            i = c.a_end;
        }
        for k in i..a1 {
            put(&mut out, b" ", a, k, na);
        }
    }
    out
}

fn context(hunks: &[Change], a: &[&[u8]], b: &[&[u8]], na: bool, nb: bool, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for g in groups(hunks, n) {
        let (first, last) = (g[0], g[g.len() - 1]);
        let a0 = first.a.saturating_sub(n);
        let b0 = first.b - (first.a - a0);
        let a1 = (last.a_end + n).min(a.len());
        let b1 = last.b_end + (a1 - last.a_end);
        let span = |s: usize, e: usize| {
            if e <= s {
                format!("{s}")
            } else if e - s == 1 {
                format!("{e}")
            } else {
                format!("{},{e}", s + 1)
            }
        };
        out.extend_from_slice(b"***************\n");
        out.extend_from_slice(format!("*** {} ****\n", span(a0, a1)).as_bytes());
        if g.iter().any(|c| c.a < c.a_end) {
            let mut i = a0;
            for c in g {
                for k in i..c.a {
                    put(&mut out, b"  ", a, k, na);
                }
                let mark: &[u8] = if c.b < c.b_end { b"! " } else { b"- " };
                for k in c.a..c.a_end {
                    put(&mut out, mark, a, k, na);
                }
                i = c.a_end;
            }
            for k in i..a1 {
                put(&mut out, b"  ", a, k, na);
            }
        }
        out.extend_from_slice(format!("--- {} ----\n", span(b0, b1)).as_bytes());
        if g.iter().any(|c| c.b < c.b_end) {
            let mut j = b0;
            for c in g {
                for k in j..c.b {
                    put(&mut out, b"  ", b, k, nb);
                }
                let mark: &[u8] = if c.a < c.a_end { b"! " } else { b"+ " };
                for k in c.b..c.b_end {
                    put(&mut out, mark, b, k, nb);
                }
                j = c.b_end;
            }
            for k in j..b1 {
                put(&mut out, b"  ", b, k, nb);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Status;
    use crate::testing::{Invocation, MemFs};

    async fn diff(files: &[(&str, &str)], args: &[&str]) -> (Status, String, String) {
        let inv = Invocation {
            fs: MemFs::with_files(files),
            ..Invocation::default()
        };
        inv.run(&Diff, args).await
    }

    #[tokio::test]
    async fn normal_and_unified() {
        let files = [("/a", "1\n2\n3\n"), ("/b", "1\n3\n4\n")];
        assert_eq!(
            diff(&files, &["a", "b"]).await,
            (1, "2d1\n< 2\n3a3\n> 4\n".into(), String::new())
        );
        let (st, out, _) = diff(&files, &["-u", "--label", "x", "--label", "y", "a", "b"]).await;
        assert_eq!(
            (st, out.as_str()),
            (1, "--- x\n+++ y\n@@ -1,3 +1,3 @@\n 1\n-2\n 3\n+4\n")
        );
        assert_eq!(diff(&files, &["a", "a"]).await.0, 0);
        assert_eq!(
            diff(&files, &["-q", "a", "b"]).await.1,
            "Files a and b differ\n"
        );
        let (st, _, err) = diff(&files, &["a", "nope"]).await;
        assert_eq!(
            (st, err.as_str()),
            (2, "diff: nope: No such file or directory\n")
        );
    }

    #[tokio::test]
    async fn no_newline_and_change() {
        let files = [("/a", "x"), ("/b", "y")];
        assert_eq!(
            diff(&files, &["a", "b"]).await.1,
            "1c1\n< x\n\\ No newline at end of file\n---\n> y\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn shifts_like_gnu() {
        // Inserting a repeated line: GNU shows the insertion after the run.
        let a = [1, 2, 3];
        let b = [1, 2, 2, 3];
        let mut ca = vec![false; 3];
        let mut cb = vec![false, true, false, false];
        shift(&a, &mut ca, &cb);
        shift(&b, &mut cb, &ca);
        assert_eq!(cb, vec![false, false, true, false]);
    }
}

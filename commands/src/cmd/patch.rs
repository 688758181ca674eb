//! `patch`: apply a diff to files, GNU patch-style. Reads unified, context and normal diffs (from
//! stdin or `-i`), finds each hunk where its context matches (at the expected line, then
//! at growing offsets forward and backward, then ignoring up to `-F` (2) context lines at
//! its ends), writes rejected hunks to `FILE.rej`, and keeps the original as `FILE.orig`
//! when a hunk did not apply exactly (GNU's backup-if-mismatch) or with `-b`. Files are
//! created from `/dev/null` diffs and removed when a diff empties them into `/dev/null`.

use async_trait::async_trait;

use super::util::{BufOut, Reader, base_name};
use crate::fs::{FsError, WriteMode};
use crate::{Charge, CmdResult, Command, Context, Interrupt};

/// Largest patch or patched file held in memory.
const MAX_INPUT: usize = 256 * 1024 * 1024;

const HELP: &str = "Usage: patch [OPTION]... [ORIGFILE [PATCHFILE]]

Apply a diff file to an original.

  -p NUM  --strip=NUM  Strip NUM leading components from file names.
  -R  --reverse  Assume patches were created with old and new files swapped.
  -i PATCHFILE  --input=PATCHFILE  Read patch from PATCHFILE instead of stdin.
  -o FILE  --output=FILE  Output patched files to FILE.
  -b  --backup  Back up the original contents of each file (FILE.orig).
  --no-backup-if-mismatch  Back up only when asked with -b.
  -F LINES  --fuzz=LINES  Set the fuzz factor to LINES for inexact matching (2).
  --dry-run  Do not actually change any files; just print what would happen.
  -s  --quiet  --silent  Work silently unless an error occurs.
  -f  --force  -t  --batch  Do not ask any questions.
  --help  Display this help and exit.
";

#[derive(Debug, Default)]
struct Opts {
    strip: Option<usize>,
    reverse: bool,
    input: Option<String>,
    output: Option<String>,
    backup: bool,
    no_backup_mismatch: bool,
    fuzz: usize,
    dry_run: bool,
    silent: bool,
    operands: Vec<String>,
}

fn usage(msg: &str) -> String {
    format!("patch: {msg}\npatch: Try 'patch --help' for more information.\n")
}

fn parse_opts(args: &[String]) -> Result<Option<Opts>, String> {
    let mut o = Opts {
        fuzz: 2,
        ..Opts::default()
    };
    let mut i = 0;
    let num = |v: &str, what: &str| -> Result<usize, String> {
        v.parse()
            .map_err(|_| format!("patch: **** {what} argument '{v}' is not a number\n"))
    };
    while i < args.len() {
        let a = args[i].clone();
        i += 1;
        if a == "-" || !a.starts_with('-') {
            o.operands.push(a);
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, val) = match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (long.to_string(), None),
            };
            let value = |i: &mut usize| -> Result<String, String> {
                if let Some(v) = &val {
                    return Ok(v.clone());
                }
                let v = args
                    .get(*i)
                    .cloned()
                    .ok_or_else(|| usage(&format!("option '--{name}' requires an argument")))?;
                *i += 1;
                Ok(v)
            };
            match name.as_str() {
                "help" => return Ok(None),
                "strip" => o.strip = Some(num(&value(&mut i)?, "strip count")?),
                "reverse" => o.reverse = true,
                "input" => o.input = Some(value(&mut i)?),
                "output" => o.output = Some(value(&mut i)?),
                "backup" => o.backup = true,
                "no-backup-if-mismatch" => o.no_backup_mismatch = true,
                "backup-if-mismatch" => o.no_backup_mismatch = false,
                "fuzz" => o.fuzz = num(&value(&mut i)?, "fuzz factor")?,
                "dry-run" => o.dry_run = true,
                "quiet" | "silent" => o.silent = true,
                "force" | "batch" | "forward" => {}
                _ => return Err(usage(&format!("unrecognized option '{a}'"))),
            }
            continue;
        }
        let chars: Vec<char> = a[1..].chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            k += 1;
            match c {
                'R' => o.reverse = true,
                'b' => o.backup = true,
                's' => o.silent = true,
                'f' | 't' | 'N' | 'E' | 'u' => {}
                'p' | 'i' | 'o' | 'F' => {
                    let v: String = if k < chars.len() {
                        let v = chars[k..].iter().collect();
                        k = chars.len();
                        v
                    } else {
                        let v = args.get(i).cloned().ok_or_else(|| {
                            usage(&format!("option requires an argument -- '{c}'"))
                        })?;
                        i += 1;
                        v
                    };
                    match c {
                        'p' => o.strip = Some(num(&v, "strip count")?),
                        'i' => o.input = Some(v),
                        'o' => o.output = Some(v),
                        _ => o.fuzz = num(&v, "fuzz factor")?,
                    }
                }
                _ => return Err(usage(&format!("invalid option -- '{c}'"))),
            }
        }
    }
    Ok(Some(o))
}

/// One line of a hunk.
#[derive(Clone, Debug, PartialEq, Eq)]
enum HLine {
    Context(Vec<u8>),
    Del(Vec<u8>),
    Add(Vec<u8>),
}

#[derive(Clone, Debug, Default)]
struct Hunk {
    /// 1-based first old line as the header says (0 for an empty old side).
    old_start: usize,
    new_start: usize,
    lines: Vec<HLine>,
    /// Old and new sides end without a newline (`\ No newline at end of file`).
    old_no_nl: bool,
    new_no_nl: bool,
}

impl Hunk {
    fn old(&self) -> Vec<&[u8]> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HLine::Context(t) | HLine::Del(t) => Some(t.as_slice()),
                HLine::Add(_) => None,
            })
            .collect()
    }
    fn new_side(&self) -> Vec<&[u8]> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HLine::Context(t) | HLine::Add(t) => Some(t.as_slice()),
                HLine::Del(_) => None,
            })
            .collect()
    }
    fn reversed(&self) -> Hunk {
        Hunk {
            old_start: self.new_start,
            new_start: self.old_start,
            lines: self
                .lines
                .iter()
                .map(|l| match l {
                    HLine::Context(t) => HLine::Context(t.clone()),
                    HLine::Del(t) => HLine::Add(t.clone()),
                    HLine::Add(t) => HLine::Del(t.clone()),
                })
                .collect(),
            old_no_nl: self.new_no_nl,
            new_no_nl: self.old_no_nl,
        }
    }
    /// Context lines before the first change and after the last.
    fn context_ends(&self) -> (usize, usize) {
        let pre = self
            .lines
            .iter()
            .take_while(|l| matches!(l, HLine::Context(_)))
            .count();
        let post = self
            .lines
            .iter()
            .rev()
            .take_while(|l| matches!(l, HLine::Context(_)))
            .count();
        (pre, post)
    }
}

/// The diff for one file.
#[derive(Debug, Default)]
struct FilePatch {
    old_name: Option<String>,
    new_name: Option<String>,
    /// The `---`/`+++` lines as given, for the `.rej` file.
    header: Vec<u8>,
    hunks: Vec<Hunk>,
    /// Input line of the first hunk, for messages.
    line: usize,
    unified: bool,
    /// A context diff (`diff -c`): its rejects are written as one.
    context: bool,
}

/// `*** 3,5 ****` (`mark` `***`, `end` `****`) or `--- 3,5 ----` → (first, last); a lone
/// number is both.
fn parse_context_range(l: &str, mark: &str, end: &str) -> Option<(usize, usize)> {
    let inner = l.trim_end().strip_prefix(mark)?.strip_suffix(end)?;
    match inner.split_once(',') {
        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
        None => {
            let a = inner.parse().ok()?;
            Some((a, a))
        }
    }
}

/// The file a `---`/`+++` (or, for a context diff, `***`/`---`) pair of lines at `i`
/// names.
fn file_header(lines: &[&[u8]], i: usize, context: bool) -> FilePatch {
    let name = |l: &[u8]| {
        let l = l.strip_suffix(b"\n").unwrap_or(l);
        header_name(l.get(4..).unwrap_or_default())
    };
    FilePatch {
        old_name: Some(name(lines[i])),
        new_name: Some(name(lines[i + 1])),
        header: [lines[i], lines[i + 1]].concat(),
        hunks: Vec::new(),
        line: i + 3,
        unified: !context,
        context,
    }
}

/// One section of a context hunk: each line's mark (` `, `-`, `+`, `!`) and text, and
/// whether its last line had no newline.
fn context_section(
    lines: &[&[u8]],
    i: &mut usize,
    stop: impl Fn(&[u8]) -> bool,
) -> (Vec<(u8, Vec<u8>)>, bool) {
    let mut out = Vec::new();
    let mut no_nl = false;
    while let Some(&l) = lines.get(*i) {
        if stop(l) {
            break;
        }
        let t = l.strip_suffix(b"\n").unwrap_or(l);
        if t.starts_with(b"\\") {
            no_nl = true;
        } else if t.len() >= 2 && b" -+!".contains(&t[0]) && t[1] == b' ' {
            out.push((t[0], t[2..].to_vec()));
        } else if t.is_empty() {
            out.push((b' ', Vec::new()));
        } else {
            break;
        }
        *i += 1;
    }
    (out, no_nl)
}

/// A context hunk's two sections as one list of lines: an omitted section is the other's
/// common lines; a run of `!` lines is the old run deleted, then the new one added.
fn merge_context(old: Vec<(u8, Vec<u8>)>, new: Vec<(u8, Vec<u8>)>) -> Vec<HLine> {
    let common = |v: &[(u8, Vec<u8>)]| -> Vec<(u8, Vec<u8>)> {
        v.iter().filter(|(m, _)| *m == b' ').cloned().collect()
    };
    let old = if old.is_empty() { common(&new) } else { old };
    let new = if new.is_empty() { common(&old) } else { new };
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < old.len() || j < new.len() {
        let (om, nm) = (old.get(i).map(|l| l.0), new.get(j).map(|l| l.0));
        if om == Some(b'-') {
            out.push(HLine::Del(old[i].1.clone()));
            i += 1;
        } else if nm == Some(b'+') {
            out.push(HLine::Add(new[j].1.clone()));
            j += 1;
        } else if om == Some(b'!') || nm == Some(b'!') {
            while old.get(i).is_some_and(|l| l.0 == b'!') {
                out.push(HLine::Del(old[i].1.clone()));
                i += 1;
            }
            while new.get(j).is_some_and(|l| l.0 == b'!') {
                out.push(HLine::Add(new[j].1.clone()));
                j += 1;
            }
        } else {
            let t = old
                .get(i)
                .or(new.get(j))
                .map(|l| l.1.clone())
                .unwrap_or_default();
            out.push(HLine::Context(t));
            i += 1;
            j += 1;
        }
    }
    out
}

/// `--- name\tdate` → `name`.
fn header_name(rest: &[u8]) -> String {
    let s = String::from_utf8_lossy(rest);
    let name = s.split('\t').next().unwrap_or("");
    name.trim_end_matches(['\r', '\n']).to_string()
}

fn parse_range(s: &str) -> Option<(usize, usize)> {
    match s.split_once(',') {
        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
        None => {
            let a = s.parse().ok()?;
            Some((a, 1))
        }
    }
}

/// `@@ -a,b +c,d @@` → ((a, b), (c, d)).
fn parse_unified_header(l: &str) -> Option<((usize, usize), (usize, usize))> {
    let rest = l.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    Some((parse_range(old)?, parse_range(new)?))
}

/// `5,7c5,6` → (old range, op, new range), 1-based inclusive.
/// A 1-based inclusive line range.
type Range = (usize, usize);

fn parse_normal_command(l: &str) -> Option<(Range, char, Range)> {
    let pos = l.find(['a', 'c', 'd'])?;
    let op = l[pos..].chars().next()?;
    let r = |s: &str| -> Option<(usize, usize)> {
        match s.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => {
                let a = s.parse().ok()?;
                Some((a, a))
            }
        }
    };
    Some((r(&l[..pos])?, op, r(&l[pos + 1..])?))
}

fn parse_patch(text: &[u8]) -> Vec<FilePatch> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let strip = |l: &[u8]| -> Vec<u8> {
        let mut v = l.to_vec();
        if v.last() == Some(&b'\n') {
            v.pop();
        }
        v
    };
    let mut out: Vec<FilePatch> = Vec::new();
    let mut cur: Option<FilePatch> = None;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let ls = String::from_utf8_lossy(l);
        if l.starts_with(b"--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with(b"+++ ")) {
            out.extend(cur.take());
            cur = Some(file_header(&lines, i, false));
            i += 2;
            continue;
        }
        let is_range = |l: &[u8]| {
            let s = String::from_utf8_lossy(l);
            parse_context_range(&s, "*** ", " ****").is_some()
                || parse_context_range(&s, "--- ", " ----").is_some()
        };
        if l.starts_with(b"*** ")
            && !is_range(l)
            && lines
                .get(i + 1)
                .is_some_and(|n| n.starts_with(b"--- ") && !is_range(n))
        {
            out.extend(cur.take());
            cur = Some(file_header(&lines, i, true));
            i += 2;
            continue;
        }
        if l.starts_with(b"***************")
            && let Some(c) = cur.as_mut()
            && let Some((os, _)) = lines
                .get(i + 1)
                .and_then(|n| parse_context_range(&String::from_utf8_lossy(n), "*** ", " ****"))
        {
            i += 2;
            let new_range = |l: &[u8]| {
                parse_context_range(&String::from_utf8_lossy(l), "--- ", " ----").is_some()
            };
            let (old, old_no_nl) = context_section(&lines, &mut i, new_range);
            let Some((ns, _)) = lines
                .get(i)
                .and_then(|n| parse_context_range(&String::from_utf8_lossy(n), "--- ", " ----"))
            else {
                continue;
            };
            i += 1;
            let (new, new_no_nl) =
                context_section(&lines, &mut i, |l| l.starts_with(b"***************"));
            c.hunks.push(Hunk {
                old_start: os,
                new_start: ns,
                lines: merge_context(old, new),
                old_no_nl,
                new_no_nl,
            });
            continue;
        }
        if let Some(((os, oc), (ns, nc))) = parse_unified_header(&ls)
            && let Some(c) = cur.as_mut()
        {
            let mut h = Hunk {
                old_start: os,
                new_start: ns,
                ..Hunk::default()
            };
            let (mut olds, mut news) = (0, 0);
            i += 1;
            while i < lines.len() && (olds < oc || news < nc || lines[i].starts_with(b"\\")) {
                let t = strip(lines[i]);
                match t.first() {
                    Some(b' ') => {
                        h.lines.push(HLine::Context(t[1..].to_vec()));
                        olds += 1;
                        news += 1;
                    }
                    None => {
                        h.lines.push(HLine::Context(Vec::new()));
                        olds += 1;
                        news += 1;
                    }
                    Some(b'-') => {
                        h.lines.push(HLine::Del(t[1..].to_vec()));
                        olds += 1;
                    }
                    Some(b'+') => {
                        h.lines.push(HLine::Add(t[1..].to_vec()));
                        news += 1;
                    }
                    Some(b'\\') => match h.lines.last() {
                        Some(HLine::Del(_)) => h.old_no_nl = true,
                        Some(HLine::Add(_)) => h.new_no_nl = true,
                        _ => {
                            h.old_no_nl = true;
                            h.new_no_nl = true;
                        }
                    },
                    _ => break,
                }
                i += 1;
            }
            c.hunks.push(h);
            continue;
        }
        if let Some(((o1, o2), op, (n1, n2))) = parse_normal_command(ls.trim_end())
            && ls
                .trim_end()
                .bytes()
                .all(|b| b.is_ascii_digit() || b"acd,".contains(&b))
        {
            let c = cur.get_or_insert_with(|| FilePatch {
                line: i + 1,
                ..FilePatch::default()
            });
            // As in unified diffs, an empty side's number is the line before it.
            let mut h = Hunk {
                old_start: o1,
                new_start: n1,
                ..Hunk::default()
            };
            i += 1;
            let dels = if op == 'a' { 0 } else { o2 - o1 + 1 };
            let adds = if op == 'd' { 0 } else { n2 - n1 + 1 };
            for _ in 0..dels {
                match lines.get(i) {
                    Some(t) if t.starts_with(b"< ") => {
                        h.lines.push(HLine::Del(strip(&t[2..])));
                        i += 1;
                    }
                    _ => break,
                }
                if lines.get(i).is_some_and(|t| t.starts_with(b"\\")) {
                    h.old_no_nl = true;
                    i += 1;
                }
            }
            if op == 'c' && lines.get(i).is_some_and(|t| strip(t) == b"---") {
                i += 1;
            }
            for _ in 0..adds {
                match lines.get(i) {
                    Some(t) if t.starts_with(b"> ") => {
                        h.lines.push(HLine::Add(strip(&t[2..])));
                        i += 1;
                    }
                    _ => break,
                }
                if lines.get(i).is_some_and(|t| t.starts_with(b"\\")) {
                    h.new_no_nl = true;
                    i += 1;
                }
            }
            c.hunks.push(h);
            continue;
        }
        i += 1;
    }
    if let Some(c) = cur.take() {
        out.push(c);
    }
    out.retain(|f| !f.hunks.is_empty() || f.old_name.is_some());
    out
}

/// Where a hunk applied: the 0-based line, and the fuzz it needed.
fn locate(file: &[&[u8]], h: &Hunk, guess: usize, max_fuzz: usize) -> Option<(usize, usize)> {
    let old = h.old();
    let (pre, post) = h.context_ends();
    for fuzz in 0..=max_fuzz {
        let skip_pre = fuzz.min(pre);
        let skip_post = fuzz.min(post);
        if fuzz > 0 && skip_pre == 0 && skip_post == 0 {
            break;
        }
        let want = &old[skip_pre..old.len() - skip_post];
        let matches =
            |at: usize| at + want.len() <= file.len() && file[at..at + want.len()] == want[..];
        let g = guess + skip_pre;
        let max = file.len();
        for off in 0..=max {
            if g + off <= max && matches(g + off) {
                return Some((g + off - skip_pre, fuzz));
            }
            if off > 0 && off <= g && matches(g - off) {
                return Some((g - off - skip_pre, fuzz));
            }
            if g + off > max && off > g {
                break;
            }
        }
    }
    None
}

fn strip_name(name: &str, strip: Option<usize>) -> String {
    match strip {
        None => base_name(name).to_string(),
        Some(n) => {
            let mut rest = name;
            for _ in 0..n {
                match rest.find('/') {
                    Some(i) => rest = rest[i + 1..].trim_start_matches('/'),
                    None => return String::new(),
                }
            }
            rest.to_string()
        }
    }
}

pub struct Patch;

struct Run<'a> {
    ctx: &'a Context,
    o: Opts,
    out: BufOut<'a>,
    status: i32,
}

#[async_trait]
impl Command for Patch {
    fn name(&self) -> &'static str {
        "patch"
    }
    fn summary(&self) -> &'static str {
        "apply a diff file to an original"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut o = match parse_opts(&args) {
            Ok(Some(o)) => o,
            Ok(None) => {
                ctx.out(HELP).await?;
                return Ok(0);
            }
            Err(m) => {
                ctx.err(m).await;
                return Ok(2);
            }
        };
        if o.operands.len() > 2 {
            ctx.err(usage(&format!("extra operand '{}'", o.operands[2])))
                .await;
            return Ok(2);
        }
        if o.operands.len() == 2 && o.input.is_none() {
            o.input = Some(o.operands[1].clone());
        }
        let source = o.input.clone().unwrap_or_else(|| "-".to_string());
        let mut charge = ctx.budget.empty_charge();
        let text = match Reader::open(ctx, &source).await {
            Ok(mut r) => r.read_to_end(MAX_INPUT, &mut charge).await?,
            Err(e) => Err(e),
        };
        let text = match text {
            Ok(t) => t,
            Err(e) => {
                ctx.err(format!(
                    "patch: **** Can't open patch file {source} : {e}\n"
                ))
                .await;
                return Ok(2);
            }
        };
        let patches = parse_patch(&text);
        if patches.is_empty() {
            if !text.is_empty() {
                ctx.err("patch: **** Only garbage was found in the patch input.\n")
                    .await;
                return Ok(2);
            }
            return Ok(0);
        }
        let mut run = Run {
            ctx,
            o,
            out: BufOut::new(ctx),
            status: 0,
        };
        for p in patches {
            run.file(p).await?;
        }
        run.out.flush().await?;
        Ok(run.status)
    }
}

impl Run<'_> {
    async fn say(&mut self, s: String) -> Result<(), Interrupt> {
        if !self.o.silent {
            self.out.write(s.as_bytes()).await?;
        }
        Ok(())
    }

    /// The file a patch applies to: the operand, or the first of the old and new names
    /// that exists (the new one when the old is `/dev/null`).
    async fn target(&self, p: &FilePatch) -> (Option<String>, bool, bool) {
        let strip = self.o.strip;
        let old = p.old_name.as_deref().filter(|n| *n != "/dev/null");
        let new = p.new_name.as_deref().filter(|n| *n != "/dev/null");
        let (create, remove) = if self.o.reverse {
            (new.is_none(), old.is_none())
        } else {
            (
                old.is_none() && p.old_name.is_some(),
                new.is_none() && p.new_name.is_some(),
            )
        };
        if let Some(f) = self.o.operands.first() {
            return (Some(f.clone()), create, remove);
        }
        let names: Vec<String> = [old, new]
            .into_iter()
            .flatten()
            .map(|n| strip_name(n, strip))
            .filter(|n| !n.is_empty())
            .collect();
        for n in &names {
            if self.ctx.fs.stat(&self.ctx.path(n)).await.is_ok() {
                return (Some(n.clone()), create, remove);
            }
        }
        if create {
            return (names.into_iter().next(), true, remove);
        }
        (None, create, remove)
    }

    async fn file(&mut self, p: FilePatch) -> Result<(), Interrupt> {
        let (target, create, remove) = self.target(&p).await;
        let Some(target) = target else {
            self.say(format!(
                "can't find file to patch at input line {}\nPerhaps you used the wrong -p or --strip option?\nThe text leading up to this was:\n--------------------------\n{}--------------------------\nNo file to patch.  Skipping patch.\n",
                p.line,
                String::from_utf8_lossy(&p.header)
                    .lines()
                    .map(|l| format!("|{l}\n"))
                    .collect::<String>()
            ))
            .await?;
            let n = p.hunks.len();
            self.say(format!(
                "{n} out of {n} hunk{} ignored\n",
                if n == 1 { "" } else { "s" }
            ))
            .await?;
            self.status = self.status.max(1);
            return Ok(());
        };
        let abs = self.ctx.path(&target);
        let mut charge: Charge = self.ctx.budget.empty_charge();
        let (orig, mode) = match self.ctx.fs.stat(&abs).await {
            Ok(m) => match Reader::open(self.ctx, &target).await {
                Ok(mut r) => match r.read_to_end(MAX_INPUT, &mut charge).await? {
                    Ok(d) => (d, Some(m.mode)),
                    Err(e) => return self.fatal(&target, e).await,
                },
                Err(e) => return self.fatal(&target, e).await,
            },
            Err(FsError::NotFound) if create => (Vec::new(), None),
            Err(e) => return self.fatal(&target, e).await,
        };
        let verb = if self.o.dry_run {
            "checking"
        } else {
            "patching"
        };
        match &self.o.output {
            Some(out) if out != &target => {
                self.say(format!("{verb} file {out} (read from {target})\n"))
                    .await?
            }
            _ => self.say(format!("{verb} file {target}\n")).await?,
        }
        let mut lines: Vec<&[u8]> = orig.split(|&b| b == b'\n').collect();
        let mut no_nl = true;
        if lines.last() == Some(&&b""[..]) {
            lines.pop();
            no_nl = false;
        }
        if orig.is_empty() {
            no_nl = false;
        }
        let mut result: Vec<Vec<u8>> = Vec::new();
        let mut pos = 0usize;
        // How far the last hunk landed from where its header said.
        let mut offset: i64 = 0;
        let mut failed: Vec<&Hunk> = Vec::new();
        let mut mismatch = false;
        let mut result_no_nl = no_nl;
        let hunks: Vec<Hunk> = if self.o.reverse {
            p.hunks.iter().map(Hunk::reversed).collect()
        } else {
            p.hunks.clone()
        };
        for (n, h) in hunks.iter().enumerate() {
            self.ctx.checkpoint().await?;
            let start = if h.old().is_empty() {
                h.old_start
            } else {
                h.old_start.saturating_sub(1)
            };
            let guess = (start as i64 + offset).clamp(pos as i64, lines.len() as i64) as usize;
            let found =
                locate(&lines[pos..], h, guess - pos, self.o.fuzz).map(|(at, f)| (at + pos, f));
            let Some((at, fuzz)) = found else {
                self.say(format!("Hunk #{} FAILED at {}.\n", n + 1, h.old_start))
                    .await?;
                failed.push(&p.hunks[n]);
                continue;
            };
            let (pre, post) = h.context_ends();
            let (sp, so) = (fuzz.min(pre), fuzz.min(post));
            let old = h.old();
            let new = h.new_side();
            // Lines before the hunk, then its new side (the fuzzed context from the file).
            for l in &lines[pos..at + sp] {
                result.push(l.to_vec());
            }
            // Where the hunk landed in the patched file (1-based), as GNU reports it.
            let new_at = result.len() - sp + 1;
            for l in &new[sp..new.len() - so] {
                result.push(l.to_vec());
            }
            pos = at + old.len() - so;
            let shift = at as i64 - start as i64;
            if at + old.len() >= lines.len() {
                result_no_nl = h.new_no_nl;
            }
            if fuzz > 0 || shift != 0 {
                mismatch = true;
                let mut msg = format!("Hunk #{} succeeded at {new_at}", n + 1);
                if fuzz > 0 {
                    msg.push_str(&format!(" with fuzz {fuzz}"));
                }
                let delta = shift;
                if delta != 0 {
                    let s = if delta.abs() == 1 { "line" } else { "lines" };
                    msg.push_str(&format!(" (offset {delta} {s})"));
                }
                msg.push_str(".\n");
                self.say(msg).await?;
            }
            offset = shift;
        }
        for l in &lines[pos..] {
            result.push(l.to_vec());
        }
        let mut data = Vec::new();
        for (i, l) in result.iter().enumerate() {
            data.extend_from_slice(l);
            if i + 1 < result.len() || !result_no_nl {
                data.push(b'\n');
            }
        }
        if self.o.dry_run {
            if !failed.is_empty() {
                self.report_failed(&target, failed.len(), p.hunks.len(), None)
                    .await?;
            }
            return Ok(());
        }
        let dest = self.o.output.clone().unwrap_or_else(|| target.clone());
        let backup =
            self.o.backup || (!self.o.no_backup_mismatch && (mismatch || !failed.is_empty()));
        if backup && self.o.output.is_none() {
            self.write(&format!("{target}.orig"), &orig, mode).await?;
        }
        if remove && data.is_empty() && self.o.output.is_none() {
            if let Err(e) = self.ctx.fs.unlink(&abs).await {
                return self.fatal(&target, e).await;
            }
        } else if dest == "-" {
            self.out.write(&data).await?;
        } else if self.o.output.is_some() {
            // GNU writes -o's file through a private temporary file: a new one is 0600.
            let exists = self.ctx.fs.stat(&self.ctx.path(&dest)).await.ok();
            let mode = exists.map_or(0o600, |m| m.mode);
            self.write(&dest, &data, Some(mode)).await?;
        } else {
            self.write(&dest, &data, mode).await?;
        }
        if !failed.is_empty() {
            let mut rej = Vec::new();
            rej.extend_from_slice(&p.header);
            for h in &failed {
                rej.extend(if p.context {
                    render_context_rej(h)
                } else {
                    render_rej(h, p.unified)
                });
            }
            let name = format!("{dest}.rej");
            self.write(&name, &rej, None).await?;
            self.report_failed(&dest, failed.len(), p.hunks.len(), Some(&name))
                .await?;
        }
        Ok(())
    }

    async fn report_failed(
        &mut self,
        _target: &str,
        failed: usize,
        total: usize,
        rej: Option<&str>,
    ) -> Result<(), Interrupt> {
        let s = if total == 1 { "" } else { "s" };
        let tail = match rej {
            Some(r) => format!(" -- saving rejects to file {r}"),
            None => String::new(),
        };
        self.say(format!("{failed} out of {total} hunk{s} FAILED{tail}\n"))
            .await?;
        self.status = self.status.max(1);
        Ok(())
    }

    async fn write(&mut self, name: &str, data: &[u8], mode: Option<u32>) -> Result<(), Interrupt> {
        let abs = self.ctx.path(name);
        let r = async {
            let mut h = self.ctx.fs.open_write(&abs, WriteMode::Truncate).await?;
            if let Err(e) = h.write(data).await {
                let _ = h.close().await;
                return Err(e);
            }
            h.close().await?;
            if let Some(m) = mode {
                self.ctx.fs.chmod(&abs, m).await?;
            }
            Ok(())
        }
        .await;
        if let Err(e) = r {
            self.ctx
                .err(format!("patch: **** Can't create file {name} : {e}\n"))
                .await;
            self.status = 2;
        }
        Ok(())
    }

    async fn fatal(&mut self, name: &str, e: FsError) -> Result<(), Interrupt> {
        self.out.flush().await?;
        self.ctx
            .err(format!("patch: **** Can't open file {name} : {e}\n"))
            .await;
        self.status = 2;
        Ok(())
    }
}

/// A rejected hunk as a context diff fragment: `***************`, the old lines marked
/// `-`/`!`, the new ones `+`/`!`, a side without changes left out.
fn render_context_rej(h: &Hunk) -> Vec<u8> {
    let old = h.old();
    let new = h.new_side();
    let span = |s: usize, n: usize| match n {
        0 | 1 => format!("{s}"),
        n => format!("{s},{}", s + n - 1),
    };
    let mut out = b"***************\n".to_vec();
    out.extend_from_slice(format!("*** {} ****\n", span(h.old_start, old.len())).as_bytes());
    // Each change run: its deleted and added lines.
    let side = |out: &mut Vec<u8>, want_del: bool| {
        let mut k = 0;
        while k < h.lines.len() {
            match &h.lines[k] {
                HLine::Context(t) => {
                    out.extend_from_slice(b"  ");
                    out.extend_from_slice(t);
                    out.push(b'\n');
                    k += 1;
                }
                _ => {
                    let start = k;
                    while k < h.lines.len() && !matches!(h.lines[k], HLine::Context(_)) {
                        k += 1;
                    }
                    let run = &h.lines[start..k];
                    let dels = run.iter().any(|l| matches!(l, HLine::Del(_)));
                    let adds = run.iter().any(|l| matches!(l, HLine::Add(_)));
                    for l in run {
                        let (mine, t) = match l {
                            HLine::Del(t) => (want_del, t),
                            HLine::Add(t) => (!want_del, t),
                            HLine::Context(t) => (false, t),
                        };
                        if !mine {
                            continue;
                        }
                        let mark: &[u8] = if dels && adds {
                            b"! "
                        } else if want_del {
                            b"- "
                        } else {
                            b"+ "
                        };
                        out.extend_from_slice(mark);
                        out.extend_from_slice(t);
                        out.push(b'\n');
                    }
                }
            }
        }
    };
    if h.lines.iter().any(|l| matches!(l, HLine::Del(_))) {
        side(&mut out, true);
    }
    out.extend_from_slice(format!("--- {} ----\n", span(h.new_start, new.len())).as_bytes());
    if h.lines.iter().any(|l| matches!(l, HLine::Add(_))) {
        side(&mut out, false);
    }
    out
}

/// A rejected hunk as a unified (or normal) diff fragment.
fn render_rej(h: &Hunk, unified: bool) -> Vec<u8> {
    let old = h.old();
    let new = h.new_side();
    let mut out = Vec::new();
    if unified {
        let span = |s: usize, n: usize| match n {
            1 => format!("{s}"),
            n => format!("{s},{n}"),
        };
        out.extend_from_slice(
            format!(
                "@@ -{} +{} @@\n",
                span(h.old_start, old.len()),
                span(h.new_start, new.len())
            )
            .as_bytes(),
        );
        for l in &h.lines {
            let (c, t) = match l {
                HLine::Context(t) => (b' ', t),
                HLine::Del(t) => (b'-', t),
                HLine::Add(t) => (b'+', t),
            };
            out.push(c);
            out.extend_from_slice(t);
            out.push(b'\n');
        }
    } else {
        for l in &h.lines {
            match l {
                HLine::Del(t) => out.extend_from_slice(&[b"< ", t.as_slice(), b"\n"].concat()),
                HLine::Add(t) => out.extend_from_slice(&[b"> ", t.as_slice(), b"\n"].concat()),
                HLine::Context(_) => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn applies_unified_with_offset() {
        let fs = MemFs::with_files(&[("/f", "x\ny\n1\n2\n3\n4\n5\n")]);
        let inv = Invocation {
            fs: fs.clone(),
            stdin: b"--- f\n+++ f\n@@ -2,3 +2,3 @@\n 2\n-3\n+three\n 4\n".to_vec(),
            ..Invocation::default()
        };
        let (st, out, err) = inv.run(&Patch, &[]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (
                0,
                "patching file f\nHunk #1 succeeded at 4 (offset 2 lines).\n",
                ""
            )
        );
        assert_eq!(fs.text("/f").as_deref(), Some("x\ny\n1\n2\nthree\n4\n5\n"));
        assert_eq!(fs.text("/f.orig").as_deref(), Some("x\ny\n1\n2\n3\n4\n5\n"));
    }

    #[tokio::test]
    async fn rejects_and_normal_diffs() {
        let fs = MemFs::with_files(&[("/f", "a\nb\nc\n")]);
        let inv = Invocation {
            fs: fs.clone(),
            stdin: b"2c2\n< b\n---\n> B\n".to_vec(),
            ..Invocation::default()
        };
        let (st, out, _) = inv.run(&Patch, &["f"]).await;
        assert_eq!((st, out.as_str()), (0, "patching file f\n"));
        assert_eq!(fs.text("/f").as_deref(), Some("a\nB\nc\n"));
        let (st, out, _) = inv.run(&Patch, &["f"]).await;
        assert_eq!(
            (st, out.as_str()),
            (
                1,
                "patching file f\nHunk #1 FAILED at 2.\n1 out of 1 hunk FAILED -- saving rejects to file f.rej\n"
            )
        );
    }
}

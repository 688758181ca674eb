//! `diff`: compare files line by line, GNU diffutils-style: normal, unified (`-u`),
//! context (`-c`), ed (`-e`), RCS (`-n`) and side-by-side (`-y`) output, `-q`/`-s`
//! reports, binary files, and directories (`-r`, `-N`, `-x`/`-X`).
//!
//! Lines are compared through keys (`-i`, `-w`, `-b`, `-E` normalise them), the edit
//! script is Myers' (linear space, deletions first on ties, as GNU), and change runs are
//! then slid the way GNU slides them (up as far as they go, down as far as they go, back to
//! meet a change in the other file) so hunks land where GNU puts them ([`algo`]). Changes
//! whose lines `-B`/`-I` all ignore are marked, and each report ([`output`]) drops them as
//! GNU does. Both files are held in memory, charged to the session's budget.

mod algo;
mod output;

use std::collections::HashMap;
use std::time::SystemTime;

use async_trait::async_trait;

use self::algo::{Change, myers, runs, shift};
use self::output::{Functions, Sides, Style, Text};
use super::util::{BufOut, MAX_DEPTH, utc};
use crate::fs::{FsError, Metadata};
use crate::gnu_regex::{self, Dialect, Regex};
use crate::{Charge, CmdResult, Command, Context, Interrupt};

/// Largest file diff reads: it holds both files whole, like GNU.
const MAX_FILE: u64 = 256 * 1024 * 1024;

/// How many bytes at the start decide whether a file is binary (a NUL among them).
const BINARY_PROBE: usize = 8 * 1024;

/// Largest `-X FILE` read (patterns, one per line).
const MAX_EXCLUDE_FILE: usize = 1024 * 1024;

const HELP: &str = "Usage: diff [OPTION]... FILES
Compare FILES line by line.

      --normal                  output a normal diff (the default)
  -q, --brief                   report only when files differ
  -s, --report-identical-files  report when two files are the same
  -c, -C NUM, --context[=NUM]   output NUM (default 3) lines of copied context
  -u, -U NUM, --unified[=NUM]   output NUM (default 3) lines of unified context
  -e, --ed                      output an ed script
  -n, --rcs                     output an RCS format diff
  -y, --side-by-side            output in two columns
  -W, --width=NUM               output at most NUM (default 130) print columns
      --left-column             output only the left column of common lines
      --suppress-common-lines   do not output common lines
  -p, --show-c-function         show which C function each change is in
  -F, --show-function-line=RE   show the most recent line matching RE
      --label LABEL             use LABEL instead of file name and timestamp
  -t, --expand-tabs             expand tabs to spaces in output
  -T, --initial-tab             make tabs line up by prepending a tab
      --tabsize=NUM             tab stops every NUM (default 8) print columns
  -r, --recursive               recursively compare any subdirectories found
  -N, --new-file                treat absent files as empty
  -x, --exclude=PAT             exclude files that match PAT
  -X, --exclude-from=FILE       exclude files that match any pattern in FILE
  -i, --ignore-case             ignore case differences in file contents
  -E, --ignore-tab-expansion    ignore changes due to tab expansion
  -Z, --ignore-trailing-space   ignore white space at line end
  -b, --ignore-space-change     ignore changes in the amount of white space
  -w, --ignore-all-space        ignore all white space
  -B, --ignore-blank-lines      ignore changes where lines are all blank
  -I, --ignore-matching-lines=RE  ignore changes where all lines match RE
      --strip-trailing-cr       strip trailing carriage return on input
  -a, --text                    treat all files as text
  -d, --minimal                 try hard to find a smaller set of changes
      --help                    display this help and exit

Exit status is 0 if inputs are the same, 1 if different, 2 if trouble.
";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Normal,
    Unified(usize),
    Context(usize),
    Ed,
    Rcs,
    SideBySide,
}

#[derive(Debug, Default)]
struct Opts {
    format: Option<Format>,
    /// Two different output styles were asked for (GNU refuses them).
    conflict: bool,
    brief: bool,
    report_same: bool,
    recursive: bool,
    new_file: bool,
    icase: bool,
    space_change: bool,
    all_space: bool,
    blank_lines: bool,
    trailing_space: bool,
    /// `-E`: a tab and the spaces that reach the same column compare equal.
    tab_expansion: bool,
    /// `--strip-trailing-cr`: a CR before a line's end is not compared (it is still shown).
    strip_cr: bool,
    text: bool,
    labels: Vec<String>,
    /// `-I RE`, each a BRE.
    ignore_re: Vec<String>,
    /// `-F RE` (`-p` is `^[[:alpha:]$_]`).
    function_re: Vec<String>,
    /// `-x PAT` and the lines of `-X FILE` (read when the options are done).
    exclude: Vec<String>,
    exclude_from: Vec<String>,
    width: Option<usize>,
    left_column: bool,
    suppress_common: bool,
    expand_tabs: bool,
    initial_tab: bool,
    tabsize: Option<usize>,
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

/// A positive number for `-W` or `--tabsize` (`invalid width '0'`).
fn parse_positive(v: &str, what: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(usage_error(&format!("invalid {what} '{v}'"))),
    }
}

/// An argument as GNU shows it on the `diff -r …` line: shell-quoted when it needs to be.
fn shell_word(a: &str) -> String {
    let plain = !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "%+,-./:=@_^".contains(c));
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

impl Opts {
    fn set_format(&mut self, f: Format) {
        if self
            .format
            .is_some_and(|g| std::mem::discriminant(&g) != std::mem::discriminant(&f))
        {
            self.conflict = true;
        }
        self.format = Some(f);
    }

    /// Applies option `name` (a long name, or a short letter as a string) with its value.
    fn apply(&mut self, name: &str, val: Option<String>) -> Result<(), String> {
        let v = || val.clone().unwrap_or_default();
        match name {
            "brief" | "q" => self.brief = true,
            "report-identical-files" | "s" => self.report_same = true,
            "recursive" | "r" => self.recursive = true,
            "new-file" | "N" => self.new_file = true,
            "ignore-case" | "i" => self.icase = true,
            "ignore-space-change" | "b" => self.space_change = true,
            "ignore-all-space" | "w" => self.all_space = true,
            "ignore-blank-lines" | "B" => self.blank_lines = true,
            "ignore-trailing-space" | "Z" => self.trailing_space = true,
            "ignore-tab-expansion" | "E" => self.tab_expansion = true,
            "strip-trailing-cr" => self.strip_cr = true,
            "text" | "a" => self.text = true,
            "minimal" | "d" | "speed-large-files" => {}
            "normal" => self.set_format(Format::Normal),
            "ed" | "e" => self.set_format(Format::Ed),
            "rcs" | "n" => self.set_format(Format::Rcs),
            "side-by-side" | "y" => self.set_format(Format::SideBySide),
            "u" => self.set_format(Format::Unified(3)),
            "c" => self.set_format(Format::Context(3)),
            "unified" | "context" => {
                let n = match &val {
                    Some(v) => parse_num(v, "context")?,
                    None => 3,
                };
                self.set_format(if name == "unified" {
                    Format::Unified(n)
                } else {
                    Format::Context(n)
                });
            }
            "U" | "C" => {
                let n = parse_num(&v(), "context")?;
                self.set_format(if name == "U" {
                    Format::Unified(n)
                } else {
                    Format::Context(n)
                });
            }
            "label" | "L" => self.labels.push(v()),
            "ignore-matching-lines" | "I" => self.ignore_re.push(v()),
            "show-function-line" | "F" => self.function_re.push(v()),
            "show-c-function" | "p" => self.function_re.push("^[[:alpha:]$_]".into()),
            "exclude" | "x" => self.exclude.push(v()),
            "exclude-from" | "X" => self.exclude_from.push(v()),
            "width" | "W" => self.width = Some(parse_positive(&v(), "width")?),
            "tabsize" => self.tabsize = Some(parse_positive(&v(), "tabsize")?),
            "left-column" => self.left_column = true,
            "suppress-common-lines" => self.suppress_common = true,
            "expand-tabs" | "t" => self.expand_tabs = true,
            "initial-tab" | "T" => self.initial_tab = true,
            _ => return Err(usage_error(&format!("invalid option -- '{name}'"))),
        }
        Ok(())
    }
}

/// Long options that take a value (`--name=V` or `--name V`); `unified` and `context`
/// take one only after `=`.
const LONG_WITH_VALUE: &[&str] = &[
    "label",
    "ignore-matching-lines",
    "show-function-line",
    "exclude",
    "exclude-from",
    "width",
    "tabsize",
];

const LONG_FLAGS: &[&str] = &[
    "brief",
    "report-identical-files",
    "recursive",
    "new-file",
    "ignore-case",
    "ignore-space-change",
    "ignore-all-space",
    "ignore-blank-lines",
    "ignore-trailing-space",
    "ignore-tab-expansion",
    "strip-trailing-cr",
    "text",
    "minimal",
    "speed-large-files",
    "normal",
    "ed",
    "rcs",
    "side-by-side",
    "show-c-function",
    "left-column",
    "suppress-common-lines",
    "expand-tabs",
    "initial-tab",
    "unified",
    "context",
];

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
        o.shown.push(shell_word(a));
        if let Some(long) = a.strip_prefix("--") {
            let (name, val) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            if name == "help" {
                return Ok(None);
            }
            if LONG_WITH_VALUE.contains(&name) {
                let v = match val {
                    Some(v) => v,
                    None => {
                        let v = args.get(i).cloned().ok_or_else(|| {
                            usage_error(&format!("option '--{name}' requires an argument"))
                        })?;
                        i += 1;
                        o.shown.push(shell_word(&v));
                        v
                    }
                };
                o.apply(name, Some(v))?;
            } else if LONG_FLAGS.contains(&name) {
                if val.is_some() && name != "unified" && name != "context" {
                    return Err(usage_error(&format!(
                        "option '--{name}' doesn't allow an argument"
                    )));
                }
                o.apply(name, val)?;
            } else {
                return Err(usage_error(&format!("unrecognized option '{a}'")));
            }
            continue;
        }
        let flags: Vec<char> = a[1..].chars().collect();
        let mut k = 0;
        while k < flags.len() {
            let c = flags[k];
            k += 1;
            if "UCWIFxXL".contains(c) {
                let v: String = if k < flags.len() {
                    let v = flags[k..].iter().collect();
                    k = flags.len();
                    v
                } else {
                    let v = args.get(i).cloned().ok_or_else(|| {
                        usage_error(&format!("option requires an argument -- '{c}'"))
                    })?;
                    i += 1;
                    o.shown.push(shell_word(&v));
                    v
                };
                o.apply(&c.to_string(), Some(v))?;
            } else if "qsrNibwBZEaduceynptT".contains(c) {
                o.apply(&c.to_string(), None)?;
            } else {
                return Err(usage_error(&format!("invalid option -- '{c}'")));
            }
        }
    }
    if o.conflict {
        return Err(usage_error("conflicting output style options"));
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
    /// `-I`: the expressions joined (a line any of them matches is ignorable).
    ignore: Option<Regex>,
    /// `-F`/`-p`: the expressions joined.
    function: Option<Regex>,
    /// `-x` and `-X` patterns: names inside directories that are not compared.
    exclude: Vec<String>,
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
        let flags = gnu_regex::Flags {
            icase: o.icase,
            c_locale: gnu_regex::c_locale(&ctx.env),
            ..gnu_regex::Flags::default()
        };
        let mut regexes = Vec::new();
        for list in [&o.ignore_re, &o.function_re] {
            if list.is_empty() {
                regexes.push(None);
                continue;
            }
            let pats: Vec<&str> = list.iter().map(String::as_str).collect();
            match gnu_regex::compile_many(&pats, Dialect::Basic, flags) {
                Ok(re) => regexes.push(Some(re)),
                Err(e) => {
                    ctx.err(format!("diff: {}: {}\n", pats.join("\\|"), e.msg))
                        .await;
                    return Ok(2);
                }
            }
        }
        let function = regexes.pop().flatten();
        let ignore = regexes.pop().flatten();
        let mut exclude = o.exclude.clone();
        for file in &o.exclude_from {
            let mut charge = ctx.budget.empty_charge();
            let data = match super::util::Reader::open(ctx, file).await {
                Ok(mut r) => r.read_to_end(MAX_EXCLUDE_FILE, &mut charge).await?,
                Err(e) => Err(e),
            };
            match data {
                Ok(d) => exclude.extend(
                    String::from_utf8_lossy(&d)
                        .lines()
                        .filter(|l| !l.is_empty())
                        .map(str::to_string),
                ),
                Err(e) => {
                    ctx.warn("diff", format!("{file}: {e}")).await;
                    return Ok(2);
                }
            }
        }
        let mut d = Differ {
            ctx,
            o,
            out: BufOut::new(ctx),
            ignore,
            function,
            exclude,
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
        let format = self.o.format.unwrap_or(Format::Normal);
        if sa.data == sb.data && format != Format::SideBySide {
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
        let (mut ta, mut tb) = (
            Text {
                lines: la,
                missing_nl: na,
            },
            Text {
                lines: lb,
                missing_nl: nb,
            },
        );
        // An ed script cannot say a line has no newline: GNU completes the line and
        // says so, which is trouble (status 2).
        let mut completed = false;
        if format == Format::Ed {
            for (t, name) in [(&mut ta, a), (&mut tb, b)] {
                if t.missing_nl {
                    t.missing_nl = false;
                    completed = true;
                    self.out.flush().await?;
                    self.ctx
                        .warn("diff", format!("{name}: No newline at end of file\n"))
                        .await;
                }
            }
        }
        let hunks = self.changes(&ta, &tb).await?;
        let same = sa.data == sb.data || hunks.iter().all(|c| c.ignore);
        if same && format != Format::SideBySide {
            return Ok(if completed { 2 } else { 0 });
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
        let st = Style {
            initial_tab: self.o.initial_tab,
            expand_tabs: self.o.expand_tabs,
            tabsize: self.o.tabsize.unwrap_or(8),
        };
        let shown: Vec<Change> = hunks.iter().filter(|c| !c.ignore).copied().collect();
        let mut funcs = Functions::new(self.function.as_ref());
        let text = match format {
            Format::Normal => output::normal(&shown, &ta, &tb, &st),
            Format::Ed => output::ed(&shown, &tb),
            Format::Rcs => output::rcs(&shown, &tb),
            Format::SideBySide => {
                let sides = Sides {
                    width: self.o.width.unwrap_or(130),
                    left_column: self.o.left_column,
                    suppress_common: self.o.suppress_common,
                    c_locale: gnu_regex::c_locale(&self.ctx.env),
                };
                output::side_by_side(&hunks, &ta, &tb, &st, &sides)
            }
            Format::Unified(n) => {
                let mut t = header("---", &sa, false);
                t.extend(header("+++", &sb, false));
                t.extend(output::unified(&hunks, (&ta, &tb), n, &st, &mut funcs));
                t
            }
            Format::Context(n) => {
                let mut t = header("***", &sa, true);
                t.extend(header("---", &sb, true));
                t.extend(output::context(&hunks, (&ta, &tb), n, &st, &mut funcs));
                t
            }
        };
        self.out.write(&text).await?;
        Ok(if completed {
            2
        } else if same {
            0
        } else {
            1
        })
    }

    /// The change runs between `a` and `b`, as GNU would place them.
    async fn changes(&self, ta: &Text<'_>, tb: &Text<'_>) -> Result<Vec<Change>, Interrupt> {
        let (a, b) = (&ta.lines, &tb.lines);
        let mut ids: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut key = |l: &[u8]| {
            let k = self.key(l);
            let n = ids.len();
            *ids.entry(k).or_insert(n)
        };
        let mut ka: Vec<usize> = a.iter().map(|l| key(l)).collect();
        let mut kb: Vec<usize> = b.iter().map(|l| key(l)).collect();
        // A last line without its newline differs from the same text with one.
        let fresh = ids.len();
        if ta.missing_nl
            && let Some(last) = ka.last_mut()
        {
            *last += fresh;
        }
        if tb.missing_nl
            && let Some(last) = kb.last_mut()
        {
            *last += fresh;
        }
        let (mut ca, mut cb) = (vec![false; ka.len()], vec![false; kb.len()]);
        myers(self.ctx, &ka, &kb, &mut ca, &mut cb).await?;
        self.ctx.checkpoint().await?;
        shift(&ka, &mut ca, &cb);
        shift(&kb, &mut cb, &ca);
        let mut changes = runs(&ca, &cb);
        if self.o.blank_lines || self.ignore.is_some() {
            for c in &mut changes {
                c.ignore = a[c.a..c.a_end].iter().all(|l| self.trivial(l))
                    && b[c.b..c.b_end].iter().all(|l| self.trivial(l));
            }
        }
        Ok(changes)
    }

    /// Whether `-B`/`-I` ignore a line (GNU's `analyze_hunk`): under `-B` an empty line,
    /// or one of white space only when `-Z`, `-b` or `-w` is given too; under `-I` a
    /// line the expression matches.
    fn trivial(&self, l: &[u8]) -> bool {
        if self.o.blank_lines {
            let ws = self.o.trailing_space || self.o.space_change || self.o.all_space;
            if l.is_empty() || (ws && l.iter().all(u8::is_ascii_whitespace)) {
                return true;
            }
        }
        self.ignore
            .as_ref()
            .is_some_and(|re| re.is_match(l).unwrap_or(false))
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
        let expanded;
        let l = if self.o.tab_expansion && l.contains(&b'\t') {
            let ts = self.o.tabsize.unwrap_or(8);
            let mut v = Vec::with_capacity(l.len() + ts);
            for &c in l {
                if c == b'\t' {
                    v.resize(v.len() + ts - v.len() % ts, b' ');
                } else {
                    v.push(c);
                }
            }
            expanded = v;
            &expanded
        } else {
            l
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
            names.retain(|n| {
                !self
                    .exclude
                    .iter()
                    .any(|p| super::find::pattern::glob_match(p, n, false))
            });
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

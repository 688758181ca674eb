//! `grep`: print lines that match patterns. POSIX basic regular expressions (the default)
//! and extended ones (-E) are translated to the `regex` crate's syntax; -F takes patterns
//! literally. Matching works on bytes, so binary input is safe. `\<` and `\>` become `\b`,
//! and -w wraps the pattern in `\b…\b`, which differs from GNU for patterns that begin
//! or end with a non-word character. Back-references (`\1`) are not supported.

use std::collections::{HashMap, VecDeque};

use async_trait::async_trait;
use bytes::Bytes;
use clap::Parser;
use futures::FutureExt;
use regex::bytes::{Regex, RegexBuilder};
use tokio_util::task::AbortOnDropHandle;

use super::util::{BufOut, MAX_DEPTH, MAX_LINE, Pacer, Reader};
use crate::fs::{FileKind, FsError, FsResult, READ_CHUNK};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Largest compiled pattern: a hostile pattern must fail, not eat memory.
const MAX_REGEX_SIZE: usize = 32 * 1024 * 1024;
/// Bytes one `-B` context line's entry takes besides the line itself.
const CONTEXT_ENTRY: usize = std::mem::size_of::<(u64, Vec<u8>)>();

/// Files of a directory whose first chunk is read ahead while the ones before them are
/// searched (-r). Reading a small file can be mostly waiting (on a local store, for the
/// disk; on S3, for a request), so overlapping some of those waits makes a walk over many
/// small files about twice as fast (docs/BENCHMARKS.md; 16 did better than 8 there). A
/// read that does not wait is done at once. At most this many chunks of [`READ_CHUNK`]
/// bytes are held.
const READ_AHEAD_FILES: usize = 16;

/// Search for PATTERNS in each FILE. PATTERNS can contain multiple patterns separated by
/// newlines. When FILE is '-', read standard input. With no FILE, read '.' if recursive,
/// '-' otherwise. Exit status is 0 if any line is selected, 1 otherwise; if an error
/// occurred the exit status is 2 (unless -q selected a line).
#[derive(Parser, Debug)]
#[command(name = "grep", disable_help_flag = true)]
struct Args {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// PATTERNS are extended regular expressions.
    #[arg(short = 'E', long = "extended-regexp")]
    extended: bool,
    /// PATTERNS are strings.
    #[arg(short = 'F', long = "fixed-strings")]
    fixed: bool,
    /// PATTERNS are basic regular expressions (the default).
    #[arg(short = 'G', long = "basic-regexp")]
    basic: bool,
    /// Use PATTERNS for matching.
    #[arg(
        short = 'e',
        long = "regexp",
        value_name = "PATTERNS",
        allow_hyphen_values = true
    )]
    patterns: Vec<String>,
    /// Take PATTERNS from FILE.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pattern_files: Vec<String>,
    /// Ignore case distinctions in patterns and data.
    #[arg(short = 'i', long = "ignore-case", short_alias = 'y')]
    ignore_case: bool,
    /// Do not ignore case distinctions (the default).
    #[arg(long = "no-ignore-case")]
    no_ignore_case: bool,
    /// Match only whole words.
    #[arg(short = 'w', long = "word-regexp")]
    word: bool,
    /// Match only whole lines.
    #[arg(short = 'x', long = "line-regexp")]
    line: bool,
    /// Suppress error messages about unreadable files.
    #[arg(short = 's', long = "no-messages")]
    no_messages: bool,
    /// Select non-matching lines.
    #[arg(short = 'v', long = "invert-match")]
    invert: bool,
    /// Stop after NUM selected lines.
    #[arg(short = 'm', long = "max-count", value_name = "NUM")]
    max_count: Option<u64>,
    /// Print line number with output lines.
    #[arg(short = 'n', long = "line-number")]
    line_number: bool,
    /// Print the file name for each match.
    #[arg(short = 'H', long = "with-filename")]
    with_filename: bool,
    /// Suppress the file name prefix on output.
    #[arg(short = 'h', long = "no-filename")]
    no_filename: bool,
    /// Use LABEL as the standard input file name prefix.
    #[arg(long, value_name = "LABEL")]
    label: Option<String>,
    /// Show only nonempty parts of lines that match.
    #[arg(short = 'o', long = "only-matching")]
    only_matching: bool,
    /// Suppress all normal output.
    #[arg(short = 'q', long = "quiet", visible_alias = "silent")]
    quiet: bool,
    /// Process a binary file as if it were text.
    #[arg(short = 'a', long = "text")]
    text: bool,
    /// Search directories recursively.
    #[arg(short = 'r', long = "recursive")]
    recursive: bool,
    /// Likewise, following all symlinks.
    #[arg(short = 'R', long = "dereference-recursive")]
    dereference_recursive: bool,
    /// Print only names of FILEs with no selected lines.
    #[arg(short = 'L', long = "files-without-match")]
    files_without_match: bool,
    /// Print only names of FILEs with selected lines.
    #[arg(short = 'l', long = "files-with-matches")]
    files_with_matches: bool,
    /// Print only a count of selected lines per FILE.
    #[arg(short = 'c', long)]
    count: bool,
    /// Print NUM lines of trailing context.
    #[arg(short = 'A', long = "after-context", value_name = "NUM")]
    after: Option<usize>,
    /// Print NUM lines of leading context.
    #[arg(short = 'B', long = "before-context", value_name = "NUM")]
    before: Option<usize>,
    /// Print NUM lines of output context.
    #[arg(short = 'C', long = "context", value_name = "NUM")]
    context: Option<usize>,
    /// A data line ends in 0 byte, not newline.
    #[arg(short = 'z', long = "null-data")]
    null_data: bool,
    /// PATTERNS (unless -e or -f is given), then FILEs.
    #[arg(value_name = "PATTERNS/FILE", allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// Translates a POSIX basic regular expression into the `regex` crate's syntax.
pub(crate) fn translate_bre(p: &str) -> String {
    translate(p, false)
}

/// Translates a POSIX extended regular expression (bracket expressions and `\<`, `\>`).
pub(crate) fn translate_ere(p: &str) -> String {
    translate(p, true)
}

fn translate(p: &str, ere: bool) -> String {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    // True where a `*` would be literal in a BRE (start of the pattern or a group).
    let mut at_start = true;
    while i < chars.len() {
        let c = chars[i];
        let was_start = at_start;
        at_start = false;
        match c {
            '\\' if i + 1 < chars.len() => {
                let n = chars[i + 1];
                i += 2;
                match n {
                    '(' | ')' | '{' | '}' | '|' | '+' | '?' if !ere => {
                        out.push(n);
                        at_start = n == '(' || n == '|';
                    }
                    '<' | '>' => out.push_str("\\b"),
                    'w' | 'W' | 's' | 'S' | 'b' | 'B' => {
                        out.push('\\');
                        out.push(n);
                    }
                    'n' => out.push_str("\\n"),
                    't' => out.push_str("\\t"),
                    c if c.is_ascii_alphanumeric() => out.push_str(&regex::escape(&c.to_string())),
                    c => out.push_str(&regex::escape(&c.to_string())),
                }
                continue;
            }
            '\\' => out.push_str("\\\\"),
            '[' => {
                // A bracket expression: copy it, making the crate read it literally.
                let mut j = i + 1;
                let mut class = String::from("[");
                if j < chars.len() && chars[j] == '^' {
                    class.push('^');
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    class.push_str("\\]");
                    j += 1;
                }
                let mut closed = false;
                while j < chars.len() {
                    let d = chars[j];
                    if d == ']' {
                        closed = true;
                        j += 1;
                        break;
                    }
                    if d == '[' && j + 1 < chars.len() && matches!(chars[j + 1], ':' | '.' | '=') {
                        let kind = chars[j + 1];
                        let end = (j + 2..chars.len().saturating_sub(1))
                            .find(|&k| chars[k] == kind && chars[k + 1] == ']');
                        if let Some(end) = end {
                            let inner: String = chars[j + 2..end].iter().collect();
                            if kind == ':' {
                                class.push_str(&format!("[:{inner}:]"));
                            } else {
                                class.push_str(&regex::escape(&inner));
                            }
                            j = end + 2;
                            continue;
                        }
                    }
                    match d {
                        '\\' | '[' | '&' | '~' | '|' => {
                            class.push('\\');
                            class.push(d);
                        }
                        '-' if j + 1 < chars.len() && chars[j + 1] == ']' => class.push_str("\\-"),
                        _ => class.push(d),
                    }
                    j += 1;
                }
                if closed {
                    class.push(']');
                    out.push_str(&class);
                    i = j;
                } else {
                    // An unclosed bracket: let the crate report it.
                    out.push('[');
                    i += 1;
                }
                continue;
            }
            '*' if was_start && !ere => out.push_str("\\*"),
            '+' | '?' | '(' | ')' | '{' | '}' | '|' if !ere => {
                out.push('\\');
                out.push(c);
            }
            '(' | '|' if ere => {
                out.push(c);
                at_start = true;
            }
            '^' if !was_start && !ere => out.push_str("\\^"),
            '^' => {
                out.push('^');
                at_start = true;
            }
            '$' if !ere
                && i + 1 < chars.len()
                && !(chars[i + 1] == '\\' && matches!(chars.get(i + 2), Some(')' | '|'))) =>
            {
                out.push_str("\\$")
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}

struct Grep<'a> {
    ctx: &'a Context,
    args: &'a Args,
    re: Regex,
    /// True when the only pattern is empty: every line matches.
    show_names: bool,
    before: usize,
    after: usize,
    status_error: bool,
    any_match: bool,
}

/// How one file went.
enum Outcome {
    Done,
    /// -q found a match: stop everything.
    Quit,
}

impl Grep<'_> {
    fn is_match(&self, line: &[u8]) -> bool {
        self.re.is_match(line) != self.args.invert
    }

    async fn error(&mut self, msg: String) {
        self.status_error = true;
        if !self.args.no_messages {
            self.ctx.warn("grep", msg).await;
        }
    }

    async fn search(
        &mut self,
        out: &mut BufOut<'_>,
        name: &str,
        reader: &mut Reader,
    ) -> Result<Result<Outcome, FsError>, Interrupt> {
        let delim = if self.args.null_data { 0u8 } else { b'\n' };
        let mut lineno = 0u64;
        let mut count = 0u64;
        let mut before: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
        // What `before` holds (its lines and entries), charged to the session's budget.
        let mut before_bytes = 0usize;
        let mut before_charge = self.ctx.budget.empty_charge();
        let mut after_left = 0usize;
        let mut last_printed: Option<u64> = None;
        let mut pacer = Pacer::default();
        let listing = self.args.files_with_matches || self.args.files_without_match;
        let printing = !(self.args.quiet || self.args.count || listing);
        let mut binary = false;
        loop {
            if self.args.max_count.is_some_and(|m| count >= m) && after_left == 0 {
                break;
            }
            let rec = match reader.record(delim, MAX_LINE).await? {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    out.flush().await?;
                    return Ok(Err(e));
                }
            };
            pacer.tick(self.ctx).await?;
            lineno += 1;
            let line = rec.strip_suffix(&[delim]).unwrap_or(&rec);
            let limit_hit = self.args.max_count.is_some_and(|m| count >= m);
            let selected = !limit_hit && self.is_match(line);
            if selected {
                count += 1;
                self.any_match = true;
                if self.args.quiet {
                    return Ok(Ok(Outcome::Quit));
                }
                if listing {
                    break;
                }
                if !printing {
                    continue;
                }
                if !self.args.text && !self.args.null_data && line.contains(&0) {
                    binary = true;
                    break;
                }
                let gap = match last_printed {
                    Some(lp) => before.front().map(|(n, _)| *n).unwrap_or(lineno) > lp + 1,
                    None => false,
                };
                if (self.before > 0 || self.after > 0) && gap {
                    out.write(b"--\n").await?;
                }
                while let Some((n, l)) = before.pop_front() {
                    self.emit(out, name, n, &l, b'-').await?;
                }
                before_bytes = 0;
                before_charge.resize(0)?;
                if self.args.only_matching {
                    if !self.args.invert {
                        for m in self.re.find_iter(line) {
                            if !m.as_bytes().is_empty() {
                                self.emit(out, name, lineno, m.as_bytes(), b':').await?;
                            }
                        }
                    }
                } else {
                    self.emit(out, name, lineno, line, b':').await?;
                }
                last_printed = Some(lineno);
                after_left = self.after;
            } else if printing {
                if after_left > 0 {
                    after_left -= 1;
                    self.emit(out, name, lineno, line, b'-').await?;
                    last_printed = Some(lineno);
                } else if self.before > 0 {
                    let entry = line.len() + CONTEXT_ENTRY;
                    before_charge.resize(before_bytes + entry)?;
                    before.push_back((lineno, line.to_vec()));
                    before_bytes += entry;
                    if before.len() > self.before
                        && let Some((_, l)) = before.pop_front()
                    {
                        before_bytes -= l.len() + CONTEXT_ENTRY;
                        before_charge.resize(before_bytes)?;
                    }
                }
            }
        }
        if binary {
            out.write(format!("Binary file {name} matches\n").as_bytes())
                .await?;
        }
        if self.args.count {
            let prefix = if self.show_names {
                format!("{name}:")
            } else {
                String::new()
            };
            out.write(format!("{prefix}{count}\n").as_bytes()).await?;
        }
        if (self.args.files_with_matches && count > 0)
            || (self.args.files_without_match && count == 0)
        {
            out.write(format!("{name}\n").as_bytes()).await?;
        }
        Ok(Ok(Outcome::Done))
    }

    async fn emit(
        &self,
        out: &mut BufOut<'_>,
        name: &str,
        lineno: u64,
        line: &[u8],
        sep: u8,
    ) -> Result<(), Interrupt> {
        let mut buf = Vec::with_capacity(line.len() + name.len() + 12);
        if self.show_names {
            buf.extend_from_slice(name.as_bytes());
            buf.push(sep);
        }
        if self.args.line_number {
            buf.extend_from_slice(lineno.to_string().as_bytes());
            buf.push(sep);
        }
        buf.extend_from_slice(line);
        buf.push(if self.args.null_data { 0 } else { b'\n' });
        out.write(&buf).await
    }

    /// Searches one operand; directories are walked with -r.
    async fn operand(&mut self, out: &mut BufOut<'_>, op: &str) -> Result<Outcome, Interrupt> {
        if op == "-" {
            let label = self
                .args
                .label
                .clone()
                .unwrap_or_else(|| "(standard input)".into());
            let mut reader = Reader::stdin(self.ctx);
            return match self.search(out, &label, &mut reader).await? {
                Ok(o) => Ok(o),
                Err(e) => {
                    self.error(format!("{label}: {e}")).await;
                    Ok(Outcome::Done)
                }
            };
        }
        let recursive = self.args.recursive || self.args.dereference_recursive;
        // (shown name, depth, an operand itself, a regular file in its directory's listing)
        let mut stack = vec![(op.to_string(), 0usize, true, false)];
        let mut ahead = ReadAhead::default();
        loop {
            ahead.start(self.ctx, &stack);
            let Some((shown, depth, top, _)) = stack.pop() else {
                break;
            };
            // Taken now, so a file skipped below stops being read.
            let read_ahead = ahead.reads.remove(&shown);
            let path = self.ctx.path(&shown);
            let meta = if top || self.args.dereference_recursive {
                self.ctx.fs.stat(&path).await
            } else {
                self.ctx.fs.lstat(&path).await
            };
            let meta = match meta {
                Ok(m) => m,
                Err(e) => {
                    self.error(format!("{shown}: {e}")).await;
                    continue;
                }
            };
            if meta.is_symlink() {
                continue;
            }
            if meta.is_dir() {
                if !recursive {
                    self.error(format!("{shown}: Is a directory")).await;
                    continue;
                }
                if depth >= MAX_DEPTH {
                    self.error(format!("{shown}: directory nesting too deep"))
                        .await;
                    continue;
                }
                match self.ctx.fs.read_dir(&path).await {
                    Ok(entries) => {
                        for e in entries.into_iter().rev() {
                            let child = if shown.ends_with('/') {
                                format!("{shown}{}", e.name)
                            } else {
                                format!("{shown}/{}", e.name)
                            };
                            let file = e.meta.kind == FileKind::File;
                            stack.push((child, depth + 1, false, file));
                        }
                    }
                    Err(e) => self.error(format!("{shown}: {e}")).await,
                }
                continue;
            }
            let mut reader = match Reader::open(self.ctx, &shown).await {
                Ok(r) => r,
                Err(e) => {
                    self.error(format!("{shown}: {e}")).await;
                    continue;
                }
            };
            if let Some(read) = read_ahead {
                reader = reader.with_first_chunk(read.get().await);
            }
            match self.search(out, &shown, &mut reader).await? {
                Ok(Outcome::Quit) => return Ok(Outcome::Quit),
                Ok(Outcome::Done) => {}
                Err(e) => self.error(format!("{shown}: {e}")).await,
            }
        }
        Ok(Outcome::Done)
    }
}

/// First chunks of the next files of a walk, being read ([`READ_AHEAD_FILES`]).
#[derive(Default)]
struct ReadAhead {
    /// By shown name; the reads stop if the walk does (the handles abort on drop).
    reads: HashMap<String, Ahead>,
}

/// One file's first chunk: read at once (a store that answered without waiting: memory,
/// or a local file in the page cache), or still being read in a task of its own.
enum Ahead {
    Ready(FsResult<Bytes>),
    Running(AbortOnDropHandle<FsResult<Bytes>>),
}

impl Ahead {
    async fn get(self) -> FsResult<Bytes> {
        match self {
            Ahead::Ready(read) => read,
            Ahead::Running(task) => task.await.unwrap_or(Err(FsError::Io)),
        }
    }
}

impl ReadAhead {
    /// Starts reading the files at the top of the walk's stack (the next to be searched),
    /// up to the first entry that is not a regular file of a listing.
    fn start(&mut self, ctx: &Context, stack: &[(String, usize, bool, bool)]) {
        for (shown, ..) in stack
            .iter()
            .rev()
            .take_while(|(.., file)| *file)
            .take(READ_AHEAD_FILES)
        {
            if self.reads.contains_key(shown) {
                continue;
            }
            let (fs, path) = (ctx.fs.clone(), ctx.path(shown));
            let mut read = Box::pin(async move { fs.read_at(&path, 0, READ_CHUNK).await });
            // Tried here first: a task of its own, and waking it, costs more than a read
            // that does not wait.
            let ahead = match (&mut read).now_or_never() {
                Some(done) => Ahead::Ready(done),
                None => Ahead::Running(AbortOnDropHandle::new(tokio::spawn(read))),
            };
            self.reads.insert(shown.clone(), ahead);
        }
    }
}

pub struct GrepCmd;

#[async_trait]
impl Command for GrepCmd {
    fn name(&self) -> &'static str {
        "grep"
    }
    fn summary(&self) -> &'static str {
        "print lines that match patterns"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mut patterns: Vec<String> = Vec::new();
        let mut rest = args.rest.clone();
        for p in &args.patterns {
            patterns.extend(p.split('\n').map(str::to_string));
        }
        // The patterns read from files, charged while they are held.
        let mut pattern_charges = Vec::new();
        for f in &args.pattern_files {
            let mut reader = match Reader::open(ctx, f).await {
                Ok(r) => r,
                Err(e) => {
                    ctx.warn("grep", format!("{f}: {e}")).await;
                    return Ok(2);
                }
            };
            let mut charge = ctx.budget.empty_charge();
            match reader.read_to_end(MAX_REGEX_SIZE, &mut charge).await? {
                Ok(d) => {
                    let text = String::from_utf8_lossy(&d);
                    patterns.extend(text.lines().map(str::to_string));
                    pattern_charges.push(charge);
                }
                Err(e) => {
                    ctx.warn("grep", format!("{f}: {e}")).await;
                    return Ok(2);
                }
            }
        }
        if args.patterns.is_empty() && args.pattern_files.is_empty() {
            if rest.is_empty() {
                ctx.err("Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n").await;
                return Ok(2);
            }
            let p = rest.remove(0);
            patterns.extend(p.split('\n').map(str::to_string));
        }
        let parts: Vec<String> = patterns
            .iter()
            .map(|p| {
                let body = if args.fixed {
                    regex::escape(p)
                } else if args.extended {
                    translate_ere(p)
                } else {
                    translate_bre(p)
                };
                let body = if args.line {
                    format!("^(?:{body})$")
                } else if args.word {
                    format!("\\b(?:{body})\\b")
                } else {
                    body
                };
                format!("(?:{body})")
            })
            .collect();
        let joined = if parts.is_empty() {
            "[^\\s\\S]".to_string()
        } else {
            parts.join("|")
        };
        let re = match RegexBuilder::new(&joined)
            .case_insensitive(args.ignore_case && !args.no_ignore_case)
            .multi_line(false)
            .size_limit(MAX_REGEX_SIZE)
            .build()
        {
            Ok(r) => r,
            Err(e) => {
                let msg = e.to_string();
                let last = msg
                    .lines()
                    .rev()
                    .find(|l| l.starts_with("error:"))
                    .unwrap_or("invalid regular expression");
                ctx.warn("grep", last.trim_start_matches("error: ")).await;
                return Ok(2);
            }
        };
        let recursive = args.recursive || args.dereference_recursive;
        let files = if rest.is_empty() {
            vec![if recursive {
                ".".to_string()
            } else {
                "-".to_string()
            }]
        } else {
            rest
        };
        let implicit_dot = recursive
            && args.rest.len()
                <= usize::from(args.patterns.is_empty() && args.pattern_files.is_empty());
        let show_names = !args.no_filename && (args.with_filename || files.len() > 1 || recursive);
        let ctx_n = args.context.unwrap_or(0);
        let mut grep = Grep {
            ctx,
            args: &args,
            re,
            show_names,
            before: args.before.unwrap_or(ctx_n),
            after: args.after.unwrap_or(ctx_n),
            status_error: false,
            any_match: false,
        };
        let mut out = BufOut::new(ctx);
        for f in &files {
            let outcome = if implicit_dot {
                // `grep -r pat` searches '.' but names files without the "./".
                let mut res = Outcome::Done;
                if let Ok(entries) = ctx.fs.read_dir(&ctx.cwd).await {
                    for e in entries {
                        if let Outcome::Quit = grep.operand(&mut out, &e.name).await? {
                            res = Outcome::Quit;
                            break;
                        }
                    }
                }
                res
            } else {
                grep.operand(&mut out, f).await?
            };
            if let Outcome::Quit = outcome {
                break;
            }
        }
        out.flush().await?;
        Ok(if grep.status_error && !(args.quiet && grep.any_match) {
            2
        } else if grep.any_match {
            0
        } else {
            1
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs, TINY_BUDGET};

    fn inv(stdin: &str) -> Invocation {
        let fs = MemFs::with_files(&[
            ("/a", "apple\nbanana\ncherry\n"),
            ("/b", "Apple pie\nplum\n"),
            ("/d/x", "apple x\n"),
            ("/d/s/y", "no\napple y\n"),
            ("/bin", "apple\0binary\n"),
        ]);
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            fs,
            ..Invocation::default()
        }
    }

    async fn grep(stdin: &str, args: &[&str]) -> (i32, String, String) {
        inv(stdin).run(&GrepCmd, args).await
    }

    #[test]
    fn bre_translation() {
        assert_eq!(translate_bre(r"a\(b\)\{2\}"), "a(b){2}");
        assert_eq!(translate_bre("a+b?(c)|{d}"), r"a\+b\?\(c\)\|\{d\}");
        assert_eq!(translate_bre(r"a\|b\+"), "a|b+");
        assert_eq!(translate_bre("*a"), r"\*a");
        assert_eq!(translate_bre("[[:digit:]]x"), "[[:digit:]]x");
        assert_eq!(translate_bre(r"[\]"), r"[\\]");
        assert_eq!(translate_bre("[]a]"), r"[\]a]");
        assert_eq!(translate_bre("a^b$c$"), r"a\^b\$c$");
        assert_eq!(translate_ere("(a|b)+"), "(a|b)+");
    }

    #[tokio::test]
    async fn basic_matching() {
        assert_eq!(
            grep("", &["an", "a"]).await,
            (0, "banana\n".into(), String::new())
        );
        assert_eq!(
            grep("", &["-i", "apple", "a", "b"]).await.1,
            "a:apple\nb:Apple pie\n"
        );
        assert_eq!(grep("", &["-v", "an", "a"]).await.1, "apple\ncherry\n");
        assert_eq!(
            grep("", &["-n", "-e", "apple", "-e", "cherry", "a"])
                .await
                .1,
            "1:apple\n3:cherry\n"
        );
        assert_eq!(grep("", &["-c", "a", "a", "b"]).await.1, "a:2\nb:0\n");
        assert_eq!(grep("", &["-l", "p", "a", "b"]).await.1, "a\nb\n");
        assert_eq!(grep("", &["-L", "cherry", "a", "b"]).await.1, "b\n");
        assert_eq!(grep("", &["-o", "an", "a"]).await.1, "an\nan\n");
        assert_eq!(grep("", &["-x", "plum", "b"]).await.1, "plum\n");
        assert_eq!(grep("", &["-w", "pie", "b"]).await.1, "Apple pie\n");
        assert_eq!(grep("", &["-w", "pi", "b"]).await.0, 1);
        assert_eq!(grep("", &["-h", "plum", "a", "b"]).await.1, "plum\n");
        assert_eq!(grep("", &["-H", "plum", "b"]).await.1, "b:plum\n");
        assert_eq!(grep("", &["-F", "a.", "a"]).await.0, 1);
        assert_eq!(
            grep("", &["-E", "^(ch|ba)", "a"]).await.1,
            "banana\ncherry\n"
        );
        assert_eq!(grep("", &[r"^\(ch\|ba\)", "a"]).await.1, "banana\ncherry\n");
        assert_eq!(grep("", &["n\\{2\\}", "a"]).await.0, 1);
        assert_eq!(grep("", &["a+", "a"]).await.0, 1);
        assert_eq!(grep("x+y\n", &["x+y"]).await.1, "x+y\n");
        assert_eq!(grep("", &["-m", "1", "a", "a"]).await.1, "apple\n");
    }

    #[tokio::test]
    async fn stdin_recursion_and_binary() {
        assert_eq!(
            grep("one\ntwo\n", &["-H", "two"]).await.1,
            "(standard input):two\n"
        );
        let (st, out, _) = grep("", &["-r", "apple", "d"]).await;
        assert_eq!((st, out.as_str()), (0, "d/s/y:apple y\nd/x:apple x\n"));
        let mut i = inv("");
        i.cwd = "/d".into();
        assert_eq!(
            i.run(&GrepCmd, &["-r", "apple"]).await.1,
            "s/y:apple y\nx:apple x\n"
        );
        assert_eq!(
            grep("", &["apple", "bin"]).await.1,
            "Binary file bin matches\n"
        );
        assert_eq!(grep("", &["-a", "-c", "apple", "bin"]).await.1, "1\n");
    }

    /// -r reads the next files ahead; what is printed, and in what order, stays the walk's.
    #[tokio::test]
    async fn recursion_reads_ahead_in_order() {
        let fs = MemFs::new();
        let mut hits = Vec::new();
        for i in 0..READ_AHEAD_FILES * 2 + 5 {
            let name = format!("t/f{i:02}");
            if i % 5 == 0 {
                fs.put(&format!("/{name}"), b"hit\nmiss\n");
                hits.push(name);
            } else {
                fs.put(&format!("/{name}"), b"miss\n");
            }
            if i == 7 {
                fs.put("/t/f07.d/inner", b"hit inside\n");
                hits.push("t/f07.d/inner".into());
                fs.put_symlink("f00", "/t/f07link");
            }
        }
        fs.fail_read_on("/t/f10");
        hits.retain(|h| h != "t/f10");
        let run = async |args: &[&str]| {
            Invocation {
                fs: fs.clone(),
                ..Invocation::default()
            }
            .run(&GrepCmd, args)
            .await
        };
        let (st, out, err) = run(&["-r", "-l", "hit", "t"]).await;
        assert_eq!(st, 2);
        assert_eq!(
            out,
            hits.iter().map(|h| format!("{h}\n")).collect::<String>()
        );
        assert_eq!(err, "grep: t/f10: Input/output error\n");
        let (_, out, _) = run(&["-r", "-s", "hit", "t"]).await;
        assert!(out.starts_with("t/f00:hit\nt/f05:hit\nt/f07.d/inner:hit inside\nt/f15:hit\n"));
        assert_eq!(run(&["-r", "-q", "hit", "t"]).await.0, 0);
    }

    #[tokio::test]
    async fn context() {
        let data = "1\n2\nm\n3\n4\n5\n6\nm\n7\n";
        assert_eq!(grep(data, &["-A", "1", "m"]).await.1, "m\n3\n--\nm\n7\n");
        assert_eq!(
            grep(data, &["-B", "1", "-n", "m"]).await.1,
            "2-2\n3:m\n--\n7-6\n8:m\n"
        );
        assert_eq!(grep(data, &["-C", "3", "m"]).await.1, data);
    }

    #[tokio::test]
    async fn statuses_and_errors() {
        assert_eq!(grep("", &["zzz", "a"]).await.0, 1);
        let (st, out, err) = grep("", &["apple", "nofile", "a"]).await;
        assert_eq!((st, out.as_str()), (2, "a:apple\n"));
        assert_eq!(err, "grep: nofile: No such file or directory\n");
        assert_eq!(
            grep("", &["-s", "apple", "nofile"]).await,
            (2, String::new(), String::new())
        );
        assert_eq!(
            grep("", &["-q", "apple", "nofile", "a"]).await,
            (
                0,
                String::new(),
                "grep: nofile: No such file or directory\n".into()
            )
        );
        let (st, _, err) = grep("", &["apple", "d"]).await;
        assert_eq!((st, err.as_str()), (2, "grep: d: Is a directory\n"));
        let (st, _, err) = grep("", &["-E", "(", "a"]).await;
        assert_eq!(st, 2);
        assert!(err.starts_with("grep: "), "{err}");
        assert_eq!(grep("", &[]).await.0, 2);
        assert_eq!(grep("", &["--bogus", "x"]).await.0, 2);
    }

    #[tokio::test]
    async fn what_grep_holds_is_charged() {
        let long = format!("{}\n", "x".repeat(4 * TINY_BUDGET));
        inv(&long)
            .out_of_memory(&GrepCmd, &["x"], TINY_BUDGET)
            .await;
        // -B N holds up to N lines before a match.
        let lines: String = (0..20)
            .map(|i| format!("line {i}{}\n", "-".repeat(100)))
            .collect();
        inv(&lines)
            .out_of_memory(&GrepCmd, &["-B", "15", "nomatch"], TINY_BUDGET)
            .await;
        // -f holds the patterns.
        let fs = MemFs::with_files(&[("/p", &"x\n".repeat(TINY_BUDGET))]);
        Invocation { fs, ..inv("x\n") }
            .out_of_memory(&GrepCmd, &["-f", "p"], TINY_BUDGET)
            .await;
        assert_eq!(
            grep("1\n2\nx\n3\n4\nx\n", &["-B", "2", "x"]).await.1,
            "1\n2\nx\n3\n4\nx\n"
        );
        let fs = MemFs::with_files(&[("/p", "x\ny\n")]);
        let (st, out, _) = Invocation {
            fs,
            ..inv("ax\nb\ncy\n")
        }
        .run(&GrepCmd, &["-f", "p"])
        .await;
        assert_eq!((st, out.as_str()), (0, "ax\ncy\n"));
    }
}

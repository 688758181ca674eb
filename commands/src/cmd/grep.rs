//! `grep`, `egrep`, `fgrep`: print lines that match patterns, as GNU grep 3.8 does.
//!
//! - [`opts`]: the command line, read as GNU's getopt_long reads it.
//! - this file: the settings, the search of one input, the walk of operands (`-r`), tests.
//!
//! Patterns are compiled by [`crate::gnu_regex`] (GNU's BRE/ERE, errors and warnings,
//! back-references, leftmost-longest `-o`). Input is read in chunks and split into lines
//! here, so a chunk holding a NUL byte makes the file binary from there on, as GNU's
//! buffer-wise check does ("binary file matches" on stderr, no lines); a selected line
//! that is not valid UTF-8 is left out and reported the same way at the end of its file.
//! `-P` (Perl regexes) goes to the `fancy-regex` crate: one pattern, as GNU's; a line
//! that is not UTF-8 is matched as its lossy UTF-8 reading, with no `-o` parts.

mod color;
mod opts;
mod pcre;

use std::collections::{HashMap, VecDeque};

use async_trait::async_trait;
use bytes::Bytes;
use futures::FutureExt;
use tokio_util::task::AbortOnDropHandle;

use self::color::Palette;
use self::opts::Key;
use self::pcre::{
    ascii_classes, pcre_reference_error, pcre_syntax_error, perl_rewrite, quote_literals,
    variable_lookbehind,
};
use super::util::{BufOut, MAX_DEPTH, MAX_LINE, Pacer, Reader};
use crate::budget::Charge;
use crate::fs::{FileKind, FsError, FsResult, READ_CHUNK};
use crate::gnu_regex::{self, Dialect, Flags, Regex};
use crate::{CmdResult, Command, Context, Interrupt};

/// Largest pattern file (`-f`): what it holds is compiled whole.
const MAX_PATTERNS: usize = 32 * 1024 * 1024;
/// Bytes one `-B` context line's entry takes besides the line itself.
const CONTEXT_ENTRY: usize = std::mem::size_of::<(u64, u64, Bytes)>();

/// Files of a directory whose first chunk is read ahead while the ones before them are
/// searched (-r). Reading a small file can be mostly waiting (on a local store, for the
/// disk; on S3, for a request), so overlapping some of those waits makes a walk over many
/// small files about twice as fast (docs/BENCHMARKS.md; 16 did better than 8 there). A
/// read that does not wait is done at once. At most this many chunks of [`READ_CHUNK`]
/// bytes are held.
const READ_AHEAD_FILES: usize = 16;

const USAGE: &str =
    "Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n";

const HELP: &str = include_str!("grep/help.txt");

#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum BinaryFiles {
    #[default]
    Binary,
    Text,
    WithoutMatch,
}

#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum Dirs {
    #[default]
    Read,
    Skip,
    Recurse,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    Matching,
    NonMatching,
}

/// The settings, once the command line is read.
#[derive(Default)]
struct Cfg {
    matcher: Option<char>,
    patterns: Vec<String>,
    /// `-f` files, each with how many of `patterns` came before it on the command line
    /// (its patterns go there: an error names the first bad pattern in that order).
    pattern_files: Vec<(String, usize)>,
    /// Whether any `-e`/`-f` was given (then every operand is a file).
    explicit: bool,
    icase: bool,
    word: bool,
    line: bool,
    null_data: bool,
    no_messages: bool,
    invert: bool,
    max_count: Option<u64>,
    byte_offset: bool,
    line_number: bool,
    /// `-H` (true) or `-h` (false), the last given.
    with_filename: Option<bool>,
    label: Option<String>,
    only_matching: bool,
    quiet: bool,
    binary_files: BinaryFiles,
    dirs: Dirs,
    deref: bool,
    /// `--include` (true) and `--exclude`/`--exclude-from` (false) patterns, in
    /// command-line order: the last that matches a file decides (see
    /// [`Grep::file_excluded`]).
    file_globs: Vec<(glob::Pattern, bool)>,
    exclude_dir: Vec<glob::Pattern>,
    list: Option<List>,
    count: bool,
    null_after_name: bool,
    before: Option<usize>,
    after: Option<usize>,
    context: Option<usize>,
    group_separator: Option<String>,
    color: bool,
    palette: Palette,
    initial_tab: bool,
    /// The C locale (bytes are characters, no encoding errors), from the environment.
    c_locale: bool,
    /// Standard output is `/dev/null` (and no -q): as GNU grep, which checks for that, stop
    /// reading each file at its first selected line, count and list nothing, and say
    /// nothing of binary files. Only how far input is read and the messages show it.
    dev_null: bool,
}

/// How reading the command line ended, when it does not lead to a search.
enum Early {
    Status(i32),
    Interrupted(Interrupt),
}

impl From<Interrupt> for Early {
    fn from(e: Interrupt) -> Early {
        Early::Interrupted(e)
    }
}

async fn usage_error(ctx: &Context, msg: &str) -> Early {
    ctx.err(format!("grep: {msg}\n{USAGE}")).await;
    Early::Status(2)
}

async fn fatal(ctx: &Context, msg: &str) -> Early {
    ctx.warn("grep", msg).await;
    Early::Status(2)
}

/// A context length: a non-negative number (huge ones are as good as unbounded).
fn context_len(v: &str) -> Option<usize> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(v.parse::<usize>().unwrap_or(usize::MAX))
}

fn glob_of(v: &str) -> glob::Pattern {
    glob::Pattern::new(v)
        .unwrap_or_else(|_| glob::Pattern::new(&glob::Pattern::escape(v)).unwrap_or_default())
}

/// Reads the command line into settings; `default_matcher` is `E` for egrep, `F` for fgrep.
async fn configure(
    ctx: &Context,
    args: &[String],
    default_matcher: Option<char>,
) -> Result<(Cfg, Vec<String>), Early> {
    let line = match opts::parse(args, !ctx.env.contains_key("POSIXLY_CORRECT")) {
        Ok(l) => l,
        Err(msg) => return Err(usage_error(ctx, &msg).await),
    };
    let mut cfg = Cfg {
        matcher: default_matcher,
        c_locale: gnu_regex::c_locale(&ctx.env),
        ..Cfg::default()
    };
    let (mut help, mut version, mut color_when) = (false, false, None::<String>);
    for o in &line.opts {
        let v = o.value.clone().unwrap_or_default();
        match o.key {
            Key::Short(m @ ('E' | 'F' | 'G' | 'P')) => {
                if cfg.matcher.is_some_and(|old| old != m) {
                    return Err(fatal(ctx, "conflicting matchers specified").await);
                }
                cfg.matcher = Some(m);
            }
            Key::Short('X') => {
                let m = match v.as_str() {
                    "grep" => 'G',
                    "egrep" => 'E',
                    "fgrep" => 'F',
                    "perl" => 'P',
                    _ => return Err(fatal(ctx, &format!("invalid matcher {v}")).await),
                };
                if cfg.matcher.is_some_and(|old| old != m) {
                    return Err(fatal(ctx, "conflicting matchers specified").await);
                }
                cfg.matcher = Some(m);
            }
            Key::Short('e') => {
                cfg.patterns.extend(v.split('\n').map(str::to_string));
                cfg.explicit = true;
            }
            Key::Short('f') => {
                cfg.pattern_files.push((v, cfg.patterns.len()));
                cfg.explicit = true;
            }
            Key::Short('i' | 'y') => cfg.icase = true,
            Key::NoIgnoreCase => cfg.icase = false,
            Key::Short('w') => cfg.word = true,
            Key::Short('x') => cfg.line = true,
            Key::Short('z') => cfg.null_data = true,
            Key::Short('s') => cfg.no_messages = true,
            Key::Short('v') => cfg.invert = true,
            Key::Short('V') => version = true,
            Key::Help => help = true,
            Key::Short('m') => {
                cfg.max_count = match v.trim_start().parse::<i128>() {
                    Ok(n) if n < 0 => None,
                    Ok(n) => Some(u64::try_from(n).unwrap_or(u64::MAX)),
                    Err(_) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
                        Some(u64::MAX)
                    }
                    Err(_) => return Err(fatal(ctx, "invalid max count").await),
                }
            }
            Key::Short('b') => cfg.byte_offset = true,
            Key::Short('n') => cfg.line_number = true,
            Key::LineBuffered | Key::Short('U') => {}
            Key::Short('u') => {
                ctx.warn("grep", "warning: --unix-byte-offsets (-u) is obsolete")
                    .await;
            }
            Key::Short('H') => cfg.with_filename = Some(true),
            Key::Short('h') => cfg.with_filename = Some(false),
            Key::Label => cfg.label = Some(v),
            Key::Short('o') => cfg.only_matching = true,
            Key::Short('q') => cfg.quiet = true,
            Key::BinaryFiles => {
                cfg.binary_files = match v.as_str() {
                    "binary" => BinaryFiles::Binary,
                    "text" => BinaryFiles::Text,
                    "without-match" => BinaryFiles::WithoutMatch,
                    _ => return Err(fatal(ctx, "unknown binary-files type").await),
                }
            }
            Key::Short('a') => cfg.binary_files = BinaryFiles::Text,
            Key::Short('I') => cfg.binary_files = BinaryFiles::WithoutMatch,
            Key::Short('d') => {
                cfg.dirs = match v.as_str() {
                    "read" => Dirs::Read,
                    "skip" => Dirs::Skip,
                    "recurse" => Dirs::Recurse,
                    _ => {
                        // gnulib's argmatch: the locale's quotes, and status 1.
                        let (l, r) = if cfg.c_locale {
                            ("'", "'")
                        } else {
                            ("\u{2018}", "\u{2019}")
                        };
                        let msg = format!(
                            "invalid argument {l}{v}{r} for {l}--directories{r}\nValid arguments are:\n  - {l}read{r}\n  - {l}recurse{r}\n  - {l}skip{r}\n{USAGE}"
                        );
                        ctx.err(format!("grep: {msg}")).await;
                        return Err(Early::Status(1));
                    }
                }
            }
            Key::Short('D') => {
                if v != "read" && v != "skip" {
                    return Err(fatal(ctx, "unknown devices method").await);
                }
            }
            Key::Short('r') => {
                cfg.dirs = Dirs::Recurse;
                cfg.deref = false;
            }
            Key::Short('R') => {
                cfg.dirs = Dirs::Recurse;
                cfg.deref = true;
            }
            Key::Include => cfg.file_globs.push((glob_of(&v), true)),
            Key::Exclude => cfg.file_globs.push((glob_of(&v), false)),
            // GNU strips a pattern's trailing slashes (`--exclude-dir=sub/`).
            Key::ExcludeDir => {
                let trimmed = v.trim_end_matches('/');
                let pattern = if trimmed.is_empty() { &v } else { trimmed };
                cfg.exclude_dir.push(glob_of(pattern));
            }
            Key::ExcludeFrom => {
                let mut charge = ctx.budget.empty_charge();
                let data = read_whole(ctx, &v, &mut charge).await?;
                match data {
                    Ok(d) => {
                        for l in String::from_utf8_lossy(&d).lines() {
                            cfg.file_globs.push((glob_of(l), false));
                        }
                    }
                    Err(e) => return Err(fatal(ctx, &format!("{v}: {e}")).await),
                }
            }
            Key::Short('L') => cfg.list = Some(List::NonMatching),
            Key::Short('l') => cfg.list = Some(List::Matching),
            Key::Short('c') => cfg.count = true,
            Key::Short('Z') => cfg.null_after_name = true,
            Key::Short('T') => cfg.initial_tab = true,
            Key::Short(c @ ('A' | 'B' | 'C')) => {
                let Some(n) = context_len(&v) else {
                    return Err(fatal(ctx, &format!("{v}: invalid context length argument")).await);
                };
                match c {
                    'A' => cfg.after = Some(n),
                    'B' => cfg.before = Some(n),
                    _ => cfg.context = Some(n),
                }
            }
            Key::GroupSeparator => cfg.group_separator = Some(v),
            Key::NoGroupSeparator => cfg.group_separator = None,
            Key::Color => color_when = Some(o.value.clone().unwrap_or_else(|| "auto".into())),
            Key::Short(_) => {}
        }
    }
    // `--group-separator` defaults to `--` unless `--no-group-separator` came last.
    let last_sep = line
        .opts
        .iter()
        .rev()
        .find(|o| matches!(o.key, Key::GroupSeparator | Key::NoGroupSeparator));
    cfg.group_separator = match last_sep {
        Some(o) if o.key == Key::NoGroupSeparator => None,
        Some(o) => o.value.clone(),
        None => Some("--".into()),
    };
    if version {
        ctx.out("grep (GNU grep) 3.8\nforkbox native grep, GNU grep 3.8 compatible.\n")
            .await?;
        return Err(Early::Status(0));
    }
    if help {
        ctx.out(HELP).await?;
        return Err(Early::Status(0));
    }
    if let Some(when) = color_when {
        cfg.color = match when.as_str() {
            "always" | "yes" | "force" => true,
            "never" | "no" | "none" => false,
            "auto" | "tty" | "if-tty" => {
                ctx.tty.is_some() && ctx.env.get("TERM").is_some_and(|t| t != "dumb")
            }
            _ => {
                ctx.out(HELP).await?;
                return Err(Early::Status(0));
            }
        };
    }
    if cfg.color {
        let (palette, warning) = Palette::from_env(&ctx.env);
        if let Some(w) = warning {
            ctx.warn("grep", w).await;
        }
        cfg.palette = palette;
    }
    let mut operands = line.operands;
    if !cfg.explicit {
        if operands.is_empty() {
            ctx.err(USAGE).await;
            return Err(Early::Status(2));
        }
        let p = operands.remove(0);
        cfg.patterns.extend(p.split('\n').map(str::to_string));
    }
    Ok((cfg, operands))
}

/// Reads a whole (small) file: `-f` and `--exclude-from`.
async fn read_whole(
    ctx: &Context,
    name: &str,
    charge: &mut Charge,
) -> Result<FsResult<Vec<u8>>, Interrupt> {
    let mut reader = match Reader::open(ctx, name).await {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    reader.read_to_end(MAX_PATTERNS, charge).await
}

/// Steps `-P`'s backtracking may take on one line before it gives up (as PCRE's limit).
const PERL_BACKTRACK_LIMIT: usize = 10_000_000;

/// A compiled pattern set: GNU's dialects, or Perl's (`-P`).
enum Matcher {
    Gnu(Regex),
    Perl(Box<fancy_regex::Regex>),
    /// `-P` in the C locale: PCRE2 without UTF reads a byte as a character, so each byte
    /// of the line (and of the pattern) is handed to the crate as the character of the
    /// same number ([`latin1`]).
    PerlBytes(Box<fancy_regex::Regex>),
}

/// `-P` over a line that is not all UTF-8, as PCRE2_MATCH_INVALID_UTF has it: a byte
/// that is no UTF-8 is a barrier no match crosses, and the pieces between are searched
/// one by one (from byte `at` on). A piece after a barrier is searched with a stand-in
/// for it before (so `^` cannot match there), and with one after it while a match
/// found does not run into it (so `$` cannot match at its end).
fn perl_find_in_fragments(
    re: &fancy_regex::Regex,
    line: &[u8],
    at: usize,
) -> Result<Option<(usize, usize)>, MatchFail> {
    const BARRIER: &str = "\u{FFFD}";
    let mut start = 0;
    while start <= line.len() {
        let (end, next) = match std::str::from_utf8(&line[start..]) {
            Ok(_) => (line.len(), line.len() + 1),
            Err(e) => {
                let end = start + e.valid_up_to();
                (end, end + e.error_len().unwrap_or(line.len() - end).max(1))
            }
        };
        if (end >= at && end > start) || (end == start && at <= start && start == line.len()) {
            let piece = std::str::from_utf8(&line[start..end]).unwrap_or_default();
            let before = if start > 0 { BARRIER } else { "" };
            let from = before.len() + at.saturating_sub(start);
            let last = next > line.len();
            let mut found = None;
            // Only a match that ran into the stand-in is looked for again without it.
            let mut again = last;
            if !last {
                let text = format!("{before}{piece}{BARRIER}");
                if let Some(m) = re.find_from_pos(&text, from)? {
                    if m.end() <= before.len() + piece.len() {
                        found = Some((m.start(), m.end()));
                    } else {
                        again = true;
                    }
                }
            }
            if found.is_none() && again {
                let text = format!("{before}{piece}");
                found = re.find_from_pos(&text, from)?.map(|m| (m.start(), m.end()));
            }
            // A match starts at `from` or later, past the stand-in.
            if let Some((s, e)) = found {
                let back = |o: usize| o.saturating_sub(before.len()) + start;
                return Ok(Some((back(s), back(e))));
            }
        }
        start = next;
    }
    Ok(None)
}

/// `bytes` as text of one character per byte (U+0000–U+00FF).
fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// Where byte `i` of a line lies in its [`latin1`] text: a byte of the upper half takes
/// two there.
fn latin1_offset(bytes: &[u8], i: usize) -> usize {
    i + bytes[..i.min(bytes.len())]
        .iter()
        .filter(|&&b| b >= 0x80)
        .count()
}

/// The byte of a line at offset `at` of its [`latin1`] text.
fn latin1_byte_offset(text: &str, at: usize) -> usize {
    text[..at].chars().count()
}

/// Matching gave up; the message says why.
struct MatchFail(String);

impl From<gnu_regex::TooComplex> for MatchFail {
    fn from(e: gnu_regex::TooComplex) -> MatchFail {
        MatchFail(e.to_string())
    }
}

impl From<fancy_regex::Error> for MatchFail {
    fn from(_: fancy_regex::Error) -> MatchFail {
        MatchFail("exceeded PCRE's backtracking limit".into())
    }
}

impl Matcher {
    fn is_match(&self, line: &[u8]) -> Result<bool, MatchFail> {
        match self {
            Matcher::Gnu(re) => Ok(re.is_match(line)?),
            Matcher::Perl(re) => match std::str::from_utf8(line) {
                Ok(text) => Ok(re.is_match(text)?),
                Err(_) => Ok(perl_find_in_fragments(re, line, 0)?.is_some()),
            },
            Matcher::PerlBytes(re) => Ok(re.is_match(&latin1(line))?),
        }
    }

    fn find_at(&self, line: &[u8], at: usize) -> Result<Option<(usize, usize)>, MatchFail> {
        match self {
            Matcher::Gnu(re) => Ok(re.find_at(line, at)?),
            Matcher::PerlBytes(re) => {
                let text = latin1(line);
                let from = latin1_offset(line, at);
                Ok(re.find_from_pos(&text, from)?.map(|m| {
                    (
                        latin1_byte_offset(&text, m.start()),
                        latin1_byte_offset(&text, m.end()),
                    )
                }))
            }
            Matcher::Perl(re) => {
                let Ok(text) = std::str::from_utf8(line) else {
                    return perl_find_in_fragments(re, line, at);
                };
                if !text.is_char_boundary(at) {
                    return Ok(None);
                }
                Ok(re.find_from_pos(text, at)?.map(|m| (m.start(), m.end())))
            }
        }
    }
}

/// `-P`: one pattern for the `fancy-regex` crate, with -i, -w, -x as GNU applies them.
async fn compile_perl(ctx: &Context, cfg: &Cfg, patterns: &[String]) -> Result<Matcher, Early> {
    let [pattern] = patterns else {
        return Err(fatal(ctx, "the -P option only supports a single pattern").await);
    };
    // In the C locale the pattern's bytes are characters too (see `Matcher::PerlBytes`).
    let bytes_pattern: String;
    let pattern = if cfg.c_locale && !pattern.is_ascii() {
        let raw: Vec<u8> = pattern
            .chars()
            .flat_map(|c| match crate::bytetext::char_byte(c) {
                Some(b) => vec![b],
                None => c.to_string().into_bytes(),
            })
            .collect();
        bytes_pattern = latin1(&raw);
        &bytes_pattern
    } else {
        pattern
    };
    let (rewritten, ucp) = perl_rewrite(&quote_literals(pattern));
    let pattern = &rewritten;
    let body = if cfg.line {
        format!("^(?:{pattern})$")
    } else if cfg.word {
        format!("(?<!\\w)(?:{pattern})(?!\\w)")
    } else {
        pattern.clone()
    };
    // `(*UCP)` keeps Unicode's classes, the crate's own.
    let body = if ucp { body } else { ascii_classes(&body) };
    // What PCRE2 refuses and the crate would take (`a{99999}`) is refused first.
    if let Some(msg) = pcre_syntax_error(pattern).or_else(|| pcre_reference_error(pattern)) {
        return Err(fatal(ctx, msg).await);
    }
    if variable_lookbehind(pattern) {
        return Err(fatal(ctx, "lookbehind assertion is not fixed length").await);
    }
    match fancy_regex::RegexBuilder::new(&body)
        .case_insensitive(cfg.icase)
        .backtrack_limit(PERL_BACKTRACK_LIMIT)
        .build()
    {
        Ok(re) if cfg.c_locale => Ok(Matcher::PerlBytes(Box::new(re))),
        Ok(re) => Ok(Matcher::Perl(Box::new(re))),
        Err(e) => {
            let msg = match (&e, pcre_syntax_error(pattern)) {
                (_, Some(m)) => m.to_string(),
                (fancy_regex::Error::CompileError(c), None)
                    if matches!(**c, fancy_regex::CompileError::LookBehindNotConst) =>
                {
                    "lookbehind assertion is not fixed length".to_string()
                }
                _ => e.to_string(),
            };
            Err(fatal(ctx, &msg).await)
        }
    }
}

/// The dialect of GNU's regexes the patterns are in (not for -P).
fn dialect(cfg: &Cfg) -> Dialect {
    match cfg.matcher {
        Some('E') => Dialect::Extended,
        Some('F') => Dialect::Literal,
        _ => Dialect::Basic,
    }
}

fn flags(cfg: &Cfg) -> Flags {
    Flags {
        icase: cfg.icase,
        multiline: false,
        strict: false,
        whole_line: cfg.line,
        whole_word: cfg.word && !cfg.line,
        c_locale: cfg.c_locale,
        ..Flags::default()
    }
}

/// What compiling the patterns gave. An error is the first bad pattern's, prefixed
/// with its file and line when it came from `-f` (`grep: pats:2: Unmatched ( or \(`).
async fn compile(
    ctx: &Context,
    cfg: &Cfg,
    patterns: &[String],
    origins: &[Option<(&str, usize)>],
) -> Result<Matcher, Early> {
    if cfg.matcher == Some('P') {
        return compile_perl(ctx, cfg, patterns).await;
    }
    let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
    match gnu_regex::compile_many(&refs, dialect(cfg), flags(cfg)) {
        Ok(re) => {
            for w in re.warnings() {
                ctx.warn("grep", format!("warning: {w}")).await;
            }
            Ok(Matcher::Gnu(re))
        }
        Err(e) => {
            // GNU reports every bad pattern, in order.
            let mut reported = false;
            for (i, p) in refs.iter().enumerate() {
                let Err(err) = gnu_regex::compile(p, dialect(cfg), flags(cfg)) else {
                    continue;
                };
                let msg = match origins.get(i).copied().flatten() {
                    Some((file, line)) => format!("{file}:{line}: {}", err.msg),
                    None => err.msg,
                };
                ctx.warn("grep", msg).await;
                reported = true;
            }
            if !reported {
                ctx.warn("grep", e.msg).await;
            }
            Err(Early::Status(2))
        }
    }
}

/// Lines of one input, split here (not by [`Reader`]) so that each chunk can be checked
/// for NUL bytes as it arrives, the way GNU decides a file is binary.
struct Lines {
    pending: Bytes,
    /// A line being gathered across chunks.
    partial: Vec<u8>,
    charge: Charge,
    /// No more NUL checks needed: one was found, or NUL ends lines (-z).
    nul: bool,
    /// A chunk with a NUL byte was read (the data is binary from there on).
    binary: bool,
    /// NULs of binary data end lines (see [`Lines::new`]).
    zap: bool,
    /// Offset of the next line's first byte (`-b`).
    offset: u64,
}

impl Lines {
    /// `null_data`: lines end with NUL (-z), which then says nothing of binary data.
    /// `zap`: in binary data a NUL also ends a line, as GNU's buffer-wise zapping of
    /// NULs into newlines makes it (-c and -v count such lines; not with -a).
    fn new(ctx: &Context, null_data: bool, zap: bool) -> Lines {
        Lines {
            pending: Bytes::new(),
            partial: Vec::new(),
            charge: ctx.budget.empty_charge(),
            nul: null_data,
            zap: zap && !null_data,
            binary: false,
            offset: 0,
        }
    }

    /// The next line with its delimiter (the last may lack it), and its offset.
    async fn next(
        &mut self,
        reader: &mut Reader,
        delim: u8,
    ) -> Result<FsResult<Option<(u64, Bytes)>>, Interrupt> {
        // The caller is done with the line given out last (giving back never fails).
        let _ = self.charge.resize(self.partial.capacity());
        loop {
            if self.pending.is_empty() {
                match reader.chunk().await {
                    Ok(Some(mut c)) => {
                        if !self.nul && memchr0(&c) {
                            self.nul = true;
                            self.binary = true;
                        }
                        if self.binary && self.zap && memchr0(&c) {
                            let mut zapped = c.to_vec();
                            for b in zapped.iter_mut().filter(|b| **b == 0) {
                                *b = b'\n';
                            }
                            c = Bytes::from(zapped);
                        }
                        self.pending = c;
                    }
                    Ok(None) if self.partial.is_empty() => return Ok(Ok(None)),
                    Ok(None) => return Ok(Ok(Some(self.give()))),
                    Err(e) => return Ok(Err(e)),
                }
                continue;
            }
            let room = MAX_LINE.saturating_sub(self.partial.len()).max(1);
            let window = self.pending.len().min(room);
            if let Some(i) = self.pending[..window].iter().position(|&b| b == delim) {
                let piece = self.pending.split_to(i + 1);
                if self.partial.is_empty() {
                    // The line is a slice of the chunk, held until the next read.
                    self.charge.resize(piece.len())?;
                    let at = self.offset;
                    self.offset += piece.len() as u64;
                    return Ok(Ok(Some((at, piece))));
                }
                self.gather(&piece)?;
                return Ok(Ok(Some(self.give())));
            }
            let piece = self.pending.split_to(window);
            self.gather(&piece)?;
            if self.partial.len() >= MAX_LINE {
                return Ok(Ok(Some(self.give())));
            }
        }
    }

    /// Passes over the whole lines read but not given out that `finder` finds no match
    /// in, up to the first line it does (given out next by [`Lines::next`]); returns how
    /// many lines were passed. Only whole lines already read are looked at: a line split
    /// across reads goes through [`Lines::next`] and is matched alone.
    fn skip(&mut self, finder: &gnu_regex::LineFinder) -> u64 {
        if !self.partial.is_empty() {
            return 0;
        }
        let Some(last) = memchr::memrchr(b'\n', &self.pending) else {
            return 0;
        };
        let whole = &self.pending[..=last];
        let upto = match finder.find_at(whole, 0) {
            Some(p) if p < whole.len() => memchr::memrchr(b'\n', &whole[..p]).map_or(0, |i| i + 1),
            _ => whole.len(),
        };
        if upto == 0 {
            return 0;
        }
        let passed = memchr::memchr_iter(b'\n', &whole[..upto]).count() as u64;
        let _ = self.pending.split_to(upto);
        self.offset += upto as u64;
        passed
    }

    fn gather(&mut self, piece: &[u8]) -> Result<(), Interrupt> {
        let need = self.partial.len() + piece.len();
        if need > self.partial.capacity() {
            let cap = need.max(self.partial.capacity() * 2);
            self.charge.resize(cap)?;
            self.partial.reserve_exact(cap - self.partial.len());
        }
        self.partial.extend_from_slice(piece);
        Ok(())
    }

    /// Gives out the gathered line; it stays charged until the next read.
    fn give(&mut self) -> (u64, Bytes) {
        let line = Bytes::from(std::mem::take(&mut self.partial));
        let _ = self.charge.resize(line.len());
        let at = self.offset;
        self.offset += line.len() as u64;
        (at, line)
    }
}

/// What one read of GNU grep asks for (its initial buffer).
const GNU_GREP_READ: usize = 96 * 1024;

fn memchr0(b: &[u8]) -> bool {
    b.contains(&0)
}

/// Where a line of output comes from, for the prefix of `-o`'s lines.
struct Head<'a> {
    name: &'a str,
    lineno: u64,
    offset: u64,
}

struct Grep<'a> {
    ctx: &'a Context,
    cfg: &'a Cfg,
    re: Matcher,
    /// The whole-buffer search for the next selected line, when it gives what matching
    /// line by line would: not with -v, -z or -B (which look at the lines passed over), nor
    /// for patterns it cannot take (back-references, -P).
    finder: Option<gnu_regex::LineFinder>,
    show_names: bool,
    before: usize,
    after: usize,
    /// A context option was given (even `-A0`): groups are then separated.
    context_given: bool,
    status_error: bool,
    /// The inode of the regular file standard output writes into, when reading it would
    /// feed grep's output back to it (see [`output_file`]).
    out_ino: Option<u64>,
    any_match: bool,
    /// Something was printed as a line or context group (for the group separator,
    /// which goes between groups, across files too).
    printed_group: bool,
    /// `-o` met a match that is not valid UTF-8: GNU prints no more of the file and
    /// says it is binary.
    match_encoding_error: std::sync::atomic::AtomicBool,
}

/// How one file went.
enum Outcome {
    Done,
    /// -q found a match, or matching failed: stop everything.
    Quit,
}

impl Grep<'_> {
    fn is_match(&self, line: &[u8]) -> Result<bool, MatchFail> {
        Ok(self.re.is_match(line)? != self.cfg.invert)
    }

    /// A file's error (status 2), said unless -s; what was written before it goes out
    /// first, as glibc's `error` flushes stdout.
    async fn error(&mut self, out: &mut BufOut<'_>, msg: String) -> Result<(), Interrupt> {
        self.status_error = true;
        if !self.cfg.no_messages {
            out.flush().await?;
            self.ctx.warn("grep", msg).await;
        }
        Ok(())
    }

    /// Matching gave up (a backtracker's budget): say so, and stop.
    async fn too_complex(&mut self, e: MatchFail) -> Outcome {
        self.status_error = true;
        self.ctx.warn("grep", e.0).await;
        Outcome::Quit
    }

    async fn search(
        &mut self,
        out: &mut BufOut<'_>,
        name: &str,
        reader: &mut Reader,
    ) -> Result<Result<Outcome, FsError>, Interrupt> {
        let cfg = self.cfg;
        let delim = if cfg.null_data { 0u8 } else { b'\n' };
        let text = cfg.binary_files == BinaryFiles::Text;
        let mut lines = Lines::new(self.ctx, cfg.null_data, !text);
        let mut lineno = 0u64;
        let mut count = 0u64;
        let mut before: VecDeque<(u64, u64, Bytes)> = VecDeque::new();
        let mut before_bytes = 0usize;
        let mut before_charge = self.ctx.budget.empty_charge();
        let mut after_left = 0usize;
        let mut last_printed: Option<u64> = None;
        let mut pacer = Pacer::default();
        let printing = !(cfg.quiet || cfg.count || cfg.list.is_some());
        let mut binary_match = false;
        let mut encoding_error = false;
        // Where the line that used up -m ends.
        let mut stop_at: Option<u64> = None;
        loop {
            if cfg.max_count.is_some_and(|m| count >= m) && after_left == 0 {
                break;
            }
            if let Some(finder) = &self.finder
                && after_left == 0
                && !(lines.binary && cfg.binary_files == BinaryFiles::WithoutMatch)
            {
                let passed = lines.skip(finder);
                if passed > 0 {
                    lineno += passed;
                    self.ctx.checkpoint().await?;
                }
            }
            let (offset, rec) = match lines.next(reader, delim).await? {
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
            if lines.binary && !text && cfg.binary_files == BinaryFiles::WithoutMatch {
                // GNU counts such a file as one without a match (-c says 0, -L lists it).
                count = 0;
                break;
            }
            let limit_hit = cfg.max_count.is_some_and(|m| count >= m);
            let selected = !limit_hit
                && match self.is_match(line) {
                    Ok(s) => s,
                    Err(e) => {
                        out.flush().await?;
                        return Ok(Ok(self.too_complex(e).await));
                    }
                };
            if selected {
                count += 1;
                self.any_match = true;
                if cfg.quiet {
                    return Ok(Ok(Outcome::Quit));
                }
                if cfg.max_count == Some(count) {
                    stop_at = Some(offset + rec.len() as u64);
                }
                if cfg.dev_null && !cfg.invert {
                    break;
                }
                if cfg.list.is_some() {
                    break;
                }
                if !printing {
                    continue;
                }
                if lines.binary && !text {
                    binary_match = true;
                    break;
                }
                // With -o only the matches are looked at (in `middle`).
                if !text
                    && !cfg.c_locale
                    && !cfg.only_matching
                    && std::str::from_utf8(line).is_err()
                {
                    encoding_error = true;
                    continue;
                }
                let gap = match last_printed {
                    Some(lp) => before.front().map(|(n, ..)| *n).unwrap_or(lineno) > lp + 1,
                    None => self.printed_group,
                };
                if self.context_given && gap {
                    self.separator(out).await?;
                }
                while let Some((n, off, l)) = before.pop_front() {
                    let l = l.strip_suffix(&[delim]).unwrap_or(&l);
                    if let Err(e) = self.prline(out, name, n, off, l, b'-').await? {
                        out.flush().await?;
                        return Ok(Ok(self.too_complex(e).await));
                    }
                }
                before_bytes = 0;
                before_charge.resize(0)?;
                if let Err(e) = self.prline(out, name, lineno, offset, line, b':').await? {
                    out.flush().await?;
                    return Ok(Ok(self.too_complex(e).await));
                }
                if self
                    .match_encoding_error
                    .swap(false, std::sync::atomic::Ordering::Relaxed)
                {
                    encoding_error = true;
                    break;
                }
                last_printed = Some(lineno);
                self.printed_group = true;
                after_left = self.after;
            } else if printing {
                if after_left > 0 {
                    after_left -= 1;
                    if lines.binary && !text {
                        continue;
                    }
                    if let Err(e) = self.prline(out, name, lineno, offset, line, b'-').await? {
                        out.flush().await?;
                        return Ok(Ok(self.too_complex(e).await));
                    }
                    last_printed = Some(lineno);
                } else if self.before > 0 {
                    let entry = rec.len() + CONTEXT_ENTRY;
                    before_charge.resize(before_bytes + entry)?;
                    before.push_back((lineno, offset, rec.clone()));
                    before_bytes += entry;
                    if before.len() > self.before
                        && let Some((.., l)) = before.pop_front()
                    {
                        before_bytes -= l.len() + CONTEXT_ENTRY;
                        before_charge.resize(before_bytes)?;
                    }
                }
            }
        }
        // A file on standard input is left as GNU grep leaves it: right after the line
        // that used up -m, else at its end; -l and -L stop where their reads did.
        if cfg.list.is_none() {
            match stop_at {
                Some(stop) => {
                    let read = lines.offset + (lines.pending.len() + lines.partial.len()) as u64;
                    let extra = usize::try_from(read.saturating_sub(stop)).unwrap_or(usize::MAX);
                    reader.give_back(extra).await;
                }
                None => reader.skip_rest().await,
            }
        }
        if binary_match || encoding_error {
            out.flush().await?;
            self.ctx
                .warn("grep", format!("{name}: binary file matches"))
                .await;
        }
        if cfg.count && cfg.list.is_none() {
            let mut buf = Vec::new();
            if self.show_names {
                self.name_prefix(&mut buf, name, b':');
            }
            buf.extend_from_slice(format!("{count}\n").as_bytes());
            out.write(&buf).await?;
        }
        let listed = match cfg.list {
            Some(List::Matching) => count > 0,
            Some(List::NonMatching) => count == 0,
            None => false,
        };
        if listed && !cfg.quiet {
            let mut buf = Vec::new();
            self.paint(&mut buf, &cfg.palette.fname, name.as_bytes());
            buf.push(if cfg.null_after_name { 0 } else { b'\n' });
            out.write(&buf).await?;
        }
        Ok(Ok(Outcome::Done))
    }

    async fn separator(&self, out: &mut BufOut<'_>) -> Result<(), Interrupt> {
        let Some(sep) = &self.cfg.group_separator else {
            return Ok(());
        };
        let mut buf = Vec::new();
        self.paint(&mut buf, &self.cfg.palette.se, sep.as_bytes());
        buf.push(b'\n');
        out.write(&buf).await
    }

    /// `text` in `color` when coloring (`--color`), else as it is.
    fn paint(&self, buf: &mut Vec<u8>, color: &str, text: &[u8]) {
        if self.cfg.color {
            self.cfg.palette.start(buf, color);
            buf.extend_from_slice(text);
            self.cfg.palette.end(buf, color);
        } else {
            buf.extend_from_slice(text);
        }
    }

    /// `name` and its separator (a NUL with `-Z`).
    fn name_prefix(&self, buf: &mut Vec<u8>, name: &str, sep: u8) {
        self.paint(buf, &self.cfg.palette.fname, name.as_bytes());
        if self.cfg.null_after_name {
            buf.push(0);
        } else {
            self.sep(buf, sep);
        }
    }

    fn sep(&self, buf: &mut Vec<u8>, sep: u8) {
        self.paint(buf, &self.cfg.palette.se, &[sep]);
    }

    /// The prefix of an output line: file name, line number, byte offset; `-T`'s tab
    /// only before a `len` that is not 0, as GNU's.
    fn prefix(&self, buf: &mut Vec<u8>, name: &str, lineno: u64, offset: u64, sep: u8, len: usize) {
        if self.show_names {
            self.name_prefix(buf, name, sep);
        }
        let pal = &self.cfg.palette;
        for (on, n, color) in [
            (self.cfg.line_number, lineno, &pal.ln),
            (self.cfg.byte_offset, offset, &pal.bn),
        ] {
            if !on {
                continue;
            }
            self.paint(buf, color, n.to_string().as_bytes());
            self.sep(buf, sep);
        }
        if self.cfg.initial_tab
            && (self.show_names || self.cfg.line_number || self.cfg.byte_offset)
            && len != 0
        {
            buf.push(b'\t');
        }
    }

    fn end(&self, buf: &mut Vec<u8>) {
        buf.push(if self.cfg.null_data { 0 } else { b'\n' });
    }

    /// One line of output, as GNU's `prline`: a selected line (`sep` `:`) or a context
    /// line (`-`) with its prefix; with `--color` its matches (when it is a matching
    /// line) and the rest of it in their colors; with `-o` only its matches, each on a
    /// line of its own (a context line's too, when it matches: `-o -v -C`).
    async fn prline(
        &self,
        out: &mut BufOut<'_>,
        name: &str,
        lineno: u64,
        offset: u64,
        line: &[u8],
        sep: u8,
    ) -> Result<Result<(), MatchFail>, Interrupt> {
        let cfg = self.cfg;
        let selected = sep == b':';
        let matching = selected != cfg.invert;
        let mut buf = Vec::with_capacity(line.len() + name.len() + 16);
        if !cfg.only_matching {
            self.prefix(&mut buf, name, lineno, offset, sep, line.len());
        }
        let pal = &cfg.palette;
        let (line_color, match_color) = if cfg.color {
            let lc = if selected != (cfg.invert && pal.rv) {
                &pal.sl
            } else {
                &pal.cx
            };
            (
                lc.as_str(),
                if selected { &pal.ms } else { &pal.mc }.as_str(),
            )
        } else {
            ("", "")
        };
        let mut beg = 0;
        if (cfg.only_matching && matching)
            || (cfg.color && (!line_color.is_empty() || !match_color.is_empty()))
        {
            if matching && (cfg.only_matching || !match_color.is_empty()) {
                let head = Head {
                    name,
                    lineno,
                    offset,
                };
                match self.middle(&mut buf, &head, line, line_color, match_color) {
                    Ok(b) => beg = b,
                    Err(e) => return Ok(Err(e)),
                }
            }
            if !cfg.only_matching && !line_color.is_empty() {
                beg = self.tail(&mut buf, line, beg, line_color);
            }
        }
        if !cfg.only_matching {
            buf.extend_from_slice(&line[beg..]);
            self.end(&mut buf);
        }
        out.write(&buf).await?;
        Ok(Ok(()))
    }

    /// The matches of a line, GNU's `print_line_middle`: with -o each on a line of its
    /// own; otherwise the text before each in `line_color`, the match in `match_color`.
    /// Gives where the rest of the line starts (after an empty match, the text from it
    /// on is the rest's).
    fn middle(
        &self,
        buf: &mut Vec<u8>,
        head: &Head<'_>,
        line: &[u8],
        line_color: &str,
        match_color: &str,
    ) -> Result<usize, MatchFail> {
        let pal = &self.cfg.palette;
        let mut cur = 0;
        let mut mid: Option<usize> = None;
        while cur <= line.len() {
            let Some((s, e)) = self.re.find_at(line, cur)? else {
                break;
            };
            if s == e {
                mid.get_or_insert(cur);
                cur = s + self.char_len(line, s);
                continue;
            }
            if self.cfg.only_matching {
                if self.cfg.binary_files != BinaryFiles::Text
                    && !self.cfg.c_locale
                    && std::str::from_utf8(&line[s..e]).is_err()
                {
                    self.match_encoding_error
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                    return Ok(line.len());
                }
                let sep = if self.cfg.invert { b'-' } else { b':' };
                let at = head.offset + s as u64;
                self.prefix(buf, head.name, head.lineno, at, sep, e - s);
            } else {
                if self.cfg.color {
                    pal.start(buf, line_color);
                }
                if let Some(m) = mid.take() {
                    cur = m;
                }
                buf.extend_from_slice(&line[cur..s]);
            }
            self.paint(buf, match_color, &line[s..e]);
            if self.cfg.only_matching {
                self.end(buf);
            }
            cur = e;
        }
        Ok(if self.cfg.only_matching {
            line.len()
        } else {
            mid.unwrap_or(cur).min(line.len())
        })
    }

    /// The rest of a line in `color`, but for a carriage return that ends it.
    fn tail(&self, buf: &mut Vec<u8>, line: &[u8], beg: usize, color: &str) -> usize {
        let mut end = line.len();
        if end > beg && line[end - 1] == b'\r' {
            end -= 1;
        }
        if end > beg {
            self.paint(buf, color, &line[beg..end]);
        }
        end.max(beg)
    }

    /// How far `-o` steps past an empty match: one character.
    fn char_len(&self, line: &[u8], at: usize) -> usize {
        if self.cfg.c_locale {
            1
        } else {
            char_len(line, at)
        }
    }

    /// Whether `--include`/`--exclude` leave out the file `name` (its base name, or the
    /// whole name as given on the command line). As GNU's (gnulib's `exclude`), the last
    /// pattern given that matches decides; when none does, a file is left out only if the
    /// first pattern given was an `--include`.
    fn file_excluded(&self, name: &str, top: bool) -> bool {
        let base = name
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(name);
        let globs = &self.cfg.file_globs;
        match globs
            .iter()
            .rev()
            .find(|(p, _)| p.matches(base) || (top && p.matches(name)))
        {
            Some((_, include)) => !include,
            None => globs.first().is_some_and(|(_, include)| *include),
        }
    }

    /// Whether `--exclude-dir` leaves out the directory `name`: one found in a walk by its
    /// base name only (GNU's fts gives the name in its directory), an operand also by the
    /// whole name as given.
    fn dir_excluded(&self, name: &str, top: bool) -> bool {
        let trimmed = name.trim_end_matches('/');
        let base = trimmed.rsplit('/').next().unwrap_or(trimmed);
        self.cfg
            .exclude_dir
            .iter()
            .any(|p| p.matches(base) || (top && p.matches(trimmed)))
    }

    /// Whether the file at `path` (standard input's) is the regular file standard output
    /// writes into, while that matters ([`Grep::out_ino`]).
    async fn is_output(&self, path: &str) -> bool {
        let Some(ino) = self.out_ino else {
            return false;
        };
        match self.ctx.fs.stat(path).await {
            Ok(m) => m.is_file() && m.ino == ino,
            Err(_) => false,
        }
    }

    /// Searches one operand; directories are walked with -r.
    async fn operand(&mut self, out: &mut BufOut<'_>, op: &str) -> Result<Outcome, Interrupt> {
        if op == "-" {
            let label = self
                .cfg
                .label
                .clone()
                .unwrap_or_else(|| "(standard input)".into());

            // GNU grep reads 96 KiB at a time: -q, -l and -L stop without handing back
            // what they read ahead, so a file on standard input is left at a multiple.
            if let Some(file) = self.ctx.stdin.origin()
                && self.is_output(file).await
            {
                self.error(out, format!("{label}: input file is also the output"))
                    .await?;
                return Ok(Outcome::Done);
            }
            let mut reader = if self.cfg.quiet || self.cfg.list.is_some() {
                Reader::stdin_in_reads_of(self.ctx, GNU_GREP_READ)
            } else {
                Reader::stdin(self.ctx)
            };
            return match self.search(out, &label, &mut reader).await? {
                Ok(o) => Ok(o),
                Err(e) => {
                    self.error(out, format!("{label}: {e}")).await?;
                    Ok(Outcome::Done)
                }
            };
        }
        let recursive = self.cfg.dirs == Dirs::Recurse;
        // fts leaves one of several trailing slashes (`d//` walks as `d/`).
        let mut op = op;
        if recursive {
            while op.len() > 2 && op.ends_with("//") {
                op = &op[..op.len() - 1];
            }
        }
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
            let meta = if top || self.cfg.deref {
                self.ctx.fs.stat(&path).await
            } else {
                self.ctx.fs.lstat(&path).await
            };
            let meta = match meta {
                Ok(m) => m,
                Err(e) => {
                    self.error(out, format!("{shown}: {e}")).await?;
                    continue;
                }
            };
            if meta.is_symlink() {
                continue;
            }
            if meta.is_dir() {
                match self.cfg.dirs {
                    Dirs::Skip => continue,
                    Dirs::Read => {
                        self.error(out, format!("{shown}: Is a directory")).await?;
                        continue;
                    }
                    Dirs::Recurse => {}
                }
                if (!top || shown != ".") && self.dir_excluded(&shown, top) {
                    continue;
                }
                // A lone operand is named once it turns out to be a directory walked.
                self.show_names |= self.cfg.with_filename.is_none();
                if depth >= MAX_DEPTH {
                    self.error(out, format!("{shown}: directory nesting too deep"))
                        .await?;
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
                    Err(e) => self.error(out, format!("{shown}: {e}")).await?,
                }
                continue;
            }
            if (recursive || top) && self.file_excluded(&shown, top) {
                continue;
            }
            if meta.is_file() && self.out_ino == Some(meta.ino) {
                self.error(out, format!("{shown}: input file is also the output"))
                    .await?;
                continue;
            }
            let mut reader = match Reader::open(self.ctx, &shown).await {
                Ok(r) => r,
                Err(e) => {
                    self.error(out, format!("{shown}: {e}")).await?;
                    continue;
                }
            };
            if let Some(read) = read_ahead {
                reader = reader.with_first_chunk(read.get().await);
            }
            match self.search(out, &shown, &mut reader).await? {
                Ok(Outcome::Quit) => return Ok(Outcome::Quit),
                Ok(Outcome::Done) => {}
                Err(e) => self.error(out, format!("{shown}: {e}")).await?,
            }
        }
        Ok(Outcome::Done)
    }
}

fn char_len(line: &[u8], at: usize) -> usize {
    let Some(&b) = line.get(at) else {
        return 1;
    };
    let n = match b {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => 1,
    };
    match line.get(at..at + n).map(std::str::from_utf8) {
        Some(Ok(_)) => n,
        _ => 1,
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

/// The inode of the regular file standard output was redirected into, if grep writes
/// lines there: GNU grep refuses to read that file ("input file is also the output", as
/// reading what it appends could go on until the disk fills), except when it prints no
/// lines (-q, -c, -l, -L, output to /dev/null) or stops at the first (-m 1).
async fn output_file(ctx: &Context, cfg: &Cfg) -> Option<u64> {
    if cfg.quiet || cfg.count || cfg.list.is_some() || cfg.dev_null || cfg.max_count == Some(1) {
        return None;
    }
    let meta = ctx.fs.stat(ctx.stdout.origin()?).await.ok()?;
    meta.is_file().then_some(meta.ino)
}

/// Runs grep; `matcher` is egrep's `E` or fgrep's `F`.
async fn run(ctx: &Context, args: &[String], matcher: Option<char>) -> CmdResult {
    let (cfg, operands) = match configure(ctx, args, matcher).await {
        Ok(c) => c,
        Err(Early::Status(s)) => return Ok(s),
        Err(Early::Interrupted(e)) => return Err(e),
    };
    let mut cfg = cfg;
    if !cfg.quiet && ctx.stdout.is_null() {
        cfg.dev_null = true;
        cfg.count = false;
        cfg.list = None;
        cfg.before = None;
        cfg.after = None;
        cfg.context = None;
    }
    let cfg = cfg;
    // The patterns in command-line order, with where each came from (a file and line, or
    // none for -e and the operand); those read from files are charged while held.
    let mut patterns = Vec::new();
    let mut origins: Vec<Option<(&str, usize)>> = Vec::new();
    let mut taken = 0;
    let mut pattern_charges = Vec::new();
    for (f, before) in &cfg.pattern_files {
        for p in &cfg.patterns[taken..*before] {
            patterns.push(p.clone());
            origins.push(None);
        }
        taken = *before;
        let mut charge = ctx.budget.empty_charge();
        match read_whole(ctx, f, &mut charge).await? {
            Ok(d) => {
                let text = String::from_utf8_lossy(&d);
                let body = text.strip_suffix('\n').unwrap_or(&text);
                if !d.is_empty() {
                    for (n, p) in body.split('\n').enumerate() {
                        patterns.push(p.to_string());
                        origins.push(Some((f.as_str(), n + 1)));
                    }
                }
                pattern_charges.push(charge);
            }
            Err(e) => {
                ctx.warn("grep", format!("{f}: {e}")).await;
                return Ok(2);
            }
        }
    }
    for p in &cfg.patterns[taken..] {
        patterns.push(p.clone());
        origins.push(None);
    }
    // GNU joins the patterns into one text, each ended by a newline: a backslash that
    // ends the last of several escapes that newline, and so stands for itself.
    if patterns.len() > 1
        && matches!(dialect(&cfg), Dialect::Basic | Dialect::Extended)
        && cfg.matcher != Some('P')
        && let Some(last) = patterns.last_mut()
        && last.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
    {
        last.push('\\');
    }
    let re = match compile(ctx, &cfg, &patterns, &origins).await {
        Ok(r) => r,
        Err(Early::Status(s)) => return Ok(s),
        Err(Early::Interrupted(e)) => return Err(e),
    };
    // Like GNU grep, search nothing when no line can be selected: `-m 0`, no patterns
    // (`-f /dev/null`), or only empty ones inverted without -x/-w (`-v ''`); files are
    // not even opened. Unless -L, which lists them all. (No patterns inverted selects
    // every line, -x and -w or not.)
    let all_empty = patterns.iter().all(String::is_empty);
    let none_selected = if patterns.is_empty() {
        !cfg.invert
    } else {
        all_empty && cfg.invert && !cfg.line && !cfg.word
    };
    if (cfg.max_count == Some(0) || none_selected) && cfg.list != Some(List::NonMatching) {
        return Ok(1);
    }
    let recursive = cfg.dirs == Dirs::Recurse;
    let implicit_dot = recursive && operands.is_empty();
    let files = if operands.is_empty() {
        vec![if recursive { "." } else { "-" }.to_string()]
    } else {
        operands
    };
    let show_names = cfg.with_filename.unwrap_or(files.len() > 1 || implicit_dot);
    let ctx_n = cfg.context.unwrap_or(0);
    let before = cfg.before.unwrap_or(ctx_n);
    let finder = match &re {
        Matcher::Gnu(_) if !cfg.invert && !cfg.null_data && before == 0 => {
            let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
            gnu_regex::line_finder(&refs, dialect(&cfg), flags(&cfg))
        }
        _ => None,
    };
    let mut grep = Grep {
        ctx,
        cfg: &cfg,
        re,
        finder,
        show_names,
        before,
        context_given: cfg.before.is_some() || cfg.after.is_some() || cfg.context.is_some(),
        after: cfg.after.unwrap_or(ctx_n),
        status_error: false,
        out_ino: output_file(ctx, &cfg).await,
        any_match: false,
        printed_group: false,
        match_encoding_error: std::sync::atomic::AtomicBool::new(false),
    };
    let mut out = BufOut::new(ctx);
    for f in &files {
        let outcome = if implicit_dot {
            // `grep -r pat` searches '.' but names files without the "./".
            let mut res = Outcome::Done;
            if let Ok(entries) = ctx.fs.read_dir(&ctx.cwd).await {
                for e in entries {
                    let is_dir = e.meta.kind == FileKind::Dir;
                    if is_dir && grep.dir_excluded(&e.name, false) {
                        continue;
                    }
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
    drop(pattern_charges);
    Ok(if grep.status_error && !(cfg.quiet && grep.any_match) {
        2
    } else if grep.any_match {
        0
    } else {
        1
    })
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
        run(ctx, &args, None).await
    }
}

/// `egrep`: `grep -E`.
pub struct EgrepCmd;

#[async_trait]
impl Command for EgrepCmd {
    fn name(&self) -> &'static str {
        "egrep"
    }
    fn summary(&self) -> &'static str {
        "print lines that match extended regular expressions (grep -E)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        run(ctx, &args, Some('E')).await
    }
}

/// `fgrep`: `grep -F`.
pub struct FgrepCmd;

#[async_trait]
impl Command for FgrepCmd {
    fn name(&self) -> &'static str {
        "fgrep"
    }
    fn summary(&self) -> &'static str {
        "print lines that contain fixed strings (grep -F)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        run(ctx, &args, Some('F')).await
    }
}

#[cfg(test)]
mod tests;

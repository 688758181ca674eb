//! `awk` (and `gawk`): POSIX awk with the gawk extensions scripts commonly use.
//!
//! The program is lexed ([`lex`]), parsed to a tree whose names are resolved to slots
//! ([`parse`]), and run by [`interp`] on a blocking thread: awk programs compute without
//! awaiting, so the interpreter is synchronous and reaches the session's streams,
//! filesystem and launcher (for `system()`, `print | "cmd"`, `"cmd" | getline`, which run
//! through the session's `sh`) with `Handle::block_on`, a chunk at a time.
//!
//! Messages, number formatting and exit statuses follow gawk 5: syntax errors print the
//! source line with a caret and give 1, fatal errors give 2.

use async_trait::async_trait;
use tokio::runtime::Handle;

use crate::{CmdResult, Command, Context, Interrupt, Status};

mod array;
mod builtins;
mod interp;
mod io;
mod lex;
mod parse;
mod random;
mod re;
mod source;
mod value;

use interp::{Fail, Interp, Lint};
use source::{MAX_PROGRAM_BYTES, Row, locate};

/// Stack of the interpreter's thread: user function recursion (bounded by the
/// interpreter's call depth limit) and the parser's nesting limit fit in it.
const INTERP_STACK: usize = 256 * 1024 * 1024;

/// awk interpreters running at once, server-wide. Each is an OS thread outside tokio's
/// scheduler, so without a bound one session could start hundreds of spinning ones and
/// take the CPU from every other session; past it, an awk waits (cancellably) for a turn.
const MAX_INTERP_THREADS: usize = 8;

static INTERP_THREADS: tokio::sync::Semaphore =
    tokio::sync::Semaphore::const_new(MAX_INTERP_THREADS);

/// gawk's usage text, word for word (scripts and tests compare it).
const USAGE: &str = "Usage: awk [POSIX or GNU style options] -f progfile [--] file ...\n\
Usage: awk [POSIX or GNU style options] [--] 'program' file ...\n\
POSIX options:\t\tGNU long options: (standard)\n\
\t-f progfile\t\t--file=progfile\n\
\t-F fs\t\t\t--field-separator=fs\n\
\t-v var=val\t\t--assign=var=val\n\
Short options:\t\tGNU long options: (extensions)\n\
\t-b\t\t\t--characters-as-bytes\n\
\t-c\t\t\t--traditional\n\
\t-C\t\t\t--copyright\n\
\t-d[file]\t\t--dump-variables[=file]\n\
\t-D[file]\t\t--debug[=file]\n\
\t-e 'program-text'\t--source='program-text'\n\
\t-E file\t\t\t--exec=file\n\
\t-g\t\t\t--gen-pot\n\
\t-h\t\t\t--help\n\
\t-i includefile\t\t--include=includefile\n\
\t-I\t\t\t--trace\n\
\t-l library\t\t--load=library\n\
\t-L[fatal|invalid|no-ext]\t--lint[=fatal|invalid|no-ext]\n\
\t-M\t\t\t--bignum\n\
\t-N\t\t\t--use-lc-numeric\n\
\t-n\t\t\t--non-decimal-data\n\
\t-o[file]\t\t--pretty-print[=file]\n\
\t-O\t\t\t--optimize\n\
\t-p[file]\t\t--profile[=file]\n\
\t-P\t\t\t--posix\n\
\t-r\t\t\t--re-interval\n\
\t-s\t\t\t--no-optimize\n\
\t-S\t\t\t--sandbox\n\
\t-t\t\t\t--lint-old\n\
\t-V\t\t\t--version\n\
\n\
To report bugs, use the `gawkbug' program.\n\
For full instructions, see the node `Bugs' in `gawk.info'\n\
which is section `Reporting Problems and Bugs' in the\n\
printed version.  This same information may be found at\n\
https://www.gnu.org/software/gawk/manual/html_node/Bugs.html.\n\
PLEASE do NOT try to report bugs by posting in comp.lang.awk,\n\
or by using a web forum such as Stack Overflow.\n\
\n\
gawk is a pattern scanning and processing language.\n\
By default it reads standard input and writes standard output.\n\
\n\
Examples:\n\
\tawk '{ sum += $1 }; END { print sum }' file\n\
\tawk -F: '{ print $1 }' /etc/passwd\n\
";

/// `awk` under its POSIX name.
pub struct Awk;
/// `gawk`, the same command.
pub struct Gawk;

#[async_trait]
impl Command for Awk {
    fn name(&self) -> &'static str {
        "awk"
    }
    fn summary(&self) -> &'static str {
        "pattern scanning and processing language"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        run(ctx, args, "awk").await
    }
}

#[async_trait]
impl Command for Gawk {
    fn name(&self) -> &'static str {
        "gawk"
    }
    fn summary(&self) -> &'static str {
        "pattern scanning and processing language (GNU awk)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        run(ctx, args, "gawk").await
    }
}

/// Where program text came from.
enum Source {
    Text(String),
    File(String),
}

/// The parsed command line.
struct Cli {
    sources: Vec<Source>,
    /// `-F`'s value and its place among the `-v` assignments (they apply in order).
    fs: Option<(usize, String)>,
    assigns: Vec<(String, String)>,
    operands: Vec<String>,
    /// Files `-i` includes before the program.
    includes: Vec<String>,
    /// `-S`: no `system()`, no redirections.
    sandbox: bool,
    /// `-n`: hex and octal strings convert as such.
    non_decimal: bool,
    /// `-L`/`--lint`.
    lint: Lint,
    /// `--lint=no-ext`: no warnings about gawk extensions.
    lint_no_ext: bool,
    /// `-E`: the program file ends the options and operands are never assignments.
    exec: bool,
    /// `-c`/`-P`: gawk's extensions off.
    compat: lex::Compat,
    /// `-l lib`: extensions loaded before the program.
    loads: Vec<String>,
    /// `-g`: list the translatable strings instead of running.
    gen_pot: bool,
    /// `-d[file]`: where to dump the global variables at exit.
    dump: Option<String>,
    /// Warnings the options gave (`-W` with an unknown name, `-M`), printed before running.
    warnings: Vec<String>,
    /// The whole command line, for `PROCINFO["argv"]`.
    raw: Vec<String>,
    /// The name it runs under (`awk`, `gawk`): `ARGV[0]`.
    name: &'static str,
}

enum CliResult {
    Run(Box<Cli>),
    /// Print this to stdout, status 0.
    Out(String),
    /// Print this to stderr, with the status.
    Err(String, Status),
}

/// Whether an option takes a value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Takes {
    Nothing,
    /// In the same word, or the next one.
    Value,
    /// Only in the same word (`-dfile`, `--lint=fatal`).
    Optional,
}

/// gawk's long options and the short letter each stands for. A long option may be
/// abbreviated to any prefix that names only one of them (getopt_long).
const LONG_OPTIONS: &[(&str, char, Takes)] = &[
    ("assign", 'v', Takes::Value),
    ("bignum", 'M', Takes::Nothing),
    ("characters-as-bytes", 'b', Takes::Nothing),
    ("copyright", 'C', Takes::Nothing),
    ("debug", 'D', Takes::Optional),
    ("dump-variables", 'd', Takes::Optional),
    ("exec", 'E', Takes::Value),
    ("field-separator", 'F', Takes::Value),
    ("file", 'f', Takes::Value),
    ("gen-pot", 'g', Takes::Nothing),
    ("help", 'h', Takes::Nothing),
    ("include", 'i', Takes::Value),
    ("lint", 'L', Takes::Optional),
    ("lint-old", 't', Takes::Nothing),
    ("load", 'l', Takes::Value),
    ("no-optimize", 's', Takes::Nothing),
    ("non-decimal-data", 'n', Takes::Nothing),
    ("nostalgia", 'Z', Takes::Nothing),
    ("optimize", 'O', Takes::Nothing),
    ("posix", 'P', Takes::Nothing),
    ("pretty-print", 'o', Takes::Optional),
    ("profile", 'p', Takes::Optional),
    ("re-interval", 'r', Takes::Nothing),
    ("sandbox", 'S', Takes::Nothing),
    ("source", 'e', Takes::Value),
    ("trace", 'I', Takes::Nothing),
    ("traditional", 'c', Takes::Nothing),
    ("usage", 'h', Takes::Nothing),
    ("use-lc-numeric", 'N', Takes::Nothing),
    ("version", 'V', Takes::Nothing),
];

/// What a short option letter takes, or `None` for a letter gawk does not know.
fn short_option(c: char) -> Option<Takes> {
    if c == 'W' {
        return Some(Takes::Value);
    }
    if c == 'Z' {
        return None;
    }
    LONG_OPTIONS
        .iter()
        .find(|(_, s, _)| *s == c)
        .map(|&(_, _, t)| t)
}

/// The long option `name` names, exactly or as the only one it is a prefix of.
fn long_option(name: &str) -> Option<(char, Takes)> {
    if let Some(&(_, c, t)) = LONG_OPTIONS.iter().find(|(n, _, _)| *n == name) {
        return Some((c, t));
    }
    let mut found = LONG_OPTIONS
        .iter()
        .filter(|(n, _, _)| !name.is_empty() && n.starts_with(name));
    match (found.next(), found.next()) {
        (Some(&(_, c, t)), None) => Some((c, t)),
        _ => None,
    }
}

/// gawk's copyright notice (`-C`, and after the version line of `--version`).
const COPYRIGHT: &str = "Copyright (C) 1989, 1991-2022 Free Software Foundation.\n\
\n\
This program is free software; you can redistribute it and/or modify\n\
it under the terms of the GNU General Public License as published by\n\
the Free Software Foundation; either version 3 of the License, or\n\
(at your option) any later version.\n\
\n\
This program is distributed in the hope that it will be useful,\n\
but WITHOUT ANY WARRANTY; without even the implied warranty of\n\
MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the\n\
GNU General Public License for more details.\n\
\n\
You should have received a copy of the GNU General Public License\n\
along with this program. If not, see http://www.gnu.org/licenses/.\n";

fn parse_cli(args: &[String]) -> CliResult {
    let mut cli = Cli {
        sources: Vec::new(),
        fs: None,
        assigns: Vec::new(),
        operands: Vec::new(),
        includes: Vec::new(),
        sandbox: false,
        non_decimal: false,
        lint: Lint::Off,
        lint_no_ext: false,
        exec: false,
        compat: lex::Compat::Gnu,
        gen_pot: false,
        loads: Vec::new(),
        dump: None,
        warnings: Vec::new(),
        raw: args.to_vec(),
        name: "awk",
    };
    let mut i = 0;
    'words: while i < args.len() {
        let a = &args[i];
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        // Each option in this word: (letter, value in the word, whether the next word
        // may give the value).
        let mut opts: Vec<(char, Option<String>, Takes)> = Vec::new();
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (long, None),
            };
            match long_option(name) {
                Some((c, t)) => opts.push((c, inline, t)),
                // gawk prints its usage alone for an unknown or ambiguous option.
                None => return CliResult::Err(USAGE.to_string(), 1),
            }
        } else {
            let body = &a[1..];
            for (at, c) in body.char_indices() {
                let Some(t) = short_option(c) else {
                    return CliResult::Err(USAGE.to_string(), 1);
                };
                if t == Takes::Nothing {
                    opts.push((c, None, t));
                    continue;
                }
                let rest = &body[at + c.len_utf8()..];
                opts.push((c, (!rest.is_empty()).then(|| rest.to_string()), t));
                break;
            }
        }
        for (mut c, mut value, mut takes) in opts {
            if c == 'W' {
                // `-W name[=value]` is `--name[=value]`.
                let Some(w) = value.take().or_else(|| {
                    i += 1;
                    args.get(i).cloned()
                }) else {
                    return CliResult::Err(
                        format!("awk: option requires an argument -- W\n{USAGE}"),
                        1,
                    );
                };
                let (name, inline) = match w.split_once('=') {
                    Some((k, v)) => (k.to_string(), Some(v.to_string())),
                    None => (w.clone(), None),
                };
                match long_option(&name) {
                    Some((lc, t)) => (c, value, takes) = (lc, inline, t),
                    None => {
                        cli.warnings
                            .push(format!("awk: option `-W {w}' unrecognized, ignored\n"));
                        continue;
                    }
                }
            }
            if takes == Takes::Value && value.is_none() {
                i += 1;
                match args.get(i) {
                    Some(v) => value = Some(v.clone()),
                    None => {
                        return CliResult::Err(
                            format!("awk: option requires an argument -- {c}\n{USAGE}"),
                            1,
                        );
                    }
                }
            }
            match option(&mut cli, c, value) {
                Step::Go => {}
                Step::EndOptions => {
                    i += 1;
                    break 'words;
                }
                Step::Stop(r) => return r,
            }
        }
        i += 1;
    }
    cli.operands = args[i..].to_vec();
    if cli.sources.is_empty() {
        if cli.operands.is_empty() {
            return CliResult::Err(USAGE.to_string(), 1);
        }
        let program = cli.operands.remove(0);
        cli.sources.push(Source::Text(program));
    }
    // `-i lib` is `@include "lib"` ahead of the program.
    for (n, inc) in std::mem::take(&mut cli.includes).into_iter().enumerate() {
        let text = format!(
            "@include \"{}\"\n",
            inc.replace('\\', "\\\\").replace('"', "\\\"")
        );
        cli.sources.insert(n, Source::Text(text));
    }
    CliResult::Run(Box::new(cli))
}

/// What parsing goes on with after one option.
enum Step {
    Go,
    /// `-E file`: what follows are operands.
    EndOptions,
    Stop(CliResult),
}

/// Applies one option (by its short letter) with its value.
fn option(cli: &mut Cli, c: char, value: Option<String>) -> Step {
    let v = value.unwrap_or_default();
    match c {
        'F' => cli.fs = Some((cli.assigns.len(), v)),
        'v' => match v.split_once('=') {
            Some((k, val)) if lex::legal_name(k.as_bytes()) => {
                cli.assigns.push((k.to_string(), val.to_string()));
            }
            Some((k, _)) if !k.is_empty() => {
                return Step::Stop(CliResult::Err(
                    format!("awk: fatal: `{k}' is not a legal variable name\n"),
                    2,
                ));
            }
            _ => {
                return Step::Stop(CliResult::Err(
                    format!("awk: `{v}' argument to `-v' not in `var=value' form\n\n{USAGE}"),
                    1,
                ));
            }
        },
        'f' => cli.sources.push(Source::File(v)),
        'E' => {
            cli.sources.push(Source::File(v));
            cli.exec = true;
            return Step::EndOptions;
        }
        'e' => cli.sources.push(Source::Text(v)),
        'i' => cli.includes.push(v),
        'h' => return Step::Stop(CliResult::Out(USAGE.to_string())),
        'V' => {
            return Step::Stop(CliResult::Out(format!(
                "GNU Awk 5.2.1, API 3.2 (forkbox native awk)\n{COPYRIGHT}"
            )));
        }
        'C' => return Step::Stop(CliResult::Out(COPYRIGHT.to_string())),
        // `-L`'s value: `invalid` keeps only the checks of invalid constructs, none of
        // which are runtime ones here.
        'L' => {
            cli.lint_no_ext = v == "no-ext";
            cli.lint = match v.as_str() {
                "fatal" => Lint::Fatal,
                "invalid" => Lint::Off,
                _ => Lint::Warn,
            };
        }
        'n' => cli.non_decimal = true,
        'g' => cli.gen_pot = true,
        'c' | 'P' => {
            let (was, now) = (
                cli.compat,
                if c == 'P' {
                    lex::Compat::Posix
                } else {
                    lex::Compat::Traditional
                },
            );
            if was != now && was != lex::Compat::Gnu {
                cli.warnings
                    .push("awk: warning: `--posix' overrides `--traditional'\n".into());
            }
            if was != lex::Compat::Posix {
                cli.compat = now;
            }
        }
        'S' => cli.sandbox = true,
        'd' => {
            cli.dump = Some(if v.is_empty() {
                "awkvars.out".into()
            } else {
                v
            })
        }
        // As a gawk built without MPFR: arithmetic stays in doubles.
        'M' => cli
            .warnings
            .push("awk: warning: -M ignored: MPFR/GMP support not compiled in\n".into()),
        // Extension libraries: the few built in.
        'l' => {
            if !lex::EXTENSIONS
                .iter()
                .any(|(n, _)| *n == v.strip_suffix(".so").unwrap_or(&v))
            {
                return Step::Stop(CliResult::Err(
                    format!(
                        "awk: fatal: cannot open shared library `{v}' for reading: No such file or directory\n"
                    ),
                    2,
                ));
            }
            cli.loads.push(v);
        }
        'D' => {
            return Step::Stop(CliResult::Err(
                "awk: fatal: the debugger (-D, --debug) is not available in forkbox's awk\n".into(),
                2,
            ));
        }
        'o' => {
            return Step::Stop(CliResult::Err(
                "awk: fatal: pretty-printing (-o, --pretty-print) is not available in forkbox's awk\n"
                    .into(),
                2,
            ));
        }
        // Accepted and ignored: options that change nothing here (`-p` runs the program
        // without writing a profile).
        _ => {}
    }
    Step::Go
}

async fn run(ctx: &Context, args: Vec<String>, name: &'static str) -> CmdResult {
    let cli = match parse_cli(&args) {
        CliResult::Run(c) => {
            let mut c = *c;
            c.name = name;
            for w in std::mem::take(&mut c.warnings) {
                ctx.err(w).await;
            }
            c
        }
        CliResult::Out(s) => {
            ctx.out(s).await?;
            return Ok(0);
        }
        CliResult::Err(s, st) => {
            ctx.err(s).await;
            return Ok(st);
        }
    };
    // Program text: -e pieces and -f files in order, @include files spliced in.
    let mut segments = Vec::new();
    for s in &cli.sources {
        let (name, body) = match s {
            Source::Text(t) => (
                "cmd. line".to_string(),
                crate::bytetext::encode(t).into_owned(),
            ),
            Source::File(f) => {
                let path = if f == "-" || f == "/dev/stdin" {
                    None
                } else {
                    Some(ctx.path(f))
                };
                let body = match path {
                    None => match ctx.stdin.read_to_end(MAX_PROGRAM_BYTES as usize).await {
                        Ok(b) => b,
                        Err(e) => {
                            ctx.err(format!(
                                "awk: fatal: cannot open source file `{f}' for reading: {e}\n"
                            ))
                            .await;
                            return Ok(2);
                        }
                    },
                    Some(p) => {
                        // A name without a `/` is looked for along AWKPATH too.
                        let found = if f.contains('/') {
                            None
                        } else {
                            source::open(ctx, f).await.ok().map(|(_, body)| body)
                        };
                        let read = match found {
                            Some(body) => Ok(body),
                            None => {
                                crate::fs::read_all(ctx.fs.as_ref(), &p, MAX_PROGRAM_BYTES).await
                            }
                        };
                        match read {
                            Ok(b) => b,
                            Err(e @ crate::fs::FsError::IsADirectory) => {
                                // gawk opens it, then fails to read: an error, status 1.
                                ctx.err(format!(
                                    "awk: {f}:1: error: cannot read source file `{f}': {e}\n"
                                ))
                                .await;
                                return Ok(1);
                            }
                            Err(e) => {
                                ctx.err(format!(
                                    "awk: fatal: cannot open source file `{f}' for reading: {e}\n"
                                ))
                                .await;
                                return Ok(2);
                            }
                        }
                    }
                };
                (f.clone(), body)
            }
        };
        segments.push(source::Segment::new(name, body));
    }
    // POSIX awk has no `@include`: the lexer refuses it where it stands.
    let segments = if cli.compat == lex::Compat::Posix {
        Ok(segments)
    } else {
        source::expand(ctx, segments).await
    };
    let segments = match segments {
        Ok(s) => s,
        Err(m) => {
            ctx.err(m).await;
            return Ok(1);
        }
    };
    let n_segments = segments.len();
    let mut text = Vec::new();
    let mut table: Vec<Row> = Vec::new();
    let mut line = 1;
    for seg in segments {
        table.push(Row {
            name: seg.name,
            start: line,
            first: seg.first_line,
            source: seg.source,
        });
        let body = seg.body;
        line += body.iter().filter(|&&b| b == b'\n').count();
        text.extend_from_slice(&body);
        if !text.ends_with(b"\n") || body.is_empty() {
            text.push(b'\n');
            line += 1;
        }
    }
    let single_text = n_segments == 1 && matches!(cli.sources.as_slice(), [Source::Text(_)]);
    if single_text && text.ends_with(b"\n") {
        // A lone command-line program: its own last newline is not ours to add.
        if let [Source::Text(t)] = cli.sources.as_slice()
            && !t.ends_with('\n')
        {
            text.pop();
        }
    }
    let turn = tokio::select! {
        turn = INTERP_THREADS.acquire() => turn.map_err(|_| Interrupt::Cancelled)?,
        _ = ctx.cancel.cancelled() => return Err(Interrupt::Cancelled),
    };
    let ctx2 = ctx.clone();
    let rt = Handle::current();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    // A thread of its own: awk recursion needs a deeper stack than the blocking pool's.
    let spawned = std::thread::Builder::new()
        .name("awk".into())
        .stack_size(INTERP_STACK)
        .spawn(move || {
            let _runtime = rt.enter();
            let r = run_blocking(ctx2, rt.clone(), cli, text, table);
            drop(turn);
            let _ = done_tx.send(r);
        });
    if spawned.is_err() {
        ctx.err("awk: fatal: cannot start the interpreter thread\n")
            .await;
        return Ok(2);
    }
    done_rx.await.unwrap_or(Err(Interrupt::Cancelled))
}

fn syntax_message(
    text: &[u8],
    table: &[Row],
    line: usize,
    pos: usize,
    msg: &str,
    is_eof: bool,
) -> String {
    let raw_pos = pos;
    let pos = pos.min(text.len());
    // The line holding the offending token.
    let start = text[..pos.saturating_sub(if is_eof { 0 } else { 1 })]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let end = text[start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |i| start + i);
    let src_line = String::from_utf8_lossy(&text[start..end]);
    let col = if is_eof {
        pos - start
    } else {
        raw_pos.saturating_sub(1).saturating_sub(start)
    };
    let (name, l) = locate(table, line);
    format!(
        "awk: {name}:{l}: {src_line}\nawk: {name}:{l}: {}^ {msg}\n",
        " ".repeat(col)
    )
}

fn run_blocking(ctx: Context, rt: Handle, cli: Cli, text: Vec<u8>, table: Vec<Row>) -> CmdResult {
    let err = |s: String| {
        let _ = rt.block_on(ctx.stderr.write_str(&s));
    };
    value::set_utf8_mode(super::util::utf8_locale(&ctx.env));
    lex::set_compat(cli.compat);
    lex::clear_extensions();
    for lib in &cli.loads {
        let _ = lex::load_extension(lib);
    }
    let mut lex_warnings = Vec::new();
    let rows: Vec<(usize, usize)> = table.iter().map(|r| (r.start, r.source)).collect();
    let toks = lex::tokenize_warning(&text, &rows, &mut lex_warnings);
    let mut warned_escapes = std::collections::HashSet::new();
    for (line, w) in lex_warnings {
        if warned_escapes.insert(w.clone()) {
            let (name, l) = locate(&table, line);
            err(format!("awk: {name}:{l}: warning: {w}\n"));
        }
    }
    let toks = match toks {
        Ok(t) => t,
        Err(e) => {
            let (name, l) = locate(&table, e.line);
            if let Some(p) = &e.preface {
                err(format!("awk: {name}:{l}: error: {p}\n"));
            }
            if e.plain {
                err(format!("awk: {name}:{l}: error: {}\n", e.msg));
            } else {
                err(syntax_message(
                    &text,
                    &table,
                    e.line,
                    e.pos + 1,
                    &e.msg,
                    false,
                ));
            }
            return Ok(1);
        }
    };
    let prog = match parse::parse_lint_ext(&toks, cli.lint != Lint::Off, !cli.lint_no_ext) {
        Ok(p) => p,
        Err(e) => {
            if e.line == 0 {
                // A bare message (`BEGIN blocks must have an action part`): pos is its line.
                let (name, l) = locate(&table, e.pos.max(1));
                err(format!("awk: {name}:{l}: {}\n", e.msg));
                return Ok(1);
            }
            if e.plain > 0 {
                let (name, l) = locate(&table, e.line);
                for _ in 0..e.plain {
                    err(format!("awk: {name}:{l}: error: {}\n", e.msg));
                }
                return Ok(1);
            }
            if e.msg.starts_with("division by zero") {
                let (name, l) = locate(&table, e.line);
                err(format!("awk: {name}:{l}: error: {}\n", e.msg));
                return Ok(1);
            }
            let line = if e.at_newline { e.line + 1 } else { e.line };
            let mut m = syntax_message(&text, &table, e.line, e.pos, &e.msg, false);
            if line != e.line {
                // gawk names the line after the one it shows (it has read the newline).
                let (name, l) = locate(&table, e.line);
                let (_, l2) = locate(&table, line);
                m = m.replace(&format!("{name}:{l}:"), &format!("{name}:{l2}:"));
            }
            err(m);
            return Ok(1);
        }
    };
    for (line, w, lint) in &prog.warnings {
        // Under --lint=fatal the first lint warning ends the run.
        let fatal = *lint && cli.lint == Lint::Fatal;
        let kind = if fatal { "fatal" } else { "warning" };
        if *line == 0 {
            err(format!("awk: {kind}: {w}\n"));
        } else {
            let (name, l) = locate(&table, *line);
            err(format!("awk: {name}:{l}: {kind}: {w}\n"));
        }
        if fatal {
            return Ok(2);
        }
    }
    if cli.gen_pot {
        let pot = gen_pot(&toks);
        rt.block_on(ctx.out(&pot))?;
        return Ok(0);
    }
    let mut argv = vec![cli.name.to_string()];
    argv.extend(cli.operands.iter().cloned());
    let mut assigns = cli.assigns;
    if let Some((at, fs)) = &cli.fs {
        // Traditional awk's `-Ft` is a tab.
        let fs = if fs == "t" && cli.compat == lex::Compat::Traditional {
            "\t".to_string()
        } else {
            fs.clone()
        };
        assigns.insert((*at).min(assigns.len()), ("FS".to_string(), fs));
    }
    value::set_non_decimal_data(cli.non_decimal);
    // Regex literals are compiled with the program: gawk reports a bad one (and warns)
    // before it runs anything.
    let mut regexes = Vec::with_capacity(prog.regexes.len());
    let mut warned = std::collections::HashSet::new();
    for (r, &line) in prog.regexes.iter().zip(&prog.regex_lines) {
        let (name, l) = locate(&table, line);
        match re::compile(r.as_bytes(), false) {
            Ok(c) => {
                for w in c.warnings() {
                    if warned.insert(w.clone()) {
                        err(format!("awk: {name}:{l}: warning: {w}\n"));
                    }
                }
                regexes.push(std::rc::Rc::new(c));
            }
            Err(m) => {
                err(format!("awk: {name}:{l}: error: {m}\n"));
                return Ok(1);
            }
        }
    }
    let mut me = match Interp::new(prog, ctx.clone(), rt.clone(), argv, assigns, regexes) {
        Ok(m) => m,
        Err(f) => return report(&ctx, &rt, None, &table, f),
    };
    me.sandbox = cli.sandbox;
    me.operand_assigns = !cli.exec;
    me.table = table.clone();
    me.lint = cli.lint;
    me.set_procinfo_argv(&cli.raw);
    match me.run().and_then(|st| match &cli.dump {
        Some(file) => me.dump_variables(file).map(|()| st),
        None => Ok(st),
    }) {
        Ok(st) => Ok(st),
        Err(f) => {
            let st = me.exit_code;
            let loc_line = me.cur_line;
            let r = report(&ctx, &rt, Some(&mut me), &table, f);
            let _ = (st, loc_line);
            r
        }
    }
}

/// `--gen-pot`: a PO template entry for each string marked for translation (`_"..."`,
/// the first arguments of `dcgettext` and `dcngettext`), in program order.
fn gen_pot(toks: &[lex::Token]) -> Vec<u8> {
    use lex::Tok;
    let mut out = Vec::new();
    let entry = |out: &mut Vec<u8>, one: &[u8], many: Option<&[u8]>| {
        out.extend_from_slice(b"msgid ");
        interp::quoted(one, out);
        match many {
            Some(m) => {
                out.extend_from_slice(b"\nmsgid_plural ");
                interp::quoted(m, out);
                out.extend_from_slice(b"\nmsgstr[0] \"\"\nmsgstr[1] \"\"\n\n");
            }
            None => out.extend_from_slice(b"\nmsgstr \"\"\n\n"),
        }
    };
    for (i, t) in toks.iter().enumerate() {
        let next = |k: usize| toks.get(i + k).map(|t| &t.tok);
        match &t.tok {
            Tok::Name(n) if n == "_" => {
                if let Some(s) = toks.get(i + 1).filter(|s| s.start == t.end)
                    && let Tok::Str(s) = &s.tok
                {
                    entry(&mut out, s, None);
                }
            }
            Tok::Builtin(b) if b == "dcgettext" => {
                if let (Some(Tok::Op("(")), Some(Tok::Str(s))) = (next(1), next(2)) {
                    entry(&mut out, s, None);
                }
            }
            Tok::Builtin(b) if b == "dcngettext" => {
                if let (
                    Some(Tok::Op("(")),
                    Some(Tok::Str(s)),
                    Some(Tok::Op(",")),
                    Some(Tok::Str(p)),
                ) = (next(1), next(2), next(3), next(4))
                {
                    entry(&mut out, s, Some(p));
                }
            }
            _ => {}
        }
    }
    out
}

/// Prints a runtime failure the gawk way and gives the status.
fn report(
    ctx: &Context,
    rt: &Handle,
    me: Option<&mut Interp>,
    table: &[Row],
    f: Fail,
) -> CmdResult {
    let loc = match &me {
        Some(m) if m.cur_line > 0 => {
            let (name, l) = locate(table, m.cur_line);
            format!("awk: {name}:{l}: {}", m.record_location())
        }
        _ => "awk: ".to_string(),
    };
    let (msg, st) = match f {
        Fail::Fatal(m) => (format!("{loc}fatal: {m}\n"), 2),
        Fail::Stop(i) => {
            if let Some(m) = me {
                let _ = m.flush_stdout();
            }
            return Err(i);
        }
        Fail::Exit | Fail::Next | Fail::NextFile => (String::new(), 0),
    };
    // As gawk: standard output is flushed before the message, and pending output to
    // files and commands goes out as the process ends, after it.
    if let Some(m) = me {
        let _ = m.flush_stdout();
        if !msg.is_empty() {
            let _ = rt.block_on(ctx.stderr.write_str(&msg));
        }
        m.abort_cleanup();
    } else if !msg.is_empty() {
        let _ = rt.block_on(ctx.stderr.write_str(&msg));
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn awk(args: &[&str], stdin: &str) -> (Status, String, String) {
        let inv = Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        };
        inv.run(&Awk, args).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sums_a_column() {
        let (st, out, err) = awk(&["{ s += $2 } END { print s, NR }"], "a 1\nb 2\nc 3.5\n").await;
        assert_eq!((st, out.as_str(), err.as_str()), (0, "6.5 3\n", ""));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn syntax_error_points_at_the_token() {
        let (st, out, err) = awk(&["BEGIN { x = }"], "").await;
        assert_eq!(st, 1);
        assert_eq!(out, "");
        assert_eq!(
            err,
            "awk: cmd. line:1: BEGIN { x = }\nawk: cmd. line:1:             ^ syntax error\n"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lint_warns_of_uninitialised_reads() {
        let (st, out, err) = awk(&["--lint", "BEGIN { print x + 1; y = 2; print y }"], "").await;
        assert_eq!((st, out.as_str()), (0, "1\n2\n"));
        assert_eq!(
            err,
            "awk: cmd. line:1: warning: reference to uninitialized variable `x'\n"
        );
        let (st, _, err) = awk(&["--lint=fatal", "BEGIN { print a[1] }"], "").await;
        assert_eq!(st, 2);
        assert_eq!(
            err,
            "awk: cmd. line:1: fatal: reference to uninitialized element `a[\"1\"]'\n"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nf_keeps_the_value_assigned() {
        let (st, out, _) = awk(
            &["{ NF = \"2x\"; print; print NF } END { print NF }"],
            "a b c\n",
        )
        .await;
        assert_eq!((st, out.as_str()), (0, "a b\n2x\n2x\n"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fields_and_rebuild() {
        let (st, out, _) = awk(
            &["-F", ":", "-v", "OFS=-", "{ $2 = \"X\"; print; print NF }"],
            "a:b:c\n",
        )
        .await;
        assert_eq!((st, out.as_str()), (0, "a-X-c\n3\n"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn infinite_loop_is_cancellable() {
        let inv = Invocation::default();
        let (out_w, _out_r) = crate::pipe();
        let (err_w, _err_r) = crate::pipe();
        let cancel = tokio_util::sync::CancellationToken::new();
        let ctx = Context {
            stdin: crate::Input::empty(),
            stdout: out_w,
            stderr: err_w,
            env: inv.env.clone(),
            env_last: Vec::new(),
            cwd: inv.cwd.clone(),
            fs: inv.fs.clone(),
            cancel: cancel.clone(),
            tty: None,
            terminal: None,
            launcher: inv.launcher.clone(),
            budget: inv.budget.clone(),
        };
        let h = tokio::spawn(async move {
            Awk.run(&ctx, vec!["BEGIN { while (1) ; }".to_string()])
                .await
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        cancel.cancel();
        let r = h.await.unwrap();
        assert!(matches!(r, Err(Interrupt::Cancelled)));
    }

    #[test]
    fn cli_forms() {
        let args: Vec<String> = ["-F,", "-v", "x=1", "-e", "BEGIN{}", "--", "f"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let CliResult::Run(c) = parse_cli(&args) else {
            panic!("not parsed")
        };
        assert_eq!(c.fs, Some((0, ",".to_string())));
        assert_eq!(c.assigns, vec![("x".to_string(), "1".to_string())]);
        assert_eq!(c.operands, vec!["f".to_string()]);
        assert!(matches!(
            parse_cli(&["-éx".to_string()]),
            CliResult::Err(_, 1)
        ));
        assert!(matches!(
            parse_cli(&["-z".to_string()]),
            CliResult::Err(_, 1)
        ));
    }

    #[test]
    fn long_options_abbreviate_and_w_names_them() {
        let cli = |a: &[&str]| parse_cli(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        // A unique prefix names its option; an ambiguous one is refused with the usage.
        assert_eq!(long_option("vers").map(|(c, _)| c), Some('V'));
        assert_eq!(long_option("no"), None);
        assert!(matches!(cli(&["--no", "BEGIN{}"]), CliResult::Err(_, 1)));
        // `-W name=value` is `--name=value`; an unknown name is a warning only.
        let CliResult::Run(c) = cli(&["-W", "source=BEGIN{}", "-Wfrob", "-vx=1"]) else {
            panic!("not parsed")
        };
        assert!(matches!(c.sources.as_slice(), [Source::Text(t)] if t == "BEGIN{}"));
        assert_eq!(c.warnings.len(), 1);
        assert_eq!(c.assigns, vec![("x".to_string(), "1".to_string())]);
        // `-E file` ends the options: what follows is an operand.
        let CliResult::Run(c) = cli(&["-E", "p.awk", "-v", "y=2"]) else {
            panic!("not parsed")
        };
        assert!(c.exec);
        assert_eq!(c.operands, vec!["-v".to_string(), "y=2".to_string()]);
    }
}

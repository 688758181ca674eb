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
    /// The whole command line, for `PROCINFO["argv"]`.
    raw: Vec<String>,
    /// The name it runs under (`awk`, `gawk`): `ARGV[0]`.
    name: &'static str,
}

enum CliResult {
    Run(Cli),
    /// Print this to stdout, status 0.
    Out(String),
    /// Print this to stderr, with the status.
    Err(String, Status),
}

fn parse_cli(args: &[String]) -> CliResult {
    parse_cli_into(
        args,
        Cli {
            sources: Vec::new(),
            fs: None,
            assigns: Vec::new(),
            operands: Vec::new(),
            includes: Vec::new(),
            sandbox: false,
            non_decimal: false,
            lint: Lint::Off,
            raw: args.to_vec(),
            name: "awk",
        },
    )
}

/// Parses `args` into `cli`, which holds what options before them gave (a cluster of
/// flags `-bc` is split and parsed on).
fn parse_cli_into(args: &[String], mut cli: Cli) -> CliResult {
    let mut i = 0;
    // A bad `-v`: (message, status) as gawk gives them.
    let assign = |v: &str, assigns: &mut Vec<(String, String)>| -> Option<(String, i32)> {
        match v.split_once('=') {
            Some((k, val)) if lex::legal_name(k.as_bytes()) => {
                assigns.push((k.to_string(), val.to_string()));
                None
            }
            Some((k, _)) if !k.is_empty() => Some((
                format!("awk: fatal: `{k}' is not a legal variable name\n"),
                2,
            )),
            _ => Some((
                format!("awk: `{v}' argument to `-v' not in `var=value' form\n\n{USAGE}"),
                1,
            )),
        }
    };
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        // The value of an option: the rest of this word, or the next word.
        let (opt, inline): (&str, Option<&str>) = if let Some(long) = a.strip_prefix("--") {
            match long.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (long, None),
            }
        } else {
            let end = 1 + a[1..].chars().next().map_or(0, char::len_utf8);
            let o = &a[1..end];
            let rest = &a[end..];
            (o, if rest.is_empty() { None } else { Some(rest) })
        };
        let takes_value = matches!(
            opt,
            "F" | "v"
                | "f"
                | "e"
                | "i"
                | "field-separator"
                | "assign"
                | "file"
                | "source"
                | "include"
        );
        let value = if takes_value {
            match inline {
                Some(v) => Some(v.to_string()),
                None => {
                    i += 1;
                    match args.get(i) {
                        Some(v) => Some(v.clone()),
                        None => {
                            return CliResult::Err(
                                format!("awk: option requires an argument -- {opt}\n{USAGE}"),
                                1,
                            );
                        }
                    }
                }
            }
        } else {
            None
        };
        match (opt, value) {
            ("F" | "field-separator", Some(v)) => cli.fs = Some((cli.assigns.len(), v)),
            ("v" | "assign", Some(v)) => {
                if let Some((e, st)) = assign(&v, &mut cli.assigns) {
                    return CliResult::Err(e, st);
                }
            }
            ("f" | "file", Some(v)) => cli.sources.push(Source::File(v)),
            ("e" | "source", Some(v)) => cli.sources.push(Source::Text(v)),
            ("i" | "include", Some(v)) => cli.includes.push(v),
            ("h" | "help" | "usage", _) => return CliResult::Out(USAGE.to_string()),
            ("V" | "version", _) => {
                return CliResult::Out("GNU Awk 5.2.1, API 3.2 (forkbox native awk)\n".to_string());
            }
            // `-L`'s optional value is the rest of its word; `invalid` keeps only the
            // checks of invalid constructs, none of which are runtime ones here.
            ("L" | "lint", _) => {
                cli.lint = match inline {
                    Some("fatal") => Lint::Fatal,
                    Some("invalid") => Lint::Off,
                    _ => Lint::Warn,
                };
            }
            ("t" | "lint-old", _) => {}
            // Accepted and ignored: options that change nothing here.
            (
                "b"
                | "c"
                | "P"
                | "r"
                | "s"
                | "O"
                | "N"
                | "n"
                | "posix"
                | "traditional"
                | "re-interval"
                | "characters-as-bytes"
                | "optimize"
                | "no-optimize"
                | "use-lc-numeric"
                | "non-decimal-data"
                | "sandbox"
                | "S",
                _,
            ) => {
                match opt {
                    "n" | "non-decimal-data" => cli.non_decimal = true,
                    "S" | "sandbox" => cli.sandbox = true,
                    _ => {}
                }
                if !a.starts_with("--") && a.len() > 2 && a.is_char_boundary(2) {
                    // Clustered flags: treat the rest as more flags.
                    let mut more = vec![format!("-{}", &a[2..])];
                    more.extend_from_slice(&args[i + 1..]);
                    return parse_cli_into(&more, cli);
                }
            }
            _ => {
                // gawk prints its usage alone for an unknown option.
                let _ = opt;
                return CliResult::Err(USAGE.to_string(), 1);
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
    CliResult::Run(cli)
}

async fn run(ctx: &Context, args: Vec<String>, name: &'static str) -> CmdResult {
    let cli = match parse_cli(&args) {
        CliResult::Run(mut c) => {
            c.name = name;
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
                        match crate::fs::read_all(ctx.fs.as_ref(), &p, MAX_PROGRAM_BYTES).await {
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
    let segments = match source::expand(ctx, segments).await {
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
    let prog = match parse::parse_lint(&toks, cli.lint != Lint::Off) {
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
    for (line, w) in &prog.warnings {
        let (name, l) = locate(&table, *line);
        err(format!("awk: {name}:{l}: warning: {w}\n"));
    }
    let mut argv = vec![cli.name.to_string()];
    argv.extend(cli.operands.iter().cloned());
    let mut assigns = cli.assigns;
    if let Some((at, fs)) = &cli.fs {
        assigns.insert((*at).min(assigns.len()), ("FS".to_string(), fs.clone()));
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
    me.table = table.clone();
    me.lint = cli.lint;
    me.set_procinfo_argv(&cli.raw);
    match me.run() {
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
}

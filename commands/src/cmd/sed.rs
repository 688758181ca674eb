//! `sed`: the GNU stream editor, natively.
//!
//! - [`parse`]: the script → a flat program (addresses, commands, compiled regexes).
//! - [`exec`]: the program over lines: pattern/hold space, ranges, append queue, `w` files.
//! - this file: options, script sources, the per-file loop (`-s`, `-i`), tests.
//!
//! Supported: `-n -e -f -E/-r -i[SUF] -s -z -l N -u --posix --sandbox --debug`; addresses `N`, `$`,
//! `/re/I`, `\%re%`, `first~step`, `a,b`, `a,+N`, `a,~N`, `0,/re/`, `!`; commands
//! `{} = a b c d D e F g G h H i l n N p P q Q r R s t T v w W x y z : #`.
//! Regexes are GNU's BRE/ERE as glibc reads them ([`crate::gnu_regex`], strict flavour):
//! back-references, POSIX leftmost-longest matches and subexpressions, GNU's errors
//! (`-e expression #1, char 5: Unmatched ( or \(`), the locale's reading of bytes.
//! `e` and `s///e` run their command through the session's shell (the launcher's `sh -c`,
//! as GNU's `popen`), never a host process. `--debug` prints the program and each step
//! as GNU's does ([`debug`]). `--posix` turns GNU's
//! extensions off (commands, address forms, `s` flags, regex operators, `\U`…), and it or
//! `POSIXLY_CORRECT` makes `N` at the end of input quit without printing.
//!
//! Options are parsed by hand rather than with clap: GNU sed's `-i[SUFFIX]` takes an
//! optional value only when attached, and the order of `-e` and `-f` scripts matters.

mod debug;
mod exec;
mod parse;

use async_trait::async_trait;
use bytes::Bytes;

use self::exec::{DEFAULT_WRAP, Exec, Inputs, Settings, Sink, Source, Stop};
use self::parse::{Origin, Piece};
use super::util::Reader;
use crate::fs::{FsError, WriteMode};
use crate::gnu_regex::{self, c_locale};
use crate::{CmdResult, Command, Context, Status};

/// Largest file `-i` edits: the whole file and its new content are held in memory.
const MAX_IN_PLACE: usize = 64 * 1024 * 1024;

/// Largest `-f` script file.
const MAX_SCRIPT: usize = 1024 * 1024;

/// GNU sed 4.9's usage text, word for word: usage errors print it as GNU's do.
const USAGE: &str = include_str!("sed/usage.txt");

/// `--help` adds the bug-report line.
const HELP_TAIL: &str = "E-mail bug reports to: <bug-sed@gnu.org>.\n";

/// The options, once parsed.
#[derive(Default)]
struct Opts {
    quiet: bool,
    ere: bool,
    separate: bool,
    null_data: bool,
    sandbox: bool,
    /// `--posix`: GNU's extensions off.
    posix: bool,
    /// `--debug`: the program and each step of the run on standard output.
    debug: bool,
    /// `-u`: standard input is read a byte at a time, so what a quit leaves unread
    /// stays there for the next reader, a pipe's included.
    unbuffered: bool,
    /// `-i`, with its (possibly empty) backup suffix.
    in_place: Option<String>,
    /// `--follow-symlinks`: an operand that is a symbolic link is read (and edited in
    /// place) as the file it leads to, named by the path followed.
    follow: bool,
    wrap: Option<usize>,
    /// `-e` texts and `-f` file names, in order.
    scripts: Vec<ScriptArg>,
    operands: Vec<String>,
}

enum ScriptArg {
    Expr(String),
    File(String),
}

enum Parsed {
    Run(Opts),
    Exit(CmdResult),
}

async fn usage_error(ctx: &Context, msg: &str) -> Parsed {
    ctx.err(format!("sed: {msg}\n{USAGE}")).await;
    Parsed::Exit(Ok(1))
}

/// GNU sed 4.9's long options in the order of its table (which an ambiguous prefix's
/// message follows), each with what it sets: names that set the same thing (`--quiet`,
/// `--silent`) make no ambiguity between them, as in getopt.
const LONG: &[(&str, char)] = &[
    ("binary", 'b'),
    ("regexp-extended", 'r'),
    ("debug", 'D'),
    ("in-place", 'i'),
    ("expression", 'e'),
    ("file", 'f'),
    ("line-length", 'l'),
    ("null-data", 'z'),
    ("zero-terminated", 'z'),
    ("quiet", 'n'),
    ("posix", 'p'),
    ("silent", 'n'),
    ("sandbox", 'S'),
    ("separate", 's'),
    ("unbuffered", 'u'),
    ("version", 'v'),
    ("help", 'h'),
    ("follow-symlinks", 'F'),
];

async fn parse_opts(ctx: &Context, args: &[String]) -> Parsed {
    let mut o = Opts::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            o.operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let exact = LONG.iter().find(|(l, _)| *l == name);
            let prefixed: Vec<&(&str, char)> =
                LONG.iter().filter(|(l, _)| l.starts_with(name)).collect();
            let full = match (exact, prefixed.as_slice()) {
                (Some((l, _)), _) => *l,
                (None, []) => return usage_error(ctx, &format!("unrecognized option '{a}'")).await,
                (None, [first, rest @ ..]) => {
                    if rest.iter().all(|(_, v)| *v == first.1) {
                        first.0
                    } else {
                        let mut msg = format!("option '{a}' is ambiguous; possibilities:");
                        let listed = prefixed
                            .iter()
                            .filter(|(l, v)| *l == first.0 || *v != first.1);
                        for (l, _) in listed {
                            msg.push_str(&format!(" '--{l}'"));
                        }
                        return usage_error(ctx, &msg).await;
                    }
                }
            };
            let takes_value = matches!(full, "expression" | "file" | "line-length");
            let value = if takes_value && value.is_none() {
                match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => {
                        return usage_error(
                            ctx,
                            &format!("option '--{full}' requires an argument"),
                        )
                        .await;
                    }
                }
            } else if !takes_value && full != "in-place" && value.is_some() {
                return usage_error(ctx, &format!("option '--{full}' doesn't allow an argument"))
                    .await;
            } else {
                value
            };
            match full {
                "expression" => o.scripts.push(ScriptArg::Expr(value.unwrap_or_default())),
                "file" => o.scripts.push(ScriptArg::File(value.unwrap_or_default())),
                "in-place" => {
                    o.in_place = Some(value.unwrap_or_default());
                    o.separate = true;
                }
                "line-length" => o.wrap = Some(atoi(value.as_deref().unwrap_or_default())),
                "quiet" | "silent" => o.quiet = true,
                "regexp-extended" => o.ere = true,
                "separate" => o.separate = true,
                "null-data" | "zero-terminated" => o.null_data = true,
                "sandbox" => o.sandbox = true,
                "posix" => o.posix = true,
                "unbuffered" => o.unbuffered = true,
                "follow-symlinks" => o.follow = true,
                // Binary mode matters only on systems that tell text files apart.
                "binary" => {}
                "debug" => o.debug = true,
                "help" => {
                    return Parsed::Exit(ctx.out(format!("{USAGE}{HELP_TAIL}")).await.map(|_| 0));
                }
                _ => {
                    // GNU's first line, which scripts look at to know a GNU sed.
                    let v = "sed (GNU sed) 4.9\nforkbox native sed, GNU sed 4.9 compatible.\n";
                    return Parsed::Exit(ctx.out(v).await.map(|_| 0));
                }
            }
            continue;
        }
        if a.len() < 2 || !a.starts_with('-') {
            o.operands.push(a.clone());
            continue;
        }
        let chars: Vec<char> = a.chars().skip(1).collect();
        let mut j = 0;
        while j < chars.len() {
            let c = chars[j];
            j += 1;
            match c {
                'n' => o.quiet = true,
                'r' | 'E' => o.ere = true,
                's' => o.separate = true,
                'z' => o.null_data = true,
                'u' => o.unbuffered = true,
                'b' => {}
                'i' => {
                    o.in_place = Some(chars[j..].iter().collect());
                    o.separate = true;
                    break;
                }
                'e' | 'f' | 'l' => {
                    let value: String = if j < chars.len() {
                        chars[j..].iter().collect()
                    } else if let Some(v) = args.get(i) {
                        i += 1;
                        v.clone()
                    } else {
                        return usage_error(ctx, &format!("option requires an argument -- '{c}'"))
                            .await;
                    };
                    match c {
                        'e' => o.scripts.push(ScriptArg::Expr(value)),
                        'f' => o.scripts.push(ScriptArg::File(value)),
                        _ => o.wrap = Some(atoi(&value)),
                    }
                    break;
                }
                other => return usage_error(ctx, &format!("invalid option -- '{other}'")).await,
            }
        }
    }
    Parsed::Run(o)
}

/// `-l N` as GNU reads it (C's `atoi`): leading blanks, digits, anything after them
/// ignored, no digits 0.
fn atoi(v: &str) -> usize {
    let digits: String = v
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or(if digits.is_empty() { 0 } else { usize::MAX })
}

/// The backup name for `-i SUFFIX`: a suffix without `*` is appended to the file's name;
/// each `*` in one stands for the name as given, directories included (GNU sed 4.9:
/// `-i'bak/*'` on `d/f` names `bak/d/f`, a path from the working directory).
fn backup_name(name: &str, suffix: &str) -> String {
    if suffix.contains('*') {
        suffix.replace('*', name)
    } else {
        format!("{name}{suffix}")
    }
}

/// Where `--follow-symlinks` takes an operand: the links are followed one by one, a
/// relative target read from the link's directory, as GNU's `follow_symlink` names it.
async fn follow_links(ctx: &Context, name: &str) -> Result<String, FsError> {
    let mut cur = name.to_string();
    // As many links as the kernel follows before ELOOP.
    for _ in 0..40 {
        match ctx.fs.lstat(&ctx.path(&cur)).await {
            Ok(m) if m.is_symlink() => {}
            _ => return Ok(cur),
        }
        let target = ctx.fs.readlink(&ctx.path(&cur)).await?;
        cur = match cur.rfind('/') {
            Some(i) if !target.starts_with('/') => format!("{}{target}", &cur[..=i]),
            _ => target,
        };
    }
    Err(FsError::Loop)
}

pub struct Sed;

#[async_trait]
impl Command for Sed {
    fn name(&self) -> &'static str {
        "sed"
    }
    fn summary(&self) -> &'static str {
        "stream editor for filtering and transforming text"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut o = match parse_opts(ctx, &args).await {
            Parsed::Run(o) => o,
            Parsed::Exit(r) => return r,
        };
        let mut pieces = Vec::new();
        if o.scripts.is_empty() {
            if o.operands.is_empty() {
                ctx.err(USAGE).await;
                return Ok(1);
            }
            o.scripts.push(ScriptArg::Expr(o.operands.remove(0)));
        }
        let mut expr_no = 0;
        for s in &o.scripts {
            match s {
                ScriptArg::Expr(text) => {
                    expr_no += 1;
                    pieces.push(Piece {
                        text: text.clone(),
                        origin: Origin::Expr(expr_no),
                    });
                }
                ScriptArg::File(name) => {
                    let mut charge = ctx.budget.empty_charge();
                    let data = match Reader::open(ctx, name).await {
                        Ok(mut r) => r.read_to_end(MAX_SCRIPT, &mut charge).await?,
                        Err(e) => Err(e),
                    };
                    // A directory reads as an empty script, as GNU's `getc` finds it.
                    let data = match data {
                        Err(FsError::IsADirectory) => Ok(Vec::new()),
                        d => d,
                    };
                    match data {
                        Ok(d) => {
                            // Its last newline stays: after `a\` it ends an empty line
                            // of text, as in GNU sed.
                            let text = String::from_utf8_lossy(&d).into_owned();
                            pieces.push(Piece {
                                text,
                                origin: Origin::File(name.clone()),
                            });
                        }
                        Err(e) => {
                            ctx.warn("sed", format!("couldn't open file {name}: {e}"))
                                .await;
                            return Ok(4);
                        }
                    }
                }
            }
        }
        // A script whose first piece starts with `#n` runs as with -n (GNU 4.9 looks at
        // those two characters only).
        if pieces
            .first()
            .is_some_and(|first| first.text.starts_with("#n"))
        {
            o.quiet = true;
        }
        let dialect = parse::Syntax {
            ere: o.ere,
            c_locale: c_locale(&ctx.env),
            sandbox: o.sandbox,
            posix: o.posix,
            nul: o.null_data,
        };
        let prog = match parse::parse(&pieces, dialect) {
            Ok(p) => p,
            Err(e) => {
                // A byte of the script that is no character is written back raw, as GNU
                // names a command of several bytes by its first.
                let mut msg = b"sed: ".to_vec();
                for c in e.0.chars() {
                    match gnu_regex::char_byte(c) {
                        Some(b) => msg.push(b),
                        None => msg.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                    }
                }
                msg.push(b'\n');
                let _ = ctx.stderr.write_all(&msg).await;
                return Ok(e.1);
            }
        };
        if o.in_place.is_some() && o.operands.is_empty() {
            ctx.warn("sed", "no input files").await;
            return Ok(4);
        }
        let settings = Settings {
            quiet: o.quiet,
            delim: if o.null_data { 0 } else { b'\n' },
            wrap: o.wrap.unwrap_or(DEFAULT_WRAP),
            c_locale: c_locale(&ctx.env),
            posix_n: o.posix || ctx.env.contains_key("POSIXLY_CORRECT"),
            debug: o.debug,
        };
        let mut ex = Exec::new(ctx, &prog, settings);
        if !ex.open_wfiles().await {
            ex.close_wfiles().await;
            return Ok(4);
        }
        let result = run_all(ctx, &mut ex, &o).await;
        let close_status = ex.close_wfiles().await;
        let status = match result {
            Ok(s) => s,
            Err(Stop::Interrupt(i)) => return Err(i),
            Err(Stop::Fail(s)) => s,
        };
        Ok(match ex.quit {
            Some(code) if code != 0 => code,
            _ => status.max(close_status),
        })
    }
}

/// Runs the program over the operands: one stream, one per file (`-s`), or each file
/// rewritten in place (`-i`). Gives the status from the inputs.
async fn run_all(ctx: &Context, ex: &mut Exec<'_>, o: &Opts) -> Result<Status, Stop> {
    let mut operands = if o.operands.is_empty() {
        vec!["-".to_string()]
    } else {
        o.operands.clone()
    };
    if o.follow {
        for op in operands.iter_mut().filter(|op| *op != "-") {
            match follow_links(ctx, op).await {
                Ok(target) => *op = target,
                Err(e) => {
                    ctx.warn("sed", format!("couldn't follow symlink {op}: {e}"))
                        .await;
                    return Err(Stop::Fail(4));
                }
            }
        }
    }
    if let Some(suffix) = &o.in_place {
        ex.stdout = Some(Sink::stdout());
        ex.debug_program().await?;
        let mut status = 0;
        for op in &operands {
            let st = edit_in_place(ctx, ex, op, suffix).await;
            if let Some(s) = &mut ex.stdout {
                s.flush(ctx).await?;
            }
            status = status.max(st?);
            if ex.quit.is_some() {
                break;
            }
        }
        return Ok(status);
    }
    ex.debug_program().await?;
    let mut status = 0;
    let result = if o.separate {
        let mut r = Ok(());
        for op in &operands {
            ex.input = Inputs::new(vec![Source::Operand(op.clone())], o.unbuffered);
            ex.reset();
            let quit = ex.run().await;
            status = status.max(ex.input.status);
            match quit {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
        }
        r
    } else {
        ex.input = Inputs::new(
            operands.into_iter().map(Source::Operand).collect(),
            o.unbuffered,
        );
        let r = ex.run().await.map(|_| ());
        status = ex.input.status;
        r
    };
    // Whatever was produced before a failure still goes out.
    let flushed = ex.out.flush(ctx).await;
    result?;
    flushed?;
    Ok(status)
}

/// `-i` for one operand: read it whole (bounded), run the script with the file's new
/// content gathered in memory, keep a backup if asked, then rewrite the file.
async fn edit_in_place(
    ctx: &Context,
    ex: &mut Exec<'_>,
    op: &str,
    suffix: &str,
) -> Result<Status, Stop> {
    let path = ctx.path(op);
    match ctx.fs.stat(&path).await {
        Err(e) => {
            ctx.warn("sed", format!("can't read {op}: {e}")).await;
            return Ok(2);
        }
        // GNU gives up there, leaving the files after it as they were.
        Ok(m) if !m.is_file() => {
            ctx.warn("sed", format!("couldn't edit {op}: not a regular file"))
                .await;
            return Err(Stop::Fail(4));
        }
        Ok(_) => {}
    }
    // The file's content is held (and charged) until its new content is written.
    let mut charge = ctx.budget.empty_charge();
    let read = match Reader::open(ctx, op).await {
        Ok(mut r) => r.read_to_end(MAX_IN_PLACE, &mut charge).await?,
        Err(e) => Err(e),
    };
    let data = match read {
        Ok(d) => Bytes::from(d),
        Err(FsError::TooLarge) => {
            ctx.warn(
                "sed",
                format!("couldn't edit {op}: larger than {MAX_IN_PLACE} bytes"),
            )
            .await;
            return Ok(4);
        }
        Err(e) => {
            ctx.warn("sed", format!("can't read {op}: {e}")).await;
            return Ok(2);
        }
    };
    ex.input = Inputs::new(vec![Source::Data(data.clone(), op.to_string())], false);
    ex.out = Sink::memory(ctx, MAX_IN_PLACE);
    ex.reset();
    ex.run().await?;
    let content = ex.out.take();
    // `-i'*'` names the file itself: no backup (GNU's test).
    if !suffix.is_empty() && suffix != "*" {
        // GNU renames the file to its backup name and fails there, before the file is
        // replaced, and gives up.
        let backup = ctx.path(&backup_name(op, suffix));
        if let Err(e) = write_file(ctx, &backup, &data).await {
            ctx.warn("sed", format!("cannot rename {op}: {e}")).await;
            return Err(Stop::Fail(4));
        }
    }
    if let Err(e) = replace_file(ctx, &path, &content).await {
        ctx.warn("sed", format!("couldn't edit {op}: {e}")).await;
        return Ok(4);
    }
    Ok(0)
}

/// Replaces the file at `path` with `data` as GNU sed does: the new content goes to a
/// temporary file beside it, which is renamed over the original only once complete, so a
/// failure (a full disk, a quota) leaves the original as it was. The mode is kept.
async fn replace_file(ctx: &Context, path: &str, data: &[u8]) -> Result<(), FsError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mode = ctx.fs.stat(path).await.ok().map(|m| m.mode);
    let dir = &path[..path.rfind('/').unwrap_or(0)];
    let tmp = loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let candidate = format!("{dir}/.sed{n:06}");
        if ctx.fs.lstat(&candidate).await.is_err() {
            break candidate;
        }
    };
    let written = async {
        let mut h = ctx.fs.open_write(&tmp, WriteMode::CreateNew).await?;
        if let Err(e) = h.write(data).await {
            let _ = h.close().await;
            return Err(e);
        }
        h.close().await?;
        if let Some(mode) = mode {
            ctx.fs.chmod(&tmp, mode).await?;
        }
        ctx.fs.rename(&tmp, path).await
    }
    .await;
    if written.is_err() {
        let _ = ctx.fs.unlink(&tmp).await;
    }
    written
}

async fn write_file(ctx: &Context, path: &str, data: &[u8]) -> Result<(), FsError> {
    let mut h = ctx.fs.open_write(path, WriteMode::Truncate).await?;
    if let Err(e) = h.write(data).await {
        let _ = h.close().await;
        return Err(e);
    }
    h.close().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs, TINY_BUDGET};
    use std::sync::Arc;

    const FILE_A: &str = "1\n2\n3\n";
    const FILE_B: &str = "x\ny\n";
    const LINES: &str = "one\ntwo\nthree\nfour\nfive\n";

    fn inv(stdin: &str) -> (Invocation, Arc<MemFs>) {
        let fs = MemFs::with_files(&[
            ("/w/a", FILE_A),
            ("/w/b", FILE_B),
            ("/w/s.sed", "s/1/ONE/\np\n"),
        ]);
        fs.put_dir("/w/d");
        (
            Invocation {
                stdin: stdin.as_bytes().to_vec(),
                fs: fs.clone(),
                cwd: "/w".into(),
                ..Invocation::default()
            },
            fs,
        )
    }

    async fn sed(stdin: &str, args: &[&str]) -> (i32, String, String) {
        inv(stdin).0.run(&Sed, args).await
    }

    /// Runs sed and expects success with no message; gives stdout.
    async fn out(stdin: &str, args: &[&str]) -> String {
        let (st, out, err) = sed(stdin, args).await;
        assert_eq!((st, err.as_str()), (0, ""), "sed {args:?}");
        out
    }

    /// Runs sed and expects a failure; gives the status and stderr.
    async fn fails(stdin: &str, args: &[&str]) -> (i32, String) {
        let (st, _, err) = sed(stdin, args).await;
        (st, err)
    }

    #[tokio::test]
    async fn substitution() {
        assert_eq!(out("hello\n", &["s/l/L/"]).await, "heLlo\n");
        assert_eq!(out("hello\n", &["s/l/L/g"]).await, "heLLo\n");
        assert_eq!(out("hello\n", &["s/l/L/2"]).await, "helLo\n");
        assert_eq!(out("aaaa\n", &["s/a/b/2g"]).await, "abbb\n");
        assert_eq!(out("baaac\n", &["s/a*/x/g"]).await, "xbxcx\n");
        assert_eq!(out("abc\n", &["s/x*/-/g"]).await, "-a-b-c-\n");
        assert_eq!(out("a/b\n", &["s|/|_|"]).await, "a_b\n");
        assert_eq!(out("abc\n", &["s/b/[&]/;s/c/\\&/"]).await, "a[b]&\n");
        assert_eq!(out("ab\n", &[r"s/\(a\)\(b\)/\2\1\0/"]).await, "baab\n");
        assert_eq!(out("abc\n", &["-E", r"s/(a)|b/[\1]/g"]).await, "[a][]c\n");
        assert_eq!(out("Hello\n", &["s/hello/bye/I"]).await, "bye\n");
        assert_eq!(out("abc\n", &[r"s/b/\n/"]).await, "a\nc\n");
        assert_eq!(out("abc\n", &[r"s/b/\t/"]).await, "a\tc\n");
        assert_eq!(out("1\n", &[r"s/1/\x41\o102\d067/"]).await, "ABC\n");
        assert_eq!(out("a.b axb\n", &[r"s/a\.b/X/g"]).await, "X axb\n");
        assert_eq!(out("aaa\n", &[r"s/a\{2\}/X/"]).await, "Xa\n");
        assert_eq!(out("aaa\n", &["-E", "s/a{2}/X/"]).await, "Xa\n");
        assert_eq!(out("a+b\n", &["s/a+b/X/"]).await, "X\n");
        assert_eq!(out("aab\n", &[r"s/a\+b/X/"]).await, "X\n");
    }

    #[tokio::test]
    async fn case_conversion() {
        assert_eq!(
            out("hello world\n", &["-E", r"s/(\w+) (\w+)/\U\2\E \u\1/"]).await,
            "WORLD Hello\n"
        );
        assert_eq!(out("foo bar\n", &[r"s/\w\+/\u&/g"]).await, "Foo Bar\n");
        assert_eq!(
            out("aaa bbb\n", &[r"s/\(a*\) \(b*\)/\U\1\E-\u\2x\lBB/"]).await,
            "AAA-BbbxbB\n"
        );
    }

    #[tokio::test]
    async fn addresses() {
        assert_eq!(out(LINES, &["-n", "2p"]).await, "two\n");
        assert_eq!(out(LINES, &["-n", "$p"]).await, "five\n");
        assert_eq!(out(LINES, &["-n", "2,4p"]).await, "two\nthree\nfour\n");
        assert_eq!(
            out(LINES, &["-n", "/two/,/four/p"]).await,
            "two\nthree\nfour\n"
        );
        assert_eq!(out(LINES, &["-n", r"\%thr%p"]).await, "three\n");
        assert_eq!(out(LINES, &["-n", "0~2p"]).await, "two\nfour\n");
        assert_eq!(out(LINES, &["-n", "1~2p"]).await, "one\nthree\nfive\n");
        assert_eq!(out(LINES, &["-n", "2,+1p"]).await, "two\nthree\n");
        assert_eq!(out(LINES, &["-n", "2,~4p"]).await, "two\nthree\nfour\n");
        assert_eq!(out(LINES, &["-n", "4,2p"]).await, "four\n");
        assert_eq!(out(LINES, &["-n", "0,/o/p"]).await, "one\n");
        assert_eq!(out(LINES, &["-n", "1,/o/p"]).await, "one\ntwo\n");
        assert_eq!(out(LINES, &["2,4!d"]).await, "two\nthree\nfour\n");
        assert_eq!(out(LINES, &["-n", "/T/Ip"]).await, "two\nthree\n");
        assert_eq!(out(LINES, &["-n", "$="]).await, "5\n");
    }

    #[tokio::test]
    async fn commands() {
        assert_eq!(out("1\n2\n3\n", &["1!G;h;$!d"]).await, "3\n2\n1\n");
        assert_eq!(out("1\n2\n3\n", &["$!N;P;D"]).await, "1\n2\n3\n");
        assert_eq!(out("1\n2\n3\n", &["N;N;D"]).await, "2\n3\n");
        assert_eq!(out("1\n2\n3\n", &[":a;N;$!ba;s/\\n/,/g"]).await, "1,2,3\n");
        assert_eq!(out("1\n2\n3\n", &["-n", "2{n;p}"]).await, "3\n");
        assert_eq!(out("a\n", &["n;d"]).await, "a\n");
        assert_eq!(out("a\n", &["N;s/a/X/"]).await, "a\n");
        assert_eq!(out("1\n2\n3\n", &["2q"]).await, "1\n2\n");
        assert_eq!(out("1\n2\n3\n", &["2Q"]).await, "1\n");
        assert_eq!(
            sed("1\n2\n3\n", &["2q5"]).await,
            (5, "1\n2\n".into(), String::new())
        );
        assert_eq!(sed("1\n", &["q300"]).await.0, 300 % 256);
        assert_eq!(out("1\n2\n", &["="]).await, "1\n1\n2\n2\n");
        assert_eq!(out("abc\n", &["y/abc/xyz/"]).await, "xyz\n");
        assert_eq!(out("a\n", &["x;G"]).await, "\na\n");
        assert_eq!(out("a\nb\n", &["-n", "H;${x;p}"]).await, "\na\nb\n");
        assert_eq!(
            out("a\tb\\c\x01\n", &["-n", "l"]).await,
            "a\\tb\\\\c\\001$\n"
        );
        assert_eq!(out("abcdef\n", &["-n", "l 4"]).await, "abc\\\ndef$\n");
        assert_eq!(out("x\n", &["z;s/^$/E/"]).await, "E\n");
        assert_eq!(out("x\n", &["F"]).await, "-\nx\n");
        assert_eq!(out("ab\n", &["s/a/A/;ta;s/b/B/;:a;s/b/C/"]).await, "AC\n");
        assert_eq!(out("ab\n", &["s/x/A/;Ta;s/b/B/;:a;s/b/C/"]).await, "aC\n");
        assert_eq!(out("ab\n", &["b end;s/a/X/;:end"]).await, "ab\n");
        assert_eq!(out("1\n2\n", &["-n", "/1/{p;p}"]).await, "1\n1\n");
        assert_eq!(
            out("1\n2\n", &["# comment\np;# more"]).await,
            "1\n1\n2\n2\n"
        );
        assert_eq!(out("1\n2\n", &["#n\np"]).await, "1\n2\n");
    }

    #[tokio::test]
    async fn text_commands() {
        assert_eq!(out("1\n2\n", &["1a hi"]).await, "1\nhi\n2\n");
        assert_eq!(
            out("1\n2\n", &["1i\\\n  hi\\\nthere"]).await,
            "  hi\nthere\n1\n2\n"
        );
        assert_eq!(out("1\n2\n", &["1a\\  x\\ty"]).await, "1\n  x\ty\n2\n");
        assert_eq!(
            out("1\n2\n", &["-e", "1a\\", "-e", "hello"]).await,
            "1\nhello\n2\n"
        );
        assert_eq!(out("1\n2\n", &["$a foo;p"]).await, "1\n2\nfoo;p\n");
        assert_eq!(out("1\n2\n3\n4\n", &["2,3c\\\nX"]).await, "1\nX\n4\n");
        assert_eq!(out("1\n2\n3\n4\n", &["2,3!c X"]).await, "X\n2\n3\nX\n");
        assert_eq!(out("1\n", &["1{a foo\n}"]).await, "1\nfoo\n");
        assert_eq!(out("1\n2\n", &["2q;a foo"]).await, "1\nfoo\n2\n");
    }

    #[tokio::test]
    async fn missing_final_newline_is_kept() {
        assert_eq!(out("a", &["p"]).await, "a\na");
        assert_eq!(out("a\nb", &["s/b/B/"]).await, "a\nB");
        assert_eq!(out("1", &["a x"]).await, "1\nx\n");
        assert_eq!(out("a\0b\0", &["-z", "s/^/>/"]).await, ">a\0>b\0");
    }

    #[tokio::test]
    async fn files_and_separate_streams() {
        assert_eq!(out("", &["-n", "$=", "a", "b"]).await, "5\n");
        assert_eq!(out("", &["-s", "-n", "$=", "a", "b"]).await, "3\n2\n");
        assert_eq!(out("in\n", &["p", "-", "b"]).await, "in\nin\nx\nx\ny\ny\n");
        assert_eq!(out("", &["-n", "-f", "s.sed", "a"]).await, "ONE\n2\n3\n");
        assert_eq!(out("", &["1r b", "a"]).await, "1\nx\ny\n2\n3\n");
        assert_eq!(out("", &["R b", "a"]).await, "1\nx\n2\ny\n3\n");
        assert_eq!(out("", &["1r nofile", "a"]).await, "1\n2\n3\n");
        let (st, o, e) = sed("", &["p", "nofile", "b"]).await;
        assert_eq!((st, o.as_str()), (2, "x\nx\ny\ny\n"));
        assert_eq!(e, "sed: can't read nofile: No such file or directory\n");
        let (st, e) = fails("", &["p", "d", "a"]).await;
        assert_eq!(
            (st, e.as_str()),
            (4, "sed: read error on d: Is a directory\n")
        );
    }

    #[tokio::test]
    async fn write_files() {
        let (i, fs) = inv("1\n2\n");
        assert_eq!(i.run(&Sed, &["-n", "s/1/X/w out\n2w out"]).await.0, 0);
        assert_eq!(fs.text("/w/out").unwrap(), "X\n2\n");
        assert_eq!(i.run(&Sed, &["w /dev/stdout"]).await.1, "1\n1\n2\n2\n");
        fs.fail_close_on("/w/full");
        let (st, _, err) = i.run(&Sed, &["w full"]).await;
        assert_eq!(
            (st, err.as_str()),
            (4, "sed: couldn't close full: No space left on device\n")
        );
        let (st, err) = fails("", &["--sandbox", "w x"]).await;
        assert_eq!(st, 1);
        assert!(err.contains("disabled in sandbox mode"), "{err}");
    }

    #[tokio::test]
    async fn in_place() {
        let (i, fs) = inv("");
        assert_eq!(
            i.run(&Sed, &["-i", "s/2/TWO/", "a", "b"]).await,
            (0, String::new(), String::new())
        );
        assert_eq!(fs.text("/w/a").unwrap(), "1\nTWO\n3\n");
        assert_eq!(fs.text("/w/b").unwrap(), FILE_B);
        assert_eq!(i.run(&Sed, &["-i.bak", "-n", "$p", "a"]).await.0, 0);
        assert_eq!(fs.text("/w/a").unwrap(), "3\n");
        assert_eq!(fs.text("/w/a.bak").unwrap(), "1\nTWO\n3\n");
        assert_eq!(i.run(&Sed, &["--in-place=old_*", "1d", "b"]).await.0, 0);
        assert_eq!(fs.text("/w/b").unwrap(), "y\n");
        assert_eq!(fs.text("/w/old_b").unwrap(), FILE_B);
        // `w /dev/stdout` still reaches stdout; line numbers restart per file.
        fs.put("/w/c", b"p\nq\n");
        let (st, o, _) = i.run(&Sed, &["-i", "1w /dev/stdout", "b", "c"]).await;
        assert_eq!((st, o.as_str()), (0, "y\np\n"));
        let (st, _, err) = i.run(&Sed, &["-i", "p", "nofile", "d"]).await;
        assert_eq!(st, 4);
        assert_eq!(
            err,
            "sed: can't read nofile: No such file or directory\nsed: couldn't edit d: not a regular file\n"
        );
        // A failure to store the new content leaves the file as it was, mode included,
        // and no temporary file behind.
        fs.put("/w/m", b"keep\n");
        crate::fs::FileSystem::chmod(fs.as_ref(), "/w/m", 0o750)
            .await
            .unwrap();
        fs.fail_close_on("*");
        let (st, _, err) = i.run(&Sed, &["-i", "p", "m"]).await;
        assert_eq!(
            (st, err.as_str()),
            (4, "sed: couldn't edit m: No space left on device\n")
        );
        assert_eq!(fs.text("/w/m").unwrap(), "keep\n");
        assert_eq!(i.run(&Sed, &["-i", "s/keep/kept/", "m"]).await.0, 0);
        assert_eq!(fs.text("/w/m").unwrap(), "kept\n");
        let m = crate::fs::FileSystem::stat(fs.as_ref(), "/w/m")
            .await
            .unwrap();
        assert_eq!(m.mode, 0o750);
        let names: Vec<String> = crate::fs::FileSystem::read_dir(fs.as_ref(), "/w")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert!(!names.iter().any(|n| n.starts_with(".sed")), "{names:?}");
        assert_eq!(
            fails("", &["-i", "p"]).await,
            (4, "sed: no input files\n".into())
        );
    }

    #[tokio::test]
    async fn script_errors() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["s/a"],
                "-e expression #1, char 3: unterminated `s' command",
            ),
            (
                &["-e", "p", "-e", "s/a"],
                "-e expression #2, char 3: unterminated `s' command",
            ),
            (&["k"], "-e expression #1, char 1: unknown command: `k'"),
            (&["2{p"], "-e expression #1, char 0: unmatched `{'"),
            (&["}"], "-e expression #1, char 1: unexpected `}'"),
            (
                &["p x"],
                "-e expression #1, char 3: extra characters after command",
            ),
            (
                &["y/ab/c/"],
                "-e expression #1, char 7: strings for `y' command are different lengths",
            ),
            (
                &["s/x/y/gg"],
                "-e expression #1, char 8: multiple `g' options to `s' command",
            ),
            (
                &["s/x/y/0"],
                "-e expression #1, char 7: number option to `s' command may not be zero",
            ),
            (
                &["s/x/y/q"],
                "-e expression #1, char 7: unknown option to `s'",
            ),
            (
                &[r"s/\(x\)/\2/"],
                "-e expression #1, char 11: invalid reference \\2 on `s' command's RHS",
            ),
            (
                &["/x"],
                "-e expression #1, char 2: unterminated address regex",
            ),
            (
                &["0,2p"],
                "-e expression #1, char 4: invalid usage of line address 0",
            ),
            (
                &["0p"],
                "-e expression #1, char 2: invalid usage of line address 0",
            ),
            (
                &["+1p"],
                "-e expression #1, char 2: invalid usage of +N or ~N as first address",
            ),
            (
                &["1,2,3p"],
                "-e expression #1, char 4: unknown command: `,'",
            ),
            (&["1!!p"], "-e expression #1, char 3: multiple `!'s"),
            (&[":"], "-e expression #1, char 1: \":\" lacks a label"),
            (
                &["r"],
                "-e expression #1, char 1: missing filename in r/R/w/W commands",
            ),
            (
                &["1a"],
                "-e expression #1, char 2: expected \\ after `a', `c' or `i'",
            ),
            (
                &["y/a/"],
                "-e expression #1, char 4: unterminated `y' command",
            ),
            (&["{p}}"], "-e expression #1, char 4: unexpected `}'"),
            (
                &["s//x/"],
                "-e expression #1, char 0: no previous regular expression",
            ),
            (
                &["2,3q"],
                "-e expression #1, char 4: command only uses one address",
            ),
        ];
        for (args, msg) in cases {
            let (st, err) = fails("a\n", args).await;
            assert_eq!((st, err), (1, format!("sed: {msg}\n")), "sed {args:?}");
        }
        // A missing label is found after parsing, where GNU sed's errors exit 4.
        let (st, err) = fails("a\n", &["bfoo"]).await;
        assert_eq!(
            (st, err.as_str()),
            (4, "sed: can't find label for jump to `foo'\n")
        );
        let (st, err) = fails("", &["-f", "nofile"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                4,
                "sed: couldn't open file nofile: No such file or directory\n"
            )
        );
        let (_, fs) = inv("");
        fs.put("/w/bad.sed", b"p\n\nk\n");
        let i = Invocation {
            fs,
            cwd: "/w".into(),
            ..Invocation::default()
        };
        assert_eq!(
            i.run(&Sed, &["-f", "bad.sed"]).await.2,
            "sed: file bad.sed line 3: unknown command: `k'\n"
        );
        let (st, err) = fails("", &[r"s/\(a\)\2/x/"]).await;
        assert_eq!(st, 1);
        assert_eq!(
            err,
            "sed: -e expression #1, char 12: Invalid back reference\n"
        );
        let (st, err) = fails("", &["--sandbox", "e ls"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "sed: -e expression #1, char 1: e/r/w commands disabled in sandbox mode\n"
            )
        );
        let (st, err) = fails("", &["--posix", "F"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "sed: -e expression #1, char 1: unknown command: `F'\n")
        );
        let (st, err) = fails("", &["v 9.1"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "sed: -e expression #1, char 5: expected newer version of sed\n"
            )
        );
    }

    /// `e` runs its command through the launcher as `sh -c`: here (the test launcher
    /// has no shell) its failure is what the command's stderr says, and sed goes on.
    #[tokio::test]
    async fn e_goes_through_the_launcher() {
        let (st, o, e) = sed("a\n", &["1e echo hi"]).await;
        assert_eq!((st, o.as_str()), (0, "a\n"));
        assert!(e.contains("sh: command not found"), "{e}");
    }

    #[tokio::test]
    async fn usage() {
        let (st, o, e) = sed("", &["--help"]).await;
        assert_eq!((st, e.as_str()), (0, ""));
        assert!(o.starts_with("Usage: sed [OPTION]..."));
        let (st, e) = fails("", &[]).await;
        assert_eq!(st, 1);
        assert!(e.starts_with("Usage: sed"));
        let (st, e) = fails("", &["-k", "p"]).await;
        assert_eq!(st, 1);
        assert!(e.starts_with("sed: invalid option -- 'k'\nUsage:"), "{e}");
        let (st, e) = fails("", &["--foo", "p"]).await;
        assert_eq!(st, 1);
        assert!(e.starts_with("sed: unrecognized option '--foo'\n"), "{e}");
        assert_eq!(out("a\n", &["--quiet", "--expression=p"]).await, "a\n");
        assert_eq!(out("a\n", &["p", "-n"]).await, "a\n");
        assert_eq!(out("a\n", &["-ne", "p"]).await, "a\n");
        assert_eq!(out("a\n", &["--expr", "p", "--sil"]).await, "a\n");
    }

    #[tokio::test]
    async fn invalid_utf8_and_binary_do_not_panic() {
        let (i, _) = inv("");
        let i = Invocation {
            stdin: b"a\xffb\n\xc3\n".to_vec(),
            ..i
        };
        let (st, o, _) = i.run_bytes(&Sed, &["s/a/X/;y/b/B/;s/$/!/;l"]).await;
        assert_eq!(st, 0);
        assert_eq!(o, b"X\\377B!$\nX\xffB!\n\\303!$\n\xc3!\n");
        let (st, o, _) = i.run_bytes(&Sed, &[r"s/\w/\U&/g"]).await;
        assert_eq!((st, o.as_slice()), (0, &b"A\xffB\n\xc3\n"[..]));
    }

    #[tokio::test]
    async fn infinite_loop_is_cancellable() {
        let (out_w, out_r) = crate::io::pipe();
        let (err_w, _err_r) = crate::io::pipe();
        let ctx = Context {
            stdin: crate::io::Input::from_bytes(&b"x\n"[..]),
            stdout: out_w,
            stderr: err_w,
            env: Default::default(),
            env_last: Vec::new(),
            cwd: "/".into(),
            fs: MemFs::new(),
            cancel: tokio_util::sync::CancellationToken::new(),
            tty: None,
            terminal: None,
            launcher: crate::testing::TestLauncher::new(),
            budget: crate::Budget::default(),
        };
        let cancel = ctx.cancel.clone();
        let task = tokio::spawn(async move { Sed.run(&ctx, vec![":a;ba".into()]).await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!task.is_finished());
        cancel.cancel();
        let r = task.await.unwrap();
        assert!(matches!(r, Err(crate::Interrupt::Cancelled)), "{r:?}");
        drop(out_r);
    }

    /// Hostile or broken scripts end with a status and maybe a message, never a panic.
    #[tokio::test]
    async fn odd_scripts_do_not_panic() {
        let scripts: &[&[&str]] = &[
            &["s/[/x/"],
            &[r"s/\(/x/"],
            &["-E", "s/(/x/"],
            &["y/é/\u{fffd}/"],
            &["s/a/\\"],
            &["\\"],
            &["/\\"],
            &["1,"],
            &["1~"],
            &["$!"],
            &["{"],
            &["}}"],
            &["a\\"],
            &["s/x/y/w"],
            &["l 99999999999999999999999"],
            &["q 99999999999999"],
            &[r"s/a/\c/"],
            &[r"s/./\d999/g"],
            &["0~0p"],
            &["b;"],
            &["t x;:x"],
            &["s/$//g"],
            &["s/^*/x/"],
            &[r"s/a\{99999\}//"],
            &[r"s/x*/\U\u/g"],
            &[r"\nxnp"],
            &["1,2,p"],
            &["s/\u{e9}/\u{e8}/"],
            &["-z", "N;N;D"],
            &["-l", "1", "l"],
            &["-l"],
            &["-e"],
            &["-f"],
            &["--expression"],
            &["-i"],
            &["s/a/b/gpw /dev/stderr"],
            &["=;=;l0"],
            &[r"s/\n/x/;s/[\n]/y/"],
        ];
        for args in scripts {
            let (i, _) = inv("");
            let i = Invocation {
                stdin: b"a\xff\n\xe9x\nxyz".to_vec(),
                ..i
            };
            let (st, _, _) = i.run_bytes(&Sed, args).await;
            let quits = args[0].starts_with('q');
            assert!((0..=4).contains(&st) || quits, "sed {args:?} gave {st}");
        }
    }

    #[tokio::test]
    async fn space_is_bounded() {
        let (st, err) = fails("x\n", &[":a;G;H;ba"]).await;
        assert_eq!(st, 4);
        assert!(err.contains("larger than"), "{err}");
    }

    #[test]
    fn backup_names() {
        assert_eq!(backup_name("a", ".bak"), "a.bak");
        assert_eq!(backup_name("a", "old_*"), "old_a");
        assert_eq!(backup_name("d/a", "old_*"), "old_d/a");
        assert_eq!(backup_name("d/a", "*.x"), "d/a.x");
        assert_eq!(backup_name("a", "/b/*.*"), "/b/a.a");
    }

    /// The same scripts through GNU sed and ours: stdout, stderr and status must agree.
    #[tokio::test]
    async fn matches_gnu_sed() {
        let gnu = std::path::Path::new("/bin/sed");
        // The comparison is the point of the test: a missing GNU sed is a failure
        // (.ci/run installs it).
        assert!(gnu.exists(), "/bin/sed (GNU sed) is needed for this test");
        let dir = std::env::temp_dir().join(format!("forkbox-sed-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("d")).unwrap();
        std::fs::write(dir.join("a"), FILE_A).unwrap();
        std::fs::write(dir.join("b"), FILE_B).unwrap();
        std::fs::write(dir.join("s.sed"), "s/1/ONE/\np\n").unwrap();
        let cases: &[(&str, &[&str])] = &[
            (LINES, &["-n", "/t/{s/t/T/gp}"]),
            (LINES, &["-n", "2,/f/p"]),
            (LINES, &["-n", "/o/,+1p"]),
            (LINES, &["-n", "3,~2p"]),
            (LINES, &["$!N;s/\\n/ /"]),
            (LINES, &["-n", "$!{h;d};x;G;p"]),
            (LINES, &["1~3d"]),
            (LINES, &["/two/,/four/{/three/d}"]),
            (LINES, &["-s", "-n", "$p", "-", "a", "b"]),
            (LINES, &["=", "-", "a"]),
            (LINES, &["-E", "s/(o+)|(e)/<\\1\\2>/g"]),
            (LINES, &["s/[[:alpha:]]\\{3\\}$/!/"]),
            (LINES, &["y/otf/OTF/;3q"]),
            (LINES, &["-n", "l 3"]),
            (LINES, &["N;N;s/\\n/+/2"]),
            (LINES, &["2i\\\ninserted\n4c\\\nchanged\n$a end"]),
            (LINES, &["/^t/!s/^/> /"]),
            (LINES, &["s/e/E/3;s/o/0/2g"]),
            (LINES, &["0,/e/s//E/"]),
            (LINES, &["$!d", "a", "b"]),
            (LINES, &["p", "a", "nofile", "b"]),
            (LINES, &["-n", "/one/{n;n;p}"]),
            (LINES, &["2{h;d};4{G}"]),
            (LINES, &["-n", "/two/{:a;N;/four/!ba;p}"]),
            (LINES, &["s/./(&)/3g"]),
            (LINES, &["s/^\\(.\\)\\(.*\\)$/\\2\\1/"]),
            (LINES, &["-n", "-e", "2{p", "-e", "}"]),
            ("a b  c\n", &["s/ \\+/_/g"]),
            ("a,b,c\n", &["-E", "s/([^,]*),([^,]*)/\\2,\\1/"]),
            ("hello\n", &["s/\\(l\\)*/X/g"]),
            ("path/to/file\n", &["s#/#\\\\#g"]),
            ("x\n", &["s/x/a\\\nb/"]),
            ("tab\there\n", &["-n", "/\\t/p"]),
            ("CamelCase\n", &["s/[A-Z]/_\\l&/g"]),
            ("ab\n", &["s/\\(a\\)\\|b/[\\1]/g"]),
            ("no newline", &["s/$/!/"]),
            ("no newline", &["$a tail"]),
            ("", &["p"]),
            ("x\n", &["s/x/\\cA/"]),
            ("1\n2\n3\n4\n5\n6\n", &["n;n;s/$/!/"]),
            ("1\n2\n3\n4\n5\n6\n", &["-n", "2~2{N;p}"]),
            ("1\n2\n", &["$!{$!p}"]),
            ("a\n", &["s/a/b/;T;s/b/c/"]),
            ("a\n", &["s/x/b/;T;s/a/c/"]),
            ("a\n", &["s/a/b/w /dev/stdout"]),
            ("", &["-n", "-f", "s.sed", "a"]),
            ("", &["-f", "nofile"]),
            ("", &["1d;=", "a"]),
            ("", &["F", "a"]),
            ("", &["p", "d"]),
            ("x\n", &["k"]),
            ("x\n", &["s/x/y/;}"]),
            ("x\n", &["/x/I,/y/Ms/x/y/"]),
            ("a\nb\n", &["N;s/^b/B/Mg;s/a$/A/M"]),
            ("a\nb\n", &["N;l;s/a.b/X/"]),
            ("1\n2\n3\n", &["2c\\", "-"]),
            ("1\n2\n3\n", &["-n", "2{p;q3}"]),
            (
                "1\n2\n3\n",
                &["-e", "1i\\", "-e", "  top", "-e", "3a\\  bottom"],
            ),
            ("1\n2\n3\n", &["1~0p;2,1p", "-n"]),
            ("1\n2\n3\n", &["2!{s/^/x/}"]),
            ("1\n2\n3\n", &["-n", "/2/{=;l;p}"]),
            ("1\n2\n3\n", &["-z", "s/\\n/,/g"]),
            ("1\n2\n3\n", &["$!{N};P;D"]),
            ("1\n2\n3\n", &["1{h;d};G;s/\\n/-/"]),
            ("abc abc\n", &["s/b/B/2;s/c/C/g;s/a/<&&>/"]),
            ("héllo\n", &["s/é/e/;y/lo/LO/"]),
            ("aXbXc\n", &["s/X/\\n/g;P;D"]),
            ("x\n", &["s/x/y/pw /dev/stdout"]),
            ("x\n", &["-n", "/x/{s//y/;p}"]),
            ("x\n", &["--posix", "-u", "p"]),
            ("x\n", &["1!G;$p;h"]),
            ("x\n", &["y/x/\\n/;l"]),
            ("x\n", &["s/x/[\\&]/"]),
            ("foo123\n", &["-E", "s/[0-9]+$//;s/^(f)(o+)/\\2\\1/"]),
        ];
        let mut failures = Vec::new();
        for (stdin, args) in cases {
            let mut child = std::process::Command::new(gnu)
                .args(*args)
                .current_dir(&dir)
                .env("LC_ALL", "C")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            {
                use std::io::Write;
                let mut sin = child.stdin.take().unwrap();
                // GNU sed may exit before reading its input (a bad script).
                let _ = sin.write_all(stdin.as_bytes());
            }
            let real = child.wait_with_output().unwrap();
            let want = (
                real.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&real.stdout).into_owned(),
                String::from_utf8_lossy(&real.stderr).replace("/bin/sed: ", "sed: "),
            );
            let got = sed(stdin, args).await;
            if got != want {
                failures.push(format!(
                    "sed {args:?} <<< {stdin:?}\n  gnu:  {want:?}\n  ours: {got:?}"
                ));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[tokio::test]
    async fn what_sed_holds_is_charged() {
        let long = format!("{}\n", "x".repeat(4 * TINY_BUDGET));
        inv(&long).0.out_of_memory(&Sed, &["p"], TINY_BUDGET).await;
        // The hold space growing with every line.
        let lines: String = (0..20)
            .map(|i| format!("{i}{}\n", "-".repeat(100)))
            .collect();
        inv(&lines)
            .0
            .out_of_memory(&Sed, &["-n", "H;${x;p}"], TINY_BUDGET)
            .await;
        // An append queue that never ends (GNU sed grows until the machine gives out).
        inv("a\n")
            .0
            .out_of_memory(&Sed, &["-e", ":a", "-e", "a x", "-e", "ba"], TINY_BUDGET)
            .await;
        // -i holds the file and its new content; the file is left as it was.
        let (i, fs) = inv("");
        fs.put("/w/big", long.as_bytes());
        i.out_of_memory(&Sed, &["-i", "s/x/y/", "big"], TINY_BUDGET)
            .await;
        assert_eq!(fs.text("/w/big").unwrap(), long);
        // -f holds the script while it is read.
        let (i, fs) = inv("");
        fs.put(
            "/w/long.sed",
            format!("#{}\np\n", "c".repeat(4 * TINY_BUDGET)).as_bytes(),
        );
        i.out_of_memory(&Sed, &["-f", "long.sed"], TINY_BUDGET)
            .await;
        assert_eq!(out("a\nb\nc\n", &["-n", "H;${x;p}"]).await, "\na\nb\nc\n");
    }
}

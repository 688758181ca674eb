//! `xargs`: build command lines from items read on stdin and run them through the
//! shell's launcher, one after another.
//!
//! Input is read and split as it streams in; a command line runs as soon as it is full,
//! so `yes | xargs -n 1 echo | head` works without reading all input. Each command runs
//! with an empty stdin, as GNU xargs gives it `/dev/null`.

use async_trait::async_trait;
use clap::Parser;

use super::printf::shell_quote;
use super::util::{Reader, quote};
use crate::io::Input;
use crate::{CmdResult, Command, Context, Interrupt, Status, parse_args};

/// Largest command line xargs builds, counted as the bytes of every argument plus a
/// terminator each (GNU's default `-s` on Linux). It bounds what one item and one
/// invocation can hold, so input without separators cannot grow memory without bound.
const MAX_ARG_BYTES: usize = 128 * 1024;

/// GNU xargs's status when some invocation exited with 1–125.
const STATUS_SOME_FAILED: Status = 123;
/// GNU xargs's status when an invocation exited with 255 (xargs then stops).
const STATUS_CMD_255: Status = 124;
/// GNU xargs's status when an invocation was killed by a signal.
const STATUS_CMD_KILLED: Status = 125;

/// Build and execute command lines from standard input.
///
/// Items are separated by blanks and newlines; single and double quotes and backslash
/// protect them (no newline inside quotes). With -0 or -d, items are separated by that
/// character only and nothing is special. COMMAND (default: echo) runs with the initial
/// ARGs plus as many items as fit, or as -n/-L allow. Exit status: 123 if any
/// invocation exited with 1-125, 124 if one exited with 255, 125 if one was killed,
/// 126/127 if a command could not be run or was not found, 1 for bad input or usage.
#[derive(Parser, Debug)]
#[command(
    name = "xargs",
    override_usage = "xargs [OPTION]... COMMAND [INITIAL-ARGS]..."
)]
struct Args {
    /// Items are separated by a null, not whitespace; quotes and backslash are not
    /// special.
    #[arg(short = '0', long)]
    null: bool,
    /// Items are separated by CHARACTER (an escape such as \n or \t is allowed); quotes
    /// and backslash are not special.
    #[arg(
        short = 'd',
        long,
        value_name = "CHARACTER",
        allow_hyphen_values = true
    )]
    delimiter: Option<String>,
    /// Read items from FILE instead of standard input.
    #[arg(short = 'a', long = "arg-file", value_name = "FILE")]
    arg_file: Option<String>,
    /// Use at most MAX-ARGS items per command line.
    #[arg(
        short = 'n',
        long = "max-args",
        value_name = "MAX-ARGS",
        allow_hyphen_values = true
    )]
    max_args: Option<String>,
    /// Use at most MAX-LINES non-blank input lines per command line.
    #[arg(
        short = 'L',
        long = "max-lines",
        value_name = "MAX-LINES",
        allow_hyphen_values = true
    )]
    max_lines: Option<String>,
    /// Replace R in INITIAL-ARGS with each input line (implies one line per command).
    #[arg(short = 'I', value_name = "R")]
    replace_str: Option<String>,
    /// Same as -I {} (or -I R with --replace=R).
    #[arg(short = 'i', long = "replace", value_name = "R", num_args = 0..=1,
          require_equals = true, default_missing_value = "{}")]
    replace: Option<String>,
    /// Stop reading input at an item equal to EOF-STR.
    #[arg(short = 'E', value_name = "EOF-STR")]
    eof: Option<String>,
    /// Limit the command line to MAX-CHARS bytes (at most the built-in limit).
    #[arg(
        short = 's',
        long = "max-chars",
        value_name = "MAX-CHARS",
        allow_hyphen_values = true
    )]
    max_chars: Option<String>,
    /// If there are no items, do not run the command.
    #[arg(short = 'r', long = "no-run-if-empty")]
    no_run_if_empty: bool,
    /// Exit if the items -n or -L ask for do not fit in one command line (-s).
    #[arg(short = 'x', long)]
    exit: bool,
    /// Print each command line on standard error before running it.
    #[arg(short = 't', long)]
    verbose: bool,
    /// Accepted for compatibility; commands always run one at a time.
    #[arg(
        short = 'P',
        long = "max-procs",
        value_name = "MAX-PROCS",
        allow_hyphen_values = true
    )]
    max_procs: Option<String>,
    /// The command and its initial arguments.
    #[arg(trailing_var_arg = true)]
    command: Vec<String>,
}

async fn usage(ctx: &Context, msg: &str) -> Status {
    ctx.err(format!(
        "xargs: {msg}\nTry 'xargs --help' for more information.\n"
    ))
    .await;
    1
}

/// Parses a count option; `Err` carries the GNU message.
fn count(value: &Option<String>, opt: char, min: i64) -> Result<Option<usize>, String> {
    let Some(v) = value else { return Ok(None) };
    match v.trim().parse::<i64>() {
        Ok(n) if n >= min => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        Ok(n) => Err(format!("value {n} for -{opt} option should be >= {min}")),
        Err(_) => Err(format!("invalid number \"{v}\" for -{opt} option")),
    }
}

/// The item separator given to -d: one byte, or one backslash escape.
fn delimiter(spec: &str) -> Option<u8> {
    let b = spec.as_bytes();
    match b {
        [c] => Some(*c),
        [b'\\', e] => Some(match e {
            b'a' => 0x07,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 0x0b,
            b'0' => 0,
            b'\\' => b'\\',
            _ => return None,
        }),
        [b'\\', b'0'..=b'7', rest @ ..] if rest.iter().all(|d| (b'0'..=b'7').contains(d)) => {
            u8::try_from(u32::from_str_radix(&spec[1..], 8).ok()?).ok()
        }
        [b'\\', b'x', rest @ ..] if !rest.is_empty() => {
            u8::from_str_radix(std::str::from_utf8(rest).ok()?, 16).ok()
        }
        _ => None,
    }
}

/// How input is split into items.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Split {
    /// Blanks and newlines separate; quotes and backslash protect.
    Words,
    /// One item per line (`-I`): leading blanks dropped, quotes and backslash still
    /// processed, inner blanks kept.
    Lines,
    /// Only this byte separates; nothing is special.
    Delim(u8),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    Double,
    Backslash,
}

/// One item and whether it ended a (logical) input line, for -L.
struct Item {
    arg: Vec<u8>,
    ends_line: bool,
}

/// Why reading items stopped early.
enum ParseError {
    Unmatched(&'static str),
    TooLong,
}

/// A streaming tokenizer over the input bytes.
struct Tokenizer {
    split: Split,
    quote: Quote,
    cur: Vec<u8>,
    /// The current item exists even if empty (`""`).
    started: bool,
    /// The last byte outside quotes was a blank (a line ending so continues, for -L).
    after_blank: bool,
}

impl Tokenizer {
    fn new(split: Split) -> Tokenizer {
        Tokenizer {
            split,
            quote: Quote::None,
            cur: Vec::new(),
            started: false,
            after_blank: false,
        }
    }

    fn finish_item(&mut self, ends_line: bool, items: &mut Vec<Item>) {
        if self.started || !self.cur.is_empty() {
            items.push(Item {
                arg: std::mem::take(&mut self.cur),
                ends_line,
            });
        } else if ends_line && let Some(last) = items.last_mut() {
            last.ends_line = true;
        }
        self.started = false;
    }

    fn push(&mut self, b: u8) -> Result<(), ParseError> {
        if self.cur.len() >= MAX_ARG_BYTES {
            return Err(ParseError::TooLong);
        }
        self.cur.push(b);
        self.started = true;
        Ok(())
    }

    /// Feeds bytes, appending finished items.
    fn feed(&mut self, data: &[u8], items: &mut Vec<Item>) -> Result<(), ParseError> {
        for &b in data {
            if let Split::Delim(d) = self.split {
                if b == d {
                    self.started = true;
                    self.finish_item(true, items);
                } else {
                    self.push(b)?;
                }
                continue;
            }
            match self.quote {
                Quote::Backslash => {
                    self.quote = Quote::None;
                    self.push(b)?;
                }
                Quote::Single | Quote::Double => {
                    let close = if self.quote == Quote::Single {
                        b'\''
                    } else {
                        b'"'
                    };
                    if b == b'\n' {
                        return Err(ParseError::Unmatched(if close == b'\'' {
                            "single"
                        } else {
                            "double"
                        }));
                    }
                    if b == close {
                        self.quote = Quote::None;
                    } else {
                        self.push(b)?;
                    }
                }
                Quote::None => {
                    let blank = b == b' ' || b == b'\t';
                    match b {
                        b'\n' => {
                            let continues = self.after_blank && self.split == Split::Words;
                            self.finish_item(!continues, items);
                        }
                        _ if blank && self.split == Split::Words => self.finish_item(false, items),
                        _ if blank && !self.started => {}
                        b'\'' => {
                            self.quote = Quote::Single;
                            self.started = true;
                        }
                        b'"' => {
                            self.quote = Quote::Double;
                            self.started = true;
                        }
                        b'\\' => self.quote = Quote::Backslash,
                        _ => self.push(b)?,
                    }
                    self.after_blank = blank;
                }
            }
        }
        Ok(())
    }

    /// Ends the input.
    fn end(&mut self, items: &mut Vec<Item>) -> Result<(), ParseError> {
        match self.quote {
            Quote::Single => return Err(ParseError::Unmatched("single")),
            Quote::Double => return Err(ParseError::Unmatched("double")),
            Quote::Backslash | Quote::None => {}
        }
        if let Split::Delim(_) = self.split
            && self.cur.is_empty()
        {
            return Ok(());
        }
        self.finish_item(true, items);
        Ok(())
    }
}

/// Where input comes from.
enum Source {
    Stdin(Input),
    File(Reader),
}

impl Source {
    async fn chunk(&mut self) -> Result<Option<bytes::Bytes>, String> {
        match self {
            Source::Stdin(i) => i.read_chunk().await.map_err(|e| e.to_string()),
            Source::File(r) => r.chunk().await.map_err(|e| e.to_string()),
        }
    }
}

/// Runs the command lines and keeps the overall status.
struct Runner<'a> {
    ctx: &'a Context,
    command: Vec<String>,
    verbose: bool,
    status: Status,
    ran: bool,
}

impl Runner<'_> {
    /// The command line for `items`: the command, its initial arguments, the items.
    fn line(&self, items: &[Vec<u8>]) -> Vec<String> {
        self.command
            .iter()
            .cloned()
            .chain(items.iter().map(|a| lossy(a)))
            .collect()
    }

    /// Runs one command line; `Ok(Some(status))` means stop with that status.
    async fn run(&mut self, argv: Vec<String>) -> Result<Option<Status>, Interrupt> {
        self.ctx.checkpoint().await?;
        self.ran = true;
        if self.verbose {
            let line: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
            self.ctx.err(format!("{}\n", line.join(" "))).await;
        }
        let mut child = self.ctx.clone();
        child.stdin = Input::empty();
        let name = argv.first().cloned().unwrap_or_default();
        let st = match self.ctx.launcher.unrunnable(self.ctx, &name).await {
            None => self.ctx.launcher.launch(child, argv).await,
            Some(e) => {
                self.ctx.warn("xargs", format!("{name}: {e}")).await;
                crate::unrunnable_status(&e)
            }
        };
        if self.ctx.cancel.is_cancelled() {
            return Err(Interrupt::Cancelled);
        }
        Ok(match st {
            0 => None,
            126 | 127 => Some(st),
            255 => {
                self.ctx
                    .warn("xargs", format!("{name}: exited with status 255; aborting"))
                    .await;
                Some(STATUS_CMD_255)
            }
            129..=254 => {
                self.ctx
                    .warn(
                        "xargs",
                        format!("{name}: terminated by signal {}", st - 128),
                    )
                    .await;
                Some(STATUS_CMD_KILLED)
            }
            _ => {
                self.status = STATUS_SOME_FAILED;
                None
            }
        })
    }
}

/// An argument read from the input: its bytes as text (see [`crate::bytetext`]).
fn lossy(b: &[u8]) -> String {
    crate::bytetext::decode_slice(b).into_owned()
}

/// Bytes an argument takes on a command line.
fn arg_size(a: &[u8]) -> usize {
    a.len() + 1
}

pub struct Xargs;

#[async_trait]
impl Command for Xargs {
    fn name(&self) -> &'static str {
        "xargs"
    }
    fn summary(&self) -> &'static str {
        "build and execute command lines from standard input"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let max_args = match count(&args.max_args, 'n', 1) {
            Ok(v) => v,
            Err(m) => return Ok(usage(ctx, &m).await),
        };
        let max_lines = match count(&args.max_lines, 'L', 1) {
            Ok(v) => v,
            Err(m) => return Ok(usage(ctx, &m).await),
        };
        if let Err(m) = count(&args.max_procs, 'P', 0) {
            return Ok(usage(ctx, &m).await);
        }
        let max_chars = match count(&args.max_chars, 's', 1) {
            Ok(v) => v.unwrap_or(MAX_ARG_BYTES).min(MAX_ARG_BYTES),
            Err(m) => return Ok(usage(ctx, &m).await),
        };
        let replace = args.replace_str.clone().or(args.replace.clone());
        let split = if args.null {
            Split::Delim(0)
        } else if let Some(d) = &args.delimiter {
            match delimiter(d) {
                Some(b) => Split::Delim(b),
                None => {
                    ctx.warn(
                        "xargs",
                        format!(
                            "Invalid input delimiter specification {d}: the delimiter must be \
                             either a single character or an escape sequence starting with \\."
                        ),
                    )
                    .await;
                    return Ok(1);
                }
            }
        } else if replace.is_some() {
            Split::Lines
        } else {
            Split::Words
        };
        let command = if args.command.is_empty() {
            vec!["echo".to_string()]
        } else {
            args.command.clone()
        };
        let base: usize = command.iter().map(|a| arg_size(a.as_bytes())).sum();
        if base > max_chars {
            ctx.warn(
                "xargs",
                "cannot fit single argument within argument list size limit",
            )
            .await;
            return Ok(1);
        }
        let mut source = match &args.arg_file {
            None => Source::Stdin(ctx.stdin.clone()),
            Some(f) => match Reader::open(ctx, f).await {
                Ok(r) => Source::File(r),
                Err(e) => {
                    ctx.warn("xargs", format!("cannot open {}: {e}", quote(f)))
                        .await;
                    return Ok(1);
                }
            },
        };
        let mut runner = Runner {
            ctx,
            command,
            verbose: args.verbose,
            status: 0,
            ran: false,
        };
        let mut tok = Tokenizer::new(split);
        let mut items: Vec<Item> = Vec::new();
        // The command line being built: its items, their size, and input lines used.
        let mut batch: Vec<Vec<u8>> = Vec::new();
        let mut batch_size = base;
        let mut batch_lines = 0usize;
        let mut done = false;
        let mut error: Option<String> = None;
        while !done {
            match source.chunk().await {
                Ok(Some(chunk)) => {
                    if let Err(e) = tok.feed(&chunk, &mut items) {
                        error = Some(parse_error(e));
                        done = true;
                    }
                }
                Ok(None) => {
                    if let Err(e) = tok.end(&mut items) {
                        error = Some(parse_error(e));
                    }
                    done = true;
                }
                Err(e) => {
                    error = Some(format!("read error: {e}"));
                    done = true;
                }
            }
            for item in items.drain(..) {
                if args
                    .eof
                    .as_deref()
                    .is_some_and(|e| e.as_bytes() == item.arg)
                {
                    done = true;
                    break;
                }
                if let Some(r) = &replace {
                    let text = lossy(&item.arg);
                    let argv: Vec<String> = runner
                        .command
                        .iter()
                        .enumerate()
                        .map(|(i, a)| {
                            if i == 0 {
                                a.clone()
                            } else {
                                a.replace(r.as_str(), &text)
                            }
                        })
                        .collect();
                    let size: usize = argv.iter().map(|a| arg_size(a.as_bytes())).sum();
                    if size > max_chars {
                        error = Some("argument line too long".into());
                        done = true;
                        break;
                    }
                    if let Some(st) = runner.run(argv).await? {
                        return Ok(st);
                    }
                    continue;
                }
                let size = arg_size(&item.arg);
                if batch_size + size > max_chars {
                    // GNU's words: an item that fits on no line is "argument line too
                    // long" (the command alone not fitting is the other message).
                    if batch.is_empty() {
                        error = Some("argument line too long".into());
                        done = true;
                        break;
                    }
                    if args.exit && (max_args.is_some() || max_lines.is_some()) {
                        // The line being built is not run.
                        batch.clear();
                        error = Some("argument list too long".into());
                        done = true;
                        break;
                    }
                    let full = runner.line(&std::mem::take(&mut batch));
                    batch_size = base;
                    batch_lines = 0;
                    if let Some(st) = runner.run(full).await? {
                        return Ok(st);
                    }
                }
                batch_size += size;
                batch.push(item.arg);
                if item.ends_line {
                    batch_lines += 1;
                }
                let full = max_args.is_some_and(|n| batch.len() >= n)
                    || max_lines.is_some_and(|n| batch_lines >= n);
                if full {
                    let full = runner.line(&std::mem::take(&mut batch));
                    batch_size = base;
                    batch_lines = 0;
                    if let Some(st) = runner.run(full).await? {
                        return Ok(st);
                    }
                }
            }
        }
        let run_empty =
            !runner.ran && !args.no_run_if_empty && replace.is_none() && error.is_none();
        if !batch.is_empty() || run_empty {
            let rest = runner.line(&batch);
            if let Some(st) = runner.run(rest).await? {
                return Ok(st);
            }
        }
        if let Some(msg) = error {
            ctx.warn("xargs", msg).await;
            return Ok(1);
        }
        Ok(runner.status)
    }
}

fn parse_error(e: ParseError) -> String {
    match e {
        ParseError::Unmatched(which) => format!(
            "unmatched {which} quote; by default quotes are special to xargs unless you use \
             the -0 option"
        ),
        ParseError::TooLong => "argument line too long".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    async fn xargs(stdin: &str, args: &[&str]) -> (i32, String, String) {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            fs: MemFs::with_files(&[("/list", "p q\nr\n")]),
            ..Invocation::default()
        }
        .run(&Xargs, args)
        .await
    }

    async fn out(stdin: &str, args: &[&str]) -> String {
        let (st, out, err) = xargs(stdin, args).await;
        assert_eq!((st, err.as_str()), (0, ""), "xargs {args:?}");
        out
    }

    #[tokio::test]
    async fn splits_items_like_gnu() {
        assert_eq!(
            out("a b\nc \"d e\" 'f g' h\\ i\n", &["-n1"]).await,
            "a\nb\nc\nd e\nf g\nh i\n"
        );
        assert_eq!(out("a\nb\n", &[]).await, "a b\n");
        assert_eq!(out("a \"\" b\n", &["-n1"]).await, "a\n\nb\n");
        assert_eq!(out("a\\\nb\n", &["-n1"]).await, "a\nb\n");
        assert_eq!(out("a\0b c\0", &["-0", "-n1", "echo"]).await, "a\nb c\n");
        assert_eq!(out("a,b,c", &["-d,", "-n2"]).await, "a b\nc\n");
        assert_eq!(out("a\nb\n", &["-d", "\\n", "-n1", "echo"]).await, "a\nb\n");
        assert_eq!(out("a\tb\n", &["-d", "\\t", "echo"]).await, "a b\n\n");
        assert_eq!(
            out("1\n2\n3\n", &["-n", "2", "echo", "-n", "x"]).await,
            "x 1 2x 3"
        );
        assert_eq!(out("a b\nSTOP\nc\n", &["-E", "STOP"]).await, "a b\n");
    }

    #[tokio::test]
    async fn lines_and_replacement() {
        assert_eq!(out("a\nb\nc\n", &["-L2"]).await, "a b\nc\n");
        assert_eq!(out("a b\n\nc\n", &["-L1", "echo"]).await, "a b\nc\n");
        assert_eq!(out("a \nb\n", &["-L1"]).await, "a b\n");
        assert_eq!(
            out("a b\nc\n", &["-I{}", "echo", "[{}]", "x{}y"]).await,
            "[a b] xa by\n[c] xcy\n"
        );
        assert_eq!(
            out("  a b  \nc\n", &["-I", "X", "echo", "X-X"]).await,
            "a b  -a b  \nc-c\n"
        );
        assert_eq!(
            out("\"a b\" c\n", &["-i", "echo", "[{}]"]).await,
            "[a b c]\n"
        );
        assert_eq!(out("\n\n", &["-I{}", "echo", "[{}]"]).await, "");
    }

    #[tokio::test]
    async fn empty_input_and_files() {
        assert_eq!(out("", &["echo", "x"]).await, "x\n");
        assert_eq!(out("", &["-r", "echo", "x"]).await, "");
        assert_eq!(out("", &["--no-run-if-empty"]).await, "");
        assert_eq!(out("", &["-a", "list", "-n1"]).await, "p\nq\nr\n");
        let (st, _, err) = xargs("", &["-a", "nope"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "xargs: cannot open 'nope': No such file or directory\n")
        );
    }

    #[tokio::test]
    async fn trace_and_statuses() {
        let (st, so, err) = xargs("1\n2\n3\n", &["-n2", "-t", "-P", "4"]).await;
        assert_eq!(
            (st, so.as_str(), err.as_str()),
            (0, "1 2\n3\n", "echo 1 2\necho 3\n")
        );
        let (_, _, err) = xargs("a b\n", &["-t", "-I{}", "echo", "{} z"]).await;
        assert_eq!(err, "echo a\\ b\\ z\n");
        assert_eq!(xargs("a\nb\n", &["-n1", "false"]).await.0, 123);
        let (st, so, err) = xargs("a\nb\n", &["-n1", "nosuch"]).await;
        assert_eq!(
            (st, so.as_str(), err.as_str()),
            (127, "", "xargs: nosuch: No such file or directory\n")
        );
        // A command's own output goes to xargs's stdout; its stdin is empty.
        assert_eq!(
            xargs("a\n", &["cat"]).await,
            (
                123,
                String::new(),
                "cat: a: No such file or directory\n".into()
            )
        );
        assert_eq!(out("x\n", &["-I{}", "cat", "-"]).await, "");
    }

    #[tokio::test]
    async fn bad_input_and_usage() {
        let (st, out, err) = xargs("a \"b\n", &[]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (
                1,
                "a\n",
                "xargs: unmatched double quote; by default quotes are special to xargs unless you use the -0 option\n"
            )
        );
        let (st, _, err) = xargs("a 'b", &[]).await;
        assert_eq!(st, 1);
        assert!(err.starts_with("xargs: unmatched single quote"), "{err}");
        let try_help = "Try 'xargs --help' for more information.\n";
        assert_eq!(
            xargs("", &["-n", "0"]).await,
            (
                1,
                String::new(),
                format!("xargs: value 0 for -n option should be >= 1\n{try_help}")
            )
        );
        assert_eq!(
            xargs("", &["-n", "x"]).await,
            (
                1,
                String::new(),
                format!("xargs: invalid number \"x\" for -n option\n{try_help}")
            )
        );
        assert_eq!(
            xargs("", &["-L", "-1"]).await,
            (
                1,
                String::new(),
                format!("xargs: value -1 for -L option should be >= 1\n{try_help}")
            )
        );
        assert_eq!(xargs("", &["--bogus"]).await.0, 1);
        let (st, _, err) = xargs("", &["-d", "ab"]).await;
        assert_eq!(st, 1);
        assert!(
            err.starts_with("xargs: Invalid input delimiter specification ab"),
            "{err}"
        );
        let (st, _, err) = xargs("aaaa\n", &["-s", "8", "echo"]).await;
        assert_eq!((st, err.as_str()), (1, "xargs: argument line too long\n"));
        let (st, _, err) = xargs("a\n", &["-s", "1", "echo"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "xargs: cannot fit single argument within argument list size limit\n"
            )
        );
    }

    /// Runs `exit N` as a command that exits with N, to test how statuses map.
    struct ExitLauncher;

    #[async_trait]
    impl crate::Launcher for ExitLauncher {
        async fn launch(&self, _ctx: Context, argv: Vec<String>) -> Status {
            argv.get(1).and_then(|n| n.parse().ok()).unwrap_or(0)
        }
        fn commands(&self) -> Vec<crate::CommandInfo> {
            Vec::new()
        }
        fn resolves(&self, _name: &str) -> bool {
            true
        }
    }

    #[tokio::test]
    async fn statuses_map_like_gnu() {
        let inv = |stdin: &str| Invocation {
            stdin: stdin.as_bytes().to_vec(),
            launcher: std::sync::Arc::new(ExitLauncher),
            ..Invocation::default()
        };
        let run =
            |stdin: &'static str| async move { inv(stdin).run(&Xargs, &["-n1", "exit"]).await };
        assert_eq!(run("0 0").await, (0, String::new(), String::new()));
        assert_eq!(run("0 1 0").await.0, 123);
        assert_eq!(run("125 0").await.0, 123);
        assert_eq!(run("126 0").await.0, 126);
        assert_eq!(run("0 127 1").await.0, 127);
        assert_eq!(
            run("255 1").await,
            (
                124,
                String::new(),
                "xargs: exit: exited with status 255; aborting\n".into()
            )
        );
        assert_eq!(
            run("141 0").await,
            (
                125,
                String::new(),
                "xargs: exit: terminated by signal 13\n".into()
            )
        );
    }

    #[test]
    fn tokenizer_keeps_state_across_chunks() {
        let input = b"a 'b c' d\\ e \"\" f\ng\n";
        let mut whole = Vec::new();
        let mut t = Tokenizer::new(Split::Words);
        assert!(t.feed(input, &mut whole).is_ok());
        assert!(t.end(&mut whole).is_ok());
        let mut bytewise = Vec::new();
        let mut t = Tokenizer::new(Split::Words);
        for b in input {
            assert!(t.feed(&[*b], &mut bytewise).is_ok());
        }
        assert!(t.end(&mut bytewise).is_ok());
        let args = |v: &[Item]| v.iter().map(|i| lossy(&i.arg)).collect::<Vec<_>>();
        assert_eq!(args(&whole), ["a", "b c", "d e", "", "f", "g"]);
        assert_eq!(args(&bytewise), args(&whole));
    }

    #[tokio::test]
    async fn argument_list_is_bounded() {
        // Many items are split over several command lines, none over the limit.
        let item = "x".repeat(1000);
        let input = format!("{item}\n").repeat(300);
        let (st, out, _) = xargs(&input, &[]).await;
        assert_eq!(st, 0);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 2, "{}", lines.len());
        assert!(lines.iter().all(|l| l.len() < MAX_ARG_BYTES));
        assert_eq!(
            lines.iter().map(|l| l.split(' ').count()).sum::<usize>(),
            300
        );
        // One item over the limit is an error, not unbounded buffering.
        let huge = "y".repeat(MAX_ARG_BYTES + 10);
        let (st, out, err) = xargs(&huge, &[]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (1, "", "xargs: argument line too long\n")
        );
    }
}

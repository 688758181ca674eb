//! `test` and `[`: bash's builtin conditional expressions. Files are judged through the
//! filesystem port: every file belongs to the session user, so `-r`/`-w`/`-x` read the
//! owner's permission bits; `-b -c -p -S -u -g -k` are false (the fork holds no such
//! files); `-t FD` is true only for 1 when stdout is the terminal.
//!
//! With up to four arguments the POSIX rules by argument count apply; longer
//! expressions go through a parser (`!` binds tightest, then `-a`, then `-o`, with
//! parentheses). Bad usage gives status 2 and a bash-worded message.

//!
//! [`GnuTest`] and [`GnuBracket`] are GNU coreutils' programs of the same names (see
//! [`gnu`]): what runs when bash would run the file rather than its builtin.

use async_trait::async_trait;

use crate::fs::FileKind;
use crate::{CmdResult, Command, Context, STATUS_USAGE};

mod gnu;

/// `[ --help` of GNU's program.
const GNU_HELP: &str = include_str!("test/help.txt");
/// `[ --version` of GNU's program.
const GNU_VERSION: &str = include_str!("test/version.txt");

/// Deepest nesting of `(` and `!` the parser follows, so `test ! ! ! …` with a huge
/// argument list cannot exhaust the stack.
const MAX_NESTING: usize = 512;

const UNARY: &[&str] = &[
    "-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-n", "-p", "-r", "-s", "-t", "-u", "-w",
    "-x", "-z", "-G", "-L", "-N", "-O", "-S",
];
const BINARY: &[&str] = &[
    "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef",
];

/// A usage problem: its message, printed as `NAME: message`.
struct Usage(String);

type Eval = Result<bool, Usage>;

fn parse_int(s: &str) -> Result<i64, Usage> {
    s.trim()
        .parse::<i64>()
        .map_err(|_| Usage(format!("{s}: integer expression expected")))
}

struct Tester<'a> {
    ctx: &'a Context,
    /// Run as `[`: its `]` still follows the words (bash names it in `found ]`).
    bracket: bool,
}

impl Tester<'_> {
    async fn unary(&self, op: &str, arg: &str) -> Eval {
        let ctx = self.ctx;
        let path = || ctx.path(arg);
        let stat = || async {
            if arg.is_empty() {
                None
            } else {
                ctx.fs.stat(&path()).await.ok()
            }
        };
        Ok(match op {
            "-n" => !arg.is_empty(),
            "-z" => arg.is_empty(),
            "-e" | "-a" => stat().await.is_some(),
            "-f" => stat().await.is_some_and(|m| m.kind == FileKind::File),
            "-d" => stat().await.is_some_and(|m| m.kind == FileKind::Dir),
            "-s" => stat().await.is_some_and(|m| m.len > 0),
            "-r" => stat().await.is_some_and(|m| m.mode & 0o400 != 0),
            "-w" => stat().await.is_some_and(|m| m.mode & 0o200 != 0),
            "-x" => stat().await.is_some_and(|m| m.mode & 0o100 != 0),
            "-O" | "-G" => stat().await.is_some(),
            "-N" => false,
            "-u" => stat().await.is_some_and(|m| m.mode & 0o4000 != 0),
            "-g" => stat().await.is_some_and(|m| m.mode & 0o2000 != 0),
            "-k" => stat().await.is_some_and(|m| m.mode & 0o1000 != 0),
            "-h" | "-L" => {
                !arg.is_empty() && ctx.fs.lstat(&path()).await.is_ok_and(|m| m.is_symlink())
            }
            "-c" => stat()
                .await
                .is_some_and(|m| m.kind == crate::fs::FileKind::CharDevice),
            "-b" | "-p" | "-S" => false,
            // A descriptor that is not a number is simply not a terminal (bash's
            // `legal_number` fails quietly).
            "-t" => parse_int(arg).is_ok_and(|fd| fd == 1) && ctx.tty.is_some(),
            _ => return Err(Usage(format!("{op}: unary operator expected"))),
        })
    }

    async fn binary(&self, a: &str, op: &str, b: &str) -> Eval {
        let ctx = self.ctx;
        Ok(match op {
            "=" | "==" => a == b,
            "!=" => a != b,
            // By bytes, as the C locale sorts (a byte that is not UTF-8 included).
            "<" => crate::bytetext::encode(a) < crate::bytetext::encode(b),
            ">" => crate::bytetext::encode(a) > crate::bytetext::encode(b),
            "-eq" => parse_int(a)? == parse_int(b)?,
            "-ne" => parse_int(a)? != parse_int(b)?,
            "-lt" => parse_int(a)? < parse_int(b)?,
            "-le" => parse_int(a)? <= parse_int(b)?,
            "-gt" => parse_int(a)? > parse_int(b)?,
            "-ge" => parse_int(a)? >= parse_int(b)?,
            "-nt" | "-ot" => {
                let ma = ctx.fs.stat(&ctx.path(a)).await.ok().map(|m| m.mtime);
                let mb = ctx.fs.stat(&ctx.path(b)).await.ok().map(|m| m.mtime);
                match (ma, mb, op) {
                    (Some(x), Some(y), "-nt") => x > y,
                    (Some(x), Some(y), _) => x < y,
                    (Some(_), None, "-nt") | (None, Some(_), "-ot") => true,
                    _ => false,
                }
            }
            "-ef" => {
                let ca = ctx.fs.canonicalize(&ctx.path(a)).await;
                let cb = ctx.fs.canonicalize(&ctx.path(b)).await;
                matches!((ca, cb), (Ok(x), Ok(y)) if x == y)
            }
            _ => return Err(Usage(format!("{op}: binary operator expected"))),
        })
    }

    /// POSIX's rules for up to four arguments.
    async fn by_count(&self, args: &[&str]) -> Eval {
        match args {
            [] => Ok(false),
            [a] => Ok(!a.is_empty()),
            ["!", a] => Ok(a.is_empty()),
            [op, a] if UNARY.contains(op) => self.unary(op, a).await,
            [a, _] => Err(Usage(format!("{a}: unary operator expected"))),
            [a, op, b] if BINARY.contains(op) => self.binary(a, op, b).await,
            ["!", a, b] => Ok(!Box::pin(self.by_count(&[a, b])).await?),
            ["(", a, ")"] => Ok(!a.is_empty()),
            [a, "-a", b] => Ok(!a.is_empty() && !b.is_empty()),
            [a, "-o", b] => Ok(!a.is_empty() || !b.is_empty()),
            [_, op, _] => Err(Usage(format!("{op}: binary operator expected"))),
            ["!", rest @ ..] if rest.len() == 3 => Ok(!Box::pin(self.by_count(rest)).await?),
            ["(", a, b, ")"] => Box::pin(self.by_count(&[a, b])).await,
            _ => {
                let mut p = Parser {
                    t: self,
                    args,
                    pos: 0,
                    depth: 0,
                };
                let v = p.or().await?;
                if let Some(extra) = args.get(p.pos) {
                    // bash names a leftover operator-looking word.
                    if extra.starts_with('-') {
                        return Err(Usage(format!("syntax error: `{extra}' unexpected")));
                    }
                    return Err(Usage("too many arguments".into()));
                }
                Ok(v)
            }
        }
    }
}

struct Parser<'a, 'b> {
    t: &'a Tester<'a>,
    args: &'b [&'b str],
    pos: usize,
    depth: usize,
}

impl<'b> Parser<'_, 'b> {
    fn peek(&self) -> Option<&'b str> {
        self.args.get(self.pos).copied()
    }

    async fn or(&mut self) -> Eval {
        let mut v = self.and().await?;
        while self.peek() == Some("-o") {
            self.pos += 1;
            let r = self.and().await?;
            v = v || r;
        }
        Ok(v)
    }

    async fn and(&mut self) -> Eval {
        let mut v = self.not().await?;
        while self.peek() == Some("-a") {
            self.pos += 1;
            let r = self.not().await?;
            v = v && r;
        }
        Ok(v)
    }

    async fn not(&mut self) -> Eval {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Usage("expression nested too deeply".into()));
        }
        let v = if self.peek() == Some("!") {
            self.pos += 1;
            !Box::pin(self.not()).await?
        } else {
            self.primary().await?
        };
        self.depth -= 1;
        Ok(v)
    }

    async fn primary(&mut self) -> Eval {
        let Some(tok) = self.peek() else {
            return Err(Usage("argument expected".into()));
        };
        if tok == "(" {
            self.pos += 1;
            let v = Box::pin(self.or()).await?;
            match self.peek() {
                Some(")") => {}
                Some(other) => return Err(Usage(format!("`)' expected, found {other}"))),
                None if self.t.bracket => return Err(Usage("`)' expected, found ]".into())),
                None => return Err(Usage("`)' expected".into())),
            }
            self.pos += 1;
            return Ok(v);
        }
        if let Some(op) = self.args.get(self.pos + 1)
            && BINARY.contains(op)
            && self.pos + 2 < self.args.len()
        {
            let (a, b) = (tok, self.args[self.pos + 2]);
            self.pos += 3;
            return self.t.binary(a, op, b).await;
        }
        if UNARY.contains(&tok) {
            let Some(arg) = self.args.get(self.pos + 1) else {
                // A lone operator word is a non-empty string.
                self.pos += 1;
                return Ok(true);
            };
            self.pos += 2;
            return self.t.unary(tok, arg).await;
        }
        self.pos += 1;
        Ok(!tok.is_empty())
    }
}

async fn run_test(ctx: &Context, name: &str, args: &[String]) -> CmdResult {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let words = if name == "[" {
        match words.split_last() {
            Some((&"]", rest)) => rest.to_vec(),
            _ => {
                ctx.err("[: missing `]'\n").await;
                return Ok(STATUS_USAGE);
            }
        }
    } else {
        words
    };
    let tester = Tester {
        ctx,
        bracket: name == "[",
    };
    answer(ctx, name, tester.by_count(&words).await).await
}

/// The status of an evaluation, and its usage problem printed as `NAME: message`.
async fn answer(ctx: &Context, name: &str, r: Eval) -> CmdResult {
    match r {
        Ok(v) => Ok(if v { 0 } else { 1 }),
        Err(Usage(msg)) => {
            ctx.warn(name, msg).await;
            Ok(STATUS_USAGE)
        }
    }
}

/// GNU's `test` (`name` "test") or `[`: its grammar and messages (see [`gnu`]).
async fn run_gnu(ctx: &Context, name: &str, args: &[String]) -> CmdResult {
    let mut words: Vec<&str> = args.iter().map(String::as_str).collect();
    if name == "[" {
        match words.as_slice() {
            ["--help"] => return ctx.out(GNU_HELP).await.map(|()| 0),
            ["--version"] => return ctx.out(GNU_VERSION).await.map(|()| 0),
            [.., "]"] => {
                words.pop();
            }
            _ => {
                let msg = format!("missing {}", super::util::quote("]"));
                ctx.warn(name, msg).await;
                return Ok(STATUS_USAGE);
            }
        }
    }
    let tester = Tester {
        ctx,
        bracket: false,
    };
    let mut expr = gnu::Gnu {
        t: &tester,
        args: &words,
        pos: 0,
        depth: 0,
    };
    answer(ctx, name, expr.run().await).await
}

/// A command named `$name` that `$run` runs.
macro_rules! test_command {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $summary:literal, $run:ident) => {
        $(#[$doc])*
        pub struct $ty;

        #[async_trait]
        impl Command for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn summary(&self) -> &'static str {
                $summary
            }
            async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
                $run(ctx, $name, &args).await
            }
        }
    };
}

test_command!(
    /// bash's builtin `test`, as the shell runs it.
    Test, "test", "evaluate a conditional expression", run_test
);
test_command!(
    /// bash's builtin `[`, as the shell runs it.
    Bracket, "[", "evaluate a conditional expression (needs a closing ])", run_test
);
test_command!(
    /// `/usr/bin/test`, GNU coreutils' program.
    GnuTest, "test", "evaluate a conditional expression (GNU coreutils' program)", run_gnu
);
test_command!(
    /// `/usr/bin/[`, GNU coreutils' program.
    GnuBracket, "[", "evaluate a conditional expression (GNU coreutils' program)", run_gnu
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    fn inv() -> Invocation {
        let fs = MemFs::with_files(&[("/f", "x"), ("/empty", ""), ("/d/", ""), ("/old", "")]);
        fs.put_symlink("f", "/ln");
        fs.set_mtime_secs("/old", 10);
        Invocation {
            fs,
            ..Invocation::default()
        }
    }

    async fn t(args: &[&str]) -> i32 {
        let (st, out, err) = inv().run(&Test, args).await;
        assert_eq!((out.as_str(), err.as_str()), ("", ""), "{args:?}");
        st
    }

    #[tokio::test]
    async fn strings_and_numbers() {
        assert_eq!(t(&[]).await, 1);
        assert_eq!(t(&["x"]).await, 0);
        assert_eq!(t(&[""]).await, 1);
        assert_eq!(t(&["-n", ""]).await, 1);
        assert_eq!(t(&["-z", ""]).await, 0);
        assert_eq!(t(&["-n"]).await, 0);
        assert_eq!(t(&["!"]).await, 0);
        assert_eq!(t(&["a", "=", "a"]).await, 0);
        assert_eq!(t(&["a", "!=", "a"]).await, 1);
        assert_eq!(t(&["a", "<", "b"]).await, 0);
        assert_eq!(t(&["10", "-gt", "9"]).await, 0);
        assert_eq!(t(&[" 1 ", "-eq", "1"]).await, 0);
        assert_eq!(t(&["-5", "-lt", "-4"]).await, 0);
        assert_eq!(t(&["!", "a", "=", "b"]).await, 0);
        assert_eq!(t(&["(", "x", ")"]).await, 0);
        assert_eq!(t(&["a", "-a", "b", "-o", ""]).await, 0);
        assert_eq!(t(&["1", "-lt", "2", "-a", "3"]).await, 0);
        assert_eq!(
            t(&[
                "(", "1", "-eq", "2", ")", "-o", "!", "(", "a", "=", "b", ")"
            ])
            .await,
            0
        );
        assert_eq!(t(&["", "-o", "", "-a", "x"]).await, 1);
    }

    #[tokio::test]
    async fn files() {
        assert_eq!(t(&["-e", "f"]).await, 0);
        assert_eq!(t(&["-e", "nope"]).await, 1);
        assert_eq!(t(&["-e", ""]).await, 1);
        assert_eq!(t(&["-f", "d"]).await, 1);
        assert_eq!(t(&["-d", "d"]).await, 0);
        assert_eq!(t(&["-s", "f"]).await, 0);
        assert_eq!(t(&["-s", "empty"]).await, 1);
        assert_eq!(t(&["-L", "ln"]).await, 0);
        assert_eq!(t(&["-h", "f"]).await, 1);
        assert_eq!(t(&["-f", "ln"]).await, 0);
        assert_eq!(t(&["-r", "f"]).await, 0);
        assert_eq!(t(&["-x", "f"]).await, 1);
        assert_eq!(t(&["-x", "d"]).await, 0);
        assert_eq!(t(&["f", "-nt", "old"]).await, 0);
        assert_eq!(t(&["f", "-ot", "old"]).await, 1);
        assert_eq!(t(&["f", "-nt", "nope"]).await, 0);
        assert_eq!(t(&["ln", "-ef", "f"]).await, 0);
    }

    #[tokio::test]
    async fn usage_errors_like_bash() {
        let cases: &[(&[&str], &str)] = &[
            (&["a", "b", "c"], "test: b: binary operator expected\n"),
            (&["a", "=", "b", "c"], "test: too many arguments\n"),
            (&["-q", "x"], "test: -q: unary operator expected\n"),
            (&["1", "-eq", "x"], "test: x: integer expression expected\n"),
            (&["a", "b"], "test: a: unary operator expected\n"),
            (&["(", "a", "=", "b"], "test: `)' expected\n"),
        ];
        for (args, msg) in cases {
            let (st, _, err) = inv().run(&Test, args).await;
            assert_eq!((st, err.as_str()), (2, *msg), "{args:?}");
        }
    }

    #[tokio::test]
    async fn bracket_needs_closing() {
        assert_eq!(inv().run(&Bracket, &["x", "]"]).await.0, 0);
        assert_eq!(inv().run(&Bracket, &["]"]).await.0, 1);
        assert_eq!(inv().run(&Bracket, &["-d", "d", "]"]).await.0, 0);
        let (st, _, err) = inv().run(&Bracket, &["x"]).await;
        assert_eq!((st, err.as_str()), (2, "[: missing `]'\n"));
        let (st, _, err) = inv().run(&Bracket, &["1", "-eq", "x", "]"]).await;
        assert_eq!(
            (st, err.as_str()),
            (2, "[: x: integer expression expected\n")
        );
    }
}

//! `expr`: evaluate an expression given as separate arguments. Integers are 128-bit
//! (GNU uses arbitrary precision; a result past that is reported as too large).
//! Regular expressions (`:` and `match`) are POSIX basic ones, anchored at the start.

use crate::gnu_regex::{self, Dialect, Flags};
use async_trait::async_trait;

use super::util::quote;
use crate::{CmdResult, Command, Context};

const HELP: &str = "Usage: expr EXPRESSION\n  or:  expr OPTION\n\n\
Print the value of EXPRESSION to standard output. Operators, lowest precedence first:\n\
  ARG1 | ARG2, ARG1 & ARG2, ARG1 < <= = == != >= > ARG2, ARG1 + - ARG2,\n\
  ARG1 * / % ARG2, STRING : REGEXP, match STRING REGEXP, substr STRING POS LENGTH,\n\
  index STRING CHARS, length STRING, + TOKEN, ( EXPRESSION )\n\n\
Exit status is 0 if EXPRESSION is neither null nor 0, 1 if it is null or 0,\n\
2 if EXPRESSION is syntactically invalid, and 3 if an error occurred.\n";

#[derive(Clone, Debug, PartialEq)]
enum Val {
    Int(i128),
    Str(String),
}

impl Val {
    fn text(&self) -> String {
        match self {
            Val::Int(i) => i.to_string(),
            Val::Str(s) => s.clone(),
        }
    }
    fn int(&self) -> Option<i128> {
        match self {
            Val::Int(i) => Some(*i),
            Val::Str(s) => parse_int(s),
        }
    }
    fn null(&self) -> bool {
        match self {
            Val::Int(i) => *i == 0,
            Val::Str(s) => s.is_empty() || parse_int(s) == Some(0),
        }
    }
}

fn parse_int(s: &str) -> Option<i128> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Why evaluation failed: the message and the exit status.
struct Fail(String, i32);

fn syntax(msg: String) -> Fail {
    Fail(format!("syntax error: {msg}"), 2)
}

struct Parser<'a> {
    toks: &'a [String],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(String::as_str)
    }

    fn take(&mut self) -> Option<String> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn operand_after(&mut self, op: &str) -> Result<(), Fail> {
        if self.pos >= self.toks.len() {
            return Err(syntax(format!("missing argument after {}", quote(op))));
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Val, Fail> {
        let mut l = self.and()?;
        while self.peek() == Some("|") {
            self.take();
            self.operand_after("|")?;
            let r = self.and()?;
            l = if !l.null() {
                l
            } else if !r.null() {
                r
            } else {
                Val::Int(0)
            };
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Val, Fail> {
        let mut l = self.cmp()?;
        while self.peek() == Some("&") {
            self.take();
            self.operand_after("&")?;
            let r = self.cmp()?;
            l = if !l.null() && !r.null() {
                l
            } else {
                Val::Int(0)
            };
        }
        Ok(l)
    }

    fn cmp(&mut self) -> Result<Val, Fail> {
        let mut l = self.sum()?;
        while let Some(op) = self
            .peek()
            .filter(|o| matches!(*o, "<" | "<=" | "=" | "==" | "!=" | ">=" | ">"))
        {
            let op = op.to_string();
            self.take();
            self.operand_after(&op)?;
            let r = self.sum()?;
            let ord = match (l.int(), r.int()) {
                (Some(a), Some(b)) => a.cmp(&b),
                _ => l.text().cmp(&r.text()),
            };
            use std::cmp::Ordering::*;
            let t = match op.as_str() {
                "<" => ord == Less,
                "<=" => ord != Greater,
                "=" | "==" => ord == Equal,
                "!=" => ord != Equal,
                ">=" => ord != Less,
                _ => ord == Greater,
            };
            l = Val::Int(i128::from(t));
        }
        Ok(l)
    }

    fn sum(&mut self) -> Result<Val, Fail> {
        let mut l = self.product()?;
        while let Some(op) = self.peek().filter(|o| matches!(*o, "+" | "-")) {
            let op = op.to_string();
            self.take();
            self.operand_after(&op)?;
            let r = self.product()?;
            let (a, b) = ints(&l, &r)?;
            let v = if op == "+" {
                a.checked_add(b)
            } else {
                a.checked_sub(b)
            };
            l = Val::Int(v.ok_or_else(too_large)?);
        }
        Ok(l)
    }

    fn product(&mut self) -> Result<Val, Fail> {
        let mut l = self.colon()?;
        while let Some(op) = self.peek().filter(|o| matches!(*o, "*" | "/" | "%")) {
            let op = op.to_string();
            self.take();
            self.operand_after(&op)?;
            let r = self.colon()?;
            let (a, b) = ints(&l, &r)?;
            if b == 0 && op != "*" {
                return Err(Fail("division by zero".into(), 2));
            }
            let v = match op.as_str() {
                "*" => a.checked_mul(b),
                "/" => a.checked_div(b),
                _ => a.checked_rem(b),
            };
            l = Val::Int(v.ok_or_else(too_large)?);
        }
        Ok(l)
    }

    fn colon(&mut self) -> Result<Val, Fail> {
        let mut l = self.unary()?;
        while self.peek() == Some(":") {
            self.take();
            self.operand_after(":")?;
            let r = self.unary()?;
            l = matches(&l.text(), &r.text())?;
        }
        Ok(l)
    }

    fn unary(&mut self) -> Result<Val, Fail> {
        let Some(t) = self.take() else {
            let last = self.toks.last().cloned().unwrap_or_default();
            return Err(syntax(format!("missing argument after {}", quote(&last))));
        };
        match t.as_str() {
            "(" => {
                self.operand_after("(")?;
                let v = self.or()?;
                match self.take().as_deref() {
                    Some(")") => Ok(v),
                    Some(other) => {
                        Err(syntax(format!("expecting ')' instead of {}", quote(other))))
                    }
                    None => Err(syntax(format!(
                        "expecting ')' after {}",
                        quote(self.toks.last().map_or("", String::as_str))
                    ))),
                }
            }
            "+" => {
                self.operand_after("+")?;
                Ok(Val::Str(self.take().unwrap_or_default()))
            }
            "length" => {
                let s = self.arg("length")?;
                Ok(Val::Int(s.chars().count() as i128))
            }
            "match" => {
                let s = self.arg("match")?;
                let r = self.arg("match")?;
                matches(&s, &r)
            }
            "index" => {
                let s = self.arg("index")?;
                let chars = self.arg("index")?;
                let i = s
                    .chars()
                    .position(|c| chars.contains(c))
                    .map_or(0, |i| i + 1);
                Ok(Val::Int(i as i128))
            }
            "substr" => {
                let s = self.arg("substr")?;
                let p = self.arg("substr")?;
                let n = self.arg("substr")?;
                let (Some(p), Some(n)) = (parse_int(&p), parse_int(&n)) else {
                    return Ok(Val::Str(String::new()));
                };
                if p < 1 || n < 1 {
                    return Ok(Val::Str(String::new()));
                }
                let take = usize::try_from(n).unwrap_or(usize::MAX);
                let skip = usize::try_from(p - 1).unwrap_or(usize::MAX);
                Ok(Val::Str(s.chars().skip(skip).take(take).collect()))
            }
            ")" => Err(syntax("unexpected ')'".to_string())),
            _ => Ok(match parse_int(&t) {
                Some(i) => Val::Int(i),
                None => Val::Str(t),
            }),
        }
    }

    /// The operand of a keyword: GNU reads a whole primary there, so `+ TOKEN`, a
    /// parenthesized expression or another keyword's result; a plain token is taken as
    /// written (`length 007` is 3).
    fn arg(&mut self, kw: &str) -> Result<String, Fail> {
        self.operand_after(kw)?;
        match self.peek() {
            Some("+" | "(" | "length" | "match" | "index" | "substr") => Ok(self.unary()?.text()),
            _ => Ok(self.take().unwrap_or_default()),
        }
    }
}

fn too_large() -> Fail {
    Fail("integer result too large".into(), 2)
}

fn ints(a: &Val, b: &Val) -> Result<(i128, i128), Fail> {
    match (a.int(), b.int()) {
        (Some(x), Some(y)) => Ok((x, y)),
        _ => Err(Fail("non-integer argument".into(), 2)),
    }
}

fn matches(s: &str, re: &str) -> Result<Val, Fail> {
    // The match is anchored at the start: a pattern's own leading `^` is that anchor,
    // otherwise one is put in front (so `^^a` still reads as anchor, literal `^`, `a`).
    let anchored = if re.starts_with('^') {
        re.to_string()
    } else {
        format!("^{re}")
    };
    let rx = gnu_regex::compile(&anchored, Dialect::Basic, Flags::default())
        .map_err(|e| Fail(e.msg, 2))?;
    let caps = rx
        .captures_at(s.as_bytes(), 0)
        .map_err(|_| Fail("regular expression too complex".to_string(), 2))?;
    let groups = rx.groups() > 0;
    let text = |span: Option<(usize, usize)>| {
        span.map(|(a, b)| String::from_utf8_lossy(&s.as_bytes()[a..b]).into_owned())
            .unwrap_or_default()
    };
    Ok(match caps {
        Some(c) if groups => Val::Str(text(c.get(1))),
        Some(c) => Val::Int(text(c.get(0)).chars().count() as i128),
        None if groups => Val::Str(String::new()),
        None => Val::Int(0),
    })
}

/// The value and the exit status of `expr ARGS`.
fn eval(args: &[String]) -> Result<Val, Fail> {
    let mut p = Parser { toks: args, pos: 0 };
    let v = p.or()?;
    if let Some(t) = p.peek() {
        return Err(syntax(format!("unexpected argument {}", quote(t))));
    }
    Ok(v)
}

pub struct Expr;

#[async_trait]
impl Command for Expr {
    fn name(&self) -> &'static str {
        "expr"
    }
    fn summary(&self) -> &'static str {
        "evaluate expressions"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: &[String] = match args.first().map(String::as_str) {
            Some("--help") if args.len() == 1 => {
                ctx.out(HELP).await?;
                return Ok(0);
            }
            Some("--") => &args[1..],
            _ => &args,
        };
        if args.is_empty() {
            ctx.err("expr: missing operand\nTry 'expr --help' for more information.\n")
                .await;
            return Ok(2);
        }
        match eval(args) {
            Ok(v) => {
                ctx.out(format!("{}\n", v.text())).await?;
                Ok(i32::from(v.null()))
            }
            Err(Fail(msg, st)) => {
                ctx.warn("expr", msg).await;
                Ok(st)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn expr(args: &[&str]) -> (i32, String, String) {
        Invocation::default().run(&Expr, args).await
    }

    #[tokio::test]
    async fn evaluates_like_gnu() {
        assert_eq!(expr(&["1", "+", "2"]).await.1, "3\n");
        assert_eq!(expr(&["(", "1", "+", "2", ")", "*", "3"]).await.1, "9\n");
        assert_eq!(expr(&["abc", ":", "a\\(.\\)"]).await.1, "b\n");
        assert_eq!(
            expr(&["abc", ":", "b"]).await,
            (1, "0\n".into(), String::new())
        );
        assert_eq!(expr(&["length", "hello"]).await.1, "5\n");
        assert_eq!(expr(&["substr", "hello", "2", "3"]).await.1, "ell\n");
        assert_eq!(expr(&["index", "hello", "l"]).await.1, "3\n");
        assert_eq!(expr(&["3", "<", "10"]).await.1, "1\n");
        assert_eq!(
            expr(&["", "|", "0"]).await,
            (1, "0\n".into(), String::new())
        );
        assert_eq!(expr(&["--", "-5", "+", "1"]).await.1, "-4\n");
        assert_eq!(expr(&["+", "a"]).await.1, "a\n");
        assert_eq!(expr(&["length", "+", "length"]).await.1, "6\n");
        assert_eq!(expr(&["length", "007"]).await.1, "3\n");
    }

    #[tokio::test]
    async fn errors() {
        assert_eq!(
            expr(&["5", "/", "0"]).await,
            (2, String::new(), "expr: division by zero\n".into())
        );
        assert_eq!(
            expr(&["a", "+", "1"]).await.2,
            "expr: non-integer argument\n"
        );
        assert_eq!(
            expr(&["1", "+"]).await.2,
            "expr: syntax error: missing argument after '+'\n"
        );
        assert_eq!(
            expr(&["1", "2"]).await.2,
            "expr: syntax error: unexpected argument '2'\n"
        );
        assert_eq!(expr(&[]).await.0, 2);
    }
}

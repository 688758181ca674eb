//! GNU coreutils' `test` and `[` programs (`/usr/bin/test`, what `env test`, `xargs test`
//! and `find -exec test` run): the file and string tests are the builtin's
//! ([`Tester::unary`], [`Tester::binary`]), the grammar and the messages GNU's.
//!
//! GNU reads up to four arguments by POSIX's rules for their count, longer expressions
//! (and the inside of parentheses) by a precedence parser (`!`, then `-a`, then `-o`).
//! Integers may be as long as they like, with blanks around them and a `+` or `-` sign;
//! `-l STRING` stands for the length of STRING. It has no `<`, `>`, `-v`, `-o OPTION`
//! or `-R`; `[` alone takes `--help` and `--version`.

use std::cmp::Ordering;

use super::{MAX_NESTING, Tester, Usage};
use crate::cmd::util::quote;

type Eval = Result<bool, Usage>;

/// The binary operators GNU knows.
const BINOPS: &[&str] = &[
    "=", "!=", "==", "-nt", "-ot", "-ef", "-eq", "-ne", "-lt", "-le", "-gt", "-ge",
];

/// Whether `op` is one of GNU's unary operators (`-a` is not one).
fn unop(op: &str) -> bool {
    matches!(
        op.as_bytes(),
        [
            b'-',
            b'b' | b'c'
                | b'd'
                | b'e'
                | b'f'
                | b'g'
                | b'h'
                | b'k'
                | b'n'
                | b'p'
                | b'r'
                | b's'
                | b't'
                | b'u'
                | b'w'
                | b'x'
                | b'z'
                | b'G'
                | b'L'
                | b'O'
                | b'S'
                | b'N'
        ]
    )
}

/// A word shaped like an option: `-` and one more character.
fn switch(w: &str) -> bool {
    w.len() == 2 && w.starts_with('-')
}

/// The integer `s` stands for, as sign and digits (blanks around it allowed, a leading
/// `+` dropped); "invalid integer" otherwise.
fn integer(s: &str) -> Result<&str, Usage> {
    let bad = || Usage(format!("invalid integer {}", quote(s)));
    let body = s.trim_start_matches([' ', '\t']);
    let body = body.strip_prefix('+').unwrap_or(body);
    let trimmed = body.trim_end_matches([' ', '\t']);
    let digits = trimmed.strip_prefix('-').unwrap_or(trimmed);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    Ok(trimmed)
}

/// Compares two integers of any length as [`integer`] gives them.
fn compare(a: &str, b: &str) -> Ordering {
    let split = |s: &str| -> (bool, String) {
        let (neg, digits) = match s.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, s),
        };
        let digits = digits.trim_start_matches('0').to_string();
        (neg && !digits.is_empty(), digits)
    };
    let ((na, da), (nb, db)) = (split(a), split(b));
    let magnitude = da.len().cmp(&db.len()).then_with(|| da.cmp(&db));
    match (na, nb) {
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
    }
}

/// One evaluation: the arguments and how far they are read.
pub(super) struct Gnu<'a, 'b> {
    pub t: &'a Tester<'a>,
    pub args: &'b [&'b str],
    pub pos: usize,
    pub depth: usize,
}

impl<'b> Gnu<'_, 'b> {
    fn at(&self, k: usize) -> Option<&'b str> {
        self.args.get(self.pos + k).copied()
    }

    fn left(&self) -> usize {
        self.args.len().saturating_sub(self.pos)
    }

    /// GNU's complaint when an expression ends too soon: it names the last argument.
    fn beyond(&self) -> Usage {
        let last = self.args.last().copied().unwrap_or("");
        Usage(format!("missing argument after {}", quote(last)))
    }

    /// Moves on one argument; with `needed`, one must follow.
    fn advance(&mut self, needed: bool) -> Result<(), Usage> {
        self.pos += 1;
        if needed && self.pos >= self.args.len() {
            return Err(self.beyond());
        }
        Ok(())
    }

    /// The whole expression: what is left over is an "extra argument".
    pub(super) async fn run(&mut self) -> Eval {
        if self.args.is_empty() {
            return Ok(false);
        }
        let v = self.by_count(self.args.len()).await?;
        if let Some(extra) = self.at(0) {
            return Err(Usage(format!("extra argument {}", quote(extra))));
        }
        Ok(v)
    }

    /// POSIX's rules for `n` arguments from here (more than four: the parser).
    async fn by_count(&mut self, n: usize) -> Eval {
        match n {
            1 => Ok(self.one()),
            2 => self.two().await,
            3 => self.three().await,
            4 if self.at(0) == Some("!") => {
                self.advance(true)?;
                Ok(!self.three().await?)
            }
            4 if self.at(0) == Some("(") && self.at(3) == Some(")") => {
                self.advance(false)?;
                let v = self.two().await?;
                self.advance(false)?;
                Ok(v)
            }
            _ => self.expr().await,
        }
    }

    fn one(&mut self) -> bool {
        let v = self.at(0).is_some_and(|a| !a.is_empty());
        self.pos += 1;
        v
    }

    async fn two(&mut self) -> Eval {
        let a = self.at(0).unwrap_or("");
        if a == "!" {
            self.advance(false)?;
            return Ok(!self.one());
        }
        if switch(a) {
            return self.unary().await;
        }
        Err(self.beyond())
    }

    async fn three(&mut self) -> Eval {
        let (a, op, c) = (
            self.at(0).unwrap_or(""),
            self.at(1).unwrap_or(""),
            self.at(2).unwrap_or(""),
        );
        if BINOPS.contains(&op) {
            return self.binary(false).await;
        }
        if op == "-a" || op == "-o" {
            return self.expr().await;
        }
        if a == "!" {
            self.advance(true)?;
            return Ok(!self.two().await?);
        }
        if a == "(" && c == ")" {
            self.advance(false)?;
            let v = self.one();
            self.advance(false)?;
            return Ok(v);
        }
        Err(Usage(format!("{}: binary operator expected", quote(op))))
    }

    async fn expr(&mut self) -> Eval {
        if self.left() == 0 {
            return Err(self.beyond());
        }
        let mut v = false;
        loop {
            v |= self.and().await?;
            if self.at(0) != Some("-o") {
                return Ok(v);
            }
            self.advance(false)?;
        }
    }

    async fn and(&mut self) -> Eval {
        let mut v = true;
        loop {
            v &= self.term().await?;
            if self.at(0) != Some("-a") {
                return Ok(v);
            }
            self.advance(false)?;
        }
    }

    async fn term(&mut self) -> Eval {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Usage("expression nested too deeply".into()));
        }
        let mut negated = false;
        while self.at(0) == Some("!") {
            self.advance(true)?;
            negated = !negated;
        }
        let Some(a) = self.at(0) else {
            return Err(self.beyond());
        };
        let v = if a == "(" {
            self.advance(true)?;
            // What the parentheses hold: up to the `)`, by count when that is four or
            // fewer words, else everything left.
            let mut n = 1;
            while self.pos + n < self.args.len() && self.args[self.pos + n] != ")" {
                if n == 4 {
                    n = self.left();
                    break;
                }
                n += 1;
            }
            let v = Box::pin(self.by_count(n)).await?;
            match self.at(0) {
                Some(")") => {}
                None => return Err(Usage(format!("{} expected", quote(")")))),
                Some(x) => {
                    return Err(Usage(format!(
                        "{} expected, found {}",
                        quote(")"),
                        quote(x)
                    )));
                }
            }
            self.advance(false)?;
            v
        } else if self.left() >= 4 && a == "-l" && self.at(2).is_some_and(|o| BINOPS.contains(&o)) {
            self.binary(true).await?
        } else if self.left() >= 3 && self.at(1).is_some_and(|o| BINOPS.contains(&o)) {
            self.binary(false).await?
        } else if switch(a) {
            self.unary().await?
        } else {
            self.pos += 1;
            !a.is_empty()
        };
        self.depth -= 1;
        Ok(negated ^ v)
    }

    /// `-X ARG` at the position: the builtin's file and string tests, `-t` with GNU's
    /// integers.
    async fn unary(&mut self) -> Eval {
        let op = self.at(0).unwrap_or("");
        if !unop(op) {
            return Err(Usage(format!("{}: unary operator expected", quote(op))));
        }
        self.advance(true)?;
        let arg = self.at(0).unwrap_or("");
        self.pos += 1;
        if op == "-t" {
            let fd = integer(arg)?;
            return Ok(compare(fd, "1") == Ordering::Equal && self.t.ctx.tty.is_some());
        }
        self.t.unary(op, arg).await
    }

    /// `A OP B` at the position (`l_is_l`: `-l A OP B`, A's length on the left; a
    /// `-l` after OP puts B's length on the right).
    async fn binary(&mut self, l_is_l: bool) -> Eval {
        if l_is_l {
            self.advance(false)?;
        }
        let op_at = self.pos + 1;
        let word = |i: usize| self.args.get(i).copied().unwrap_or("");
        let op = word(op_at);
        let r_is_l = op_at + 2 < self.args.len() && word(op_at + 1) == "-l";
        if r_is_l {
            self.advance(false)?;
        }
        let ints = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];
        if ints.contains(&op) {
            let llen;
            let rlen;
            let l = if l_is_l {
                llen = word(op_at - 1).len().to_string();
                &llen
            } else {
                integer(word(op_at - 1))?
            };
            let r = if r_is_l {
                rlen = word(op_at + 2).len().to_string();
                &rlen
            } else {
                integer(word(op_at + 1))?
            };
            let c = compare(l, r);
            self.pos += 3;
            return Ok(match op {
                "-eq" => c == Ordering::Equal,
                "-ne" => c != Ordering::Equal,
                "-lt" => c == Ordering::Less,
                "-le" => c != Ordering::Greater,
                "-gt" => c == Ordering::Greater,
                _ => c != Ordering::Less,
            });
        }
        if op.starts_with('-') {
            // -nt, -ot, -ef: files, never lengths.
            self.pos += 3;
            if l_is_l || r_is_l {
                return Err(Usage(format!("{op} does not accept -l")));
            }
            return self.t.binary(word(op_at - 1), op, word(op_at + 1)).await;
        }
        let (a, b) = (word(self.pos), word(self.pos + 2));
        self.pos += 3;
        Ok((a == b) == (op != "!="))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_of_any_length() {
        assert_eq!(integer(" +12 ").ok(), Some("12"));
        assert_eq!(integer("-0").ok(), Some("-0"));
        assert!(integer("1x").is_err());
        assert!(integer("").is_err());
        assert!(integer("- 1").is_err());
        assert_eq!(compare("-0", "0"), Ordering::Equal);
        assert_eq!(compare("007", "7"), Ordering::Equal);
        assert_eq!(compare("99999999999999999999999", "1"), Ordering::Greater);
        assert_eq!(compare("-10", "-9"), Ordering::Less);
        assert_eq!(compare("-1", "1"), Ordering::Less);
    }
}

//! bc's lexer and parser: the program text becomes statements, one top-level statement at a
//! time (bc runs each as soon as it is read), with the line it ended on for messages.

use super::num::Num;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Num(String),
    Str(String),
    Name(String),
    Op(&'static str),
    Newline,
    Eof,
}

const OPS: &[&str] = &[
    "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "==", "!=", "<=", ">=", "&&", "||", "+", "-",
    "*", "/", "%", "^", "=", "<", ">", "!", "(", ")", "[", "]", "{", "}", ",", ";",
];

/// A lexing problem: the line and the message.
pub(crate) type LexError = (usize, String);

/// Splits `src` into tokens with the line each is on. Comments (`/* */`, `#`) and
/// backslash-newlines are dropped.
pub(crate) fn lex(src: &str) -> Result<Vec<(Tok, usize)>, LexError> {
    let b: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            // bc has counted the newline when it reports an error at one.
            out.push((Tok::Newline, line));
            i += 1;
        } else if c == '\\' && b.get(i + 1) == Some(&'\n') {
            line += 1;
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '#' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && b.get(i + 1) == Some(&'*') {
            let start = line;
            i += 2;
            loop {
                if i + 1 >= b.len() {
                    return Err((start, "comment end not found".into()));
                }
                if b[i] == '*' && b[i + 1] == '/' {
                    i += 2;
                    break;
                }
                if b[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
        } else if c == '"' {
            let start = line;
            let mut s = String::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err((start, "string end not found".into())),
                    Some('"') => {
                        i += 1;
                        break;
                    }
                    Some(&ch) => {
                        if ch == '\n' {
                            line += 1;
                        }
                        s.push(ch);
                        i += 1;
                    }
                }
            }
            out.push((Tok::Str(s), start));
        } else if c.is_ascii_digit() || c.is_ascii_uppercase() || c == '.' {
            let mut s = String::new();
            let mut seen_dot = false;
            while let Some(&ch) = b.get(i) {
                if ch.is_ascii_digit() || ch.is_ascii_uppercase() {
                    s.push(ch);
                } else if ch == '.' && !seen_dot {
                    seen_dot = true;
                    s.push(ch);
                } else if ch == '\\' && b.get(i + 1) == Some(&'\n') {
                    line += 1;
                    i += 1;
                } else {
                    break;
                }
                i += 1;
            }
            if s == "." {
                out.push((Tok::Name("last".into()), line));
            } else {
                out.push((Tok::Num(s), line));
            }
        } else if c.is_ascii_lowercase() || c == '_' {
            let mut s = String::new();
            while let Some(&ch) = b.get(i) {
                if ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_' {
                    s.push(ch);
                    i += 1;
                } else {
                    break;
                }
            }
            out.push((Tok::Name(s), line));
        } else {
            let rest: String = b[i..b.len().min(i + 2)].iter().collect();
            match OPS.iter().find(|op| rest.starts_with(**op)) {
                Some(op) => {
                    out.push((Tok::Op(op), line));
                    i += op.len();
                }
                None => return Err((line, format!("illegal character: {c}"))),
            }
        }
    }
    out.push((Tok::Eof, line));
    Ok(out)
}

#[derive(Clone, Debug)]
pub(crate) enum LValue {
    Var(String),
    Elem(String, Box<Expr>),
    Scale,
    Ibase,
    Obase,
    Last,
}

#[derive(Clone, Debug)]
pub(crate) enum Expr {
    Num(String),
    Load(LValue),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(&'static str, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Rel(&'static str, Box<Expr>, Box<Expr>),
    /// `op` is `=` or a compound `+=` …
    Assign(&'static str, LValue, Box<Expr>),
    PreInc(bool, LValue),
    PostInc(bool, LValue),
    Call(String, Vec<Arg>),
    Length(Box<Expr>),
    Sqrt(Box<Expr>),
    ScaleOf(Box<Expr>),
}

#[derive(Clone, Debug)]
pub(crate) enum Arg {
    Value(Expr),
    Array(String),
}

#[derive(Clone, Debug)]
pub(crate) enum Stmt {
    Expr(Expr),
    Str(String),
    Print(Vec<PrintItem>),
    Block(Vec<Stmt>),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    While(Expr, Box<Stmt>),
    For(Option<Expr>, Option<Expr>, Option<Expr>, Box<Stmt>),
    Break,
    Continue,
    Return(Option<Expr>),
    Halt,
    Define(std::sync::Arc<Func>),
    Empty,
}

#[derive(Clone, Debug)]
pub(crate) enum PrintItem {
    Str(String),
    Expr(Expr),
}

#[derive(Debug)]
pub(crate) struct Func {
    pub(crate) name: String,
    /// (name, is an array)
    pub(crate) params: Vec<(String, bool)>,
    pub(crate) autos: Vec<(String, bool)>,
    pub(crate) body: Vec<Stmt>,
}

/// What stopped parsing.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A syntax error on this line.
    Syntax(usize),
    /// `quit` was read.
    Quit,
}

pub(crate) struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    depth: usize,
    /// Whether the last top-level statement ended its line (bc runs a line at a time, so a
    /// runtime error drops the rest of the line: [`Parser::rest_of_line`]).
    line_done: bool,
}

/// Deepest nesting of expressions and statements the parser follows.
const MAX_NEST: usize = 150;

impl Parser {
    pub(crate) fn new(toks: Vec<(Tok, usize)>) -> Parser {
        Parser {
            toks,
            pos: 0,
            depth: 0,
            line_done: true,
        }
    }

    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].0
    }

    fn line(&self) -> usize {
        self.toks[self.pos.min(self.toks.len() - 1)].1
    }

    fn next(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn expect(&mut self, op: &str) -> Result<(), Stop> {
        if self.is_op(op) {
            self.next();
            Ok(())
        } else {
            Err(self.error())
        }
    }

    fn error(&self) -> Stop {
        if matches!(self.peek(), Tok::Name(n) if n == "quit") {
            return Stop::Quit;
        }
        Stop::Syntax(self.line())
    }

    fn skip_newlines(&mut self) {
        while matches!(self.peek(), Tok::Newline) {
            self.next();
        }
    }

    pub(crate) fn at_eof(&self) -> bool {
        matches!(self.peek(), Tok::Eof)
    }

    /// After a runtime error: drops what is left of the line that statement was on.
    pub(crate) fn rest_of_line(&mut self) {
        if !self.line_done {
            self.recover();
            self.line_done = true;
        }
    }

    /// After a syntax error: skips to the next line.
    pub(crate) fn recover(&mut self) {
        while !matches!(self.peek(), Tok::Newline | Tok::Eof) {
            self.next();
        }
        self.next();
    }

    /// The next top-level statement (`None` at the end of the input).
    pub(crate) fn top(&mut self) -> Result<Option<Stmt>, Stop> {
        loop {
            match self.peek() {
                Tok::Eof => return Ok(None),
                Tok::Newline => {
                    self.next();
                }
                Tok::Op(";") => {
                    self.next();
                }
                _ => break,
            }
        }
        let s = self.stmt()?;
        match self.peek() {
            Tok::Newline => {
                self.next();
                self.line_done = true;
            }
            Tok::Op(";") => {
                self.next();
                self.line_done = false;
            }
            Tok::Eof => self.line_done = true,
            _ => return Err(self.error()),
        }
        Ok(Some(s))
    }

    fn stmt(&mut self) -> Result<Stmt, Stop> {
        self.depth += 1;
        if self.depth > MAX_NEST {
            return Err(Stop::Syntax(self.line()));
        }
        let r = self.stmt_inner();
        self.depth -= 1;
        r
    }

    fn stmt_inner(&mut self) -> Result<Stmt, Stop> {
        match self.peek().clone() {
            Tok::Newline | Tok::Op(";") | Tok::Eof | Tok::Op("}") => Ok(Stmt::Empty),
            Tok::Str(s) => {
                self.next();
                Ok(Stmt::Str(s))
            }
            Tok::Op("{") => {
                self.next();
                let body = self.stmts_until_brace()?;
                Ok(Stmt::Block(body))
            }
            Tok::Name(n) => match n.as_str() {
                "quit" => Err(Stop::Quit),
                "halt" => {
                    self.next();
                    Ok(Stmt::Halt)
                }
                "break" => {
                    self.next();
                    Ok(Stmt::Break)
                }
                "continue" => {
                    self.next();
                    Ok(Stmt::Continue)
                }
                "return" => {
                    self.next();
                    if matches!(
                        self.peek(),
                        Tok::Newline | Tok::Eof | Tok::Op(";") | Tok::Op("}")
                    ) {
                        return Ok(Stmt::Return(None));
                    }
                    Ok(Stmt::Return(Some(self.expr()?)))
                }
                "print" => {
                    self.next();
                    let mut items = Vec::new();
                    loop {
                        if let Tok::Str(s) = self.peek().clone() {
                            self.next();
                            items.push(PrintItem::Str(s));
                        } else {
                            items.push(PrintItem::Expr(self.expr()?));
                        }
                        if self.is_op(",") {
                            self.next();
                        } else {
                            break;
                        }
                    }
                    Ok(Stmt::Print(items))
                }
                "if" => {
                    self.next();
                    self.expect("(")?;
                    let c = self.expr()?;
                    self.expect(")")?;
                    self.skip_newlines();
                    let then = self.stmt()?;
                    // `else` may follow on a later line.
                    let save = self.pos;
                    while matches!(self.peek(), Tok::Newline) || self.is_op(";") {
                        self.next();
                    }
                    if matches!(self.peek(), Tok::Name(e) if e == "else") {
                        self.next();
                        self.skip_newlines();
                        let other = self.stmt()?;
                        Ok(Stmt::If(c, Box::new(then), Some(Box::new(other))))
                    } else {
                        self.pos = save;
                        Ok(Stmt::If(c, Box::new(then), None))
                    }
                }
                "while" => {
                    self.next();
                    self.expect("(")?;
                    let c = self.expr()?;
                    self.expect(")")?;
                    self.skip_newlines();
                    let body = self.stmt()?;
                    Ok(Stmt::While(c, Box::new(body)))
                }
                "for" => {
                    self.next();
                    self.expect("(")?;
                    let a = if self.is_op(";") {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    self.expect(";")?;
                    let b = if self.is_op(";") {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    self.expect(";")?;
                    let c = if self.is_op(")") {
                        None
                    } else {
                        Some(self.expr()?)
                    };
                    self.expect(")")?;
                    self.skip_newlines();
                    let body = self.stmt()?;
                    Ok(Stmt::For(a, b, c, Box::new(body)))
                }
                "define" => self.define(),
                _ => Ok(Stmt::Expr(self.expr()?)),
            },
            _ => Ok(Stmt::Expr(self.expr()?)),
        }
    }

    /// Statements up to the closing `}` (consumed).
    fn stmts_until_brace(&mut self) -> Result<Vec<Stmt>, Stop> {
        let mut body = Vec::new();
        loop {
            while matches!(self.peek(), Tok::Newline) || self.is_op(";") {
                self.next();
            }
            if self.is_op("}") {
                self.next();
                return Ok(body);
            }
            if self.at_eof() {
                return Err(self.error());
            }
            body.push(self.stmt()?);
            if !(matches!(self.peek(), Tok::Newline) || self.is_op(";") || self.is_op("}")) {
                return Err(self.error());
            }
        }
    }

    fn define(&mut self) -> Result<Stmt, Stop> {
        self.next();
        let Tok::Name(name) = self.next() else {
            return Err(Stop::Syntax(self.line()));
        };
        self.expect("(")?;
        let params = self.name_list(")")?;
        self.expect(")")?;
        self.skip_newlines();
        self.expect("{")?;
        self.skip_newlines();
        let mut autos = Vec::new();
        if matches!(self.peek(), Tok::Name(a) if a == "auto") {
            self.next();
            autos = self.name_list("")?;
            if matches!(self.peek(), Tok::Newline) || self.is_op(";") {
                self.next();
            }
        }
        let body = self.stmts_until_brace()?;
        Ok(Stmt::Define(std::sync::Arc::new(Func {
            name,
            params,
            autos,
            body,
        })))
    }

    fn name_list(&mut self, close: &str) -> Result<Vec<(String, bool)>, Stop> {
        let mut out = Vec::new();
        if !close.is_empty() && self.is_op(close) {
            return Ok(out);
        }
        loop {
            let Tok::Name(n) = self.next() else {
                return Err(Stop::Syntax(self.line()));
            };
            let mut array = false;
            if self.is_op("[") {
                self.next();
                self.expect("]")?;
                array = true;
            }
            out.push((n, array));
            if self.is_op(",") {
                self.next();
            } else {
                return Ok(out);
            }
        }
    }

    pub(crate) fn expr(&mut self) -> Result<Expr, Stop> {
        self.depth += 1;
        if self.depth > MAX_NEST {
            return Err(Stop::Syntax(self.line()));
        }
        let r = self.or();
        self.depth -= 1;
        r
    }

    fn or(&mut self) -> Result<Expr, Stop> {
        let mut l = self.and()?;
        while self.is_op("||") {
            self.next();
            let r = self.and()?;
            l = Expr::Or(Box::new(l), Box::new(r));
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Expr, Stop> {
        let mut l = self.not()?;
        while self.is_op("&&") {
            self.next();
            let r = self.not()?;
            l = Expr::And(Box::new(l), Box::new(r));
        }
        Ok(l)
    }

    fn not(&mut self) -> Result<Expr, Stop> {
        if self.is_op("!") {
            self.next();
            let e = self.not()?;
            return Ok(Expr::Not(Box::new(e)));
        }
        self.rel()
    }

    fn rel(&mut self) -> Result<Expr, Stop> {
        let l = self.assign()?;
        for op in ["==", "!=", "<=", ">=", "<", ">"] {
            if self.is_op(op) {
                self.next();
                let r = self.assign()?;
                return Ok(Expr::Rel(op, Box::new(l), Box::new(r)));
            }
        }
        Ok(l)
    }

    fn assign(&mut self) -> Result<Expr, Stop> {
        let l = self.add()?;
        for op in ["=", "+=", "-=", "*=", "/=", "%=", "^="] {
            if self.is_op(op) {
                let Expr::Load(lv) = l else {
                    return Err(Stop::Syntax(self.line()));
                };
                self.next();
                let r = self.assign()?;
                return Ok(Expr::Assign(op, lv, Box::new(r)));
            }
        }
        Ok(l)
    }

    fn add(&mut self) -> Result<Expr, Stop> {
        let mut l = self.mul()?;
        loop {
            let op = if self.is_op("+") {
                "+"
            } else if self.is_op("-") {
                "-"
            } else {
                return Ok(l);
            };
            self.next();
            let r = self.mul()?;
            l = Expr::Bin(op, Box::new(l), Box::new(r));
        }
    }

    fn mul(&mut self) -> Result<Expr, Stop> {
        let mut l = self.pow()?;
        loop {
            let op = if self.is_op("*") {
                "*"
            } else if self.is_op("/") {
                "/"
            } else if self.is_op("%") {
                "%"
            } else {
                return Ok(l);
            };
            self.next();
            let r = self.pow()?;
            l = Expr::Bin(op, Box::new(l), Box::new(r));
        }
    }

    fn pow(&mut self) -> Result<Expr, Stop> {
        let l = self.unary()?;
        if self.is_op("^") {
            self.next();
            let r = self.pow()?;
            return Ok(Expr::Bin("^", Box::new(l), Box::new(r)));
        }
        Ok(l)
    }

    fn unary(&mut self) -> Result<Expr, Stop> {
        if self.is_op("-") {
            self.next();
            let e = self.unary()?;
            return Ok(Expr::Neg(Box::new(e)));
        }
        if self.is_op("++") || self.is_op("--") {
            let inc = self.is_op("++");
            self.next();
            let lv = self.lvalue()?;
            return Ok(Expr::PreInc(inc, lv));
        }
        let e = self.primary()?;
        if (self.is_op("++") || self.is_op("--"))
            && let Expr::Load(lv) = &e
        {
            let inc = self.is_op("++");
            self.next();
            return Ok(Expr::PostInc(inc, lv.clone()));
        }
        Ok(e)
    }

    fn lvalue(&mut self) -> Result<LValue, Stop> {
        match self.primary()? {
            Expr::Load(lv) => Ok(lv),
            _ => Err(Stop::Syntax(self.line())),
        }
    }

    fn primary(&mut self) -> Result<Expr, Stop> {
        match self.next() {
            Tok::Num(s) => Ok(Expr::Num(s)),
            Tok::Op("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Name(n) => match n.as_str() {
                "scale" if self.is_op("(") => {
                    self.next();
                    let e = self.expr()?;
                    self.expect(")")?;
                    Ok(Expr::ScaleOf(Box::new(e)))
                }
                "scale" => Ok(Expr::Load(LValue::Scale)),
                "ibase" => Ok(Expr::Load(LValue::Ibase)),
                "obase" => Ok(Expr::Load(LValue::Obase)),
                "last" => Ok(Expr::Load(LValue::Last)),
                "length" | "sqrt" => {
                    self.expect("(")?;
                    let e = self.expr()?;
                    self.expect(")")?;
                    Ok(if n == "length" {
                        Expr::Length(Box::new(e))
                    } else {
                        Expr::Sqrt(Box::new(e))
                    })
                }
                "quit" => Err(Stop::Quit),
                "if" | "else" | "while" | "for" | "break" | "continue" | "return" | "define"
                | "auto" | "halt" | "print" => {
                    self.pos -= 1;
                    Err(Stop::Syntax(self.line()))
                }
                _ => {
                    if self.is_op("(") {
                        self.next();
                        let mut args = Vec::new();
                        if !self.is_op(")") {
                            loop {
                                // `name[]` passes a whole array.
                                if let Tok::Name(a) = self.peek().clone()
                                    && matches!(
                                        self.toks.get(self.pos + 1),
                                        Some((Tok::Op("["), _))
                                    )
                                    && matches!(
                                        self.toks.get(self.pos + 2),
                                        Some((Tok::Op("]"), _))
                                    )
                                {
                                    self.pos += 3;
                                    args.push(Arg::Array(a));
                                } else {
                                    args.push(Arg::Value(self.expr()?));
                                }
                                if self.is_op(",") {
                                    self.next();
                                } else {
                                    break;
                                }
                            }
                        }
                        self.expect(")")?;
                        Ok(Expr::Call(n, args))
                    } else if self.is_op("[") {
                        self.next();
                        let i = self.expr()?;
                        self.expect("]")?;
                        Ok(Expr::Load(LValue::Elem(n, Box::new(i))))
                    } else {
                        Ok(Expr::Load(LValue::Var(n)))
                    }
                }
            },
            _ => {
                self.pos = self.pos.saturating_sub(1);
                Err(self.error())
            }
        }
    }
}

/// The value of a numeric constant read in `ibase`.
pub(crate) fn constant(s: &str, ibase: u32) -> Num {
    let val = |c: char| c.to_digit(36).unwrap_or(0);
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    // A single digit means its own value whatever the base.
    if frac.is_empty() && int.chars().count() == 1 && !s.contains('.') {
        return Num::int(i64::from(val(int.chars().next().unwrap_or('0'))));
    }
    if ibase == 10 {
        let digits: String = format!("{int}{frac}")
            .chars()
            .map(|c| char::from_digit(val(c).min(9), 10).unwrap_or('0'))
            .collect();
        let n = if digits.is_empty() {
            num_bigint::BigInt::from(0)
        } else {
            digits.parse().unwrap_or_default()
        };
        return Num {
            n,
            scale: frac.len(),
        };
    }
    let base = num_bigint::BigInt::from(ibase);
    let mut n = num_bigint::BigInt::from(0);
    for c in int.chars() {
        n = n * &base + val(c);
    }
    let mut v = Num { n, scale: 0 };
    if !frac.is_empty() {
        let scale = frac.len();
        let mut f = num_bigint::BigInt::from(0);
        let mut den = num_bigint::BigInt::from(1);
        for c in frac.chars() {
            f = f * &base + val(c);
            den *= &base;
        }
        let fnum = Num { n: f, scale: 0 };
        let dnum = Num { n: den, scale: 0 };
        if let Some(q) = fnum.div(&dnum, scale) {
            v = v.add(&q);
        }
    }
    v
}

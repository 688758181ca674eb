//! Evaluation of bash arithmetic (`$((…))`, `((…))`, `for ((…))`, `let`) over the AST
//! that brush-parser's arithmetic parser builds. 64-bit signed, wrapping like bash.

/// How deeply a variable's value may itself be evaluated as an expression
/// (`a=b; b=c; c=1; $((a))`): bash's own limit is about this size, and it stops `a=a` loops.
pub const MAX_ARITH_DEPTH: usize = 64;

/// Where arithmetic reads and writes variables.
pub trait ArithEnv {
    /// `&mut`: reading a variable bash computes (`RANDOM`) changes the shell.
    fn get_var(&mut self, name: &str) -> Option<String>;
    fn set_var(&mut self, name: &str, value: i64) -> Result<(), String>;
    fn get_elem(&self, name: &str, index: i64) -> Option<String>;
    fn set_elem(&mut self, name: &str, index: i64, value: i64) -> Result<(), String>;
    /// Whether `name` is an associative array, whose subscripts are keys, not numbers.
    fn is_assoc(&self, _name: &str) -> bool {
        false
    }
    fn get_key(&self, _name: &str, _key: &str) -> Option<String> {
        None
    }
    fn set_key(&mut self, name: &str, _key: &str, _value: i64) -> Result<(), String> {
        Err(format!("{name}: not an associative array"))
    }
    /// `set -u`: reading an unset variable is an error ([`UNBOUND`]).
    fn nounset(&self) -> bool {
        false
    }
}

/// The message of an assignment to a readonly variable (its `expr` is the name).
pub const READONLY: &str = "readonly variable";

/// How an arithmetic error about an unset variable under `set -u` ends.
pub const UNBOUND: &str = ": unbound variable";

/// An arithmetic error as bash words it: `EXPR: MESSAGE (error token is "TOKEN")`.
#[derive(Clone, Debug, PartialEq)]
pub struct ArithError {
    /// The expression that failed (a variable's value, when that is what failed).
    pub expr: String,
    pub message: String,
}

impl std::fmt::Display for ArithError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.expr, self.message)
    }
}

impl ArithError {
    /// The unset variable a `set -u` error is about.
    pub fn unbound(&self) -> Option<&str> {
        self.message
            .strip_suffix(UNBOUND)
            .filter(|_| self.expr.is_empty())
    }
}

/// Parses and evaluates `text` (already expanded), as bash's `evalexp`.
pub fn eval_str(env: &mut dyn ArithEnv, text: &str) -> Result<i64, ArithError> {
    eval_str_depth(env, text, 0, false)
}

fn eval_str_depth(
    env: &mut dyn ArithEnv,
    text: &str,
    depth: usize,
    noeval: bool,
) -> Result<i64, ArithError> {
    let expr = text.trim_start();
    if depth > MAX_ARITH_DEPTH {
        return Err(ArithError {
            expr: expr.to_string(),
            message: format!(
                "expression recursion level exceeded (error token is \"{}\")",
                expr.trim_end()
            ),
        });
    }
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(0);
    }
    if let Ok(n) = trimmed.parse::<i64>()
        && !trimmed.starts_with('0')
        && !trimmed.starts_with('+')
    {
        return Ok(n);
    }
    let nesting = nesting(trimmed);
    if nesting > super::parse::MAX_NESTING {
        return Err(ArithError {
            expr: expr.to_string(),
            message: format!(
                "expression recursion level exceeded (error token is \"{}\")",
                trimmed.chars().take(32).collect::<String>()
            ),
        });
    }
    // Evaluation recurses once per level: give it the stack for it.
    super::parse::with_stack(nesting, || {
        let mut p = Parser {
            env,
            src: expr.as_bytes(),
            pos: 0,
            tok: Tok::Eof,
            tok_start: 0,
            last: Tok::Eof,
            num: 0,
            lval: None,
            noeval: u32::from(noeval),
            depth,
        };
        p.run().map_err(|e| match e {
            Fail::Here(message) => ArithError {
                expr: expr.to_string(),
                message,
            },
            Fail::Inner(e) => e,
        })
    })
}

/// Why evaluation stopped: an error in this expression, or one already worded (in the
/// value of a variable it read).
enum Fail {
    Here(String),
    Inner(ArithError),
}

type Res<T> = Result<T, Fail>;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok {
    Eof,
    Num,
    Ident,
    LParen,
    RParen,
    Op(&'static str),
    /// `=` or `OP=`: the operator applied before assigning (`None` for `=`).
    Assign(Option<&'static str>),
}

/// Operators, longest first so that `<<=` is read before `<<` and `<`.
const OPS: [&str; 29] = [
    "<<=", ">>=", "**", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--", "+=", "-=",
    "*=", "/=", "%=", "&=", "^=", "|=", "+", "-", "*", "/", "%", "<", ">", "=",
];

/// The target of an assignment: a variable or an element, as written.
#[derive(Clone, Debug)]
struct LValue {
    name: String,
    sub: Option<String>,
    /// The subscript's value once evaluated: `a[i++] += 1` evaluates it once, for the read
    /// and the write.
    index: Option<i64>,
}

struct Parser<'a, 'e> {
    env: &'e mut dyn ArithEnv,
    src: &'a [u8],
    pos: usize,
    tok: Tok,
    /// Where the current token starts (bash's `lasttp`; not moved by the end of input).
    tok_start: usize,
    last: Tok,
    num: i64,
    /// The variable the last identifier token named.
    lval: Option<LValue>,
    /// Non-zero inside a branch that is parsed but not evaluated (`0 && x++`).
    noeval: u32,
    depth: usize,
}

impl Parser<'_, '_> {
    fn run(&mut self) -> Res<i64> {
        self.next()?;
        let v = self.comma()?;
        if self.tok != Tok::Eof {
            return Err(self.err("syntax error in expression"));
        }
        Ok(v)
    }

    fn err(&self, msg: &str) -> Fail {
        let token = String::from_utf8_lossy(&self.src[self.tok_start.min(self.src.len())..]);
        Fail::Here(format!("{msg} (error token is \"{token}\")"))
    }

    fn peek_char(&self) -> Option<u8> {
        let mut i = self.pos;
        while i < self.src.len() && self.src[i].is_ascii_whitespace() {
            i += 1;
        }
        self.src.get(i).copied()
    }

    /// Reads the next token (bash's `readtok`).
    fn next(&mut self) -> Res<()> {
        while self.pos < self.src.len() && self.src[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        self.last = self.tok;
        if self.pos >= self.src.len() {
            self.tok = Tok::Eof;
            return Ok(());
        }
        self.tok_start = self.pos;
        let c = self.src[self.pos];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = self.pos;
            while self.pos < self.src.len()
                && (self.src[self.pos].is_ascii_alphanumeric() || self.src[self.pos] == b'_')
            {
                self.pos += 1;
            }
            let name_end = self.pos;
            let mut sub = None;
            if self.src.get(self.pos) == Some(&b'[') {
                let open = self.pos + 1;
                let mut level = 1;
                let mut i = open;
                while i < self.src.len() {
                    match self.src[i] {
                        b'[' => level += 1,
                        b']' => {
                            level -= 1;
                            if level == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                if i >= self.src.len() {
                    return Err(self.err("bad array subscript"));
                }
                sub = Some(String::from_utf8_lossy(&self.src[open..i]).into_owned());
                self.pos = i + 1;
            }
            // Letters, digits and `_` only: always UTF-8.
            let name = std::str::from_utf8(&self.src[start..name_end]).unwrap_or_default();
            match &mut self.lval {
                // Reuses the last name's buffer: one allocation less per identifier.
                Some(l) => {
                    l.name.clear();
                    l.name.push_str(name);
                    l.sub = sub;
                    l.index = None;
                }
                None => {
                    self.lval = Some(LValue {
                        name: name.to_string(),
                        sub,
                        index: None,
                    })
                }
            }
            self.tok = Tok::Ident;
            return Ok(());
        }
        if c.is_ascii_digit() {
            let start = self.pos;
            while self.pos < self.src.len()
                && (self.src[self.pos].is_ascii_alphanumeric()
                    || matches!(self.src[self.pos], b'#' | b'@' | b'_'))
            {
                self.pos += 1;
            }
            let text = String::from_utf8_lossy(&self.src[start..self.pos]).into_owned();
            // bash reads a constant with the text cut after it: its errors show no more.
            self.num = parse_number(&text).map_err(|m| {
                let expr = String::from_utf8_lossy(&self.src[..self.pos]);
                Fail::Inner(ArithError {
                    expr: expr.trim_start().to_string(),
                    message: format!("{m} (error token is \"{text}\")"),
                })
            })?;
            self.tok = Tok::Num;
            return Ok(());
        }
        if c == b'(' || c == b')' {
            self.pos += 1;
            self.tok = if c == b'(' { Tok::LParen } else { Tok::RParen };
            return Ok(());
        }
        let rest = &self.src[self.pos..];
        for op in OPS {
            if rest.starts_with(op.as_bytes()) {
                // `++`/`--` only after a variable or before one; elsewhere they are two
                // signs (`5 -- 2` is 7), as bash reads them.
                if matches!(op, "++" | "--") && self.last != Tok::Ident {
                    let mut i = self.pos + 2;
                    while i < self.src.len() && self.src[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    if !self
                        .src
                        .get(i)
                        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
                    {
                        continue;
                    }
                }
                // `==` is not `=` then `=`.
                self.pos += op.len();
                self.tok = match op {
                    "=" => Tok::Assign(None),
                    "<<=" | ">>=" | "+=" | "-=" | "*=" | "/=" | "%=" | "&=" | "^=" | "|=" => {
                        Tok::Assign(Some(&op[..op.len() - 1]))
                    }
                    _ => Tok::Op(op),
                };
                return Ok(());
            }
        }
        let single: Option<&'static str> = match c {
            b'!' => Some("!"),
            b'~' => Some("~"),
            b'&' => Some("&"),
            b'|' => Some("|"),
            b'^' => Some("^"),
            b'?' => Some("?"),
            b':' => Some(":"),
            b',' => Some(","),
            _ => None,
        };
        match single {
            Some(op) => {
                self.pos += 1;
                self.tok = Tok::Op(op);
                Ok(())
            }
            // Where an operand should start, bash says that instead.
            None if matches!(self.last, Tok::Num | Tok::Ident | Tok::RParen) => {
                Err(self.err("syntax error: invalid arithmetic operator"))
            }
            None => Err(self.err("syntax error: operand expected")),
        }
    }

    fn is(&self, op: &str) -> bool {
        matches!(self.tok, Tok::Op(o) if o == op)
    }

    fn comma(&mut self) -> Res<i64> {
        let mut v = self.assign()?;
        while self.is(",") {
            self.next()?;
            v = self.assign()?;
        }
        Ok(v)
    }

    fn assign(&mut self) -> Res<i64> {
        let value = self.cond()?;
        let Tok::Assign(op) = self.tok else {
            return Ok(value);
        };
        if self.last != Tok::Ident {
            return Err(self.err("attempted assignment to non-variable"));
        }
        let target = self.lval.clone();
        self.next()?;
        let rhs = self.assign()?;
        let v = match op {
            None => rhs,
            Some(op) => self.binary(op, value, rhs)?,
        };
        if let Some(t) = target {
            self.write(&t, v)?;
        }
        Ok(v)
    }

    fn cond(&mut self) -> Res<i64> {
        let c = self.lor()?;
        if !self.is("?") {
            return Ok(c);
        }
        self.next()?;
        if self.tok == Tok::Eof || self.is(":") {
            return Err(self.err("expression expected"));
        }
        if c == 0 {
            self.noeval += 1;
        }
        let a = self.comma()?;
        if c == 0 {
            self.noeval -= 1;
        }
        if !self.is(":") {
            return Err(self.err("`:' expected for conditional expression"));
        }
        self.next()?;
        if self.tok == Tok::Eof {
            return Err(self.err("expression expected"));
        }
        if c != 0 {
            self.noeval += 1;
        }
        let b = self.cond()?;
        if c != 0 {
            self.noeval -= 1;
        }
        self.last = Tok::Num;
        Ok(if c != 0 { a } else { b })
    }

    fn lor(&mut self) -> Res<i64> {
        let mut v = self.land()?;
        while self.is("||") {
            self.next()?;
            let skip = v != 0;
            if skip {
                self.noeval += 1;
            }
            let r = self.land()?;
            if skip {
                self.noeval -= 1;
            }
            v = i64::from(v != 0 || r != 0);
            self.last = Tok::Num;
        }
        Ok(v)
    }

    fn land(&mut self) -> Res<i64> {
        let mut v = self.bor()?;
        while self.is("&&") {
            self.next()?;
            let skip = v == 0;
            if skip {
                self.noeval += 1;
            }
            let r = self.bor()?;
            if skip {
                self.noeval -= 1;
            }
            v = i64::from(v != 0 && r != 0);
            self.last = Tok::Num;
        }
        Ok(v)
    }

    /// One level of left-associative binary operators.
    fn level(&mut self, ops: &[&'static str], sub: fn(&mut Self) -> Res<i64>) -> Res<i64> {
        let mut v = sub(self)?;
        loop {
            let Some(op) = ops.iter().find(|o| self.is(o)).copied() else {
                return Ok(v);
            };
            self.next()?;
            let operand = self.tok_start;
            let r = sub(self)?;
            if r == 0 && matches!(op, "/" | "%") {
                // bash shows a division by 0 from the divisor on (`0+3` in `1/0+3`).
                self.tok_start = operand;
            }
            v = self.binary(op, v, r)?;
            self.last = Tok::Num;
        }
    }

    fn bor(&mut self) -> Res<i64> {
        self.level(&["|"], Self::bxor)
    }
    fn bxor(&mut self) -> Res<i64> {
        self.level(&["^"], Self::band)
    }
    fn band(&mut self) -> Res<i64> {
        self.level(&["&"], Self::equality)
    }
    fn equality(&mut self) -> Res<i64> {
        self.level(&["==", "!="], Self::compare)
    }
    fn compare(&mut self) -> Res<i64> {
        self.level(&["<=", ">=", "<", ">"], Self::shift)
    }
    fn shift(&mut self) -> Res<i64> {
        self.level(&["<<", ">>"], Self::additive)
    }
    fn additive(&mut self) -> Res<i64> {
        self.level(&["+", "-"], Self::multiplicative)
    }
    fn multiplicative(&mut self) -> Res<i64> {
        self.level(&["*", "/", "%"], Self::power)
    }

    fn power(&mut self) -> Res<i64> {
        let base = self.unary()?;
        if !self.is("**") {
            return Ok(base);
        }
        self.next()?;
        let exp = self.power()?;
        self.last = Tok::Num;
        self.binary("**", base, exp)
    }

    fn unary(&mut self) -> Res<i64> {
        let op = match self.tok {
            Tok::Op(op @ ("!" | "~" | "-" | "+" | "++" | "--")) => op,
            _ => return self.primary(),
        };
        if matches!(op, "++" | "--") && self.peek_is_name() {
            self.next()?;
            let old = self.primary_value()?;
            let t = self.lval.clone();
            let v = if op == "++" {
                old.wrapping_add(1)
            } else {
                old.wrapping_sub(1)
            };
            if let Some(t) = t {
                self.write(&t, v)?;
            }
            self.next()?;
            // `++x++`: what the prefix operator gives is a value, which cannot be stepped
            // (bash has stepped the variable once by then).
            if let Tok::Op(post @ ("++" | "--")) = self.tok {
                return Err(self.err(&format!("{post}: assignment requires lvalue")));
            }
            self.last = Tok::Num;
            return Ok(v);
        }
        self.next()?;
        let v = self.unary()?;
        self.last = Tok::Num;
        Ok(match op {
            "!" => i64::from(v == 0),
            "~" => !v,
            "-" => v.wrapping_neg(),
            "--" => v,
            _ => v,
        })
    }

    fn peek_is_name(&self) -> bool {
        self.peek_char()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
    }

    fn primary(&mut self) -> Res<i64> {
        match self.tok {
            Tok::Num => {
                let v = self.num;
                self.next()?;
                Ok(v)
            }
            Tok::LParen => {
                self.next()?;
                let v = self.comma()?;
                if self.tok != Tok::RParen {
                    return Err(self.err("missing `)'"));
                }
                self.next()?;
                self.last = Tok::Num;
                Ok(v)
            }
            Tok::Ident => {
                // An assignment does not read the variable (no `set -u` error for it).
                let assigning = self.assignment_follows();
                let v = if assigning { 0 } else { self.primary_value()? };
                self.next()?;
                // An operator token leaves `lval` alone: after `x++` it still names `x`.
                let postfix = matches!(self.tok, Tok::Op("++" | "--"));
                if let (Tok::Op(op @ ("++" | "--")), Some(t)) =
                    (self.tok, if postfix { self.lval.clone() } else { None })
                {
                    let nv = if op == "++" {
                        v.wrapping_add(1)
                    } else {
                        v.wrapping_sub(1)
                    };
                    self.write(&t, nv)?;
                    self.next()?;
                    self.last = Tok::Num;
                    return Ok(v);
                }
                Ok(v)
            }
            _ => Err(self.err("syntax error: operand expected")),
        }
    }

    /// Whether a plain `=` follows the identifier just read.
    fn assignment_follows(&self) -> bool {
        let mut i = self.pos;
        while i < self.src.len() && self.src[i].is_ascii_whitespace() {
            i += 1;
        }
        self.src.get(i) == Some(&b'=') && self.src.get(i + 1) != Some(&b'=')
    }

    /// The value of the variable the current identifier token names.
    fn primary_value(&mut self) -> Res<i64> {
        if self.noeval > 0 {
            return Ok(0);
        }
        let Some(mut t) = self.lval.take() else {
            return Ok(0);
        };
        let r = self.read_value(&mut t);
        // Put back for a following `++`, `--` or assignment.
        self.lval = Some(t);
        r
    }

    /// The value of variable (or element) `t`, evaluated.
    fn read_value(&mut self, t: &mut LValue) -> Res<i64> {
        let raw = match &t.sub {
            None => self.env.get_var(&t.name),
            Some(sub) if self.env.is_assoc(&t.name) => self.env.get_key(&t.name, sub.trim()),
            Some(sub) => {
                let i =
                    eval_str_depth(self.env, sub, self.depth + 1, false).map_err(Fail::Inner)?;
                t.index = Some(i);
                self.env.get_elem(&t.name, i)
            }
        };
        match raw {
            None if self.env.nounset() => Err(Fail::Inner(ArithError {
                expr: String::new(),
                message: format!("{}{UNBOUND}", t.name),
            })),
            None => Ok(0),
            Some(v) => eval_str_depth(self.env, &v, self.depth + 1, false).map_err(Fail::Inner),
        }
    }

    fn write(&mut self, t: &LValue, v: i64) -> Res<()> {
        if self.noeval > 0 {
            return Ok(());
        }
        let r = match &t.sub {
            None => self.env.set_var(&t.name, v),
            Some(sub) if self.env.is_assoc(&t.name) => self.env.set_key(&t.name, sub.trim(), v),
            Some(sub) => {
                let i = match t.index {
                    Some(i) => i,
                    None => {
                        eval_str_depth(self.env, sub, self.depth + 1, false).map_err(Fail::Inner)?
                    }
                };
                self.env.set_elem(&t.name, i, v)
            }
        };
        r.map_err(|m| {
            Fail::Inner(ArithError {
                expr: t.name.clone(),
                message: m
                    .strip_prefix(&format!("{}: ", t.name))
                    .unwrap_or(&m)
                    .to_string(),
            })
        })
    }

    fn binary(&self, op: &str, a: i64, b: i64) -> Res<i64> {
        Ok(match op {
            "**" => {
                if b < 0 {
                    return Err(self.err("exponent less than 0"));
                }
                pow_wrapping(a, b)
            }
            "*" => a.wrapping_mul(b),
            "/" | "%" if b == 0 => {
                if self.noeval > 0 {
                    return Ok(0);
                }
                return Err(self.err("division by 0"));
            }
            "/" => a.wrapping_div(b),
            "%" => a.wrapping_rem(b),
            "+" => a.wrapping_add(b),
            "-" => a.wrapping_sub(b),
            "<<" => a.wrapping_shl((b & 63) as u32),
            ">>" => a.wrapping_shr((b & 63) as u32),
            "<" => i64::from(a < b),
            "<=" => i64::from(a <= b),
            ">" => i64::from(a > b),
            ">=" => i64::from(a >= b),
            "==" => i64::from(a == b),
            "!=" => i64::from(a != b),
            "&" => a & b,
            "^" => a ^ b,
            "|" => a | b,
            _ => return Err(self.err("syntax error: invalid arithmetic operator")),
        })
    }
}

/// A numeric constant as bash reads it: decimal, `0x` hex, `0` octal, `BASE#DIGITS` (the
/// base itself in decimal); too many digits wrap like bash's accumulator.
fn parse_number(text: &str) -> Result<i64, &'static str> {
    let mut rest = text;
    let mut base: i64 = 10;
    let mut found_base = false;
    if let Some(r) = rest.strip_prefix('0') {
        if r.is_empty() {
            return Ok(0);
        }
        found_base = true;
        match r.strip_prefix('x').or_else(|| r.strip_prefix('X')) {
            Some(h) => {
                base = 16;
                rest = h;
            }
            None => {
                base = 8;
                rest = r;
            }
        }
    }
    let mut v: i64 = 0;
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '#' {
            if found_base {
                return Err("invalid number");
            }
            if !(2..=64).contains(&v) {
                return Err("invalid arithmetic base");
            }
            base = v;
            v = 0;
            found_base = true;
            if !chars
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '@'))
            {
                return Err("invalid integer constant");
            }
            continue;
        }
        let d = match c {
            '0'..='9' => c as i64 - '0' as i64,
            'a'..='z' => c as i64 - 'a' as i64 + 10,
            'A'..='Z' if base > 36 => c as i64 - 'A' as i64 + 36,
            'A'..='Z' => c as i64 - 'A' as i64 + 10,
            '@' => 62,
            '_' => 63,
            _ => break,
        };
        if d >= base {
            return Err("value too great for base");
        }
        v = v.wrapping_mul(base).wrapping_add(d);
    }
    Ok(v)
}

fn pow_wrapping(mut base: i64, mut exp: i64) -> i64 {
    let mut r: i64 = 1;
    while exp > 0 {
        if exp & 1 == 1 {
            r = r.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exp >>= 1;
    }
    r
}

/// How deep an expression nests, over-counted: parentheses, runs of unary operators
/// (`- - ! ~x`), and the right-leaning chains of `?:` and assignments.
fn nesting(text: &str) -> usize {
    let (mut parens, mut unary, mut chains, mut max) = (0usize, 0usize, 0usize, 0usize);
    let mut after_operand = false;
    let bytes = text.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b' ' | b'\t' | b'\n' => continue,
            b'(' => {
                parens += 1;
                after_operand = false;
            }
            b')' => {
                parens = parens.saturating_sub(1);
                after_operand = true;
            }
            b'-' | b'+' | b'!' | b'~' if !after_operand => unary += 1,
            b'?' => {
                chains += 1;
                after_operand = false;
            }
            b'=' if !matches!(bytes.get(i + 1), Some(b'='))
                && !matches!(
                    i.checked_sub(1).map(|p| bytes[p]),
                    Some(b'=' | b'!' | b'<' | b'>')
                ) =>
            {
                chains += 1;
                after_operand = false;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' => {
                after_operand = true;
                unary = 0;
            }
            _ => after_operand = false,
        }
        max = max.max(parens + unary + chains);
    }
    max
}

#[cfg(test)]
mod nesting_tests {
    use super::*;

    #[test]
    fn nesting_is_over_counted_never_under() {
        assert_eq!(nesting("1 + 2 * 3"), 0);
        assert_eq!(nesting("((1))"), 2);
        assert_eq!(nesting("- - -x"), 3);
        assert_eq!(nesting("a ? b : c ? d : e"), 2);
        assert_eq!(nesting("a = b == c"), 1);
        assert!(nesting(&"-".repeat(100_000)) > super::super::parse::MAX_NESTING);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(Default)]
    struct Env(HashMap<String, String>);

    impl ArithEnv for Env {
        fn get_var(&mut self, name: &str) -> Option<String> {
            self.0.get(name).cloned()
        }
        fn set_var(&mut self, name: &str, value: i64) -> Result<(), String> {
            self.0.insert(name.to_string(), value.to_string());
            Ok(())
        }
        fn get_elem(&self, name: &str, index: i64) -> Option<String> {
            self.0.get(&format!("{name}[{index}]")).cloned()
        }
        fn set_elem(&mut self, name: &str, index: i64, value: i64) -> Result<(), String> {
            self.0.insert(format!("{name}[{index}]"), value.to_string());
            Ok(())
        }
    }

    fn ev(s: &str) -> Result<i64, String> {
        eval_str(&mut Env::default(), s).map_err(|e| e.to_string())
    }

    #[test]
    fn operators() {
        assert_eq!(ev("1 + 2 * 3"), Ok(7));
        assert_eq!(ev("(1 + 2) * 3"), Ok(9));
        assert_eq!(ev("2 ** 10"), Ok(1024));
        assert_eq!(ev("7 / 2"), Ok(3));
        assert_eq!(ev("-7 % 3"), Ok(-1));
        assert_eq!(ev("1 << 4 | 1"), Ok(17));
        assert_eq!(ev("3 > 2 && 2 > 1"), Ok(1));
        assert_eq!(ev("0 || 0"), Ok(0));
        assert_eq!(ev("1 ? 5 : 6"), Ok(5));
        assert_eq!(ev("0x1f + 010 + 2#101"), Ok(31 + 8 + 5));
        assert_eq!(ev("!5"), Ok(0));
        assert_eq!(ev("~0"), Ok(-1));
        assert_eq!(ev(""), Ok(0));
    }

    /// Wordings observed from bash 5.2.15.
    #[test]
    fn errors_name_the_token_like_bash() {
        assert_eq!(
            ev("1 / 0 ").unwrap_err(),
            "1 / 0 : division by 0 (error token is \"0 \")"
        );
        assert_eq!(
            ev("1 + ").unwrap_err(),
            "1 + : syntax error: operand expected (error token is \"+ \")"
        );
        assert_eq!(
            ev("2#102").unwrap_err(),
            "2#102: value too great for base (error token is \"2#102\")"
        );
        assert_eq!(
            ev("1 = 2").unwrap_err(),
            "1 = 2: attempted assignment to non-variable (error token is \"= 2\")"
        );
        assert_eq!(
            ev("1 2").unwrap_err(),
            "1 2: syntax error in expression (error token is \"2\")"
        );
        assert_eq!(ev("++5"), Ok(5));
        assert_eq!(ev("99999999999999999999"), Ok(7766279631452241919));
        assert_eq!(ev("0 ? 1/0 : 2"), Ok(2));
        assert_eq!(ev("64#_ + 36#z + 37#A"), Ok(63 + 35 + 36));
    }

    #[test]
    fn errors() {
        assert!(ev("1/0").unwrap_err().contains("division by 0"));
        assert!(ev("1%0").is_err());
        assert!(ev("1 +").is_err());
    }

    #[test]
    fn variables_and_assignment() {
        let mut env = Env::default();
        env.0.insert("x".into(), "5".into());
        env.0.insert("e".into(), "x*2".into());
        assert_eq!(eval_str(&mut env, "x++ + ++x"), Ok(5 + 7));
        assert_eq!(env.0["x"], "7");
        assert_eq!(eval_str(&mut env, "y = x += 3"), Ok(10));
        assert_eq!(env.0["y"], "10");
        assert_eq!(eval_str(&mut env, "e + 1"), Ok(21));
        assert_eq!(eval_str(&mut env, "unset_var + 1"), Ok(1));
        assert_eq!(eval_str(&mut env, "0 && (z = 1)"), Ok(0));
        assert!(!env.0.contains_key("z"));
        env.0.insert("loop".into(), "loop".into());
        assert!(eval_str(&mut env, "loop").is_err());
    }
}

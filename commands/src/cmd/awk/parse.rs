//! The awk parser: tokens to a program whose names are already resolved to slots
//! (global, function-local) and whose regex literals are numbered, so the interpreter
//! never looks a name up while running.

use std::collections::HashMap;

use super::lex::{Tok, Token};
use super::value::Value;

/// Fixed global slots of the special variables, in this order.
pub const SPECIALS: &[&str] = &[
    "NF",
    "NR",
    "FNR",
    "FS",
    "OFS",
    "ORS",
    "RS",
    "SUBSEP",
    "CONVFMT",
    "OFMT",
    "RSTART",
    "RLENGTH",
    "FILENAME",
    "ENVIRON",
    "ARGC",
    "ARGV",
    "IGNORECASE",
    "RT",
    "PROCINFO",
    "FPAT",
    "FIELDWIDTHS",
    "ERRNO",
];
/// gawk's predefined variables that are arrays (the others are scalars).
pub const SPECIAL_ARRAYS: &[&str] = &["ARGV", "ENVIRON", "FUNCTAB", "PROCINFO", "SYMTAB"];

/// gawk's predefined scalars.
pub const SPECIAL_SCALARS: &[&str] = &[
    "ARGC",
    "ARGIND",
    "BINMODE",
    "CONVFMT",
    "ERRNO",
    "FIELDWIDTHS",
    "FILENAME",
    "FNR",
    "FPAT",
    "FS",
    "IGNORECASE",
    "LINT",
    "NF",
    "NR",
    "OFMT",
    "OFS",
    "ORS",
    "PREC",
    "RLENGTH",
    "ROUNDMODE",
    "RS",
    "RSTART",
    "RT",
    "SUBSEP",
    "TEXTDOMAIN",
];

pub const V_NF: usize = 0;
pub const V_NR: usize = 1;
pub const V_FNR: usize = 2;
pub const V_FS: usize = 3;
pub const V_OFS: usize = 4;
pub const V_ORS: usize = 5;
pub const V_RS: usize = 6;
pub const V_SUBSEP: usize = 7;
pub const V_CONVFMT: usize = 8;
pub const V_OFMT: usize = 9;
pub const V_RSTART: usize = 10;
pub const V_RLENGTH: usize = 11;
pub const V_FILENAME: usize = 12;
pub const V_ENVIRON: usize = 13;
pub const V_ARGC: usize = 14;
pub const V_ARGV: usize = 15;
pub const V_IGNORECASE: usize = 16;
pub const V_RT: usize = 17;
pub const V_PROCINFO: usize = 18;
pub const V_FPAT: usize = 19;
pub const V_FIELDWIDTHS: usize = 20;
pub const V_ERRNO: usize = 21;

/// Deepest nesting of expressions and statements the parser accepts (its recursion).
const MAX_NESTING: usize = 500;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Var {
    Global(usize),
    Local(usize),
}

/// An array: a variable, or (gawk's arrays of arrays) the subarray reached from one
/// through `path`, a subscript list per level (`a[1][2]` has the path `[1]` to the array
/// whose element `[2]` it names).
#[derive(Debug)]
pub struct ArrayPath {
    pub var: Var,
    pub path: Vec<Vec<Expr>>,
}

#[derive(Debug)]
pub enum LValue {
    Var(Var),
    Field(Box<Expr>),
    Elem(ArrayPath, Vec<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Eq,
    Ne,
    Ge,
    Gt,
}

#[derive(Debug)]
pub enum GetSrc {
    Main,
    File(Box<Expr>),
    Cmd(Box<Expr>),
    /// `cmd |& getline`: the output of a two-way coprocess.
    Coproc(Box<Expr>),
}

#[derive(Debug)]
pub enum Expr {
    Const(Value),
    /// A regex literal; as a value, whether it matches `$0`.
    Regex(usize),
    Lv(LValue),
    Assign(Box<LValue>, Box<Expr>),
    AugAssign(Arith, Box<LValue>, Box<Expr>),
    IncDec {
        lv: Box<LValue>,
        delta: f64,
        prefix: bool,
    },
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Arith(Arith, Box<Expr>, Box<Expr>),
    Neg(Box<Expr>),
    Plus(Box<Expr>),
    Cmp(Cmp, Box<Expr>, Box<Expr>),
    /// `lhs ~ rhs` (negated for `!~`).
    Match(bool, Box<Expr>, Box<Expr>),
    Concat(Box<Expr>, Box<Expr>),
    In(Vec<Expr>, ArrayPath),
    Group(Box<Expr>),
    /// `(a, b)`: only valid before `in` or as print's argument list.
    List(Vec<Expr>),
    Call(usize, Vec<Expr>),
    /// gawk's `@var(args)`: calls the function (or builtin) named by var's value.
    Indirect(Var, Vec<Expr>),
    Builtin(&'static str, Vec<Expr>),
    Getline(GetSrc, Option<Box<LValue>>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redir {
    File,
    Append,
    Pipe,
    /// `print |& cmd`: the input of a two-way coprocess.
    Coproc,
}

#[derive(Debug)]
pub enum Stmt {
    /// The source line the statements after it come from (for messages).
    Line(usize),
    Expr(Expr),
    Print(Vec<Expr>, Option<(Redir, Expr)>),
    Printf(Vec<Expr>, Option<(Redir, Expr)>),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    While(Expr, Box<Stmt>),
    Do(Box<Stmt>, Expr),
    For(
        Option<Box<Stmt>>,
        Option<Expr>,
        Option<Box<Stmt>>,
        Box<Stmt>,
    ),
    ForIn(Var, ArrayPath, Box<Stmt>),
    Block(Vec<Stmt>),
    Next,
    NextFile,
    Exit(Option<Expr>),
    Return(Option<Expr>),
    Break,
    Continue,
    Delete(ArrayPath, Option<Vec<Expr>>),
    /// gawk's `switch`: the subject, then each `case` (or `default`, `None`) with the
    /// statements up to the next label (control falls through to them).
    Switch(Expr, Vec<(Option<CaseLabel>, Vec<Stmt>)>),
}

/// A `case` label: a constant or a regex literal.
#[derive(Debug)]
pub enum CaseLabel {
    Value(Value),
    Regex(usize),
}

#[derive(Debug)]
pub enum Pattern {
    All,
    Expr(Expr),
    Range(Expr, Expr),
}

#[derive(Debug)]
pub struct Rule {
    pub pattern: Pattern,
    /// `None`: print the record.
    pub action: Option<Vec<Stmt>>,
}

#[derive(Debug, Default)]
pub struct Func {
    pub name: String,
    pub nparams: usize,
    /// The parameters' names (for messages).
    pub params: Vec<String>,
    pub body: Vec<Stmt>,
    /// Which parameters the body uses as arrays (so an untyped caller variable becomes one).
    pub array_params: Vec<bool>,
    pub defined: bool,
    /// Where it is first called (for the error when it is never defined).
    pub first_call_line: usize,
}

#[derive(Debug, Default)]
pub struct Program {
    pub begin: Vec<Stmt>,
    pub end: Vec<Stmt>,
    pub beginfile: Vec<Stmt>,
    pub endfile: Vec<Stmt>,
    pub rules: Vec<Rule>,
    pub funcs: Vec<Func>,
    pub globals: Vec<String>,
    pub regexes: Vec<String>,
    /// The source line of each regex literal (for its compile error).
    pub regex_lines: Vec<usize>,
    /// Whether any rule reads input (else, with only BEGIN, input is not read).
    pub has_main: bool,
    /// Parse-time warnings: (line, text, whether it is a `--lint` one, which
    /// `--lint=fatal` makes fatal). Line 0: a warning gawk gives without a location.
    pub warnings: Vec<(usize, String, bool)>,
}

/// A syntax error: message and the token it was found at.
#[derive(Debug)]
pub struct ParseError {
    pub msg: String,
    /// The error's line; 0 for a bare message (no source line, no `error:`) whose line is
    /// in `pos`.
    pub line: usize,
    pub pos: usize,
    /// Found at a newline: gawk names the next line (it has read the newline).
    pub at_newline: bool,
    /// gawk's `error:` form without the source line, printed this many times (gawk
    /// reports some twice); 0 for the usual caret form.
    pub plain: usize,
}

struct Parser<'a> {
    toks: &'a [Token],
    i: usize,
    prog: Program,
    globals: HashMap<String, usize>,
    funcs: HashMap<String, usize>,
    /// Parameters of the function being parsed.
    locals: Option<HashMap<String, usize>>,
    cur_func: Option<usize>,
    /// Calls passing a bare local: (caller, local, callee, arg position).
    passes: Vec<(usize, usize, usize, usize)>,
    /// While parsing print's arguments outside parentheses `>` redirects.
    no_gt: bool,
    /// While parsing `for (` init, `in` is not an operator (for-in detection).
    no_in: bool,
    depth: usize,
    in_loop: usize,
    in_switch: usize,
    /// The special rule being parsed (`BEGIN`, `END`, …), for `next`'s checks.
    section: &'static str,
    /// `--lint`: parse-time warnings go to the program's warnings.
    lint: bool,
    /// Whether `--lint` warns of gawk extensions (not under `--lint=no-ext`).
    lint_ext: bool,
    /// The line each global name is first used on.
    first_use: HashMap<usize, usize>,
}

type PResult<T> = Result<T, ParseError>;

/// The argument counts gawk's grammar accepts for a builtin (checked while parsing).
fn builtin_arity(name: &str) -> Option<(usize, usize)> {
    Some(match name {
        "length" | "srand" | "fflush" => (0, 1),
        "substr" | "sub" | "gsub" | "match" => (2, 3),
        "index" | "atan2" | "lshift" | "rshift" => (2, 2),
        "split" | "patsplit" => (2, 4),
        "gensub" => (3, 4),
        "sin" | "cos" | "exp" | "log" | "sqrt" | "int" | "tolower" | "toupper" | "system"
        | "compl" | "strtonum" | "isarray" | "mkbool" => (1, 1),
        "typeof" | "close" | "mktime" => (1, 2),
        "rand" | "systime" => (0, 0),
        "strftime" => (0, 3),
        "asort" | "asorti" | "dcgettext" => (1, 3),
        "bindtextdomain" => (1, 2),
        "dcngettext" => (3, 5),
        "ord" | "chr" | "readfile" => (1, 1),
        _ => return None,
    })
}

/// Whether gawk folds `e` to a constant while parsing: constants and operators over them.
fn folds(e: &Expr) -> bool {
    match e {
        Expr::Const(_) => true,
        Expr::Concat(a, b) | Expr::Arith(_, a, b) => folds(a) && folds(b),
        Expr::Neg(a) | Expr::Plus(a) => folds(a),
        _ => false,
    }
}

#[cfg(test)]
pub fn parse(toks: &[Token]) -> PResult<Program> {
    parse_lint_ext(toks, false, false)
}

/// Whether an expression statement computes a value and nothing else (`--lint`'s
/// "statement has no effect"): operators over constants and variables, with no call,
/// assignment, `getline`, conditional or parenthesis in it.
fn no_effect(e: &Expr) -> bool {
    match e {
        Expr::Const(_) | Expr::Regex(_) => true,
        Expr::Lv(LValue::Var(_)) => true,
        Expr::Lv(LValue::Field(i)) => no_effect(i),
        Expr::Lv(LValue::Elem(p, subs)) => {
            p.path.iter().flatten().all(no_effect) && subs.iter().all(no_effect)
        }
        Expr::And(a, b)
        | Expr::Or(a, b)
        | Expr::Arith(_, a, b)
        | Expr::Cmp(_, a, b)
        | Expr::Match(_, a, b)
        | Expr::Concat(a, b) => no_effect(a) && no_effect(b),
        Expr::Not(a) | Expr::Neg(a) | Expr::Plus(a) => no_effect(a),
        Expr::In(subs, p) => subs.iter().all(no_effect) && p.path.iter().flatten().all(no_effect),
        _ => false,
    }
}

/// Parses with `--lint`'s parse-time warnings (`lint`) or without.
/// Parses with `--lint` on or off, and its warnings about gawk extensions on or off
/// (`--lint=no-ext`).
pub fn parse_lint_ext(toks: &[Token], lint: bool, lint_ext: bool) -> PResult<Program> {
    let mut p = Parser {
        lint,
        lint_ext,
        toks,
        i: 0,
        prog: Program::default(),
        globals: HashMap::new(),
        funcs: HashMap::new(),
        locals: None,
        cur_func: None,
        passes: Vec::new(),
        no_gt: false,
        no_in: false,
        depth: 0,
        in_loop: 0,
        in_switch: 0,
        section: "",
        first_use: HashMap::new(),
    };
    for name in SPECIALS {
        p.global(name);
    }
    p.program()?;
    // A function's name used as a variable.
    for f in &p.prog.funcs {
        if let Some(&g) = p.globals.get(&f.name)
            && f.defined
        {
            let line = p.first_use.get(&g).copied().unwrap_or(1);
            return Err(ParseError {
                msg: format!(
                    "function `{}' called with space between name and `(',\nor used as a variable or an array",
                    f.name
                ),
                line,
                pos: 0,
                at_newline: false,
                plain: 1,
            });
        }
    }
    // A call to a function never defined is fatal only when it runs, as in gawk.
    // Array-ness flows through calls that pass a parameter on.
    loop {
        let mut changed = false;
        for &(caller, local, callee, pos) in &p.passes {
            let callee_arr = p.prog.funcs[callee]
                .array_params
                .get(pos)
                .copied()
                .unwrap_or(false);
            if callee_arr && !p.prog.funcs[caller].array_params[local] {
                p.prog.funcs[caller].array_params[local] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if lint {
        // Line 0: a warning gawk gives without a location.
        for f in &p.prog.funcs {
            if f.defined && f.first_call_line == 0 {
                let w = format!("function `{}' defined but never called directly", f.name);
                p.prog.warnings.push((0, w, true));
            }
        }
    }
    Ok(p.prog)
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.i.min(self.toks.len() - 1)].tok
    }
    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.i + n).min(self.toks.len() - 1)].tok
    }
    fn advance(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.i < self.toks.len() - 1 {
            self.i += 1;
        }
        t
    }
    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }
    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Kw(k) if *k == kw)
    }
    fn eat_op(&mut self, op: &str) -> bool {
        if self.is_op(op) {
            self.advance();
            true
        } else {
            false
        }
    }
    fn error(&self) -> ParseError {
        let t = &self.toks[self.i.min(self.toks.len() - 1)];
        let msg = match t.tok {
            Tok::Newline | Tok::Eof => "unexpected newline or end of string",
            _ => "syntax error",
        };
        ParseError {
            msg: msg.into(),
            line: t.line,
            // The caret goes under the token's first character, or just past the text.
            pos: match t.tok {
                Tok::Eof => t.end + 1,
                Tok::Newline => t.end,
                _ => t.start + 1,
            },
            at_newline: t.tok == Tok::Newline,
            plain: 0,
        }
    }
    /// gawk's `error:` form (no source line) at the current token's line.
    fn plain_error(&self, msg: String, times: usize) -> ParseError {
        let t = &self.toks[self.i.min(self.toks.len() - 1)];
        ParseError {
            msg,
            line: t.line,
            pos: t.end,
            at_newline: false,
            plain: times,
        }
    }

    fn expect_op(&mut self, op: &str) -> PResult<()> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(self.error())
        }
    }
    fn opt_nl(&mut self) {
        while matches!(self.peek(), Tok::Newline) {
            self.advance();
        }
    }
    fn skip_terms(&mut self) {
        while matches!(self.peek(), Tok::Newline) || self.is_op(";") {
            self.advance();
        }
    }
    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(ParseError {
                msg: "program nests too deeply".into(),
                line: self.toks[self.i.min(self.toks.len() - 1)].line,
                pos: self.toks[self.i.min(self.toks.len() - 1)].end,
                at_newline: false,
                plain: 0,
            });
        }
        Ok(())
    }

    fn global(&mut self, name: &str) -> usize {
        if let Some(&i) = self.globals.get(name) {
            return i;
        }
        let line = self.toks[self.i.min(self.toks.len() - 1)].line;
        self.first_use.insert(self.prog.globals.len(), line);
        let i = self.prog.globals.len();
        self.prog.globals.push(name.to_string());
        self.globals.insert(name.to_string(), i);
        i
    }
    fn var(&mut self, name: &str) -> Var {
        if let Some(l) = &self.locals
            && let Some(&i) = l.get(name)
        {
            return Var::Local(i);
        }
        Var::Global(self.global(name))
    }
    fn func(&mut self, name: &str) -> usize {
        if let Some(&i) = self.funcs.get(name) {
            return i;
        }
        let i = self.prog.funcs.len();
        self.prog.funcs.push(Func {
            name: name.to_string(),
            ..Func::default()
        });
        self.funcs.insert(name.to_string(), i);
        i
    }
    /// Notes that `v` is used as an array (for parameters).
    fn array_use(&mut self, v: Var) {
        if let (Var::Local(i), Some(f)) = (v, self.cur_func)
            && let Some(slot) = self.prog.funcs[f].array_params.get_mut(i)
        {
            *slot = true;
        }
    }
    fn regex(&mut self, r: String) -> usize {
        let line = self.toks[self.i.saturating_sub(1)].line;
        self.prog.regexes.push(r);
        self.prog.regex_lines.push(line);
        self.prog.regexes.len() - 1
    }

    fn program(&mut self) -> PResult<()> {
        self.rule_terms(false)?;
        while !matches!(self.peek(), Tok::Eof) {
            self.item()?;
            let ended = self.i > 0 && matches!(&self.toks[self.i - 1].tok, Tok::Op(";"));
            self.rule_terms(!ended)?;
        }
        Ok(())
    }

    /// Newlines between rules, and one `;` ending the rule just read (`may_end`): any
    /// other `;` stands for a rule with neither pattern nor action, which gawk refuses.
    fn rule_terms(&mut self, mut may_end: bool) -> PResult<()> {
        loop {
            if matches!(self.peek(), Tok::Newline) {
                self.advance();
            } else if self.is_op(";") {
                if !may_end {
                    let line = self.toks[self.i.min(self.toks.len() - 1)].line;
                    return Err(ParseError {
                        msg: "each rule must have a pattern or an action part".into(),
                        line: 0,
                        pos: line,
                        at_newline: false,
                        plain: 0,
                    });
                }
                may_end = false;
                self.advance();
            } else {
                return Ok(());
            }
        }
    }

    fn item(&mut self) -> PResult<()> {
        match self.peek().clone() {
            Tok::Kw("function") => self.function(),
            Tok::Kw(k @ ("BEGIN" | "END" | "BEGINFILE" | "ENDFILE")) => {
                let kw_line = self.toks[self.i.min(self.toks.len() - 1)].line;
                self.advance();
                if !self.is_op("{") {
                    // gawk names the next line when it has read the newline.
                    let line = if *self.peek() == Tok::Newline {
                        kw_line + 1
                    } else {
                        kw_line
                    };
                    return Err(ParseError {
                        msg: format!("{k} blocks must have an action part"),
                        line: 0,
                        pos: line,
                        at_newline: false,
                        plain: 0,
                    });
                }
                self.section = k;
                let body = self.block();
                self.section = "";
                let body = body?;
                match k {
                    "BEGIN" => self.prog.begin.extend(body),
                    "END" => {
                        self.prog.has_main = true;
                        self.prog.end.extend(body)
                    }
                    "BEGINFILE" => {
                        self.prog.has_main = true;
                        self.prog.beginfile.extend(body)
                    }
                    _ => {
                        self.prog.has_main = true;
                        self.prog.endfile.extend(body)
                    }
                }
                Ok(())
            }
            _ => {
                self.prog.has_main = true;
                let pattern = if self.is_op("{") {
                    Pattern::All
                } else {
                    let a = self.expr()?;
                    if self.eat_op(",") {
                        self.opt_nl();
                        let b = self.expr()?;
                        Pattern::Range(a, b)
                    } else {
                        Pattern::Expr(a)
                    }
                };
                let action = if self.is_op("{") {
                    Some(self.block()?)
                } else {
                    match self.peek() {
                        Tok::Newline | Tok::Eof => {}
                        _ if self.is_op(";") => {}
                        _ => return Err(self.error()),
                    }
                    None
                };
                self.prog.rules.push(Rule { pattern, action });
                Ok(())
            }
        }
    }

    fn function(&mut self) -> PResult<()> {
        self.advance();
        let name = match self.advance() {
            Tok::Name(n) | Tok::FuncName(n) => n,
            Tok::Builtin(b) => {
                // The caret goes under the name's first letter.
                let t = &self.toks[self.i - 1];
                return Err(ParseError {
                    msg: format!("`{b}' is a built-in function, it cannot be redefined"),
                    line: t.line,
                    pos: t.end + 1 - b.len(),
                    at_newline: false,
                    plain: 0,
                });
            }
            _ => {
                self.i -= 1;
                return Err(self.error());
            }
        };
        let idx = self.func(&name);
        // A name already used as a variable (not a special one) cannot become a
        // function, and gawk's own variables are taken names too.
        let used_as_var = self
            .globals
            .get(name.as_str())
            .is_some_and(|&g| g >= SPECIALS.len());
        if self.prog.funcs[idx].defined
            || used_as_var
            || SPECIAL_SCALARS.contains(&name.as_str())
            || SPECIAL_ARRAYS.contains(&name.as_str())
        {
            return Err(self.plain_error(format!("function name `{name}' previously defined"), 1));
        }
        self.expect_op("(")?;
        let mut params = HashMap::new();
        let mut names = Vec::new();
        let mut n = 0;
        self.opt_nl();
        while !self.is_op(")") {
            match self.advance() {
                Tok::Name(p) | Tok::FuncName(p)
                    if p == name
                        || self
                            .funcs
                            .get(&p)
                            .is_some_and(|&f| self.prog.funcs[f].defined) =>
                {
                    self.i -= 1;
                    return Err(self.plain_error(
                        format!("function `{name}': cannot use function name as parameter name"),
                        1,
                    ));
                }
                Tok::Name(p)
                    if SPECIAL_SCALARS.contains(&p.as_str())
                        || SPECIAL_ARRAYS.contains(&p.as_str()) =>
                {
                    self.i -= 1;
                    return Err(self.plain_error(
                        format!(
                            "function `{name}': cannot use special variable `{p}' as a function parameter"
                        ),
                        1,
                    ));
                }
                Tok::Name(p) if params.contains_key(&p) => {
                    let first = params[&p] + 1;
                    self.i -= 1;
                    return Err(self.plain_error(
                        format!(
                            "function `{name}': parameter #{}, `{p}', duplicates parameter #{first}",
                            n + 1
                        ),
                        1,
                    ));
                }
                Tok::Name(p) => {
                    params.insert(p.clone(), n);
                    names.push(p);
                    n += 1;
                }
                _ => {
                    self.i -= 1;
                    return Err(self.error());
                }
            }
            self.opt_nl();
            if !self.eat_op(",") {
                break;
            }
            self.opt_nl();
        }
        self.expect_op(")")?;
        self.opt_nl();
        self.prog.funcs[idx].nparams = n;
        self.prog.funcs[idx].params = names;
        self.prog.funcs[idx].array_params = vec![false; n];
        self.prog.funcs[idx].defined = true;
        self.locals = Some(params);
        self.cur_func = Some(idx);
        if !self.is_op("{") {
            return Err(self.error());
        }
        let body = self.block()?;
        self.prog.funcs[idx].body = body;
        self.locals = None;
        self.cur_func = None;
        Ok(())
    }

    fn block(&mut self) -> PResult<Vec<Stmt>> {
        self.expect_op("{")?;
        let mut out = Vec::new();
        loop {
            self.skip_terms();
            if self.eat_op("}") {
                return Ok(out);
            }
            if matches!(self.peek(), Tok::Eof) {
                return Err(self.error());
            }
            let line = self.toks[self.i].line;
            out.push(Stmt::Line(line));
            out.push(self.stmt()?);
        }
    }

    /// Ends a simple statement: `;`, a newline, or before `}`.
    fn end_simple(&mut self) -> PResult<()> {
        match self.peek() {
            Tok::Newline => {
                self.advance();
                Ok(())
            }
            Tok::Op(";") => {
                self.advance();
                Ok(())
            }
            Tok::Op("}") | Tok::Eof => Ok(()),
            _ => Err(self.error()),
        }
    }

    fn body(&mut self) -> PResult<Stmt> {
        self.opt_nl();
        if self.eat_op(";") {
            return Ok(Stmt::Block(Vec::new()));
        }
        self.stmt()
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        self.enter()?;
        let r = self.stmt_inner();
        self.depth -= 1;
        r
    }

    fn stmt_inner(&mut self) -> PResult<Stmt> {
        if self.is_op("{") {
            return Ok(Stmt::Block(self.block()?));
        }
        if self.eat_op(";") {
            return Ok(Stmt::Block(Vec::new()));
        }
        match self.peek().clone() {
            Tok::Kw("if") => {
                self.advance();
                self.expect_op("(")?;
                let c = self.expr()?;
                self.expect_op(")")?;
                let then = self.body()?;
                // Look past terminators for `else`.
                let save = self.i;
                self.skip_terms();
                if self.is_kw("else") {
                    self.advance();
                    let e = self.body()?;
                    Ok(Stmt::If(c, Box::new(then), Some(Box::new(e))))
                } else {
                    self.i = save;
                    Ok(Stmt::If(c, Box::new(then), None))
                }
            }
            Tok::Kw("while") => {
                self.advance();
                self.expect_op("(")?;
                let c = self.expr()?;
                self.expect_op(")")?;
                if self.eat_op(";") {
                    return Ok(Stmt::While(c, Box::new(Stmt::Block(Vec::new()))));
                }
                self.in_loop += 1;
                let b = self.body();
                self.in_loop -= 1;
                Ok(Stmt::While(c, Box::new(b?)))
            }
            Tok::Kw("do") => {
                self.advance();
                self.in_loop += 1;
                let b = self.body();
                self.in_loop -= 1;
                let b = b?;
                self.skip_terms();
                if !self.is_kw("while") {
                    return Err(self.error());
                }
                self.advance();
                self.expect_op("(")?;
                let c = self.expr()?;
                self.expect_op(")")?;
                self.end_simple()?;
                Ok(Stmt::Do(Box::new(b), c))
            }
            Tok::Kw("for") => self.for_stmt(),
            Tok::Kw("switch") => self.switch_stmt(),
            _ => {
                let s = self.simple()?;
                self.end_simple()?;
                Ok(s)
            }
        }
    }

    fn switch_stmt(&mut self) -> PResult<Stmt> {
        self.advance();
        self.expect_op("(")?;
        let subject = self.expr()?;
        self.expect_op(")")?;
        self.opt_nl();
        self.expect_op("{")?;
        let mut arms: Vec<(Option<CaseLabel>, Vec<Stmt>)> = Vec::new();
        let mut seen_default = false;
        // Each case value's text and line, for gawk's duplicate check.
        let mut values: Vec<(Vec<u8>, usize)> = Vec::new();
        // `break` inside a switch leaves the switch.
        self.in_switch += 1;
        let r = (|| {
            loop {
                self.skip_terms();
                if self.eat_op("}") {
                    return Ok(());
                }
                let label = match self.peek().clone() {
                    Tok::Kw("case") => {
                        let line = self.toks[self.i].line;
                        self.advance();
                        let neg = if self.eat_op("-") {
                            Some(-1.0)
                        } else if self.eat_op("+") {
                            Some(1.0)
                        } else {
                            None
                        };
                        let l = match (self.advance(), neg) {
                            (Tok::Num(n), Some(sign)) => CaseLabel::Value(Value::Num(sign * n)),
                            (Tok::Num(n), None) => CaseLabel::Value(Value::Num(n)),
                            (Tok::Str(s), None) => CaseLabel::Value(Value::str(s)),
                            (Tok::Regex(r) | Tok::TypedRegex(r), None) => {
                                CaseLabel::Regex(self.regex(r))
                            }
                            _ => {
                                self.i -= 1;
                                return Err(self.error());
                            }
                        };
                        if let CaseLabel::Value(v) = &l {
                            values.push((v.to_str_with(b"%.6g").to_vec(), line));
                        }
                        Some(l)
                    }
                    Tok::Kw("default") => {
                        self.advance();
                        if seen_default {
                            return Err(ParseError {
                                msg: "duplicate `default' detected in switch body".into(),
                                line: self.toks[self.i].line,
                                pos: self.toks[self.i].end,
                                at_newline: false,
                                plain: 1,
                            });
                        }
                        seen_default = true;
                        None
                    }
                    _ => return Err(self.error()),
                };
                self.expect_op(":")?;
                let mut body = Vec::new();
                loop {
                    self.skip_terms();
                    if self.is_op("}") || self.is_kw("case") || self.is_kw("default") {
                        break;
                    }
                    if matches!(self.peek(), Tok::Eof) {
                        return Err(self.error());
                    }
                    let line = self.toks[self.i].line;
                    body.push(Stmt::Line(line));
                    body.push(self.stmt()?);
                }
                arms.push((label, body));
            }
        })();
        self.in_switch -= 1;
        r?;
        // gawk compares the case values as strings once the switch is read, and reports
        // each pair that repeats.
        let mut dups = values
            .iter()
            .enumerate()
            .flat_map(|(i, a)| values[i + 1..].iter().filter(move |b| b.0 == a.0));
        if let Some((text, line)) = dups.next() {
            return Err(ParseError {
                msg: format!(
                    "duplicate case values in switch body: {}",
                    String::from_utf8_lossy(text)
                ),
                line: *line,
                pos: 0,
                at_newline: false,
                plain: 1 + dups.count(),
            });
        }
        Ok(Stmt::Switch(subject, arms))
    }

    fn for_stmt(&mut self) -> PResult<Stmt> {
        self.advance();
        self.expect_op("(")?;
        // for (k in arr) and for (k in arr[i]...)
        if let (Tok::Name(k), Tok::Kw("in"), Tok::Name(_)) = (
            self.peek().clone(),
            self.peek_at(1).clone(),
            self.peek_at(2).clone(),
        ) {
            let save = self.i;
            self.i += 2;
            let path = self.array_path()?;
            if self.eat_op(")") {
                let kv = self.var(&k);
                self.in_loop += 1;
                let b = self.body();
                self.in_loop -= 1;
                return Ok(Stmt::ForIn(kv, path, Box::new(b?)));
            }
            self.i = save;
        }
        let init = if self.is_op(";") {
            None
        } else {
            Some(Box::new(self.simple()?))
        };
        self.expect_op(";")?;
        self.opt_nl();
        let cond = if self.is_op(";") {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect_op(";")?;
        self.opt_nl();
        let step = if self.is_op(")") {
            None
        } else {
            Some(Box::new(self.simple()?))
        };
        self.expect_op(")")?;
        self.in_loop += 1;
        let b = self.body();
        self.in_loop -= 1;
        Ok(Stmt::For(init, cond, step, Box::new(b?)))
    }

    fn simple(&mut self) -> PResult<Stmt> {
        match self.peek().clone() {
            Tok::Kw(k @ ("print" | "printf")) => {
                self.advance();
                let args = self.print_args()?;

                let dest =
                    if self.is_op(">") || self.is_op(">>") || self.is_op("|") || self.is_op("|&") {
                        let kind = match self.advance() {
                            Tok::Op(">") => Redir::File,
                            Tok::Op(">>") => Redir::Append,
                            Tok::Op("|&") => Redir::Coproc,
                            _ => Redir::Pipe,
                        };
                        // The destination is a concatenation-free expression.
                        let d = self.concat_no_gt()?;
                        Some((kind, d))
                    } else {
                        None
                    };
                if k == "print" && args.is_empty() && matches!(self.section, "BEGIN" | "END") {
                    self.lint("plain `print' in BEGIN or END rule should probably be `print \"\"'");
                }
                Ok(if k == "print" {
                    Stmt::Print(args, dest)
                } else {
                    Stmt::Printf(args, dest)
                })
            }
            Tok::Kw(k @ ("next" | "nextfile")) => {
                let bad = match self.section {
                    "BEGIN" | "END" | "ENDFILE" => true,
                    "BEGINFILE" => k == "next",
                    _ => false,
                };
                if bad {
                    return Err(
                        self.plain_error(format!("`{k}' used in {} action", self.section), 1)
                    );
                }
                self.advance();
                Ok(if k == "next" {
                    Stmt::Next
                } else {
                    Stmt::NextFile
                })
            }
            Tok::Kw("break") => {
                if self.in_loop == 0 && self.in_switch == 0 {
                    return Err(self
                        .plain_error("`break' is not allowed outside a loop or switch".into(), 2));
                }
                self.advance();
                Ok(Stmt::Break)
            }
            Tok::Kw("continue") => {
                if self.in_loop == 0 {
                    return Err(
                        self.plain_error("`continue' is not allowed outside a loop".into(), 2)
                    );
                }
                self.advance();
                Ok(Stmt::Continue)
            }
            Tok::Kw(k @ ("exit" | "return")) => {
                let kw_end = self.toks[self.i].end;
                self.advance();
                let e = if matches!(self.peek(), Tok::Newline | Tok::Eof)
                    || self.is_op(";")
                    || self.is_op("}")
                {
                    None
                } else {
                    Some(self.expr()?)
                };
                if k == "return" && self.cur_func.is_none() {
                    return Err(ParseError {
                        msg: "`return' used outside function context".into(),
                        line: self.toks[self.i].line,
                        // The caret goes under the keyword's first letter.
                        pos: kw_end - "return".len() + 1,
                        at_newline: false,
                        plain: 0,
                    });
                }
                Ok(if k == "exit" {
                    Stmt::Exit(e)
                } else {
                    Stmt::Return(e)
                })
            }
            Tok::Kw("delete") => {
                self.advance();
                let parens = self.eat_op("(");
                let mut path = self.array_path()?;
                let subs = path.path.pop();
                if parens {
                    self.expect_op(")")?;
                }
                Ok(Stmt::Delete(path, subs))
            }
            _ => {
                let e = self.expr()?;
                if no_effect(&e) {
                    self.lint("statement has no effect");
                }
                Ok(Stmt::Expr(e))
            }
        }
    }

    /// gawk's warning for a regexp constant passed to a function (it is `$0 ~ re`).
    fn warn_regex_args(&mut self, args: &[Expr]) {
        for (pos, a) in args.iter().enumerate() {
            if matches!(a, Expr::Regex(_)) {
                let line = self.toks[self.i.saturating_sub(1)].line;
                let w = format!(
                    "regexp constant for parameter #{} yields boolean value",
                    pos + 1
                );
                self.prog.warnings.push((line, w, false));
            }
        }
    }

    /// A `--lint` warning, given with the line of the token just read.
    fn lint(&mut self, msg: &str) {
        if self.lint {
            let line = self
                .toks
                .get(self.i.saturating_sub(1))
                .or(self.toks.last())
                .map_or(1, |t| t.line);
            self.prog.warnings.push((line, msg.to_string(), true));
        }
    }

    /// print's argument list: empty, `(a, b)` or `a, b` (where `>` redirects).
    fn print_args(&mut self) -> PResult<Vec<Expr>> {
        if matches!(self.peek(), Tok::Newline | Tok::Eof)
            || self.is_op(";")
            || self.is_op("}")
            || self.is_op(">")
            || self.is_op(">>")
            || self.is_op("|")
            || self.is_op("|&")
        {
            return Ok(Vec::new());
        }
        if self.is_op("(") {
            // `print (a, b) > f`: the parenthesized list is the argument list when
            // nothing but a terminator or a redirection follows it.
            let save = self.i;
            self.advance();
            let saved_gt = std::mem::replace(&mut self.no_gt, false);
            let list = self.expr_list_nl();
            self.no_gt = saved_gt;
            if let Ok(list) = list
                && self.eat_op(")")
                && (matches!(self.peek(), Tok::Newline | Tok::Eof)
                    || self.is_op(";")
                    || self.is_op("}")
                    || self.is_op(">")
                    || self.is_op(">>")
                    || self.is_op("|")
                    || self.is_op("|&"))
            {
                return Ok(list);
            }
            self.i = save;
        }
        let saved = std::mem::replace(&mut self.no_gt, true);
        let r = self.expr_list();
        self.no_gt = saved;
        r
    }

    fn expr_list(&mut self) -> PResult<Vec<Expr>> {
        let mut out = vec![self.expr()?];
        while self.eat_op(",") {
            self.opt_nl();
            out.push(self.expr()?);
        }
        Ok(out)
    }

    /// A comma-separated list; a newline may follow a comma (only).
    fn expr_list_nl(&mut self) -> PResult<Vec<Expr>> {
        let mut out = vec![self.expr()?];
        while self.eat_op(",") {
            self.opt_nl();
            out.push(self.expr()?);
        }
        Ok(out)
    }

    /// An array name and the subscript lists after it (`a`, `a[1]`, `a[i][j]`); a caller
    /// naming an element takes the last list off as the element's subscript.
    fn array_path(&mut self) -> PResult<ArrayPath> {
        let name = match self.advance() {
            Tok::Name(n) => n,
            _ => {
                self.i -= 1;
                return Err(self.error());
            }
        };
        let var = self.var(&name);
        self.array_use(var);
        let mut path = Vec::new();
        while self.eat_op("[") {
            path.push(self.subscripts()?);
        }
        Ok(ArrayPath { var, path })
    }

    fn subscripts(&mut self) -> PResult<Vec<Expr>> {
        let saved = (self.no_gt, self.no_in);
        self.no_gt = false;
        self.no_in = false;
        let r = self.expr_list_nl();
        (self.no_gt, self.no_in) = saved;
        let r = r?;
        self.expect_op("]")?;
        Ok(r)
    }

    pub fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.expr_inner();
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self) -> PResult<Expr> {
        let lhs = self.ternary()?;
        let op = match self.peek() {
            Tok::Op("=") => None,
            Tok::Op("+=") => Some(Arith::Add),
            Tok::Op("-=") => Some(Arith::Sub),
            Tok::Op("*=") => Some(Arith::Mul),
            Tok::Op("/=") => Some(Arith::Div),
            Tok::Op("%=") => Some(Arith::Mod),
            Tok::Op("^=") => Some(Arith::Pow),
            _ => return Ok(lhs),
        };
        let Expr::Lv(lv) = lhs else {
            return Err(self.error());
        };
        self.advance();
        self.opt_nl();
        let rhs = self.expr()?;
        if op.is_none() && matches!(rhs, Expr::Regex(_)) {
            self.lint("regular expression on right of assignment");
        }
        Ok(match op {
            None => Expr::Assign(Box::new(lv), Box::new(rhs)),
            Some(a) => Expr::AugAssign(a, Box::new(lv), Box::new(rhs)),
        })
    }

    fn ternary(&mut self) -> PResult<Expr> {
        let c = self.or()?;
        if !self.is_op("?") {
            return Ok(c);
        }
        self.advance();
        self.opt_nl();
        let a = self.expr()?;
        self.opt_nl();
        self.expect_op(":")?;
        self.opt_nl();
        let b = self.expr()?;
        Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)))
    }

    fn or(&mut self) -> PResult<Expr> {
        let mut l = self.and()?;
        while self.eat_op("||") {
            self.opt_nl();
            let r = self.and()?;
            l = Expr::Or(Box::new(l), Box::new(r));
        }
        Ok(l)
    }

    fn and(&mut self) -> PResult<Expr> {
        let mut l = self.in_expr()?;
        while self.eat_op("&&") {
            self.opt_nl();
            let r = self.in_expr()?;
            l = Expr::And(Box::new(l), Box::new(r));
        }
        Ok(l)
    }

    fn in_expr(&mut self) -> PResult<Expr> {
        let mut l = self.matching()?;
        while !self.no_in && self.is_kw("in") {
            self.advance();
            let path = self.array_path()?;
            let subs = match l {
                Expr::List(list) => list,
                other => vec![other],
            };
            l = Expr::In(subs, path);
        }
        Ok(l)
    }

    fn matching(&mut self) -> PResult<Expr> {
        let mut l = self.comparison()?;
        loop {
            let neg = if self.is_op("~") {
                false
            } else if self.is_op("!~") {
                true
            } else {
                return Ok(l);
            };
            self.advance();
            if matches!(l, Expr::Regex(_)) {
                self.lint("regular expression on left of `~' or `!~' operator");
            }
            let r = self.comparison()?;
            l = Expr::Match(neg, Box::new(l), Box::new(r));
        }
    }

    fn comparison(&mut self) -> PResult<Expr> {
        let mut l = self.concat()?;
        // Comparisons do not chain (`a < b < c` is a syntax error, as in gawk).
        let mut compared = false;
        loop {
            // `cmd | getline [var]`
            if (self.is_op("|") || self.is_op("|&"))
                && matches!(self.peek_at(1), Tok::Kw("getline"))
            {
                let two_way = self.is_op("|&");
                self.advance();
                self.advance();
                let lv = self.opt_getline_lvalue()?;
                let cmd = Box::new(l);
                let src = if two_way {
                    GetSrc::Coproc(cmd)
                } else {
                    GetSrc::Cmd(cmd)
                };
                l = Expr::Getline(src, lv);
                // Its value may start a concatenation (`cmd | getline x y`).
                if self.starts_operand() && !self.is_op("-") && !self.is_op("+") && !self.is_op("!")
                {
                    let r = self.concat()?;
                    l = Expr::Concat(Box::new(l), Box::new(r));
                }
                continue;
            }
            let op = match self.peek() {
                Tok::Op("<") => Cmp::Lt,
                Tok::Op("<=") => Cmp::Le,
                Tok::Op("==") => Cmp::Eq,
                Tok::Op("!=") => Cmp::Ne,
                Tok::Op(">=") => Cmp::Ge,
                Tok::Op(">") if !self.no_gt => Cmp::Gt,
                _ => return Ok(l),
            };
            if compared {
                // gawk's caret is under the operator's first character.
                return Err(self.error());
            }
            compared = true;
            self.advance();
            self.opt_nl_never();
            let r = self.concat()?;
            l = Expr::Cmp(op, Box::new(l), Box::new(r));
        }
    }

    /// Comparisons do not allow a newline after the operator in awk; kept as a no-op to
    /// mark the place.
    fn opt_nl_never(&mut self) {}

    fn starts_operand(&self) -> bool {
        match self.peek() {
            Tok::Num(_)
            | Tok::Str(_)
            | Tok::Regex(_)
            | Tok::TypedRegex(_)
            | Tok::Name(_)
            | Tok::FuncName(_)
            | Tok::Builtin(_) => true,
            Tok::Op(o) => matches!(*o, "$" | "(" | "!" | "-" | "+" | "++" | "--" | "@"),
            // A plain `getline` is an operand too (`getline getline` concatenates two).
            Tok::Kw("getline") => true,
            Tok::Kw("in") => false,
            _ => false,
        }
    }

    fn concat(&mut self) -> PResult<Expr> {
        let mut l = self.additive()?;
        loop {
            if !self.starts_operand() {
                return Ok(l);
            }
            // `a - b`, `a + b` were taken by additive; `!` would be `a !~`, not here.
            if self.is_op("-") || self.is_op("+") || self.is_op("!") {
                return Ok(l);
            }
            if matches!(self.peek(), Tok::Kw("in")) {
                return Ok(l);
            }
            let r = self.additive()?;
            l = Expr::Concat(Box::new(l), Box::new(r));
        }
    }

    /// print's destination: a concatenation where `>` is not an operator.
    fn concat_no_gt(&mut self) -> PResult<Expr> {
        let saved = std::mem::replace(&mut self.no_gt, true);
        let r = self.concat();
        self.no_gt = saved;
        r
    }

    fn additive(&mut self) -> PResult<Expr> {
        let mut l = self.multiplicative()?;
        loop {
            let op = if self.is_op("+") {
                Arith::Add
            } else if self.is_op("-") {
                Arith::Sub
            } else {
                return Ok(l);
            };
            self.advance();
            let r = self.multiplicative()?;
            l = Expr::Arith(op, Box::new(l), Box::new(r));
        }
    }

    fn multiplicative(&mut self) -> PResult<Expr> {
        let mut l = self.unary()?;
        loop {
            let op = if self.is_op("*") {
                Arith::Mul
            } else if self.is_op("/") {
                Arith::Div
            } else if self.is_op("%") {
                Arith::Mod
            } else {
                return Ok(l);
            };
            self.advance();
            let r = self.unary()?;
            // gawk checks a constant divisor while parsing, so `x / 0` fails before running.
            if let Expr::Const(Value::Num(d)) = &r
                && *d == 0.0
                && op != Arith::Mul
            {
                let t = &self.toks[self.i.min(self.toks.len() - 1)];
                return Err(ParseError {
                    msg: if op == Arith::Div {
                        "division by zero attempted".into()
                    } else {
                        "division by zero attempted in `%'".into()
                    },
                    line: t.line,
                    pos: t.end,
                    at_newline: false,
                    plain: 0,
                });
            }
            l = Expr::Arith(op, Box::new(l), Box::new(r));
        }
    }

    fn unary(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = if self.eat_op("!") {
            self.unary().map(|e| Expr::Not(Box::new(e)))
        } else if self.eat_op("-") {
            self.unary().map(|e| Expr::Neg(Box::new(e)))
        } else if self.eat_op("+") {
            self.unary().map(|e| Expr::Plus(Box::new(e)))
        } else {
            self.power()
        };
        self.depth -= 1;
        r
    }

    fn power(&mut self) -> PResult<Expr> {
        let base = self.postfix()?;
        if self.eat_op("^") {
            // Right associative, and the exponent may carry a sign.
            let exp = if self.is_op("-") || self.is_op("+") || self.is_op("!") {
                self.unary()?
            } else {
                self.enter()?;
                let r = self.power();
                self.depth -= 1;
                r?
            };
            return Ok(Expr::Arith(Arith::Pow, Box::new(base), Box::new(exp)));
        }
        Ok(base)
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let e = self.primary()?;
        if let Expr::Lv(_) = e {
            let delta = if self.is_op("++") {
                1.0
            } else if self.is_op("--") {
                -1.0
            } else {
                return Ok(e);
            };
            self.advance();
            let Expr::Lv(lv) = e else {
                return Err(self.error());
            };
            return Ok(Expr::IncDec {
                lv: Box::new(lv),
                delta,
                prefix: false,
            });
        }
        Ok(e)
    }

    fn opt_getline_lvalue(&mut self) -> PResult<Option<Box<LValue>>> {
        match self.peek() {
            Tok::Name(_) | Tok::Op("$") => {
                let e = self.primary()?;
                match e {
                    Expr::Lv(lv) => Ok(Some(Box::new(lv))),
                    _ => Err(self.error()),
                }
            }
            _ => Ok(None),
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.primary_inner();
        self.depth -= 1;
        r
    }

    fn primary_inner(&mut self) -> PResult<Expr> {
        let t = self.advance();
        match t {
            Tok::Num(n) => Ok(Expr::Const(Value::Num(n))),
            Tok::Str(s) => Ok(Expr::Const(Value::str(s))),
            Tok::Regex(r) => Ok(Expr::Regex(self.regex(r))),
            // A value of its own type: its text, matched as a regex wherever one is used.
            Tok::TypedRegex(r) => Ok(Expr::Const(Value::Regex(std::rc::Rc::from(r.as_bytes())))),
            Tok::Op("$") => {
                let e = if self.is_op("++") || self.is_op("--") {
                    let delta = if self.eat_op("++") {
                        1.0
                    } else {
                        self.advance();
                        -1.0
                    };
                    match self.primary()? {
                        Expr::Lv(lv) => Expr::IncDec {
                            lv: Box::new(lv),
                            delta,
                            prefix: true,
                        },
                        _ => return Err(self.error()),
                    }
                } else if self.eat_op("-") {
                    Expr::Neg(Box::new(self.primary()?))
                } else if self.eat_op("+") {
                    Expr::Plus(Box::new(self.primary()?))
                } else if self.eat_op("!") {
                    Expr::Not(Box::new(self.primary()?))
                } else {
                    self.primary()?
                };
                Ok(Expr::Lv(LValue::Field(Box::new(e))))
            }
            Tok::Op(op @ ("++" | "--")) => {
                let delta = if op == "++" { 1.0 } else { -1.0 };
                match self.primary()? {
                    Expr::Lv(lv) => Ok(Expr::IncDec {
                        lv: Box::new(lv),
                        delta,
                        prefix: true,
                    }),
                    _ => Err(self.error()),
                }
            }
            Tok::Op("-") => Ok(Expr::Neg(Box::new(self.unary()?))),
            Tok::Op("+") => Ok(Expr::Plus(Box::new(self.unary()?))),
            Tok::Op("!") => Ok(Expr::Not(Box::new(self.unary()?))),
            Tok::Op("@") => match self.advance() {
                Tok::FuncName(n) => {
                    let v = self.var(&n);
                    self.expect_op("(")?;
                    let args = self.call_args()?;
                    self.warn_regex_args(&args);
                    Ok(Expr::Indirect(v, args))
                }
                _ => {
                    self.i -= 1;
                    Err(self.error())
                }
            },
            Tok::Op("(") => {
                let saved = (self.no_gt, self.no_in);
                self.no_gt = false;
                self.no_in = false;
                let list = self.expr_list_nl();
                (self.no_gt, self.no_in) = saved;
                let mut list = list?;
                self.expect_op(")")?;
                if list.len() > 1 {
                    if self.is_kw("in") {
                        return Ok(Expr::List(list));
                    }
                    return Err(self.error());
                }
                let e = list.pop().ok_or_else(|| self.error())?;
                Ok(Expr::Group(Box::new(e)))
            }
            Tok::Name(_) if matches!(self.peek(), Tok::Op("[")) => {
                self.i -= 1;
                let mut path = self.array_path()?;
                let subs = path.path.pop().unwrap_or_default();
                Ok(Expr::Lv(LValue::Elem(path, subs)))
            }
            Tok::Name(n) => Ok(Expr::Lv(LValue::Var(self.var(&n)))),
            Tok::FuncName(n) => {
                let idx = self.func(&n);
                if self.prog.funcs[idx].first_call_line == 0 {
                    self.prog.funcs[idx].first_call_line = self.toks[self.i.saturating_sub(1)].line;
                }
                self.expect_op("(")?;
                let args = self.call_args()?;
                self.warn_regex_args(&args);
                if let Some(caller) = self.cur_func {
                    for (pos, a) in args.iter().enumerate() {
                        if let Expr::Lv(LValue::Var(Var::Local(l))) = a {
                            self.passes.push((caller, *l, idx, pos));
                        }
                    }
                }
                Ok(Expr::Call(idx, args))
            }
            Tok::Builtin(name) => {
                if self.lint_ext && super::lex::GAWK_BUILTINS.contains(&name.as_str()) {
                    self.lint(&format!("`{name}' is a gawk extension"));
                }
                let name: &'static str = super::lex::builtin_name(&name).unwrap_or("length");
                if self.eat_op("(") {
                    let args = self.call_args()?;
                    if let Some((lo, hi)) = builtin_arity(name)
                        && (args.len() < lo || args.len() > hi)
                    {
                        let t = &self.toks[self.i - 1];
                        return Err(ParseError {
                            msg: format!(
                                "{} is invalid as number of arguments for {name}",
                                args.len()
                            ),
                            line: t.line,
                            pos: t.end,
                            at_newline: false,
                            plain: 0,
                        });
                    }
                    // The target of sub and gsub must be assignable; a constant (one gawk
                    // folds) is let through, any other expression refused.
                    if matches!(name, "sub" | "gsub")
                        && let Some(target) = args.get(2)
                        && !matches!(target, Expr::Lv(_))
                        && !folds(target)
                    {
                        let t = &self.toks[self.i - 1];
                        return Err(ParseError {
                            msg: format!("{name} third parameter is not a changeable object"),
                            line: t.line,
                            pos: t.end,
                            at_newline: false,
                            plain: 0,
                        });
                    }
                    match name {
                        "split" | "patsplit" | "asort" | "asorti" | "match" => {
                            let arrays: &[usize] = match name {
                                "split" | "patsplit" => &[1, 3],
                                "match" => &[2],
                                _ => &[0, 1],
                            };
                            for &i in arrays {
                                if let Some(Expr::Lv(LValue::Var(v))) = args.get(i) {
                                    self.array_use(*v);
                                }
                            }
                        }
                        _ => {}
                    }
                    Ok(Expr::Builtin(name, args))
                } else if name == "length" {
                    self.lint("call of `length' without parentheses is not portable");
                    Ok(Expr::Builtin(name, Vec::new()))
                } else {
                    Err(self.error())
                }
            }
            Tok::Kw("getline") => {
                let lv = self.opt_getline_lvalue()?;
                if self.eat_op("<") {
                    let src = self.primary_for_redirect()?;
                    return Ok(Expr::Getline(GetSrc::File(Box::new(src)), lv));
                }
                if matches!(self.section, "BEGINFILE" | "ENDFILE") {
                    return Err(self.plain_error(
                        format!(
                            "non-redirected `getline' invalid inside `{}' rule",
                            self.section
                        ),
                        1,
                    ));
                }
                Ok(Expr::Getline(GetSrc::Main, lv))
            }
            _ => {
                self.i -= 1;
                Err(self.error())
            }
        }
    }

    /// `getline < file`: the file is a primary, possibly with a `$` (no concatenation).
    fn primary_for_redirect(&mut self) -> PResult<Expr> {
        self.primary()
    }

    fn call_args(&mut self) -> PResult<Vec<Expr>> {
        let saved = (self.no_gt, self.no_in);
        self.no_gt = false;
        self.no_in = false;
        let r = if self.is_op(")") {
            Ok(Vec::new())
        } else {
            self.expr_list_nl()
        };
        (self.no_gt, self.no_in) = saved;
        let r = r?;
        self.expect_op(")")?;
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::super::lex::tokenize;
    use super::*;

    fn prog(s: &str) -> Program {
        parse(&tokenize(s.as_bytes()).unwrap()).unwrap()
    }

    /// Statements, without the line markers.
    fn stmts(b: &[Stmt]) -> usize {
        b.iter().filter(|s| !matches!(s, Stmt::Line(_))).count()
    }

    fn fails(s: &str) -> bool {
        parse(&tokenize(s.as_bytes()).unwrap()).is_err()
    }

    #[test]
    fn rules_and_blocks() {
        let p = prog("BEGIN { x = 1 } /a/ { print } END { print x }\n$1 > 2");
        assert_eq!(stmts(&p.begin), 1);
        assert_eq!(stmts(&p.end), 1);
        assert_eq!(p.rules.len(), 2);
        assert!(p.rules[1].action.is_none());
        assert!(p.has_main);
    }

    #[test]
    fn print_redirection_is_not_comparison() {
        let p = prog("{ print $1, $2 > \"out\" }");
        let Some(action) = &p.rules[0].action else {
            panic!("no action")
        };
        assert!(matches!(&action[1], Stmt::Print(args, Some((Redir::File, _))) if args.len() == 2));
        let p = prog("{ print (1 > 2) }");
        let Some(action) = &p.rules[0].action else {
            panic!("no action")
        };
        assert!(matches!(&action[1], Stmt::Print(args, None) if args.len() == 1));
    }

    #[test]
    fn functions_resolve_locals_and_array_params() {
        let p = prog("function f(a, i) { a[i] = 1 } function g(b) { f(b, 2) } BEGIN { g(x) }");
        assert_eq!(p.funcs.len(), 2);
        assert_eq!(p.funcs[0].array_params, vec![true, false]);
        assert_eq!(p.funcs[1].array_params, vec![true]);
    }

    #[test]
    fn syntax_errors() {
        assert!(fails("BEGIN { x = }"));
        assert!(fails("BEGIN { print 1"));
        assert!(fails("BEGIN { return 1 }"));
        // Calling a function never defined is fatal only when the call runs, as in gawk.
        assert!(!fails("BEGIN { if (0) f(1) }"));
    }

    #[test]
    fn getline_forms() {
        let p =
            prog("BEGIN { while ((\"cmd\" | getline line) > 0) n++; getline < \"f\"; getline x }");
        assert_eq!(stmts(&p.begin), 3);
    }
}

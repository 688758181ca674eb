//! `bc`: the arbitrary-precision calculator language, as GNU bc 1.07 runs it: decimal
//! numbers with a scale ([`num`]), `scale`/`ibase`/`obase`, variables and arrays, functions
//! with `define`/`auto` (dynamically scoped, arrays by value), `if`/`while`/`for`/`break`/
//! `continue`/`return`, strings and `print`, `quit` (when read) and `halt` (when run),
//! comments, and `-l`'s math library ([`mathlib`]). The program is the FILE operands, then
//! standard input; each top-level statement runs as soon as it is read. A syntax error is
//! reported as `(standard_in) LINE: syntax error` (or the file's name) and reading goes on
//! with the next line; runtime errors stop the current statement. The status is 0, as bc's.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use num_bigint::BigInt;
use num_traits::{ToPrimitive, Zero};

use super::getopt::{Arg as OptArg, Spec, opt, parse};
use super::util::{BufOut, Reader, quote};
use crate::{CmdResult, Command, Context, Interrupt};

mod mathlib;
mod num;
mod parse;

use num::{MAX_SCALE, Num};
use parse::{Arg, Expr, Func, LValue, Parser, PrintItem, Stmt, Stop};

const SPECS: &[Spec] = &[
    opt('l', Some('l'), Some("mathlib"), OptArg::No),
    opt('q', Some('q'), Some("quiet"), OptArg::No),
    opt('s', Some('s'), Some("standard"), OptArg::No),
    opt('w', Some('w'), Some("warn"), OptArg::No),
    opt('i', Some('i'), Some("interactive"), OptArg::No),
    opt('h', Some('h'), Some("help"), OptArg::No),
    opt('v', Some('v'), Some("version"), OptArg::No),
];

const HELP: &str = "usage: bc [options] [file ...]
  -h  --help         print this usage and exit
  -i  --interactive  force interactive mode
  -l  --mathlib      use the predefined math routines
  -q  --quiet        don't print initial banner
  -s  --standard     non-standard bc constructs are errors
  -w  --warn         warn about non-standard bc constructs
  -v  --version      print version information and exit
";

/// Calls nested deeper than this stop the statement: each level of the interpreter's
/// recursion is polled on its thread's stack ([`BC_STACK`]), which must not overflow.
const MAX_CALL_DEPTH: usize = 1000;
/// Stack of the thread a bc program runs on (reserved, not committed): deep enough for
/// [`MAX_CALL_DEPTH`] calls and the parser's and evaluator's nesting limits.
const BC_STACK: usize = 256 * 1024 * 1024;
/// bc programs running at once on their own threads (others wait their turn).
static BC_THREADS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(8);
/// Elements an array may hold (bc's BC_DIM_MAX).
const MAX_DIM: usize = 16_777_215;
/// Largest power computed (in digits, about): bounds the memory and time of `a ^ b`.
const MAX_POW_DIGITS: u64 = 2_000_000;
/// bc's output line length: a number longer than this is split with `\`.
const LINE_LEN: usize = 70;

pub struct Bc;

/// How a statement ended other than normally.
enum Flow {
    Break,
    Continue,
    Return(Num),
    Halt,
    /// A runtime error (already worded).
    Error(String),
    Stop(Interrupt),
}

impl From<Interrupt> for Flow {
    fn from(i: Interrupt) -> Flow {
        Flow::Stop(i)
    }
}

type Array = HashMap<usize, Num>;

struct Machine<'a> {
    ctx: &'a Context,
    out: BufOut<'a>,
    col: usize,
    scale: usize,
    ibase: u32,
    obase: u64,
    last: Num,
    /// Variables and arrays by name; the top of each stack is the visible one (bc's
    /// dynamic scoping: a function's parameters and autos are pushed on call).
    vars: HashMap<String, Vec<Num>>,
    arrays: HashMap<String, Vec<Array>>,
    funcs: HashMap<String, Arc<Func>>,
    mathlib: bool,
    depth: usize,
    steps: u32,
}

impl<'a> Machine<'a> {
    async fn write(&mut self, s: &str) -> Result<(), Interrupt> {
        if let Some(i) = s.rfind('\n') {
            self.col = s[i + 1..].chars().count();
        } else {
            self.col += s.chars().count();
        }
        self.out.write(s.as_bytes()).await
    }

    /// Prints a number, splitting long lines as bc does.
    async fn write_num(&mut self, v: &Num) -> Result<(), Interrupt> {
        let text = v.to_base(self.obase);
        let mut buf = String::with_capacity(text.len() + 8);
        for c in text.chars() {
            if self.col >= LINE_LEN - 2 {
                buf.push_str("\\\n");
                self.col = 0;
            }
            buf.push(c);
            self.col += 1;
        }
        self.out.write(buf.as_bytes()).await
    }

    async fn tick(&mut self) -> Result<(), Flow> {
        self.steps += 1;
        if self.steps >= 1024 {
            self.steps = 0;
            self.ctx.checkpoint().await?;
        }
        Ok(())
    }

    fn get_var(&self, name: &str) -> Num {
        self.vars
            .get(name)
            .and_then(|s| s.last())
            .cloned()
            .unwrap_or_default()
    }

    fn set_var(&mut self, name: &str, v: Num) {
        let stack = self.vars.entry(name.to_string()).or_default();
        match stack.last_mut() {
            Some(top) => *top = v,
            None => stack.push(v),
        }
    }

    fn array_mut(&mut self, name: &str) -> &mut Array {
        let stack = self.arrays.entry(name.to_string()).or_default();
        if stack.is_empty() {
            stack.push(Array::new());
        }
        let last = stack.len() - 1;
        &mut stack[last]
    }

    fn index(&self, v: &Num) -> Result<usize, Flow> {
        match v.trunc().to_usize() {
            Some(i) if i <= MAX_DIM => Ok(i),
            _ => Err(Flow::Error("Array index out of bounds".into())),
        }
    }

    async fn load(&mut self, lv: &LValue) -> Result<Num, Flow> {
        Ok(match lv {
            LValue::Var(n) => self.get_var(n),
            LValue::Elem(n, i) => {
                let iv = Box::pin(self.eval(i)).await?;
                let i = self.index(&iv)?;
                self.array_mut(n).get(&i).cloned().unwrap_or_default()
            }
            LValue::Scale => Num::int(self.scale as i64),
            LValue::Ibase => Num::int(i64::from(self.ibase)),
            LValue::Obase => Num::int(self.obase as i64),
            LValue::Last => self.last.clone(),
        })
    }

    async fn store(&mut self, lv: &LValue, v: Num) -> Result<Num, Flow> {
        match lv {
            LValue::Var(n) => self.set_var(n, v.clone()),
            LValue::Elem(n, i) => {
                let iv = Box::pin(self.eval(i)).await?;
                let i = self.index(&iv)?;
                self.array_mut(n).insert(i, v.clone());
            }
            LValue::Scale => {
                let s = v.trunc().to_usize().unwrap_or(MAX_SCALE).min(MAX_SCALE);
                self.scale = if v.is_neg() { 0 } else { s };
            }
            LValue::Ibase => {
                let b = v.trunc().to_i64().unwrap_or(16);
                self.ibase = b.clamp(2, 16) as u32;
            }
            LValue::Obase => {
                let b = v.trunc().to_i64().unwrap_or(999);
                if b < 2 {
                    return Err(Flow::Error("output base is too small".into()));
                }
                self.obase = b.min(i64::from(u32::MAX)) as u64;
            }
            LValue::Last => self.last = v.clone(),
        }
        Ok(v)
    }

    fn arith(&self, op: &str, a: &Num, b: &Num) -> Result<Num, Flow> {
        let scale = self.scale;
        match op {
            "+" => Ok(a.add(b)),
            "-" => Ok(a.sub(b)),
            "*" => Ok(a.mul(b, scale)),
            "/" => a
                .div(b, scale)
                .ok_or_else(|| Flow::Error("Divide by zero".into())),
            "%" => a
                .rem(b, scale)
                .ok_or_else(|| Flow::Error("Modulo by zero".into())),
            _ => {
                let e: BigInt = b.trunc();
                // The result's digits, roughly: more than this is refused, not computed.
                let digits =
                    (a.n.bits() / 3 + 1).saturating_mul(e.magnitude().to_u64().unwrap_or(u64::MAX));
                if e.bits() > 32 || digits > MAX_POW_DIGITS {
                    return Err(Flow::Error("exponent too large in raise".into()));
                }
                if a.is_zero() && e < BigInt::zero() {
                    return Err(Flow::Error("Divide by zero".into()));
                }
                a.pow(&e, scale)
                    .filter(|r| r.scale <= MAX_SCALE * 4)
                    .ok_or_else(|| Flow::Error("exponent too large in raise".into()))
            }
        }
    }

    async fn eval(&mut self, e: &Expr) -> Result<Num, Flow> {
        self.tick().await?;
        Ok(match e {
            Expr::Num(s) => parse::constant(s, self.ibase),
            Expr::Load(lv) => self.load(lv).await?,
            Expr::Neg(x) => Box::pin(self.eval(x)).await?.neg(),
            Expr::Not(x) => bool_num(Box::pin(self.eval(x)).await?.is_zero()),
            Expr::And(a, b) => {
                let l = !Box::pin(self.eval(a)).await?.is_zero();
                bool_num(l && !Box::pin(self.eval(b)).await?.is_zero())
            }
            Expr::Or(a, b) => {
                let l = !Box::pin(self.eval(a)).await?.is_zero();
                bool_num(l || !Box::pin(self.eval(b)).await?.is_zero())
            }
            Expr::Rel(op, a, b) => {
                let (l, r) = (Box::pin(self.eval(a)).await?, Box::pin(self.eval(b)).await?);
                let o = l.cmp(&r);
                use std::cmp::Ordering::*;
                bool_num(match *op {
                    "==" => o == Equal,
                    "!=" => o != Equal,
                    "<" => o == Less,
                    "<=" => o != Greater,
                    ">" => o == Greater,
                    _ => o != Less,
                })
            }
            Expr::Bin(op, a, b) => {
                let l = Box::pin(self.eval(a)).await?;
                let r = Box::pin(self.eval(b)).await?;
                if *op == "^" && r.scale > 0 && !r.rescale(0).sub(&r).is_zero() {
                    self.ctx
                        .err("Runtime warning (func=(main), adr=0): non-zero scale in exponent\n")
                        .await;
                }
                self.arith(op, &l, &r)?
            }
            Expr::Assign(op, lv, rhs) => {
                let r = Box::pin(self.eval(rhs)).await?;
                let v = if *op == "=" {
                    r
                } else {
                    let cur = self.load(lv).await?;
                    self.arith(&op[..1], &cur, &r)?
                };
                self.store(lv, v).await?
            }
            Expr::PreInc(inc, lv) => {
                let cur = self.load(lv).await?;
                let v = if *inc {
                    cur.add(&Num::int(1))
                } else {
                    cur.sub(&Num::int(1))
                };
                self.store(lv, v).await?
            }
            Expr::PostInc(inc, lv) => {
                let cur = self.load(lv).await?;
                let v = if *inc {
                    cur.add(&Num::int(1))
                } else {
                    cur.sub(&Num::int(1))
                };
                self.store(lv, v).await?;
                cur
            }
            Expr::Length(x) => Num::int(Box::pin(self.eval(x)).await?.length() as i64),
            Expr::ScaleOf(x) => Num::int(Box::pin(self.eval(x)).await?.scale as i64),
            Expr::Sqrt(x) => {
                let v = Box::pin(self.eval(x)).await?;
                v.sqrt(self.scale)
                    .ok_or_else(|| Flow::Error("Square root of a negative number".into()))?
            }
            Expr::Call(name, args) => Box::pin(self.call(name, args)).await?,
        })
    }

    async fn call(&mut self, name: &str, args: &[Arg]) -> Result<Num, Flow> {
        let Some(f) = self.funcs.get(name).cloned() else {
            if self.mathlib {
                let mut vals = Vec::new();
                for a in args {
                    match a {
                        Arg::Value(e) => vals.push(Box::pin(self.eval(e)).await?),
                        Arg::Array(_) => return Err(Flow::Error("Parameter type mismatch".into())),
                    }
                }
                if let Some(r) = mathlib::call(name, &vals, self.scale) {
                    self.ctx.checkpoint().await?;
                    return r.map_err(Flow::Error);
                }
            }
            return Err(Flow::Error(format!("Function {name} not defined.")));
        };
        if args.len() != f.params.len() {
            return Err(Flow::Error("Parameter number mismatch".to_string()));
        }
        if self.depth >= MAX_CALL_DEPTH {
            return Err(Flow::Error("Function call nesting too deep".into()));
        }
        // Evaluate the arguments before any parameter is bound.
        let mut bound: Vec<(String, Result<Num, Array>)> = Vec::new();
        for (a, (pname, is_array)) in args.iter().zip(f.params.iter()) {
            match (a, is_array) {
                (Arg::Value(e), false) => {
                    let v = Box::pin(self.eval(e)).await?;
                    bound.push((pname.clone(), Ok(v)));
                }
                (Arg::Array(n), true) => {
                    let arr = self.array_mut(n).clone();
                    bound.push((pname.clone(), Err(arr)));
                }
                _ => return Err(Flow::Error("Parameter type mismatch".into())),
            }
        }
        for (n, v) in bound {
            match v {
                Ok(v) => self.vars.entry(n).or_default().push(v),
                Err(a) => self.arrays.entry(n).or_default().push(a),
            }
        }
        for (n, is_array) in &f.autos {
            if *is_array {
                self.arrays.entry(n.clone()).or_default().push(Array::new());
            } else {
                self.vars.entry(n.clone()).or_default().push(Num::default());
            }
        }
        self.depth += 1;
        let r = Box::pin(self.block(&f.body)).await;
        self.depth -= 1;
        for (n, is_array) in f.params.iter().chain(f.autos.iter()) {
            if *is_array {
                if let Some(s) = self.arrays.get_mut(n) {
                    s.pop();
                }
            } else if let Some(s) = self.vars.get_mut(n) {
                s.pop();
            }
        }
        match r {
            Ok(()) => Ok(Num::default()),
            Err(Flow::Return(v)) => Ok(v),
            Err(Flow::Break) | Err(Flow::Continue) => Ok(Num::default()),
            Err(other) => Err(other),
        }
    }

    async fn block(&mut self, stmts: &[Stmt]) -> Result<(), Flow> {
        for s in stmts {
            Box::pin(self.exec(s)).await?;
        }
        Ok(())
    }

    async fn exec(&mut self, s: &Stmt) -> Result<(), Flow> {
        self.tick().await?;
        match s {
            Stmt::Empty => {}
            Stmt::Expr(e) => {
                let v = self.eval(e).await?;
                if !matches!(e, Expr::Assign(..)) {
                    self.write_num(&v).await?;
                    self.write("\n").await?;
                    self.last = v;
                }
            }
            Stmt::Str(t) => self.write(t).await?,
            Stmt::Print(items) => {
                for it in items {
                    match it {
                        PrintItem::Str(t) => {
                            let t = unescape(t);
                            self.write(&t).await?;
                        }
                        PrintItem::Expr(e) => {
                            let v = self.eval(e).await?;
                            self.write_num(&v).await?;
                            self.last = v;
                        }
                    }
                }
            }
            Stmt::Block(b) => self.block(b).await?,
            Stmt::If(c, t, e) => {
                if !self.eval(c).await?.is_zero() {
                    Box::pin(self.exec(t)).await?;
                } else if let Some(e) = e {
                    Box::pin(self.exec(e)).await?;
                }
            }
            Stmt::While(c, body) => {
                while !self.eval(c).await?.is_zero() {
                    match Box::pin(self.exec(body)).await {
                        Err(Flow::Break) => break,
                        Err(Flow::Continue) | Ok(()) => {}
                        Err(other) => return Err(other),
                    }
                }
            }
            Stmt::For(a, c, step, body) => {
                if let Some(a) = a {
                    self.eval(a).await?;
                }
                loop {
                    if let Some(c) = c
                        && self.eval(c).await?.is_zero()
                    {
                        break;
                    }
                    match Box::pin(self.exec(body)).await {
                        Err(Flow::Break) => break,
                        Err(Flow::Continue) | Ok(()) => {}
                        Err(other) => return Err(other),
                    }
                    if let Some(step) = step {
                        self.eval(step).await?;
                    }
                }
            }
            Stmt::Break => return Err(Flow::Break),
            Stmt::Continue => return Err(Flow::Continue),
            Stmt::Return(e) => {
                let v = match e {
                    Some(e) => self.eval(e).await?,
                    None => Num::default(),
                };
                return Err(Flow::Return(v));
            }
            Stmt::Halt => return Err(Flow::Halt),
            Stmt::Define(f) => {
                self.funcs.insert(f.name.clone(), f.clone());
            }
        }
        Ok(())
    }
}

fn bool_num(b: bool) -> Num {
    Num::int(i64::from(b))
}

/// `print`'s escapes: `\n \t \\ \" \a \b \f \r \q`.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some(e) if super::util::c_escape(e).is_some() => {
                out.extend(super::util::c_escape(e));
            }
            Some('q') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[async_trait]
impl Command for Bc {
    fn name(&self) -> &'static str {
        "bc"
    }
    fn summary(&self) -> &'static str {
        "an arbitrary precision calculator language"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let turn = tokio::select! {
            turn = BC_THREADS.acquire() => turn.map_err(|_| Interrupt::Cancelled)?,
            _ = ctx.cancel.cancelled() => return Err(Interrupt::Cancelled),
        };
        let ctx2 = ctx.clone();
        let rt = tokio::runtime::Handle::current();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        // A thread of its own: the interpreter's recursion needs a deeper stack than a
        // runtime worker's; the program's future is polled there.
        let spawned = std::thread::Builder::new()
            .name("bc".into())
            .stack_size(BC_STACK)
            .spawn(move || {
                let r = rt.block_on(run_bc(&ctx2, args));
                drop(turn);
                let _ = done_tx.send(r);
            });
        if spawned.is_err() {
            ctx.err("bc: cannot start the interpreter thread\n").await;
            return Ok(1);
        }
        done_rx.await.unwrap_or(Err(Interrupt::Cancelled))
    }
}

/// Runs bc with `args` (on the thread [`Bc::run`] made).
async fn run_bc(ctx: &Context, args: Vec<String>) -> CmdResult {
    {
        let p = match parse(SPECS, &args, true) {
            Ok(p) => p,
            Err(msg) => {
                ctx.err(format!("bc: {msg}\n")).await;
                ctx.out(HELP).await?;
                return Ok(1);
            }
        };
        if p.has('h') {
            ctx.out(HELP).await?;
            return Ok(0);
        }
        if p.has('v') {
            ctx.out("bc 1.07.1\nCopyright 1991-1994, 1997, 1998, 2000, 2004, 2006, 2008, 2012-2017 Free Software Foundation, Inc.\n").await?;
            return Ok(0);
        }
        let mathlib = p.has('l');
        let mut m = Machine {
            ctx,
            out: BufOut::new(ctx),
            col: 0,
            scale: if mathlib { 20 } else { 0 },
            ibase: 10,
            obase: 10,
            last: Num::default(),
            vars: HashMap::new(),
            arrays: HashMap::new(),
            funcs: HashMap::new(),
            mathlib,
            depth: 0,
            steps: 0,
        };
        let mut sources: Vec<String> = p.operands.clone();
        sources.push("-".into());
        for src in sources {
            let mut reader = match Reader::open(ctx, &src).await {
                Ok(r) => r,
                Err(_) => {
                    m.out.flush().await?;
                    ctx.err(format!("File {src} is unavailable.\n")).await;
                    return Ok(1);
                }
            };
            let mut charge = ctx.budget.empty_charge();
            let data = match reader.read_to_end(usize::MAX, &mut charge).await? {
                Ok(d) => d,
                Err(e) => {
                    m.out.flush().await?;
                    ctx.err(format!("bc: {}: {e}\n", quote(&src))).await;
                    return Ok(1);
                }
            };
            let text = String::from_utf8_lossy(&data).into_owned();
            let label = if src == "-" {
                "(standard_in)".to_string()
            } else {
                src.clone()
            };
            if run_text(&mut m, &text, &label).await? {
                break;
            }
        }
        m.out.flush().await?;
        Ok(0)
    }
}

/// Runs one source; true when the program ended (`quit`, `halt`).
async fn run_text(m: &mut Machine<'_>, text: &str, label: &str) -> Result<bool, Interrupt> {
    let toks = match parse::lex(text) {
        Ok(t) => t,
        Err((line, msg)) => {
            // Run what lexes before the bad spot? bc reports and stops reading this source.
            m.out.flush().await?;
            m.ctx.err(format!("{label} {line}: {msg}\n")).await;
            return Ok(false);
        }
    };
    let mut parser = Parser::new(toks);
    loop {
        match parser.top() {
            Ok(None) => return Ok(false),
            Ok(Some(stmt)) => match m.exec(&stmt).await {
                Ok(()) => {}
                Err(Flow::Halt) => return Ok(true),
                Err(Flow::Stop(i)) => return Err(i),
                Err(Flow::Error(msg)) => {
                    m.out.flush().await?;
                    m.ctx
                        .err(format!("Runtime error (func=(main), adr=0): {msg}\n"))
                        .await;
                    parser.rest_of_line();
                }
                Err(Flow::Return(_)) => {
                    m.out.flush().await?;
                    m.ctx
                        .err(format!("{label} {}: return outside a function\n", 1))
                        .await;
                }
                Err(Flow::Break) | Err(Flow::Continue) => {}
            },
            Err(Stop::Quit) => return Ok(true),
            Err(Stop::Syntax(line)) => {
                m.out.flush().await?;
                m.ctx.err(format!("{label} {line}: syntax error\n")).await;
                parser.recover();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn hostile_programs_end_with_a_message() {
        for prog in [
            "2^4000000000\n",
            "2^99999999999999999999\n",
            "obase=1\n5\n",
            "scale=-1; 1/3\n",
            "x[99999999999]=1\n",
            "define f(n) { return f(n+1); }\nf(1)\n",
            &"(".repeat(5000),
            &format!("{}1{}\n", "(".repeat(140), ")".repeat(140)),
            &format!("{}1{}\n", "{".repeat(140), "}".repeat(140)),
            "define f(n) { if (n == 0) return 0; return 1 + f(n-1); }\nf(99)\nf(5000)\n",
            "\"unterminated\n",
            "/* open comment\n",
            "l(0)\n",
            "0^-1\n",
            "ibase=99; obase=99999; 12345\n",
        ] {
            let inv = Invocation {
                stdin: prog.as_bytes().to_vec(),
                ..Invocation::default()
            };
            let (st, _, _) = inv.run(&Bc, &["-l"]).await;
            assert!(st == 0 || st == 1, "{prog}: {st}");
        }
    }
}

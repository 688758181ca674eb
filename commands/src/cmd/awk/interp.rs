//! The awk interpreter: runs a resolved [`Program`] over its input.
//!
//! It runs on a blocking thread (awk programs compute without awaiting), reaching the
//! session's async streams, filesystem and launcher through `Handle::block_on`. Fields
//! are split lazily and kept as byte ranges of the record until one is assigned.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::re::Regex;
use tokio::runtime::Handle;

use super::array::KeyKind;
use super::io::{Dest, OUT_BUF, OutStream, ReadError, RecordReader, RsMode};
use super::parse::*;
use super::re;
use super::value::{Str, Value, looks_numeric, push_num, sprintf, str_to_num};
use crate::budget::Charge;
use crate::cmd::util::Reader;
use crate::{Context, Interrupt, fs::WriteMode};

mod dump;
mod fields;
mod streams;

pub use dump::quoted;
pub use fields::{fpat_split, split_str};

/// Bytes of the interpreter thread's stack (256 MB, `INTERP_STACK` in awk.rs) that nested
/// user function calls may take: a runaway recursion ends with a clear error before the
/// stack is spent, with room left for the deepest builtin or expression under the last
/// call. Recursion goes as deep as this allows (tens of thousands of calls), as gawk's
/// goes as deep as its memory; the stack a recursion reaches is charged to the session's
/// memory like array elements.
const CALL_STACK_LIMIT: usize = 192 * 1024 * 1024;
/// Operations between checks for cancellation.
const TICKS_PER_CHECK: u32 = 1 << 14;
/// Dynamic regexes kept compiled at once.
const DYN_REGEX_CACHE: usize = 256;
/// Array memory is charged to the budget in steps of this size.
const CHARGE_STEP: usize = 256 * 1024;
/// Per-element overhead counted for array memory.
const ELEM_OVERHEAD: usize = 64;
/// Longest string a concatenation may build: a doubling loop stops here with a clear
/// error instead of taking the session's (and the server's) memory.
pub const MAX_STRING: usize = 64 * 1024 * 1024;
/// Output streams and input streams open at once (files, pipes).
const MAX_OPEN_STREAMS: usize = 1024;

/// An awk array: elements walked in gawk's order, each holding a value or (gawk) a
/// subarray.
pub type Array = super::array::GawkArray<Cell>;
pub type ArrRef = Rc<RefCell<Array>>;

#[derive(Clone, Debug, Default)]
pub enum Cell {
    #[default]
    Uninit,
    Val(Value),
    Arr(ArrRef),
}

/// What an expression names where an array may stand (a function argument, `length`'s,
/// `isarray`'s): an array (a variable's or a subarray) or a scalar value.
pub enum Operand {
    /// The array, and when it is a subarray the keys of the element holding it.
    Array(ArrRef, Vec<Str>),
    Scalar(Value),
}

/// An lvalue resolved to where it stores: a variable, a field, or an element (its path,
/// array, the path's keys and its key).
pub(super) enum Place<'a> {
    Var(Var),
    Field(usize),
    Elem(&'a ArrayPath, ArrRef, Vec<Str>, Key),
}

/// A subscript, and whether it came from input: a new element filed under a string
/// subscript reads back in `for (k in a)` as a strnum then, else as a string.
pub(super) type Key = (Str, bool);

/// Why execution stopped abnormally.
pub enum Fail {
    /// `fatal:` message; status 2.
    Fatal(String),
    /// The stream layer stopped us.
    Stop(Interrupt),
    /// `exit` inside a function: unwinds to the rule loop.
    Exit,
    /// `next` inside a function.
    Next,
    /// `nextfile` inside a function.
    NextFile,
}

impl From<Interrupt> for Fail {
    fn from(i: Interrupt) -> Self {
        Fail::Stop(i)
    }
}

type R<T> = Result<T, Fail>;

enum Flow {
    Normal,
    Break,
    Continue,
    Next,
    NextFile,
    Exit,
    Return(Value),
}

#[derive(Clone)]
enum FsMode {
    Space,
    Byte(u8),
    Regex(Rc<Regex>),
    Chars,
    /// gawk's FPAT: fields are what the regex matches.
    Fpat(Rc<Regex>),
    /// gawk's FIELDWIDTHS: (characters skipped, width) per field; a width of
    /// `usize::MAX` (`*`) takes the rest of the record.
    Widths(Rc<[(usize, usize)]>),
}

/// Which variable field splitting follows: the one assigned last.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SplitBy {
    Fs,
    Fpat,
    Widths,
}

/// The main input: ARGV's files in turn, or stdin.
struct MainInput {
    argi: usize,
    cur: Option<RecordReader>,
    used_file: bool,
    done: bool,
}

enum InStream {
    File(RecordReader),
    Cmd(RecordReader, tokio::task::JoinHandle<i32>),
}

/// `--lint`'s mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lint {
    Off,
    /// Warnings on stderr.
    Warn,
    /// `--lint=fatal`: the first warning is a fatal error.
    Fatal,
}

pub struct Interp {
    prog: Rc<Program>,
    ctx: Context,
    rt: Handle,
    /// Source name for messages (`cmd. line` or the -f file).
    pub src_name: String,
    /// The program's line table, to name a warning's source file and line.
    pub table: Vec<super::source::Row>,
    globals: Vec<Cell>,
    frames: Vec<Vec<Cell>>,
    /// Per frame: the function, and for each array parameter the name of the array the
    /// caller passed (gawk's `z (from b)` in messages).
    calls: Vec<(usize, Vec<Option<Rc<str>>>)>,
    /// The globals' names, shared into `calls`.
    global_names: Vec<Rc<str>>,
    rec: Vec<u8>,
    split_done: bool,
    ranges: Vec<(usize, usize)>,
    owned: Option<Vec<Value>>,
    nf: usize,
    rec_stale: bool,
    nr: f64,
    fnr: f64,
    fs_mode: FsMode,
    split_by: SplitBy,
    rs_mode: RsMode,
    ofs: Vec<u8>,
    ors: Vec<u8>,
    subsep: Vec<u8>,
    convfmt: Vec<u8>,
    ofmt: Vec<u8>,
    ignorecase: bool,
    regexes: Vec<Rc<Regex>>,
    regexes_ci: Vec<Option<Rc<Regex>>>,
    dyn_cache: HashMap<(Vec<u8>, bool), Rc<Regex>>,
    /// Regex warnings already given (gawk gives each once).
    warned: std::collections::HashSet<String>,
    out: Vec<u8>,
    /// Output redirections in the order they were opened: at exit gawk closes the most
    /// recently opened first (observable as the order commands' output appears in).
    outs: indexmap::IndexMap<Vec<u8>, OutStream>,
    ins: HashMap<Vec<u8>, InStream>,
    main: MainInput,
    range_active: Vec<bool>,
    pub exit_code: i32,
    /// `--sandbox`: `system()` and every redirection (`/dev/stdout` too) are fatal.
    pub sandbox: bool,
    /// Whether `var=value` operands are assignments (not under `-E`).
    pub operand_assigns: bool,
    /// `--lint`: gawk's warnings about dubious constructs as they run (uninitialised
    /// values, bad `substr` arguments, closing what is not open, ...).
    pub lint: Lint,
    /// The slot of `SYMTAB` when the program names it: its elements are the globals.
    symtab: Option<usize>,
    /// The slot of `LINT` when the program names it: assigning it turns lint on or off.
    lint_slot: Option<usize>,
    /// The slot of `ARGIND` when the program names it (set to the current file's ARGV
    /// index).
    pub(super) argind: Option<usize>,
    ticks: u32,
    rng: super::random::Random,
    /// The seed `srand` last set (gawk's first `srand()` returns 1).
    seed: i64,
    pub cur_line: usize,
    mem: Charge,
    mem_used: usize,
    /// The stack address when the interpreter was made, on its own thread: the base
    /// that [`Interp::stack_check`] measures calls' stack from.
    stack_base: usize,
    /// Stack bytes already charged to `mem`: the deepest the calls have gone.
    stack_charged: usize,
    in_end: bool,
    /// The value last assigned to NF while the record it cut is current: gawk keeps it
    /// (`NF = "3x"` reads back as `3x`); splitting a new record forgets it.
    nf_assigned: Option<Value>,
    /// Whether `$0` has been given a value (read or assigned): `--lint` warns of reading
    /// it before.
    rec_set: bool,
}

/// gawk's fatal error for `next` or `nextfile` run (in a function) from BEGIN or END.
fn called_from(f: &Fail, rule: &str) -> Fail {
    let what = if matches!(f, Fail::Next) {
        "next"
    } else {
        "nextfile"
    };
    Fail::Fatal(format!("`{what}' cannot be called from a `{rule}' rule"))
}

/// Parses FIELDWIDTHS: blank-separated `[skip:]width` items, the last may be `*`.
fn parse_widths(spec: &[u8]) -> R<Rc<[(usize, usize)]>> {
    let mut out = Vec::new();
    // Each item with the offset it starts at: gawk quotes the rest of the value from there.
    let mut words: Vec<(usize, &[u8])> = Vec::new();
    let mut at = 0;
    for w in spec.split(|b| b.is_ascii_whitespace()) {
        if !w.is_empty() {
            words.push((at, w));
        }
        at += w.len() + 1;
    }
    let bad = |n: usize, at: usize| {
        Fail::Fatal(format!(
            "invalid FIELDWIDTHS value, for field {n}, near `{}'",
            lossy(&spec[at..])
        ))
    };
    let num = |w: &[u8]| -> Option<usize> {
        if w.is_empty() || !w.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(w).ok()?.parse().ok()
    };
    for (i, &(at, w)) in words.iter().enumerate() {
        let (skip, width) = match w.iter().position(|&b| b == b':') {
            Some(c) => (num(&w[..c]).ok_or_else(|| bad(i + 1, at))?, &w[c + 1..]),
            None => (0, w),
        };
        let width = if width == b"*" {
            if i + 1 != words.len() {
                return Err(Fail::Fatal(
                    "`*' must be the last designator in FIELDWIDTHS".into(),
                ));
            }
            usize::MAX
        } else {
            num(width)
                .filter(|&n| n > 0)
                .ok_or_else(|| bad(i + 1, at))?
        };
        out.push((skip, width));
    }
    Ok(Rc::from(out))
}

/// The text lower-cased for IGNORECASE comparisons (characters in UTF-8 text, ASCII
/// bytes otherwise).
pub fn fold_case(s: &[u8]) -> Vec<u8> {
    match super::value::as_chars(s) {
        Some(t) if !t.is_ascii() => t.to_lowercase().into_bytes(),
        _ => s.to_ascii_lowercase(),
    }
}

fn lossy(s: &[u8]) -> String {
    String::from_utf8_lossy(s).into_owned()
}

impl Interp {
    pub fn new(
        prog: Program,
        ctx: Context,
        rt: Handle,
        argv: Vec<String>,
        assigns: Vec<(String, String)>,
        regexes: Vec<Rc<Regex>>,
    ) -> R<Interp> {
        let prog = Rc::new(prog);
        let n = prog.globals.len();
        let global_names = prog.globals.iter().map(|g| Rc::from(g.as_str())).collect();
        let mem = ctx.budget.empty_charge();
        let mut me = Interp {
            regexes_ci: vec![None; regexes.len()],
            regexes,
            range_active: vec![false; prog.rules.len()],
            prog,
            rt,
            src_name: "cmd. line".into(),
            table: Vec::new(),
            globals: vec![Cell::Uninit; n],
            frames: Vec::new(),
            calls: Vec::new(),
            global_names,
            rec: Vec::new(),
            split_done: true,
            ranges: Vec::new(),
            owned: None,
            nf: 0,
            rec_stale: false,
            nr: 0.0,
            fnr: 0.0,
            fs_mode: FsMode::Space,
            split_by: SplitBy::Fs,
            rs_mode: RsMode::Byte(b'\n'),
            ofs: b" ".to_vec(),
            ors: b"\n".to_vec(),
            subsep: b"\x1c".to_vec(),
            convfmt: b"%.6g".to_vec(),
            ofmt: b"%.6g".to_vec(),
            ignorecase: false,
            dyn_cache: HashMap::new(),
            warned: std::collections::HashSet::new(),
            out: Vec::new(),
            outs: indexmap::IndexMap::new(),
            ins: HashMap::new(),
            main: MainInput {
                argi: 1,
                cur: None,
                used_file: false,
                done: false,
            },
            exit_code: 0,
            sandbox: false,
            operand_assigns: true,
            lint: Lint::Off,
            symtab: None,
            lint_slot: None,
            argind: None,
            ticks: 0,
            rng: super::random::Random::new(),
            seed: 1,
            cur_line: 0,
            mem,
            mem_used: 0,
            stack_base: stack_address(),
            stack_charged: 0,
            in_end: false,
            nf_assigned: None,
            rec_set: false,
            ctx,
        };
        me.globals[V_FS] = Cell::Val(Value::str(&b" "[..]));
        me.globals[V_OFS] = Cell::Val(Value::str(&b" "[..]));
        me.globals[V_ORS] = Cell::Val(Value::str(&b"\n"[..]));
        me.globals[V_RS] = Cell::Val(Value::str(&b"\n"[..]));
        me.globals[V_SUBSEP] = Cell::Val(Value::str(&b"\x1c"[..]));
        me.globals[V_CONVFMT] = Cell::Val(Value::str(&b"%.6g"[..]));
        me.globals[V_OFMT] = Cell::Val(Value::str(&b"%.6g"[..]));
        me.globals[V_RSTART] = Cell::Val(Value::Num(0.0));
        me.globals[V_RLENGTH] = Cell::Val(Value::Num(0.0));
        me.globals[V_IGNORECASE] = Cell::Val(Value::Num(0.0));
        me.globals[V_FILENAME] = Cell::Val(Value::str(Vec::new()));
        me.globals[V_RT] = Cell::Val(Value::str(Vec::new()));
        me.globals[V_FPAT] = Cell::Val(Value::str(&b"[^[:space:]]+"[..]));
        me.globals[V_FIELDWIDTHS] = Cell::Val(Value::str(Vec::new()));
        me.globals[V_ERRNO] = Cell::Val(Value::str(Vec::new()));
        let mut env = Array::default();
        for (k, v) in &me.ctx.env {
            env.insert(
                Rc::from(k.as_bytes()),
                Cell::Val(Value::strnum(&crate::bytetext::encode(v))),
            );
        }
        me.globals[V_ENVIRON] = Cell::Arr(Rc::new(RefCell::new(env)));
        let mut av = Array::default();
        for (i, a) in argv.iter().enumerate() {
            av.insert(
                key_num(i as f64),
                Cell::Val(Value::strnum(&crate::bytetext::encode(a))),
            );
        }
        me.globals[V_ARGC] = Cell::Val(Value::Num(argv.len() as f64));
        me.globals[V_ARGV] = Cell::Arr(Rc::new(RefCell::new(av)));
        let mut pi = Array::default();
        let uid = crate::cmd::id::UID.to_string();
        let gid = crate::cmd::id::GID.to_string();
        for (k, v) in [
            (&b"version"[..], &b"5.2.1"[..]),
            (b"strftime", b"%a %b %e %H:%M:%S %Z %Y"),
            (b"FS", b"FS"),
            (b"platform", b"posix"),
            (b"uid", uid.as_bytes()),
            (b"euid", uid.as_bytes()),
            (b"gid", gid.as_bytes()),
            (b"egid", gid.as_bytes()),
        ] {
            pi.insert(Rc::from(k), Cell::Val(Value::str(v)));
        }
        for (k, v) in [(&b"api_major"[..], 3.0), (b"api_minor", 2.0)] {
            pi.insert(Rc::from(k), Cell::Val(Value::Num(v)));
        }
        // A session has no host processes: awk takes a fresh pid from the session's
        // counter, its parent is the session's shell (`$$`, as bash runs a command), and
        // so is its process group (the shell of an ssh session leads its group).
        if let Some((pid, shell)) = me.ctx.launcher.process_ids() {
            for (k, v) in [(&b"pid"[..], pid), (b"ppid", shell), (b"pgrpid", shell)] {
                pi.insert(Rc::from(k), Cell::Val(Value::Num(f64::from(v))));
            }
        }
        pi.insert(
            Rc::from(&b"identifiers"[..]),
            Cell::Arr(Rc::new(RefCell::new(identifiers(&me.prog)))),
        );
        me.globals[V_PROCINFO] = Cell::Arr(Rc::new(RefCell::new(pi)));
        let slot = |name: &str| me.prog.globals.iter().position(|g| g == name);
        me.symtab = slot("SYMTAB");
        me.lint_slot = slot("LINT");
        me.argind = slot("ARGIND");
        if let Some(td) = slot("TEXTDOMAIN") {
            me.globals[td] = Cell::Val(Value::str(&b"messages"[..]));
        }
        // The MPFR variables keep their double-precision values; the others start at 0.
        for (name, v) in [
            ("PREC", Value::Num(53.0)),
            ("ROUNDMODE", Value::str(&b"N"[..])),
            ("BINMODE", Value::Num(0.0)),
            ("LINT", Value::Num(0.0)),
            ("ARGIND", Value::Num(0.0)),
        ] {
            if let Some(i) = slot(name) {
                me.globals[i] = Cell::Val(v);
            }
        }
        if let Some(ft) = slot("FUNCTAB") {
            // FUNCTAB: every builtin and user function, each its own name.
            let mut t = Array::default();
            let user = me
                .prog
                .funcs
                .iter()
                .filter(|f| f.defined)
                .map(|f| f.name.as_str());
            for name in BUILTIN_FUNCS.iter().copied().chain(user) {
                t.insert(
                    Rc::from(name.as_bytes()),
                    Cell::Val(Value::str(name.as_bytes())),
                );
            }
            me.globals[ft] = Cell::Arr(Rc::new(RefCell::new(t)));
        }
        for (name, val) in assigns {
            me.assign_cmdline(&name, &val)?;
        }
        Ok(me)
    }

    /// `-v name=value` and `name=value` operands: escapes processed, value a strnum.
    fn assign_cmdline(&mut self, name: &str, val: &str) -> R<()> {
        let name = name.strip_prefix("awk::").unwrap_or(name);
        if super::lex::KEYWORDS.contains(&name) || super::lex::is_builtin(name) {
            return Err(Fail::Fatal(format!(
                "cannot use gawk builtin `{name}' as variable name"
            )));
        }
        let Some(idx) = self.prog.globals.iter().position(|g| g == name) else {
            return Ok(());
        };
        let mut warnings = Vec::new();
        let text = unescape(&crate::bytetext::encode(val), &mut warnings);
        // `@/re/` is a typed regexp, as in program text.
        let v = match text.strip_prefix(b"@/").and_then(|t| t.strip_suffix(b"/")) {
            Some(re) => Value::Regex(Rc::from(re)),
            None => Value::strnum(&text),
        };
        for w in warnings {
            if self.warned.insert(w.clone()) {
                self.warn(&w);
            }
        }
        if matches!(self.globals[idx], Cell::Arr(_)) {
            return Err(Fail::Fatal(format!(
                "cannot use array `{name}' in scalar context"
            )));
        }
        self.set_global(idx, v)
    }

    // ---- messages ----

    /// gawk's prefix for a message: the source line, and once a record has been read
    /// (`FNR` > 0) the input file and record (`(FILENAME=f FNR=n) `).
    pub fn location(&self) -> String {
        let mut out = if self.cur_line == 0 {
            "awk: ".to_string()
        } else {
            if self.table.is_empty() {
                format!("awk: {}:{}: ", self.src_name, self.cur_line)
            } else {
                let (name, l) = super::source::locate(&self.table, self.cur_line);
                format!("awk: {name}:{l}: ")
            }
        };
        out.push_str(&self.record_location());
        out
    }

    /// `(FILENAME=f FNR=n) ` once a record has been read, else nothing.
    pub fn record_location(&self) -> String {
        let mut out = String::new();
        if self.fnr > 0.0 {
            let name = match &self.globals[V_FILENAME] {
                Cell::Val(v) => v.to_str_with(b"%.6g").to_vec(),
                _ => Vec::new(),
            };
            out.push_str(&format!(
                "(FILENAME={} FNR={}) ",
                String::from_utf8_lossy(&name),
                String::from_utf8_lossy(&super::value::num_to_str(self.fnr, b"%.6g"))
            ));
        }
        out
    }

    /// A `--lint` warning (fatal under `--lint=fatal`).
    pub(super) fn lint_warn(&mut self, msg: &str) -> R<()> {
        match self.lint {
            Lint::Off => Ok(()),
            Lint::Warn => {
                self.warn(msg);
                Ok(())
            }
            Lint::Fatal => Err(Fail::Fatal(msg.to_string())),
        }
    }

    /// `--lint`'s warning for reading a value never set (`what`: variable, argument).
    fn lint_uninit(&mut self, what: &str, name: &str) -> R<()> {
        self.lint_warn(&format!("reference to uninitialized {what} `{name}'"))
    }

    /// `--lint`'s warning for reading an element never set: named, for an array
    /// parameter, after the array the caller passed (`z["2"]`).
    fn lint_uninit_elem(&mut self, v: Var, mut keys: Vec<Str>, key: &Str) -> R<()> {
        keys.push(key.clone());
        let mut name = match v {
            Var::Local(_) => self.array_origin(v).map_or_else(
                || self.var_name(v),
                |s| s.rsplit("from ").next().unwrap_or_default().to_string(),
            ),
            Var::Global(_) => self.var_name(v),
        };
        for k in &keys {
            name.push_str(&format!("[\"{}\"]", lossy(k)));
        }
        self.lint_uninit("element", &name)
    }

    /// `LINT = v` while running: a true value turns the warnings on (`"fatal"` makes
    /// them fatal), a false one off, saying so.
    fn set_lint(&mut self, v: &Value) {
        if v.truthy() {
            let fatal = matches!(v, Value::Str(s) | Value::StrNum(s) if &**s == b"fatal");
            self.lint = if fatal { Lint::Fatal } else { Lint::Warn };
        } else if self.lint != Lint::Off {
            self.warn("turning off `--lint' due to assignment to `LINT'");
            self.lint = Lint::Off;
        }
    }

    fn warn(&mut self, msg: &str) {
        let text = format!("{}warning: {msg}\n", self.location());
        let _ = self.flush_stdout();
        let _ = self.rt.block_on(self.ctx.stderr.write_str(&text));
    }

    // ---- running ----

    fn tick(&mut self) -> R<()> {
        self.ticks += 1;
        if self.ticks >= TICKS_PER_CHECK {
            self.ticks = 0;
            if self.ctx.cancel.is_cancelled() {
                return Err(Fail::Stop(Interrupt::Cancelled));
            }
        }
        Ok(())
    }

    /// Runs the whole program; the result is the exit status.
    pub fn run(&mut self) -> R<i32> {
        let prog = self.prog.clone();
        let exiting = match self.exec_block(&prog.begin) {
            Ok(Flow::Exit) | Err(Fail::Exit) => true,
            Ok(_) => false,
            // Only a function can reach here with them (the parser refuses them in BEGIN).
            Err(f @ (Fail::Next | Fail::NextFile)) => return Err(called_from(&f, "BEGIN")),
            Err(e) => return Err(e),
        };
        if !exiting && prog.has_main {
            self.main_loop(&prog)?;
        }
        self.in_end = true;
        // END runs after exit, unless exit came from END itself.
        match self.exec_block(&prog.end) {
            Ok(_) | Err(Fail::Exit) => {}
            Err(f @ (Fail::Next | Fail::NextFile)) => return Err(called_from(&f, "END")),
            Err(e) => return Err(e),
        }
        self.finish()?;
        Ok(self.exit_code)
    }

    fn main_loop(&mut self, prog: &Program) -> R<bool> {
        loop {
            let Some(rec) = self.next_main_record()? else {
                return Ok(false);
            };
            self.set_record(rec);
            self.nr += 1.0;
            self.fnr += 1.0;
            let flow = match self.run_rules(prog) {
                Ok(f) => f,
                Err(Fail::Exit) => Flow::Exit,
                Err(Fail::Next) => Flow::Normal,
                Err(Fail::NextFile) => Flow::NextFile,
                Err(e) => return Err(e),
            };
            match flow {
                Flow::Exit => return Ok(true),
                Flow::NextFile => {
                    self.main.cur = None;
                    if !prog.endfile.is_empty()
                        && let Flow::Exit = self.exec_block(&prog.endfile)?
                    {
                        return Ok(true);
                    }
                }
                _ => {}
            }
        }
    }

    fn run_rules(&mut self, prog: &Program) -> R<Flow> {
        for (i, rule) in prog.rules.iter().enumerate() {
            let hit = match &rule.pattern {
                Pattern::All => true,
                Pattern::Expr(e) => self.cond(e)?,
                Pattern::Range(a, b) => {
                    if self.range_active[i] {
                        if self.cond(b)? {
                            self.range_active[i] = false;
                        }
                        true
                    } else if self.cond(a)? {
                        if !self.cond(b)? {
                            self.range_active[i] = true;
                        }
                        true
                    } else {
                        false
                    }
                }
            };
            if !hit {
                continue;
            }
            match &rule.action {
                None => {
                    let rec = self.record_bytes();
                    self.out.extend_from_slice(&rec);
                    let ors = self.ors.clone();
                    self.out.extend_from_slice(&ors);
                    self.maybe_flush()?;
                }
                Some(body) => match self.exec_block(body)? {
                    Flow::Next => return Ok(Flow::Normal),
                    f @ (Flow::Exit | Flow::NextFile) => return Ok(f),
                    _ => {}
                },
            }
        }
        Ok(Flow::Normal)
    }

    // ---- variables ----

    fn cell_value(&self, i: usize) -> Value {
        match &self.globals[i] {
            Cell::Val(v) => v.clone(),
            _ => Value::Uninit,
        }
    }

    fn global_str(&self, i: usize) -> Str {
        self.cell_value(i).to_str_with(&self.convfmt)
    }

    fn get_global(&mut self, i: usize) -> R<Value> {
        match i {
            V_NF => {
                self.ensure_split();
                match &self.nf_assigned {
                    Some(v) => Ok(v.clone()),
                    None => Ok(Value::Num(self.nf as f64)),
                }
            }
            V_NR | V_FNR => {
                // The value assigned is kept while the count it gave holds (`NR = "3x"`
                // reads back as `3x`, `NR = 2.5` as 2), as gawk's update_NR does.
                let n = if i == V_NR { self.nr } else { self.fnr };
                match &self.globals[i] {
                    Cell::Val(v) if v.to_num() == n => Ok(v.clone()),
                    _ => Ok(Value::Num(n)),
                }
            }
            _ => match &self.globals[i] {
                Cell::Val(Value::Uninit) if self.lint != Lint::Off => {
                    self.lint_uninit("variable", &self.prog.globals[i].clone())?;
                    Ok(Value::Uninit)
                }
                Cell::Val(v) => Ok(v.clone()),
                Cell::Uninit => {
                    // Read as a scalar, an untyped variable is one from now on.
                    self.globals[i] = Cell::Val(Value::Uninit);
                    if self.lint != Lint::Off {
                        self.lint_uninit("variable", &self.prog.globals[i].clone())?;
                    }
                    Ok(Value::Uninit)
                }
                Cell::Arr(_) => Err(Fail::Fatal(format!(
                    "attempt to use array `{}' in a scalar context",
                    self.prog.globals[i]
                ))),
            },
        }
    }

    /// Sets RT, without allocating when it did not change (the common case).
    fn set_rt(&mut self, rt: &[u8]) {
        if let Cell::Val(Value::Str(s)) = &self.globals[V_RT]
            && **s == *rt
        {
            return;
        }
        self.globals[V_RT] = Cell::Val(Value::str(rt.to_vec()));
    }

    fn set_global_raw(&mut self, i: usize, v: Value) {
        self.globals[i] = Cell::Val(v);
    }

    fn set_global(&mut self, i: usize, v: Value) -> R<()> {
        if let Cell::Arr(_) = self.globals[i] {
            return Err(Fail::Fatal(format!(
                "attempt to use array `{}' in a scalar context",
                self.prog.globals[i]
            )));
        }
        if i >= SPECIALS.len() {
            if Some(i) == self.lint_slot {
                self.set_lint(&v);
            }
            self.globals[i] = Cell::Val(v);
            return Ok(());
        }
        match i {
            V_NF => {
                self.set_nf(v.to_num())?;
                self.nf_assigned = Some(v);
                return Ok(());
            }
            V_NR | V_FNR => {
                // gawk keeps the counts as integers.
                let n = v.to_num();
                let n = if n.is_finite() { n.trunc() } else { 0.0 };
                if i == V_NR {
                    self.nr = n;
                } else {
                    self.fnr = n;
                }
                self.globals[i] = Cell::Val(v);
                return Ok(());
            }
            _ => {}
        }
        let s = v.to_str_with(&self.convfmt).to_vec();
        self.globals[i] = Cell::Val(v);
        match i {
            V_FS | V_FPAT | V_FIELDWIDTHS => {
                // The current record keeps the separator it was read with.
                self.ensure_split();
                self.split_by = match i {
                    V_FS => SplitBy::Fs,
                    V_FPAT => SplitBy::Fpat,
                    _ => SplitBy::Widths,
                };
                let name: &[u8] = match self.split_by {
                    SplitBy::Fs => b"FS",
                    SplitBy::Fpat => b"FPAT",
                    SplitBy::Widths => b"FIELDWIDTHS",
                };
                if let Cell::Arr(p) = &self.globals[V_PROCINFO] {
                    p.borrow_mut()
                        .insert(Rc::from(&b"FS"[..]), Cell::Val(Value::str(name.to_vec())));
                }
                self.update_fs()?;
            }
            V_RS => self.update_rs(&s)?,
            V_OFS => self.ofs = s,
            V_ORS => self.ors = s,
            V_SUBSEP => self.subsep = s,
            V_CONVFMT => self.convfmt = s,
            V_OFMT => self.ofmt = s,
            V_IGNORECASE if super::lex::compat() != super::lex::Compat::Gnu => {
                // gawk's compatibility modes ignore it, saying so once.
                let w = "`IGNORECASE' is a gawk extension";
                if self.warned.insert(w.to_string()) {
                    self.warn(w);
                }
            }
            V_IGNORECASE => {
                self.ignorecase = self.cell_value(V_IGNORECASE).truthy();
                self.ensure_split();
                self.update_fs()?;
                let rs = self.global_str(V_RS).to_vec();
                self.update_rs(&rs)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn update_fs(&mut self) -> R<()> {
        self.fs_mode = match self.split_by {
            SplitBy::Fs => {
                let fs = self.global_str(V_FS).to_vec();
                let para = matches!(self.rs_mode, RsMode::Para);
                self.fs_mode_for(&fs, para)?
            }
            SplitBy::Fpat => {
                let pat = self.global_str(V_FPAT).to_vec();
                FsMode::Fpat(self.dyn_regex(&pat)?)
            }
            SplitBy::Widths => {
                let spec = self.global_str(V_FIELDWIDTHS).to_vec();
                FsMode::Widths(parse_widths(&spec)?)
            }
        };
        Ok(())
    }

    /// The separator `split()` uses without a third argument: FS's, whatever splits
    /// records.
    /// (In paragraph mode too, split() does not add newline to a one-character FS.)
    fn fs_split_mode(&mut self) -> R<FsMode> {
        let para = matches!(self.rs_mode, RsMode::Para);
        if self.split_by == SplitBy::Fs && !para {
            return Ok(self.fs_mode.clone());
        }
        let fs = self.global_str(V_FS).to_vec();
        self.fs_mode_for(&fs, false)
    }

    fn fs_mode_for(&mut self, fs: &[u8], para: bool) -> R<FsMode> {
        Ok(match fs {
            b" " => FsMode::Space,
            b"" => FsMode::Chars,
            // A single character is literal and case-sensitive even under IGNORECASE.
            [c] if *c != b'\\' && !para => FsMode::Byte(*c),
            _ => {
                let mut pat = if fs.len() == 1 {
                    // A single character is literal.
                    let mut p = b"[".to_vec();
                    if fs[0] == b'\\' || fs[0] == b'^' {
                        p.push(b'\\');
                    }
                    p.push(fs[0]);
                    p.push(b']');
                    p
                } else {
                    fs.to_vec()
                };
                if para {
                    pat = [b"(".as_slice(), &pat, b")|\n"].concat();
                }
                FsMode::Regex(self.dyn_regex(&pat)?)
            }
        })
    }

    fn update_rs(&mut self, rs: &[u8]) -> R<()> {
        self.rs_mode = match rs {
            b"" => RsMode::Para,
            [c] => RsMode::Byte(*c),
            _ => RsMode::Regex(self.dyn_regex(rs)?),
        };
        self.update_fs()
    }

    fn local(&mut self, i: usize) -> &mut Cell {
        let frame = self.frames.last_mut();
        match frame {
            Some(f) => &mut f[i],
            None => unreachable_cell(),
        }
    }

    fn var_cell(&mut self, v: Var) -> &mut Cell {
        match v {
            Var::Global(i) => &mut self.globals[i],
            Var::Local(i) => self.local(i),
        }
    }

    fn var_name(&self, v: Var) -> String {
        match v {
            Var::Global(i) => self.prog.globals[i].clone(),
            Var::Local(i) => match self.calls.last() {
                Some(&(f, _)) => self.prog.funcs[f]
                    .params
                    .get(i)
                    .cloned()
                    .unwrap_or_default(),
                None => String::new(),
            },
        }
    }

    /// gawk's message for an array used where a scalar must be; a parameter is named
    /// with the array the caller passed.
    fn array_as_scalar(&self, v: Var) -> Fail {
        let mut name = self.var_name(v);
        if let (Var::Local(i), Some((_, from))) = (v, self.calls.last())
            && let Some(Some(from)) = from.get(i)
        {
            name = format!("{name} (from {from})");
        }
        Fail::Fatal(format!("attempt to use array `{name}' in a scalar context"))
    }

    /// gawk's message for a scalar used as an array.
    fn scalar_as_array(&self, v: Var) -> Fail {
        let what = if let Var::Local(_) = v {
            "scalar parameter"
        } else {
            "scalar"
        };
        Fail::Fatal(format!(
            "attempt to use {what} `{}' as an array",
            self.var_name(v)
        ))
    }

    fn get_var(&mut self, v: Var) -> R<Value> {
        match v {
            Var::Global(i) => self.get_global(i),
            Var::Local(_) => match self.var_cell(v) {
                Cell::Val(Value::Uninit) => {
                    if self.lint != Lint::Off {
                        self.lint_uninit("argument", &self.var_name(v))?;
                    }
                    Ok(Value::Uninit)
                }
                Cell::Val(x) => Ok(x.clone()),
                c @ Cell::Uninit => {
                    *c = Cell::Val(Value::Uninit);
                    if self.lint != Lint::Off {
                        self.lint_uninit("argument", &self.var_name(v))?;
                    }
                    Ok(Value::Uninit)
                }
                Cell::Arr(_) => Err(self.array_as_scalar(v)),
            },
        }
    }

    fn set_var(&mut self, v: Var, val: Value) -> R<()> {
        match v {
            Var::Global(i) => self.set_global(i, val),
            Var::Local(_) => {
                let c = self.var_cell(v);
                if let Cell::Arr(_) = c {
                    return Err(self.array_as_scalar(v));
                }
                *c = Cell::Val(val);
                Ok(())
            }
        }
    }

    /// The array a variable names, created if it was untyped (a variable once read as a
    /// scalar is a scalar, even with no value yet).
    fn array(&mut self, v: Var) -> R<ArrRef> {
        let c = self.var_cell(v);
        match c {
            Cell::Arr(a) => Ok(a.clone()),
            Cell::Uninit => {
                let a = Rc::new(RefCell::new(Array::default()));
                *c = Cell::Arr(a.clone());
                Ok(a)
            }
            Cell::Val(_) => Err(self.scalar_as_array(v)),
        }
    }

    fn charge(&mut self, bytes: usize) -> R<()> {
        self.mem_used += bytes;
        if self.mem_used > self.mem.bytes() {
            self.mem
                .resize(self.mem_used + CHARGE_STEP)
                .map_err(|e| Fail::Stop(Interrupt::OutOfMemory(e)))?;
        }
        Ok(())
    }

    fn subscript(&mut self, subs: &[Expr]) -> R<Str> {
        Ok(self.subscript_typed(subs)?.0)
    }

    /// The subscript, and whether it is a string from input.
    fn subscript_typed(&mut self, subs: &[Expr]) -> R<Key> {
        if subs.len() == 1 {
            let v = self.eval(&subs[0])?;
            return Ok((key_of(&v, &self.convfmt), matches!(v, Value::StrNum(_))));
        }
        let mut k = Vec::new();
        for (i, s) in subs.iter().enumerate() {
            if i > 0 {
                k.extend_from_slice(&self.subsep);
            }
            let v = self.eval(s)?;
            match v {
                Value::Num(n) if n == n.trunc() && n.abs() < 1e16 => push_num(&mut k, n, b"%d"),
                other => other.append_to(&mut k, &self.convfmt),
            }
        }
        Ok((Rc::from(k), false))
    }

    /// The array `p` names: the variable's, then at each level of its path the subarray
    /// held there (made where the element is missing or untyped). Also gives the path's
    /// keys, for messages.
    fn array_at(&mut self, p: &ArrayPath) -> R<(ArrRef, Vec<Str>)> {
        let walked = self.walk(p, true)?;
        walked.ok_or_else(|| Fail::Fatal("missing subarray".into()))
    }

    /// Follows `p`; a missing or untyped element on the way becomes a subarray when
    /// `create`, else the walk gives nothing (`delete a[1][2]` makes no `a[1]`).
    fn walk(&mut self, p: &ArrayPath, create: bool) -> R<Option<(ArrRef, Vec<Str>)>> {
        let mut arr = self.array(p.var)?;
        let mut keys = Vec::new();
        let symtab = self.symtab.is_some_and(|s| p.var == Var::Global(s));
        for (n, subs) in p.path.iter().enumerate() {
            let (key, strnum) = self.subscript_typed(subs)?;
            keys.push(key.clone());
            // `SYMTAB["arr"][k]`: the global array itself.
            let global = (symtab && n == 0)
                .then(|| {
                    let name = std::str::from_utf8(&key).ok()?;
                    let i = self.prog.globals.iter().position(|g| g == name)?;
                    match &self.globals[i] {
                        Cell::Arr(a) => Some(Cell::Arr(a.clone())),
                        _ => None,
                    }
                })
                .flatten();
            let got = global.or_else(|| arr.borrow().get(&key).cloned());
            arr = match got {
                Some(Cell::Arr(sub)) => sub,
                None | Some(Cell::Uninit | Cell::Val(Value::Uninit)) if create => {
                    let sub = Rc::new(RefCell::new(Array::default()));
                    arr.borrow_mut()
                        .insert_typed(key, strnum, Cell::Arr(sub.clone()));
                    sub
                }
                None | Some(Cell::Uninit | Cell::Val(Value::Uninit)) => return Ok(None),
                Some(Cell::Val(_)) => {
                    return Err(Fail::Fatal(format!(
                        "attempt to use scalar `{}' as an array",
                        self.elem_name(p.var, &keys)
                    )));
                }
            };
        }
        Ok(Some((arr, keys)))
    }

    /// The array `in` and `for (k in …)` look in: when an element on the path holds a
    /// scalar gawk names no element.
    fn scanned_array(&mut self, p: &ArrayPath) -> R<ArrRef> {
        match self.array_at(p) {
            Ok((a, _)) => Ok(a),
            Err(Fail::Fatal(m)) if !p.path.is_empty() && m.starts_with("attempt to use scalar") => {
                Err(Fail::Fatal("attempt to use a scalar value as array".into()))
            }
            Err(e) => Err(e),
        }
    }

    /// An element's name as gawk shows it: `a["1"]["x"]`.
    fn elem_name(&self, v: Var, keys: &[Str]) -> String {
        let mut name = self.var_name(v);
        for k in keys {
            name.push_str(&format!("[\"{}\"]", lossy(k)));
        }
        name
    }

    fn subarray_as_scalar(&self, v: Var, mut keys: Vec<Str>, key: Str) -> Fail {
        keys.push(key);
        Fail::Fatal(format!(
            "attempt to use array `{}' in a scalar context",
            self.elem_name(v, &keys)
        ))
    }

    /// The global `SYMTAB[key]` stands for, when `p` is SYMTAB itself.
    fn symtab_slot(&self, p: &ArrayPath, key: &[u8]) -> Option<usize> {
        if p.path.is_empty() && p.var == Var::Global(self.symtab?) {
            let name = std::str::from_utf8(key).ok()?;
            return self
                .prog
                .globals
                .iter()
                .position(|g| g == name)
                .filter(|&i| !matches!(self.globals[i], Cell::Arr(_)));
        }
        None
    }

    fn elem_get(&mut self, p: &ArrayPath, subs: &[Expr]) -> R<Value> {
        let (key, strnum) = self.subscript_typed(subs)?;
        self.lint_null_subscript(p, &key)?;
        if let Some(i) = self.symtab_slot(p, &key) {
            return self.get_global(i);
        }
        let (arr, keys) = self.array_at(p)?;
        let mut a = arr.borrow_mut();
        match a.get(&key) {
            Some(Cell::Val(Value::Uninit) | Cell::Uninit) if self.lint != Lint::Off => {
                drop(a);
                self.lint_uninit_elem(p.var, keys, &key)?;
                return Ok(Value::Uninit);
            }
            Some(Cell::Val(x)) => return Ok(x.clone()),
            Some(Cell::Arr(_)) => {
                drop(a);
                return Err(self.subarray_as_scalar(p.var, keys, key));
            }
            Some(Cell::Uninit) => return Ok(Value::Uninit),
            None => {}
        }
        // Referencing an element creates it.
        let n = key.len() + ELEM_OVERHEAD;
        a.insert_typed(key.clone(), strnum, Cell::Val(Value::Uninit));
        drop(a);
        self.charge(n)?;
        if self.lint != Lint::Off {
            self.lint_uninit_elem(p.var, keys, &key)?;
        }
        Ok(Value::Uninit)
    }

    /// `--lint`'s note about an element whose subscript is the null string.
    fn lint_null_subscript(&mut self, p: &ArrayPath, key: &[u8]) -> R<()> {
        if key.is_empty() && self.lint != Lint::Off {
            let name = self.var_name(p.var);
            self.lint_warn(&format!("subscript of array `{name}' is null string"))?;
        }
        Ok(())
    }

    fn elem_set(
        &mut self,
        p: &ArrayPath,
        arr: &ArrRef,
        keys: Vec<Str>,
        (key, strnum): Key,
        val: Value,
    ) -> R<()> {
        if let Some(i) = self.symtab_slot(p, &key) {
            return self.set_global(i, val);
        }
        self.lint_null_subscript(p, &key)?;
        if p.path.is_empty()
            && let Var::Global(g) = p.var
        {
            if Some(g) == self.symtab {
                return Err(Fail::Fatal(
                    "cannot assign to arbitrary elements of SYMTAB".into(),
                ));
            }
            if self.prog.globals[g] == "FUNCTAB" {
                return Err(Fail::Fatal("cannot assign to elements of FUNCTAB".into()));
            }
        }
        let extra = match &val {
            Value::Str(s) | Value::StrNum(s) => s.len(),
            _ => 0,
        };
        let n = key.len() + ELEM_OVERHEAD + extra;
        let old = arr
            .borrow_mut()
            .insert_typed(key.clone(), strnum, Cell::Val(val));
        match old {
            None => self.charge(n)?,
            Some(Cell::Arr(sub)) => {
                // Put the subarray back: it cannot become a scalar.
                arr.borrow_mut().insert(key.clone(), Cell::Arr(sub));
                return Err(self.subarray_as_scalar(p.var, keys, key));
            }
            Some(_) if extra > 0 => self.charge(extra)?,
            Some(_) => {}
        }
        Ok(())
    }

    /// What `e` names where an array may stand; an untyped variable or element becomes
    /// an array when `want_array`.
    pub fn operand(&mut self, e: &Expr, want_array: bool) -> R<Operand> {
        match e {
            Expr::Lv(LValue::Var(v)) => match self.var_cell(*v) {
                Cell::Arr(a) => Ok(Operand::Array(a.clone(), Vec::new())),
                Cell::Uninit if want_array => Ok(Operand::Array(self.array(*v)?, Vec::new())),
                _ => Ok(Operand::Scalar(self.get_var(*v)?)),
            },
            Expr::Lv(LValue::Elem(p, subs)) => {
                let (key, strnum) = self.subscript_typed(subs)?;
                let (arr, mut keys) = self.array_at(p)?;
                let got = arr.borrow().get(&key).cloned();
                match got {
                    Some(Cell::Arr(sub)) => {
                        keys.push(key);
                        Ok(Operand::Array(sub, keys))
                    }
                    Some(Cell::Val(x)) if !(want_array && matches!(x, Value::Uninit)) => {
                        Ok(Operand::Scalar(x))
                    }
                    _ if want_array => {
                        let sub = Rc::new(RefCell::new(Array::default()));
                        arr.borrow_mut()
                            .insert_typed(key.clone(), strnum, Cell::Arr(sub.clone()));
                        keys.push(key);
                        Ok(Operand::Array(sub, keys))
                    }
                    got => {
                        if got.is_none() {
                            let n = key.len() + ELEM_OVERHEAD;
                            arr.borrow_mut()
                                .insert_typed(key, strnum, Cell::Val(Value::Uninit));
                            self.charge(n)?;
                        }
                        Ok(Operand::Scalar(Value::Uninit))
                    }
                }
            }
            _ => Ok(Operand::Scalar(self.eval(e)?)),
        }
    }

    // ---- lvalues ----

    fn lv_get(&mut self, lv: &LValue) -> R<Value> {
        match lv {
            LValue::Var(v) => self.get_var(*v),
            LValue::Field(e) => {
                let i = self.field_index(e)?;
                Ok(self.get_field(i))
            }
            LValue::Elem(p, subs) => self.elem_get(p, subs),
        }
    }

    fn field_index(&mut self, e: &Expr) -> R<usize> {
        let n = self.eval(e)?.to_num();
        if n < 0.0 {
            return Err(Fail::Fatal(format!("attempt to access field {}", n as i64)));
        }
        Ok(n as usize)
    }

    /// Assigns through an lvalue, evaluating its parts first; returns the value.
    fn assign_with(
        &mut self,
        lv: &LValue,
        f: &mut dyn FnMut(&mut Interp, Value) -> R<Value>,
    ) -> R<Value> {
        match lv {
            LValue::Var(v) => {
                let old = self.get_var(*v)?;
                let new = f(self, old)?;
                self.set_var(*v, new.clone())?;
                Ok(new)
            }
            LValue::Field(e) => {
                let i = self.field_index(e)?;
                let old = self.get_field(i);
                let new = f(self, old)?;
                self.set_field(i, new.clone())?;
                Ok(new)
            }
            LValue::Elem(p, subs) => {
                let (key, strnum) = self.subscript_typed(subs)?;
                let (arr, keys) = self.array_at(p)?;
                let old = arr.borrow().get(&key).cloned();
                let old = match old {
                    Some(Cell::Val(v)) => v,
                    Some(Cell::Arr(_)) => return Err(self.subarray_as_scalar(p.var, keys, key)),
                    _ => Value::Uninit,
                };
                let new = f(self, old)?;
                self.elem_set(p, &arr, keys, (key, strnum), new.clone())?;
                Ok(new)
            }
        }
    }

    fn assign(&mut self, lv: &LValue, val: Value) -> R<()> {
        let place = self.place(lv)?;
        self.store(place, val)
    }

    /// Where `lv` stores, its field index or subscripts evaluated now (getline
    /// evaluates them even when it reads nothing).
    pub(super) fn place<'a>(&mut self, lv: &'a LValue) -> R<Place<'a>> {
        Ok(match lv {
            LValue::Var(v) => Place::Var(*v),
            LValue::Field(e) => Place::Field(self.field_index(e)?),
            LValue::Elem(p, subs) => {
                let key = self.subscript_typed(subs)?;
                let (arr, keys) = self.array_at(p)?;
                Place::Elem(p, arr, keys, key)
            }
        })
    }

    pub(super) fn store(&mut self, place: Place<'_>, val: Value) -> R<()> {
        match place {
            Place::Var(v) => self.set_var(v, val),
            Place::Field(i) => self.set_field(i, val),
            Place::Elem(p, arr, keys, key) => self.elem_set(p, &arr, keys, key, val),
        }
    }

    // ---- statements ----

    fn exec_block(&mut self, body: &[Stmt]) -> R<Flow> {
        for s in body {
            match self.exec(s)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    fn exec(&mut self, s: &Stmt) -> R<Flow> {
        match s {
            Stmt::Line(n) => {
                self.cur_line = *n;
            }
            Stmt::Expr(e) => {
                self.eval(e)?;
            }
            Stmt::Print(args, dest) => {
                let mut buf = Vec::new();
                if args.is_empty() {
                    if self.lint != Lint::Off {
                        self.lint_field(0);
                    }
                    buf = self.record_bytes();
                } else {
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            buf.extend_from_slice(&self.ofs);
                        }
                        let v = self.eval(a)?;
                        match v {
                            Value::Num(n) => push_num(&mut buf, n, &self.ofmt),
                            other => other.append_to(&mut buf, &self.convfmt),
                        }
                    }
                }
                buf.extend_from_slice(&self.ors);
                let d = self.dest(dest)?;
                self.emit(d, &buf)?;
            }
            Stmt::Printf(args, dest) => {
                if args.is_empty() {
                    return Err(Fail::Fatal("printf: no arguments".into()));
                }
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let fmt = vals[0].to_str_with(&self.convfmt);
                let buf = self.format(&fmt, &vals[1..])?;
                let d = self.dest(dest)?;
                self.emit(d, &buf)?;
            }
            Stmt::If(c, t, e) => {
                if self.cond(c)? {
                    return self.exec(t);
                } else if let Some(e) = e {
                    return self.exec(e);
                }
            }
            Stmt::While(c, b) => {
                while self.cond(c)? {
                    self.tick()?;
                    match self.exec(b)? {
                        Flow::Break => break,
                        Flow::Normal | Flow::Continue => {}
                        other => return Ok(other),
                    }
                }
            }
            Stmt::Do(b, c) => loop {
                self.tick()?;
                match self.exec(b)? {
                    Flow::Break => break,
                    Flow::Normal | Flow::Continue => {}
                    other => return Ok(other),
                }
                if !self.cond(c)? {
                    break;
                }
            },
            Stmt::For(init, c, step, b) => {
                if let Some(i) = init {
                    self.exec(i)?;
                }
                loop {
                    if let Some(c) = c
                        && !self.cond(c)?
                    {
                        break;
                    }
                    self.tick()?;
                    match self.exec(b)? {
                        Flow::Break => break,
                        Flow::Normal | Flow::Continue => {}
                        other => return Ok(other),
                    }
                    if let Some(s) = step {
                        self.exec(s)?;
                    }
                }
            }
            Stmt::ForIn(k, a, b) => {
                let arr = self.scanned_array(a)?;
                let keys = self.sorted_keys(&arr)?;
                for (key, kind) in keys {
                    self.tick()?;
                    let v = match kind {
                        KeyKind::Str => Value::Str(key),
                        KeyKind::Int | KeyKind::StrNum => Value::StrNum(key),
                    };
                    self.set_var(*k, v)?;
                    match self.exec(b)? {
                        Flow::Break => break,
                        Flow::Normal | Flow::Continue => {}
                        other => return Ok(other),
                    }
                }
            }
            Stmt::Block(b) => return self.exec_block(b),
            Stmt::Next => {
                if self.in_end {
                    return Err(Fail::Fatal("`next' used in END action".into()));
                }
                return Ok(Flow::Next);
            }
            Stmt::NextFile => return Ok(Flow::NextFile),
            Stmt::Exit(e) => {
                if let Some(e) = e {
                    self.exit_code = self.eval(e)?.to_num() as i32;
                }
                return Ok(Flow::Exit);
            }
            Stmt::Return(e) => {
                let v = match e {
                    Some(e) => self.eval(e)?,
                    None => Value::Uninit,
                };
                return Ok(Flow::Return(v));
            }
            Stmt::Break => return Ok(Flow::Break),
            Stmt::Continue => return Ok(Flow::Continue),
            Stmt::Switch(subject, arms) => {
                let v = self.eval(subject)?;
                let mut start = None;
                for (i, (label, _)) in arms.iter().enumerate() {
                    let hit = match label {
                        None => false,
                        Some(CaseLabel::Value(c)) => {
                            self.compare(&v, c) == std::cmp::Ordering::Equal
                        }
                        Some(CaseLabel::Regex(r)) => {
                            let s = v.to_str_with(&self.convfmt);
                            let re = self.literal_regex(*r)?;
                            re.is_match(&s).map_err(Fail::Fatal)?
                        }
                    };
                    if hit {
                        start = Some(i);
                        break;
                    }
                }
                let start = start.or_else(|| arms.iter().position(|(l, _)| l.is_none()));
                if let Some(start) = start {
                    for (_, body) in &arms[start..] {
                        match self.exec_block(body)? {
                            Flow::Normal => {}
                            Flow::Break => break,
                            other => return Ok(other),
                        }
                    }
                }
            }
            Stmt::Delete(p, subs) => {
                let Some((arr, _)) = self.walk(p, false)? else {
                    return Ok(Flow::Normal);
                };
                match subs {
                    None => {
                        arr.borrow_mut().clear();
                    }
                    Some(subs) => {
                        let key = self.subscript(subs)?;
                        arr.borrow_mut().remove(&key);
                    }
                }
            }
        }
        Ok(Flow::Normal)
    }

    fn dest(&mut self, dest: &Option<(Redir, Expr)>) -> R<Option<(Redir, Vec<u8>)>> {
        match dest {
            None => Ok(None),
            Some((k, e)) => {
                let name = self.eval(e)?.to_str_with(&self.convfmt).to_vec();
                if name.is_empty() {
                    let op = match k {
                        Redir::File => ">",
                        Redir::Append => ">>",
                        Redir::Pipe => "|",
                        Redir::Coproc => "|&",
                    };
                    return Err(null_redirect(op));
                }
                Ok(Some((*k, name)))
            }
        }
    }

    fn format(&mut self, fmt: &[u8], vals: &[Value]) -> R<Vec<u8>> {
        match sprintf(fmt, vals, &self.convfmt) {
            Ok(b) => Ok(b),
            Err(e) => Err(Fail::Fatal(e.message(fmt))),
        }
    }

    /// Keys in the order for-in visits them (gawk's walk, or PROCINFO["sorted_in"] when
    /// set), each with how it reads back.
    fn sorted_keys(&mut self, arr: &ArrRef) -> R<Vec<(Str, KeyKind)>> {
        let order = match &self.globals[V_PROCINFO] {
            Cell::Arr(p) => p.borrow().get(&b"sorted_in"[..]).and_then(|v| match v {
                Cell::Val(v) => Some(v.to_str_with(b"%.6g").to_vec()),
                _ => None,
            }),
            _ => None,
        };
        let how = match order {
            Some(o) => self.sort_how(&o)?,
            None => super::builtins::SortHow::Unsorted,
        };
        if let super::builtins::SortHow::Unsorted = how {
            return Ok(arr
                .borrow()
                .entries()
                .into_iter()
                .map(|e| (e.key.clone(), e.kind))
                .collect());
        }
        let entries = arr.borrow().cloned_entries();
        Ok(self
            .sort_entries(entries, &how)?
            .into_iter()
            .map(|x| (x.0, KeyKind::StrNum))
            .collect())
    }

    /// FPAT's text (for `patsplit` without a regex).
    pub(super) fn fpat_text(&self) -> Vec<u8> {
        self.global_str(V_FPAT).to_vec()
    }

    /// Whether `split()` with this separator argument splits on runs of blanks.
    pub(super) fn splits_on_blanks(&mut self, fs: Option<&Expr>) -> R<bool> {
        Ok(match fs {
            None => matches!(self.fs_split_mode()?, FsMode::Space),
            Some(Expr::Regex(_)) => false,
            Some(e) => &*self.eval_str(e)? == b" ",
        })
    }

    /// The index of a defined user function.
    pub(super) fn func_index(&self, name: &[u8]) -> Option<usize> {
        self.prog
            .funcs
            .iter()
            .position(|f| f.defined && f.name.as_bytes() == name)
    }

    // ---- expressions ----

    /// The numeric value of `e`; a constant field index is read from the record
    /// without building a string value.
    fn num(&mut self, e: &Expr) -> R<f64> {
        match e {
            Expr::Const(Value::Num(n)) => Ok(*n),
            Expr::Lv(LValue::Field(i)) => {
                if let Expr::Const(Value::Num(n)) = **i
                    && n >= 1.0
                    && !self.rec_stale
                {
                    self.ensure_split();
                    let i = n as usize;
                    if self.owned.is_none() {
                        return Ok(match self.ranges.get(i - 1) {
                            Some(&(a, b)) => str_to_num(&self.rec[a..b]),
                            None => 0.0,
                        });
                    }
                }
                Ok(self.eval(e)?.to_num())
            }
            _ => Ok(self.eval(e)?.to_num()),
        }
    }

    fn cond(&mut self, e: &Expr) -> R<bool> {
        Ok(self.eval(e)?.truthy())
    }

    pub fn regex_for(&mut self, e: &Expr) -> R<Rc<Regex>> {
        if let Expr::Regex(i) = e {
            return self.literal_regex(*i);
        }
        let v = self.eval(e)?;
        let s = v.to_str_with(&self.convfmt);
        self.dyn_regex(&s)
    }

    fn literal_regex(&mut self, i: usize) -> R<Rc<Regex>> {
        if !self.ignorecase {
            return Ok(self.regexes[i].clone());
        }
        if let Some(r) = &self.regexes_ci[i] {
            return Ok(r.clone());
        }
        let r = Rc::new(
            re::compile(self.prog.regexes[i].as_bytes(), true)
                .map_err(|m| Fail::Fatal(format!("invalid regexp: {m}")))?,
        );
        self.regexes_ci[i] = Some(r.clone());
        Ok(r)
    }

    pub fn dyn_regex(&mut self, s: &[u8]) -> R<Rc<Regex>> {
        let key = (s.to_vec(), self.ignorecase);
        if let Some(r) = self.dyn_cache.get(&key) {
            return Ok(r.clone());
        }
        let r = Rc::new(
            re::compile(s, self.ignorecase)
                .map_err(|m| Fail::Fatal(format!("invalid regexp: {m}")))?,
        );
        self.regex_warnings(&r);
        if self.dyn_cache.len() >= DYN_REGEX_CACHE {
            self.dyn_cache.clear();
        }
        self.dyn_cache.insert(key, r.clone());
        Ok(r)
    }

    fn compare(&self, a: &Value, b: &Value) -> std::cmp::Ordering {
        if a.is_numeric() && b.is_numeric() {
            let (x, y) = (a.to_num(), b.to_num());
            return x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
        }
        let x = a.to_str_with(&self.convfmt);
        let y = b.to_str_with(&self.convfmt);
        if self.ignorecase {
            return fold_case(&x).cmp(&fold_case(&y));
        }
        x.cmp(&y)
    }

    /// Whether IGNORECASE is on.
    pub(super) fn ignoring_case(&self) -> bool {
        self.ignorecase
    }

    pub fn eval(&mut self, e: &Expr) -> R<Value> {
        Ok(match e {
            Expr::Const(v) => v.clone(),
            Expr::Regex(i) => {
                let re = self.literal_regex(*i)?;
                if self.rec_stale {
                    self.rebuild_record();
                }
                Value::Num(bool_num(re.is_match(&self.rec).map_err(Fail::Fatal)?))
            }
            Expr::Lv(lv) => self.lv_get(lv)?,
            Expr::Group(e) => self.eval(e)?,
            Expr::Assign(lv, rhs) => {
                // gawk evaluates the right side first for simple variables.
                let v = self.eval(rhs)?;
                self.assign(lv, v.clone())?;
                v
            }
            Expr::AugAssign(op, lv, rhs) => {
                let r = self.num(rhs)?;
                let op = *op;
                if r == 0.0 && matches!(op, Arith::Div | Arith::Mod) {
                    let which = if op == Arith::Div { "/=" } else { "%=" };
                    return Err(Fail::Fatal(format!(
                        "division by zero attempted in `{which}'"
                    )));
                }
                self.assign_with(lv, &mut |me, old| {
                    Ok(Value::Num(me.arith(op, old.to_num(), r)?))
                })?
            }
            Expr::IncDec { lv, delta, prefix } => {
                let d = *delta;
                let mut before = 0.0;
                let new = self.assign_with(lv, &mut |_, old| {
                    before = old.to_num();
                    Ok(Value::Num(before + d))
                })?;
                if *prefix { new } else { Value::Num(before) }
            }
            Expr::Cond(c, a, b) => {
                if self.cond(c)? {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::And(a, b) => Value::Num(bool_num(self.cond(a)? && self.cond(b)?)),
            Expr::Or(a, b) => Value::Num(bool_num(self.cond(a)? || self.cond(b)?)),
            Expr::Not(a) => Value::Num(bool_num(!self.cond(a)?)),
            Expr::Arith(op, a, b) => {
                let x = self.num(a)?;
                let y = self.num(b)?;
                Value::Num(self.arith(*op, x, y)?)
            }
            Expr::Neg(a) => Value::Num(-self.num(a)?),
            Expr::Plus(a) => Value::Num(self.num(a)?),
            Expr::Cmp(op, a, b) => {
                let x = self.eval(a)?;
                let y = self.eval(b)?;
                if x.is_numeric() && y.is_numeric() && (x.to_num().is_nan() || y.to_num().is_nan())
                {
                    // As in C (gawk's cmp_doubles): a NaN is unequal to everything.
                    return Ok(Value::Num(bool_num(*op == Cmp::Ne)));
                }
                let o = self.compare(&x, &y);
                use std::cmp::Ordering::*;
                Value::Num(bool_num(match op {
                    Cmp::Lt => o == Less,
                    Cmp::Le => o != Greater,
                    Cmp::Eq => o == Equal,
                    Cmp::Ne => o != Equal,
                    Cmp::Ge => o != Less,
                    Cmp::Gt => o == Greater,
                }))
            }
            Expr::Match(neg, a, b) => {
                let s = self.eval(a)?.to_str_with(&self.convfmt);
                let re = self.regex_for(b)?;
                Value::Num(bool_num(re.is_match(&s).map_err(Fail::Fatal)? != *neg))
            }
            Expr::Concat(a, b) => {
                let x = self.eval(a)?;
                let y = self.eval(b)?;
                let mut out = Vec::new();
                x.append_to(&mut out, &self.convfmt);
                y.append_to(&mut out, &self.convfmt);
                if out.len() > MAX_STRING {
                    return Err(Fail::Fatal(format!(
                        "string of {} bytes is longer than the limit of {MAX_STRING}",
                        out.len()
                    )));
                }
                Value::str(out)
            }
            Expr::In(subs, p) => {
                let key = self.subscript(subs)?;
                if p.path.is_empty() && self.symtab.is_some_and(|s| p.var == Var::Global(s)) {
                    // SYMTAB holds every global variable, the program's and gawk's.
                    let name = String::from_utf8_lossy(&key);
                    let has = self.prog.globals.iter().any(|g| *g == name)
                        || SPECIAL_SCALARS.contains(&&*name)
                        || SPECIAL_ARRAYS.contains(&&*name);
                    return Ok(Value::Num(bool_num(has)));
                }
                let arr = self.scanned_array(p)?;
                let has = arr.borrow().contains_key(&key);
                Value::Num(bool_num(has))
            }
            Expr::List(_) => return Err(Fail::Fatal("syntax error".into())),
            Expr::Call(fi, args) => self.call(*fi, args)?,
            Expr::Indirect(v, args) => {
                let name = self.get_var(*v)?.to_str_with(&self.convfmt);
                match self.func_index(&name) {
                    Some(fi) => self.call(fi, args)?,
                    None => match std::str::from_utf8(&name) {
                        Ok(b @ ("sub" | "gsub")) if args.len() != 2 => {
                            return Err(Fail::Fatal(format!(
                                "{b}: can be called indirectly only with two arguments"
                            )));
                        }
                        Ok(b) if super::lex::is_builtin(b) => self.builtin(b, args)?,
                        _ => {
                            return Err(Fail::Fatal(format!(
                                "`{}' is not a function, so it cannot be called indirectly",
                                lossy(&name)
                            )));
                        }
                    },
                }
            }
            Expr::Builtin(name, args) => self.builtin(name, args)?,
            Expr::Getline(src, lv) => self.getline(src, lv.as_deref())?,
        })
    }

    fn arith(&mut self, op: Arith, x: f64, y: f64) -> R<f64> {
        Ok(match op {
            Arith::Add => x + y,
            Arith::Sub => x - y,
            Arith::Mul => x * y,
            Arith::Div => {
                if y == 0.0 {
                    return Err(Fail::Fatal("division by zero attempted".into()));
                }
                x / y
            }
            Arith::Mod => {
                if y == 0.0 {
                    return Err(Fail::Fatal("division by zero attempted in `%'".into()));
                }
                x % y
            }
            Arith::Pow => pow(x, y),
        })
    }

    fn call(&mut self, fi: usize, args: &[Expr]) -> R<Value> {
        let prog = self.prog.clone();
        let f = &prog.funcs[fi];
        if !f.defined {
            return Err(Fail::Fatal(format!("function `{}' not defined", f.name)));
        }
        if args.len() > f.nparams {
            // The extra arguments are evaluated, then dropped, with gawk's warning.
            for a in &args[f.nparams..] {
                self.eval(a)?;
            }
            self.warn(&format!(
                "function `{}' called with more arguments than declared",
                f.name
            ));
        }
        let args = &args[..args.len().min(f.nparams)];
        self.stack_check(&f.name)?;
        self.tick()?;
        let mut frame = vec![Cell::Uninit; f.nparams];
        let mut from = Vec::new();
        let mut untyped = Vec::new();
        for (i, a) in args.iter().enumerate() {
            frame[i] = match a {
                // (NF, NR and FNR keep their values outside their cells.)
                Expr::Lv(LValue::Var(v))
                    if matches!(self.var_cell(*v), Cell::Uninit)
                        && !matches!(v, Var::Global(g) if *g < SPECIALS.len())
                        && !f.array_params.get(i).copied().unwrap_or(false) =>
                {
                    untyped.push((i, *v));
                    Cell::Uninit
                }
                Expr::Lv(lv @ (LValue::Var(_) | LValue::Elem(..))) => {
                    let want_arr = f.array_params.get(i).copied().unwrap_or(false);
                    match self.operand(a, want_arr)? {
                        Operand::Array(r, keys) => {
                            from.resize(i + 1, None);
                            from[i] = match lv {
                                LValue::Elem(p, _) => {
                                    Some(Rc::from(self.elem_name(p.var, &keys).as_str()))
                                }
                                LValue::Var(v) => self.array_origin(*v),
                                LValue::Field(_) => None,
                            };
                            Cell::Arr(r)
                        }
                        // Untyped stays untyped: the callee may make it either.
                        Operand::Scalar(Value::Uninit) => Cell::Uninit,
                        Operand::Scalar(v) => Cell::Val(v),
                    }
                }
                _ => Cell::Val(self.eval(a)?),
            };
        }
        let (r, done) = self.run_frame(fi, frame, from);
        // An untyped variable the function used as a scalar is a scalar from now on, as
        // in gawk (`length(a)` of it, then `x[1]`, is fatal).
        for (i, v) in untyped {
            if matches!(done.get(i), Some(Cell::Val(_))) {
                let c = self.var_cell(v);
                if matches!(c, Cell::Uninit) {
                    *c = Cell::Val(Value::Uninit);
                }
            }
        }
        r
    }

    /// Fails when a call to `name` would take the stack past [`CALL_STACK_LIMIT`]; charges
    /// the stack as deep as calls have taken it.
    fn stack_check(&mut self, name: &str) -> R<()> {
        let here = stack_address();
        let used = self.stack_base.saturating_sub(here);
        if used > CALL_STACK_LIMIT {
            return Err(Fail::Fatal(format!(
                "function `{name}': call nesting too deep ({} calls)",
                self.frames.len()
            )));
        }
        if used > self.stack_charged {
            let more = used - self.stack_charged;
            self.stack_charged = used;
            self.charge(more)?;
        }
        Ok(())
    }

    /// Calls user function `fi` with its parameters' cells ready.
    pub(super) fn call_frame(&mut self, fi: usize, frame: Vec<Cell>) -> R<Value> {
        self.call_frame_from(fi, frame, Vec::new())
    }

    /// The name of the array a variable passes, as gawk shows it after `from`: a
    /// global's own, or a parameter's followed by where it came from (`z, from b`).
    fn array_origin(&self, v: Var) -> Option<Rc<str>> {
        match v {
            Var::Global(g) => self.global_names.get(g).cloned(),
            Var::Local(l) => self.calls.last().map(|(f, from)| {
                let name = self.prog.funcs[*f].params.get(l).map_or("", String::as_str);
                match from.get(l) {
                    Some(Some(up)) => Rc::from(format!("{name}, from {up}").as_str()),
                    _ => Rc::from(name),
                }
            }),
        }
    }

    fn call_frame_from(
        &mut self,
        fi: usize,
        frame: Vec<Cell>,
        from: Vec<Option<Rc<str>>>,
    ) -> R<Value> {
        self.run_frame(fi, frame, from).0
    }

    /// Runs user function `fi` on `frame`; gives its result and its parameters' cells
    /// as the body left them.
    fn run_frame(
        &mut self,
        fi: usize,
        mut frame: Vec<Cell>,
        from: Vec<Option<Rc<str>>>,
    ) -> (R<Value>, Vec<Cell>) {
        let prog = self.prog.clone();
        let f = &prog.funcs[fi];
        if let Err(e) = self.stack_check(&f.name) {
            return (Err(e), frame);
        }
        frame.resize(f.nparams, Cell::Uninit);
        let saved_line = self.cur_line;
        self.frames.push(frame);
        self.calls.push((fi, from));
        let r = self.exec_block(&f.body);
        let done = self.frames.pop().unwrap_or_default();
        self.calls.pop();
        self.cur_line = saved_line;
        let r = match r {
            Ok(Flow::Return(v)) => Ok(v),
            Ok(Flow::Exit) => Err(Fail::Exit),
            Ok(Flow::Next) => Err(Fail::Next),
            Ok(Flow::NextFile) => Err(Fail::NextFile),
            Ok(_) => Ok(Value::Uninit),
            Err(e) => Err(e),
        };
        (r, done)
    }
}

/// gawk's fatal error for a redirection to or from the empty name.
pub(super) fn null_redirect(op: &str) -> Fail {
    Fail::Fatal(format!(
        "expression for `{op}' redirection has null string value"
    ))
}

/// An address in the current stack frame: how far it is from the one taken when the
/// interpreter started is how much stack the calls between use (stacks grow down).
#[inline(never)]
fn stack_address() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

fn unreachable_cell() -> &'static mut Cell {
    // Locals only exist inside a call; the parser resolves no local outside one. Give a
    // fresh throwaway cell rather than panic.
    Box::leak(Box::new(Cell::Uninit))
}

/// gawk's builtin functions, as `PROCINFO["identifiers"]` lists them.
const BUILTIN_FUNCS: &[&str] = &[
    "and",
    "asort",
    "asorti",
    "atan2",
    "bindtextdomain",
    "close",
    "compl",
    "cos",
    "dcgettext",
    "dcngettext",
    "exp",
    "fflush",
    "gensub",
    "gsub",
    "index",
    "int",
    "isarray",
    "length",
    "log",
    "lshift",
    "match",
    "mkbool",
    "mktime",
    "or",
    "patsplit",
    "rand",
    "rshift",
    "sin",
    "split",
    "sprintf",
    "sqrt",
    "srand",
    "strftime",
    "strtonum",
    "sub",
    "substr",
    "system",
    "systime",
    "tolower",
    "toupper",
    "typeof",
    "xor",
];

/// `PROCINFO["identifiers"]`: every builtin and user function and global variable, with
/// its kind as gawk names it before the program runs (a user's variable is `untyped`).
fn identifiers(prog: &Program) -> Array {
    let mut ids = Array::default();
    let mut put = |name: &str, kind: &str| {
        ids.insert(
            Rc::from(name.as_bytes()),
            Cell::Val(Value::str(kind.as_bytes())),
        );
    };
    for name in BUILTIN_FUNCS {
        put(name, "builtin");
    }
    for name in SPECIAL_ARRAYS {
        put(name, "array");
    }
    for name in SPECIAL_SCALARS {
        put(name, "scalar");
    }
    for g in &prog.globals {
        if !SPECIAL_ARRAYS.contains(&g.as_str()) && !SPECIAL_SCALARS.contains(&g.as_str()) {
            put(g, "untyped");
        }
    }
    for f in prog.funcs.iter().filter(|f| f.defined) {
        put(&f.name, "user");
    }
    ids
}

pub fn bool_num(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// `x ^ y` as gawk's `calc_exp`: an integral exponent by repeated squaring (a negative one
/// as its reciprocal, so `2 ^ -1074` is 0 as `1 / 2 ^ 1074` overflows), others by `pow`.
fn pow(x: f64, y: f64) -> f64 {
    if y != y.trunc() || y.abs() >= 9.2e18 {
        return x.powf(y);
    }
    let n = y as i64;
    if n == 0 {
        return 1.0;
    }
    let (mut base, mut k, mut mult) = (x, n.unsigned_abs(), 1.0);
    while k > 1 {
        if k % 2 == 1 {
            mult *= base;
        }
        base *= base;
        k /= 2;
    }
    let r = mult * base;
    if n > 0 { r } else { 1.0 / r }
}

/// The array key for a value: integers in decimal, other numbers with CONVFMT.
pub fn key_of(v: &Value, convfmt: &[u8]) -> Str {
    match v {
        Value::Num(n) => key_num_fmt(*n, convfmt),
        Value::Uninit => Rc::from(&b""[..]),
        Value::Bool(b) => Rc::from(if *b { &b"1"[..] } else { &b"0"[..] }),
        Value::Str(s) | Value::StrNum(s) | Value::Regex(s) => s.clone(),
    }
}

fn key_num_fmt(n: f64, convfmt: &[u8]) -> Str {
    let mut k = Vec::new();
    push_num(&mut k, n, convfmt);
    Rc::from(k)
}

pub fn key_num(n: f64) -> Str {
    key_num_fmt(n, b"%.6g")
}

/// Processes escapes in a `-v` value the way string literals are.
pub fn unescape(s: &[u8], warnings: &mut Vec<String>) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        if i + 1 >= s.len() {
            // gawk drops a lone backslash at the end.
            break;
        }
        let (ni, w) = super::lex::escape(s, i + 1, &mut out);
        i = ni;
        warnings.extend(w);
    }
    out
}

// Helpers the builtins module uses.
impl Interp {
    pub fn convfmt(&self) -> Vec<u8> {
        self.convfmt.clone()
    }
    pub fn eval_str(&mut self, e: &Expr) -> R<Str> {
        let v = self.eval(e)?;
        Ok(v.to_str_with(&self.convfmt))
    }
    pub fn eval_num(&mut self, e: &Expr) -> R<f64> {
        Ok(self.eval(e)?.to_num())
    }
    pub fn set_rstart(&mut self, start: f64, len: f64) {
        self.globals[V_RSTART] = Cell::Val(Value::Num(start));
        self.globals[V_RLENGTH] = Cell::Val(Value::Num(len));
    }
    /// The array argument `e` of a builtin; `what` names it in the error
    /// (`split: second`).
    /// Whether `e` is a variable never used yet (neither scalar nor array).
    /// A variable never used yet (a predefined one never is).
    pub fn is_untyped_var(&mut self, e: &Expr) -> bool {
        matches!(e, Expr::Lv(LValue::Var(v))
            if !matches!(v, Var::Global(i) if *i < SPECIALS.len())
                && matches!(self.var_cell(*v), Cell::Uninit))
    }

    /// Whether `e` is a variable read as a scalar but never given a value.
    pub fn is_unassigned_var(&mut self, e: &Expr) -> bool {
        match e {
            Expr::Lv(LValue::Var(v)) => {
                !matches!(v, Var::Global(i) if *i < SPECIALS.len())
                    && matches!(self.var_cell(*v), Cell::Val(Value::Uninit))
            }
            _ => false,
        }
    }

    pub fn array_of(&mut self, e: &Expr, what: &str) -> R<ArrRef> {
        let not_array = || Fail::Fatal(format!("{what} argument is not an array"));
        match e {
            Expr::Lv(LValue::Var(_) | LValue::Elem(..)) => match self.operand(e, true)? {
                Operand::Array(a, _) => Ok(a),
                Operand::Scalar(_) => Err(not_array()),
            },
            _ => Err(not_array()),
        }
    }
    pub fn lv_assign(&mut self, lv: &LValue, v: Value) -> R<()> {
        self.assign(lv, v)
    }
    pub fn lv_value(&mut self, lv: &LValue) -> R<Value> {
        self.lv_get(lv)
    }
    pub fn charge_elems(&mut self, bytes: usize) -> R<()> {
        self.charge(bytes)
    }
    pub fn do_system(&mut self, cmd: &[u8]) -> R<f64> {
        self.system(cmd)
    }
    /// `PROCINFO["argv"]`: the command line, `awk` and every argument as given.
    pub fn set_procinfo_argv(&mut self, args: &[String]) {
        let mut av = Array::default();
        for (i, a) in std::iter::once("awk")
            .chain(args.iter().map(String::as_str))
            .enumerate()
        {
            av.insert(key_num(i as f64), Cell::Val(Value::str(a.as_bytes())));
        }
        if let Cell::Arr(p) = &self.globals[V_PROCINFO] {
            p.borrow_mut()
                .insert(Rc::from(&b"argv"[..]), Cell::Arr(Rc::new(RefCell::new(av))));
        }
    }

    /// The environment awk was started with (for `TZ`).
    pub fn env(&self) -> &std::collections::BTreeMap<String, String> {
        &self.ctx.env
    }
    pub fn do_close(&mut self, name: &[u8]) -> R<f64> {
        let open = self.outs.contains_key(name) || self.ins.contains_key(name);
        let r = self.close_stream(name)?;
        if !open {
            self.set_global_raw(
                V_ERRNO,
                Value::str(&b"close of redirection that was never opened"[..]),
            );
        }
        if !open && self.lint != Lint::Off {
            self.lint_warn(&format!(
                "close: `{}' is not an open file, pipe or co-process",
                lossy(name)
            ))?;
        }
        Ok(r)
    }
    pub fn do_fflush(&mut self, name: Option<&[u8]>) -> R<f64> {
        match name {
            // `fflush("")` flushes everything, as `fflush()` does.
            None | Some(b"") => {
                self.flush_all()?;
                Ok(0.0)
            }
            Some(n) => {
                if n == b"/dev/stdout" {
                    self.flush_stdout()?;
                    return Ok(0.0);
                }
                if self.outs.contains_key(n) {
                    self.flush_stdout()?;
                    self.flush_stream(n)?;
                    Ok(0.0)
                } else {
                    self.warn(&format!(
                        "fflush: `{}' is not an open file, pipe or co-process",
                        lossy(n)
                    ));
                    Ok(-1.0)
                }
            }
        }
    }
    pub fn rand_next(&mut self) -> f64 {
        self.rng.next_f64()
    }
    /// Reseeds as `srand(x)` does; returns the previous seed.
    pub fn srand(&mut self, x: f64) -> f64 {
        let prev = self.seed;
        self.seed = super::random::seed_of(x);
        self.rng.seed(self.seed as u32);
        prev as f64
    }
    pub fn record_text(&mut self) -> Vec<u8> {
        self.record_bytes()
    }
    pub fn looks_num(s: &[u8]) -> bool {
        looks_numeric(s)
    }
    pub fn warning(&mut self, msg: &str) {
        self.warn(msg)
    }
    /// gawk's warnings for a freshly compiled dynamic regex, each text once per run.
    fn regex_warnings(&mut self, r: &Regex) {
        for w in r.warnings() {
            if self.warned.insert(w.clone()) {
                self.warn(w);
            }
        }
    }
}

//! Running a parsed [`Program`] over a stream of lines: the pattern and hold spaces, the
//! append queue, range states, `w` files, and the input with one line of look-ahead
//! (read only when `$` or `n`/`N` needs to know whether a line is the last).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;

use super::debug;
use super::parse::{Addr, Addr2, Case, Cmd, Op, Program, Repl, Rx, Subst};
use crate::cmd::util::{MAX_LINE, OUT_BUF, Pacer, Reader};
use crate::fs::{WriteHandle, WriteMode};
use crate::gnu_regex::{self, Captures, Regex, TooComplex};
use crate::io::Input;
use crate::{Charge, Context, Interrupt, OutOfMemory};

/// Largest pattern or hold space: `:a;N;ba` over a huge input, or `H` in a loop, must
/// fail with a message instead of taking the server's memory.
pub(super) const MAX_SPACE: usize = 64 * 1024 * 1024;

/// Width of `l` output when neither `-l` nor `l N` says otherwise (GNU's default).
pub(super) const DEFAULT_WRAP: usize = 70;

/// Why a run stopped early.
pub(super) enum Stop {
    Interrupt(Interrupt),
    /// A fatal error, already reported; the exit status.
    Fail(i32),
}

impl From<Interrupt> for Stop {
    fn from(e: Interrupt) -> Self {
        Stop::Interrupt(e)
    }
}

impl From<OutOfMemory> for Stop {
    fn from(e: OutOfMemory) -> Self {
        Stop::Interrupt(e.into())
    }
}

pub(super) type Flow<T> = Result<T, Stop>;

/// Options that shape a run.
pub(super) struct Settings {
    pub quiet: bool,
    /// `-z`: lines end with NUL.
    pub delim: u8,
    pub wrap: usize,
    /// The C locale: a character is a byte (how far an empty match steps).
    pub c_locale: bool,
    /// POSIX's `N` (`--posix`, `POSIXLY_CORRECT`): at the end of input it quits without
    /// printing the pattern space, where GNU prints it.
    pub posix_n: bool,
    /// `--debug`: the program, and each step of the run, on standard output.
    pub debug: bool,
}

/// One input line and whether it ended with the delimiter.
struct Line {
    data: Vec<u8>,
    nl: bool,
    file: Arc<str>,
}

/// What can be read: an operand (`-` is stdin) or bytes already in memory (`-i`).
pub(super) enum Source {
    Operand(String),
    Data(Bytes, String),
}

/// The lines of one or more sources, in order, with one line of look-ahead.
pub(super) struct Inputs {
    pending: VecDeque<Source>,
    cur: Option<(Reader, Arc<str>)>,
    peeked: Option<Line>,
    /// `-u`: standard input is read a byte at a time, and looking ahead for `$` takes
    /// one byte, not a line (GNU's `getc`/`ungetc`): a quit loses that byte, as GNU's does.
    unbuffered: bool,
    /// Set to 2 once an operand could not be opened.
    pub status: i32,
}

impl Inputs {
    pub(super) fn new(sources: Vec<Source>, unbuffered: bool) -> Inputs {
        Inputs {
            pending: sources.into(),
            cur: None,
            peeked: None,
            unbuffered,
            status: 0,
        }
    }

    /// Opens the next source when none is open; false when there is none left.
    async fn open_next(&mut self, ctx: &Context) -> bool {
        while self.cur.is_none() {
            let Some(src) = self.pending.pop_front() else {
                return false;
            };
            match src {
                Source::Operand(op) => match Reader::open(ctx, &op).await {
                    Ok(r) => {
                        let r = if self.unbuffered { r.in_reads_of(1) } else { r };
                        self.cur = Some((r, Arc::from(op.as_str())));
                    }
                    Err(e) => {
                        ctx.warn("sed", format!("can't read {op}: {e}")).await;
                        self.status = 2;
                    }
                },
                Source::Data(data, name) => {
                    let mut c = ctx.clone();
                    c.stdin = Input::from_bytes(data);
                    self.cur = Some((Reader::stdin(&c), Arc::from(name.as_str())));
                }
            }
        }
        true
    }

    /// The next line of the sources. A read error is fatal, except when only `lenient`
    /// looking ahead (`$`, `n`, `N`): GNU's `getc` there takes it for the end of that
    /// file (a directory among the operands).
    async fn read_raw(&mut self, ctx: &Context, delim: u8, lenient: bool) -> Flow<Option<Line>> {
        loop {
            if !self.open_next(ctx).await {
                return Ok(None);
            }
            let Some((reader, name)) = &mut self.cur else {
                continue;
            };
            match reader.record(delim, MAX_LINE).await? {
                Ok(Some(mut rec)) => {
                    let nl = rec.last() == Some(&delim);
                    if nl {
                        rec.pop();
                    }
                    return Ok(Some(Line {
                        data: rec,
                        nl,
                        file: name.clone(),
                    }));
                }
                Ok(None) => self.cur = None,
                Err(_) if lenient => self.cur = None,
                Err(e) => {
                    ctx.warn("sed", format!("read error on {name}: {e}")).await;
                    return Err(Stop::Fail(4));
                }
            }
        }
    }

    async fn next_line(&mut self, ctx: &Context, delim: u8) -> Flow<Option<Line>> {
        match self.peeked.take() {
            Some(l) => Ok(Some(l)),
            None => self.read_raw(ctx, delim, false).await,
        }
    }

    /// Hands back to a file on standard input what was read past the last line used,
    /// the line looked ahead at included: GNU sed leaves its standard input right after
    /// the line `q` ended on.
    async fn give_back(&mut self) {
        if self.unbuffered {
            // Nothing was read ahead but the byte GNU's look-ahead loses.
            return;
        }
        let peeked = self
            .peeked
            .take()
            .map_or(0, |l| l.data.len() + usize::from(l.nl));
        if let Some((reader, _)) = &mut self.cur {
            reader.give_back(peeked).await;
        }
    }

    async fn at_end(&mut self, ctx: &Context, delim: u8) -> Flow<bool> {
        if self.unbuffered {
            while self.open_next(ctx).await {
                let Some((reader, name)) = &mut self.cur else {
                    continue;
                };
                match reader.at_eof().await {
                    Ok(false) => return Ok(false),
                    Ok(true) => self.cur = None,
                    Err(e) => {
                        ctx.warn("sed", format!("read error on {name}: {e}")).await;
                        return Err(Stop::Fail(4));
                    }
                }
            }
            return Ok(true);
        }
        if self.peeked.is_none() {
            self.peeked = self.read_raw(ctx, delim, true).await?;
        }
        Ok(self.peeked.is_none())
    }
}

/// Where output goes: stdout (buffered) or memory (the new content of a file under
/// `-i`, bounded by `limit` and charged to the session's budget as it grows). Remembers a
/// missing final newline the way GNU sed does: the next write to the same sink supplies
/// it first.
pub(super) struct Sink {
    buf: Vec<u8>,
    memory: Option<usize>,
    missing: Option<u8>,
    /// Covers `buf` of a memory sink (a stdout sink holds at most [`OUT_BUF`] more).
    charge: Option<Charge>,
}

impl Sink {
    pub(super) fn stdout() -> Sink {
        Sink {
            buf: Vec::new(),
            memory: None,
            missing: None,
            charge: None,
        }
    }

    pub(super) fn memory(ctx: &Context, limit: usize) -> Sink {
        Sink {
            buf: Vec::new(),
            memory: Some(limit),
            missing: None,
            charge: Some(ctx.budget.empty_charge()),
        }
    }

    /// Takes what a memory sink gathered (the caller holds it from then on).
    pub(super) fn take(&mut self) -> Vec<u8> {
        self.missing = None;
        if let Some(c) = &mut self.charge {
            // Giving back never fails.
            let _ = c.resize(0);
        }
        std::mem::take(&mut self.buf)
    }

    async fn write(&mut self, ctx: &Context, data: &[u8]) -> Flow<()> {
        self.put(ctx, data, true).await
    }

    /// Writes `data`; a missing final newline owed is written first only if `owed`
    /// (GNU's `--debug` lines do not pay it: they go straight to `stdout`).
    async fn put(&mut self, ctx: &Context, data: &[u8], owed: bool) -> Flow<()> {
        let need = self.buf.len() + data.len() + 1;
        if let Some(c) = &mut self.charge
            && need > self.buf.capacity()
        {
            let cap = need.max(self.buf.capacity() * 2);
            c.resize(cap)?;
            self.buf.reserve_exact(cap - self.buf.len());
            c.resize(self.buf.capacity())?;
        }
        if owed && let Some(d) = self.missing.take() {
            self.buf.push(d);
        }
        self.buf.extend_from_slice(data);
        match self.memory {
            Some(limit) if self.buf.len() > limit => {
                ctx.warn("sed", format!("output larger than {limit} bytes"))
                    .await;
                Err(Stop::Fail(4))
            }
            Some(_) => Ok(()),
            None if self.buf.len() >= OUT_BUF || ctx.tty.is_some() => self.flush(ctx).await,
            None => Ok(()),
        }
    }

    /// Writes a line and its delimiter, or marks the delimiter missing.
    async fn line(&mut self, ctx: &Context, data: &[u8], nl: bool, delim: u8) -> Flow<()> {
        self.write(ctx, data).await?;
        if nl {
            self.write(ctx, &[delim]).await
        } else {
            self.missing = Some(delim);
            Ok(())
        }
    }

    pub(super) async fn flush(&mut self, ctx: &Context) -> Flow<()> {
        if self.memory.is_none() && !self.buf.is_empty() {
            let data = Bytes::from(std::mem::take(&mut self.buf));
            match ctx.stdout.write_bytes(data).await.map_err(Interrupt::from) {
                Err(Interrupt::Write(e)) => {
                    ctx.warn("sed", format!("couldn't flush stdout: {e}")).await;
                    return Err(Stop::Fail(4));
                }
                r => r?,
            }
        }
        Ok(())
    }
}

enum WTarget {
    Stdout,
    Stderr,
    File(Box<dyn WriteHandle>),
    /// Closed after a failure (already reported).
    Gone,
}

struct WFile {
    name: String,
    target: WTarget,
    missing: bool,
    /// A write failed: what to say when the files are closed.
    failed: Option<String>,
}

/// Range state per command.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Range {
    Inactive,
    /// Ended, for a range from a line number: it does not start again (GNU's
    /// `RANGE_CLOSED`).
    Closed,
    /// Active; for numeric ends, the last line of the range.
    Active(Option<u64>),
}

enum Appended {
    Text(Vec<u8>),
    File(String),
}

/// How the script ended for one cycle.
enum End {
    Cycle {
        autoprint: bool,
    },
    /// `D` with a newline in the pattern space: start again without reading.
    Restart,
    Quit {
        code: i32,
        autoprint: bool,
    },
}

pub(super) struct Exec<'a> {
    ctx: &'a Context,
    prog: &'a Program,
    set: Settings,
    pub input: Inputs,
    pub out: Sink,
    /// Real stdout while `out` gathers a file's new content (`-i`); `w /dev/stdout`.
    pub stdout: Option<Sink>,
    ps: Vec<u8>,
    hs: Vec<u8>,
    /// The current line ended with the delimiter.
    nl: bool,
    /// The same of the hold space, which `g`, `G` and `x` give the pattern space (GNU
    /// keeps it per space: `x` on a last line without a newline prints one).
    hs_nl: bool,
    file: Arc<str>,
    line_no: u64,
    tflag: bool,
    ranges: Vec<Range>,
    last_re: Option<Arc<Regex>>,
    /// `last_re` was last set by an address (GNU compiles those without their groups).
    last_re_addr: bool,
    append: Vec<Appended>,
    /// Bytes queued in `append`.
    append_bytes: usize,
    /// Covers the pattern and hold spaces and the append queue (see [`Exec::account`]).
    charge: Charge,
    wfiles: Vec<WFile>,
    rfiles: HashMap<String, Option<Reader>>,
    pacer: Pacer,
    /// Set by `q`/`Q`: the exit code.
    pub quit: Option<i32>,
    /// `--debug`'s indentation of commands: blocks entered less blocks left, over the
    /// whole run (a jump out of a block leaves it deeper, as GNU's does).
    level: isize,
}

impl<'a> Exec<'a> {
    pub(super) fn new(ctx: &'a Context, prog: &'a Program, set: Settings) -> Exec<'a> {
        let mut e = Exec {
            ctx,
            prog,
            set,
            input: Inputs::new(Vec::new(), false),
            out: Sink::stdout(),
            stdout: None,
            ps: Vec::new(),
            hs: Vec::new(),
            nl: true,
            hs_nl: true,
            file: Arc::from("-"),
            line_no: 0,
            tflag: false,
            ranges: vec![Range::Inactive; prog.cmds.len()],
            last_re: None,
            last_re_addr: false,
            append: Vec::new(),
            append_bytes: 0,
            charge: ctx.budget.empty_charge(),
            wfiles: Vec::new(),
            rfiles: HashMap::new(),
            pacer: Pacer::default(),
            quit: None,
            level: 0,
        };
        e.reset();
        e
    }

    /// Starts a new stream (each file under `-s`/`-i`): line numbers and ranges restart,
    /// the hold space is emptied and `R` reads its files from their start again, as in
    /// GNU sed.
    pub(super) fn reset(&mut self) {
        self.line_no = 0;
        self.hs.clear();
        self.rfiles.clear();
        for (r, c) in self.ranges.iter_mut().zip(&self.prog.cmds) {
            *r = if matches!(c.a1, Some(Addr::Zero)) {
                Range::Active(None)
            } else {
                Range::Inactive
            };
        }
    }

    /// Opens (truncating) every `w` file; false after reporting a failure.
    pub(super) async fn open_wfiles(&mut self) -> bool {
        for name in &self.prog.wfiles {
            let target = match name.as_str() {
                "/dev/stdout" => WTarget::Stdout,
                "/dev/stderr" => WTarget::Stderr,
                _ => match self
                    .ctx
                    .fs
                    .open_write(&self.ctx.path(name), WriteMode::Truncate)
                    .await
                {
                    Ok(h) => WTarget::File(h),
                    Err(e) => {
                        self.ctx
                            .warn("sed", format!("couldn't open file {name}: {e}"))
                            .await;
                        return false;
                    }
                },
            };
            self.wfiles.push(WFile {
                name: name.clone(),
                target,
                missing: false,
                failed: None,
            });
        }
        true
    }

    /// Closes every `w` file; the status is 4 if one failed.
    pub(super) async fn close_wfiles(&mut self) -> i32 {
        let mut status = 0;
        for w in self.wfiles.drain(..) {
            if let Some(e) = w.failed {
                self.ctx
                    .warn("sed", format!("couldn't flush <unknown>: {e}"))
                    .await;
                return 4;
            }
            if let WTarget::File(h) = w.target
                && let Err(e) = h.close().await
            {
                self.ctx
                    .warn("sed", format!("couldn't close {}: {e}", w.name))
                    .await;
                status = 4;
            }
        }
        status
    }

    fn stdout_sink(&mut self) -> &mut Sink {
        match &mut self.stdout {
            Some(s) => s,
            None => &mut self.out,
        }
    }

    async fn emit(&mut self, data: &[u8]) -> Flow<()> {
        self.out.write(self.ctx, data).await
    }

    /// The text of `i` or `c`: under `-z` its last newline is a NUL (as GNU's; `a`
    /// keeps its newline).
    async fn emit_text(&mut self, text: &[u8]) -> Flow<()> {
        match text.strip_suffix(b"\n") {
            Some(body) if self.set.delim != b'\n' => {
                self.emit(body).await?;
                self.emit(&[self.set.delim]).await
            }
            _ => self.emit(text).await,
        }
    }

    async fn print_ps(&mut self) -> Flow<()> {
        let ps = std::mem::take(&mut self.ps);
        let r = self.out.line(self.ctx, &ps, self.nl, self.set.delim).await;
        self.ps = ps;
        r
    }

    /// `//` ran before any regex was used: GNU's message names the end of the script.
    async fn no_previous_regex(&mut self) -> Stop {
        let msg = format!("{}: no previous regular expression", self.prog.end_where);
        self.ctx.warn("sed", msg).await;
        Stop::Fail(1)
    }

    /// Matching gave up (the backtracker's step budget): say so and stop.
    async fn too_complex(&mut self, e: TooComplex) -> Stop {
        self.ctx.warn("sed", e).await;
        Stop::Fail(4)
    }

    async fn too_big(&mut self) -> Stop {
        self.ctx
            .warn(
                "sed",
                format!("pattern or hold space larger than {MAX_SPACE} bytes"),
            )
            .await;
        Stop::Fail(4)
    }

    /// Charges the pattern and hold spaces and the append queue to the session's budget.
    /// Called before each command runs, so what one command added (at most [`MAX_SPACE`]
    /// per space) is charged before the next one can add more.
    fn account(&mut self) -> Result<(), OutOfMemory> {
        self.charge
            .resize(self.ps.capacity() + self.hs.capacity() + self.append_bytes)
    }

    /// Queues text or a file for the end of the cycle.
    fn queue(&mut self, a: Appended) {
        self.append_bytes += match &a {
            Appended::Text(t) => t.len(),
            Appended::File(f) => f.len(),
        };
        self.append.push(a);
    }

    async fn check_space(&mut self, len: usize) -> Flow<()> {
        if len > MAX_SPACE {
            return Err(self.too_big().await);
        }
        Ok(())
    }

    /// Runs the script over every line of `self.input`; true when `q`/`Q` ended it.
    pub(super) async fn run(&mut self) -> Flow<bool> {
        let mut restart = false;
        loop {
            if !restart {
                let Some(line) = self.input.next_line(self.ctx, self.set.delim).await? else {
                    return Ok(false);
                };
                self.load(line);
                if self.set.debug {
                    let name = match &*self.file {
                        "-" => "STDIN",
                        f => f,
                    };
                    let head = format!("INPUT:   '{name}' line {}\n", self.line_no);
                    self.debug(head.as_bytes()).await?;
                    self.debug_space(false).await?;
                }
            }
            restart = false;
            match self.program().await? {
                End::Cycle { autoprint } => {
                    if autoprint && !self.set.quiet {
                        self.print_ps().await?;
                    }
                    self.flush_append().await?;
                }
                End::Restart => {
                    self.flush_append().await?;
                    restart = true;
                }
                End::Quit { code, autoprint } => {
                    if autoprint {
                        if !self.set.quiet {
                            self.print_ps().await?;
                        }
                        self.flush_append().await?;
                    }
                    self.quit = Some(code);
                    self.input.give_back().await;
                    return Ok(true);
                }
            }
        }
    }

    fn load(&mut self, line: Line) {
        self.ps = line.data;
        self.nl = line.nl;
        self.file = line.file;
        self.line_no += 1;
        self.tflag = false;
    }

    /// Reads the next line for `n`/`N`; `None` at the end of input.
    async fn read_next(&mut self) -> Flow<Option<Line>> {
        if self.input.at_end(self.ctx, self.set.delim).await? {
            return Ok(None);
        }
        self.flush_append().await?;
        self.input.next_line(self.ctx, self.set.delim).await
    }

    /// The regex `rx` names (the last one used for `//`); `addr` when an address uses it.
    fn regex(&mut self, rx: &Rx, addr: bool) -> Option<Arc<Regex>> {
        match rx {
            Some(re) => {
                self.last_re = Some(re.clone());
                self.last_re_addr = addr;
                Some(re.clone())
            }
            None => self.last_re.clone(),
        }
    }

    async fn re_match(&mut self, rx: &Rx) -> Flow<bool> {
        match self.regex(rx, true) {
            Some(re) => match re.is_match(&self.ps) {
                Ok(m) => Ok(m),
                Err(e) => Err(self.too_complex(e).await),
            },
            None => Err(self.no_previous_regex().await),
        }
    }

    async fn match_addr(&mut self, a: &Addr) -> Flow<bool> {
        let l = self.line_no;
        Ok(match a {
            Addr::Line(n) => l == *n,
            // Only `0r` gets here (a range from 0 starts active): it is the first line.
            Addr::Zero => l == 1,
            Addr::Last => self.input.at_end(self.ctx, self.set.delim).await?,
            Addr::Re(rx) => self.re_match(rx).await?,
            Addr::Step(first, step) => {
                if *step == 0 {
                    l == *first
                } else {
                    l >= *first && (l - first).is_multiple_of(*step)
                }
            }
        })
    }

    async fn selected(&mut self, idx: usize) -> Flow<bool> {
        let cmd = &self.prog.cmds[idx];
        let hit = match (&cmd.a1, &cmd.a2) {
            (None, _) => true,
            (Some(a1), None) => self.match_addr(a1).await?,
            (Some(a1), Some(a2)) => self.match_range(idx, a1, a2).await?,
        };
        Ok(hit != cmd.negate)
    }

    async fn match_range(&mut self, idx: usize, a1: &Addr, a2: &Addr2) -> Flow<bool> {
        let l = self.line_no;
        match self.ranges[idx] {
            Range::Closed => Ok(false),
            Range::Inactive => {
                // A range from a line number starts at the first line it is looked at
                // from that line on (a jump may have passed over the line itself).
                let from_line = match a1 {
                    Addr::Line(n) => Some(*n),
                    _ => None,
                };
                let start = match from_line {
                    Some(n) => l >= n,
                    None => self.match_addr(a1).await?,
                };
                if !start {
                    return Ok(false);
                }
                let ended = Self::ended(a1);
                self.ranges[idx] = match a2 {
                    Addr2::Line(n) if *n > l => Range::Active(Some(*n)),
                    // Over already: the first line is in it all the same, unless the
                    // jump went past both ends.
                    Addr2::Line(n) => {
                        self.ranges[idx] = ended;
                        return Ok(l <= *n || from_line.is_none_or(|f| f == l));
                    }
                    Addr2::Plus(n) if *n > 0 => Range::Active(Some(l.saturating_add(*n))),
                    // The next multiple after this line (GNU 4.9: `4,~4` is 4 to 8).
                    Addr2::Mult(n) if *n > 0 => {
                        Range::Active(Some((l / *n).saturating_add(1).saturating_mul(*n)))
                    }
                    Addr2::Last if !self.input.at_end(self.ctx, self.set.delim).await? => {
                        Range::Active(None)
                    }
                    Addr2::Re(_) => Range::Active(None),
                    _ => ended,
                };
                Ok(true)
            }
            Range::Active(Some(end)) => {
                if l >= end {
                    self.ranges[idx] = Self::ended(a1);
                }
                Ok(l <= end)
            }
            Range::Active(None) => {
                let done = match a2 {
                    Addr2::Re(rx) => self.re_match(rx).await?,
                    Addr2::Last => self.input.at_end(self.ctx, self.set.delim).await?,
                    // Numeric ends always carry their line.
                    _ => true,
                };
                if done {
                    self.ranges[idx] = Self::ended(a1);
                }
                Ok(true)
            }
        }
    }

    /// The state of a range that just ended: one from a line number is over for good.
    fn ended(a1: &Addr) -> Range {
        match a1 {
            Addr::Line(_) => Range::Closed,
            _ => Range::Inactive,
        }
    }

    async fn program(&mut self) -> Flow<End> {
        let prog = self.prog;
        let delim = self.set.delim;
        let mut pc = 0;
        while pc < prog.cmds.len() {
            self.pacer.tick(self.ctx).await?;
            self.account()?;
            let cmd = &prog.cmds[pc];
            if self.set.debug {
                self.debug_command(cmd).await?;
            }
            if !self.selected(pc).await? {
                pc = match cmd.op {
                    Op::BlockStart(after) => after,
                    _ => pc + 1,
                };
                continue;
            }
            pc += 1;
            match &cmd.op {
                Op::BlockStart(_) | Op::Nop => {}
                Op::Subst(s) => {
                    self.substitute(s).await?;
                    self.debug_space(false).await?;
                }
                Op::Translate(map) => {
                    translate(&mut self.ps, map, self.set.c_locale);
                    self.debug_space(false).await?;
                }
                Op::Append(t) => self.queue(Appended::Text(t.clone())),
                Op::Insert(t) => self.emit_text(t).await?,
                Op::Change(t) => {
                    if cmd.a2.is_none()
                        || !matches!(self.ranges[pc - 1], Range::Active(_))
                        || cmd.negate
                    {
                        self.emit_text(t).await?;
                    }
                    self.debug_end().await?;
                    return Ok(End::Cycle { autoprint: false });
                }
                Op::Branch(t) => pc = *t,
                Op::BranchIfSub(t) => {
                    if self.tflag {
                        self.tflag = false;
                        pc = *t;
                    }
                }
                Op::BranchUnlessSub(t) => {
                    if self.tflag {
                        self.tflag = false;
                    } else {
                        pc = *t;
                    }
                }
                Op::Delete => {
                    self.debug_end().await?;
                    return Ok(End::Cycle { autoprint: false });
                }
                // (GNU's --debug shows no end of cycle here.)
                Op::DeleteFirst => match self.ps.iter().position(|&b| b == delim) {
                    None => return Ok(End::Cycle { autoprint: false }),
                    Some(i) => {
                        self.ps.drain(..=i);
                        self.debug_space(false).await?;
                        return Ok(End::Restart);
                    }
                },
                Op::Print => self.print_ps().await?,
                Op::PrintFirst => match self.ps.iter().position(|&b| b == delim) {
                    Some(i) => {
                        let first = self.ps[..=i].to_vec();
                        self.emit(&first).await?;
                    }
                    None => self.print_ps().await?,
                },
                Op::Next => {
                    if self.input.at_end(self.ctx, self.set.delim).await? {
                        if !self.set.debug {
                            return Ok(End::Cycle { autoprint: true });
                        }
                        // GNU prints the line, then ends the cycle.
                        if !self.set.quiet {
                            self.print_ps().await?;
                        }
                        self.debug_end().await?;
                        return Ok(End::Cycle { autoprint: false });
                    }
                    if !self.set.quiet {
                        self.print_ps().await?;
                    }
                    match self.read_next().await? {
                        Some(line) => self.load(line),
                        None => return Ok(End::Cycle { autoprint: false }),
                    }
                    self.debug_space(false).await?;
                }
                Op::NextAppend => match self.read_next().await? {
                    None => {
                        self.debug_end().await?;
                        return Ok(End::Cycle {
                            autoprint: !self.set.posix_n,
                        });
                    }
                    Some(line) => {
                        self.check_space(self.ps.len() + line.data.len() + 1)
                            .await?;
                        let mut ps = std::mem::take(&mut self.ps);
                        ps.push(delim);
                        ps.extend_from_slice(&line.data);
                        self.load(Line { data: ps, ..line });
                        self.debug_space(false).await?;
                    }
                },
                Op::Quit(code) => {
                    return Ok(End::Quit {
                        code: *code,
                        autoprint: true,
                    });
                }
                Op::QuitSilent(code) => {
                    return Ok(End::Quit {
                        code: *code,
                        autoprint: false,
                    });
                }
                Op::LineNumber => {
                    let mut s = self.line_no.to_string().into_bytes();
                    s.push(delim);
                    self.emit(&s).await?;
                }
                Op::List(n) => {
                    let mut text = list(&self.ps, n.unwrap_or(self.set.wrap));
                    text.push(delim);
                    self.emit(&text).await?;
                }
                Op::Exec(command) => self.exec(command.as_deref()).await?,
                Op::Hold => {
                    self.hs.clone_from(&self.ps);
                    self.hs_nl = self.nl;
                    self.debug_space(true).await?;
                }
                Op::HoldAppend => {
                    self.check_space(self.hs.len() + self.ps.len() + 1).await?;
                    self.hs.push(delim);
                    self.hs.extend_from_slice(&self.ps);
                    self.hs_nl = self.nl;
                    self.debug_space(true).await?;
                }
                Op::Get => {
                    self.ps.clone_from(&self.hs);
                    self.nl = self.hs_nl;
                    // GNU's --debug shows the hold space after `g`.
                    self.debug_space(true).await?;
                }
                Op::GetAppend => {
                    self.check_space(self.hs.len() + self.ps.len() + 1).await?;
                    self.ps.push(delim);
                    self.ps.extend_from_slice(&self.hs);
                    self.nl = self.hs_nl;
                    self.debug_space(false).await?;
                }
                Op::Exchange => {
                    std::mem::swap(&mut self.ps, &mut self.hs);
                    std::mem::swap(&mut self.nl, &mut self.hs_nl);
                    self.debug_space(false).await?;
                    self.debug_space(true).await?;
                }
                // `0r` puts the file before the first line, at once (GNU 4.9).
                Op::ReadFile(f) if matches!(cmd.a1, Some(Addr::Zero)) => {
                    self.emit_file(f).await?;
                }
                Op::ReadFile(f) => self.queue(Appended::File(f.clone())),
                Op::ReadLine(f) => self.read_line_of(f).await?,
                Op::Write(w) => {
                    let ps = self.ps.clone();
                    self.write_w(*w, &ps, self.nl).await?;
                }
                Op::WriteFirst(w) => {
                    let first = match self.ps.iter().position(|&b| b == delim) {
                        Some(i) => self.ps[..i].to_vec(),
                        None => self.ps.clone(),
                    };
                    self.write_w(*w, &first, true).await?;
                }
                Op::FileName => {
                    let mut s = self.file.as_bytes().to_vec();
                    s.push(delim);
                    self.emit(&s).await?;
                }
                Op::Zap => {
                    self.ps.clear();
                    self.debug_space(false).await?;
                }
            }
        }
        self.account()?;
        self.debug_end().await?;
        Ok(End::Cycle { autoprint: true })
    }

    /// Writes a `--debug` line to standard output.
    async fn debug(&mut self, data: &[u8]) -> Flow<()> {
        let ctx = self.ctx;
        self.stdout_sink().put(ctx, data, false).await
    }

    /// `--debug`: the program as GNU's shows it, before any input is read.
    pub(super) async fn debug_program(&mut self) -> Flow<()> {
        if !self.set.debug {
            return Ok(());
        }
        self.level = 1;
        self.debug(b"SED PROGRAM:\n").await?;
        let prog = self.prog;
        for cmd in &prog.cmds {
            self.debug_command_line(cmd, b"").await?;
        }
        self.level = 0;
        Ok(())
    }

    /// `--debug`: a command about to be looked at.
    async fn debug_command(&mut self, cmd: &Cmd) -> Flow<()> {
        self.debug_command_line(cmd, b"COMMAND: ").await
    }

    async fn debug_command_line(&mut self, cmd: &Cmd, head: &[u8]) -> Flow<()> {
        if cmd.show == b"}" {
            self.level -= 1;
        }
        let mut line = head.to_vec();
        for _ in 0..self.level.max(0) {
            line.extend_from_slice(b"  ");
        }
        line.extend_from_slice(&cmd.show);
        line.push(b'\n');
        if matches!(cmd.op, Op::BlockStart(_)) {
            self.level += 1;
        }
        self.debug(&line).await
    }

    /// `--debug`: the pattern space (or the hold space) after a command changed it.
    async fn debug_space(&mut self, hold: bool) -> Flow<()> {
        if !self.set.debug {
            return Ok(());
        }
        let line = if hold {
            debug::space("HOLD:    ", &self.hs)
        } else {
            debug::space("PATTERN: ", &self.ps)
        };
        self.debug(&line).await
    }

    /// `--debug`: a cycle ends (before the pattern space is printed).
    async fn debug_end(&mut self) -> Flow<()> {
        if self.set.debug {
            self.debug(b"END-OF-CYCLE:\n").await?;
        }
        Ok(())
    }

    async fn substitute(&mut self, s: &Subst) -> Flow<()> {
        let Some(re) = self.regex(&s.re, false) else {
            return Err(self.no_previous_regex().await);
        };
        if s.re.is_none() && std::mem::take(&mut self.last_re_addr) {
            // GNU compiled an address's regex without its groups; `s//\N/` compiles it
            // again with them and only then finds a reference past them.
            let max = s.repl.iter().fold(0, |m, r| match r {
                Repl::Group(g) => m.max(*g),
                _ => m,
            });
            if max > re.groups() {
                let msg = format!(
                    "{}: invalid reference \\{max} on `s' command's RHS",
                    self.prog.end_where
                );
                self.ctx.warn("sed", msg).await;
                return Err(Stop::Fail(1));
            }
        }
        let mut out = Vec::new();
        let mut last = 0;
        let mut count = 0usize;
        let mut done = false;
        let mut pos = 0;
        // End of the previous match: an empty match right there does not count.
        let mut prev_end: Option<usize> = None;
        while pos <= self.ps.len() {
            let caps = match re.captures_at(&self.ps, pos) {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err(self.too_complex(e).await),
            };
            let Some((start, end)) = caps.get(0) else {
                break;
            };
            if self.set.debug && pos == 0 && prev_end.is_none() && count == 0 {
                let mut text = b"MATCHED REGEX REGISTERS\n".to_vec();
                for i in 0..=re.groups() {
                    let Some((s, e)) = caps.get(i) else {
                        break;
                    };
                    text.extend_from_slice(format!("  regex[{i}] = {s}-{e} '").as_bytes());
                    text.extend_from_slice(&self.ps[s..e]);
                    text.extend_from_slice(b"'\n");
                }
                self.debug(&text).await?;
            }
            let bytes = self.set.c_locale;
            let step = |at: usize| at + if bytes { 1 } else { char_width(&self.ps, at) };
            if start == end && prev_end == Some(start) {
                pos = step(start);
                continue;
            }
            count += 1;
            if count >= s.nth {
                out.extend_from_slice(&self.ps[last..start]);
                expand(&self.ps, &caps, &s.repl, &mut out, bytes);
                last = end;
                done = true;
                if out.len() > MAX_SPACE {
                    return Err(self.too_big().await);
                }
                if !s.global {
                    break;
                }
            }
            prev_end = Some(end);
            pos = if start == end { step(start) } else { end };
        }
        if !done {
            return Ok(());
        }
        out.extend_from_slice(&self.ps[last..]);
        self.check_space(out.len()).await?;
        self.ps = out;
        self.tflag = true;
        if s.print && !s.print_after_eval {
            self.print_ps().await?;
        }
        if s.eval {
            self.exec(None).await?;
        }
        if s.print && s.print_after_eval {
            self.print_ps().await?;
        }
        if let Some(w) = s.write {
            let ps = self.ps.clone();
            self.write_w(w, &ps, self.nl).await?;
        }
        Ok(())
    }

    /// Runs `command` through the session's shell (`sh -c`, as GNU's `popen`) with no
    /// input, and gives what it wrote to its standard output (bounded by
    /// [`MAX_SPACE`], charged while it is gathered). Its messages go to sed's stderr.
    async fn run_command(&mut self, command: &str) -> Flow<Vec<u8>> {
        let (tx, rx) = crate::io::pipe();
        let mut child = self.ctx.clone();
        child.stdout = tx;
        child.stdin = Input::empty();
        let argv = vec!["sh".to_string(), "-c".to_string(), command.to_string()];
        let launcher = self.ctx.launcher.clone();
        let run = launcher.launch(child, argv);
        let mut charge = self.ctx.budget.empty_charge();
        let gather = async {
            let mut out = Vec::new();
            while let Some(chunk) = rx.read_chunk().await.map_err(Interrupt::from)? {
                if out.len() + chunk.len() > MAX_SPACE {
                    return Ok(None);
                }
                charge.resize(out.len() + chunk.len())?;
                out.extend_from_slice(&chunk);
            }
            Ok::<_, Stop>(Some(out))
        };
        let (_, out) = tokio::join!(run, gather);
        match out? {
            Some(out) => Ok(out),
            None => Err(self.too_big().await),
        }
    }

    /// `e COMMAND` prints COMMAND's output now; `e` runs the pattern space and puts its
    /// output there, less one final newline.
    async fn exec(&mut self, command: Option<&str>) -> Flow<()> {
        match command {
            Some(c) => {
                let out = self.run_command(c).await?;
                self.emit(&out).await
            }
            None => {
                let c = String::from_utf8_lossy(&self.ps).into_owned();
                let mut out = self.run_command(&c).await?;
                if out.last() == Some(&self.set.delim) {
                    out.pop();
                }
                self.ps = out;
                Ok(())
            }
        }
    }

    async fn write_w(&mut self, idx: usize, data: &[u8], nl: bool) -> Flow<()> {
        let delim = self.set.delim;
        let ctx = self.ctx;
        let mut buf = Vec::with_capacity(data.len() + 2);
        let w = &mut self.wfiles[idx];
        if w.missing {
            buf.push(delim);
        }
        buf.extend_from_slice(data);
        w.missing = !nl;
        if nl {
            buf.push(delim);
        }
        match &mut w.target {
            WTarget::Stdout => {
                self.stdout_sink().write(ctx, &buf).await?;
            }
            WTarget::Stderr => ctx.err(String::from_utf8_lossy(&buf)).await,
            WTarget::Gone => {}
            WTarget::File(h) => {
                if let Err(e) = h.write(&buf).await {
                    // GNU's stream is buffered: the failure shows when it is flushed at
                    // the end, under a name it no longer knows.
                    if let WTarget::File(h) = std::mem::replace(&mut w.target, WTarget::Gone) {
                        let _ = h.close().await;
                    }
                    w.failed = Some(e.to_string());
                }
            }
        }
        Ok(())
    }

    /// `R`: queues the next line of a file (nothing once it is exhausted or unreadable).
    async fn read_line_of(&mut self, name: &str) -> Flow<()> {
        if !self.rfiles.contains_key(name) {
            let reader = if name == "/dev/stdin" {
                Some(Reader::stdin(self.ctx))
            } else {
                Reader::open(self.ctx, name).await.ok()
            };
            self.rfiles.insert(name.to_string(), reader);
        }
        if let Some(Some(r)) = self.rfiles.get_mut(name)
            && let Ok(Some(line)) = r.line(MAX_LINE).await?
        {
            // A last line without its newline goes out without one (GNU 4.9).
            self.queue(Appended::Text(line));
        }
        Ok(())
    }

    async fn flush_append(&mut self) -> Flow<()> {
        self.append_bytes = 0;
        for a in std::mem::take(&mut self.append) {
            match a {
                Appended::Text(t) => self.emit(&t).await?,
                Appended::File(name) => self.emit_file(&name).await?,
            }
        }
        Ok(())
    }

    /// Writes the content of file `name` (`r`); a file that cannot be read is silently
    /// ignored, as in GNU sed.
    async fn emit_file(&mut self, name: &str) -> Flow<()> {
        let reader = if name == "/dev/stdin" {
            Some(Reader::stdin(self.ctx))
        } else {
            Reader::open(self.ctx, name).await.ok()
        };
        if let Some(mut r) = reader {
            while let Ok(Some(chunk)) = r.chunk().await {
                self.emit(&chunk).await?;
                self.pacer.tick(self.ctx).await?;
            }
        }
        Ok(())
    }
}

/// `y`: maps characters when the pattern space is UTF-8, else ASCII bytes only; in the C
/// locale, bytes (the map's keys and values are then bytes, as [`gnu_regex::byte_char`]
/// holds them).
fn translate(ps: &mut Vec<u8>, map: &HashMap<char, char>, c_locale: bool) {
    if c_locale {
        for b in ps.iter_mut() {
            if let Some(&t) = map.get(&gnu_regex::byte_char(*b)) {
                *b = gnu_regex::char_byte(t)
                    .or_else(|| u8::try_from(u32::from(t)).ok())
                    .unwrap_or(*b);
            }
        }
        return;
    }
    match std::str::from_utf8(ps) {
        Ok(s) => {
            let mapped: String = s.chars().map(|c| *map.get(&c).unwrap_or(&c)).collect();
            *ps = mapped.into_bytes();
        }
        Err(_) => {
            for b in ps.iter_mut() {
                if b.is_ascii()
                    && let Some(t) = map.get(&char::from(*b)).filter(|t| t.is_ascii())
                {
                    *b = *t as u8;
                }
            }
        }
    }
}

/// Case conversion state while expanding a replacement.
#[derive(Default)]
struct CaseState {
    mode: Option<Case>,
    once: Option<Case>,
}

/// `c` in the case asked for, one character for one as glibc's `towupper`/`towlower`
/// map them: where Unicode's mapping is longer, the upper case is the character itself
/// (`ß`) and the lower case the mapping's first (`İ` → `i`).
fn convert(c: char, how: Case, out: &mut String) {
    match how {
        Case::Upper | Case::UpperNext => {
            let up = c.to_uppercase();
            if up.len() == 1 {
                out.extend(up);
            } else {
                out.push(c);
            }
        }
        Case::Lower | Case::LowerNext => out.push(c.to_lowercase().next().unwrap_or(c)),
        Case::End => out.push(c),
    }
}

/// `piece` in the current case. In the C locale a byte of the upper half that is
/// converted becomes 0xff, as GNU sed makes it (its wide-character conversion fails).
fn push_cased(out: &mut Vec<u8>, piece: &[u8], st: &mut CaseState, c_locale: bool) {
    if st.mode.is_none() && st.once.is_none() || piece.is_empty() {
        out.extend_from_slice(piece);
        return;
    }
    let text = if c_locale {
        Err(())
    } else {
        std::str::from_utf8(piece).map_err(|_| ())
    };
    match text {
        Ok(s) => {
            let mut conv = String::with_capacity(s.len());
            for c in s.chars() {
                match st.once.take().or(st.mode) {
                    Some(how) => convert(c, how, &mut conv),
                    None => conv.push(c),
                }
            }
            out.extend_from_slice(conv.as_bytes());
        }
        Err(_) => {
            for &b in piece {
                let how = st.once.take().or(st.mode);
                out.push(match how {
                    Some(Case::End) | None => b,
                    Some(_) if c_locale && !b.is_ascii() => 0xff,
                    Some(Case::Upper | Case::UpperNext) => b.to_ascii_uppercase(),
                    Some(_) => b.to_ascii_lowercase(),
                });
            }
        }
    }
}

/// Length of the character at `at` (1 for a byte that is not valid UTF-8, or the end).
fn char_width(text: &[u8], at: usize) -> usize {
    let n = match text.get(at) {
        Some(0xc2..=0xdf) => 2,
        Some(0xe0..=0xef) => 3,
        Some(0xf0..=0xf4) => 4,
        _ => 1,
    };
    match text.get(at..at + n).map(std::str::from_utf8) {
        Some(Ok(_)) => n,
        _ => 1,
    }
}

fn expand(text: &[u8], caps: &Captures, repl: &[Repl], out: &mut Vec<u8>, c_locale: bool) {
    let mut st = CaseState::default();
    for r in repl {
        match r {
            Repl::Lit(l) => push_cased(out, l, &mut st, c_locale),
            Repl::Group(g) => {
                if let Some((a, b)) = caps.get(*g) {
                    push_cased(out, &text[a..b], &mut st, c_locale);
                }
            }
            Repl::Case(c) => match c {
                Case::Upper | Case::Lower => {
                    st.mode = Some(*c);
                    st.once = None;
                }
                Case::UpperNext | Case::LowerNext => st.once = Some(*c),
                Case::End => {
                    st.mode = None;
                    st.once = None;
                }
            },
        }
    }
}

/// `l`: the pattern space with C escapes, octal for other non-printables, wrapped at
/// `width` (0: never) with a trailing `\`, and `$` at the end.
fn list(ps: &[u8], width: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(ps.len() + 2);
    let mut col = 0;
    for &b in ps {
        let esc: Vec<u8> = match b {
            b'\\' => b"\\\\".to_vec(),
            0x07 => b"\\a".to_vec(),
            0x08 => b"\\b".to_vec(),
            0x0c => b"\\f".to_vec(),
            b'\n' => b"\\n".to_vec(),
            b'\r' => b"\\r".to_vec(),
            b'\t' => b"\\t".to_vec(),
            0x0b => b"\\v".to_vec(),
            0x20..=0x7e => vec![b],
            _ => format!("\\{b:03o}").into_bytes(),
        };
        if width > 0 && col + esc.len() > width - 1 {
            out.extend_from_slice(b"\\\n");
            col = 0;
        }
        col += esc.len();
        out.extend_from_slice(&esc);
    }
    out.push(b'$');
    out
}

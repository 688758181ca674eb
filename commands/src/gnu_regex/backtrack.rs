//! A bounded backtracking matcher over [`Node`]: back-references, POSIX leftmost-longest
//! match ends, and subexpression positions for a match whose span is already known.
//!
//! Bounded two ways. Without back-references, a visited set of (instruction, position)
//! makes a search linear in instructions × text (the classic bounded backtracker: a state
//! that failed once fails again). With them no such set is sound, so a step budget
//! ([`MAX_STEPS`]) stops a hostile pattern (`\(a*\)*\1`) with an error instead of a hang.
//! Backtracking uses an explicit stack, never recursion.

use super::ast::{Look, Node, Set, from_byte, high_byte, is_word, other_cases};

/// Instructions a search may execute before it gives up: about a tenth of a second.
pub(crate) const MAX_STEPS: u64 = 20_000_000;
/// Largest program: bigger patterns (huge intervals, very many `-e`) are too big.
pub(crate) const MAX_INSTS: usize = 300_000;
/// Largest visited set, in bits (8 MiB); past it the step budget alone bounds a search.
const MAX_MEMO_BITS: usize = 64 * 1024 * 1024;

/// The step budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooComplex;

#[derive(Clone, Debug)]
enum Inst {
    Char(char),
    Any,
    Set(usize),
    Look(Look),
    Save(usize),
    /// Try the first target, then the second.
    Split(usize, usize),
    Jmp(usize),
    Backref(usize),
    /// Remembers the position in a register at the start of a loop's body…
    NullStart(usize),
    /// …and fails the iteration if the body matched nothing (no endless empty loops);
    /// on a second try (see [`Prog::run`]'s `empty_exit`) it leaves the loop at the
    /// target instead, keeping what the empty iteration captured.
    NullCheck(usize, usize),
    Match,
}

/// What a search looks for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Any match.
    First,
    /// The longest match from the start position.
    Longest,
    /// A match ending exactly here (its subexpressions, for a span known already).
    EndAt(usize),
}

#[derive(Debug)]
pub(crate) struct Prog {
    insts: Vec<Inst>,
    sets: Vec<Set>,
    /// Capture slots (two per group, group 0 included), then loop registers.
    nslots: usize,
    icase: bool,
    /// Multiline mode (`^`/`$` at line ends, `.` not across them), with the byte that
    /// ends a line: a newline, or NUL for `sed -z`.
    multiline: Option<u8>,
    backrefs: bool,
    /// A second try with empty last iterations can match where the first did not: a
    /// back-reference, and a group under an unbounded loop.
    empty_exit: bool,
    /// The C locale: every byte is a character ([`from_byte`]).
    bytes: bool,
}

/// Slots of a match: `slots[2i]..slots[2i+1]` is group `i`; `usize::MAX` is unset.
pub(crate) type Slots = Vec<usize>;

pub(crate) const UNSET: usize = usize::MAX;

struct Compiler {
    insts: Vec<Inst>,
    sets: Vec<Set>,
    regs: usize,
}

impl Prog {
    /// `None` when the program would pass [`MAX_INSTS`].
    pub(crate) fn new(
        node: &Node,
        groups: usize,
        icase: bool,
        multiline: Option<u8>,
        bytes: bool,
    ) -> Option<Prog> {
        let mut c = Compiler {
            insts: Vec::new(),
            sets: Vec::new(),
            regs: 0,
        };
        c.emit(node)?;
        c.push(Inst::Match)?;
        let ncap = 2 * (groups + 1);
        // Loop registers live after the capture slots.
        for i in &mut c.insts {
            if let Inst::NullStart(r) | Inst::NullCheck(r, _) = i {
                *r += ncap;
            }
        }
        Some(Prog {
            insts: c.insts,
            sets: c.sets,
            nslots: ncap + c.regs,
            icase,
            multiline,
            backrefs: node.has_backref(),
            empty_exit: node.has_backref() && node.has_group_in_star(),
            bytes,
        })
    }

    /// Searches from `from` onwards, trying each character position in turn.
    pub(crate) fn search(
        &self,
        hay: &[u8],
        from: usize,
        mode: Mode,
    ) -> Result<Option<Slots>, TooComplex> {
        let mut memo = Memo::new(self, hay.len(), from);
        let mut steps = 0u64;
        let mut s = from;
        while s <= hay.len() {
            if let Some(m) = self.run_both(hay, s, mode, &mut memo, &mut steps)? {
                return Ok(Some(m));
            }
            s += self.char_len(hay, s);
        }
        Ok(None)
    }

    /// A match at `start`; with back-references, failing that, one whose loops may end
    /// with an empty iteration (glibc: `\(a*\)*\1` matches `a`, the group's last
    /// iteration empty), tried second so that captures prefer non-empty iterations.
    fn run_both(
        &self,
        hay: &[u8],
        start: usize,
        mode: Mode,
        memo: &mut Memo,
        steps: &mut u64,
    ) -> Result<Option<Slots>, TooComplex> {
        let found = self.run(hay, start, mode, memo, steps, false)?;
        if found.is_some() || !self.empty_exit {
            return Ok(found);
        }
        self.run(hay, start, mode, memo, steps, true)
    }

    /// A match that starts exactly at `start`.
    pub(crate) fn at(
        &self,
        hay: &[u8],
        start: usize,
        mode: Mode,
    ) -> Result<Option<Slots>, TooComplex> {
        let mut memo = Memo::new(self, hay.len(), start);
        let mut steps = 0u64;
        self.run_both(hay, start, mode, &mut memo, &mut steps)
    }

    fn run(
        &self,
        hay: &[u8],
        start: usize,
        mode: Mode,
        memo: &mut Memo,
        steps: &mut u64,
        empty_exit: bool,
    ) -> Result<Option<Slots>, TooComplex> {
        enum Frame {
            Try(usize, usize),
            Restore(usize, usize),
        }
        let mut slots = vec![UNSET; self.nslots];
        slots[0] = start;
        let mut best: Option<Slots> = None;
        let mut stack = vec![Frame::Try(0, start)];
        while let Some(frame) = stack.pop() {
            let (mut pc, mut pos) = match frame {
                Frame::Restore(slot, v) => {
                    slots[slot] = v;
                    continue;
                }
                Frame::Try(pc, pos) => (pc, pos),
            };
            loop {
                *steps += 1;
                if *steps > MAX_STEPS {
                    return Err(TooComplex);
                }
                if !memo.visit(pc, pos) {
                    break;
                }
                match &self.insts[pc] {
                    // A pattern's byte that is no UTF-8 matches that byte wherever it is.
                    Inst::Char(c) if !self.bytes && high_byte(*c).is_some() => {
                        if hay.get(pos).copied() == high_byte(*c) {
                            pc += 1;
                            pos += 1;
                        } else {
                            break;
                        }
                    }
                    Inst::Char(c) => match self.decode(hay, pos) {
                        Some((h, len))
                            if h == *c || (self.icase && other_cases(*c).any(|o| o == h)) =>
                        {
                            pc += 1;
                            pos += len;
                        }
                        _ => break,
                    },
                    Inst::Any => match self.decode(hay, pos) {
                        Some((h, len)) if self.multiline.is_none_or(|nl| h != char::from(nl)) => {
                            pc += 1;
                            pos += len;
                        }
                        _ => break,
                    },
                    Inst::Set(i) => match self.decode(hay, pos) {
                        Some((h, len)) if self.sets[*i].contains(h, self.icase) => {
                            pc += 1;
                            pos += len;
                        }
                        _ => break,
                    },
                    Inst::Look(l) => {
                        if !self.look(*l, hay, pos) {
                            break;
                        }
                        pc += 1;
                    }
                    Inst::Save(slot) | Inst::NullStart(slot) => {
                        stack.push(Frame::Restore(*slot, slots[*slot]));
                        slots[*slot] = pos;
                        pc += 1;
                    }
                    Inst::NullCheck(r, exit) => {
                        if slots[*r] == pos {
                            if !empty_exit {
                                break;
                            }
                            pc = *exit;
                            continue;
                        }
                        pc += 1;
                    }
                    Inst::Split(a, b) => {
                        stack.push(Frame::Try(*b, pos));
                        pc = *a;
                    }
                    Inst::Jmp(a) => pc = *a,
                    Inst::Backref(g) => {
                        let (gs, ge) = (slots[2 * g], slots[2 * g + 1]);
                        if gs == UNSET || ge == UNSET || ge < gs {
                            break;
                        }
                        match self.backref_len(hay, &hay[gs..ge], pos) {
                            Some(len) => {
                                pc += 1;
                                pos += len;
                            }
                            None => break,
                        }
                    }
                    Inst::Match => {
                        let done = |slots: &Slots| {
                            let mut m = slots.clone();
                            m[1] = pos;
                            m
                        };
                        match mode {
                            Mode::First => return Ok(Some(done(&slots))),
                            Mode::EndAt(e) if e == pos => return Ok(Some(done(&slots))),
                            Mode::EndAt(_) => {}
                            Mode::Longest => {
                                if best.as_ref().is_none_or(|b| pos > b[1]) {
                                    best = Some(done(&slots));
                                }
                                if pos == hay.len() {
                                    return Ok(best);
                                }
                            }
                        }
                        break;
                    }
                }
            }
        }
        Ok(best)
    }

    /// Length of the text at `pos` that equals `group` (ignoring case if asked).
    fn backref_len(&self, hay: &[u8], group: &[u8], pos: usize) -> Option<usize> {
        if !self.icase {
            return hay[pos..].starts_with(group).then_some(group.len());
        }
        let (mut i, mut j) = (0, pos);
        while i < group.len() {
            let (a, la) = self.decode(group, i)?;
            let (b, lb) = self.decode(hay, j)?;
            if a != b && !other_cases(a).any(|o| o == b) {
                return None;
            }
            i += la;
            j += lb;
        }
        Some(j - pos)
    }

    /// The character at `pos` and its length, in this program's locale.
    fn decode(&self, hay: &[u8], pos: usize) -> Option<(char, usize)> {
        if self.bytes {
            return hay.get(pos).map(|&b| (from_byte(b), 1));
        }
        decode(hay, pos)
    }

    fn char_len(&self, hay: &[u8], pos: usize) -> usize {
        self.decode(hay, pos).map_or(1, |(_, l)| l)
    }

    fn prev_char(&self, hay: &[u8], pos: usize) -> Option<char> {
        if self.bytes {
            return pos.checked_sub(1).map(|p| from_byte(hay[p]));
        }
        prev_char(hay, pos)
    }

    fn look(&self, l: Look, hay: &[u8], pos: usize) -> bool {
        let before = || self.prev_char(hay, pos).is_some_and(is_word);
        let after = || self.decode(hay, pos).is_some_and(|(c, _)| is_word(c));
        match l {
            Look::LineStart => pos == 0 || self.multiline == Some(hay[pos - 1]),
            Look::LineEnd => pos == hay.len() || self.multiline == Some(hay[pos]),
            Look::TextStart => pos == 0,
            Look::TextEnd => pos == hay.len(),
            Look::WordBoundary => before() != after(),
            Look::NotWordBoundary => before() == after(),
            Look::WordStart => !before() && after(),
            Look::WordEnd => before() && !after(),
            Look::NoWordBefore => !before(),
            Look::NoWordAfter => !after(),
        }
    }
}

/// The visited set of a search: one bit per (instruction, position).
struct Memo {
    bits: Vec<u64>,
    base: usize,
    width: usize,
}

impl Memo {
    fn new(prog: &Prog, len: usize, base: usize) -> Memo {
        let width = len.saturating_sub(base) + 1;
        let n = prog.insts.len().saturating_mul(width);
        let bits = if prog.backrefs || n > MAX_MEMO_BITS {
            Vec::new()
        } else {
            vec![0u64; n.div_ceil(64)]
        };
        Memo { bits, base, width }
    }

    /// Marks the state; false if it was seen before (it cannot lead anywhere new).
    fn visit(&mut self, pc: usize, pos: usize) -> bool {
        if self.bits.is_empty() {
            return true;
        }
        let i = pc * self.width + (pos - self.base);
        let (w, b) = (i / 64, 1u64 << (i % 64));
        match self.bits.get_mut(w) {
            Some(word) if *word & b != 0 => false,
            Some(word) => {
                *word |= b;
                true
            }
            None => true,
        }
    }
}

impl Compiler {
    fn push(&mut self, i: Inst) -> Option<usize> {
        if self.insts.len() >= MAX_INSTS {
            return None;
        }
        self.insts.push(i);
        Some(self.insts.len() - 1)
    }

    fn emit(&mut self, node: &Node) -> Option<()> {
        match node {
            Node::Empty => {}
            Node::Char(c) => {
                self.push(Inst::Char(*c))?;
            }
            Node::Any => {
                self.push(Inst::Any)?;
            }
            Node::Set(s) => {
                self.sets.push((**s).clone());
                self.push(Inst::Set(self.sets.len() - 1))?;
            }
            Node::Look(l) => {
                self.push(Inst::Look(*l))?;
            }
            Node::Group(n, i) => {
                self.push(Inst::Save(2 * i))?;
                self.emit(n)?;
                self.push(Inst::Save(2 * i + 1))?;
            }
            Node::Backref(i) => {
                self.push(Inst::Backref(*i))?;
            }
            Node::Concat(v) => {
                for n in v {
                    self.emit(n)?;
                }
            }
            Node::Alt(v) => {
                let mut jumps = Vec::new();
                for (k, n) in v.iter().enumerate() {
                    if k + 1 < v.len() {
                        let split = self.push(Inst::Split(0, 0))?;
                        self.emit(n)?;
                        jumps.push(self.push(Inst::Jmp(0))?);
                        let next = self.insts.len();
                        self.insts[split] = Inst::Split(split + 1, next);
                    } else {
                        self.emit(n)?;
                    }
                }
                let end = self.insts.len();
                for j in jumps {
                    self.insts[j] = Inst::Jmp(end);
                }
            }
            Node::Repeat(n, min, max) => {
                for _ in 0..*min {
                    self.emit(n)?;
                }
                match max {
                    None => {
                        let reg = self.regs;
                        self.regs += 1;
                        let split = self.push(Inst::Split(0, 0))?;
                        self.push(Inst::NullStart(reg))?;
                        self.emit(n)?;
                        let check = self.push(Inst::NullCheck(reg, 0))?;
                        self.push(Inst::Jmp(split))?;
                        let out = self.insts.len();
                        self.insts[split] = Inst::Split(split + 1, out);
                        self.insts[check] = Inst::NullCheck(reg, out);
                    }
                    Some(max) => {
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.push(Inst::Split(0, 0))?);
                            self.emit(n)?;
                        }
                        let out = self.insts.len();
                        for s in splits {
                            self.insts[s] = Inst::Split(s + 1, out);
                        }
                    }
                }
            }
        }
        Some(())
    }
}

/// The character at `pos`, and its length; `None` at the end or on a byte that does not
/// begin valid UTF-8 (such a byte matches nothing but itself as part of a back-reference).
pub(crate) fn decode(hay: &[u8], pos: usize) -> Option<(char, usize)> {
    let b = *hay.get(pos)?;
    if b < 0x80 {
        return Some((char::from(b), 1));
    }
    let len = match b {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    let bytes = hay.get(pos..pos + len)?;
    let s = std::str::from_utf8(bytes).ok()?;
    s.chars().next().map(|c| (c, len))
}

fn prev_char(hay: &[u8], pos: usize) -> Option<char> {
    let from = pos.saturating_sub(4);
    (from..pos)
        .find_map(|s| decode(hay, s).filter(|(_, l)| s + l == pos))
        .map(|(c, _)| c)
}

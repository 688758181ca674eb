//! GNU BRE and ERE → [`Node`], with GNU's errors and literal readings.
//!
//! Two flavours, because GNU's tools disagree at the edges: `grep` (its DFA matcher's
//! lenient reading: in an ERE an unmatched `)` and a malformed `{` are literal, a leading
//! `*` is a warning) and the strict glibc reading `sed` uses (those are errors).

use super::ast::{Item, Look, Named, Node, Set};
use super::{Error, ErrorKind, Flags};

/// glibc's RE_DUP_MAX: the largest count of an interval.
const DUP_MAX: u32 = 0x7fff;
/// Deepest nesting of groups: deeper patterns are refused rather than overflow the stack.
const MAX_NESTING: usize = 500;

pub(crate) struct Parsed {
    pub node: Node,
    pub groups: usize,
    pub warnings: Vec<String>,
    /// grep's two matchers read this pattern differently (a leading `{` that starts no
    /// interval: glibc's regex drops it, the DFA that selects lines takes it literally);
    /// parse again with `select` for the lines.
    pub select_differs: bool,
}

/// `flags.posix`: POSIX's reading without GNU's operators (`sed --posix`): `\w`, `\b`,
/// `\<` and the like are their letters, a BRE's `\+`, `\?`, `\|` too, and an unmatched
/// `)` of an ERE is itself.
/// `select`: the reading of grep's DFA, which decides which lines match (see
/// [`Parsed::select_differs`]).
pub(crate) fn parse(pattern: &str, ere: bool, flags: Flags, select: bool) -> Result<Parsed, Error> {
    let mut p = Parser::new(pattern.chars().collect(), ere, flags.strict, false);
    p.posix = flags.posix;
    p.select = select;
    p.utf8_collation = !flags.c_locale;
    p.parse()
}

/// gawk's reading of an ERE: its escapes (`\n`, `\y`, octal, hex) also inside brackets, a
/// leading repetition operator is literal, an unmatched `)` is literal.
pub(crate) fn parse_awk(pattern: Vec<char>) -> Result<Parsed, Error> {
    Parser::new(pattern, true, false, true).parse()
}

struct Parser {
    c: Vec<char>,
    pos: usize,
    ere: bool,
    strict: bool,
    /// gawk's dialect (see [`parse_awk`]).
    awk: bool,
    /// No GNU operators (see [`parse`]).
    posix: bool,
    /// The DFA's reading (see [`parse`]).
    select: bool,
    /// A construct the DFA reads differently was seen.
    select_differs: bool,
    /// The next `)` stands for itself: glibc skips a repetition operator that starts an
    /// ERE's group or alternative and reads what follows as an atom, so in grep's
    /// lenient ERE `(*)` is an unmatched `(`.
    literal_close: bool,
    /// glibc's UTF-8 locale, which collates no character outside ASCII: such a character
    /// as a range's end or in `[.x.]`, `[=x=]` is an invalid collation character.
    utf8_collation: bool,
    /// Groups opened so far.
    groups: usize,
    /// Groups a back-reference here may name: closed, and not in an earlier
    /// alternative of an alternation still being parsed (`\(a\)\|b\1` is invalid).
    usable: Vec<usize>,
    warnings: Vec<String>,
}

/// What the last thing parsed in a branch was, for the context rules of `*` and `^`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// Nothing yet (start of the pattern, of a group, of an alternative).
    Start,
    /// Only the anchor `^`: a BRE's `*` is still literal here, and so is another `^`.
    Anchor,
    /// An anchor after other items (`a$`, `x\<`): glibc lets no repetition follow one.
    Look,
    Atom,
    /// A repetition operator.
    Repeat,
}

impl Parser {
    fn new(c: Vec<char>, ere: bool, strict: bool, awk: bool) -> Parser {
        Parser {
            c,
            pos: 0,
            ere,
            strict,
            awk,
            posix: false,
            select: false,
            select_differs: false,
            literal_close: false,
            utf8_collation: false,
            groups: 0,
            usable: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn parse(mut self) -> Result<Parsed, Error> {
        let node = self.alt(0)?;
        if self.pos < self.c.len() {
            // Only a stray close can stop the top level early.
            return Err(Error::new("Unmatched ) or \\)"));
        }
        Ok(Parsed {
            node,
            groups: self.groups,
            warnings: self.warnings,
            select_differs: self.select_differs,
        })
    }

    fn peek(&self) -> Option<char> {
        self.c.get(self.pos).copied()
    }

    fn peek2(&self) -> Option<char> {
        self.c.get(self.pos + 1).copied()
    }

    /// `ch` as a collating element (a range's end, `[.ch.]`, `[=ch=]`): glibc's UTF-8
    /// locale knows none outside ASCII.
    fn collating(&self, ch: char) -> Result<char, Error> {
        if self.utf8_collation && !ch.is_ascii() {
            return Err(Error::new("Invalid collation character"));
        }
        Ok(ch)
    }

    fn at_bar(&self) -> bool {
        if self.ere {
            self.peek() == Some('|')
        } else {
            !self.posix && self.peek() == Some('\\') && self.peek2() == Some('|')
        }
    }

    fn at_close(&self) -> bool {
        if self.ere {
            self.peek() == Some(')')
        } else {
            self.peek() == Some('\\') && self.peek2() == Some(')')
        }
    }

    fn alt(&mut self, depth: usize) -> Result<Node, Error> {
        let mark = self.usable.len();
        let mut closed_in_branches = Vec::new();
        let mut branches = vec![self.concat(depth)?];
        while self.at_bar() {
            self.pos += if self.ere { 1 } else { 2 };
            closed_in_branches.extend(self.usable.drain(mark..));
            branches.push(self.concat(depth)?);
        }
        // After the alternation, what any branch closed may be named again.
        self.usable.extend(closed_in_branches);
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alt(branches)
        })
    }

    fn concat(&mut self, depth: usize) -> Result<Node, Error> {
        let mut items: Vec<Node> = Vec::new();
        let mut prev = Prev::Start;
        loop {
            let literal_close = std::mem::take(&mut self.literal_close);
            if self.pos >= self.c.len() || self.at_bar() {
                break;
            }
            if self.at_close() {
                if literal_close {
                    self.pos += 1;
                    items.push(Node::Char(')'));
                    prev = Prev::Atom;
                    continue;
                }
                if depth > 0 {
                    break;
                }
                if self.ere && (!self.strict || self.posix) {
                    self.pos += 1;
                    items.push(Node::Char(')'));
                    prev = Prev::Atom;
                    continue;
                }
                return Err(Error::new("Unmatched ) or \\)"));
            }
            if let Some(rep) = self.repetition(prev)? {
                let Some(last) = items.pop() else {
                    continue;
                };
                let (min, max) = rep;
                items.push(Node::Repeat(Box::new(last), min, max));
                prev = Prev::Repeat;
                continue;
            }
            let (node, anchor) = self.atom(prev, depth)?;
            items.push(node);
            prev = match (anchor, prev) {
                (true, Prev::Start | Prev::Anchor) => Prev::Anchor,
                (true, _) => Prev::Look,
                _ => Prev::Atom,
            };
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(items),
        })
    }

    /// A repetition operator at the cursor, consumed: `Some((min, max))`. At the start of
    /// a branch, `Some` with nothing to repeat means "skip it" (grep's ERE warning).
    fn repetition(&mut self, prev: Prev) -> Result<Option<(u32, Option<u32>)>, Error> {
        let Some(c) = self.peek() else {
            return Ok(None);
        };
        let (op, len) = match (c, self.ere) {
            ('*', _) => ('*', 1),
            ('+' | '?' | '{', true) => (c, 1),
            ('\\', false) => match self.peek2() {
                Some('{') => ('{', 2),
                Some(n @ ('+' | '?')) if !self.posix => (n, 2),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        if matches!(prev, Prev::Start | Prev::Anchor) {
            if self.awk {
                // gawk reads a leading `*`, `+`, `?`, `{` as itself.
                return Ok(None);
            }
            if !self.ere {
                // A leading `*`, `\+`, `\?` is literal; a leading `\{` too in grep.
                if op == '{' && self.strict {
                    return Err(Error::new("Invalid preceding regular expression"));
                }
                return Ok(None);
            }
            if self.strict {
                return Err(Error::new("Invalid preceding regular expression"));
            }
            if prev == Prev::Anchor && op != '{' {
                // glibc's regex drops a `*`, `+`, `?` after an anchor (`^*a` finds what
                // `^a` does); grep's DFA, which selects the lines, repeats the anchor
                // (`^*a` selects every line with an `a`).
                self.select_differs = true;
                if self.select {
                    self.warnings.push(format!("{op} at start of expression"));
                    self.pos += len;
                    return Ok(Some(match op {
                        '*' => (0, None),
                        '+' => (1, None),
                        _ => (0, Some(1)),
                    }));
                }
            }
            if op == '{' {
                // glibc's regex drops the `{` alone (`{1}` then finds `1}`); grep's DFA,
                // which selects the lines, drops a whole interval (`{1}a` selects what
                // `a` does) and reads a `{` that starts none as itself.
                let save = self.pos;
                self.pos += len;
                let valid = self.interval().is_ok_and(|i| i.is_some());
                self.select_differs = true;
                if valid {
                    self.warnings
                        .push("{...} at start of expression".to_string());
                }
                if self.select {
                    if valid {
                        return Ok(Some((1, Some(1))));
                    }
                    self.pos = save;
                    return Ok(None);
                }
                self.pos = save + len;
            } else {
                self.pos += len;
                self.warnings.push(format!("{op} at start of expression"));
            }
            self.literal_close = true;
            return Ok(Some((1, Some(1))));
        }
        // After an anchor glibc reads the next token afresh: a BRE's `*` is itself, an
        // ERE's is refused by sed (grep's DFA repeats the anchor, as below).
        if prev == Prev::Look {
            if !self.ere {
                return Ok(None);
            }
            if self.strict {
                return Err(Error::new("Invalid preceding regular expression"));
            }
        }
        if prev == Prev::Repeat && self.strict && !self.ere && matches!(op, '*' | '{') {
            return Err(Error::new("Invalid preceding regular expression"));
        }
        let save = self.pos;
        self.pos += len;
        Ok(Some(match op {
            '*' => (0, None),
            '+' => (1, None),
            '?' => (0, Some(1)),
            _ => match self.interval()? {
                Some(r) => r,
                None => {
                    // grep reads a malformed ERE interval as a literal `{`.
                    self.pos = save;
                    return Ok(None);
                }
            },
        }))
    }

    /// The rest of an interval after `{` or `\{`. `None`: malformed, and this flavour
    /// reads it literally (grep's ERE).
    fn interval(&mut self) -> Result<Option<(u32, Option<u32>)>, Error> {
        let lenient = self.ere && !self.strict;
        let min = self.number();
        let mut max = min;
        let comma = self.peek() == Some(',');
        if comma {
            self.pos += 1;
            max = self.number();
        }
        let closed = if self.ere {
            self.peek() == Some('}')
        } else {
            self.peek() == Some('\\') && self.peek2() == Some('}')
        };
        if !closed {
            if lenient {
                return Ok(None);
            }
            // The end of the pattern inside the braces: unmatched; anything else: bad content.
            let at_end = self.pos >= self.c.len()
                || (!self.ere && self.peek() == Some('\\') && self.peek2().is_none());
            return Err(if at_end {
                Error::new("Unmatched \\{")
            } else {
                Error::new("Invalid content of \\{\\}")
            });
        }
        self.pos += if self.ere { 1 } else { 2 };
        let too_big = |n: &Option<u64>| n.is_some_and(|n| n > u64::from(DUP_MAX));
        if min.is_none() && !comma {
            return Err(Error::new("Invalid content of \\{\\}"));
        }
        if too_big(&min) || too_big(&max) {
            return Err(Error::new("Regular expression too big"));
        }
        let lo = u32::try_from(min.unwrap_or(0)).unwrap_or(DUP_MAX);
        let hi = match (comma, max) {
            (true, None) => None,
            (_, m) => Some(u32::try_from(m.unwrap_or(0)).unwrap_or(DUP_MAX)),
        };
        if hi.is_some_and(|h| h < lo) {
            return Err(Error::new("Invalid content of \\{\\}"));
        }
        Ok(Some((lo, hi)))
    }

    fn number(&mut self) -> Option<u64> {
        let start = self.pos;
        let mut n: u64 = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            n = n.saturating_mul(10).saturating_add(u64::from(d));
            self.pos += 1;
        }
        (self.pos > start).then_some(n)
    }

    /// One atom; the flag says it was an anchor (`^`), after which a BRE's `*` is still
    /// literal.
    fn atom(&mut self, prev: Prev, depth: usize) -> Result<(Node, bool), Error> {
        let Some(c) = self.peek() else {
            return Ok((Node::Empty, false));
        };
        self.pos += 1;
        let open_group = if self.ere {
            c == '('
        } else {
            c == '\\' && self.peek() == Some('(')
        };
        if open_group {
            if !self.ere {
                self.pos += 1;
            }
            if depth >= MAX_NESTING {
                return Err(Error::new("Regular expression too big"));
            }
            self.groups += 1;
            let idx = self.groups;
            let inner = self.alt(depth + 1)?;
            if !self.at_close() {
                return Err(Error::new("Unmatched ( or \\("));
            }
            self.pos += if self.ere { 1 } else { 2 };
            self.usable.push(idx);
            return Ok((Node::Group(Box::new(inner), idx), false));
        }
        Ok(match c {
            '[' => (self.bracket()?, false),
            '.' => (Node::Any, false),
            '^' if self.ere || prev == Prev::Start => (Node::Look(Look::LineStart), true),
            '$' if self.ere || self.pos >= self.c.len() || self.at_close() || self.at_bar() => {
                (Node::Look(Look::LineEnd), !self.awk)
            }
            '\\' => {
                let node = self.escape()?;
                let look = !self.awk && matches!(node, Node::Look(_));
                (node, look)
            }
            c => (Node::Char(c), false),
        })
    }

    fn escape(&mut self) -> Result<Node, Error> {
        let Some(n) = self.peek() else {
            return Err(Error::new("Trailing backslash"));
        };
        self.pos += 1;
        let set = |negated, class| {
            Node::Set(Box::new(Set {
                negated,
                items: vec![Item::Class(class)],
            }))
        };
        if self.awk {
            return Ok(match self.awk_escape(n) {
                AwkEscape::Char(c) => Node::Char(c),
                AwkEscape::Look(l) => Node::Look(l),
                AwkEscape::Class(negated, class) => set(negated, class),
            });
        }
        if self.posix && "wWsSbB<>`'".contains(n) {
            return Ok(Node::Char(n));
        }
        Ok(match n {
            '1'..='9' => {
                let i = n as usize - '0' as usize;
                if !self.usable.contains(&i) {
                    return Err(Error::new("Invalid back reference"));
                }
                Node::Backref(i)
            }
            'w' => set(false, Named::Word),
            'W' => set(true, Named::Word),
            's' => set(false, Named::Space),
            'S' => set(true, Named::Space),
            'b' => Node::Look(Look::WordBoundary),
            'B' => Node::Look(Look::NotWordBoundary),
            '<' => Node::Look(Look::WordStart),
            '>' => Node::Look(Look::WordEnd),
            '`' => Node::Look(Look::TextStart),
            '\'' => Node::Look(Look::TextEnd),
            c => Node::Char(c),
        })
    }

    /// gawk's escape after `\\` (the `n` of `\\n` already consumed): the string escapes
    /// (`\\n`, `\\t`, octal `\\NNN`, hex `\\xHH`, `\\b` a backspace) and its regexp
    /// operators (`\\y`, `\\B`, `\\<`, `\\>`, `` \\` ``, `\\'`, `\\s`, `\\w` and their
    /// negations). Any other character stands for itself, with gawk's warning unless it is
    /// one that may be escaped.
    fn awk_escape(&mut self, n: char) -> AwkEscape {
        let simple = |c: char| AwkEscape::Char(c);
        match n {
            'n' => simple('\n'),
            't' => simple('\t'),
            'r' => simple('\r'),
            'f' => simple('\x0c'),
            'v' => simple('\x0b'),
            'a' => simple('\x07'),
            'b' => simple('\x08'),
            '0'..='7' => {
                let mut v = n.to_digit(8).unwrap_or(0);
                let mut digits = 1;
                while digits < 3
                    && let Some(d) = self.peek().and_then(|c| c.to_digit(8))
                {
                    v = v * 8 + d;
                    self.pos += 1;
                    digits += 1;
                }
                simple(byte_char((v & 0xff) as u8))
            }
            'x' if self.peek().is_some_and(|c| c.is_ascii_hexdigit()) => {
                let mut v = 0;
                let mut digits = 0;
                while digits < 2
                    && let Some(d) = self.peek().and_then(|c| c.to_digit(16))
                {
                    v = v * 16 + d;
                    self.pos += 1;
                    digits += 1;
                }
                simple(byte_char((v & 0xff) as u8))
            }
            'y' => AwkEscape::Look(Look::WordBoundary),
            'B' => AwkEscape::Look(Look::NotWordBoundary),
            '<' => AwkEscape::Look(Look::WordStart),
            '>' => AwkEscape::Look(Look::WordEnd),
            '`' => AwkEscape::Look(Look::TextStart),
            '\'' => AwkEscape::Look(Look::TextEnd),
            'w' => AwkEscape::Class(false, Named::Word),
            'W' => AwkEscape::Class(true, Named::Word),
            's' => AwkEscape::Class(false, Named::Space),
            'S' => AwkEscape::Class(true, Named::Space),
            c => {
                if !"{}()|*+?.^$\\[]/-\"".contains(c) {
                    self.warnings.push(format!(
                        "regexp escape sequence `\\{c}' is not a known regexp operator"
                    ));
                }
                simple(c)
            }
        }
    }

    /// A bracket expression, after its `[`.
    fn bracket(&mut self) -> Result<Node, Error> {
        if self.pos >= self.c.len() || (self.peek() == Some('^') && self.peek2().is_none()) {
            // glibc's word for a pattern that ends at its `[` (grep and awk say it alike).
            return Err(Error::new("Invalid regular expression"));
        }
        let unmatched = || Error::new("Unmatched [, [^, [:, [., or [=");
        let mut set = Set {
            negated: false,
            items: Vec::new(),
        };
        if self.peek() == Some('^') {
            set.negated = true;
            self.pos += 1;
        }
        let body_start = self.pos;
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                return Err(unmatched());
            };
            self.pos += 1;
            if c == ']' && !first {
                break;
            }
            // glibc reads a `-` that follows a range or a class as the start of another
            // range, which has nothing to start from: `[a-c-e]`, `[[:alpha:]-z]`.
            if c == '-' && !first && !self.awk && self.peek() != Some(']') {
                return Err(Error::new("Invalid range end"));
            }
            first = false;
            let mut equivalence = false;
            let start = if c == '\\' && self.awk {
                let Some(n) = self.peek() else {
                    return Err(unmatched());
                };
                self.pos += 1;
                match self.awk_escape(n) {
                    AwkEscape::Char(ch) => ch,
                    AwkEscape::Class(false, class) => {
                        set.items.push(Item::Class(class));
                        continue;
                    }
                    // `\y` and the like mean their letter inside brackets.
                    _ => n,
                }
            } else if c == '[' && matches!(self.peek(), Some(':' | '.' | '=')) {
                let kind = self.peek().unwrap_or(':');
                self.pos += 1;
                let from = self.pos;
                let end = (from..self.c.len().saturating_sub(1))
                    .find(|&k| self.c[k] == kind && self.c[k + 1] == ']')
                    .ok_or_else(unmatched)?;
                let inner: String = self.c[from..end].iter().collect();
                self.pos = end + 2;
                match kind {
                    ':' => {
                        let class = Named::from_name(&inner)
                            .ok_or_else(|| Error::new("Invalid character class name"))?;
                        set.items.push(Item::Class(class));
                        continue;
                    }
                    _ => {
                        equivalence = kind == '=';
                        let mut chars = inner.chars();
                        match (chars.next(), chars.next()) {
                            (Some(ch), None) => self.collating(ch)?,
                            _ => return Err(Error::new("Invalid collation character")),
                        }
                    }
                }
            } else {
                c
            };
            if self.peek() == Some('-') && self.peek2().is_some_and(|n| n != ']') {
                if equivalence && !self.awk {
                    return Err(Error::new("Invalid range end"));
                }
                self.pos += 1;
                let Some(e) = self.peek() else {
                    return Err(unmatched());
                };
                self.pos += 1;
                let end = if e == '\\' && self.awk && self.peek().is_some() {
                    let n = self.peek().unwrap_or('\\');
                    self.pos += 1;
                    match self.awk_escape(n) {
                        AwkEscape::Char(ch) => ch,
                        _ => n,
                    }
                } else if e == '[' && self.peek() == Some('.') {
                    self.pos += 1;
                    let from = self.pos;
                    let close = (from..self.c.len().saturating_sub(1))
                        .find(|&k| self.c[k] == '.' && self.c[k + 1] == ']')
                        .ok_or_else(unmatched)?;
                    let inner: Vec<char> = self.c[from..close].to_vec();
                    self.pos = close + 2;
                    match inner.as_slice() {
                        [ch] => *ch,
                        _ => return Err(Error::new("Invalid collation character")),
                    }
                } else if e == '[' && !self.awk && matches!(self.peek(), Some(':' | '=')) {
                    // A class cannot end a range.
                    return Err(Error::new("Invalid range end"));
                } else {
                    e
                };
                self.collating(start)?;
                self.collating(end)?;
                if end < start {
                    return Err(Error::new("Invalid range end"));
                }
                set.items.push(Item::Range(start, end));
            } else {
                set.items.push(Item::Char(start));
            }
        }
        // `[:alpha:]` (or `[^:alpha:]`) where `[[:alpha:]]` was meant: GNU's DFA refuses
        // a bracket that starts and ends with a colon and holds something else, but no
        // range or class.
        let body = &self.c[body_start..self.pos - 1];
        if !self.awk
            && body.first() == Some(&':')
            && body.last() == Some(&':')
            && set.items.iter().all(|i| matches!(i, Item::Char(_)))
            && set.items.iter().any(|i| *i != Item::Char(':'))
        {
            return Err(Error {
                msg: "character class syntax is [[:space:]], not [:space:]".into(),
                kind: ErrorKind::Dfa,
            });
        }
        Ok(Node::Set(Box::new(set)))
    }
}

/// What a gawk escape stands for.
enum AwkEscape {
    Char(char),
    Look(Look),
    Class(bool, Named),
}

/// The pattern character for byte `b` (an octal or hex escape): itself below 0x80, the C
/// locale's stand-in above.
fn byte_char(b: u8) -> char {
    super::ast::from_byte(b)
}

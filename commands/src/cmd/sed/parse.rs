//! Parsing a sed script into a flat [`Program`]: blocks become jumps (`{` knows the index
//! after its `}`), labels are resolved to command indices, regexes are compiled once.
//!
//! The script is the concatenation of every `-e`/`-f` piece, each followed by a newline
//! (so `-e 'a\' -e text` works as in GNU sed); error positions are reported per piece,
//! GNU-style (`-e expression #2, char 3: …`, `file F line 4: …`).

use std::collections::HashMap;
use std::sync::Arc;

use super::debug;
use crate::gnu_regex::{self, Dialect, ErrorKind, Flags, Regex};

/// Distinct files `w`/`W`/`s///w` may open: every one stays open for the whole run, so
/// the count is bounded like any other open-file budget.
pub(super) const MAX_WFILES: usize = 64;

/// Where a piece of script came from, for error messages.
pub(super) enum Origin {
    /// The N-th `-e` (or the script operand), counting from 1.
    Expr(usize),
    /// A `-f` file, as named on the command line.
    File(String),
}

pub(super) struct Piece {
    pub text: String,
    pub origin: Origin,
}

/// A compiled regex, or `None` for the empty regex (`//`), which means "the last regex
/// used at run time".
pub(super) type Rx = Option<Arc<Regex>>;

/// GNU's refusal of `I` or `M` on an empty regex (which reuses the last one as it is).
const NO_MODIFIERS: &str = "cannot specify modifiers on empty regexp";

pub(super) enum Addr {
    Line(u64),
    Last,
    Re(Rx),
    /// `first~step`.
    Step(u64, u64),
    /// `0` in `0,/re/`: the range is active before line 1.
    Zero,
}

pub(super) enum Addr2 {
    Line(u64),
    Last,
    Re(Rx),
    /// `addr1,+N`.
    Plus(u64),
    /// `addr1,~N`: up to the next line that is a multiple of N.
    Mult(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Case {
    Upper,
    Lower,
    UpperNext,
    LowerNext,
    End,
}

pub(super) enum Repl {
    Lit(Vec<u8>),
    Group(usize),
    Case(Case),
}

pub(super) struct Subst {
    pub re: Rx,
    pub repl: Vec<Repl>,
    pub global: bool,
    /// Replace from the N-th match on (1 without a number flag).
    pub nth: usize,
    pub print: bool,
    /// `p` came after `e` (`s/x/y/ep`): the pattern space is printed once evaluated,
    /// else before (GNU's).
    pub print_after_eval: bool,
    /// Index into [`Program::wfiles`].
    pub write: Option<usize>,
    /// `e`: the pattern space, once substituted, is a command whose output replaces it.
    pub eval: bool,
}

pub(super) enum Op {
    /// `{`: when the address does not match, continue at its `}` (a no-op).
    BlockStart(usize),
    Nop,
    Subst(Box<Subst>),
    Translate(HashMap<char, char>),
    Append(Vec<u8>),
    Insert(Vec<u8>),
    Change(Vec<u8>),
    /// `b`: jump to the index (the program's length is the end of the script).
    Branch(usize),
    /// `t`.
    BranchIfSub(usize),
    /// `T`.
    BranchUnlessSub(usize),
    Delete,
    DeleteFirst,
    Print,
    PrintFirst,
    Next,
    NextAppend,
    Quit(i32),
    QuitSilent(i32),
    LineNumber,
    /// `l [N]`: `None` uses the `-l` width.
    List(Option<usize>),
    /// `e [COMMAND]`: run COMMAND and print its output, or (`None`) run the pattern
    /// space and put the output there.
    Exec(Option<String>),
    Hold,
    HoldAppend,
    Get,
    GetAppend,
    Exchange,
    ReadFile(String),
    ReadLine(String),
    Write(usize),
    WriteFirst(usize),
    FileName,
    Zap,
}

pub(super) struct Cmd {
    pub a1: Option<Addr>,
    pub a2: Option<Addr2>,
    pub negate: bool,
    pub op: Op,
    /// The command as `--debug` prints it (GNU's canonical form: `/x/I,+3! s/a/b/g`).
    pub show: Vec<u8>,
}

pub(super) struct Program {
    pub cmds: Vec<Cmd>,
    /// Where the script ended, as GNU names it in errors found while running (`//` with
    /// no regex used before it): `-e expression #2, char 0`, `file s line 3`.
    pub end_where: String,
    /// Files the script writes to, opened (and truncated) before any input is read.
    pub wfiles: Vec<String>,
}

/// A bad script; the message is what follows `sed: ` on stderr, and the exit status
/// (1, or 4 for what GNU's DFA matcher refuses after glibc accepted it).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ParseError(pub String, pub i32);

/// How a script is read.
#[derive(Clone, Copy, Default)]
pub(super) struct Syntax {
    /// Extended regexes (`-E`).
    pub ere: bool,
    /// Regexes read byte by byte (the C locale) rather than as UTF-8.
    pub c_locale: bool,
    /// `--sandbox`: `e`, `r` and `w` are refused.
    pub sandbox: bool,
    /// `--posix`: GNU's extensions are refused (commands, address forms, `s` flags,
    /// one-line `a`/`i`/`c`) or read as POSIX says (regexes, `\U` in replacements).
    pub posix: bool,
    /// `-z`: lines end with NUL, also for the `M` flag's anchors.
    pub nul: bool,
}

/// Parses the pieces of a script.
pub(super) fn parse(pieces: &[Piece], dialect: Syntax) -> Result<Program, ParseError> {
    let Syntax {
        ere,
        c_locale,
        sandbox,
        ..
    } = dialect;
    let mut chars = Vec::new();
    let mut starts = Vec::new();
    for p in pieces {
        starts.push(chars.len());
        chars.extend(p.text.chars());
        chars.push('\n');
    }
    let mut p = Parser {
        s: chars,
        pos: 0,
        pieces,
        starts,
        ere,
        c_locale,
        sandbox,
        posix: dialect.posix,
        nul: dialect.nul,
        re_show: Vec::new(),
        addr_show: Vec::new(),
        cmds: Vec::new(),
        wfiles: Vec::new(),
        labels: HashMap::new(),
        jumps: Vec::new(),
        blocks: Vec::new(),
    };
    p.program()?;
    let end_where = match pieces.last().map(|p| (&p.origin, &p.text)) {
        Some((Origin::File(name), text)) => {
            format!("file {name} line {}", text.matches('\n').count() + 1)
        }
        Some((Origin::Expr(n), _)) => format!("-e expression #{n}, char 0"),
        None => "-e expression #1, char 0".to_string(),
    };
    Ok(Program {
        end_where,
        cmds: p.cmds,
        wfiles: p.wfiles,
    })
}

struct Parser<'a> {
    s: Vec<char>,
    /// Characters consumed so far.
    pos: usize,
    pieces: &'a [Piece],
    /// Where each piece starts in `s`.
    starts: Vec<usize>,
    ere: bool,
    c_locale: bool,
    sandbox: bool,
    posix: bool,
    nul: bool,
    /// The last regex compiled, as `--debug` shows it (`/a\/b/`).
    re_show: Vec<u8>,
    /// The last address read, as `--debug` shows it.
    addr_show: Vec<u8>,
    cmds: Vec<Cmd>,
    wfiles: Vec<String>,
    labels: HashMap<String, usize>,
    /// Branch commands waiting for their label: (command index, label).
    jumps: Vec<(usize, String)>,
    /// The `{` commands not yet closed: their index and where in the script they are.
    blocks: Vec<(usize, usize)>,
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.s.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn skip_blanks(&mut self) {
        while self.peek().is_some_and(is_blank) {
            self.pos += 1;
        }
    }

    /// An error at the current position, located the GNU way.
    fn err(&self, msg: impl std::fmt::Display) -> ParseError {
        self.err_at(self.pos, msg)
    }

    fn err_at(&self, pos: usize, msg: impl std::fmt::Display) -> ParseError {
        self.locate(pos, 0, msg)
    }

    /// A delimiter that cannot be (a newline, a backslash): GNU reads the rest of the
    /// line as the regex before it finds it unterminated.
    fn unterminated(&mut self, msg: &str) -> ParseError {
        while self.peek().is_some_and(|c| c != '\n') {
            self.pos += 1;
        }
        self.err(msg)
    }

    /// A delimiter just read (of `s`, `y`, `\cREGEXc`): GNU takes one byte, so a
    /// character of several is refused, located at its first byte.
    fn single_byte(&self, delim: char) -> Result<char, ParseError> {
        if delim.is_ascii() {
            return Ok(delim);
        }
        let msg = "delimiter character is not a single-byte character";
        Err(self.locate(self.pos.saturating_sub(1), 1, msg))
    }

    /// An error at `pos`, moved `extra` bytes on (back when negative).
    fn locate(&self, pos: usize, extra: isize, msg: impl std::fmt::Display) -> ParseError {
        let last = pos.saturating_sub(1);
        let k = self
            .starts
            .iter()
            .rposition(|&s| s <= last)
            .unwrap_or_default();
        let Some(piece) = self.pieces.get(k) else {
            return ParseError(msg.to_string(), 1);
        };
        let start = self.starts[k];
        match &piece.origin {
            Origin::Expr(n) => {
                // GNU counts bytes, whatever the locale.
                let len = piece.text.chars().count();
                let at = self.s[start..start + pos.saturating_sub(start).min(len)]
                    .iter()
                    .map(|c| c.len_utf8())
                    .sum::<usize>()
                    .saturating_add_signed(extra);
                ParseError(format!("-e expression #{n}, char {at}: {msg}"), 1)
            }
            Origin::File(name) => {
                let end = last.clamp(start, self.s.len());
                let line = 1 + self.s[start..end].iter().filter(|&&c| c == '\n').count();
                ParseError(format!("file {name} line {line}: {msg}"), 1)
            }
        }
    }

    fn program(&mut self) -> Result<(), ParseError> {
        loop {
            while self.peek().is_some_and(|c| c.is_whitespace() || c == ';') {
                self.pos += 1;
            }
            if self.peek().is_none() {
                break;
            }
            if self.peek() == Some('#') {
                self.skip_comment();
                continue;
            }
            self.command()?;
        }
        if let Some(&(_, at)) = self.blocks.last() {
            // GNU names the piece of the `{` (for a file, its line), and char 0.
            let msg = "unmatched `{'";
            return Err(match self.err_at(at, msg) {
                ParseError(m, st) if m.starts_with("-e expression") => {
                    let head = m.split(", char").next().unwrap_or_default();
                    ParseError(format!("{head}, char 0: {msg}"), st)
                }
                other => other,
            });
        }
        // GNU sed finds this after parsing (where its errors exit 4), naming the last
        // jump whose label is missing.
        let missing = self.jumps.iter().rev().map(|(_, l)| l);
        if let Some(label) = missing
            .filter(|l| !l.is_empty())
            .find(|l| !self.labels.contains_key(*l))
        {
            let msg = format!("can't find label for jump to `{label}'");
            return Err(ParseError(msg, 4));
        }
        for (idx, label) in std::mem::take(&mut self.jumps) {
            let target = match self.labels.get(&label) {
                Some(&t) if !label.is_empty() => t,
                _ => self.cmds.len(),
            };
            let labelled = target < self.cmds.len();
            let cmd = &mut self.cmds[idx];
            if labelled {
                cmd.show.push(b' ');
                cmd.show.extend_from_slice(label.as_bytes());
            }
            match &mut cmd.op {
                Op::Branch(t) | Op::BranchIfSub(t) | Op::BranchUnlessSub(t) => *t = target,
                _ => {}
            }
        }
        Ok(())
    }

    fn skip_comment(&mut self) {
        while let Some(c) = self.next() {
            if c == '\n' {
                break;
            }
        }
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

    /// Reads `…DELIM` (the opening delimiter already consumed). In a regex `\n` becomes a
    /// newline; `\DELIM` becomes DELIM; a backslash-newline becomes a newline; other escapes
    /// stay for the regex or replacement parser. `None` when unterminated. In a regex a
    /// bracket expression is copied whole, as GNU sed reads it: the delimiter inside it
    /// (`s/[/]/X/`) does not end the regex, and backslashes in it are literal (but `\n`).
    fn delimited(&mut self, delim: char, regex: bool) -> Option<String> {
        let mut out = String::new();
        loop {
            let c = self.next()?;
            if regex && c == '[' {
                self.bracket_into(&mut out)?;
                continue;
            }
            if c == delim {
                return Some(out);
            }
            match c {
                '\n' => return None,
                // GNU reads each -e alone: a backslash that ends one escapes nothing
                // (only `a`, `i`, `c` text goes on into the next -e).
                '\\' if self.at_piece_end() => return None,
                '\\' => {
                    let n = self.next()?;
                    // `\&` keeps its backslash in a replacement even when `&` delimits.
                    if n == delim && (regex || n != '&') {
                        out.push(n);
                    } else if (n == 'n' && regex) || n == '\n' {
                        out.push('\n');
                    } else {
                        out.push('\\');
                        out.push(n);
                    }
                }
                c => out.push(c),
            }
        }
    }

    /// Whether the character just read comes from a `-f` file.
    fn in_file(&self) -> bool {
        let last = self.pos.saturating_sub(1);
        let k = self
            .starts
            .iter()
            .rposition(|&s| s <= last)
            .unwrap_or_default();
        self.pieces
            .get(k)
            .is_some_and(|p| matches!(p.origin, Origin::File(_)))
    }

    /// Whether the next character is the newline that ends a piece of the script.
    fn at_piece_end(&self) -> bool {
        self.peek() == Some('\n')
            && (self.pos + 1 == self.s.len() || self.starts.contains(&(self.pos + 1)))
    }

    /// Copies a bracket expression after its `[` (pushed here) up to its `]`; `None` when
    /// the line or the script ends first.
    fn bracket_into(&mut self, out: &mut String) -> Option<()> {
        out.push('[');
        if self.peek() == Some('^') {
            self.pos += 1;
            out.push('^');
        }
        if self.peek() == Some(']') {
            self.pos += 1;
            out.push(']');
        }
        loop {
            let c = self.next()?;
            match c {
                '\n' => return None,
                ']' => {
                    out.push(']');
                    return Some(());
                }
                '[' if matches!(self.peek(), Some(':' | '.' | '=')) => {
                    let kind = self.next()?;
                    out.push('[');
                    out.push(kind);
                    // Up to the matching `:]` (or `.]`, `=]`).
                    loop {
                        let d = self.next()?;
                        if d == '\n' {
                            return None;
                        }
                        out.push(d);
                        if d == kind && self.peek() == Some(']') {
                            self.pos += 1;
                            out.push(']');
                            break;
                        }
                    }
                }
                '\\' if self.peek() == Some('n') => {
                    self.pos += 1;
                    out.push('\n');
                }
                c => out.push(c),
            }
        }
    }

    /// Reads a regex address's flags (`I`, `M`) and compiles it.
    fn address_regex(&mut self, delim: char) -> Result<Rx, ParseError> {
        let delim = self.single_byte(delim)?;
        let Some(pat) = self.delimited(delim, true) else {
            return Err(self.err("unterminated address regex"));
        };
        let (mut icase, mut multi) = (false, false);
        while !self.posix {
            match self.peek() {
                Some('I') => icase = true,
                Some('M') => multi = true,
                _ => break,
            }
            self.pos += 1;
        }
        if pat.is_empty() && (icase || multi) {
            return Err(self.err(NO_MODIFIERS));
        }
        let re = self.compile(&pat, icase, multi)?;
        self.addr_show = std::mem::take(&mut self.re_show);
        if icase {
            self.addr_show.push(b'I');
        }
        if multi {
            self.addr_show.push(b'M');
        }
        Ok(re)
    }

    fn compile(&mut self, pat: &str, icase: bool, multi: bool) -> Result<Rx, ParseError> {
        self.compile_at(pat, icase, multi, self.pos)
    }

    /// [`Parser::compile`], its errors located at `at`.
    fn compile_at(
        &mut self,
        pat: &str,
        icase: bool,
        multi: bool,
        at: usize,
    ) -> Result<Rx, ParseError> {
        if pat.is_empty() {
            // With no regex used before it, `//` fails when it runs (see
            // [`Program::end_where`]).
            self.re_show = b"//".to_vec();
            return Ok(None);
        }
        let pre = unescape_regex(pat, self.c_locale);
        self.re_show = debug::regex(&pre);
        let dialect = if self.ere {
            Dialect::Extended
        } else {
            Dialect::Basic
        };
        let flags = Flags {
            icase,
            multiline: multi,
            strict: true,
            c_locale: self.c_locale,
            posix: self.posix,
            nul_lines: self.nul,
            ..Flags::default()
        };
        match gnu_regex::compile(&pre, dialect, flags) {
            Ok(re) => Ok(Some(Arc::new(re))),
            Err(e) if e.kind == ErrorKind::Dfa => Err(ParseError(e.msg, 4)),
            Err(e) => Err(self.err_at(at, e.msg)),
        }
    }

    fn addr1(&mut self) -> Result<Option<Addr>, ParseError> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                let n = self.number().unwrap_or(0);
                self.addr_show = n.to_string().into_bytes();
                if self.peek() == Some('~') && !self.posix {
                    self.pos += 1;
                    let step = self.number().unwrap_or(0);
                    // A step of 0 is the line `first` alone, as GNU sed reads it.
                    if step > 0 {
                        self.addr_show = format!("{n}~{step}").into_bytes();
                        return Ok(Some(Addr::Step(n, step)));
                    }
                }
                Ok(Some(if n == 0 { Addr::Zero } else { Addr::Line(n) }))
            }
            Some('$') => {
                self.pos += 1;
                self.addr_show = b"$".to_vec();
                Ok(Some(Addr::Last))
            }
            Some('/') => {
                self.pos += 1;
                Ok(Some(Addr::Re(self.address_regex('/')?)))
            }
            Some('\\') => {
                self.pos += 1;
                match self.next() {
                    Some(d) if d != '\n' && d != '\\' => Ok(Some(Addr::Re(self.address_regex(d)?))),
                    _ => Err(self.unterminated("unterminated address regex")),
                }
            }
            Some('+' | '~') if !self.posix => {
                self.pos += 1;
                self.number();
                Err(self.err("invalid usage of +N or ~N as first address"))
            }
            _ => Ok(None),
        }
    }

    fn addr2(&mut self) -> Result<Option<Addr2>, ParseError> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                let n = self.number().unwrap_or(0);
                self.addr_show = n.to_string().into_bytes();
                Ok(Some(Addr2::Line(n)))
            }
            Some(c @ ('+' | '~')) if !self.posix => {
                self.pos += 1;
                let n = self.number().unwrap_or(0);
                // GNU keeps a step of 0 as no address at all.
                self.addr_show = if n == 0 {
                    b"[ADDR-NULL]".to_vec()
                } else {
                    format!("{c}{n}").into_bytes()
                };
                Ok(Some(if c == '+' {
                    Addr2::Plus(n)
                } else {
                    Addr2::Mult(n)
                }))
            }
            _ => Ok(match self.addr1()? {
                None => None,
                Some(Addr::Line(n)) => Some(Addr2::Line(n)),
                Some(Addr::Zero) => Some(Addr2::Line(0)),
                Some(Addr::Step(n, _)) => Some(Addr2::Line(n)),
                Some(Addr::Last) => Some(Addr2::Last),
                Some(Addr::Re(r)) => Some(Addr2::Re(r)),
            }),
        }
    }

    /// After a command: blanks, then the end of the line, `;`, `}` or `#`.
    fn end_of_cmd(&mut self) -> Result<(), ParseError> {
        self.skip_blanks();
        match self.peek() {
            None | Some('}' | '#') => Ok(()),
            Some('\n' | ';') => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => {
                self.pos += 1;
                Err(self.err_first_byte("extra characters after command"))
            }
        }
    }

    /// An error about the character just read: GNU reads a script a byte at a time, so
    /// it stops at the first byte of a character of several.
    fn err_first_byte(&self, msg: impl std::fmt::Display) -> ParseError {
        match self.pos.checked_sub(1).and_then(|p| self.s.get(p)) {
            Some(c) if !c.is_ascii() => self.locate(
                self.pos,
                1 - isize::try_from(c.len_utf8()).unwrap_or(1),
                msg,
            ),
            _ => self.err(msg),
        }
    }

    /// GNU's `unknown command` for the character just read: a character of several
    /// bytes is named by its first byte (raw, as GNU writes it; see
    /// [`gnu_regex::byte_char`]).
    fn unknown_command(&self, c: char) -> ParseError {
        // In a file GNU has counted the line the newline ended.
        if c == '\n' && self.in_file() {
            return self.err_at(self.pos + 1, "unknown command: `\n'");
        }
        let mut first = [0; 4];
        let shown = match c.encode_utf8(&mut first).as_bytes() {
            [b, _, ..] => gnu_regex::byte_char(*b),
            _ => c,
        };
        self.err_first_byte(format!("unknown command: `{shown}'"))
    }

    /// A label for `:`, `b`, `t`, `T`: up to a newline, `;`, `}` or blank (GNU 4.9:
    /// `1{bx}` branches to `x` and closes the block).
    fn label(&mut self) -> String {
        self.skip_blanks();
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if c == '\n' || c == ';' || c == '}' || c.is_whitespace() {
                break;
            }
            out.push(c);
            self.pos += 1;
        }
        out
    }

    /// A file name for `r`, `R`, `w`, `W`: the rest of the line.
    fn filename(&mut self) -> Result<String, ParseError> {
        // GNU refuses the command (or `s`'s `w` flag) as soon as it has read it.
        if self.sandbox {
            return Err(self.err("e/r/w commands disabled in sandbox mode"));
        }
        self.skip_blanks();
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            out.push(c);
            self.pos += 1;
        }
        if out.is_empty() {
            return Err(self.err("missing filename in r/R/w/W commands"));
        }
        Ok(out)
    }

    fn wfile(&mut self, name: String) -> Result<usize, ParseError> {
        if let Some(i) = self.wfiles.iter().position(|w| *w == name) {
            return Ok(i);
        }
        if self.wfiles.len() >= MAX_WFILES {
            return Err(self.err(format!("more than {MAX_WFILES} output files")));
        }
        self.wfiles.push(name);
        Ok(self.wfiles.len() - 1)
    }

    /// The text of `a`, `i`, `c`: GNU's one-liner (`a text`) and classic (`a\` newline
    /// `text`) forms; a backslash-newline continues the text on the next line.
    fn text(&mut self) -> Result<Vec<u8>, ParseError> {
        self.skip_blanks();
        match self.peek() {
            None => return Err(self.err("expected \\ after `a', `c' or `i'")),
            Some('\n') => {
                self.pos += 1;
                return Err(self.err("expected \\ after `a', `c' or `i'"));
            }
            Some('\\') => {
                self.pos += 1;
                // `a\` newline `text`; in `a\  text` GNU keeps the blanks.
                if self.peek() == Some('\n') {
                    self.pos += 1;
                }
            }
            Some(_) if self.posix => {
                self.pos += 1;
                return Err(self.err("expected \\ after `a', `c' or `i'"));
            }
            Some(_) => {}
        }
        let mut raw = String::new();
        let mut ended = false;
        while let Some(c) = self.next() {
            match c {
                '\n' => {
                    ended = true;
                    break;
                }
                '\\' => match self.next() {
                    None => break,
                    Some('\n') => raw.push('\n'),
                    Some(n) => {
                        raw.push('\\');
                        raw.push(n);
                    }
                },
                c => raw.push(c),
            }
        }
        // Text that a newline ends gets it, even an empty line; at the very end of the
        // script a trailing backslash-newline adds nothing (an error for POSIX).
        let mut text = unescape_text(&raw);
        if raw.is_empty() && !ended && self.posix {
            return Err(self.err("incomplete command"));
        }
        if ended || (!text.is_empty() && !text.ends_with(b"\n")) {
            text.push(b'\n');
        }
        Ok(text)
    }

    fn command(&mut self) -> Result<(), ParseError> {
        let a1 = self.addr1()?;
        let mut show = std::mem::take(&mut self.addr_show);
        let mut a2 = None;
        if a1.is_some() {
            self.skip_blanks();
            if self.peek() == Some(',') {
                self.pos += 1;
                self.skip_blanks();
                a2 = self.addr2()?;
                show.push(b',');
                show.append(&mut self.addr_show);
                if a2.is_none() {
                    // GNU has read the character that is no address.
                    self.next();
                    return Err(self.err("unexpected `,'"));
                }
            }
        }
        self.skip_blanks();
        // GNU checks line 0 against the character after the addresses: only `0r` and
        // `0,/re/` (not under --posix) take it.
        if matches!(a1, Some(Addr::Zero))
            && (self.posix
                || match a2 {
                    None => self.peek() != Some('r'),
                    Some(ref a) => !matches!(a, Addr2::Re(_)),
                })
        {
            self.next();
            return Err(self.err_first_byte("invalid usage of line address 0"));
        }
        let mut negate = false;
        if self.peek() == Some('!') {
            self.pos += 1;
            negate = true;
            self.skip_blanks();
            if self.peek() == Some('!') {
                self.pos += 1;
                return Err(self.err("multiple `!'s"));
            }
        }
        let has_addr = a1.is_some();
        let Some(c) = self.next() else {
            return Err(self.err("missing command"));
        };
        // `0r` reads its file before line 1: GNU shows it as `1r`.
        if matches!(a1, Some(Addr::Zero)) && a2.is_none() && c == 'r' {
            show = b"1".to_vec();
        }
        if negate {
            show.push(b'!');
        }
        if has_addr {
            show.push(b' ');
        }
        let mut buf = [0; 4];
        show.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        // `--posix` holds `=`, `a`, `i`, `r` and `l` to one address too, as GNU does.
        if a2.is_some() && (matches!(c, 'q' | 'Q') || (self.posix && "=airl".contains(c))) {
            return Err(self.err("command only uses one address"));
        }
        if self.posix && "FzvRTWeQ".contains(c) {
            return Err(self.err(format!("unknown command: `{c}'")));
        }
        let op = match c {
            // The newline that ends a piece: the script ended there.
            '\n' if self.pos == self.s.len() || self.starts.contains(&self.pos) => {
                self.pos -= 1;
                return Err(self.err("missing command"));
            }
            // GNU reads a newline or `;` after an address as the command it names.
            '\n' | ';' => return Err(self.unknown_command(c)),
            '{' => {
                self.blocks.push((self.cmds.len(), self.pos));
                Op::BlockStart(0)
            }
            '}' => {
                let Some((open, _)) = self.blocks.pop() else {
                    return Err(self.err("unexpected `}'"));
                };
                if has_addr {
                    return Err(self.err("`}' doesn't want any addresses"));
                }
                // The `{` of a block not selected goes on at its `}` (a no-op), which
                // `--debug` shows as GNU's does.
                let at = self.cmds.len();
                self.cmds[open].op = Op::BlockStart(at);
                self.end_of_cmd()?;
                Op::Nop
            }
            '#' => {
                if has_addr {
                    return Err(self.err("comments don't accept any addresses"));
                }
                self.skip_comment();
                return Ok(());
            }
            ':' => {
                if has_addr {
                    return Err(self.err(": doesn't want any addresses"));
                }
                let label = self.label();
                if label.is_empty() {
                    return Err(self.err("\":\" lacks a label"));
                }
                // What follows the label is the next command (`:x p`), as in GNU.
                show.extend_from_slice(label.as_bytes());
                self.labels.entry(label).or_insert(self.cmds.len());
                Op::Nop
            }
            'b' | 't' | 'T' => {
                let label = self.label();
                self.jumps.push((self.cmds.len(), label));
                match c {
                    'b' => Op::Branch(0),
                    't' => Op::BranchIfSub(0),
                    _ => Op::BranchUnlessSub(0),
                }
            }
            'a' | 'i' | 'c' => {
                let text = self.text()?;
                show.push(b'\\');
                show.extend_from_slice(&text);
                match c {
                    'a' => Op::Append(text),
                    'i' => Op::Insert(text),
                    _ => Op::Change(text),
                }
            }
            's' => {
                let (subst, shown) = self.subst()?;
                show.extend_from_slice(&shown);
                Op::Subst(Box::new(subst))
            }
            'y' => {
                let (map, shown) = self.translate()?;
                show.extend_from_slice(&shown);
                Op::Translate(map)
            }
            'q' | 'Q' | 'l' => {
                self.skip_blanks();
                let n = if self.posix { None } else { self.number() };
                self.end_of_cmd()?;
                if let Some(n) = n {
                    show.extend_from_slice(format!(" {n}").as_bytes());
                }
                // The status is taken modulo 256, as `exit` does.
                let code = i32::try_from(n.unwrap_or(0) % 256).unwrap_or(0);
                match c {
                    'q' => Op::Quit(code),
                    'Q' => Op::QuitSilent(code),
                    _ => Op::List(n.map(|n| usize::try_from(n).unwrap_or(usize::MAX))),
                }
            }
            'r' | 'R' => {
                let f = self.filename()?;
                show.push(b' ');
                show.extend_from_slice(f.as_bytes());
                if c == 'r' {
                    Op::ReadFile(f)
                } else {
                    Op::ReadLine(f)
                }
            }
            'w' | 'W' => {
                let f = self.filename()?;
                show.extend_from_slice(f.as_bytes());
                let w = self.wfile(f)?;
                if c == 'w' {
                    Op::Write(w)
                } else {
                    Op::WriteFirst(w)
                }
            }
            'e' => {
                if self.sandbox {
                    return Err(self.err("e/r/w commands disabled in sandbox mode"));
                }
                self.skip_blanks();
                let mut command = String::new();
                while let Some(c) = self.peek().filter(|&c| c != '\n') {
                    command.push(c);
                    self.pos += 1;
                }
                show.push(b' ');
                if !command.is_empty() {
                    show.extend_from_slice(command.as_bytes());
                    show.push(b'\n');
                }
                Op::Exec((!command.is_empty()).then_some(command))
            }
            'v' => {
                let wanted = self.label();
                if newer_than_us(&wanted) {
                    return Err(self.err("expected newer version of sed"));
                }
                self.end_of_cmd()?;
                // Nothing to run (nor for `--debug` to show).
                return Ok(());
            }
            _ => {
                let op = match c {
                    '=' => Op::LineNumber,
                    'd' => Op::Delete,
                    'D' => Op::DeleteFirst,
                    'p' => Op::Print,
                    'P' => Op::PrintFirst,
                    'n' => Op::Next,
                    'N' => Op::NextAppend,
                    'h' => Op::Hold,
                    'H' => Op::HoldAppend,
                    'g' => Op::Get,
                    'G' => Op::GetAppend,
                    'x' => Op::Exchange,
                    'F' => Op::FileName,
                    'z' => Op::Zap,
                    other => return Err(self.unknown_command(other)),
                };
                self.end_of_cmd()?;
                op
            }
        };
        self.cmds.push(Cmd {
            a1,
            a2,
            negate,
            op,
            show,
        });
        Ok(())
    }

    /// An `s` command after its `s`, and how `--debug` shows what follows the `s`.
    fn subst(&mut self) -> Result<(Subst, Vec<u8>), ParseError> {
        let unterminated = "unterminated `s' command";
        let delim = match self.next() {
            Some(d) if d != '\n' => self.single_byte(d)?,
            _ => return Err(self.unterminated(unterminated)),
        };
        let Some(pat) = self.delimited(delim, true) else {
            return Err(self.err(unterminated));
        };
        let Some(rep) = self.delimited(delim, false) else {
            return Err(self.err(unterminated));
        };
        let (mut global, mut print, mut icase, mut multi) = (false, false, false, false);
        let mut print_after_eval = false;
        let mut nth: Option<usize> = None;
        let mut write = None;
        let mut eval = false;
        loop {
            match self.peek() {
                Some('g') => {
                    self.pos += 1;
                    if global {
                        return Err(self.err("multiple `g' options to `s' command"));
                    }
                    global = true;
                }
                Some('p') => {
                    self.pos += 1;
                    if print {
                        return Err(self.err("multiple `p' options to `s' command"));
                    }
                    print = true;
                    print_after_eval = eval;
                }
                Some('i' | 'I') if !self.posix => {
                    self.pos += 1;
                    icase = true;
                }
                Some('m' | 'M') if !self.posix => {
                    self.pos += 1;
                    multi = true;
                }
                Some(c) if c.is_ascii_digit() => {
                    let n = self.number().unwrap_or(0);
                    if nth.is_some() {
                        return Err(self.err("multiple number options to `s' command"));
                    }
                    if n == 0 {
                        return Err(self.err("number option to `s' command may not be zero"));
                    }
                    nth = Some(usize::try_from(n).unwrap_or(usize::MAX));
                }
                Some('w') => {
                    self.pos += 1;
                    let f = self.filename()?;
                    write = Some(self.wfile(f)?);
                    break;
                }
                Some('e') if !self.posix => {
                    self.pos += 1;
                    eval = true;
                }
                None | Some('\n' | ';' | '}' | '#') => break,
                // GNU skips blanks between flags (`s/a/b/ g`).
                Some(c) if is_blank(c) => self.pos += 1,
                Some(_) => {
                    self.pos += 1;
                    return Err(self.err("unknown option to `s'"));
                }
            }
        }
        if recursive_c_escape(&rep) || recursive_c_escape(&pat) {
            return Err(self.err("recursive escaping after \\c not allowed"));
        }
        // GNU compiles the regex once the flags are read, the `;` or newline that ends
        // them included: its errors are located after that character.
        // In a file the newline read has counted its line, as the error locator for a
        // newline just read (see [`Parser::unknown_command`]) has it.
        let after = match self.peek() {
            Some('\n') if self.in_file() => self.pos + 2,
            Some(';' | '\n') => self.pos + 1,
            _ => self.pos,
        };
        let re = self.compile_at(&pat, icase, multi, after)?;
        let mut show = std::mem::take(&mut self.re_show);
        show.extend_from_slice(&debug::replacement(&rep, self.posix));
        show.push(b'/');
        for (on, flag) in [(icase, b'i'), (multi, b'm'), (global, b'g'), (eval, b'e')] {
            if on {
                show.push(flag);
            }
        }
        if print {
            show.push(b'p');
        }
        if let Some(n) = nth {
            show.extend_from_slice(n.to_string().as_bytes());
        }
        if let Some(w) = write {
            show.push(b'w');
            show.extend_from_slice(self.wfiles[w].as_bytes());
        }
        let repl = parse_replacement(&rep, self.posix);
        if let Some(re) = &re {
            let groups = re.groups();
            for r in &repl {
                if let Repl::Group(g) = r
                    && *g > groups
                {
                    let msg = format!("invalid reference \\{g} on `s' command's RHS");
                    return Err(self.err_at(after, msg));
                }
            }
        }
        if eval && self.sandbox {
            return Err(self.err_at(after, "e/r/w commands disabled in sandbox mode"));
        }
        self.end_of_cmd()?;
        // GNU finds this once the command is read (its `;` or newline included).
        if pat.is_empty() && (icase || multi) {
            return Err(self.err(NO_MODIFIERS));
        }
        let subst = Subst {
            re,
            repl,
            global,
            nth: nth.unwrap_or(1),
            print,
            print_after_eval,
            write,
            eval,
        };
        Ok((subst, show))
    }

    /// A `y` command after its `y`, and how `--debug` shows its strings.
    fn translate(&mut self) -> Result<(HashMap<char, char>, Vec<u8>), ParseError> {
        let unterminated = "unterminated `y' command";
        let delim = match self.next() {
            Some(d) if d != '\n' => self.single_byte(d)?,
            _ => return Err(self.unterminated(unterminated)),
        };
        let mut parts = Vec::new();
        for _ in 0..2 {
            let mut out = Vec::new();
            loop {
                match self.next() {
                    None | Some('\n') => return Err(self.err(unterminated)),
                    Some(c) if c == delim => break,
                    Some('\\') if self.at_piece_end() => return Err(self.err(unterminated)),
                    Some('\\') => match self.next() {
                        None => return Err(self.err(unterminated)),
                        Some('\\') => out.push('\\'),
                        Some(c) if c == delim => out.push(c),
                        Some('\n') => out.push('\n'),
                        Some(c) if simple_escape(c).is_some() => {
                            out.push(char::from(simple_escape(c).unwrap_or(b'n')));
                        }
                        Some(_) if numeric_escape(&self.s, self.pos - 1).is_some() => {
                            let (b, used) = numeric_escape(&self.s, self.pos - 1).unwrap_or((0, 1));
                            self.pos += used - 1;
                            out.push(if self.c_locale {
                                gnu_regex::byte_char(b)
                            } else {
                                char::from(b)
                            });
                        }
                        // Any other escaped character stands for itself.
                        Some(c) => out.push(c),
                    },
                    Some(c) => out.push(c),
                }
            }
            parts.push(out);
        }
        self.end_of_cmd()?;
        if self.c_locale {
            // The C locale maps bytes: a character of several is several (a byte that is
            // no UTF-8 is one already).
            for part in &mut parts {
                let text: String = part.iter().collect();
                *part = crate::bytetext::byte_view(&text).chars().collect();
            }
        }
        let (from, to) = (&parts[0], &parts[1]);
        if from.len() != to.len() {
            return Err(self.err("strings for `y' command are different lengths"));
        }
        // A character given twice: GNU's byte table keeps the last mapping (the C
        // locale), its multibyte list finds the first.
        let mut map = HashMap::new();
        for (a, b) in from.iter().zip(to) {
            if self.c_locale {
                map.insert(*a, *b);
            } else {
                map.entry(*a).or_insert(*b);
            }
        }
        Ok((map, debug::translation(from, to, self.c_locale)))
    }
}

/// The value of `\dNNN`, `\oNNN`, `\xHH`, `\cX` at `c[i]` (the letter after the
/// backslash): the byte and how many characters it used, letter included.
pub(super) fn numeric_escape(c: &[char], i: usize) -> Option<(u8, usize)> {
    let (radix, max) = match c.get(i)? {
        'd' => (10, 3),
        'o' => (8, 3),
        'x' => (16, 2),
        'c' => {
            let x = c.get(i + 1)?;
            if !x.is_ascii() {
                return None;
            }
            // `\c\\` is control-backslash (`\c\d` is refused when the `s` is parsed).
            if *x == '\\' {
                return (c.get(i + 2) == Some(&'\\')).then_some((0x1c, 3));
            }
            return Some(((x.to_ascii_uppercase() as u8) ^ 0x40, 2));
        }
        _ => return None,
    };
    let digits: String = c[i + 1..]
        .iter()
        .take(max)
        .take_while(|d| d.is_digit(radix))
        .collect();
    if digits.is_empty() {
        return None;
    }
    let v = u32::from_str_radix(&digits, radix).ok()?;
    Some(((v & 0xff) as u8, 1 + digits.len()))
}

pub(super) fn simple_escape(c: char) -> Option<u8> {
    Some(match c {
        'a' => 0x07,
        'f' => 0x0c,
        'v' => 0x0b,
        'r' => b'\r',
        't' => b'\t',
        'n' => b'\n',
        _ => return None,
    })
}

/// Turns sed's own escapes in a regex (`\t`, `\xHH`, …) into the characters, before the
/// regex is parsed, raw (as GNU sed does: what they make may be special).
fn unescape_regex(p: &str, c_locale: bool) -> String {
    let c: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len());
    let mut i = 0;
    while i < c.len() {
        if c[i] == '\\' && i + 1 < c.len() {
            let n = c[i + 1];
            if let Some(b) = simple_escape(n).filter(|_| n != 'n') {
                out.push(char::from(b));
                i += 2;
                continue;
            }
            if let Some((b, used)) = numeric_escape(&c, i + 1) {
                // GNU sed puts the character in raw: `\x2e` is a `.` that matches anything.
                // In the C locale a byte of the upper half is that byte.
                out.push(if c_locale {
                    gnu_regex::byte_char(b)
                } else {
                    char::from(b)
                });
                i += 1 + used;
                continue;
            }
            out.push('\\');
            out.push(n);
            i += 2;
            continue;
        }
        out.push(c[i]);
        i += 1;
    }
    out
}

/// The text of `a`/`i`/`c`: escapes become characters, any other backslash is dropped.
fn unescape_text(raw: &str) -> Vec<u8> {
    let c: Vec<char> = raw.chars().collect();
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    let mut buf = [0u8; 4];
    while i < c.len() {
        if c[i] == '\\' && i + 1 < c.len() {
            if let Some(b) = simple_escape(c[i + 1]) {
                out.push(b);
                i += 2;
                continue;
            }
            // `\c` is no control character in a text (GNU: `a \cA` gives `cA`).
            if let Some((b, used)) = numeric_escape(&c, i + 1).filter(|_| c[i + 1] != 'c') {
                out.push(b);
                i += 1 + used;
                continue;
            }
            out.extend_from_slice(c[i + 1].encode_utf8(&mut buf).as_bytes());
            i += 2;
            continue;
        }
        out.extend_from_slice(c[i].encode_utf8(&mut buf).as_bytes());
        i += 1;
    }
    out
}

/// Parses the right-hand side of `s`: `&`, `\0`–`\9`, case conversion, escapes.
fn parse_replacement(r: &str, posix: bool) -> Vec<Repl> {
    let c: Vec<char> = r.chars().collect();
    let mut parts = Vec::new();
    let mut lit: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4];
    let mut i = 0;
    let flush = |lit: &mut Vec<u8>, parts: &mut Vec<Repl>| {
        if !lit.is_empty() {
            parts.push(Repl::Lit(std::mem::take(lit)));
        }
    };
    while i < c.len() {
        match c[i] {
            '&' => {
                flush(&mut lit, &mut parts);
                parts.push(Repl::Group(0));
                i += 1;
            }
            '\\' if i + 1 < c.len() => {
                let n = c[i + 1];
                if let Some(d) = n.to_digit(10) {
                    flush(&mut lit, &mut parts);
                    parts.push(Repl::Group(d as usize));
                    i += 2;
                    continue;
                }
                let case = match n {
                    _ if posix => None,
                    'U' => Some(Case::Upper),
                    'L' => Some(Case::Lower),
                    'u' => Some(Case::UpperNext),
                    'l' => Some(Case::LowerNext),
                    'E' => Some(Case::End),
                    _ => None,
                };
                if let Some(case) = case {
                    flush(&mut lit, &mut parts);
                    parts.push(Repl::Case(case));
                    i += 2;
                    continue;
                }
                if let Some(b) = simple_escape(n) {
                    lit.push(b);
                    i += 2;
                    continue;
                }
                if let Some((b, used)) = numeric_escape(&c, i + 1) {
                    lit.push(b);
                    i += 1 + used;
                    continue;
                }
                if n == 'c' && i + 2 == c.len() {
                    // A `\c` that ends the replacement is a backslash (GNU 4.9).
                    lit.push(b'\\');
                    i += 2;
                    continue;
                }
                lit.extend_from_slice(&crate::bytetext::encode(n.encode_utf8(&mut buf)));
                i += 2;
            }
            ch => {
                // A byte that is not UTF-8 (from `$'\xe9'`) is that byte.
                lit.extend_from_slice(&crate::bytetext::encode(ch.encode_utf8(&mut buf)));
                i += 1;
            }
        }
    }
    flush(&mut lit, &mut parts);
    parts
}

/// Whether `v VERSION` asks for a sed newer than GNU sed 4.9, which this one follows.
fn newer_than_us(wanted: &str) -> bool {
    let ours = [4u64, 9, 0];
    for (i, part) in wanted.split('.').take(3).enumerate() {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        let n = digits.parse::<u64>().unwrap_or(0);
        match n.cmp(&ours[i]) {
            std::cmp::Ordering::Greater => return true,
            std::cmp::Ordering::Less => return false,
            std::cmp::Ordering::Equal => {}
        }
    }
    false
}

/// `\c` followed by a backslash escape other than `\\` (`s/x/\c\d/`), which GNU
/// refuses.
fn recursive_c_escape(text: &str) -> bool {
    let c: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i + 1 < c.len() {
        if c[i] == '\\' {
            if c[i + 1] == 'c' && c.get(i + 2) == Some(&'\\') && c.get(i + 3) != Some(&'\\') {
                return true;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    false
}

//! GNU's regular expressions: the one dialect layer for `grep`, `sed` (and `awk`,
//! `find -regex` as they come).
//!
//! - [`parse`](self::parse): BRE/ERE text → an AST, with GNU's errors and literal readings
//!   (a leading `*`, grep's unmatched `)` in an ERE, malformed intervals).
//! - [`fast`](self::fast): the AST in the `regex` crate's syntax, for patterns without
//!   back-references: its automata keep big searches fast.
//! - [`backtrack`](self::backtrack): a bounded backtracker for back-references, for
//!   POSIX leftmost-longest match ends where leftmost-first would end earlier, and for
//!   subexpression positions.
//!
//! How a search goes: the `regex` crate finds whether and where (the leftmost start) a
//! match is; when the pattern could end a match earlier than POSIX says (an alternation,
//! a repetition followed by more), the backtracker extends it to the longest end from
//! that start, and fills in groups for a span it is told. Patterns with back-references
//! use the backtracker alone. Text is bytes; characters are decoded as UTF-8 (the
//! session's locale is C.UTF-8), and a byte that is not valid UTF-8 matches no `.` or
//! bracket expression, as in GNU.

mod ast;
mod backtrack;
mod fast;
mod parse;

use self::ast::{Item, Look, Node, Set};
pub use self::backtrack::TooComplex;
use self::backtrack::{Mode, Prog, Slots, UNSET};

/// Largest compiled automaton of the `regex` crate: a hostile pattern fails, not eats memory.
const MAX_REGEX_SIZE: usize = 32 * 1024 * 1024;

/// Which syntax a pattern is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// POSIX basic (`grep`, `sed`): `\(`, `\{`, `\|`, `\+`, `\?` are operators.
    Basic,
    /// POSIX extended (`grep -E`, `sed -E`, `awk`).
    Extended,
    /// Every character stands for itself (`grep -F`).
    Literal,
}

/// How a pattern is read and matched.
#[derive(Clone, Copy, Debug, Default)]
pub struct Flags {
    /// Ignore case (`-i`, sed's `I`).
    pub icase: bool,
    /// `^`/`$` also match at newlines inside the text, and `.` does not match a newline
    /// (sed's `M`).
    pub multiline: bool,
    /// glibc's strict reading, as `sed` has it: what `grep` reads literally or warns
    /// about (an unmatched `)` in an ERE, a leading `*` in an ERE, a malformed interval,
    /// `a**` in a BRE) is an error.
    pub strict: bool,
    /// Match only whole texts (`grep -x`).
    pub whole_line: bool,
    /// Match only whole words (`grep -w`): no word character just before or after.
    pub whole_word: bool,
    /// The C locale: every byte is one character, and classes and case are ASCII's.
    /// Otherwise (the session's C.UTF-8) text is decoded as UTF-8.
    pub c_locale: bool,
    /// POSIX without GNU's operators (`sed --posix`): `\w`, `\b`, `\<`… are their
    /// letters, a BRE's `\+`, `\?`, `\|` too, an ERE's unmatched `)` is itself.
    pub posix: bool,
    /// In multiline mode lines end with NUL rather than a newline (`sed -z`'s `M`).
    pub nul_lines: bool,
}

/// The character a pattern holds for byte `b` of the C locale's upper half (what a
/// caller's own escape such as sed's `\o344` stands for); ASCII is itself.
pub fn byte_char(b: u8) -> char {
    ast::from_byte(b)
}

/// The byte of the C locale's upper half that `c` stands for ([`byte_char`]'s inverse);
/// `None` for any other character.
pub fn char_byte(c: char) -> Option<u8> {
    ast::high_byte(c)
}

/// Whether the locale an environment names is the C locale (not UTF-8): the first set of
/// `LC_ALL`, `LC_CTYPE`, `LANG` decides; none set is C.
pub fn c_locale(env: &std::collections::BTreeMap<String, String>) -> bool {
    let name = ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|k| env.get(*k).filter(|v| !v.is_empty()));
    !name.is_some_and(|v| {
        let v = v.to_ascii_lowercase();
        v.contains("utf-8") || v.contains("utf8")
    })
}

/// Where GNU's message comes from: a compile error of glibc's regex (`sed` prefixes it
/// with the expression's position), or of the DFA matcher (a message of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Syntax,
    Dfa,
}

/// A pattern GNU refuses, with GNU's wording (`Unmatched ( or \(`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{msg}")]
pub struct Error {
    pub msg: String,
    pub kind: ErrorKind,
}

impl Error {
    pub(crate) fn new(msg: &str) -> Error {
        Error {
            msg: msg.to_string(),
            kind: ErrorKind::Syntax,
        }
    }
}

/// A match's groups: group 0 is the whole match; a group that took no part is `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captures {
    spans: Vec<Option<(usize, usize)>>,
}

impl Captures {
    fn from_slots(slots: &Slots, groups: usize) -> Captures {
        let spans = (0..=groups)
            .map(|i| match (slots.get(2 * i), slots.get(2 * i + 1)) {
                (Some(&s), Some(&e)) if s != UNSET && e != UNSET && s <= e => Some((s, e)),
                _ => None,
            })
            .collect();
        Captures { spans }
    }

    /// The span of group `i`.
    pub fn get(&self, i: usize) -> Option<(usize, usize)> {
        self.spans.get(i).copied().flatten()
    }

    /// Groups, the whole match included.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// A compiled pattern.
#[derive(Debug)]
pub struct Regex {
    /// The `regex` crate's form; `None` with back-references.
    fast: Option<regex::bytes::Regex>,
    /// The backtracker's form; `None` if too big (then the fast form serves, leftmost-first).
    prog: Option<Prog>,
    /// Leftmost-first could end a match before the longest one.
    longest: bool,
    groups: usize,
    warnings: Vec<String>,
    /// grep's reading for selecting lines, where it differs (see [`Regex::is_match`]).
    select: Option<Box<Regex>>,
}

/// Compiles one pattern.
pub fn compile(pattern: &str, dialect: Dialect, flags: Flags) -> Result<Regex, Error> {
    compile_many(&[pattern], dialect, flags)
}

/// Compiles patterns that any may match (`grep -e A -e B`): each keeps its own group
/// numbers for its back-references; [`Captures`] number them in order across patterns.
pub fn compile_many(patterns: &[&str], dialect: Dialect, flags: Flags) -> Result<Regex, Error> {
    let (node, groups, warnings, differs) = parse_many(patterns, dialect, flags, false)?;
    let mut re = build(node, groups, warnings, flags)?;
    if differs {
        let (node, groups, ..) = parse_many(patterns, dialect, flags, true)?;
        re.select = Some(Box::new(build(node, groups, Vec::new(), flags)?));
    }
    Ok(re)
}

/// A search for the lines that a pattern set matches, over many lines at once (see
/// [`line_finder`]).
#[derive(Debug)]
pub struct LineFinder {
    re: regex::bytes::Regex,
}

impl LineFinder {
    /// Where the first match in `hay` starts, from `start` on. `hay` holds whole lines,
    /// each ended by a newline; the line holding that position is the first of them
    /// (from `start`'s line on) that the pattern set matches alone. A position at the
    /// very end of `hay` (after its last newline) belongs to no line of it.
    pub fn find_at(&self, hay: &[u8], start: usize) -> Option<usize> {
        self.re.find_at(hay, start).map(|m| m.start())
    }
}

/// What [`compile_many`] compiles, for a search over a buffer of newline-ended lines
/// instead of one line at a time: `grep` finds the next selected line with one automaton
/// run over the buffer (literals go to its `memchr`/SIMD prefilters) rather than a match
/// per line. `None` when the pattern set has back-references, a newline, or does not
/// compile (callers then match line by line); errors and warnings are
/// [`compile_many`]'s to report.
pub fn line_finder(patterns: &[&str], dialect: Dialect, flags: Flags) -> Option<LineFinder> {
    if flags.multiline {
        return None;
    }
    let (node, ..) = parse_many(patterns, dialect, flags, true).ok()?;
    let text = fast::translate_lines(&node, flags.c_locale, flags.icase)?;
    let re = regex::bytes::RegexBuilder::new(&text)
        .unicode(!flags.c_locale)
        .case_insensitive(flags.icase)
        .multi_line(true)
        .size_limit(MAX_REGEX_SIZE)
        .build()
        .ok()?;
    Some(LineFinder { re })
}

/// Patterns → one AST (an alternation of them), its group count, GNU's warnings, and
/// whether grep's line selection reads them differently (`select` gives that reading;
/// see [`parse::Parsed::select_differs`]).
fn parse_many(
    patterns: &[&str],
    dialect: Dialect,
    flags: Flags,
    select: bool,
) -> Result<(Node, usize, Vec<String>, bool), Error> {
    let mut branches = Vec::with_capacity(patterns.len());
    let mut groups = 0;
    let mut warnings = Vec::new();
    let mut differs = false;
    for p in patterns {
        // The C locale reads the pattern byte by byte too (a byte that is no UTF-8, already
        // a byte character, stays one).
        let latin;
        let p: &str = if flags.c_locale {
            latin = crate::bytetext::byte_view(p);
            &latin
        } else {
            p
        };
        let mut node = match dialect {
            Dialect::Literal => Node::Concat(p.chars().map(Node::Char).collect()),
            Dialect::Basic | Dialect::Extended => {
                let ere = dialect == Dialect::Extended;
                let parsed = parse::parse(p, ere, flags, select)?;
                warnings.extend(parsed.warnings);
                differs |= parsed.select_differs;
                let mut node = parsed.node;
                node.shift_groups(groups);
                groups += parsed.groups;
                node
            }
        };
        if flags.whole_line {
            node = Node::Concat(vec![
                Node::Look(Look::TextStart),
                node,
                Node::Look(Look::TextEnd),
            ]);
        } else if flags.whole_word {
            node = Node::Concat(vec![
                Node::Look(Look::NoWordBefore),
                node,
                Node::Look(Look::NoWordAfter),
            ]);
        }
        branches.push(node);
    }
    let node = match branches.len() {
        0 => Node::Set(Box::new(Set {
            negated: false,
            items: Vec::<Item>::new(),
        })),
        1 => branches.pop().unwrap_or(Node::Empty),
        _ => Node::Alt(branches),
    };
    Ok((node, groups, warnings, differs))
}

/// Compiles an awk regular expression as gawk reads it (an ERE with gawk's escapes, see
/// [`parse::parse_awk`]); the pattern is bytes, as awk's strings are. A byte that is not
/// part of valid UTF-8 (or any upper-half byte in the C locale) stands for itself.
pub fn compile_awk(pattern: &[u8], flags: Flags) -> Result<Regex, Error> {
    let chars: Vec<char> = if flags.c_locale {
        pattern.iter().map(|&b| ast::from_byte(b)).collect()
    } else {
        let mut out = Vec::with_capacity(pattern.len());
        for chunk in pattern.utf8_chunks() {
            out.extend(chunk.valid().chars());
            out.extend(chunk.invalid().iter().map(|&b| ast::from_byte(b)));
        }
        out
    };
    let parsed = parse::parse_awk(chars)?;
    build(parsed.node, parsed.groups, parsed.warnings, flags)
}

/// The compiled forms of a parsed pattern.
fn build(node: Node, groups: usize, warnings: Vec<String>, flags: Flags) -> Result<Regex, Error> {
    let line_byte = if flags.nul_lines { 0 } else { b'\n' };
    let prog = Prog::new(
        &node,
        groups,
        flags.icase,
        flags.multiline.then_some(line_byte),
        flags.c_locale,
    );
    let fast = match fast::translate(&node, flags.c_locale, flags.icase) {
        Some(text) => Some(
            regex::bytes::RegexBuilder::new(&text)
                .unicode(!flags.c_locale)
                .case_insensitive(flags.icase)
                .multi_line(flags.multiline)
                .dot_matches_new_line(!flags.multiline)
                .line_terminator(line_byte)
                .size_limit(MAX_REGEX_SIZE)
                .build()
                .map_err(|_| Error::new("Regular expression too big"))?,
        ),
        None => None,
    };
    if fast.is_none() && prog.is_none() {
        return Err(Error::new("Regular expression too big"));
    }
    Ok(Regex {
        fast,
        longest: node.may_be_shorter(),
        prog,
        groups,
        warnings,
        select: None,
    })
}

impl Regex {
    /// Warnings GNU grep prints for this pattern (`* at start of expression`).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Number of groups, not counting the whole match.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Whether the pattern matches anywhere in `hay`. For a pattern GNU grep's two
    /// matchers read differently this is its DFA's answer (which lines grep selects),
    /// while the spans ([`Regex::find_at`]: `-o`, colors) are glibc's.
    pub fn is_match(&self, hay: &[u8]) -> Result<bool, TooComplex> {
        if let Some(select) = &self.select {
            return select.is_match(hay);
        }
        if let Some(f) = &self.fast {
            return Ok(f.is_match(hay));
        }
        match &self.prog {
            Some(p) => Ok(p.search(hay, 0, Mode::First)?.is_some()),
            None => Ok(false),
        }
    }

    /// The leftmost-longest match starting at or after `start` (the text before `start`
    /// still counts for `^`, `\b` and the like).
    pub fn find_at(&self, hay: &[u8], start: usize) -> Result<Option<(usize, usize)>, TooComplex> {
        if start > hay.len() {
            return Ok(None);
        }
        if let Some(f) = &self.fast {
            let Some(m) = f.find_at(hay, start) else {
                return Ok(None);
            };
            if self.longest
                && let Some(p) = &self.prog
                && let Some(s) = p.at(hay, m.start(), Mode::Longest)?
            {
                return Ok(Some((m.start(), s[1].max(m.end()))));
            }
            return Ok(Some((m.start(), m.end())));
        }
        match &self.prog {
            Some(p) => Ok(p.search(hay, start, Mode::Longest)?.map(|s| (s[0], s[1]))),
            None => Ok(None),
        }
    }

    /// Like [`Regex::find_at`], with the groups' spans.
    pub fn captures_at(&self, hay: &[u8], start: usize) -> Result<Option<Captures>, TooComplex> {
        if start > hay.len() {
            return Ok(None);
        }
        if self.fast.is_some() {
            let Some((s, e)) = self.find_at(hay, start)? else {
                return Ok(None);
            };
            if self.groups == 0 {
                return Ok(Some(Captures {
                    spans: vec![Some((s, e))],
                }));
            }
            if let Some(p) = &self.prog
                && let Some(slots) = p.at(hay, s, Mode::EndAt(e))?
            {
                return Ok(Some(Captures::from_slots(&slots, self.groups)));
            }
            if let Some(f) = &self.fast
                && let Some(c) = f.captures_at(hay, start)
            {
                let spans = (0..=self.groups)
                    .map(|i| c.get(i).map(|m| (m.start(), m.end())))
                    .collect();
                return Ok(Some(Captures { spans }));
            }
            return Ok(None);
        }
        match &self.prog {
            Some(p) => Ok(p
                .search(hay, start, Mode::Longest)?
                .map(|s| Captures::from_slots(&s, self.groups))),
            None => Ok(None),
        }
    }
}

impl std::fmt::Display for TooComplex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("regular expression too complex to match (backtracking limit reached)")
    }
}

impl std::error::Error for TooComplex {}

#[cfg(test)]
mod tests;

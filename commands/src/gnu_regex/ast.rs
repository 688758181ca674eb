//! The parsed form of a GNU regular expression, shared by both matchers.

/// A zero-width assertion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Look {
    /// `^`: the start of the text, or just after a newline in multiline mode.
    LineStart,
    /// `$`: the end of the text, or just before a newline in multiline mode.
    LineEnd,
    /// `` \` ``: the start of the text.
    TextStart,
    /// `\'`: the end of the text.
    TextEnd,
    /// `\b`.
    WordBoundary,
    /// `\B`.
    NotWordBoundary,
    /// `\<`: a word character follows and none precedes.
    WordStart,
    /// `\>`: a word character precedes and none follows.
    WordEnd,
    /// No word character precedes (the left edge of `grep -w`).
    NoWordBefore,
    /// No word character follows (the right edge of `grep -w`).
    NoWordAfter,
}

/// A named class of a bracket expression (`[:alpha:]`), or `\w`/`\s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Named {
    Alpha,
    Digit,
    Alnum,
    Upper,
    Lower,
    Space,
    Blank,
    Punct,
    Print,
    Graph,
    Cntrl,
    Xdigit,
    /// `\w`: alphanumerics and `_`.
    Word,
}

impl Named {
    pub(crate) fn from_name(name: &str) -> Option<Named> {
        Some(match name {
            "alpha" => Named::Alpha,
            "digit" => Named::Digit,
            "alnum" => Named::Alnum,
            "upper" => Named::Upper,
            "lower" => Named::Lower,
            "space" => Named::Space,
            "blank" => Named::Blank,
            "punct" => Named::Punct,
            "print" => Named::Print,
            "graph" => Named::Graph,
            "cntrl" => Named::Cntrl,
            "xdigit" => Named::Xdigit,
            _ => return None,
        })
    }

    /// Whether `c` is in the class, as glibc's C.UTF-8 locale classifies characters (a
    /// byte of the C locale's upper half, [`from_byte`], is in none).
    pub(crate) fn contains(self, c: char) -> bool {
        if is_high_byte(c) {
            return false;
        }
        match self {
            Named::Alpha => c.is_alphabetic(),
            Named::Digit => c.is_ascii_digit(),
            Named::Alnum => c.is_alphanumeric(),
            Named::Upper => c.is_uppercase(),
            Named::Lower => c.is_lowercase(),
            Named::Space => c.is_whitespace(),
            Named::Blank => c == '\t' || (c.is_whitespace() && !is_line_space(c)),
            Named::Punct => is_graph(c) && !c.is_alphanumeric(),
            Named::Print => c == ' ' || is_graph(c),
            Named::Graph => is_graph(c),
            Named::Cntrl => c.is_control(),
            Named::Xdigit => c.is_ascii_hexdigit(),
            Named::Word => is_word(c),
        }
    }

    /// The class in the `regex` crate's syntax, for use inside `[…]`; `ascii` for the
    /// C locale (the crate's Unicode mode off).
    pub(crate) fn crate_syntax(self, ascii: bool) -> &'static str {
        if ascii {
            return match self {
                Named::Alpha => "[:alpha:]",
                Named::Digit => "[:digit:]",
                Named::Alnum => "[:alnum:]",
                Named::Upper => "[:upper:]",
                Named::Lower => "[:lower:]",
                Named::Space => "[:space:]",
                Named::Blank => "[:blank:]",
                Named::Punct => "[:punct:]",
                Named::Print => "[:print:]",
                Named::Graph => "[:graph:]",
                Named::Cntrl => "[:cntrl:]",
                Named::Xdigit => "[:xdigit:]",
                Named::Word => "[:word:]",
            };
        }
        match self {
            Named::Alpha => r"\p{Alphabetic}",
            Named::Digit => "0-9",
            Named::Alnum => r"\p{Alphabetic}\p{Nd}",
            Named::Upper => r"\p{Uppercase}",
            Named::Lower => r"\p{Lowercase}",
            Named::Space => r"\s",
            Named::Blank => r"\t\p{Zs}",
            Named::Punct => r"\p{P}\p{S}",
            Named::Print => r"\p{L}\p{M}\p{N}\p{P}\p{S}\p{Zs}",
            Named::Graph => r"\p{L}\p{M}\p{N}\p{P}\p{S}",
            Named::Cntrl => r"\p{Cc}",
            Named::Xdigit => "0-9A-Fa-f",
            Named::Word => r"\w",
        }
    }
}

/// Vertical white space: in `[:space:]` but not in `[:blank:]`.
fn is_line_space(c: char) -> bool {
    matches!(
        c,
        '\n' | '\u{b}' | '\u{c}' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// A printable character other than a space.
fn is_graph(c: char) -> bool {
    !c.is_control() && !c.is_whitespace() && !matches!(c, '\u{200b}'..='\u{200f}' | '\u{feff}')
}

/// A word character of `\w`, `\b`, `\<`, `\>` and `grep -w`.
pub(crate) fn is_word(c: char) -> bool {
    c == '_' || (c.is_alphanumeric() && !is_high_byte(c))
}

/// The character the C locale reads byte `b` as: ASCII is itself, a byte of the upper
/// half is its byte character ([`crate::bytetext::byte_char`], a private-use character in
/// no class and with no case, in byte order for ranges), the same character the shell
/// gives a byte that is not UTF-8, so a pattern from `$'\xe9'` needs no translation.
pub(crate) fn from_byte(b: u8) -> char {
    if b < 0x80 {
        char::from(b)
    } else {
        crate::bytetext::byte_char(b)
    }
}

/// The byte a C-locale character stands for, if it is one of the upper half.
pub(crate) fn high_byte(c: char) -> Option<u8> {
    crate::bytetext::char_byte(c)
}

fn is_high_byte(c: char) -> bool {
    high_byte(c).is_some()
}

/// One item of a bracket expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    Char(char),
    Range(char, char),
    Class(Named),
}

/// A bracket expression, `\w`, `\W`, `\s` or `\S`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Set {
    pub negated: bool,
    pub items: Vec<Item>,
}

impl Set {
    /// Whether `c` is in the set; `fold` compares ignoring case.
    pub(crate) fn contains(&self, c: char, fold: bool) -> bool {
        let hit = |c: char| {
            self.items.iter().any(|i| match *i {
                Item::Char(x) => x == c,
                Item::Range(a, b) => a <= c && c <= b,
                Item::Class(n) => n.contains(c),
            })
        };
        let found = hit(c) || (fold && other_cases(c).any(hit));
        found != self.negated
    }
}

/// `towupper` (`towlower`): the one-character mapping, or `c` itself.
fn to_upper(c: char) -> char {
    let mut u = c.to_uppercase();
    match (u.len(), u.next()) {
        (1, Some(x)) => x,
        _ => c,
    }
}

fn to_lower(c: char) -> char {
    let mut l = c.to_lowercase();
    match (l.len(), l.next()) {
        (1, Some(x)) => x,
        _ => c,
    }
}

/// Lower-case letters whose upper case lowers to another letter (`ı` → `I` → `i`):
/// gnulib's list, which GNU's `-i` consults.
const LONESOME_LOWER: [char; 19] = [
    '\u{B5}', '\u{131}', '\u{17F}', '\u{1C5}', '\u{1C8}', '\u{1CB}', '\u{1F2}', '\u{345}',
    '\u{3C2}', '\u{3D0}', '\u{3D1}', '\u{3D5}', '\u{3D6}', '\u{3F0}', '\u{3F1}', '\u{3F2}',
    '\u{3F5}', '\u{1E9B}', '\u{1FBE}',
];

/// The characters GNU's `-i` matches `c` with (gnulib's `case_folded_counterparts`):
/// its upper case, that one's lower case when it maps back, and the lone lower-case
/// letters with the same upper case. So `ı` goes with `i` and `I`, while `ß` and `ẞ`
/// (whose upper case is not each other) stay apart.
pub(crate) fn other_cases(c: char) -> impl Iterator<Item = char> {
    let uc = to_upper(c);
    let lc = to_lower(uc);
    let first = (uc != c).then_some(uc);
    let second = (lc != uc && lc != c && to_upper(lc) == uc).then_some(lc);
    let lonesome = LONESOME_LOWER
        .iter()
        .copied()
        .filter(move |&li| li != lc && li != uc && li != c && to_upper(li) == uc);
    first.into_iter().chain(second).chain(lonesome)
}

/// The letters GNU's `-i` folds together that the `regex` crate's case folding keeps
/// apart (its simple case folding has no dotless `ı`).
pub(crate) const DOTLESS_I: [char; 3] = ['i', 'I', 'ı'];

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    Empty,
    Char(char),
    /// `.`: any character (a newline too, unless in multiline mode).
    Any,
    Set(Box<Set>),
    Look(Look),
    /// A capturing group and its number (1-based).
    Group(Box<Node>, usize),
    Backref(usize),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    /// `node{min,max}`; `None` is unbounded.
    Repeat(Box<Node>, u32, Option<u32>),
}

impl Node {
    /// Whether a back-reference occurs anywhere.
    pub(crate) fn has_backref(&self) -> bool {
        match self {
            Node::Backref(_) => true,
            Node::Group(n, _) | Node::Repeat(n, ..) => n.has_backref(),
            Node::Concat(v) | Node::Alt(v) => v.iter().any(Node::has_backref),
            _ => false,
        }
    }

    /// Whether a group is repeated without bound somewhere (`\(a*\)*`): a loop whose
    /// last iteration may be empty and still set the group.
    pub(crate) fn has_group_in_star(&self) -> bool {
        fn has_group(n: &Node) -> bool {
            match n {
                Node::Group(..) => true,
                Node::Repeat(n, ..) => has_group(n),
                Node::Concat(v) | Node::Alt(v) => v.iter().any(has_group),
                _ => false,
            }
        }
        match self {
            Node::Repeat(n, _, None) => has_group(n) || n.has_group_in_star(),
            Node::Repeat(n, ..) | Node::Group(n, _) => n.has_group_in_star(),
            Node::Concat(v) | Node::Alt(v) => v.iter().any(Node::has_group_in_star),
            _ => false,
        }
    }

    /// Whether the character `c` stands for itself somewhere in the pattern (not as part
    /// of a bracket expression).
    pub(crate) fn has_char(&self, c: char) -> bool {
        match self {
            Node::Char(x) => *x == c,
            Node::Group(n, _) | Node::Repeat(n, ..) => n.has_char(c),
            Node::Concat(v) | Node::Alt(v) => v.iter().any(|n| n.has_char(c)),
            _ => false,
        }
    }

    /// Whether leftmost-first matching (what the `regex` crate does) can end a match
    /// earlier than POSIX's leftmost-longest rule: an alternation, or a repetition of
    /// variable length with something after it.
    pub(crate) fn may_be_shorter(&self) -> bool {
        fn variable(n: &Node) -> bool {
            match n {
                Node::Alt(_) => true,
                Node::Repeat(_, a, b) if Some(*a) != *b => true,
                Node::Repeat(n, ..) | Node::Group(n, _) => variable(n),
                Node::Concat(v) => v.iter().any(variable),
                _ => false,
            }
        }
        match self {
            Node::Alt(_) => true,
            Node::Concat(v) => {
                let last_variable = v.len().saturating_sub(1);
                v.iter().enumerate().any(|(i, n)| match n {
                    Node::Repeat(inner, ..) if i == last_variable => variable(inner),
                    Node::Group(inner, _) if i == last_variable => inner.may_be_shorter(),
                    n => variable(n),
                })
            }
            Node::Group(n, _) => n.may_be_shorter(),
            Node::Repeat(n, ..) => variable(n),
            _ => false,
        }
    }

    /// Renumbers groups and back-references by `by` (patterns joined with `grep -e`).
    pub(crate) fn shift_groups(&mut self, by: usize) {
        match self {
            Node::Group(n, i) => {
                *i += by;
                n.shift_groups(by);
            }
            Node::Backref(i) => *i += by,
            Node::Repeat(n, ..) => n.shift_groups(by),
            Node::Concat(v) | Node::Alt(v) => v.iter_mut().for_each(|n| n.shift_groups(by)),
            _ => {}
        }
    }
}

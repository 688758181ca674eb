//! Word expansion, in bash's order: brace expansion, tilde, parameters, command
//! substitution and arithmetic (left to right), word splitting on `IFS`, pathname
//! expansion over the session's filesystem, quote removal.
//!
//! brush-parser splits a word into pieces (quoted text, `$x`, `$(…)`, …); expansion turns
//! them into [`Piece`]s that remember whether they were quoted, then into fields.
//!
//! # Layout
//!
//! - this file: the order of expansion, pieces and fields, command substitution and
//!   word splitting.
//! - `brace`: brace expansion. `param`: `${…}` expressions and their helpers. `value`:
//!   the value of a parameter. `glob`: pathname expansion.

use std::future::Future;
use std::pin::Pin;

use brush_parser::ast::Word;
use brush_parser::word::{
    self, BraceExpressionMember, BraceExpressionOrText, Parameter, ParameterExpr,
    ParameterTestType, ParameterTransformOp, SpecialParameter, SubstringMatchKind, TildeExpr,
    WordPiece, WordPieceWithSource,
};
use forkbox_commands::{bytetext, pipe};

use super::arith::{self, ArithEnv};
use super::error::ShellError;
use super::pattern::{self, Pattern};
use super::redirect::Fds;
use super::{MAX_SUBSTITUTION_OUTPUT, Shell, Value, parse_program};

mod brace;
mod cache;
mod glob;
mod param;
mod value;

pub(crate) use brace::brace_expand;
#[cfg(test)]
use brace::{sequence, unclosed_braces};
pub(crate) use cache::WordCache;
pub(crate) use param::shell_quote;
#[cfg(test)]
use param::{lit, replace, slice};

type R<T> = Result<T, ShellError>;
type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An expanded piece of a word, before splitting and globbing.
#[derive(Clone, Debug)]
pub(crate) enum Piece {
    Text {
        s: String,
        /// Quoted text is never split and its glob characters are literal.
        quoted: bool,
        /// Result of an unquoted expansion: subject to word splitting.
        split: bool,
    },
    /// Ends the current field (between the elements of `"$@"`).
    FieldBreak,
    /// Between the elements of an unquoted `$*`: a field break where words are split, the
    /// first character of `IFS` where they are joined (`x=$*`).
    StarBreak(String),
    /// Makes sure a field exists even if empty (`""`).
    ForceField,
}

/// A parameter's value before an operator is applied.
#[derive(Clone, Debug)]
enum PVal {
    Unset,
    Str(String),
    /// `$@`, `$*`, `${a[@]}`: `concat` for the `*` forms.
    List(Vec<String>, bool),
    /// A word expanded in place (`${x:-"a b" c}`), its quoting kept for splitting.
    Pieces(Vec<Piece>),
}

impl PVal {
    /// Whether `${x-…}`/`${x:-…}` (per `test`) takes the word; `"${*:-…}"` asks the caller
    /// ([`Shell::unset_or_null`]), as it depends on `IFS`.
    fn is_unset_or_null(&self, test: &ParameterTestType) -> bool {
        match (self, test) {
            (PVal::Unset, _) => true,
            (PVal::Str(s), ParameterTestType::UnsetOrNull) => s.is_empty(),
            (PVal::Pieces(_), _) => false,
            (PVal::List(l, _), _) => {
                l.is_empty()
                    || (l.len() == 1
                        && l[0].is_empty()
                        && matches!(test, ParameterTestType::UnsetOrNull))
            }
            _ => false,
        }
    }

    fn map(self, f: impl Fn(&str) -> String) -> PVal {
        match self {
            PVal::Unset => PVal::Str(f("")),
            PVal::Str(s) => PVal::Str(f(&s)),
            PVal::List(l, c) => PVal::List(l.iter().map(|s| f(s)).collect(), c),
            PVal::Pieces(p) => PVal::Str(f(&join_pieces(&p))),
        }
    }
}

/// The pieces of a word; a word that cannot be parsed (or nests too deep) is a bad
/// substitution.
fn parse_word(text: &str) -> R<Vec<WordPieceWithSource>> {
    super::parse::word_pieces(text, false, word::parse)?
        .ok_or_else(|| ShellError::BadSubstitution(text.to_string()))
}

/// An unset positional parameter under `set -u` as bash names it: `$5` when written
/// `$5`, `5` when written in braces (`${5}`, `${#5}`, `${5%x}`): the parser gives `$5`
/// and `${5}` the same expression; the span of the piece tells them apart.
fn braced_positional(e: ShellError, p: &WordPieceWithSource) -> ShellError {
    match e {
        ShellError::Unbound(name)
            if matches!(p.piece, WordPiece::ParameterExpansion(_))
                && p.end_index.saturating_sub(p.start_index) > name.len()
                && name.len() > 1
                && name.starts_with('$')
                && name[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            ShellError::Unbound(name.trim_start_matches('$').to_string())
        }
        e => e,
    }
}

/// How long the `NAME=`, `NAME+=` or `NAME[...]=` that opens `text` is, if it opens with one.
pub(crate) fn assignment_prefix(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    if !b
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        return None;
    }
    let mut i = 1;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    if b.get(i) == Some(&b'[') {
        let close = text[i..].find(']')?;
        i += close + 1;
    }
    if b.get(i) == Some(&b'+') {
        i += 1;
    }
    (b.get(i) == Some(&b'=')).then_some(i + 1)
}

/// The pieces of a word that looks like an assignment (`a=~/x:~/y`): as bash does, a
/// tilde right after the `=` or after any `:` of the value is expanded too.
fn parse_assignment_word(text: &str) -> R<Vec<WordPieceWithSource>> {
    let Some(at) = assignment_prefix(text).filter(|_| text.contains('~')) else {
        return parse_word(text);
    };
    let value = &text[at..];
    let mut pieces = vec![WordPieceWithSource {
        piece: WordPiece::Text(text[..at].to_string()),
        start_index: 0,
        end_index: at,
    }];
    let parsed = super::parse::word_pieces(value, false, |t, o| {
        let o = brush_parser::ParserOptions {
            tilde_expansion_after_colon: true,
            ..o.clone()
        };
        word::parse(t, &o)
    })?
    .ok_or_else(|| ShellError::BadSubstitution(text.to_string()))?;
    pieces.extend(parsed);
    Ok(pieces)
}

/// The command inside backquotes as bash runs it: a backslash before `$`, `` ` `` or `\\`
/// (and `"` inside double quotes) only quoted that character for the outer word.
fn backquoted_text(cmd: &str, in_double_quotes: bool) -> String {
    let mut out = String::with_capacity(cmd.len());
    let mut chars = cmd.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
            && (matches!(n, '$' | '`' | '\\') || (in_double_quotes && n == '"'))
        {
            out.push(n);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// A `${…}` the word parser could not read (`${x!}`, `${a;b}`) comes out as the text `$`
/// followed by text opening with `{`: bash calls that a bad substitution. Its text up to
/// the `}`.
/// Also gives how much of the second text it took.
fn unparsed_substitution(
    piece: &WordPiece,
    next: Option<&WordPieceWithSource>,
) -> Option<(String, usize)> {
    let (WordPiece::Text(dollar), Some(WordPiece::Text(rest))) = (piece, next.map(|n| &n.piece))
    else {
        return None;
    };
    if dollar != "$" || !rest.starts_with('{') {
        return None;
    }
    let end = rest.find('}').map_or(rest.len(), |i| i + 1);
    Some((format!("${}", &rest[..end]), end))
}

/// `${name~}` and `${name~~}`, also of an element or all elements (`${a[@]~}`), with an
/// optional pattern (`${x~~[ab]}`), which the word parser does not read: the parameter
/// (`name`, `name[sub]`), whether every character's case is toggled rather than the first
/// one's, and the pattern a character must match to be toggled (empty: any).
fn case_toggle(text: &str) -> Option<(&str, bool, &str)> {
    let inner = text.strip_prefix("${")?.strip_suffix('}')?;
    // The operator follows the name, or the name's subscript (`a[@]~`).
    let from = match (inner.find('['), inner.find('~')) {
        (Some(open), Some(tilde)) if open < tilde => open + inner[open..].find(']')? + 1,
        _ => 0,
    };
    let at = from + inner[from..].find('~')?;
    let param = &inner[..at];
    let (all, pat) = match inner[at + 1..].strip_prefix('~') {
        Some(p) => (true, p),
        None => (false, &inner[at + 1..]),
    };
    let name = match param.split_once('[') {
        Some((name, sub)) => {
            let sub = sub.strip_suffix(']')?;
            if sub.is_empty() || sub.contains(['[', ']']) {
                return None;
            }
            name
        }
        None => param,
    };
    // Positional and special parameters too (`${@~}`, `${1~~}`).
    if matches!(name, "@" | "*") || (!name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())) {
        return (name == param).then_some((param, all, pat));
    }
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some((param, all, pat))
}

/// The home directory of a system account every Debian host has (its base `passwd`),
/// for `~root`: a session has one user of its own, and scripts expect these as on the
/// host they were written for.
fn system_account_home(user: &str) -> Option<&'static str> {
    const ACCOUNTS: &[(&str, &str)] = &[
        ("root", "/root"),
        ("daemon", "/usr/sbin"),
        ("bin", "/bin"),
        ("sys", "/dev"),
        ("sync", "/bin"),
        ("games", "/usr/games"),
        ("man", "/var/cache/man"),
        ("lp", "/var/spool/lpd"),
        ("mail", "/var/mail"),
        ("news", "/var/spool/news"),
        ("uucp", "/var/spool/uucp"),
        ("proxy", "/bin"),
        ("www-data", "/var/www"),
        ("backup", "/var/backups"),
        ("list", "/var/list"),
        ("irc", "/run/ircd"),
        ("_apt", "/nonexistent"),
        ("nobody", "/nonexistent"),
    ];
    ACCOUNTS
        .iter()
        .find(|(name, _)| *name == user)
        .map(|(_, home)| *home)
}

/// Swaps the case of the first character of `s`, or of all of them; with `pat`, only of
/// those that match it.
fn toggle_case(s: &str, all: bool, pat: Option<&pattern::Pattern>, ascii: bool) -> String {
    s.chars()
        .enumerate()
        .map(|(i, c)| {
            if !(all || i == 0) || pat.is_some_and(|p| !p.matches(&c.to_string())) {
                c
            } else if c.is_uppercase() {
                pattern::lower_char(c, ascii)
            } else {
                pattern::upper_char(c, ascii)
            }
        })
        .collect()
}

/// The file of a substitution that is only an input redirection (`$(< file)`), which bash
/// reads instead of running a command.
fn lone_input_redirect(program: &brush_parser::ast::Program) -> Option<&Word> {
    use brush_parser::ast::{
        Command, CommandPrefixOrSuffixItem, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect,
    };
    let [list] = program.complete_commands.as_slice() else {
        return None;
    };
    let [item] = list.0.as_slice() else {
        return None;
    };
    let and_or = &item.0;
    if !and_or.additional.is_empty() || and_or.first.bang || and_or.first.timed.is_some() {
        return None;
    }
    let [Command::Simple(cmd)] = and_or.first.seq.as_slice() else {
        return None;
    };
    if cmd.word_or_name.is_some() || cmd.suffix.as_ref().is_some_and(|s| !s.0.is_empty()) {
        return None;
    }
    let [CommandPrefixOrSuffixItem::IoRedirect(r)] = cmd.prefix.as_ref()?.0.as_slice() else {
        return None;
    };
    match r {
        IoRedirect::File(
            None | Some(0),
            IoFileRedirectKind::Read,
            IoFileRedirectTarget::Filename(w),
        ) => Some(w),
        _ => None,
    }
}

/// Whether arithmetic text expands to itself, so [`Shell::eval_arith`] may skip expanding
/// it: nothing for expansion to change (no `$`, backquote or backslash) and nothing the
/// nesting check of a parse could refuse (short, no brackets, braces or quotes). Loop
/// conditions and counters (`i < n`, `i++`, `x+i`) are such text.
fn plain_arith(text: &str) -> bool {
    /// Short enough that no run of its words nests past the parser's bounds.
    const MAX_PLAIN: usize = 64;
    text.len() <= MAX_PLAIN
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b" _+-*/%<>=!&|^~?:,".contains(&b))
}

/// An arithmetic expression with its double quotes removed, as bash reads `$(( "1" + x ))`:
/// the expression is a double-quoted word, so its own quotes go; those inside a `$( )`,
/// `${ }` or backquoted command stay for that command.
fn arith_unquote(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('"') {
        return std::borrow::Cow::Borrowed(text);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                out.push(c);
                if let Some(&n) = chars.get(i + 1) {
                    out.push(n);
                }
                i += 2;
                continue;
            }
            '"' => {}
            '`' => {
                out.push(c);
                i += 1;
                while i < chars.len() && chars[i] != '`' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        out.push(chars[i]);
                        i += 1;
                    }
                    out.push(chars[i]);
                    i += 1;
                }
                if i < chars.len() {
                    out.push('`');
                }
            }
            '$' if matches!(chars.get(i + 1), Some('(' | '{')) => {
                // Copied through its matching close bracket.
                let (open, close) = if chars[i + 1] == '(' {
                    ('(', ')')
                } else {
                    ('{', '}')
                };
                out.push('$');
                out.push(open);
                i += 2;
                let mut depth = 1;
                while i < chars.len() && depth > 0 {
                    let d = chars[i];
                    if d == '\\' && i + 1 < chars.len() {
                        out.push(d);
                        i += 1;
                    } else if d == open {
                        depth += 1;
                    } else if d == close {
                        depth -= 1;
                    }
                    out.push(chars[i]);
                    i += 1;
                }
                continue;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    std::borrow::Cow::Owned(out)
}

/// Decodes the escapes of a `$'…'` string. Octal and `\x` escapes are bytes: a run of
/// them that spells UTF-8 is that character (`$'\xe6\x97\xa5'` is `日`); a byte that is not
/// part of valid UTF-8 stands for the character of the same number.
pub(crate) fn ansi_c_decode(s: &str) -> String {
    ansi_c_decode_in(s, true)
}

/// [`ansi_c_decode`] in a locale that is UTF-8 or not: outside UTF-8 a `\u`/`\U` past
/// ASCII names no character and stays as written (hex digits in capitals), as bash
/// leaves it.
pub(crate) fn ansi_c_decode_in(s: &str, utf8: bool) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(s.len());
    let push = |out: &mut Vec<u8>, c: char| {
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    };
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            push(&mut out, c);
            continue;
        }
        let e = chars[i];
        i += 1;
        match e {
            'n' => out.push(b'\n'),
            't' => out.push(b'\t'),
            'r' => out.push(b'\r'),
            'a' => out.push(0x07),
            'b' => out.push(0x08),
            'e' | 'E' => out.push(0x1b),
            'f' => out.push(0x0c),
            'v' => out.push(0x0b),
            '\\' => out.push(b'\\'),
            '\'' => out.push(b'\''),
            '"' => out.push(b'"'),
            '?' => out.push(b'?'),
            'c' => {
                if let Some(&n) = chars.get(i) {
                    i += 1;
                    if n == '\\' && chars.get(i) == Some(&'\\') {
                        // `\c\\` is control-backslash.
                        i += 1;
                    }
                    out.push(if n == '?' { 0x7f } else { (n as u8) & 0x1f });
                } else {
                    // A `\c` that ends the string controls nothing and stays as written.
                    out.extend_from_slice(b"\\c");
                }
            }
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                let mut n = 1;
                while n < 3 && i < chars.len() && chars[i].is_digit(8) {
                    v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                out.push((v & 0xff) as u8);
            }
            'x' if chars.get(i) == Some(&'{') => {
                // `\x{HH…}`: any number of hex digits, the low byte kept.
                let mut j = i + 1;
                let mut v = 0u32;
                while j < chars.len() && chars[j].is_ascii_hexdigit() {
                    v = v.wrapping_mul(16) + chars[j].to_digit(16).unwrap_or(0);
                    j += 1;
                }
                if chars.get(j) == Some(&'}') {
                    out.push((v & 0xff) as u8);
                    i = j + 1;
                } else {
                    out.extend_from_slice(b"\\x");
                }
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v = 0u32;
                let mut n = 0;
                while n < max && i < chars.len() && chars[i].is_ascii_hexdigit() {
                    v = v * 16 + chars[i].to_digit(16).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                if n == 0 {
                    out.push(b'\\');
                    push(&mut out, e);
                } else if e == 'x' {
                    out.push(v as u8);
                } else if !utf8 && v > 0x7f {
                    let width = if e == 'u' { 4 } else { 8 };
                    out.extend_from_slice(format!("\\{e}{v:0width$X}").as_bytes());
                } else {
                    push(&mut out, char::from_u32(v).unwrap_or('\u{fffd}'));
                }
            }
            other => {
                out.push(b'\\');
                push(&mut out, other);
            }
        }
    }
    forkbox_commands::bytetext::decode(out)
}

/// A field being assembled: its text and its glob pattern (quoted parts escaped).
#[derive(Default)]
struct FieldBuf {
    text: String,
    pat: String,
    globby: bool,
}

impl FieldBuf {
    fn push(&mut self, s: &str, glob: bool) {
        self.text.push_str(s);
        if glob {
            self.pat.push_str(s);
            if pattern::has_glob_chars(s) {
                self.globby = true;
            } else if !self.globby && self.pat.contains('[') && self.pat.contains(']') {
                // A `[` and its `]` from different pieces (`[$x]`).
                self.globby = pattern::has_glob_chars(&self.pat);
            }
        } else {
            self.pat.push_str(&pattern::escape(s));
        }
    }
}

/// Splits pieces into fields on `ifs`.
fn split_fields(pieces: Vec<Piece>, ifs: &str) -> Vec<FieldBuf> {
    let mut fields = Vec::new();
    let mut cur: Option<FieldBuf> = None;
    let mut after_ws_delim = false;
    for p in pieces {
        match p {
            Piece::ForceField => {
                cur.get_or_insert_with(FieldBuf::default);
            }
            Piece::FieldBreak | Piece::StarBreak(_) => {
                // bash joins the elements of an unquoted list with the first character
                // of IFS and splits the result: when that character is not a blank, an
                // empty element between two others is an empty field.
                match ifs.chars().next() {
                    Some(c) if !matches!(c, ' ' | '\t' | '\n') => {
                        match cur.take() {
                            Some(f) => fields.push(f),
                            None if after_ws_delim => {}
                            None => fields.push(FieldBuf::default()),
                        }
                        after_ws_delim = false;
                    }
                    Some(_) => {
                        if let Some(f) = cur.take() {
                            fields.push(f);
                            after_ws_delim = true;
                        }
                    }
                    None => {
                        if let Some(f) = cur.take() {
                            fields.push(f);
                        }
                        after_ws_delim = false;
                    }
                }
            }
            Piece::Text { s, quoted, split } => {
                if !split || ifs.is_empty() {
                    if !s.is_empty() || quoted {
                        cur.get_or_insert_with(FieldBuf::default).push(&s, !quoted);
                        after_ws_delim = false;
                    }
                    continue;
                }
                let mut chunk = String::new();
                for c in s.chars() {
                    if ifs.contains(c) {
                        if !chunk.is_empty() {
                            cur.get_or_insert_with(FieldBuf::default).push(&chunk, true);
                            chunk.clear();
                        }
                        let ws = matches!(c, ' ' | '\t' | '\n');
                        if ws {
                            if let Some(f) = cur.take() {
                                fields.push(f);
                                after_ws_delim = true;
                            }
                        } else {
                            match cur.take() {
                                Some(f) => fields.push(f),
                                None if after_ws_delim => {}
                                None => fields.push(FieldBuf::default()),
                            }
                            after_ws_delim = false;
                        }
                    } else {
                        chunk.push(c);
                        after_ws_delim = false;
                    }
                }
                if !chunk.is_empty() {
                    cur.get_or_insert_with(FieldBuf::default).push(&chunk, true);
                }
            }
        }
    }
    if let Some(f) = cur {
        fields.push(f);
    }
    fields
}

/// [`split_fields`] in the C locale with an `IFS` past ASCII: each of its bytes is a
/// separator of its own, so the text is split between bytes (the fields are to be
/// [`bytetext::normalise`]d).
fn split_bytes(pieces: Vec<Piece>, ifs: &str) -> Vec<FieldBuf> {
    let pieces = pieces
        .into_iter()
        .map(|p| match p {
            Piece::Text { s, quoted, split } if split => Piece::Text {
                s: bytetext::byte_view(&s).into_owned(),
                quoted,
                split,
            },
            p => p,
        })
        .collect();
    split_fields(pieces, &bytetext::byte_view(ifs))
}

/// Fails once the text a word expands to grows past [`crate::shell::MAX_VALUE`] twice
/// over, so a word that repeats a large variable cannot exhaust the server's memory.
fn check_expansion_size(out: &[Piece]) -> R<()> {
    let limit = 2 * crate::shell::MAX_VALUE;
    let mut total = 0usize;
    for p in out {
        if let Piece::Text { s, .. } = p {
            total += s.len();
            if total > limit {
                return Err(ShellError::Limit(format!(
                    "expansion larger than {limit} bytes"
                )));
            }
        }
    }
    Ok(())
}

/// Joins pieces without splitting (assignments, here-strings, `case` words).
fn join_pieces(pieces: &[Piece]) -> String {
    let mut out = String::new();
    let mut sep: Option<&str> = None;
    for p in pieces {
        match p {
            Piece::Text { s, .. } => {
                if let Some(sep) = sep.take() {
                    out.push_str(sep);
                }
                out.push_str(s);
            }
            Piece::FieldBreak => sep = Some(" "),
            Piece::StarBreak(s) => sep = Some(s),
            Piece::ForceField => {}
        }
    }
    // Bytes joined to bytes (`"$x$y"`) may spell a character again.
    bytetext::normalise(out)
}

/// Joins pieces into a pattern: quoted text is escaped so it matches literally.
fn join_pattern(pieces: &[Piece]) -> String {
    let mut out = String::new();
    for p in pieces {
        if let Piece::Text { s, quoted, .. } = p {
            if *quoted {
                out.push_str(&pattern::escape(s));
            } else {
                out.push_str(s);
            }
        } else if matches!(p, Piece::FieldBreak) {
            out.push(' ');
        } else if let Piece::StarBreak(s) = p {
            out.push_str(s);
        }
    }
    out
}

fn is_at_list(p: &WordPiece) -> bool {
    let WordPiece::ParameterExpansion(e) = p else {
        return false;
    };
    let parameter = match e {
        ParameterExpr::MemberKeys {
            concatenate: false, ..
        }
        | ParameterExpr::VariableNames {
            concatenate: false, ..
        } => return true,
        // `"${@:2}"`, `"${a[@]%.c}"`, `"${a[@]/x/y}"`…: still one word per element, so
        // none at all for an empty list.
        ParameterExpr::Parameter { parameter, .. }
        | ParameterExpr::Substring { parameter, .. }
        | ParameterExpr::RemoveSmallestSuffixPattern { parameter, .. }
        | ParameterExpr::RemoveLargestSuffixPattern { parameter, .. }
        | ParameterExpr::RemoveSmallestPrefixPattern { parameter, .. }
        | ParameterExpr::RemoveLargestPrefixPattern { parameter, .. }
        | ParameterExpr::Transform { parameter, .. }
        | ParameterExpr::UppercaseFirstChar { parameter, .. }
        | ParameterExpr::UppercasePattern { parameter, .. }
        | ParameterExpr::LowercaseFirstChar { parameter, .. }
        | ParameterExpr::LowercasePattern { parameter, .. }
        | ParameterExpr::ReplaceSubstring { parameter, .. }
        | ParameterExpr::UseAlternativeValue { parameter, .. } => parameter,
        _ => return false,
    };
    matches!(
        parameter,
        Parameter::Special(SpecialParameter::AllPositionalParameters { concatenate: false })
            | Parameter::NamedWithAllIndices {
                concatenate: false,
                ..
            }
    )
}

pub(super) fn param_name(p: &Parameter) -> String {
    match p {
        Parameter::Positional(n) => n.to_string(),
        Parameter::Special(s) => s.to_string(),
        Parameter::Named(n) => n.clone(),
        Parameter::NamedWithIndex { name, index } => format!("{name}[{index}]"),
        Parameter::NamedWithAllIndices { name, concatenate } => {
            format!("{name}[{}]", if *concatenate { '*' } else { '@' })
        }
    }
}

impl ArithEnv for Shell {
    fn get_var(&mut self, name: &str) -> Option<String> {
        // `RANDOM`, `SECONDS`, `LINENO`…: computed as `$NAME` would be.
        if let Some(v) = self.dynamic_var(name) {
            return Some(v);
        }
        self.get_str(name)
    }
    fn set_var(&mut self, name: &str, value: i64) -> Result<(), String> {
        Shell::set_var(self, name, &value.to_string()).map_err(|e| e.to_string())
    }
    fn get_elem(&self, name: &str, index: i64) -> Option<String> {
        let name = self.resolve_ref(name);
        let var = self.vars.get(name.as_ref()).filter(|v| !v.attrs.unset)?;
        match &var.value {
            Value::Str(s) => (index == 0 || index == -1).then(|| s.clone()),
            Value::Array(a) => {
                let i = if index < 0 {
                    super::next_index(a).wrapping_add(index)
                } else {
                    index
                };
                a.get(&i).cloned()
            }
            Value::Assoc(a) => a.get(&index.to_string()).cloned(),
        }
    }
    fn set_elem(&mut self, name: &str, index: i64, value: i64) -> Result<(), String> {
        Shell::set_elem(self, name, index, &value.to_string()).map_err(|e| e.to_string())
    }
    fn is_assoc(&self, name: &str) -> bool {
        Shell::is_assoc(self, name)
    }
    fn nounset(&self) -> bool {
        self.opts.nounset
    }
    fn get_key(&self, name: &str, key: &str) -> Option<String> {
        let name = self.resolve_ref(name);
        match &self.vars.get(name.as_ref())?.value {
            Value::Assoc(a) => a.get(key).cloned(),
            _ => None,
        }
    }
    fn set_key(&mut self, name: &str, key: &str, value: i64) -> Result<(), String> {
        self.assign_key(name, key, &value.to_string(), false)
            .map_err(|e| e.to_string())
    }
}

impl Shell {
    /// Full expansion of command words: brace, parameters, splitting, globbing.
    pub(crate) async fn expand_words(&mut self, words: &[&Word], fds: &Fds) -> R<Vec<String>> {
        let mut out = Vec::new();
        for w in words {
            if !self.opts.braceexpand || !w.value.contains('{') {
                // Nothing for brace expansion to do: no copy of the word for it.
                out.extend(self.expand_fields(&w.value, fds).await?);
                continue;
            }
            for braced in brace_expand(&w.value)? {
                let fields = self.expand_fields(&braced, fds).await?;
                out.extend(fields);
            }
        }
        Ok(out)
    }

    /// Expands one word string into fields (no brace expansion).
    pub(crate) async fn expand_fields(&mut self, text: &str, fds: &Fds) -> R<Vec<String>> {
        // Only a word that looks like an assignment with a `~` parses differently from
        // any other word (outside POSIX mode); every other parse is cached.
        let pieces = if text.contains('~') && !self.opts.posix && assignment_prefix(text).is_some()
        {
            std::sync::Arc::new(parse_assignment_word(text)?)
        } else {
            self.word_cache
                .get_or_parse(cache::Mode::Word, text, parse_word)?
        };
        let mut out = Vec::new();
        self.expand_pieces(&pieces, false, fds, &mut out).await?;
        let ifs = self.get_str("IFS").unwrap_or_else(|| " \t\n".to_string());
        let mut fields = if !ifs.is_ascii() && self.byte_locale() {
            split_bytes(out, &ifs)
        } else {
            split_fields(out, &ifs)
        };
        for f in &mut fields {
            // Bytes joined to bytes (`$x$y`) may spell a character again.
            if bytetext::may_have_bytes(&f.text) {
                f.text = bytetext::normalise(std::mem::take(&mut f.text));
                f.pat = bytetext::normalise(std::mem::take(&mut f.pat));
            }
        }
        let mut result = Vec::new();
        for f in fields {
            if f.globby && !self.opts.noglob {
                let matches = self.glob(&f.pat).await;
                if !matches.is_empty() {
                    result.extend(matches);
                } else if self.shopts.on("failglob") {
                    return Err(ShellError::NoMatch(f.text));
                } else if !self.shopts.on("nullglob") {
                    result.push(f.text);
                }
            } else {
                result.push(f.text);
            }
        }
        Ok(result)
    }

    /// Expansion without splitting or globbing (assignment values, here-strings, `case`).
    pub(crate) async fn expand_no_split(&mut self, w: &Word, fds: &Fds) -> R<String> {
        self.expand_str(&w.value, fds).await
    }

    /// An assignment word given to a declaration builtin (`export p=~/x:~/y`): unsplit,
    /// with tildes after `=` and `:` expanded.
    pub(crate) async fn expand_assignment_word(&mut self, text: &str, fds: &Fds) -> R<String> {
        let pieces = parse_assignment_word(text)?;
        let mut out = Vec::new();
        self.expand_pieces(&pieces, false, fds, &mut out).await?;
        // A declaration builtin gets an unquoted `$*` with an empty IFS as separate
        // words, which it joins with spaces (`IFS=; declare d=$*` is `x y`).
        for p in &mut out {
            if matches!(p, Piece::StarBreak(sep) if sep.is_empty()) {
                *p = Piece::FieldBreak;
            }
        }
        Ok(join_pieces(&out))
    }

    /// An assignment word given to a declaration builtin, brace-expanded first as bash
    /// does (`declare y={a,b}` declares `y=a` then `y=b`).
    pub(crate) async fn expand_declaration_word(
        &mut self,
        text: &str,
        fds: &Fds,
    ) -> R<Vec<String>> {
        if !self.opts.braceexpand || !text.contains('{') {
            return Ok(vec![self.expand_assignment_word(text, fds).await?]);
        }
        let mut out = Vec::new();
        for braced in brace_expand(text)? {
            out.push(self.expand_assignment_word(&braced, fds).await?);
        }
        Ok(out)
    }

    /// The value of a scalar assignment (`PATH=~/bin:~/x`): unsplit, a tilde after a `:`
    /// expanded as well as one at the start.
    pub(crate) async fn expand_assignment_value(&mut self, w: &Word, fds: &Fds) -> R<String> {
        if !w.value.contains(":~") {
            return self.expand_str(&w.value, fds).await;
        }
        let pieces = super::parse::word_pieces(&w.value, false, |t, o| {
            let o = brush_parser::ParserOptions {
                tilde_expansion_after_colon: true,
                ..o.clone()
            };
            word::parse(t, &o)
        })?
        .ok_or_else(|| ShellError::BadSubstitution(w.value.clone()))?;
        let mut out = Vec::new();
        self.expand_pieces(&pieces, false, fds, &mut out).await?;
        Ok(join_pieces(&out))
    }

    pub(crate) async fn expand_str(&mut self, text: &str, fds: &Fds) -> R<String> {
        let pieces = self
            .word_cache
            .get_or_parse(cache::Mode::Word, text, parse_word)?;
        // A word of one literal or one `$((…))` (`x=$((x+1))`) is its value as it is:
        // no list of pieces to build and join.
        if let [p] = pieces.as_slice() {
            match &p.piece {
                WordPiece::Text(s) | WordPiece::SingleQuotedText(s) => return Ok(s.clone()),
                WordPiece::ArithmeticExpression(e) => {
                    return Ok(self.eval_arith(&e.value, fds, true).await?.to_string());
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        self.expand_pieces(&pieces, false, fds, &mut out).await?;
        Ok(join_pieces(&out))
    }

    /// `NAME[SUB]` as a builtin gets it (`unset 'a[$i]'`, `printf -v 'm[$k]'`, `test -v
    /// 'a[$i]'`): bash expands SUB as a word first when it holds expansions or quotes.
    pub(crate) async fn expand_subscript_arg(&mut self, spec: &str, fds: &Fds) -> R<String> {
        match super::vars::split_subscript(spec) {
            Some((name, sub)) if sub.contains(['$', '`', '"', '\'', '\\']) => {
                let sub = self.expand_str(sub, fds).await?;
                Ok(format!("{name}[{sub}]"))
            }
            _ => Ok(spec.to_string()),
        }
    }

    /// Expansion into a glob pattern: quoted parts match literally.
    pub(crate) async fn expand_pattern(&mut self, text: &str, fds: &Fds) -> R<String> {
        Ok(join_pattern(&self.expand_text(text, fds).await?))
    }

    /// Like [`Shell::expand_pattern`], with the pattern as `set -x` shows it: every quoted
    /// character after a backslash (`"a b"` is `\a\ \b`).
    pub(crate) async fn expand_pattern_traced(
        &mut self,
        text: &str,
        fds: &Fds,
    ) -> R<(String, String)> {
        self.expand_pattern_shown(text, |_| true, fds).await
    }

    /// Like [`Shell::expand_pattern_traced`] for the regular expression of `=~`: bash
    /// shows a backslash only before the quoted characters a regular expression treats
    /// as operators (`"a.c"` is `a\.c`, `"a b"` stays `a b`).
    pub(crate) async fn expand_regex_traced(
        &mut self,
        text: &str,
        fds: &Fds,
    ) -> R<(String, String)> {
        let special = |c: char| super::cond::REGEX_OPERATORS.contains(c);
        self.expand_pattern_shown(text, special, fds).await
    }

    /// The pattern `text` expands to, and as `set -x` shows it: each quoted character
    /// for which `escaped` holds after a backslash.
    async fn expand_pattern_shown(
        &mut self,
        text: &str,
        escaped: impl Fn(char) -> bool,
        fds: &Fds,
    ) -> R<(String, String)> {
        let pieces = self.expand_text(text, fds).await?;
        let mut shown = String::new();
        for p in &pieces {
            match p {
                Piece::Text {
                    s, quoted: true, ..
                } => {
                    for c in s.chars() {
                        if escaped(c) {
                            shown.push('\\');
                        }
                        shown.push(c);
                    }
                }
                Piece::Text { s, .. } | Piece::StarBreak(s) => shown.push_str(s),
                Piece::FieldBreak => shown.push(' '),
                Piece::ForceField => {}
            }
        }
        Ok((join_pattern(&pieces), shown))
    }

    /// Parses a word and expands its pieces, without splitting or globbing.
    async fn expand_text(&mut self, text: &str, fds: &Fds) -> R<Vec<Piece>> {
        let pieces = self
            .word_cache
            .get_or_parse(cache::Mode::Word, text, parse_word)?;
        let mut out = Vec::new();
        self.expand_pieces(&pieces, false, fds, &mut out).await?;
        Ok(out)
    }

    /// A redirection target: must expand to exactly one word.
    pub(crate) async fn expand_redirect_target(&mut self, w: &Word, fds: &Fds) -> R<String> {
        if self.opts.braceexpand && brace_expand(&w.value)?.len() > 1 {
            return Err(ShellError::AmbiguousRedirect(w.value.clone()));
        }
        let mut fields = self.expand_fields(&w.value, fds).await?;
        if fields.len() != 1 {
            return Err(ShellError::AmbiguousRedirect(w.value.clone()));
        }
        Ok(fields.remove(0))
    }

    /// A here-document body: parameters, substitutions and arithmetic; quotes are literal.
    pub(crate) async fn expand_heredoc(&mut self, body: &str, fds: &Fds) -> R<String> {
        let pieces = self
            .word_cache
            .get_or_parse(cache::Mode::Heredoc, body, |body| {
                super::parse::word_pieces(body, true, word::parse_heredoc)?
                    .ok_or_else(|| ShellError::BadSubstitution(body.to_string()))
            })?;
        let mut out = Vec::new();
        // bash joins `$*` (`${*}`, `${*:1}`) in a here-document with spaces, whatever
        // `IFS` holds (`${a[*]}` still joins with IFS).
        let mut start = 0;
        for (i, p) in pieces.iter().enumerate() {
            let WordPiece::ParameterExpansion(
                expr @ (ParameterExpr::Parameter {
                    parameter:
                        Parameter::Special(SpecialParameter::AllPositionalParameters {
                            concatenate: true,
                        }),
                    indirect: false,
                }
                | ParameterExpr::Substring {
                    parameter:
                        Parameter::Special(SpecialParameter::AllPositionalParameters {
                            concatenate: true,
                        }),
                    indirect: false,
                    ..
                }),
            ) = &p.piece
            else {
                continue;
            };
            self.expand_pieces(&pieces[start..i], true, fds, &mut out)
                .await?;
            start = i + 1;
            match self.eval_param_expr(expr, true, fds).await? {
                PVal::List(items, _) => out.push(Piece::Text {
                    s: items.join(" "),
                    quoted: true,
                    split: false,
                }),
                v => self.emit_value(v, true, &mut out),
            }
        }
        self.expand_pieces(&pieces[start..], true, fds, &mut out)
            .await?;
        Ok(join_pieces(&out))
    }

    /// Evaluates arithmetic text after expanding `$x`, `$(…)` inside it.
    /// `fatal` selects the expansion wording (`$((…))` aborts the script) over the
    /// command wording (`((…))` only fails).
    pub(crate) async fn eval_arith(&mut self, text: &str, fds: &Fds, fatal: bool) -> R<i64> {
        let expanded;
        let text = if plain_arith(text) {
            text
        } else {
            expanded = self.expand_heredoc(&arith_unquote(text), fds).await?;
            &expanded
        };
        arith::eval_str(self, text).map_err(|e| {
            if let Some(name) = e.unbound() {
                return ShellError::Unbound(name.to_string());
            }
            if e.message == arith::READONLY {
                // Assigning a readonly variable: bash's plain message, fatal only in `$(( ))`.
                return if fatal {
                    ShellError::Readonly(e.expr)
                } else {
                    ShellError::Builtin(format!("{}: {}", e.expr, e.message))
                };
            }
            let arith::ArithError { expr, message } = e;
            if fatal {
                ShellError::Arithmetic { expr, message }
            } else {
                ShellError::ArithmeticCommand { expr, message }
            }
        })
    }

    pub(crate) fn expand_pieces<'a>(
        &'a mut self,
        pieces: &'a [WordPieceWithSource],
        quoted: bool,
        fds: &'a Fds,
        out: &'a mut Vec<Piece>,
    ) -> BoxFut<'a, R<()>> {
        super::grow(Box::pin(async move {
            let mut i = 0;
            while i < pieces.len() {
                let p = &pieces[i];
                if let Some((bad, took)) = unparsed_substitution(&p.piece, pieces.get(i + 1)) {
                    // `${!}` is `$!` (the word parser reads `${!…}` as an indirection).
                    let mut toggle_pat = None;
                    let (param, all, parsed) = if bad == "${!}" {
                        let bang = Parameter::Special(SpecialParameter::LastBackgroundProcessId);
                        ("!", false, bang)
                    } else {
                        let Some((param, all, pat)) = case_toggle(&bad) else {
                            return Err(ShellError::BadSubstitution(bad));
                        };
                        let parsed = super::parse::guarded(param, word::parse_parameter)?
                            .ok_or_else(|| ShellError::BadSubstitution(bad.clone()))?;
                        if !pat.is_empty() {
                            let text = self.expand_pattern(pat, fds).await?;
                            toggle_pat = Some(self.pattern(&text, false));
                        }
                        (param, all, parsed)
                    };
                    let v = self.param_value(&parsed, fds).await?;
                    if matches!(v, PVal::Unset) && self.opts.nounset {
                        return Err(ShellError::Unbound(param.to_string()));
                    }
                    let v = match v {
                        PVal::Unset => PVal::Str(String::new()),
                        v if param == "!" => v,
                        v => {
                            let ascii = self.byte_locale();
                            v.map(|s| toggle_case(s, all, toggle_pat.as_ref(), ascii))
                        }
                    };
                    self.emit_value(v, quoted, out);
                    if let Some(WordPiece::Text(rest)) = pieces.get(i + 1).map(|n| &n.piece)
                        && let Some(tail) = rest.get(took..).filter(|t| !t.is_empty())
                    {
                        out.push(Piece::Text {
                            s: tail.to_string(),
                            quoted,
                            split: false,
                        });
                    }
                    i += 2;
                    continue;
                }
                self.expand_piece(&p.piece, quoted, fds, out)
                    .await
                    .map_err(|e| braced_positional(e, p))?;
                check_expansion_size(out)?;
                i += 1;
            }
            Ok(())
        }))
    }

    async fn expand_piece(
        &mut self,
        piece: &WordPiece,
        quoted: bool,
        fds: &Fds,
        out: &mut Vec<Piece>,
    ) -> R<()> {
        match piece {
            WordPiece::Text(s) => out.push(Piece::Text {
                s: s.clone(),
                quoted,
                split: false,
            }),
            WordPiece::SingleQuotedText(s) => out.push(Piece::Text {
                s: s.clone(),
                quoted: true,
                split: false,
            }),
            WordPiece::AnsiCQuotedText(s) => out.push(Piece::Text {
                // A NUL ends the string, as bash's C strings do. bash decodes it as it
                // reads the command, in the locale of that moment.
                s: ansi_c_decode_in(s, !self.read_byte_locale)
                    .split('\0')
                    .next()
                    .unwrap_or_default()
                    .to_string(),
                quoted: true,
                split: false,
            }),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                let only_at = !inner.is_empty() && inner.iter().all(|p| is_at_list(&p.piece));
                if !only_at {
                    out.push(Piece::ForceField);
                }
                self.expand_pieces(inner, true, fds, out).await?;
            }
            WordPiece::TildeExpansion(t) => {
                let s = match t {
                    TildeExpr::Home => self
                        .get_str("HOME")
                        .unwrap_or_else(|| self.login_home.clone()),
                    TildeExpr::WorkingDir => self.cwd.clone(),
                    TildeExpr::OldWorkingDir => {
                        self.get_str("OLDPWD").unwrap_or_else(|| "~-".into())
                    }
                    TildeExpr::UserHome(u) => {
                        if self.get_str("USER").as_deref() == Some(u.as_str()) {
                            self.get_str("HOME")
                                .unwrap_or_else(|| self.login_home.clone())
                        } else if let Some(home) = system_account_home(u) {
                            home.to_string()
                        } else {
                            format!("~{u}")
                        }
                    }
                    // `~N`, `~+N`, `~-N`: an entry of the directory stack as `dirs +N` /
                    // `dirs -N` count; one past its end stays as written.
                    TildeExpr::NthDirFromTopOfDirStack { n, plus_used } => {
                        let stack = super::builtins::dirstack::stack(self);
                        match stack.get(*n) {
                            Some(d) => d.clone(),
                            None if *plus_used => format!("~+{n}"),
                            None => format!("~{n}"),
                        }
                    }
                    TildeExpr::NthDirFromBottomOfDirStack { n } => {
                        let stack = super::builtins::dirstack::stack(self);
                        match stack.len().checked_sub(n + 1).and_then(|i| stack.get(i)) {
                            Some(d) => d.clone(),
                            None => format!("~-{n}"),
                        }
                    }
                };
                out.push(Piece::Text {
                    s,
                    quoted: true,
                    split: false,
                });
            }
            WordPiece::ParameterExpansion(expr) => {
                let v = self.eval_param_expr(expr, quoted, fds).await?;
                self.emit_value(v, quoted, out);
            }
            WordPiece::CommandSubstitution(cmd) => {
                let s = self.command_substitution(cmd, fds).await?;
                out.push(Piece::Text {
                    s,
                    quoted,
                    split: !quoted,
                });
            }
            WordPiece::BackquotedCommandSubstitution(cmd) => {
                let cmd = backquoted_text(cmd, quoted);
                let s = self.command_substitution(&cmd, fds).await?;
                out.push(Piece::Text {
                    s,
                    quoted,
                    split: !quoted,
                });
            }
            WordPiece::EscapeSequence(s) => {
                let lit: String = s.chars().skip(1).collect();
                if quoted && !matches!(lit.as_str(), "$" | "`" | "\"" | "\\" | "\n") {
                    out.push(Piece::Text {
                        s: s.clone(),
                        quoted: true,
                        split: false,
                    });
                } else if lit == "\n" {
                    // Line continuation: nothing.
                } else {
                    out.push(Piece::Text {
                        s: lit,
                        quoted: true,
                        split: false,
                    });
                }
            }
            WordPiece::ArithmeticExpression(e) => {
                let v = self.eval_arith(&e.value, fds, true).await?;
                out.push(Piece::Text {
                    s: v.to_string(),
                    quoted,
                    split: !quoted,
                });
            }
        }
        Ok(())
    }

    fn emit_value(&self, v: PVal, quoted: bool, out: &mut Vec<Piece>) {
        match v {
            PVal::Pieces(p) => out.extend(p),
            PVal::Unset => out.push(Piece::Text {
                s: String::new(),
                quoted,
                split: !quoted,
            }),
            PVal::Str(s) => out.push(Piece::Text {
                s,
                quoted,
                split: !quoted,
            }),
            PVal::List(items, concat) => {
                if quoted && concat {
                    let sep = self.ifs_first();
                    out.push(Piece::Text {
                        s: bytetext::normalise(items.join(&sep)),
                        quoted: true,
                        split: false,
                    });
                } else {
                    let star = (concat && !quoted).then(|| self.ifs_first());
                    for (i, item) in items.into_iter().enumerate() {
                        if i > 0 {
                            match &star {
                                Some(sep) => out.push(Piece::StarBreak(sep.clone())),
                                None => out.push(Piece::FieldBreak),
                            }
                        }
                        if quoted {
                            out.push(Piece::ForceField);
                        }
                        out.push(Piece::Text {
                            s: item,
                            quoted,
                            split: !quoted,
                        });
                    }
                }
            }
        }
    }

    /// Runs `cmd` in a subshell and captures its stdout (trailing newlines removed).
    pub(crate) async fn command_substitution(&mut self, cmd: &str, fds: &Fds) -> R<String> {
        let cmd: &str = &super::parse::rewrite::decode_substitution(cmd);
        let program = match parse_program(cmd) {
            Ok(p) => p,
            // A body read only now (`` `…` ``): bash reports its syntax error as the
            // substitution's and goes on with an empty result, status 2.
            Err(e @ (ShellError::Syntax(_) | ShellError::Unclosed { .. }))
                if !e.to_string().contains("levels deep") =>
            {
                let before = self.lines.lineno.saturating_sub(1);
                let msg = self.syntax_message(&e, Some("command substitution"), cmd, before);
                let _ = fds.stderr().write_str(&msg).await;
                self.last_status = 2;
                self.subst_runs += 1;
                return Ok(String::new());
            }
            Err(e) => return Err(e),
        };
        if let Some(file) = lone_input_redirect(&program) {
            return self.read_file_substitution(file, fds).await;
        }
        let mut sub = self.subshell()?;
        // Its first command is on the line of the command it is in; bash does not count
        // the blank lines before it.
        let blank = cmd
            .chars()
            .take_while(|c| c.is_whitespace())
            .filter(|c| *c == '\n')
            .count();
        sub.lines.line_base = self.lines.lineno.saturating_sub(1 + blank);
        // Without `inherit_errexit` a substitution runs with `set -e` off, as in bash.
        if !self.shopts.on("inherit_errexit") && !self.opts.posix {
            sub.opts.errexit = false;
        }
        // bash turns `set -v` off in a substitution: its text was shown when it was read.
        sub.opts.verbose = false;
        sub.trace_depth += 1;
        let (out, input) = pipe();
        let sub_fds = fds.with_stdout(out);
        // Its own task: nested substitutions (`f() { echo $(f); }`) then cost heap, not stack.
        let run = super::on_fresh_task(&self.budget, async move {
            let status = sub.run_program(&program, None, &sub_fds).await;
            let status = sub.run_exit_trap(status, &sub_fds).await;
            drop(sub_fds);
            status
        });
        // What it captures is charged to the session's memory as it arrives.
        // The reader owns the pipe's end: if it gives up, the writer's pipe breaks.
        let budget = self.budget.clone();
        let read = async move {
            let mut charge = budget.empty_charge();
            let mut data = Vec::new();
            while let Ok(Some(chunk)) = input.read_chunk().await {
                if data.len() + chunk.len() > MAX_SUBSTITUTION_OUTPUT {
                    return Err(ShellError::SubstitutionTooLarge(MAX_SUBSTITUTION_OUTPUT));
                }
                charge
                    .grow(chunk.len())
                    .map_err(|source| ShellError::OutOfMemory {
                        what: "command substitution".to_string(),
                        source,
                    })?;
                data.extend_from_slice(&chunk);
            }
            Ok(data)
        };
        let (status, data) = futures::join!(run, read);
        let status = status.unwrap_or(1);
        self.last_status = status;
        self.subst_runs += 1;
        let data = data?;
        Ok(self.substitution_text(data, fds).await)
    }

    /// The text of a substitution's output: NUL bytes dropped (bash's strings cannot hold
    /// them; it says so), trailing newlines removed.
    async fn substitution_text(&self, mut data: Vec<u8>, fds: &Fds) -> String {
        if data.contains(&0) {
            data.retain(|b| *b != 0);
            let msg = format!(
                "{}warning: command substitution: ignored null byte in input\n",
                self.message_prefix()
            );
            let _ = fds.stderr().write_str(&msg).await;
        }
        let mut s = forkbox_commands::bytetext::decode(data);
        while s.ends_with('\n') {
            s.pop();
        }
        s
    }

    /// `$(< file)`: the file's content, without running a command (trailing newlines
    /// removed). A file that cannot be read is reported and gives an empty result, status 1.
    async fn read_file_substitution(&mut self, file: &Word, fds: &Fds) -> R<String> {
        let name = self.expand_redirect_target(file, fds).await?;
        let input = match self.open_read(&name, fds).await {
            Ok(i) => i,
            Err(e) => {
                let msg = e.message_with(&self.message_prefix());
                let _ = fds.stderr().write_str(&msg).await;
                self.last_status = 1;
                self.subst_runs += 1;
                return Ok(String::new());
            }
        };
        let data = input
            .read_to_end(MAX_SUBSTITUTION_OUTPUT)
            .await
            .map_err(|_| ShellError::SubstitutionTooLarge(MAX_SUBSTITUTION_OUTPUT))?;
        let mut charge = self.budget.empty_charge();
        charge
            .grow(data.len())
            .map_err(|source| ShellError::OutOfMemory {
                what: "command substitution".to_string(),
                source,
            })?;
        self.last_status = 0;
        self.subst_runs += 1;
        Ok(self.substitution_text(data, fds).await)
    }

    async fn expand_sub_pieces(&mut self, text: &str, quoted: bool, fds: &Fds) -> R<Vec<Piece>> {
        let pieces = self
            .word_cache
            .get_or_parse(cache::Mode::Word, text, parse_word)?;
        let mut out = Vec::new();
        self.expand_pieces(&pieces, quoted, fds, &mut out).await?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str, quoted: bool, split: bool) -> Piece {
        Piece::Text {
            s: s.into(),
            quoted,
            split,
        }
    }

    fn texts(fields: Vec<FieldBuf>) -> Vec<String> {
        fields.into_iter().map(|f| f.text).collect()
    }

    #[test]
    fn splitting() {
        let f = split_fields(vec![text("  a b  c ", false, true)], " \t\n");
        assert_eq!(texts(f), ["a", "b", "c"]);
        let f = split_fields(vec![text("a::b:", false, true)], ":");
        assert_eq!(texts(f), ["a", "", "b"]);
        let f = split_fields(vec![text("x", false, false), text(" y", false, true)], " ");
        assert_eq!(texts(f), ["x", "y"]);
        let f = split_fields(vec![Piece::ForceField, text("", true, false)], " ");
        assert_eq!(texts(f), [""]);
        let f = split_fields(vec![text("", false, true)], " ");
        assert!(f.is_empty());
    }

    #[test]
    fn ansi_c() {
        assert_eq!(ansi_c_decode(r"a\tb\n"), "a\tb\n");
        assert_eq!(ansi_c_decode(r"\x41\101\u00e9"), "AAé");
        assert_eq!(ansi_c_decode(r"\'"), "'");
    }

    #[test]
    fn braces() {
        assert_eq!(brace_expand("a{b,c}d").unwrap(), ["abd", "acd"]);
        assert_eq!(brace_expand("{1..3}").unwrap(), ["1", "2", "3"]);
        assert_eq!(brace_expand("{3..1}").unwrap(), ["3", "2", "1"]);
        assert_eq!(brace_expand("{a..c}").unwrap(), ["a", "b", "c"]);
        assert_eq!(brace_expand("{1..10..3}").unwrap(), ["1", "4", "7", "10"]);
        assert_eq!(brace_expand("${x}").unwrap(), ["${x}"]);
        assert_eq!(brace_expand("{a}").unwrap(), ["{a}"]);
        assert!(brace_expand("{1..100000000}").is_err());
    }

    #[test]
    fn words_with_many_unclosed_braces_stay_literal() {
        assert_eq!(unclosed_braces("a{b,c}"), 0);
        assert_eq!(unclosed_braces("{{{"), 3);
        assert_eq!(unclosed_braces("${x}{a,b"), 1);
        assert_eq!(unclosed_braces("'{{{{{'{a,b}"), 0);
        let word = format!("{}a", "{x,".repeat(32));
        assert_eq!(brace_expand(&word).unwrap(), vec![word]);
        assert_eq!(brace_expand("{{a,b}").unwrap(), ["{a", "{b"]);
    }

    /// Found by the fuzz harness: offset plus length overflowed (a panic in debug builds).
    #[test]
    fn slices_with_huge_lengths() {
        let abc = ['a', 'b', 'c'];
        assert_eq!(slice(&abc, 1, Some(i64::MAX)), Some(vec!['b', 'c']));
        assert_eq!(slice(&abc, i64::MAX, Some(i64::MAX)), Some(vec![]));
        assert_eq!(slice(&abc, i64::MIN, Some(i64::MAX)), Some(vec![]));
        assert_eq!(slice(&abc, -1, Some(i64::MIN)), None);
        assert_eq!(slice(&abc, 0, Some(-1)), Some(vec!['a', 'b']));
    }

    /// Found by the fuzz harness: steps past the end of `i64` overflowed (a panic in debug
    /// builds), and a character step of 2^32 truncated to 0 looped forever, growing memory.
    #[test]
    fn brace_sequences_at_the_edges() {
        assert_eq!(
            brace_expand("{9223372036854775806..9223372036854775807..5}").unwrap(),
            ["9223372036854775806"]
        );
        assert_eq!(
            brace_expand("{-9223372036854775806..-9223372036854775807..9223372036854775807}")
                .unwrap(),
            ["-9223372036854775806"]
        );
        assert_eq!(brace_expand("{1..3..9223372036854775807}").unwrap(), ["1"]);
        assert_eq!(brace_expand("{a..z..4294967296}").unwrap(), ["a"]);
        assert_eq!(brace_expand("{a..z..4294967295}").unwrap(), ["a"]);
        assert_eq!(brace_expand("{z..a..-12}").unwrap(), ["z", "n", "b"]);
        assert_eq!(brace_expand("{1..10..-3}").unwrap(), ["1", "4", "7", "10"]);
        assert_eq!(sequence(0, 10, 0, 100), Some((0..=10).collect()));
        assert_eq!(sequence(0, 10, 1, 5), None);
    }

    #[test]
    fn literal_replacement_agrees_with_matching() {
        // `[a]a` is the pattern `aa` without being a literal: the general matcher.
        for (s, lit_pat, general) in [
            ("aaa", "aa", "[a]a"),
            ("abcabc", "bc", "[b]c"),
            ("", "a", "[a]"),
            ("xyz", "q", "[q]"),
            ("héhé", "é", "[é]"),
        ] {
            for kind in [
                SubstringMatchKind::Anywhere,
                SubstringMatchKind::FirstOccurrence,
            ] {
                let rep = lit("-");
                assert_eq!(
                    replace(s, &Pattern::new(lit_pat), &rep, &kind),
                    replace(s, &Pattern::new(general), &rep, &kind),
                    "{s} {lit_pat}"
                );
            }
        }
    }

    #[test]
    fn replacing() {
        let p = Pattern::new("o");
        assert_eq!(
            replace("foo", &p, &lit("0"), &SubstringMatchKind::FirstOccurrence),
            "f0o"
        );
        assert_eq!(
            replace("foo", &p, &lit("0"), &SubstringMatchKind::Anywhere),
            "f00"
        );
        assert_eq!(
            replace(
                "foo",
                &Pattern::new("f"),
                &lit("F"),
                &SubstringMatchKind::Prefix
            ),
            "Foo"
        );
        assert_eq!(
            replace(
                "foo",
                &Pattern::new("o"),
                &lit("O"),
                &SubstringMatchKind::Suffix
            ),
            "foO"
        );
    }

    #[test]
    fn slicing() {
        let v: Vec<char> = "hello".chars().collect();
        assert_eq!(
            slice(&v, 1, Some(3)).unwrap().iter().collect::<String>(),
            "ell"
        );
        assert_eq!(
            slice(&v, -3, None).unwrap().iter().collect::<String>(),
            "llo"
        );
        assert_eq!(
            slice(&v, 1, Some(-1)).unwrap().iter().collect::<String>(),
            "ell"
        );
        assert!(slice(&v, 4, Some(-3)).is_none());
    }

    #[test]
    fn case_toggle_reads_name_subscript_and_pattern() {
        assert_eq!(case_toggle("${x~}"), Some(("x", false, "")));
        assert_eq!(case_toggle("${x~~}"), Some(("x", true, "")));
        assert_eq!(case_toggle("${x~~[aB]}"), Some(("x", true, "[aB]")));
        assert_eq!(case_toggle("${a[@]~[a]}"), Some(("a[@]", false, "[a]")));
        assert_eq!(case_toggle("${1~~}"), Some(("1", true, "")));
        assert_eq!(case_toggle("${x^}"), None);
        assert_eq!(case_toggle("${a.b}"), None);
    }
}

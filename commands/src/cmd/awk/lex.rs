//! The awk lexer: program text to tokens, with the line each starts on.
//!
//! Whether `/` starts a regular expression or divides depends on the token before it
//! (after an operand it divides), which the lexer tracks itself. Newlines are tokens:
//! they end statements, and the parser skips them where awk allows a line break.

/// One token.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Num(f64),
    Str(Vec<u8>),
    Regex(String),
    /// gawk's typed regexp constant `@/re/`.
    TypedRegex(String),
    /// A name not followed by `(`.
    Name(String),
    /// A name directly followed by `(` (a user function call).
    FuncName(String),
    /// A builtin function name (`length`, `substr`, …).
    Builtin(String),
    /// A keyword (`if`, `print`, `getline`, …).
    Kw(&'static str),
    /// An operator or punctuation (`+=`, `{`, `$`, …).
    Op(&'static str),
    Newline,
    Eof,
}

/// A token and where it starts.
#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
    /// Byte offset in the source of the token's first byte (gawk's caret for a syntax error
    /// goes under it).
    pub start: usize,
    /// Byte offset in the source just past the token.
    pub end: usize,
}

pub const KEYWORDS: &[&str] = &[
    "BEGIN",
    "END",
    "BEGINFILE",
    "ENDFILE",
    "function",
    "func",
    "if",
    "else",
    "while",
    "for",
    "do",
    "break",
    "continue",
    "next",
    "nextfile",
    "exit",
    "return",
    "delete",
    "in",
    "getline",
    "print",
    "printf",
    "switch",
    "case",
    "default",
];

/// The standard (POSIX) builtin functions.
pub const BUILTINS: &[&str] = &[
    "length", "substr", "index", "split", "sub", "gsub", "match", "sprintf", "sin", "cos", "atan2",
    "exp", "log", "sqrt", "int", "rand", "srand", "tolower", "toupper", "system", "close",
    "fflush",
];

/// The builtins that are gawk extensions: inside a namespace other than `awk` their
/// plain names are that namespace's own (`awk::gensub` still reaches the builtin).
pub const GAWK_BUILTINS: &[&str] = &[
    "gensub",
    "systime",
    "strftime",
    "mktime",
    "asort",
    "asorti",
    "and",
    "or",
    "xor",
    "lshift",
    "rshift",
    "compl",
    "strtonum",
    "isarray",
    "typeof",
    "patsplit",
    "mkbool",
    "dcgettext",
    "dcngettext",
    "bindtextdomain",
];

/// Whether `w` names a builtin function, standard or gawk's.
pub fn is_builtin(w: &str) -> bool {
    BUILTINS.contains(&w) || GAWK_BUILTINS.contains(&w)
}

/// The builtin (or built-in extension) function `w` names, as a static name.
pub fn builtin_name(w: &str) -> Option<&'static str> {
    BUILTINS
        .iter()
        .chain(GAWK_BUILTINS)
        .chain(EXTENSIONS.iter().flat_map(|(_, f)| f.iter()))
        .find(|b| **b == w)
        .copied()
}

/// Which awk the program is read as: gawk's own, or with its extensions off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compat {
    #[default]
    Gnu,
    /// `--traditional` (`-c`): no gawk keywords or builtins, no hex constants.
    Traditional,
    /// `--posix` (`-P`): as traditional, and no `func`, `**` or `\x` escapes either.
    Posix,
}

/// gawk's extension libraries forkbox's awk has built in (`@load "ordchr"`, `-l ordchr`),
/// with the functions each one adds.
pub const EXTENSIONS: &[(&str, &[&str])] =
    &[("ordchr", &["ord", "chr"]), ("readfile", &["readfile"])];

/// The functions of the extensions loaded so far in this thread's program.
fn loaded_funcs() -> Vec<&'static str> {
    LOADED.with(|l| {
        l.borrow()
            .iter()
            .filter_map(|lib| EXTENSIONS.iter().find(|(n, _)| n == lib))
            .flat_map(|(_, f)| f.iter().copied())
            .collect()
    })
}

/// Loads the extension `lib` for this thread's program: gawk's message when there is
/// no such library.
pub fn load_extension(lib: &str) -> Result<(), String> {
    let name = lib.strip_suffix(".so").unwrap_or(lib);
    match EXTENSIONS.iter().find(|(n, _)| *n == name) {
        Some((n, _)) => {
            LOADED.with(|l| l.borrow_mut().push(n));
            Ok(())
        }
        None => Err(format!(
            "cannot open shared library `{lib}' for reading: No such file or directory"
        )),
    }
}

/// Forgets the loaded extensions (a new program starts on this thread).
pub fn clear_extensions() {
    LOADED.with(|l| l.borrow_mut().clear());
}

thread_local! {
    static LOADED: std::cell::RefCell<Vec<&'static str>> = const { std::cell::RefCell::new(Vec::new()) };
    static COMPAT: std::cell::Cell<Compat> = const { std::cell::Cell::new(Compat::Gnu) };
}

/// Sets the dialect for this thread's awk.
pub fn set_compat(c: Compat) {
    COMPAT.with(|m| m.set(c));
}

/// The dialect this thread's awk reads and runs.
pub fn compat() -> Compat {
    COMPAT.with(std::cell::Cell::get)
}

/// gawk keywords that are plain names under `--traditional` and `--posix`.
const GAWK_KEYWORDS: &[&str] = &["BEGINFILE", "ENDFILE", "switch", "case", "default"];

/// Whether `word` is a keyword or builtin gawk's compatibility modes turn off.
fn off_in_compat(word: &str) -> bool {
    match compat() {
        Compat::Gnu => false,
        c => {
            GAWK_KEYWORDS.contains(&word)
                || GAWK_BUILTINS.contains(&word)
                || (c == Compat::Posix && word == "func")
        }
    }
}

/// Names that may be neither a namespace nor the second part of a qualified name: the
/// keywords and the standard builtins.
fn reserved(word: &str) -> bool {
    KEYWORDS.contains(&word) || BUILTINS.contains(&word)
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether `s` is a variable name a command-line assignment may set: an identifier,
/// or one qualified once with a namespace (`ns::name`).
pub fn legal_name(s: &[u8]) -> bool {
    let ident = |w: &[u8]| !w.is_empty() && is_ident_start(w[0]) && w.iter().copied().all(is_ident);
    match s.windows(2).position(|w| w == b"::") {
        Some(i) => ident(&s[..i]) && ident(&s[i + 2..]),
        None => ident(s),
    }
}

/// The end of the identifier starting at `i`.
fn ident_end(src: &[u8], mut i: usize) -> usize {
    while i < src.len() && is_ident(src[i]) {
        i += 1;
    }
    i
}

/// The namespace names are read in (`@namespace`): one per source, `awk` until set.
struct Namespaces<'a> {
    /// (first line, source) of each piece of the joined text, in order.
    rows: &'a [(usize, usize)],
    next_row: usize,
    source: usize,
    current: String,
    of_source: std::collections::HashMap<usize, String>,
}

impl Namespaces<'_> {
    /// Follows the text into the piece holding `line`.
    fn at_line(&mut self, line: usize) {
        while self.next_row < self.rows.len() && line >= self.rows[self.next_row].0 {
            let source = self.rows[self.next_row].1;
            self.next_row += 1;
            if source != self.source {
                let ns = std::mem::replace(&mut self.current, "awk".into());
                self.of_source.insert(self.source, ns);
                self.source = source;
                if let Some(ns) = self.of_source.get(&source) {
                    self.current.clone_from(ns);
                }
            }
        }
    }

    /// The token for a (possibly qualified) name, as gawk resolves it.
    fn resolve(&self, first: &str, second: Option<&str>) -> Result<Tok, String> {
        let Some(second) = second else {
            if off_in_compat(first) {
                return Ok(Tok::Name(first.to_string()));
            }
            if let Some(k) = KEYWORDS.iter().find(|k| **k == first) {
                return Ok(Tok::Kw(if *k == "func" { "function" } else { k }));
            }
            if loaded_funcs().contains(&first) {
                return Ok(Tok::Builtin(first.to_string()));
            }
            let builtin = is_builtin(first);
            if self.current == "awk" || (builtin && !GAWK_BUILTINS.contains(&first)) {
                return Ok(if builtin {
                    Tok::Builtin(first.to_string())
                } else {
                    Tok::Name(first.to_string())
                });
            }
            // All-capital names (NR, FS, the user's own FOO) stay global.
            if first.bytes().all(|b| b.is_ascii_uppercase()) {
                return Ok(Tok::Name(first.to_string()));
            }
            return Ok(Tok::Name(format!("{}::{first}", self.current)));
        };
        if reserved(first) {
            return Err(format!(
                "using reserved identifier `{first}' as a namespace is not allowed"
            ));
        }
        if reserved(second) {
            return Err(format!(
                "using reserved identifier `{second}' as second component of a qualified name is not allowed"
            ));
        }
        Ok(if first != "awk" {
            Tok::Name(format!("{first}::{second}"))
        } else if is_builtin(second) {
            Tok::Builtin(second.to_string())
        } else {
            Tok::Name(second.to_string())
        })
    }
}

/// The offset of the first byte at or after `j` that is no blank.
fn skip_blanks(src: &[u8], mut j: usize) -> usize {
    while j < src.len() && matches!(src[j], b' ' | b'\t') {
        j += 1;
    }
    j
}

/// A syntax error with its caret under the byte at `pos`.
fn syntax_at(line: usize, pos: usize) -> LexError {
    LexError {
        msg: "syntax error".into(),
        line,
        pos,
        ..LexError::default()
    }
}

/// Operators, longest first so a prefix never wins over the whole.
const OPS: &[&str] = &[
    "**=", "&&", "||", "|&", "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "**", "==", "<=",
    ">=", "!=", "!~", ">>", "{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*", "/", "%", "^",
    "!", ">", "<", "|", "?", ":", "~", "$", "=",
];

/// A lexing error: the message and the offset it points at.
#[derive(Debug, Default)]
pub struct LexError {
    pub msg: String,
    pub line: usize,
    pub pos: usize,
    /// gawk's `error:` form, without the source line and caret.
    pub plain: bool,
    /// An `error:` line gawk prints before the caret form.
    pub preface: Option<String>,
}

#[cfg(test)]
pub fn tokenize(src: &[u8]) -> Result<Vec<Token>, LexError> {
    tokenize_warning(src, &[], &mut Vec::new())
}

/// Tokens of `src`, whose pieces start at the given (line, source) rows (each source
/// has its own `@namespace`); warnings (line, text) about string escapes go to
/// `warnings`.
pub fn tokenize_warning(
    src: &[u8],
    rows: &[(usize, usize)],
    warnings: &mut Vec<(usize, String)>,
) -> Result<Vec<Token>, LexError> {
    let mut toks: Vec<Token> = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let mut ns = Namespaces {
        rows,
        next_row: 0,
        source: rows.first().map_or(0, |r| r.1),
        current: "awk".into(),
        of_source: std::collections::HashMap::new(),
    };
    while i < src.len() {
        ns.at_line(line);
        let c = src[i];
        match c {
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'\\' if src.get(i + 1) == Some(&b'\n') => {
                i += 2;
                line += 1;
                continue;
            }
            b'\\' if src.get(i + 1) == Some(&b'\r') && src.get(i + 2) == Some(&b'\n') => {
                i += 3;
                line += 1;
                continue;
            }
            b'\n' => {
                i += 1;
                toks.push(Token {
                    tok: Tok::Newline,
                    line,
                    start: i - 1,
                    end: i,
                });
                line += 1;
                continue;
            }
            b'#' => {
                while i < src.len() && src[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            // POSIX awk has no `@` directives or indirect calls.
            b'@' if compat() == Compat::Posix => return Err(syntax_at(line, i + 1)),
            // `@include` with no file name (one with a name was spliced in before).
            b'@' if src[i..].starts_with(b"@include")
                && !src.get(i + 8).copied().is_some_and(is_ident) =>
            {
                return Err(syntax_at(line, skip_blanks(src, i + 8)));
            }
            b'@' if src[i..].starts_with(b"@load")
                && !src.get(i + 5).copied().is_some_and(is_ident) =>
            {
                let j = skip_blanks(src, i + 5);
                if src.get(j) != Some(&b'"') {
                    return Err(syntax_at(line, j));
                }
                let (lib, ni, nl) = string(src, j + 1, line, warnings)?;
                if let Err(msg) = load_extension(&String::from_utf8_lossy(&lib)) {
                    return Err(LexError {
                        msg,
                        line,
                        plain: true,
                        ..LexError::default()
                    });
                }
                i = ni;
                line = nl;
                continue;
            }
            b'@' if src[i..].starts_with(b"@namespace")
                && !src.get(i + 10).copied().is_some_and(is_ident) =>
            {
                let (name, ni, nl) = namespace_directive(src, i + 10, line, warnings)?;
                ns.current = name;
                i = ni;
                line = nl;
                continue;
            }
            _ => {}
        }
        let start_line = line;
        let start = i;
        let tok = if c == b'"' {
            let (s, ni, nl) = string(src, i + 1, line, warnings)?;
            i = ni;
            line = nl;
            Tok::Str(s)
        } else if c == b'/' && regex_allowed(toks.last().map(|t| &t.tok)) {
            let (r, ni) = regex(src, i + 1, line)?;
            i = ni;
            Tok::Regex(r)
        } else if c == b'@' && src.get(i + 1) == Some(&b'/') {
            let (r, ni) = regex(src, i + 2, line)?;
            i = ni;
            Tok::TypedRegex(r)
        } else if c.is_ascii_digit()
            || (c == b'.' && src.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let (n, ni) = number(src, i);
            i = ni;
            Tok::Num(n)
        } else if is_ident_start(c) {
            let s = i;
            i = ident_end(src, i);
            let first = String::from_utf8_lossy(&src[s..i]).into_owned();
            let mut second = None;
            while src[i..].starts_with(b"::") && src.get(i + 2).copied().is_some_and(is_ident_start)
            {
                let e = ident_end(src, i + 2);
                if second.is_some() {
                    return Err(LexError {
                        msg: format!(
                            "identifier `{}': namespace separator can only appear once in a qualified name",
                            String::from_utf8_lossy(&src[s..e])
                        ),
                        line,
                        plain: true,
                        ..LexError::default()
                    });
                }
                second = Some(String::from_utf8_lossy(&src[i + 2..e]).into_owned());
                i = e;
            }
            match ns.resolve(&first, second.as_deref()) {
                Ok(Tok::Name(n)) if src.get(i) == Some(&b'(') => Tok::FuncName(n),
                Ok(t) => t,
                Err(m) => {
                    // The caret goes at the token after the name.
                    let mut j = i;
                    while j < src.len() && matches!(src[j], b' ' | b'\t') {
                        j += 1;
                    }
                    // gawk goes on with the reserved word as its token; where that still
                    // parses (`awk::length`, `length::x`, `foo::substr(…)`) the message is
                    // all it says.
                    let word = match second.as_deref() {
                        Some(second) if !reserved(&first) => second,
                        _ => first.as_str(),
                    };
                    let assigned_or_indexed = match src.get(j) {
                        Some(b'=') => src.get(j + 1) != Some(&b'='),
                        Some(b'[') => true,
                        _ => false,
                    };
                    let goes_on = (matches!(word, "length" | "getline") && !assigned_or_indexed)
                        || (BUILTINS.contains(&word) && src.get(j) == Some(&b'('));
                    if goes_on {
                        return Err(LexError {
                            msg: m,
                            line,
                            plain: true,
                            ..LexError::default()
                        });
                    }
                    return Err(LexError {
                        msg: "syntax error".into(),
                        line,
                        pos: j,
                        preface: Some(m),
                        ..LexError::default()
                    });
                }
            }
        } else if c == b'@' {
            // gawk's indirect call, `@name(args)`; a stray `@` is a token too, and the
            // grammar rejects what follows it.
            i += 1;
            Tok::Op("@")
        } else if let Some(op) = OPS.iter().find(|op| {
            src[i..].starts_with(op.as_bytes())
                && !(op.starts_with("**") && compat() == Compat::Posix)
        }) {
            i += op.len();
            match *op {
                "**" => Tok::Op("^"),
                "**=" => Tok::Op("^="),
                o => Tok::Op(o),
            }
        } else {
            return Err(LexError {
                msg: format!("invalid char '{}' in expression", c as char),
                line,
                pos: i + 1,
                ..LexError::default()
            });
        };
        toks.push(Token {
            tok,
            line: start_line,
            start,
            end: i,
        });
    }
    toks.push(Token {
        tok: Tok::Eof,
        line,
        start: src.len(),
        end: src.len(),
    });
    Ok(toks)
}

/// The rest of an `@namespace "name"` directive from `i`: the name, the offset past the
/// directive and the line there.
fn namespace_directive(
    src: &[u8],
    mut i: usize,
    line: usize,
    warnings: &mut Vec<(usize, String)>,
) -> Result<(String, usize, usize), LexError> {
    let syntax = |pos: usize| LexError {
        msg: "syntax error".into(),
        line,
        pos,
        ..LexError::default()
    };
    let plain = |msg: String| LexError {
        msg,
        line,
        plain: true,
        ..LexError::default()
    };
    while i < src.len() && matches!(src[i], b' ' | b'\t') {
        i += 1;
    }
    if src.get(i) != Some(&b'"') {
        return Err(syntax(i));
    }
    let (name, mut i, nl) = string(src, i + 1, line, warnings)?;
    let name = String::from_utf8_lossy(&name).into_owned();
    let b = name.as_bytes();
    if b.is_empty() || !is_ident_start(b[0]) || !b.iter().copied().all(is_ident) {
        return Err(plain(format!(
            "namespace name `{name}' must meet identifier naming rules"
        )));
    }
    if reserved(&name) {
        return Err(plain(format!(
            "using reserved identifier `{name}' as a namespace is not allowed"
        )));
    }
    while i < src.len() && matches!(src[i], b' ' | b'\t' | b'\r') {
        i += 1;
    }
    match src.get(i) {
        None | Some(b'\n' | b'#') => {}
        Some(b';') => i += 1,
        Some(_) => return Err(syntax(i)),
    }
    Ok((name, i, nl))
}

/// After an operand, `/` divides; elsewhere it opens a regular expression.
fn regex_allowed(prev: Option<&Tok>) -> bool {
    match prev {
        None => true,
        Some(
            Tok::Num(_)
            | Tok::Str(_)
            | Tok::Regex(_)
            | Tok::TypedRegex(_)
            | Tok::Name(_)
            | Tok::Builtin(_),
        ) => false,
        Some(Tok::Op(o)) => !matches!(*o, ")" | "]" | "$" | "++" | "--"),
        Some(_) => true,
    }
}

fn number(src: &[u8], start: usize) -> (f64, usize) {
    let mut i = start;
    // Hex constants, as gawk accepts in program text (not in its compatibility modes).
    let gnu = compat() == Compat::Gnu;
    if gnu
        && src[i] == b'0'
        && matches!(src.get(i + 1), Some(b'x' | b'X'))
        && src.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    {
        i += 2;
        let s = i;
        while i < src.len() && src[i].is_ascii_hexdigit() {
            i += 1;
        }
        let v = std::str::from_utf8(&src[s..i])
            .ok()
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .map_or(f64::INFINITY, |v| v as f64);
        return (v, i);
    }
    while i < src.len() && src[i].is_ascii_digit() {
        i += 1;
    }
    if i < src.len() && src[i] == b'.' {
        i += 1;
        while i < src.len() && src[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < src.len() && matches!(src[i], b'e' | b'E') {
        let mut j = i + 1;
        if j < src.len() && matches!(src[j], b'+' | b'-') {
            j += 1;
        }
        if j < src.len() && src[j].is_ascii_digit() {
            while j < src.len() && src[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    let text = std::str::from_utf8(&src[start..i]).unwrap_or("0");
    // gawk reads a leading 0 as octal in program text when every digit allows it.
    if gnu
        && text.len() > 1
        && text.starts_with('0')
        && text.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        let v = text
            .bytes()
            .fold(0.0, |acc, d| acc * 8.0 + f64::from(d - b'0'));
        return (v, i);
    }
    (text.parse().unwrap_or(0.0), i)
}

/// A string literal's body from `i` (after the quote): its bytes, the offset past the
/// closing quote and the line it ends on.
fn string(
    src: &[u8],
    mut i: usize,
    mut line: usize,
    warnings: &mut Vec<(usize, String)>,
) -> Result<(Vec<u8>, usize, usize), LexError> {
    // gawk's caret for an unterminated string is under its opening quote.
    let (quote, first_line) = (i - 1, line);
    let mut out = Vec::new();
    loop {
        let Some(&c) = src.get(i) else {
            return Err(LexError {
                msg: "unterminated string".into(),
                line: first_line,
                pos: quote,
                ..LexError::default()
            });
        };
        i += 1;
        match c {
            b'"' => return Ok((out, i, line)),
            b'\n' => {
                return Err(LexError {
                    msg: "unterminated string".into(),
                    line: first_line,
                    pos: quote,
                    ..LexError::default()
                });
            }
            b'\\' => {
                if src.get(i) == Some(&b'\n') {
                    i += 1;
                    line += 1;
                    continue;
                }
                if i >= src.len() {
                    continue;
                }
                let (ni, warning) = escape(src, i, &mut out);
                i = ni;
                if let Some(w) = warning {
                    warnings.push((line, w));
                }
            }
            c => out.push(c),
        }
    }
}

/// Decodes the escape whose character is at `s[i]` (just past a backslash) onto `out`:
/// the offset past it and gawk's warning for an escape it does not know.
pub fn escape(s: &[u8], mut i: usize, out: &mut Vec<u8>) -> (usize, Option<String>) {
    let e = s[i];
    i += 1;
    match e {
        b'n' => out.push(b'\n'),
        b't' => out.push(b'\t'),
        b'r' => out.push(b'\r'),
        b'\\' => out.push(b'\\'),
        b'"' => out.push(b'"'),
        b'a' => out.push(7),
        b'b' => out.push(8),
        b'f' => out.push(12),
        b'v' => out.push(11),
        b'0'..=b'7' => {
            let mut v = u32::from(e - b'0');
            for _ in 0..2 {
                match s.get(i) {
                    Some(d @ b'0'..=b'7') => {
                        v = v * 8 + u32::from(d - b'0');
                        i += 1;
                    }
                    _ => break,
                }
            }
            out.push((v & 0xff) as u8);
        }
        // POSIX awk has no `\x`: the x stands for itself.
        b'x' if compat() == Compat::Posix => out.push(b'x'),
        b'x' => {
            // At most two hex digits, as gawk 5.2 reads them.
            let mut v = 0u32;
            let mut n = 0;
            while n < 2
                && let Some(d) = s.get(i).and_then(|&c| char::from(c).to_digit(16))
            {
                v = v * 16 + d;
                i += 1;
                n += 1;
            }
            if n == 0 {
                out.push(b'x');
                return (i, Some("no hex digits in `\\x' escape sequence".into()));
            }
            out.push(v as u8);
        }
        other => {
            out.push(other);
            let c = String::from_utf8_lossy(&[other]).into_owned();
            return (
                i,
                Some(format!("escape sequence `\\{c}' treated as plain `{c}'")),
            );
        }
    }
    (i, None)
}

/// A regex literal's body from `i` (after the slash), kept as written except `\/`.
fn regex(src: &[u8], mut i: usize, line: usize) -> Result<(String, usize), LexError> {
    // gawk's caret for an unterminated regexp is just after its slash.
    let open = i;
    let mut out = Vec::new();
    let mut in_bracket = false;
    loop {
        let Some(&c) = src.get(i) else {
            return Err(LexError {
                msg: "unterminated regexp".into(),
                line,
                pos: open,
                ..LexError::default()
            });
        };
        i += 1;
        match c {
            b'\n' => {
                return Err(LexError {
                    msg: "unterminated regexp".into(),
                    line,
                    pos: open,
                    ..LexError::default()
                });
            }
            b'/' if !in_bracket => return Ok((String::from_utf8_lossy(&out).into_owned(), i)),
            b'\\' => {
                if src.get(i) == Some(&b'/') {
                    out.push(b'/');
                    i += 1;
                } else if let Some(&n) = src.get(i) {
                    out.push(b'\\');
                    out.push(n);
                    i += 1;
                }
            }
            b'[' if !in_bracket => {
                in_bracket = true;
                out.push(c);
                // `]` right after `[` or `[^` is literal.
                if src.get(i) == Some(&b'^') {
                    out.push(b'^');
                    i += 1;
                }
                if src.get(i) == Some(&b']') {
                    out.push(b']');
                    i += 1;
                }
            }
            b'[' if in_bracket && matches!(src.get(i), Some(b':' | b'.' | b'=')) => {
                // A class such as [:alpha:] inside a bracket: copy through its close.
                let delim = src[i];
                out.push(c);
                out.push(delim);
                i += 1;
                while i < src.len() && !(src[i] == delim && src.get(i + 1) == Some(&b']')) {
                    if src[i] == b'\n' {
                        break;
                    }
                    out.push(src[i]);
                    i += 1;
                }
                if i < src.len() && src[i] == delim {
                    out.push(delim);
                    out.push(b']');
                    i += 2;
                }
            }
            b']' if in_bracket => {
                in_bracket = false;
                out.push(c);
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        tokenize(s.as_bytes())
            .unwrap()
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn slash_divides_after_operands() {
        assert_eq!(
            toks("a / 2 / 3"),
            vec![
                Tok::Name("a".into()),
                Tok::Op("/"),
                Tok::Num(2.0),
                Tok::Op("/"),
                Tok::Num(3.0),
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("$0 ~ /a\\/b[/]/"),
            vec![
                Tok::Op("$"),
                Tok::Num(0.0),
                Tok::Op("~"),
                Tok::Regex("a/b[/]".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn strings_escapes_and_numbers() {
        assert_eq!(
            toks(r#""a\tb\101" 1e3 .5 0x1F"#),
            vec![
                Tok::Str(b"a\tbA".to_vec()),
                Tok::Num(1000.0),
                Tok::Num(0.5),
                Tok::Num(31.0),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn names_calls_and_keywords() {
        assert_eq!(
            toks("f(x) g (y) length print"),
            vec![
                Tok::FuncName("f".into()),
                Tok::Op("("),
                Tok::Name("x".into()),
                Tok::Op(")"),
                Tok::Name("g".into()),
                Tok::Op("("),
                Tok::Name("y".into()),
                Tok::Op(")"),
                Tok::Builtin("length".into()),
                Tok::Kw("print"),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn unterminated_string_is_an_error() {
        assert!(tokenize(b"\"abc").is_err());
        assert!(tokenize(b"/abc").is_err());
    }
}

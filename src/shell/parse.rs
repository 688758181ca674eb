//! Parsing untrusted text with brush-parser, bounded in depth, stack and time.
//!
//! brush-parser is a recursive PEG parser: every level of nesting costs it several KiB of
//! stack (a few hundred nested `{ }` overflow a 2 MiB thread stack and abort the whole
//! process), and its arithmetic-command rule backtracks exponentially on nested `(` that
//! are not closed the way it first guessed (32 bytes of `(` take minutes). So every text
//! goes through [`check`] before it reaches the parser:
//!
//! - a quote-, comment- and here-document-aware scan measures how deep the text nests
//!   (groups, subshells, substitutions, `${ }`, `[[ ]]`, `if`/`case`/loops) and how deep
//!   its parentheses nest, and rejects texts past [`MAX_NESTING`] or
//!   [`MAX_PAREN_NESTING`] with a syntax error before any recursion;
//! - the parse then runs on a stack sized for the depth it measured ([`with_stack`]): the
//!   current one when enough of it is left, else a fresh segment on the heap.
//!
//! Parse time is then near-linear in the text: below the parenthesis bound the
//! backtracking costs a small constant factor. The same guard serves every entry point:
//! programs (scripts, `eval`, `source`, `sh -c`), words, here-documents, parameters and
//! arithmetic.

use brush_parser::ast;

use super::error::ShellError;

mod fixup;
pub(crate) mod params;
pub(crate) mod rewrite;

/// Deepest nesting of compound commands, groups, substitutions and expansions a text may
/// have. bash has no fixed bound (it crashes instead); real scripts stay below 20.
pub const MAX_NESTING: usize = 256;

/// Deepest nesting of parentheses (subshells, `$( )`, `(( ))`, process substitution)
/// a text may have. brush-parser's backtracking doubles its work with every level of
/// unclosed `(`; at this depth a worst case costs about as much per byte as ordinary
/// text, while real scripts nest parentheses a handful of levels at most.
pub const MAX_PAREN_NESTING: usize = 12;

/// Stack one level of nesting may take while parsing or evaluating (measured: about
/// 10 KiB in release builds, several times that in debug builds), with room to spare.
const STACK_PER_LEVEL: usize = 64 * 1024;

/// Stack any parse may take besides its nesting.
const STACK_BASE: usize = 256 * 1024;

/// How deep a text nests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nesting {
    /// Deepest nesting of every kind together.
    pub depth: usize,
    /// Deepest nesting of parentheses.
    pub parens: usize,
}

/// What opened a level of nesting, so the scan knows what closes it and how to read
/// what is inside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Frame {
    /// `(`, `$(`, `<(`: commands until `)`.
    Paren,
    /// `` ` ``: commands until the next unescaped `` ` ``.
    Backquote,
    /// `"`: text with substitutions until `"`.
    Quote,
    /// `${`: a parameter expansion until `}`.
    Param,
    /// `$((`: arithmetic until `))`.
    Arith,
    /// `(` inside arithmetic.
    ArithGroup,
    /// `{` as a group or a brace expansion.
    Brace,
    /// `[[`.
    Test,
    /// `if`, `while`, `until`, `for`, `select`: until `fi` or `done`.
    Block,
    /// `case`: until `esac`; a `)` inside ends a pattern.
    Case,
}

/// Measures how deep `text` nests. The scan follows bash's quoting closely enough that
/// quoted or commented text never counts; where it must guess, it over-counts.
pub fn nesting(text: &str) -> Nesting {
    let mut s = Scanner::default();
    s.feed(text.as_bytes());
    s.max
}

/// Rejects a text that nests deeper than the parser can take safely.
pub fn check(text: &str) -> Result<Nesting, ShellError> {
    let n = nesting(text);
    if n.depth > MAX_NESTING {
        return Err(ShellError::Syntax(format!(
            "syntax error: nested more than {MAX_NESTING} levels deep"
        )));
    }
    if n.parens > MAX_PAREN_NESTING {
        return Err(ShellError::Syntax(format!(
            "syntax error: parentheses nested more than {MAX_PAREN_NESTING} levels deep"
        )));
    }
    Ok(n)
}

/// Runs `f` with enough stack for a text that nests `depth` levels: on the current stack
/// when that much is left, else on a fresh segment allocated for the call.
pub fn with_stack<T>(depth: usize, f: impl FnOnce() -> T) -> T {
    let need = STACK_BASE + depth.saturating_mul(STACK_PER_LEVEL);
    stacker::maybe_grow(need, need.max(1024 * 1024), f)
}

/// The parser's options: bash mode, extended globs recognised.
pub fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions::default()
}

/// Parses a whole script.
pub fn program(text: &str) -> Result<ast::Program, ShellError> {
    let n = check(text)?;
    let src = with_stack(n.depth, || rewrite::for_parser(text)).map_err(|e| {
        // A token bash refuses where brush-parser reads on: unless the text before it is
        // already wrong, as brush-parser finds.
        if e.kind != rewrite::ReadErrorKind::Unclosed
            && let Some(earlier) = text.get(..e.at).and_then(|t| error_within(t, n.depth))
        {
            return earlier;
        }
        match e.kind {
            rewrite::ReadErrorKind::Token => ShellError::Syntax(e.message),
            _ => ShellError::Unclosed {
                message: e.message,
                line: e.line,
                status: e.status,
            },
        }
    })?;
    let text: &str = &src;
    match with_stack(n.depth, || guard_parser(|| raw_program(text))) {
        Some(Ok(mut p)) => {
            // A line break inside a term of `[[ ]]`, which brush-parser takes.
            if text.contains("[[")
                && text.contains('\n')
                && let Some(m) = with_stack(n.depth, || rewrite::cond_error(text))
                && m.contains("`newline'")
            {
                return Err(ShellError::CondSyntax(m));
            }
            check_substitutions(text, n.depth)?;
            fix(&mut p, text, n.depth);
            Ok(p)
        }
        Some(Err(e)) => {
            // brush-parser has no `select`: read it as a marked `for` when that parses.
            if let Some(rewritten) = select_as_for(text)
                && let Some(Ok(mut p)) =
                    with_stack(n.depth, || guard_parser(|| raw_program(&rewritten)))
            {
                fix(&mut p, &rewritten, n.depth);
                return Ok(p);
            }
            if let Some(m) = with_stack(n.depth, || rewrite::cond_error(text)) {
                return Err(ShellError::CondSyntax(m));
            }
            // The error is told of the text as written: without the marks of empty `in`
            // lists, which would shift where brush-parser says it stopped.
            let marked = format!(" {}", rewrite::EMPTY_IN);
            if text.contains(&marked) {
                let plain = text.replace(&marked, "");
                if let Some(Err(e)) = with_stack(n.depth, || guard_parser(|| raw_program(&plain))) {
                    return Err(syntax_error(&plain, &e));
                }
            }
            Err(syntax_error(text, &e))
        }
        None => Err(ShellError::Syntax(
            "syntax error: number out of range".to_string(),
        )),
    }
}

/// The syntax error brush-parser finds inside `text` (not at its end), read as
/// [`program`] reads it.
fn error_within(text: &str, depth: usize) -> Option<ShellError> {
    let src = with_stack(depth, || rewrite::for_parser(text)).ok()?;
    match with_stack(depth, || guard_parser(|| raw_program(&src)))? {
        Err(e @ brush_parser::ParseError::ParsingNear(_)) => Some(syntax_error(&src, &e)),
        _ => None,
    }
}

/// Parses the body of each command substitution of `src`, as bash does when it reads the
/// command: a syntax error there is the command's (brush-parser leaves the body as text).
fn check_substitutions(src: &str, depth: usize) -> Result<(), ShellError> {
    for (start, end) in with_stack(depth, || rewrite::substitution_bodies(src)) {
        let body = rewrite::decode_substitution(&src[start..end]);
        let message = match program(&body) {
            Ok(_) => continue,
            // The body ends where bash finds the `)` that closes it.
            Err(ShellError::Unclosed { .. }) => "syntax error near unexpected token `)'".into(),
            Err(ShellError::Syntax(m)) if m.contains("unexpected end of file") => {
                "syntax error near unexpected token `)'".into()
            }
            Err(ShellError::Syntax(m)) => m,
            // A nested substitution's error shows the outermost line.
            Err(ShellError::SubstSyntax { message, .. }) => message,
            Err(e) => return Err(e),
        };
        let line_start = src[..end].rfind('\n').map_or(0, |k| k + 1);
        let line_end = src[end..].find('\n').map_or(src.len(), |k| end + k);
        return Err(ShellError::SubstSyntax {
            message,
            line: src[line_start..line_end].to_string(),
        });
    }
    Ok(())
}

/// Puts into `p` what the parser lost of `src`, the text it was parsed from.
fn fix(p: &mut ast::Program, src: &str, depth: usize) {
    let mut f = fixup::Fixup::new(src);
    if f.needed() {
        with_stack(depth, || f.program(p));
    }
}

/// `text` with each `select NAME` at the start of a command written as
/// `for MARKNAME` (see `exec::select`), or `None` when there is none. Quotes and
/// comments are skipped; lines are kept as they are, so `LINENO` stays right.
pub(crate) fn select_as_for(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 32);
    let mut i = 0;
    let mut last = 0;
    let mut found = false;
    let mut quote: Option<u8> = None;
    let word_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == b'\\' && q == b'"' {
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'\\' => {
                i += 2;
                continue;
            }
            b'\'' | b'"' | b'`' => {
                quote = Some(c);
                i += 1;
                continue;
            }
            b'#' if i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'\n' | b';') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            _ => {}
        }
        if b[i..].starts_with(b"select")
            && (i == 0 || !word_char(b[i - 1]))
            && command_start(&b[..i])
        {
            let mut j = i + 6;
            let blanks = j;
            while j < b.len() && matches!(b[j], b' ' | b'\t') {
                j += 1;
            }
            let name_at = j;
            while j < b.len() && word_char(b[j]) {
                j += 1;
            }
            if j > blanks
                && name_at < j
                && !b[name_at].is_ascii_digit()
                && (j == b.len() || !word_char(b[j]))
            {
                out.push_str(&text[last..i]);
                out.push_str("for");
                out.push_str(&text[i + 6..name_at]);
                out.push_str(crate::shell::exec::SELECT_MARK);
                last = name_at;
                found = true;
                i = j;
                // `select x in ;`: an empty list, marked as for `for` (see rewrite).
                let mut k = j;
                while k < b.len() && matches!(b[k], b' ' | b'\t') {
                    k += 1;
                }
                if b[k..].starts_with(b"in") && (k + 2 == b.len() || !word_char(b[k + 2])) {
                    let mut m = k + 2;
                    while m < b.len() && matches!(b[m], b' ' | b'\t') {
                        m += 1;
                    }
                    if matches!(b.get(m), Some(b';' | b'\n')) {
                        out.push_str(&text[last..k + 2]);
                        out.push(' ');
                        out.push_str(rewrite::EMPTY_IN);
                        last = k + 2;
                        i = k + 2;
                    }
                }
                continue;
            }
        }
        i += 1;
    }
    if !found {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// Whether a command starts after `before`: at the start of a line or after `;`, `&`,
/// `|`, `(`, `{`, or a reserved word after which a command comes.
fn command_start(before: &[u8]) -> bool {
    let trimmed = before
        .iter()
        .rposition(|c| !matches!(c, b' ' | b'\t'))
        .map_or(&before[..0], |k| &before[..=k]);
    match trimmed.last() {
        None | Some(b'\n' | b';' | b'&' | b'|' | b'(' | b'{' | b')') => true,
        Some(_) => ["do", "then", "else", "!"].iter().any(|w| {
            trimmed.ends_with(w.as_bytes())
                && trimmed
                    .len()
                    .checked_sub(w.len() + 1)
                    .is_none_or(|k| matches!(trimmed[k], b' ' | b'\t' | b'\n' | b';'))
        }),
    }
}

/// A script whose last here-document runs to the end of the input (`cat <<E` and no `E`
/// line): the script parsed with its delimiter line added, and bash's warning, when that
/// parses.
pub fn close_open_heredoc(text: &str) -> Option<(ast::Program, String)> {
    let at = text.rfind("<<")?;
    let rest = text[at + 2..]
        .trim_start_matches('-')
        .trim_start_matches([' ', '\t']);
    if rest.starts_with('<') {
        return None;
    }
    let word: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ';' | '|' | '&' | '<' | '>' | '(' | ')'))
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    if word.is_empty() {
        return None;
    }
    let sep = if text.ends_with('\n') { "" } else { "\n" };
    let fixed = format!("{text}{sep}{word}\n");
    let parsed = program(&fixed).ok()?;
    let line = text[..at].matches('\n').count() + 1;
    let warning =
        format!("warning: here-document at line {line} delimited by end-of-file (wanted `{word}')");
    Some((parsed, warning))
}

/// For a script that does not parse as a whole: the whole commands it opens with, each
/// parsed, and the error that stops it (bash reads a script one command at a time, so
/// the commands before a syntax error run before the error is reported); also the number
/// of lines before each command (its `LINENO` base) and where the command with the error
/// starts and ends in `text` (byte offsets): its message names the lines read by then.
pub fn leading_commands_read(
    text: &str,
    whole: ShellError,
) -> (Vec<(ast::Program, usize)>, ShellError, (usize, usize)) {
    let Units { read, stop } = read_units(text);
    let done = read
        .into_iter()
        .map(|(p, read)| {
            (
                p,
                text.get(..read.start)
                    .map_or(0, |t| t.matches('\n').count()),
            )
        })
        .collect();
    match stop {
        Some((e, read)) => (done, e.unwrap_or(whole), (read.start, read.end)),
        None => (done, whole, (text.len(), text.len())),
    }
}

/// A text as bash reads it: see [`read_units`].
pub struct Units {
    /// Each complete command read (a line, or the lines of a compound command or of
    /// here-documents), parsed alone, with its byte range in the text.
    pub read: Vec<(ast::Program, std::ops::Range<usize>)>,
    /// Where the reading stopped short: a unit that does not parse, or the input ending
    /// inside one (`if` with no `fi`); its error (`None` when only the whole text's error
    /// says it) and its byte range.
    pub stop: Option<(Option<ShellError>, std::ops::Range<usize>)>,
}

/// `text` read as bash reads it, one complete command at a time.
pub fn read_units(text: &str) -> Units {
    let mut done = Vec::new();
    let mut buf = PendingInput::default();
    let (mut start, mut end) = (0, 0);
    for line in text.split_inclusive('\n') {
        buf.push(line);
        end += line.len();
        match buf.completeness() {
            Completeness::Incomplete => {}
            Completeness::Complete => match program(&buf.take()) {
                Ok(p) => {
                    done.push((p, start..end));
                    start = end;
                }
                Err(e) => {
                    return Units {
                        read: done,
                        stop: Some((Some(e), start..end)),
                    };
                }
            },
            Completeness::Invalid => break,
        }
    }
    // An invalid unit, or input that ended inside one: the error of the rest.
    let stop = (!buf.is_empty()).then(|| (program(buf.text()).err(), start..end));
    Units { read: done, stop }
}

/// Parses a script on the blocking pool when it is large, so a big script does not hold
/// up the runtime thread other sessions share.
pub async fn program_async(text: &str) -> Result<ast::Program, ShellError> {
    /// Texts up to this size parse in well under a millisecond: not worth a thread hop.
    const INLINE: usize = 64 * 1024;
    if text.len() <= INLINE {
        return program(text);
    }
    let owned = text.to_string();
    tokio::task::spawn_blocking(move || program(&owned))
        .await
        .unwrap_or_else(|_| {
            Err(ShellError::Syntax(
                "syntax error: the script could not be parsed".to_string(),
            ))
        })
}

fn raw_program(text: &str) -> Result<ast::Program, brush_parser::ParseError> {
    let options = options();
    let mut parser = brush_parser::Parser::new(std::io::BufReader::new(text.as_bytes()), &options);
    parser.parse_program()
}

/// Words a bash-like syntax error message for a failed parse.
fn syntax_error(text: &str, err: &brush_parser::ParseError) -> ShellError {
    use brush_parser::ParseError;
    let near = |index: usize| {
        ShellError::Syntax(format!(
            "syntax error near unexpected token `{}'",
            offending_token(text, index)
        ))
    };
    // A here-document operator with no word after it: bash names the newline.
    let last = text.trim_end_matches([' ', '\t', '\n']);
    // `echo (`: bash reads `NAME (` as the start of a function definition and finds the
    // line's end where the `)` should be.
    if last.ends_with("<<")
        || last.ends_with("<<-")
        || (!matches!(err, ParseError::ParsingNear(_)) && dangling_paren(text))
    {
        return ShellError::Syntax("syntax error near unexpected token `newline'".to_string());
    }
    match err {
        ParseError::ParsingNear(pos) => near(pos.index),
        ParseError::ParsingAtEndOfInput => match probe_end(text) {
            Some(index) if index <= text.len() => near(index),
            _ => ShellError::Syntax("syntax error: unexpected end of file".to_string()),
        },
        // `cat <<` and the line's end: bash wants the delimiter word there.
        ParseError::Tokenizing { inner, .. }
            if inner.to_string().starts_with("missing here tag") =>
        {
            ShellError::Syntax("syntax error near unexpected token `newline'".to_string())
        }
        ParseError::Tokenizing { inner, .. } => {
            if inner.is_incomplete() {
                ShellError::Syntax("syntax error: unexpected end of file".to_string())
            } else {
                ShellError::Syntax(format!("syntax error: {inner}"))
            }
        }
    }
}

/// Whether `text` ends with a command's first word and a `(` (`echo (`, `x; f (`).
fn dangling_paren(text: &str) -> bool {
    let Some(line) = text.trim_end().lines().last() else {
        return false;
    };
    let Some(before) = line.trim_end().strip_suffix('(') else {
        return false;
    };
    let before = before.trim_end();
    // The word starts after the last character that cannot be part of it (which may be
    // several bytes long).
    let start = before
        .char_indices()
        .rfind(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let (head, word) = before.split_at(start);
    let reserved = matches!(
        word,
        "if" | "then" | "elif" | "else" | "while" | "until" | "do" | "time" | "function"
    );
    !word.is_empty()
        && !reserved
        && !word.starts_with('-')
        && (head.trim_end().is_empty() || head.trim_end().ends_with([';', '&', '|', '(']))
}

/// The parser reports a misplaced reserved word (`fi`, `done`, …) at the token after it;
/// bash names the word itself.
fn offending_token(text: &str, index: usize) -> String {
    const CLOSERS: &[&str] = &[
        "fi", "done", "esac", "then", "else", "elif", "do", "}", "in",
    ];
    let before = text.get(..index).unwrap_or(text);
    let last = before
        .split(|c: char| c.is_whitespace() || c == ';')
        .rfind(|t| !t.is_empty())
        .unwrap_or("");
    // A word that opens a body (`do`, `then`, `else`) followed by `;`: bash names the `;`,
    // which cannot start the body.
    if matches!(last, "do" | "then" | "else") {
        let at = token_at(text, index);
        if at.starts_with(';') {
            return at;
        }
        if before.trim_end().ends_with(';') {
            return ";".to_string();
        }
    }
    // `case WORD in )`: a pattern list cannot open with the `)`. `case in esac`: the
    // `in` is the case's word, and bash names what stands where its `in` should.
    let case_word = last == "in"
        && before
            .trim_end()
            .strip_suffix("in")
            .is_some_and(|b| b.trim_end().ends_with("case"));
    if CLOSERS.contains(&last) && !(last == "in" && token_at(text, index) == ")") && !case_word {
        return last.to_string();
    }
    token_at(text, index)
}

/// The token starting at byte `index` of `text`, for error messages.
fn token_at(text: &str, index: usize) -> String {
    let rest = text.get(index..).unwrap_or("");
    let rest = rest.trim_start_matches([' ', '\t']);
    if rest.starts_with('\n') || rest.is_empty() {
        return "newline".to_string();
    }
    let ops = [";;", "&&", "||", ";", "&", "|", "(", ")", "<", ">"];
    for op in ops {
        if rest.starts_with(op) {
            return op.to_string();
        }
    }
    rest.split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>'))
        .next()
        .unwrap_or("")
        .to_string()
}

/// For a parse that failed at end of input: appends a line with an unexpected `;` and
/// returns where that parse fails. A failure inside `text` means `text` is wrong on its own;
/// a failure at the `;` means `text` only lacked more input. Only called on texts that
/// passed [`check`]; the probe adds no nesting.
fn probe_end(text: &str) -> Option<usize> {
    let probe = format!("{text}\n;");
    let depth = nesting(text).depth;
    match with_stack(depth, || guard_parser(|| raw_program(&probe)))? {
        Err(brush_parser::ParseError::ParsingNear(pos)) => Some(pos.index),
        _ => None,
    }
}

/// Whether a piece of typed text is a whole command yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completeness {
    Complete,
    /// Needs another line: open quote, `if` without `fi`, trailing `|`, pending here-doc.
    Incomplete,
    Invalid,
}

/// Whether `text` is a complete command, needs more lines, or can never parse.
pub fn completeness(text: &str) -> Completeness {
    let Ok(n) = check(text) else {
        return Completeness::Invalid;
    };
    // A subscript not closed yet (`a[` …) waits for its `]`, as in bash.
    let text: &str = &match with_stack(n.depth, || rewrite::for_parser(text)) {
        Ok(src) => src,
        Err(e) if e.kind == rewrite::ReadErrorKind::Unclosed => return Completeness::Incomplete,
        Err(_) => return Completeness::Invalid,
    };
    let Some(parsed) = with_stack(n.depth, || guard_parser(|| raw_program(text))) else {
        return Completeness::Invalid;
    };
    match parsed {
        Ok(_) => {
            // A trailing backslash-newline is a continuation the tokenizer accepts silently.
            if text.ends_with("\\\n") && !text.ends_with("\\\\\n") {
                Completeness::Incomplete
            } else {
                Completeness::Complete
            }
        }
        Err(brush_parser::ParseError::Tokenizing { inner, .. }) => {
            if inner.is_incomplete() {
                Completeness::Incomplete
            } else {
                Completeness::Invalid
            }
        }
        Err(brush_parser::ParseError::ParsingAtEndOfInput) => match probe_end(text) {
            Some(i) if i <= text.len() => Completeness::Invalid,
            _ => Completeness::Incomplete,
        },
        Err(brush_parser::ParseError::ParsingNear(_)) => Completeness::Invalid,
    }
}

/// Unfinished input read line by line (a script on stdin, typed lines), and whether it is
/// a whole command yet, in time linear in the input.
///
/// Parsing all of it after every line would cost quadratic time (an open `if` followed by
/// thousands of lines). So a resumable scan follows the input as it grows, and the input
/// is parsed only when the scan finds everything closed (no open level, quote or
/// here-document, no trailing `|`, `&&`, `||` or `\`), when it is small, or when it has
/// doubled since it was last parsed: the scan is an approximation, and the doubling rule
/// bounds how long it can keep a complete command waiting while the total parse work stays
/// linear.
#[derive(Default)]
pub struct PendingInput {
    text: String,
    scan: Scanner,
    /// Length of the text at its last parse (0 before any).
    parsed_at: usize,
}

/// Unfinished input up to this size is parsed after every line: cheap, and exact.
const ALWAYS_PARSE: usize = 4096;

impl PendingInput {
    /// Appends a line (with its newline) to the input.
    pub fn push(&mut self, line: &str) {
        self.text.push_str(line);
        self.scan.feed(self.text.as_bytes());
    }

    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether the next line is part of a here-document's body (an interactive shell
    /// does no history expansion there).
    pub fn in_heredoc_body(&self) -> bool {
        self.scan.in_body
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Takes the input, leaving it empty.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        *self = PendingInput::default();
        text
    }

    /// Whether the text must be parsed to know if it is whole yet.
    fn worth_parsing(&self) -> bool {
        let len = self.text.len();
        len <= ALWAYS_PARSE
            || len >= self.parsed_at.saturating_mul(2)
            || (self.scan.is_closed() && !continues(&self.text))
    }

    /// Whether the input is a whole command, needs more lines, or can never parse.
    /// Parses (on the calling thread) only when [`PendingInput`]'s rules say so.
    pub fn completeness(&mut self) -> Completeness {
        if !self.worth_parsing() {
            return Completeness::Incomplete;
        }
        self.parsed_at = self.text.len();
        completeness(&self.text)
    }

    /// Like [`PendingInput::completeness`], parsing a large input on the blocking pool so
    /// it does not hold a runtime thread other sessions need.
    pub async fn completeness_async(mut self) -> (PendingInput, Completeness) {
        /// Inputs up to this size parse in about a millisecond: not worth a thread hop.
        const INLINE: usize = 64 * 1024;
        if !self.worth_parsing() || self.text.len() <= INLINE {
            let state = self.completeness();
            return (self, state);
        }
        tokio::task::spawn_blocking(move || {
            let state = self.completeness();
            (self, state)
        })
        .await
        // Only a panic in the parser lands here: the input is dropped as unreadable.
        .unwrap_or_else(|_| (PendingInput::default(), Completeness::Invalid))
    }
}

/// Whether `text` ends asking for another line: a trailing `|`, `&&`, `||` or `\`.
fn continues(text: &str) -> bool {
    let t = text.trim_end_matches(['\n', ' ', '\t']);
    if text.trim_end_matches([' ', '\t']).ends_with("\\\n") {
        let backslashes = t.len() - t.trim_end_matches('\\').len();
        return backslashes % 2 == 1;
    }
    t.ends_with('|') || t.ends_with("&&")
}

/// Runs one call into brush-parser, catching its panics.
///
/// brush-parser 0.4 unwraps a few integer parses and so panics when a number does not fit:
/// a redirection's descriptor (`echo 99999999999>&1`), a brace sequence's bound
/// (`{1..99999999999999999999}`), a tilde's directory-stack index (`~+9999…`). The panic
/// is caught here and gives `None`, which each caller turns into a syntax error, a bad
/// substitution or a literal word: an error in the script, not a panic in the session's
/// task. (The panic message still reaches the server's log through the panic hook.)
pub fn guard_parser<T>(parse: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(parse)).ok()
}

/// Runs one of brush-parser's word-level parsers (words, here-documents, parameters,
/// brace expansions) on `text` after the same check as programs (a word may hold whole
/// programs in `$( )`), on enough stack, catching its panics. `Ok(None)` when it does not
/// parse.
pub fn guarded<T, E>(
    text: &str,
    parse: impl FnOnce(&str, &brush_parser::ParserOptions) -> Result<T, E>,
) -> Result<Option<T>, ShellError> {
    let n = check(text)?;
    let options = options();
    Ok(with_stack(n.depth, || guard_parser(|| parse(text, &options))).and_then(Result::ok))
}

/// Runs one of brush-parser's word parsers (words, here-document bodies: `heredoc`) like
/// [`guarded`], with the body of each command substitution read by [`rewrite`] and carried
/// through the parser encoded (its word parser finds the end of `$( )` by a shallow scan
/// that a `)` in a case pattern, comment or here-document ends early). The pieces'
/// positions are those of `text`.
pub fn word_pieces<E>(
    text: &str,
    heredoc: bool,
    parse: impl Fn(
        &str,
        &brush_parser::ParserOptions,
    ) -> Result<Vec<brush_parser::word::WordPieceWithSource>, E>,
) -> Result<Option<Vec<brush_parser::word::WordPieceWithSource>>, ShellError> {
    let n = check(text)?;
    let encoded = with_stack(n.depth, || rewrite::encode_substitutions(text, heredoc));
    let base = encoded.as_ref().map_or(text, |(e, _)| e.as_str());
    let marked = params::mark(base, heredoc);
    let pieces = match (&encoded, &marked) {
        (None, None) => {
            if let Some(p) = all_indices_indirect(text, &parse)? {
                arith_comment(text, &p)?;
                return Ok(Some(p));
            }
            guarded(text, parse)?
        }
        (_, Some((m, _))) => guarded(m, parse)?,
        (Some((e, _)), None) => guarded(e, parse)?,
    };
    let Some(mut pieces) = pieces else {
        return Ok(None);
    };
    fn reposition(
        pieces: &mut [brush_parser::word::WordPieceWithSource],
        shifts: &[rewrite::Shift],
    ) {
        use brush_parser::word::WordPiece;
        for p in pieces {
            p.start_index = rewrite::original_index(shifts, p.start_index);
            p.end_index = rewrite::original_index(shifts, p.end_index);
            if let WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) = &mut p.piece
            {
                reposition(inner, shifts);
            }
        }
    }
    if let Some((_, shifts)) = &marked {
        params::unmark(&mut pieces);
        reposition(&mut pieces, shifts);
    }
    if let Some((_, shifts)) = &encoded {
        reposition(&mut pieces, shifts);
    }
    arith_comment(text, &pieces)?;
    Ok(Some(pieces))
}

/// bash's error for a word with a `$(( ))` whose text holds a comment that runs to its
/// end (`$(( 10 #c ))`): bash reads the substitution as a command substitution first,
/// where a `#` after a blank starts a comment up to the end of the line, and then finds
/// no closing `)`.
fn arith_comment(
    text: &str,
    pieces: &[brush_parser::word::WordPieceWithSource],
) -> Result<(), ShellError> {
    use brush_parser::word::WordPiece;
    fn open_comment(pieces: &[brush_parser::word::WordPieceWithSource]) -> bool {
        pieces.iter().any(|p| match &p.piece {
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => open_comment(inner),
            WordPiece::ArithmeticExpression(e) => {
                let v = e.value.as_bytes();
                let last_line = e.value.rfind('\n').map_or(0, |n| n + 1);
                v.iter()
                    .enumerate()
                    .skip(last_line.max(1))
                    .any(|(i, &c)| c == b'#' && matches!(v[i - 1], b' ' | b'\t' | b'\n'))
            }
            _ => false,
        })
    }
    if text.contains("$((") && text.contains('#') && open_comment(pieces) {
        return Err(ShellError::Expansion(format!(
            "bad substitution: no closing `)' in {text}"
        )));
    }
    Ok(())
}

/// A word that holds `${!NAME[@]@OP}` (the value of each element names the variable to
/// transform; brush-parser reads `${!NAME[@]` as the list of keys and then the whole
/// expansion as literal text): parsed with the subscript marked, then put back. `None`
/// when the word holds none.
fn all_indices_indirect<E>(
    text: &str,
    parse: impl Fn(
        &str,
        &brush_parser::ParserOptions,
    ) -> Result<Vec<brush_parser::word::WordPieceWithSource>, E>,
) -> Result<Option<Vec<brush_parser::word::WordPieceWithSource>>, ShellError> {
    use brush_parser::word::{Parameter, ParameterExpr, WordPiece, WordPieceWithSource};
    const MARK: char = '\u{F0103}';
    if !text.contains("${!") || text.contains(MARK) {
        return Ok(None);
    }
    let mut marked = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(at) = rest.find("${!") {
        marked.push_str(&rest[..at + 3]);
        rest = &rest[at + 3..];
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let after = &rest[name_len..];
        if name_len > 0 && (after.starts_with("[@]@") || after.starts_with("[*]@")) {
            marked.push_str(&rest[..name_len]);
            marked.push('[');
            marked.push(MARK);
            marked.push_str(&after[1..2]);
            marked.push(']');
            rest = &after[3..];
        }
    }
    marked.push_str(rest);
    if marked.len() == text.len() {
        return Ok(None);
    }
    let Some(mut pieces) = guarded(&marked, parse)? else {
        return Ok(None);
    };
    fn unmark(pieces: &mut [WordPieceWithSource]) {
        for p in pieces {
            match &mut p.piece {
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => unmark(inner),
                WordPiece::ParameterExpansion(ParameterExpr::Transform { parameter, .. }) => {
                    if let Parameter::NamedWithIndex { name, index } = parameter
                        && let Some(kind) = index.strip_prefix(MARK)
                    {
                        *parameter = Parameter::NamedWithAllIndices {
                            name: std::mem::take(name),
                            concatenate: kind == "*",
                        };
                    }
                }
                // Quoted or literal text keeps what was written.
                WordPiece::Text(t)
                | WordPiece::SingleQuotedText(t)
                | WordPiece::AnsiCQuotedText(t)
                    if t.contains(MARK) =>
                {
                    *t = t
                        .replace(&format!("[{MARK}@]"), "[@]")
                        .replace(&format!("[{MARK}*]"), "[*]");
                }
                _ => {}
            }
        }
    }
    unmark(&mut pieces);
    Ok(Some(pieces))
}

/// The state of one scan: the open levels, innermost last. A scan can be resumed as more
/// text arrives ([`Scanner::feed`] continues where the last one stopped).
struct Scanner {
    /// Where the next [`Scanner::feed`] goes on.
    pos: usize,
    /// Inside a single-quoted string that has not ended yet.
    in_quote: bool,
    /// At the start of a line inside pending here-document bodies.
    in_body: bool,
    frames: Vec<Frame>,
    /// Whether the next word is in command position (where reserved words count).
    at_command: bool,
    parens: usize,
    max: Nesting,
    /// Here-documents whose bodies start at the next newline: (delimiter, strip tabs).
    heredocs: Vec<(Vec<u8>, bool)>,
}

fn is_word_start(prev: Option<u8>) -> bool {
    match prev {
        None => true,
        Some(c) => c.is_ascii_whitespace() || matches!(c, b';' | b'&' | b'|' | b'(' | b')'),
    }
}

fn is_delim(c: Option<&u8>) -> bool {
    match c {
        None => true,
        Some(c) => c.is_ascii_whitespace() || matches!(c, b';' | b'&' | b'|' | b'(' | b')'),
    }
}

/// Reserved words that open or close a level (in command position only).
const OPENS_OR_CLOSES: [&str; 9] = [
    "if", "while", "until", "for", "select", "case", "fi", "done", "esac",
];

/// Words after which a command (and so a reserved word) may follow.
const COMMAND_FOLLOWS: [&str; 10] = [
    "if", "while", "until", "then", "do", "else", "elif", "!", "{", "time",
];

/// The reserved word `rest` starts with, if it is one followed by a delimiter.
fn reserved(rest: &[u8]) -> Option<&'static str> {
    OPENS_OR_CLOSES
        .into_iter()
        .chain(COMMAND_FOLLOWS)
        .find(|w| rest.starts_with(w.as_bytes()) && is_delim(rest.get(w.len())))
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner {
            pos: 0,
            in_quote: false,
            in_body: false,
            frames: Vec::new(),
            at_command: true,
            parens: 0,
            max: Nesting::default(),
            heredocs: Vec::new(),
        }
    }
}

impl Scanner {
    fn push(&mut self, f: Frame) {
        self.frames.push(f);
        if matches!(f, Frame::Paren) {
            self.parens += 1;
        }
        self.max.depth = self.max.depth.max(self.frames.len());
        self.max.parens = self.max.parens.max(self.parens);
    }

    fn pop(&mut self) {
        if let Some(Frame::Paren) = self.frames.pop() {
            self.parens -= 1;
        }
    }

    fn top(&self) -> Option<Frame> {
        self.frames.last().copied()
    }

    /// Whether the innermost level reads commands (quotes and reserved words count).
    fn in_commands(&self) -> bool {
        matches!(
            self.top(),
            None | Some(
                Frame::Paren | Frame::Backquote | Frame::Brace | Frame::Block | Frame::Case
            )
        )
    }

    /// Whether everything opened so far is closed: no level, quote or here-document is
    /// waiting for more text.
    fn is_closed(&self) -> bool {
        self.frames.is_empty() && self.heredocs.is_empty() && !self.in_quote && !self.in_body
    }

    /// Scans `s` from where the last call stopped; `s` is all the text so far (what was
    /// scanned before must not have changed).
    fn feed(&mut self, s: &[u8]) {
        let mut i = self.pos;
        while i < s.len() {
            if self.in_quote {
                match find(s, i, b'\'') {
                    Some(j) => {
                        self.in_quote = false;
                        i = j + 1;
                        continue;
                    }
                    None => {
                        i = s.len();
                        break;
                    }
                }
            }
            if self.in_body {
                // One whole line of a here-document body at a time.
                let Some(end) = find(s, i, b'\n') else { break };
                self.body_line(&s[i..end]);
                i = end + 1;
                continue;
            }
            let c = s[i];
            let prev = i.checked_sub(1).map(|p| s[p]);
            let top = self.top();
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == b'\n' && !self.heredocs.is_empty() && top != Some(Frame::Quote) {
                self.in_body = true;
                i += 1;
                continue;
            }
            if top == Some(Frame::Quote) {
                match c {
                    b'"' => self.pop(),
                    b'$' | b'`' => {
                        i += self.open_dollar_or_backquote(&s[i..]);
                        continue;
                    }
                    _ => {}
                }
                i += 1;
                continue;
            }
            // Unquoted text (commands, `${ }`, arithmetic).
            if self.in_commands() {
                if matches!(c, b'\n' | b';' | b'&' | b'|' | b'(' | b')') {
                    self.at_command = true;
                } else if !c.is_ascii_whitespace() && is_word_start(prev) {
                    let word = reserved(&s[i..]);
                    let was = std::mem::replace(
                        &mut self.at_command,
                        word.is_some_and(|w| COMMAND_FOLLOWS.contains(&w)),
                    );
                    if let Some(w) = word.filter(|w| was && OPENS_OR_CLOSES.contains(w)) {
                        self.reserved_word(w);
                        i += w.len();
                        continue;
                    }
                }
            }
            match c {
                b'\'' if top != Some(Frame::Arith) && top != Some(Frame::ArithGroup) => {
                    self.in_quote = true;
                    i += 1;
                    continue;
                }
                b'"' => self.push(Frame::Quote),
                b'$' | b'`' => {
                    i += self.open_dollar_or_backquote(&s[i..]);
                    continue;
                }
                b'#' if self.in_commands() && is_word_start(prev) => {
                    i = find(s, i, b'\n').unwrap_or(s.len());
                    continue;
                }
                b'<' if self.in_commands() && s.get(i + 1) == Some(&b'<') => {
                    if s.get(i + 2) == Some(&b'<') {
                        i += 3; // a here-string: an ordinary word follows
                    } else {
                        i = self.heredoc_operator(s, i + 2);
                    }
                    continue;
                }
                b'(' => match top {
                    Some(Frame::Arith | Frame::ArithGroup) => self.push(Frame::ArithGroup),
                    Some(Frame::Param) => {}
                    _ => self.push(Frame::Paren),
                },
                b')' => match top {
                    Some(Frame::Paren | Frame::ArithGroup) => self.pop(),
                    Some(Frame::Arith) if s.get(i + 1) == Some(&b')') => {
                        self.pop();
                        i += 2;
                        continue;
                    }
                    // A case pattern's `)`, or one with no opener: not a level.
                    _ => {}
                },
                b'{' if top != Some(Frame::Arith) && top != Some(Frame::ArithGroup) => {
                    self.push(Frame::Brace)
                }
                b'}' => {
                    if matches!(top, Some(Frame::Brace | Frame::Param)) {
                        self.pop();
                    }
                }
                b'[' if self.in_commands()
                    && s.get(i + 1) == Some(&b'[')
                    && is_word_start(prev)
                    && is_delim(s.get(i + 2)) =>
                {
                    self.push(Frame::Test);
                    i += 2;
                    continue;
                }
                b']' if top == Some(Frame::Test) && s.get(i + 1) == Some(&b']') => {
                    self.pop();
                    i += 2;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        self.pos = i;
    }

    fn reserved_word(&mut self, word: &str) {
        match word {
            "case" => self.push(Frame::Case),
            "esac" => {
                if self.top() == Some(Frame::Case) {
                    self.pop();
                }
            }
            "fi" | "done" => {
                if self.top() == Some(Frame::Block) {
                    self.pop();
                }
            }
            _ => self.push(Frame::Block),
        }
    }

    /// At a `$` or `` ` ``: opens what it starts; returns how many bytes it took.
    fn open_dollar_or_backquote(&mut self, rest: &[u8]) -> usize {
        if rest[0] == b'`' {
            if self.top() == Some(Frame::Backquote) {
                self.pop();
            } else {
                self.push(Frame::Backquote);
            }
            return 1;
        }
        match (rest.get(1), rest.get(2)) {
            (Some(b'('), Some(b'(')) => {
                self.push(Frame::Arith);
                3
            }
            (Some(b'('), _) => {
                self.push(Frame::Paren);
                2
            }
            (Some(b'{'), _) => {
                self.push(Frame::Param);
                2
            }
            _ => 1,
        }
    }

    /// After `<<` (or `<<-`): records the delimiter; returns where scanning goes on.
    fn heredoc_operator(&mut self, s: &[u8], mut i: usize) -> usize {
        let strip = s.get(i) == Some(&b'-');
        if strip {
            i += 1;
        }
        while matches!(s.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        let mut delim = Vec::new();
        while let Some(&c) = s.get(i) {
            match c {
                b'\'' | b'"' => {
                    let end = find(s, i + 1, c).unwrap_or(s.len());
                    delim.extend_from_slice(&s[i + 1..end]);
                    i = end + 1;
                }
                b'\\' => {
                    if let Some(&n) = s.get(i + 1) {
                        delim.push(n);
                    }
                    i += 2;
                }
                c if c.is_ascii_whitespace()
                    || matches!(c, b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')') =>
                {
                    break;
                }
                c => {
                    delim.push(c);
                    i += 1;
                }
            }
        }
        if !delim.is_empty() {
            self.heredocs.push((delim, strip));
        }
        i.min(s.len())
    }

    /// One line of the pending here-document bodies: the first body ends at its
    /// delimiter line.
    fn body_line(&mut self, line: &[u8]) {
        let Some((delim, strip)) = self.heredocs.first() else {
            self.in_body = false;
            return;
        };
        let mut line = line;
        if *strip {
            while let [b'\t', rest @ ..] = line {
                line = rest;
            }
        }
        if line == delim.as_slice() {
            self.heredocs.remove(0);
            self.in_body = !self.heredocs.is_empty();
        }
    }
}

fn find(s: &[u8], from: usize, byte: u8) -> Option<usize> {
    s.get(from..)?
        .iter()
        .position(|&c| c == byte)
        .map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(text: &str) -> (usize, usize) {
        let n = nesting(text);
        (n.depth, n.parens)
    }

    #[test]
    fn measures_nesting() {
        assert_eq!(n("echo hi"), (0, 0));
        assert_eq!(n("( ( true ) )"), (2, 2));
        assert_eq!(n("{ { true; }; }"), (2, 0));
        assert_eq!(n("if true; then while :; do :; done; fi"), (2, 0));
        assert_eq!(n("echo $(echo $(echo x))"), (2, 2));
        assert_eq!(n("echo ${a:-${b:-c}}"), (2, 0));
        assert_eq!(n("echo $(( (1 + (2)) ))"), (3, 0));
        assert_eq!(n("[[ ( a ) ]]"), (2, 1));
        assert_eq!(n("case x in a) echo;; (b) echo;; esac"), (2, 1));
    }

    #[test]
    fn quotes_comments_and_heredocs_do_not_count() {
        assert_eq!(n("echo '((((((((' \"(((( {{{{\""), (1, 0));
        assert_eq!(n("echo \"$(echo \"$(echo x)\")\""), (4, 2));
        assert_eq!(n("echo a # ((((((((\necho b"), (0, 0));
        assert_eq!(n("cat <<EOF\n((((((((((\nEOF\necho b"), (0, 0));
        assert_eq!(n("cat <<-'E' ; (x)\n\t((((((((((\n\tE\n"), (1, 1));
        assert_eq!(n("echo \\( \\( \\("), (0, 0));
        assert_eq!(n("echo if; echo done"), (0, 0));
        assert_eq!(n("x=$((1<<3))"), (1, 0));
    }

    #[test]
    fn heredoc_quotes_cannot_hide_parentheses() {
        // A quote inside a here-document body must not swallow the commands after it.
        let text = format!("cat <<E\n'\nE\n{}", "(".repeat(20));
        assert_eq!(nesting(&text).parens, 20);
        assert!(check(&text).is_err());
    }

    #[test]
    fn deep_texts_are_refused_before_parsing() {
        let braces = format!("{}true; {}", "{ ".repeat(500), "}; ".repeat(500));
        let e = program(&braces).unwrap_err();
        assert_eq!(e.status(), 2);
        assert!(e.to_string().contains("nested more than 256"), "{e}");
        let parens = "(".repeat(32);
        let e = program(&parens).unwrap_err();
        assert!(e.to_string().contains("parentheses nested"), "{e}");
        assert_eq!(completeness(&parens), Completeness::Invalid);
        let param = format!("echo {}x{}", "${x:-".repeat(300), "}".repeat(300));
        assert!(program(&param).is_err());
    }

    #[test]
    fn texts_at_the_bounds_parse() {
        let braces = format!(
            "{}true; {}",
            "{ ".repeat(MAX_NESTING - 1),
            "}; ".repeat(MAX_NESTING - 1)
        );
        assert!(program(&braces).is_ok());
        let ifs = format!(
            "{}true; {}",
            "if true; then ".repeat(MAX_NESTING),
            "fi; ".repeat(MAX_NESTING)
        );
        assert!(program(&ifs).is_ok());
        let subshells = format!(
            "{}true;{}",
            "( ".repeat(MAX_PAREN_NESTING),
            " )".repeat(MAX_PAREN_NESTING)
        );
        assert!(program(&subshells).is_ok());
        // Unclosed at the bound: refused quickly as incomplete, not after minutes.
        let open = "(".repeat(MAX_PAREN_NESTING);
        assert_eq!(completeness(&open), Completeness::Incomplete);
    }

    #[test]
    fn pending_input_agrees_with_completeness() {
        for script in [
            "echo hi\n",
            "if true; then\necho a\nfi\n",
            "cat <<EOF\n(((\nEOF\n",
            "echo 'a\nb'\n",
            "echo a |\ncat\n",
            "echo a \\\nb\n",
            "f() {\necho\n}\n",
            "case x in\na) echo;;\nesac\n",
            "echo {\n",
        ] {
            let mut p = PendingInput::default();
            let mut states = Vec::new();
            for line in script.split_inclusive('\n') {
                p.push(line);
                states.push(p.completeness());
            }
            assert_eq!(states.last(), Some(&Completeness::Complete), "{script:?}");
            assert!(
                states[..states.len() - 1]
                    .iter()
                    .all(|s| *s == Completeness::Incomplete),
                "{script:?}: {states:?}"
            );
        }
    }

    #[test]
    fn long_unfinished_input_is_parsed_a_logarithmic_number_of_times() {
        let mut p = PendingInput::default();
        p.push("if true; then\n");
        let mut parses = 0;
        for _ in 0..20_000 {
            p.push("echo line of the body\n");
            let before = p.parsed_at;
            assert_eq!(p.completeness(), Completeness::Incomplete);
            if p.parsed_at != before {
                parses += 1;
            }
        }
        assert!(parses < 250, "{parses} parses");
        p.push("fi\n");
        assert_eq!(p.completeness(), Completeness::Complete);
        // A complete command the scan misjudges (a lone `{`) still runs once the input
        // doubled, or at the end of input.
        let mut p = PendingInput::default();
        p.push(&format!(
            "if true; then\n{}echo {{\nfi\n",
            "echo pad\n".repeat(600)
        ));
        assert_eq!(p.completeness(), Completeness::Complete);
    }

    #[test]
    fn completeness_cases() {
        assert_eq!(completeness("echo hi\n"), Completeness::Complete);
        assert_eq!(completeness("if true; then\n"), Completeness::Incomplete);
        assert_eq!(completeness("echo 'abc\n"), Completeness::Incomplete);
        assert_eq!(completeness("echo a |\n"), Completeness::Incomplete);
        assert_eq!(completeness("echo a &&\n"), Completeness::Incomplete);
        assert_eq!(completeness("echo a \\\n"), Completeness::Incomplete);
        assert_eq!(completeness("cat <<EOF\nabc\n"), Completeness::Incomplete);
        assert_eq!(
            completeness("cat <<EOF\nabc\nEOF\n"),
            Completeness::Complete
        );
        assert_eq!(completeness("fi\n"), Completeness::Invalid);
        assert_eq!(completeness("echo )\n"), Completeness::Invalid);
        assert_eq!(completeness("f() {\n"), Completeness::Incomplete);
    }

    #[test]
    fn dangling_paren_after_a_command_name() {
        assert!(super::dangling_paren("echo ("));
        assert!(super::dangling_paren("true; f (\n"));
        assert!(super::dangling_paren("$(echo ("));
        assert!(!super::dangling_paren("echo a ("));
        assert!(!super::dangling_paren("if ("));
        assert!(!super::dangling_paren("echo ( x"));
        // Characters of several bytes before the word (a fuzzed script once cut one).
        assert!(super::dangling_paren("é;echo ("));
        assert!(!super::dangling_paren("\u{10ffc3} binary\u{10ffc3} ("));
        assert!(!super::dangling_paren("é ("));
    }

    #[test]
    fn syntax_error_words() {
        let e = program("echo a; fi").unwrap_err();
        assert_eq!(e.to_string(), "syntax error near unexpected token `fi'");
        assert_eq!(e.status(), 2);
    }
}

#[cfg(test)]
mod word_tests {
    use super::*;

    #[test]
    fn indirect_transform_of_all_elements_parses() {
        let p = word_pieces("${!m[@]@Q}", false, brush_parser::word::parse);
        let p = p.unwrap();
        assert!(p.is_some(), "{p:?}");
        let dbg = format!("{:?}", p.unwrap());
        assert!(dbg.contains("NamedWithAllIndices"), "{dbg}");
    }
}

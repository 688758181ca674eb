//! A reading of bash source ahead of brush-parser, for the constructs brush-parser reads
//! differently from bash. Where brush-parser misreads a construct, the text is rewritten
//! into an equivalent one it reads right (or the misread piece is carried past it), so the
//! AST the interpreter gets is bash's:
//!
//! - `for ((;;))`: brush's tokenizer reads the `;;` of an arithmetic `for` header as a case
//!   terminator; a blank between the two `;` is inserted (the header means the same).
//! - `$( case x in a) … esac )`: brush's tokenizer ends a command substitution at the `)`
//!   of a case pattern; inside a substitution each pattern is given its optional opening
//!   `(`, which bash reads the same.
//! - `h[three word]=3`: bash reads the subscript of a word that starts with a name and `[`
//!   in assignment position as one piece, blanks included, up to its matching `]` (and
//!   fails on a script that ends before it). The blanks of such a subscript are carried
//!   through brush's tokenizer as private-use characters ([`BLANK_SPACE`],
//!   [`BLANK_TAB`]) and put back in the AST by [`restore_blanks`].
//! - `${x:-a   b}`: brush's tokenizer reads the inside of a `${ }` as tokens joined by one
//!   space. Its unquoted blanks are carried through as the same private-use characters.
//! - `{ …; } {fd}>file`: brush-parser takes only plain redirections after a compound
//!   command; the name moves into the target word behind [`NAMED_FD`].
//! - `f() [[ … ]]`: brush-parser takes no `[[ ]]` for a function's body; it is given one
//!   in braces, as bash prints it.
//! - `$(( 1 #c ))`, `(( x #y ))`: bash reads arithmetic text as it is, brush's tokenizer
//!   takes the `#` for a comment; it is carried through as [`ARITH_HASH`].
//! - `<\⏎<`: bash joins the lines before it reads the operator; the backslash-newlines
//!   move before it, and the here-document it opens is registered.
//! - `coproc NAME while …; done`: brush-parser takes a coprocess name only before a group;
//!   the loop (or `if`) is put in one.
//! - Command substitutions inside words (`"$(cat <<E … ) … E)"`, a comment or case
//!   pattern with a `)`): brush's word parser looks for the closing `)` with a shallow
//!   scan. [`encode_substitutions`] finds each one's end with this reading and hands the
//!   body to the word parser hex-encoded ([`SUBST_MARK`]); [`decode_substitution`] gives it
//!   back when the substitution runs.
//!
//! The scan follows bash's quoting (`'…'`, `"…"`, `$'…'`, backslashes, backquotes),
//! nesting (`$( )`, `$(( ))`, `${ }`, `( )`, `(( ))`, `[[ ]]`, extended globs), comments,
//! here-documents (their bodies are skipped) and case clauses. Line breaks are never added
//! or removed, so line numbers stay right. Texts it cannot make sense of are left as they
//! are: brush-parser then reports them as it would have.

use std::borrow::Cow;

/// Stands for a blank inside a subscript or a `${ }` read by the scan (see the module
/// header).
pub const BLANK_SPACE: char = '\u{F0100}';
/// Stands for a tab inside a subscript or a `${ }` read by the scan.
pub const BLANK_TAB: char = '\u{F0101}';

/// Opens the body of a command substitution that [`encode_substitutions`] hex-encoded.
/// Private-use characters: no script writes them.
pub const SUBST_MARK: &str = "\u{F0102}fbx\u{F0102}";

/// Stands before and after the name of a `{name}>file` redirection after a compound
/// command, at the start of its target word (see [`Rewriter::named_fd`]).
pub const NAMED_FD: char = '\u{F0103}';

/// Stands for a `#` inside arithmetic (`$(( 1 #c ))`, `(( ))`, `$[ ]`) where a comment
/// could start: bash reads arithmetic text as it is (the `#` is an operator error, or, in
/// `$(( ))`, a comment that hides the closing `))` when the substitution runs), while
/// brush's tokenizer would drop the rest of the line as a comment.
pub const ARITH_HASH: char = '\u{F0106}';
/// Stands for the empty word list of `for x in ;` (brush-parser takes `for x in` with no
/// words as `for x`, which goes over `"$@"`); the loop drops it.
pub const EMPTY_IN: &str = "\u{F0105}";

/// A redirection target carrying a `{name}` (see [`NAMED_FD`]): the name and the target
/// as written.
pub fn named_fd_target(target: &str) -> Option<(&str, &str)> {
    let rest = target.strip_prefix(NAMED_FD)?;
    rest.split_once(NAMED_FD)
}

/// The message bash gives for the first malformed `[[ ]]` expression of `text` (empty
/// when bash stops without one), or `None` when all are well formed. bash stops reading
/// the script there, with the status of the last command.
pub fn cond_error(text: &str) -> Option<String> {
    if !text.contains("[[") {
        return None;
    }
    let mut r = Rewriter::new(text);
    r.collect = true;
    r.check_cond = true;
    r.commands(0, End::Eof);
    r.cond_error
}

/// The bodies of the outermost command substitutions (`$( )`) of a program's text,
/// outside here-document bodies and single quotes: bash parses them as it reads the
/// command they are in.
pub fn substitution_bodies(text: &str) -> Vec<(usize, usize)> {
    if !text.contains("$(") {
        return Vec::new();
    }
    let mut r = Rewriter::new(text);
    r.collect = true;
    r.commands(0, End::Eof);
    r.substs
}

/// One token inside `[[ ]]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CondToken<'a> {
    Word(&'a str),
    /// An operator (`(`, `)`, `&&`, `||`, `<`, `>`, `;`, …).
    Op(&'a str),
    /// `]]`.
    End,
}

/// bash's reading of a conditional expression (`cond_expr` in its grammar), for its
/// error messages only: the interpreter evaluates what brush-parser parsed.
mod cond {
    use super::CondToken;

    /// The token a line break inside `[[ ]]` reads as (bash names it so).
    pub(super) const NEWLINE: &str = "newline";

    const UNARY: &[&str] = &[
        "-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t", "-u", "-w",
        "-x", "-G", "-L", "-N", "-O", "-S", "-n", "-z", "-o", "-v", "-R",
    ];
    const BINARY: &[&str] = &[
        "=", "==", "!=", "=~", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef",
    ];

    /// Why reading stopped: bash's message (empty: none), or `None` when the text ended
    /// first (the parser reports that).
    struct Stop(Option<String>);

    fn stop(m: impl Into<String>) -> Stop {
        Stop(Some(m.into()))
    }

    struct Reader<'t, 'a> {
        tokens: &'t [CondToken<'a>],
        at: usize,
        /// The token after the last term read (bash's `cond_token`).
        current: Option<CondToken<'a>>,
    }

    /// The error bash reports for these tokens (ending with [`CondToken::End`] when the
    /// expression was closed), or `None` when they form an expression. Text that ends
    /// before `]]` is left to the parser.
    pub(super) fn check(tokens: &[CondToken<'_>]) -> Option<String> {
        let mut r = Reader {
            tokens,
            at: 0,
            current: None,
        };
        match r.expr() {
            Err(Stop(m)) => m,
            Ok(()) => match r.current {
                Some(CondToken::End) | None => None,
                Some(CondToken::Word(_)) => Some("syntax error in conditional expression".into()),
                Some(CondToken::Op(o)) => Some(format!(
                    "syntax error in conditional expression: unexpected token `{o}'"
                )),
            },
        }
    }

    impl<'a> Reader<'_, 'a> {
        fn next(&mut self) -> Option<CondToken<'a>> {
            let t = self.tokens.get(self.at).copied();
            self.at += 1;
            t
        }

        /// The next token past line breaks: bash takes them where a term starts or
        /// after one ends, not inside one (`[[ a ==⏎ b ]]` is an error).
        fn next_past_newlines(&mut self) -> Option<CondToken<'a>> {
            loop {
                match self.next() {
                    Some(CondToken::Op(NEWLINE)) => {}
                    t => return t,
                }
            }
        }

        fn expr(&mut self) -> Result<(), Stop> {
            self.and()?;
            while self.current == Some(CondToken::Op("||")) {
                self.and()?;
            }
            Ok(())
        }

        fn and(&mut self) -> Result<(), Stop> {
            self.term()?;
            while self.current == Some(CondToken::Op("&&")) {
                self.term()?;
            }
            Ok(())
        }

        fn term(&mut self) -> Result<(), Stop> {
            let name = |t: Option<CondToken<'_>>| match t {
                Some(CondToken::Word(w) | CondToken::Op(w)) => Some(w.to_string()),
                Some(CondToken::End) => Some("]]".to_string()),
                None => None,
            };
            match self.next_past_newlines() {
                // The text ends first: not this reading's to report.
                None => Err(Stop(None)),
                // bash stops here without a message (`[[ ]]`, `[[ a && ]]`).
                Some(CondToken::End) => Err(Stop(Some(String::new()))),
                Some(CondToken::Op("(")) => {
                    self.expr()?;
                    if self.current != Some(CondToken::Op(")")) {
                        return Err(match name(self.current) {
                            Some(t) => stop(format!("unexpected token `{t}', expected `)'")),
                            None => Stop(None),
                        });
                    }
                    self.current = self.next_past_newlines();
                    Ok(())
                }
                Some(CondToken::Word("!")) => self.term(),
                Some(CondToken::Word(w)) if UNARY.contains(&w) => match self.next() {
                    Some(CondToken::Word(_)) => {
                        self.current = self.next_past_newlines();
                        Ok(())
                    }
                    t => Err(match name(t) {
                        Some(t) => stop(format!(
                            "unexpected argument `{t}' to conditional unary operator"
                        )),
                        None => Stop(None),
                    }),
                },
                Some(CondToken::Word(_)) => {
                    let op = self.next();
                    match op {
                        Some(CondToken::Word(o)) if BINARY.contains(&o) => {
                            if o == "=~" {
                                // A regular expression is read by its own rules up to `]]`.
                                while !matches!(self.next(), Some(CondToken::End) | None) {}
                                self.current = Some(CondToken::End);
                                return Ok(());
                            }
                        }
                        Some(CondToken::Op("<" | ">")) => {}
                        Some(CondToken::End | CondToken::Op("&&" | "||" | ")")) => {
                            self.current = op;
                            return Ok(());
                        }
                        Some(CondToken::Word(_)) => {
                            return Err(stop("conditional binary operator expected"));
                        }
                        Some(CondToken::Op(o)) => {
                            return Err(stop(format!(
                                "unexpected token `{o}', conditional binary operator expected"
                            )));
                        }
                        None => return Err(Stop(None)),
                    }
                    match self.next() {
                        Some(CondToken::Word(_)) => {
                            self.current = self.next_past_newlines();
                            Ok(())
                        }
                        t => Err(match name(t) {
                            Some(t) => stop(format!(
                                "unexpected argument `{t}' to conditional binary operator"
                            )),
                            None => Stop(None),
                        }),
                    }
                }
                Some(CondToken::Op(o)) => Err(stop(format!(
                    "unexpected token `{o}' in conditional command"
                ))),
            }
        }
    }
}

/// What the scan found wrong with a text that bash refuses while reading it: a construct
/// the text ends inside of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// bash's wording (`unexpected EOF while looking for matching `)'`).
    pub message: String,
    /// The line bash names (1-based).
    pub line: usize,
    /// The status bash gives: 1 for a compound assignment, 2 otherwise.
    pub status: i32,
    /// What kind of stop it is.
    pub kind: ReadErrorKind,
    /// Where in the text bash stops (a byte offset).
    pub at: usize,
}

/// How bash stops reading a text it refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadErrorKind {
    /// The text ends inside a construct: more lines could complete it.
    Unclosed,
    /// A token bash refuses where it stands (`syntax error near unexpected token `('`):
    /// no more input helps, and bash shows the line it is on.
    Token,
    /// A malformed construct bash reports with its own two lines (an arithmetic `for`
    /// header with the wrong number of clauses): no more input helps.
    Construct,
}

/// `text` rewritten for brush-parser, or `Borrowed` when nothing needed it. An error is
/// bash's message for a text it cannot read (an unclosed subscript).
pub fn for_parser(text: &str) -> Result<Cow<'_, str>, ReadError> {
    if !text.contains([';', '(', '[', '"', '\'', '`', '{', '!', '<', '>'])
        && !text.contains("\\\n")
        && !text.contains("coproc")
    {
        return Ok(Cow::Borrowed(text));
    }
    let mut r = Rewriter::new(text);
    r.markers_ok = !text.contains(MARKERS);
    let end = r.commands(0, End::Eof);
    debug_assert!(end <= text.len());
    if let Some(e) = r.error {
        return Err(e);
    }
    Ok(r.finish())
}

/// How a level of commands ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum End {
    /// The end of the text.
    Eof,
    /// A `)` (a subshell, `$( )`, `<( )`): consumed.
    Paren,
    /// `;;`, `;&` or `;;&` (consumed) or `esac` or a `)` (not consumed): a case item.
    CaseItem,
}

struct Rewriter<'a> {
    text: &'a str,
    s: &'a [u8],
    out: String,
    /// How much of `text` is in `out` (edits are made in order).
    copied: usize,
    edited: bool,
    /// Here-documents whose bodies start at the next line: (delimiter, strip tabs).
    heredocs: Vec<(Vec<u8>, bool)>,
    /// How many `$( )` the scan is inside.
    in_subst: usize,
    /// Whether an arithmetic command (`(( ))`, `for ((`) was seen inside the outermost
    /// `$( )` being scanned.
    arith_in_subst: bool,
    /// Whether subscript blanks may be marked (the text holds no marker of its own).
    markers_ok: bool,
    error: Option<ReadError>,
    /// Command substitutions found (start of body, end of body), outermost only, when
    /// scanning a word for [`encode_substitutions`].
    substs: Vec<(usize, usize)>,
    /// Whether `substs` is being collected.
    collect: bool,
    /// Whether `[[ ]]` expressions are checked (see [`cond_error`]).
    check_cond: bool,
    /// The first error found in a `[[ ]]` expression.
    cond_error: Option<String>,
    /// A `for` header was read and its body has not started yet.
    pending_for: bool,
    /// For each `{` group open, whether it is a `for` body written `{ …; }` (bash takes
    /// that for `do …; done`; brush-parser does not), rewritten as `do … done`.
    braces: Vec<bool>,
    /// How many loops and `if`s are open (their `done` or `fi` not read yet).
    blocks: usize,
    /// Whether the last arithmetic read ended at its `))` (not backed out at a `)`).
    arith_closed: bool,
    /// The loops and `if`s run by a named coprocess (`coproc NAME while …`), by the
    /// value of `blocks` before each opened: brush-parser takes a name only before a
    /// group, so each is wrapped in one (`coproc NAME { while …; done; }`).
    coproc_blocks: Vec<usize>,
    /// How many `;` the last arithmetic `for` header read has at its top level.
    header_semicolons: usize,
    /// The `(` of a `$\⏎(cmd)` (read on as a subshell's): a substitution, not a `(`
    /// bash would refuse.
    joined_subst: Option<usize>,
}

fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// Whether `next` after operator `op` makes a longer operator (`&&`, `>>`, `;;`, `|&`,
/// `&>>`, `;;&` …; not `<<`, whose here-document the scan must see).
fn continues_operator(op: &[u8], next: u8) -> bool {
    match op {
        [prev] => matches!(
            (prev, next),
            (b'&', b'&' | b'>')
                | (b'|', b'|' | b'&')
                | (b'>', b'>' | b'|' | b'&')
                | (b'<', b'&' | b'>')
                | (b';', b';' | b'&')
        ),
        [a, b] => matches!((a, b, next), (b'&', b'>', b'>') | (b';', b';', b'&')),
        _ => false,
    }
}

/// Characters that end an unquoted word.
/// The reserved words brush-parser takes at the start of a command (`time` aside: after
/// an assignment bash runs a program of that name).
fn is_reserved(word: &str) -> bool {
    matches!(
        word,
        "if" | "then"
            | "elif"
            | "else"
            | "fi"
            | "case"
            | "esac"
            | "for"
            | "select"
            | "while"
            | "until"
            | "do"
            | "done"
            | "function"
            | "{"
            | "}"
            | "[["
            | "!"
            | "coproc"
    )
}

fn is_meta(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
    )
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

impl<'a> Rewriter<'a> {
    fn new(text: &'a str) -> Self {
        Rewriter {
            text,
            s: text.as_bytes(),
            out: String::new(),
            copied: 0,
            edited: false,
            heredocs: Vec::new(),
            in_subst: 0,
            arith_in_subst: false,
            markers_ok: false,
            error: None,
            substs: Vec::new(),
            collect: false,
            check_cond: false,
            cond_error: None,
            pending_for: false,
            braces: Vec::new(),
            blocks: 0,
            arith_closed: true,
            coproc_blocks: Vec::new(),
            header_semicolons: 0,
            joined_subst: None,
        }
    }

    fn finish(mut self) -> Cow<'a, str> {
        if !self.edited {
            return Cow::Borrowed(self.text);
        }
        self.out.push_str(&self.text[self.copied..]);
        Cow::Owned(self.out)
    }

    /// Replaces `text[from..to]` with `with` (edits come in order of position).
    fn replace(&mut self, from: usize, to: usize, with: &str) {
        if from < self.copied || self.collect {
            return;
        }
        self.out.push_str(&self.text[self.copied..from]);
        self.out.push_str(with);
        self.copied = to;
        self.edited = true;
    }

    /// Copies the text up to `to` into `out` (no edit by itself).
    fn flush(&mut self, to: usize) {
        if to > self.copied {
            self.out.push_str(&self.text[self.copied..to]);
            self.copied = to;
        }
    }

    /// Replaces the body of a command substitution, from `out[mark..]` (its start, as
    /// rewritten so far) to `text[..end]`, with its hex encoding behind [`SUBST_MARK`].
    /// brush's tokenizer stays in arithmetic mode after a `((` inside `$( )` and then
    /// misses the `<<` of a later here-document; it never sees an encoded body.
    /// [`decode_all`] puts the body back into the word after parsing.
    fn hide_body(&mut self, mark: usize, end: usize) {
        let mut body = self.out.split_off(mark);
        body.push_str(&self.text[self.copied..end]);
        self.out.push_str(SUBST_MARK);
        for byte in body.bytes() {
            self.out.push_str(&format!("{byte:02x}"));
        }
        self.copied = end;
        self.edited = true;
    }

    /// Records that the text ends inside what opened at `at` (`what` closes it); `at` is
    /// `None` when bash names the line the text ends on.
    fn unclosed(&mut self, what: &str, at: Option<usize>, status: i32) {
        if self.error.is_some() || self.collect {
            return;
        }
        let line = match at {
            Some(at) => self.text[..at.min(self.text.len())].matches('\n').count() + 1,
            None => self.text.matches('\n').count() + 2,
        };
        self.error = Some(ReadError {
            message: format!("unexpected EOF while looking for matching `{what}'"),
            line,
            status,
            kind: ReadErrorKind::Unclosed,
            at: self.text.len(),
        });
    }

    /// Records that bash refuses the token at `at` (`token` as bash names it), unless an
    /// earlier stop was found.
    fn refuse(&mut self, at: usize, token: &str) {
        if self.error.is_some() || self.collect {
            return;
        }
        self.error = Some(ReadError {
            message: format!("syntax error near unexpected token `{token}'"),
            line: self.line_of(at),
            status: 2,
            kind: ReadErrorKind::Token,
            at,
        });
    }

    /// The token at `at` as bash names it in a syntax error (`newline` at a line's end).
    fn token_name(&self, at: usize) -> String {
        let s = self.s;
        match s.get(at) {
            None | Some(b'\n') => "newline".to_string(),
            Some(&c) if is_meta(c) => {
                let mut j = at + 1;
                while j < s.len() && j < at + 2 && continues_operator(&s[at..j], s[j]) {
                    j += 1;
                }
                self.text[at..j].to_string()
            }
            Some(_) => {
                let mut j = at;
                while j < s.len() && !is_meta(s[j]) {
                    j += 1;
                }
                self.text[at..j].to_string()
            }
        }
    }

    /// The line (1-based) byte `at` is on.
    fn line_of(&self, at: usize) -> usize {
        self.text[..at.min(self.text.len())].matches('\n').count() + 1
    }

    /// After the opening `'` at `open`: to after the closing one.
    fn single_quoted(&mut self, open: usize) -> usize {
        match find(self.s, open + 1, b'\'') {
            Some(j) => j + 1,
            None => {
                self.unclosed("'", Some(open), 2);
                self.s.len()
            }
        }
    }

    /// The reserved word (or any plain word) at `i`: its text when it is made only of
    /// word characters and ends at a delimiter.
    fn plain_word(&self, i: usize) -> &'a str {
        let mut j = i;
        while j < self.s.len()
            && !is_meta(self.s[j])
            && !matches!(self.s[j], b'\'' | b'"' | b'\\' | b'$' | b'`')
        {
            j += 1;
        }
        if j < self.s.len() && !is_meta(self.s[j]) {
            return "";
        }
        &self.text[i..j]
    }

    /// After `for` at `i`: `NAME in` with no word before the `;` or line break gets
    /// [`EMPTY_IN`] as its list.
    fn empty_in(&mut self, i: usize) {
        let n = self.skip_blanks(i, false);
        let name = self.plain_word(n);
        if name.is_empty() {
            return;
        }
        let k = self.skip_blanks(n + name.len(), false);
        if self.plain_word(k) != "in" {
            return;
        }
        let m = self.skip_blanks(k + 2, false);
        if matches!(self.s.get(m), Some(b';' | b'\n')) {
            self.replace(k + 2, k + 2, &format!(" {EMPTY_IN}"));
        }
    }

    /// Commands from `i` until `end`; returns where the scan goes on.
    fn commands(&mut self, mut i: usize, end: End) -> usize {
        let s = self.s;
        // Whether a command may start here (reserved words and assignments count).
        let mut cmd_start = true;
        // Whether a compound command just ended (only redirections may follow).
        let mut after_compound = false;
        // Whether the last word was an assignment starting a command (`x=1 if …`), or a
        // redirection before its name (`>out if …`): no reserved word follows.
        let mut assigned = false;
        // Whether the last word was a command's name (a function's `()` may follow).
        let mut named = false;
        // Whether the last operator was a pipe (`|`, `|&`), whose command cannot be
        // negated in bash 5.2.
        let mut piped = false;
        while i < s.len() {
            let c = s[i];
            let after_assignment = std::mem::take(&mut assigned);
            let after_name = std::mem::take(&mut named);
            if matches!(c, b' ' | b'\t') {
                assigned = after_assignment;
                named = after_name;
            }
            let after_pipe = piped;
            if !matches!(c, b' ' | b'\t' | b'\n') {
                piped = false;
            }
            if !(matches!(c, b' ' | b'\t' | b'<' | b'>' | b'{') || c.is_ascii_digit()) {
                after_compound = false;
            }
            match c {
                b' ' | b'\t' => i += 1,
                b'\n' => {
                    i += 1;
                    if !self.heredocs.is_empty() {
                        i = self.skip_heredoc_bodies(i);
                    }
                    cmd_start = true;
                }
                b'#' => {
                    let from = i;
                    while i < s.len() && s[i] != b'\n' {
                        i += 1;
                    }
                    // brush's tokenizer reads quotes and parentheses in a comment that
                    // starts a command inside `$( )`; the comment goes (bash drops it too).
                    if self.in_subst > 0
                        && s[from..i]
                            .iter()
                            .any(|b| matches!(b, b'(' | b')' | b'\'' | b'"' | b'`' | b'\\'))
                    {
                        self.replace(from, i, "");
                    }
                }
                b';' => {
                    let joined = self.joined_operator(i);
                    if joined > i + 1 && end == End::CaseItem {
                        // `;\⏎;`: the item's terminator, joined.
                        return joined;
                    }
                    if end == End::CaseItem {
                        if s.get(i + 1) == Some(&b';') {
                            return if s.get(i + 2) == Some(&b'&') {
                                i + 3
                            } else {
                                i + 2
                            };
                        }
                        if s.get(i + 1) == Some(&b'&') {
                            return i + 2;
                        }
                    }
                    i += 1;
                    cmd_start = true;
                }
                b'&' | b'|' => {
                    piped = (c == b'|' && s.get(i + 1) != Some(&b'|') && !s[..i].ends_with(b"|"))
                        || (c == b'&' && s[..i].ends_with(b"|") && !s[..i].ends_with(b"||"));
                    i = self.joined_operator(i);
                    cmd_start = true;
                }
                b')' => {
                    match end {
                        End::Paren => return i + 1,
                        End::CaseItem => return i,
                        End::Eof => i += 1,
                    }
                    cmd_start = false;
                }
                b'(' => {
                    // A `$\⏎(` read on here is a substitution: no refusal.
                    let joined = self.joined_subst.take() == Some(i);
                    if after_assignment && !joined {
                        // `f=x() …`, `x=1 (cmd)`: bash takes no `(` after an assignment.
                        self.refuse(i, "(");
                    }
                    if cmd_start && s.get(i + 1) == Some(&b'(') {
                        self.arith_in_subst |= self.in_subst > 0;
                        let open = i;
                        i = self.arithmetic(i + 2, false);
                        if i >= s.len() && !s.ends_with(b"))") {
                            // An arithmetic command the text ends inside of: bash names
                            // the line it opened on.
                            self.unclosed(")", Some(open), 2);
                        }
                        after_compound = true;
                    } else {
                        // A function's `()`, a subshell, or a misplaced `(`.
                        let mut j = i + 1;
                        while j < s.len() && is_blank(s[j]) {
                            j += 1;
                        }
                        if s.get(j) == Some(&b')') {
                            if !cmd_start && !after_name && !joined {
                                // `echo a ()`: only a command's name takes a `()`.
                                self.refuse(i, "(");
                            }
                            i = j + 1;
                            cmd_start = true;
                            // `f() [[ … ]]`: brush-parser takes no `[[ ]]` for a function's
                            // body; bash reads (and prints) it as `f() { [[ … ]]; }`.
                            let k = self.skip_blanks(i, true);
                            if self.plain_word(k) == "[[" {
                                self.replace(k, k, "{ ");
                                let end = self.test_body(k + 2);
                                if self.text.get(end.saturating_sub(2)..end) == Some("]]") {
                                    self.replace(end, end, "; }");
                                }
                                i = end;
                                cmd_start = false;
                                after_compound = true;
                            }
                            continue;
                        }
                        if !joined && !cmd_start && !after_name {
                            // `echo a (b)`, `{ …; } (x)`: a `(` inside or after a command.
                            self.refuse(i, "(");
                        } else if !joined && after_name {
                            // `echo (b)`: after a command's name bash reads a function
                            // definition, and wants the `)` where `b` is.
                            let token = self.token_name(j);
                            self.refuse(j, &token);
                        }
                        let nested = cmd_start && s.get(j) == Some(&b'(');
                        i = self.commands(i + 1, End::Paren);
                        if nested {
                            self.unarithmetic(i);
                        }
                        after_compound = true;
                    }
                    cmd_start = false;
                }
                b'<' | b'>' => {
                    // Neither a here-document (its word read with it) nor `<(…)` (a word).
                    let heredoc = s[i..].starts_with(b"<<") && !s[i..].starts_with(b"<<<");
                    let plain = s.get(i + 1) != Some(&b'(') && !heredoc;
                    // A redirection before a command's name (`>out if …`): bash reads no
                    // reserved word after it.
                    let prefix = cmd_start && !after_compound && plain;
                    let joined = self.joined_operator(i);
                    i = if joined > i + 1 {
                        joined
                    } else {
                        self.redirection(i)
                    };
                    if prefix {
                        assigned = true;
                    }
                    // `echo a > > b`: an operator where the target word should be (not a
                    // process substitution, `cat < <(cmd)`).
                    let k = self.skip_blanks(i, false);
                    if plain
                        && matches!(s.get(k), Some(b'<' | b'>' | b'&' | b';' | b'|' | b')'))
                        && !(matches!(s[k], b'<' | b'>') && s.get(k + 1) == Some(&b'('))
                    {
                        let token = self.token_name(k);
                        self.refuse(k, &token);
                    }
                    if after_compound || prefix {
                        // The target, so that more redirections may follow.
                        i = self.skip_blanks(i, false);
                        if i < s.len() && !is_meta(s[i]) {
                            i = self.word(i, false).0.max(i + 1);
                        }
                    }
                }
                _ => {
                    if after_compound && let Some(next) = self.named_fd(i) {
                        // The target too, so that more redirections may follow.
                        i = self.word(next, false).0.max(next + 1);
                        continue;
                    }
                    if after_compound || cmd_start {
                        // A descriptor number (`} 2>err`, `2>err cmd`).
                        let mut j = i;
                        while j < s.len() && s[j].is_ascii_digit() {
                            j += 1;
                        }
                        if j > i && matches!(s.get(j), Some(b'<' | b'>')) {
                            i = j;
                            continue;
                        }
                    }
                    after_compound = false;
                    let mut word = if cmd_start { self.plain_word(i) } else { "" };
                    if after_assignment && is_reserved(word) {
                        // After an assignment bash reads no reserved word: `x=1 if true;`
                        // runs a command named `if` (and fails at the `then`). brush-parser
                        // would take it as the keyword; it is quoted.
                        self.replace(i, i, "\\");
                        word = "";
                    }
                    match word {
                        "case" => {
                            i = self.case_clause(i + 4);
                            cmd_start = false;
                            after_compound = i >= 4 && &s[i - 4..i] == b"esac";
                            // `case esac in esac) …`: an `esac` where a pattern starts
                            // closes the case in bash; the `)` after it is misplaced
                            // (brush-parser reads a pattern).
                            let k = self.skip_blanks(i, false);
                            if after_compound && end == End::Eof && s.get(k) == Some(&b')') {
                                self.refuse(k, ")");
                            }
                            continue;
                        }
                        "esac" if end == End::CaseItem => return i,
                        "for" => {
                            let mut j = i + 3;
                            while j < s.len() && is_blank(s[j]) {
                                j += 1;
                            }
                            if s.get(j) == Some(&b'(') && s.get(j + 1) == Some(&b'(') {
                                self.arith_in_subst |= self.in_subst > 0;
                                i = self.arithmetic(j + 2, true);
                                self.for_header(j, i);
                                cmd_start = true;
                            } else {
                                i += 3;
                                cmd_start = false;
                                self.empty_in(i);
                            }
                            self.pending_for = true;
                            self.blocks += 1;
                            continue;
                        }
                        "function" => {
                            let j = self.skip_blanks(i + 8, false);
                            let (k, _) = self.word(j, false);
                            i = k.max(j);
                            cmd_start = true;
                            continue;
                        }
                        "[[" => {
                            i = self.test_body(i + 2);
                            cmd_start = false;
                            after_compound = true;
                            continue;
                        }
                        "}" | "done" | "fi" | "esac" => {
                            let mut closes_block = matches!(word, "done" | "fi");
                            if word == "}" && self.braces.pop() == Some(true) {
                                self.replace(i, i + 1, "done");
                                closes_block = true;
                            }
                            i += word.len();
                            if closes_block {
                                self.blocks = self.blocks.saturating_sub(1);
                                if self.coproc_blocks.last() == Some(&self.blocks) {
                                    self.coproc_blocks.pop();
                                    self.replace(i, i, "; }");
                                }
                            }
                            cmd_start = false;
                            after_compound = true;
                            continue;
                        }
                        "{" => {
                            let body = std::mem::take(&mut self.pending_for);
                            if body {
                                self.replace(i, i + 1, "do");
                            }
                            self.braces.push(body);
                            i += 1;
                            cmd_start = true;
                            continue;
                        }
                        "do" => {
                            self.pending_for = false;
                            i += 2;
                            cmd_start = true;
                            continue;
                        }
                        "coproc" => {
                            let k = self.skip_blanks(i + word.len(), false);
                            if matches!(s.get(k), None | Some(b'\n' | b';' | b'&' | b'|' | b')')) {
                                // `coproc` with no command.
                                let token = self.token_name(k);
                                self.refuse(k, &token);
                            }
                            i = self.coproc(i + word.len());
                            cmd_start = true;
                            // A name may come, then the command: `coproc NAME (…)`.
                            let k = self.skip_blanks(i, false);
                            let name = self.plain_word(k);
                            if !name.is_empty() && !is_reserved(name) {
                                let after = self.skip_blanks(k + name.len(), false);
                                if s.get(after) == Some(&b'(') {
                                    i = after;
                                }
                            }
                            continue;
                        }
                        "!" => {
                            if after_pipe {
                                self.refuse(i, "!");
                            }
                            i = self.bang(i);
                            cmd_start = true;
                            continue;
                        }
                        "if" | "then" | "elif" | "else" | "while" | "until" | "time" => {
                            if matches!(word, "if" | "while" | "until") {
                                self.blocks += 1;
                            }
                            i += word.len();
                            if word == "time" {
                                // `time -p (…)`: the option is no command's name.
                                let k = self.skip_blanks(i, false);
                                if self.plain_word(k) == "-p" {
                                    i = k + 2;
                                }
                            }
                            cmd_start = true;
                            continue;
                        }
                        _ => {}
                    }
                    let (j, assignment) = self.word(i, cmd_start);
                    i = j.max(i + 1);
                    assigned = cmd_start && assignment;
                    named = cmd_start && !assignment;
                    cmd_start = cmd_start && assignment;
                }
            }
        }
        i.min(s.len())
    }

    /// At a `!` that starts a pipeline: where the scan goes on.
    ///
    /// - `!(cmd)`: brush-parser reads an extended glob; bash (with `extglob` off, as
    ///   scripts run) a negated subshell. A blank goes between them.
    /// - `! time [-p] cmd`: brush-parser takes `time` only at the start of a pipeline;
    ///   `time [-p] ! cmd` times the same command and gives the same status.
    fn bang(&mut self, i: usize) -> usize {
        let s = self.s;
        if s.get(i + 1) == Some(&b'(') {
            self.replace(i + 1, i + 1, " ");
            return i + 1;
        }
        let k = self.skip_blanks(i + 1, false);
        if self.plain_word(k) != "time" {
            return i + 1;
        }
        let mut m = self.skip_blanks(k + 4, false);
        if self.plain_word(m) == "-p" {
            m = self.skip_blanks(m + 2, false);
        }
        if m >= s.len() || is_meta(s[m]) || self.collect {
            return i + 1;
        }
        self.replace(i, i + 1, " ");
        self.replace(m, m, "! ");
        m
    }

    /// After an arithmetic `for` header from `open` (its `((`) to `end` (after its `))`):
    /// bash wants three clauses, and refuses another number once it reads on past the
    /// header (at the end of the text it only finds the text ended).
    fn for_header(&mut self, open: usize, end: usize) {
        let s = self.s;
        let clauses = self.header_semicolons + 1;
        if clauses == 3 || self.error.is_some() || self.collect || !s[..end].ends_with(b"))") {
            return;
        }
        let mut k = end;
        while k < s.len() && s[k].is_ascii_whitespace() {
            k += 1;
        }
        if k >= s.len() {
            // bash wants the body before it looks at the clauses.
            self.error = Some(ReadError {
                message: "syntax error: unexpected end of file".to_string(),
                line: self.text.matches('\n').count() + 2,
                status: 2,
                kind: ReadErrorKind::Unclosed,
                at: s.len(),
            });
            return;
        }
        let what = if clauses < 3 {
            "arithmetic expression required"
        } else {
            "`;' unexpected"
        };
        self.error = Some(ReadError {
            message: format!(
                "syntax error: {what}\nsyntax error: `{}'",
                &self.text[open..end]
            ),
            line: self.line_of(open),
            status: 2,
            kind: ReadErrorKind::Construct,
            at: open,
        });
    }

    /// At a `#` inside arithmetic: marked as [`ARITH_HASH`] where brush's tokenizer
    /// would start a comment.
    fn arith_hash(&mut self, i: usize) {
        if self.markers_ok && i > 0 && is_meta(self.s[i - 1]) {
            self.replace(i, i + 1, ARITH_HASH.encode_utf8(&mut [0; 4]));
        }
    }

    /// After `coproc`: where the scan goes on. A name before a loop or an `if`
    /// (`coproc W while …; done`) names the coprocess in bash; the loop is put in a group
    /// (closed after its `done` or `fi`), where brush-parser takes a name.
    fn coproc(&mut self, i: usize) -> usize {
        let j = self.skip_blanks(i, false);
        let name = self.plain_word(j);
        let k = self.skip_blanks(j + name.len(), false);
        let named = name.bytes().next().is_some_and(is_name_start)
            && name.bytes().all(is_name_char)
            && k > j + name.len();
        if named && matches!(self.plain_word(k), "while" | "until" | "for" | "if") {
            self.replace(k, k, "{ ");
            self.coproc_blocks.push(self.blocks);
            return k;
        }
        i
    }

    /// After a subshell that opens with another one, `( (cmd) )`, ending at `end` (after
    /// its `)`): bash reads `((` as arithmetic only when the two are adjacent, but
    /// brush-parser's arithmetic command matches the two tokens whatever is between them.
    /// A `;` before the closing `)` (`( (cmd) ;)`, the same commands) ends any arithmetic
    /// reading of it.
    fn unarithmetic(&mut self, end: usize) {
        let s = self.s;
        if end == 0 || s.get(end - 1) != Some(&b')') {
            return;
        }
        let close = end - 1;
        let mut k = close;
        while k > 0 && is_blank(s[k - 1]) {
            k -= 1;
        }
        if k == 0 || matches!(s[k - 1], b';' | b'&' | b'\n') {
            return;
        }
        self.replace(close, close, ";");
    }

    /// At a word after a compound command: when it is `{name}` followed by a redirection
    /// operator (`{ …; } {fd}>file`), rewrites it for brush-parser, which takes only plain
    /// redirections there: `{name}` goes and the target word gets [`NAMED_FD`], the name
    /// and [`NAMED_FD`] in front ([`named_fd_target`] reads it back). Returns where the
    /// scan goes on (at the target word).
    fn named_fd(&mut self, i: usize) -> Option<usize> {
        let s = self.s;
        if s[i] != b'{' || !s.get(i + 1).copied().is_some_and(is_name_start) {
            return None;
        }
        let mut j = i + 1;
        while j < s.len() && is_name_char(s[j]) {
            j += 1;
        }
        if s.get(j) != Some(&b'}') || !matches!(s.get(j + 1), Some(b'<' | b'>')) {
            return None;
        }
        let op = j + 1;
        if s[op..].starts_with(b"<<") || s[op..].starts_with(b"<(") || s[op..].starts_with(b">(") {
            return None;
        }
        let mut t = op + 1;
        while t < s.len() && matches!(s[t], b'<' | b'>' | b'&' | b'|') && t < op + 2 {
            t += 1;
        }
        while t < s.len() && is_blank(s[t]) {
            t += 1;
        }
        if t >= s.len() || is_meta(s[t]) || self.collect {
            return None;
        }
        let name = &self.text[i + 1..j];
        self.replace(i, op, "");
        self.replace(t, t, &format!("{NAMED_FD}{name}{NAMED_FD}"));
        Some(t)
    }

    /// At the operator character at `i`: to after it, or after the characters that
    /// continue it past backslash-newlines (`&\⏎&`, `&\⏎>>`, `;\⏎;`). bash joins such
    /// lines before it reads operators; brush's tokenizer ends the operator at the
    /// backslash, so the backslash-newlines move after the whole operator (the lines stay).
    /// `<\⏎<` is left to [`Rewriter::redirection`] (a here-document the scan must see).
    fn joined_operator(&mut self, i: usize) -> usize {
        let s = self.s;
        let (mut j, mut op, mut breaks) = (i + 1, vec![s[i]], 0);
        loop {
            if s.get(j..j + 2) == Some(b"\\\n".as_slice())
                && s.get(j + 2).is_some_and(|&n| continues_operator(&op, n))
            {
                breaks += 1;
                j += 2;
            } else if breaks > 0 && s.get(j).is_some_and(|&n| continues_operator(&op, n)) {
                op.push(s[j]);
                j += 1;
            } else {
                break;
            }
        }
        if breaks == 0 {
            return i + 1;
        }
        let mut joined = String::from_utf8_lossy(&op).into_owned();
        joined.push_str(&"\\\n".repeat(breaks));
        self.replace(i, j, &joined);
        j
    }

    /// At a `<` or `>`: the operator (and a here-document's delimiter, or a process
    /// substitution); returns where the scan goes on.
    fn redirection(&mut self, i: usize) -> usize {
        let s = self.s;
        if s.get(i + 1) == Some(&b'(') {
            return self.commands(i + 2, End::Paren);
        }
        // `<\⏎<`, `<<\⏎<`: bash joins the lines before it reads the operator. The
        // backslash-newlines move before it, where they join nothing.
        let (mut op_end, mut lts, mut breaks) = (i + 1, 1, 0);
        while s[i] == b'<' && lts < 3 {
            let mut m = op_end;
            while s.get(m..m + 2) == Some(b"\\\n".as_slice()) {
                m += 2;
            }
            if s.get(m) != Some(&b'<') {
                break;
            }
            breaks += (m - op_end) / 2;
            lts += 1;
            op_end = m + 1;
        }
        if breaks > 0 {
            let joined = format!("{}{}", "\\\n".repeat(breaks), "<".repeat(lts));
            self.replace(i, op_end, &joined);
        }
        if lts == 3 {
            return op_end;
        }
        if lts == 2 {
            let mut j = op_end;
            let strip = s.get(j) == Some(&b'-');
            if strip {
                j += 1;
            }
            while j < s.len() && is_blank(s[j]) {
                j += 1;
            }
            let word_start = j;
            let mut delim = Vec::new();
            let mut quoted = false;
            while j < s.len() && !is_meta(s[j]) {
                match s[j] {
                    b'\'' => {
                        quoted = true;
                        let close = find(s, j + 1, b'\'').unwrap_or(s.len());
                        delim.extend_from_slice(&s[j + 1..close]);
                        j = close + 1;
                    }
                    b'"' => {
                        quoted = true;
                        j += 1;
                        while j < s.len() && s[j] != b'"' {
                            if s[j] == b'\\'
                                && matches!(s.get(j + 1), Some(b'"' | b'\\' | b'$' | b'`'))
                            {
                                j += 1;
                            }
                            delim.push(s[j]);
                            j += 1;
                        }
                        j += 1;
                    }
                    b'\\' => {
                        quoted = true;
                        if let Some(&n) = s.get(j + 1) {
                            delim.push(n);
                        }
                        j += 2;
                    }
                    c => {
                        delim.push(c);
                        j += 1;
                    }
                }
            }
            let j = j.min(s.len());
            if j == word_start {
                // `cat <<` with no word: bash names what stands there.
                let token = self.token_name(j);
                self.refuse(j, &token);
            }
            // brush-parser unquotes a delimiter by dropping every quote and backslash, so
            // `'E"O'` would end at a line `EO`. The same delimiter written with each
            // character escaped reads the same in bash and unquotes right in brush.
            if quoted && delim.iter().any(|c| matches!(c, b'\'' | b'"' | b'\\')) {
                let mut escaped = String::with_capacity(2 * delim.len());
                for ch in String::from_utf8_lossy(&delim).chars() {
                    escaped.push('\\');
                    escaped.push(ch);
                }
                self.replace(word_start, j, &escaped);
            }
            if !delim.is_empty() {
                self.heredocs.push((delim, strip));
            }
            return j;
        }
        let mut j = i + 1;
        while j < s.len() && matches!(s[j], b'<' | b'>' | b'&' | b'|') && j < i + 3 {
            j += 1;
        }
        j
    }

    /// At the start of a line after here-document operators: skips their bodies.
    fn skip_heredoc_bodies(&mut self, mut i: usize) -> usize {
        let s = self.s;
        let pending = std::mem::take(&mut self.heredocs);
        for (delim, strip) in pending {
            while i < s.len() {
                let end = find(s, i, b'\n').unwrap_or(s.len());
                let mut line = &s[i..end];
                if strip {
                    while let [b'\t', rest @ ..] = line {
                        line = rest;
                    }
                }
                i = (end + 1).min(s.len());
                if line == delim.as_slice() {
                    break;
                }
            }
        }
        i
    }

    /// After `case`: the word, `in`, and the items up to `esac`.
    fn case_clause(&mut self, mut i: usize) -> usize {
        let s = self.s;
        i = self.skip_blanks(i, false);
        let (j, _) = self.word(i, false);
        i = self.skip_blanks(j, true);
        if self.plain_word(i) != "in" {
            return i;
        }
        i += 2;
        loop {
            i = self.skip_blanks(i, true);
            if i >= s.len() {
                return i;
            }
            if self.plain_word(i) == "esac" {
                return i + 4;
            }
            if s[i] == b')' {
                // Not a pattern: the substitution or subshell around the case ends here.
                return i;
            }
            // The pattern list, with its optional `(`.
            if s[i] == b'(' {
                i += 1;
            } else if self.in_subst > 0 {
                self.replace(i, i, "(");
            }
            loop {
                i = self.skip_blanks(i, false);
                match s.get(i) {
                    None => return i,
                    Some(b')') => {
                        i += 1;
                        break;
                    }
                    Some(b'|') => i += 1,
                    Some(b'\n' | b';' | b'&' | b'<' | b'>' | b'(') => return i,
                    Some(_) => {
                        let (j, _) = self.word(i, false);
                        if j == i {
                            return i;
                        }
                        i = j;
                    }
                }
            }
            i = self.commands(i, End::CaseItem);
            if s.get(i) == Some(&b')') {
                return i;
            }
        }
    }

    /// Skips blanks (and newlines with the here-document bodies after them, and comments,
    /// when `lines`).
    fn skip_blanks(&mut self, mut i: usize, lines: bool) -> usize {
        let s = self.s;
        while i < s.len() {
            match s[i] {
                b' ' | b'\t' => i += 1,
                b'\\' if s.get(i + 1) == Some(&b'\n') => i += 2,
                b'\n' if lines => {
                    i += 1;
                    if !self.heredocs.is_empty() {
                        i = self.skip_heredoc_bodies(i);
                    }
                }
                b'#' if lines => {
                    while i < s.len() && s[i] != b'\n' {
                        i += 1;
                    }
                }
                _ => break,
            }
        }
        i
    }

    /// After `[[`: its words up to `]]` (`(`, `)`, `<`, `>`, `&&`, `||` are its own).
    fn test_body(&mut self, mut i: usize) -> usize {
        let s = self.s;
        let mut tokens: Vec<CondToken<'a>> = Vec::new();
        let check = self.check_cond && self.cond_error.is_none();
        while i < s.len() {
            let from = i;
            i = self.skip_blanks(i, true);
            if check && s[from..i.min(s.len())].contains(&b'\n') {
                tokens.push(CondToken::Op(cond::NEWLINE));
            }
            if i >= s.len() {
                break;
            }
            if self.plain_word(i) == "]]" {
                if check {
                    tokens.push(CondToken::End);
                    self.cond_error = cond::check(&tokens);
                }
                return i + 2;
            }
            if is_meta(s[i]) {
                let two = s.get(i..i + 2).unwrap_or(&[]);
                let len = if matches!(two, b"&&" | b"||" | b";;") {
                    2
                } else {
                    1
                };
                if check {
                    tokens.push(CondToken::Op(&self.text[i..i + len]));
                }
                i += len;
                continue;
            }
            let (j, _) = self.word(i, false);
            if check {
                tokens.push(CondToken::Word(&self.text[i..j.min(s.len())]));
            }
            i = j.max(i + 1);
        }
        if check {
            self.cond_error = cond::check(&tokens);
        }
        i
    }

    /// One word from `i` (which is not a metacharacter); returns its end and whether it
    /// is an assignment. In assignment position (`assign`), a subscript after a leading
    /// name is read to its matching `]`, blanks included.
    fn word(&mut self, mut i: usize, assign: bool) -> (usize, bool) {
        let s = self.s;
        let start = i;
        let mut assignment = false;
        let name_end = {
            let mut j = i;
            if j < s.len() && is_name_start(s[j]) {
                while j < s.len() && is_name_char(s[j]) {
                    j += 1;
                }
            }
            j
        };
        // A compound value (`a=(…)`) is read as one, in assignment position or as the
        // argument of a declaration builtin (`declare -A h=([k]=v)`).
        if name_end > start {
            i = name_end;
            if assign && s.get(i) == Some(&b'[') {
                i = self.subscript(i + 1);
                if i > s.len() {
                    return (s.len(), false);
                }
            }
            if s.get(i) == Some(&b'+') && s.get(i + 1) == Some(&b'=') {
                i += 1;
            }
            if s.get(i) == Some(&b'=') {
                assignment = assign;
                i += 1;
                if s.get(i) == Some(&b'(') {
                    return (self.compound_value(i + 1), assign);
                }
            }
        }
        while i < s.len() {
            let c = s[i];
            match c {
                b'\\' => i += 2,
                b'\'' => i = self.single_quoted(i),
                b'"' => i = self.double_quoted(i + 1),
                b'`' => i = self.backquoted(i + 1),
                b'$' => i = self.dollar(i),
                b'(' if i > start && matches!(s[i - 1], b'@' | b'!' | b'?' | b'+' | b'*') => {
                    i = self.pattern_group(i + 1);
                }
                c if is_meta(c) => break,
                _ => i += 1,
            }
        }
        (i.min(s.len()), assignment)
    }

    /// After the `[` of a subscript in assignment position: to after its matching `]`,
    /// with its blanks marked. Past the end of the text when there is no `]` (an error).
    fn subscript(&mut self, mut i: usize) -> usize {
        let s = self.s;
        let open = i - 1;
        let mut depth = 1;
        let mut blanks = Vec::new();
        while i < s.len() {
            match s[i] {
                b'\\' => i += 2,
                b'\'' => i = self.single_quoted(i),
                b'"' => i = self.double_quoted(i + 1),
                b'`' => i = self.backquoted(i + 1),
                b'$' => i = self.dollar(i),
                b'[' => {
                    depth += 1;
                    i += 1;
                }
                b']' => {
                    depth -= 1;
                    i += 1;
                    if depth == 0 {
                        if self.markers_ok {
                            for (at, c) in blanks {
                                let m = if c == b'\t' { BLANK_TAB } else { BLANK_SPACE };
                                self.replace(at, at + 1, m.encode_utf8(&mut [0; 4]));
                            }
                        }
                        return i;
                    }
                }
                c @ (b' ' | b'\t') => {
                    blanks.push((i, c));
                    i += 1;
                }
                _ => i += 1,
            }
        }
        self.unclosed("]", Some(open), 2);
        s.len() + 1
    }

    /// After `name=(`: the elements of a compound value up to `)`.
    fn compound_value(&mut self, mut i: usize) -> usize {
        let s = self.s;
        let open = i - 1;
        while i < s.len() {
            i = self.skip_blanks(i, true);
            match s.get(i) {
                None => break,
                Some(b')') => return i + 1,
                Some(b'[') => {
                    i = self.subscript(i + 1);
                    if i > s.len() {
                        return s.len();
                    }
                    let (j, _) = self.word(i, false);
                    i = j;
                }
                Some(c) if is_meta(*c) => i += 1,
                Some(_) => {
                    let (j, _) = self.word(i, false);
                    i = j.max(i + 1);
                }
            }
        }
        self.unclosed(")", Some(open), 1);
        s.len()
    }

    /// After the `(` of an extended glob: to after its matching `)`.
    fn pattern_group(&mut self, i: usize) -> usize {
        self.balanced(i, b'(', b')').unwrap_or(self.s.len())
    }

    /// From just inside an `open`…`close` pair, stepping over quotes and expansions: the
    /// index after its matching `close`, or `None` when the text ends first.
    fn balanced(&mut self, mut i: usize, open: u8, close: u8) -> Option<usize> {
        let s = self.s;
        let mut depth = 1;
        while i < s.len() {
            match s[i] {
                b'\\' => i += 2,
                b'\'' => i = self.single_quoted(i),
                b'"' => i = self.double_quoted(i + 1),
                b'`' => i = self.backquoted(i + 1),
                b'$' => i = self.dollar(i),
                c if c == open => {
                    depth += 1;
                    i += 1;
                }
                c if c == close => {
                    depth -= 1;
                    i += 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => i += 1,
            }
        }
        None
    }

    /// After an opening `"`: to after the closing one.
    fn double_quoted(&mut self, mut i: usize) -> usize {
        let s = self.s;
        let open = i - 1;
        while i < s.len() {
            match s[i] {
                b'\\' => i += 2,
                b'"' => return i + 1,
                b'`' => i = self.backquoted(i + 1),
                b'$' => i = self.dollar(i),
                _ => i += 1,
            }
        }
        self.unclosed("\"", Some(open), 2);
        s.len()
    }

    /// After an opening backquote: to after the closing one.
    fn backquoted(&mut self, mut i: usize) -> usize {
        let s = self.s;
        let open = i - 1;
        while i < s.len() {
            match s[i] {
                b'\\' => i += 2,
                b'`' => return i + 1,
                _ => i += 1,
            }
        }
        self.unclosed("`", Some(open), 2);
        s.len()
    }

    /// At a `$`: the expansion it opens; returns where the scan goes on.
    fn dollar(&mut self, i: usize) -> usize {
        let s = self.s;
        // `$\⏎(cmd)`: bash joins the lines before it reads the `$(`; brush's tokenizer
        // ends the `$` at the backslash. The backslash-newline moves after the `(` (not
        // before a second one: `$((` would turn arithmetic), and the scan goes on at the
        // `(` as at a subshell's.
        if s.get(i + 1..i + 3) == Some(b"\\\n".as_slice())
            && s.get(i + 3) == Some(&b'(')
            && s.get(i + 4) != Some(&b'(')
        {
            self.replace(i + 1, i + 4, "(\\\n");
            self.joined_subst = Some(i + 3);
            return i + 3;
        }
        match s.get(i + 1) {
            Some(b'(') if s.get(i + 2) == Some(&b'(') => {
                self.arith_closed = true;
                let end = self.arithmetic(i + 3, false);
                if (end >= s.len() && !s.ends_with(b"))"))
                    || (!self.arith_closed && !self.pair_closes(i + 1))
                {
                    self.unclosed(")", Some(i), 2);
                }
                end
            }
            Some(b'(') => {
                let body = i + 2;
                let was = self.collect;
                if self.collect {
                    // Only the outermost substitutions are recorded.
                    self.collect = false;
                }
                let outermost = self.in_subst == 0 && !was;
                let mark = if outermost {
                    self.flush(body);
                    self.arith_in_subst = false;
                    Some(self.out.len())
                } else {
                    None
                };
                self.in_subst += 1;
                let end = self.commands(body, End::Paren);
                self.in_subst -= 1;
                if end >= s.len() && !(end > body && s.get(end - 1) == Some(&b')')) {
                    self.unclosed(")", None, 2);
                }
                if let Some(mark) = mark
                    && self.arith_in_subst
                    && end <= s.len()
                    && end > body
                    && s[end - 1] == b')'
                    && self.copied < end
                    && self.text[end..].contains("<<")
                {
                    self.hide_body(mark, end - 1);
                }
                self.collect = was;
                if self.collect && end <= s.len() && end > body && s[end - 1] == b')' {
                    self.substs.push((body, end - 1));
                }
                end
            }
            Some(b'[') => {
                let mut j = i + 2;
                let mut depth = 1;
                while j < s.len() {
                    match s[j] {
                        b'[' => depth += 1,
                        b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return j + 1;
                            }
                        }
                        b'$' => {
                            j = self.dollar(j);
                            continue;
                        }
                        b'#' => self.arith_hash(j),
                        _ => {}
                    }
                    j += 1;
                }
                // `$[ 1 +` and the text's end: bash names the line it opened on.
                self.unclosed("]", Some(i), 2);
                s.len()
            }
            Some(b'{') => self.parameter(i + 2),
            Some(b'\'') => {
                // `$'…'`: backslash escapes, up to the closing quote.
                let mut j = i + 2;
                while j < s.len() {
                    match s[j] {
                        // A backslash-newline stays in the string (brush's tokenizer would
                        // join the lines): an escaped backslash before the same newline.
                        b'\\' if s.get(j + 1) == Some(&b'\n') => {
                            self.replace(j, j + 1, "\\\\");
                            j += 2;
                        }
                        b'\\' => j += 2,
                        b'\'' => return j + 1,
                        _ => j += 1,
                    }
                }
                s.len()
            }
            _ => i + 1,
        }
    }

    /// Whether the `(` at `open` has a matching `)` as bash looks for one after `$((`:
    /// counting parentheses outside quotes, with no reading of commands or comments. A
    /// `$((` whose first `)` closes a nested group (`$(( (1 + 2 )); …`) is read on to
    /// the `)` that matches its `$(`, and the text may end first.
    fn pair_closes(&self, open: usize) -> bool {
        let s = self.s;
        let mut depth = 0usize;
        let mut i = open;
        while i < s.len() {
            match s[i] {
                b'\\' => i += 1,
                b'\'' => match find(s, i + 1, b'\'') {
                    Some(j) => i = j,
                    None => return false,
                },
                b'"' => {
                    i += 1;
                    while i < s.len() && s[i] != b'"' {
                        i += if s[i] == b'\\' { 2 } else { 1 };
                    }
                }
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        return true;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        false
    }

    /// After `${`: to after its matching `}`. Its unquoted blanks are marked (see
    /// [`BLANK_SPACE`]): brush's tokenizer reads the inside of `${ }` as tokens and joins
    /// them with one space, so `${x:-a   b}` would lose two blanks and a tab would become a
    /// space.
    fn parameter(&mut self, mut i: usize) -> usize {
        let s = self.s;
        let open = i - 2;
        let mut depth = 1;
        while i < s.len() {
            match s[i] {
                b'\\' => i += 2,
                b'\'' => i = self.single_quoted(i),
                b'"' => i = self.double_quoted(i + 1),
                b'`' => i = self.backquoted(i + 1),
                b'$' => i = self.dollar(i),
                b'{' => {
                    depth += 1;
                    i += 1;
                }
                b'}' => {
                    depth -= 1;
                    i += 1;
                    if depth == 0 {
                        return i;
                    }
                }
                c @ (b' ' | b'\t') => {
                    if self.markers_ok {
                        let m = if c == b'\t' { BLANK_TAB } else { BLANK_SPACE };
                        self.replace(i, i + 1, m.encode_utf8(&mut [0; 4]));
                    }
                    i += 1;
                }
                _ => i += 1,
            }
        }
        self.unclosed("}", Some(open), 2);
        s.len()
    }

    /// After `((` (or `$((`): to after the matching `))`. In the header of an arithmetic
    /// `for` (`for_header`), a blank goes between two `;` that follow each other.
    fn arithmetic(&mut self, mut i: usize, for_header: bool) -> usize {
        let s = self.s;
        let mut depth = 0usize;
        self.header_semicolons = 0;
        while i < s.len() {
            match s[i] {
                b'\\' => i += 2,
                b'\'' => i = self.single_quoted(i),
                b'"' => i = self.double_quoted(i + 1),
                b'`' => i = self.backquoted(i + 1),
                b'$' => i = self.dollar(i),
                b'(' => {
                    depth += 1;
                    i += 1;
                }
                b')' => {
                    if depth == 0 {
                        if s.get(i + 1) == Some(&b')') {
                            self.arith_closed = true;
                            return i + 2;
                        }
                        // `$( (…) )` read as arithmetic first: bash backs out; so does this.
                        self.arith_closed = false;
                        return i + 1;
                    }
                    depth -= 1;
                    i += 1;
                }
                b';' if for_header && depth == 0 => {
                    self.header_semicolons += 1;
                    if s.get(i + 1) == Some(&b';') {
                        self.replace(i + 1, i + 1, " ");
                    }
                    i += 1;
                }
                b'#' => {
                    self.arith_hash(i);
                    i += 1;
                }
                _ => i += 1,
            }
        }
        i.min(s.len())
    }
}

fn find(s: &[u8], from: usize, byte: u8) -> Option<usize> {
    s.get(from..)?
        .iter()
        .position(|&c| c == byte)
        .map(|p| p + from)
}

/// Puts back the blanks [`for_parser`] marked in a subscript or a `${ }`, and the `#`
/// it marked in arithmetic.
pub fn restore_blanks(text: &mut String) {
    if text.contains(MARKERS) {
        *text = text
            .replace(BLANK_SPACE, " ")
            .replace(BLANK_TAB, "\t")
            .replace(ARITH_HASH, "#");
    }
}

/// The markers [`restore_blanks`] puts back.
pub const MARKERS: [char; 3] = [BLANK_SPACE, BLANK_TAB, ARITH_HASH];

/// One command substitution of a word whose body was encoded: where it is in the encoded
/// text and how much longer the encoding made it.
#[derive(Debug, Clone, Copy)]
pub struct Shift {
    /// Index in the encoded text just past the encoded body.
    pub end: usize,
    /// Bytes the encoding added (may be negative).
    pub added: isize,
}

/// A word (or here-document body, `heredoc`) with the body of each outermost `$( )`
/// hex-encoded behind [`SUBST_MARK`], so brush's word parser needs no reading of their
/// insides; `None` when it has none to encode.
pub fn encode_substitutions(text: &str, heredoc: bool) -> Option<(String, Vec<Shift>)> {
    if !text.contains("$(") {
        return None;
    }
    let mut r = Rewriter::new(text);
    r.collect = true;
    let s = text.as_bytes();
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'\'' if !heredoc => i = find(s, i + 1, b'\'').map_or(s.len(), |j| j + 1),
            b'"' if !heredoc => i = r.double_quoted(i + 1),
            b'`' => i = r.backquoted(i + 1),
            b'$' => i = r.dollar(i),
            _ => i += 1,
        }
    }
    let mut found: Vec<(usize, usize)> = std::mem::take(&mut r.substs);
    found.retain(|&(a, b)| {
        let body = &text[a..b];
        !(body.starts_with(SUBST_MARK) && is_hex(&body[SUBST_MARK.len()..]))
    });
    if found.is_empty() {
        return None;
    }
    found.sort_unstable();
    let mut out = String::with_capacity(text.len() * 2);
    let mut shifts = Vec::with_capacity(found.len());
    let mut copied = 0;
    for (a, b) in found {
        if a < copied {
            continue;
        }
        out.push_str(&text[copied..a]);
        out.push_str(SUBST_MARK);
        for byte in text[a..b].bytes() {
            out.push_str(&format!("{byte:02x}"));
        }
        copied = b;
        let added = (SUBST_MARK.len() + 2 * (b - a)) as isize - (b - a) as isize;
        shifts.push(Shift {
            end: out.len(),
            added,
        });
    }
    out.push_str(&text[copied..]);
    Some((out, shifts))
}

fn is_hex(s: &str) -> bool {
    s.len().is_multiple_of(2) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The body of a command substitution as written: decoded when [`encode_substitutions`]
/// encoded it.
pub fn decode_substitution(body: &str) -> Cow<'_, str> {
    let Some(hex) = body.strip_prefix(SUBST_MARK).filter(|h| is_hex(h)) else {
        return Cow::Borrowed(body);
    };
    let bytes: Vec<u8> = hex
        .as_bytes()
        .chunks(2)
        .filter_map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
        })
        .collect();
    match String::from_utf8(bytes) {
        Ok(s) => Cow::Owned(s),
        Err(_) => Cow::Borrowed(body),
    }
}

/// Puts back in `text` (a word of the parsed program) the bodies of command
/// substitutions that [`for_parser`] hid from the tokenizer.
pub fn decode_all(text: &mut String) {
    let open = format!("$({SUBST_MARK}");
    if !text.contains(&open) {
        return;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest: &str = text;
    while let Some(at) = rest.find(&open) {
        let hex_start = at + open.len();
        let hex_len = rest[hex_start..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        let encoded = &rest[at + 2..hex_start + hex_len];
        let decoded = decode_substitution(encoded);
        out.push_str(&rest[..at + 2]);
        out.push_str(&decoded);
        rest = &rest[hex_start + hex_len..];
    }
    out.push_str(rest);
    *text = out;
}

/// Maps an index of the encoded text back to the text as written.
pub fn original_index(shifts: &[Shift], index: usize) -> usize {
    let mut delta: isize = 0;
    for s in shifts {
        if s.end <= index {
            delta += s.added;
        }
    }
    (index as isize - delta).max(0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(text: &str) -> String {
        for_parser(text).unwrap().into_owned()
    }

    #[test]
    fn arithmetic_for_headers_get_a_blank_between_semicolons() {
        assert_eq!(
            rw("for ((;;)); do break; done"),
            "for ((; ;)); do break; done"
        );
        assert_eq!(
            rw("for ((i=0;;i++)); do :; done"),
            "for ((i=0; ;i++)); do :; done"
        );
        assert_eq!(rw("echo ';;' \"((;;))\""), "echo ';;' \"((;;))\"");
        assert_eq!(
            rw("case x in a) for ((;;)); do break; done;; esac"),
            "case x in a) for ((; ;)); do break; done;; esac"
        );
    }

    #[test]
    fn case_patterns_in_substitutions_get_their_paren() {
        assert_eq!(
            rw("x=$(case a in a) echo ok;; b|c) :;; esac)"),
            "x=$(case a in (a) echo ok;; (b|c) :;; esac)"
        );
        assert_eq!(rw("case a in a) echo;; esac"), "case a in a) echo;; esac");
        assert_eq!(
            rw("x=$(case a in\n  # c)\n  (a) echo;;\n  *) :;;\nesac)"),
            "x=$(case a in\n  # c)\n  (a) echo;;\n  (*) :;;\nesac)"
        );
        assert_eq!(
            rw("echo '$(case a in a) ;; esac)'"),
            "echo '$(case a in a) ;; esac)'"
        );
    }

    #[test]
    fn subscripts_keep_their_blanks() {
        let marked = rw("h[three word]=3");
        assert_eq!(marked, format!("h[three{BLANK_SPACE}word]=3"));
        assert_eq!(rw("echo h[a b]=1"), "echo h[a b]=1");
        assert_eq!(rw("h=([a b]=1)"), format!("h=([a{BLANK_SPACE}b]=1)"));
        assert_eq!(rw("h[\"a b\"]=1"), "h[\"a b\"]=1");
        let e = for_parser("x[=1\necho").unwrap_err();
        assert_eq!(e.message, "unexpected EOF while looking for matching `]'");
        assert_eq!((e.line, e.status), (1, 2));
    }

    #[test]
    fn parameter_blanks_are_marked() {
        assert_eq!(
            rw("echo ${x:-a  b}"),
            format!("echo ${{x:-a{BLANK_SPACE}{BLANK_SPACE}b}}")
        );
        assert_eq!(
            rw("echo \"${x:-'a  b'\tc}\""),
            format!("echo \"${{x:-'a  b'{BLANK_TAB}c}}\"")
        );
        assert_eq!(rw("echo ${x:-$(echo  a)}"), "echo ${x:-$(echo  a)}");
        assert_eq!(rw("echo '${x:-a  b}'"), "echo '${x:-a  b}'");
    }

    #[test]
    fn heredoc_delimiters_with_quote_characters_are_escaped() {
        assert_eq!(rw("cat <<'E\"O'\nx\nE\"O\n"), "cat <<\\E\\\"\\O\nx\nE\"O\n");
        assert_eq!(rw("cat <<'EOF'\nx\nEOF\n"), "cat <<'EOF'\nx\nEOF\n");
    }

    #[test]
    fn arithmetic_in_a_substitution_before_a_heredoc_is_hidden() {
        let text = "x=$( ((1)) ); cat <<E\nhi\nE\n";
        let out = rw(text);
        assert!(out.starts_with(&format!("x=$({SUBST_MARK}")), "{out}");
        assert!(out.ends_with("); cat <<E\nhi\nE\n"), "{out}");
        let mut word = out[..out.find(';').unwrap_or(0)].to_string();
        decode_all(&mut word);
        assert_eq!(word, "x=$( ((1)) )");
        assert_eq!(rw("x=$( ((1)) ); echo"), "x=$( ((1)) ); echo");
    }

    #[test]
    fn conditional_expressions_are_checked_as_bash_reads_them() {
        assert_eq!(cond_error("[[ a = b && ( -n x || ! -z y ) ]]"), None);
        assert_eq!(cond_error("[[ x =~ ^(a|b)$ ]]"), None);
        assert_eq!(
            cond_error("[[ a = ]]").as_deref(),
            Some("unexpected argument `]]' to conditional binary operator")
        );
        assert_eq!(
            cond_error("[[ -f ]]").as_deref(),
            Some("unexpected argument `]]' to conditional unary operator")
        );
        assert_eq!(
            cond_error("[[ a b ]]").as_deref(),
            Some("conditional binary operator expected")
        );
        assert_eq!(cond_error("[[ a && ]]").as_deref(), Some(""));
        assert_eq!(cond_error("echo '[[ a = ]]'"), None);
    }

    #[test]
    fn named_fds_after_compound_commands_move_into_the_target() {
        let two = rw("{ :; } {x}>o1 {y}>o2");
        assert_eq!(two.matches(NAMED_FD).count(), 4, "{two}");
        let out = rw("{ :; } {fd}>out");
        assert_eq!(out, format!("{{ :; }} >{NAMED_FD}fd{NAMED_FD}out"));
        assert_eq!(named_fd_target(&out[8..]), Some(("fd", "out")));
        assert_eq!(rw("echo {fd}>out"), "echo {fd}>out");
    }

    #[test]
    fn line_breaks_inside_a_conditional_term_are_named() {
        assert_eq!(
            cond_error("[[ a ==\nb ]]").as_deref(),
            Some("unexpected argument `newline' to conditional binary operator")
        );
        assert_eq!(
            cond_error("[[ a\n== a ]]").as_deref(),
            Some("unexpected token `newline', conditional binary operator expected")
        );
        assert_eq!(
            cond_error("[[ -f\nx ]]").as_deref(),
            Some("unexpected argument `newline' to conditional unary operator")
        );
        for ok in [
            "[[\na == a ]]",
            "[[ a == a &&\n b ]]",
            "[[ a == a\n]]",
            "[[ ( a == a\n) ]]",
            "[[ a == a\n&& b ]]",
            "[[ !\n a ]]",
        ] {
            assert_eq!(cond_error(ok), None, "{ok:?}");
        }
    }

    #[test]
    fn tokens_bash_refuses_are_named() {
        let refused = |t: &str| match for_parser(t) {
            Err(e) if e.kind == ReadErrorKind::Token => e.message,
            other => panic!("{t:?}: {other:?}"),
        };
        let near = |tok: &str| format!("syntax error near unexpected token `{tok}'");
        assert_eq!(refused("f=x() { :; }"), near("("));
        assert_eq!(refused("x=1 (echo)"), near("("));
        assert_eq!(refused("echo a (b)"), near("("));
        assert_eq!(refused("echo a ()"), near("("));
        assert_eq!(refused("{ :; } (x)"), near("("));
        assert_eq!(refused("echo $x(b)"), near("("));
        assert_eq!(refused(">out (echo)"), near("("));
        assert_eq!(refused("true | ! false"), near("!"));
        assert_eq!(refused("true |\n! false"), near("!"));
        assert_eq!(refused("true |& ! false"), near("!"));
        assert_eq!(refused("case esac in esac) echo;; esac"), near(")"));
        assert_eq!(refused("echo (b)"), near("b"));
        assert_eq!(refused("echo ( ;"), near(";"));
        assert_eq!(refused("echo a > > b"), near(">"));
        assert_eq!(refused("echo a >| ;"), near(";"));
        assert_eq!(refused("coproc\n"), near("newline"));
        assert_eq!(refused("cat <<\necho"), near("newline"));
        assert_eq!(refused("cat << ;"), near(";"));
        assert!(for_parser("echo $\\\n(echo split)").is_ok());
        assert!(for_parser("x=$\\\n(echo a); echo \"$x\"").is_ok());
        assert_eq!(for_parser("echo a (b)\nx").map_err(|e| e.line), Err(1));
        // Legitimate forms read on.
        for ok in [
            "f () { :; }",
            "function f () { :; }",
            "f() (echo)",
            "coproc foo (echo hi)",
            "coproc (echo hi)",
            "time -p (echo)",
            "a=(1 2) b+=(3)",
            "declare -a x=(1 2)",
            "true || ! false",
            "true && ! false; ! ! true",
            "echo $(case esac in esac)",
            "cat <(echo) >(cat)",
            "if (true); then (false); fi",
            "cat <<E | cat\nx\nE\n",
            "cat < <(echo) | cat; echo a >&2; echo b 2>&1 | cat",
            "echo a &>/dev/null; echo b >| f; cat <(echo) >(cat) | cat",
            "x=1 >out cat; >out if=1",
        ] {
            assert!(
                !matches!(
                    for_parser(ok),
                    Err(ReadError {
                        kind: ReadErrorKind::Token,
                        ..
                    })
                ),
                "{ok:?}"
            );
        }
    }

    #[test]
    fn bang_before_time_or_a_paren_is_read_as_bash_reads_it() {
        assert_eq!(rw("! time false"), "  time ! false");
        assert_eq!(rw("! time -p true; x"), "  time -p ! true; x");
        assert_eq!(rw("!(true)"), "! (true)");
        assert_eq!(rw("echo !(a)"), "echo !(a)");
        assert_eq!(rw(">out if true; then :; fi"), ">out \\if true; then :; fi");
        assert_eq!(rw("2>/dev/null if"), "2>/dev/null \\if");
    }

    #[test]
    fn arithmetic_for_headers_need_three_clauses() {
        let e = |t: &str| for_parser(t).map(|_| ()).unwrap_err();
        let r = e("for ((i=0; i<3)); do :; done");
        assert_eq!(r.kind, ReadErrorKind::Construct);
        assert_eq!(
            r.message,
            "syntax error: arithmetic expression required\nsyntax error: `((i=0; i<3))'"
        );
        assert_eq!(
            e("echo\nfor ((a;b;c;d)) do :; done").message,
            "syntax error: `;' unexpected\nsyntax error: `((a;b;c;d))'"
        );
        assert_eq!(e("echo\nfor ((a;b;c;d)) do :; done").line, 2);
        // At the end of the text bash only finds the text ended.
        assert_eq!(e("for ((a;b))").kind, ReadErrorKind::Unclosed);
        assert!(for_parser("for ((a;b;c)); do :; done").is_ok());
    }

    #[test]
    fn unclosed_constructs_are_named() {
        let e = |t: &str| for_parser(t).map(|_| ()).unwrap_err();
        let m = |t: &str| e(t).message;
        assert_eq!(
            m("echo \"abc"),
            "unexpected EOF while looking for matching `\"'"
        );
        assert_eq!(
            m("echo 'abc"),
            "unexpected EOF while looking for matching `''"
        );
        assert_eq!(
            m("echo `ls"),
            "unexpected EOF while looking for matching ``'"
        );
        assert_eq!(
            m("echo ${a"),
            "unexpected EOF while looking for matching `}'"
        );
        assert_eq!(e("a=(1 2").status, 1);
        assert_eq!(e("echo $(echo\nx").line, 3);
        assert!(for_parser("cat <<E\n'\nE\necho # it's\n").is_ok());
    }

    #[test]
    fn a_hash_in_arithmetic_is_no_comment() {
        let h = ARITH_HASH;
        assert_eq!(rw("echo $(( 1 #c ))"), format!("echo $(( 1 {h}c ))"));
        assert_eq!(rw("(( x #y ))"), format!("(( x {h}y ))"));
        assert_eq!(rw("echo $[ 1 #c ]"), format!("echo $[ 1 {h}c ]"));
        // A base, and a comment outside arithmetic, stay.
        assert_eq!(rw("echo $((16#ff)) # $(("), "echo $((16#ff)) # $((");
    }

    #[test]
    fn an_arithmetic_expansion_open_past_its_group_is_named() {
        let e = for_parser("echo $(( (1 + 2 )); echo next\necho more").unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.line),
            ("unexpected EOF while looking for matching `)'", 1)
        );
        assert!(for_parser("echo $(( (echo 1 ); echo 2 ) )").is_ok());
    }

    #[test]
    fn split_heredoc_operators_are_joined() {
        assert_eq!(rw("cat <\\\n<E\nx\nE\n"), "cat \\\n<<E\nx\nE\n");
        assert_eq!(rw("cat <<\\\n<w\n"), "cat \\\n<<<w\n");
    }

    #[test]
    fn a_named_coprocess_loop_is_grouped() {
        assert_eq!(
            rw("coproc W while read l; do echo $l; done; echo x"),
            "coproc W { while read l; do echo $l; done; }; echo x"
        );
        assert_eq!(
            rw("coproc cat; coproc N { :; }"),
            "coproc cat; coproc N { :; }"
        );
    }

    #[test]
    fn heredoc_bodies_are_skipped() {
        assert_eq!(
            rw("x=$(cat <<E\ncase a in a) ;;\n)\nE\n)"),
            "x=$(cat <<E\ncase a in a) ;;\n)\nE\n)"
        );
    }

    #[test]
    fn substitutions_round_trip() {
        let (enc, shifts) = encode_substitutions("a$(echo \")\" # )\n)b", false).unwrap();
        assert!(enc.starts_with(&format!("a$({SUBST_MARK}")));
        assert!(enc.ends_with(")b"));
        let body = &enc[3..enc.len() - 2];
        assert_eq!(decode_substitution(body), "echo \")\" # )\n");
        assert_eq!(
            original_index(&shifts, enc.len() - 1),
            "a$(echo \")\" # )\n)b".len() - 1
        );
        assert!(encode_substitutions("'$(x)'", false).is_none());
        assert!(encode_substitutions("'$(x)'", true).is_some());
    }
}

//! What Tab completes: the word under the cursor (as the shell will read it: backslashes
//! and quotes removed), whether it names a command, a variable or a path, and how a
//! completion is written back (escaped unless inside quotes).

/// What kind of name a word completes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The first word of a command: builtins, functions, native and WASI commands.
    Command,
    /// `$NAME`: shell variables.
    Variable,
    /// Anything else: files and directories.
    Path,
}

/// The word Tab completes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub kind: Kind,
    /// The word as the shell reads it (for a variable, the name without `$`).
    pub word: String,
    /// The quote the word is open in, if any: completions then go in unescaped.
    pub quote: Option<char>,
}

/// One completion: the whole word (as `Request::word` spells it) and whether it is a
/// directory (which gets `/` instead of a space).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub name: String,
    pub dir: bool,
}

/// Characters that end a word (outside quotes).
fn separates(c: char) -> bool {
    c.is_whitespace() || matches!(c, ';' | '|' | '&' | '(' | ')' | '<' | '>')
}

/// Characters escaped with a backslash when a completion inserts them.
fn needs_escape(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '\\' | '\''
                | '"'
                | '`'
                | '$'
                | '&'
                | '|'
                | ';'
                | '('
                | ')'
                | '<'
                | '>'
                | '*'
                | '?'
                | '['
                | ']'
                | '#'
                | '!'
                | '{'
                | '}'
                | '~'
        )
}

/// The completion request for the text before the cursor.
pub fn request(before: &str) -> Request {
    let mut start = 0;
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = before.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some((_, n)) = chars.next() {
                    word.push(n);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '\\') => match chars.next() {
                Some((_, n)) => word.push(n),
                None => word.push('\\'),
            },
            (None, '\'' | '"') => quote = Some(c),
            (None, c) if separates(c) => {
                word.clear();
                start = i + c.len_utf8();
            }
            (None, c) => word.push(c),
        }
    }
    let head = before[..start].trim_end();
    let first = head.is_empty()
        || head.ends_with([';', '|', '&', '(', '`'])
        || head.ends_with("$(")
        || matches!(
            head.rsplit(|c: char| separates(c)).next(),
            Some("then" | "do" | "else" | "elif" | "if" | "while" | "until" | "!" | "time")
        );
    if quote != Some('\'')
        && word.starts_with('$')
        && !word.starts_with("$(")
        && !word.starts_with("${")
    {
        return Request {
            kind: Kind::Variable,
            word: word[1..].to_string(),
            quote,
        };
    }
    let kind = if first && !word.contains('/') {
        Kind::Command
    } else {
        Kind::Path
    };
    Request { kind, word, quote }
}

/// `text` as it is typed into the line: escaped outside quotes.
pub fn escape(text: &str, quote: Option<char>) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match quote {
            None if needs_escape(c) => {
                out.push('\\');
                out.push(c);
            }
            Some('"') if matches!(c, '"' | '\\' | '$' | '`') => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The longest prefix (in whole characters) all the names share.
pub fn common_prefix(names: &[&str]) -> String {
    let Some(first) = names.first() else {
        return String::new();
    };
    let mut len = first.len();
    for n in &names[1..] {
        len = first
            .char_indices()
            .zip(n.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8())
            .min(len);
    }
    first[..len].to_string()
}

/// What the listing shows for a candidate: the last path component (directories with
/// `/`), or the name.
pub fn shown(req: &Request, c: &Candidate) -> String {
    match req.kind {
        Kind::Path => {
            let base = c.name.rsplit('/').next().unwrap_or(&c.name);
            let base = if base.is_empty() { &c.name } else { base };
            if c.dir {
                format!("{base}/")
            } else {
                base.to_string()
            }
        }
        Kind::Variable => c.name.clone(),
        Kind::Command => c.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(kind: Kind, word: &str, quote: Option<char>) -> Request {
        Request {
            kind,
            word: word.to_string(),
            quote,
        }
    }

    #[test]
    fn the_first_word_is_a_command() {
        assert_eq!(request("ec"), req(Kind::Command, "ec", None));
        assert_eq!(request("ls | gr"), req(Kind::Command, "gr", None));
        assert_eq!(request("x; if tr"), req(Kind::Command, "tr", None));
        assert_eq!(request("echo $(da"), req(Kind::Command, "da", None));
        assert_eq!(request("./scr"), req(Kind::Path, "./scr", None));
        assert_eq!(request(""), req(Kind::Command, "", None));
    }

    #[test]
    fn later_words_are_paths_unescaped() {
        assert_eq!(request("cat do"), req(Kind::Path, "do", None));
        assert_eq!(request("cat my\\ fi"), req(Kind::Path, "my fi", None));
        assert_eq!(request("cat 'my fi"), req(Kind::Path, "my fi", Some('\'')));
        assert_eq!(request("cat >out"), req(Kind::Path, "out", None));
        assert_eq!(request("cat ~/d"), req(Kind::Path, "~/d", None));
    }

    #[test]
    fn dollar_words_are_variables() {
        assert_eq!(request("echo $HO"), req(Kind::Variable, "HO", None));
        assert_eq!(request("echo \"$HO"), req(Kind::Variable, "HO", Some('"')));
        assert_eq!(request("echo '$HO"), req(Kind::Path, "$HO", Some('\'')));
    }

    #[test]
    fn escaping_and_common_prefixes() {
        assert_eq!(escape("my file (1)", None), "my\\ file\\ \\(1\\)");
        assert_eq!(escape("my file", Some('\'')), "my file");
        assert_eq!(escape("a\"$b", Some('"')), "a\\\"\\$b");
        assert_eq!(common_prefix(&["docs", "doc", "dock"]), "doc");
        assert_eq!(common_prefix(&["été", "étoile"]), "ét");
        assert_eq!(common_prefix(&["a", "b"]), "");
        assert_eq!(common_prefix(&[]), "");
    }
}

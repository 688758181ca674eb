//! `alias` and `unalias`, and alias expansion of a simple command's first word.
//!
//! bash replaces aliases while it reads a line; forkbox parses a whole script first, so
//! it replaces them when the command runs: the command's text with its first word
//! replaced by the alias's value is parsed and run in its place (and, if the value ends
//! in a blank, the next word is looked up too). An alias is not replaced again inside its
//! own expansion. To see the aliases bash would have seen while reading, an alias is in
//! effect only for commands read after the complete command that defined it, and a
//! function body only sees the aliases defined before the function (`shell::lines`).

use std::collections::BTreeMap;

use brush_parser::ast::{CommandPrefixOrSuffixItem, SimpleCommand};

use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;
use crate::shell::{Shell, parse_program};

/// The aliases of a shell, sorted by name (as `alias` lists them).
pub(crate) type Aliases = BTreeMap<String, String>;

/// `alias name='value'`, quoted as bash prints it.
fn shown(name: &str, value: &str) -> String {
    // A name that looks like an option is shown after `--`, so the line reads back.
    let dashes = if name.starts_with('-') { "-- " } else { "" };
    format!("alias {dashes}{name}='{}'\n", value.replace('\'', "'\\''"))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| matches!(c, '/' | '$' | '`' | '=' | '\'' | '"' | '\\') || c.is_whitespace())
}

pub(crate) async fn alias(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut rest: &[String] = &args;
    let mut print_all = rest.is_empty();
    while let Some(first) = rest.first() {
        match first.as_str() {
            "-p" => print_all = true,
            "--" => {
                rest = &rest[1..];
                break;
            }
            f if f.starts_with('-') && f.len() > 1 => {
                let msg = format!(
                    "alias: {f}: invalid option\nalias: usage: alias [-p] [name[=value] ... ]"
                );
                return super::fail(sh, io, msg, 2).await;
            }
            _ => break,
        }
        rest = &rest[1..];
    }
    let mut out = String::new();
    if print_all {
        for (n, v) in &sh.aliases {
            out.push_str(&shown(n, v));
        }
    }
    let mut status = 0;
    for a in rest {
        match a.split_once('=').filter(|(name, _)| !name.is_empty()) {
            Some((name, value)) => {
                if !valid_name(name) {
                    let _ = io.stdout().write_str(&std::mem::take(&mut out)).await;
                    super::fail(sh, io, format!("alias: `{name}': invalid alias name"), 1).await?;
                    status = 1;
                    continue;
                }
                let old = sh.aliases.insert(name.to_string(), value.to_string());
                sh.lines.alias_changed(name, old);
                sh.lines.aliases.insert(name.to_string(), sh.lines.unit);
            }
            None => match sh.aliases.get(a.as_str()) {
                Some(v) => out.push_str(&shown(a, v)),
                None => {
                    let _ = io.stdout().write_str(&std::mem::take(&mut out)).await;
                    super::fail(sh, io, format!("alias: {a}: not found"), 1).await?;
                    status = 1;
                }
            },
        }
    }
    let _ = io.stdout().write_str(&out).await;
    Ok(status)
}

pub(crate) async fn unalias(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let usage = "unalias: usage: unalias [-a] name [name ...]\n";
    let mut names: &[String] = &args;
    if names.first().is_some_and(|a| a == "-a") {
        for (name, value) in std::mem::take(&mut sh.aliases) {
            sh.lines.alias_changed(&name, Some(value));
        }
        return Ok(0);
    }
    if names.first().is_some_and(|a| a == "--") {
        names = &names[1..];
    } else if let Some(f) = names.first().filter(|a| a.starts_with('-') && a.len() > 1) {
        let msg = format!("unalias: {f}: invalid option\n{}", usage.trim_end());
        return super::fail(sh, io, msg, 2).await;
    }
    if names.is_empty() {
        let _ = io.stderr().write_str(usage).await;
        return Ok(2);
    }
    let mut status = 0;
    for n in names {
        let old = sh.aliases.remove(n.as_str());
        let missing = old.is_none();
        sh.lines.alias_changed(n, old);
        if missing {
            super::fail(sh, io, format!("unalias: {n}: not found"), 1).await?;
            status = 1;
        }
    }
    Ok(status)
}

/// bash's alias expansion of one command's words, as its reader does it: an alias's
/// value is read in the word's place (its first word in the same position, so it may be
/// an alias too), and one not being expanded already is replaced when it is the command's
/// first word or follows the end of a value that ends in a blank. `input` is the words
/// (and redirections, never replaced) as written; `active` the aliases being expanded
/// around this command. Returns the words to run and the aliases replaced.
fn expand_alias_words<'a>(
    input: Vec<(String, bool)>,
    lookup: &dyn Fn(&str) -> Option<&'a String>,
    active: &[String],
) -> (Vec<String>, Vec<String>) {
    use std::collections::VecDeque;
    /// Bounds the replacements, whatever the aliases (each name is replaced at most
    /// once at a time, but a chain through trailing blanks may repeat names).
    const MAX_REPLACEMENTS: usize = 1000;
    // The words still to read: the command's at the bottom, a value's above it, with the
    // alias it came from and whether that value ends in a blank.
    type Level = (VecDeque<(String, bool)>, Option<String>, bool);
    let mut stack: Vec<Level> = vec![(input.into_iter().collect(), None, false)];
    let mut out = Vec::new();
    let mut used: Vec<String> = Vec::new();
    let mut next = false;
    let mut first = true;
    let mut replaced = 0;
    loop {
        while stack.len() > 1 && stack.last().is_some_and(|(w, _, _)| w.is_empty()) {
            if let Some((_, _, blank)) = stack.pop() {
                next = blank;
            }
        }
        let Some((word, eligible)) = stack.last_mut().and_then(|(w, _, _)| w.pop_front()) else {
            break;
        };
        let expanding = |n: &str| {
            active.iter().any(|a| a == n) || stack.iter().any(|(_, a, _)| a.as_deref() == Some(n))
        };
        if eligible
            && (first || next)
            && replaced < MAX_REPLACEMENTS
            && !expanding(&word)
            && let Some(value) = lookup(&word)
        {
            replaced += 1;
            let blank = value.ends_with([' ', '\t']);
            let words = split_blanks(value).into_iter().map(|w| (w, true)).collect();
            if !used.contains(&word) {
                used.push(word.clone());
            }
            stack.push((words, Some(word), blank));
            continue;
        }
        out.push(word);
        next = false;
        first = false;
    }
    (out, used)
}

/// [`expand_alias_words`] with no alias being expanded around the words.
pub(crate) fn expand_words<'a>(
    input: Vec<(String, bool)>,
    lookup: &dyn Fn(&str) -> Option<&'a String>,
) -> (Vec<String>, Vec<String>) {
    expand_alias_words(input, lookup, &[])
}

/// An alias value split at its unquoted blanks (quotes and backslashes kept).
fn split_blanks(value: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, ' ' | '\t' | '\n') => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
                if c == '\n' {
                    words.push("\n".to_string());
                }
                continue;
            }
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if q == c => quote = None,
            (None | Some('"'), '\\') => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

impl Shell {
    /// The alias expansion of `sc` when its first word is an alias in effect: the text to
    /// run instead and the aliases it replaced.
    pub(crate) fn alias_text(&self, sc: &SimpleCommand) -> Option<(String, Vec<String>)> {
        // In a function body: the aliases it was read with, whatever happened since.
        let read = self.lines.read_aliases.as_deref();
        let aliases = read.unwrap_or(&self.aliases);
        let visible = |name: &str| read.is_some() || self.lines.alias_visible(name);
        // What the name meant when this command was read: its value then, if this line
        // has changed it since.
        let lookup = |name: &str| match read {
            Some(table) => table.get(name),
            None => self
                .lines
                .alias_before(name)
                .or_else(|| aliases.get(name).filter(|_| visible(name))),
        };
        if (aliases.is_empty() && (read.is_some() || self.lines.earlier_aliases.is_empty()))
            || !(read.is_some() || self.interactive || self.shopts.on("expand_aliases"))
            || sc.prefix.is_some()
        {
            return None;
        }
        let first = sc.word_or_name.as_ref()?.value.as_str();
        if lookup(first).is_none() || self.alias_active.iter().any(|a| a == first) {
            return None;
        }
        let mut input: Vec<(String, bool)> = vec![(first.to_string(), true)];
        for item in sc.suffix.iter().flat_map(|s| s.0.iter()) {
            let word = matches!(item, CommandPrefixOrSuffixItem::Word(_));
            input.push((item.to_string(), word));
        }
        let (words, used) = expand_alias_words(input, &lookup, &self.alias_active);
        Some((words.join(" "), used))
    }

    /// The alias table aliases are read from now: the one a running function's body was
    /// read with, else the shell's.
    pub(crate) fn alias_table(&self) -> &Aliases {
        self.lines.read_aliases.as_deref().unwrap_or(&self.aliases)
    }

    /// Runs the alias expansion `text` of a command in its place.
    pub(crate) async fn run_alias(
        &mut self,
        text: String,
        used: Vec<String>,
        fds: &Fds,
    ) -> Exec<i32> {
        let program = match parse_program(&text) {
            Ok(p) => p,
            Err(e) => return self.fail(e, fds).await,
        };
        let depth = self.alias_active.len();
        self.alias_active.extend(used);
        let r = self.exec_nested_input("alias", &program, None, fds).await;
        self.alias_active.truncate(depth);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::{expand_alias_words, split_blanks};
    use crate::shell::testing::run;

    fn expand(aliases: &[(&str, &str)], words: &[&str]) -> String {
        let table: std::collections::BTreeMap<String, String> = aliases
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        let input = words.iter().map(|w| (w.to_string(), true)).collect();
        let lookup = |n: &str| table.get(n);
        expand_alias_words(input, &lookup, &[]).0.join(" ")
    }

    #[test]
    fn trailing_blank_chains_as_bash_reads() {
        let chain = [("s1", "echo "), ("s2", "s3 "), ("s3", "X"), ("t", "s2")];
        assert_eq!(expand(&chain, &["s1", "s2", "s3", "s2"]), "echo X X s2");
        assert_eq!(expand(&chain, &["s1", "t", "s3"]), "echo X s3");
        assert_eq!(
            expand(&[("e", "echo ")], &["e", "e", "e", "hi"]),
            "echo echo echo hi"
        );
        assert_eq!(expand(&[("ls", "ls -d")], &["ls", "x"]), "ls -d x");
        assert_eq!(expand(&[("a", "b"), ("b", "a")], &["a"]), "a");
    }

    #[test]
    fn values_split_at_unquoted_blanks() {
        assert_eq!(
            split_blanks("printf '%s|' 'a b' c"),
            ["printf", "'%s|'", "'a b'", "c"]
        );
        assert_eq!(split_blanks(r#"echo \ x"y z""#), ["echo", r#"\ x"y z""#]);
    }

    #[tokio::test]
    async fn alias_defines_and_lists() {
        let script = "alias ll='ls -l' a=b\nalias\nalias ll";
        let expected = (
            0,
            "alias a='b'\nalias ll='ls -l'\nalias ll='ls -l'\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn alias_unknown_name_fails() {
        let script = "alias nope; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: alias: nope: not found\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn alias_bad_option() {
        let script = "alias -x; echo $?";
        let expected = (
            0,
            "2\n".to_string(),
            "bash: line 1: alias: -x: invalid option\nalias: usage: alias [-p] [name[=value] ... ]\n"
                .to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn alias_p_prints_all() {
        let script = "alias x=y; alias -p";
        let expected = (0, "alias x='y'\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unalias_removes() {
        let script = "alias x=y; unalias x; alias x; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: alias: x: not found\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unalias_a_removes_all() {
        let script = "alias x=y z=w; unalias -a; alias; echo end";
        let expected = (0, "end\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unalias_missing_name() {
        let script = "unalias nope; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: unalias: nope: not found\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unalias_no_operand() {
        let script = "unalias; echo $?";
        let expected = (
            0,
            "2\n".to_string(),
            "unalias: usage: unalias [-a] name [name ...]\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn alias_expands_when_enabled() {
        let script = "shopt -s expand_aliases\nalias say='echo said'\nsay it";
        let expected = (0, "said it\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

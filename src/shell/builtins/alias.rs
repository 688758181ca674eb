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
    format!("alias {name}='{}'\n", value.replace('\'', "'\\''"))
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
        match a.split_once('=') {
            Some((name, value)) => {
                if !valid_name(name) {
                    let _ = io.stdout().write_str(&std::mem::take(&mut out)).await;
                    super::fail(sh, io, format!("alias: `{name}': invalid alias name"), 1).await?;
                    status = 1;
                    continue;
                }
                sh.aliases.insert(name.to_string(), value.to_string());
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
        sh.aliases.clear();
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
        if sh.aliases.remove(n.as_str()).is_none() {
            super::fail(sh, io, format!("unalias: {n}: not found"), 1).await?;
            status = 1;
        }
    }
    Ok(status)
}

impl Shell {
    /// The alias expansion of `sc` when its first word is an alias in effect: the text to
    /// run instead and the aliases it replaced.
    pub(crate) fn alias_text(&self, sc: &SimpleCommand) -> Option<(String, Vec<String>)> {
        // In a function body: the aliases it was read with, whatever happened since.
        let read = self.lines.read_aliases.as_deref();
        let aliases = read.unwrap_or(&self.aliases);
        let visible = |name: &str| read.is_some() || self.lines.alias_visible(name);
        if aliases.is_empty()
            || !(read.is_some() || self.interactive || self.shopts.on("expand_aliases"))
            || sc.prefix.is_some()
        {
            return None;
        }
        let first = sc.word_or_name.as_ref()?.value.as_str();
        let value = aliases.get(first)?;
        if self.alias_active.iter().any(|a| a == first) || !visible(first) {
            return None;
        }
        let mut used = vec![first.to_string()];
        let mut text = value.clone();
        let mut words = sc.suffix.iter().flat_map(|s| s.0.iter()).peekable();
        // A value ending in a blank makes the next word a candidate too.
        while text.ends_with([' ', '\t'])
            && let Some(CommandPrefixOrSuffixItem::Word(w)) = words.peek()
            && let Some(v) = aliases.get(w.value.as_str())
            && !used.contains(&w.value)
            && visible(&w.value)
        {
            used.push(w.value.clone());
            text.push_str(v);
            words.next();
        }
        for item in words {
            text.push(' ');
            text.push_str(&item.to_string());
        }
        Some((text, used))
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
    use crate::shell::testing::run;

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

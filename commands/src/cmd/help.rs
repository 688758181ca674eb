//! `help`: bash's help for the topics matching each pattern (`help cd`, `help -s 'c*'`),
//! or, with none, a list of every command the shell knows with a one-line summary.

use async_trait::async_trait;

use crate::{CmdResult, Command, CommandInfo, Context};

mod topics;

pub use topics::{TOPICS, Topic};

/// Width used when stdout is not a terminal.
const DEFAULT_COLS: usize = 80;

/// How `help` shows each topic it matched.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// The usage line, the description and the first paragraph.
    Long,
    /// `-d`: `NAME - description`.
    Short,
    /// `-s`: `NAME: usage`.
    Synopsis,
    /// `-m`: a manual page's sections.
    Manual,
}

pub struct Help;

/// What bash's `help` gives for some arguments.
#[derive(Debug, PartialEq, Eq)]
pub struct Answer {
    /// What goes to stdout.
    pub out: String,
    /// The error, without the shell's prefix (`help: -x: invalid option`).
    pub message: Option<String>,
    /// Whether the usage line follows the error.
    pub usage: bool,
    pub status: i32,
}

/// `help`'s usage line, as bash prints it after a bad option.
pub const USAGE: &str = "help: usage: help [-dms] [pattern ...]";

/// What `help` with `args` prints, its error and its status, as bash 5.2's `help`
/// builtin gives them (topics from [`TOPICS`]); `None` when it lists the shell's
/// commands instead (no pattern). A name that is no bash topic but one of the session's
/// `commands` (`help ls`, `help jq`) gets that command's summary, where bash would find
/// nothing: every command has its `help NAME`.
pub fn bash_help(args: &[String], commands: &[CommandInfo]) -> Option<Answer> {
    let answer = |out: String, message: Option<String>, usage: bool, status: i32| {
        Some(Answer {
            out,
            message,
            usage,
            status,
        })
    };
    if args.first().is_some_and(|a| a == "--help") {
        return answer(builtin_help("help").unwrap_or_default(), None, false, 2);
    }
    let (mut d, mut m, mut s) = (false, false, false);
    let mut rest = args;
    while let Some(a) = rest.first() {
        if a == "--" {
            rest = &rest[1..];
            break;
        }
        if a == "-" || !a.starts_with('-') {
            break;
        }
        for c in a[1..].chars() {
            match c {
                'd' => d = true,
                'm' => m = true,
                's' => s = true,
                _ => {
                    let message = format!("help: -{c}: invalid option");
                    return answer(String::new(), Some(message), true, 2);
                }
            }
        }
        rest = &rest[1..];
    }
    if rest.is_empty() {
        return None;
    }
    let form = if d {
        Form::Short
    } else if m {
        Form::Manual
    } else if s {
        Form::Synopsis
    } else {
        Form::Long
    };
    let mut out = String::new();
    // bash's `glob_pattern_p`: a `[` counts only with a `]` after it.
    let globbing =
        |p: &str| p.contains(['*', '?']) || p.find('[').is_some_and(|k| p[k + 1..].contains(']'));
    if globbing(&rest[0]) {
        let plural = if rest.len() > 1 { "s" } else { "" };
        out.push_str(&format!(
            "Shell commands matching keyword{plural} `{}'\n\n",
            rest.join(", ")
        ));
    }
    let mut found = false;
    for pattern in rest {
        let exact = TOPICS.iter().find(|t| t.name == pattern);
        let matched: Vec<&Topic> = match exact {
            Some(t) => vec![t],
            None => TOPICS
                .iter()
                .filter(|t| t.name.starts_with(pattern.as_str()) || glob_match(pattern, t.name))
                .collect(),
        };
        let command = commands.iter().find(|c| &c.name == pattern);
        if let (true, Some(c)) = (matched.is_empty(), command) {
            found = true;
            out.push_str(&match form {
                Form::Short => format!("{} - {}\n", c.name, c.summary),
                _ => format!("{}: {}\n", c.name, c.summary),
            });
        }
        for t in matched {
            found = true;
            out.push_str(&show(t, form));
        }
    }
    if !found {
        let last = rest.last().map_or("", String::as_str);
        let message = format!(
            "help: no help topics match `{last}'.  Try `help help' or `man -k {last}' or `info {last}'."
        );
        return answer(out, Some(message), false, 1);
    }
    answer(out, None, false, 0)
}

/// The sections `help -m` ends each topic with, as bash 5.2.15 prints them.
const MANUAL_END: &str = "SEE ALSO\n    bash(1)\n\nIMPLEMENTATION\n    GNU bash, version 5.2.15(1)-release (x86_64-pc-linux-gnu)\n    Copyright (C) 2022 Free Software Foundation, Inc.\n    License GPLv3+: GNU GPL version 3 or later <http://gnu.org/licenses/gpl.html>\n\n";

/// One topic as `form` shows it.
fn show(t: &Topic, form: Form) -> String {
    let indented = |text: &str| -> String { text.lines().map(|l| format!("    {l}\n")).collect() };
    let paragraph = if t.paragraph.is_empty() {
        String::new()
    } else {
        format!("    \n{}", indented(t.paragraph))
    };
    match form {
        Form::Short => format!("{} - {}\n", t.name, t.short),
        Form::Synopsis => format!("{}: {}\n", t.name, t.synopsis),
        Form::Long => format!("{}: {}\n    {}\n{paragraph}", t.name, t.synopsis, t.short),
        Form::Manual => format!(
            "NAME\n    {} - {}\n\nSYNOPSIS\n    {}\n\nDESCRIPTION\n    {}\n{paragraph}\n{MANUAL_END}",
            t.name, t.short, t.synopsis, t.short
        ),
    }
}

/// The help bash's builtin `name` prints for `name --help` (its long form), when it is
/// one of bash's topics.
pub fn builtin_help(name: &str) -> Option<String> {
    TOPICS
        .iter()
        .find(|t| t.name == name)
        .map(|t| show(t, Form::Long))
}

/// Whether glob `pattern` (`*`, `?`, `[…]`) matches all of `name`.
fn glob_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| go(&p[1..], &n[k..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => {
                let Some(close) = p.iter().skip(2).position(|&c| c == ']').map(|k| k + 2) else {
                    return n.first() == Some(&'[') && go(&p[1..], &n[1..]);
                };
                let Some(&c) = n.first() else { return false };
                let (negate, set) = match p[1] {
                    '!' | '^' => (true, &p[2..close]),
                    _ => (false, &p[1..close]),
                };
                let mut hit = false;
                let mut k = 0;
                while k < set.len() {
                    if k + 2 < set.len() && set[k + 1] == '-' {
                        hit |= set[k] <= c && c <= set[k + 2];
                        k += 3;
                    } else {
                        hit |= set[k] == c;
                        k += 1;
                    }
                }
                hit != negate && go(&p[close + 1..], &n[1..])
            }
            Some(&c) => n.first() == Some(&c) && go(&p[1..], &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

#[async_trait]
impl Command for Help {
    fn name(&self) -> &'static str {
        "help"
    }
    fn summary(&self) -> &'static str {
        "list commands, or describe one"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        if let Some(a) = bash_help(&args, &ctx.launcher.commands()) {
            ctx.out(a.out).await?;
            if let Some(m) = a.message {
                ctx.err(format!("{m}\n")).await;
            }
            if a.usage {
                ctx.err(format!("{USAGE}\n")).await;
            }
            return Ok(a.status);
        }
        let commands = ctx.launcher.commands();
        let cols = ctx
            .tty
            .map(|t| usize::from(t.cols))
            .filter(|c| *c > 20)
            .unwrap_or(DEFAULT_COLS);
        let name_w = commands
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(0);
        let mut out = String::from("forkbox shell commands. Type 'NAME --help' for details.\n\n");
        for c in &commands {
            let mut line = format!("  {:<name_w$}  {}", c.name, c.summary);
            if line.chars().count() > cols {
                line = line
                    .chars()
                    .take(cols.saturating_sub(1))
                    .collect::<String>()
                    + "…";
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        ctx.out(out).await?;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, TestLauncher};
    use std::sync::Arc;

    fn inv() -> Invocation {
        let launcher = TestLauncher::with(vec![
            Arc::new(super::super::truefalse::True),
            Arc::new(super::super::head::Head),
            Arc::new(Help),
        ]);
        Invocation {
            launcher,
            ..Invocation::default()
        }
    }

    #[tokio::test]
    async fn a_command_that_is_no_bash_topic_has_its_summary() {
        let summary = super::super::head::Head.summary();
        assert_eq!(
            inv().run(&Help, &["head"]).await,
            (0, format!("head: {summary}\n"), String::new())
        );
        assert_eq!(
            inv().run(&Help, &["-d", "head"]).await.1,
            format!("head - {summary}\n")
        );
        // A bash topic still wins: `true` is bash's text, not the command's summary.
        assert!(
            inv()
                .run(&Help, &["true"])
                .await
                .1
                .starts_with("true: true\n")
        );
    }

    #[tokio::test]
    async fn lists_and_describes() {
        let (st, out, _) = inv().run(&Help, &[]).await;
        assert_eq!(st, 0);
        assert!(
            out.ends_with(
                "  help  list commands, or describe one\n  true  do nothing, successfully\n"
            ),
            "{out}"
        );
        assert_eq!(
            inv().run(&Help, &["-s", "cd"]).await.1,
            "cd: cd [-L|[-P [-e]] [-@]] [dir]\n"
        );
        assert_eq!(
            inv().run(&Help, &["-d", "true"]).await.1,
            "true - Return a successful result.\n"
        );
        assert_eq!(
            inv().run(&Help, &["true"]).await.1,
            "true: true\n    Return a successful result.\n    \n    Exit Status:\n    Always succeeds.\n"
        );
        let (st, _, err) = inv().run(&Help, &["nope"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "help: no help topics match `nope'.  Try `help help' or `man -k nope' or `info nope'.\n"
            )
        );
    }

    #[test]
    fn patterns_match_as_bash_matches_them() {
        let names = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            bash_help(&args, &[]).map(|a| a.out)
        };
        assert_eq!(
            names(&["-s", "re"]).unwrap_or_default().lines().count(),
            4,
            "read readarray readonly return"
        );
        // An exact name wins over the longer names it begins.
        assert_eq!(names(&["-s", "["]).unwrap_or_default(), "[: [ arg... ]\n");
        let globbed = names(&["-d", "e?al"]).unwrap_or_default();
        assert_eq!(
            globbed,
            "Shell commands matching keyword `e?al'\n\neval - Execute arguments as a shell command.\n"
        );
        assert!(glob_match("[a-c]d", "cd"));
        assert!(!glob_match("[!a-c]d", "cd"));
        assert_eq!(names(&[]), None);
        let bad = bash_help(&["-x".to_string()], &[]).map(|a| (a.message, a.usage, a.status));
        assert_eq!(
            bad,
            Some((Some("help: -x: invalid option".into()), true, 2))
        );
    }
}

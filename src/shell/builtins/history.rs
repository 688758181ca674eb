//! `history`, `fc -l` and `fc -s`: the command history (and `bind`, which warns that a script has
//! no line editor), and what an interactive shell does with
//! each line it reads (history expansion with `set -H`, remembering with
//! `set -o history`, under `HISTCONTROL`).
//!
//! `history [n]`, `history -c`, `history -d offset`, `history -s arg…`,
//! `history -p arg…`; `fc -l [-nr] [first [last]]`; `fc -s [old=new …] [command]`. There
//! is no history file, so `-a -n -r -w` and `fc`'s editing forms say they are not
//! supported (with nothing remembered, `fc` and `fc -e` do nothing, as bash's do).

use crate::shell::Shell;
use crate::shell::error::ShellError;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;
use crate::terminal::{Expansion, SharedHistory, history_expand};

impl Shell {
    /// Shares the history with the terminal's line editor (Up/Down, Ctrl-R).
    pub fn set_history(&mut self, history: SharedHistory) {
        self.history = history;
    }

    /// History expansion of a line the terminal read, when `set -H` is on (`None`
    /// otherwise). The error is the full message, with the shell's name.
    pub fn expand_history(&self, line: &str) -> Option<Result<Expansion, String>> {
        if !self.opts.histexpand {
            return None;
        }
        let extglob = self.shopts.on("extglob");
        let mut h = self.history.lock();
        Some(
            history_expand(line, &mut h, extglob)
                .map_err(|e| ShellError::Builtin(e).message_with(&self.message_prefix())),
        )
    }

    /// Remembers a command the terminal read, when `set -o history` is on.
    pub fn remember(&self, entry: &str) {
        if self.opts.history {
            let control = self.get_str("HISTCONTROL").unwrap_or_default();
            self.history.lock().add_controlled(entry, &control);
        }
    }
}

pub(crate) async fn history(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut i = 0;
    let mut clear = false;
    let mut delete: Option<String> = None;
    let mut mode: Option<char> = None;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" || a[1..].starts_with(|c: char| c.is_ascii_digit()) {
            break;
        }
        let mut letters = a[1..].chars();
        while let Some(c) = letters.next() {
            match c {
                'c' => clear = true,
                'd' => {
                    let rest = letters.as_str();
                    delete = Some(if rest.is_empty() {
                        i += 1;
                        match args.get(i) {
                            Some(v) => v.clone(),
                            None => {
                                return super::option_error(
                                    sh,
                                    io,
                                    "history",
                                    "-d: option requires an argument",
                                )
                                .await;
                            }
                        }
                    } else {
                        rest.to_string()
                    });
                    break;
                }
                's' | 'p' => mode = Some(c),
                'a' | 'n' | 'r' | 'w' => {
                    return sh
                        .fail(ShellError::Unsupported(format!("history -{c}")), io)
                        .await;
                }
                _ => return super::invalid_option(sh, io, "history", &format!("-{c}")).await,
            }
        }
        i += 1;
    }
    let rest = &args[i.min(args.len())..];
    if clear {
        sh.history.lock().clear();
        return Ok(0);
    }
    if delete.is_none() && mode.is_none() && rest.len() > 1 {
        // bash drops the rest of the command line here, as after an expansion error.
        sh.report(
            &io.stderr(),
            &ShellError::Builtin("history: too many arguments".into()),
        )
        .await;
        return Err(crate::shell::exec::Flow::Discard(1));
    }
    let extglob = sh.shopts.on("extglob");
    let remembering = sh.opts.history;
    // `history -p`: what was expanded before an error.
    let mut partial = String::new();
    // Worked out under the lock, written after it.
    let done: Result<String, String> = {
        let mut h = sh.history.lock();
        if let Some(offset) = delete {
            let at = offset.parse::<i64>().ok().and_then(|n| {
                let len = h.len() as i64;
                let index = if n < 0 {
                    len + n
                } else {
                    n - h.number(0) as i64
                };
                (0..len).contains(&index).then_some(index as usize)
            });
            match at {
                Some(index) => {
                    h.remove(index);
                    Ok(String::new())
                }
                None => Err(format!("history: {offset}: history position out of range")),
            }
        } else if mode == Some('s') {
            // The `history -s` line itself is replaced by its arguments.
            if remembering {
                h.remove_last();
            }
            h.add(&rest.join(" "));
            Ok(String::new())
        } else if mode == Some('p') {
            // Each argument expanded on a line of its own; one that fails is named on
            // stderr (after the others) and the status is 1.
            let mut out = String::new();
            let mut failed = None;
            for a in rest {
                match history_expand(a, &mut h, extglob) {
                    Ok(e) => {
                        out.push_str(&e.line);
                        out.push('\n');
                    }
                    Err(_) => {
                        failed.get_or_insert_with(|| {
                            format!("history: {a}: history expansion failed")
                        });
                    }
                }
            }
            match failed {
                Some(e) => {
                    partial = out;
                    Err(e)
                }
                None => Ok(out),
            }
        } else {
            let count = match rest.first() {
                Some(n) => n
                    .parse::<usize>()
                    .map(|n| n.min(h.len()))
                    .map_err(|_| format!("history: {n}: numeric argument required")),
                None => Ok(h.len()),
            };
            count.map(|count| {
                let mut out = String::new();
                for i in h.len() - count..h.len() {
                    out.push_str(&format!("{:5}  {}\n", h.number(i), h.get(i).unwrap_or("")));
                }
                out
            })
        }
    };
    match done {
        Ok(out) => {
            if !out.is_empty() {
                let _ = io.stdout().write_str(&out).await;
            }
            Ok(0)
        }
        Err(msg) => {
            if !partial.is_empty() {
                let _ = io.stdout().write_str(&partial).await;
            }
            super::fail(sh, io, msg, 1).await
        }
    }
}

pub(crate) async fn fc(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let (mut list, mut numbers, mut reverse, mut again) = (false, true, false, false);
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a[1..].starts_with(|c: char| c.is_ascii_digit()) || a == "-" {
            break;
        }
        for c in a[1..].chars() {
            match c {
                'l' => list = true,
                'n' => numbers = false,
                'r' => reverse = true,
                's' => again = true,
                'e' if !remembered_empty(sh) => {
                    return sh
                        .fail(ShellError::Unsupported(format!("fc -{c}")), io)
                        .await;
                }
                // With nothing to edit, bash's `fc -e EDITOR` does nothing.
                'e' => return Ok(0),
                _ => return super::invalid_option(sh, io, "fc", &format!("-{c}")).await,
            }
        }
        i += 1;
    }
    let rest = &args[i.min(args.len())..];
    if again {
        return fc_again(sh, rest, io).await;
    }
    if !list && remembered_empty(sh) {
        // Nothing to edit: bash's `fc` does nothing then.
        return Ok(0);
    }
    if !list {
        return sh
            .fail(ShellError::Unsupported("fc without -l".into()), io)
            .await;
    }
    let remembering = sh.opts.history;
    let listed = list_range(&sh.history, rest, remembering, numbers, reverse);
    match listed {
        Ok(out) => {
            let _ = io.stdout().write_str(&out).await;
            Ok(0)
        }
        Err(msg) => super::fail(sh, io, msg, 1).await,
    }
}

/// How many history entries `fc` sees: all but its own line when that was remembered.
fn remembered(h: &crate::terminal::History, remembering: bool) -> usize {
    if remembering {
        h.len().saturating_sub(1)
    } else {
        h.len()
    }
}

fn remembered_empty(sh: &Shell) -> bool {
    remembered(&sh.history.lock(), sh.opts.history) == 0
}

/// The entry `fc` means by `spec` among the first `len`: a history number; a negative
/// one counts back from the last entry; anything else is the newest command that starts
/// with it.
fn fc_entry(h: &crate::terminal::History, len: usize, spec: &str) -> Option<usize> {
    if len == 0 {
        return None;
    }
    let Ok(n) = spec.parse::<i64>() else {
        return (0..len)
            .rev()
            .find(|&i| h.get(i).is_some_and(|l| l.starts_with(spec)));
    };
    let i = if n < 0 {
        len as i64 + n
    } else {
        n - h.number(0) as i64
    };
    Some(i.clamp(0, len as i64 - 1) as usize)
}

/// `fc -s [old=new ...] [command]`: runs a remembered command again, with every `old`
/// replaced by `new`; it is shown on the standard error and takes the place of the
/// newest history entry, as in bash.
async fn fc_again(sh: &mut Shell, rest: &[String], io: &Fds) -> Exec<i32> {
    let subs: Vec<(&str, &str)> = rest.iter().map_while(|a| a.split_once('=')).collect();
    let spec = rest.get(subs.len());
    let picked = {
        let h = sh.history.lock();
        let len = remembered(&h, sh.opts.history);
        let i = match spec {
            Some(s) => fc_entry(&h, len, s),
            None => len.checked_sub(1),
        };
        i.and_then(|i| h.get(i)).map(str::to_string)
    };
    let Some(mut command) = picked else {
        return super::fail(sh, io, "fc: no command found".into(), 1).await;
    };
    for (old, new) in subs {
        if !old.is_empty() {
            command = command.replace(old, new);
        }
    }
    let _ = io.stderr().write_str(&format!("{command}\n")).await;
    {
        let mut h = sh.history.lock();
        h.remove_last();
        h.add(&command);
    }
    match crate::shell::parse_program(&command) {
        Ok(program) => {
            sh.exec_nested_input("eval", &program, Some(&command), io)
                .await
        }
        Err(e) => sh.fail(e, io).await,
    }
}

/// What `fc -l` lists for the range `rest` (`first [last]`).
fn list_range(
    history: &SharedHistory,
    rest: &[String],
    remembering: bool,
    numbers: bool,
    reverse: bool,
) -> Result<String, String> {
    let h = history.lock();
    // The `fc` line itself, when remembered, is not listed.
    let len = remembered(&h, remembering);
    if len == 0 {
        return Ok(String::new());
    }
    let index = |spec: &str| fc_entry(&h, len, spec);
    let not_found = || "fc: no command found".to_string();
    let (first, last) = match rest {
        [] => (len.saturating_sub(16), len - 1),
        [f] => (index(f).ok_or_else(not_found)?, len - 1),
        [f, l, ..] => (
            index(f).ok_or_else(not_found)?,
            index(l).ok_or_else(not_found)?,
        ),
    };
    let mut picked: Vec<usize> = if first <= last {
        (first..=last).collect()
    } else {
        (last..=first).rev().collect()
    };
    if reverse {
        picked.reverse();
    }
    let mut out = String::new();
    for i in picked {
        let line = h.get(i).unwrap_or("");
        if numbers {
            out.push_str(&format!("{}\t {line}\n", h.number(i)));
        } else {
            out.push_str(&format!("\t {line}\n"));
        }
    }
    Ok(out)
}

/// `bind`: there is no line editor in a script, as bash warns.
pub(crate) async fn bind(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if let Some(a) = args.first().filter(|a| a.starts_with('-') && a.len() > 1)
        && let Some(c) = a[1..]
            .chars()
            .find(|c| !"lpsvPSVXm:f:q:u:r:x:".contains(*c) || *c == ':')
    {
        return super::invalid_option(sh, io, "bind", &format!("-{c}")).await;
    }
    super::fail(sh, io, "bind: warning: line editing not enabled".into(), 0).await
}

#[cfg(test)]
mod tests {
    use crate::shell::Shell;
    use crate::shell::testing::{run, run_on, shell_on};
    use forkbox_commands::testing::MemFs;

    async fn sh_run(sh: &mut Shell, script: &str) -> (i32, String, String) {
        run_on(sh, script).await
    }

    #[tokio::test]
    async fn a_script_keeps_only_what_history_s_adds() {
        // As `bash -c`: no line is remembered, `history -s` adds one.
        let mut sh = shell_on(MemFs::new());
        let (st, out, _) = sh_run(&mut sh, "history; history -s foo; history; fc -l").await;
        assert_eq!((st, out.as_str()), (0, "    1  foo\n1\t foo\n"));
        let (st, _, err) = sh_run(&mut sh, "history x").await;
        assert_eq!(
            (st, err.as_str()),
            (1, "bash: line 1: history: x: numeric argument required\n")
        );
        let (st, _, err) = sh_run(&mut sh, "history 1 2").await;
        assert_eq!(
            (st, err.as_str()),
            (1, "bash: line 1: history: too many arguments\n")
        );
        let (st, _, err) = sh_run(&mut sh, "history -d 99").await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "bash: line 1: history: 99: history position out of range\n"
            )
        );
        let (st, out, _) = sh_run(&mut sh, "history -s a b; history -d 1; history -p '!!'").await;
        assert_eq!((st, out.as_str()), (0, "a b\n"));
        let (st, out, _) = sh_run(&mut sh, "history -c; history; history -s z; history 5").await;
        assert_eq!((st, out.as_str()), (0, "    1  z\n"));
    }

    #[tokio::test]
    async fn interactive_lines_expand_and_are_remembered() {
        let mut sh = shell_on(MemFs::new());
        assert!(sh.expand_history("!!").is_none(), "off outside a terminal");
        sh.opts.histexpand = true;
        sh.opts.history = true;
        sh.remember("echo a b");
        let e = sh.expand_history("echo !$").and_then(Result::ok);
        assert_eq!(e.map(|e| e.line).as_deref(), Some("echo b"));
        let err = sh.expand_history("!nope").and_then(Result::err);
        assert_eq!(
            err.as_deref(),
            Some("bash: line 0: !nope: event not found\n")
        );
        sh_run(&mut sh, "HISTCONTROL=ignorespace").await;
        sh.remember(" secret");
        sh.remember("fc -l");
        let (_, out, _) = sh_run(&mut sh, "fc -l").await;
        assert_eq!(out, "1\t echo a b\n");
        let (_, out, _) = sh_run(&mut sh, "set -o | grep hist").await;
        assert_eq!(out, "histexpand     \ton\nhistory        \ton\n");
    }

    #[tokio::test]
    async fn bind_warns() {
        let script = "bind -l; echo $?";
        let expected = (
            0,
            "0\n".to_string(),
            "bash: line 1: bind: warning: line editing not enabled\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }
}

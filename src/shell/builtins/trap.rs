//! `trap [-lp] [[ACTION] CONDITION…]`: set, reset, ignore and list the handlers run on
//! signals (delivered by `kill` inside the session) and on EXIT, ERR, DEBUG and RETURN.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::jobs::{signal_table, trap_name, trap_number};
use crate::shell::redirect::Fds;

const USAGE: &str = "trap: usage: trap [-lp] [[arg] signal_spec ...]";

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut list = false;
    let mut print = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if a.len() < 2 || !a.starts_with('-') || a == "-" {
            break;
        }
        for c in a[1..].chars() {
            match c {
                'l' => list = true,
                'p' => print = true,
                _ => {
                    super::fail(sh, io, format!("trap: -{c}: invalid option"), 2).await?;
                    let _ = io.stderr().write_str(&format!("{USAGE}\n")).await;
                    return Ok(2);
                }
            }
        }
        i += 1;
    }
    let rest = &args[i..];
    if list {
        let _ = io.stdout().write_str(&signal_table()).await;
        return Ok(0);
    }
    if print || rest.is_empty() {
        return show(sh, rest, io).await;
    }
    // `trap N…` with a signal number first, or `trap SIG` alone (outside posix mode), or
    // `trap - SIG…`: reset. A lone operand that is no signal is a usage error.
    let first_signal = !rest[0].is_empty()
        && rest[0].chars().all(|c| c.is_ascii_digit())
        && trap_number(&rest[0]).is_some();
    let lone_signal = rest.len() == 1
        && !sh.opts.posix
        && rest[0] != "-"
        && !rest[0].is_empty()
        && trap_number(&rest[0]).is_some();
    if rest.len() == 1 && !first_signal && !lone_signal {
        let _ = io.stderr().write_str(&format!("{USAGE}\n")).await;
        return Ok(2);
    }
    let (action, conds) = if first_signal || lone_signal || rest[0] == "-" {
        let conds = if rest[0] == "-" { &rest[1..] } else { rest };
        (None, conds)
    } else {
        (Some(rest[0].clone()), &rest[1..])
    };
    let mut status = 0;
    for c in conds {
        match trap_number(c) {
            Some(n) => {
                sh.shown_traps.clear();
                match &action {
                    Some(a) => sh.traps.insert(n, a.clone()),
                    None => sh.traps.remove(&n),
                };
            }
            None => {
                status = super::fail(
                    sh,
                    io,
                    format!("trap: {c}: invalid signal specification"),
                    1,
                )
                .await?;
            }
        }
    }
    sh.sync_caught();
    Ok(status)
}

/// `trap -p [CONDITION…]`: the handlers as commands that would set them again.
async fn show(sh: &mut Shell, conds: &[String], io: &Fds) -> Exec<i32> {
    let mut table = sh.shown_traps.clone();
    table.extend(sh.traps.clone());
    let mut out = String::new();
    let mut status = 0;
    let mut wanted = Vec::new();
    for c in conds {
        match trap_number(c) {
            Some(n) => wanted.push(n),
            None => {
                status = super::fail(
                    sh,
                    io,
                    format!("trap: {c}: invalid signal specification"),
                    1,
                )
                .await?;
            }
        }
    }
    // POSIX mode names the signals without their `SIG`.
    let posix = sh.opts.posix;
    let line = |n: i32, action: &String| {
        let name = trap_name(n);
        let name = match name.strip_prefix("SIG") {
            Some(short) if posix => short,
            _ => &name,
        };
        format!("trap -- {} {name}\n", quote(action))
    };
    if conds.is_empty() {
        for (n, action) in &table {
            out.push_str(&line(*n, action));
        }
    } else {
        // Named conditions are shown in the order they were asked for.
        for n in &wanted {
            if let Some(action) = table.get(n) {
                out.push_str(&line(*n, action));
            }
        }
    }
    let _ = io.stdout().write_str(&out).await;
    Ok(status)
}

/// Single-quoted as bash shows a handler: `'it'\''s'`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn trap_exit_runs_at_end() {
        let script = "trap 'echo end' EXIT; echo body";
        let expected = (0, "body\nend\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn trap_p_lists() {
        let script = "trap 'echo x' USR1 INT; trap -p";
        let expected = (
            0,
            "trap -- 'echo x' SIGINT\ntrap -- 'echo x' SIGUSR1\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn trap_reset() {
        let script = "trap 'echo x' USR1; trap - USR1; trap -p; echo done";
        let expected = (0, "done\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn trap_ignore() {
        let script = "trap '' USR1; kill -USR1 $$; echo alive";
        let expected = (0, "alive\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn trap_l() {
        let script = "trap -l | head -1";
        let expected = (
            0,
            " 1) SIGHUP\t 2) SIGINT\t 3) SIGQUIT\t 4) SIGILL\t 5) SIGTRAP\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn trap_bad_signal() {
        let script = "trap 'x' NOPE; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: trap: NOPE: invalid signal specification\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn trap_err() {
        let script = "trap 'echo err $?' ERR; false; true";
        let expected = (0, "err 1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn trap_bad_option() {
        let script = "trap -z; echo $?";
        let expected = (
            0,
            "2\n".to_string(),
            "bash: line 1: trap: -z: invalid option\ntrap: usage: trap [-lp] [[arg] signal_spec ...]\n"
                .to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn trap_numeric_signal() {
        let script = "trap 'echo t' 10; trap -p USR1";
        let expected = (0, "trap -- 'echo t' SIGUSR1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

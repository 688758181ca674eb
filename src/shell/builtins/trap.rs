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
    // `trap N…` with a number first, or `trap SIG` alone, or `trap - SIG…`: reset.
    let (action, conds) = if rest.len() == 1
        || rest[0] == "-"
        || (!rest[0].is_empty() && rest[0].chars().all(|c| c.is_ascii_digit()))
    {
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
    for (n, action) in &table {
        if conds.is_empty() || wanted.contains(n) {
            out.push_str(&format!("trap -- {} {}\n", quote(action), trap_name(*n)));
        }
    }
    let _ = io.stdout().write_str(&out).await;
    Ok(status)
}

/// Single-quoted as bash shows a handler: `'it'\''s'`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

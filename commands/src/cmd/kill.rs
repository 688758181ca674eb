//! `kill`: procps-ng's program (`/bin/kill`; what `env kill`, `xargs kill` and `find
//! -exec kill` run instead of bash's builtin): sends a signal to processes of the session
//! (through [`crate::Launcher::signal`]), or lists signal names (`-l`, `-L`) in procps'
//! own formats and names (29 is `POLL`, no real-time signals).

use async_trait::async_trait;

use crate::signal::SIGNALS;
use crate::{CmdResult, Command, Context};

const USAGE: &str = "
Usage:
 kill [options] <pid> [...]

Options:
 <pid> [...]            send signal to every <pid> listed
 -<signal>, -s, --signal <signal>
                        specify the <signal> to be sent
 -q, --queue <value>    integer value to be sent with the signal
 -l, --list=[<signal>]  list all signal names, or convert one to a name
 -L, --table            list all signal names in a nice table

 -h, --help     display this help and exit
 -V, --version  output version information and exit

For more details see kill(1).
";

/// Columns `kill -l` fills before it starts a new line.
const LIST_WIDTH: usize = 80;
/// Entries per line of `kill -L`.
const TABLE_COLUMNS: usize = 7;

/// procps' name of signal `n` (1 to 31).
fn name_of(n: i32) -> Option<&'static str> {
    if n == 29 {
        return Some("POLL");
    }
    SIGNALS.iter().find(|(k, _)| *k == n).map(|(_, s)| *s)
}

/// The signal `spec` names: a number up to 64, or a name of [`name_of`]'s, with or
/// without `SIG`, in any case.
fn number_of(spec: &str) -> Option<i32> {
    if let Ok(n) = spec.parse::<i32>() {
        return (0..=64).contains(&n).then_some(n);
    }
    let up = spec.to_ascii_uppercase();
    let bare = up.strip_prefix("SIG").unwrap_or(&up);
    (1..=31).find(|n| name_of(*n) == Some(bare))
}

/// `kill -l`: the names, in lines of at most [`LIST_WIDTH`] columns.
fn list() -> String {
    let mut out = String::new();
    let mut col = 0;
    for n in 1..=31 {
        let Some(name) = name_of(n) else { continue };
        if col > 0 {
            if col + 1 + name.len() > LIST_WIDTH {
                out.push('\n');
                col = 0;
            } else {
                out.push(' ');
                col += 1;
            }
        }
        out.push_str(name);
        col += name.len();
    }
    out.push('\n');
    out
}

/// `kill -L`: number and name, [`TABLE_COLUMNS`] to a line.
fn table() -> String {
    let mut out = String::new();
    for n in 1..=31 {
        let Some(name) = name_of(n) else { continue };
        // The last of a line is not padded; the last of the table is.
        if (n as usize).is_multiple_of(TABLE_COLUMNS) {
            out.push_str(&format!("{n:2} {name}\n"));
        } else {
            out.push_str(&format!("{n:2} {name:<8}"));
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// `kill -l SIG`: the name of a number, the number of a name.
async fn convert(ctx: &Context, spec: &str) -> CmdResult {
    let shown = match spec.parse::<i32>() {
        Ok(n) => name_of(n).map(str::to_string),
        Err(_) => number_of(spec).map(|n| n.to_string()),
    };
    match shown {
        Some(s) => ctx.out(format!("{s}\n")).await?,
        // procps says so and still succeeds.
        None => {
            ctx.warn("kill", format!("unknown signal name {spec}"))
                .await
        }
    }
    Ok(0)
}

pub struct Kill;

#[async_trait]
impl Command for Kill {
    fn name(&self) -> &'static str {
        "kill"
    }
    fn summary(&self) -> &'static str {
        "send a signal to a process (procps' program)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        // `None`: a signal procps could not read, which `kill(2)` refuses.
        let mut sig = Some(15);
        let mut rest = args.as_slice();
        if let Some(first) = rest.first()
            && let Some(spec) = first.strip_prefix('-')
            && let Some(n) = number_of(spec)
        {
            sig = Some(n);
            rest = &rest[1..];
        }
        let mut pids: Vec<&String> = Vec::new();
        let mut it = rest.iter();
        let mut only_pids = false;
        while let Some(a) = it.next() {
            if only_pids || !a.starts_with('-') || a == "-" {
                pids.push(a);
                continue;
            }
            match a.as_str() {
                "--" => only_pids = true,
                "-l" | "--list" => {
                    return match it.next().filter(|s| *s != "--") {
                        Some(spec) => convert(ctx, spec).await,
                        None => ctx.out(list()).await.map(|()| 0),
                    };
                }
                "-L" | "--table" => return ctx.out(table()).await.map(|()| 0),
                "-V" | "--version" => {
                    return ctx.out("kill from procps-ng 4.0.2\n").await.map(|()| 0);
                }
                "-h" | "--help" => return ctx.out(USAGE).await.map(|()| 0),
                "-s" | "--signal" | "-q" | "--queue" => {
                    let Some(v) = it.next() else {
                        let letter = a.trim_start_matches('-').chars().next().unwrap_or('s');
                        ctx.err(format!("kill: invalid argument {letter}\n{USAGE}"))
                            .await;
                        return Ok(1);
                    };
                    if a.contains('q') {
                        if v.parse::<i32>().is_err() {
                            ctx.warn(
                                "kill",
                                format!(
                                    "must be an integer value to be passed with the signal.: '{v}'"
                                ),
                            )
                            .await;
                            return Ok(1);
                        }
                    } else {
                        sig = number_of(v);
                    }
                }
                _ => {
                    if let Some(spec) = a.strip_prefix("--list=") {
                        return convert(ctx, spec).await;
                    }
                    if let Some(spec) = a.strip_prefix("--signal=").or(a.strip_prefix("-s")) {
                        sig = number_of(spec);
                        continue;
                    }
                    let letter = a[1..].chars().next().unwrap_or('-');
                    ctx.err(format!("kill: invalid argument {letter}\n{USAGE}"))
                        .await;
                    return Ok(1);
                }
            }
        }
        if pids.is_empty() {
            ctx.err(USAGE).await;
            return Ok(1);
        }
        let mut status = 0;
        for p in pids {
            let Ok(pid) = p.parse::<u32>() else {
                // procps gives up on the first word that is no number.
                ctx.warn("kill", format!("failed to parse argument: '{p}'"))
                    .await;
                return Ok(1);
            };
            let delivered = match sig {
                Some(n) => ctx.launcher.signal(pid, n),
                None => ctx.launcher.signal(pid, 0),
            };
            let failure = match (delivered, sig) {
                (false, _) => Some("No such process"),
                (true, None) => Some("Invalid argument"),
                (true, Some(_)) => None,
            };
            if let Some(why) = failure {
                ctx.warn("kill", format!("({pid}): {why}")).await;
                status = 1;
            }
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[test]
    fn lists_as_procps_does() {
        let l = list();
        assert!(l.starts_with("HUP INT QUIT "));
        assert!(l.contains("TERM STKFLT\nCHLD "));
        assert!(l.ends_with("POLL PWR SYS\n"));
        let t = table();
        assert!(t.starts_with(" 1 HUP      2 INT "));
        assert!(t.ends_with("29 POLL    30 PWR     31 SYS     \n"));
        assert_eq!(number_of("sigkill"), Some(9));
        assert_eq!(number_of("IO"), None);
        assert_eq!(number_of("65"), None);
    }

    #[tokio::test]
    async fn no_process_is_there_without_a_shell() {
        let inv = Invocation::default();
        let (st, out, err) = inv.run(&Kill, &["-0", "123"]).await;
        assert_eq!((st, out.as_str()), (1, ""));
        assert_eq!(err, "kill: (123): No such process\n");
        let (st, _, err) = inv.run(&Kill, &["x"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "kill: failed to parse argument: 'x'\n")
        );
        let (st, out, _) = inv.run(&Kill, &["-l", "9"]).await;
        assert_eq!((st, out.as_str()), (0, "KILL\n"));
    }
}

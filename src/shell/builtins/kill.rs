//! `kill [-s SIG | -n NUM | -SIG] PID|JOBSPEC…` and `kill -l [SIG…]`: signals delivered as
//! messages to the session's shells and jobs (see [`crate::shell::jobs`]).

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::jobs::{
    Delivery, TRAP_DEBUG, TRAP_ERR, TRAP_RETURN, signal_name, signal_number, signal_table,
};
use crate::shell::redirect::Fds;

const USAGE: &str =
    "kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]";

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if args.is_empty() {
        let _ = io.stderr().write_str(&format!("{USAGE}\n")).await;
        return Ok(2);
    }
    // bash's loop: options up to the first operand, `-l` anywhere among them; of the
    // `-SIG` forms only the first counts (a later `-N` is an operand, a process group).
    let mut listing = false;
    let mut chosen: Option<(&str, Option<i32>)> = None;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let spec = match a.as_str() {
            "-l" | "-L" => {
                listing = true;
                i += 1;
                continue;
            }
            "-s" | "-n" => {
                let Some(spec) = args.get(i + 1) else {
                    let msg = format!("kill: {a}: option requires an argument");
                    return super::fail(sh, io, msg, 1).await;
                };
                i += 2;
                spec.as_str()
            }
            "--" => {
                i += 1;
                break;
            }
            "-?" => {
                let _ = io.stderr().write_str(&format!("{USAGE}\n")).await;
                return Ok(2);
            }
            s if (s.starts_with("-s") && s[2..].starts_with(|c: char| c.is_ascii_alphabetic()))
                || (s.starts_with("-n") && s[2..].starts_with(|c: char| c.is_ascii_digit())) =>
            {
                i += 1;
                &s[2..]
            }
            s if s.starts_with('-') && chosen.is_none() => {
                i += 1;
                &s[1..]
            }
            _ => break,
        };
        chosen = Some((spec, signal_number(spec).or((spec == "0").then_some(0))));
    }
    if listing {
        return list(sh, &args[i..], io).await;
    }
    let sig = match chosen {
        None => 15,
        Some((_, Some(n))) => n,
        Some((spec, None)) => {
            let msg = format!("kill: {spec}: invalid signal specification");
            return super::fail(sh, io, msg, 1).await;
        }
    };
    let targets = &args[i..];
    if targets.is_empty() {
        let _ = io.stderr().write_str(&format!("{USAGE}\n")).await;
        return Ok(2);
    }
    let mut status = 0;
    for t in targets {
        let pid = if t.starts_with('%') {
            if let Some(name) = sh.jobs.ambiguous(t) {
                let msg = format!("kill: {name}: ambiguous job spec");
                status = super::fail(sh, io, msg, 1).await?;
                continue;
            }
            match sh.jobs.find(t) {
                Some(j) => j.pid,
                None => {
                    status = super::fail(sh, io, format!("kill: {t}: no such job"), 1).await?;
                    continue;
                }
            }
        } else {
            match t.parse::<u32>() {
                Ok(p) => p,
                // A process group (`kill -- -PGID`): a non-interactive shell's jobs
                // share its group, so a session has no group of its own to signal.
                Err(_)
                    if t.strip_prefix('-')
                        .is_some_and(|g| g.parse::<u32>().is_ok()) =>
                {
                    let msg = format!("kill: ({t}) - No such process");
                    status = super::fail(sh, io, msg, 1).await?;
                    continue;
                }
                Err(_) => {
                    status = super::fail(
                        sh,
                        io,
                        format!("kill: {t}: arguments must be process or job IDs"),
                        1,
                    )
                    .await?;
                    continue;
                }
            }
        };
        if sh.procs.kill(pid, sig) == Delivery::NoSuchProcess {
            status = super::fail(sh, io, format!("kill: ({pid}) - No such process"), 1).await?;
        }
    }
    Ok(status)
}

/// `kill -l`: the table; `kill -l SIG…`: each name's number, each number's name (an exit
/// status above 128 names its signal).
async fn list(sh: &mut Shell, specs: &[String], io: &Fds) -> Exec<i32> {
    if specs.is_empty() {
        let _ = io.stdout().write_str(&signal_table()).await;
        return Ok(0);
    }
    let mut out = String::new();
    let mut status = 0;
    for s in specs {
        // `None`: not a signal; `Some(None)`: one without a name (32 and 33), shown as
        // nothing. A number above 128 is an exit status and names its signal.
        let shown = match legal_number(s) {
            Some(n) => {
                let n = if n > 128 { n - 128 } else { n };
                match n {
                    0 => Some(Some("EXIT".to_string())),
                    1..=64 => Some(i32::try_from(n).ok().and_then(signal_name)),
                    _ => None,
                }
            }
            None => condition_number(s).map(|n| Some(n.to_string())),
        };
        match shown {
            Some(Some(v)) => {
                out.push_str(&v);
                out.push('\n');
            }
            Some(None) => {}
            None => {
                let _ = io.stdout().write_str(&std::mem::take(&mut out)).await;
                status = super::fail(
                    sh,
                    io,
                    format!("kill: {s}: invalid signal specification"),
                    1,
                )
                .await?;
            }
        }
    }
    let _ = io.stdout().write_str(&out).await;
    Ok(status)
}

/// A number as bash's `legal_number` reads it: blanks around it and a sign allowed.
fn legal_number(s: &str) -> Option<i64> {
    s.trim_matches(|c| c == ' ' || c == '\t').parse().ok()
}

/// What `kill -l NAME` reads a name as: a signal (`TERM`, `SIGTERM`, any case) or one of
/// trap's conditions, numbered as bash numbers them (`EXIT` 0, `DEBUG` 65, `ERR` 66,
/// `RETURN` 67).
fn condition_number(name: &str) -> Option<i32> {
    match name.to_ascii_uppercase().as_str() {
        "EXIT" => Some(0),
        "DEBUG" => Some(TRAP_DEBUG),
        "ERR" => Some(TRAP_ERR),
        "RETURN" => Some(TRAP_RETURN),
        _ => signal_number(name),
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn kill_l_lists() {
        let script = "kill -l 9 15; kill -l TERM";
        let expected = (0, "KILL\nTERM\n15\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn kill_usage() {
        let script = "kill; echo $?";
        let expected = (0, "2\n".to_string(), "kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]\n".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn kill_bad_signal() {
        let script = "kill -s FOO 1; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: kill: FOO: invalid signal specification\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn kill_no_such_job() {
        let script = "kill %4; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: kill: %4: no such job\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn kill_trapped_signal_on_self() {
        let script = "trap 'echo got' USR1; kill -USR1 $$; echo after";
        let expected = (0, "got\nafter\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn kill_bad_pid() {
        let script = "kill abc; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: kill: abc: arguments must be process or job IDs\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }
}

//! `kill [-s SIG | -n NUM | -SIG] PID|JOBSPEC…` and `kill -l [SIG…]`: signals delivered as
//! messages to the session's shells and jobs (see [`crate::shell::jobs`]).

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::jobs::{Delivery, signal_name, signal_number, signal_table};
use crate::shell::redirect::Fds;

const USAGE: &str =
    "kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]";

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if args.is_empty() {
        let _ = io.stderr().write_str(&format!("{USAGE}\n")).await;
        return Ok(2);
    }
    let mut sig = 15;
    let mut i = 0;
    if let Some(a) = args.first() {
        match a.as_str() {
            "-l" | "-L" => return list(sh, &args[1..], io).await,
            "-s" | "-n" => {
                let Some(spec) = args.get(1) else {
                    return super::fail(
                        sh,
                        io,
                        format!("kill: {a}: option requires an argument"),
                        1,
                    )
                    .await;
                };
                match signal_number(spec).or((spec == "0").then_some(0)) {
                    Some(n) => sig = n,
                    None => {
                        return super::fail(
                            sh,
                            io,
                            format!("kill: {spec}: invalid signal specification"),
                            1,
                        )
                        .await;
                    }
                }
                i = 2;
            }
            "--" => i = 1,
            s if s.starts_with('-') && s.len() > 1 => {
                let spec = &s[1..];
                match signal_number(spec).or((spec == "0").then_some(0)) {
                    Some(n) => sig = n,
                    None => {
                        return super::fail(
                            sh,
                            io,
                            format!("kill: {spec}: invalid signal specification"),
                            1,
                        )
                        .await;
                    }
                }
                i = 1;
                if args.get(1).is_some_and(|a| a == "--") {
                    i = 2;
                }
            }
            _ => {}
        }
    }
    let targets = &args[i..];
    if targets.is_empty() {
        let _ = io.stderr().write_str(&format!("{USAGE}\n")).await;
        return Ok(2);
    }
    let mut status = 0;
    for t in targets {
        let pid = if t.starts_with('%') {
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
        let shown = match s.parse::<i32>() {
            // Signal 0 is bash's EXIT condition.
            Ok(0) => Some("EXIT".to_string()),
            Ok(n) => signal_name(if n > 128 { n - 128 } else { n }),
            Err(_) => signal_number(s).map(|n| n.to_string()),
        };
        match shown {
            Some(v) => {
                out.push_str(&v);
                out.push('\n');
            }
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

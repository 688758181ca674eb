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

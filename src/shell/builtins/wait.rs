//! `wait [-fn] [-p VAR] [ID…]`: wait for background jobs (see [`crate::shell::jobs`]).
//! Interrupted by a trapped signal (status 128+N, then the trap runs) and by Ctrl-C.

use crate::shell::Shell;
use crate::shell::exec::{Exec, Flow};
use crate::shell::jobs::Job;
use crate::shell::redirect::Fds;

/// What waiting gave.
enum Waited<T> {
    Status(T),
    /// A trapped signal arrived first.
    Signal(i32),
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let r = wait(sh, args, io).await;
    // A coprocess waited for is reaped: its descriptors closed, its variables unset.
    sh.reap_coproc();
    r
}

async fn wait(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut any = false;
    let mut var: Option<String> = None;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "--" => {
                i += 1;
                break;
            }
            "-p" => {
                var = args.get(i + 1).cloned();
                i += 1;
            }
            s if s.starts_with('-')
                && s.len() > 1
                && !s[1..].starts_with(|c: char| c.is_ascii_digit()) =>
            {
                for c in s[1..].chars() {
                    match c {
                        'n' => any = true,
                        'f' => {}
                        'p' => var = args.get(i + 1).cloned().inspect(|_| i += 1),
                        _ => {
                            super::fail(sh, io, format!("wait: -{c}: invalid option"), 2).await?;
                            let _ = io
                                .stderr()
                                .write_str("wait: usage: wait [-fn] [-p var] [id ...]\n")
                                .await;
                            return Ok(2);
                        }
                    }
                }
            }
            _ => break,
        }
        i += 1;
    }
    let ids = &args[i.min(args.len())..];
    if let Some(v) = var.as_deref().filter(|v| !super::is_name(v)) {
        return super::fail(sh, io, format!("wait: `{v}': not a valid identifier"), 1).await;
    }
    if any {
        let mut pool: Vec<Job> = Vec::new();
        if ids.is_empty() {
            pool = sh.jobs.list.clone();
        }
        for id in ids {
            match lookup(sh, id) {
                Some(job) => pool.push(job),
                None => match id
                    .parse::<u32>()
                    .ok()
                    .and_then(|p| Some((p, sh.jobs.remembered(p)?)))
                {
                    // A job that has ended already is the first to end.
                    Some((pid, status)) => {
                        if let Some(v) = &var {
                            let _ = sh.set_var(v, &pid.to_string());
                        }
                        return Ok(status);
                    }
                    // `-n` names what it cannot wait for as a job, pid or not.
                    None => {
                        super::fail(sh, io, format!("wait: {id}: no such job"), 127).await?;
                    }
                },
            }
        }
        if pool.is_empty() {
            return Ok(127);
        }
        let waits = pool.iter().map(|j| Box::pin(j.wait()));
        let first = wait_for(sh, futures::future::select_all(waits)).await?;
        return Ok(match first {
            Waited::Signal(s) => 128 + s,
            Waited::Status((status, idx, _)) => {
                let pid = pool[idx].pid;
                sh.job_ended(pid, status, io).await;
                if let Some(v) = &var {
                    let _ = sh.set_var(v, &pid.to_string());
                }
                status
            }
        });
    }
    if ids.is_empty() {
        for job in sh.jobs.list.clone() {
            match wait_for(sh, job.wait()).await? {
                Waited::Status(s) => sh.job_ended(job.pid, s, io).await,
                Waited::Signal(s) => return Ok(128 + s),
            }
        }
        return Ok(0);
    }
    let mut status = 0;
    for id in ids {
        if let Some(job) = lookup(sh, id) {
            status = match wait_for(sh, job.wait()).await? {
                Waited::Status(s) => {
                    sh.job_ended(job.pid, s, io).await;
                    // `-p VAR`: the process id of the (last) job waited for.
                    if let Some(v) = &var {
                        let _ = sh.set_var(v, &job.pid.to_string());
                    }
                    s
                }
                Waited::Signal(s) => return Ok(128 + s),
            };
            continue;
        }
        if let Some(name) = sh.jobs.ambiguous(id) {
            let msg = format!("wait: {name}: ambiguous job spec");
            status = super::fail(sh, io, msg, 127).await?;
            continue;
        }
        if id.starts_with('%') {
            status = super::fail(sh, io, format!("wait: {id}: no such job"), 127).await?;
            continue;
        }
        match id.parse::<u32>() {
            Ok(pid) => match sh.jobs.remembered(pid) {
                Some(s) => status = s,
                None => {
                    status = super::fail(
                        sh,
                        io,
                        format!("wait: pid {pid} is not a child of this shell"),
                        127,
                    )
                    .await?;
                }
            },
            Err(_) => {
                status = super::fail(
                    sh,
                    io,
                    format!("wait: `{id}': not a pid or valid job spec"),
                    1,
                )
                .await?;
            }
        }
    }
    Ok(status)
}

/// The live job `id` names (`%N` or a pid).
fn lookup(sh: &Shell, id: &str) -> Option<Job> {
    if id.starts_with('%') {
        return sh.jobs.find(id).cloned();
    }
    id.parse::<u32>()
        .ok()
        .and_then(|pid| sh.jobs.by_pid(pid).cloned())
}

/// Awaits `fut` unless a trapped signal or a cancellation comes first.
async fn wait_for<T>(sh: &Shell, fut: impl std::future::Future<Output = T>) -> Exec<Waited<T>> {
    tokio::pin!(fut);
    loop {
        if sh.me.has_pending.load(std::sync::atomic::Ordering::Acquire) {
            let sig = sh
                .me
                .pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .front()
                .copied();
            if let Some(s) = sig {
                return Ok(Waited::Signal(s));
            }
        }
        let wake = sh.me.wake.notified();
        tokio::select! {
            v = &mut fut => return Ok(Waited::Status(v)),
            _ = wake => {}
            _ = sh.cancel.cancelled() => return Err(Flow::Abort(forkbox_commands::STATUS_INTERRUPTED)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn wait_unknown_pid() {
        let script = "wait 99999; echo $?";
        let expected = (
            0,
            "127\n".to_string(),
            "bash: line 1: wait: pid 99999 is not a child of this shell\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn wait_bad_id() {
        let script = "wait abc; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: wait: `abc': not a pid or valid job spec\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn wait_no_jobs() {
        let script = "wait; echo $?; wait -n; echo $?";
        let expected = (0, "0\n127\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

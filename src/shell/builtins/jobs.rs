//! `jobs`, `disown`, `fg`, `bg`: the job table (see [`crate::shell::jobs`]). A session has
//! no job control (no terminal process groups), so `fg` and `bg` say so, as bash does in a
//! script.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::jobs::Job;
use crate::shell::redirect::Fds;

/// `jobs [-lnprs] [JOBSPEC…]`.
pub(crate) async fn jobs(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    // `jobs -x COMMAND [ARG…]`: runs the command with each job spec replaced by the job's
    // process id (a spec naming no job is left as it is). The options come first (the
    // dispatcher checked their letters) and `-x` takes no other.
    let flags: Vec<&str> = args
        .iter()
        .take_while(|a| a.starts_with('-') && a.len() > 1 && *a != "--")
        .map(|a| &a[1..])
        .collect();
    if flags.iter().any(|f| f.contains('x')) {
        if flags.iter().any(|f| f.chars().any(|c| c != 'x')) {
            let msg = "jobs: no other options allowed with `-x'".to_string();
            return super::fail(sh, io, msg, 1).await;
        }
        let mut rest = args[flags.len()..].to_vec();
        if rest.first().is_some_and(|a| a == "--") {
            rest.remove(0);
        }
        sh.jobs.reap();
        let argv: Vec<String> = rest
            .into_iter()
            .map(
                |a| match a.starts_with('%').then(|| sh.jobs.find(&a)).flatten() {
                    Some(j) => j.pid.to_string(),
                    None => a,
                },
            )
            .collect();
        return sh.run_command(argv, Vec::new(), io).await;
    }
    let (mut long, mut pids, mut stopped) = (false, false, false);
    let mut specs = Vec::new();
    let mut options_done = false;
    for a in &args {
        if !options_done && a == "--" {
            options_done = true;
            continue;
        }
        if let Some(flags) = a
            .strip_prefix('-')
            .filter(|f| !f.is_empty() && !options_done)
        {
            for c in flags.chars() {
                match c {
                    'l' => long = true,
                    'p' => pids = true,
                    's' => stopped = true,
                    'r' | 'n' => {}
                    _ => {
                        super::fail(sh, io, format!("jobs: -{c}: invalid option"), 2).await?;
                        let _ = io
                            .stderr()
                            .write_str("jobs: usage: jobs [-lnprs] [jobspec ...] or jobs -x command [args]\n")
                            .await;
                        return Ok(2);
                    }
                }
            }
        } else {
            options_done = true;
            specs.push(a.clone());
        }
    }
    sh.jobs.reap();
    let mut status = 0;
    let mut shown: Vec<Job> = Vec::new();
    if specs.is_empty() {
        shown = sh.jobs.visible();
    } else {
        for s in &specs {
            if let Some(name) = sh.jobs.ambiguous(s) {
                super::fail(sh, io, format!("jobs: {name}: ambiguous job spec"), 1).await?;
            }
            match sh.jobs.find(s) {
                Some(j) => shown.push(j.clone()),
                None => {
                    status = super::fail(sh, io, format!("jobs: {s}: no such job"), 1).await?;
                }
            }
        }
    }
    if stopped {
        // Nothing is ever stopped.
        shown.clear();
    }
    let mut out = String::new();
    for j in shown {
        if pids {
            out.push_str(&format!("{}\n", j.pid));
            continue;
        }
        let mark = sh.jobs.mark(j.id);
        if long {
            out.push_str(&format!(
                "[{}]{mark} {} {:<24}{}\n",
                j.id, j.pid, "Running", j.text
            ));
        } else {
            out.push_str(&format!("[{}]{mark}  {:<24}{}\n", j.id, "Running", j.text));
        }
    }
    let _ = io.stdout().write_str(&out).await;
    Ok(status)
}

/// `disown [-ahr] [JOBSPEC…]`: forgets jobs (they go on running).
pub(crate) async fn disown(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let (mut all, mut running) = (false, false);
    // `-h`: the job stays in the table, only marked not to get SIGHUP (a session's
    // jobs never get one), so nothing changes.
    let mut keep = false;
    let mut specs = Vec::new();
    let mut words = args.iter();
    for a in words.by_ref() {
        if a == "--" {
            break;
        }
        match a.strip_prefix('-').filter(|f| !f.is_empty()) {
            // The dispatcher checked the letters.
            Some(flags) => {
                all |= flags.contains('a');
                keep |= flags.contains('h');
                running |= flags.contains('r');
            }
            None => {
                specs.push(a.clone());
                break;
            }
        }
    }
    specs.extend(words.cloned());
    // `-a` or `-r` without names: every job (every job of a session is running).
    if (all || running) && specs.is_empty() {
        if !keep {
            sh.jobs.list.clear();
        }
        return Ok(0);
    }
    if specs.is_empty() {
        specs.push("%+".into());
    }
    let mut status = 0;
    for s in &specs {
        if let Some(name) = sh.jobs.ambiguous(s) {
            super::fail(sh, io, format!("disown: {name}: ambiguous job spec"), 1).await?;
        }
        let job = if s.starts_with('%') {
            sh.jobs.find(s).cloned()
        } else {
            s.parse::<u32>()
                .ok()
                .and_then(|p| sh.jobs.by_pid(p).cloned())
        };
        match job {
            Some(_) if keep => {}
            Some(j) => sh.jobs.remove(j.pid),
            None if s == "%+" => {
                status = super::fail(sh, io, "disown: current: no such job".into(), 1).await?;
            }
            None => status = super::fail(sh, io, format!("disown: {s}: no such job"), 1).await?,
        }
    }
    Ok(status)
}

/// `fg`/`bg`: no job control in a session.
pub(crate) async fn fg_bg(sh: &mut Shell, name: &str, io: &Fds) -> Exec<i32> {
    super::fail(sh, io, format!("{name}: no job control"), 1).await
}

/// `ps`: the session's processes as GNU `ps` shows them without options: the shell, its
/// running jobs and `ps` itself. Options are not supported.
pub(crate) async fn ps(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if let Some(a) = args.first() {
        return super::fail(sh, io, format!("ps: {a}: options are not supported"), 1).await;
    }
    let row = |pid: u32, cmd: &str| format!("{pid:>5} {:<8} {:>8} {cmd}\n", "?", "00:00:00");
    let mut out = format!("{:>5} {:<8} {:>8} CMD\n", "PID", "TTY", "TIME");
    out.push_str(&row(sh.pid, "bash"));
    for j in sh.jobs.visible() {
        let cmd = j.text.split_whitespace().next().unwrap_or("bash");
        out.push_str(&row(j.pid, cmd));
    }
    out.push_str(&row(sh.procs.allocate(), "ps"));
    let _ = io.stdout().write_str(&out).await;
    Ok(0)
}

/// `suspend`: nothing could resume the shell.
pub(crate) async fn suspend(sh: &mut Shell, _args: Vec<String>, io: &Fds) -> Exec<i32> {
    super::fail(sh, io, "suspend: cannot suspend: no job control".into(), 1).await
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn fg_without_job_control() {
        let script = "fg; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: fg: no job control\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn bg_without_job_control() {
        let script = "bg; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: bg: no job control\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn disown_no_such_job() {
        let script = "disown %3; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: disown: %3: no such job\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn jobs_bad_option() {
        let script = "jobs -z; echo $?";
        let expected = (0, "2\n".to_string(), "bash: line 1: jobs: -z: invalid option\njobs: usage: jobs [-lnprs] [jobspec ...] or jobs -x command [args]\n".to_string());
        assert_eq!(run(script).await, expected);
    }
}

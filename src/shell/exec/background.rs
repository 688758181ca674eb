//! `cmd &`: the command runs in a subshell on a task of its own; see [`crate::shell::jobs`].

use tokio::sync::watch;

use super::*;
use crate::shell::jobs::Job;

impl Shell {
    /// Starts `list` as a background job and gives 0 at once (bash's status for `&`).
    pub(super) async fn spawn_job(&mut self, list: &ast::AndOrList, fds: &Fds) -> Exec<i32> {
        let mut sub = match self.subshell() {
            Ok(sub) => sub,
            Err(e) => {
                if matches!(e, ShellError::TooManyTasks(_)) {
                    // A fork bomb (`:(){ :|:& };:`): stop every job of this shell tree, so
                    // the session gets its tasks back.
                    self.jobs_root.kill_all();
                }
                return self.fail(e, fds).await;
            }
        };
        self.jobs.reap();
        let parent = if self.in_job {
            self.cancel.clone()
        } else {
            self.jobs_root.token()
        };
        let token = parent.child_token();
        sub.in_job = true;
        sub.cancel = token.clone();
        *sub.me.cancel.lock().unwrap_or_else(|p| p.into_inner()) = Some(token);
        let pid = sub.bashpid;
        if !self.interactive {
            // A script's background commands ignore SIGINT and SIGQUIT, as in bash.
            sub.traps.insert(2, String::new());
            sub.traps.insert(3, String::new());
            sub.sync_caught();
        }
        let proc = sub.me.clone();
        // Without job control a background command's stdin is /dev/null.
        let job_fds = if self.interactive || self.is_subshell {
            fds.clone()
        } else {
            fds.with_stdin(forkbox_commands::Input::empty())
        };
        let (tx, rx) = watch::channel(None);
        let text = format!("{list} &");
        let list = list.clone();
        self.budget.spawn(async move {
            // `( … ) &`: the job is that subshell (as bash runs it), so its traps and
            // `$BASHPID` are the job's.
            let r = match lone_subshell(&list) {
                Some(inner) => sub.exec_list(inner, &job_fds).await,
                None => sub.exec_and_or(&list, &job_fds).await,
            };
            let status = flow_status(r, sub.last_status);
            let mut status = sub.run_exit_trap(status, &job_fds).await;
            drop(job_fds);
            if let Some(sig) = *sub.me.killed.lock().unwrap_or_else(|p| p.into_inner()) {
                status = 128 + sig;
            }
            sub.procs.forget(sub.bashpid);
            let _ = tx.send(Some(status));
        });
        let id = self.jobs.next_id();
        self.jobs.list.push(Job {
            id,
            pid,
            text,
            done: rx,
            proc,
        });
        self.jobs.last_pid = Some(pid);
        if self.interactive && !self.is_subshell {
            let _ = fds.stderr().write_str(&format!("[{id}] {pid}\n")).await;
        }
        Ok(0)
    }
}

/// The list of `( LIST )` when that is the whole job, without redirections.
fn lone_subshell(list: &ast::AndOrList) -> Option<&CompoundList> {
    if !list.additional.is_empty() || list.first.bang || list.first.seq.len() != 1 {
        return None;
    }
    match &list.first.seq[0] {
        Command::Compound(CompoundCommand::Subshell(s), None) => Some(&s.list),
        _ => None,
    }
}

//! `cmd &`: the command runs in a subshell on a task of its own; see [`crate::shell::jobs`].

use tokio::sync::watch;

use super::*;
use crate::shell::jobs::Job;

impl Shell {
    /// Starts `list` as a background job and gives 0 at once (bash's status for `&`).
    pub(super) async fn spawn_job(&mut self, list: &ast::AndOrList, fds: &Fds) -> Exec<i32> {
        let text = format!("{} &", crate::shell::printer::job_line(list));
        self.spawn_job_with(list, fds, false, text).await
    }

    /// `coproc [NAME] COMMAND`: COMMAND as a background job reading a pipe the shell
    /// writes through `NAME[1]` and writing one it reads through `NAME[0]`; `NAME_PID` is
    /// its process id. The descriptors are bash's: it moves both ends of both pipes to
    /// the highest free descriptors from 63 down and keeps the first and the last (63
    /// and 60 when those are free), so the coprocess itself has neither.
    pub(super) async fn exec_coproc(&mut self, c: &ast::CoprocessCommand, fds: &Fds) -> Exec<i32> {
        let name = c
            .name
            .as_ref()
            .map_or("COPROC", |w| w.value.as_str())
            .to_string();
        self.reap_coproc();
        if let Some(old) = self.jobs.coproc.take() {
            let msg = format!(
                "warning: execute_coproc: coproc [{}:{}] still exists",
                old.pid, old.name
            );
            self.report(&fds.stderr(), &ShellError::Builtin(msg)).await;
        }
        if !builtins::is_name(&name) {
            let e = ShellError::Builtin(format!("`{name}': not a valid identifier"));
            return self.fail(e, fds).await;
        }
        let (to_w, to_r) = forkbox_commands::pipe();
        let (from_w, from_r) = forkbox_commands::pipe();
        let whole = ast::Pipeline {
            timed: None,
            bang: false,
            seq: vec![Command::Compound(
                CompoundCommand::Coprocess(c.clone()),
                None,
            )],
        };
        let text = format!("{} &", crate::shell::printer::job_line(&lone(whole)));
        let list = lone(ast::Pipeline {
            timed: None,
            bang: false,
            seq: vec![(*c.body).clone()],
        });
        let job_fds = fds.with_stdin(to_r).with_stdout(from_w);
        self.spawn_job_with(&list, &job_fds, true, text).await?;
        drop(job_fds);
        let mut table = self.exec_fds.clone().unwrap_or_else(|| fds.clone());
        let mut free = Vec::with_capacity(4);
        let mut n = crate::shell::procsubst::FIRST_FD;
        while free.len() < 4 && n > 2 {
            if table.is_closed(n) {
                free.push(n);
            }
            n -= 1;
        }
        let read_fd = free.first().copied().unwrap_or(n);
        let write_fd = free.last().copied().unwrap_or(n);
        table.set_fd(read_fd, crate::shell::redirect::Fd::Read(from_r));
        table.set_fd(write_fd, crate::shell::redirect::Fd::Write(to_w));
        self.exec_gen += 1;
        table.generation = self.exec_gen;
        self.exec_fds = Some(table);
        let pid = self.jobs.last_pid.unwrap_or_default();
        self.jobs.coproc = Some(crate::shell::jobs::Coproc {
            name: name.clone(),
            pid,
            fds: [read_fd, write_fd],
        });
        let set = self
            .unset_var(&name)
            .and_then(|()| self.assign_index(&name, 0, &read_fd.to_string(), false))
            .and_then(|()| self.assign_index(&name, 1, &write_fd.to_string(), false))
            .and_then(|()| self.set_var(&format!("{name}_PID"), &pid.to_string()));
        match set {
            Ok(()) => Ok(0),
            Err(e) => self.fail(e, fds).await,
        }
    }

    /// Forgets the coprocess once it has ended and been waited for (or replaced by
    /// another): as bash does when it reaps one, the shell's ends of its pipes are closed
    /// and `NAME` and `NAME_PID` unset.
    pub(crate) fn reap_coproc(&mut self) {
        let Some(cp) = self.jobs.coproc.take_if(|cp| {
            self.jobs
                .list
                .iter()
                .find(|j| j.pid == cp.pid)
                .is_none_or(|j| j.status().is_some())
        }) else {
            return;
        };
        if let Some(table) = &mut self.exec_fds {
            for fd in cp.fds {
                table.close_fd(fd);
            }
            self.exec_gen += 1;
            table.generation = self.exec_gen;
        }
        let _ = self.unset_var(&cp.name);
        let _ = self.unset_var(&format!("{}_PID", cp.name));
    }

    /// [`Shell::spawn_job`], shown by `jobs` as `text`. A `coproc` job keeps `fds`' stdin
    /// (its pipe; other jobs of a script read nothing), and a `( … )` body is a subshell
    /// of the job's, as bash forks the coprocess before the subshell.
    async fn spawn_job_with(
        &mut self,
        list: &ast::AndOrList,
        fds: &Fds,
        coproc: bool,
        text: String,
    ) -> Exec<i32> {
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
        *sub.me.cancel.lock().unwrap_or_else(|p| p.into_inner()) = Some(token.clone());
        let pid = sub.bashpid;
        if !self.interactive && !self.job_control() {
            // A script's background commands ignore SIGINT and SIGQUIT, as in bash
            // (unless job control puts them in process groups of their own).
            sub.traps.insert(2, String::new());
            sub.traps.insert(3, String::new());
            sub.sync_caught();
        }
        let proc = sub.me.clone();
        // Without job control a background command's stdin is /dev/null.
        let job_fds = if coproc || self.interactive || self.is_subshell || self.job_control() {
            fds.clone()
        } else {
            fds.with_stdin(forkbox_commands::Input::empty())
        };
        let (tx, rx) = watch::channel(None);
        let list = list.clone();
        self.budget.spawn(async move {
            // A signal the job does not catch cancels it: its commands see that at their
            // next checkpoint and the job winds down as it would on its own (its EXIT trap
            // runs). One that waits where no checkpoint comes (a read from a pipe nobody
            // writes) is dropped after a short grace.
            let forced = async {
                token.cancelled().await;
                tokio::time::sleep(KILL_GRACE).await;
            };
            let ran = tokio::select! {
                () = forced => None,
                r = async {
                    // `( … ) &`: the job is that subshell (as bash runs it), so its traps
                    // and `$BASHPID` are the job's.
                    match lone_subshell(&list).filter(|_| !coproc) {
                        Some(inner) => sub.exec_list(inner, &job_fds).await,
                        None => sub.exec_and_or(&list, &job_fds).await,
                    }
                } => Some(r),
            };
            let status = match ran {
                Some(r) => flow_status(r, sub.last_status),
                None => {
                    let sig = sub.me.killed.lock().unwrap_or_else(|p| p.into_inner());
                    128 + sig.unwrap_or(15)
                }
            };
            if token.is_cancelled() {
                // Killed: bash runs the EXIT trap of a shell a fatal signal ends. Its
                // commands run under a token of their own (the job's is cancelled), which
                // a second signal can still cancel.
                let fresh = parent.child_token();
                sub.cancel = fresh.clone();
                *sub.me.cancel.lock().unwrap_or_else(|p| p.into_inner()) = Some(fresh);
            }
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

impl Shell {
    /// `set -m` in this shell (not a subshell: bash turns job control off in those).
    pub(crate) fn job_control(&self) -> bool {
        self.opts.monitor && !self.is_subshell
    }

    /// The job `pid` ended with `status` and leaves the table: reported as bash reports
    /// it. A signal other than SIGINT, SIGTERM and SIGPIPE that the shell does not
    /// catch gives `bash: line N: PID Killed   CMD` with or without job control; under
    /// `set -m` every other end gives a job line (`[1]+  Done   CMD`, `Exit 3`,
    /// `Terminated`). Its status is remembered for a later `wait PID`.
    pub(crate) async fn job_ended(&mut self, pid: u32, status: i32, io: &Fds) {
        if let Some(job) = self.jobs.by_pid(pid) {
            let text = job.text.strip_suffix(" &").unwrap_or(&job.text);
            let killed = job.killed();
            if let Some(sig) = killed.filter(|s| ![2, 13, 15].contains(s)) {
                let msg = format!(
                    "{pid} {:<24}{text}",
                    crate::shell::jobs::signal_description(sig)
                );
                self.report(&io.stderr(), &ShellError::Builtin(msg)).await;
            } else if self.job_control() {
                let mark = self.jobs.mark(job.id);
                let state = match killed {
                    Some(sig) => crate::shell::jobs::signal_description(sig),
                    None if status == 0 => "Done".to_string(),
                    None => format!("Exit {status}"),
                };
                let line = format!("[{}]{mark}  {state:<24}{text}\n", job.id);
                let _ = io.stderr().write_str(&line).await;
            }
        }
        self.jobs.remove(pid);
        self.jobs.finished.push_back((pid, status));
        if self.jobs.finished.len() > crate::shell::jobs::MAX_REMEMBERED {
            self.jobs.finished.pop_front();
        }
    }

    /// Under `set -m`, after a foreground command that is not a builtin: the jobs that
    /// have ended since are reported and leave the table, as bash does when it has
    /// waited for a child.
    pub(crate) async fn report_ended_jobs(&mut self, io: &Fds) {
        if !self.job_control() {
            return;
        }
        let ended: Vec<(u32, i32)> = self
            .jobs
            .list
            .iter()
            .filter_map(|j| j.status().map(|s| (j.pid, s)))
            .collect();
        for (pid, status) in ended {
            self.job_ended(pid, status, io).await;
        }
    }
}

/// `pipeline` as a list of its own.
fn lone(pipeline: ast::Pipeline) -> ast::AndOrList {
    ast::AndOrList {
        first: pipeline,
        additional: Vec::new(),
    }
}

/// How long a cancelled job has to wind down on its own before it is dropped.
const KILL_GRACE: std::time::Duration = std::time::Duration::from_millis(50);

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

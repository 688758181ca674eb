//! Background jobs and signals.
//!
//! `cmd &` runs `cmd` in a subshell on a task of its own (one of the session's tasks, so a
//! fork bomb hits the session's bound) and the list goes on at once. Each job gets a
//! bash-like pid from a counter the whole session shares, which is also what `$BASHPID`
//! shows in subshells; `$$` stays the top shell's.
//!
//! Signals are messages: every (sub)shell registers a [`Proc`] under its pid in the
//! session's [`Procs`]. `kill` looks the pid up: a signal the target traps (or ignores)
//! is queued for it and the target runs its handler between two commands; any other
//! signal takes its default action at once: a job is cancelled and ends with status
//! 128+N, a shell ends at its next command boundary (`kill $$`).
//!
//! Jobs stop when the shell that owns the job table goes away (the script ended or the
//! session closed): bash leaves them running, but nothing of a session may outlive it.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// Most finished background statuses a shell remembers for `wait PID` (bash keeps as many
/// as the process limit); the oldest go first.
pub const MAX_REMEMBERED: usize = 1024;

pub use forkbox_commands::signal::{signal_name, signal_number};

/// The `kill -l` / `trap -l` table.
pub fn signal_table() -> String {
    let mut out = String::new();
    let nums: Vec<i32> = (1..=64).filter(|n| signal_name(*n).is_some()).collect();
    for (i, n) in nums.iter().enumerate() {
        let name = signal_name(*n).unwrap_or_default();
        out.push_str(&format!("{n:2}) SIG{name}"));
        out.push(if (i + 1) % 5 == 0 { '\n' } else { '\t' });
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// How bash describes a process that signal `n` ended (`strsignal`).
pub fn signal_description(n: i32) -> String {
    let d = match n {
        1 => "Hangup",
        2 => "Interrupt",
        3 => "Quit",
        4 => "Illegal instruction",
        5 => "Trace/breakpoint trap",
        6 => "Aborted",
        7 => "Bus error",
        8 => "Floating point exception",
        9 => "Killed",
        10 => "User defined signal 1",
        11 => "Segmentation fault",
        12 => "User defined signal 2",
        13 => "Broken pipe",
        14 => "Alarm clock",
        15 => "Terminated",
        16 => "Stack fault",
        24 => "CPU time limit exceeded",
        25 => "File size limit exceeded",
        26 => "Virtual timer expired",
        27 => "Profiling timer expired",
        29 => "I/O possible",
        30 => "Power failure",
        31 => "Bad system call",
        n if (34..=64).contains(&n) => return format!("Real-time signal {}", n - 34),
        n => return format!("Unknown signal {n}"),
    };
    d.to_string()
}

/// Signals whose default action is to do nothing.
fn ignored_by_default(sig: i32) -> bool {
    matches!(sig, 17 | 18 | 23 | 28)
}

/// One shell or job as `kill` sees it.
#[derive(Debug, Default)]
pub(crate) struct Proc {
    /// Signals the target traps or ignores (it decides what to do with them).
    pub caught: Mutex<HashSet<i32>>,
    /// Signals delivered and not yet handled.
    pub pending: Mutex<VecDeque<i32>>,
    pub has_pending: AtomicBool,
    /// Wakes a shell blocked in `wait` when a signal arrives.
    pub wake: Notify,
    /// For a job: cancelled by a signal it does not catch.
    pub cancel: Mutex<Option<CancellationToken>>,
    /// The signal that ended it, if one did.
    pub killed: Mutex<Option<i32>>,
}

impl Proc {
    pub fn take_pending(&self) -> Vec<i32> {
        if !self.has_pending.swap(false, Ordering::AcqRel) {
            return Vec::new();
        }
        lock(&self.pending).drain(..).collect()
    }

    fn push(&self, sig: i32) {
        lock(&self.pending).push_back(sig);
        self.has_pending.store(true, Ordering::Release);
        self.wake.notify_waiters();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every live shell and job of a session by pid, and the pid counter.
#[derive(Debug, Default)]
pub(crate) struct Procs {
    map: Mutex<HashMap<u32, Weak<Proc>>>,
    next: AtomicU32,
    /// The session's top shell (`$$`): the pid before the first the counter hands out.
    root: u32,
}

/// What `kill` did.
#[derive(Debug, PartialEq)]
pub(crate) enum Delivery {
    Delivered,
    NoSuchProcess,
}

impl Procs {
    pub fn new(first: u32) -> Arc<Procs> {
        Arc::new(Procs {
            map: Mutex::new(HashMap::new()),
            next: AtomicU32::new(first),
            root: first.saturating_sub(1),
        })
    }

    /// The session's top shell's pid (`$$`).
    pub fn root(&self) -> u32 {
        self.root
    }

    /// A fresh pid, registered for `proc`.
    pub fn register(&self, proc: &Arc<Proc>) -> u32 {
        let pid = self.next.fetch_add(1, Ordering::Relaxed);
        self.register_as(pid, proc);
        pid
    }

    /// A fresh pid for something `kill` cannot reach (`ps` itself).
    pub fn allocate(&self) -> u32 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    pub fn register_as(&self, pid: u32, proc: &Arc<Proc>) {
        let mut map = lock(&self.map);
        map.retain(|_, w| w.strong_count() > 0);
        map.insert(pid, Arc::downgrade(proc));
    }

    pub fn forget(&self, pid: u32) {
        lock(&self.map).remove(&pid);
    }

    /// Sends `sig` to `pid` (0 only checks that it exists).
    pub fn kill(&self, pid: u32, sig: i32) -> Delivery {
        let Some(p) = lock(&self.map).get(&pid).and_then(Weak::upgrade) else {
            return Delivery::NoSuchProcess;
        };
        if sig == 0 {
            return Delivery::Delivered;
        }
        let caught = lock(&p.caught).contains(&sig);
        let job = lock(&p.cancel).clone();
        if caught && sig != 9 && sig != 19 {
            p.push(sig);
        } else if ignored_by_default(sig) || sig == 19 || sig == 20 {
            // Default: ignore (stopping is not modelled: nothing could continue it).
        } else if let Some(cancel) = job {
            *lock(&p.killed) = Some(sig);
            cancel.cancel();
        } else {
            p.push(sig);
        }
        Delivery::Delivered
    }
}

/// The root of every job's cancellation in one shell tree. Jobs started by the top shell
/// (or its subshells) are children of its current token; jobs started inside a job are
/// children of that job's token, so cancelling the root reaches every job.
#[derive(Debug, Default)]
pub(crate) struct JobsRoot {
    token: Mutex<CancellationToken>,
}

impl JobsRoot {
    pub fn token(&self) -> CancellationToken {
        lock(&self.token).clone()
    }

    /// Stops every job (a fork bomb hit the session's task limit); later jobs start
    /// under a fresh token.
    pub fn kill_all(&self) {
        let old = std::mem::take(&mut *lock(&self.token));
        old.cancel();
    }
}

/// Held by the top shell only: when it goes away, every job of its tree stops.
#[derive(Debug)]
pub(crate) struct JobsGuard(pub Arc<JobsRoot>);

impl Drop for JobsGuard {
    fn drop(&mut self) {
        self.0.token().cancel();
    }
}

/// One background job.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub id: usize,
    pub pid: u32,
    /// The command as `jobs` shows it (`sleep 1 &`).
    pub text: String,
    pub done: watch::Receiver<Option<i32>>,
    /// The job's shell as `kill` sees it: which signal ended it, if one did.
    pub proc: Arc<Proc>,
}

impl Job {
    pub fn status(&self) -> Option<i32> {
        *self.done.borrow()
    }

    /// The signal that ended the job, if one did.
    pub fn killed(&self) -> Option<i32> {
        *lock(&self.proc.killed)
    }

    /// Waits for the job to end; its status.
    pub async fn wait(&self) -> i32 {
        let mut rx = self.done.clone();
        loop {
            if let Some(s) = *rx.borrow_and_update() {
                return s;
            }
            if rx.changed().await.is_err() {
                return rx.borrow().unwrap_or(127);
            }
        }
    }
}

/// A shell's job table. Cloning shares the jobs (their statuses are channels); a subshell
/// starts with an empty table.
#[derive(Clone, Debug, Default)]
pub(crate) struct Jobs {
    pub list: Vec<Job>,
    /// Statuses of jobs gone from the table, by pid, oldest first.
    pub finished: VecDeque<(u32, i32)>,
    /// `$!`.
    pub last_pid: Option<u32>,
    /// The parent's jobs, which a subshell lists (`jobs -p | wc -l`, `$(jobs)`) but does
    /// not wait for.
    pub inherited: Vec<Job>,
    /// The coprocess the shell keeps track of: one at a time, as bash 5.2 does (a second
    /// `coproc` replaces it, leaving the first one's variables as they are).
    pub coproc: Option<Coproc>,
}

/// A coprocess (`coproc NAME …`) until it is reaped: then bash closes the shell's ends of
/// its pipes and unsets `NAME` and `NAME_PID`.
#[derive(Clone, Debug)]
pub(crate) struct Coproc {
    pub name: String,
    pub pid: u32,
    /// The shell's descriptors: `NAME[0]` reads the coprocess's output, `NAME[1]` writes
    /// its input.
    pub fds: [i32; 2],
}

impl Jobs {
    /// Drops finished jobs from the table, remembering their statuses (bash reports
    /// nothing for them in a non-interactive shell).
    pub fn reap(&mut self) {
        let mut keep = Vec::new();
        for j in self.list.drain(..) {
            match j.status() {
                Some(s) => {
                    self.finished.push_back((j.pid, s));
                    if self.finished.len() > MAX_REMEMBERED {
                        self.finished.pop_front();
                    }
                }
                None => keep.push(j),
            }
        }
        self.list = keep;
    }

    pub fn next_id(&self) -> usize {
        self.list.iter().map(|j| j.id).max().unwrap_or(0) + 1
    }

    /// What `jobs` lists: this shell's jobs, or a subshell's parent's.
    pub fn visible(&self) -> Vec<Job> {
        let mut v: Vec<Job> = self.inherited.clone();
        v.extend(self.list.iter().cloned());
        v.retain(|j| j.status().is_none());
        v
    }

    /// The current job (`%+`, `%%`) and the previous one (`%-`): the newest two.
    pub fn marks(&self) -> (Option<usize>, Option<usize>) {
        let mut ids: Vec<usize> = self
            .list
            .iter()
            .chain(&self.inherited)
            .map(|j| j.id)
            .collect();
        ids.sort_unstable();
        let cur = ids.last().copied();
        let prev = ids.len().checked_sub(2).and_then(|i| ids.get(i)).copied();
        (cur, prev)
    }

    /// How `jobs` marks job `id`: `+` current, `-` previous, else a blank.
    pub fn mark(&self, id: usize) -> char {
        match self.marks() {
            (Some(cur), _) if cur == id => '+',
            (_, Some(prev)) if prev == id => '-',
            _ => ' ',
        }
    }

    /// Resolves a job spec (`%1`, `%%`, `%+`, `%-`, `%name`, `%?text`).
    pub fn find(&self, spec: &str) -> Option<&Job> {
        let rest = spec.strip_prefix('%')?;
        let (cur, prev) = self.marks();
        if self.list.is_empty() && !self.inherited.is_empty() {
            let parent = Jobs {
                list: self.inherited.clone(),
                ..Jobs::default()
            };
            return parent
                .find(spec)
                .and_then(|j| self.inherited.iter().find(|i| i.pid == j.pid));
        }
        let id = match rest {
            "" | "%" | "+" => cur?,
            "-" => prev.or(cur)?,
            n if n.chars().all(|c| c.is_ascii_digit()) => n.parse().ok()?,
            n => {
                // A name that more than one job matches names none (see `ambiguous`).
                let found = self.named(n);
                return if found.len() == 1 {
                    found.first().copied()
                } else {
                    None
                };
            }
        };
        self.list.iter().find(|j| j.id == id)
    }

    /// The jobs `%name` (whose command starts with it) or `%?text` (which contains it)
    /// names, `n` being what follows the `%`.
    fn named(&self, n: &str) -> Vec<&Job> {
        match n.strip_prefix('?') {
            Some(t) => self.list.iter().filter(|j| j.text.contains(t)).collect(),
            None => self.list.iter().filter(|j| j.text.starts_with(n)).collect(),
        }
    }

    /// The text bash names in `NAME: ambiguous job spec` when `spec` (`%name`, `%?text`)
    /// matches more than one job.
    pub fn ambiguous<'a>(&self, spec: &'a str) -> Option<&'a str> {
        let rest = spec.strip_prefix('%')?;
        if rest.is_empty()
            || matches!(rest, "%" | "+" | "-")
            || rest.chars().all(|c| c.is_ascii_digit())
            || self.list.is_empty()
        {
            return None;
        }
        (self.named(rest).len() > 1).then(|| rest.strip_prefix('?').unwrap_or(rest))
    }

    pub fn by_pid(&self, pid: u32) -> Option<&Job> {
        self.list.iter().find(|j| j.pid == pid)
    }

    pub fn remembered(&self, pid: u32) -> Option<i32> {
        self.finished
            .iter()
            .rev()
            .find(|(p, _)| *p == pid)
            .map(|(_, s)| *s)
    }

    pub fn remove(&mut self, pid: u32) {
        self.list.retain(|j| j.pid != pid);
    }
}

/// The traps of a shell: handler text by condition (0 = EXIT, signals by number, and the
/// pseudo-signals below).
pub(crate) type TrapTable = BTreeMap<i32, String>;

/// Pseudo-signal numbers for the traps that are not signals, ordered as `trap -p` lists
/// them (after the signals).
pub const TRAP_DEBUG: i32 = 65;
pub const TRAP_ERR: i32 = 66;
pub const TRAP_RETURN: i32 = 67;

/// The number of a trap condition: a signal, `EXIT`/`0`, `DEBUG`, `ERR`, `RETURN`.
pub fn trap_number(spec: &str) -> Option<i32> {
    let up = spec.to_ascii_uppercase();
    match up.as_str() {
        "0" | "EXIT" | "SIGEXIT" => Some(0),
        "DEBUG" => Some(TRAP_DEBUG),
        "ERR" => Some(TRAP_ERR),
        "RETURN" => Some(TRAP_RETURN),
        _ => signal_number(spec),
    }
}

/// How `trap -p` names condition `n`.
pub fn trap_name(n: i32) -> String {
    match n {
        0 => "EXIT".into(),
        TRAP_DEBUG => "DEBUG".into(),
        TRAP_ERR => "ERR".into(),
        TRAP_RETURN => "RETURN".into(),
        n => format!("SIG{}", signal_name(n).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_names_and_numbers() {
        assert_eq!(signal_number("TERM"), Some(15));
        assert_eq!(signal_number("sigint"), Some(2));
        assert_eq!(signal_number("9"), Some(9));
        assert_eq!(signal_number("RTMIN+2"), Some(36));
        assert_eq!(signal_number("33"), None);
        assert_eq!(signal_number("FOO"), None);
        assert_eq!(signal_name(63).as_deref(), Some("RTMAX-1"));
        assert!(signal_table().starts_with(" 1) SIGHUP\t 2) SIGINT"));
        assert!(signal_table().ends_with("63) SIGRTMAX-1\t64) SIGRTMAX\t\n"));
    }

    #[test]
    fn kill_queues_caught_signals_and_cancels_jobs() {
        let procs = Procs::new(100);
        let shell = Arc::new(Proc::default());
        let pid = procs.register(&shell);
        lock(&shell.caught).insert(10);
        assert_eq!(procs.kill(pid, 10), Delivery::Delivered);
        assert_eq!(shell.take_pending(), vec![10]);
        let job = Arc::new(Proc::default());
        let token = CancellationToken::new();
        *lock(&job.cancel) = Some(token.clone());
        let jpid = procs.register(&job);
        procs.kill(jpid, 15);
        assert!(token.is_cancelled());
        assert_eq!(*lock(&job.killed), Some(15));
        drop(job);
        assert_eq!(procs.kill(jpid, 15), Delivery::NoSuchProcess);
    }

    #[test]
    fn job_specs() {
        let (_tx, rx) = watch::channel(None);
        let mk = |id, pid, text: &str| Job {
            id,
            pid,
            text: text.into(),
            done: rx.clone(),
            proc: Arc::new(Proc::default()),
        };
        let jobs = Jobs {
            list: vec![mk(1, 10, "sleep 1 &"), mk(2, 11, "cat f &")],
            ..Jobs::default()
        };
        assert_eq!(jobs.find("%%").map(|j| j.pid), Some(11));
        assert_eq!(jobs.find("%-").map(|j| j.pid), Some(10));
        assert_eq!(jobs.find("%1").map(|j| j.pid), Some(10));
        assert_eq!(jobs.find("%cat").map(|j| j.pid), Some(11));
        assert_eq!(jobs.find("%?leep").map(|j| j.pid), Some(10));
        assert!(jobs.find("%3").is_none());
    }
}

//! What one session may hold at once: bytes of memory and live tasks.
//!
//! A [`Budget`] is shared by everything a session runs — every shell, subshell, pipeline
//! stage and command of it — so one session's variables, buffers and tasks together stay
//! under its bounds, and the server as a whole under sessions × bounds. Charges are RAII
//! guards: a [`Charge`] or [`TaskSlot`] gives back what it took when dropped, on every
//! exit path, cancellation included.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;

/// Memory one session may hold by default (variables, buffers of commands such as `sort`,
/// captured substitutions, pipe contents): enough for real work on data, small enough that
/// a few hundred sessions fit a modest server.
pub const DEFAULT_MEMORY: usize = 256 * 1024 * 1024;

/// Tasks one session may have alive at once by default: pipeline stages, subshells,
/// substitutions and jobs together. Real scripts stay far below; a fork bomb hits it
/// after a few milliseconds instead of taking the server's memory.
pub const DEFAULT_TASKS: usize = 1024;

/// A session's shared bounds. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct Budget {
    inner: Arc<Inner>,
}

struct Inner {
    mem_limit: usize,
    mem_used: AtomicUsize,
    task_limit: usize,
    tasks: AtomicUsize,
    /// Set when a task was refused; until every task of the session has ended, every
    /// further request is refused too, so a fork bomb unwinds instead of regrowing into
    /// each slot its branches free.
    tripped: AtomicBool,
    /// Whether the refusal was reported since the budget tripped (one message, not one
    /// per refused branch).
    reported: AtomicBool,
    /// Every task spawned for the session (redirection drains, file readers, fresh
    /// stacks, snapshots): the session waits for all of them before its fork is deleted,
    /// so nothing writes to a fork that is gone.
    spawned: TaskTracker,
    /// The session's account with its server's CPU governor; `None`: never slowed.
    cpu: Option<crate::cpu::SessionCpu>,
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Budget")
            .field("mem_used", &self.mem_used())
            .field("mem_limit", &self.inner.mem_limit)
            .field("tasks", &self.tasks())
            .field("task_limit", &self.inner.task_limit)
            .finish()
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new(DEFAULT_MEMORY, DEFAULT_TASKS)
    }
}

/// A charge over the session's memory limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("out of memory (session limit {})", human(*.limit))]
pub struct OutOfMemory {
    pub limit: usize,
}

/// A task over the session's task limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("fork: Resource temporarily unavailable (session limit of {limit} tasks)")]
pub struct TooManyTasks {
    pub limit: usize,
}

/// `268435456` → `256M`, the way limits are written on the command line.
fn human(bytes: usize) -> String {
    const UNITS: [(&str, usize); 3] = [("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)];
    for (unit, size) in UNITS {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{}{unit}", bytes / size);
        }
    }
    format!("{bytes} bytes")
}

impl Budget {
    pub fn new(mem_limit: usize, task_limit: usize) -> Budget {
        Budget {
            inner: Arc::new(Inner {
                mem_limit,
                mem_used: AtomicUsize::new(0),
                task_limit,
                tasks: AtomicUsize::new(0),
                tripped: AtomicBool::new(false),
                reported: AtomicBool::new(false),
                spawned: TaskTracker::new(),
                cpu: None,
            }),
        }
    }

    /// A budget whose session is paced by `governor` at its yield points
    /// ([`Budget::pace`]).
    pub fn with_cpu(
        mem_limit: usize,
        task_limit: usize,
        governor: Arc<crate::cpu::CpuGovernor>,
    ) -> Budget {
        let mut b = Budget::new(mem_limit, task_limit);
        if let Some(inner) = Arc::get_mut(&mut b.inner) {
            inner.cpu = Some(crate::cpu::SessionCpu::new(governor));
        }
        b
    }

    /// A yield point of the session's computation: charges the time the current task ran
    /// since its last yield point to the session's CPU account and yields to the runtime,
    /// or, when the server is contended and the session is over its share, sleeps for as
    /// long as the governor says (see [`crate::cpu`]).
    pub async fn pace(&self) {
        match self.pause() {
            Some(pause) => tokio::time::sleep(pause).await,
            None => tokio::task::yield_now().await,
        }
        crate::cpu::resumed();
    }

    /// The synchronous half of [`Budget::pace`], for yield points that build their own
    /// future (WASI's epoch callback): how long to sleep, if at all; call
    /// [`crate::cpu::resumed`] once the task goes on.
    pub fn pause(&self) -> Option<std::time::Duration> {
        let cpu = self.inner.cpu.as_ref()?;
        let now = std::time::Instant::now();
        cpu.record(now, crate::cpu::slice(now))
    }

    /// The pauses the CPU governor imposed on this session so far.
    pub fn cpu_pauses(&self) -> crate::cpu::PauseStats {
        self.inner
            .cpu
            .as_ref()
            .map(crate::cpu::SessionCpu::stats)
            .unwrap_or_default()
    }

    /// Spawns a task of the session, tracked so [`Budget::close_and_wait`] waits for it.
    pub fn spawn<F>(&self, fut: F) -> JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.inner.spawned.spawn(fut)
    }

    /// Stops taking new tasks into account as live and waits until every task spawned
    /// with [`Budget::spawn`] has ended (the session's teardown; cancel first).
    pub async fn close_and_wait(&self) {
        self.inner.spawned.close();
        self.inner.spawned.wait().await;
    }

    /// Whether more is charged than the limit allows (after forced charges).
    pub fn over_limit(&self) -> Option<OutOfMemory> {
        (self.mem_used() > self.inner.mem_limit).then_some(OutOfMemory {
            limit: self.inner.mem_limit,
        })
    }

    /// Bytes charged now.
    pub fn mem_used(&self) -> usize {
        self.inner.mem_used.load(Ordering::Relaxed)
    }

    pub fn mem_limit(&self) -> usize {
        self.inner.mem_limit
    }

    /// Tasks alive now.
    pub fn tasks(&self) -> usize {
        self.inner.tasks.load(Ordering::Relaxed)
    }

    pub fn task_limit(&self) -> usize {
        self.inner.task_limit
    }

    /// Takes `bytes` from the budget until the returned guard is dropped.
    pub fn charge(&self, bytes: usize) -> Result<Charge, OutOfMemory> {
        let mut c = Charge {
            budget: self.clone(),
            bytes: 0,
        };
        c.grow(bytes)?;
        Ok(c)
    }

    /// An empty charge, to [`Charge::resize`] as a buffer grows.
    pub fn empty_charge(&self) -> Charge {
        Charge {
            budget: self.clone(),
            bytes: 0,
        }
    }

    /// Takes one task slot until the returned guard is dropped. Once a request was
    /// refused, every request is refused until all the session's tasks have ended.
    pub fn task(&self) -> Result<TaskSlot, TooManyTasks> {
        let limit = self.inner.task_limit;
        if self.inner.tripped.load(Ordering::Acquire) {
            return Err(TooManyTasks { limit });
        }
        if self
            .inner
            .tasks
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_err()
        {
            self.inner.tripped.store(true, Ordering::Release);
            return Err(TooManyTasks { limit });
        }
        Ok(TaskSlot {
            budget: self.clone(),
        })
    }

    /// True the first time it is asked after the task limit was hit: the one refusal
    /// to report to the user.
    pub fn first_refusal(&self) -> bool {
        !self.inner.reported.swap(true, Ordering::AcqRel)
    }

    fn take(&self, bytes: usize) -> Result<(), OutOfMemory> {
        let limit = self.inner.mem_limit;
        self.inner
            .mem_used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|n| *n <= limit)
            })
            .map(|_| ())
            .map_err(|_| OutOfMemory { limit })
    }

    fn give(&self, bytes: usize) {
        self.inner.mem_used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// Bytes taken from a [`Budget`]; given back on drop.
#[derive(Debug)]
pub struct Charge {
    budget: Budget,
    bytes: usize,
}

impl Charge {
    /// Bytes this guard holds.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Takes `more` bytes; on failure the guard keeps what it had.
    pub fn grow(&mut self, more: usize) -> Result<(), OutOfMemory> {
        self.budget.take(more)?;
        self.bytes += more;
        Ok(())
    }

    /// A second charge of the same size, taken even past the limit: for memory that was
    /// already copied (a subshell's variables). Check [`Budget::over_limit`] after.
    pub fn duplicate(&self) -> Charge {
        self.budget
            .inner
            .mem_used
            .fetch_add(self.bytes, Ordering::AcqRel);
        Charge {
            budget: self.budget.clone(),
            bytes: self.bytes,
        }
    }

    /// Makes the guard hold exactly `bytes`, even past the limit (for memory that is
    /// already held and only being counted).
    pub fn force(&mut self, bytes: usize) {
        if bytes >= self.bytes {
            self.budget
                .inner
                .mem_used
                .fetch_add(bytes - self.bytes, Ordering::AcqRel);
        } else {
            self.budget.give(self.bytes - bytes);
        }
        self.bytes = bytes;
    }

    /// Makes the guard hold exactly `bytes` (taking or giving back the difference).
    pub fn resize(&mut self, bytes: usize) -> Result<(), OutOfMemory> {
        if bytes > self.bytes {
            self.grow(bytes - self.bytes)
        } else {
            self.budget.give(self.bytes - bytes);
            self.bytes = bytes;
            Ok(())
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.give(self.bytes);
    }
}

/// One live task of a session; the slot is free again on drop.
#[derive(Debug)]
pub struct TaskSlot {
    budget: Budget,
}

impl Drop for TaskSlot {
    fn drop(&mut self) {
        let inner = &self.budget.inner;
        if inner.tasks.fetch_sub(1, Ordering::AcqRel) == 1 {
            inner.tripped.store(false, Ordering::Release);
            inner.reported.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_given_back() {
        let b = Budget::new(100, 2);
        let c1 = b.charge(60).unwrap();
        assert_eq!(b.charge(41).unwrap_err(), OutOfMemory { limit: 100 });
        let mut c2 = b.charge(40).unwrap();
        assert_eq!(b.mem_used(), 100);
        c2.resize(10).unwrap();
        assert_eq!(b.mem_used(), 70);
        assert!(c2.resize(41).is_err());
        assert_eq!(c2.bytes(), 10);
        drop(c1);
        drop(c2);
        assert_eq!(b.mem_used(), 0);
    }

    #[test]
    fn duplicates_and_forced_charges_count() {
        let b = Budget::new(100, 2);
        let mut c = b.charge(60).unwrap();
        let d = c.duplicate();
        assert_eq!(b.mem_used(), 120);
        assert!(b.over_limit().is_some());
        drop(d);
        c.force(10);
        assert_eq!(b.mem_used(), 10);
        c.force(150);
        assert_eq!(b.over_limit(), Some(OutOfMemory { limit: 100 }));
        drop(c);
        assert_eq!((b.mem_used(), b.over_limit()), (0, None));
    }

    #[tokio::test]
    async fn spawned_tasks_are_awaited() {
        let b = Budget::default();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let d = done.clone();
        b.spawn(async move {
            let _ = rx.await;
            d.store(true, Ordering::SeqCst);
        });
        let waiting = tokio::spawn({
            let b = b.clone();
            async move { b.close_and_wait().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        tx.send(()).unwrap();
        waiting.await.unwrap();
        assert!(done.load(Ordering::SeqCst));
    }

    #[test]
    fn tasks_are_bounded() {
        let b = Budget::new(0, 2);
        let t1 = b.task().unwrap();
        let _t2 = b.task().unwrap();
        assert_eq!(b.task().unwrap_err(), TooManyTasks { limit: 2 });
        assert!(b.first_refusal());
        assert!(!b.first_refusal());
        // Tripped: refused until every task has ended, then usable again.
        drop(t1);
        assert!(b.task().is_err());
        drop(_t2);
        let t = b.task().unwrap();
        assert_eq!(b.tasks(), 1);
        drop(t);
        assert!(b.first_refusal(), "a new exhaustion is reported again");
    }

    #[test]
    fn messages() {
        assert_eq!(
            OutOfMemory { limit: 256 << 20 }.to_string(),
            "out of memory (session limit 256M)"
        );
        assert_eq!(
            OutOfMemory { limit: 1000 }.to_string(),
            "out of memory (session limit 1000 bytes)"
        );
    }
}

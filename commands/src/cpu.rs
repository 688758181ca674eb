//! Fair shares of the server's CPU among sessions: a busy session is slowed, never the
//! server.
//!
//! Sessions are tasks on one shared runtime; they give the runtime back its threads only at
//! their yield points (the shell's loops and every few commands it runs, native
//! commands' [`crate::Context::checkpoint`], WASI guests' epoch ticks). Each yield point
//! calls [`Budget::pace`](crate::Budget::pace), which charges the session for the wall time
//! its task ran since it last resumed (the busy time between two yields, capped at
//! [`MAX_SLICE`] in case the task awaited something else meanwhile) and, when the server is
//! contended, makes a session that used more than its share sleep in proportion.
//!
//! - Each session has a credit of CPU time that refills at its share of the server
//!   (`--session-cpu-share` of the runtime's worker threads) and holds at most [`BURST`];
//!   busy time spends it.
//! - The server is contended when, over the last [`WINDOW`], at least two sessions were
//!   busy and together demanded (ran, or were made to wait) at least [`CONTENDED_LOAD`]
//!   of its threads. A session alone, or a quiet server, is never slowed, and debt is
//!   forgiven while nobody competes.
//! - A session in debt while the server is contended sleeps until its credit is back to
//!   zero, at most [`MAX_PAUSE`] at a time so that Ctrl-C stays prompt.
//!
//! The accounting takes the time as an argument ([`SessionCpu::record`]), so it is tested
//! with a fake clock; only [`Budget::pace`](crate::Budget::pace) reads the real one.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The share of the server one session may use while others compete, unless
/// `--session-cpu-share` says otherwise: a quarter, so that on a two-CPU demo machine
/// one busy session leaves one and a half CPUs to everybody else.
pub const DEFAULT_SHARE_PERCENT: u32 = 25;

/// The period over which the server's contention is judged: short enough to react
/// within a tenth of a second, long enough to see several yields of every busy session.
pub const WINDOW: Duration = Duration::from_millis(100);

/// CPU time a session may run above its share before it is slowed: a short command
/// (a compile of a regex, a sort of a small file) is never paused.
pub const BURST: Duration = Duration::from_millis(50);

/// The most one sample between two yields counts: a task that awaited (a pipe, a file)
/// between two yield points was not running all that time.
pub const MAX_SLICE: Duration = Duration::from_millis(20);

/// The longest one pause: a paused command notices Ctrl-C, a timeout or the session's end
/// at its next yield point, at most this much later.
pub const MAX_PAUSE: Duration = Duration::from_millis(50);

/// How much of a session's demand is gathered before it is added to the server's window,
/// and how long a session goes by the window's last verdict: the server-wide lock is
/// taken about once a millisecond per busy session, not at every yield.
pub const REPORT_EVERY: Duration = Duration::from_millis(1);

/// Share of the server's threads that busy sessions must demand together for the server
/// to count as contended.
pub const CONTENDED_LOAD: f64 = 0.5;

/// What all sessions of a server share: the share each may take, the server's size, the
/// current window of demand, and counters of the pauses imposed.
pub struct CpuGovernor {
    /// Fraction of the server (0 < share ≤ 1) one session may use while contended.
    share: f64,
    /// Threads the sessions run on (the runtime's workers).
    cores: f64,
    window: Mutex<Window>,
    pauses: AtomicU64,
    paused_nanos: AtomicU64,
    /// Told of every pause (the server's metrics).
    observer: Option<Arc<dyn Fn(Duration) + Send + Sync>>,
}

impl std::fmt::Debug for CpuGovernor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuGovernor")
            .field("share", &self.share)
            .field("cores", &self.cores)
            .field("pauses", &self.pauses.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Demand seen in the current window, and the verdict on the last one.
#[derive(Debug)]
struct Window {
    start: Option<Instant>,
    /// Numbers the windows, so a session counts once per window.
    number: u64,
    /// Busy time plus imposed pauses of all sessions in this window.
    demand: Duration,
    /// Sessions busy in this window.
    busy_sessions: u32,
    /// Whether the last complete window was contended.
    contended: bool,
}

/// What the pauses added up to so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PauseStats {
    pub pauses: u64,
    pub paused: Duration,
}

impl CpuGovernor {
    /// A governor for a server of `cores` threads where one session may use
    /// `share_percent` of it (1–100; 100 never slows anyone).
    pub fn new(share_percent: u32, cores: usize) -> CpuGovernor {
        CpuGovernor {
            share: f64::from(share_percent.clamp(1, 100)) / 100.0,
            cores: cores.max(1) as f64,
            window: Mutex::new(Window {
                start: None,
                number: 0,
                demand: Duration::ZERO,
                busy_sessions: 0,
                contended: false,
            }),
            pauses: AtomicU64::new(0),
            paused_nanos: AtomicU64::new(0),
            observer: None,
        }
    }

    /// Tells `observer` of every pause imposed.
    pub fn with_observer(mut self, observer: Arc<dyn Fn(Duration) + Send + Sync>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Whether the governor ever slows anybody (a share below the whole server).
    pub fn active(&self) -> bool {
        self.share < 1.0
    }

    /// The pauses imposed so far, on all sessions.
    pub fn stats(&self) -> PauseStats {
        PauseStats {
            pauses: self.pauses.load(Ordering::Relaxed),
            paused: Duration::from_nanos(self.paused_nanos.load(Ordering::Relaxed)),
        }
    }

    /// CPU seconds per second one session may use while contended.
    fn rate(&self) -> f64 {
        self.share * self.cores
    }

    /// Adds one session's demand at `now`; whether the server counts as contended.
    fn observe(&self, now: Instant, demand: Duration, seen: &mut u64) -> bool {
        let mut w = self.window.lock().unwrap_or_else(|p| p.into_inner());
        let start = *w.start.get_or_insert(now);
        let elapsed = now.saturating_duration_since(start);
        if elapsed >= WINDOW {
            // A window with nobody in it (elapsed over two windows) was quiet.
            let load = w.demand.as_secs_f64() / elapsed.as_secs_f64().max(1e-9);
            w.contended =
                elapsed < 2 * WINDOW && w.busy_sessions >= 2 && load >= CONTENDED_LOAD * self.cores;
            w.start = Some(now);
            w.number += 1;
            w.demand = Duration::ZERO;
            w.busy_sessions = 0;
        }
        w.demand += demand;
        if *seen != w.number + 1 {
            *seen = w.number + 1;
            w.busy_sessions += 1;
        }
        w.contended
    }

    fn paused(&self, pause: Duration) {
        self.pauses.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(pause.as_nanos()).unwrap_or(u64::MAX);
        self.paused_nanos.fetch_add(nanos, Ordering::Relaxed);
        if let Some(observer) = &self.observer {
            observer(pause);
        }
    }
}

/// One session's account with its server's [`CpuGovernor`].
#[derive(Debug)]
pub struct SessionCpu {
    governor: Arc<CpuGovernor>,
    account: Mutex<Account>,
}

#[derive(Debug, Default)]
struct Account {
    /// Seconds of CPU the session may still use above its share (negative: debt).
    credit: f64,
    last: Option<Instant>,
    /// The window (numbered from 1) the session was last counted busy in.
    seen: u64,
    /// Demand (busy time and pauses) not yet added to the server's window.
    unreported: Duration,
    /// When the session last reported, and the server's verdict then.
    reported_at: Option<Instant>,
    contended: bool,
    pauses: u64,
    paused: Duration,
}

impl SessionCpu {
    pub fn new(governor: Arc<CpuGovernor>) -> SessionCpu {
        SessionCpu {
            governor,
            account: Mutex::new(Account {
                credit: BURST.as_secs_f64(),
                ..Account::default()
            }),
        }
    }

    /// Charges `busy` (time a task of the session ran until `now`) and says how long the
    /// session must pause before it goes on, if it must.
    pub fn record(&self, now: Instant, busy: Duration) -> Option<Duration> {
        let g = &self.governor;
        if !g.active() {
            return None;
        }
        let busy = busy.min(MAX_SLICE);
        let mut a = self.account.lock().unwrap_or_else(|p| p.into_inner());
        let rate = g.rate();
        if let Some(last) = a.last {
            let refill = now.saturating_duration_since(last).as_secs_f64() * rate;
            a.credit = (a.credit + refill).min(BURST.as_secs_f64());
        }
        a.last = Some(now);
        a.credit -= busy.as_secs_f64();
        a.unreported += busy;
        let due = a.unreported >= REPORT_EVERY
            || a.reported_at
                .is_none_or(|t| now.saturating_duration_since(t) >= REPORT_EVERY);
        if due {
            let (demand, mut seen) = (a.unreported, a.seen);
            a.contended = g.observe(now, demand, &mut seen);
            a.seen = seen;
            a.unreported = Duration::ZERO;
            a.reported_at = Some(now);
        }
        if !a.contended {
            // Nobody competes: nothing is owed.
            a.credit = a.credit.max(0.0);
            return None;
        }
        if a.credit >= 0.0 {
            return None;
        }
        let pause = Duration::from_secs_f64(-a.credit / rate).min(MAX_PAUSE);
        a.pauses += 1;
        a.paused += pause;
        // A session made to wait still wants the CPU: its pause counts as demand, so
        // the contention it causes does not vanish because it was slowed.
        a.unreported += pause;
        drop(a);
        g.paused(pause);
        Some(pause)
    }

    /// The pauses imposed on this session so far.
    pub fn stats(&self) -> PauseStats {
        let a = self.account.lock().unwrap_or_else(|p| p.into_inner());
        PauseStats {
            pauses: a.pauses,
            paused: a.paused,
        }
    }
}

thread_local! {
    /// The task that last resumed from a yield point on this thread, and when: the start
    /// of its current slice.
    static RESUMED: Cell<Option<(tokio::task::Id, Instant)>> = const { Cell::new(None) };
}

/// The time the current task has run since it last resumed from a yield point on this
/// thread; zero if it cannot be known (first yield, or another task yielded here since).
pub(crate) fn slice(now: Instant) -> Duration {
    let Some(me) = tokio::task::try_id() else {
        return Duration::ZERO;
    };
    match RESUMED.with(Cell::get) {
        Some((task, since)) if task == me => now.saturating_duration_since(since),
        _ => Duration::ZERO,
    }
}

/// Marks the current task as resumed from a yield point now.
pub fn resumed() {
    if let Some(me) = tokio::task::try_id() {
        RESUMED.with(|r| r.set(Some((me, Instant::now()))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Runs `sessions` spinning sessions in lockstep on a fake clock for `steps` slices of
    /// `slice` each (each session runs one slice at once, then the clock moves on by the
    /// slice plus the longest pause); the pauses each got, and the time it all took.
    fn spin(
        gov: &Arc<CpuGovernor>,
        sessions: usize,
        steps: usize,
        slice: Duration,
    ) -> (Vec<PauseStats>, Duration) {
        let accounts: Vec<SessionCpu> = (0..sessions)
            .map(|_| SessionCpu::new(gov.clone()))
            .collect();
        let start = Instant::now();
        let mut now = start;
        for _ in 0..steps {
            let mut longest = Duration::ZERO;
            for a in &accounts {
                if let Some(p) = a.record(now, slice) {
                    longest = longest.max(p);
                }
            }
            now += slice + longest;
        }
        (
            accounts.iter().map(SessionCpu::stats).collect(),
            now - start,
        )
    }

    #[test]
    fn a_session_alone_is_never_slowed() {
        let gov = Arc::new(CpuGovernor::new(25, 2));
        let (stats, _) = spin(&gov, 1, 5000, MS);
        assert_eq!(stats[0], PauseStats::default());
        assert_eq!(gov.stats().pauses, 0);
    }

    #[test]
    fn competing_spinners_are_held_to_their_share() {
        let gov = Arc::new(CpuGovernor::new(25, 2));
        // Three spinners each running 1 ms out of every 1 ms (on 2 cores: 1.5 cores of
        // demand); each may have 25% of 2 cores = 0.5 CPU-s/s.
        let (stats, wall) = spin(&gov, 3, 3000, MS);
        for s in &stats {
            assert!(s.pauses > 0, "{stats:?}");
        }
        let g = gov.stats();
        assert_eq!(g.pauses, stats.iter().map(|s| s.pauses).sum::<u64>());
        // Each ran 3 s: held to about 0.5 CPU-s/s, that takes about 6 s (the burst and
        // the windows before contention is seen make it a little less).
        let used = 3.0 / wall.as_secs_f64();
        assert!((0.4..0.6).contains(&used), "share used {used}, {stats:?}");
    }

    #[test]
    fn debt_is_forgiven_while_nobody_competes() {
        let gov = Arc::new(CpuGovernor::new(25, 2));
        let a = SessionCpu::new(gov.clone());
        let mut now = Instant::now();
        // Alone, far above its share for a second: never paused.
        for _ in 0..1000 {
            assert_eq!(a.record(now, MS), None);
            now += MS;
        }
        // A second session appears and both spin: within a couple of windows the first
        // is paused, but not for a second's debt (it had none left).
        let b = SessionCpu::new(gov.clone());
        let mut first = None;
        for i in 0..1000 {
            let pa = a.record(now, MS);
            let pb = b.record(now, MS);
            if first.is_none() && (pa.is_some() || pb.is_some()) {
                first = Some(i);
            }
            for p in [pa, pb].into_iter().flatten() {
                assert!(p <= MAX_PAUSE, "{p:?}");
            }
            now += MS;
        }
        let first = first.unwrap_or(usize::MAX);
        assert!(first < 300, "paused after {first} steps");
    }

    #[test]
    fn short_slices_are_gathered_and_still_counted() {
        // Yields every 50 µs, as a shell loop does: the demand reaches the window once a
        // millisecond per session, and two such spinners are still held to their share.
        let gov = Arc::new(CpuGovernor::new(25, 2));
        let (stats, wall) = spin(&gov, 2, 40_000, Duration::from_micros(50));
        assert!(stats.iter().all(|s| s.pauses > 0), "{stats:?}");
        let used = 2.0 / wall.as_secs_f64();
        assert!(used < 0.6, "share used {used}, {stats:?}");
    }

    #[test]
    fn a_share_of_the_whole_server_slows_nobody() {
        let gov = Arc::new(CpuGovernor::new(100, 2));
        let (stats, _) = spin(&gov, 4, 2000, MS);
        assert!(stats.iter().all(|s| s.pauses == 0), "{stats:?}");
    }

    #[test]
    fn one_slice_counts_at_most_max_slice() {
        let gov = Arc::new(CpuGovernor::new(10, 1));
        let a = SessionCpu::new(gov.clone());
        let b = SessionCpu::new(gov.clone());
        let mut now = Instant::now();
        // Both sessions report a whole second between yields, twice a window apart: the
        // window's demand counts 2 × MAX_SLICE, under half a core over 100 ms.
        for _ in 0..4 {
            a.record(now, Duration::from_secs(1));
            b.record(now, Duration::from_secs(1));
            now += WINDOW;
        }
        assert_eq!(gov.stats().pauses, 0);
    }
}

//! Bounds per source on logged-in sessions and on the rate of new connections.
//!
//! The global `--max-sessions` cap keeps the server within its means, but one address
//! could still take every slot. So each [`Source`] (an IPv4 address or an IPv6 /64) may
//! hold at most `--max-sessions-per-ip` sessions at once and open at most
//! `--max-connections-per-minute-per-ip` connections a minute. Both are told to the client
//! as the reason of the disconnect when it logs in (the SSH transport must be up to carry
//! a reason; connections that never log in are bounded by the pending table instead).
//!
//! The rate is counted in fixed one-minute windows per source. The table of windows is
//! pruned of expired ones whenever it has doubled since the last pruning, so its size
//! stays proportional to the sources seen in the last minute.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::admission::Source;

/// The window the connection rate is counted over.
const RATE_WINDOW: Duration = Duration::from_secs(60);

/// Smallest size of the window table at which it is pruned (below it, pruning costs more
/// than the memory it saves).
const PRUNE_FLOOR: usize = 1024;

/// The bounds, as configured.
#[derive(Debug, Clone, Copy)]
pub struct SourceBounds {
    /// Sessions one source may hold at once.
    pub sessions: usize,
    /// Connections one source may open per minute.
    pub per_minute: usize,
}

#[derive(Debug, Default)]
struct State {
    sessions: HashMap<Source, usize>,
    /// Per source: when its current window began, and how many connections it opened in
    /// it.
    windows: HashMap<Source, (Instant, usize)>,
    /// Size of `windows` after the last pruning.
    pruned_at: usize,
}

/// The per-source tables of one server.
#[derive(Debug)]
pub struct PerSource {
    bounds: SourceBounds,
    state: Mutex<State>,
}

/// Why a login is refused by a per-source bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SourceRefusal {
    #[error("forkbox: too many sessions from your address ({0} at once); try again later")]
    Sessions(usize),
    #[error(
        "forkbox: too many connections from your address ({0} a minute); try again in a minute"
    )]
    Rate(usize),
}

/// One session's place in its source's count; released on drop.
#[derive(Debug)]
pub struct SourceSlot {
    table: Arc<PerSource>,
    source: Source,
}

impl Drop for SourceSlot {
    fn drop(&mut self) {
        let mut state = self.table.lock();
        if let Some(n) = state.sessions.get_mut(&self.source) {
            *n -= 1;
            if *n == 0 {
                state.sessions.remove(&self.source);
            }
        }
    }
}

impl PerSource {
    pub fn new(bounds: SourceBounds) -> Arc<PerSource> {
        Arc::new(PerSource {
            bounds,
            state: Mutex::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a new connection from `ip`; `Err` when its source is over its rate (the
    /// connection is still counted, so a flood stays over it).
    pub fn connected(&self, ip: IpAddr) -> Result<(), SourceRefusal> {
        let now = Instant::now();
        let source = Source::of(ip);
        let mut state = self.lock();
        let window = state.windows.entry(source).or_insert((now, 0));
        if now.duration_since(window.0) >= RATE_WINDOW {
            *window = (now, 0);
        }
        window.1 += 1;
        let opened = window.1;
        if state.windows.len() >= PRUNE_FLOOR.max(2 * state.pruned_at) {
            state
                .windows
                .retain(|_, (start, _)| now.duration_since(*start) < RATE_WINDOW);
            state.pruned_at = state.windows.len();
        }
        if opened > self.bounds.per_minute {
            Err(SourceRefusal::Rate(self.bounds.per_minute))
        } else {
            Ok(())
        }
    }

    /// Takes a session place for `ip`'s source, or says why not.
    pub fn take_session(self: &Arc<Self>, ip: IpAddr) -> Result<SourceSlot, SourceRefusal> {
        let source = Source::of(ip);
        let mut state = self.lock();
        let held = state.sessions.entry(source).or_insert(0);
        if *held >= self.bounds.sessions {
            return Err(SourceRefusal::Sessions(self.bounds.sessions));
        }
        *held += 1;
        Ok(SourceSlot {
            table: self.clone(),
            source,
        })
    }

    /// Sessions held by `ip`'s source (for tests and logs).
    pub fn sessions_of(&self, ip: IpAddr) -> usize {
        self.lock()
            .sessions
            .get(&Source::of(ip))
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn sessions_are_bounded_per_source_and_released_on_drop() {
        let table = PerSource::new(SourceBounds {
            sessions: 2,
            per_minute: 100,
        });
        let a = table.take_session(ip("10.0.0.1")).unwrap();
        let _b = table.take_session(ip("10.0.0.1")).unwrap();
        assert_eq!(
            table.take_session(ip("10.0.0.1")).unwrap_err(),
            SourceRefusal::Sessions(2)
        );
        // Another source is not affected; one /64 is one source.
        let _c = table.take_session(ip("10.0.0.2")).unwrap();
        let _d = table.take_session(ip("2001:db8::1")).unwrap();
        let _e = table.take_session(ip("2001:db8::2")).unwrap();
        assert!(table.take_session(ip("2001:db8::3")).is_err());
        drop(a);
        assert_eq!(table.sessions_of(ip("10.0.0.1")), 1);
        assert!(table.take_session(ip("10.0.0.1")).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_is_counted_per_minute_per_source() {
        let table = PerSource::new(SourceBounds {
            sessions: 10,
            per_minute: 3,
        });
        for _ in 0..3 {
            assert!(table.connected(ip("10.0.0.1")).is_ok());
        }
        assert_eq!(table.connected(ip("10.0.0.1")), Err(SourceRefusal::Rate(3)));
        assert!(table.connected(ip("10.0.0.9")).is_ok());
        tokio::time::advance(RATE_WINDOW).await;
        assert!(table.connected(ip("10.0.0.1")).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn expired_windows_are_pruned() {
        let table = PerSource::new(SourceBounds {
            sessions: 1,
            per_minute: 1,
        });
        for i in 0..(PRUNE_FLOOR - 1) as u32 {
            let _ = table.connected(IpAddr::from(i.to_be_bytes()));
        }
        tokio::time::advance(RATE_WINDOW).await;
        let _ = table.connected(ip("192.0.2.1"));
        assert!(table.lock().windows.len() < PRUNE_FLOOR);
    }
}

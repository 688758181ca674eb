//! Admission of connections that have not logged in yet.
//!
//! Before authentication a connection costs forkbox a task, a socket and a handshake, and
//! proves nothing about who holds it; anyone may open thousands. So they are counted apart
//! from sessions, under two bounds (`--max-unauthenticated`, in total, and
//! `--max-unauthenticated-per-ip`, per [`Source`]), and each one has its deadline (the
//! server's `--auth-timeout`). Sessions are counted separately, from the moment
//! authentication succeeds, so connections that never log in can never take their place.
//!
//! Over the per-source bound a new connection is closed at once: its own source already
//! holds its share. When the total is full, the newcomer takes the place of the oldest
//! pending connection of the source holding the most, unless its own source already holds
//! as many (then it is closed at once). This differs from OpenSSH's `MaxStartups`, which
//! refuses newcomers at random as the table fills: with refusal, a few slow clients
//! that each hold a slot for the whole deadline keep everyone else out; with eviction, a
//! real client (which logs in within a fraction of a second) is only pushed out if the
//! table turns over entirely while it logs in, which costs a flood many sources and a high
//! connection rate instead of a handful of idle sockets.

use std::cmp::Reverse;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// Leading bits of an IPv6 address that name one [`Source`]: a /64 is what one
/// subscriber or host usually gets, so rotating addresses inside it gains nothing.
const IPV6_SOURCE_PREFIX: u32 = 64;

/// Who a pending connection counts against: an IPv4 address, or an IPv6 /64
/// (IPv4-mapped IPv6 addresses count as their IPv4 address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Source(IpAddr);

impl Source {
    pub fn of(ip: IpAddr) -> Source {
        match ip {
            IpAddr::V4(v4) => Source(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Source(IpAddr::V4(v4)),
                None => {
                    let mask = u128::MAX << (128 - IPV6_SOURCE_PREFIX);
                    Source(IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask)))
                }
            },
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/{IPV6_SOURCE_PREFIX}"),
        }
    }
}

/// Why a new connection was closed at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{from} already has {held} connections that have not logged in")]
    SourceFull { from: Source, held: usize },
    #[error("{total} connections have not logged in and {from} holds as many as any other")]
    Full { from: Source, total: usize },
}

/// The bounds, as configured.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Connections not yet logged in, in total.
    pub total: usize,
    /// Connections not yet logged in from one [`Source`].
    pub per_source: usize,
}

/// The table of connections that have not logged in yet.
#[derive(Debug)]
pub struct Pending {
    bounds: Bounds,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Admission order; a lower id is an older connection.
    next_id: u64,
    total: usize,
    /// Each source's connections, oldest first, with the token that evicts each.
    by_source: HashMap<Source, VecDeque<(u64, CancellationToken)>>,
}

/// What admitting a connection did.
#[derive(Debug)]
pub struct Admitted {
    pub ticket: Ticket,
    /// The source whose oldest pending connection was evicted to make room, if any.
    pub evicted: Option<Source>,
}

impl Pending {
    pub fn new(bounds: Bounds) -> Arc<Pending> {
        Arc::new(Pending {
            bounds: Bounds {
                total: bounds.total.max(1),
                per_source: bounds.per_source.max(1),
            },
            state: Mutex::new(State::default()),
        })
    }

    /// Admits a new connection from `ip`, or says why it must be closed at once. The
    /// ticket holds its place until it is dropped (the connection logged in or ended).
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, Refusal> {
        let source = Source::of(ip);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let held = st.by_source.get(&source).map_or(0, VecDeque::len);
        if held >= self.bounds.per_source {
            return Err(Refusal::SourceFull { from: source, held });
        }
        let mut evicted = None;
        if st.total >= self.bounds.total {
            // The heaviest source, and among equals the one with the oldest connection.
            let victim = st
                .by_source
                .iter()
                .filter_map(|(s, q)| q.front().map(|(id, _)| (*s, q.len(), *id)))
                .max_by_key(|&(_, len, oldest)| (len, Reverse(oldest)));
            match victim {
                Some((victim, len, _)) if len > held => {
                    if let Some(queue) = st.by_source.get_mut(&victim)
                        && let Some((_, token)) = queue.pop_front()
                    {
                        token.cancel();
                        if queue.is_empty() {
                            st.by_source.remove(&victim);
                        }
                        st.total -= 1;
                        evicted = Some(victim);
                    }
                }
                _ => {
                    return Err(Refusal::Full {
                        from: source,
                        total: st.total,
                    });
                }
            }
        }
        let id = st.next_id;
        st.next_id += 1;
        let evict = CancellationToken::new();
        st.by_source
            .entry(source)
            .or_default()
            .push_back((id, evict.clone()));
        st.total += 1;
        Ok(Admitted {
            ticket: Ticket {
                pending: self.clone(),
                source,
                id,
                evict,
            },
            evicted,
        })
    }

    /// Connections pending right now.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).total
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn release(&self, source: Source, id: u64) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let Some(queue) = st.by_source.get_mut(&source) else {
            return; // evicted: its place was already given away
        };
        let Some(pos) = queue.iter().position(|(i, _)| *i == id) else {
            return;
        };
        queue.remove(pos);
        if queue.is_empty() {
            st.by_source.remove(&source);
        }
        st.total -= 1;
    }
}

/// A pending connection's place in the table; dropping it frees the place (like a
/// semaphore permit).
#[derive(Debug)]
pub struct Ticket {
    pending: Arc<Pending>,
    source: Source,
    id: u64,
    evict: CancellationToken,
}

impl Ticket {
    /// Fires when a newcomer took this connection's place: the connection must close.
    pub fn evicted(&self) -> &CancellationToken {
        &self.evict
    }

    pub fn source(&self) -> Source {
        self.source
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.pending.release(self.source, self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn pending(total: usize, per_source: usize) -> Arc<Pending> {
        Pending::new(Bounds { total, per_source })
    }

    #[test]
    fn sources_group_ipv6_by_64_and_unmap_ipv4() {
        assert_eq!(
            Source::of(ip("2001:db8::1")),
            Source::of(ip("2001:db8::ffff:2"))
        );
        assert_ne!(
            Source::of(ip("2001:db8::1")),
            Source::of(ip("2001:db8:0:1::1"))
        );
        assert_eq!(
            Source::of(ip("::ffff:10.0.0.1")),
            Source::of(ip("10.0.0.1"))
        );
        assert_ne!(Source::of(ip("10.0.0.1")), Source::of(ip("10.0.0.2")));
        assert_eq!(Source::of(ip("2001:db8::1")).to_string(), "2001:db8::/64");
    }

    #[test]
    fn one_source_is_refused_past_its_share_and_released_on_drop() {
        let p = pending(10, 2);
        let a = p.admit(ip("10.0.0.1")).unwrap();
        let b = p.admit(ip("10.0.0.1")).unwrap();
        assert!(matches!(
            p.admit(ip("10.0.0.1")),
            Err(Refusal::SourceFull { held: 2, .. })
        ));
        assert!(p.admit(ip("10.0.0.2")).is_ok()); // dropped at once
        assert_eq!(p.len(), 2);
        drop(a);
        assert_eq!(p.len(), 1);
        let _c = p.admit(ip("10.0.0.1")).unwrap();
        assert!(!b.ticket.evicted().is_cancelled());
    }

    #[test]
    fn a_full_table_evicts_the_oldest_of_the_heaviest_source() {
        let p = pending(4, 3);
        let a: Vec<_> = (0..3).map(|_| p.admit(ip("10.0.0.1")).unwrap()).collect();
        let b1 = p.admit(ip("10.0.0.2")).unwrap();
        assert_eq!(p.len(), 4);
        // A newcomer from a third source pushes out 10.0.0.1's oldest.
        let c = p.admit(ip("10.0.0.3")).unwrap();
        assert_eq!(c.evicted, Some(Source::of(ip("10.0.0.1"))));
        assert!(a[0].ticket.evicted().is_cancelled());
        assert!(!a[1].ticket.evicted().is_cancelled());
        assert_eq!(p.len(), 4);
        // Dropping the evicted ticket frees nothing twice.
        drop(a);
        assert_eq!(p.len(), 2);
        drop((b1, c));
        assert!(p.is_empty());
    }

    #[test]
    fn a_full_table_refuses_a_newcomer_whose_source_holds_as_many_as_any() {
        let p = pending(2, 2);
        let a = p.admit(ip("10.0.0.1")).unwrap();
        let b = p.admit(ip("10.0.0.2")).unwrap();
        // 10.0.0.1 and 10.0.0.2 hold one each: another from 10.0.0.1 would make it the
        // heaviest, so it is refused.
        assert!(matches!(
            p.admit(ip("10.0.0.1")),
            Err(Refusal::Full { total: 2, .. })
        ));
        // A source holding none takes the oldest place among equals (a's).
        let c = p.admit(ip("10.0.0.3")).unwrap();
        assert!(a.ticket.evicted().is_cancelled());
        assert!(!b.ticket.evicted().is_cancelled());
        assert!(!c.ticket.evicted().is_cancelled());
        assert_eq!(p.len(), 2);
    }
}

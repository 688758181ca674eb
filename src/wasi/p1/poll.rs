//! `poll_oneoff`: waiting on clocks and on descriptor readiness.
//!
//! Files and output streams are always ready (a write to a full pipe waits inside
//! `fd_write`, as on Linux a regular file never blocks `poll`). Standard input is ready
//! when a read would return at once ([`forkbox_commands::Input::ready`]); waiting for it
//! parks the task on [`forkbox_commands::Input::wait_ready`], never a thread.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use forkbox_commands::{Input, Readiness};
use tokio::time::Instant;
use wasmtime::{Caller, Linker};

use super::abi::{Errno, Mem, clock, event};
use super::fd::wrap_async;
use super::table::Fd;
use super::{Host, HostResult, ptr, split};

/// Subscriptions one call may carry: far more than any program waits on at once, few
/// enough that a guest cannot make the host allocate without bound.
pub const MAX_SUBSCRIPTIONS: u32 = 4096;

#[derive(Clone, Copy)]
enum Kind {
    /// A timer due at `due`; `None` for a bad clock (reported as `INVAL`).
    Clock(Option<Instant>),
    Read(u32),
    Write(u32),
}

#[derive(Clone, Copy)]
struct Sub {
    userdata: u64,
    kind: Kind,
}

/// One event to report.
struct Event {
    userdata: u64,
    error: Errno,
    kind: u8,
    nbytes: u64,
    flags: u16,
}

fn parse(mem: &Mem<'_>, host: &Host, at: u32, now: Instant) -> Result<Sub, Errno> {
    let userdata = mem.u64(at)?;
    let tag = mem.u8(at + 8)?;
    let kind = match tag {
        event::CLOCK => {
            let id = mem.u32(at + 16)?;
            let timeout = mem.u64(at + 24)?;
            let flags = mem.u16(at + 40)?;
            let wait = if flags & event::ABSTIME != 0 {
                match id {
                    clock::REALTIME => Some(
                        (UNIX_EPOCH + Duration::from_nanos(timeout))
                            .duration_since(SystemTime::now())
                            .unwrap_or(Duration::ZERO),
                    ),
                    clock::MONOTONIC => {
                        Some(Duration::from_nanos(timeout).saturating_sub(host.start.elapsed()))
                    }
                    _ => None,
                }
            } else {
                match id {
                    clock::REALTIME | clock::MONOTONIC => Some(Duration::from_nanos(timeout)),
                    _ => None,
                }
            };
            // A deadline past what the timer can hold is "never" for any guest.
            Kind::Clock(wait.map(|w| now.checked_add(w).unwrap_or(now + YEAR)))
        }
        event::FD_READ => Kind::Read(mem.u32(at + 16)?),
        event::FD_WRITE => Kind::Write(mem.u32(at + 16)?),
        _ => return Err(Errno::INVAL),
    };
    Ok(Sub { userdata, kind })
}

/// Far enough to stand for "never".
const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// The event `sub` has now, if it has one.
fn check(host: &Host, sub: &Sub, now: Instant) -> Option<Event> {
    let ev = |kind, error, nbytes, flags| Event {
        userdata: sub.userdata,
        error,
        kind,
        nbytes,
        flags,
    };
    match sub.kind {
        Kind::Clock(None) => Some(ev(event::CLOCK, Errno::INVAL, 0, 0)),
        Kind::Clock(Some(due)) => (due <= now).then(|| ev(event::CLOCK, Errno::SUCCESS, 0, 0)),
        Kind::Read(fd) => match host.fds.get(fd) {
            Err(e) => Some(ev(event::FD_READ, e, 0, 0)),
            Ok(Fd::In { input, .. }) => match input.ready() {
                Readiness::Data => Some(ev(event::FD_READ, Errno::SUCCESS, 1, 0)),
                Readiness::Eof => Some(ev(event::FD_READ, Errno::SUCCESS, 0, event::HANGUP)),
                Readiness::Pending => None,
            },
            Ok(Fd::File { .. }) => Some(ev(event::FD_READ, Errno::SUCCESS, 0, 0)),
            Ok(Fd::Out { .. } | Fd::Dir { .. }) => Some(ev(event::FD_READ, Errno::BADF, 0, 0)),
        },
        Kind::Write(fd) => match host.fds.get(fd) {
            Err(e) => Some(ev(event::FD_WRITE, e, 0, 0)),
            Ok(Fd::Out { .. } | Fd::File { .. }) => Some(ev(event::FD_WRITE, Errno::SUCCESS, 0, 0)),
            Ok(Fd::In { .. } | Fd::Dir { .. }) => Some(ev(event::FD_WRITE, Errno::BADF, 0, 0)),
        },
    }
}

async fn poll_oneoff(
    c: &mut Caller<'_, Host>,
    subs: u32,
    out: u32,
    n: u32,
    count: u32,
) -> HostResult {
    if n == 0 {
        return Err(Errno::INVAL.into());
    }
    if n > MAX_SUBSCRIPTIONS {
        return Err(Errno::NOTSUP.into());
    }
    let now = Instant::now();
    let parsed: Vec<Sub> = {
        let (mem, host) = split(c)?;
        (0..n)
            .map(|i| parse(&mem, host, subs + i * event::SUBSCRIPTION_SIZE, now))
            .collect::<Result<_, _>>()?
    };
    loop {
        let now = Instant::now();
        let (mut mem, host) = split(c)?;
        let events: Vec<Event> = parsed.iter().filter_map(|s| check(host, s, now)).collect();
        if !events.is_empty() {
            for (i, e) in events.iter().enumerate() {
                let at = out + i as u32 * event::EVENT_SIZE;
                let mut b = [0u8; event::EVENT_SIZE as usize];
                b[0..8].copy_from_slice(&e.userdata.to_le_bytes());
                b[8..10].copy_from_slice(&e.error.0.to_le_bytes());
                b[10] = e.kind;
                b[16..24].copy_from_slice(&e.nbytes.to_le_bytes());
                b[24..26].copy_from_slice(&e.flags.to_le_bytes());
                mem.write(at, &b)?;
            }
            mem.put_u32(count, events.len() as u32)?;
            return Ok(());
        }
        // Nothing is ready: wait for the first timer or for standard input.
        let due = parsed
            .iter()
            .filter_map(|s| match s.kind {
                Kind::Clock(Some(d)) => Some(d),
                _ => None,
            })
            .min();
        let input: Option<Input> = parsed.iter().find_map(|s| match s.kind {
            Kind::Read(fd) => match host.fds.get(fd) {
                Ok(Fd::In { input, .. }) => Some(input.clone()),
                _ => None,
            },
            _ => None,
        });
        let timer = async {
            match due {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        let stdin = async {
            match &input {
                Some(i) => {
                    i.wait_ready().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = timer => {}
            () = stdin => {}
        }
    }
}

pub fn add_to_linker(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    wrap_async!(
        linker,
        "poll_oneoff",
        |c, subs: i32, out: i32, n: i32, count: i32| {
            poll_oneoff(&mut c, ptr(subs), ptr(out), ptr(n), ptr(count))
        }
    );
    Ok(())
}

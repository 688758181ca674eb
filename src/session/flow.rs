//! Flow control of a connection's channels around russh's connection loop.
//!
//! russh 0.65.1 runs one loop per connection that reads the client's packets in order. For
//! a packet of channel data it first grants the client more window
//! (`server/encrypted.rs`, the `CHANNEL_DATA` arm: `adjust_window_size`, before the data
//! is delivered), then waits (`chan.send(..).await`) until the channel's reader has room
//! in its queue of `channel_buffer_size` messages. The window is thus no back-pressure on
//! input: the only one is that wait, which stops the whole loop, and with it the handling
//! of the client's `CHANNEL_WINDOW_ADJUST` packets, which arrive on the same stream behind
//! the data. A command that streams both ways (`ssh host cat < big`) could therefore
//! wedge for good: its output waits for window, the adjustment that grants it sits unread
//! behind input, the input waits for the command to read it, and the command waits to
//! write its output. Sends of output also wait on the loop directly: they go through a
//! queue of `event_buffer_size` messages that only the loop empties.
//!
//! [`Outbound`] breaks that cycle: every send to the client is made through
//! [`Outbound::send`], which counts the sends that had to wait; a channel's stdin reader
//! holds the loop back (stops taking input off it) only while no send of the session waits.
//! While one does, the reader keeps taking input (charged to the session's memory), so the
//! loop reaches the window adjustment behind it; in a client that reads its output, that
//! adjustment is at most one window behind.
//!
//! The loop is the whole connection's, so holding it back also stops every other channel
//! of the connection: their input, their requests, new channels (OpenSSH's ControlMaster
//! and agent frameworks multiplex many channels over one connection), including a channel
//! the client opens *after* the one holding the loop back, whose open request sits unread
//! behind that channel's input. So a reader never holds the loop back for long: past its
//! queue it takes input into session memory, and the client's writes on its channel are
//! made to wait instead, by the window:
//!
//! - while some channel's queue is full (a command not reading its input), the window russh
//!   grants shrinks to [`BACKLOG_WINDOW`] through the handler's `adjust_window` hook, and the
//!   reader takes what arrives into session memory at once, up to [`PAST_QUEUE`] per channel
//!   (what the client may have been granted before the window shrank);
//! - past that the channel is *stalled* ([`Backlog::take_past`]): the window shrinks to
//!   [`STALL_WINDOW`], and each message of the channel waits up to [`STALL_PACE`] for room
//!   (or until a send of the connection waits, [`Outbound::until_waiting`]) before it, too,
//!   goes to session memory. russh 0.65 grants window on each packet's arrival, before the
//!   reader sees it, and has one target for the whole connection, so the grants cannot stop
//!   for one channel alone: they shrink for all, and the stalled channel's client has at most
//!   one small packet in flight at a time, taken at most once per pace — so its unread input
//!   grows by at most `STALL_WINDOW` per `STALL_PACE`, and the loop is never held for longer
//!   than one pace. Only once the session's memory is spent does a reader wait for room
//!   whatever waits. The window is back to [`WINDOW`] at the next grant after the commands
//!   read their input again.
//!
//! The cost: while a channel is stalled, the connection's other channels are granted window
//! in steps of `STALL_WINDOW` too (their input still moves, slowly); the shrunken windows
//! also keep what `yes` printing with endless input takes in about as small as what it
//! prints.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use tokio::sync::Notify;

/// The window russh grants a client for each channel (its `Config::window_size`, and the
/// target its `adjust_window` hook returns while no stdin queue is full): russh's default.
pub const WINDOW: u32 = 2 * 1024 * 1024;

/// The window granted while some channel's stdin queue of the connection is full: two
/// packets of OpenSSH's (32 KiB each), so input still moves, one round trip at a time.
pub const BACKLOG_WINDOW: u32 = 64 * 1024;

/// Input one channel takes into session memory past its queue at once: what its client
/// may have been granted before the window shrank (one [`WINDOW`]), and a little more.
pub const PAST_QUEUE: usize = WINDOW as usize + BACKLOG_WINDOW as usize;

/// The window granted while some channel's input is past [`PAST_QUEUE`]: small enough that
/// what a client feeds a command that never reads grows the session's memory slowly
/// (at most this much per [`STALL_PACE`]), and at least 2 bytes (russh grants when a
/// channel's window falls below half its target: a target of 1 would never grant again).
pub const STALL_WINDOW: u32 = 512;

/// How long a stalled channel's message waits for room before it goes to session memory
/// anyway: the longest russh's loop is held back at once, and so the longest another
/// channel's request waits behind it.
pub const STALL_PACE: std::time::Duration = std::time::Duration::from_millis(250);

/// The sends to a connection's client that are waiting, and the channels whose stdin
/// queue is full; shared by all its channels and its handler.
#[derive(Debug, Default)]
pub struct Outbound {
    /// Sends that did not complete at once and have not completed yet.
    waiting: AtomicUsize,
    /// Woken when a send starts waiting: a stalled reader must not hold the loop back.
    needed: Notify,
    /// Channels whose stdin queue is full (see [`Backlog`]).
    backlogged: AtomicUsize,
    /// Channels whose input past their queue is over [`PAST_QUEUE`] (see [`Backlog`]).
    stalled: AtomicUsize,
}

/// Whether one channel's stdin queue is full, and how much of its input waits past the
/// queue, counted in its connection's [`Outbound`] while it is (and no longer once
/// dropped).
#[derive(Debug)]
pub struct Backlog {
    outbound: Arc<Outbound>,
    on: std::sync::atomic::AtomicBool,
    /// Bytes taken past the queue and not yet given to the command.
    past: AtomicUsize,
    /// Whether `past` went over [`PAST_QUEUE`] (and has not yet fallen to half of it).
    stalled: std::sync::atomic::AtomicBool,
}

/// Input of one channel taken past its queue, counted in its [`Backlog`] until dropped.
#[derive(Debug)]
pub struct Past {
    backlog: Arc<Backlog>,
    len: usize,
}

impl Past {
    /// Counts `len` more bytes (a terminal's queue, which grows in place).
    pub fn grow(&mut self, len: usize) {
        let now = self.backlog.past.fetch_add(len, Ordering::SeqCst) + len;
        self.len += len;
        if now > PAST_QUEUE {
            self.backlog.set_stalled(true);
        }
    }
}

impl Drop for Past {
    fn drop(&mut self) {
        let left = self.backlog.past.fetch_sub(self.len, Ordering::SeqCst) - self.len;
        if left <= PAST_QUEUE / 2 {
            self.backlog.set_stalled(false);
        }
    }
}

impl Backlog {
    pub fn new(outbound: Arc<Outbound>) -> Backlog {
        Backlog {
            outbound,
            on: std::sync::atomic::AtomicBool::new(false),
            past: AtomicUsize::new(0),
            stalled: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn set(&self, full: bool) {
        if self.on.swap(full, Ordering::SeqCst) != full {
            if full {
                self.outbound.backlogged.fetch_add(1, Ordering::SeqCst);
            } else {
                self.outbound.backlogged.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    fn set_stalled(&self, stalled: bool) {
        if self.stalled.swap(stalled, Ordering::SeqCst) != stalled {
            if stalled {
                self.outbound.stalled.fetch_add(1, Ordering::SeqCst);
            } else {
                self.outbound.stalled.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// Whether the channel's input past its queue is over [`PAST_QUEUE`]: its next
    /// message waits (up to [`STALL_PACE`]) before it is taken.
    pub fn stalled(&self) -> bool {
        self.stalled.load(Ordering::SeqCst)
    }

    /// Counts `len` bytes taken past the queue until the guard is dropped; past
    /// [`PAST_QUEUE`] the channel is stalled (the connection's window shrinks to
    /// [`STALL_WINDOW`]).
    pub fn take_past(self: &Arc<Self>, len: usize) -> Past {
        let now = self.past.fetch_add(len, Ordering::SeqCst) + len;
        if now > PAST_QUEUE {
            self.set_stalled(true);
        }
        Past {
            backlog: self.clone(),
            len,
        }
    }
}

impl Drop for Backlog {
    fn drop(&mut self) {
        self.set(false);
        self.set_stalled(false);
    }
}

/// Counts one waiting send until dropped (also when the send is cancelled).
struct Waiting<'a>(&'a Outbound);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Outbound {
    pub fn new() -> Arc<Outbound> {
        Arc::new(Outbound::default())
    }

    /// Runs `send` (a send through the channel or the connection's handle); if it cannot
    /// complete at once (no window, or russh's outgoing queue full), it counts as waiting
    /// until it completes.
    pub async fn send<F: Future>(&self, send: F) -> F::Output {
        let mut send = std::pin::pin!(send);
        let first = std::future::poll_fn(|cx| Poll::Ready(send.as_mut().poll(cx))).await;
        match first {
            Poll::Ready(out) => out,
            Poll::Pending => {
                self.waiting.fetch_add(1, Ordering::SeqCst);
                let _counted = Waiting(self);
                self.needed.notify_waiters();
                send.await
            }
        }
    }

    /// The window russh should grant from now on (the handler's `adjust_window`).
    pub fn window(&self) -> u32 {
        if self.stalled.load(Ordering::SeqCst) > 0 {
            STALL_WINDOW
        } else if self.backlogged.load(Ordering::SeqCst) > 0 {
            BACKLOG_WINDOW
        } else {
            WINDOW
        }
    }

    /// Whether some send of the connection is waiting now.
    pub fn is_waiting(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) > 0
    }

    /// Completes when some send of the connection waits on russh's loop (at once if one
    /// does): a stalled reader does not hold the loop back then.
    pub async fn until_waiting(&self) {
        loop {
            let woken = self.needed.notified();
            let mut woken = std::pin::pin!(woken);
            woken.as_mut().enable();
            if self.is_waiting() {
                return;
            }
            woken.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_send_that_completes_at_once_never_counts_as_waiting() {
        let out = Outbound::new();
        assert_eq!(out.send(async { 7 }).await, 7);
        assert!(!out.is_waiting());
    }

    #[tokio::test(start_paused = true)]
    async fn a_send_that_waits_counts_until_it_completes_and_wakes_the_readers() {
        let out = Outbound::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
        let sending = tokio::spawn({
            let out = out.clone();
            async move { out.send(async { rx.await.unwrap_or(0) }).await }
        });
        // A reader that was holding the loop back learns that a send now waits.
        tokio::time::timeout(Duration::from_secs(1), out.until_waiting())
            .await
            .expect("the waiting send was not noticed");
        assert!(out.is_waiting());
        tx.send(3).unwrap();
        assert_eq!(sending.await.unwrap(), 3);
        assert!(!out.is_waiting());
    }

    #[test]
    fn the_window_shrinks_while_a_stdin_queue_is_full() {
        let out = Outbound::new();
        assert_eq!(out.window(), WINDOW);
        let a = Backlog::new(out.clone());
        let b = Backlog::new(out.clone());
        a.set(true);
        a.set(true);
        b.set(true);
        assert_eq!(out.window(), BACKLOG_WINDOW);
        a.set(false);
        assert_eq!(out.window(), BACKLOG_WINDOW);
        drop(b);
        assert_eq!(out.window(), WINDOW);
    }

    #[test]
    fn input_past_the_bound_stalls_the_channel_until_half_of_it_is_taken() {
        let out = Outbound::new();
        let a = Arc::new(Backlog::new(out.clone()));
        a.set(true);
        let first = a.take_past(PAST_QUEUE / 2 + 1);
        assert!(!a.stalled());
        assert_eq!(out.window(), BACKLOG_WINDOW);
        let second = a.take_past(PAST_QUEUE / 2);
        assert!(a.stalled());
        assert_eq!(out.window(), STALL_WINDOW);
        // Still over half the bound: stalled.
        drop(second);
        assert!(a.stalled());
        drop(first);
        assert!(!a.stalled());
        assert_eq!(out.window(), BACKLOG_WINDOW);
        let again = a.take_past(PAST_QUEUE + 1);
        assert_eq!(out.window(), STALL_WINDOW);
        // A guard outlives its channel's reader: the counts go with the last of them.
        drop(a);
        assert_eq!(out.window(), STALL_WINDOW);
        drop(again);
        assert_eq!(out.window(), WINDOW);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_send_stops_counting() {
        let out = Outbound::new();
        let never = std::future::pending::<()>();
        let r = tokio::time::timeout(Duration::from_secs(1), out.send(never)).await;
        assert!(r.is_err());
        assert!(!out.is_waiting());
    }
}

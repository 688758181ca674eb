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
//! and agent frameworks multiplex many channels over one connection). A reader therefore
//! holds it back only while its channel is the connection's only open one
//! ([`Outbound::channel_opened`] counts them); with others open, it takes input past its
//! queue into session memory as it does while a send waits ([`Outbound::until_needed`]),
//! and holds the loop back only once that memory is spent. What stays: a channel opened
//! while the connection's only channel holds the loop back is seen once that channel's
//! command takes some of its input.
//!
//! What a client may send is still granted on receipt, so while some channel's stdin
//! queue is full (a command not reading its input) the window russh grants shrinks to
//! [`BACKLOG_WINDOW`] through the handler's `adjust_window` hook: the input taken past the
//! queue while output waits is then at most about that much per wait, not a whole window
//! each time (`yes` printing with endless input would otherwise take in as much as it
//! prints).

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

/// The sends to a connection's client that are waiting, and the channels whose stdin
/// queue is full; shared by all its channels and its handler.
#[derive(Debug, Default)]
pub struct Outbound {
    /// Sends that did not complete at once and have not completed yet.
    waiting: AtomicUsize,
    /// Woken when a send starts waiting or a second channel opens: when the loop becomes
    /// needed by more than the reader holding it back.
    needed: Notify,
    /// Channels whose stdin queue is full (see [`Backlog`]).
    backlogged: AtomicUsize,
    /// Session channels open on the connection.
    channels: AtomicUsize,
}

/// Counts one open channel of the connection until dropped.
#[derive(Debug)]
pub struct OpenChannel(Arc<Outbound>);

impl Drop for OpenChannel {
    fn drop(&mut self) {
        self.0.channels.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether one channel's stdin queue is full, counted in its connection's [`Outbound`]
/// while it is (and no longer once dropped).
#[derive(Debug)]
pub struct Backlog {
    outbound: Arc<Outbound>,
    on: std::sync::atomic::AtomicBool,
}

impl Backlog {
    pub fn new(outbound: Arc<Outbound>) -> Backlog {
        Backlog {
            outbound,
            on: std::sync::atomic::AtomicBool::new(false),
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
}

impl Drop for Backlog {
    fn drop(&mut self) {
        self.set(false);
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
        if self.backlogged.load(Ordering::SeqCst) > 0 {
            BACKLOG_WINDOW
        } else {
            WINDOW
        }
    }

    /// Whether some send of the connection is waiting now.
    pub fn is_waiting(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) > 0
    }

    /// Counts a session channel of the connection as open while the guard lives.
    pub fn channel_opened(self: &Arc<Self>) -> OpenChannel {
        if self.channels.fetch_add(1, Ordering::SeqCst) >= 1 {
            self.needed.notify_waiters();
        }
        OpenChannel(self.clone())
    }

    /// Whether russh's loop is needed by more than one channel's reader: some send of the
    /// connection waits on it, or more than one channel is open.
    pub fn is_needed(&self) -> bool {
        self.is_waiting() || self.channels.load(Ordering::SeqCst) > 1
    }

    /// Completes when the loop is needed by more than the reader holding it back (at
    /// once if it is): a reader must not hold it back from then on.
    pub async fn until_needed(&self) {
        loop {
            let woken = self.needed.notified();
            let mut woken = std::pin::pin!(woken);
            woken.as_mut().enable();
            if self.is_needed() {
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
        tokio::time::timeout(Duration::from_secs(1), out.until_needed())
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

    #[tokio::test(start_paused = true)]
    async fn a_second_open_channel_needs_the_loop() {
        let out = Outbound::new();
        let first = out.channel_opened();
        assert!(!out.is_needed(), "a lone channel may hold the loop back");
        let waiting = tokio::spawn({
            let out = out.clone();
            async move { out.until_needed().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        let second = out.channel_opened();
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("the second channel was not noticed")
            .unwrap();
        assert!(out.is_needed());
        drop(second);
        assert!(!out.is_needed());
        drop(first);
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

//! The terminal's input side, shared by the task that reads the channel and whoever
//! reads the terminal: the shell's line editor at the prompt, a foreground command
//! through the cooked line discipline, or a full-screen program in raw mode.
//!
//! Typed bytes wait in one bounded queue, in order, and go to whichever reader takes
//! them next, so lines typed ahead of a command reach it or the next prompt as on a real
//! terminal. Outside raw mode Ctrl-C never enters the queue: it flushes it (as a tty's
//! ISIG does) and counts an interrupt, which the foreground command and the editor see.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use forkbox_commands::{Output, PullSource, RawKeys, TermSize};
use tokio::sync::watch;

use super::cooked::{LineDiscipline, TermEvent};

/// Typed bytes kept for a reader; past it the channel's reader waits (and the client's
/// window fills), like a full terminal buffer — outside raw mode only while a whole line
/// waits (see `queue_cooked`). Four lines as long as the editor takes.
pub const INPUT_QUEUE: usize = 4 * super::MAX_LINE;

const CTRL_C: u8 = 0x03;

#[derive(Debug)]
struct State {
    queue: VecDeque<u8>,
    /// The client sent EOF: once the queue is empty, readers see end of input.
    eof: bool,
    /// The channel is gone.
    closed: bool,
    /// Interrupts so far (Ctrl-C outside raw mode, or a `signal` request).
    interrupts: u64,
    size: TermSize,
    /// Window changes so far.
    resizes: u64,
    /// Raw readers alive for the current foreground command.
    raw: usize,
    /// Which foreground command raw readers belong to; bumped when one ends, which ends
    /// its readers too.
    generation: u64,
    /// The partial line of the cooked discipline.
    cooked: LineDiscipline,
}

/// See the module documentation.
#[derive(Debug)]
pub struct Tty {
    state: Mutex<State>,
    /// Bumped when something arrives (bytes, EOF, an interrupt, a window change, a mode
    /// change); readers wait on it.
    changed: watch::Sender<u64>,
    /// Bumped when a reader takes bytes (or the channel goes); the channel's reader
    /// waits on it for room.
    drained: watch::Sender<u64>,
}

/// What [`Tty::take`] found for the line editor.
#[derive(Debug, Default)]
pub struct Taken {
    pub bytes: Vec<u8>,
    pub interrupts: u64,
    pub resizes: u64,
    pub size: Option<TermSize>,
    /// End of input (the client's EOF with nothing queued, or the channel gone).
    pub end: bool,
}

impl Tty {
    pub fn new(size: TermSize) -> Arc<Tty> {
        Arc::new(Tty {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                eof: false,
                closed: false,
                interrupts: 0,
                size,
                resizes: 0,
                raw: 0,
                generation: 0,
                cooked: LineDiscipline::default(),
            }),
            changed: watch::Sender::new(0),
            drained: watch::Sender::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    fn bump_drained(&self) {
        self.drained.send_modify(|v| *v = v.wrapping_add(1));
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Bytes the client typed. In raw mode they are queued as they are; otherwise each
    /// Ctrl-C drops what is queued before it and counts an interrupt.
    pub fn typed(&self, data: &[u8]) {
        {
            let mut s = self.lock();
            if s.raw > 0 {
                s.queue.extend(data);
            } else {
                let mut rest = data;
                while let Some(i) = rest.iter().position(|&b| b == CTRL_C) {
                    s.queue.clear();
                    s.cooked.clear();
                    s.interrupts += 1;
                    rest = &rest[i + 1..];
                }
                queue_cooked(&mut s.queue, rest);
            }
        }
        self.bump();
    }

    /// The client asked to interrupt (a `signal` request).
    pub fn interrupt(&self) {
        {
            let mut s = self.lock();
            s.queue.clear();
            s.cooked.clear();
            s.interrupts += 1;
        }
        self.bump();
    }

    /// Whether the queue has room for more (or nobody will read any more, or what comes
    /// next is dropped but for a few control characters: see `queue_cooked`).
    pub fn has_room(&self) -> bool {
        let s = self.lock();
        s.queue.len() <= INPUT_QUEUE || s.closed || (s.raw == 0 && !has_line_end(&s.queue))
    }

    /// Waits until the queue has room for more (or nobody will read any more).
    pub async fn room(&self) {
        let mut rx = self.drained.subscribe();
        loop {
            rx.borrow_and_update();
            if self.has_room() {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    pub fn resized(&self, size: TermSize) {
        {
            let mut s = self.lock();
            s.size = size;
            s.resizes += 1;
        }
        self.bump();
    }

    /// The client sent EOF.
    pub fn end_of_input(&self) {
        self.lock().eof = true;
        self.bump();
    }

    /// The channel is gone: every reader ends.
    pub fn close(&self) {
        self.lock().closed = true;
        self.bump();
        self.bump_drained();
    }

    pub fn size(&self) -> TermSize {
        self.lock().size
    }

    pub fn interrupts(&self) -> u64 {
        self.lock().interrupts
    }

    /// Everything queued, for the line editor.
    pub fn take(&self) -> Taken {
        let taken = {
            let mut s = self.lock();
            let bytes: Vec<u8> = s.queue.drain(..).collect();
            Taken {
                end: bytes.is_empty() && (s.eof || s.closed),
                bytes,
                interrupts: s.interrupts,
                resizes: s.resizes,
                size: Some(s.size),
            }
        };
        self.bump_drained();
        taken
    }

    /// Puts back bytes a reader did not use, ahead of anything typed since; `since` is
    /// [`Taken::interrupts`] of the take they came from. An interrupt counted after that
    /// take flushed what was queued, so they are dropped as they would have been had they
    /// stayed queued (were they put back, a paste cut by Ctrl-C would come back before the
    /// next line).
    pub fn unread(&self, rest: &[u8], since: u64) {
        if rest.is_empty() {
            return;
        }
        let mut s = self.lock();
        if s.interrupts != since {
            return;
        }
        for &b in rest.iter().rev() {
            s.queue.push_front(b);
        }
    }

    /// A foreground command ended: raw mode ends with it.
    pub fn end_foreground(&self) {
        {
            let mut s = self.lock();
            s.raw = 0;
            s.generation += 1;
        }
        self.bump();
    }

    /// One line through the cooked discipline, for a command reading the terminal
    /// whose run began after `interrupts` interrupts; `echo` gets what to show.
    fn cooked_read(&self, since: u64, echo: &mut Vec<u8>) -> Cooked {
        let mut s = self.lock();
        if s.interrupts != since || s.closed {
            return Cooked::End;
        }
        let bytes: Vec<u8> = s.queue.drain(..).collect();
        let (used, event) = s.cooked.feed_one(&bytes, echo);
        for &b in bytes[used..].iter().rev() {
            s.queue.push_front(b);
        }
        match event {
            Some(TermEvent::Line(l) | TermEvent::TooLong(l)) => Cooked::Line(l),
            Some(TermEvent::Eof | TermEvent::Interrupt) => Cooked::End,
            None if s.eof => match s.cooked.flush() {
                Some(TermEvent::Line(l) | TermEvent::TooLong(l)) => Cooked::Line(l),
                _ => Cooked::End,
            },
            None => Cooked::Wait,
        }
    }
}

/// Queues bytes typed outside raw mode. Once [`INPUT_QUEUE`] bytes wait and none of them
/// ends a line — one line longer than the queue, which no reader takes whole (the editor
/// and the cooked discipline keep its first [`super::MAX_LINE`] bytes) — ordinary
/// characters are dropped and control characters (the line's end, Ctrl-D, erase, kill)
/// still go in, as a terminal's line discipline does with a full buffer. So megabytes
/// pasted without a newline into a command that does not read never make the channel
/// wait for room: the Ctrl-C typed after them arrives, and so does everything the client
/// sent behind them. With a whole line waiting, the queue grows and the channel waits for
/// room as a throttled terminal does.
fn queue_cooked(queue: &mut VecDeque<u8>, data: &[u8]) {
    let ends_line = |b: &u8| matches!(*b, b'\n' | b'\r');
    let mut rest = data;
    while !rest.is_empty() {
        if queue.len() < INPUT_QUEUE || has_line_end(queue) {
            let room = if queue.len() < INPUT_QUEUE {
                (INPUT_QUEUE - queue.len()).min(rest.len())
            } else {
                rest.len()
            };
            queue.extend(&rest[..room]);
            rest = &rest[room..];
            continue;
        }
        let end = rest
            .iter()
            .position(ends_line)
            .map_or(rest.len(), |i| i + 1);
        // Control characters past the queue are bounded too; a line's end always goes in.
        // Escape sequences are kept whole (a bracketed paste's end marker `ESC [201~`
        // among them), so the editor still sees where a paste ends.
        let spare = (INPUT_QUEUE + MAX_LINE_CONTROLS).saturating_sub(queue.len());
        let mut in_seq = in_escape_sequence(queue);
        let mut kept = Vec::new();
        for &b in &rest[..end] {
            if kept.len() >= spare {
                break;
            }
            let keep = match (in_seq, b) {
                (_, 0x1b) => {
                    in_seq = Some(false);
                    true
                }
                (Some(false), b'[') => {
                    in_seq = Some(true);
                    true
                }
                (Some(true), 0x20..=0x3f) => true,
                (Some(_), _) if b >= 0x20 && b != 0x7f => {
                    in_seq = None;
                    true
                }
                _ => {
                    in_seq = None;
                    b < 0x20 || b == 0x7f
                }
            };
            if keep {
                kept.push(b);
            }
        }
        queue.extend(kept);
        if end > 0 && ends_line(&rest[end - 1]) && !has_line_end(queue) {
            queue.push_back(rest[end - 1]);
        }
        rest = &rest[end..];
    }
}

/// Whether the queue ends inside an escape sequence: `Some(false)` right after an ESC,
/// `Some(true)` inside a CSI (`ESC [` and parameter bytes, before its final byte).
fn in_escape_sequence(queue: &VecDeque<u8>) -> Option<bool> {
    let tail = queue.iter().rev().take(16).position(|&b| b == 0x1b)?;
    let after: Vec<u8> = queue.iter().skip(queue.len() - tail).copied().collect();
    match after.split_first() {
        None => Some(false),
        Some((b'[', params)) if params.iter().all(|b| (0x20..=0x3f).contains(b)) => Some(true),
        _ => None,
    }
}

/// Control characters kept past [`INPUT_QUEUE`] on a line longer than the queue.
const MAX_LINE_CONTROLS: usize = 4096;

fn has_line_end(queue: &VecDeque<u8>) -> bool {
    queue.iter().any(|b| matches!(*b, b'\n' | b'\r'))
}

enum Cooked {
    Line(Vec<u8>),
    End,
    Wait,
}

/// A foreground command's stdin on a terminal: a typed line goes to it only when it
/// reads, so lines typed ahead stay for the shell; Ctrl-D ends its input, as does an
/// interrupt.
pub struct TermSource {
    tty: Arc<Tty>,
    out: Output,
    since: u64,
    changed: watch::Receiver<u64>,
    ended: bool,
}

impl TermSource {
    pub fn new(tty: Arc<Tty>, out: Output, since: u64) -> TermSource {
        let changed = tty.subscribe();
        TermSource {
            tty,
            out,
            since,
            changed,
            ended: false,
        }
    }
}

#[async_trait::async_trait]
impl PullSource for TermSource {
    async fn next(&mut self) -> Option<Bytes> {
        if self.ended {
            return None;
        }
        loop {
            self.changed.borrow_and_update();
            let mut echo = Vec::new();
            let got = self.tty.cooked_read(self.since, &mut echo);
            self.tty.bump_drained();
            if !echo.is_empty() {
                let _ = self.out.write_bytes(Bytes::from(echo)).await;
            }
            match got {
                Cooked::Line(l) => return Some(Bytes::from(l)),
                Cooked::End => {
                    self.ended = true;
                    return None;
                }
                Cooked::Wait => {
                    if self.changed.changed().await.is_err() {
                        return None;
                    }
                }
            }
        }
    }
}

/// The session's terminal as a command sees it ([`forkbox_commands::Terminal`]).
#[derive(Debug)]
pub struct SessionTerminal(pub Arc<Tty>);

impl forkbox_commands::Terminal for SessionTerminal {
    fn size(&self) -> TermSize {
        self.0.size()
    }

    fn raw(&self) -> Box<dyn RawKeys> {
        let generation = {
            let mut s = self.0.lock();
            s.raw += 1;
            s.generation
        };
        self.0.bump();
        Box::new(RawReader {
            tty: self.0.clone(),
            changed: self.0.subscribe(),
            generation,
        })
    }
}

/// Keys in raw mode, for as long as it lives and its command runs.
struct RawReader {
    tty: Arc<Tty>,
    changed: watch::Receiver<u64>,
    generation: u64,
}

#[async_trait::async_trait]
impl RawKeys for RawReader {
    async fn read(&mut self) -> Option<Bytes> {
        loop {
            self.changed.borrow_and_update();
            {
                let mut s = self.tty.lock();
                if s.generation != self.generation || s.closed {
                    return None;
                }
                if !s.queue.is_empty() {
                    let bytes: Vec<u8> = s.queue.drain(..).collect();
                    drop(s);
                    self.tty.bump_drained();
                    return Some(Bytes::from(bytes));
                }
                if s.eof {
                    return None;
                }
            }
            if self.changed.changed().await.is_err() {
                return None;
            }
        }
    }
}

impl Drop for RawReader {
    fn drop(&mut self) {
        let mut s = self.tty.lock();
        if s.generation == self.generation {
            s.raw = s.raw.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use forkbox_commands::{Input, Terminal, pipe};

    const SIZE: TermSize = TermSize { cols: 80, rows: 24 };

    #[tokio::test]
    async fn ctrl_c_flushes_and_counts_outside_raw_mode() {
        let tty = Tty::new(SIZE);
        tty.typed(b"abc\x03de");
        let t = tty.take();
        assert_eq!((t.bytes.as_slice(), t.interrupts), (&b"de"[..], 1));
    }

    #[tokio::test]
    async fn a_line_longer_than_the_queue_keeps_only_control_characters_past_it() {
        let tty = Tty::new(SIZE);
        tty.typed(&vec![b'x'; INPUT_QUEUE - 2]);
        assert!(tty.has_room());
        tty.typed(b"abcd\x7fe\x04fg");
        tty.typed(&vec![b'y'; 1 << 20]);
        assert!(tty.has_room(), "nothing could take the rest of the line");
        tty.typed(b"z\ragain");
        let mut want = vec![b'x'; INPUT_QUEUE - 2];
        want.extend(b"ab\x7f\x04\ragain");
        assert_eq!(tty.take().bytes, want);
        // Ctrl-C after such a paste still flushes it and counts.
        tty.typed(&vec![b'x'; 2 * INPUT_QUEUE]);
        tty.typed(b"\x03ls\n");
        let t = tty.take();
        assert_eq!((t.bytes.as_slice(), t.interrupts), (&b"ls\n"[..], 1));
    }

    #[tokio::test]
    async fn escape_sequences_past_the_queue_are_kept_whole() {
        let tty = Tty::new(SIZE);
        tty.typed(b"\x1b[200~");
        tty.typed(&vec![b'x'; INPUT_QUEUE + 10]);
        // The paste's end marker, split across two reads, and the Enter after it.
        tty.typed(b"xx\x1b[20");
        tty.typed(b"1~yy\r");
        let mut want = b"\x1b[200~".to_vec();
        want.extend(vec![b'x'; INPUT_QUEUE - 6]);
        want.extend(b"\x1b[201~\r");
        assert_eq!(tty.take().bytes, want);
    }

    #[tokio::test]
    async fn whole_lines_past_the_queue_are_kept_for_their_reader() {
        let tty = Tty::new(SIZE);
        let lines = b"line\n".repeat(INPUT_QUEUE / 5 + 10);
        tty.typed(&lines);
        assert!(
            !tty.has_room(),
            "the channel waits for room, as a throttled terminal"
        );
        assert_eq!(tty.take().bytes, lines);
    }

    #[tokio::test]
    async fn bytes_put_back_after_a_later_ctrl_c_are_dropped() {
        let tty = Tty::new(SIZE);
        tty.typed(b"ls\nxxxx");
        let t = tty.take();
        // The editor used `ls\n`; before it puts the rest back, Ctrl-C flushes the queue.
        tty.typed(b"yy\x03zz");
        tty.unread(&t.bytes[3..], t.interrupts);
        assert_eq!(tty.take().bytes, b"zz");
        // Without an interrupt in between, the rest goes back ahead of what came since.
        tty.typed(b"ls\nxx");
        let t = tty.take();
        tty.typed(b"yy");
        tty.unread(&t.bytes[3..], t.interrupts);
        assert_eq!(tty.take().bytes, b"xxyy");
    }

    #[tokio::test]
    async fn raw_mode_gets_every_byte_until_dropped_or_the_command_ends() {
        let tty = Tty::new(SIZE);
        let term = SessionTerminal(tty.clone());
        let mut keys = term.raw();
        tty.typed(b"q\x03\x1b[A");
        assert_eq!(keys.read().await.as_deref(), Some(&b"q\x03\x1b[A"[..]));
        assert_eq!(tty.interrupts(), 0);
        drop(keys);
        tty.typed(b"\x03");
        assert_eq!(tty.interrupts(), 1);
        let mut keys = term.raw();
        tty.end_foreground();
        assert_eq!(keys.read().await, None);
        tty.typed(b"\x03");
        assert_eq!(tty.interrupts(), 2, "cooked again after the command ended");
        assert_eq!(term.size(), SIZE);
        tty.resized(TermSize {
            cols: 100,
            rows: 30,
        });
        assert_eq!(term.size().cols, 100);
    }

    #[tokio::test]
    async fn a_reading_command_gets_one_cooked_line_at_a_time() {
        let tty = Tty::new(SIZE);
        let (out, echo) = pipe();
        let input = Input::from_source(Box::new(TermSource::new(tty.clone(), out, 0)));
        tty.typed(b"one\x7fE\ntwo\n");
        let line = input.read_chunk().await.ok().flatten();
        assert_eq!(line.as_deref(), Some(&b"onE\n"[..]));
        // The second line stays queued for the next reader.
        assert_eq!(tty.take().bytes, b"two\n");
        tty.typed(b"\x04");
        assert_eq!(input.read_chunk().await.ok().flatten(), None);
        drop(input);
        let shown = echo.read_chunk().await.ok().flatten();
        assert_eq!(shown.as_deref(), Some(&b"one\x08 \x08E\r\n"[..]));
    }

    #[tokio::test]
    async fn an_interrupt_ends_a_cooked_read() {
        let tty = Tty::new(SIZE);
        let (out, _echo) = pipe();
        let input = Input::from_source(Box::new(TermSource::new(tty.clone(), out, 0)));
        let reader = tokio::spawn(async move { input.read_chunk().await.ok().flatten() });
        tokio::task::yield_now().await;
        tty.typed(b"partial\x03");
        assert_eq!(reader.await.ok().flatten(), None);
    }
}

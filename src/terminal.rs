//! The terminal of a PTY session, as a pure byte-stream machine (nothing here touches
//! SSH; the channel code drives it):
//!
//! - `input`: the typed-input queue shared by the channel's reader and the terminal's
//!   readers, Ctrl-C as an interrupt, raw mode for full-screen programs;
//! - `editor`: the line editor the shell's prompt reads with (readline's emacs keys,
//!   history, Ctrl-R, Tab completion, bracketed paste), over `keys` (the key decoder),
//!   `render` (wrapping with wide and combining characters, redraw), `history` (the
//!   session's list, shared with its shell) and `complete`;
//! - `histexpand`: bash's history expansion (`!!`, `!$`, `^old^new`, …) of typed lines;
//! - `cooked`: the line discipline a foreground command reads through.

mod complete;
mod cooked;
mod editor;
mod histexpand;
mod history;
mod input;
mod keys;
mod render;

pub use complete::{Candidate, Kind as CompletionKind, Request as CompletionRequest};
pub use cooked::{LineDiscipline, TermEvent};
pub use editor::{Editor, Event, PASTE_OFF, PASTE_ON, Step};
pub use histexpand::{Expansion, expand as history_expand, join_lines as history_join};
pub use history::{History, SharedHistory};
pub use input::{INPUT_QUEUE, SessionTerminal, TermSource, Tty};

/// Longest line kept while typing; further bytes are dropped (and not echoed; the first
/// one rings the bell), so a client cannot grow the line buffer without bound.
pub const MAX_LINE: usize = 64 * 1024;

/// Translates `\n` into `\r\n` for a terminal (what a tty's ONLCR does), leaving a
/// `\r\n` that is already there alone (the editor's and the echo's own line ends).
pub fn onlcr(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 16);
    let mut prev = 0u8;
    for &b in data {
        if b == b'\n' && prev != b'\r' {
            out.push(b'\r');
        }
        out.push(b);
        prev = b;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onlcr_translates() {
        assert_eq!(onlcr(b"a\nb\n"), b"a\r\nb\r\n");
        assert_eq!(onlcr(b"a\r\nb\r\r\n"), b"a\r\nb\r\r\n");
    }
}

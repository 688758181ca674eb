//! The cooked line discipline a foreground command reads a terminal through (what `cat`
//! on a tty sees): echo, backspace, Ctrl-U, Enter, Ctrl-C and Ctrl-D. Arrow keys and other
//! escape sequences are swallowed rather than inserted as garbage.

use super::MAX_LINE;

/// What a burst of keystrokes means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TermEvent {
    /// A finished line, with its `\n` (or without one when Ctrl-D flushed a partial line).
    Line(Vec<u8>),
    /// A finished line that was typed longer than [`MAX_LINE`]: its first [`MAX_LINE`]
    /// bytes (and `\n`). A command reading the terminal gets them, as from a real
    /// terminal; the shell refuses it as a command line, which it no longer is.
    TooLong(Vec<u8>),
    /// Ctrl-D on an empty line: end of input.
    Eof,
    /// Ctrl-C: interrupt what runs, drop the line being typed.
    Interrupt,
}

#[derive(Debug, Default)]
pub struct LineDiscipline {
    line: Vec<u8>,
    /// Bytes of the current line were dropped past [`MAX_LINE`].
    overflowed: bool,
    /// Inside an escape sequence: 1 after ESC, 2 after `ESC [` (until its final byte).
    escape: u8,
}

impl LineDiscipline {
    /// Feeds input bytes; returns the events they complete and the bytes to echo.
    pub fn feed(&mut self, input: &[u8]) -> (Vec<TermEvent>, Vec<u8>) {
        let mut events = Vec::new();
        let mut echo = Vec::new();
        for &b in input {
            events.extend(self.byte(b, &mut echo));
        }
        (events, echo)
    }

    /// Feeds input bytes up to the first one that completes an event: how many it used,
    /// the event, if one came, and the bytes to echo. The rest is for a later reader.
    pub fn feed_one(&mut self, input: &[u8], echo: &mut Vec<u8>) -> (usize, Option<TermEvent>) {
        for (i, &b) in input.iter().enumerate() {
            if let Some(ev) = self.byte(b, echo) {
                return (i + 1, Some(ev));
            }
        }
        (input.len(), None)
    }

    /// The partial line typed so far, ended by end of input: a last event, if any.
    pub fn flush(&mut self) -> Option<TermEvent> {
        if self.line.is_empty() && !self.overflowed {
            return None;
        }
        let line = std::mem::take(&mut self.line);
        Some(self.finish(line))
    }

    /// Drops the partial line (an interrupt flushed the input).
    pub fn clear(&mut self) {
        self.line.clear();
        self.overflowed = false;
        self.escape = 0;
    }

    fn byte(&mut self, b: u8, echo: &mut Vec<u8>) -> Option<TermEvent> {
        if self.escape == 1 {
            self.escape = if b == b'[' || b == b'O' { 2 } else { 0 };
            return None;
        }
        if self.escape == 2 {
            if (0x40..=0x7e).contains(&b) {
                self.escape = 0;
            }
            return None;
        }
        match b {
            0x1b => self.escape = 1,
            b'\r' | b'\n' => {
                echo.extend_from_slice(b"\r\n");
                let mut line = std::mem::take(&mut self.line);
                line.push(b'\n');
                return Some(self.finish(line));
            }
            0x03 => {
                echo.extend_from_slice(b"^C\r\n");
                self.line.clear();
                self.overflowed = false;
                return Some(TermEvent::Interrupt);
            }
            0x04 => {
                if self.line.is_empty() && !self.overflowed {
                    return Some(TermEvent::Eof);
                }
                let line = std::mem::take(&mut self.line);
                return Some(self.finish(line));
            }
            0x7f | 0x08 => {
                // Remove one whole UTF-8 character.
                let had = !self.line.is_empty();
                while let Some(last) = self.line.pop() {
                    if last & 0xc0 != 0x80 {
                        break;
                    }
                }
                if had {
                    echo.extend_from_slice(b"\x08 \x08");
                }
            }
            0x15 => {
                let chars = String::from_utf8_lossy(&self.line).chars().count();
                for _ in 0..chars {
                    echo.extend_from_slice(b"\x08 \x08");
                }
                self.line.clear();
                self.overflowed = false;
            }
            b'\t' => self.push(b' ', echo),
            b if b < 0x20 => {}
            b => self.push(b, echo),
        }
        None
    }

    fn push(&mut self, b: u8, echo: &mut Vec<u8>) {
        if self.line.len() < MAX_LINE {
            self.line.push(b);
            echo.push(b);
        } else if !self.overflowed {
            self.overflowed = true;
            echo.push(0x07);
        }
    }

    fn finish(&mut self, line: Vec<u8>) -> TermEvent {
        if std::mem::take(&mut self.overflowed) {
            TermEvent::TooLong(line)
        } else {
            TermEvent::Line(line)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_a_line_echoes_and_submits() {
        let mut ld = LineDiscipline::default();
        let (ev, echo) = ld.feed(b"ls\r");
        assert_eq!(ev, vec![TermEvent::Line(b"ls\n".to_vec())]);
        assert_eq!(echo, b"ls\r\n");
    }

    #[test]
    fn backspace_removes_whole_characters() {
        let mut ld = LineDiscipline::default();
        let (ev, _) = ld.feed("aé\x7f\x7fb\r".as_bytes());
        assert_eq!(ev, vec![TermEvent::Line(b"b\n".to_vec())]);
    }

    #[test]
    fn ctrl_c_and_ctrl_d() {
        let mut ld = LineDiscipline::default();
        let (ev, echo) = ld.feed(b"abc\x03\x04");
        assert_eq!(ev, vec![TermEvent::Interrupt, TermEvent::Eof]);
        assert_eq!(echo, b"abc^C\r\n");
        let (ev, _) = ld.feed(b"x\x04");
        assert_eq!(ev, vec![TermEvent::Line(b"x".to_vec())]);
    }

    #[test]
    fn escape_sequences_are_swallowed() {
        let mut ld = LineDiscipline::default();
        let (ev, echo) = ld.feed(b"a\x1b[A\x1b[1;5Cb\r");
        assert_eq!(ev, vec![TermEvent::Line(b"ab\n".to_vec())]);
        assert_eq!(echo, b"ab\r\n");
    }

    #[test]
    fn lines_are_bounded() {
        let mut ld = LineDiscipline::default();
        let big = vec![b'x'; MAX_LINE + 10];
        let (_, echo) = ld.feed(&big);
        assert_eq!(echo.len(), MAX_LINE + 1);
        assert_eq!(echo.last(), Some(&0x07));
        let (ev, _) = ld.feed(b"\r");
        let mut kept = vec![b'x'; MAX_LINE];
        kept.push(b'\n');
        assert_eq!(ev, vec![TermEvent::TooLong(kept)]);
        // The next line starts afresh; one of exactly MAX_LINE bytes is whole.
        let mut exact = vec![b'y'; MAX_LINE];
        exact.push(b'\r');
        let (ev, _) = ld.feed(&exact);
        assert!(matches!(&ev[..], [TermEvent::Line(l)] if l.len() == MAX_LINE + 1));
    }

    #[test]
    fn feed_one_stops_after_the_first_line() {
        let mut ld = LineDiscipline::default();
        let mut echo = Vec::new();
        let (used, ev) = ld.feed_one(b"ab\ncd\n", &mut echo);
        assert_eq!((used, ev), (3, Some(TermEvent::Line(b"ab\n".to_vec()))));
        assert_eq!(echo, b"ab\r\n");
        let (used, ev) = ld.feed_one(b"cd", &mut echo);
        assert_eq!((used, ev), (2, None));
        assert_eq!(ld.flush(), Some(TermEvent::Line(b"cd".to_vec())));
        assert_eq!(ld.flush(), None);
    }
}

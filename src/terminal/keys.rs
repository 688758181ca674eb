//! Turns the bytes a terminal sends into keys: UTF-8 characters (invalid bytes become
//! U+FFFD), control keys, and the escape sequences of the usual terminals (xterm, tmux,
//! the Linux console, VT100 application mode) for arrows, Home/End, Delete and Alt-keys,
//! and bracketed paste: between `ESC[200~` and `ESC[201~` every character, control
//! characters included, comes out as [`Key::Char`] (a carriage return as a newline, as
//! readline reads a paste), so a pasted newline or Tab is text, not Enter or completion.

/// One key press, as the line editor sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// A printable character.
    Char(char),
    /// Ctrl with a letter (`Ctrl('a')` for 0x01); Tab, Enter and Backspace have their own.
    Ctrl(char),
    /// A character typed with Alt (ESC then the character).
    Alt(char),
    AltBackspace,
    Enter,
    Tab,
    Backspace,
    Delete,
    Left,
    Right,
    Up,
    Down,
    Home,
    End,
    /// Ctrl-Left / Ctrl-Right: a word back or forward.
    WordLeft,
    WordRight,
    /// `ESC[200~`: the terminal starts a bracketed paste.
    PasteStart,
    /// `ESC[201~`: the paste is over.
    PasteEnd,
    /// A lone ESC followed by something that makes no key, or a sequence we do not know:
    /// ignored, never inserted.
    Ignored,
}

/// Longest escape sequence kept; longer ones are skipped to their final byte.
const MAX_SEQUENCE: usize = 32;

#[derive(Debug, Default)]
enum State {
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// After `ESC [`, with the parameter bytes so far.
    Csi(Vec<u8>),
    /// After `ESC O`.
    Ss3,
    /// Inside a UTF-8 character: the bytes so far and how many it needs.
    Utf8(Vec<u8>, usize),
}

/// The decoder; it keeps a sequence split across two reads.
#[derive(Debug, Default)]
pub struct Decoder {
    state: State,
    /// Inside a bracketed paste.
    pasting: bool,
    /// The last pasted byte was a carriage return (a `\n` after it is the same line end).
    pasted_cr: bool,
}

impl Decoder {
    /// Feeds one byte; the key it completes, if any.
    pub fn push(&mut self, b: u8) -> Option<Key> {
        match std::mem::take(&mut self.state) {
            State::Ground => self.ground(b),
            State::Escape => match b {
                b'[' => {
                    self.state = State::Csi(Vec::new());
                    None
                }
                b'O' => {
                    self.state = State::Ss3;
                    None
                }
                0x7f | 0x08 => Some(Key::AltBackspace),
                0x1b => {
                    self.state = State::Escape;
                    Some(Key::Ignored)
                }
                b if b.is_ascii_graphic() => Some(Key::Alt(b as char)),
                _ => Some(Key::Ignored),
            },
            State::Csi(mut params) => {
                if (0x40..=0x7e).contains(&b) {
                    let key = csi(&params, b);
                    match key {
                        Key::PasteStart => self.pasting = true,
                        Key::PasteEnd => self.pasting = false,
                        _ => {}
                    }
                    self.pasted_cr = false;
                    return Some(key);
                }
                if params.len() < MAX_SEQUENCE {
                    params.push(b);
                }
                self.state = State::Csi(params);
                None
            }
            State::Ss3 => Some(match b {
                b'A' => Key::Up,
                b'B' => Key::Down,
                b'C' => Key::Right,
                b'D' => Key::Left,
                b'H' => Key::Home,
                b'F' => Key::End,
                _ => Key::Ignored,
            }),
            State::Utf8(mut bytes, need) => {
                if b & 0xc0 != 0x80 {
                    // The character broke off: it is invalid, and this byte starts afresh.
                    let key = self.ground(b);
                    return match key {
                        // Both can't be returned; the broken character is dropped.
                        Some(k) => Some(k),
                        None => Some(Key::Char(char::REPLACEMENT_CHARACTER)),
                    };
                }
                bytes.push(b);
                if bytes.len() < need {
                    self.state = State::Utf8(bytes, need);
                    return None;
                }
                let c = std::str::from_utf8(&bytes)
                    .ok()
                    .and_then(|s| s.chars().next())
                    .unwrap_or(char::REPLACEMENT_CHARACTER);
                Some(Key::Char(c))
            }
        }
    }

    /// Whether a bracketed paste is under way.
    pub fn pasting(&self) -> bool {
        self.pasting
    }

    fn ground(&mut self, b: u8) -> Option<Key> {
        if self.pasting && b != 0x1b {
            let cr = std::mem::replace(&mut self.pasted_cr, b == b'\r');
            match b {
                b'\n' if cr => return None,
                b'\r' | b'\n' => return Some(Key::Char('\n')),
                0x00..=0x1f | 0x7f => return Some(Key::Char(b as char)),
                _ => {}
            }
        }
        Some(match b {
            0x1b => {
                self.state = State::Escape;
                return None;
            }
            b'\r' | b'\n' => Key::Enter,
            b'\t' => Key::Tab,
            0x7f | 0x08 => Key::Backspace,
            0x00..=0x1f => Key::Ctrl((b + b'a' - 1) as char),
            0x20..=0x7e => Key::Char(b as char),
            0xc2..=0xdf => return self.start_utf8(b, 2),
            0xe0..=0xef => return self.start_utf8(b, 3),
            0xf0..=0xf4 => return self.start_utf8(b, 4),
            _ => Key::Char(char::REPLACEMENT_CHARACTER),
        })
    }

    fn start_utf8(&mut self, b: u8, need: usize) -> Option<Key> {
        self.state = State::Utf8(vec![b], need);
        None
    }
}

/// The key a complete `ESC [ params final` sequence stands for.
fn csi(params: &[u8], last: u8) -> Key {
    let text = std::str::from_utf8(params).unwrap_or("");
    let mut fields = text.split(';');
    let first = fields.next().unwrap_or("");
    let ctrl = fields.next().is_some_and(|m| m == "5");
    match last {
        b'A' => Key::Up,
        b'B' => Key::Down,
        b'C' if ctrl => Key::WordRight,
        b'D' if ctrl => Key::WordLeft,
        b'C' => Key::Right,
        b'D' => Key::Left,
        b'H' => Key::Home,
        b'F' => Key::End,
        b'~' => match first {
            "200" => Key::PasteStart,
            "201" => Key::PasteEnd,
            "1" | "7" => Key::Home,
            "4" | "8" => Key::End,
            "3" => Key::Delete,
            _ => Key::Ignored,
        },
        _ => Key::Ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(bytes: &[u8]) -> Vec<Key> {
        let mut d = Decoder::default();
        bytes.iter().filter_map(|&b| d.push(b)).collect()
    }

    #[test]
    fn home_and_end_in_every_spelling() {
        for seq in [&b"\x1b[H"[..], b"\x1b[1~", b"\x1bOH", b"\x1b[7~"] {
            assert_eq!(keys(seq), vec![Key::Home], "{seq:?}");
        }
        for seq in [&b"\x1b[F"[..], b"\x1b[4~", b"\x1bOF", b"\x1b[8~"] {
            assert_eq!(keys(seq), vec![Key::End], "{seq:?}");
        }
    }

    #[test]
    fn arrows_delete_and_modified_arrows() {
        assert_eq!(
            keys(b"\x1b[A\x1b[B\x1b[C\x1b[D\x1bOD\x1b[3~\x1b[1;5C\x1b[1;5D"),
            vec![
                Key::Up,
                Key::Down,
                Key::Right,
                Key::Left,
                Key::Left,
                Key::Delete,
                Key::WordRight,
                Key::WordLeft
            ]
        );
    }

    #[test]
    fn control_and_alt_keys() {
        assert_eq!(
            keys(b"\x01\x05\x7f\x08\t\r\x1bb\x1bf\x1b\x7f"),
            vec![
                Key::Ctrl('a'),
                Key::Ctrl('e'),
                Key::Backspace,
                Key::Backspace,
                Key::Tab,
                Key::Enter,
                Key::Alt('b'),
                Key::Alt('f'),
                Key::AltBackspace
            ]
        );
    }

    #[test]
    fn utf8_split_across_reads_and_invalid_bytes() {
        let mut d = Decoder::default();
        let bytes = "é中".as_bytes();
        let mut got = Vec::new();
        for &b in bytes {
            got.extend(d.push(b));
        }
        assert_eq!(got, vec![Key::Char('é'), Key::Char('中')]);
        assert_eq!(
            keys(b"\xff\xc3x\xe4\xb8"),
            vec![Key::Char(char::REPLACEMENT_CHARACTER), Key::Char('x'),]
        );
    }

    #[test]
    fn a_bracketed_paste_is_text_control_characters_and_all() {
        assert_eq!(
            keys(b"\x1b[200~a\tb\r\nc\rd\x01\x7f\x1b[201~\t\r"),
            vec![
                Key::PasteStart,
                Key::Char('a'),
                Key::Char('\t'),
                Key::Char('b'),
                Key::Char('\n'),
                Key::Char('c'),
                Key::Char('\n'),
                Key::Char('d'),
                Key::Char('\x01'),
                Key::Char('\x7f'),
                Key::PasteEnd,
                Key::Tab,
                Key::Enter,
            ]
        );
        // The end marker split across reads still ends the paste.
        let mut d = Decoder::default();
        let mut got = Vec::new();
        for chunk in [&b"\x1b[200~x\x1b"[..], b"[20", b"1~\r"] {
            got.extend(chunk.iter().filter_map(|&b| d.push(b)));
        }
        assert_eq!(
            got,
            vec![Key::PasteStart, Key::Char('x'), Key::PasteEnd, Key::Enter]
        );
    }

    #[test]
    fn unknown_and_overlong_sequences_are_ignored() {
        let mut long = b"\x1b[".to_vec();
        long.extend(std::iter::repeat_n(b'1', 1000));
        long.push(b'Z');
        long.push(b'a');
        assert_eq!(keys(&long), vec![Key::Ignored, Key::Char('a')]);
        assert_eq!(keys(b"\x1b[99~q"), vec![Key::Ignored, Key::Char('q')]);
    }
}

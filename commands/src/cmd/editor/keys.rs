//! Keystrokes from raw terminal bytes.
//!
//! Printable bytes (any byte from a space up, valid UTF-8 or not, and tab) come as runs
//! of [`Key::Text`], so a pasted megabyte is a handful of keys, not a million. Escape
//! sequences for the keys editors use are decoded; any other well-formed sequence is
//! dropped whole, and a sequence longer than [`MAX_SEQUENCE`] is dropped as it comes, so
//! no input makes the decoder hold more than a few bytes between bursts.

/// Longest escape sequence the decoder collects; past it the sequence is discarded.
const MAX_SEQUENCE: usize = 32;

/// One keystroke (or a run of typed text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    /// Printable bytes, as typed.
    Text(Vec<u8>),
    /// Enter (CR or LF).
    Enter,
    Backspace,
    Delete,
    Esc,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    PageUp,
    PageDown,
    /// A control key: the lower-case letter (`Ctrl(b'x')` is Ctrl-X), or the byte itself
    /// for the control codes that have no letter.
    Ctrl(u8),
}

/// Where the decoder is between two bytes.
#[derive(Debug, Default)]
enum State {
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// After `ESC [`, with the parameter bytes so far (`None` once too long).
    Csi(Option<Vec<u8>>),
    /// After `ESC O`.
    Ss3,
}

/// Turns bursts of terminal bytes into keys. Sequences and UTF-8 characters split
/// across bursts are joined; a lone ESC at the end of a burst is the Esc key (a
/// person pressing Esc sends it alone).
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    state: State,
}

impl Decoder {
    pub(crate) fn new() -> Decoder {
        Decoder::default()
    }

    /// The keys in `bytes`, appended to `out`.
    pub(crate) fn feed(&mut self, bytes: &[u8], out: &mut Vec<Key>) {
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match std::mem::take(&mut self.state) {
                State::Ground => {
                    if b >= 0x20 && b != 0x7f || b == b'\t' {
                        let start = i;
                        while i < bytes.len()
                            && (bytes[i] >= 0x20 && bytes[i] != 0x7f || bytes[i] == b'\t')
                        {
                            i += 1;
                        }
                        push_text(out, &bytes[start..i]);
                        continue;
                    }
                    match b {
                        0x1b => self.state = State::Escape,
                        b'\r' | b'\n' => {
                            out.push(Key::Enter);
                            // CR LF from a client that sends both is one Enter.
                            if b == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                                i += 1;
                            }
                        }
                        0x7f | 0x08 => out.push(Key::Backspace),
                        0x01..=0x1a => out.push(Key::Ctrl(b - 1 + b'a')),
                        other => out.push(Key::Ctrl(other)),
                    }
                }
                State::Escape => match b {
                    b'[' => self.state = State::Csi(Some(Vec::new())),
                    b'O' => self.state = State::Ss3,
                    0x1b => {
                        out.push(Key::Esc);
                        self.state = State::Escape;
                    }
                    _ => {
                        // Esc then a key (Alt-key, or vi's Esc typed fast): the key is
                        // read again in the ground state.
                        out.push(Key::Esc);
                        continue;
                    }
                },
                State::Csi(params) => {
                    if (0x40..=0x7e).contains(&b) {
                        if let Some(key) = params.and_then(|p| csi_key(&p, b)) {
                            out.push(key);
                        }
                    } else if (0x20..=0x3f).contains(&b) {
                        let params = params
                            .map(|mut p| {
                                p.push(b);
                                p
                            })
                            .filter(|p| p.len() <= MAX_SEQUENCE);
                        self.state = State::Csi(params);
                    } else {
                        // Not part of a sequence: the sequence is abandoned and the byte
                        // read again.
                        continue;
                    }
                }
                State::Ss3 => {
                    if let Some(key) = csi_key(b"", b) {
                        out.push(key);
                    }
                }
            }
            i += 1;
        }
        if matches!(self.state, State::Escape) {
            out.push(Key::Esc);
            self.state = State::Ground;
        }
    }
}

/// Appends printable bytes, joining them to a text run just before.
fn push_text(out: &mut Vec<Key>, bytes: &[u8]) {
    if let Some(Key::Text(run)) = out.last_mut() {
        run.extend_from_slice(bytes);
    } else {
        out.push(Key::Text(bytes.to_vec()));
    }
}

/// The key a CSI (or SS3) sequence with `params` and final byte `fin` stands for.
fn csi_key(params: &[u8], fin: u8) -> Option<Key> {
    let key = match fin {
        b'A' => Key::Up,
        b'B' => Key::Down,
        b'C' => Key::Right,
        b'D' => Key::Left,
        b'H' => Key::Home,
        b'F' => Key::End,
        b'~' => {
            let first = params.split(|b| *b == b';').next().unwrap_or(b"");
            match first {
                b"1" | b"7" => Key::Home,
                b"4" | b"8" => Key::End,
                b"3" => Key::Delete,
                b"5" => Key::PageUp,
                b"6" => Key::PageDown,
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(chunks: &[&[u8]]) -> Vec<Key> {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut out);
        }
        out
    }

    #[test]
    fn text_controls_and_sequences() {
        assert_eq!(
            keys(&[b"ab\tc\r\x7f\x18\x1b[A\x1bOB\x1b[3~\x1b[5~\x1b[1;5C"]),
            vec![
                Key::Text(b"ab\tc".to_vec()),
                Key::Enter,
                Key::Backspace,
                Key::Ctrl(b'x'),
                Key::Up,
                Key::Down,
                Key::Delete,
                Key::PageUp,
                Key::Right,
            ]
        );
    }

    #[test]
    fn split_sequences_unknown_and_lone_esc() {
        assert_eq!(keys(&[b"\x1b[", b"6~"]), vec![Key::PageDown]);
        assert_eq!(
            keys(&[b"\x1b[99;99z", b"x"]),
            vec![Key::Text(b"x".to_vec())]
        );
        assert_eq!(keys(&[b"\x1b"]), vec![Key::Esc]);
        assert_eq!(
            keys(&[b"\x1b:wq\r"]),
            vec![Key::Esc, Key::Text(b":wq".to_vec()), Key::Enter]
        );
        let long: Vec<u8> = std::iter::once(0x1b)
            .chain(std::iter::once(b'['))
            .chain(std::iter::repeat_n(b'1', 10_000))
            .chain(*b"~ok")
            .collect();
        assert_eq!(keys(&[&long]), vec![Key::Text(b"ok".to_vec())]);
    }

    #[test]
    fn utf8_and_invalid_bytes_are_text() {
        assert_eq!(
            keys(&["é".as_bytes(), &[0xff, 0xe6]]),
            vec![Key::Text(vec![0xc3, 0xa9, 0xff, 0xe6])]
        );
    }
}

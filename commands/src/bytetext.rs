//! Bytes that are not UTF-8, carried in text.
//!
//! The shell and the commands keep values as `String`, but a value can hold any bytes
//! (`$'\xe9'`, `printf '\351'`, a file's content through `$(…)` or `read`). Each byte that
//! is not part of valid UTF-8 gets a character of its own in a private-use range no marker
//! uses: byte `b` (0x80–0xFF) is U+10FF00 + `b` (U+10FF80–U+10FFFF). [`decode`] turns bytes
//! into such text, [`encode`] gives the bytes back, so any byte string survives the round
//! trip. Valid UTF-8 that spells one of those characters (F4 8F BE/BF xx) is decoded as
//! four byte characters, so it too comes back as it was.
//!
//! Both are no-ops (no copy) on text with no byte F4, which is all text in practice.
//!
//! The C locale works on bytes, not characters: [`byte_view`] shows a text with every
//! byte past ASCII as its byte character (`é` is two of them), so that `?`, substrings and
//! lengths count bytes; [`normalise`] turns the result back into the usual form (byte
//! characters that spell valid UTF-8 again become that character).

use std::borrow::Cow;

/// The character of byte 0x00 (never used: only bytes 0x80–0xFF get one).
const BASE: u32 = 0x10FF00;

/// The lead byte of the UTF-8 of every byte character (and of every character past
/// U+FFFFF): text without it has none.
const LEAD: u8 = 0xF4;

/// The character that stands for byte `b` (0x80–0xFF) in text.
pub fn byte_char(b: u8) -> char {
    char::from_u32(BASE + u32::from(b)).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The byte that `c` stands for, when it is a byte character.
pub fn char_byte(c: char) -> Option<u8> {
    let n = u32::from(c);
    (BASE + 0x80..=BASE + 0xFF)
        .contains(&n)
        .then(|| (n - BASE) as u8)
}

/// Whether `s` may hold byte characters (a fast test: false means it has none).
pub fn may_have_bytes(s: &str) -> bool {
    s.as_bytes().contains(&LEAD)
}

/// Whether `s` holds a byte character.
pub fn has_bytes(s: &str) -> bool {
    may_have_bytes(s) && s.chars().any(|c| char_byte(c).is_some())
}

/// Text of `bytes`: valid UTF-8 as it is, every other byte as its byte character.
pub fn decode(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) if !may_have_bytes(&s) => s,
        Ok(s) => decode_slow(s.as_bytes()),
        Err(e) => decode_slow(e.as_bytes()),
    }
}

/// [`decode`] of a borrowed slice (no copy when it is plain UTF-8).
pub fn decode_slice(bytes: &[u8]) -> Cow<'_, str> {
    if !bytes.contains(&LEAD)
        && let Ok(s) = std::str::from_utf8(bytes)
    {
        return Cow::Borrowed(s);
    }
    Cow::Owned(decode_slow(bytes))
}

fn decode_slow(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    let mut rest = bytes;
    while !rest.is_empty() {
        let (good, bad) = match std::str::from_utf8(rest) {
            Ok(_) => (rest.len(), 0),
            Err(e) => (
                e.valid_up_to(),
                e.error_len().unwrap_or(rest.len() - e.valid_up_to()),
            ),
        };
        // The prefix is valid UTF-8 by the error's own account.
        let text = std::str::from_utf8(&rest[..good]).unwrap_or_default();
        for c in text.chars() {
            if char_byte(c).is_some() {
                // A byte character spelled in UTF-8: its four bytes, each as itself.
                let mut buf = [0; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    out.push(byte_char(b));
                }
            } else {
                out.push(c);
            }
        }
        for &b in &rest[good..good + bad] {
            out.push(byte_char(b));
        }
        rest = &rest[good + bad..];
    }
    out
}

/// The bytes `s` stands for: its UTF-8, with each byte character as its byte.
pub fn encode(s: &str) -> Cow<'_, [u8]> {
    if !may_have_bytes(s) {
        return Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        match char_byte(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    Cow::Owned(out)
}

/// [`encode`] of text already turned into its UTF-8 bytes (`data` that is not UTF-8 is
/// given back as it is).
pub fn encode_bytes(data: &[u8]) -> Cow<'_, [u8]> {
    if !data.contains(&LEAD) {
        return Cow::Borrowed(data);
    }
    match std::str::from_utf8(data) {
        Ok(s) => encode(s),
        Err(_) => Cow::Borrowed(data),
    }
}

/// How many bytes `s` stands for (the C locale's length).
pub fn byte_len(s: &str) -> usize {
    if !may_have_bytes(s) {
        return s.len();
    }
    s.chars()
        .map(|c| {
            if char_byte(c).is_some() {
                1
            } else {
                c.len_utf8()
            }
        })
        .sum()
}

/// `s` as the C locale sees it: each byte past ASCII as its byte character, so that one
/// character is one byte. Undo with [`normalise`].
pub fn byte_view(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if c.is_ascii() || char_byte(c).is_some() {
            out.push(c);
        } else {
            for &b in c.encode_utf8(&mut [0; 4]).as_bytes() {
                out.push(byte_char(b));
            }
        }
    }
    Cow::Owned(out)
}

/// `s` in the usual form: byte characters that spell valid UTF-8 become that character.
pub fn normalise(s: String) -> String {
    if !may_have_bytes(&s) {
        return s;
    }
    decode(encode(&s).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_bytes_round_trip() {
        let all: Vec<u8> = (0..=255).collect();
        for chunk in [
            &all[..],
            b"a\xe9b",
            b"\xc3",
            b"\xc3\xa9",
            b"\xf4\x8f\xbf\xbf",
            b"\xf4\x8f\xbe\x80x\xf4",
            b"\xff\xfe",
        ] {
            let text = decode(chunk.to_vec());
            assert_eq!(encode(&text).as_ref(), chunk);
            assert_eq!(decode_slice(chunk), text);
            assert_eq!(byte_len(&text), chunk.len());
        }
    }

    #[test]
    fn valid_utf8_is_kept_as_it_is() {
        assert_eq!(decode("héllo 日本".as_bytes().to_vec()), "héllo 日本");
        assert!(matches!(encode("héllo"), Cow::Borrowed(_)));
        assert_eq!(decode(b"\xe9".to_vec()), "\u{10FFE9}");
        assert_eq!(decode(b"\xe9".to_vec()).chars().count(), 1);
    }

    #[test]
    fn byte_view_and_back() {
        let v = byte_view("aé");
        assert_eq!(v.chars().count(), 3);
        assert_eq!(normalise(v.into_owned()), "aé");
        // Half of é stays a byte.
        let half: String = byte_view("é").chars().take(1).collect();
        assert_eq!(encode(&normalise(half)).as_ref(), b"\xc3");
    }
}

//! Byte-level mutations of a script: truncation, deletion, random and invalid UTF-8
//! bytes, shell tokens dropped in the wrong place, and a piece repeated many times.

use super::rng::Rng;

/// Largest mutated input: repetition must not turn one case into megabytes.
pub const MAX_MUTATED: usize = 64 * 1024;

/// Most copies one repetition adds.
pub const MAX_REPEAT: usize = 30;

/// Most `(` and `{` one repetition adds. brush-parser takes time exponential in the number
/// of unclosed `(` in a script and of unclosed `{` in a word (a second at about 24 `(` or
/// 18 `{` in a debug build, hours at 32): those known hangs have their own ignored tests
/// (`parse_time_regressions`, `brace_parse_time_regressions`) and stay out of the default
/// run, which keeps its inputs' unclosed nesting modest.
pub const MAX_REPEATED_OPENERS: usize = 8;

/// Pieces of shell syntax that unbalance or confuse a script when dropped anywhere.
const TOKENS: &[&[u8]] = &[
    b"(",
    b")",
    b"{",
    b"}",
    b"$(",
    b"${",
    b"$((",
    b"))",
    b"'",
    b"\"",
    b"`",
    b"\\",
    b"<<",
    b"<<EOF\n",
    b"\nEOF\n",
    b"|",
    b"&",
    b";;",
    b";",
    b"\n",
    b"[[",
    b"]]",
    b"!",
    b"#",
    b"*",
    b"$",
    b"=",
    b"&&",
    b"||",
    b">",
    b"<",
    b"2>&1",
    b"fi",
    b"done",
    b"esac",
    b"then",
    b"do",
    b"in",
    b"case",
    b"if",
    b"for",
    b"while",
    b"function",
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\0",
    b"\r",
    b"\t",
    b"\x1b[A",
    b"9223372036854775807",
    b"-1",
    b"99999999999999999999",
];

/// Applies one to four mutations to `input`; `other` is another case for splicing.
pub fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut data = input.to_vec();
    for _ in 0..rng.range(1, 4) {
        let len = data.len();
        let at = if len == 0 { 0 } else { rng.below(len + 1) };
        match rng.below(9) {
            0 => data.truncate(at),
            1 => {
                let end = (at + rng.range(1, 16)).min(len);
                data.drain(at..end);
            }
            2 => {
                for _ in 0..rng.range(1, 8) {
                    let b = rng.byte();
                    data.insert(at.min(data.len()), b);
                }
            }
            3 | 4 => {
                let tok = rng.pick(TOKENS);
                let at = at.min(data.len());
                data.splice(at..at, tok.iter().copied());
            }
            5 => {
                if len > 0 {
                    let i = rng.below(len);
                    data[i] = rng.byte();
                }
            }
            6 => {
                // A piece repeated: unbalanced nesting, long words, many commands.
                let end = (at + rng.range(1, 12)).min(len);
                let piece = data[at..end].to_vec();
                let openers = piece.iter().filter(|&&b| b == b'(' || b == b'{').count();
                let cap = MAX_REPEATED_OPENERS
                    .checked_div(openers)
                    .unwrap_or(MAX_REPEAT)
                    .clamp(1, MAX_REPEAT);
                let times = rng.range(1, cap);
                let at2 = at.min(data.len());
                for _ in 0..times {
                    data.splice(at2..at2, piece.iter().copied());
                }
            }
            7 => {
                // Splice: our head, the other's tail.
                let j = if other.is_empty() {
                    0
                } else {
                    rng.below(other.len())
                };
                data.truncate(at);
                data.extend_from_slice(&other[j..]);
            }
            _ => {
                // Invalid UTF-8 right inside a multi-byte character or a token.
                let b = rng.pick(&[0x80u8, 0xbf, 0xc0, 0xc1, 0xf5, 0xfe, 0xff]);
                data.insert(at.min(data.len()), b);
            }
        }
        data.truncate(MAX_MUTATED);
    }
    data
}

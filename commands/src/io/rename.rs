//! A command's name in its messages, as the path it was run by.
//!
//! GNU's tools name themselves by the `argv[0]` they were given: `/usr/bin/cat nope` says
//! `/usr/bin/cat: nope: No such file or directory`, and `Try '/usr/bin/cat --help'`. A
//! native command words its messages with its own name, so the stream it writes them to
//! rewrites that name where GNU's would show the path: at the start of a line, and in the
//! `--help` hint. Only the first line of a message is touched; data a command writes to
//! stderr that merely looks like a message is rare there, and is what GNU would show too.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

/// How one stream renames its command; shared by the clones of the renamed [`Output`].
///
/// [`Output`]: super::Output
#[derive(Debug)]
pub(crate) struct Rename {
    /// `NAME: `, as a message starts.
    prefix: Vec<u8>,
    /// `ARGV0: `, what it becomes.
    replacement: Vec<u8>,
    /// `'NAME --help'` and `'ARGV0 --help'`, for the usage hint; `None` for the tools
    /// whose hint keeps the plain name (grep, tar and the util-linux tools).
    hint: Option<(Vec<u8>, Vec<u8>)>,
    /// Whether the next byte written starts a line; messages may come in several writes.
    at_start: AtomicBool,
}

impl Rename {
    pub(crate) fn new(name: &str, argv0: &str, rename_hint: bool) -> Rename {
        Rename {
            prefix: format!("{name}: ").into_bytes(),
            replacement: format!("{argv0}: ").into_bytes(),
            hint: rename_hint.then(|| {
                (
                    format!("'{name} --help'").into_bytes(),
                    format!("'{argv0} --help'").into_bytes(),
                )
            }),
            at_start: AtomicBool::new(true),
        }
    }

    /// `data` with the name rewritten at each line's start and in the hint.
    pub(crate) fn apply<'a>(&self, data: &'a [u8]) -> Cow<'a, [u8]> {
        if data.is_empty() {
            return Cow::Borrowed(data);
        }
        let mut at_start = self.at_start.load(Ordering::Acquire);
        self.at_start
            .store(data.last() == Some(&b'\n'), Ordering::Release);
        let mut out: Option<Vec<u8>> = None;
        let mut done = 0;
        for line in data.split_inclusive(|&b| b == b'\n') {
            let start = at_start && line.starts_with(&self.prefix);
            let hint = self
                .hint
                .as_ref()
                .and_then(|(from, to)| find(line, from).map(|at| (at, from.len(), to)));
            at_start = line.last() == Some(&b'\n');
            if !start && hint.is_none() {
                done += line.len();
                if let Some(o) = out.as_mut() {
                    o.extend_from_slice(line);
                }
                continue;
            }
            let o = out.get_or_insert_with(|| data[..done].to_vec());
            done += line.len();
            let mut rest = line;
            if start {
                o.extend_from_slice(&self.replacement);
                rest = &rest[self.prefix.len()..];
            }
            match hint {
                Some((at, len, to)) if at >= line.len() - rest.len() => {
                    let at = at - (line.len() - rest.len());
                    o.extend_from_slice(&rest[..at]);
                    o.extend_from_slice(to);
                    o.extend_from_slice(&rest[at + len..]);
                }
                _ => o.extend_from_slice(rest),
            }
        }
        match out {
            Some(o) => Cow::Owned(o),
            None => Cow::Borrowed(data),
        }
    }
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_line_starts_and_the_hint() {
        let r = Rename::new("cat", "/usr/bin/cat", true);
        let got = r.apply(b"cat: x: No such file\nTry 'cat --help' for more information.\n");
        assert_eq!(
            &*got,
            b"/usr/bin/cat: x: No such file\nTry '/usr/bin/cat --help' for more information.\n"
        );
    }

    #[test]
    fn a_message_in_pieces_is_renamed_once() {
        let r = Rename::new("cat", "/bin/cat", false);
        assert_eq!(&*r.apply(b"cat: "), b"/bin/cat: ");
        assert_eq!(&*r.apply(b"cat: not a start\n"), b"cat: not a start\n");
        assert_eq!(&*r.apply(b"plain\ncat: y\n"), b"plain\n/bin/cat: y\n");
        assert_eq!(&*r.apply(b"Try 'cat --help'\n"), b"Try 'cat --help'\n");
    }
}

//! The command lines a session typed, for Up/Down and Ctrl-R: newest last, without a
//! line equal to the one before it, bounded in count and in bytes.

use std::collections::VecDeque;

/// Most lines kept (bash's default `HISTSIZE`).
pub const MAX_ENTRIES: usize = 500;
/// Most bytes kept over all lines, so long pasted lines cannot pile up: the oldest go.
pub const MAX_BYTES: usize = 1024 * 1024;

#[derive(Debug, Default)]
pub struct History {
    entries: VecDeque<String>,
    bytes: usize,
}

impl History {
    /// Remembers a typed line (blank ones and repeats of the last are not kept).
    pub fn add(&mut self, line: &str) {
        if line.trim().is_empty() || self.entries.back().is_some_and(|l| l == line) {
            return;
        }
        if line.len() > MAX_BYTES {
            return;
        }
        self.bytes += line.len();
        self.entries.push_back(line.to_string());
        while self.entries.len() > MAX_ENTRIES || self.bytes > MAX_BYTES {
            match self.entries.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        self.entries.get(i).map(String::as_str)
    }

    /// The newest entry at or before `from` that contains `pattern`, with the byte
    /// offset of the match.
    pub fn search_back(&self, pattern: &str, from: usize) -> Option<(usize, usize)> {
        let end = from.checked_add(1)?.min(self.entries.len());
        (0..end)
            .rev()
            .find_map(|i| self.entries[i].rfind(pattern).map(|at| (i, at)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_blank_lines_or_repeats_of_the_last() {
        let mut h = History::default();
        for l in ["ls", "ls", "  ", "pwd", "ls"] {
            h.add(l);
        }
        let all: Vec<&str> = (0..h.len()).filter_map(|i| h.get(i)).collect();
        assert_eq!(all, vec!["ls", "pwd", "ls"]);
    }

    #[test]
    fn bounded_in_count_and_bytes() {
        let mut h = History::default();
        for i in 0..MAX_ENTRIES + 10 {
            h.add(&format!("echo {i}"));
        }
        assert_eq!(h.len(), MAX_ENTRIES);
        assert_eq!(h.get(0), Some("echo 10"));
        let big = "x".repeat(MAX_BYTES / 2 + 1);
        h.add(&big);
        h.add(&format!("{big}y"));
        assert_eq!(h.len(), 1);
        h.add(&"z".repeat(MAX_BYTES + 1));
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn search_finds_the_newest_match_at_or_before() {
        let mut h = History::default();
        for l in ["echo one", "ls", "echo two"] {
            h.add(l);
        }
        assert_eq!(h.search_back("echo", 2), Some((2, 0)));
        assert_eq!(h.search_back("echo", 1), Some((0, 0)));
        assert_eq!(h.search_back("nope", 2), None);
        assert_eq!(h.search_back("o", 10), Some((2, 7)));
    }
}

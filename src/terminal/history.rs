//! The command lines a session typed, for Up/Down, Ctrl-R, history expansion and the
//! `history` builtin: newest last, numbered as bash numbers them (the first line kept
//! is 1; the numbers of later lines stay when the oldest drop off), bounded in count and
//! in bytes. One list per session, shared by its line editor and its shell.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// Most lines kept (bash's default `HISTSIZE`).
pub const MAX_ENTRIES: usize = 500;
/// Most bytes kept over all lines, so long pasted lines cannot pile up: the oldest go.
pub const MAX_BYTES: usize = 1024 * 1024;

#[derive(Debug)]
pub struct History {
    entries: VecDeque<String>,
    bytes: usize,
    /// The number of the oldest entry kept.
    base: usize,
    /// The last `:s/old/new/` of history expansion, for `:&` and an empty `old`.
    pub(crate) last_subst: Option<(String, String)>,
    /// The last `!?string?` searched for, the `old` of an empty `:s//new/` before any.
    pub(crate) last_search: Option<String>,
}

impl Default for History {
    fn default() -> History {
        History {
            entries: VecDeque::new(),
            bytes: 0,
            base: 1,
            last_subst: None,
            last_search: None,
        }
    }
}

/// The session's history, shared by its line editor and its shell (never locked across
/// an await).
#[derive(Clone, Debug, Default)]
pub struct SharedHistory(Arc<Mutex<History>>);

impl SharedHistory {
    pub fn lock(&self) -> MutexGuard<'_, History> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl History {
    /// Remembers a line as bash does with `HISTCONTROL` unset: every line but a blank
    /// one.
    pub fn add(&mut self, line: &str) {
        self.add_controlled(line, "");
    }

    /// Remembers a line under `histcontrol` (bash's `HISTCONTROL`: `ignorespace`,
    /// `ignoredups`, `ignoreboth`, `erasedups`, colon-separated); blank lines never.
    pub fn add_controlled(&mut self, line: &str, histcontrol: &str) {
        let has = |w: &str| histcontrol.split(':').any(|c| c == w);
        let space = has("ignorespace") || has("ignoreboth");
        let dups = has("ignoredups") || has("ignoreboth");
        if line.trim().is_empty() || line.len() > MAX_BYTES {
            return;
        }
        if space && line.starts_with([' ', '\t']) {
            return;
        }
        if dups && self.entries.back().is_some_and(|l| l == line) {
            return;
        }
        if has("erasedups") {
            let before = self.entries.len();
            self.entries.retain(|l| l != line);
            let gone = before - self.entries.len();
            self.bytes -= gone * line.len();
        }
        self.bytes += line.len();
        self.entries.push_back(line.to_string());
        while self.entries.len() > MAX_ENTRIES || self.bytes > MAX_BYTES {
            match self.entries.pop_front() {
                Some(old) => {
                    self.bytes -= old.len();
                    self.base += 1;
                }
                None => break,
            }
        }
    }

    /// `history -d`: forgets entry `i` (later entries take the numbers down by one).
    pub fn remove(&mut self, i: usize) {
        if let Some(old) = self.entries.remove(i) {
            self.bytes -= old.len();
        }
    }

    /// Forgets the newest entry (`history -s` replaces its own line).
    pub fn remove_last(&mut self) {
        if let Some(old) = self.entries.pop_back() {
            self.bytes -= old.len();
        }
    }

    /// `history -c`: forgets every line; numbering starts again at 1.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
        self.base = 1;
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        self.entries.get(i).map(String::as_str)
    }

    /// The number `history` shows for entry `i`.
    pub fn number(&self, i: usize) -> usize {
        self.base + i
    }

    /// The entry with history number `n`.
    pub fn by_number(&self, n: usize) -> Option<&str> {
        n.checked_sub(self.base).and_then(|i| self.get(i))
    }

    /// The newest entry last.
    pub fn last(&self) -> Option<&str> {
        self.entries.back().map(String::as_str)
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
    fn every_line_but_blank_ones_and_histcontrol() {
        let mut h = History::default();
        for l in ["ls", "ls", "  ", "pwd", "ls"] {
            h.add(l);
        }
        let all: Vec<&str> = (0..h.len()).filter_map(|i| h.get(i)).collect();
        assert_eq!(all, vec!["ls", "ls", "pwd", "ls"]);
        let mut h = History::default();
        for l in ["ls", "ls", " secret", "pwd", "ls"] {
            h.add_controlled(l, "ignoreboth");
        }
        let all: Vec<&str> = (0..h.len()).filter_map(|i| h.get(i)).collect();
        assert_eq!(all, vec!["ls", "pwd", "ls"]);
        h.add_controlled("pwd", "erasedups");
        let all: Vec<&str> = (0..h.len()).filter_map(|i| h.get(i)).collect();
        assert_eq!(all, vec!["ls", "ls", "pwd"]);
        assert_eq!(h.bytes, 7);
    }

    #[test]
    fn bounded_in_count_and_bytes_and_numbers_stay() {
        let mut h = History::default();
        for i in 0..MAX_ENTRIES + 10 {
            h.add(&format!("echo {i}"));
        }
        assert_eq!(h.len(), MAX_ENTRIES);
        assert_eq!(h.get(0), Some("echo 10"));
        assert_eq!(h.number(0), 11);
        assert_eq!(h.by_number(11), Some("echo 10"));
        assert_eq!(h.by_number(10), None);
        let big = "x".repeat(MAX_BYTES / 2 + 1);
        h.add(&big);
        h.add(&format!("{big}y"));
        assert_eq!(h.len(), 1);
        h.add(&"z".repeat(MAX_BYTES + 1));
        assert_eq!(h.len(), 1);
        h.clear();
        h.add("again");
        assert_eq!((h.number(0), h.last()), (1, Some("again")));
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

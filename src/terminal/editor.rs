//! The line editor the shell's prompt reads with: a pure state machine. Bytes go in
//! ([`Editor::feed`]); what to draw comes out, and, when a key needs the outside world,
//! an [`Event`]: a finished line, end of input, an interrupt, or a completion request
//! that the caller answers with [`Editor::complete`]. Keys follow readline's emacs mode.
//!
//! Like readline 8.1+, the editor turns on bracketed paste while it reads
//! ([`PASTE_ON`] before the prompt, [`PASTE_OFF`] when the read ends), so a pasted block
//! goes into the line as text: its newlines do not run it early, its Tabs do not complete.

use unicode_segmentation::UnicodeSegmentation;

use super::MAX_LINE;
use super::complete::{self, Candidate, Kind, Request};
use super::history::SharedHistory;
use super::keys::{Decoder, Key};
use super::render::{Screen, columns, place};

/// Asks the terminal to bracket pastes (`ESC[200~ … ESC[201~`), written before the prompt.
pub const PASTE_ON: &[u8] = b"\x1b[?2004h";
/// Turns bracketed paste off again when the read ends, before a command runs (after a
/// line, bash follows it with a carriage return; after Ctrl-D `logout` follows at once).
pub const PASTE_OFF: &[u8] = b"\x1b[?2004l";

/// What a key did that the caller must act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Enter: the line (without its newline).
    Line(String),
    /// Enter on a line typed past [`MAX_LINE`] bytes: its first bytes only.
    TooLong(String),
    /// Ctrl-D on an empty line.
    Eof,
    /// Ctrl-C: the line is dropped.
    Interrupt,
    /// Tab: list what completes this word and pass it to [`Editor::complete`].
    Complete(Request),
}

/// The outcome of one [`Editor::feed`]: how many input bytes it used (it stops after
/// a key that makes an event, so the rest can go to whoever reads next) and the event.
#[derive(Debug, PartialEq, Eq)]
pub struct Step {
    pub consumed: usize,
    pub event: Option<Event>,
}

/// Ctrl-R's state: the pattern and the history line it found.
#[derive(Debug)]
struct Search {
    pattern: String,
    /// The history entry and byte offset of the match shown.
    found: Option<(usize, usize)>,
    failed: bool,
    /// The line and cursor before the search, for Ctrl-G.
    saved: (String, usize),
}

#[derive(Debug)]
pub struct Editor {
    decoder: Decoder,
    /// The session's history (shared with its shell); the caller adds accepted lines.
    history: SharedHistory,
    /// The last killed text, for Ctrl-Y.
    kill: String,
    screen: Screen,
    /// The prompt's last line (earlier lines are written once, not redrawn).
    prompt: String,
    line: String,
    /// Byte offset in `line`, always on a grapheme boundary.
    cursor: usize,
    /// The history entry shown (Up/Down), and the line being typed before moving.
    browsing: Option<usize>,
    scratch: String,
    search: Option<Search>,
    /// The previous key was Tab (a second one lists the candidates).
    tabbed: bool,
    /// The completion request handed out, waiting for its answer.
    asked: Option<Request>,
    /// Bytes typed past [`MAX_LINE`] were dropped (the bell rang once).
    overflowed: bool,
    /// The line changed since it was last drawn.
    dirty: bool,
    /// The line as the screen shows it, with the cursor at its end, when that is known:
    /// typing or pasting at the end of the line then only writes the new characters, so a
    /// paste of a long line costs its own length in output and work, not a redraw of the
    /// whole line per chunk received.
    shown: Option<Shown>,
}

/// What the screen shows of a line whose end the cursor is at.
#[derive(Debug)]
struct Shown {
    line: String,
    /// Where the cursor is (after a forced wrap, at the start of the next row).
    end: super::render::Pos,
    /// The text filled its last row exactly and the cursor was moved to the next.
    wrapped: bool,
}

impl Editor {
    pub fn new(cols: u16) -> Editor {
        Editor {
            decoder: Decoder::default(),
            history: SharedHistory::default(),
            kill: String::new(),
            screen: Screen::new(cols as usize),
            prompt: String::new(),
            line: String::new(),
            cursor: 0,
            browsing: None,
            scratch: String::new(),
            search: None,
            tabbed: false,
            asked: None,
            overflowed: false,
            dirty: false,
            shown: None,
        }
    }

    /// Starts reading a line after `prompt`; writes the prompt.
    pub fn begin(&mut self, prompt: &str, out: &mut Vec<u8>) {
        let (head, last) = match prompt.rfind('\n') {
            Some(i) => (&prompt[..=i], &prompt[i + 1..]),
            None => ("", prompt),
        };
        out.extend_from_slice(PASTE_ON);
        out.extend_from_slice(head.replace('\n', "\r\n").as_bytes());
        out.extend_from_slice(last.as_bytes());
        self.prompt = last.to_string();
        self.line.clear();
        self.cursor = 0;
        self.browsing = None;
        self.scratch.clear();
        self.search = None;
        self.tabbed = false;
        self.asked = None;
        self.overflowed = false;
        self.dirty = false;
        self.screen.row = 0;
        let end = place((0, 0), &self.prompt, self.screen.cols);
        // A prompt that fills its row is redrawn with the line (see `Screen::redraw`).
        self.shown = (end.1 < self.screen.cols).then(|| Shown {
            line: String::new(),
            end,
            wrapped: false,
        });
    }

    /// The line typed so far.
    pub fn line(&self) -> &str {
        &self.line
    }

    pub fn history_add(&mut self, line: &str) {
        self.history.lock().add(line);
    }

    fn history_len(&self) -> usize {
        self.history.lock().len()
    }

    /// The history the editor browses, to share with the shell.
    pub fn history(&self) -> SharedHistory {
        self.history.clone()
    }

    /// Feeds typed bytes until one makes an event; redraws once at the end.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Step {
        for (i, &b) in input.iter().enumerate() {
            let Some(key) = self.decoder.push(b) else {
                continue;
            };
            if let Some(event) = self.key(key, out) {
                return Step {
                    consumed: i + 1,
                    event: Some(event),
                };
            }
        }
        self.draw(out);
        Step {
            consumed: input.len(),
            event: None,
        }
    }

    /// The terminal's width changed: redraw for it.
    pub fn resize(&mut self, cols: u16, out: &mut Vec<u8>) {
        // The terminal re-flowed what was drawn; start from the row the cursor is on.
        self.screen.cols = (cols as usize).max(1);
        self.screen.row = 0;
        self.dirty = true;
        self.shown = None;
        self.draw(out);
    }

    /// Ctrl-C from outside the byte stream (the session's interrupt): drops the line.
    pub fn interrupt(&mut self, out: &mut Vec<u8>) -> Event {
        self.search = None;
        self.finish_line(out, "^C");
        out.extend_from_slice(PASTE_OFF);
        out.push(b'\r');
        self.line.clear();
        self.cursor = 0;
        // A paste cut short by the interrupt is over.
        self.decoder = Decoder::default();
        Event::Interrupt
    }

    fn draw(&mut self, out: &mut Vec<u8>) {
        if !std::mem::take(&mut self.dirty) {
            return;
        }
        if self.append_only(out) {
            return;
        }
        let at_end = self.search.is_none() && self.cursor == self.line.len();
        let end = match &self.search {
            Some(s) => {
                let prompt = search_prompt(s);
                let at = s.found.map_or(self.cursor, |(_, at)| at);
                self.screen
                    .redraw(out, &prompt, &self.line, at.min(self.line.len()))
            }
            None => self
                .screen
                .redraw(out, &self.prompt, &self.line, self.cursor),
        };
        self.shown = at_end.then(|| Shown {
            line: self.line.clone(),
            end,
            wrapped: self.screen.wrapped,
        });
    }

    /// Draws text typed at the end of the line by writing just that text (the terminal
    /// wraps it as `place` does); false when a full redraw is needed: the line changed
    /// elsewhere, the new text has control characters (drawn as `^X`), or it begins inside
    /// the grapheme the shown text ends with.
    fn append_only(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(shown) = &self.shown else {
            return false;
        };
        if self.search.is_some()
            || self.cursor != self.line.len()
            || !self.line.starts_with(shown.line.as_str())
        {
            return false;
        }
        let from = shown.line.len();
        let added = &self.line[from..];
        if added.is_empty() {
            self.screen.row = shown.end.0;
            self.screen.wrapped = shown.wrapped;
            return true;
        }
        let boundary = unicode_segmentation::GraphemeCursor::new(from, self.line.len(), true)
            .is_boundary(&self.line, 0);
        if added.chars().any(char::is_control) || !matches!(boundary, Ok(true)) {
            return false;
        }
        let cols = self.screen.cols;
        let mut end = place(shown.end, added, cols);
        out.extend_from_slice(added.as_bytes());
        let wrapped = end.1 >= cols;
        if wrapped {
            // Past the last cell: make the terminal wrap now, as a redraw does.
            out.extend_from_slice(b"\r\n");
            end = (end.0 + 1, 0);
        }
        self.screen.row = end.0;
        self.screen.wrapped = wrapped;
        self.shown = Some(Shown {
            line: self.line.clone(),
            end,
            wrapped,
        });
        true
    }

    /// Applies one key; `Some` when it ends the read or needs the caller.
    fn key(&mut self, key: Key, out: &mut Vec<u8>) -> Option<Event> {
        if self.search.is_some() {
            match self.search_key(key, out) {
                SearchOutcome::Handled => return None,
                SearchOutcome::Event(e) => return Some(e),
                SearchOutcome::Accepted => {}
            }
        }
        let tabbed = std::mem::take(&mut self.tabbed);
        if self.decoder.pasting() && !matches!(key, Key::Char(_)) {
            // Escape sequences inside a paste are not keys.
            return None;
        }
        match key {
            Key::PasteStart | Key::PasteEnd => return None,
            Key::Char(c) => {
                // Marks the line changed only when something went in (past the bound,
                // a paste costs no redraws).
                self.insert_char(c, out);
                return None;
            }
            Key::Enter => return Some(self.accept(out)),
            Key::Ctrl('c') => return Some(self.interrupt(out)),
            Key::Ctrl('d') => {
                if self.line.is_empty() && !self.overflowed {
                    self.draw(out);
                    out.extend_from_slice(PASTE_OFF);
                    return Some(Event::Eof);
                }
                self.delete_forward();
            }
            Key::Tab => {
                self.tabbed = tabbed;
                self.draw(out);
                let req = complete::request(&self.line[..self.cursor]);
                self.asked = Some(req.clone());
                return Some(Event::Complete(req));
            }
            Key::Left | Key::Ctrl('b') => self.cursor = self.prev(self.cursor),
            Key::Right | Key::Ctrl('f') => self.cursor = self.next(self.cursor),
            Key::Home | Key::Ctrl('a') => self.cursor = 0,
            Key::End | Key::Ctrl('e') => self.cursor = self.line.len(),
            Key::Backspace => {
                let from = self.prev(self.cursor);
                self.line.replace_range(from..self.cursor, "");
                self.cursor = from;
            }
            Key::Delete => self.delete_forward(),
            Key::Ctrl('u') => self.kill_range(0, self.cursor),
            Key::Ctrl('k') => self.kill_range(self.cursor, self.line.len()),
            Key::Ctrl('w') => {
                let before = &self.line[..self.cursor];
                let end = before.trim_end_matches(char::is_whitespace).len();
                let start = before[..end].rfind(char::is_whitespace).map_or(0, |i| {
                    i + before[i..].chars().next().map_or(1, char::len_utf8)
                });
                self.kill_range(start, self.cursor);
            }
            Key::AltBackspace | Key::Alt('\x08') => {
                let start = self.word_back(self.cursor);
                self.kill_range(start, self.cursor);
            }
            Key::Alt('d') => {
                let end = self.word_forward(self.cursor);
                self.kill_range(self.cursor, end);
            }
            Key::Alt('b') | Key::WordLeft => self.cursor = self.word_back(self.cursor),
            Key::Alt('f') | Key::WordRight => self.cursor = self.word_forward(self.cursor),
            Key::Ctrl('y') => {
                let text = self.kill.clone();
                self.insert_str(&text, out);
            }
            Key::Ctrl('t') => self.transpose(),
            Key::Ctrl('l') => {
                out.extend_from_slice(b"\x1b[H\x1b[2J");
                self.screen.row = 0;
                self.shown = None;
            }
            Key::Up | Key::Ctrl('p') => self.history_move(true),
            Key::Down | Key::Ctrl('n') => self.history_move(false),
            Key::Ctrl('r') => {
                self.search = Some(Search {
                    pattern: String::new(),
                    found: None,
                    failed: false,
                    saved: (self.line.clone(), self.cursor),
                });
            }
            Key::Ctrl('g') => out.push(0x07),
            _ => return None,
        }
        self.dirty = true;
        None
    }

    /// The answer to the last [`Event::Complete`]: inserts what all candidates share,
    /// finishes a single one (`/` after a directory, a space otherwise), rings the bell
    /// when nothing can be added, and lists the candidates on a second Tab.
    pub fn complete(&mut self, mut found: Vec<Candidate>, out: &mut Vec<u8>) {
        let Some(req) = self.asked.take() else {
            return;
        };
        let tabbed = std::mem::take(&mut self.tabbed);
        self.tabbed = true;
        found.retain(|c| c.name.starts_with(&req.word));
        found.dedup();
        if found.is_empty() {
            out.push(0x07);
            return;
        }
        let names: Vec<&str> = found.iter().map(|c| c.name.as_str()).collect();
        let common = complete::common_prefix(&names);
        let mut add = complete::escape(&common[req.word.len()..], req.quote);
        if let [only] = &found[..] {
            if only.dir {
                add.push('/');
            } else {
                if let Some(q) = req.quote {
                    add.push(q);
                }
                if req.kind != Kind::Variable || !self.line[self.cursor..].starts_with(' ') {
                    add.push(' ');
                }
            }
        }
        if !add.is_empty() {
            self.insert_str(&add, out);
            self.dirty = true;
            // Still ambiguous: the next Tab lists (readline's behaviour).
            self.tabbed = found.len() > 1;
            self.draw(out);
            return;
        }
        if !tabbed {
            out.push(0x07);
            return;
        }
        let shown: Vec<String> = found
            .iter()
            .map(|c| match req.kind {
                Kind::Variable => format!("${}", c.name),
                _ => complete::shown(&req, c),
            })
            .collect();
        let cursor = self.cursor;
        self.finish_line(out, "");
        self.cursor = cursor;
        out.extend_from_slice(columns(&shown, self.screen.cols).as_bytes());
        self.shown = None;
        self.dirty = true;
        self.draw(out);
    }

    fn accept(&mut self, out: &mut Vec<u8>) -> Event {
        self.search = None;
        self.finish_line(out, "");
        out.extend_from_slice(PASTE_OFF);
        out.push(b'\r');
        let line = std::mem::take(&mut self.line);
        self.cursor = 0;
        if std::mem::take(&mut self.overflowed) {
            Event::TooLong(line)
        } else {
            Event::Line(line)
        }
    }

    /// Shows the whole line with the cursor at its end, writes `mark`, and moves to the
    /// start of the next row (after Enter, Ctrl-C, or before a listing).
    fn finish_line(&mut self, out: &mut Vec<u8>, mark: &str) {
        self.cursor = self.line.len();
        self.dirty = true;
        self.screen.wrapped = false;
        self.draw(out);
        if !(self.screen.wrapped && mark.is_empty()) {
            out.extend_from_slice(mark.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        self.screen.row = 0;
        self.screen.wrapped = false;
        self.shown = None;
    }

    /// Inserts a typed character; control characters only from a paste.
    fn insert_char(&mut self, c: char, out: &mut Vec<u8>) {
        if c.is_control() && !self.decoder.pasting() {
            return;
        }
        let mut buf = [0u8; 4];
        self.insert_str(c.encode_utf8(&mut buf), out);
    }

    /// Inserts at the cursor, up to [`MAX_LINE`] bytes in all (the bell rings once when
    /// input is dropped).
    fn insert_str(&mut self, s: &str, out: &mut Vec<u8>) {
        let room = MAX_LINE.saturating_sub(self.line.len());
        let mut take = s.len().min(room);
        while !s.is_char_boundary(take) {
            take -= 1;
        }
        if take < s.len() && !self.overflowed {
            self.overflowed = true;
            out.push(0x07);
        }
        if take == 0 {
            return;
        }
        self.line.insert_str(self.cursor, &s[..take]);
        self.cursor += take;
        // A combining mark joins the character before it: keep the cursor on a boundary.
        self.cursor = self.next(self.prev(self.cursor));
        self.dirty = true;
    }

    fn delete_forward(&mut self) {
        let to = self.next(self.cursor);
        self.line.replace_range(self.cursor..to, "");
    }

    fn kill_range(&mut self, from: usize, to: usize) {
        if from >= to {
            return;
        }
        self.kill = self.line[from..to].to_string();
        self.line.replace_range(from..to, "");
        self.cursor = from;
    }

    /// Swaps the characters around the cursor (the two before it at the end of the line)
    /// and moves past them.
    fn transpose(&mut self) {
        if self.cursor == 0 || self.line.graphemes(true).nth(1).is_none() {
            return;
        }
        if self.cursor == self.line.len() {
            self.cursor = self.prev(self.cursor);
        }
        let a = self.prev(self.cursor);
        let b = self.next(self.cursor);
        let swapped = format!(
            "{}{}",
            &self.line[self.cursor..b],
            &self.line[a..self.cursor]
        );
        self.line.replace_range(a..b, &swapped);
        self.cursor = b;
    }

    /// The grapheme boundary before `at`.
    fn prev(&self, at: usize) -> usize {
        self.line[..at]
            .grapheme_indices(true)
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    /// The grapheme boundary after `at`.
    fn next(&self, at: usize) -> usize {
        self.line[at..]
            .graphemes(true)
            .next()
            .map_or(at, |g| at + g.len())
    }

    /// The start of the word at or before `at` (words are letters and digits).
    fn word_back(&self, at: usize) -> usize {
        let before = &self.line[..at];
        let end = before
            .trim_end_matches(|c: char| !c.is_alphanumeric())
            .len();
        before[..end]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphanumeric())
            .last()
            .map_or(end, |(i, _)| i)
    }

    /// The end of the word at or after `at`.
    fn word_forward(&self, at: usize) -> usize {
        let after = &self.line[at..];
        let skip = after.len()
            - after
                .trim_start_matches(|c: char| !c.is_alphanumeric())
                .len();
        let rest = &after[skip..];
        let word = rest.len() - rest.trim_start_matches(char::is_alphanumeric).len();
        at + skip + word
    }

    fn history_move(&mut self, up: bool) {
        let len = self.history.lock().len();
        let target = match (self.browsing, up) {
            (None, true) if len > 0 => Some(len - 1),
            (None, _) => return,
            (Some(0), true) => return,
            (Some(i), true) => Some(i - 1),
            (Some(i), false) if i + 1 < len => Some(i + 1),
            (Some(_), false) => None,
        };
        if self.browsing.is_none() {
            self.scratch = self.line.clone();
        }
        self.browsing = target;
        self.line = match target {
            Some(i) => self.history.lock().get(i).unwrap_or("").to_string(),
            None => std::mem::take(&mut self.scratch),
        };
        self.cursor = self.line.len();
    }

    fn search_key(&mut self, key: Key, out: &mut Vec<u8>) -> SearchOutcome {
        let Some(search) = self.search.as_mut() else {
            return SearchOutcome::Accepted;
        };
        match key {
            Key::Char(c) if !c.is_control() => {
                search.pattern.push(c);
                let from = search.found.map_or(self.history.lock().len(), |(i, _)| i);
                self.find(from);
            }
            Key::Backspace => {
                search.pattern.pop();
                let n = self.history_len();
                self.find(n);
            }
            Key::Ctrl('r') => {
                let from = search.found.map(|(i, _)| i);
                match from {
                    Some(i) if i > 0 => self.find(i - 1),
                    Some(_) => {
                        search.failed = true;
                        out.push(0x07);
                    }
                    None => {
                        let n = self.history_len();
                        self.find(n)
                    }
                }
            }
            Key::Ctrl('g') | Key::Ctrl('c') => {
                let (line, cursor) = std::mem::take(&mut search.saved);
                self.search = None;
                self.line = line;
                self.cursor = cursor;
                self.dirty = true;
                if key == Key::Ctrl('c') {
                    return SearchOutcome::Event(self.interrupt(out));
                }
            }
            Key::Enter => {
                self.search = None;
                return SearchOutcome::Event(self.accept(out));
            }
            _ => {
                // Any other key keeps the line found and then does its usual work.
                if let Some((_, at)) = search.found {
                    self.cursor = at.min(self.line.len());
                }
                self.search = None;
                self.dirty = true;
                return SearchOutcome::Accepted;
            }
        }
        self.dirty = true;
        SearchOutcome::Handled
    }

    /// Searches history back from entry `from` for the pattern and shows the match.
    fn find(&mut self, from: usize) {
        let Some(search) = self.search.as_mut() else {
            return;
        };
        if search.pattern.is_empty() {
            search.failed = false;
            return;
        }
        let from = from.min(self.history.lock().len().saturating_sub(1));
        let found = self.history.lock().search_back(&search.pattern, from);
        match found {
            Some((i, at)) => {
                search.found = Some((i, at));
                search.failed = false;
                self.line = self.history.lock().get(i).unwrap_or("").to_string();
                self.cursor = at;
                self.browsing = Some(i);
            }
            None => search.failed = true,
        }
    }
}

enum SearchOutcome {
    /// The key edited the search.
    Handled,
    /// The key ended the read.
    Event(Event),
    /// The search is over; the key is handled as usual.
    Accepted,
}

fn search_prompt(s: &Search) -> String {
    format!(
        "({}reverse-i-search)`{}': ",
        if s.failed { "failed " } else { "" },
        s.pattern
    )
}

#[cfg(test)]
#[path = "editor_tests.rs"]
mod tests;

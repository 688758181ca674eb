//! vi's keys and screen: normal mode (motions, operators, counts), insert mode, the
//! `:` command line and `/`/`?` searches, with undo.
//!
//! Every change in normal mode, and each stay in insert mode as a whole, is one undo
//! step: the buffer's state before it is kept (lines are shared, so a step costs a
//! pointer per line) in a stack of at most [`UNDO_STEPS`].

use crate::TermSize;
use crate::fs::FsError;

use super::buffer::{Buffer, Line, Snapshot, unit_at, unit_before, x_of};
use super::keys::Key;
use super::screen::{Frame, dims, scroll_x, scroll_y};
use super::{Effect, Mode, Opened};

mod cmdline;
#[cfg(test)]
pub(crate) use cmdline::vim_to_bre;

/// Changes `u` can take back.
const UNDO_STEPS: usize = 100;

/// Largest count honoured before a command (`99999dd`): bigger counts are clamped, so a
/// count cannot make one key loop without end.
const MAX_COUNT: usize = 1_000_000;

#[derive(Debug, PartialEq, Eq)]
enum State {
    Normal,
    Insert,
    /// The `:` line, typed so far.
    Command(Vec<u8>),
    /// A `/` (forward) or `?` search, typed so far.
    Search(bool, Vec<u8>),
}

/// What `y` and `d` keep for `p`.
#[derive(Clone)]
enum Yank {
    Lines(Vec<Line>),
    Chars(Vec<u8>),
}

pub(crate) struct Vi {
    buf: Buffer,
    name: Option<String>,
    /// The file did not exist when opened (the first write says `[New]`).
    new_file: bool,
    top: usize,
    left: usize,
    /// The display column j/k keep to (`usize::MAX` after `$`: the end of each line).
    want_x: Option<usize>,
    state: State,
    /// The last line's message, until the next key; errors show in red.
    status: Option<(String, bool)>,
    count: Option<usize>,
    /// The first key of a two-key command (`d`, `y`, `g`, `Z`, `r`).
    pending: Option<u8>,
    yank: Option<Yank>,
    undo: Vec<Snapshot>,
    redo: Vec<Snapshot>,
    /// Changes made since insert mode was entered.
    inserted: bool,
    last_search: Option<(Vec<u8>, bool)>,
    height: usize,
}

/// Word character classes for `w` and `b`: blank, keyword, other.
fn class(b: u8) -> u8 {
    match b {
        b' ' | b'\t' => 0,
        b'_' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' | 0x80..=0xff => 1,
        _ => 2,
    }
}

impl Vi {
    pub(crate) fn new(opened: Opened, name: Option<String>) -> Vi {
        let shown = name.clone().unwrap_or_default();
        let mut new_file = false;
        let (buf, status) = match opened {
            Opened::Text(b) => {
                let lines = if b.is_empty() { 0 } else { b.len() };
                let bytes = if b.is_empty() { 0 } else { b.text_len() + 1 };
                (b, Some(format!("\"{shown}\" {lines}L, {bytes}B")))
            }
            Opened::New(b) => {
                new_file = true;
                (b, name.as_ref().map(|_| format!("\"{shown}\" [New]")))
            }
            Opened::Unreadable(b, FsError::IsADirectory) => {
                (b, Some(format!("\"{shown}\" is a directory")))
            }
            Opened::Unreadable(b, e) => (b, Some(format!("\"{shown}\" [{e}]"))),
        };
        Vi {
            buf,
            name,
            new_file,
            top: 0,
            left: 0,
            want_x: None,
            state: State::Normal,
            status: status.map(|s| (s, false)),
            count: None,
            pending: None,
            yank: None,
            undo: Vec::new(),
            redo: Vec::new(),
            inserted: false,
            last_search: None,
            height: 1,
        }
    }

    fn error(&mut self, msg: impl Into<String>) {
        self.status = Some((msg.into(), true));
    }

    fn info(&mut self, msg: impl Into<String>) {
        self.status = Some((msg.into(), false));
    }

    /// Keeps the state before a change, for `u`.
    fn checkpoint(&mut self) -> bool {
        match self.buf.snapshot() {
            Ok(s) => {
                if self.undo.len() >= UNDO_STEPS {
                    self.undo.remove(0);
                }
                self.undo.push(s);
                self.redo.clear();
                true
            }
            Err(_) => {
                self.error("E342: Out of memory!");
                false
            }
        }
    }

    /// In normal mode the cursor sits on a character, never past the last one.
    fn clamp(&mut self) {
        let len = self.buf.cur().len();
        if len > 0 && self.buf.col >= len {
            self.buf.col = unit_before(self.buf.cur(), len);
        }
    }

    fn first_non_blank(&mut self) {
        let line = self.buf.cur();
        self.buf.col = line
            .iter()
            .position(|b| class(*b) != 0)
            .unwrap_or(line.len());
        self.clamp();
    }

    fn vertical(&mut self, row: usize) {
        let x = *self.want_x.get_or_insert_with(|| self.buf.cursor_x());
        self.buf.goto_x(row, x);
        self.clamp();
    }

    /// Where `w` goes from the cursor.
    fn word_forward(&self, row: usize, col: usize) -> (usize, usize) {
        let line = self.buf.line(row);
        let mut i = col;
        if i < line.len() {
            let c = class(line[i]);
            while i < line.len() && class(line[i]) == c && c != 0 {
                i += 1;
            }
        }
        while i < line.len() && class(line[i]) == 0 {
            i += 1;
        }
        if i < line.len() {
            return (row, i);
        }
        let mut r = row + 1;
        while r < self.buf.len() {
            let l = self.buf.line(r);
            match l.iter().position(|b| class(*b) != 0) {
                Some(p) => return (r, p),
                None if l.is_empty() => return (r, 0),
                None => r += 1,
            }
        }
        (row, line.len())
    }

    /// Where `b` goes from the cursor.
    fn word_back(&self, mut row: usize, mut col: usize) -> (usize, usize) {
        loop {
            // Step back one position, to the previous line's end at a line's start.
            if col == 0 {
                if row == 0 {
                    return (0, 0);
                }
                row -= 1;
                col = self.buf.line(row).len();
                if col == 0 {
                    return (row, 0);
                }
            }
            let line = self.buf.line(row);
            let mut i = col - 1;
            while i > 0 && class(line[i]) == 0 {
                i -= 1;
            }
            if class(line[i]) == 0 {
                col = 0;
                continue;
            }
            let c = class(line[i]);
            while i > 0 && class(line[i - 1]) == c {
                i -= 1;
            }
            return (row, i);
        }
    }

    fn put(&mut self, after: bool, count: usize) {
        let Some(yank) = self.yank.clone() else {
            self.error("E353: Nothing in register \"");
            return;
        };
        if !self.checkpoint() {
            return;
        }
        match yank {
            Yank::Lines(lines) => {
                let at = if after {
                    self.buf.row + 1
                } else {
                    self.buf.row
                };
                let mut all = Vec::new();
                for _ in 0..count.min(MAX_COUNT / lines.len().max(1)) {
                    all.extend(lines.iter().cloned());
                }
                if self.buf.put_lines(at, &all).is_err() {
                    self.error("E342: Out of memory!");
                    return;
                }
                self.buf.row = at;
                self.first_non_blank();
            }
            Yank::Chars(text) => {
                if after && !self.buf.cur().is_empty() {
                    self.buf.right();
                }
                let mut all = Vec::new();
                for _ in 0..count.min(MAX_COUNT / text.len().max(1)) {
                    all.extend_from_slice(&text);
                }
                if self.buf.insert(&all).is_err() {
                    self.error("E342: Out of memory!");
                    return;
                }
                self.buf.left();
            }
        }
    }

    fn enter_insert(&mut self) {
        if self.checkpoint() {
            self.state = State::Insert;
            self.inserted = false;
        }
    }

    fn normal_key(&mut self, key: Key) -> Effect {
        // A text run in normal mode is a series of commands, one per character.
        if let Key::Text(t) = key {
            let mut i = 0;
            while i < t.len() {
                let (end, _) = unit_at(&t, i);
                if !matches!(self.state, State::Normal) {
                    // A command switched modes mid-run: the rest is for that mode.
                    let rest = t[i..].to_vec();
                    if self.inserting() {
                        self.paste(&rest);
                        return Effect::None;
                    }
                    let e = self.key(Key::Text(rest));
                    return e;
                }
                let e = self.command(t[i], &t[i..end]);
                if e != Effect::None {
                    return e;
                }
                i = end;
            }
            return Effect::None;
        }
        let keep_x = matches!(
            key,
            Key::Up | Key::Down | Key::Enter | Key::Ctrl(b'n' | b'p')
        );
        if !keep_x {
            self.want_x = None;
        }
        let n = self.count.take().unwrap_or(1);
        self.pending = None;
        match key {
            Key::Left | Key::Backspace => {
                for _ in 0..n.min(self.buf.col) {
                    self.buf.left();
                }
            }
            Key::Right => {
                for _ in 0..n {
                    self.buf.right();
                }
                self.clamp();
            }
            Key::Up | Key::Ctrl(b'p') => self.vertical(self.buf.row.saturating_sub(n)),
            Key::Down | Key::Ctrl(b'n') => self.vertical(self.buf.row + n),
            Key::Enter => {
                self.buf.row = (self.buf.row + n).min(self.buf.len() - 1);
                self.first_non_blank();
            }
            Key::Home => self.buf.col = 0,
            Key::End => {
                self.buf.col = self.buf.cur().len();
                self.clamp();
            }
            Key::PageDown | Key::Ctrl(b'f') => {
                let page = self.height.saturating_sub(2).max(1) * n;
                self.top = (self.top + page).min(self.buf.len() - 1);
                self.buf.row = self.top.max(self.buf.row).min(self.buf.len() - 1);
                self.first_non_blank();
            }
            Key::PageUp | Key::Ctrl(b'b') => {
                let page = self.height.saturating_sub(2).max(1) * n;
                self.top = self.top.saturating_sub(page);
                let bottom = self.top + self.height.saturating_sub(1);
                self.buf.row = self.buf.row.min(bottom);
                self.first_non_blank();
            }
            Key::Delete => return self.command(b'x', b"x"),
            Key::Ctrl(b'r') => self.redo_change(),
            Key::Ctrl(b'g') => {
                let shown = self.name.clone().unwrap_or_else(|| "[No Name]".into());
                let m = if self.buf.modified { " [Modified]" } else { "" };
                let lines = self.buf.len();
                let pct = (self.buf.row + 1) * 100 / lines;
                self.info(format!("\"{shown}\"{m} {lines} lines --{pct}%--"));
            }
            _ => {}
        }
        Effect::None
    }

    /// One normal-mode character command (`ch` is its first byte, `unit` the whole
    /// character, for `r`).
    fn command(&mut self, ch: u8, unit: &[u8]) -> Effect {
        if let Some(p) = self.pending.take() {
            return self.second_key(p, ch, unit);
        }
        if ch.is_ascii_digit() && (ch != b'0' || self.count.is_some()) {
            let c = self.count.unwrap_or(0);
            self.count = Some((c * 10 + usize::from(ch - b'0')).min(MAX_COUNT));
            return Effect::None;
        }
        let counted = self.count.is_some();
        let n = self.count.take().unwrap_or(1);
        if !matches!(ch, b'j' | b'k') {
            self.want_x = None;
        }
        match ch {
            b'h' => {
                for _ in 0..n.min(self.buf.col) {
                    self.buf.left();
                }
            }
            b'l' | b' ' => {
                for _ in 0..n {
                    self.buf.right();
                }
                self.clamp();
            }
            b'j' => self.vertical(self.buf.row + n),
            b'k' => self.vertical(self.buf.row.saturating_sub(n)),
            b'0' => self.buf.col = 0,
            b'^' => self.first_non_blank(),
            b'$' => {
                self.buf.row = (self.buf.row + n - 1).min(self.buf.len() - 1);
                self.buf.col = self.buf.cur().len();
                self.clamp();
                self.want_x = Some(usize::MAX);
            }
            b'w' => {
                for _ in 0..n {
                    let (r, c) = self.word_forward(self.buf.row, self.buf.col);
                    self.buf.row = r;
                    self.buf.col = c;
                }
                self.clamp();
            }
            b'b' => {
                for _ in 0..n {
                    let (r, c) = self.word_back(self.buf.row, self.buf.col);
                    self.buf.row = r;
                    self.buf.col = c;
                }
            }
            b'G' => {
                let last = self.buf.len() - 1;
                self.buf.row = if counted { (n - 1).min(last) } else { last };
                self.first_non_blank();
            }
            b'x' => {
                if self.buf.cur().is_empty() || !self.checkpoint() {
                    return Effect::None;
                }
                let mut end = self.buf.col;
                for _ in 0..n {
                    if end < self.buf.cur().len() {
                        end = unit_at(self.buf.cur(), end).0;
                    }
                }
                let cut = self.buf.cur()[self.buf.col..end].to_vec();
                self.buf.delete_range(self.buf.col, end);
                self.yank = Some(Yank::Chars(cut));
                self.clamp();
            }
            b'D' => return self.second_key(b'd', b'$', b"$"),
            b'p' => self.put(true, n),
            b'P' => self.put(false, n),
            b'i' => self.enter_insert(),
            b'a' => {
                self.buf.right();
                self.enter_insert();
            }
            b'A' => {
                self.buf.col = self.buf.cur().len();
                self.enter_insert();
            }
            b'I' => {
                self.first_non_blank();
                self.buf.col = self
                    .buf
                    .cur()
                    .iter()
                    .position(|b| class(*b) != 0)
                    .unwrap_or(self.buf.cur().len());
                self.enter_insert();
            }
            b'o' | b'O' => {
                self.enter_insert();
                if self.state == State::Insert {
                    let at = if ch == b'o' {
                        self.buf.row + 1
                    } else {
                        self.buf.row
                    };
                    if self.buf.put_lines(at, &[Line::default()]).is_err() {
                        self.error("E342: Out of memory!");
                        self.state = State::Normal;
                        return Effect::None;
                    }
                    self.buf.row = at;
                    self.buf.col = 0;
                    self.inserted = true;
                }
            }
            b'u' => {
                for _ in 0..n {
                    self.undo_change();
                }
            }
            b'n' | b'N' => match self.last_search.clone() {
                Some((pat, fwd)) => self.search(&pat, if ch == b'n' { fwd } else { !fwd }),
                None => self.error("E35: No previous regular expression"),
            },
            b'/' => self.state = State::Search(true, Vec::new()),
            b'?' => self.state = State::Search(false, Vec::new()),
            b':' => self.state = State::Command(Vec::new()),
            b'd' | b'y' | b'g' | b'Z' | b'r' => {
                self.pending = Some(ch);
                if counted {
                    self.count = Some(n);
                }
            }
            _ => {}
        }
        Effect::None
    }

    /// The second key of `dd`, `dw`, `d$`, `yy`, `gg`, `ZZ`, `ZQ`, `rX`.
    fn second_key(&mut self, first: u8, ch: u8, unit: &[u8]) -> Effect {
        let counted = self.count.is_some();
        let n = self.count.take().unwrap_or(1);
        match (first, ch) {
            (b'd', b'd') | (b'y', b'y') => {
                let row = self.buf.row;
                let count = n.min(self.buf.len() - row);
                if first == b'y' {
                    let lines: Vec<Line> = self.buf.lines()[row..row + count].to_vec();
                    self.yank = Some(Yank::Lines(lines));
                    return Effect::None;
                }
                if self.checkpoint() {
                    let taken = self.buf.take_lines(row, count);
                    self.yank = Some(Yank::Lines(taken));
                    self.first_non_blank();
                }
            }
            (b'd', b'w' | b'$') => {
                if !self.checkpoint() {
                    return Effect::None;
                }
                let (row, col) = (self.buf.row, self.buf.col);
                let end = if ch == b'$' {
                    self.buf.cur().len()
                } else {
                    let mut at = (row, col);
                    for _ in 0..n {
                        at = self.word_forward(at.0, at.1);
                    }
                    if at.0 == row {
                        at.1
                    } else {
                        self.buf.cur().len()
                    }
                };
                let cut = self.buf.cur()[col..end].to_vec();
                self.buf.delete_range(col, end);
                self.yank = Some(Yank::Chars(cut));
                self.clamp();
            }
            (b'g', b'g') => {
                let last = self.buf.len() - 1;
                self.buf.row = if counted { (n - 1).min(last) } else { 0 };
                self.first_non_blank();
            }
            (b'Z', b'Z') => return self.ex(b"x"),
            (b'Z', b'Q') => return Effect::Quit,
            (b'r', _) => self.replace_char(unit),
            _ => {}
        }
        Effect::None
    }

    /// `r`: the character under the cursor becomes `unit`.
    fn replace_char(&mut self, unit: &[u8]) {
        if self.buf.cur().is_empty() || !self.checkpoint() {
            return;
        }
        let end = unit_at(self.buf.cur(), self.buf.col).0;
        let col = self.buf.col;
        self.buf.delete_range(col, end);
        if self.buf.insert(unit).is_err() {
            self.error("E342: Out of memory!");
        }
        self.buf.col = col;
    }

    fn undo_change(&mut self) {
        match self.undo.pop() {
            Some(s) => {
                let now = self.buf.restore(s);
                self.redo.push(now);
                self.clamp();
                let left = self.undo.len();
                self.info(format!("1 change; before #{}", left + 1));
            }
            None => self.info("Already at oldest change"),
        }
    }

    fn redo_change(&mut self) {
        match self.redo.pop() {
            Some(s) => {
                let now = self.buf.restore(s);
                self.undo.push(now);
                self.clamp();
                self.info(format!("1 change; after #{}", self.undo.len()));
            }
            None => self.info("Already at newest change"),
        }
    }

    fn insert_key(&mut self, key: Key) -> Effect {
        match key {
            Key::Esc | Key::Ctrl(b'c') => {
                self.state = State::Normal;
                if !self.inserted {
                    self.undo.pop();
                }
                self.buf.left();
                self.clamp();
            }
            Key::Backspace => self.inserted |= self.buf.backspace(),
            Key::Delete => self.inserted |= self.buf.delete(),
            Key::Left => {
                self.buf.left();
            }
            Key::Right => {
                self.buf.right();
            }
            Key::Up => {
                self.buf
                    .goto_x(self.buf.row.saturating_sub(1), self.buf.cursor_x());
            }
            Key::Down => self.buf.goto_x(self.buf.row + 1, self.buf.cursor_x()),
            Key::Home => self.buf.col = 0,
            Key::End => self.buf.col = self.buf.cur().len(),
            Key::Text(t) => self.paste(&t),
            Key::Enter => self.paste(b"\n"),
            _ => {}
        }
        Effect::None
    }
}

impl Mode for Vi {
    fn key(&mut self, key: Key) -> Effect {
        self.status = None;
        match self.state {
            State::Normal => {
                if key == Key::Esc {
                    self.count = None;
                    self.pending = None;
                    return Effect::None;
                }
                self.normal_key(key)
            }
            State::Insert => self.insert_key(key),
            State::Command(_) | State::Search(..) => self.line_key(key),
        }
    }

    fn inserting(&self) -> bool {
        self.state == State::Insert
    }

    fn paste(&mut self, text: &[u8]) {
        match self.buf.insert(text) {
            Ok(()) => self.inserted = true,
            Err(_) => self.error("E342: Out of memory!"),
        }
    }

    fn saved(&mut self, path: &str, result: Result<(usize, usize), FsError>) {
        match result {
            Ok((lines, bytes)) => {
                let new = if self.new_file || self.name.as_deref() != Some(path) {
                    " [New]"
                } else {
                    ""
                };
                if self.name.is_none() {
                    self.name = Some(path.to_string());
                }
                if self.name.as_deref() == Some(path) {
                    self.buf.modified = false;
                    self.new_file = false;
                }
                self.info(format!("\"{path}\"{new} {lines}L, {bytes}B written"));
            }
            Err(e) => self.error(format!("\"{path}\" E212: Can't open file for writing: {e}")),
        }
    }

    fn render(&mut self, size: TermSize) -> Vec<u8> {
        let (rows, cols) = dims(size);
        let mut f = Frame::new(size);
        let height = rows.saturating_sub(1).max(1);
        self.height = height;
        self.top = scroll_y(self.top, self.buf.row, height);
        let cx = x_of(self.buf.cur(), self.buf.col);
        self.left = scroll_x(self.left, cx, cols);
        for i in 0..height {
            f.goto_row(i);
            let row = self.top + i;
            if row < self.buf.len() {
                f.bytes_from(self.buf.line(row), self.left, cols);
            } else {
                f.out.extend_from_slice(b"\x1b[94m~\x1b[0m");
            }
            f.end_row();
        }
        if rows < 2 {
            return f.finish(self.buf.row - self.top, cx - self.left);
        }
        f.goto_row(rows - 1);
        let mut cursor = None;
        match &self.state {
            State::Command(input) | State::Search(_, input) => {
                let lead = match self.state {
                    State::Search(true, _) => "/",
                    State::Search(false, _) => "?",
                    _ => ":",
                };
                let mut used = f.text(lead, cols);
                used += f.bytes_from(input, 0, cols - used);
                cursor = Some(used);
            }
            State::Insert => {
                f.out.extend_from_slice(b"\x1b[1m");
                f.text("-- INSERT --", cols);
                f.out.extend_from_slice(b"\x1b[0m");
            }
            State::Normal => {
                if let Some((msg, err)) = &self.status {
                    if *err {
                        f.out.extend_from_slice(b"\x1b[97;41m");
                    }
                    f.text(msg, cols);
                    f.out.extend_from_slice(b"\x1b[0m");
                }
            }
        }
        f.end_row();
        let msg_len = match (&self.state, &self.status) {
            (State::Insert, _) => 12,
            (State::Normal, Some((m, _))) => m.chars().count(),
            _ => 0,
        };
        if cursor.is_none() && cols >= 40 && msg_len + 1 < cols - 18 {
            // The ruler: line and column.
            let col = if self.buf.cur().is_empty() {
                "0-1".to_string()
            } else {
                (self.buf.col + 1).to_string()
            };
            let ruler = format!("{},{col}", self.buf.row + 1);
            f.out
                .extend_from_slice(format!("\x1b[{};{}H", rows, cols - 17).as_bytes());
            f.text(&ruler, 17);
        }
        match cursor {
            Some(c) => f.finish(rows - 1, c),
            None => f.finish(self.buf.row - self.top, cx - self.left),
        }
    }

    fn buffer(&self) -> &Buffer {
        &self.buf
    }

    fn newline_per_line(&self) -> bool {
        true
    }
}

//! nano's keys and screen: a title bar, the text, a status line, two lines of help.
//!
//! As in nano, the text always ends with an empty line (a file's final newline starts
//! it), and writing joins the lines with newlines, so a file read and written unchanged
//! is the same bytes; a file without a final newline gets one.

use crate::TermSize;
use crate::fs::FsError;

use super::buffer::{Buffer, Line, unit_at, x_of};
use super::keys::Key;
use super::screen::{Frame, scroll_x, scroll_y};
use super::{Effect, Mode, Opened};

/// What the status line is asking.
#[derive(Debug, PartialEq, Eq)]
enum Ask {
    /// `Search: `, then the pattern.
    Search,
    /// `File Name to Write: `, then the name (quitting after a good write when asked
    /// from Ctrl-X).
    FileName { then_quit: bool },
    /// `Save modified buffer?` Y / N / ^C.
    SaveModified,
}

pub(crate) struct Nano {
    buf: Buffer,
    /// The file name as given, if any.
    name: Option<String>,
    /// First line and first display column shown.
    top: usize,
    left: usize,
    /// The display column up/down keep to, while moving vertically.
    want_x: Option<usize>,
    /// The message in the status line, until the next key.
    status: Option<String>,
    /// A question in the status line and the answer typed so far.
    ask: Option<(Ask, Vec<u8>)>,
    /// Lines cut with ^K, for ^U; consecutive cuts add up.
    cut: Vec<Line>,
    last_was_cut: bool,
    last_search: Vec<u8>,
    /// Showing the help text until a key is pressed.
    help: bool,
    /// Text rows in the last frame (what a page is).
    height: usize,
}

impl Nano {
    pub(crate) fn new(opened: Opened, name: Option<String>) -> Nano {
        let shown = name.clone().unwrap_or_default();
        let (buf, status) = match opened {
            Opened::Text(b) => {
                let n = b.len() - usize::from(b.line(b.len() - 1).is_empty());
                let s = format!("[ Read {n} line{} ]", if n == 1 { "" } else { "s" });
                (b, Some(s))
            }
            Opened::New(b) => (b, name.as_ref().map(|_| "[ New File ]".to_string())),
            Opened::Unreadable(b, FsError::IsADirectory) => {
                (b, Some(format!("[ \"{shown}\" is a directory ]")))
            }
            Opened::Unreadable(b, e) => (b, Some(format!("[ Error reading {shown}: {e} ]"))),
        };
        let mut nano = Nano {
            buf,
            name,
            top: 0,
            left: 0,
            want_x: None,
            status,
            ask: None,
            cut: Vec::new(),
            last_was_cut: false,
            last_search: Vec::new(),
            help: false,
            height: 1,
        };
        // The text ends with an empty line, as in nano.
        if !nano.buf.line(nano.buf.len() - 1).is_empty() {
            let modified = nano.buf.modified;
            let _ = nano.buf.put_lines(nano.buf.len(), &[Line::default()]);
            nano.buf.modified = modified;
        }
        nano
    }

    /// One unit left, or to the end of the line above.
    fn left(&mut self) {
        if !self.buf.left() && self.buf.row > 0 {
            self.buf.row -= 1;
            self.buf.col = self.buf.cur().len();
        }
    }

    /// One unit right, or to the start of the line below.
    fn right(&mut self) {
        if !self.buf.right() && self.buf.row + 1 < self.buf.len() {
            self.buf.row += 1;
            self.buf.col = 0;
        }
    }

    fn vertical(&mut self, row: usize) {
        let x = *self.want_x.get_or_insert_with(|| self.buf.cursor_x());
        self.buf.goto_x(row, x);
    }

    fn edit_key(&mut self, key: Key) -> Effect {
        let cut = std::mem::take(&mut self.last_was_cut);
        let vertical = matches!(
            key,
            Key::Up
                | Key::Down
                | Key::PageUp
                | Key::PageDown
                | Key::Ctrl(b'p' | b'n' | b'y' | b'v')
        );
        if !vertical {
            self.want_x = None;
        }
        let page = self.height.max(1);
        match key {
            Key::Text(t) => self.paste(&t),
            Key::Enter => self.paste(b"\n"),
            Key::Backspace => {
                self.buf.backspace();
            }
            Key::Delete | Key::Ctrl(b'd') => {
                self.buf.delete();
            }
            Key::Left | Key::Ctrl(b'b') => self.left(),
            Key::Right | Key::Ctrl(b'f') => self.right(),
            Key::Up | Key::Ctrl(b'p') => self.vertical(self.buf.row.saturating_sub(1)),
            Key::Down | Key::Ctrl(b'n') => self.vertical(self.buf.row + 1),
            Key::PageUp | Key::Ctrl(b'y') => {
                self.top = self.top.saturating_sub(page);
                self.vertical(self.buf.row.saturating_sub(page));
            }
            Key::PageDown | Key::Ctrl(b'v') => {
                self.top = (self.top + page).min(self.buf.len() - 1);
                self.vertical(self.buf.row + page);
            }
            Key::Home | Key::Ctrl(b'a') => self.buf.col = 0,
            Key::End | Key::Ctrl(b'e') => self.buf.col = self.buf.cur().len(),
            Key::Ctrl(b'k') => self.cut_line(cut),
            Key::Ctrl(b'u') => self.uncut(),
            Key::Ctrl(b'w') => self.ask = Some((Ask::Search, Vec::new())),
            Key::Ctrl(b'o') => {
                let name = self.name.clone().unwrap_or_default().into_bytes();
                self.ask = Some((Ask::FileName { then_quit: false }, name));
            }
            Key::Ctrl(b'x') => {
                if !self.buf.modified {
                    return Effect::Quit;
                }
                self.ask = Some((Ask::SaveModified, Vec::new()));
            }
            Key::Ctrl(b'g') => self.help = true,
            Key::Ctrl(b'c') => self.status = Some(self.location()),
            _ => {}
        }
        Effect::None
    }

    /// ^K: the current line goes to the cut buffer (added to it when the last key was
    /// ^K too).
    fn cut_line(&mut self, append: bool) {
        if !append {
            self.cut.clear();
        }
        let row = self.buf.row;
        if row + 1 == self.buf.len() {
            // The last line is never removed, only emptied.
            if self.buf.cur().is_empty() {
                return;
            }
            self.cut.push(Line::new(self.buf.cur().to_vec()));
            self.buf.clear_line();
        } else {
            let taken = self.buf.take_lines(row, 1);
            self.cut.extend(taken);
        }
        self.last_was_cut = true;
    }

    /// ^U: the cut lines go in before the current line.
    fn uncut(&mut self) {
        if self.cut.is_empty() {
            return;
        }
        let row = self.buf.row;
        let cut = self.cut.clone();
        if self.buf.put_lines(row, &cut).is_err() {
            self.status = Some(out_of_memory());
            return;
        }
        self.buf.row = row + cut.len();
        self.buf.col = 0;
    }

    /// ^C's report: line, column and character of the cursor, with percentages.
    fn location(&self) -> String {
        let b = &self.buf;
        let lines = b.len();
        let units = |l: &[u8], upto: usize| {
            let mut n = 0;
            let mut i = 0;
            while i < upto.min(l.len()) {
                i = unit_at(l, i).0;
                n += 1;
            }
            n
        };
        let col = units(b.cur(), b.col) + 1;
        let cols = units(b.cur(), b.cur().len()) + 1;
        let mut before = 0;
        let mut total = 0;
        for r in 0..lines {
            let l = b.line(r);
            let n = units(l, l.len()) + usize::from(r + 1 < lines);
            if r < b.row {
                before += n;
            }
            total += n;
        }
        let ch = before + col - 1;
        let pct = |a: usize, t: usize| (a * 100).checked_div(t).unwrap_or(0);
        format!(
            "[ line {}/{lines} ({}%), col {col}/{cols} ({}%), char {ch}/{total} ({}%) ]",
            b.row + 1,
            pct(b.row + 1, lines),
            pct(col, cols),
            pct(ch, total)
        )
    }

    fn ask_key(&mut self, ask: Ask, mut input: Vec<u8>, key: Key) -> Effect {
        match (&ask, key) {
            (_, Key::Ctrl(b'c')) => self.status = Some("[ Cancelled ]".into()),
            (Ask::SaveModified, Key::Text(t)) => match t.first().map(u8::to_ascii_lowercase) {
                Some(b'y') => {
                    let name = self.name.clone().unwrap_or_default().into_bytes();
                    self.ask = Some((Ask::FileName { then_quit: true }, name));
                }
                Some(b'n') => return Effect::Quit,
                _ => self.ask = Some((ask, input)),
            },
            (Ask::SaveModified, _) => self.ask = Some((ask, input)),
            (_, Key::Text(t)) => {
                input.extend_from_slice(&t);
                self.ask = Some((ask, input));
            }
            (_, Key::Backspace) => {
                if !input.is_empty() {
                    let at = super::buffer::unit_before(&input, input.len());
                    input.truncate(at);
                }
                self.ask = Some((ask, input));
            }
            (Ask::Search, Key::Enter) => self.search(input),
            (Ask::FileName { then_quit }, Key::Enter) => {
                if input.is_empty() {
                    self.status = Some("[ Cancelled ]".into());
                } else {
                    let path = String::from_utf8_lossy(&input).into_owned();
                    return Effect::Save {
                        path,
                        then_quit: *then_quit,
                    };
                }
            }
            _ => self.ask = Some((ask, input)),
        }
        Effect::None
    }

    fn search(&mut self, input: Vec<u8>) {
        if !input.is_empty() {
            self.last_search = input;
        }
        if self.last_search.is_empty() {
            self.status = Some("[ Cancelled ]".into());
            return;
        }
        let pat = self.last_search.clone();
        match self.buf.find(&pat, true) {
            Some(((row, col), wrapped)) => {
                if (row, col) == (self.buf.row, self.buf.col) {
                    self.status = Some("[ This is the only occurrence ]".into());
                } else if wrapped {
                    self.status = Some("[ Search Wrapped ]".into());
                }
                self.buf.row = row;
                self.buf.col = col;
            }
            None => {
                let shown = String::from_utf8_lossy(&pat);
                self.status = Some(format!("[ \"{shown}\" not found ]"));
            }
        }
    }

    fn draw_help_row(frame: &mut Frame, items: &[HelpItem]) {
        let per = (frame.cols / 6).max(1);
        let mut used_total = 0;
        for (keys, label) in items {
            if used_total + per > frame.cols {
                break;
            }
            frame.reverse(true);
            let used = frame.text(keys, per);
            frame.reverse(false);
            let mut used2 = used;
            if used < per {
                used2 += frame.text(" ", per - used);
                used2 += frame.text(label, (per - used2).saturating_sub(1));
            }
            frame.pad(used2, per);
            used_total += per;
        }
        frame.end_row();
    }

    const HELP: &'static str = "Main nano help text\n\n\
The nano editor is designed to emulate the functionality and ease-of-use of the UW\n\
Pico text editor. Type text to insert it; the cursor keys, Home, End, PgUp and PgDn move.\n\n\
^G   Display this help text        ^X   Close the buffer, exit\n\
^O   Write the buffer to disk      ^W   Search forward (Enter repeats)\n\
^K   Cut the current line          ^U   Paste the cut lines\n\
^A   Go to the start of the line   ^E   Go to the end of the line\n\
^Y   One page up                   ^V   One page down\n\
^C   Report the cursor position    ^D   Delete the character under the cursor\n\n\
Press any key to return to the text.";
}

/// One item of the help lines: the keys and what they do.
type HelpItem = (&'static str, &'static str);

/// The status line's message when the session's memory is spent.
fn out_of_memory() -> String {
    "[ Out of memory: the change was not made ]".into()
}

impl Mode for Nano {
    fn key(&mut self, key: Key) -> Effect {
        self.status = None;
        if self.help {
            self.help = false;
            return Effect::None;
        }
        if let Some((ask, input)) = self.ask.take() {
            return self.ask_key(ask, input, key);
        }
        self.edit_key(key)
    }

    fn inserting(&self) -> bool {
        self.ask.is_none() && !self.help
    }

    fn paste(&mut self, text: &[u8]) {
        self.status = None;
        self.last_was_cut = false;
        self.want_x = None;
        if self.buf.insert(text).is_err() {
            self.status = Some(out_of_memory());
        }
        // Typing on the last line starts a new empty last line, as in nano.
        let last = self.buf.len() - 1;
        if !self.buf.line(last).is_empty()
            && self.buf.put_lines(last + 1, &[Line::default()]).is_err()
        {
            self.status = Some(out_of_memory());
        }
    }

    fn saved(&mut self, path: &str, result: Result<(usize, usize), FsError>) {
        match result {
            Ok((lines, _)) => {
                self.name = Some(path.to_string());
                self.buf.modified = false;
                let s = if lines == 1 { "" } else { "s" };
                self.status = Some(format!("[ Wrote {lines} line{s} ]"));
            }
            Err(e) => self.status = Some(format!("[ Error writing {path}: {e} ]")),
        }
    }

    fn render(&mut self, size: TermSize) -> Vec<u8> {
        let mut f = Frame::new(size);
        let (rows, cols) = (f.rows, f.cols);
        // Title, text, status, two help lines; the title and help go on tiny screens.
        let chrome = rows >= 5;
        let text_top = usize::from(chrome);
        let height = if chrome {
            rows - 4
        } else {
            rows.saturating_sub(1).max(1)
        };
        self.height = height;
        let status_row = text_top + height;

        if chrome {
            f.goto_row(0);
            f.reverse(true);
            let title = "  nano (forkbox)";
            let name = self.name.as_deref().unwrap_or("New Buffer");
            let right = if self.buf.modified { "Modified  " } else { "" };
            let mut used = f.text(title, cols);
            let mid = cols.saturating_sub(name.len()) / 2;
            if mid > used {
                f.pad(used, mid);
                used = mid;
            } else if used < cols {
                used += f.text(" ", cols - used);
            }
            used += f.text(name, cols - used);
            let right_at = cols.saturating_sub(right.len());
            if right_at > used {
                f.pad(used, right_at);
                used = right_at;
            }
            used += f.text(right, cols - used);
            f.pad(used, cols);
            f.reverse(false);
            f.end_row();
        }

        self.top = scroll_y(self.top, self.buf.row, height);
        let cx = x_of(self.buf.cur(), self.buf.col);
        self.left = scroll_x(self.left, cx, cols);
        if self.help {
            for (i, line) in Self::HELP
                .lines()
                .chain(std::iter::repeat(""))
                .take(height)
                .enumerate()
            {
                f.goto_row(text_top + i);
                f.text(line, cols);
                f.end_row();
            }
        } else {
            for i in 0..height {
                f.goto_row(text_top + i);
                let row = self.top + i;
                if row < self.buf.len() {
                    f.bytes_from(self.buf.line(row), self.left, cols);
                }
                f.end_row();
            }
        }

        // Status line: a question, a message, or nothing.
        if status_row < rows {
            f.goto_row(status_row);
            let mut cursor = None;
            if let Some((ask, input)) = &self.ask {
                f.reverse(true);
                let q = match ask {
                    Ask::Search if !self.last_search.is_empty() => {
                        format!("Search [{}]: ", String::from_utf8_lossy(&self.last_search))
                    }
                    Ask::Search => "Search: ".to_string(),
                    Ask::FileName { .. } => "File Name to Write: ".to_string(),
                    Ask::SaveModified => {
                        "Save modified buffer?  (Answering \"No\" will DISCARD changes.) "
                            .to_string()
                    }
                };
                let mut used = f.text(&q, cols);
                used += f.bytes_from(input, 0, cols - used);
                cursor = Some(used);
                f.pad(used, cols);
                f.reverse(false);
            } else if let Some(msg) = &self.status {
                let start = cols.saturating_sub(msg.len()) / 2;
                f.pad(0, start);
                f.reverse(true);
                f.text(msg, cols - start);
                f.reverse(false);
            }
            f.end_row();
            if chrome {
                let (one, two): (&[HelpItem], &[HelpItem]) = match &self.ask {
                    Some((Ask::SaveModified, _)) => {
                        (&[(" Y", "Yes")], &[(" N", "No"), ("^C", "Cancel")])
                    }
                    Some(_) => (&[("^G", "Help")], &[("^C", "Cancel")]),
                    None => (
                        &[
                            ("^G", "Help"),
                            ("^O", "Write Out"),
                            ("^W", "Where Is"),
                            ("^K", "Cut"),
                            ("^C", "Location"),
                            ("^Y", "Prev Page"),
                        ],
                        &[
                            ("^X", "Exit"),
                            ("^A", "Home"),
                            ("^E", "End"),
                            ("^U", "Paste"),
                            ("^D", "Delete"),
                            ("^V", "Next Page"),
                        ],
                    ),
                };
                f.goto_row(rows - 2);
                Self::draw_help_row(&mut f, one);
                f.goto_row(rows - 1);
                Self::draw_help_row(&mut f, two);
            }
            if let Some(c) = cursor {
                return f.finish(status_row, c);
            }
        }
        let cy = text_top + self.buf.row - self.top;
        f.finish(cy, cx - self.left)
    }

    fn buffer(&self) -> &Buffer {
        &self.buf
    }

    fn newline_per_line(&self) -> bool {
        false
    }
}

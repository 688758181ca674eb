//! The text an editor holds: lines of bytes, a cursor, and what the text costs the
//! session.
//!
//! A line is any bytes, valid UTF-8 or not: the buffer never decodes and re-encodes, so
//! what was read is what is written. The display is computed per *unit* (a UTF-8
//! character, or one byte that starts no valid character), and the cursor always sits on
//! a unit boundary. Lines are shared (`Arc`), so an undo snapshot costs a pointer per
//! line, and changing a line copies only that line.
//!
//! Every byte the buffer holds is charged to the session's budget first: an insertion
//! that does not fit is refused whole ([`OutOfMemory`]) and the text stays as it was.

use std::sync::Arc;

use unicode_width::UnicodeWidthChar;

use crate::{Budget, Charge, OutOfMemory};

/// One line of text, without its newline.
pub(crate) type Line = Arc<Vec<u8>>;

/// Bytes charged per line on top of its text: the `Arc` and `Vec` headers and the
/// allocator's slack, so a file of a million empty lines is not free.
const LINE_OVERHEAD: usize = 48;

/// Display columns between tab stops.
pub(crate) const TAB_WIDTH: usize = 8;

/// How one unit of a line is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Glyph {
    /// A printable character of this many columns (0 for a combining mark).
    Char(usize),
    /// A tab: up to the next tab stop.
    Tab,
    /// A control character, shown as `^X` (two columns).
    Control(u8),
    /// A byte that starts no valid character (or a C1 control), shown as `\xNN`.
    Raw(u8),
}

/// The unit of `line` that starts at `i` (`i < line.len()`): where it ends and how it
/// shows.
pub(crate) fn unit_at(line: &[u8], i: usize) -> (usize, Glyph) {
    let b = line[i];
    if b < 0x80 {
        let glyph = match b {
            b'\t' => Glyph::Tab,
            0..=0x1f | 0x7f => Glyph::Control(b),
            _ => Glyph::Char(1),
        };
        return (i + 1, glyph);
    }
    let want = match b {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return (i + 1, Glyph::Raw(b)),
    };
    let end = i + want;
    if end > line.len() {
        return (i + 1, Glyph::Raw(b));
    }
    match std::str::from_utf8(&line[i..end])
        .ok()
        .and_then(|s| s.chars().next())
    {
        Some(c) if (c as u32) < 0xa0 => (end, Glyph::Raw(b)),
        Some(c) => (end, Glyph::Char(c.width().unwrap_or(1))),
        None => (i + 1, Glyph::Raw(b)),
    }
}

/// Where the unit before offset `i` starts (`i > 0`).
pub(crate) fn unit_before(line: &[u8], i: usize) -> usize {
    for back in 2..=4 {
        if back <= i && unit_at(line, i - back).0 == i {
            return i - back;
        }
    }
    i - 1
}

/// Columns `glyph` takes when it starts at display column `x`.
pub(crate) fn glyph_width(glyph: Glyph, x: usize) -> usize {
    match glyph {
        Glyph::Char(w) => w,
        Glyph::Tab => TAB_WIDTH - x % TAB_WIDTH,
        Glyph::Control(_) => 2,
        Glyph::Raw(_) => 4,
    }
}

/// The display column at which byte offset `col` of `line` starts.
pub(crate) fn x_of(line: &[u8], col: usize) -> usize {
    let mut x = 0;
    let mut i = 0;
    while i < col.min(line.len()) {
        let (end, glyph) = unit_at(line, i);
        x += glyph_width(glyph, x);
        i = end;
    }
    x
}

/// The byte offset of the unit that covers display column `want` (the line's end when
/// it is shorter).
pub(crate) fn col_at_x(line: &[u8], want: usize) -> usize {
    let mut x = 0;
    let mut i = 0;
    while i < line.len() {
        let (end, glyph) = unit_at(line, i);
        let w = glyph_width(glyph, x);
        if x + w > want {
            return i;
        }
        x += w;
        i = end;
    }
    line.len()
}

/// The text, the cursor, and the memory charged for them.
pub(crate) struct Buffer {
    /// Never empty: an empty text is one empty line.
    lines: Vec<Line>,
    /// The cursor: a line index and a byte offset on a unit boundary of that line.
    pub(crate) row: usize,
    pub(crate) col: usize,
    /// Text bytes held (without newlines).
    bytes: usize,
    /// What `lines` costs, taken from the session's budget before it grows.
    charge: Charge,
    /// The session's budget, for what snapshots cost.
    budget: Budget,
    /// Changed since it was read or last written.
    pub(crate) modified: bool,
}

/// The text and cursor at one moment, to go back to (vi's `u`).
pub(crate) struct Snapshot {
    lines: Vec<Line>,
    row: usize,
    col: usize,
    modified: bool,
    /// What the snapshot holds on its own: the pointer array, and the line a change
    /// copies.
    _charge: Charge,
}

impl Buffer {
    /// A buffer of `data` split at newlines. With `drop_final_newline`, a newline at the
    /// very end ends the last line instead of starting an empty one (vi's view of a
    /// file; nano keeps the empty line, as its last line). Fails when the text does not
    /// fit the budget behind `charge`.
    pub(crate) fn from_bytes(
        data: &[u8],
        budget: &Budget,
        drop_final_newline: bool,
    ) -> Result<Buffer, OutOfMemory> {
        let mut charge = budget.empty_charge();
        let mut body = data;
        if drop_final_newline && body.last() == Some(&b'\n') {
            body = &body[..body.len() - 1];
        }
        let count = memchr::memchr_iter(b'\n', body).count() + 1;
        charge.resize(body.len() + count * LINE_OVERHEAD)?;
        let lines: Vec<Line> = body
            .split(|b| *b == b'\n')
            .map(|l| Arc::new(l.to_vec()))
            .collect();
        Ok(Buffer {
            bytes: body.len() + 1 - count,
            lines,
            row: 0,
            col: 0,
            charge,
            budget: budget.clone(),
            modified: false,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    pub(crate) fn line(&self, row: usize) -> &[u8] {
        self.lines.get(row).map(|l| l.as_slice()).unwrap_or(&[])
    }

    /// The current line.
    pub(crate) fn cur(&self) -> &[u8] {
        self.line(self.row)
    }

    /// Bytes of text, newlines between lines included.
    pub(crate) fn text_len(&self) -> usize {
        self.bytes + self.lines.len() - 1
    }

    /// Whether the buffer is one empty line.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Makes sure the charge covers `more_bytes` more text and `more_lines` more lines.
    fn reserve(&mut self, more_bytes: usize, more_lines: usize) -> Result<(), OutOfMemory> {
        let want = (self.bytes + more_bytes)
            .saturating_add((self.lines.len() + more_lines).saturating_mul(LINE_OVERHEAD));
        if want > self.charge.bytes() {
            self.charge.resize(want)?;
        }
        Ok(())
    }

    /// Gives back what the text no longer needs.
    fn settle(&mut self) {
        let want = self.bytes + self.lines.len() * LINE_OVERHEAD;
        if want < self.charge.bytes() {
            let _ = self.charge.resize(want);
        }
    }

    fn line_mut(&mut self, row: usize) -> &mut Vec<u8> {
        Arc::make_mut(&mut self.lines[row])
    }

    /// Inserts `text` (newlines split lines) at the cursor and leaves the cursor after
    /// it. Linear in the text and the current line, whatever its size.
    pub(crate) fn insert(&mut self, text: &[u8]) -> Result<(), OutOfMemory> {
        if text.is_empty() {
            return Ok(());
        }
        let newlines = memchr::memchr_iter(b'\n', text).count();
        let tail_len = self.cur().len() - self.col;
        self.reserve(text.len() - newlines + tail_len, newlines)?;
        let (row, col) = (self.row, self.col);
        if newlines == 0 {
            let line = self.line_mut(row);
            line.splice(col..col, text.iter().copied());
            self.col += text.len();
        } else {
            let mut pieces = text.split(|b| *b == b'\n');
            let first = pieces.next().unwrap_or(&[]);
            let line = self.line_mut(row);
            let tail = line.split_off(col);
            line.extend_from_slice(first);
            let mut added: Vec<Line> = pieces.map(|p| Arc::new(p.to_vec())).collect();
            let last_len = added.last().map(|l| l.len()).unwrap_or(0);
            if let Some(last) = added.last_mut() {
                Arc::make_mut(last).extend_from_slice(&tail);
            }
            self.lines.splice(row + 1..row + 1, added);
            self.row = row + newlines;
            self.col = last_len;
        }
        self.bytes += text.len() - newlines;
        self.modified = true;
        Ok(())
    }

    /// Deletes the unit before the cursor, or joins the line to the previous one at its
    /// start. Whether anything changed.
    pub(crate) fn backspace(&mut self) -> bool {
        if self.col > 0 {
            let start = unit_before(self.cur(), self.col);
            self.delete_range(start, self.col);
            self.col = start;
            true
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.cur().len();
            self.join_next()
        } else {
            false
        }
    }

    /// Deletes the unit under the cursor, or joins the next line at the line's end.
    pub(crate) fn delete(&mut self) -> bool {
        if self.col < self.cur().len() {
            let (end, _) = unit_at(self.cur(), self.col);
            self.delete_range(self.col, end);
            true
        } else {
            self.join_next()
        }
    }

    /// Removes bytes `start..end` of the current line.
    pub(crate) fn delete_range(&mut self, start: usize, end: usize) {
        let row = self.row;
        let line = self.line_mut(row);
        let end = end.min(line.len());
        let start = start.min(end);
        line.drain(start..end);
        self.bytes -= end - start;
        self.modified = true;
        self.settle();
    }

    /// Appends the next line to the current one.
    fn join_next(&mut self) -> bool {
        if self.row + 1 >= self.lines.len() {
            return false;
        }
        let next = self.lines.remove(self.row + 1);
        let row = self.row;
        self.line_mut(row).extend_from_slice(&next);
        self.modified = true;
        self.settle();
        true
    }

    /// Removes `count` lines from `start` (at least one line always remains) and gives
    /// them back; the cursor goes to the line now at `start`, column 0.
    pub(crate) fn take_lines(&mut self, start: usize, count: usize) -> Vec<Line> {
        let end = (start + count).min(self.lines.len());
        let start = start.min(end);
        let taken: Vec<Line> = self.lines.drain(start..end).collect();
        if self.lines.is_empty() {
            self.lines.push(Arc::new(Vec::new()));
        }
        self.bytes -= taken.iter().map(|l| l.len()).sum::<usize>();
        self.row = start.min(self.lines.len() - 1);
        self.col = 0;
        self.modified = true;
        self.settle();
        taken
    }

    /// Inserts whole lines before line `at` (the end when `at` is the length).
    pub(crate) fn put_lines(&mut self, at: usize, lines: &[Line]) -> Result<(), OutOfMemory> {
        let bytes: usize = lines.iter().map(|l| l.len()).sum();
        self.reserve(bytes, lines.len())?;
        let at = at.min(self.lines.len());
        self.lines.splice(at..at, lines.iter().cloned());
        self.bytes += bytes;
        self.modified = true;
        Ok(())
    }

    /// Replaces the whole text with one empty line (nano cutting its last line).
    pub(crate) fn clear_line(&mut self) {
        let row = self.row;
        let old = self.cur().len();
        self.line_mut(row).clear();
        self.bytes -= old;
        self.col = 0;
        self.modified = true;
        self.settle();
    }

    /// The whole text and cursor, cheaply (lines are shared, not copied).
    pub(crate) fn snapshot(&self) -> Result<Snapshot, OutOfMemory> {
        // The pointer array, and the current line: the one a change copies first
        // (a changed line is copied, the snapshot keeps the old one).
        let charge = self
            .budget
            .charge(self.lines.len() * std::mem::size_of::<Line>() + self.cur().len())?;
        Ok(Snapshot {
            lines: self.lines.clone(),
            row: self.row,
            col: self.col,
            modified: self.modified,
            _charge: charge,
        })
    }

    /// Goes back to `snap`, giving the current state as a snapshot in exchange.
    pub(crate) fn restore(&mut self, snap: Snapshot) -> Snapshot {
        let Snapshot {
            lines,
            row,
            col,
            modified,
            _charge,
        } = snap;
        let old = Snapshot {
            lines: std::mem::replace(&mut self.lines, lines),
            row: self.row,
            col: self.col,
            modified: self.modified,
            _charge,
        };
        self.bytes = self.lines.iter().map(|l| l.len()).sum();
        self.row = row.min(self.lines.len() - 1);
        self.col = col.min(self.cur().len());
        self.modified = modified;
        let want = self.bytes + self.lines.len() * LINE_OVERHEAD;
        self.charge.force(want);
        old
    }

    /// Moves one unit left (not past the line's start). Whether it moved.
    pub(crate) fn left(&mut self) -> bool {
        if self.col == 0 {
            return false;
        }
        self.col = unit_before(self.cur(), self.col);
        true
    }

    /// Moves one unit right (up to the line's end). Whether it moved.
    pub(crate) fn right(&mut self) -> bool {
        if self.col >= self.cur().len() {
            return false;
        }
        self.col = unit_at(self.cur(), self.col).0;
        true
    }

    /// Moves to line `row` (clamped), at display column `x` or the nearest before it.
    pub(crate) fn goto_x(&mut self, row: usize, x: usize) {
        self.row = row.min(self.lines.len() - 1);
        self.col = col_at_x(self.cur(), x);
    }

    /// The cursor's display column.
    pub(crate) fn cursor_x(&self) -> usize {
        x_of(self.cur(), self.col)
    }

    /// The next occurrence of `pat` after (or, backwards, before) the cursor, wrapping
    /// around the end; and whether it wrapped. The cursor's own position matches last.
    pub(crate) fn find(&self, pat: &[u8], forward: bool) -> Option<((usize, usize), bool)> {
        if pat.is_empty() {
            return None;
        }
        let n = self.lines.len();
        let finder = memchr::memmem::Finder::new(pat);
        let rfinder = memchr::memmem::FinderRev::new(pat);
        for step in 0..=n {
            let row = if forward {
                (self.row + step) % n
            } else {
                (self.row + n - step % n) % n
            };
            let line = self.line(row);
            let wrapped = if forward {
                row < self.row || step == n
            } else {
                row > self.row || step == n
            };
            let hit = match (forward, step) {
                (true, 0) => {
                    let from = unit_at_or_end(line, self.col);
                    finder.find(&line[from..]).map(|i| i + from)
                }
                (true, s) if s == n => finder
                    .find(&line[..(self.col + pat.len()).min(line.len())])
                    .filter(|i| *i <= self.col),
                (true, _) => finder.find(line),
                (false, 0) => rfinder.rfind(&line[..self.col.min(line.len())]),
                (false, s) if s == n => rfinder.rfind(line).filter(|i| *i >= self.col),
                (false, _) => rfinder.rfind(line),
            };
            if let Some(col) = hit {
                return Some(((row, col), wrapped));
            }
        }
        None
    }

    /// Like [`Buffer::find`], for a regular expression (vi's `/re`): a match may start
    /// anywhere a character starts, overlapping others, and `^` holds only at a line's
    /// start.
    pub(crate) fn find_regex(
        &self,
        re: &crate::gnu_regex::Regex,
        forward: bool,
    ) -> Result<Option<Found>, crate::gnu_regex::TooComplex> {
        let n = self.lines.len();
        for step in 0..=n {
            let row = if forward {
                (self.row + step) % n
            } else {
                (self.row + n - step % n) % n
            };
            let line = self.line(row);
            let wrapped = if forward {
                row < self.row || step == n
            } else {
                row > self.row || step == n
            };
            // An empty match at a line's end puts the cursor on its last character.
            // Lines passed going forward need only their first match.
            let all = if forward && step != 0 && step != n {
                re.find_at(line, 0)?.map(|(s, _)| s).into_iter().collect()
            } else {
                match_starts(re, line)?
            };
            let starts: Vec<usize> = all
                .into_iter()
                .map(|col| {
                    if col >= line.len() && !line.is_empty() {
                        unit_before(line, line.len())
                    } else {
                        col
                    }
                })
                .collect();
            let hit = match (forward, step) {
                (true, 0) => starts.iter().copied().find(|&i| i > self.col),
                (true, s) if s == n => starts.iter().copied().find(|&i| i <= self.col),
                (true, _) => starts.first().copied(),
                (false, 0) => starts.iter().copied().rfind(|&i| i < self.col),
                (false, s) if s == n => starts.iter().copied().rfind(|&i| i >= self.col),
                (false, _) => starts.last().copied(),
            };
            if let Some(col) = hit {
                return Ok(Some(((row, col), wrapped)));
            }
        }
        Ok(None)
    }

    /// Every line, for writing out.
    pub(crate) fn lines(&self) -> &[Line] {
        &self.lines
    }
}

/// The offset just past the unit at `col` (the line's end if `col` is there).
/// A search's hit: its (row, column), and whether the search wrapped around to reach it.
pub(crate) type Found = ((usize, usize), bool);

/// Where matches of `re` start in `line`, overlapping ones too, in order.
fn match_starts(
    re: &crate::gnu_regex::Regex,
    line: &[u8],
) -> Result<Vec<usize>, crate::gnu_regex::TooComplex> {
    let mut starts = Vec::new();
    let mut at = 0;
    while let Some((s, _)) = re.find_at(line, at)? {
        starts.push(s);
        if s >= line.len() {
            break;
        }
        at = unit_at(line, s).0;
    }
    Ok(starts)
}

fn unit_at_or_end(line: &[u8], col: usize) -> usize {
    if col < line.len() {
        unit_at(line, col).0
    } else {
        line.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(text: &str) -> Buffer {
        Buffer::from_bytes(text.as_bytes(), &Budget::default(), false).unwrap()
    }

    fn text(b: &Buffer) -> String {
        let parts: Vec<String> = b
            .lines()
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect();
        parts.join("\n")
    }

    #[test]
    fn insert_splits_and_joins() {
        let mut b = buf("hello world");
        b.col = 5;
        b.insert(b",\nbig\nnew").unwrap();
        assert_eq!(text(&b), "hello,\nbig\nnew world");
        assert_eq!((b.row, b.col), (2, 3));
        b.col = 0;
        assert!(b.backspace());
        assert_eq!(text(&b), "hello,\nbignew world");
        assert_eq!((b.row, b.col), (1, 3));
        b.row = 0;
        b.col = b.cur().len();
        assert!(b.delete());
        assert_eq!(b.len(), 1);
        assert_eq!(b.text_len(), "hello,bignew world".len());
    }

    #[test]
    fn units_widths_and_invalid_bytes() {
        let line = "a\té日\u{301}".as_bytes().to_vec();
        let mut with_bad = line.clone();
        with_bad.push(0xff);
        assert_eq!(x_of(&with_bad, with_bad.len()), 8 + 1 + 2 + 4);
        assert_eq!(
            unit_at(&with_bad, with_bad.len() - 1),
            (with_bad.len(), Glyph::Raw(0xff))
        );
        assert_eq!(unit_before(&line, line.len()), line.len() - 2);
        assert_eq!(col_at_x(&line, 9), 2 + 2);
        assert_eq!(unit_at(&[0xe6, 0x97], 0), (1, Glyph::Raw(0xe6)));
    }

    #[test]
    fn find_wraps() {
        let mut b = buf("foo\nbar\nfoo bar");
        assert_eq!(b.find(b"bar", true), Some(((1, 0), false)));
        b.row = 2;
        b.col = 4;
        assert_eq!(b.find(b"foo", true), Some(((0, 0), true)));
        assert_eq!(b.find(b"bar", true), Some(((1, 0), true)));
        b.col = 0;
        assert_eq!(b.find(b"foo", true), Some(((0, 0), true)));
        assert_eq!(b.find(b"foo", false), Some(((0, 0), false)));
        assert_eq!(b.find(b"zzz", true), None);
    }

    #[test]
    fn budget_refuses_growth() {
        let budget = Budget::new(200, 4);
        let mut b = Buffer::from_bytes(b"ab", &budget, false).unwrap();
        assert!(b.insert(&[b'x'; 500]).is_err());
        assert_eq!(text(&b), "ab");
        b.insert(b"cd").unwrap();
        drop(b);
        assert_eq!(budget.mem_used(), 0);
    }
}

//! Drawing the edited line: where each character lands on a terminal `cols` wide (wide
//! characters take two cells, combining marks none, a wide character that does not fit
//! at the end of a row moves to the next, as terminals do), and the bytes that redraw
//! the prompt and line and put the cursor back where it belongs.

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// A cell position relative to the first row of the prompt: (row, column). A column
/// equal to the width means "past the last cell" (the terminal's pending wrap).
pub type Pos = (usize, usize);

/// Where `w` cells of text put the cursor after `pos`, wrapping as a terminal does.
fn advance((mut r, mut c): Pos, w: usize, cols: usize) -> Pos {
    let w = w.min(cols);
    if w > 0 && c + w > cols {
        r += 1;
        c = 0;
    }
    (r, c + w)
}

/// Display width of one grapheme cluster.
pub fn grapheme_width(g: &str) -> usize {
    UnicodeWidthStr::width(g)
}

/// Width of text on the screen (escape sequences, as in a coloured prompt, take none).
pub fn text_width(s: &str) -> usize {
    let mut p = (0, 0);
    let cols = usize::MAX / 2;
    p = place(p, s, cols);
    p.1
}

/// Where the cursor is after writing `s` from `pos`.
pub fn place(mut pos: Pos, s: &str, cols: usize) -> Pos {
    let mut rest = s;
    while !rest.is_empty() {
        if rest.starts_with('\x1b') {
            rest = &rest[escape_len(rest)..];
            continue;
        }
        let Some(g) = rest.graphemes(true).next() else {
            break;
        };
        rest = &rest[g.len()..];
        if g.contains('\n') {
            pos = (pos.0 + 1, 0);
            continue;
        }
        if g == "\t" {
            // To the next tab stop; a terminal's tab never wraps.
            let stop = (pos.1 / TAB + 1) * TAB;
            pos.1 = stop.min(cols.saturating_sub(1)).max(pos.1);
            continue;
        }
        if g.chars().all(char::is_control) {
            continue;
        }
        pos = advance(pos, grapheme_width(g), cols);
    }
    pos
}

/// Columns between tab stops, as terminals set them.
const TAB: usize = 8;

/// The edited line as the terminal is given it (a pasted line may hold any character):
/// a newline breaks the row, a tab moves to the next stop, any other control character
/// shows as `^X` (`^?` for DEL), as readline shows them; `place` measures the result.
pub fn visible(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 8);
    for c in line.chars() {
        match c {
            '\n' => out.push_str("\r\n"),
            '\t' => out.push('\t'),
            '\x7f' => out.push_str("^?"),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from((c as u8) + b'@'));
            }
            // C1 controls are never sent as they are.
            c if c.is_control() => out.push(char::REPLACEMENT_CHARACTER),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Length of the escape sequence at the start of `s` (CSI, OSC, or ESC and one byte).
fn escape_len(s: &str) -> usize {
    let b = s.as_bytes();
    match b.get(1) {
        Some(b'[') => b[2..]
            .iter()
            .position(|c| (0x40..=0x7e).contains(c))
            .map_or(b.len(), |i| i + 3),
        Some(b']') => b[2..]
            .iter()
            .position(|&c| c == 0x07)
            .map_or(b.len(), |i| i + 3),
        Some(_) => 1 + s[1..].chars().next().map_or(0, char::len_utf8),
        None => 1,
    }
}

/// The terminal's side of the drawing: how wide it is and which row of the drawn
/// prompt the cursor is on.
#[derive(Debug)]
pub struct Screen {
    pub cols: usize,
    /// Rows the cursor is below the first row of the prompt's last line.
    pub row: usize,
    /// The last redraw filled its last row exactly and moved to the start of the next.
    pub wrapped: bool,
}

impl Screen {
    pub fn new(cols: usize) -> Screen {
        Screen {
            cols: cols.max(1),
            row: 0,
            wrapped: false,
        }
    }

    /// Redraws `prompt` and `line` from the prompt's first row, clearing what was below,
    /// and leaves the cursor before byte `cursor` of `line`. Returns where the drawn text
    /// ends (after a forced wrap, at the start of the next row).
    pub fn redraw(&mut self, out: &mut Vec<u8>, prompt: &str, line: &str, cursor: usize) -> Pos {
        self.climb_to_start(out);
        out.extend_from_slice(b"\r\x1b[J");
        out.extend_from_slice(prompt.as_bytes());
        let shown = visible(line);
        out.extend_from_slice(shown.as_bytes());
        let start = place((0, 0), prompt, self.cols);
        let mut end = place(start, &shown, self.cols);
        let before = visible(&line[..cursor.min(line.len())]);
        let mut at = place(start, &before, self.cols);
        self.wrapped = end.1 >= self.cols;
        if self.wrapped {
            // Past the last cell: make the terminal wrap now, so its cursor is where ours is.
            out.extend_from_slice(b"\r\n");
            end = (end.0 + 1, 0);
        }
        if at.1 >= self.cols {
            at = (at.0 + 1, 0);
        }
        if at != end {
            if end.0 > at.0 {
                out.extend_from_slice(format!("\x1b[{}A", end.0 - at.0).as_bytes());
            }
            out.push(b'\r');
            if at.1 > 0 {
                out.extend_from_slice(format!("\x1b[{}C", at.1).as_bytes());
            }
        }
        self.row = at.0;
        end
    }

    /// Moves the cursor to the first row of the drawing, column unchanged.
    fn climb_to_start(&mut self, out: &mut Vec<u8>) {
        if self.row > 0 {
            out.extend_from_slice(format!("\x1b[{}A", self.row).as_bytes());
        }
        self.row = 0;
    }
}

/// Names laid out in columns as readline lists completions: sorted down the columns,
/// each column as wide as the widest name plus two spaces, as many columns as fit.
pub fn columns(names: &[String], cols: usize) -> String {
    let widest = names.iter().map(|n| text_width(n)).max().unwrap_or(0) + 2;
    let per_row = (cols / widest).max(1);
    let rows = names.len().div_ceil(per_row);
    let mut out = String::new();
    for r in 0..rows {
        let mut line = String::new();
        let mut i = r;
        while i < names.len() {
            let name = &names[i];
            line.push_str(name);
            if i + rows < names.len() {
                line.push_str(&" ".repeat(widest - text_width(name)));
            }
            i += rows;
        }
        out.push_str(&line);
        out.push_str("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_and_combining_characters_are_measured() {
        assert_eq!(text_width("abc"), 3);
        assert_eq!(text_width("中文"), 4);
        assert_eq!(text_width("e\u{301}"), 1);
        assert_eq!(text_width("\x1b[1;32mok\x1b[0m$ "), 4);
    }

    #[test]
    fn wrapping_moves_a_wide_character_that_does_not_fit() {
        assert_eq!(place((0, 0), "abcd", 4), (0, 4));
        assert_eq!(place((0, 0), "abcde", 4), (1, 1));
        assert_eq!(place((0, 0), "abc中", 4), (1, 2));
    }

    #[test]
    fn redraw_puts_the_cursor_back() {
        let mut s = Screen::new(80);
        let mut out = Vec::new();
        s.redraw(&mut out, "$ ", "hello", 2);
        assert_eq!(out, b"\r\x1b[J$ hello\r\x1b[4C");
        assert_eq!(s.row, 0);
    }

    #[test]
    fn redraw_of_a_wrapped_line_climbs_back_to_the_prompt() {
        let mut s = Screen::new(10);
        let mut out = Vec::new();
        s.redraw(&mut out, "$ ", "0123456789abc", 13);
        // 15 cells: the cursor ends on the second row.
        assert_eq!(s.row, 1);
        out.clear();
        s.redraw(&mut out, "$ ", "0123456789abc", 0);
        assert!(out.starts_with(b"\x1b[1A\r\x1b[J$ 0123456789abc\x1b[1A\r\x1b[2C"));
        assert_eq!(s.row, 0);
    }

    #[test]
    fn a_line_that_fills_the_row_exactly_wraps_the_cursor() {
        let mut s = Screen::new(4);
        let mut out = Vec::new();
        s.redraw(&mut out, "$ ", "ab", 2);
        assert!(out.ends_with(b"$ ab\r\n"));
        assert_eq!(s.row, 1);
    }

    #[test]
    fn pasted_control_characters_show_as_readline_shows_them() {
        assert_eq!(visible("a\x01b\x7f\x1b"), "a^Ab^?^[");
        assert_eq!(visible("a\nb"), "a\r\nb");
        assert_eq!(place((0, 0), &visible("ab\ncde"), 80), (1, 3));
        assert_eq!(place((0, 0), "a\tb", 80), (0, 9));
        assert_eq!(place((0, 0), "abcdef\t", 8), (0, 7));
        let mut s = Screen::new(80);
        let mut out = Vec::new();
        s.redraw(&mut out, "$ ", "echo a\necho b", 14);
        assert_eq!(out, b"\r\x1b[J$ echo a\r\necho b");
        assert_eq!(s.row, 1);
    }

    #[test]
    fn columns_go_down_then_across() {
        let names: Vec<String> = ["a", "bb", "c", "d", "e"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(columns(&names, 12), "a   c   e\r\nbb  d\r\n");
        assert_eq!(columns(&names, 3), "a\r\nbb\r\nc\r\nd\r\ne\r\n");
    }
}

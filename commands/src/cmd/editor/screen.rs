//! Drawing a full-screen program: one frame of ANSI output into a byte buffer.
//!
//! Each frame redraws every row (cursor to the row, its content, erase to the end of the
//! line), so a frame is correct whatever the terminal showed before, after a resize too;
//! it is a few kilobytes, whatever the size of the text behind it.

use crate::TermSize;

use super::buffer::{Glyph, glyph_width, unit_at};

/// Switches to the alternate screen (the shell's screen comes back on exit).
pub(crate) const ENTER: &[u8] = b"\x1b[?1049h\x1b[H\x1b[2J";
/// Leaves the alternate screen, with the cursor visible and attributes reset.
pub(crate) const LEAVE: &[u8] = b"\x1b[0m\x1b[?25h\x1b[?1049l";

/// Rows and columns, at least 1 each, whatever the terminal claims.
pub(crate) fn dims(size: TermSize) -> (usize, usize) {
    (usize::from(size.rows.max(1)), usize::from(size.cols.max(1)))
}

/// One frame being drawn.
pub(crate) struct Frame {
    pub(crate) out: Vec<u8>,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
}

impl Frame {
    pub(crate) fn new(size: TermSize) -> Frame {
        let (rows, cols) = dims(size);
        let mut out = Vec::with_capacity(rows * (cols + 16));
        // Hide the cursor while drawing; reset attributes.
        out.extend_from_slice(b"\x1b[?25l\x1b[0m");
        Frame { out, rows, cols }
    }

    /// Starts row `r` (0-based) at column 0.
    pub(crate) fn goto_row(&mut self, r: usize) {
        self.out
            .extend_from_slice(format!("\x1b[{};1H", r + 1).as_bytes());
    }

    /// Ends the current row: erases what is left of it.
    pub(crate) fn end_row(&mut self) {
        self.out.extend_from_slice(b"\x1b[K");
    }

    pub(crate) fn reverse(&mut self, on: bool) {
        self.out
            .extend_from_slice(if on { b"\x1b[7m" } else { b"\x1b[0m" });
    }

    /// Writes plain text (no control characters) of at most `width` columns; gives the
    /// columns used.
    pub(crate) fn text(&mut self, s: &str, width: usize) -> usize {
        let bytes = s.as_bytes();
        self.bytes_from(bytes, 0, width)
    }

    /// Draws `line` from display column `left`, at most `width` columns; gives the
    /// columns used. Control characters show as `^X`, bytes of no valid character as
    /// `\xNN`; a wide character that does not fit whole is left out.
    pub(crate) fn bytes_from(&mut self, line: &[u8], left: usize, width: usize) -> usize {
        let mut x = 0;
        let mut used = 0;
        let mut i = 0;
        while i < line.len() {
            let (end, glyph) = unit_at(line, i);
            let w = glyph_width(glyph, x);
            if x + w <= left {
                x += w;
                i = end;
                continue;
            }
            let visible = (x + w - left.max(x)).min(w);
            if used + visible > width {
                break;
            }
            if x < left {
                // Straddles the left edge: show the visible part as blanks.
                self.out.extend(std::iter::repeat_n(b' ', visible));
            } else {
                match glyph {
                    Glyph::Char(_) => self.out.extend_from_slice(&line[i..end]),
                    Glyph::Tab => self.out.extend(std::iter::repeat_n(b' ', w)),
                    Glyph::Control(b) => {
                        self.out.push(b'^');
                        self.out.push(if b == 0x7f { b'?' } else { b | 0x40 });
                    }
                    Glyph::Raw(b) => self.out.extend_from_slice(format!("\\x{b:02X}").as_bytes()),
                }
            }
            used += visible;
            x += w;
            i = end;
        }
        used
    }

    /// Pads with spaces up to `width` columns after `used`.
    pub(crate) fn pad(&mut self, used: usize, width: usize) {
        self.out
            .extend(std::iter::repeat_n(b' ', width.saturating_sub(used)));
    }

    /// Ends the frame with the cursor at (`row`, `col`), visible.
    pub(crate) fn finish(mut self, row: usize, col: usize) -> Vec<u8> {
        self.out.extend_from_slice(b"\x1b[0m");
        self.out.extend_from_slice(
            format!(
                "\x1b[{};{}H\x1b[?25h",
                row.min(self.rows - 1) + 1,
                col.min(self.cols - 1) + 1
            )
            .as_bytes(),
        );
        self.out
    }
}

/// Display columns `line` takes.
pub(crate) fn x_width(line: &[u8]) -> usize {
    super::buffer::x_of(line, line.len())
}

/// The first display column to show so that column `x` is visible in `width`
/// columns, moving the view as little as possible from `left`.
pub(crate) fn scroll_x(left: usize, x: usize, width: usize) -> usize {
    let width = width.max(1);
    if x < left {
        x
    } else if x >= left + width {
        x + 1 - width
    } else {
        left
    }
}

/// The first line to show so that line `row` is visible in `height` rows, moving the
/// view as little as possible from `top`.
pub(crate) fn scroll_y(top: usize, row: usize, height: usize) -> usize {
    scroll_x(top, row, height)
}

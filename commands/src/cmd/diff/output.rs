//! The reports of `diff`, each from the change runs of [`super::algo`]: normal, unified
//! (`-u`), context (`-c`), ed script (`-e`), RCS (`-n`) and side by side (`-y`), written
//! byte for byte as GNU diffutils writes them (its `normal.c`, `context.c`, `ed.c` and
//! `side.c`).

use super::algo::Change;
use crate::gnu_regex::Regex;

/// One side's lines (each without its `\n`) and whether its last line has none.
pub(super) struct Text<'a> {
    pub(super) lines: Vec<&'a [u8]>,
    pub(super) missing_nl: bool,
}

impl Text<'_> {
    /// Whether line `i` ends with a newline.
    fn has_nl(&self, i: usize) -> bool {
        !(self.missing_nl && i + 1 == self.lines.len())
    }
}

/// How lines are written: GNU's `-T` (a tab after the line's flag), `-t` (tabs expanded)
/// and `--tabsize`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Style {
    pub(super) initial_tab: bool,
    pub(super) expand_tabs: bool,
    pub(super) tabsize: usize,
}

const NO_NL: &[u8] = b"\n\\ No newline at end of file\n";

impl Style {
    /// A normal or context line's prefix: its flag, then a space (a tab under `-T`).
    fn flag(&self, f: u8) -> [u8; 2] {
        [f, if self.initial_tab { b'\t' } else { b' ' }]
    }

    /// A unified line's prefix: the flag alone (a common line's space becomes the tab
    /// under `-T`, a change's flag is followed by one).
    fn uflag(&self, f: u8) -> Vec<u8> {
        match (f, self.initial_tab) {
            (b' ', true) => b"\t".to_vec(),
            (f, true) => vec![f, b'\t'],
            (f, false) => vec![f],
        }
    }

    /// GNU's `output_1_line`: the text of a line, its tabs expanded under `-t` (columns
    /// count from the text's start); after a carriage return inside the line, `again`
    /// (the line's prefix) is written anew.
    fn text(&self, out: &mut Vec<u8>, line: &[u8], again: &[u8]) {
        if !self.expand_tabs {
            out.extend_from_slice(line);
            return;
        }
        let mut column = 0usize;
        for (k, &c) in line.iter().enumerate() {
            match c {
                b'\t' => {
                    let spaces = self.tabsize - column % self.tabsize;
                    column += spaces;
                    out.resize(out.len() + spaces, b' ');
                }
                b'\r' => {
                    out.push(c);
                    if k + 1 < line.len() {
                        out.extend_from_slice(again);
                    }
                    column = 0;
                }
                b'\x08' => {
                    if column > 0 {
                        column -= 1;
                        out.push(c);
                    }
                }
                _ => {
                    column += usize::from((0x20..0x7f).contains(&c));
                    out.push(c);
                }
            }
        }
    }

    /// A whole line: `prefix`, the text, and its end (the no-newline note for a last line
    /// without one). `again`: what a carriage return inside the line is followed by.
    fn put(&self, out: &mut Vec<u8>, prefix: &[u8], again: &[u8], t: &Text, i: usize) {
        out.extend_from_slice(prefix);
        self.text(out, t.lines[i], again);
        if t.has_nl(i) {
            out.push(b'\n');
        } else {
            out.extend_from_slice(NO_NL);
        }
    }

    /// A normal or context line under flag `f`.
    fn flagged(&self, out: &mut Vec<u8>, f: u8, t: &Text, i: usize) {
        let p = self.flag(f);
        self.put(out, &p, &p, t, i);
    }
}

/// 1-based inclusive range of lines `a..end`; an empty range names the line before it.
fn range(a: usize, end: usize) -> String {
    if end <= a {
        a.to_string()
    } else if end - a == 1 {
        end.to_string()
    } else {
        format!("{},{}", a + 1, end)
    }
}

/// The letter of a normal or ed hunk: delete, append or change.
fn letter(c: &Change) -> char {
    match (c.a == c.a_end, c.b == c.b_end) {
        (false, true) => 'd',
        (true, false) => 'a',
        _ => 'c',
    }
}

/// Normal output (`3c3`, `< old`, `---`, `> new`); `hunks` holds no ignored change.
pub(super) fn normal(hunks: &[Change], a: &Text, b: &Text, st: &Style) -> Vec<u8> {
    let mut out = Vec::new();
    for c in hunks {
        let op = letter(c);
        out.extend_from_slice(
            format!("{}{op}{}\n", range(c.a, c.a_end), range(c.b, c.b_end)).as_bytes(),
        );
        for i in c.a..c.a_end {
            st.flagged(&mut out, b'<', a, i);
        }
        if op == 'c' {
            out.extend_from_slice(b"---\n");
        }
        for j in c.b..c.b_end {
            st.flagged(&mut out, b'>', b, j);
        }
    }
    out
}

/// An ed script (`-e`): the hunks last to first, so that line numbers stay right as ed
/// applies them; a line that is a lone `.` is written as `..` and fixed by `s/.//`.
/// `b`'s last line always has its newline here (GNU completes it, with a warning).
pub(super) fn ed(hunks: &[Change], b: &Text) -> Vec<u8> {
    let mut out = Vec::new();
    for c in hunks.iter().rev() {
        let op = letter(c);
        out.extend_from_slice(format!("{}{op}\n", range(c.a, c.a_end)).as_bytes());
        if op == 'd' {
            continue;
        }
        let mut inserting = true;
        for line in &b.lines[c.b..c.b_end] {
            if !inserting {
                out.extend_from_slice(b"a\n");
                inserting = true;
            }
            if *line == b"." {
                out.extend_from_slice(b"..\n.\ns/.//\n");
                inserting = false;
            } else {
                out.extend_from_slice(line);
                out.push(b'\n');
            }
        }
        if inserting {
            out.extend_from_slice(b".\n");
        }
    }
    out
}

/// RCS output (`-n`): `dN COUNT` and `aN COUNT` followed by the added lines.
pub(super) fn rcs(hunks: &[Change], b: &Text) -> Vec<u8> {
    let mut out = Vec::new();
    for c in hunks {
        if c.a < c.a_end {
            out.extend_from_slice(format!("d{} {}\n", c.a + 1, c.a_end - c.a).as_bytes());
        }
        if c.b < c.b_end {
            out.extend_from_slice(format!("a{} {}\n", c.a_end, c.b_end - c.b).as_bytes());
            for j in c.b..c.b_end {
                out.extend_from_slice(b.lines[j]);
                if b.has_nl(j) {
                    out.push(b'\n');
                }
            }
        }
    }
    out
}

/// The search of `-p`/`-F RE` for the line that names a hunk's function: backwards from
/// the hunk's first line, no further than where the previous search started; when it
/// finds nothing there, the line found last time (GNU's `find_function`).
pub(super) struct Functions<'r> {
    pub(super) re: Option<&'r Regex>,
    last_search: usize,
    last_match: Option<usize>,
}

impl<'r> Functions<'r> {
    pub(super) fn new(re: Option<&'r Regex>) -> Functions<'r> {
        Functions {
            re,
            last_search: 0,
            last_match: None,
        }
    }

    /// ` NAME` for the hunk starting at line `first` (at most 40 bytes of the line,
    /// leading and trailing blanks dropped), or nothing.
    fn heading(&mut self, lines: &[&[u8]], first: usize) -> Vec<u8> {
        let Some(re) = self.re else {
            return Vec::new();
        };
        let last = self.last_search;
        self.last_search = first;
        let mut found = None;
        let mut i = first;
        while i > last {
            i -= 1;
            if re.is_match(lines[i]).unwrap_or(false) {
                self.last_match = Some(i);
                found = Some(i);
                break;
            }
        }
        let Some(line) = found.or(self.last_match).map(|i| lines[i]) else {
            return Vec::new();
        };
        let start = line
            .iter()
            .position(|c| !c.is_ascii_whitespace())
            .unwrap_or(line.len());
        let mut end = (start + 40).min(line.len());
        while end > start && line[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        let mut out = vec![b' '];
        out.extend_from_slice(&line[start..end]);
        out
    }
}

/// Changes grouped into hunks of `ctx` lines of context (GNU's `find_hunk`): a change
/// joins the previous one when the lines between are fewer than `2 * ctx + 1`, or than
/// `ctx` when it is itself ignored. A hunk made only of ignored changes is dropped.
fn groups(hunks: &[Change], ctx: usize) -> Vec<&[Change]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=hunks.len() {
        let split = i == hunks.len() || {
            let gap = hunks[i].a - hunks[i - 1].a_end;
            if hunks[i].ignore {
                gap >= ctx
            } else {
                gap > 2 * ctx
            }
        };
        if split {
            let g = &hunks[start..i];
            if !g.iter().all(|c| c.ignore) {
                out.push(g);
            }
            start = i;
        }
    }
    out
}

/// A hunk's window: `ctx` lines before its first change and after its last, in both files.
fn window(g: &[Change], a_len: usize, ctx: usize) -> (usize, usize, usize, usize) {
    let (first, last) = (g[0], g[g.len() - 1]);
    let a0 = first.a.saturating_sub(ctx);
    let b0 = first.b - (first.a - a0);
    let a1 = (last.a_end + ctx).min(a_len);
    let b1 = last.b_end + (a1 - last.a_end);
    (a0, a1, b0, b1)
}

pub(super) fn unified(
    hunks: &[Change],
    (a, b): (&Text, &Text),
    n: usize,
    st: &Style,
    funcs: &mut Functions,
) -> Vec<u8> {
    let mut out = Vec::new();
    let (common, minus, plus) = (st.uflag(b' '), st.uflag(b'-'), st.uflag(b'+'));
    for g in groups(hunks, n) {
        let (a0, a1, b0, b1) = window(g, a.lines.len(), n);
        let span = |s: usize, e: usize| match e - s {
            0 => format!("{s},0"),
            1 => format!("{}", s + 1),
            len => format!("{},{len}", s + 1),
        };
        out.extend_from_slice(format!("@@ -{} +{} @@", span(a0, a1), span(b0, b1)).as_bytes());
        out.extend(funcs.heading(&a.lines, a0));
        out.push(b'\n');
        let mut i = a0;
        for c in g {
            for k in i..c.a {
                st.put(&mut out, &common, b"", a, k);
            }
            for k in c.a..c.a_end {
                st.put(&mut out, &minus, b"", a, k);
            }
            for k in c.b..c.b_end {
                st.put(&mut out, &plus, b"", b, k);
            }
            i = c.a_end;
        }
        for k in i..a1 {
            st.put(&mut out, &common, b"", a, k);
        }
    }
    out
}

pub(super) fn context(
    hunks: &[Change],
    (a, b): (&Text, &Text),
    n: usize,
    st: &Style,
    funcs: &mut Functions,
) -> Vec<u8> {
    let mut out = Vec::new();
    for g in groups(hunks, n) {
        let (a0, a1, b0, b1) = window(g, a.lines.len(), n);
        let span = |s: usize, e: usize| {
            if e <= s {
                format!("{s}")
            } else if e - s == 1 {
                format!("{e}")
            } else {
                format!("{},{e}", s + 1)
            }
        };
        out.extend_from_slice(b"***************");
        out.extend(funcs.heading(&a.lines, a0));
        out.push(b'\n');
        out.extend_from_slice(format!("*** {} ****\n", span(a0, a1)).as_bytes());
        context_side(
            &mut out,
            st,
            g,
            a,
            (a0, a1),
            |c| (c.a, c.a_end, c.b < c.b_end),
            b'-',
        );
        out.extend_from_slice(format!("--- {} ----\n", span(b0, b1)).as_bytes());
        context_side(
            &mut out,
            st,
            g,
            b,
            (b0, b1),
            |c| (c.b, c.b_end, c.a < c.a_end),
            b'+',
        );
    }
    out
}

/// One side of a context hunk (`***` or `---`): its lines `from..to`, the lines of each
/// change on this side marked `!` when the other side changed too, else `gone`; nothing
/// when no change touches this side. `side` gives a change's range here and whether the
/// other side has lines.
fn context_side(
    out: &mut Vec<u8>,
    st: &Style,
    g: &[Change],
    text: &Text,
    (from, to): (usize, usize),
    side: impl Fn(&Change) -> (usize, usize, bool),
    gone: u8,
) {
    if !g.iter().any(|c| {
        let (s, e, _) = side(c);
        s < e
    }) {
        return;
    }
    let mut i = from;
    for c in g {
        let (s, e, both) = side(c);
        for k in i..s {
            st.flagged(out, b' ', text, k);
        }
        let mark = if both { b'!' } else { gone };
        for k in s..e {
            st.flagged(out, mark, text, k);
        }
        i = e;
    }
    for k in i..to {
        st.flagged(out, b' ', text, k);
    }
}

/// The layout of side-by-side output (`-y`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Sides {
    /// `-W`: the whole width (GNU's default is 130).
    pub(super) width: usize,
    /// `--left-column`: a common line is shown once, on the left, marked `(`.
    pub(super) left_column: bool,
    /// `--suppress-common-lines`.
    pub(super) suppress_common: bool,
    /// The C locale: every byte is one character, those outside ASCII of no width.
    pub(super) c_locale: bool,
}

/// Side-by-side output, as GNU's `side.c` lays it out: each half `hw` columns wide, the
/// right one starting at column `c2o`, the marker (`|`, `<`, `>`, `(`, `)`, `/`, `\`)
/// halfway between; columns are reached with tabs unless `-t`.
pub(super) fn side_by_side(hunks: &[Change], a: &Text, b: &Text, st: &Style, s: &Sides) -> Vec<u8> {
    let t = if st.expand_tabs { 1 } else { st.tabsize } as i64;
    let w = s.width as i64;
    let off = (w + t + 3) / (2 * t) * t;
    let hw = (off - 3).min(w - off).max(0);
    let mut p = SideWriter {
        out: Vec::new(),
        st: *st,
        s: *s,
        hw: hw as usize,
        c2o: if hw > 0 { off as usize } else { s.width },
        next0: 0,
        next1: 0,
    };
    for c in hunks {
        if c.ignore {
            continue;
        }
        p.common(a, b, c.a, c.b);
        let (mut i, mut j) = (c.a, c.b);
        while i < c.a_end && j < c.b_end {
            p.line(Some((a, i)), b'|', Some((b, j)));
            i += 1;
            j += 1;
        }
        for j in j..c.b_end {
            p.line(None, b'>', Some((b, j)));
        }
        for i in i..c.a_end {
            p.line(Some((a, i)), b'<', None);
        }
        p.next0 = c.a_end;
        p.next1 = c.b_end;
    }
    p.common(a, b, a.lines.len(), b.lines.len());
    p.out
}

struct SideWriter {
    out: Vec<u8>,
    st: Style,
    s: Sides,
    /// The width of each half.
    hw: usize,
    /// The column where the right half starts.
    c2o: usize,
    /// The first lines not yet shown.
    next0: usize,
    next1: usize,
}

impl SideWriter {
    /// The common lines up to `limit0`/`limit1`.
    fn common(&mut self, a: &Text, b: &Text, limit0: usize, limit1: usize) {
        let (mut i, mut j) = (self.next0, self.next1);
        if !self.s.suppress_common && (i != limit0 || j != limit1) {
            if !self.s.left_column {
                while i < limit0 && j < limit1 {
                    self.line(Some((a, i)), b' ', Some((b, j)));
                    i += 1;
                    j += 1;
                }
                for j in j..limit1 {
                    self.line(None, b')', Some((b, j)));
                }
            }
            for i in i..limit0 {
                self.line(Some((a, i)), b'(', None);
            }
        }
        self.next0 = limit0;
        self.next1 = limit1;
    }

    /// Blanks from column `from` to `to`: tabs while they fit (unless `-t`), then spaces.
    fn tab_from_to(&mut self, mut from: usize, to: usize) -> usize {
        if !self.st.expand_tabs {
            let ts = self.st.tabsize;
            let mut tab = from + ts - from % ts;
            while tab <= to {
                self.out.push(b'\t');
                from = tab;
                tab += ts;
            }
        }
        while from < to {
            self.out.push(b' ');
            from += 1;
        }
        to
    }

    /// GNU's `print_1sdiff_line`.
    fn line(&mut self, left: Option<(&Text, usize)>, mut sep: u8, right: Option<(&Text, usize)>) {
        let mut newline = false;
        let mut col = 0;
        if let Some((t, i)) = left {
            newline |= t.has_nl(i);
            col = self.half(t.lines[i], 0, self.hw);
        }
        if sep != b' ' {
            col = self.tab_from_to(col, (self.hw + self.c2o - 1) / 2) + 1;
            if let Some((t, i)) = right
                && sep == b'|'
                && newline != t.has_nl(i)
            {
                sep = if newline { b'/' } else { b'\\' };
            }
            self.out.push(sep);
        }
        if let Some((t, i)) = right {
            newline |= t.has_nl(i);
            if !t.lines[i].is_empty() {
                col = self.tab_from_to(col, self.c2o);
                self.half(t.lines[i], col, self.hw);
            }
        }
        if newline {
            self.out.push(b'\n');
        }
    }

    /// GNU's `print_half_line`: as much of `line` as fits in `bound` columns; returns the
    /// column reached. `indent` is where the half starts (a carriage return goes back to
    /// it).
    fn half(&mut self, line: &[u8], indent: usize, bound: usize) -> usize {
        let (mut inp, mut outp) = (0usize, 0usize);
        let ts = self.st.tabsize;
        let mut k = 0;
        while k < line.len() {
            let c = line[k];
            k += 1;
            match c {
                b'\t' => {
                    let spaces = ts - inp % ts;
                    if inp == outp {
                        let mut tabstop = outp + spaces;
                        if self.st.expand_tabs {
                            tabstop = tabstop.min(bound);
                            while outp < tabstop {
                                self.out.push(b' ');
                                outp += 1;
                            }
                        } else if tabstop < bound {
                            outp = tabstop;
                            self.out.push(c);
                        }
                    }
                    inp += spaces;
                }
                b'\r' => {
                    self.out.push(c);
                    self.tab_from_to(0, indent);
                    inp = 0;
                    outp = 0;
                }
                b'\x08' => {
                    if inp != 0 {
                        inp -= 1;
                        if inp < bound {
                            if outp <= inp {
                                while outp < inp {
                                    self.out.push(b' ');
                                    outp += 1;
                                }
                            } else {
                                outp = inp;
                                self.out.push(c);
                            }
                        }
                    }
                }
                0x20..=0x7e => {
                    if inp < bound {
                        inp += 1;
                        outp = inp;
                        self.out.push(c);
                    } else {
                        inp += 1;
                    }
                }
                _ => {
                    if c >= 0x80 && !self.s.c_locale {
                        let len = utf8_len(&line[k - 1..]);
                        if let Some(ch) = std::str::from_utf8(&line[k - 1..k - 1 + len])
                            .ok()
                            .and_then(|s| s.chars().next())
                        {
                            inp += unicode_width::UnicodeWidthChar::width(ch).unwrap_or(0);
                            if inp <= bound {
                                outp = inp;
                                self.out.extend_from_slice(&line[k - 1..k - 1 + len]);
                            }
                            k += len - 1;
                            continue;
                        }
                    }
                    if inp < bound {
                        self.out.push(c);
                    }
                }
            }
        }
        outp
    }
}

/// The length of the UTF-8 sequence `s` starts with (1 for a byte that starts none).
fn utf8_len(s: &[u8]) -> usize {
    let want = match s[0] {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => 1,
    };
    want.min(s.len())
}

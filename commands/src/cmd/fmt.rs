//! `fmt`: fill and join paragraphs the GNU way.
//!
//! A paragraph is a run of lines with the same indentation (the first line's may differ
//! with `-c`/`-t`) and the same prefix (`-p`), ended by a blank line. Its words are laid
//! out again by choosing all the line breaks of the paragraph together: each possible
//! line costs the square of its distance from the goal width, plus the raggedness
//! against the next line, with bonuses for breaking at a sentence end or punctuation
//! and penalties for leaving one word of a sentence alone on a line. The cheapest
//! layout over the whole paragraph wins (dynamic programming from its end), so the
//! output is GNU fmt's, not a greedy fill's.
//!
//! Input streams line by line; a paragraph is held only up to [`MAX_WORDS`] words or
//! [`MAX_CHARS`] bytes of text, past which the best break near the end is taken and
//! the lines before it are written (as GNU does).

use async_trait::async_trait;
use clap::Parser;

use super::textin::operands_or_stdin;
use super::util::{BufOut, MAX_LINE, Pacer, Reader, quote};
use crate::{CmdResult, Command, Context, parse_args};

/// Words a paragraph holds before its first lines are written: bounds memory.
const MAX_WORDS: usize = 1000;
/// Bytes of word text a paragraph holds before its first lines are written.
const MAX_CHARS: usize = 5000;
/// The default maximum line width.
const DEFAULT_WIDTH: usize = 75;
/// The indent `-t` gives the other lines of a one-line paragraph at column 0.
const DEF_INDENT: usize = 3;
const TAB: usize = 8;

type Cost = i64;
const MAX_COST: Cost = Cost::MAX;

/// The square of `n`: costs are measured as squared lengths.
const fn equiv(n: Cost) -> Cost {
    n * n
}
const fn short_cost(n: Cost) -> Cost {
    equiv(n * 10)
}
const fn ragged_cost(n: Cost) -> Cost {
    short_cost(n) / 2
}
const LINE_COST: Cost = equiv(70);
const fn widow_cost(n: Cost) -> Cost {
    equiv(200) / (n + 2)
}
const fn orphan_cost(n: Cost) -> Cost {
    equiv(150) / (n + 2)
}
const SENTENCE_BONUS: Cost = equiv(50);
const NOBREAK_COST: Cost = equiv(600);
const PAREN_BONUS: Cost = equiv(40);
const PUNCT_BONUS: Cost = equiv(40);
const LINE_CREDIT: Cost = equiv(3);

/// Reformat each paragraph in the FILE(s), writing to standard output. The option
/// -WIDTH is an abbreviated form of --width=DIGITS. With no FILE, or when FILE is -,
/// read standard input.
#[derive(Parser, Debug)]
#[command(name = "fmt")]
struct Args {
    /// Preserve the indentation of the first two lines.
    #[arg(short = 'c', long = "crown-margin")]
    crown: bool,
    /// Reformat only lines beginning with STRING, reattaching the prefix to reformatted
    /// lines.
    #[arg(short = 'p', long = "prefix", value_name = "STRING")]
    prefix: Option<String>,
    /// Split long lines, but do not refill.
    #[arg(short = 's', long = "split-only")]
    split: bool,
    /// Indentation of first line different from second.
    #[arg(short = 't', long = "tagged-paragraph")]
    tagged: bool,
    /// One space between words, two after sentences.
    #[arg(short = 'u', long = "uniform-spacing")]
    uniform: bool,
    /// Maximum line width (default of 75 columns).
    #[arg(
        short = 'w',
        long = "width",
        value_name = "WIDTH",
        allow_hyphen_values = true
    )]
    width: Option<String>,
    /// Goal width (default of 93% of width).
    #[arg(
        short = 'g',
        long = "goal",
        value_name = "WIDTH",
        allow_hyphen_values = true
    )]
    goal: Option<String>,
    /// Files to read.
    files: Vec<String>,
}

/// How paragraphs are read and laid out.
#[derive(Clone, Debug)]
struct Opts {
    crown: bool,
    tagged: bool,
    split: bool,
    uniform: bool,
    max_width: usize,
    goal_width: usize,
    /// The prefix without its leading and trailing spaces.
    prefix: Vec<u8>,
    /// Spaces before the prefix in `-p`.
    prefix_lead_space: usize,
    /// The prefix's length with its trailing spaces.
    prefix_full_length: usize,
}

#[derive(Clone, Debug, Default)]
struct Word {
    start: usize,
    len: usize,
    /// Spaces after it (on output).
    space: usize,
    /// Starts with an opening bracket or quote.
    paren: bool,
    /// Ends with punctuation.
    punct: bool,
    /// Ends with `.`, `?` or `!` (before closing brackets or quotes).
    period: bool,
    /// Ends a sentence: a period followed by two spaces or the end of the line.
    fin: bool,
    best_cost: Cost,
    next_break: usize,
    line_length: usize,
}

/// What a line's start holds once its leading space and prefix are read.
struct LineStart {
    /// Column after the prefix and the space after it (or where the prefix failed).
    in_column: usize,
    /// Column the prefix started at.
    next_prefix_indent: usize,
    /// Index of the first byte not read.
    pos: usize,
    /// There is text at `pos` (else the line ends there).
    has_text: bool,
}

/// Where a paragraph is in its reading.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Para {
    /// Between paragraphs.
    None,
    /// Its first line was read: the next line decides the other lines' indent.
    First,
    /// Further lines join while they are indented as `other_indent`.
    Rest,
}

struct Formatter {
    o: Opts,
    /// A tab was seen in the input's spacing: leading space is written with tabs.
    tabs: bool,
    prefix_indent: usize,
    first_indent: usize,
    other_indent: usize,
    last_line_length: usize,
    text: Vec<u8>,
    words: Vec<Word>,
    para: Para,
    out: Vec<u8>,
    out_column: usize,
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

impl Formatter {
    fn new(o: Opts) -> Formatter {
        Formatter {
            o,
            tabs: false,
            prefix_indent: 0,
            first_indent: 0,
            other_indent: 0,
            last_line_length: 0,
            text: Vec::new(),
            words: Vec::new(),
            para: Para::None,
            out: Vec::new(),
            out_column: 0,
        }
    }

    /// Skips blanks from `pos`, advancing `col` (tabs to the next stop).
    fn get_space(&mut self, line: &[u8], pos: &mut usize, col: &mut usize) {
        while let Some(&c) = line.get(*pos) {
            match c {
                b' ' => *col += 1,
                b'\t' => {
                    self.tabs = true;
                    *col = (*col / TAB + 1) * TAB;
                }
                _ => return,
            }
            *pos += 1;
        }
    }

    fn get_prefix(&mut self, line: &[u8]) -> LineStart {
        let mut pos = 0;
        let mut col = 0;
        self.get_space(line, &mut pos, &mut col);
        let next_prefix_indent;
        if self.o.prefix.is_empty() {
            next_prefix_indent = self.o.prefix_lead_space.min(col);
        } else {
            next_prefix_indent = col;
            let prefix = self.o.prefix.clone();
            for &pc in &prefix {
                if line.get(pos) != Some(&pc) {
                    return LineStart {
                        in_column: col,
                        next_prefix_indent,
                        pos,
                        has_text: pos < line.len(),
                    };
                }
                col += 1;
                pos += 1;
            }
            self.get_space(line, &mut pos, &mut col);
        }
        LineStart {
            in_column: col,
            next_prefix_indent,
            pos,
            has_text: pos < line.len(),
        }
    }

    fn same_para(&self, s: &LineStart) -> bool {
        s.next_prefix_indent == self.prefix_indent
            && s.in_column >= s.next_prefix_indent + self.o.prefix_full_length
            && s.has_text
    }

    fn set_other_indent(&mut self, same: bool, in_column: usize) {
        if self.o.split {
            self.other_indent = self.first_indent;
        } else if self.o.crown {
            self.other_indent = if same { in_column } else { self.first_indent };
        } else if self.o.tagged {
            if same && in_column != self.first_indent {
                self.other_indent = in_column;
            } else if self.other_indent == self.first_indent {
                self.other_indent = if self.first_indent == 0 {
                    DEF_INDENT
                } else {
                    0
                };
            }
        } else {
            self.other_indent = self.first_indent;
        }
    }

    /// One input line (without its newline; `eof`: none followed it).
    fn line(&mut self, line: &[u8], eof: bool) {
        let s = self.get_prefix(line);
        if self.para == Para::First {
            let same = self.same_para(&s);
            self.set_other_indent(same, s.in_column);
            let join = if self.o.split {
                false
            } else if self.o.crown {
                same
            } else if self.o.tagged {
                same && s.in_column != self.first_indent
            } else {
                same && s.in_column == self.other_indent
            };
            if join {
                self.para = Para::Rest;
                self.get_line(line, s.pos, s.in_column, eof);
                return;
            }
            self.end_paragraph();
        } else if self.para == Para::Rest {
            if self.same_para(&s) && s.in_column == self.other_indent {
                self.get_line(line, s.pos, s.in_column, eof);
                return;
            }
            self.end_paragraph();
        }
        let blank = !s.has_text
            || s.next_prefix_indent < self.o.prefix_lead_space
            || s.in_column < s.next_prefix_indent + self.o.prefix_full_length;
        if blank {
            self.copy_rest(line, &s, eof);
            if !eof {
                self.out.push(b'\n');
            }
            return;
        }
        self.prefix_indent = s.next_prefix_indent;
        self.first_indent = s.in_column;
        self.last_line_length = 0;
        self.text.clear();
        self.words.clear();
        self.para = Para::First;
        self.get_line(line, s.pos, s.in_column, eof);
    }

    /// The end of the input.
    fn finish(&mut self) {
        if self.para == Para::First {
            self.set_other_indent(false, 0);
        }
        if self.para != Para::None {
            self.end_paragraph();
        }
    }

    /// A line that is not part of a paragraph, copied with its prefix (GNU's
    /// `copy_rest`).
    fn copy_rest(&mut self, line: &[u8], s: &LineStart, eof: bool) {
        self.out_column = 0;
        let has_text = s.has_text;
        if s.in_column > s.next_prefix_indent || has_text {
            self.put_space(s.next_prefix_indent);
            let prefix = self.o.prefix.clone();
            for &b in &prefix {
                if self.out_column == s.in_column {
                    break;
                }
                self.out.push(b);
                self.out_column += 1;
            }
            if has_text {
                self.put_space(s.in_column.saturating_sub(self.out_column));
            }
            if !has_text && eof && s.in_column >= s.next_prefix_indent + self.o.prefix.len() {
                self.out.push(b'\n');
            }
        }
        self.out.extend_from_slice(&line[s.pos..]);
    }

    /// Reads the words of a paragraph line from `pos`.
    fn get_line(&mut self, line: &[u8], mut pos: usize, mut col: usize, eof: bool) {
        while pos < line.len() {
            let start = self.text.len();
            let line_start = pos;
            // The first byte belongs to the word whatever it is.
            loop {
                if self.text.len() == MAX_CHARS {
                    self.set_other_indent(true, col);
                    self.flush_paragraph(Some(start));
                }
                self.text.push(line[pos]);
                pos += 1;
                if pos >= line.len() || is_c_space(line[pos]) {
                    break;
                }
            }
            // `flush_paragraph` may have moved the partial word down.
            let wstart = self.text.len() - (pos - line_start);
            let len = self.text.len() - wstart;
            col += len;
            let mut w = Word {
                start: wstart,
                len,
                ..Word::default()
            };
            check_punctuation(&mut w, &self.text);
            let before = col;
            self.get_space(line, &mut pos, &mut col);
            w.space = col - before;
            let at_end = pos >= line.len();
            let c_eof = at_end && eof;
            w.fin = c_eof || (w.period && (at_end || w.space > 1));
            if at_end || self.o.uniform {
                w.space = if w.fin { 2 } else { 1 };
            }
            self.words.push(w);
            if self.words.len() == MAX_WORDS - 2 {
                self.set_other_indent(true, col);
                self.flush_paragraph(None);
            }
        }
    }

    fn end_paragraph(&mut self) {
        if let Some(last) = self.words.last_mut() {
            last.period = true;
            last.fin = true;
        }
        if !self.words.is_empty() {
            self.fmt_paragraph();
            self.put_paragraph(self.words.len());
        }
        self.para = Para::None;
        self.words.clear();
        self.text.clear();
    }

    /// Chooses the breaks: each word gets the cheapest way to lay out the rest of the
    /// paragraph from it, and the line it starts.
    fn fmt_paragraph(&mut self) {
        let n = self.words.len();
        let max_width = self.o.max_width;
        let goal = self.o.goal_width as Cost;
        // The sentinel at `n`.
        self.words.push(Word {
            len: max_width,
            ..Word::default()
        });
        for start in (0..n).rev() {
            let mut best = MAX_COST;
            let mut len = if start == 0 {
                self.first_indent
            } else {
                self.other_indent
            };
            let mut w = start;
            len += self.words[w].len;
            loop {
                w += 1;
                // Consider breaking before w.
                let mut wcost = self.line_cost(w, len, n, goal);
                wcost = wcost.saturating_add(self.words[w].best_cost);
                if start == 0 && self.last_line_length > 0 {
                    wcost += ragged_cost(len as Cost - self.last_line_length as Cost);
                }
                if wcost < best {
                    best = wcost;
                    self.words[start].next_break = w;
                    self.words[start].line_length = len;
                }
                if w == n {
                    break;
                }
                len += self.words[w - 1].space + self.words[w].len;
                if len >= max_width {
                    break;
                }
            }
            let base = self.base_cost(start);
            self.words[start].best_cost = best.saturating_add(base);
        }
        self.words.pop();
    }

    fn line_cost(&self, next: usize, len: usize, n: usize, goal: Cost) -> Cost {
        if next == n {
            return 0;
        }
        let mut cost = short_cost(goal - len as Cost);
        if self.words[next].next_break != n {
            cost += ragged_cost(len as Cost - self.words[next].line_length as Cost);
        }
        cost
    }

    fn base_cost(&self, this: usize) -> Cost {
        let mut cost = LINE_COST;
        let w = &self.words;
        if this > 0 {
            let prev = &w[this - 1];
            if prev.period {
                if prev.fin {
                    cost -= SENTENCE_BONUS;
                } else {
                    cost += NOBREAK_COST;
                }
            } else if prev.punct {
                cost -= PUNCT_BONUS;
            } else if this > 1 && w[this - 2].fin {
                cost += widow_cost(prev.len as Cost);
            }
        }
        if w[this].paren {
            cost -= PAREN_BONUS;
        } else if w[this].fin {
            cost += orphan_cost(w[this].len as Cost);
        }
        cost
    }

    /// A paragraph grown past its bounds: lays it out, writes the lines up to a good
    /// break near the end, and keeps the rest (with `partial`, the start of a word being
    /// read) as the paragraph's beginning.
    fn flush_paragraph(&mut self, partial: Option<usize>) {
        let n = self.words.len();
        if n == 0 {
            // All one word: write what there is of it.
            let text = std::mem::take(&mut self.text);
            self.out.extend_from_slice(&text);
            return;
        }
        self.fmt_paragraph();
        let mut split_point = n;
        let mut best_break = MAX_COST;
        let mut w = self.words[0].next_break;
        while w != n {
            let nb = self.words[w].next_break;
            let next_cost = if nb == n { 0 } else { self.words[nb].best_cost };
            let d = self.words[w].best_cost - next_cost;
            if d < best_break {
                split_point = w;
                best_break = d;
            }
            if best_break <= MAX_COST - LINE_CREDIT {
                best_break += LINE_CREDIT;
            }
            w = nb;
        }
        self.put_paragraph(split_point);
        let shift = if split_point < n {
            self.words[split_point].start
        } else {
            partial.unwrap_or(self.text.len())
        };
        self.text.drain(..shift);
        self.words.drain(..split_point);
        for w in &mut self.words {
            w.start -= shift;
        }
    }

    fn put_paragraph(&mut self, finish: usize) {
        let n = self.words.len();
        if n == 0 {
            return;
        }
        self.put_line(0, self.first_indent, n);
        let mut w = self.words[0].next_break;
        while w != finish && w < n {
            self.put_line(w, self.other_indent, n);
            w = self.words[w].next_break;
        }
    }

    fn put_line(&mut self, mut w: usize, indent: usize, n: usize) {
        self.out_column = 0;
        self.put_space(self.prefix_indent);
        let prefix = self.o.prefix.clone();
        self.out.extend_from_slice(&prefix);
        self.out_column += prefix.len();
        self.put_space(indent.saturating_sub(self.out_column));
        let endline = self.words[w].next_break.min(n) - 1;
        while w != endline {
            self.put_word(w);
            self.put_space(self.words[w].space);
            w += 1;
        }
        self.put_word(w);
        self.last_line_length = self.out_column;
        self.out.push(b'\n');
    }

    fn put_word(&mut self, w: usize) {
        let Word { start, len, .. } = self.words[w];
        self.out.extend_from_slice(&self.text[start..start + len]);
        self.out_column += len;
    }

    fn put_space(&mut self, space: usize) {
        let target = self.out_column + space;
        if self.tabs {
            let tab_target = target / TAB * TAB;
            if self.out_column + 1 < tab_target {
                while self.out_column < tab_target {
                    self.out.push(b'\t');
                    self.out_column = (self.out_column / TAB + 1) * TAB;
                }
            }
        }
        while self.out_column < target {
            self.out.push(b' ');
            self.out_column += 1;
        }
    }
}

fn check_punctuation(w: &mut Word, text: &[u8]) {
    let word = &text[w.start..w.start + w.len];
    let Some(&first) = word.first() else {
        return;
    };
    w.paren = b"(['`\"".contains(&first);
    let mut fin = word.len() - 1;
    w.punct = word[fin].is_ascii_punctuation();
    while fin > 0 && b")]'\"".contains(&word[fin]) {
        fin -= 1;
    }
    w.period = b".?!".contains(&word[fin]);
}

/// A width operand: a number up to `max`.
fn parse_width(s: &str, max: usize) -> Result<usize, String> {
    match s.parse::<u64>() {
        Ok(n) if n <= max as u64 => Ok(n as usize),
        Ok(_) => Err(format!(
            "invalid width: {}: Numerical result out of range",
            quote(s)
        )),
        Err(e) if matches!(e.kind(), std::num::IntErrorKind::PosOverflow) => Err(format!(
            "invalid width: {}: Numerical result out of range",
            quote(s)
        )),
        Err(_) => Err(format!("invalid width: {}", quote(s))),
    }
}

pub struct Fmt;

#[async_trait]
impl Command for Fmt {
    fn name(&self) -> &'static str {
        "fmt"
    }
    fn summary(&self) -> &'static str {
        "simple optimal text formatter"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        // `fmt -60` is `fmt -w 60` when it comes first.
        let mut args = args;
        if let Some(first) = args.first_mut()
            && let Some(n) = first.strip_prefix('-')
            && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
        {
            *first = format!("-w{n}");
        }
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mut max_width = DEFAULT_WIDTH;
        if let Some(w) = &args.width {
            match parse_width(w, MAX_CHARS / 2) {
                Ok(n) => max_width = n,
                Err(m) => {
                    ctx.warn("fmt", m).await;
                    return Ok(1);
                }
            }
        }
        let goal_width = match &args.goal {
            Some(g) => match parse_width(g, max_width) {
                Ok(n) => {
                    if args.width.is_none() {
                        max_width = n + 10;
                    }
                    n
                }
                Err(m) => {
                    ctx.warn("fmt", m).await;
                    return Ok(1);
                }
            },
            None => max_width * (2 * (100 - 7) + 1) / 200,
        };
        let (prefix, lead, full) = match &args.prefix {
            Some(p) => {
                let lead = p.bytes().take_while(|b| *b == b' ').count();
                let rest = &p.as_bytes()[lead..];
                let full = rest.len();
                let trimmed = rest.len() - rest.iter().rev().take_while(|b| **b == b' ').count();
                (rest[..trimmed].to_vec(), lead, full)
            }
            None => (Vec::new(), 0, 0),
        };
        let opts = Opts {
            crown: args.crown,
            tagged: args.tagged,
            split: args.split,
            uniform: args.uniform,
            max_width,
            goal_width,
            prefix,
            prefix_lead_space: lead,
            prefix_full_length: full,
        };
        let mut status = 0;
        let mut out = BufOut::new(ctx);
        let mut pacer = Pacer::default();
        for file in operands_or_stdin(&args.files) {
            let mut reader = match Reader::open(ctx, &file).await {
                Ok(r) => r,
                Err(e) => {
                    out.flush().await?;
                    ctx.warn(
                        "fmt",
                        format!("cannot open {} for reading: {e}", quote(&file)),
                    )
                    .await;
                    status = 1;
                    continue;
                }
            };
            let mut f = Formatter::new(opts.clone());
            loop {
                let line = match reader.line(MAX_LINE).await? {
                    Ok(Some(l)) => l,
                    Ok(None) => break,
                    Err(e) => {
                        out.flush().await?;
                        ctx.warn("fmt", format!("{}: {e}", quote(&file))).await;
                        status = 1;
                        break;
                    }
                };
                let (body, eof) = match line.strip_suffix(b"\n") {
                    Some(b) => (b, false),
                    None => (&line[..], true),
                };
                f.line(body, eof);
                if !f.out.is_empty() {
                    out.write(&std::mem::take(&mut f.out)).await?;
                }
                pacer.tick(ctx).await?;
            }
            f.finish();
            out.write(&f.out).await?;
        }
        out.flush().await?;
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn fmt(stdin: &str, args: &[&str]) -> String {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(&Fmt, args)
        .await
        .1
    }

    #[tokio::test]
    async fn joins_and_breaks() {
        assert_eq!(fmt("a b\nc\n", &[]).await, "a b c\n");
        assert_eq!(fmt("a\n\n  b\n", &[]).await, "a\n\n  b\n");
        let nums: Vec<String> = (1..=40).map(|i| i.to_string()).collect();
        let out = fmt(&(nums.join(" ") + "\n"), &["-w", "20"]).await;
        assert!(out.lines().all(|l| l.len() < 20), "{out}");
        assert_eq!(out.split_whitespace().count(), 40);
    }

    #[tokio::test]
    async fn sentence_spacing() {
        assert_eq!(
            fmt("One.  Two. three\n", &["-u"]).await,
            "One.  Two. three\n"
        );
        assert_eq!(fmt("One.\nTwo\n", &[]).await, "One.  Two\n");
    }
}

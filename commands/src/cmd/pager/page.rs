//! Paging on a terminal: `less` draws screenfuls on the alternate screen and moves both
//! ways; `more` prints a page at a time into the scrollback under a `--More--` prompt.
//! The text comes from files or standard input, the keys always from the terminal.
//!
//! Text is read only as far as the screen needs (a pager on `yes` shows its first
//! page), kept as lines charged to the session's budget, so going back works.

use std::sync::Arc;

use futures::FutureExt;

use super::super::editor::keys::{Decoder, Key};
use super::super::editor::screen::{self, Frame};
use super::super::util::{MAX_LINE, Reader};
use crate::fs::FsError;
use crate::gnu_regex;
use crate::{Charge, CmdResult, Context, Interrupt, Terminal};

/// The text of one input, read as far as needed.
pub(crate) struct Text {
    /// What to call it (the operand; empty for standard input).
    pub(crate) name: String,
    reader: Reader,
    lines: Vec<Vec<u8>>,
    eof: bool,
    /// Bytes read so far, and the whole size when known (a file), for `more`'s percent.
    read: u64,
    size: Option<u64>,
    charge: Charge,
    /// A read error met on the way (shown, then the text ends there).
    pub(crate) error: Option<FsError>,
}

impl Text {
    pub(crate) fn new(ctx: &Context, name: String, reader: Reader, size: Option<u64>) -> Text {
        Text {
            name,
            reader,
            lines: Vec::new(),
            eof: false,
            read: 0,
            size,
            charge: ctx.budget.empty_charge(),
            error: None,
        }
    }

    /// Reads until there are `want` lines or the input ends.
    async fn fill(&mut self, ctx: &Context, want: usize) -> Result<(), Interrupt> {
        while self.lines.len() < want && !self.eof {
            ctx.checkpoint().await?;
            match self.reader.line(MAX_LINE).await? {
                Ok(Some(mut line)) => {
                    self.read += line.len() as u64;
                    if line.last() == Some(&b'\n') {
                        line.pop();
                    }
                    self.charge.grow(line.len() + 32)?;
                    self.lines.push(line);
                }
                Ok(None) => self.eof = true,
                Err(e) => {
                    self.error = Some(e);
                    self.eof = true;
                }
            }
        }
        Ok(())
    }

    /// Lines known so far.
    fn len(&self) -> usize {
        self.lines.len()
    }
}

/// Screen rows `line` takes at `cols` columns, wrapped.
fn rows_of(line: &[u8], cols: usize) -> usize {
    let w = screen::x_width(line);
    w.div_ceil(cols.max(1)).max(1)
}

/// Reads keys in bursts; `None` when the client has gone.
/// With `term`, a window change ends the wait with no keys (to redraw).
async fn next_keys(
    ctx: &Context,
    raw: &mut dyn crate::RawKeys,
    decoder: &mut Decoder,
    term: Option<&dyn Terminal>,
) -> Result<Option<Vec<Key>>, Interrupt> {
    let resize = async {
        match term {
            Some(t) => super::super::editor::resized(t, t.size()).await,
            None => std::future::pending().await,
        }
    };
    let burst = tokio::select! {
        _ = ctx.cancel.cancelled() => return Err(Interrupt::Cancelled),
        b = raw.read() => b,
        _ = resize => return Ok(Some(Vec::new())),
    };
    let Some(burst) = burst else { return Ok(None) };
    let mut keys = Vec::new();
    decoder.feed(&burst, &mut keys);
    while let Some(Some(more)) = raw.read().now_or_never() {
        decoder.feed(&more, &mut keys);
        if keys.len() > 4096 {
            break;
        }
    }
    Ok(Some(keys))
}

/// What a typed `/pattern` line is doing.
struct Prompt {
    input: Vec<u8>,
}

/// `less` over `texts`, one after the other (`:n` goes to the next); `q` quits.
pub(crate) async fn less(ctx: &Context, term: Arc<dyn Terminal>, texts: Vec<Text>) -> CmdResult {
    let mut raw = term.raw();
    ctx.out(screen::ENTER).await?;
    let result = less_loop(ctx, term.as_ref(), raw.as_mut(), texts).await;
    let left = ctx.out(screen::LEAVE).await;
    let st = result?;
    left?;
    Ok(st)
}

async fn less_loop(
    ctx: &Context,
    term: &dyn Terminal,
    raw: &mut dyn crate::RawKeys,
    mut texts: Vec<Text>,
) -> CmdResult {
    let mut decoder = Decoder::new();
    let count = texts.len();
    let mut index = 0;
    let mut top = 0usize;
    let mut prompt: Option<Prompt> = None;
    let mut colon = false;
    let mut message: Option<String> = None;
    // The last `/` pattern: an extended regular expression, as less reads one.
    let mut search: Option<gnu_regex::Regex> = None;
    while index < texts.len() {
        let size = term.size();
        let (rows, cols) = screen::dims(size);
        let height = rows.saturating_sub(1).max(1);
        let text = &mut texts[index];
        text.fill(ctx, top + height + 1).await?;
        // Draw.
        let mut f = Frame::new(size);
        let mut row = 0;
        let mut line = top;
        while row < height {
            if line < text.len() {
                let l = &text.lines[line];
                let parts = rows_of(l, cols);
                for p in 0..parts {
                    if row >= height {
                        break;
                    }
                    f.goto_row(row);
                    f.bytes_from(l, p * cols, cols);
                    f.end_row();
                    row += 1;
                }
                line += 1;
            } else {
                f.goto_row(row);
                f.text("~", cols);
                f.end_row();
                row += 1;
            }
        }
        let shown_to = line;
        let at_end = text.eof && shown_to >= text.len();
        f.goto_row(rows - 1);
        let cursor = match (&prompt, colon) {
            (Some(p), _) => {
                let used = f.text("/", cols);
                Some(used + f.bytes_from(&p.input, 0, cols - used))
            }
            (None, true) => Some(f.text(":", cols)),
            (None, false) => {
                f.reverse(true);
                let msg = match &message {
                    Some(m) => m.clone(),
                    None if at_end && index + 1 < count => {
                        format!("(END) - Next: {}", texts[index + 1].name)
                    }
                    None if at_end => "(END)".to_string(),
                    None if top == 0 && !text.name.is_empty() => text.name.clone(),
                    None => String::new(),
                };
                let used = if msg.is_empty() {
                    f.reverse(false);
                    f.text(":", cols)
                } else {
                    f.text(&msg, cols)
                };
                f.reverse(false);
                Some(used)
            }
        };
        f.end_row();
        ctx.out(f.finish(rows - 1, cursor.unwrap_or(0))).await?;
        message = None;

        let Some(keys) = next_keys(ctx, raw, &mut decoder, Some(term)).await? else {
            return Ok(0);
        };
        for key in keys {
            let text = &mut texts[index];
            if let Some(p) = &mut prompt {
                match key {
                    Key::Text(t) => p.input.extend_from_slice(&t),
                    Key::Backspace if p.input.is_empty() => prompt = None,
                    Key::Backspace => {
                        p.input.pop();
                    }
                    Key::Enter => {
                        let pat = std::mem::take(&mut p.input);
                        prompt = None;
                        if !pat.is_empty() {
                            let text = String::from_utf8_lossy(&pat);
                            match gnu_regex::compile(
                                &text,
                                gnu_regex::Dialect::Extended,
                                gnu_regex::Flags::default(),
                            ) {
                                Ok(re) => search = Some(re),
                                Err(e) => {
                                    message = Some(e.msg);
                                    continue;
                                }
                            }
                        }
                        if let Some(pat) = &search {
                            match find(ctx, text, pat, top + 1, true).await? {
                                Some(l) => top = l,
                                None => message = Some("Pattern not found".into()),
                            }
                        }
                    }
                    Key::Esc | Key::Ctrl(b'c') => prompt = None,
                    _ => {}
                }
                continue;
            }
            if colon && !matches!(key, Key::Text(_)) {
                colon = false;
                continue;
            }
            let page = height;
            match key {
                Key::Text(t) => {
                    for (at, &c) in t.iter().enumerate() {
                        match c {
                            b'q' | b'Q' => return Ok(0),
                            b'/' => {
                                // The rest of the run is the pattern being typed.
                                let input = t[at + 1..].to_vec();
                                prompt = Some(Prompt { input });
                                break;
                            }
                            b':' => {
                                colon = true;
                                continue;
                            }
                            b'n' if colon => {
                                colon = false;
                                if index + 1 < count {
                                    index += 1;
                                    top = 0;
                                    break;
                                }
                                message = Some("No next file".into());
                            }
                            b'p' if colon => {
                                colon = false;
                                if index > 0 {
                                    index -= 1;
                                    top = 0;
                                    break;
                                }
                                message = Some("No previous file".into());
                            }
                            _ if colon => {
                                colon = false;
                                if c == b'q' || c == b'Q' {
                                    return Ok(0);
                                }
                            }
                            b' ' | b'f' | b'z' => top += page,
                            b'b' | b'w' => top = top.saturating_sub(page),
                            b'j' | b'e' => top += 1,
                            b'k' | b'y' => top = top.saturating_sub(1),
                            b'd' => top += page / 2,
                            b'u' => top = top.saturating_sub(page / 2),
                            b'g' | b'<' => top = 0,
                            b'G' | b'>' => {
                                fill_all(ctx, text).await?;
                                top = text.len().saturating_sub(page);
                            }
                            b'n' | b'N' => match &search {
                                Some(pat) => {
                                    let fwd = c == b'n';
                                    let from = if fwd { top + 1 } else { top };
                                    match find(ctx, text, pat, from, fwd).await? {
                                        Some(l) => top = l,
                                        None => message = Some("Pattern not found".into()),
                                    }
                                }
                                None => message = Some("No previous regular expression".into()),
                            },
                            _ => {}
                        }
                    }
                }
                Key::PageDown | Key::Ctrl(b'v' | b'f') => top += page,
                Key::PageUp | Key::Ctrl(b'b') => top = top.saturating_sub(page),
                Key::Enter | Key::Down | Key::Ctrl(b'n' | b'e' | b'j') => top += 1,
                Key::Up | Key::Ctrl(b'p' | b'y' | b'k') => top = top.saturating_sub(1),
                Key::Ctrl(b'd') => top += page / 2,
                Key::Ctrl(b'u') => top = top.saturating_sub(page / 2),
                Key::Home => top = 0,
                Key::End => {
                    fill_all(ctx, text).await?;
                    top = text.len().saturating_sub(page);
                }
                _ => {}
            }
            // Never past the last screenful.
            text.fill(ctx, top + page).await?;
            if text.eof {
                top = top.min(text.len().saturating_sub(page));
            }
        }
    }
    Ok(0)
}

/// Reads the whole input (for `G`).
async fn fill_all(ctx: &Context, text: &mut Text) -> Result<(), Interrupt> {
    let mut want = text.len();
    while !text.eof {
        want += 4096;
        text.fill(ctx, want).await?;
    }
    Ok(())
}

/// The first line from `from` on (forward) or before `from` (backward) that matches
/// `re` (a pattern too complex to run matches nothing).
async fn find(
    ctx: &Context,
    text: &mut Text,
    re: &gnu_regex::Regex,
    from: usize,
    forward: bool,
) -> Result<Option<usize>, Interrupt> {
    let hit = |line: &[u8]| re.is_match(line).unwrap_or(false);
    if forward {
        let mut i = from;
        loop {
            text.fill(ctx, i + 1).await?;
            if i >= text.len() {
                return Ok(None);
            }
            if hit(&text.lines[i]) {
                return Ok(Some(i));
            }
            i += 1;
            if i.is_multiple_of(1024) {
                ctx.checkpoint().await?;
            }
        }
    }
    let mut i = from.min(text.len());
    while i > 0 {
        i -= 1;
        if hit(&text.lines[i]) {
            return Ok(Some(i));
        }
        if i.is_multiple_of(1024) {
            ctx.checkpoint().await?;
        }
    }
    Ok(None)
}

/// `more` over `texts`: each page printed below the last, `--More--(NN%)` between pages;
/// at the end of the last input it exits. With several inputs each starts with
/// util-linux's `::::::::::::::` header.
pub(crate) async fn more(
    ctx: &Context,
    term: Arc<dyn Terminal>,
    mut texts: Vec<Text>,
) -> CmdResult {
    let (rows, cols) = screen::dims(term.size());
    let height = rows.saturating_sub(1).max(1);
    if texts.len() == 1 {
        // Text that fits in one screen is printed as is, without a prompt.
        let t = &mut texts[0];
        t.fill(ctx, height + 1).await?;
        let used: usize = t.lines.iter().map(|l| rows_of(l, cols)).sum();
        if t.eof && used <= height {
            // Raw or not, the terminal gets a carriage return with each newline.
            for l in &t.lines {
                ctx.out(l).await?;
                ctx.out(b"\r\n").await?;
            }
            return Ok(0);
        }
    } else {
        for t in texts.iter_mut() {
            let name = std::mem::take(&mut t.name);
            for h in ["::::::::::::::", name.as_str(), "::::::::::::::"] {
                t.lines.push(h.as_bytes().to_vec());
            }
            t.name = name;
        }
    }
    let mut raw = term.raw();
    let mut decoder = Decoder::new();
    let mut queue: std::collections::VecDeque<Key> = std::collections::VecDeque::new();
    // Rows still to print before the next prompt: a screenful to start with.
    let mut budget_rows = height;
    for text in texts.iter_mut() {
        let mut next = 0usize;
        loop {
            let (_, cols) = screen::dims(term.size());
            while budget_rows > 0 {
                text.fill(ctx, next + 1).await?;
                if next >= text.len() {
                    break;
                }
                let l = &text.lines[next];
                budget_rows = budget_rows.saturating_sub(rows_of(l, cols));
                ctx.out(l).await?;
                ctx.out(b"\r\n").await?;
                next += 1;
            }
            text.fill(ctx, next + 1).await?;
            if next >= text.len() {
                // On to the next input with what is left of the page.
                break;
            }
            let pct = text
                .size
                .filter(|s| *s > 0)
                .map(|s| format!("({}%)", shown_bytes(text, next) * 100 / s));
            let prompt = format!("--More--{}", pct.unwrap_or_default());
            ctx.out(format!("\x1b[7m{prompt}\x1b[0m")).await?;
            // One key per prompt, as typed: keys that came together wait their turn.
            if queue.is_empty() {
                let Some(keys) = next_keys(ctx, raw.as_mut(), &mut decoder, None).await? else {
                    return Ok(0);
                };
                for key in keys {
                    match key {
                        Key::Text(t) => queue.extend(t.iter().map(|c| Key::Text(vec![*c]))),
                        k => queue.push_back(k),
                    }
                }
            }
            ctx.out(b"\r\x1b[K").await?;
            let (rows, _) = screen::dims(term.size());
            let page = rows.saturating_sub(1).max(1);
            match queue.pop_front() {
                Some(Key::Text(t)) => match t.first().copied().unwrap_or(0) {
                    b'q' | b'Q' => return Ok(0),
                    b' ' | b'f' | b'z' => budget_rows += page,
                    b'd' => budget_rows += page / 2,
                    b'b' => {
                        next = next.saturating_sub(page * 2);
                        ctx.out(b"\r\n...back 1 page\r\n").await?;
                        budget_rows += page;
                    }
                    b'j' | b's' => budget_rows += 1,
                    _ => {}
                },
                Some(Key::Enter | Key::Down) => budget_rows += 1,
                Some(Key::PageDown) => budget_rows += page,
                Some(Key::Ctrl(b'c')) => return Ok(0),
                _ => {}
            }
        }
    }
    Ok(0)
}

/// Bytes of `text` up to line `next` (what has been shown).
fn shown_bytes(text: &Text, next: usize) -> u64 {
    if next >= text.len() {
        return text.read;
    }
    text.lines[..next].iter().map(|l| l.len() as u64 + 1).sum()
}

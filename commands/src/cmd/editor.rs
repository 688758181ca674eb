//! `nano`, `vi` and `vim`: a small full-screen editor over the session's filesystem, for
//! a person on a PTY.
//!
//! - [`buffer`]: the text (lines of bytes, any bytes), the cursor, what it costs.
//! - [`keys`]: raw terminal bytes to keys (escape sequences decoded, unknown ones
//!   dropped, typed or pasted text in runs).
//! - [`screen`]: one frame of ANSI output.
//! - [`nano`] and [`vi`]: each editor's keys, prompts and screen, as pure state machines
//!   ([`Mode`]): a key in, an [`Effect`] out, a frame on demand.
//! - this file: the commands, reading the file, the loop that feeds keys to a mode and
//!   draws, and writing the file through the filesystem port.
//!
//! Without a terminal (an exec channel, a pipe) each says what its namesake says there
//! and fails at once instead of waiting for keys that will never come.

use std::sync::Arc;

use async_trait::async_trait;
use futures::FutureExt;

use crate::fs::{FsError, READ_CHUNK, WriteMode};
use crate::{CmdResult, Command, Context, Interrupt, OutOfMemory, TermSize, Terminal};

pub(crate) mod buffer;
pub(crate) mod keys;
mod nano;
pub(crate) mod screen;
#[cfg(test)]
pub(crate) mod tests;
mod vi;

use buffer::Buffer;
use keys::{Decoder, Key};

/// Bytes of keystrokes taken in before the screen is drawn again: a paste of megabytes
/// is inserted in steps of this size, each one insertion, with a frame between steps.
const PASTE_STEP: usize = 1024 * 1024;

/// Largest file an editor opens: the whole text is held in memory (charged to the
/// session), and past this editing is no longer interactive; a bigger file is refused
/// with `File too large`.
const MAX_FILE: u64 = 64 * 1024 * 1024;

/// What a key asks the loop to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    None,
    /// Write the buffer to `path` (as the user typed it), then quit if `then_quit`.
    Save {
        path: String,
        then_quit: bool,
    },
    /// Leave the editor.
    Quit,
}

/// One editor's behaviour: keys in, effects out, frames on demand. Pure: no I/O.
pub(crate) trait Mode: Send + Sync {
    fn key(&mut self, key: Key) -> Effect;
    /// Whether text and Enter are inserted as typed right now, so a run of them (a
    /// paste) may be given to [`Mode::paste`] at once.
    fn inserting(&self) -> bool;
    /// Inserts text (newlines included) at the cursor as one change.
    fn paste(&mut self, text: &[u8]);
    /// What writing the file gave: lines and bytes written, or the error.
    fn saved(&mut self, path: &str, result: Result<(usize, usize), FsError>);
    /// The frame for a terminal of `size`.
    fn render(&mut self, size: TermSize) -> Vec<u8>;
    fn buffer(&self) -> &Buffer;
    /// Whether every line ends with a newline in the file (vi), or lines are joined by
    /// newlines and the last one is the end (nano, whose last line is empty).
    fn newline_per_line(&self) -> bool;
}

/// What reading a file for editing found.
pub(crate) enum Opened {
    Text(Buffer),
    /// The file does not exist: an empty buffer that will create it.
    New(Buffer),
    /// A directory, or a file that cannot be read: an empty buffer and the reason.
    Unreadable(Buffer, FsError),
}

/// Reads `name` for editing. Only running out of the session's memory fails.
pub(crate) async fn open(
    ctx: &Context,
    name: Option<&str>,
    drop_final_newline: bool,
) -> Result<Opened, OutOfMemory> {
    let empty = || Buffer::from_bytes(b"", &ctx.budget, drop_final_newline);
    let Some(name) = name else {
        return Ok(Opened::New(empty()?));
    };
    let path = ctx.path(name);
    let meta = match ctx.fs.stat(&path).await {
        Ok(m) => m,
        Err(FsError::NotFound) => return Ok(Opened::New(empty()?)),
        Err(e) => return Ok(Opened::Unreadable(empty()?, e)),
    };
    if meta.is_dir() {
        return Ok(Opened::Unreadable(empty()?, FsError::IsADirectory));
    }
    let mut data = Vec::new();
    let mut charge = ctx.budget.empty_charge();
    let mut off = 0u64;
    loop {
        let chunk = match ctx.fs.read_at(&path, off, READ_CHUNK).await {
            Ok(c) => c,
            Err(e) => return Ok(Opened::Unreadable(empty()?, e)),
        };
        if chunk.is_empty() {
            break;
        }
        off += chunk.len() as u64;
        if off > MAX_FILE {
            return Ok(Opened::Unreadable(empty()?, FsError::TooLarge));
        }
        charge.grow(chunk.len())?;
        data.extend_from_slice(&chunk);
    }
    let buf = Buffer::from_bytes(&data, &ctx.budget, drop_final_newline)?;
    Ok(Opened::Text(buf))
}

/// Writes the buffer to `name` through the filesystem port: lines and bytes written.
///
/// The text goes to a scratch file beside the target, which then replaces it (keeping
/// its mode; through a symlink, the file it names): a write that fails half way (the
/// quota, a read-only mount) leaves the old file as it was.
async fn save(ctx: &Context, mode: &dyn Mode, name: &str) -> Result<(usize, usize), FsError> {
    let path = ctx.path(name);
    let target = ctx.fs.canonicalize(&path).await.unwrap_or(path);
    let old_mode = match ctx.fs.stat(&target).await {
        Ok(m) if m.is_dir() => return Err(FsError::IsADirectory),
        Ok(m) => Some(m.mode),
        Err(_) => None,
    };
    let (dir, base) = target.rsplit_once('/').unwrap_or(("", target.as_str()));
    let scratch = format!("{dir}/.{base}.forkbox-save");
    let result = write_to(ctx, mode, &scratch).await;
    let result = match result {
        Ok(done) => {
            if let Some(m) = old_mode {
                let _ = ctx.fs.chmod(&scratch, m).await;
            }
            ctx.fs.rename(&scratch, &target).await.map(|_| done)
        }
        Err(e) => Err(e),
    };
    if result.is_err() {
        let _ = ctx.fs.unlink(&scratch).await;
    }
    result
}

/// Writes the buffer's text to `path`, in chunks.
async fn write_to(ctx: &Context, mode: &dyn Mode, path: &str) -> Result<(usize, usize), FsError> {
    let buf = mode.buffer();
    let per_line = mode.newline_per_line();
    let mut file = ctx.fs.open_write(path, WriteMode::Truncate).await?;
    let mut chunk: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut written = 0usize;
    let lines = buf.lines();
    let empty = buf.is_empty();
    for (i, line) in lines.iter().enumerate() {
        let last = i + 1 == lines.len();
        if !(per_line && empty) {
            chunk.extend_from_slice(line);
            if per_line || !last {
                chunk.push(b'\n');
            }
        }
        if chunk.len() >= READ_CHUNK || last {
            if let Err(e) = file.write(&chunk).await {
                let _ = file.close().await;
                return Err(e);
            }
            written += chunk.len();
            chunk.clear();
            if ctx.cancel.is_cancelled() {
                let _ = file.close().await;
                return Err(FsError::Io);
            }
        }
    }
    file.close().await?;
    let count = if per_line {
        if empty { 0 } else { lines.len() }
    } else {
        lines.len() - 1
    };
    Ok((count, written))
}

/// Runs `mode` on the terminal until it quits: draws, reads keys, carries out effects.
pub(crate) async fn run_screen(
    ctx: &Context,
    term: &Arc<dyn Terminal>,
    mode: &mut dyn Mode,
) -> CmdResult {
    let mut keys = term.raw();
    ctx.out(screen::ENTER).await?;
    let result = drive(ctx, term.as_ref(), keys.as_mut(), mode).await;
    let left = ctx.out(screen::LEAVE).await;
    let status = result?;
    left?;
    Ok(status)
}

async fn drive(
    ctx: &Context,
    term: &dyn Terminal,
    raw: &mut dyn crate::RawKeys,
    mode: &mut dyn Mode,
) -> CmdResult {
    let mut decoder = Decoder::new();
    let mut keys: Vec<Key> = Vec::new();
    let mut gone = false;
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let size = term.size();
        ctx.out(mode.render(size)).await?;
        if gone {
            // The client went away: nothing more will come.
            return Ok(1);
        }
        let burst = tokio::select! {
            _ = ctx.cancel.cancelled() => return Err(Interrupt::Cancelled),
            b = raw.read() => b,
            // A window change redraws at once, keys or not.
            _ = resized(term, size) => continue,
        };
        let Some(burst) = burst else { return Ok(1) };
        keys.clear();
        decoder.feed(&burst, &mut keys);
        // A paste arrives as many bursts at once: take what is already there.
        let mut taken = burst.len();
        while taken < PASTE_STEP {
            match raw.read().now_or_never() {
                Some(Some(more)) => {
                    taken += more.len();
                    decoder.feed(&more, &mut keys);
                }
                Some(None) => {
                    gone = true;
                    break;
                }
                None => break,
            }
        }
        // More of a paste is waiting: the text after its last newline is held for the
        // next step, so the steps a paste is cut into never show in the text.
        let more_coming = taken >= PASTE_STEP && !gone;
        let mut pending = std::mem::take(&mut keys).into_iter().peekable();
        let mut since = 0u32;
        while let Some(key) = pending.next() {
            since += 1;
            if since >= crate::cmd::util::PACE_EVERY {
                since = 0;
                ctx.checkpoint().await?;
            }
            let is_text = matches!(key, Key::Text(_) | Key::Enter);
            if !(carry.is_empty() || is_text && mode.inserting()) {
                mode.paste(&std::mem::take(&mut carry));
            }
            if is_text && mode.inserting() {
                let mut text = std::mem::take(&mut carry);
                let mut next = Some(key);
                while let Some(k) = next {
                    match k {
                        Key::Text(t) => text.extend_from_slice(&t),
                        _ => text.push(b'\n'),
                    }
                    next = pending.next_if(|k| matches!(k, Key::Text(_) | Key::Enter));
                }
                if more_coming
                    && pending.peek().is_none()
                    && let Some(nl) = memchr::memrchr(b'\n', &text)
                {
                    carry = text.split_off(nl + 1);
                }
                mode.paste(&text);
                continue;
            }
            match mode.key(key) {
                Effect::None => {}
                Effect::Quit => return Ok(0),
                Effect::Save { path, then_quit } => {
                    let result = save(ctx, &*mode, &path).await;
                    let ok = result.is_ok();
                    mode.saved(&path, result);
                    if ok && then_quit {
                        return Ok(0);
                    }
                }
            }
        }
        if !more_coming && !carry.is_empty() {
            mode.paste(&std::mem::take(&mut carry));
        }
    }
}

/// How often a full-screen program looks at the window's size while it waits for a
/// key: the terminal has no resize event to wait on, and a quarter second is quick to
/// the eye and nothing to the CPU.
pub(crate) const RESIZE_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// Returns once the window is no longer `size` (never, if it keeps it). Used beside a
/// key read in `select!`: `RawKeys::read` is a channel receive, which loses nothing
/// when dropped.
pub(crate) async fn resized(term: &dyn Terminal, size: TermSize) {
    loop {
        tokio::time::sleep(RESIZE_POLL).await;
        if term.size() != size {
            return;
        }
    }
}

/// The file operand of an editor's command line: the first argument that is no option
/// (`+N` line numbers and options are accepted and ignored).
fn file_operand(args: &[String]) -> Option<String> {
    let mut only = false;
    for a in args {
        if only || !a.starts_with('-') && !a.starts_with('+') || a == "-" {
            return Some(a.clone());
        }
        if a == "--" {
            only = true;
        }
    }
    None
}

/// Reads the file for editing, or says why not: a file too big to edit is refused
/// before the screen is taken (an empty buffer could be saved over it).
async fn open_or_refuse(
    ctx: &Context,
    tool: &str,
    name: Option<&str>,
    drop_final_newline: bool,
) -> Result<Option<Opened>, Interrupt> {
    match open(ctx, name, drop_final_newline).await? {
        Opened::Unreadable(_, FsError::TooLarge) => {
            let shown = name.unwrap_or_default();
            ctx.warn(tool, format!("{shown}: {}", FsError::TooLarge))
                .await;
            Ok(None)
        }
        opened => Ok(Some(opened)),
    }
}

pub struct Nano;
pub struct Vi;
pub struct Vim;

#[async_trait]
impl Command for Nano {
    fn name(&self) -> &'static str {
        "nano"
    }
    fn summary(&self) -> &'static str {
        "small full-screen text editor (needs a terminal)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        if args.iter().any(|a| a == "--help" || a == "-h") {
            ctx.out(NANO_HELP).await?;
            return Ok(0);
        }
        let Some(term) = ctx.terminal.clone() else {
            // What nano says when its input is not a terminal.
            ctx.err("Too many errors from stdin\n").await;
            return Ok(1);
        };
        let name = file_operand(&args);
        let Some(opened) = open_or_refuse(ctx, "nano", name.as_deref(), false).await? else {
            return Ok(1);
        };
        let mut mode = nano::Nano::new(opened, name);
        run_screen(ctx, &term, &mut mode).await
    }
}

const NANO_HELP: &str = "Usage: nano [OPTIONS] [[+LINE[,COLUMN]] FILE]...\n\n\
A small full-screen editor (forkbox's own, with nano's keys):\n\
  ^G help        ^O write out   ^W search      ^K cut line    ^U paste\n\
  ^X exit        ^C position    ^A/^E line start/end   ^Y/^V page up/down\n";

const VI_HELP: &str = "Usage: vi [arguments] [file]\n\n\
A small full-screen editor (forkbox's own, with vi's keys):\n\
  normal mode: h j k l 0 $ w b gg G  x dd yy p P  i a o O A I  /pat n N  u\n\
  commands:    :w :q :q! :wq :x :N  ZZ\n";

/// `vi` and `vim` alike.
async fn run_vi(ctx: &Context, args: Vec<String>) -> CmdResult {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        ctx.out(VI_HELP).await?;
        return Ok(0);
    }
    let Some(term) = ctx.terminal.clone() else {
        // What Vim says when neither side is a terminal; it then finds no keys.
        ctx.err(
            "Vim: Warning: Output is not to a terminal\n\
             Vim: Warning: Input is not from a terminal\n\
             Vim: Error reading input, exiting...\n",
        )
        .await;
        return Ok(1);
    };
    let name = file_operand(&args);
    let Some(opened) = open_or_refuse(ctx, "vi", name.as_deref(), true).await? else {
        return Ok(1);
    };
    let mut mode = vi::Vi::new(opened, name);
    run_screen(ctx, &term, &mut mode).await
}

#[async_trait]
impl Command for Vi {
    fn name(&self) -> &'static str {
        "vi"
    }
    fn summary(&self) -> &'static str {
        "vi-style full-screen text editor (needs a terminal)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        run_vi(ctx, args).await
    }
}

#[async_trait]
impl Command for Vim {
    fn name(&self) -> &'static str {
        "vim"
    }
    fn summary(&self) -> &'static str {
        "vi-style full-screen text editor (needs a terminal)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        run_vi(ctx, args).await
    }
}

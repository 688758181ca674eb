//! The editors driven end to end: keystroke bytes in through a fake terminal, the
//! screen rendered into a virtual terminal (`vt100`), and the files left behind.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on a broken harness"
)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use super::keys::Decoder;
use super::{Effect, Mode, Opened, keys::Key, nano, vi};
use crate::fs::{FileSystem, WriteMode};
use crate::io::{Input, pipe};
use crate::testing::{HARNESS_OUTPUT_LIMIT, MemFs, QuotaFs, TestLauncher};
use crate::{Command, Context, RawKeys, Status, TermSize, Terminal, exit_status};

/// A terminal of a fixed size whose keystrokes are a script of bursts; once the script
/// is spent, the client has gone.
pub(crate) struct FakeTerm {
    pub(crate) size: Mutex<TermSize>,
    bursts: Mutex<VecDeque<Bytes>>,
    /// When set, a spent script waits for this before the client goes.
    hold: Option<Arc<tokio::sync::Notify>>,
}

impl FakeTerm {
    pub(crate) fn new(rows: u16, cols: u16, bursts: Vec<Vec<u8>>) -> Arc<FakeTerm> {
        Arc::new(FakeTerm {
            size: Mutex::new(TermSize { cols, rows }),
            bursts: Mutex::new(bursts.into_iter().map(Bytes::from).collect()),
            hold: None,
        })
    }
}

struct FakeKeys(Arc<FakeTerm>);

#[async_trait]
impl RawKeys for FakeKeys {
    async fn read(&mut self) -> Option<Bytes> {
        let next = self.0.bursts.lock().unwrap().pop_front();
        if next.is_none()
            && let Some(hold) = &self.0.hold
        {
            hold.notified().await;
        }
        next
    }
}

impl Terminal for Arc<FakeTerm> {
    fn size(&self) -> TermSize {
        *self.size.lock().unwrap()
    }
    fn raw(&self) -> Box<dyn RawKeys> {
        Box::new(FakeKeys(self.clone()))
    }
}

/// Runs `cmd args` on a fake terminal of `rows`×`cols` typing `bursts`; gives the status,
/// the screen as last drawn (before the alternate screen was left), and stderr.
pub(crate) async fn on_term(
    cmd: &dyn Command,
    args: &[&str],
    fs: Arc<dyn FileSystem>,
    stdin: &[u8],
    size: (u16, u16),
    bursts: Vec<Vec<u8>>,
) -> (Status, vt100::Parser, String) {
    let term: Arc<dyn Terminal> = Arc::new(FakeTerm::new(size.0, size.1, bursts));
    let (out_w, out_r) = pipe();
    let (err_w, err_r) = pipe();
    let ctx = Context {
        stdin: Input::from_bytes(stdin.to_vec()),
        stdout: out_w,
        stderr: err_w,
        env: BTreeMap::new(),
        env_last: Vec::new(),
        cwd: "/".into(),
        fs,
        cancel: CancellationToken::new(),
        tty: Some(TermSize {
            cols: size.1,
            rows: size.0,
        }),
        terminal: Some(term),
        launcher: TestLauncher::new(),
        budget: crate::Budget::default(),
    };
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let run = async move {
        let r = cmd.run(&ctx, args).await;
        let st = exit_status(cmd.name(), r, &ctx.stderr).await;
        drop(ctx);
        st
    };
    let drain = |i: Input| async move { i.read_to_end(HARNESS_OUTPUT_LIMIT).await.unwrap() };
    let (st, out, err) = tokio::join!(run, drain(out_r), drain(err_r));
    let mut screen = vt_parser(size.0, size.1);
    let leave = super::screen::LEAVE;
    let end = out
        .windows(leave.len())
        .rposition(|w| w == leave)
        .unwrap_or(out.len());
    screen.process(&out[..end]);
    (st, screen, String::from_utf8_lossy(&err).into_owned())
}

/// A virtual terminal of `rows`×`cols` (at least 1×1).
pub(crate) fn vt_parser(rows: u16, cols: u16) -> vt100::Parser {
    let nz = |n: u16| std::num::NonZeroU16::new(n.max(1)).unwrap();
    vt100::Parser::new(nz(rows), nz(cols), 0)
}

/// The rows of a screen, trailing blanks trimmed.
pub(crate) fn rows(p: &vt100::Parser) -> Vec<String> {
    let (_, cols) = p.screen().size();
    p.screen()
        .rows(0, cols.get())
        .map(|r| r.trim_end().to_string())
        .collect()
}

/// Feeds key bytes to a mode as the loop does, collecting the effects (saves are not
/// carried out).
fn feed(mode: &mut dyn Mode, bytes: &[u8]) -> Vec<Effect> {
    let mut keys = Vec::new();
    Decoder::new().feed(bytes, &mut keys);
    let mut effects = Vec::new();
    for k in keys {
        if mode.inserting() && matches!(k, Key::Text(_) | Key::Enter) {
            match k {
                Key::Text(t) => mode.paste(&t),
                _ => mode.paste(b"\n"),
            }
            continue;
        }
        match mode.key(k) {
            Effect::None => {}
            e => effects.push(e),
        }
    }
    effects
}

fn draw(mode: &mut dyn Mode, rows: u16, cols: u16) -> vt100::Parser {
    let mut p = vt_parser(rows, cols);
    p.process(&mode.render(TermSize { cols, rows }));
    p
}

fn text_of(s: &str) -> super::Buffer {
    super::Buffer::from_bytes(s.as_bytes(), &crate::Budget::default(), false).unwrap()
}

/// A buffer as vi reads a file (a final newline ends the last line).
fn vi_text(s: &str) -> super::Buffer {
    super::Buffer::from_bytes(s.as_bytes(), &crate::Budget::default(), true).unwrap()
}

async fn put(fs: &Arc<MemFs>, path: &str, data: &[u8]) {
    let mut h = fs.open_write(path, WriteMode::Truncate).await.unwrap();
    h.write(data).await.unwrap();
    h.close().await.unwrap();
}

// ---- nano ----

#[tokio::test]
async fn nano_types_writes_out_and_exits() {
    let fs = MemFs::new();
    let (st, screen, err) = on_term(
        &super::Nano,
        &["notes.txt"],
        fs.clone(),
        b"",
        (12, 60),
        vec![
            b"hello".to_vec(),
            b"\r".to_vec(),
            "wörld".as_bytes().to_vec(),
            b"\x0f".to_vec(),
            b"\r".to_vec(),
        ],
    )
    .await;
    // The script ends before ^X: the client left with the editor still open.
    assert_eq!((st, err.as_str()), (1, ""));
    assert_eq!(fs.text("/notes.txt").unwrap(), "hello\nwörld\n");
    let r = rows(&screen);
    assert!(r[0].contains("notes.txt"), "{r:?}");
    assert!(r[9].contains("[ Wrote 2 lines ]"), "{r:?}");
    assert!(
        r[10].contains("^G Help") && r[11].contains("^X Exit"),
        "{r:?}"
    );
    assert_eq!(screen.screen().cursor_position(), (2, 5));
    // Unmodified now: ^X leaves at once, with status 0.
    let (st, _, _) = on_term(
        &super::Nano,
        &["notes.txt"],
        fs.clone(),
        b"",
        (12, 60),
        vec![b"\x18".to_vec()],
    )
    .await;
    assert_eq!(st, 0);
}

#[tokio::test]
async fn nano_asks_before_discarding_changes() {
    let fs = MemFs::with_files(&[("/f", "one\n")]);
    // ^X on a modified buffer asks; the client leaves while it asks.
    let (st, screen, _) = on_term(
        &super::Nano,
        &["f"],
        fs.clone(),
        b"",
        (10, 80),
        vec![b"X".to_vec(), b"\x18".to_vec()],
    )
    .await;
    assert_eq!(st, 1);
    let r = rows(&screen);
    assert!(r[7].starts_with("Save modified buffer?"), "{r:?}");
    assert!(r[8].contains("Y Yes") && r[9].contains("N No"), "{r:?}");
    assert!(r[0].contains("Modified"), "{r:?}");
    // N discards; Y writes under the name offered.
    let (st, _, _) = on_term(
        &super::Nano,
        &["f"],
        fs.clone(),
        b"",
        (10, 80),
        vec![b"X\x18n".to_vec()],
    )
    .await;
    assert_eq!((st, fs.text("/f").unwrap().as_str()), (0, "one\n"));
    let (st, _, _) = on_term(
        &super::Nano,
        &["f"],
        fs.clone(),
        b"",
        (10, 80),
        vec![b"X\x18y\r".to_vec()],
    )
    .await;
    assert_eq!((st, fs.text("/f").unwrap().as_str()), (0, "Xone\n"));
}

#[test]
fn nano_moves_searches_cuts_and_pastes() {
    let buf = text_of("alpha\nbeta\ngamma\ndelta\n");
    let mut ed = nano::Nano::new(Opened::Text(buf), Some("f".into()));
    // Down, End, then search for "ta": found on the next line (delta), cursor there.
    feed(&mut ed, b"\x1b[B\x05\x17ta\r");
    assert_eq!((ed.buffer().row, ed.buffer().col), (3, 3));
    // Empty answer repeats the last search; it wraps to "beta".
    feed(&mut ed, b"\x17\r");
    assert_eq!((ed.buffer().row, ed.buffer().col), (1, 2));
    let r = rows(&draw(&mut ed, 10, 40));
    assert!(r[7].contains("Search Wrapped"), "{r:?}");
    feed(&mut ed, b"\x17zz\r");
    let r = rows(&draw(&mut ed, 10, 40));
    assert!(r[7].contains("[ \"zz\" not found ]"), "{r:?}");
    assert_eq!((ed.buffer().row, ed.buffer().col), (1, 2));
    // Two ^K cut beta and gamma; ^U puts them back at the top after moving.
    feed(&mut ed, b"\x0b\x0b\x1b[A\x15");
    let lines: Vec<&[u8]> = ed.buffer().lines().iter().map(|l| l.as_slice()).collect();
    assert_eq!(lines, [&b"beta"[..], b"gamma", b"alpha", b"delta", b""]);
    // ^C tells where the cursor is.
    feed(&mut ed, b"\x03");
    let r = rows(&draw(&mut ed, 10, 80));
    assert!(r[7].contains("[ line 3/5 (60%), col 1/6 (16%)"), "{r:?}");
}

#[tokio::test]
async fn nano_keeps_invalid_utf8_byte_for_byte() {
    let fs = MemFs::new();
    let data = b"caf\xe9 \xff\xfe\x01end\nsecond\n";
    put(&fs, "/bin.txt", data).await;
    let (st, screen, _) = on_term(
        &super::Nano,
        &["bin.txt"],
        fs.clone(),
        b"",
        (8, 40),
        vec![b"\x1b[B\x1b[F!".to_vec(), b"\x0f\r".to_vec()],
    )
    .await;
    assert_eq!(st, 1);
    assert_eq!(
        fs.contents("/bin.txt").unwrap(),
        b"caf\xe9 \xff\xfe\x01end\nsecond!\n"
    );
    let r = rows(&screen);
    assert_eq!(r[1], "caf\\xE9 \\xFF\\xFE^Aend");
}

#[tokio::test]
async fn nano_write_failure_is_reported_and_loses_nothing() {
    let inner = MemFs::with_files(&[("/f", "old\n")]);
    let fs = QuotaFs::new(inner.clone(), 2);
    let (st, screen, _) = on_term(
        &super::Nano,
        &["f"],
        fs,
        b"",
        (8, 60),
        vec![b"new text \x0f\r".to_vec(), b"\x18".to_vec()],
    )
    .await;
    assert_eq!(st, 1, "still asking whether to save");
    let r = rows(&screen);
    assert!(r[5].starts_with("Save modified buffer?"), "{r:?}");
    // The text is intact: answering again would write it.
    let (st, screen, _) = on_term(
        &super::Nano,
        &["f"],
        QuotaFs::new(inner.clone(), 2),
        b"",
        (8, 60),
        vec![b"new text \x0f\r".to_vec()],
    )
    .await;
    assert_eq!(st, 1);
    let r = rows(&screen);
    assert!(
        r[5].contains("[ Error writing f: No space left on device ]"),
        "{r:?}"
    );
    assert!(r[1].starts_with("new text old"), "{r:?}");
    assert_eq!(inner.text("/f").unwrap(), "old\n", "the file is as it was");
}

#[tokio::test]
async fn nano_directory_new_file_and_no_terminal() {
    let fs = MemFs::with_files(&[("/d/x", "")]);
    let (_, screen, _) = on_term(&super::Nano, &["d"], fs.clone(), b"", (8, 60), vec![]).await;
    assert!(rows(&screen)[5].contains("[ \"d\" is a directory ]"));
    let (_, screen, _) = on_term(&super::Nano, &["new"], fs.clone(), b"", (8, 60), vec![]).await;
    assert!(rows(&screen)[5].contains("[ New File ]"));
    let inv = crate::testing::Invocation::default();
    let (st, out, err) = inv.run(&super::Nano, &["f"]).await;
    assert_eq!(
        (st, out.as_str(), err.as_str()),
        (1, "", "Too many errors from stdin\n")
    );
}

#[tokio::test]
async fn nano_takes_a_five_megabyte_paste() {
    let fs = MemFs::new();
    let line = b"0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz\r";
    let total = 5 * 1024 * 1024;
    let mut paste = Vec::with_capacity(total + line.len());
    while paste.len() < total {
        paste.extend_from_slice(line);
    }
    let n = paste.len() / line.len();
    let mut bursts: Vec<Vec<u8>> = paste.chunks(32 * 1024).map(|c| c.to_vec()).collect();
    bursts.push(b"\x0f\r\x18".to_vec());
    let started = std::time::Instant::now();
    let (st, _, _) = on_term(&super::Nano, &["big"], fs.clone(), b"", (24, 80), bursts).await;
    assert_eq!(st, 0);
    let got = fs.contents("/big").unwrap();
    assert_eq!(got.len(), paste.len());
    assert_eq!(memchr::memchr_iter(b'\n', &got).count(), n);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[tokio::test]
async fn a_paste_past_the_session_budget_is_refused() {
    let fs = MemFs::new();
    let term: Arc<dyn Terminal> = Arc::new(FakeTerm::new(8, 60, vec![vec![b'x'; 300_000]]));
    let (out_w, out_r) = pipe();
    let budget = crate::Budget::new(100_000, 16);
    let ctx = Context {
        stdin: Input::empty(),
        stdout: out_w,
        stderr: pipe().0,
        env: BTreeMap::new(),
        env_last: Vec::new(),
        cwd: "/".into(),
        fs,
        cancel: CancellationToken::new(),
        tty: None,
        terminal: Some(term),
        launcher: TestLauncher::new(),
        budget: budget.clone(),
    };
    let run = async move { super::Nano.run(&ctx, vec!["f".into()]).await };
    let (st, out) = tokio::join!(run, out_r.read_to_end(HARNESS_OUTPUT_LIMIT));
    assert_eq!(st.unwrap(), 1);
    let out = out.unwrap();
    let mut screen = vt_parser(8, 60);
    let end = out
        .windows(super::screen::LEAVE.len())
        .rposition(|w| w == super::screen::LEAVE)
        .unwrap();
    screen.process(&out[..end]);
    assert!(
        rows(&screen)[5].contains("Out of memory"),
        "{:?}",
        rows(&screen)
    );
    assert_eq!(budget.mem_used(), 0);
}

#[test]
fn a_resize_redraws_at_the_new_size() {
    let lines: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    let mut ed = nano::Nano::new(Opened::Text(text_of(&lines)), Some("f".into()));
    feed(&mut ed, &b"\x1b[B".repeat(30));
    let big = rows(&draw(&mut ed, 24, 80));
    assert!(big[23].contains("^X Exit"));
    assert!(big.iter().any(|r| r == "line 31"));
    let small = rows(&draw(&mut ed, 8, 30));
    assert_eq!(small.len(), 8);
    assert!(small[7].contains("^X"), "{small:?}");
    assert!(small.iter().any(|r| r == "line 31"), "{small:?}");
    // A long line scrolls sideways to keep the cursor in view.
    let mut ed = nano::Nano::new(Opened::Text(text_of(&"x".repeat(100))), None);
    feed(&mut ed, b"\x05");
    let p = draw(&mut ed, 8, 30);
    assert_eq!(p.screen().cursor_position(), (1, 29));
}

#[test]
fn unknown_sequences_are_ignored() {
    let mut ed = nano::Nano::new(Opened::Text(text_of("ab\n")), None);
    feed(&mut ed, b"\x1b[200~\x1b[99;5u\x1b]x\x1b[C!");
    assert_eq!(ed.buffer().line(0), b"]xa!b");
}

mod vi_and_fuzz;

//! vi end to end, budgets, and random key streams into both editors.

use super::*;

#[tokio::test]
async fn vi_inserts_and_writes_with_wq() {
    let fs = MemFs::new();
    let (st, _, err) = on_term(
        &super::super::Vi,
        &["v.txt"],
        fs.clone(),
        b"",
        (10, 60),
        vec![
            b"ihello".to_vec(),
            b"\rworld".to_vec(),
            b"\x1b".to_vec(),
            b":wq\r".to_vec(),
        ],
    )
    .await;
    assert_eq!((st, err.as_str()), (0, ""));
    assert_eq!(fs.text("/v.txt").unwrap(), "hello\nworld\n");
}

#[tokio::test]
async fn vi_refuses_to_quit_modified_and_q_bang_discards() {
    let fs = MemFs::with_files(&[("/f", "keep\n")]);
    let (st, screen, _) = on_term(
        &super::super::Vi,
        &["f"],
        fs.clone(),
        b"",
        (6, 70),
        vec![b"x".to_vec(), b":q\r".to_vec()],
    )
    .await;
    assert_eq!(st, 1);
    assert!(rows(&screen)[5].starts_with("E37: No write since last change (add ! to override)"));
    assert_eq!(rows(&screen)[0], "eep");
    let (st, _, _) = on_term(
        &super::super::Vim,
        &["f"],
        fs.clone(),
        b"",
        (6, 70),
        vec![b"x:q!\r".to_vec()],
    )
    .await;
    assert_eq!((st, fs.text("/f").unwrap().as_str()), (0, "keep\n"));
    let (st, _, _) = on_term(
        &super::super::Vi,
        &["f"],
        fs.clone(),
        b"",
        (6, 70),
        vec![b"xZZ".to_vec()],
    )
    .await;
    assert_eq!((st, fs.text("/f").unwrap().as_str()), (0, "eep\n"));
}

#[test]
fn vi_motions_and_operators() {
    let mut ed = vi::Vi::new(
        Opened::Text(vi_text("one two three\nfour\nfive six\n")),
        None,
    );
    feed(&mut ed, b"ww");
    assert_eq!((ed.buffer().row, ed.buffer().col), (0, 8));
    feed(&mut ed, b"b");
    assert_eq!(ed.buffer().col, 4);
    feed(&mut ed, b"$");
    assert_eq!(ed.buffer().col, 12);
    feed(&mut ed, b"0jdd");
    let texts = |ed: &vi::Vi| -> Vec<String> {
        ed.buffer()
            .lines()
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect()
    };
    assert_eq!(texts(&ed), ["one two three", "five six"]);
    feed(&mut ed, b"ggp");
    assert_eq!(texts(&ed), ["one two three", "four", "five six"]);
    feed(&mut ed, b"Gyyp");
    assert_eq!(
        texts(&ed),
        ["one two three", "four", "five six", "five six"]
    );
    feed(&mut ed, b"ggdwx");
    assert_eq!(texts(&ed)[0], "wo three");
    feed(&mut ed, b"Aend\x1bIstart \x1b");
    assert_eq!(texts(&ed)[0], "start wo threeend");
    // (Esc and the next key come in separate bursts, as typed.)
    feed(&mut ed, b"oafter\x1b");
    feed(&mut ed, b"Obefore\x1b");
    assert_eq!(&texts(&ed)[..3], ["start wo threeend", "before", "after"]);
    feed(&mut ed, b":4\r");
    assert_eq!(ed.buffer().row, 3);
    feed(&mut ed, b"2G");
    assert_eq!(ed.buffer().row, 1);
    feed(&mut ed, b"3x");
    assert_eq!(texts(&ed)[1], "ore");
}

#[test]
fn vi_undo_takes_back_the_last_change() {
    let mut ed = vi::Vi::new(Opened::Text(vi_text("a\nb\nc\n")), None);
    feed(&mut ed, b"jdd");
    assert_eq!(ed.buffer().len(), 2);
    feed(&mut ed, b"u");
    let lines: Vec<&[u8]> = ed.buffer().lines().iter().map(|l| l.as_slice()).collect();
    assert_eq!(lines, [&b"a"[..], b"b", b"c"]);
    assert!(!ed.buffer().modified);
    // A whole stay in insert mode is one change.
    feed(&mut ed, b"ixy\rz\x1b");
    assert_eq!(ed.buffer().len(), 4);
    feed(&mut ed, b"u");
    assert_eq!(ed.buffer().len(), 3);
    assert_eq!(ed.buffer().line(1), b"b");
    feed(&mut ed, b"\x12");
    assert_eq!(ed.buffer().len(), 4);
}

#[test]
fn vi_searches_and_shows_messages() {
    let mut ed = vi::Vi::new(
        Opened::Text(vi_text("foo\nbar\nfoo bar\n")),
        Some("f".into()),
    );
    let r = rows(&draw(&mut ed, 6, 60));
    assert!(r[5].starts_with("\"f\" 3L, 16B"), "{r:?}");
    assert_eq!(&r[3..5], ["~", "~"]);
    feed(&mut ed, b"/bar\r");
    assert_eq!((ed.buffer().row, ed.buffer().col), (1, 0));
    feed(&mut ed, b"n");
    assert_eq!((ed.buffer().row, ed.buffer().col), (2, 4));
    feed(&mut ed, b"n");
    assert_eq!((ed.buffer().row, ed.buffer().col), (1, 0));
    let r = rows(&draw(&mut ed, 6, 60));
    assert!(
        r[5].starts_with("search hit BOTTOM, continuing at TOP"),
        "{r:?}"
    );
    feed(&mut ed, b"N");
    assert_eq!((ed.buffer().row, ed.buffer().col), (2, 4));
    feed(&mut ed, b"/nope\r");
    let r = rows(&draw(&mut ed, 6, 60));
    assert!(r[5].starts_with("E486: Pattern not found: nope"), "{r:?}");
    feed(&mut ed, b":bogus\r");
    assert!(rows(&draw(&mut ed, 6, 60))[5].starts_with("E492: Not an editor command: bogus"));
    feed(&mut ed, b"i");
    assert!(rows(&draw(&mut ed, 6, 60))[5].starts_with("-- INSERT --"));
    feed(&mut ed, b"\x1b:w");
    let p = draw(&mut ed, 6, 60);
    assert_eq!(rows(&p)[5], ":w");
    assert_eq!(p.screen().cursor_position(), (5, 2));
}

#[test]
fn vi_searches_take_vim_regular_expressions() {
    let mut ed = vi::Vi::new(
        Opened::Text(vi_text("foo1\nbar22\nfoo bar\nxyz\n")),
        Some("f".into()),
    );
    let at = |ed: &vi::Vi| (ed.buffer().row, ed.buffer().col);
    feed(&mut ed, b"/\\d\\d\r");
    assert_eq!(at(&ed), (1, 3));
    feed(&mut ed, b"/^foo\r");
    assert_eq!(at(&ed), (2, 0));
    feed(&mut ed, b"/r$\r");
    assert_eq!(at(&ed), (2, 6));
    feed(&mut ed, b"?o\\+\r");
    assert_eq!(at(&ed), (2, 2));
    feed(&mut ed, b"/B\\c\r");
    assert_eq!(at(&ed), (2, 4));
    feed(&mut ed, b"/y\\=z\r");
    assert_eq!(at(&ed), (3, 1));
    feed(&mut ed, b"/[0-9]\\{2}\r");
    assert_eq!(at(&ed), (1, 3));
    // A bad pattern says so and moves nothing.
    feed(&mut ed, b"/\\(\r");
    assert_eq!(at(&ed), (1, 3));
    let r = rows(&draw(&mut ed, 6, 70));
    assert!(
        r[5].starts_with("E383: Invalid search string: \\("),
        "{r:?}"
    );
    feed(&mut ed, b"/o\\{3}\r");
    let r = rows(&draw(&mut ed, 6, 70));
    assert!(r[5].starts_with("E486: Pattern not found: o\\{3}"), "{r:?}");
}

#[test]
fn vim_patterns_read_as_gnu_basic_ones() {
    use crate::cmd::editor::vi::vim_to_bre;
    for (vim, bre) in [
        ("a.*b", "a.*b"),
        ("\\d\\+x\\=", "[0-9]\\+x\\?"),
        ("a\\{2,3}b\\{-1,}", "a\\{2,3\\}b\\{1,\\}"),
        ("\\<wo\\(rd\\|x\\)\\>", "\\<wo\\(rd\\|x\\)\\>"),
        ("[\\d]\\s\\/", "[\\d][ \t]/"),
        ("x[", "x\\["),
        ("end\\", "end\\\\"),
    ] {
        assert_eq!(
            vim_to_bre(vim.as_bytes()),
            (bre.to_string(), false),
            "{vim}"
        );
    }
    assert_eq!(vim_to_bre(b"\\cAb"), ("Ab".to_string(), true));
}

#[tokio::test]
async fn vi_without_a_terminal_says_so() {
    let inv = crate::testing::Invocation::default();
    let (st, out, err) = inv.run(&super::super::Vi, &["f"]).await;
    assert_eq!((st, out.as_str()), (1, ""));
    assert!(
        err.starts_with("Vim: Warning: Output is not to a terminal\n"),
        "{err}"
    );
    assert!(
        err.ends_with("Vim: Error reading input, exiting...\n"),
        "{err}"
    );
}

#[tokio::test]
async fn vi_write_errors_and_new_files() {
    let fs = MemFs::new();
    let (st, screen, _) = on_term(
        &super::super::Vi,
        &["n.txt"],
        fs.clone(),
        b"",
        (6, 70),
        vec![],
    )
    .await;
    assert_eq!(st, 1);
    assert!(rows(&screen)[5].starts_with("\"n.txt\" [New]"));
    let (st, screen, _) = on_term(
        &super::super::Vi,
        &[],
        fs.clone(),
        b"",
        (6, 70),
        vec![b"ix\x1b:w\r".to_vec()],
    )
    .await;
    assert_eq!(st, 1);
    assert!(rows(&screen)[5].starts_with("E32: No file name"));
    let (st, screen, _) = on_term(
        &super::super::Vi,
        &["sub/none/f"],
        fs.clone(),
        b"",
        (6, 100),
        vec![b"ix\x1b:wq\r".to_vec()],
    )
    .await;
    assert_eq!(st, 1);
    assert!(
        rows(&screen)[5].starts_with(
            "\"sub/none/f\" E212: Can't open file for writing: No such file or directory"
        ),
        "{:?}",
        rows(&screen)
    );
    let (st, _, _) = on_term(
        &super::super::Vi,
        &[],
        fs.clone(),
        b"",
        (6, 70),
        vec![b"ix\x1b:w out\r:q\r".to_vec()],
    )
    .await;
    assert_eq!((st, fs.text("/out").unwrap().as_str()), (0, "x\n"));
}

#[tokio::test(start_paused = true)]
async fn a_window_change_redraws_without_a_key() {
    let release = Arc::new(tokio::sync::Notify::new());
    let term = Arc::new(FakeTerm {
        size: Mutex::new(TermSize { cols: 60, rows: 12 }),
        bursts: Mutex::new(VecDeque::from([Bytes::from_static(b"abc")])),
        hold: Some(release.clone()),
    });
    let (out_w, out_r) = pipe();
    let ctx = Context {
        stdin: Input::empty(),
        stdout: out_w,
        stderr: pipe().0,
        env: BTreeMap::new(),
        env_last: Vec::new(),
        cwd: "/".into(),
        fs: MemFs::new(),
        cancel: CancellationToken::new(),
        tty: None,
        terminal: Some(Arc::new(term.clone())),
        launcher: TestLauncher::new(),
        budget: crate::Budget::default(),
    };
    let run = tokio::spawn(async move { super::super::Nano.run(&ctx, vec!["f".into()]).await });
    let collect = tokio::spawn(async move { out_r.read_to_end(HARNESS_OUTPUT_LIMIT).await });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    *term.size.lock().unwrap() = TermSize { cols: 30, rows: 6 };
    tokio::time::sleep(super::super::RESIZE_POLL * 3).await;
    release.notify_one();
    assert_eq!(run.await.unwrap().unwrap(), 1);
    let out = collect.await.unwrap().unwrap();
    // The last frame was drawn for 6 rows of 30 columns.
    let start = b"\x1b[?25l\x1b[0m";
    let at = out.windows(start.len()).rposition(|w| w == start).unwrap();
    let end = out
        .windows(super::super::screen::LEAVE.len())
        .rposition(|w| w == super::super::screen::LEAVE)
        .unwrap();
    let mut p = vt_parser(6, 30);
    p.process(&out[at..end]);
    let r = rows(&p);
    assert_eq!(r[1], "abc");
    assert!(r[5].starts_with("^X"), "{r:?}");
    assert!(!out[at..end].windows(6).any(|w| w == b"\x1b[7;1H"));
}

#[test]
fn undo_history_is_charged_to_the_session() {
    // One 1 MB line under a 4 MB budget: each `x` keeps the line as it was for `u`, so
    // after a few the budget refuses, and the change is not made.
    let budget = crate::Budget::new(4 << 20, 16);
    let line = vec![b'a'; 1 << 20];
    let buf = super::super::Buffer::from_bytes(&line, &budget, true).unwrap();
    let mut ed = vi::Vi::new(Opened::Text(buf), Some("f".into()));
    feed(&mut ed, &[b'x'; 20]);
    assert!(budget.mem_used() <= 4 << 20);
    let removed = (1 << 20) - ed.buffer().line(0).len();
    assert!((1..20).contains(&removed), "{removed}");
    let r = rows(&draw(&mut ed, 4, 40));
    assert!(r[3].starts_with("E342: Out of memory!"), "{r:?}");
    // What was done can still be taken back.
    feed(&mut ed, b"u");
    assert_eq!(ed.buffer().line(0).len(), (1 << 20) - removed + 1);
    drop(ed);
    assert_eq!(budget.mem_used(), 0);
}

/// A small deterministic generator for the fuzz test below.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[test]
fn random_keys_never_panic_either_editor() {
    // Keys that matter most, mixed with arbitrary bytes and broken sequences.
    const PIECES: &[&[u8]] = &[
        b"\x1b",
        b"\x1b[",
        b"\x1b[A",
        b"\x1b[B",
        b"\x1b[C",
        b"\x1b[D",
        b"\x1b[5~",
        b"\x1b[6~",
        b"\x1b[3~",
        b"\x1b[H",
        b"\x1b[F",
        b"\x1bO",
        b"\r",
        b"\x7f",
        b"\x0b",
        b"\x15",
        b"\x17",
        b"\x0f",
        b"\x18",
        b"\x03",
        b"\x07",
        b"i",
        b"a",
        b"o",
        b"O",
        b"x",
        b"dd",
        b"dw",
        b"yy",
        b"p",
        b"P",
        b"u",
        b"\x12",
        b"G",
        b"gg",
        b"w",
        b"b",
        b"$",
        b"0",
        b"/",
        b"?",
        b"n",
        b"N",
        b":",
        b"q",
        b"9",
        b"r",
        b"\xff",
        "é日".as_bytes(),
        b"\t",
        b"Z",
        b"y",
        b"n",
        b" ",
    ];
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for round in 0..200 {
        let text: Vec<u8> = (0..rng.below(200)).map(|_| rng.below(256) as u8).collect();
        let budget = crate::Budget::default();
        let nano_buf = super::super::Buffer::from_bytes(&text, &budget, false).unwrap();
        let vi_buf = super::super::Buffer::from_bytes(&text, &budget, true).unwrap();
        let mut modes: Vec<Box<dyn Mode>> = vec![
            Box::new(nano::Nano::new(Opened::Text(nano_buf), Some("f".into()))),
            Box::new(vi::Vi::new(Opened::Text(vi_buf), None)),
        ];
        for mode in modes.iter_mut() {
            for _ in 0..60 {
                let mut burst = Vec::new();
                for _ in 0..rng.below(6) + 1 {
                    if rng.below(4) == 0 {
                        burst.push(rng.below(256) as u8);
                    } else {
                        burst.extend_from_slice(PIECES[rng.below(PIECES.len() as u64) as usize]);
                    }
                }
                let _ = feed(mode.as_mut(), &burst);
                let rows = rng.below(30) as u16;
                let cols = rng.below(100) as u16;
                let frame = mode.render(TermSize { cols, rows });
                assert!(!frame.is_empty(), "round {round}");
            }
        }
    }
}

#[tokio::test]
async fn vi_keeps_invalid_bytes_and_ends_the_last_line() {
    let fs = MemFs::new();
    put(&fs, "/b", b"a\xffb\n\xc3(\tz").await;
    let (st, screen, _) = on_term(
        &super::super::Vi,
        &["b"],
        fs.clone(),
        b"",
        (5, 60),
        vec![b"jA!\x1b".to_vec()],
    )
    .await;
    assert_eq!(st, 1);
    let r = rows(&screen);
    assert_eq!(r[0], "a\\xFFb");
    assert_eq!(r[1], "\\xC3(   z!");
    let (st, _, _) = on_term(
        &super::super::Vi,
        &["b"],
        fs.clone(),
        b"",
        (5, 60),
        vec![b"jA!\x1b".to_vec(), b":wq\r".to_vec()],
    )
    .await;
    assert_eq!(st, 0);
    assert_eq!(fs.contents("/b").unwrap(), b"a\xffb\n\xc3(\tz!\n");
}

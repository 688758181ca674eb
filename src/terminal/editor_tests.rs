use super::*;

/// Feeds `input` (answering no completion) and returns the event and the line.
fn run(ed: &mut Editor, input: &[u8]) -> (Option<Event>, Vec<u8>) {
    let mut out = Vec::new();
    let step = ed.feed(input, &mut out);
    (step.event, out)
}

fn typed(input: &[u8]) -> String {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let step = ed.feed(input, &mut out);
    match step.event {
        Some(Event::Line(l)) => l,
        Some(e) => panic!("unexpected {e:?}"),
        None => ed.line().to_string(),
    }
}

fn editor_with_history(lines: &[&str]) -> Editor {
    let mut ed = Editor::new(80);
    for l in lines {
        ed.history_add(l);
    }
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    ed
}

#[test]
fn typing_and_enter_give_the_line_and_redraw() {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    assert_eq!(out, b"\x1b[?2004h$ ");
    let (ev, out) = run(&mut ed, b"ls\r");
    assert_eq!(ev, Some(Event::Line("ls".into())));
    // Typing at the end of the line writes just what was typed, as a terminal echoes;
    // bracketed paste goes off before the command runs.
    assert_eq!(out, b"ls\r\n\x1b[?2004l\r");
}

#[test]
fn a_line_that_fills_the_row_exactly_leaves_no_blank_row() {
    let mut ed = Editor::new(10);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let (ev, out) = run(&mut ed, b"12345678\r");
    assert_eq!(ev, Some(Event::Line("12345678".into())));
    assert!(
        out.ends_with(b"12345678\r\n\x1b[?2004l\r"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    assert!(!out.ends_with(b"\r\n\r\n\x1b[?2004l\r"));
}

#[test]
fn cursor_movement_and_insertion() {
    assert_eq!(typed(b"ac\x1b[Db\r"), "abc");
    assert_eq!(typed(b"bc\x01a\x05d\r"), "abcd");
    assert_eq!(typed(b"bc\x1b[Ha\x1b[Fd\r"), "abcd");
    assert_eq!(typed(b"bc\x1bOHa\x1bOFd\r"), "abcd");
    assert_eq!(typed(b"bc\x1b[1~a\x1b[4~d\r"), "abcd");
    assert_eq!(typed(b"ac\x02b\x06d\r"), "abcd");
}

#[test]
fn deleting() {
    assert_eq!(typed(b"abc\x7f\r"), "ab");
    assert_eq!(typed(b"abc\x08\r"), "ab");
    assert_eq!(typed(b"abc\x01\x1b[3~\r"), "bc");
    assert_eq!(typed(b"abc\x01\x04\r"), "bc");
    assert_eq!(typed(b"\x7f\x1b[3~x\r"), "x");
}

#[test]
fn kill_and_yank() {
    assert_eq!(typed(b"echo hello world\x17\r"), "echo hello ");
    assert_eq!(typed(b"echo hello world  \x17\r"), "echo hello ");
    assert_eq!(typed(b"echo hello\x15\r"), "");
    assert_eq!(typed(b"echo hello\x15x \x19\r"), "x echo hello");
    assert_eq!(typed(b"echo hello\x01\x06\x06\x06\x06\x0b\r"), "echo");
    assert_eq!(
        typed(b"echo hello\x01\x0b\x19\x19\r"),
        "echo helloecho hello"
    );
}

#[test]
fn words_with_alt() {
    assert_eq!(typed(b"one two three\x1bbX\r"), "one two Xthree");
    assert_eq!(typed(b"one two three\x01\x1bfX\r"), "oneX two three");
    assert_eq!(typed(b"one two three\x01\x1bd\r"), " two three");
    assert_eq!(typed(b"one two-three\x1b\x7f\r"), "one two-");
    assert_eq!(typed(b"one two\x1b[1;5DX\r"), "one Xtwo");
}

#[test]
fn transpose() {
    assert_eq!(typed(b"ab\x14\r"), "ba");
    assert_eq!(typed(b"abc\x02\x14\r"), "acb");
    assert_eq!(typed(b"a\x14\r"), "a");
}

#[test]
fn wide_and_combining_characters_move_as_one() {
    assert_eq!(typed("中文\x1b[Dx\r".as_bytes()), "中x文");
    assert_eq!(typed("e\u{301}\x7f\r".as_bytes()), "");
    assert_eq!(
        typed("ae\u{301}b\x1b[D\x1b[D\x7f\r".as_bytes()),
        "e\u{301}b"
    );
    // The cursor sits after the wide characters: 2 + 4 columns.
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let (_, out) = run(&mut ed, "中文x\x1b[D".as_bytes());
    assert!(
        out.ends_with(b"\r\x1b[6C"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn invalid_utf8_and_unknown_sequences_never_break_the_line() {
    assert_eq!(typed(b"a\xffb\x1b[99~\x1b[Zc\r"), "a\u{fffd}bc");
}

#[test]
fn ctrl_c_and_ctrl_d() {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let (ev, out) = run(&mut ed, b"abc\x03");
    assert_eq!(ev, Some(Event::Interrupt));
    assert!(out.ends_with(b"abc^C\r\n\x1b[?2004l\r"));
    assert_eq!(ed.line(), "");
    let (ev, _) = run(&mut ed, b"\x04");
    assert_eq!(ev, Some(Event::Eof));
}

#[test]
fn feed_stops_after_the_line_so_the_rest_can_wait() {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let step = ed.feed(b"one\rtwo\r", &mut out);
    assert_eq!(step.consumed, 4);
    assert_eq!(step.event, Some(Event::Line("one".into())));
}

#[test]
fn history_up_down_and_the_line_being_typed() {
    let mut ed = editor_with_history(&["first", "second"]);
    let (ev, _) = run(&mut ed, b"draft\x1b[A\x1b[A\x1b[A\x1b[B\r");
    assert_eq!(ev, Some(Event::Line("second".into())));
    // The caller keeps accepted lines (after history expansion).
    ed.history_add("second");
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    run(&mut ed, b"draft\x1b[A\x1b[B");
    assert_eq!(ed.line(), "draft");
    ed.begin("$ ", &mut out);
    run(&mut ed, b"\x10");
    assert_eq!(ed.line(), "second");
    run(&mut ed, b"\x10");
    assert_eq!(ed.line(), "second");
    run(&mut ed, b"\x10");
    assert_eq!(ed.line(), "first");
}

#[test]
fn reverse_search() {
    let mut ed = editor_with_history(&["echo alpha", "ls -l", "echo beta"]);
    let (_, out) = run(&mut ed, b"\x12ech");
    assert_eq!(ed.line(), "echo beta");
    let shown = String::from_utf8_lossy(&out).to_string();
    assert!(
        shown.contains("(reverse-i-search)`ech': echo beta"),
        "{shown:?}"
    );
    run(&mut ed, b"\x12");
    assert_eq!(ed.line(), "echo alpha");
    let (_, out) = run(&mut ed, b"zz");
    assert!(String::from_utf8_lossy(&out).contains("(failed reverse-i-search)`echzz': "));
    run(&mut ed, b"\x7f\x7f");
    // Enter runs the line found.
    let (ev, _) = run(&mut ed, b"\r");
    assert_eq!(ev, Some(Event::Line("echo beta".into())));
    // Another key ends the search and edits the line found; Ctrl-G restores.
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    run(&mut ed, b"\x12ls\x05 -a");
    assert_eq!(ed.line(), "ls -l -a");
    ed.begin("$ ", &mut out);
    run(&mut ed, b"mine\x12ls\x07");
    assert_eq!(ed.line(), "mine");
}

fn cands(names: &[(&str, bool)]) -> Vec<Candidate> {
    names
        .iter()
        .map(|(n, d)| Candidate {
            name: n.to_string(),
            dir: *d,
        })
        .collect()
}

#[test]
fn tab_completes_a_single_candidate() {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let (ev, drawn) = run(&mut ed, b"ec\t");
    assert_eq!(drawn, b"ec", "typed text is drawn before completing");
    assert_eq!(
        ev,
        Some(Event::Complete(Request {
            kind: Kind::Command,
            word: "ec".into(),
            quote: None
        }))
    );
    ed.complete(cands(&[("echo", false)]), &mut out);
    assert_eq!(ed.line(), "echo ");
    run(&mut ed, b"my\t");
    ed.complete(cands(&[("my dir", true)]), &mut out);
    assert_eq!(ed.line(), "echo my\\ dir/");
}

#[test]
fn tab_inserts_the_common_prefix_then_lists_on_the_second_tab() {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    run(&mut ed, b"cat d\t");
    ed.complete(cands(&[("docs", true), ("dock", false)]), &mut out);
    assert_eq!(ed.line(), "cat doc");
    out.clear();
    run(&mut ed, b"\t");
    ed.complete(cands(&[("docs", true), ("dock", false)]), &mut out);
    let shown = String::from_utf8_lossy(&out).to_string();
    assert!(
        shown.contains("\r\ndocs/  dock\r\n\r\x1b[J$ cat doc"),
        "{shown:?}"
    );
    assert_eq!(ed.line(), "cat doc");
    // A first Tab that can add nothing rings the bell; the second lists.
    let mut ed = Editor::new(80);
    ed.begin("$ ", &mut out);
    run(&mut ed, b"cat doc\t");
    out.clear();
    ed.complete(cands(&[("docs", true), ("dock", false)]), &mut out);
    assert_eq!(out, b"\x07");
}

#[test]
fn tab_completes_variables() {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let (ev, _) = run(&mut ed, b"echo $HO\t");
    assert!(matches!(
        ev,
        Some(Event::Complete(Request {
            kind: Kind::Variable,
            ..
        }))
    ));
    ed.complete(cands(&[("HOME", false)]), &mut out);
    assert_eq!(ed.line(), "echo $HOME ");
}

#[test]
fn overlong_lines_are_cut_and_refused() {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let big = vec![b'x'; MAX_LINE + 100];
    let (ev, out) = run(&mut ed, &big);
    assert_eq!(ev, None);
    assert_eq!(out.iter().filter(|&&b| b == 0x07).count(), 1);
    assert_eq!(ed.line().len(), MAX_LINE);
    let (ev, _) = run(&mut ed, b"\r");
    assert!(matches!(ev, Some(Event::TooLong(l)) if l.len() == MAX_LINE));
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let (ev, _) = run(&mut ed, b"ok\r");
    assert_eq!(ev, Some(Event::Line("ok".into())));
}

#[test]
fn a_long_line_wraps_and_redraws_from_its_first_row() {
    let mut ed = Editor::new(10);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    run(&mut ed, b"0123456789abc");
    let (_, out) = run(&mut ed, b"\x01");
    // From the second row back up to the prompt's row, then to column 2.
    assert!(
        out.starts_with(b"\x1b[1A\r\x1b[J$ 0123456789abc"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    assert!(out.ends_with(b"\x1b[1A\r\x1b[2C"));
    let mut out = Vec::new();
    ed.resize(20, &mut out);
    assert!(
        out.starts_with(b"\r\x1b[J$ 0123456789abc"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
}

/// Ctrl-A on the editor: the redraw it writes must begin with `start`.
fn assert_home_redraw_starts(ed: &mut Editor, start: &str) {
    let (_, out) = run(ed, b"\x01");
    let out = String::from_utf8_lossy(&out);
    assert!(out.starts_with(start), "{out:?}");
}

#[test]
fn text_added_at_the_end_of_a_wrapping_line_is_written_alone() {
    // A paste arrives in chunks; each writes just itself, however long the line grows.
    let mut ed = Editor::new(10);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let mut all = Vec::new();
    for chunk in ["0123456", "789abcdefghij", "klmnopq"] {
        all.extend(run(&mut ed, chunk.as_bytes()).1);
    }
    assert_eq!(String::from_utf8_lossy(&all), "0123456789abcdefghijklmnopq");
    // The cursor is on the third row: a redraw climbs two.
    assert_home_redraw_starts(&mut ed, "\x1b[2A\r\x1b[J$ 0123456789abcdefghijklmnopq");
    // A row filled exactly moves the cursor to the next, as a redraw does.
    let mut ed = Editor::new(10);
    ed.begin("$ ", &mut out);
    assert_eq!(run(&mut ed, b"12345678").1, b"12345678\r\n");
    assert_eq!(run(&mut ed, b"9").1, b"9");
    assert_home_redraw_starts(&mut ed, "\x1b[1A\r\x1b[J$ 123456789");
    // A combining mark after the drawn text joins its grapheme: the line is redrawn.
    let mut ed = Editor::new(80);
    ed.begin("$ ", &mut out);
    run(&mut ed, b"e");
    let (_, out) = run(&mut ed, "\u{301}".as_bytes());
    assert!(out.starts_with(b"\r\x1b[J$ e"), "{out:?}");
}

#[test]
fn a_long_paste_in_small_chunks_writes_about_its_own_length() {
    // Each chunk used to redraw the whole wrapped line: a paste of n bytes in chunks of c
    // wrote about n²/2c bytes (and measured as much), which a loaded terminal and server
    // took minutes over.
    let mut ed = Editor::new(100);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let mut written = run(&mut ed, b"\x1b[200~").1.len();
    for _ in 0..2 * MAX_LINE / 512 {
        written += run(&mut ed, &[b'x'; 512]).1.len();
    }
    written += run(&mut ed, b"\x1b[201~").1.len();
    assert_eq!(ed.line().len(), MAX_LINE);
    assert!(
        written < MAX_LINE + MAX_LINE / 50,
        "{written} bytes written"
    );
}

#[test]
fn ctrl_l_clears_the_screen_and_redraws() {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let (_, out) = run(&mut ed, b"ls\x0c");
    assert!(
        out.ends_with(b"\x1b[H\x1b[2J\r\x1b[J$ ls"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn a_prompt_over_several_lines_redraws_its_last() {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("info\n$ ", &mut out);
    assert_eq!(out, b"\x1b[?2004hinfo\r\n$ ");
    let (_, out) = run(&mut ed, b"x\x01");
    assert_eq!(out, b"\r\x1b[J$ x\r\x1b[2C");
}

#[test]
fn random_bytes_never_panic() {
    let mut ed = Editor::new(7);
    let mut out = Vec::new();
    ed.begin("p> ", &mut out);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..20_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let b = [(seed & 0xff) as u8];
        out.clear();
        let step = ed.feed(&b, &mut out);
        match step.event {
            Some(Event::Complete(_)) => {
                ed.complete(cands(&[("a b", false), ("a c", true)]), &mut out)
            }
            Some(_) => ed.begin("p> ", &mut out),
            None => {}
        }
    }
}

#[test]
fn a_bracketed_paste_goes_in_as_text() {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    // Newlines and a Tab in the paste neither run the line nor complete.
    let (ev, out) = run(&mut ed, b"\x1b[200~echo a\r\techo b\x01\x1b[A\x1b[201~");
    assert_eq!(ev, None);
    assert_eq!(ed.line(), "echo a\n\techo b\x01");
    assert!(
        String::from_utf8_lossy(&out).contains("echo a\r\n\techo b^A"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    // After the paste, keys are keys again.
    let (ev, _) = run(&mut ed, b"\x7f!\r");
    assert_eq!(ev, Some(Event::Line("echo a\n\techo b!".into())));
}

#[test]
fn a_megabyte_paste_is_bounded_and_rings_once() {
    let mut ed = Editor::new(80);
    let mut out = Vec::new();
    ed.begin("$ ", &mut out);
    let mut paste = b"\x1b[200~".to_vec();
    paste.extend(std::iter::repeat_n(b"line of text\r".iter().copied(), 80_000).flatten());
    paste.extend_from_slice(b"\x1b[201~\r");
    let mut out = Vec::new();
    let step = ed.feed(&paste, &mut out);
    assert_eq!(step.consumed, paste.len());
    assert!(
        matches!(step.event, Some(Event::TooLong(ref l)) if l.len() == crate::terminal::MAX_LINE)
    );
    assert_eq!(out.iter().filter(|&&b| b == 0x07).count(), 1);
}

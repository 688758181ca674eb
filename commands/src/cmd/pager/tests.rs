//! `less` and `more` on a (fake) terminal: pages, movement, search, quitting.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on a broken harness"
)]

use crate::cmd::editor::tests::{on_term, rows};
use crate::testing::MemFs;

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn less_pages_forward_back_and_to_the_end() {
    let fs = MemFs::with_files(&[("/f", &numbered(100))]);
    let (st, screen, err) = on_term(&super::Less, &["f"], fs.clone(), b"", (10, 40), vec![]).await;
    assert_eq!((st, err.as_str()), (0, ""));
    let r = rows(&screen);
    assert_eq!(
        &r[..9],
        (1..=9).map(|i| format!("line {i}")).collect::<Vec<_>>()
    );
    assert_eq!(r[9], "f");
    let (_, screen, _) = on_term(
        &super::Less,
        &["f"],
        fs.clone(),
        b"",
        (10, 40),
        vec![b"  b".to_vec()],
    )
    .await;
    assert_eq!(rows(&screen)[0], "line 10");
    let (_, screen, _) = on_term(
        &super::Less,
        &["f"],
        fs.clone(),
        b"",
        (10, 40),
        vec![b"jj\x1b[B".to_vec(), b"k".to_vec()],
    )
    .await;
    assert_eq!(rows(&screen)[0], "line 3");
    let (_, screen, _) = on_term(
        &super::Less,
        &["f"],
        fs.clone(),
        b"",
        (10, 40),
        vec![b"G".to_vec()],
    )
    .await;
    let r = rows(&screen);
    assert_eq!(
        (r[0].as_str(), r[8].as_str(), r[9].as_str()),
        ("line 92", "line 100", "(END)")
    );
    // Space at the end stays on the last screenful; g goes back to the top.
    let (_, screen, _) = on_term(
        &super::Less,
        &["f"],
        fs.clone(),
        b"",
        (10, 40),
        vec![b"G  g".to_vec()],
    )
    .await;
    assert_eq!(rows(&screen)[0], "line 1");
}

#[tokio::test]
async fn less_searches_and_quits() {
    let fs = MemFs::with_files(&[("/f", &numbered(100))]);
    let (st, screen, _) = on_term(
        &super::Less,
        &["f"],
        fs.clone(),
        b"",
        (10, 40),
        vec![b"/line 5".to_vec(), b"\r".to_vec()],
    )
    .await;
    assert_eq!(st, 0);
    assert_eq!(rows(&screen)[0], "line 5");
    let (_, screen, _) = on_term(
        &super::Less,
        &["f"],
        fs.clone(),
        b"",
        (10, 40),
        vec![b"/line 5\rn".to_vec()],
    )
    .await;
    assert_eq!(rows(&screen)[0], "line 50");
    let (_, screen, _) = on_term(
        &super::Less,
        &["f"],
        fs.clone(),
        b"",
        (10, 40),
        vec![b"/nothing\r".to_vec()],
    )
    .await;
    assert_eq!(rows(&screen)[9], "Pattern not found");
    // q leaves at once: keys after it are not read.
    let (st, screen, _) = on_term(
        &super::Less,
        &["f"],
        fs.clone(),
        b"",
        (10, 40),
        vec![b"q".to_vec(), b" ".to_vec()],
    )
    .await;
    assert_eq!(st, 0);
    assert_eq!(rows(&screen)[0], "line 1");
}

#[tokio::test]
async fn less_searches_take_extended_regular_expressions() {
    let fs = MemFs::with_files(&[("/f", &numbered(100))]);
    let page = |keys: &'static [u8]| {
        let fs = fs.clone();
        async move {
            let (_, screen, _) =
                on_term(&super::Less, &["f"], fs, b"", (10, 40), vec![keys.to_vec()]).await;
            rows(&screen)
        }
    };
    assert_eq!(page(b"/^line [5-7]0$\r").await[0], "line 50");
    assert_eq!(page(b"/e 7+7\r").await[0], "line 77");
    assert_eq!(page(b"/(9|8)1\rn").await[0], "line 91");
    // A bad pattern says why and leaves the page where it was.
    let r = page(b"/l(ine\r").await;
    assert_eq!(r[0], "line 1");
    assert!(r[9].starts_with("Unmatched ( or \\("), "{r:?}");
}

#[tokio::test]
async fn less_pages_standard_input_and_long_lines() {
    let long = format!("{}\nshort\n", "x".repeat(100));
    let (st, screen, _) = on_term(
        &super::Less,
        &[],
        MemFs::new(),
        long.as_bytes(),
        (6, 40),
        vec![],
    )
    .await;
    assert_eq!(st, 0);
    let r = rows(&screen);
    assert_eq!(r[0], "x".repeat(40));
    assert_eq!(r[2], "x".repeat(20));
    assert_eq!(r[3], "short");
    assert_eq!(r[4], "~");
    assert_eq!(r[5], "(END)");
}

#[tokio::test]
async fn more_shows_a_page_then_the_prompt() {
    let fs = MemFs::with_files(&[("/f", &numbered(100))]);
    let (st, screen, _) = on_term(&super::More, &["f"], fs.clone(), b"", (10, 40), vec![]).await;
    assert_eq!(st, 0);
    let r = rows(&screen);
    assert_eq!(r[8], "line 9");
    assert_eq!(r[9], "--More--(7%)");
    // Space shows the next page below; Enter one more line; q quits.
    let (st, screen, _) = on_term(
        &super::More,
        &["f"],
        fs.clone(),
        b"",
        (10, 40),
        vec![b" ".to_vec(), b"\r".to_vec(), b"q".to_vec()],
    )
    .await;
    assert_eq!(st, 0);
    let r = rows(&screen);
    assert_eq!(r[8], "line 19");
    assert_eq!(r[9], "");
    // Text that fits is printed without a prompt.
    let fs = MemFs::with_files(&[("/s", "a\nb\n")]);
    let (st, screen, _) = on_term(&super::More, &["s"], fs, b"", (10, 40), vec![]).await;
    assert_eq!(st, 0);
    assert_eq!(&rows(&screen)[..3], ["a", "b", ""]);
}

#[tokio::test]
async fn more_with_several_files_heads_each() {
    let fs = MemFs::with_files(&[("/a", "one\n"), ("/b", "two\n")]);
    let (st, screen, err) =
        on_term(&super::More, &["a", "nope", "b"], fs, b"", (20, 40), vec![]).await;
    assert_eq!(st, 0);
    assert_eq!(err, "more: cannot open nope: No such file or directory\n");
    let r = rows(&screen);
    assert_eq!(
        &r[..6],
        [
            "::::::::::::::",
            "a",
            "::::::::::::::",
            "one",
            "::::::::::::::",
            "b"
        ]
    );
}

#[tokio::test]
async fn random_keys_never_panic_the_pagers() {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    const PIECES: &[&[u8]] = &[
        b" ", b"b", b"j", b"k", b"g", b"G", b"d", b"u", b"/", b"n", b"N", b":", b"\r", b"\x1b[A",
        b"\x1b[B", b"\x1b[5~", b"\x1b[6~", b"\x1b", b"\x7f", b"x", b"\xff",
    ];
    for _ in 0..60 {
        let text: Vec<u8> = (0..next(3000))
            .map(|_| if next(8) == 0 { b'\n' } else { next(256) as u8 })
            .collect();
        let mut keys = Vec::new();
        for _ in 0..next(40) {
            keys.push(PIECES[next(PIECES.len() as u64) as usize].to_vec());
        }
        let size = (next(30) as u16, next(90) as u16);
        let (st, _, _) = on_term(&super::Less, &[], MemFs::new(), &text, size, keys.clone()).await;
        assert_eq!(st, 0);
        let (st, _, _) = on_term(&super::More, &[], MemFs::new(), &text, size, keys).await;
        assert_eq!(st, 0);
    }
}

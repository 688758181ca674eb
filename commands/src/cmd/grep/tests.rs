//! Unit tests of grep: options, output forms, statuses (checked against GNU grep 3.8).

use super::*;
use crate::testing::{Invocation, MemFs, TINY_BUDGET};

fn inv(stdin: &str) -> Invocation {
    let fs = MemFs::with_files(&[
        ("/a", "apple\nbanana\ncherry\n"),
        ("/b", "Apple pie\nplum\n"),
        ("/d/x", "apple x\n"),
        ("/d/s/y", "no\napple y\n"),
        ("/bin", "apple\0binary\n"),
    ]);
    Invocation {
        stdin: stdin.as_bytes().to_vec(),
        fs,
        ..Invocation::default()
    }
}

async fn grep(stdin: &str, args: &[&str]) -> (i32, String, String) {
    inv(stdin).run(&GrepCmd, args).await
}

#[tokio::test]
async fn basic_matching() {
    assert_eq!(
        grep("", &["an", "a"]).await,
        (0, "banana\n".into(), String::new())
    );
    assert_eq!(
        grep("", &["-i", "apple", "a", "b"]).await.1,
        "a:apple\nb:Apple pie\n"
    );
    assert_eq!(grep("", &["-v", "an", "a"]).await.1, "apple\ncherry\n");
    assert_eq!(
        grep("", &["-n", "-e", "apple", "-e", "cherry", "a"])
            .await
            .1,
        "1:apple\n3:cherry\n"
    );
    assert_eq!(grep("", &["-c", "a", "a", "b"]).await.1, "a:2\nb:0\n");
    assert_eq!(grep("", &["-l", "p", "a", "b"]).await.1, "a\nb\n");
    assert_eq!(grep("", &["-L", "cherry", "a", "b"]).await.1, "b\n");
    assert_eq!(grep("", &["-o", "an", "a"]).await.1, "an\nan\n");
    assert_eq!(grep("", &["-x", "plum", "b"]).await.1, "plum\n");
    assert_eq!(grep("", &["-w", "pie", "b"]).await.1, "Apple pie\n");
    assert_eq!(grep("", &["-w", "pi", "b"]).await.0, 1);
    assert_eq!(grep("", &["-h", "plum", "a", "b"]).await.1, "plum\n");
    assert_eq!(grep("", &["-H", "plum", "b"]).await.1, "b:plum\n");
    assert_eq!(grep("", &["-F", "a.", "a"]).await.0, 1);
    assert_eq!(
        grep("", &["-E", "^(ch|ba)", "a"]).await.1,
        "banana\ncherry\n"
    );
    assert_eq!(grep("", &[r"^\(ch\|ba\)", "a"]).await.1, "banana\ncherry\n");
    assert_eq!(grep("", &["n\\{2\\}", "a"]).await.0, 1);
    assert_eq!(grep("", &["a+", "a"]).await.0, 1);
    assert_eq!(grep("x+y\n", &["x+y"]).await.1, "x+y\n");
    assert_eq!(grep("", &["-m", "1", "a", "a"]).await.1, "apple\n");
}

#[tokio::test]
async fn stdin_recursion_and_binary() {
    assert_eq!(
        grep("one\ntwo\n", &["-H", "two"]).await.1,
        "(standard input):two\n"
    );
    let (st, out, _) = grep("", &["-r", "apple", "d"]).await;
    assert_eq!((st, out.as_str()), (0, "d/s/y:apple y\nd/x:apple x\n"));
    let mut i = inv("");
    i.cwd = "/d".into();
    assert_eq!(
        i.run(&GrepCmd, &["-r", "apple"]).await.1,
        "s/y:apple y\nx:apple x\n"
    );
    assert_eq!(
        grep("", &["apple", "bin"]).await,
        (0, String::new(), "grep: bin: binary file matches\n".into())
    );
    assert_eq!(grep("", &["-a", "-c", "apple", "bin"]).await.1, "1\n");
}

/// -r reads the next files ahead; what is printed, and in what order, stays the walk's.
#[tokio::test]
async fn recursion_reads_ahead_in_order() {
    let fs = MemFs::new();
    let mut hits = Vec::new();
    for i in 0..READ_AHEAD_FILES * 2 + 5 {
        let name = format!("t/f{i:02}");
        if i % 5 == 0 {
            fs.put(&format!("/{name}"), b"hit\nmiss\n");
            hits.push(name);
        } else {
            fs.put(&format!("/{name}"), b"miss\n");
        }
        if i == 7 {
            fs.put("/t/f07.d/inner", b"hit inside\n");
            hits.push("t/f07.d/inner".into());
            fs.put_symlink("f00", "/t/f07link");
        }
    }
    fs.fail_read_on("/t/f10");
    hits.retain(|h| h != "t/f10");
    let run = async |args: &[&str]| {
        Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        }
        .run(&GrepCmd, args)
        .await
    };
    let (st, out, err) = run(&["-r", "-l", "hit", "t"]).await;
    assert_eq!(st, 2);
    assert_eq!(
        out,
        hits.iter().map(|h| format!("{h}\n")).collect::<String>()
    );
    assert_eq!(err, "grep: t/f10: Input/output error\n");
    let (_, out, _) = run(&["-r", "-s", "hit", "t"]).await;
    assert!(out.starts_with("t/f00:hit\nt/f05:hit\nt/f07.d/inner:hit inside\nt/f15:hit\n"));
    assert_eq!(run(&["-r", "-q", "hit", "t"]).await.0, 0);
}

#[tokio::test]
async fn context() {
    let data = "1\n2\nm\n3\n4\n5\n6\nm\n7\n";
    assert_eq!(grep(data, &["-A", "1", "m"]).await.1, "m\n3\n--\nm\n7\n");
    assert_eq!(
        grep(data, &["-B", "1", "-n", "m"]).await.1,
        "2-2\n3:m\n--\n7-6\n8:m\n"
    );
    assert_eq!(grep(data, &["-C", "3", "m"]).await.1, data);
}

#[tokio::test]
async fn statuses_and_errors() {
    assert_eq!(grep("", &["zzz", "a"]).await.0, 1);
    let (st, out, err) = grep("", &["apple", "nofile", "a"]).await;
    assert_eq!((st, out.as_str()), (2, "a:apple\n"));
    assert_eq!(err, "grep: nofile: No such file or directory\n");
    assert_eq!(
        grep("", &["-s", "apple", "nofile"]).await,
        (2, String::new(), String::new())
    );
    assert_eq!(
        grep("", &["-q", "apple", "nofile", "a"]).await,
        (
            0,
            String::new(),
            "grep: nofile: No such file or directory\n".into()
        )
    );
    let (st, _, err) = grep("", &["apple", "d"]).await;
    assert_eq!((st, err.as_str()), (2, "grep: d: Is a directory\n"));
    let (st, _, err) = grep("", &["-E", "(", "a"]).await;
    assert_eq!(st, 2);
    assert!(err.starts_with("grep: "), "{err}");
    assert_eq!(grep("", &[]).await.0, 2);
    assert_eq!(grep("", &["--bogus", "x"]).await.0, 2);
}

#[tokio::test]
async fn what_grep_holds_is_charged() {
    let long = format!("{}\n", "x".repeat(4 * TINY_BUDGET));
    inv(&long)
        .out_of_memory(&GrepCmd, &["x"], TINY_BUDGET)
        .await;
    // -B N holds up to N lines before a match.
    let lines: String = (0..20)
        .map(|i| format!("line {i}{}\n", "-".repeat(100)))
        .collect();
    inv(&lines)
        .out_of_memory(&GrepCmd, &["-B", "15", "nomatch"], TINY_BUDGET)
        .await;
    // -f holds the patterns.
    let fs = MemFs::with_files(&[("/p", &"x\n".repeat(TINY_BUDGET))]);
    Invocation { fs, ..inv("x\n") }
        .out_of_memory(&GrepCmd, &["-f", "p"], TINY_BUDGET)
        .await;
    assert_eq!(
        grep("1\n2\nx\n3\n4\nx\n", &["-B", "2", "x"]).await.1,
        "1\n2\nx\n3\n4\nx\n"
    );
    let fs = MemFs::with_files(&[("/p", "x\ny\n")]);
    let (st, out, _) = Invocation {
        fs,
        ..inv("ax\nb\ncy\n")
    }
    .run(&GrepCmd, &["-f", "p"])
    .await;
    assert_eq!((st, out.as_str()), (0, "ax\ncy\n"));
}

#[tokio::test]
async fn options_anywhere_and_attached() {
    assert_eq!(grep("", &["apple", "a", "-n"]).await.1, "1:apple\n");
    assert_eq!(grep("", &["-m1", "a", "a"]).await.1, "apple\n");
    assert_eq!(grep("", &["--max-count=1", "-c", "a", "a"]).await.1, "1\n");
    assert_eq!(grep("", &["--cou", "a", "a"]).await.1, "2\n");
    assert_eq!(grep("", &["-e", "apple", "--", "-n"]).await.0, 2);
    let (st, _, err) = grep("", &["--co", "x"]).await;
    assert_eq!(st, 2);
    assert!(err.starts_with("grep: option '--co' is ambiguous; possibilities: '--context'"));
    assert_eq!(
        grep("", &["-k", "x"]).await.2,
        "grep: invalid option -- 'k'\nUsage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n"
    );
    assert_eq!(
        grep("", &["-E", "-F", "x"]).await.2,
        "grep: conflicting matchers specified\n"
    );
    assert_eq!(
        grep("", &["-A", "x", "y"]).await.2,
        "grep: x: invalid context length argument\n"
    );
    assert_eq!(
        grep("", &["-m", "x", "y"]).await.2,
        "grep: invalid max count\n"
    );
    assert_eq!(
        grep("", &["--color=never", "-o", "an", "a"]).await.1,
        "an\nan\n"
    );
}

#[tokio::test]
async fn gnu_regex_in_grep() {
    assert_eq!(grep("abcd\n", &["-o", "a\\|ab\\|abc"]).await.1, "abc\n");
    assert_eq!(grep("xaay\nxy\n", &["\\(a\\)\\1"]).await.1, "xaay\n");
    let (st, _, err) = grep("", &["a\\", "a"]).await;
    assert_eq!((st, err.as_str()), (2, "grep: Trailing backslash\n"));
    let (st, out, err) = grep("ba\n", &["-E", "*a"]).await;
    assert_eq!(
        (st, out.as_str(), err.as_str()),
        (0, "ba\n", "grep: warning: * at start of expression\n")
    );
    assert_eq!(grep("a)\n", &["-E", "a)"]).await.1, "a)\n");
    assert_eq!(grep("a-b c\n", &["-ow", "--", "-b"]).await.0, 1);
}

#[tokio::test]
async fn output_forms() {
    assert_eq!(grep("", &["-b", "an", "a"]).await.1, "6:banana\n");
    assert_eq!(grep("", &["-bo", "an", "a"]).await.1, "7:an\n9:an\n");
    assert_eq!(grep("", &["-Z", "plum", "a", "b"]).await.1, "b\0plum\n");
    assert_eq!(grep("", &["-lZ", "p", "a", "b"]).await.1, "a\0b\0");
    assert_eq!(
        grep("", &["--color=always", "-n", "plu", "b"]).await.1,
        "\x1b[32m\x1b[K2\x1b[m\x1b[K\x1b[36m\x1b[K:\x1b[m\x1b[K\x1b[01;31m\x1b[Kplu\x1b[m\x1b[Km\n"
    );
    let data = "1\nm\n2\n3\n4\nm\n";
    assert_eq!(
        grep(data, &["-A1", "--group-separator=XX", "m"]).await.1,
        "m\n2\nXX\nm\n"
    );
    assert_eq!(
        grep(data, &["-A1", "--no-group-separator", "m"]).await.1,
        "m\n2\nm\n"
    );
    assert_eq!(
        grep("a\0b\nc\n", &["c"]).await,
        (
            0,
            String::new(),
            "grep: (standard input): binary file matches\n".into()
        )
    );
    assert_eq!(grep("a\0b\nc\n", &["-c", "c"]).await.1, "1\n");
    assert_eq!(grep("a\0b\nc\n", &["-I", "c"]).await.0, 1);
    let mut i = inv("");
    i.cwd = "/d".into();
    assert_eq!(
        i.run(&GrepCmd, &["-r", "--include=x", "apple"]).await.1,
        "x:apple x\n"
    );
    assert_eq!(
        grep("", &["-r", "--exclude-dir=s", "apple", "d"]).await.1,
        "d/x:apple x\n"
    );
    assert_eq!(grep("", &["--exclude=a", "apple", "a", "b"]).await.0, 1);
    assert_eq!(inv("x+y\n").run(&EgrepCmd, &["x+y"]).await.0, 1);
    assert_eq!(inv("x+y\n").run(&FgrepCmd, &["x+y"]).await.1, "x+y\n");
}

/// `-P` over a line with a byte that is no UTF-8: the byte is a barrier (PCRE2's
/// MATCH_INVALID_UTF), and `^`/`$` do not match beside it.
#[test]
fn perl_invalid_utf8_is_a_barrier() {
    let re = |p: &str| fancy_regex::Regex::new(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    let line = b"ab\xffcd";
    let find = |p: &str, at: usize| perl_find_in_fragments(&re(p), line, at).ok().flatten();
    assert_eq!(find(r"\w+", 0), Some((0, 2)));
    assert_eq!(find(r"\w+", 2), Some((3, 5)));
    assert_eq!(find("b.c", 0), None);
    assert_eq!(find("b.?", 0), Some((1, 2)));
    assert_eq!(find("ab$", 0), None);
    assert_eq!(find("^cd", 0), None);
    assert_eq!(find("cd$", 0), Some((3, 5)));
}

/// `-P` in the C locale: offsets of the one-char-per-byte text map back to bytes.
#[test]
fn perl_bytes_offsets() {
    let line = b"a\xc3\xa9b";
    let text = latin1(line);
    assert_eq!(text.chars().count(), 4);
    assert_eq!(latin1_offset(line, 3), 5);
    assert_eq!(latin1_byte_offset(&text, 5), 3);
}

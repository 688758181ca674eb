//! `forkbox exec`: the shell over a throwaway fork of a directory, without SSH.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/server.rs"]
mod support;

use std::io::Read;
use std::process::{Command, Stdio};

use support::{run_with_stdin, seed_base, server_binary, stderr, stdout, tree};

/// `forkbox exec --base DIR ARGS` (the binary `FORKBOX_TEST_BIN` names, if set).
fn exec(dir: &std::path::Path, args: &[&str], stdin: &[u8]) -> std::process::Output {
    let mut cmd = Command::new(server_binary());
    cmd.arg("exec").arg("--base").arg(dir).args(args);
    run_with_stdin(cmd, stdin)
}

#[test]
fn exec_runs_like_bash_c_and_leaves_the_directory_alone() {
    let dir = tempfile::tempdir().unwrap();
    seed_base(dir.path());
    let before = tree(dir.path());
    let out = exec(
        dir.path(),
        &[
            "-c",
            "echo hi > new; cat new README.md; rm shared.txt; echo err >&2; exit 3",
        ],
        b"",
    );
    assert_eq!(stdout(&out), "hi\nwelcome\n");
    assert_eq!(stderr(&out), "err\n");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(tree(dir.path()), before);
}

#[test]
fn exec_reads_the_script_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    seed_base(dir.path());
    let out = exec(
        dir.path(),
        &[],
        b"for f in docs/*.txt; do wc -l < $f; done\n",
    );
    assert_eq!(stdout(&out), "3\n");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn exec_defaults_to_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    seed_base(dir.path());
    let out = Command::new(env!("CARGO_BIN_EXE_forkbox"))
        .args(["exec", "-c", "cat README.md; echo x > y"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "welcome\n");
    assert!(!dir.path().join("y").exists());
}

/// `forkbox exec` is `bash -c` (issue 11): `$0` is `bash`, or the first argument after
/// the script; messages start with it and the line; a script from stdin gets every
/// argument as `$1`… and its functions' messages name `main`.
#[test]
fn exec_is_bash_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec(dir.path(), &["-c", "echo $0\nnosuch"], b"");
    assert_eq!(stdout(&out), "bash\n");
    assert_eq!(stderr(&out), "bash: line 2: nosuch: command not found\n");
    assert_eq!(out.status.code(), Some(127));
    let out = exec(dir.path(), &["-c", "echo $0 $1; nosuch", "foo", "bar"], b"");
    assert_eq!(stdout(&out), "foo bar\n");
    assert_eq!(stderr(&out), "foo: line 1: nosuch: command not found\n");
    let out = exec(dir.path(), &["a"], b"echo $0 $1\nf() { nosuch; }\nf\n");
    assert_eq!(stdout(&out), "bash a\n");
    assert_eq!(stderr(&out), "main: line 2: nosuch: command not found\n");
    let out = exec(dir.path(), &["-c", "echo a\nif then"], b"");
    assert_eq!(
        stderr(&out),
        "bash: -c: line 2: syntax error near unexpected token `then'\nbash: -c: line 2: `if then'\n"
    );
}

#[test]
fn exec_reports_syntax_errors_and_bad_bases() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec(dir.path(), &["-c", "echo (("], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("syntax error"));
    let out = Command::new(env!("CARGO_BIN_EXE_forkbox"))
        .args(["exec", "--base", "/no/such", "-c", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such"));
}

/// A script that is done ends the process even while its stdin stays open: the reader of
/// stdin is abandoned, not awaited (bash does not wait for its stdin's writer either).
#[test]
fn exec_exits_when_the_script_is_done_though_stdin_stays_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_forkbox"))
        .args(["exec", "--base"])
        .arg(dir.path())
        .args(["-c", "echo done"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Hold the write end open for the whole wait.
    let stdin = child.stdin.take().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(stdin);
    let status = status.expect("forkbox exec still running a minute after its script ended");
    assert!(status.success());
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(out, "done\n");
}

/// `man` off a terminal prints its page as plain text (no bold, no underline, no pager),
/// built from the texts `help`, `commands` and `NAME --help` show; a page that does not
/// exist fails as man-db's does.
#[test]
fn man_prints_plain_pages_from_the_commands_own_texts() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec(dir.path(), &["-c", "man ls"], b"");
    assert_eq!((out.status.code(), stderr(&out)), (Some(0), String::new()));
    let page = stdout(&out);
    let lines: Vec<&str> = page.lines().collect();
    assert!(
        lines[0].starts_with("LS(1)") && lines[0].ends_with("LS(1)"),
        "{page}"
    );
    assert!(lines[0].contains("User Commands"), "{page}");
    assert!(page.contains("\nNAME\n       ls - "), "{page}");
    assert!(page.contains("\nSYNOPSIS\n       ls "), "{page}");
    assert!(page.contains("\nDESCRIPTION\n"), "{page}");
    assert!(lines.iter().all(|l| l.chars().count() <= 78), "{page}");
    assert!(
        !page.contains('\u{8}') && !page.contains('\u{1b}'),
        "plain text: {page:?}"
    );
    // The one source: the NAME line is `help`'s summary, the text is `ls --help`'s.
    let out = exec(
        dir.path(),
        &[
            "-c",
            "help ls | sed 's/^ls: //'; man ls | sed -n 4p; ls --help | sed -n '/^Usage:/{s/^Usage: *//;p;q}'; man ls | sed -n 7p",
        ],
        b"",
    );
    let got = stdout(&out);
    let got: Vec<&str> = got.lines().collect();
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got[1], format!("       ls - {}", got[0]));
    assert_eq!(got[3], format!("       {}", got[2]));
    // A builtin has a page too, from its own --help.
    let out = exec(
        dir.path(),
        &["-c", "man cd | head -1; man cd | grep -c 'cd \\['"],
        b"",
    );
    let text = stdout(&out);
    assert!(text.starts_with("CD(1)"), "{text}");
    assert!(text.contains("Shell Builtin Commands"), "{text}");
    // No such page: man-db's words and status.
    let out = exec(dir.path(), &["-c", "man nosuchcmd"], b"");
    assert_eq!(
        (out.status.code(), stdout(&out), stderr(&out)),
        (
            Some(16),
            String::new(),
            "No manual entry for nosuchcmd\n".to_string()
        )
    );
    let out = exec(dir.path(), &["-c", "man"], b"");
    assert_eq!(
        (out.status.code(), stderr(&out)),
        (
            Some(1),
            "What manual page do you want?\nFor example, try 'man man'.\n".to_string()
        )
    );
}

/// `man -k`/`apropos` search the one-line summaries; `man -f`/`whatis` look names up;
/// what finds nothing fails with 16.
#[test]
fn apropos_and_whatis_search_the_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec(
        dir.path(),
        &[
            "-c",
            "apropos 'DIRECTORY CONTENTS'; man -k 'directory contents'",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let ls = "ls (1)               - list directory contents";
    assert_eq!(text.lines().filter(|l| *l == ls).count(), 2, "{text}");
    let out = exec(dir.path(), &["-c", "whatis ls cd; man -f ls"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{ls}\ncd (1)               - change the shell working directory\n{ls}\n")
    );
    let out = exec(dir.path(), &["-c", "whatis nosuchcmd"], b"");
    assert_eq!(
        (out.status.code(), stderr(&out)),
        (Some(16), "nosuchcmd: nothing appropriate.\n".to_string())
    );
    let out = exec(dir.path(), &["-c", "apropos zzqqxx"], b"");
    assert_eq!(
        (out.status.code(), stderr(&out)),
        (Some(16), "zzqqxx: nothing appropriate.\n".to_string())
    );
}

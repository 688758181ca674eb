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

use support::{run_with_stdin, seed_base, stderr, stdout, tree};

fn exec(dir: &std::path::Path, args: &[&str], stdin: &[u8]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_forkbox"));
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

//! `forkbox exec`: the shell over a throwaway fork of a directory, without SSH.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/server.rs"]
mod support;

use std::process::Command;

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

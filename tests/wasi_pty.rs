//! WASI tools on a terminal: a `forkbox serve` process (its default `--wasm-dir`, where
//! `wasm/provision` installs the tools) and the real OpenSSH client with a PTY (`-tt`),
//! typing as a person does.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on a broken assumption"
)]

#[path = "support/server.rs"]
mod support;

use std::io::Write;
use std::time::Duration;

use support::Server;

/// Longest the test waits for one expected piece of output (python's first start on a
/// server loads its module from the compiled cache).
const WAIT: Duration = Duration::from_secs(90);

/// `python3` with no arguments on a terminal is the REPL: its `>>> ` prompt, an
/// expression's value echoed, `exit()` back to the shell with status 0.
#[test]
fn python3_alone_on_a_terminal_is_the_repl() {
    let server = Server::start();
    let tty = server.tty("anyone");
    let wait_for = |needle: &str, from: usize| tty.wait_for(needle, from, WAIT);
    let mut stdin = &tty.stdin;
    stdin.write_all(b"echo ready\n").unwrap();
    let at = wait_for("ready\r\n", 0);
    stdin.write_all(b"python3\n").unwrap();
    let at = wait_for(">>> ", at);
    stdin.write_all(b"1+1\n").unwrap();
    let at = wait_for("2\r\n", at);
    let at = wait_for(">>> ", at);
    // A statement over two lines: the continuation prompt, then its output.
    stdin.write_all(b"for i in range(2):\n").unwrap();
    let at = wait_for("... ", at);
    stdin.write_all(b"    print('row', i)\n\n").unwrap();
    let at = wait_for("row 1\r\n", at);
    let at = wait_for(">>> ", at);
    stdin.write_all(b"exit()\n").unwrap();
    // The shell's prompt again, then its next line.
    let at = wait_for("$ ", at);
    stdin.write_all(b"echo py=$?\n").unwrap();
    wait_for("py=0\r\n", at);
    stdin.write_all(b"exit\n").unwrap();
    let (status, text) = tty.finish();
    assert_eq!(status.code(), Some(0), "{text}");
}

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

use std::io::{Read, Write};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::Server;

/// Longest the test waits for one expected piece of output (python's first start on a
/// server loads its module from the compiled cache).
const WAIT: Duration = Duration::from_secs(90);

/// `python3` with no arguments on a terminal is the REPL: its `>>> ` prompt, an
/// expression's value echoed, `exit()` back to the shell with status 0.
#[test]
fn python3_alone_on_a_terminal_is_the_repl() {
    let server = Server::start();
    let mut cmd = server.ssh_cmd("anyone");
    cmd.arg("-tt");
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let mut out = child.stdout.take().unwrap();
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    // Waits until `needle` appears after byte `from` of the output; gives where it ends.
    let wait_for = |needle: &str, from: usize| -> usize {
        let start = Instant::now();
        loop {
            {
                let text = seen.lock().unwrap();
                if let Some(at) = text.get(from..).and_then(|t| t.find(needle)) {
                    return from + at + needle.len();
                }
            }
            assert!(
                start.elapsed() < WAIT,
                "never saw {needle:?} after byte {from} in {:?}",
                seen.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut stdin = child.stdin.take().unwrap();
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
    let status = child.wait().unwrap();
    reader.join().unwrap();
    assert_eq!(status.code(), Some(0), "{}", seen.lock().unwrap());
}

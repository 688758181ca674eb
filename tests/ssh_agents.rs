//! forkbox driven by a second SSH client library, the way agent frameworks drive it:
//! asyncssh (from the tests' Python virtualenv) runs `tests/support/agents.py` against a
//! `forkbox serve` on a loopback port. Covers what OpenSSH's command line cannot send on
//! cue: the `signal` channel request, `window-change`, and many exec channels at once on
//! one connection.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/server.rs"]
mod support;

#[path = "support/s3.rs"]
mod python;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{Server, run_guarded, stderr, stdout};

/// Runs one scenario of `agents.py` against `server` and returns what it printed.
fn scenario(server: &Server, name: &str) -> Value {
    scenario_with(server, name, &[])
}

/// Runs one scenario of `agents.py` with arguments of its own.
fn scenario_with(server: &Server, name: &str, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/agents.py");
    let mut cmd = Command::new(python::venv_python());
    cmd.arg(script)
        .arg(server.port.to_string())
        .arg(name)
        .args(args);
    // The scenarios bound their own waits (30 s each, 240 s for a WASI tool's first
    // start); this only guards against a hang.
    let out = run_guarded(cmd, b"", Duration::from_secs(300));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: stdout {}\nstderr {}",
        stdout(&out),
        stderr(&out)
    );
    serde_json::from_str(stdout(&out).trim()).expect("scenario prints JSON")
}

#[test]
fn signal_request_interrupts_the_running_command() {
    let server = Server::start();
    let v = scenario(&server, "signal");
    // The command had started (its first line came back) and was stopped before the rest.
    assert_eq!(v["first"], "started\n");
    assert_eq!(v["rest"], "");
    // A command the signal stopped ends as sshd reports it: `exit-signal` with the signal's
    // name in place of a status (asyncssh then gives status -1).
    assert_eq!(
        v["signal"],
        serde_json::json!(["INT", false, "", "en"]),
        "how a command ended by SIGINT is reported: {v}"
    );
    assert_eq!(v["status"], -1, "{v}");
}

/// The `signal` request stops a WASI tool that computes without end (python's
/// `while True: pass`) as it stops a native command: promptly, reported by `exit-signal`.
#[test]
fn signal_request_interrupts_a_busy_wasi_tool() {
    let server = Server::start();
    let v = scenario_with(
        &server,
        "signal",
        &[r#"python3 -c 'print("started", flush=True); exec("while True: pass")'"#],
    );
    assert_eq!(v["first"], "started\n", "{v}");
    assert_eq!(v["rest"], "", "{v}");
    assert_eq!(
        v["signal"],
        serde_json::json!(["INT", false, "", "en"]),
        "how a WASI tool ended by SIGINT is reported: {v}"
    );
    assert_eq!(v["status"], -1, "{v}");
}

#[test]
fn window_change_reaches_the_next_command() {
    let server = Server::start();
    let v = scenario(&server, "window_change");
    // A line's text is what follows its last carriage return: after reading a command the
    // line editor turns bracketed paste off with `ESC[?2004l` and a `\r`, as bash does,
    // just before the command's first line of output.
    let listing = |text: &str| -> Vec<String> {
        text.split("\r\n")
            .map(|l| l.rsplit('\r').next().unwrap_or(l))
            .filter(|l| l.starts_with("file"))
            .map(str::to_string)
            .collect()
    };
    let wide = listing(v["wide"].as_str().unwrap());
    let narrow = listing(v["narrow"].as_str().unwrap());
    // 30 names of 6 characters: 10 columns fit in 80, 5 in 40.
    assert_eq!(wide.len(), 3, "ls at 80 columns: {wide:?}");
    assert_eq!(narrow.len(), 6, "ls at 40 columns: {narrow:?}");
    assert!(narrow.iter().all(|l| l.len() <= 40), "{narrow:?}");
    assert_eq!(v["status"], 3, "`exit 3` ends the PTY session with 3");
}

#[test]
fn many_exec_channels_on_one_connection_share_the_fork() {
    let server = Server::start();
    let v = scenario(&server, "many_channels");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 16);
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run[0], format!("{i}\n"), "channel {i}");
        assert_eq!(run[1], 0, "channel {i}");
    }
    // Each channel wrote its own file into the one fork of the connection.
    assert_eq!(v["shared"], "16\n");
}

/// What the multiplexing scenarios report: the busy channel's neighbour echoed a line
/// before and after, and new channels ran while it was busy.
fn assert_neighbours_went_on(v: &Value) {
    assert_eq!(v["first"], "before\n", "{v}");
    assert_eq!(v["after"], "after\n", "{v}");
    assert_eq!(
        v["runs"],
        serde_json::json!(["new0\n", "new1\n", "new2\n"]),
        "{v}"
    );
}

/// Issue 14 (ControlMaster-style multiplexing): a channel whose output the client never
/// reads, so that its window closes, holds nothing else of the connection back.
#[test]
fn a_channel_whose_output_is_never_read_does_not_hold_up_the_others() {
    let server = Server::start();
    let v = scenario(&server, "neighbour_not_reading_output");
    assert_neighbours_went_on(&v);
}

/// Issue 14: a channel whose command never reads its stdin while the client sends it
/// 24 MiB (more than the channel's stdin queue and a window together) holds nothing else
/// of the connection back: neither the other channel's input nor new channels.
#[test]
fn a_channel_whose_input_is_never_read_does_not_hold_up_the_others() {
    let server = Server::start();
    let v = scenario_with(&server, "neighbour_not_reading_input", &["24"]);
    assert_neighbours_went_on(&v);
}

/// Issue 14: a connection's only channel whose command never reads its stdin, fed
/// without end, does not hold up a channel the client opens after it (russh grants window
/// on arrival: forkbox shrinks the window instead of holding the connection's loop back).
#[test]
fn a_lone_channel_fed_endless_unread_input_does_not_hold_up_a_new_channel() {
    let server = Server::start();
    let v = scenario(&server, "lone_channel_fed_without_end");
    assert_eq!(v["runs"], serde_json::json!(["new0\n", "new1\n"]), "{v}");
    assert_eq!(v["hog_running"], true, "{v}");
}

/// Issue 14: on a terminal, 4 MiB pasted (past the terminal's input queue) while the
/// session's output waits for window — a command printing to a client that does not read
/// it — do not wedge the connection: the Ctrl-C after the paste stops the command and the
/// next line runs. (It once crawled: with the paste holding russh's loop back whenever no
/// send waited, the Ctrl-C behind it arrived minutes later on a loaded machine.)
#[test]
fn a_paste_while_output_waits_does_not_stall_the_terminal() {
    let server = Server::start();
    let v = scenario_with(&server, "paste_while_output_waits", &["4"]);
    assert_eq!(v["found"], true, "{v}");
    assert_eq!(v["status"], 5, "{v}");
}

/// How a channel whose command a limit stopped ends: `exit-signal` with the signal and the
/// one line that says which limit, in place of `exit-status` (asyncssh: status -1).
fn assert_killed(v: &Value, signal: &str, message: &str) {
    assert_eq!(
        v["signal"],
        serde_json::json!([signal, false, message, "en"]),
        "how the channel ended: {v}"
    );
    assert_eq!(v["status"], -1, "{v}");
}

#[test]
fn command_timeout_ends_the_channel_with_exit_signal_term() {
    let server = Server::start_with(&["--command-timeout", "1"]);
    let v = scenario_with(&server, "killed", &["echo started; sleep 100; echo never"]);
    assert_eq!(v["stdout"], "started\n", "{v}");
    // The line on stderr stays, for clients that show no exit-signal message.
    assert_eq!(v["stderr"], "forkbox: command timed out after 1s\n", "{v}");
    assert_killed(&v, "TERM", "forkbox: command timed out after 1s");
}

#[test]
fn session_memory_limit_ends_the_channel_with_exit_signal_kill() {
    let server = Server::start_with(&["--session-memory", "1M"]);
    let v = scenario_with(
        &server,
        "killed",
        &["s=x; while :; do s=$s$s; done; echo never"],
    );
    assert_eq!(v["stdout"], "", "{v}");
    let why = v["signal"][2].as_str().unwrap_or_default().to_string();
    assert!(
        why.starts_with("forkbox: ") && why.ends_with("out of memory (session limit 1M)"),
        "{v}"
    );
    assert_killed(&v, "KILL", &why);
    // A script that stays within the limit still ends with its status.
    let v = scenario_with(&server, "killed", &["s=x; s=$s$s; echo ${#s}; exit 3"]);
    assert_eq!(
        (v["stdout"].as_str(), v["status"].as_i64()),
        (Some("2\n"), Some(3)),
        "{v}"
    );
    assert_eq!(v["signal"], Value::Null, "{v}");
}

#[test]
fn session_lifetime_ends_running_channels_with_exit_signal_term() {
    let server = Server::start_with(&["--max-session-lifetime", "2"]);
    let v = scenario_with(&server, "killed", &["echo started; sleep 100; echo never"]);
    assert_eq!(v["stdout"], "started\n", "{v}");
    assert_killed(
        &v,
        "TERM",
        "forkbox: this session reached its maximum lifetime of 2s; disconnected",
    );
}

//! One anonymous session must not be able to take forkbox down: each attack that once
//! crashed or wedged the server, run through the real OpenSSH client against a server with
//! its defaults. After each, the server is up, its memory within its bounds, another
//! session answers, and the attacker got a clear error.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/server.rs"]
mod support;

use support::{Server, stderr, stdout};

/// What one session may hold by default (`--session-memory`), plus room for what a
/// command builds while it runs (an expansion being assembled, a pipe's contents) and the
/// allocator's slack.
const SESSION_BOUND: u64 = 256 * 1024 * 1024 + 256 * 1024 * 1024;

/// Runs `attack` in one session; checks the server survived it with its memory bounded and
/// that another session still answers. Gives the attacker's output.
fn survives(server: &Server, attack: &str) -> std::process::Output {
    let idle = server.proc_status_bytes("VmRSS");
    let peak_known = server.reset_peak_rss();
    let out = server.ssh(attack);
    let after = server.proc_status_bytes(if peak_known { "VmHWM" } else { "VmRSS" });
    assert!(
        after < idle + SESSION_BOUND,
        "{attack}: server grew from {idle} to {after} bytes"
    );
    let other = server.ssh("echo alive");
    assert_eq!(stdout(&other), "alive\n", "{attack}: {}", stderr(&other));
    assert_eq!(other.status.code(), Some(0));
    out
}

#[test]
fn deep_nesting_is_a_syntax_error_not_a_crash() {
    let server = Server::start();
    let out = survives(
        &server,
        r#"eval "$(printf "{ %.0s" {1..500})true; $(printf "}; %.0s" {1..500})"; echo status $?"#,
    );
    assert_eq!(stdout(&out), "status 2\n");
    assert_eq!(
        stderr(&out),
        "bash: line 1: syntax error: nested more than 256 levels deep\n"
    );
    // The same while parsing, inside `if false`, with every kind of nesting.
    for deep in [
        format!(
            "if false; then {}true{}; fi",
            "( ".repeat(400),
            " )".repeat(400)
        ),
        format!("echo {}x{}", "$(".repeat(400), ")".repeat(400)),
        format!("echo {}x{}", "${x:-".repeat(400), "}".repeat(400)),
        format!("[[ {}a{} ]]", "( ".repeat(400), " )".repeat(400)),
        format!("(({}1{}))", "(".repeat(400), ")".repeat(400)),
        format!(
            "{}true; {}",
            "while false; do ".repeat(400),
            "done; ".repeat(400)
        ),
    ] {
        let out = survives(&server, &deep);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("syntax error"), "{}", stderr(&out));
    }
}

#[test]
fn unclosed_parentheses_parse_at_once() {
    let server = Server::start();
    let out = survives(
        &server,
        r#"eval "$(printf '(%.0s' {1..32})"; echo status $?"#,
    );
    assert_eq!(stdout(&out), "status 2\n");
    assert_eq!(
        stderr(&out),
        "bash: line 1: syntax error: parentheses nested more than 12 levels deep\n"
    );
    // The same text as the whole request.
    let out = survives(&server, &"(".repeat(4000));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn fork_bombs_stop_at_the_session_task_limit() {
    let server = Server::start();
    // `:` of the first bomb returns at once, as in bash (its pipeline runs as a background
    // job); the bomb grows until the limit refuses a task, which stops every job of the
    // shell. The sleep lets that happen before the script ends.
    for (bomb, status) in [(":(){ :|:& };:", 0), ("f(){ f|f; }; f", 1)] {
        let out = survives(&server, &format!("{bomb}; s=$?; sleep 1; echo status $s"));
        assert_eq!(stdout(&out), format!("status {status}\n"), "{bomb}");
        assert_eq!(
            stderr(&out),
            "environment: line 1: fork: Resource temporarily unavailable (session limit of 1024 tasks)\n",
            "{bomb}"
        );
    }
}

#[test]
fn variables_cannot_take_the_server_memory() {
    let server = Server::start();
    let out = survives(
        &server,
        r#"b=$(yes aaaaaaaaaaaaaaa | head -c 15000000)
for i in $(seq 1 120); do eval "v$i=\$b\$b\$b\$b"; done"#,
    );
    // The limit ended the script: the channel reports `exit-signal` KILL, on which
    // OpenSSH's client exits 255; the line on stderr says why.
    assert_eq!(out.status.code(), Some(255));
    assert_eq!(
        stderr(&out),
        "bash: line 2: v5: out of memory (session limit 256M)\n"
    );
}

/// `sort` of a file larger than the session's memory budget sorts in runs spilled to the
/// session's `/tmp` (charged to its quota) instead of holding the file: the server's memory
/// stays bounded, the output is right, and the run files are gone afterwards.
#[test]
fn sort_of_a_large_file_stays_within_the_session_memory() {
    use std::io::Write;
    let server = Server::start();
    // 300,000 lines, about 9 MB: bigger than sort's in-memory run, in reverse order.
    let mut f =
        std::io::BufWriter::new(std::fs::File::create(server.base.join("big.txt")).unwrap());
    for i in (0..300_000u32).rev() {
        writeln!(f, "line {i:08} {}", "x".repeat(16)).unwrap();
    }
    f.into_inner().unwrap().sync_all().unwrap();
    let out = survives(
        &server,
        "sort big.txt | head -n 2; sort big.txt | tail -n 1; sort big.txt | wc -l; ls -A /tmp | wc -l",
    );
    assert_eq!(
        stdout(&out),
        format!(
            "line 00000000 {x}\nline 00000001 {x}\nline 00299999 {x}\n300000\n0\n",
            x = "x".repeat(16)
        ),
        "{}",
        stderr(&out)
    );
}

/// 100 MiB through `cat` on an exec channel, in and out: the bytes come back intact, and
/// the server holds no more than a session's bound meanwhile (flow control both ways).
#[test]
fn a_hundred_mib_stream_through_cat_round_trips_in_bounded_memory() {
    use sha2::{Digest, Sha256};
    let server = Server::start();
    // Noise that does not repeat within a chunk: a cheap generator, seeded.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u8> = (0..100 * 1024 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let idle = server.proc_status_bytes("VmRSS");
    let peak_known = server.reset_peak_rss();
    let out = server.ssh_stdin("cat", &data);
    let after = server.proc_status_bytes(if peak_known { "VmHWM" } else { "VmRSS" });
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout.len(), data.len());
    assert_eq!(
        Sha256::digest(&out.stdout),
        Sha256::digest(&data),
        "the stream came back changed"
    );
    assert!(
        after < idle + SESSION_BOUND,
        "server grew from {idle} to {after} bytes"
    );
}

/// A command that prints much without reading its input while the client sends much:
/// the output all arrives and the input the command never reads does not pile up in the
/// server (it once stalled for good after about 20 MB: the input queue full held russh's
/// loop back from the client's window grants behind it).
#[test]
fn a_command_printing_without_reading_its_input_finishes_in_bounded_memory() {
    let server = Server::start();
    let input = vec![b'i'; 64 * 1024 * 1024];
    let idle = server.proc_status_bytes("VmRSS");
    let peak_known = server.reset_peak_rss();
    let out = server.ssh_stdin("head -c 100000000 /dev/zero", &input);
    let after = server.proc_status_bytes(if peak_known { "VmHWM" } else { "VmRSS" });
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout.len(), 100_000_000);
    assert!(out.stdout.iter().all(|b| *b == 0));
    assert!(
        after < idle + SESSION_BOUND,
        "server grew from {idle} to {after} bytes"
    );
}

//! Fuzzing that `cargo test` runs: seeded, bounded in cases (never in time), so a failure
//! names a seed and a case that reproduce it.
//!
//! Targets, one test each:
//! - `scripts_from_grammar`: bash-like scripts from [`grammar`] through `Shell::run_script`
//!   over the in-memory filesystem.
//! - `mutated_scripts`: the same scripts after byte-level [`mutate`]-ions, run as text
//!   (lossily decoded) and as a file that `source` and `sh` read (raw bytes).
//! - `exec_request_bytes`: arbitrary bytes as an SSH exec request, through
//!   `session::channel::run_exec`, the path a channel takes.
//! - `pty_line_discipline`: arbitrary key bursts through `LineDiscipline::feed`.
//! - `regression_corpus`: every input in `tests/fuzz/regressions.txt`, each run.
//! - `edge_cases`: hand-written inputs at the limits, `tests/fuzz/edges.txt`.
//!
//! Every shell case runs in its own task on a runtime whose threads are named after the
//! target; it is cancelled after [`CASE_BUDGET`] ([`CORPUS_BUDGET`] for the corpus; so
//! infinite loops end) and must then finish within [`HANG_GUARD`]. A case fails on a panic
//! in any task of the runtime (a panic hook records them: stages and substitutions run in
//! tasks of their own whose panics the interpreter would otherwise absorb), a status
//! outside `0..=255`, a run that does not end after cancellation, or output streams left
//! open after the run.
//!
//! Explore more locally: `FORKBOX_FUZZ_SEED=<n>` (decimal or `0x…`) changes every
//! target's inputs, `FORKBOX_FUZZ_CASES=<n>` sets the number of cases of each target,
//! `FORKBOX_FUZZ_ONLY=<i>` runs case `i` alone and shows its input whole (before running
//! it: a stack overflow aborts the process), `FORKBOX_FUZZ_VERBOSE=1` prints every case.
//! A failing input goes into `tests/fuzz/regressions.txt` with the fix.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "fuzz/grammar.rs"]
mod grammar;
#[path = "fuzz/mutate.rs"]
mod mutate;
#[path = "fuzz/rng.rs"]
mod rng;

use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use forkbox::registry::Registry;
use forkbox::session::channel::{MAX_EXEC_LEN, run_exec};
use forkbox::shell::{Shell, ShellConfig, Stdio};
use forkbox::terminal::{Candidate, Editor, Event, LineDiscipline, MAX_LINE, TermEvent};
use forkbox_commands::testing::MemFs;
use forkbox_commands::{Budget, Input, pipe};
use tokio_util::sync::CancellationToken;

use rng::Rng;

/// The seed of every target unless `FORKBOX_FUZZ_SEED` says otherwise.
const DEFAULT_SEED: u64 = 0x00f0_4b0c_2026;

/// Cases per target by default: together the binary runs in well under two minutes in a
/// debug build on two cores.
const SCRIPT_CASES: usize = 1000;
const MUTATED_CASES: usize = 1000;
const EXEC_CASES: usize = 500;
const PTY_CASES: usize = 4000;
/// Fewer for the line editor: each case also replays whole, and a pasted line is laid out
/// again per chunk (≈ 0.1 s a case in a debug build).
const EDITOR_CASES: usize = 200;

/// How long a generated case runs before it is cancelled, so infinite loops end.
const CASE_BUDGET: Duration = Duration::from_millis(150);

/// The same for a corpus entry: written to run to its end, most of them.
const CORPUS_BUDGET: Duration = Duration::from_secs(3);

/// How long a cancelled case may take to finish before it counts as a hang: generous,
/// because a debug build on a loaded machine is slow, and a hang is forever.
const HANG_GUARD: Duration = Duration::from_secs(20);

/// Bytes of a case's stderr kept for the failure report.
const STDERR_KEPT: usize = 2048;

/// Bytes of an input shown in a failure report.
const SHOWN: usize = 4000;

/// Failures collected before a target gives up.
const MAX_FAILURES: usize = 10;

fn seed() -> u64 {
    let Ok(s) = std::env::var("FORKBOX_FUZZ_SEED") else {
        return DEFAULT_SEED;
    };
    let s = s.trim();
    let parsed = match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.unwrap_or_else(|_| panic!("FORKBOX_FUZZ_SEED={s} is not a number"))
}

/// `FORKBOX_FUZZ_ONLY=<n>` runs case `n` of each target alone, its input shown whole.
fn only() -> Option<usize> {
    let s = std::env::var("FORKBOX_FUZZ_ONLY").ok()?;
    Some(
        s.trim()
            .parse()
            .unwrap_or_else(|_| panic!("FORKBOX_FUZZ_ONLY={s} is not a number")),
    )
}

/// `FORKBOX_FUZZ_VERBOSE=1` prints every case, its status and its first line of stderr.
fn verbose() -> bool {
    std::env::var_os("FORKBOX_FUZZ_VERBOSE").is_some()
}

fn cases(default: usize) -> usize {
    match std::env::var("FORKBOX_FUZZ_CASES") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("FORKBOX_FUZZ_CASES={s} is not a number")),
        Err(_) => default,
    }
}

/// The generator of case `i` of `target`: independent of the other cases, so one case
/// reproduces alone and changing a target's case count leaves the others' inputs alone.
fn case_rng(target: &str, i: usize) -> Rng {
    let mut h = seed();
    for b in target.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut r = Rng::new(h ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    r.next_u64();
    r
}

// ---------------------------------------------------------------------------------------
// Panics in any task

/// Panics seen on threads of the fuzz runtimes: (thread name, message).
static PANICS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            let name = thread.name().unwrap_or("");
            // brush-parser's own panics are caught by the shell's parser guard and become
            // syntax errors; one that escaped would still show in the status or JoinHandle.
            let in_parser = info
                .location()
                .is_some_and(|l| l.file().contains("brush-parser"));
            if in_parser {
                return;
            }
            if name.starts_with("fuzz-") {
                PANICS
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((name.to_string(), info.to_string()));
            }
            previous(info);
        }));
    });
}

/// Panics recorded so far on the threads of `target`'s runtime, removed from the record.
fn take_panics(target: &str) -> Vec<String> {
    let prefix = thread_name(target);
    let mut all = PANICS.lock().unwrap_or_else(|p| p.into_inner());
    let (mine, others): (Vec<_>, Vec<_>) = all.drain(..).partition(|(t, _)| *t == prefix);
    *all = others;
    mine.into_iter().map(|(_, m)| m).collect()
}

fn thread_name(target: &str) -> String {
    format!("fuzz-{target}")
}

/// A runtime like the server's (multi-threaded, default stacks), its threads named after
/// `target` so panics are attributed to it.
fn runtime(target: &str) -> tokio::runtime::Runtime {
    install_panic_hook();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(thread_name(target))
        .enable_all()
        .build()
        .expect("test runtime")
}

/// Runs `body` on `target`'s runtime and fails with its report. The runtime is shut down
/// without waiting, so a case stuck in a synchronous loop cannot stall the report.
fn drive<F>(target: &str, body: F)
where
    F: std::future::Future<Output = Vec<String>>,
{
    let rt = runtime(target);
    let failures = rt.block_on(body);
    rt.shutdown_background();
    assert!(
        failures.is_empty(),
        "{target}: {} failure(s) with FORKBOX_FUZZ_SEED={:#x}\n\n{}",
        failures.len(),
        seed(),
        failures.join("\n\n")
    );
}

// ---------------------------------------------------------------------------------------
// Running one shell case

/// The in-memory filesystem every case starts from: a few files and directories to glob
/// and read, a binary file, a dangling link and a link loop.
fn seeded_fs() -> Arc<MemFs> {
    let fs = MemFs::new();
    for d in ["/tmp", "/home/u", "/w", "/d", "/etc"] {
        fs.put_dir(d);
    }
    fs.put("/w/a.txt", b"alpha\nbeta\ngamma\n");
    fs.put("/w/b.txt", b"1 2 3\n4 5 6\n");
    fs.put("/w/bin.dat", b"\xff\xfe\x00binary\xc3(\n");
    fs.put("/d/e", b"e\n");
    fs.put("/etc/passwd", b"u:x:1000:1000::/home/u:/bin/sh\n");
    fs.put_symlink("/nowhere", "/w/dangling");
    fs.put_symlink("/w/loop2", "/w/loop1");
    fs.put_symlink("/w/loop1", "/w/loop2");
    fs
}

fn new_shell(fs: Arc<MemFs>) -> Shell {
    Shell::new(ShellConfig {
        fs,
        registry: Arc::new(Registry::with_native()),
        env: vec![
            ("HOME".into(), "/home/u".into()),
            ("USER".into(), "u".into()),
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("TMPDIR".into(), "/tmp".into()),
        ],
        cwd: "/w".into(),
        interactive: false,
        budget: Budget::default(),
    })
}

/// What a shell case is given.
struct ShellCase {
    /// Where the case came from, for the report (`seed`/case number or corpus name).
    label: String,
    /// What runs.
    run: Run,
    stdin: Vec<u8>,
    /// Files written before the run.
    files: Vec<(String, Vec<u8>)>,
    /// Time before the run is cancelled.
    budget: Duration,
}

enum Run {
    /// `Shell::run_script` with this text.
    Script(String),
    /// `run_exec` with these bytes, as a channel does with an exec request.
    Exec(Vec<u8>),
}

impl ShellCase {
    fn shown(&self) -> String {
        let input = match &self.run {
            Run::Script(s) => {
                let cut = s
                    .char_indices()
                    .nth(shown_limit())
                    .map_or(s.len(), |(i, _)| i);
                format!(
                    "script (verbatim between the rules)\n-----\n{}\n-----",
                    &s[..cut]
                )
            }
            Run::Exec(b) => format!("exec request b\"{}\"", clip(b)),
        };
        let files: Vec<String> = self
            .files
            .iter()
            .map(|(p, b)| format!("file {p} = b\"{}\"", clip(b)))
            .collect();
        format!("[{}] {input}\n{}", self.label, files.join("\n"))
    }
}

/// Bytes of an input shown: all of them when one case is run alone.
fn shown_limit() -> usize {
    if only().is_some() { usize::MAX } else { SHOWN }
}

/// Up to [`shown_limit`] bytes of `b`, escaped like a Rust byte string.
fn clip(b: &[u8]) -> String {
    let cut = &b[..b.len().min(shown_limit())];
    let mut s: String = cut.escape_ascii().to_string();
    if b.len() > cut.len() {
        s.push_str(&format!("… ({} bytes)", b.len()));
    }
    s
}

/// How a shell case ended.
struct Outcome {
    status: i32,
    stderr: String,
}

/// Reads a stream to its end, keeping the first `keep` bytes.
async fn drain(input: Input, keep: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    while let Ok(Some(chunk)) = input.read_chunk().await {
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    kept
}

/// Runs one case in its own task; `Err` says what went wrong.
async fn run_shell_case(target: &str, case: &ShellCase) -> Result<Outcome, String> {
    let fs = seeded_fs();
    for (path, bytes) in &case.files {
        fs.put(path, bytes);
    }
    let mut shell = new_shell(fs);
    let (out_w, out_r) = pipe();
    let (err_w, err_r) = pipe();
    let out = tokio::spawn(drain(out_r, 0));
    let err = tokio::spawn(drain(err_r, STDERR_KEPT));
    let stdin = if case.stdin.is_empty() {
        Input::empty()
    } else {
        Input::from_bytes(case.stdin.clone())
    };
    let cancel = CancellationToken::new();
    let run = match &case.run {
        Run::Script(s) => Run::Script(s.clone()),
        Run::Exec(b) => Run::Exec(b.clone()),
    };
    let token = cancel.clone();
    let mut task = tokio::spawn(async move {
        let io = Stdio {
            stdin,
            stdout: out_w,
            stderr: err_w,
            tty: None,
            terminal: None,
        };
        let status = match &run {
            Run::Script(s) => shell.run_script(s, &io, token).await,
            Run::Exec(b) => run_exec(&mut shell, b, &io, token).await,
        };
        // The shell is still usable after whatever the case did to it.
        let again = shell
            .run_script("true", &io, CancellationToken::new())
            .await;
        (status, again)
    });

    let joined = tokio::select! {
        j = &mut task => j,
        () = tokio::time::sleep(case.budget) => {
            cancel.cancel();
            match tokio::time::timeout(HANG_GUARD, &mut task).await {
                Ok(j) => j,
                Err(_) => {
                    task.abort();
                    return Err(format!("hang: still running {HANG_GUARD:?} after cancellation"));
                }
            }
        }
    };
    let panics = take_panics(target);
    let (status, again) = match joined {
        Ok(s) => s,
        Err(e) if e.is_panic() => return Err(format!("panic: {}", panics.join(" | "))),
        Err(e) => return Err(format!("task failed: {e}")),
    };
    if !panics.is_empty() {
        return Err(format!(
            "panic in a task of the run (status {status}): {}",
            panics.join(" | ")
        ));
    }
    let streams = async { (out.await, err.await) };
    let stderr = match tokio::time::timeout(HANG_GUARD, streams).await {
        Ok((_, Ok(e))) => String::from_utf8_lossy(&e).into_owned(),
        Ok(_) => String::new(),
        Err(_) => {
            return Err(format!(
                "stdout or stderr still open {HANG_GUARD:?} after the run ended (status {status}): \
                 a task outlived run_script"
            ));
        }
    };
    for (what, s) in [("status", status), ("status of `true` afterwards", again)] {
        if !(0..=255).contains(&s) {
            return Err(format!("{what} {s} is outside 0..=255; stderr: {stderr:?}"));
        }
    }
    Ok(Outcome { status, stderr })
}

/// Runs `cases` one after another, checking each outcome with `check`; gives the reports
/// of the failures (at most [`MAX_FAILURES`]).
async fn run_shell_cases(
    target: &str,
    cases: impl Iterator<Item = ShellCase>,
    check: impl Fn(&ShellCase, &Outcome) -> Result<(), String>,
) -> Vec<String> {
    let mut failures = Vec::new();
    let mut ran = 0usize;
    let mut statuses = std::collections::BTreeMap::<i32, usize>::new();
    for (i, case) in cases.enumerate() {
        if only().is_some_and(|o| o != i) {
            continue;
        }
        ran += 1;
        if only().is_some() {
            // Shown before it runs: a stack overflow aborts the process.
            println!("--> {target} {}", case.shown());
        } else if verbose() {
            println!("--> {target} {}", case.label);
        }
        let result = run_shell_case(target, &case).await;
        let result = result.and_then(|o| {
            *statuses.entry(o.status).or_default() += 1;
            if verbose() {
                println!(
                    "--- {} status {}: {}\n{}",
                    case.label,
                    o.status,
                    o.stderr.lines().next().unwrap_or(""),
                    case.shown()
                );
            }
            check(&case, &o)
        });
        if let Err(why) = result {
            // A hung case may hold a worker thread for good: later cases would only
            // report its shadow.
            let hung = why.starts_with("hang");
            failures.push(format!("{why}\n  input: {}", case.shown()));
            if failures.len() >= MAX_FAILURES || hung {
                break;
            }
        }
    }
    println!("{target}: {ran} cases, statuses {statuses:?}");
    failures
}

fn no_check(_: &ShellCase, _: &Outcome) -> Result<(), String> {
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Targets

/// Deepest nesting of the scripts that get mutated: truncating a script nested `n` deep
/// leaves `n` constructs open, and brush-parser's time is exponential in that (see
/// [`mutate::MAX_REPEATED_OPENERS`]).
const MUTATED_NESTING: usize = 8;

/// A grammar script for case `i` of `target`, nested at most `max_nesting` deep, and the
/// generator left after it.
fn grammar_script(target: &str, i: usize, max_nesting: usize) -> (String, Rng) {
    let mut rng = case_rng(target, i);
    let script = if rng.one_in(12) {
        let kind = rng.below(12);
        let depth = rng.range(1, max_nesting);
        grammar::nested(kind, depth)
    } else {
        let depth = rng.range(1, max_nesting.min(8));
        grammar::Gen::new(&mut rng, depth).script()
    };
    (script, rng)
}

#[test]
fn scripts_from_grammar() {
    let target = "scripts";
    let n = cases(SCRIPT_CASES);
    drive(target, async {
        let cases = (0..n).map(|i| {
            let (script, mut rng) = grammar_script(target, i, grammar::MAX_NESTING);
            let stdin = if rng.one_in(4) {
                b"first line\nsecond  line\n\nlast".to_vec()
            } else {
                Vec::new()
            };
            ShellCase {
                label: format!("case {i}"),
                run: Run::Script(script),
                stdin,
                files: Vec::new(),
                budget: CASE_BUDGET,
            }
        });
        run_shell_cases(target, cases, no_check).await
    });
}

#[test]
fn mutated_scripts() {
    let target = "mutated";
    let n = cases(MUTATED_CASES);
    drive(target, async {
        let cases = (0..n).map(|i| {
            let (script, mut rng) = grammar_script(target, i, MUTATED_NESTING);
            let (other, _) = grammar_script(target, i + 1_000_000, MUTATED_NESTING);
            let bytes = mutate::mutate(&mut rng, script.as_bytes(), other.as_bytes());
            let label = format!("case {i}");
            if rng.one_in(3) {
                // The raw bytes, invalid UTF-8 and all, reach the parser through a file.
                let how = rng.pick(&["source", ".", "sh", "bash"]);
                ShellCase {
                    label,
                    run: Run::Script(format!("{how} {FUZZ_FILE} a b")),
                    stdin: Vec::new(),
                    files: vec![(FUZZ_FILE.into(), self_removing(&bytes))],
                    budget: CASE_BUDGET,
                }
            } else {
                ShellCase {
                    label,
                    run: Run::Script(String::from_utf8_lossy(&bytes).into_owned()),
                    stdin: Vec::new(),
                    files: Vec::new(),
                    budget: CASE_BUDGET,
                }
            }
        });
        run_shell_cases(target, cases, no_check).await
    });
}

/// Where a `file` case's bytes are written for `source` and `sh` to read.
const FUZZ_FILE: &str = "/tmp/fuzz.sh";

/// `bytes` behind a line that deletes [`FUZZ_FILE`] before anything else runs, so
/// `. /tmp/*` or `sh $0` in the bytes cannot run the file again: recursion through
/// `source` overflows the stack today (see `recursion_regressions`).
fn self_removing(bytes: &[u8]) -> Vec<u8> {
    let mut out = format!("rm -f {FUZZ_FILE}\n").into_bytes();
    out.extend_from_slice(bytes);
    out
}

/// An exec request that cannot be a script must be refused with status 2 and a message,
/// and one that can must not be.
fn check_exec(case: &ShellCase, o: &Outcome) -> Result<(), String> {
    let Run::Exec(bytes) = &case.run else {
        return Ok(());
    };
    let refusal = if bytes.len() > MAX_EXEC_LEN {
        Some("command longer than")
    } else if std::str::from_utf8(bytes).is_err() {
        Some("not valid UTF-8")
    } else {
        None
    };
    match refusal {
        Some(_) if o.status != 2 || !o.stderr.starts_with("forkbox: ") => Err(format!(
            "a request that is no script gave status {} and stderr {:?}, not 2 and a message",
            o.status, o.stderr
        )),
        Some(words) if !o.stderr.contains(words) => Err(format!(
            "the refusal does not say {words:?}: {:?}",
            o.stderr
        )),
        None if o.stderr.contains("not valid UTF-8") || o.stderr.contains("command longer") => {
            Err(format!("a valid request was refused: {:?}", o.stderr))
        }
        _ => Ok(()),
    }
}

#[test]
fn exec_request_bytes() {
    let target = "exec";
    let n = cases(EXEC_CASES);
    drive(target, async {
        let edges = vec![
            Vec::new(),
            b"\xff".to_vec(),
            b"echo \xc3".to_vec(),
            b"echo hi\0there".to_vec(),
            vec![b'a'; MAX_EXEC_LEN + 1],
            {
                // Exactly at the limit: a comment, accepted.
                let mut v = vec![b'#'; MAX_EXEC_LEN - 1];
                v.push(b'\n');
                v
            },
        ];
        let generated = (0..n).map(|i| {
            let (script, mut rng) = grammar_script(target, i, MUTATED_NESTING);
            match rng.below(3) {
                0 => script.into_bytes(),
                1 => {
                    let (other, _) = grammar_script(target, i + 1_000_000, MUTATED_NESTING);
                    mutate::mutate(&mut rng, script.as_bytes(), other.as_bytes())
                }
                _ => (0..rng.range(0, 200)).map(|_| rng.byte()).collect(),
            }
        });
        let cases = edges
            .into_iter()
            .chain(generated)
            .enumerate()
            .map(|(i, bytes)| ShellCase {
                label: format!("case {i}"),
                run: Run::Exec(bytes),
                stdin: Vec::new(),
                files: Vec::new(),
                budget: CASE_BUDGET,
            });
        run_shell_cases(target, cases, check_exec).await
    });
}

/// One burst of keys: text, control characters, escape sequences (some cut short),
/// invalid UTF-8, and now and then a paste longer than a line may be.
fn key_stream(rng: &mut Rng) -> Vec<u8> {
    const PIECES: &[&[u8]] = &[
        b"ls -la\r",
        b"echo hi\n",
        b"\x1b[A",
        b"\x1b[1;5C",
        b"\x1bOP",
        b"\x1b[",
        b"\x1b",
        b"\x1b[200~pasted\x1b[201~",
        b"\x03",
        b"\x04",
        b"\x15",
        b"\x7f",
        b"\x08",
        b"\t",
        b"\r\n",
        b"\xc3\xa9",
        b"\xe6\x97\xa5",
        b"\xf0\x9f\x98\x80",
        b"\xff",
        b"\xc3",
        b"\x80\x80",
        b"\0",
    ];
    let mut out = Vec::new();
    for _ in 0..rng.range(0, 40) {
        match rng.below(6) {
            0 => out.extend((0..rng.range(1, 20)).map(|_| rng.byte())),
            1 => out.extend((0..rng.range(1, 20)).map(|_| b'a' + (rng.byte() % 26))),
            2 if rng.one_in(20) => {
                // A paste past the line bound, sometimes with a newline at the end.
                let len = MAX_LINE + rng.range(0, 3 * MAX_LINE);
                out.extend(std::iter::repeat_n(b'x', len));
                if rng.one_in(2) {
                    out.push(b'\r');
                }
            }
            3 => {
                // An escape sequence with many parameter bytes, maybe never finished.
                out.extend_from_slice(b"\x1b[");
                out.extend((0..rng.range(0, 64)).map(|_| b'0' + (rng.byte() % 10)));
            }
            _ => out.extend_from_slice(rng.pick(PIECES)),
        }
    }
    out
}

/// Feeds `keys` in chunks cut by `rng`; checks each feed's bounds and gives everything
/// the discipline returned.
fn feed_chunked(rng: &mut Rng, keys: &[u8]) -> Result<(Vec<TermEvent>, Vec<u8>), String> {
    let mut ld = LineDiscipline::default();
    let mut events = Vec::new();
    let mut echo = Vec::new();
    let mut rest = keys;
    while !rest.is_empty() {
        let cut = rng.range(1, rest.len().min(4096));
        let (chunk, tail) = rest.split_at(cut);
        rest = tail;
        let (evs, ech) = ld.feed(chunk);
        if evs.len() > chunk.len() {
            return Err(format!("{} events from {} bytes", evs.len(), chunk.len()));
        }
        // Each byte echoes at most 4 (`^C\r\n`); Ctrl-U erases a whole line at 3 a char.
        if ech.len() > 4 * chunk.len() + 3 * MAX_LINE {
            return Err(format!(
                "{} echo bytes from {} bytes",
                ech.len(),
                chunk.len()
            ));
        }
        events.extend(evs);
        echo.extend(ech);
    }
    Ok((events, echo))
}

fn check_keys(rng: &mut Rng, keys: &[u8]) -> Result<(), String> {
    let (events, echo) = feed_chunked(rng, keys)?;
    // Over the whole stream each byte is echoed once and erased at most once.
    if echo.len() > 4 * keys.len() {
        return Err(format!(
            "{} echo bytes from {} bytes",
            echo.len(),
            keys.len()
        ));
    }
    if echo.contains(&0x1b) {
        return Err("an escape byte was echoed".into());
    }
    for ev in &events {
        if let TermEvent::Line(line) = ev {
            if line.len() > MAX_LINE + 1 {
                return Err(format!("a line of {} bytes (bound {MAX_LINE})", line.len()));
            }
            if line.contains(&0x1b) {
                return Err("an escape byte reached a line".into());
            }
        }
    }
    // How the bytes were cut into chunks changes nothing.
    let mut whole = LineDiscipline::default();
    let (ev_whole, echo_whole) = whole.feed(keys);
    if ev_whole != events || echo_whole != echo {
        return Err("feeding in chunks differs from feeding at once".into());
    }
    Ok(())
}

#[test]
fn pty_line_discipline() {
    let target = "pty";
    let n = cases(PTY_CASES);
    install_panic_hook();
    let mut failures = Vec::new();
    for i in (0..n).filter(|i| only().is_none_or(|o| o == *i)) {
        let mut rng = case_rng(target, i);
        let keys = key_stream(&mut rng);
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_keys(&mut rng, &keys)));
        let why = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(why)) => why,
            Err(_) => "panic".to_string(),
        };
        failures.push(format!("[case {i}] {why}\n  keys: b\"{}\"", clip(&keys)));
        if failures.len() >= MAX_FAILURES {
            break;
        }
    }
    println!("{target}: {n} cases");
    assert!(
        failures.is_empty(),
        "{target}: {} failure(s) with FORKBOX_FUZZ_SEED={:#x}\n\n{}",
        failures.len(),
        seed(),
        failures.join("\n\n")
    );
}

/// Feeds `keys` to a line editor in chunks cut by `rng` (or whole when `rng` is `None`),
/// answering every Tab with the same candidates; the events, and a complaint if a bound
/// broke.
fn edit_chunked(mut rng: Option<&mut Rng>, keys: &[u8]) -> Result<Vec<Event>, String> {
    let mut ed = Editor::new(13);
    let mut out = Vec::new();
    ed.begin("user@forkbox:/$ ", &mut out);
    let mut events = Vec::new();
    let mut rest = keys;
    while !rest.is_empty() {
        let cut = match rng.as_mut() {
            Some(r) => r.range(1, rest.len().min(4096)),
            None => rest.len(),
        };
        let (mut chunk, tail) = rest.split_at(cut);
        rest = tail;
        while !chunk.is_empty() {
            out.clear();
            let step = ed.feed(chunk, &mut out);
            if step.consumed == 0 {
                return Err("a feed used no bytes".into());
            }
            chunk = &chunk[step.consumed..];
            if ed.line().len() > MAX_LINE {
                return Err(format!("a line of {} bytes", ed.line().len()));
            }
            match step.event {
                Some(Event::Complete(req)) => {
                    let names = [format!("{}x y", req.word), format!("{}x/z", req.word)];
                    let found = names
                        .into_iter()
                        .map(|name| Candidate { name, dir: false })
                        .collect();
                    ed.complete(found, &mut out);
                    events.push(Event::Complete(req));
                }
                Some(e) => {
                    if let Event::Line(l) | Event::TooLong(l) = &e
                        && l.len() > MAX_LINE
                    {
                        return Err(format!("a line of {} bytes (bound {MAX_LINE})", l.len()));
                    }
                    events.push(e);
                    ed.begin("user@forkbox:/$ ", &mut out);
                }
                None => {}
            }
        }
    }
    Ok(events)
}

#[test]
fn pty_line_editor() {
    let target = "editor";
    let n = cases(EDITOR_CASES);
    install_panic_hook();
    let mut failures = Vec::new();
    for i in (0..n).filter(|i| only().is_none_or(|o| o == *i)) {
        let mut rng = case_rng(target, i);
        let keys = key_stream(&mut rng);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let chunked = edit_chunked(Some(&mut rng), &keys)?;
            // How the bytes were cut into chunks changes nothing.
            if edit_chunked(None, &keys)? != chunked {
                return Err("feeding in chunks differs from feeding at once".to_string());
            }
            Ok(())
        }));
        let why = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(why)) => why,
            Err(_) => "panic".to_string(),
        };
        failures.push(format!("[case {i}] {why}\n  keys: b\"{}\"", clip(&keys)));
        if failures.len() >= MAX_FAILURES {
            break;
        }
    }
    println!("{target}: {n} cases");
    assert!(
        failures.is_empty(),
        "{target}: {} failure(s) with FORKBOX_FUZZ_SEED={:#x}\n\n{}",
        failures.len(),
        seed(),
        failures.join("\n\n")
    );
}

// ---------------------------------------------------------------------------------------
// The corpus of inputs that once failed

/// One corpus entry: `=== <target>: <name>` then the input, up to the next `===` line.
struct Entry {
    target: String,
    name: String,
    body: String,
}

fn parse_corpus(text: &str) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    for line in text.split_inclusive('\n') {
        if let Some(head) = line.strip_prefix("=== ") {
            let (target, name) = head.trim_end().split_once(": ").unwrap_or(("", head));
            entries.push(Entry {
                target: target.to_string(),
                name: name.trim().to_string(),
                body: String::new(),
            });
        } else if let Some(e) = entries.last_mut() {
            e.body.push_str(line);
        }
    }
    for e in &mut entries {
        // The newline before the next header belongs to the file's layout, not the input.
        if e.body.ends_with('\n') {
            e.body.pop();
        }
    }
    entries
}

/// `\xNN`, `\n`, `\r`, `\t`, `\e` and `\\` in a byte-valued corpus entry.
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            let (byte, used) = match b[i + 1] {
                b'n' => (b'\n', 2),
                b'r' => (b'\r', 2),
                b't' => (b'\t', 2),
                b'e' => (0x1b, 2),
                b'\\' => (b'\\', 2),
                b'x' if i + 4 <= b.len() => {
                    let hex = std::str::from_utf8(&b[i + 2..i + 4]).ok();
                    match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                        Some(v) => (v, 4),
                        None => (b'\\', 1),
                    }
                }
                _ => (b'\\', 1),
            };
            out.push(byte);
            i += used;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn corpus_case(e: &Entry) -> Result<ShellCase, String> {
    let label = format!("{}: {}", e.target, e.name);
    let (run, files) = match e.target.as_str() {
        "script" => (Run::Script(e.body.clone()), Vec::new()),
        "file" => (
            Run::Script(format!("source {FUZZ_FILE}")),
            vec![(FUZZ_FILE.to_string(), self_removing(&unescape(&e.body)))],
        ),
        "exec" => (Run::Exec(unescape(&e.body)), Vec::new()),
        other => return Err(format!("unknown corpus target {other:?} in {label}")),
    };
    Ok(ShellCase {
        label,
        run,
        stdin: Vec::new(),
        files,
        budget: CORPUS_BUDGET,
    })
}

/// Replays a corpus file: shell entries through the shell, `pty` entries through the line
/// discipline.
fn replay(target: &str, text: &str) {
    let entries = parse_corpus(text);
    assert!(!entries.is_empty(), "{target}: the corpus is empty");
    let mut failures = Vec::new();
    let mut shell_cases = Vec::new();
    for e in &entries {
        if e.target == "pty" {
            let mut rng = case_rng(target, 0);
            if let Err(why) = check_keys(&mut rng, &unescape(&e.body)) {
                failures.push(format!("[pty: {}] {why}", e.name));
            }
            continue;
        }
        match corpus_case(e) {
            Ok(c) => shell_cases.push(c),
            Err(why) => failures.push(why),
        }
    }
    drive(target, async move {
        failures.extend(run_shell_cases(target, shell_cases.into_iter(), check_exec).await);
        failures
    });
}

#[test]
fn regression_corpus() {
    replay("corpus", include_str!("fuzz/regressions.txt"));
}

#[test]
fn edge_cases() {
    replay("edges", include_str!("fuzz/edges.txt"));
}

#[test]
fn corpus_format() {
    let entries = parse_corpus("=== script: a\necho 1\n\n=== exec: b\n\\xff\\x41\\n\\\\\n");
    assert_eq!(entries.len(), 2);
    assert_eq!(
        (entries[0].target.as_str(), entries[0].name.as_str()),
        ("script", "a")
    );
    assert_eq!(entries[0].body, "echo 1\n");
    assert_eq!(unescape(&entries[1].body), b"\xffA\n\\");
}

// ---------------------------------------------------------------------------------------
// Known crashes being fixed: ignored until the fix lands, then part of every run.

/// Nesting far past the generator's depth: refused as a syntax error past the bound, run
/// on stack segments of its own below it (it once overflowed the stack and aborted the
/// whole process).
#[test]
fn deep_nesting_regressions() {
    let mut scripts = vec![
        r#"eval "$(printf "{ %.0s" {1..500})true; $(printf "}; %.0s" {1..500})""#.to_string(),
        r#"eval "$(printf "( %.0s" {1..500})true$(printf " )%.0s" {1..500})""#.to_string(),
    ];
    for kind in 0..12 {
        scripts.push(grammar::nested(kind, 500));
    }
    run_known(
        "deep",
        scripts
            .into_iter()
            .enumerate()
            .map(|(i, s)| (format!("deep {i}"), s)),
    );
}

/// Found by this harness: recursion through `source`, `sh FILE`, `eval` and `sh -c` (no
/// deep AST at all) overflows the stack and aborts the process like deep nesting does;
/// function calls are bounded (`MAX_CALL_DEPTH`), these are not. bash segfaults on the
/// first one; forkbox must give an error instead.
#[test]
fn recursion_regressions() {
    let scripts = [
        "echo 'source /tmp/x' > /tmp/x; source /tmp/x",
        "echo '. /tmp/x' > /tmp/x; f() { . /tmp/x; }; f",
        "echo 'sh /tmp/x' > /tmp/x; sh /tmp/x",
        r#"e='eval "$e"'; eval "$e""#,
        r#"c='sh -c "$c"'; export c; sh -c "$c""#,
    ];
    run_known(
        "recursion",
        scripts
            .into_iter()
            .enumerate()
            .map(|(i, s)| (format!("recursion {i}"), s.to_string())),
    );
}

/// Unclosed parentheses took time exponential in their number to parse (and the parse
/// cannot be cancelled); past the parenthesis bound they are now a syntax error at once.
#[test]
fn parse_time_regressions() {
    let scripts = [
        r#"eval "$(printf '(%.0s' {1..32})""#.to_string(),
        "(".repeat(32),
        "$(".repeat(32),
        "((".repeat(32),
        "$((".repeat(32),
        format!("echo {}", "$(( (".repeat(32)),
        format!("[[ {}", "( ".repeat(32)),
        format!("{}x", "{ (".repeat(32)),
        // Found by the fuzz harness: 38 open parentheses.
        "for (( do ! ".repeat(19),
        "((".repeat(14),
    ];
    run_known(
        "parse-time",
        scripts
            .into_iter()
            .enumerate()
            .map(|(i, s)| (format!("parse time {i}"), s)),
    );
}

/// Brace expansion's parser takes time exponential in the `{` left unclosed in a word
/// (found by this harness): eighteen took seconds in a debug build, thirty hours. A word
/// with more than a few unclosed braces now stays literal without being parsed.
#[test]
fn brace_parse_time_regressions() {
    let scripts = [
        format!("echo {}", "{".repeat(32)),
        format!("echo {}a", "{x,".repeat(32)),
        format!("echo {}a", "{,".repeat(32)),
        format!("echo {}", "a{b,c}{".repeat(32)),
        format!("echo {}a{}", "{a,{".repeat(16), "}".repeat(16)),
        format!("echo {}{}", "{a,".repeat(10), "x".repeat(100_000)),
        // The input that found it.
        format!(
            "echo {}{}a{}",
            "{x,{xx,".repeat(20),
            "{x,".repeat(14),
            "}".repeat(19)
        ),
    ];
    run_known(
        "brace-time",
        scripts
            .into_iter()
            .enumerate()
            .map(|(i, s)| (format!("brace parse time {i}"), s)),
    );
}

fn run_known(target: &str, scripts: impl Iterator<Item = (String, String)>) {
    let cases: Vec<ShellCase> = scripts
        .map(|(label, s)| ShellCase {
            label,
            run: Run::Script(s),
            stdin: Vec::new(),
            files: Vec::new(),
            budget: CORPUS_BUDGET,
        })
        .collect();
    drive(target, async move {
        run_shell_cases(target, cases.into_iter(), no_check).await
    });
}

/// The generator's own bound: scripts stay small however the dice fall.
#[test]
fn grammar_scripts_stay_small() {
    let mut longest = 0;
    for i in 0..2000 {
        let (script, _) = grammar_script("size", i, grammar::MAX_NESTING);
        longest = longest.max(script.len());
    }
    println!("longest of 2000 grammar scripts: {longest} bytes");
    assert!(longest < 64 * 1024, "a generated script of {longest} bytes");
}

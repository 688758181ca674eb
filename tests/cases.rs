//! The differential suite: every case in `tests/cases/*.cases` runs in forkbox's shell (over
//! the real session filesystem: a `Vfs` on an overlay fork of an empty base, with the mount
//! table) and in real `/bin/bash` with the host's GNU tools (in a fresh temporary
//! directory), and the two must agree on stdout, stderr, exit status and the files left
//! behind (names, kinds, permission bits, contents, symlink targets).
//!
//! A case file holds comment lines, then cases, each opened by a header line
//! `=== NAME [FLAGS]`; the lines up to the next header are its script. Flags:
//! - `loose`: stdout, status and files must match; stderr only in being empty or not (for
//!   messages whose wording is known to differ, e.g. syntax errors);
//! - `gap: REASON`: a known difference not fixed yet. The case must still differ, so that
//!   a fix is noticed and the mark removed;
//! - `skip: REASON`: a deliberate difference (host-specific output); not run.
//!
//! stderr is compared exactly, message prefixes and line numbers included (`bash: line 2:
//! `, `bash: -c: line 1: `, `environment: line 3: `): bash runs as `bash -c`, with `$0`
//! `bash` as forkbox's shell has.
//!
//! `CASES=a,b` runs only the files `a.cases` and `b.cases`; `CASE=text` only the cases whose
//! name contains `text`. `docs/CONFORMANCE.md` is generated from the cases: a full run fails
//! when it is stale, and `FORKBOX_CONFORMANCE=write cargo test --test cases` rewrites it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use forkbox::registry::Registry;
use forkbox::shell::{Shell, ShellConfig, Stdio};
use forkbox_commands::{Input, pipe};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

/// The working directory both shells run in (bash's temp dir is shown as this).
const WORK: &str = "/w";

/// How many cases run at once (each one bash process and one forkbox shell).
const PARALLEL: usize = 4;

/// A script that runs longer than this is a failure (forkbox's side is cut off).
const CASE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

#[derive(Clone, Debug, PartialEq)]
enum Mark {
    Full,
    Loose,
    Gap(String),
    Skip(String),
}

#[derive(Clone, Debug)]
struct Case {
    file: String,
    name: String,
    mark: Mark,
    script: String,
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases")
}

/// Parses one case file; an unreadable header is an error naming the line.
fn parse_file(file: &str, text: &str) -> Result<Vec<Case>, String> {
    let mut cases: Vec<Case> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(header) = line.strip_prefix("=== ") {
            let (name, flags) = match header.split_once(" [") {
                Some((name, rest)) => {
                    let flags = rest
                        .strip_suffix(']')
                        .ok_or_else(|| format!("{file}:{}: header without closing ]", n + 1))?;
                    (name.trim(), Some(flags.trim()))
                }
                None => (header.trim(), None),
            };
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(format!("{file}:{}: bad case name {name:?}", n + 1));
            }
            let mark = match flags {
                None => Mark::Full,
                Some("loose") => Mark::Loose,
                Some(f) => match f.split_once(':') {
                    Some(("gap", why)) if !why.trim().is_empty() => Mark::Gap(why.trim().into()),
                    Some(("skip", why)) if !why.trim().is_empty() => Mark::Skip(why.trim().into()),
                    _ => return Err(format!("{file}:{}: unknown flags [{f}]", n + 1)),
                },
            };
            cases.push(Case {
                file: file.to_string(),
                name: name.to_string(),
                mark,
                script: String::new(),
            });
        } else if let Some(case) = cases.last_mut() {
            case.script.push_str(line);
            case.script.push('\n');
        }
    }
    for case in &mut cases {
        while case.script.ends_with("\n\n") {
            case.script.pop();
        }
        if case.script.trim().is_empty() {
            return Err(format!("{file}: case {} has no script", case.name));
        }
    }
    Ok(cases)
}

/// Every case of every file, in file then case order; names must be unique.
fn load_cases() -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("tests/cases")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "cases"))
        .collect();
    files.sort();
    let mut all = Vec::new();
    let mut names = std::collections::HashSet::new();
    for path in files {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("read case file");
        for case in parse_file(&stem, &text).unwrap_or_else(|e| panic!("{e}")) {
            assert!(
                names.insert(case.name.clone()),
                "duplicate case name {} (in {stem}.cases)",
                case.name
            );
            all.push(case);
        }
    }
    all
}

fn registry() -> Registry {
    Registry::with_native()
}

struct Outcome {
    stdout: String,
    stderr: String,
    status: i32,
    /// One line per file or directory left under the working directory.
    files: Vec<String>,
}

/// A line describing one entry for the comparison of what the scripts left.
fn file_line(rel: &str, kind: &str, mode: u32, content: &[u8]) -> String {
    let shown = String::from_utf8_lossy(&content[..content.len().min(200)]).into_owned();
    format!(
        "{rel} {kind} {:o} {} {shown:?}",
        mode & 0o777,
        content.len()
    )
}

/// What forkbox's script left under `dir` (a path of `fs`), depth first, sorted.
async fn forkbox_files(
    fs: &dyn forkbox_commands::FileSystem,
    dir: &str,
    rel: &str,
    out: &mut Vec<String>,
) {
    let Ok(mut entries) = fs.read_dir(dir).await else {
        return;
    };
    // A name holds bytes that are not UTF-8 as characters of their own: compared by
    // those bytes, as bash's side reads its names.
    let bytes = |name: &str| forkbox_commands::bytetext::encode(name).into_owned();
    entries.sort_by_key(|e| bytes(&e.name));
    for e in entries {
        let path = format!("{dir}/{}", e.name);
        let rel = format!("{rel}{}", String::from_utf8_lossy(&bytes(&e.name)));
        match e.meta.kind {
            forkbox_commands::FileKind::Dir => {
                out.push(file_line(&rel, "dir", e.meta.mode, b""));
                Box::pin(forkbox_files(fs, &path, &format!("{rel}/"), out)).await;
            }
            forkbox_commands::FileKind::Symlink => {
                let target = fs.readlink(&path).await.unwrap_or_default();
                out.push(file_line(&rel, "link", 0o777, target.as_bytes()));
            }
            _ => {
                let data = forkbox_commands::fs::read_all(fs, &path, 1 << 20)
                    .await
                    .unwrap_or_default();
                out.push(file_line(&rel, "file", e.meta.mode, &data));
            }
        }
    }
}

/// What bash's script left under `dir`, depth first, sorted.
fn bash_files(dir: &std::path::Path, rel: &str, out: &mut Vec<String>) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = format!("{rel}{name}");
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        let mode = meta.permissions().mode();
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(e.path()).unwrap_or_default();
            out.push(file_line(
                &rel,
                "link",
                0o777,
                target.to_string_lossy().as_bytes(),
            ));
        } else if meta.is_dir() {
            out.push(file_line(&rel, "dir", mode, b""));
            bash_files(&e.path(), &format!("{rel}/"), out);
        } else {
            let data = std::fs::read(e.path()).unwrap_or_default();
            out.push(file_line(&rel, "file", mode, &data));
        }
    }
}

async fn run_forkbox(script: &str) -> Outcome {
    use forkbox::fork::{ForkStrategy, Lease, Overlay, ServerId, SessionId};
    // The base holds only the working directory; the session's files live in the fork.
    let base_dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(base_dir.path().join(WORK.trim_start_matches('/'))).expect("mkdir");
    let base = forkbox::storage::Store::local(base_dir.path()).expect("base store");
    let overlay = Overlay::new(base, forkbox::storage::Store::memory());
    let lease = Lease::new(ServerId::new(), std::time::Duration::from_secs(3600));
    let view = overlay
        .create(SessionId::new(), &lease)
        .await
        .expect("fork");
    let vfs: Arc<dyn forkbox_commands::FileSystem> =
        Arc::new(forkbox::vfs::Vfs::with_quota(view, forkbox::vfs::Quota::default()).with_tmp());
    let mut shell = Shell::new(ShellConfig {
        fs: Arc::new(forkbox::vfs::mounts::Mounts::with_devices(vfs.clone())),
        registry: Arc::new(registry()),
        env: vec![
            ("HOME".into(), WORK.into()),
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("LC_ALL".into(), "C".into()),
        ],
        cwd: WORK.into(),
        interactive: false,
        budget: forkbox_commands::Budget::default(),
    });
    let (out_w, out_r) = pipe();
    let (err_w, err_r) = pipe();
    let stdio = Stdio {
        stdin: Input::empty(),
        stdout: out_w,
        stderr: err_w,
        tty: None,
        terminal: None,
    };
    let read_out =
        tokio::spawn(async move { out_r.read_to_end(64 << 20).await.unwrap_or_default() });
    let read_err =
        tokio::spawn(async move { err_r.read_to_end(64 << 20).await.unwrap_or_default() });
    let run = shell.run_script(script, &stdio, CancellationToken::new());
    let status = tokio::time::timeout(CASE_TIMEOUT, run).await.unwrap_or(-1);
    drop(stdio);
    let status = shell.exit_requested().unwrap_or(status);
    drop(shell);
    let mut files = Vec::new();
    forkbox_files(vfs.as_ref(), WORK, "", &mut files).await;
    Outcome {
        stdout: String::from_utf8_lossy(&read_out.await.unwrap_or_default()).into_owned(),
        stderr: String::from_utf8_lossy(&read_err.await.unwrap_or_default()).into_owned(),
        status,
        files,
    }
}

fn run_bash(script: &str) -> Outcome {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new("/bin/bash")
        // `$0` (and so the messages' prefix) is `bash`, as in `ssh host 'cmd'`.
        .arg0("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir.path())
        .env_clear()
        .env("HOME", dir.path())
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run bash");
    let root = dir.path().to_string_lossy().into_owned();
    let fix = |b: &[u8]| String::from_utf8_lossy(b).replace(&root, WORK);
    let mut files = Vec::new();
    bash_files(dir.path(), "", &mut files);
    let files = files.into_iter().map(|l| l.replace(&root, WORK)).collect();
    Outcome {
        stdout: fix(&out.stdout),
        stderr: fix(&out.stderr),
        status: out.status.code().unwrap_or(-1),
        files,
    }
}

/// What comparing one case found: `None` when it behaved as its mark says.
async fn check(case: Case) -> Option<String> {
    let fb = run_forkbox(&case.script).await;
    let script = case.script.clone();
    let bash = tokio::task::spawn_blocking(move || run_bash(&script))
        .await
        .expect("bash runner");
    let (fe, be) = (&fb.stderr, &bash.stderr);
    let stderr_ok = match case.mark {
        Mark::Loose => fe.is_empty() == be.is_empty(),
        _ => fe == be,
    };
    let same =
        fb.stdout == bash.stdout && fb.status == bash.status && stderr_ok && fb.files == bash.files;
    let report = || {
        format!(
            "--- {}.cases: {}\nscript:\n{}forkbox: status {}\n  stdout: {:?}\n  stderr: {:?}\n  files: {:?}\nbash:    status {}\n  stdout: {:?}\n  stderr: {:?}\n  files: {:?}\n",
            case.file,
            case.name,
            case.script,
            fb.status,
            fb.stdout,
            fe,
            fb.files,
            bash.status,
            bash.stdout,
            be,
            bash.files
        )
    };
    match (&case.mark, same) {
        (Mark::Gap(_), true) => Some(format!(
            "{}\n(this case is marked as a known gap but now matches bash: remove the mark)\n",
            report()
        )),
        (Mark::Gap(_), false) | (_, true) => None,
        (_, false) => Some(report()),
    }
}

/// `docs/CONFORMANCE.md` for these cases (which all behaved as marked).
fn conformance(cases: &[Case]) -> String {
    let mut files: Vec<&str> = cases.iter().map(|c| c.file.as_str()).collect();
    files.dedup();
    let count = |f: &dyn Fn(&Case) -> bool| cases.iter().filter(|c| f(c)).count();
    let is_gap = |c: &Case| matches!(c.mark, Mark::Gap(_));
    let is_skip = |c: &Case| matches!(c.mark, Mark::Skip(_));
    let mut out = String::from(
        "# Conformance with bash and the GNU tools\n\n\
         Generated by `FORKBOX_CONFORMANCE=write cargo test --test cases` from the differential\n\
         cases in `tests/cases/`; do not edit by hand. Each case runs in forkbox and in real\n\
         bash (with the host's GNU tools) in a fresh directory; a pass means the same stdout,\n\
         stderr, exit status and files left behind. A known gap is a case that still differs;\n\
         a deliberate difference is not run.\n\n",
    );
    out.push_str(&format!(
        "All: {} cases, {} pass, {} known gaps, {} deliberate differences.\n\n",
        cases.len(),
        count(&|c| !is_gap(c) && !is_skip(c)),
        count(&is_gap),
        count(&is_skip)
    ));
    out.push_str(
        "| feature | cases | pass | known gaps | deliberate |\n|---|---:|---:|---:|---:|\n",
    );
    for f in &files {
        let of = |c: &Case| c.file == *f;
        out.push_str(&format!(
            "| {f} | {} | {} | {} | {} |\n",
            count(&|c| of(c)),
            count(&|c| of(c) && !is_gap(c) && !is_skip(c)),
            count(&|c| of(c) && is_gap(c)),
            count(&|c| of(c) && is_skip(c)),
        ));
    }
    let marked: Vec<&Case> = cases.iter().filter(|c| is_gap(c) || is_skip(c)).collect();
    if !marked.is_empty() {
        out.push_str("\n## Known gaps and deliberate differences\n\n");
        for c in marked {
            let (kind, why) = match &c.mark {
                Mark::Gap(w) => ("gap", w),
                Mark::Skip(w) => ("deliberate", w),
                _ => unreachable!(),
            };
            out.push_str(&format!("- {}: `{}` ({kind}): {why}\n", c.file, c.name));
        }
    }
    out
}

#[test]
fn case_files_parse() {
    let cases = parse_file(
        "t",
        "# c\n=== a\necho 1\n\n=== b [loose]\nx\n=== c [gap: why]\ny\n=== d [skip: host]\nz\n",
    )
    .unwrap();
    let marks: Vec<_> = cases.iter().map(|c| c.mark.clone()).collect();
    assert_eq!(
        marks,
        [
            Mark::Full,
            Mark::Loose,
            Mark::Gap("why".into()),
            Mark::Skip("host".into())
        ]
    );
    assert_eq!(cases[0].script, "echo 1\n");
    assert!(parse_file("t", "=== a [odd]\nx\n").is_err());
    assert!(parse_file("t", "=== a\n=== b\nx\n").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forkbox_matches_bash() {
    let all = load_cases();
    assert!(all.len() >= 200, "the suite should hold at least 200 cases");
    let files: Option<Vec<String>> = std::env::var("CASES")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    let only = std::env::var("CASE").ok();
    let selected: Vec<Case> = all
        .iter()
        .filter(|c| files.as_ref().is_none_or(|f| f.contains(&c.file)))
        .filter(|c| only.as_ref().is_none_or(|o| c.name.contains(o.as_str())))
        .filter(|c| !matches!(c.mark, Mark::Skip(_)))
        .cloned()
        .collect();
    let ran = selected.len();
    let failures: Vec<String> = futures::stream::iter(selected.into_iter().map(check))
        .buffered(PARALLEL)
        .filter_map(|r| async move { r })
        .collect()
        .await;
    if !failures.is_empty() {
        panic!(
            "{} of {ran} cases differ from bash:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CONFORMANCE.md");
    let doc = conformance(&all);
    if std::env::var("FORKBOX_CONFORMANCE").is_ok_and(|v| v == "write") {
        std::fs::write(&doc_path, doc).expect("write docs/CONFORMANCE.md");
    } else if files.is_none() && only.is_none() {
        let current = std::fs::read_to_string(&doc_path).unwrap_or_default();
        assert!(
            current == doc,
            "docs/CONFORMANCE.md is stale: run `FORKBOX_CONFORMANCE=write cargo test --test cases`"
        );
    }
}

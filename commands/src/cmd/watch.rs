//! `watch`: run a command repeatedly (through the session's shell, `sh -c`) and show its
//! output, as procps' watch, with its ends: `-g` stops when the output changes (status 0),
//! `-e` when the command fails (status 8), `-q N` after N refreshes without a change
//! (status 0). A session has no curses screen: each refresh prints the header
//! (`Every N.Ns: COMMAND`, not with `-t`), a blank line and the output; on a terminal the
//! screen is cleared first. Bounded by design: without a terminal and without an end
//! (`-g`, `-e`, `-q`), watch shows one refresh and exits 0, so a script or an agent's exec
//! request never hangs on it; otherwise it runs until its end, Ctrl-C or `timeout`.

use std::time::Duration;

use async_trait::async_trait;

use super::getopt::{Arg, Spec, opt, parse};
use crate::{CmdResult, Command, Context, Interrupt};

const USAGE: &str = "
Usage:
 watch [options] command

Options:
  -b, --beep             beep if command has a non-zero exit
  -c, --color            interpret ANSI color and style sequences
  -d, --differences[=<permanent>]
                         highlight changes between updates
  -e, --errexit          exit if command has a non-zero exit
  -g, --chgexit          exit when output from command changes
  -q, --equexit <cycles>
                         exit when output from command does not change
  -n, --interval <secs>  seconds to wait between updates
  -p, --precise          attempt run command in precise intervals
  -t, --no-title         turn off header
  -w, --no-wrap          turn off line wrapping
  -x, --exec             pass command to exec instead of \"sh -c\"

 -h, --help     display this help and exit
 -v, --version  output version information and exit

For more details see watch(1).
";

const SPECS: &[Spec] = &[
    opt('b', Some('b'), Some("beep"), Arg::No),
    opt('c', Some('c'), Some("color"), Arg::No),
    opt('d', Some('d'), Some("differences"), Arg::Optional),
    opt('e', Some('e'), Some("errexit"), Arg::No),
    opt('g', Some('g'), Some("chgexit"), Arg::No),
    opt('q', Some('q'), Some("equexit"), Arg::Required),
    opt('n', Some('n'), Some("interval"), Arg::Required),
    opt('p', Some('p'), Some("precise"), Arg::No),
    opt('t', Some('t'), Some("no-title"), Arg::No),
    opt('w', Some('w'), Some("no-wrap"), Arg::No),
    opt('x', Some('x'), Some("exec"), Arg::No),
    opt('h', Some('h'), Some("help"), Arg::No),
    opt('v', Some('v'), Some("version"), Arg::No),
];

/// Output of one run kept for comparing with the next (more is cut).
const MAX_CAPTURE: usize = 1 << 20;
/// Shortest interval (procps' minimum).
const MIN_INTERVAL: f64 = 0.1;

pub struct Watch;

#[async_trait]
impl Command for Watch {
    fn name(&self) -> &'static str {
        "watch"
    }
    fn summary(&self) -> &'static str {
        "execute a program periodically, showing output"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        // Options stop at the command (procps uses '+' getopt ordering).
        let p = match parse(SPECS, &args, false) {
            Ok(p) => p,
            Err(msg) => {
                ctx.err(format!("watch: {msg}\n{USAGE}")).await;
                return Ok(1);
            }
        };
        if p.has('h') {
            ctx.out(USAGE).await?;
            return Ok(0);
        }
        if p.has('v') {
            ctx.out("watch from procps-ng 4.0.2\n").await?;
            return Ok(0);
        }
        let interval = match p.last('n') {
            None => 2.0,
            Some(s) => match s.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => v.max(MIN_INTERVAL),
                _ => {
                    ctx.err(format!(
                        "watch: failed to parse argument: '{s}': Invalid argument\n"
                    ))
                    .await;
                    return Ok(1);
                }
            },
        };
        let equexit = match p.last('q') {
            None => None,
            Some(s) => match s.parse::<u32>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    ctx.err(format!(
                        "watch: failed to parse argument: '{s}': Invalid argument\n"
                    ))
                    .await;
                    return Ok(1);
                }
            },
        };
        if p.operands.is_empty() {
            ctx.err(USAGE).await;
            return Ok(1);
        }
        let command = p.operands.join(" ");
        let argv: Vec<String> = if p.has('x') {
            p.operands.clone()
        } else {
            vec!["sh".into(), "-c".into(), command.clone()]
        };
        let (chg, err_exit) = (p.has('g'), p.has('e'));
        let bounded_once = ctx.tty.is_none() && !chg && !err_exit && equexit.is_none();
        let mut previous: Option<Vec<u8>> = None;
        let mut same_runs = 0u32;
        loop {
            let (status, output) = run_once(ctx, &argv).await?;
            let mut screen = Vec::new();
            if ctx.tty.is_some() {
                screen.extend_from_slice(b"\x1b[H\x1b[2J");
            }
            if !p.has('t') {
                screen.extend_from_slice(format!("Every {interval:.1}s: {command}\n\n").as_bytes());
            }
            screen.extend_from_slice(&output);
            ctx.stdout.write_all(&screen).await?;
            if err_exit && status != 0 {
                // procps says so on its screen (stdout), then waits for a key.
                ctx.out(format!(
                    "\ncommand exit with a non-zero status ({status})\n"
                ))
                .await?;
                return Ok(8);
            }
            if let Some(prev) = &previous {
                if chg && *prev != output {
                    return Ok(0);
                }
                if *prev == output {
                    same_runs += 1;
                } else {
                    same_runs = 0;
                }
                if equexit.is_some_and(|n| same_runs >= n) {
                    return Ok(0);
                }
            }
            if bounded_once {
                return Ok(0);
            }
            previous = Some(output);
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(interval)) => {}
                _ = ctx.cancel.cancelled() => return Err(Interrupt::Cancelled),
            }
        }
    }
}

/// Runs the command once; its status and (up to [`MAX_CAPTURE`] bytes of) its output,
/// stderr included as on watch's screen.
async fn run_once(ctx: &Context, argv: &[String]) -> Result<(i32, Vec<u8>), Interrupt> {
    let (tx, rx) = crate::pipe();
    let mut child = ctx.clone();
    child.stdout = tx.clone();
    child.stderr = tx;
    child.stdin = crate::Input::empty();
    let launcher = ctx.launcher.clone();
    let argv = argv.to_vec();
    let run = async move { launcher.launch(child, argv).await };
    let read = async move {
        let mut out = Vec::new();
        while let Ok(Some(chunk)) = rx.read_chunk().await {
            if out.len() < MAX_CAPTURE {
                let room = MAX_CAPTURE - out.len();
                out.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
        }
        out
    };
    let (status, output) = tokio::select! {
        r = async { futures::join!(run, read) } => r,
        _ = ctx.cancel.cancelled() => return Err(Interrupt::Cancelled),
    };
    Ok((status, output))
}

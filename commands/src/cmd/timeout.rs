//! `timeout`: run a command with a time limit. The command runs through the launcher
//! with a child cancellation token; at the deadline the token fires (the session's way
//! of sending a signal), and `timeout` gives 124.

use std::time::Duration;

use async_trait::async_trait;
use clap::Parser;

use super::util::quote;
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// How long a cancelled command may take to stop before `timeout` stops waiting.
const STOP_GRACE: Duration = Duration::from_millis(100);

/// Longest duration honoured (about 30 years), as for `sleep`.
const MAX_DURATION: Duration = Duration::from_secs(1_000_000_000);

/// Start COMMAND, and stop it if still running after DURATION. DURATION is a number with
/// an optional suffix: 's' seconds (default), 'm' minutes, 'h' hours, 'd' days; 0
/// disables the timeout. Exit status: 124 if COMMAND times out, 125 if timeout itself
/// fails, 126 if COMMAND cannot run, 127 if it is not found, else COMMAND's status.
#[derive(Parser, Debug)]
#[command(name = "timeout")]
struct Args {
    /// Run COMMAND in the foreground (accepted; there are no process groups here).
    #[arg(long)]
    foreground: bool,
    /// Also stop COMMAND if it still runs this long after the first signal.
    #[arg(short = 'k', long = "kill-after", value_name = "DURATION")]
    kill_after: Option<String>,
    /// Exit with the same status as COMMAND, even when it times out.
    #[arg(long = "preserve-status")]
    preserve_status: bool,
    /// The signal to send on timeout (TERM by default).
    #[arg(short = 's', long, value_name = "SIGNAL")]
    signal: Option<String>,
    /// Diagnose to stderr any signal sent upon timeout.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// DURATION COMMAND [ARG]...
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// `2.5`, `1m`, `0.5h`: seconds in a duration, as GNU parses it.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    let (num, mult) = match s.char_indices().last()? {
        (i, 's') => (&s[..i], 1.0),
        (i, 'm') => (&s[..i], 60.0),
        (i, 'h') => (&s[..i], 3600.0),
        (i, 'd') => (&s[..i], 86400.0),
        _ => (s, 1.0),
    };
    if num.is_empty() || num.starts_with(['+', '-']) {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    Some(
        Duration::try_from_secs_f64(v * mult)
            .unwrap_or(MAX_DURATION)
            .min(MAX_DURATION),
    )
}

/// A signal's number, by name (`TERM`, `SIGKILL`) or number.
fn signal_number(s: &str) -> Option<i32> {
    if let Ok(n) = s.parse::<i32>() {
        return (0..=64).contains(&n).then_some(n);
    }
    let name = s.strip_prefix("SIG").unwrap_or(s);
    Some(match name {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "KILL" => 9,
        "USR1" => 10,
        "USR2" => 12,
        "PIPE" => 13,
        "ALRM" => 14,
        "TERM" => 15,
        "CONT" => 18,
        "STOP" => 19,
        _ => return None,
    })
}

pub struct Timeout;

/// A usage error (status 125); GNU prints only the hint for a missing operand.
async fn usage(ctx: &Context, msg: &str) -> i32 {
    let head = if msg.is_empty() {
        String::new()
    } else {
        format!("timeout: {msg}\n")
    };
    ctx.err(format!(
        "{head}Try 'timeout --help' for more information.\n"
    ))
    .await;
    125
}

#[async_trait]
impl Command for Timeout {
    fn name(&self) -> &'static str {
        "timeout"
    }
    fn summary(&self) -> &'static str {
        "run a command with a time limit"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(Ok(2)) => return Ok(125),
            Err(r) => return r,
        };
        let sig = match &args.signal {
            None => 15,
            Some(s) => match signal_number(s) {
                Some(n) => n,
                None => {
                    return Ok(usage(ctx, &format!("{}: invalid signal", quote(s))).await);
                }
            },
        };
        let kill_after = match &args.kill_after {
            None => None,
            Some(k) => match parse_duration(k) {
                Some(d) => Some(d),
                None => {
                    return Ok(usage(ctx, &format!("invalid time interval {}", quote(k))).await);
                }
            },
        };
        let Some(dur_arg) = args.rest.first() else {
            return Ok(usage(ctx, "").await);
        };
        let Some(duration) = parse_duration(dur_arg) else {
            return Ok(usage(ctx, &format!("invalid time interval {}", quote(dur_arg))).await);
        };
        let argv = args.rest[1..].to_vec();
        let Some(name) = argv.first() else {
            return Ok(usage(ctx, "").await);
        };
        if let Some(e) = ctx.launcher.unrunnable(ctx, name).await {
            ctx.warn(
                "timeout",
                format!("failed to run command {}: {e}", quote(name)),
            )
            .await;
            return Ok(crate::unrunnable_status(&e));
        }
        let token = ctx.cancel.child_token();
        let mut child = ctx.clone();
        child.cancel = token.clone();
        let launcher = ctx.launcher.clone();
        let run = launcher.launch(child, argv.clone());
        tokio::pin!(run);
        if duration.is_zero() {
            return tokio::select! {
                st = &mut run => Ok(st),
                _ = ctx.cancel.cancelled() => Err(Interrupt::Cancelled),
            };
        }
        tokio::select! {
            st = &mut run => return Ok(st),
            _ = tokio::time::sleep(duration) => {}
            _ = ctx.cancel.cancelled() => {
                token.cancel();
                return Err(Interrupt::Cancelled);
            }
        }
        if args.verbose {
            ctx.warn(
                "timeout",
                format!(
                    "sending signal {} to command {}",
                    signal_name(sig),
                    quote(name)
                ),
            )
            .await;
        }
        token.cancel();
        // The command stops at its next await; give it a moment, then stop waiting.
        let grace = kill_after.unwrap_or(STOP_GRACE).min(STOP_GRACE);
        let stopped = tokio::time::timeout(grace, &mut run).await.is_ok();
        if !stopped && kill_after.is_some() && args.verbose {
            ctx.warn(
                "timeout",
                format!("sending signal KILL to command {}", quote(name)),
            )
            .await;
        }
        if args.preserve_status {
            let s = if stopped || kill_after.is_none() {
                sig
            } else {
                9
            };
            return Ok(128 + s);
        }
        Ok(124)
    }
}

fn signal_name(n: i32) -> String {
    match n {
        1 => "HUP".into(),
        2 => "INT".into(),
        9 => "KILL".into(),
        15 => "TERM".into(),
        n => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, TestLauncher};
    use std::sync::Arc;

    fn inv() -> Invocation {
        Invocation {
            launcher: TestLauncher::with(vec![
                Arc::new(super::super::sleep::Sleep),
                Arc::new(super::super::truefalse::False),
            ]),
            ..Invocation::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn stops_at_the_deadline() {
        let start = tokio::time::Instant::now();
        let (st, _, _) = inv().run(&Timeout, &["1.5", "sleep", "10"]).await;
        assert_eq!(st, 124);
        assert!(start.elapsed() < Duration::from_secs(2));
        assert_eq!(inv().run(&Timeout, &["5", "sleep", "1"]).await.0, 0);
        assert_eq!(inv().run(&Timeout, &["5", "false"]).await.0, 1);
        assert_eq!(
            inv()
                .run(
                    &Timeout,
                    &["--preserve-status", "-s", "KILL", "1", "sleep", "9"]
                )
                .await
                .0,
            137
        );
    }

    #[tokio::test]
    async fn errors() {
        let (st, _, err) = inv().run(&Timeout, &["x", "sleep", "1"]).await;
        assert_eq!(st, 125);
        assert!(
            err.starts_with("timeout: invalid time interval 'x'\n"),
            "{err}"
        );
        let (st, _, err) = inv().run(&Timeout, &["1", "nope"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                127,
                "timeout: failed to run command 'nope': No such file or directory\n"
            )
        );
        assert_eq!(inv().run(&Timeout, &[]).await.0, 125);
        assert_eq!(parse_duration("1m"), Some(Duration::from_secs(60)));
        assert_eq!(parse_duration("-1"), None);
    }
}

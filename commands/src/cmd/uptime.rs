//! `uptime`: how long the session's machine has been up, as procps prints it. A session's
//! "system" is its fork, up since the fork was made (the root directory's time); one user
//! (the session's) is logged in, and the load is 0.00: a session sees no host load. Times
//! are UTC, as everywhere in a session.

use std::time::SystemTime;

use async_trait::async_trait;

use super::getopt::{Arg, Spec, opt, parse};
use super::util::utc;
use crate::{CmdResult, Command, Context};

const HELP: &str = "
Usage:
 uptime [options]

Options:
 -p, --pretty   show uptime in pretty format
 -h, --help     display this help and exit
 -s, --since    system up since
 -V, --version  output version information and exit

For more details see uptime(1).
";

const SPECS: &[Spec] = &[
    opt('p', Some('p'), Some("pretty"), Arg::No),
    opt('h', Some('h'), Some("help"), Arg::No),
    opt('s', Some('s'), Some("since"), Arg::No),
    opt('V', Some('V'), Some("version"), Arg::No),
];

pub struct Uptime;

/// `up 2 hours, 5 minutes` (procps' pretty format).
fn pretty(secs: u64) -> String {
    let mins = secs / 60;
    let (weeks, days, hours, minutes) = (
        mins / (60 * 24 * 7),
        mins / (60 * 24) % 7,
        mins / 60 % 24,
        mins % 60,
    );
    let unit = |n: u64, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    let mut parts = Vec::new();
    if weeks > 0 {
        parts.push(unit(weeks, "week"));
    }
    if days > 0 {
        parts.push(unit(days, "day"));
    }
    if hours > 0 {
        parts.push(unit(hours, "hour"));
    }
    if minutes > 0 || parts.is_empty() {
        parts.push(unit(minutes, "minute"));
    }
    format!("up {}", parts.join(", "))
}

/// The classic line: ` 12:34:56 up  1:02,  1 user,  load average: 0.00, 0.00, 0.00`.
fn classic(now: SystemTime, secs: u64) -> String {
    let t = utc(now);
    let mins = secs / 60;
    let days = mins / (60 * 24);
    let (hours, minutes) = (mins / 60 % 24, mins % 60);
    let mut s = format!(" {} up ", t.format("%H:%M:%S"));
    if days > 0 {
        s.push_str(&format!("{days} day{}, ", if days == 1 { "" } else { "s" }));
    }
    if hours > 0 {
        s.push_str(&format!("{hours:2}:{minutes:02}, "));
    } else {
        s.push_str(&format!("{minutes} min, "));
    }
    s.push_str(" 1 user,  load average: 0.00, 0.00, 0.00\n");
    s
}

#[async_trait]
impl Command for Uptime {
    fn name(&self) -> &'static str {
        "uptime"
    }
    fn summary(&self) -> &'static str {
        "tell how long the session has been up"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let p = match parse(SPECS, &args, true) {
            Ok(p) => p,
            Err(msg) => {
                ctx.err(format!("uptime: {msg}\n{HELP}")).await;
                return Ok(1);
            }
        };
        if p.has('h') {
            ctx.out(HELP).await?;
            return Ok(0);
        }
        if p.has('V') {
            ctx.out("uptime from procps-ng 4.0.2\n").await?;
            return Ok(0);
        }
        if let Some(extra) = p.operands.first() {
            ctx.err(format!("uptime: extra operand '{extra}'\n{HELP}"))
                .await;
            return Ok(1);
        }
        let now = SystemTime::now();
        let since = ctx.fs.stat("/").await.map(|m| m.mtime).unwrap_or(now);
        let secs = now.duration_since(since).map(|d| d.as_secs()).unwrap_or(0);
        let text = if p.has('s') {
            format!("{}\n", utc(since).format("%Y-%m-%d %H:%M:%S"))
        } else if p.has('p') {
            format!("{}\n", pretty(secs))
        } else {
            classic(now, secs)
        };
        ctx.out(text).await?;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(pretty(0), "up 0 minutes");
        assert_eq!(pretty(3600 + 60), "up 1 hour, 1 minute");
        assert_eq!(pretty(8 * 86400 + 7200), "up 1 week, 1 day, 2 hours");
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(3723);
        assert_eq!(
            classic(t, 5 * 3600 + 16 * 60),
            " 01:02:03 up  5:16,  1 user,  load average: 0.00, 0.00, 0.00\n"
        );
        assert_eq!(
            classic(t, 86400 + 120),
            " 01:02:03 up 1 day, 2 min,  1 user,  load average: 0.00, 0.00, 0.00\n"
        );
    }
}

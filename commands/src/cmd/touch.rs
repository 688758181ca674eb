//! `touch`: create files or set their modification time. Only the modification time
//! exists in the fork, so -a and -m both set it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use chrono::{NaiveDate, NaiveDateTime, Utc};
use clap::Parser;

use super::util::{missing_operand, quote};
use super::zone::Zone;
use crate::fs::{FsError, WriteMode};
use crate::{CmdResult, Command, Context, parse_args};

/// Update the modification time of each FILE to the current time.
/// A FILE that does not exist is created empty, unless -c is given.
/// Dates are UTC.
#[derive(Parser, Debug)]
#[command(name = "touch")]
struct Args {
    /// Change only the access time (here: the modification time; there is no other).
    #[arg(short = 'a')]
    atime: bool,
    /// Change only the modification time.
    #[arg(short = 'm')]
    mtime: bool,
    /// Do not create any files.
    #[arg(short = 'c', long = "no-create")]
    no_create: bool,
    /// Use DATE instead of the current time: @SECONDS, YYYY-MM-DD,
    /// 'YYYY-MM-DD HH:MM[:SS]', or YYYY-MM-DDTHH:MM:SS[Z].
    #[arg(short = 'd', long = "date", value_name = "DATE")]
    date: Option<String>,
    /// Use [[CC]YY]MMDDhhmm[.ss] instead of the current time.
    #[arg(short = 't', value_name = "STAMP")]
    stamp: Option<String>,
    /// Use this file's time instead of the current time.
    #[arg(short = 'r', long = "reference", value_name = "FILE")]
    reference: Option<String>,
    /// Files to touch.
    files: Vec<String>,
}

/// Parses the `-d` forms listed in the help; a time without a zone is one in `zone`.
pub(crate) fn parse_date(s: &str, zone: &Zone) -> Option<SystemTime> {
    let s = s.trim();
    if let Some(secs) = s.strip_prefix('@') {
        let v: f64 = secs.parse().ok()?;
        // Only times a date can show (chrono's range); inf, NaN and 1e20 are none.
        let whole = v.trunc();
        if !(-1e13..=1e13).contains(&whole) {
            return None;
        }
        chrono::DateTime::<Utc>::from_timestamp(whole as i64, 0)?;
        let d = Duration::try_from_secs_f64(v.abs()).ok()?;
        return if v >= 0.0 {
            UNIX_EPOCH.checked_add(d)
        } else {
            UNIX_EPOCH.checked_sub(d)
        };
    }
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(dt.into());
    }
    let (s, zone) = match s
        .strip_suffix(['Z', 'z'])
        .or_else(|| s.strip_suffix(" UTC"))
    {
        Some(s) => (s, &Zone::utc()),
        None => (s, zone),
    };
    for fmt in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(s, fmt) {
            return zone.instant(dt);
        }
    }
    let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    zone.instant(d.and_hms_opt(0, 0, 0)?)
}

fn parse_stamp(s: &str, zone: &Zone) -> Option<SystemTime> {
    let (main, secs) = match s.split_once('.') {
        Some((m, sec)) => (m, sec.parse::<u32>().ok().filter(|_| sec.len() == 2)?),
        None => (s, 0),
    };
    if !main.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let now_year = chrono::Datelike::year(&Utc::now());
    let (year, rest) = match main.len() {
        8 => (now_year, main),
        10 => {
            let yy: i32 = main[..2].parse().ok()?;
            (if yy < 69 { 2000 + yy } else { 1900 + yy }, &main[2..])
        }
        12 => (main[..4].parse().ok()?, &main[4..]),
        _ => return None,
    };
    let num = |i: usize| rest[i..i + 2].parse::<u32>().ok();
    let date = NaiveDate::from_ymd_opt(year, num(0)?, num(2)?)?;
    let dt = date.and_hms_opt(num(4)?, num(6)?, secs)?;
    zone.instant(dt)
}

pub struct Touch;

#[async_trait]
impl Command for Touch {
    fn name(&self) -> &'static str {
        "touch"
    }
    fn summary(&self) -> &'static str {
        "change file timestamps or create empty files"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.files.is_empty() {
            return Ok(missing_operand(ctx, "touch").await);
        }
        let time = if let Some(d) = &args.date {
            match super::date::read_date(d, &Zone::from_env(&ctx.env)) {
                Some(t) => t,
                None => {
                    ctx.warn("touch", format!("invalid date format {}", quote(d)))
                        .await;
                    return Ok(1);
                }
            }
        } else if let Some(t) = &args.stamp {
            match parse_stamp(t, &Zone::from_env(&ctx.env)) {
                Some(t) => t,
                None => {
                    ctx.warn("touch", format!("invalid date format {}", quote(t)))
                        .await;
                    return Ok(1);
                }
            }
        } else if let Some(r) = &args.reference {
            match ctx.fs.stat(&ctx.path(r)).await {
                Ok(m) => m.mtime,
                Err(e) => {
                    ctx.warn(
                        "touch",
                        format!("failed to get attributes of {}: {e}", quote(r)),
                    )
                    .await;
                    return Ok(1);
                }
            }
        } else {
            SystemTime::now()
        };
        let mut status = 0;
        for f in &args.files {
            if f == "-" {
                // GNU touches standard output itself, not a file named `-`: a pipe or a
                // terminal has no time here to change, and a redirected file was just
                // written by the shell.
                continue;
            }
            let path = ctx.path(f);
            let res = match ctx.fs.stat(&path).await {
                Ok(_) => ctx.fs.set_mtime(&path, time).await,
                Err(FsError::NotFound) if args.no_create => Ok(()),
                Err(FsError::NotFound) => match ctx.fs.open_write(&path, WriteMode::Append).await {
                    Ok(h) => match h.close().await {
                        Ok(()) => ctx.fs.set_mtime(&path, time).await,
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            if let Err(e) = res {
                ctx.warn("touch", format!("cannot touch {}: {e}", quote(f)))
                    .await;
                status = 1;
            }
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FileSystem;
    use crate::cmd::util::epoch_secs;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn creates_and_sets_times() {
        let fs = MemFs::with_files(&[("/f", "keep")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        assert_eq!(
            inv.run(&Touch, &["f", "new"]).await,
            (0, String::new(), String::new())
        );
        assert_eq!(fs.text("/f").unwrap(), "keep");
        assert_eq!(fs.text("/new").unwrap(), "");
        assert_eq!(inv.run(&Touch, &["-c", "nope"]).await.0, 0);
        assert!(!fs.exists("/nope"));
        inv.run(&Touch, &["-d", "2020-01-02 03:04:05", "f"]).await;
        assert_eq!(
            epoch_secs(fs.stat("/f").await.unwrap().mtime),
            1_577_934_245
        );
        inv.run(&Touch, &["-d", "@100", "f"]).await;
        assert_eq!(epoch_secs(fs.stat("/f").await.unwrap().mtime), 100);
        inv.run(&Touch, &["-t", "202001020304.05", "f"]).await;
        assert_eq!(
            epoch_secs(fs.stat("/f").await.unwrap().mtime),
            1_577_934_245
        );
        inv.run(&Touch, &["-r", "f", "new"]).await;
        assert_eq!(
            epoch_secs(fs.stat("/new").await.unwrap().mtime),
            1_577_934_245
        );
    }

    #[tokio::test]
    async fn errors() {
        let inv = Invocation::default();
        let (st, _, err) = inv.run(&Touch, &["a/b"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "touch: cannot touch 'a/b': No such file or directory\n")
        );
        let (st, _, err) = inv.run(&Touch, &["-d", "yesterday-ish", "x"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "touch: invalid date format 'yesterday-ish'\n")
        );
        assert_eq!(inv.run(&Touch, &[]).await.0, 1);
    }
}

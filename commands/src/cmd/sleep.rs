//! `sleep`: wait; GNU suffixes s, m, h, d and fractions. Ctrl-C ends it (status 130).

use std::time::Duration;

use async_trait::async_trait;
use clap::Parser;

use super::util::{missing_operand, quote};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Longest sleep honoured (about 30 years); longer requests sleep this long instead of
/// overflowing a duration.
const MAX_SLEEP: Duration = Duration::from_secs(1_000_000_000);

/// Pause for NUMBER seconds, the sum of the arguments. SUFFIX may be 's' for seconds
/// (the default), 'm' for minutes, 'h' for hours or 'd' for days. NUMBER may be a
/// fraction.
#[derive(Parser, Debug)]
#[command(name = "sleep")]
struct Args {
    /// NUMBER[SUFFIX]...
    #[arg(value_name = "NUMBER[SUFFIX]")]
    times: Vec<String>,
}

fn parse_interval(s: &str) -> Option<f64> {
    let (num, mult) = match s.char_indices().last()? {
        (i, 's') => (&s[..i], 1.0),
        (i, 'm') => (&s[..i], 60.0),
        (i, 'h') => (&s[..i], 3600.0),
        (i, 'd') => (&s[..i], 86400.0),
        _ => (s, 1.0),
    };
    let v: f64 = num.parse().ok()?;
    (v >= 0.0 && !v.is_nan() && !num.starts_with('+')).then_some(v * mult)
}

pub struct Sleep;

#[async_trait]
impl Command for Sleep {
    fn name(&self) -> &'static str {
        "sleep"
    }
    fn summary(&self) -> &'static str {
        "delay for a specified amount of time"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.times.is_empty() {
            return Ok(missing_operand(ctx, "sleep").await);
        }
        let mut total = 0.0;
        for t in &args.times {
            match parse_interval(t) {
                Some(v) => total += v,
                None => {
                    ctx.err(format!(
                        "sleep: invalid time interval {}\nTry 'sleep --help' for more information.\n",
                        quote(t)
                    ))
                    .await;
                    return Ok(1);
                }
            }
        }
        let dur = Duration::try_from_secs_f64(total)
            .unwrap_or(MAX_SLEEP)
            .min(MAX_SLEEP);
        tokio::select! {
            _ = tokio::time::sleep(dur) => Ok(0),
            _ = ctx.cancel.cancelled() => Err(Interrupt::Cancelled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test(start_paused = true)]
    async fn sleeps_the_sum() {
        let start = tokio::time::Instant::now();
        let (st, _, _) = Invocation::default()
            .run(&Sleep, &["1.5", "1m", "0.5s"])
            .await;
        assert_eq!(st, 0);
        assert_eq!(start.elapsed().as_secs(), 62);
        let (st, _, _) = Invocation::default().run(&Sleep, &["1d"]).await;
        assert_eq!(st, 0);
        assert!(start.elapsed().as_secs() >= 86400);
    }

    #[tokio::test]
    async fn errors() {
        let (st, _, err) = Invocation::default().run(&Sleep, &["x"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "sleep: invalid time interval 'x'\nTry 'sleep --help' for more information.\n"
            )
        );
        assert_eq!(Invocation::default().run(&Sleep, &["-1"]).await.0, 1);
        assert_eq!(Invocation::default().run(&Sleep, &[]).await.0, 1);
        assert_eq!(parse_interval("2h"), Some(7200.0));
        assert_eq!(parse_interval("1e3"), Some(1000.0));
    }
}

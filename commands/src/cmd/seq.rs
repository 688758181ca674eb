//! `seq`: print a sequence of numbers.

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, Pacer, quote};
use crate::{CmdResult, Command, Context, parse_args};

/// Print numbers from FIRST to LAST, in steps of INCREMENT.
/// FIRST and INCREMENT default to 1.
#[derive(Parser, Debug)]
#[command(name = "seq", allow_negative_numbers = true)]
struct Args {
    /// Use printf style floating-point FORMAT.
    #[arg(short = 'f', long, value_name = "FORMAT")]
    format: Option<String>,
    /// Use STRING to separate numbers.
    #[arg(
        short = 's',
        long,
        value_name = "STRING",
        default_value = "\n",
        hide_default_value = true
    )]
    separator: String,
    /// Equalize width by padding with leading zeroes.
    #[arg(short = 'w', long = "equal-width")]
    equal_width: bool,
    /// [FIRST [INCREMENT]] LAST
    #[arg(value_name = "NUMBER", required = true, num_args = 1..)]
    numbers: Vec<String>,
}

/// Below this magnitude every integer is exactly a `f64`, so it prints the same as an
/// `i64` (2^53).
const INTEGER_EXACT: f64 = 9_007_199_254_740_992.0;

/// The largest step the integer-only path takes, as GNU's `SEQ_FAST_STEP_LIMIT`.
const FAST_STEP_LIMIT: u32 = 200;

/// Checks a `-f` FORMAT as GNU does: exactly one floating-point directive (`%[flags]
/// [width][.prec][L]` then one of `efgaEFGA`) beside any `%%`.
fn check_format(f: &str) -> Result<(), String> {
    let b = f.as_bytes();
    let q = quote(f);
    let mut found = false;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        if b.get(i + 1) == Some(&b'%') {
            i += 2;
            continue;
        }
        if found {
            return Err(format!("format {q} has too many % directives"));
        }
        i += 1;
        while i < b.len() && b"-+ #0'".contains(&b[i]) {
            i += 1;
        }
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
        if b.get(i) == Some(&b'L') {
            i += 1;
        }
        match b.get(i) {
            None => return Err(format!("format {q} ends in %")),
            Some(c) if b"efgaEFGA".contains(c) => {}
            Some(_) => {
                let c = f[i..].chars().next().unwrap_or('%');
                return Err(format!("format {q} has unknown %{c} directive"));
            }
        }
        found = true;
        i += 1;
    }
    if found {
        Ok(())
    } else {
        Err(format!("format {q} has no % directive"))
    }
}

/// Adds `step` to the decimal number `digits` (most significant first).
fn add_small(digits: &mut Vec<u8>, step: u32) {
    let mut carry = step;
    for d in digits.iter_mut().rev() {
        if carry == 0 {
            return;
        }
        let v = u32::from(*d - b'0') + carry;
        *d = b'0' + (v % 10) as u8;
        carry = v / 10;
    }
    while carry > 0 {
        digits.insert(0, b'0' + (carry % 10) as u8);
        carry /= 10;
    }
}

/// GNU's integer-only sequence, for non-negative integers of any length: what it prints
/// where a float could not hold the numbers (`seq 99999999999999999998 99999999999999999999`).
async fn seq_integers(ctx: &Context, first: &str, step: u32, last: &str, sep: &[u8]) -> CmdResult {
    let trim = |s: &str| -> Vec<u8> {
        let t = s.trim_start_matches('0');
        if t.is_empty() {
            b"0".to_vec()
        } else {
            t.as_bytes().to_vec()
        }
    };
    let (mut v, last) = (trim(first), trim(last));
    let not_past = |v: &[u8]| v.len().cmp(&last.len()).then_with(|| v.cmp(&last)).is_le();
    let mut out = BufOut::new(ctx);
    let mut pacer = Pacer::default();
    let mut wrote = false;
    while not_past(&v) {
        if wrote {
            out.write(sep).await?;
        }
        out.write(&v).await?;
        wrote = true;
        add_small(&mut v, step);
        pacer.tick(ctx).await?;
    }
    if wrote {
        out.write(b"\n").await?;
    }
    out.flush().await?;
    Ok(0)
}

/// Digits after the point as written (`1.50` has 2; `1e3` has 0).
fn decimals(s: &str) -> usize {
    if s.contains(['e', 'E']) {
        return 0;
    }
    s.split_once('.').map(|(_, d)| d.len()).unwrap_or(0)
}

pub struct Seq;

async fn usage(ctx: &Context, msg: String) -> i32 {
    ctx.err(format!(
        "seq: {msg}\nTry 'seq --help' for more information.\n"
    ))
    .await;
    1
}

#[async_trait]
impl Command for Seq {
    fn name(&self) -> &'static str {
        "seq"
    }
    fn summary(&self) -> &'static str {
        "print a sequence of numbers"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if let Some(extra) = args.numbers.get(3) {
            return Ok(usage(ctx, format!("extra operand {}", quote(extra))).await);
        }
        if let Some(f) = &args.format {
            if args.equal_width {
                let msg = "format string may not be specified when printing equal width strings";
                return Ok(usage(ctx, msg.to_string()).await);
            }
            if let Err(msg) = check_format(f) {
                ctx.warn("seq", msg).await;
                return Ok(1);
            }
        }
        let mut nums = Vec::new();
        for n in &args.numbers {
            match n.parse::<f64>() {
                Ok(v) if !v.is_nan() => nums.push(v),
                _ => {
                    return Ok(usage(
                        ctx,
                        format!("invalid floating point argument: {}", quote(n)),
                    )
                    .await);
                }
            }
        }
        let (first, inc, last) = match nums.as_slice() {
            [l] => (1.0, 1.0, *l),
            [f, l] => (*f, 1.0, *l),
            [f, i, l] => (*f, *i, *l),
            _ => return Ok(1),
        };
        if inc == 0.0 {
            return Ok(usage(
                ctx,
                format!("invalid Zero increment value: {}", quote(&args.numbers[1])),
            )
            .await);
        }
        let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let step = match args.numbers.len() {
            3 => u32::try_from(inc as u64)
                .ok()
                .filter(|_| all_digits(&args.numbers[1])),
            _ => Some(1),
        };
        if let Some(step) = step.filter(|s| (1..=FAST_STEP_LIMIT).contains(s))
            && args.format.is_none()
            && !args.equal_width
            && args.separator.len() == 1
            && args.numbers.iter().all(|n| all_digits(n))
            && nums.iter().any(|v| v.abs() >= INTEGER_EXACT)
        {
            let first = if args.numbers.len() == 1 {
                "1"
            } else {
                &args.numbers[0]
            };
            let last = &args.numbers[args.numbers.len() - 1];
            return seq_integers(
                ctx,
                first,
                step,
                last,
                &crate::bytetext::encode(&args.separator),
            )
            .await;
        }
        let (first_s, inc_s) = match args.numbers.len() {
            1 => ("1", "1"),
            2 => (args.numbers[0].as_str(), "1"),
            _ => (args.numbers[0].as_str(), args.numbers[1].as_str()),
        };
        let prec = decimals(first_s).max(decimals(inc_s));
        let render = |v: f64| -> String {
            if let Some(f) = &args.format {
                String::from_utf8_lossy(&super::printf::sprintf(f, &[format!("{v}")])).into_owned()
            } else if prec == 0 && v.fract() == 0.0 && v.abs() < INTEGER_EXACT && v != 0.0 {
                // The same digits as `{v:.0}` (the value is an exact integer), at a
                // fraction of the cost of float formatting: `seq 1 100000` in a loop.
                (v as i64).to_string()
            } else {
                format!("{v:.prec$}")
            }
        };
        let width = if args.equal_width && args.format.is_none() {
            render(first).len().max(render(last).len())
        } else {
            0
        };
        let mut out = BufOut::new(ctx);
        let mut pacer = Pacer::default();
        let mut i: u64 = 0;
        let mut wrote = false;
        let mut previous: Option<f64> = None;
        loop {
            let v = first + inc * i as f64;
            if (inc > 0.0 && v > last + inc.abs() * 1e-10)
                || (inc < 0.0 && v < last - inc.abs() * 1e-10)
                // Past 2^53 a step can be below the float's precision (`seq 1e308 1e308`):
                // a value that did not move ends the sequence instead of repeating forever.
                || previous == Some(v)
            {
                break;
            }
            previous = Some(v);
            let mut s = render(v);
            if width > 0 && s.len() < width {
                let neg = s.starts_with('-');
                let digits = s.trim_start_matches('-').to_string();
                s = format!(
                    "{}{}{digits}",
                    if neg { "-" } else { "" },
                    "0".repeat(width - s.len())
                );
            }
            if wrote {
                out.write_text(&args.separator).await?;
            }
            out.write(s.as_bytes()).await?;
            wrote = true;
            i += 1;
            pacer.tick(ctx).await?;
        }
        if wrote {
            out.write(b"\n").await?;
        }
        out.flush().await?;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn seq(args: &[&str]) -> (i32, String, String) {
        Invocation::default().run(&Seq, args).await
    }

    /// Found by the fuzz harness's edge inputs: a step below the float's precision printed
    /// the same number until cancelled.
    #[tokio::test]
    async fn steps_below_precision_end() {
        let inv = Invocation::default();
        let (st, out, _) = inv.run(&Seq, &["1e308", "1e308"]).await;
        assert_eq!((st, out.lines().count()), (0, 1));
        let (st, out, _) = inv.run(&Seq, &["1e17", "1e17"]).await;
        assert_eq!((st, out.as_str()), (0, "100000000000000000\n"));
    }

    #[tokio::test]
    async fn sequences_like_gnu() {
        assert_eq!(seq(&["3"]).await.1, "1\n2\n3\n");
        assert_eq!(seq(&["-1", "1"]).await.1, "-1\n0\n1\n");
        assert_eq!(seq(&["5", "-2", "1"]).await.1, "5\n3\n1\n");
        assert_eq!(seq(&["1", "0.5", "2"]).await.1, "1.0\n1.5\n2.0\n");
        assert_eq!(seq(&["0.1", "0.1", "0.3"]).await.1, "0.1\n0.2\n0.3\n");
        assert_eq!(seq(&["-w", "8", "10"]).await.1, "08\n09\n10\n");
        assert_eq!(seq(&["-s", ",", "3"]).await.1, "1,2,3\n");
        assert_eq!(seq(&["-f", "%03g", "3"]).await.1, "001\n002\n003\n");
        assert_eq!(seq(&["5", "1"]).await.1, "");
    }

    #[tokio::test]
    async fn errors() {
        let (st, _, err) = seq(&["x"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "seq: invalid floating point argument: 'x'\nTry 'seq --help' for more information.\n"
            )
        );
        let (st, _, err) = seq(&["1", "0", "3"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "seq: invalid Zero increment value: '0'\nTry 'seq --help' for more information.\n"
            )
        );
        assert_eq!(seq(&[]).await.0, 1);
    }

    #[test]
    fn formats_are_checked() {
        assert_eq!(check_format("%03g"), Ok(()));
        assert_eq!(check_format("%%%.2Lf%%"), Ok(()));
        assert!(check_format("%d").is_err_and(|e| e.contains("unknown %d")));
        assert!(check_format("%g%g").is_err_and(|e| e.contains("too many")));
        assert!(check_format("x%").is_err_and(|e| e.ends_with("ends in %")));
        assert!(check_format("x").is_err_and(|e| e.ends_with("no % directive")));
    }

    #[tokio::test]
    async fn integers_past_a_float() {
        let out = seq(&["99999999999999999998", "2", "100000000000000000003"])
            .await
            .1;
        assert_eq!(
            out,
            "99999999999999999998\n100000000000000000000\n100000000000000000002\n"
        );
    }
}

//! `shuf`: random permutations of lines, of the operands (`-e`) or of a range (`-i`).
//! Input lines are read whole (charged to the session's budget); a range is never
//! materialised when `-n` picks few of it or `-r` repeats.
//!
//! The generator is a SplitMix64 seeded from the system's randomness, or from the bytes
//! of `--random-source` (so that source gives repeatable output; not GNU's sequence).

use async_trait::async_trait;
use clap::Parser;

use super::textin::{records, slurp};
use super::util::{BufOut, Pacer, quote, quotef};
use crate::fs::WriteMode;
use crate::{CmdResult, Command, Context, parse_args};

/// Most bytes of `--random-source` read to seed the generator.
const SEED_BYTES: usize = 4096;

/// Write a random permutation of the input lines to standard output. With no FILE, or
/// when FILE is -, read standard input.
#[derive(Parser, Debug)]
#[command(name = "shuf")]
struct Args {
    /// Treat each ARG as an input line.
    #[arg(short = 'e', long)]
    echo: bool,
    /// Treat each number LO through HI as an input line.
    #[arg(short = 'i', long = "input-range", value_name = "LO-HI")]
    range: Option<String>,
    /// Output at most COUNT lines.
    #[arg(short = 'n', long = "head-count", value_name = "COUNT")]
    count: Option<String>,
    /// Write result to FILE instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<String>,
    /// Get random bytes from FILE.
    #[arg(long = "random-source", value_name = "FILE")]
    random_source: Option<String>,
    /// Output lines can be repeated.
    #[arg(short = 'r', long)]
    repeat: bool,
    /// Line delimiter is NUL, not newline.
    #[arg(short = 'z', long = "zero-terminated")]
    zero: bool,
    /// FILE, or the ARGs of -e.
    operands: Vec<String>,
}

/// SplitMix64: small, fast, good enough to shuffle.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), without modulo bias.
    fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let v = self.next();
            if v < zone {
                return v % n;
            }
        }
    }
}

pub struct Shuf;

/// A usage error worded as GNU's, with its hint (status 1).
async fn usage(ctx: &Context, msg: String) -> i32 {
    super::util::usage_error(ctx, "shuf", &msg).await
}

#[async_trait]
impl Command for Shuf {
    fn name(&self) -> &'static str {
        "shuf"
    }
    fn summary(&self) -> &'static str {
        "generate random permutations"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.echo && args.range.is_some() {
            return Ok(usage(ctx, "cannot combine -e and -i options".into()).await);
        }
        let count = match &args.count {
            None => None,
            Some(c) => match c.parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    ctx.warn("shuf", format!("invalid line count: {}", quote(c)))
                        .await;
                    return Ok(1);
                }
            },
        };
        let range = match &args.range {
            None => None,
            Some(r) => {
                let parsed = r
                    .split_once('-')
                    .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
                    .filter(|(lo, hi)| hi.checked_add(1).is_some_and(|h| h >= *lo));
                match parsed {
                    Some(p) => Some(p),
                    None => {
                        ctx.warn("shuf", format!("invalid input range: {}", quote(r)))
                            .await;
                        return Ok(1);
                    }
                }
            }
        };
        if range.is_some() && !args.operands.is_empty() {
            return Ok(usage(ctx, format!("extra operand {}", quote(&args.operands[0]))).await);
        }
        if !args.echo && range.is_none() && args.operands.len() > 1 {
            return Ok(usage(ctx, format!("extra operand {}", quote(&args.operands[1]))).await);
        }
        let mut rng = Rng(rand::random::<u64>());
        if let Some(src) = &args.random_source {
            let mut charge = ctx.budget.empty_charge();
            let Some(bytes) = slurp(ctx, "shuf", src, &mut charge).await? else {
                return Ok(1);
            };
            let mut seed = 0xcbf2_9ce4_8422_2325u64;
            for b in bytes.iter().take(SEED_BYTES) {
                seed = (seed ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
            }
            rng = Rng(seed);
        }
        let eol = if args.zero { 0u8 } else { b'\n' };
        let mut charge = ctx.budget.empty_charge();
        // The lines to permute, unless they are a range.
        let lines: Vec<Vec<u8>> = if range.is_some() {
            Vec::new()
        } else if args.echo {
            args.operands
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect()
        } else {
            let f = args.operands.first().cloned().unwrap_or_else(|| "-".into());
            let Some(data) = slurp(ctx, "shuf", &f, &mut charge).await? else {
                return Ok(1);
            };
            charge.grow(data.len())?;
            records(&data, eol)
                .into_iter()
                .map(<[u8]>::to_vec)
                .collect()
        };
        let n = match range {
            Some((lo, hi)) => hi + 1 - lo,
            None => lines.len() as u64,
        };
        let item = |i: u64| -> Vec<u8> {
            match range {
                Some((lo, _)) => (lo + i).to_string().into_bytes(),
                None => lines[i as usize].clone(),
            }
        };
        // The indices to print, in order.
        let mut picks: Vec<u64> = Vec::new();
        let mut pacer = Pacer::default();
        let want = count.unwrap_or(if args.repeat { u64::MAX } else { n });
        let mut out_buf = Vec::new();
        let mut sink = Sink::open(ctx, args.output.as_deref()).await?;
        let Some(sink_ref) = sink.as_mut() else {
            return Ok(1);
        };
        if args.repeat {
            if n == 0 {
                if want > 0 && count != Some(0) {
                    ctx.warn("shuf", "no lines to repeat").await;
                    return Ok(1);
                }
            } else {
                let mut written = 0u64;
                while written < want {
                    out_buf.extend_from_slice(&item(rng.below(n)));
                    out_buf.push(eol);
                    written += 1;
                    if out_buf.len() >= super::util::OUT_BUF {
                        sink_ref.write(ctx, &std::mem::take(&mut out_buf)).await?;
                    }
                    pacer.tick(ctx).await?;
                }
            }
        } else {
            let k = want.min(n);
            charge.grow(usize::try_from(k).unwrap_or(usize::MAX).saturating_mul(8))?;
            // A partial Fisher-Yates over a sparse map of swapped positions.
            let mut swapped: std::collections::HashMap<u64, u64> = Default::default();
            for i in 0..k {
                let j = i + rng.below(n - i);
                let vi = *swapped.get(&i).unwrap_or(&i);
                let vj = *swapped.get(&j).unwrap_or(&j);
                swapped.insert(j, vi);
                picks.push(vj);
                pacer.tick(ctx).await?;
            }
            for p in picks {
                out_buf.extend_from_slice(&item(p));
                out_buf.push(eol);
                if out_buf.len() >= super::util::OUT_BUF {
                    sink_ref.write(ctx, &std::mem::take(&mut out_buf)).await?;
                }
                pacer.tick(ctx).await?;
            }
        }
        sink_ref.write(ctx, &out_buf).await?;
        Ok(if sink_ref.finish(ctx).await? { 0 } else { 1 })
    }
}

/// stdout, or the `-o` file (opened after the input is read, as GNU does).
enum Sink<'a> {
    Stdout(BufOut<'a>),
    File(String, Option<Box<dyn crate::WriteHandle>>, bool),
}

impl<'a> Sink<'a> {
    async fn open(
        ctx: &'a Context,
        path: Option<&str>,
    ) -> Result<Option<Sink<'a>>, crate::Interrupt> {
        match path {
            None => Ok(Some(Sink::Stdout(BufOut::new(ctx)))),
            Some(p) => match ctx.fs.open_write(&ctx.path(p), WriteMode::Truncate).await {
                Ok(h) => Ok(Some(Sink::File(p.to_string(), Some(h), true))),
                Err(e) => {
                    ctx.warn("shuf", format!("{}: {e}", quotef(p))).await;
                    Ok(None)
                }
            },
        }
    }

    async fn write(&mut self, ctx: &Context, data: &[u8]) -> Result<(), crate::Interrupt> {
        match self {
            Sink::Stdout(o) => o.write(data).await,
            Sink::File(name, Some(h), ok) => {
                if *ok && let Err(e) = h.write(data).await {
                    ctx.warn("shuf", format!("{}: {e}", quotef(name))).await;
                    *ok = false;
                }
                Ok(())
            }
            Sink::File(..) => Ok(()),
        }
    }

    /// Flushes or closes; `false` when the file could not be written.
    async fn finish(&mut self, ctx: &Context) -> Result<bool, crate::Interrupt> {
        match self {
            Sink::Stdout(o) => o.flush().await.map(|_| true),
            Sink::File(name, h, ok) => {
                if let Some(h) = h.take()
                    && let Err(e) = h.close().await
                {
                    if *ok {
                        ctx.warn("shuf", format!("{}: {e}", quotef(name))).await;
                    }
                    return Ok(false);
                }
                Ok(*ok)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    async fn shuf(stdin: &str, args: &[&str]) -> (i32, String, String) {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(&Shuf, args)
        .await
    }

    fn sorted(s: &str) -> Vec<&str> {
        let mut v: Vec<&str> = s.lines().collect();
        v.sort();
        v
    }

    #[tokio::test]
    async fn permutes() {
        let (st, out, _) = shuf("", &["-i", "1-5"]).await;
        assert_eq!((st, sorted(&out)), (0, vec!["1", "2", "3", "4", "5"]));
        let (_, out, _) = shuf("a\nb\nc\n", &[]).await;
        assert_eq!(sorted(&out), vec!["a", "b", "c"]);
        let (_, out, _) = shuf("", &["-e", "x", "y", "-n", "1"]).await;
        assert!(out == "x\n" || out == "y\n");
        let (_, out, _) = shuf("", &["-r", "-n", "7", "-i", "3-3"]).await;
        assert_eq!(out, "3\n".repeat(7));
        let (_, out, _) = shuf("", &["-i", "1-1000000000000", "-n", "2"]).await;
        assert_eq!(out.lines().count(), 2);
    }

    #[tokio::test]
    async fn a_random_source_repeats() {
        let fs = MemFs::with_files(&[("/seed", "some bytes")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let a = inv
            .run(&Shuf, &["--random-source=seed", "-i", "1-50"])
            .await
            .1;
        let b = inv
            .run(&Shuf, &["--random-source=seed", "-i", "1-50"])
            .await
            .1;
        assert_eq!(a, b);
        assert_eq!(inv.run(&Shuf, &["-i", "1-3", "-o", "out"]).await.0, 0);
        assert_eq!(fs.text("/out").map(|s| s.lines().count()), Some(3));
    }

    #[tokio::test]
    async fn errors() {
        assert_eq!(
            shuf("", &["-i", "5-1"]).await.2,
            "shuf: invalid input range: '5-1'\n"
        );
        assert_eq!(shuf("", &["-n", "x", "-e", "a"]).await.0, 1);
        assert_eq!(shuf("", &["-i", "1-2", "-e", "a"]).await.0, 1);
        assert_eq!(shuf("", &["a", "b"]).await.0, 1);
    }
}

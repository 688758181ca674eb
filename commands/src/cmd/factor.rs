//! `factor`: prime factors of unsigned 64-bit numbers (Miller-Rabin and Pollard's rho,
//! yielding between numbers), from the operands or standard input.

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, MAX_LINE, Reader, quote};
use crate::{CmdResult, Command, Context, parse_args};

/// Print the prime factors of each specified integer NUMBER. If none are specified on
/// the command line, read them from standard input.
#[derive(Parser, Debug)]
#[command(name = "factor", disable_help_flag = true)]
struct Args {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// NUMBER
    numbers: Vec<String>,
}

fn mul_mod(a: u64, b: u64, m: u64) -> u64 {
    ((u128::from(a) * u128::from(b)) % u128::from(m)) as u64
}

fn pow_mod(mut b: u64, mut e: u64, m: u64) -> u64 {
    let mut r = 1 % m;
    b %= m;
    while e > 0 {
        if e & 1 == 1 {
            r = mul_mod(r, b, m);
        }
        b = mul_mod(b, b, m);
        e >>= 1;
    }
    r
}

/// Deterministic for every u64 with these bases.
fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    for p in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
        if n.is_multiple_of(p) {
            return n == p;
        }
    }
    let mut d = n - 1;
    let mut s = 0;
    while d.is_multiple_of(2) {
        d /= 2;
        s += 1;
    }
    'bases: for a in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
        let mut x = pow_mod(a, d, n);
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = mul_mod(x, x, n);
            if x == n - 1 {
                continue 'bases;
            }
        }
        return false;
    }
    true
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A non-trivial divisor of the odd composite `n`.
fn rho(n: u64) -> u64 {
    let mut c = 1u64;
    loop {
        let f = |x: u64| (mul_mod(x, x, n) + c) % n;
        let (mut x, mut y, mut d) = (2u64, 2u64, 1u64);
        while d == 1 {
            x = f(x);
            y = f(f(y));
            d = gcd(x.abs_diff(y), n);
        }
        if d != n {
            return d;
        }
        c += 1;
    }
}

fn factors(mut n: u64, out: &mut Vec<u64>) {
    if n < 2 {
        return;
    }
    for p in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
        while n > 1 && n.is_multiple_of(p) {
            out.push(p);
            n /= p;
        }
    }
    let mut stack = vec![n];
    while let Some(m) = stack.pop() {
        if m == 1 {
            continue;
        }
        if is_prime(m) {
            out.push(m);
            continue;
        }
        let d = rho(m);
        stack.push(d);
        stack.push(m / d);
    }
    out.sort_unstable();
}

pub struct Factor;

/// One number's line, or the error message for a bad one.
fn line(tok: &str, exponents: bool) -> Result<String, String> {
    let t = tok.strip_prefix('+').unwrap_or(tok);
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{} is not a valid positive integer", quote(tok)));
    }
    let n: u64 = t
        .parse()
        .map_err(|_| format!("{} is too large", quote(tok)))?;
    let mut f = Vec::new();
    factors(n, &mut f);
    let mut s = format!("{n}:");
    let mut i = 0;
    while i < f.len() {
        let mut j = i;
        while j < f.len() && f[j] == f[i] {
            j += 1;
        }
        if exponents && j - i > 1 {
            s.push_str(&format!(" {}^{}", f[i], j - i));
        } else {
            for _ in i..j {
                s.push_str(&format!(" {}", f[i]));
            }
        }
        i = j;
    }
    s.push('\n');
    Ok(s)
}

#[async_trait]
impl Command for Factor {
    fn name(&self) -> &'static str {
        "factor"
    }
    fn summary(&self) -> &'static str {
        "factor numbers"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let a: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mut status = 0;
        let mut out = BufOut::new(ctx);
        let mut one = async |tok: &str, out: &mut BufOut<'_>| -> Result<(), crate::Interrupt> {
            ctx.checkpoint().await?;
            match line(tok, false) {
                Ok(s) => out.write(s.as_bytes()).await?,
                Err(msg) => {
                    out.flush().await?;
                    ctx.warn("factor", msg).await;
                    status = 1;
                }
            }
            Ok(())
        };
        if !a.numbers.is_empty() {
            for n in &a.numbers {
                one(n, &mut out).await?;
            }
        } else {
            let mut reader = Reader::stdin(ctx);
            while let Ok(Some(l)) = reader.line(MAX_LINE).await? {
                let text = String::from_utf8_lossy(&l).into_owned();
                for tok in text.split_ascii_whitespace() {
                    one(tok, &mut out).await?;
                }
            }
        }
        out.flush().await?;
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn factors_like_gnu() {
        let inv = Invocation {
            stdin: b"6 7\n8\n".to_vec(),
            ..Invocation::default()
        };
        assert_eq!(
            inv.run(&Factor, &["12", "1", "0", "97", "18446744073709551615"])
                .await
                .1,
            "12: 2 2 3\n1:\n0:\n97: 97\n18446744073709551615: 3 5 17 257 641 65537 6700417\n"
        );
        assert_eq!(inv.run(&Factor, &[]).await.1, "6: 2 3\n7: 7\n8: 2 2 2\n");
        assert_eq!(line("72", true).unwrap(), "72: 2^3 3^2\n");
        let (st, _, err) = inv.run(&Factor, &["x"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "factor: 'x' is not a valid positive integer\n")
        );
        assert_eq!(
            line("18446744073709551557", false).unwrap(),
            "18446744073709551557: 18446744073709551557\n"
        );
    }
}

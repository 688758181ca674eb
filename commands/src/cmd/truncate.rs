//! `truncate`: shrink or extend files to a size, GNU-style: `-s` with `K`/`KB`/`KiB`…
//! suffixes and the `+ - < > / %` modifiers, `-r` another file's size, `-o` sizes in I/O
//! blocks, `-c` to leave missing files alone. Hand-parsed, as GNU's size syntax is.

use async_trait::async_trait;

use super::util::quote;
use crate::fs::{FsError, WriteMode};
use crate::{CmdResult, Command, Context};

const HELP: &str = "Usage: truncate OPTION... FILE...
Shrink or extend the size of each FILE to the specified size

A FILE argument that does not exist is created.

If a FILE is larger than the specified size, the extra data is lost.
If a FILE is shorter, it is extended and the sparse extended part (hole)
reads as zero bytes.

Mandatory arguments to long options are mandatory for short options too.
  -c, --no-create        do not create any files
  -o, --io-blocks        treat SIZE as number of IO blocks instead of bytes
  -r, --reference=RFILE  base size on RFILE
  -s, --size=SIZE        set or adjust the file size by SIZE bytes
      --help        display this help and exit

The SIZE argument is an integer and optional unit (example: 10K is 10*1024).
Units are K,M,G,T,P,E,Z,Y (powers of 1024) or KB,MB,... (powers of 1000).
Binary prefixes can be used, too: KiB=K, MiB=M, and so on.

SIZE may also be prefixed by one of the following modifying characters:
'+' extend by, '-' reduce by, '<' at most, '>' at least,
'/' round down to multiple of, '%' round up to multiple of.
";

/// The I/O block size `-o` multiplies by: what `stat` reports as a file's `IO Block`.
const IO_BLOCK: i64 = 4096;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Rel {
    Set,
    Add,
    AtMost,
    AtLeast,
    RoundDown,
    RoundUp,
}

/// Parses a `-s` value: its modifier and its (signed) number of bytes.
fn parse_size(arg: &str) -> Result<(Rel, i64), String> {
    let invalid = || format!("Invalid number: {}", quote(arg));
    let s = arg.trim_start();
    let (mut rel, s) = match s.chars().next() {
        Some('<') => (Rel::AtMost, &s[1..]),
        Some('>') => (Rel::AtLeast, &s[1..]),
        Some('/') => (Rel::RoundDown, &s[1..]),
        Some('%') => (Rel::RoundUp, &s[1..]),
        _ => (Rel::Set, s),
    };
    let s = s.trim_start();
    if s.starts_with(['+', '-']) {
        if rel != Rel::Set {
            return Err("multiple relative modifiers specified".into());
        }
        rel = Rel::Add;
    }
    let (neg, digits) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    if end == 0 {
        return Err(invalid());
    }
    let n: i64 = digits[..end].parse().map_err(|_| invalid())?;
    let suffix = &digits[end..];
    let mult: i64 = if suffix.is_empty() {
        1
    } else {
        let mut it = suffix.chars();
        let letter = it.next().unwrap_or(' ');
        let power: u32 = match letter {
            'k' | 'K' => 1,
            'm' | 'M' => 2,
            'g' | 'G' => 3,
            't' | 'T' => 4,
            'P' => 5,
            'E' => 6,
            _ => return Err(invalid()),
        };
        let base: i64 = match it.as_str() {
            "" | "iB" => 1024,
            "B" => 1000,
            _ => return Err(invalid()),
        };
        base.checked_pow(power).ok_or_else(invalid)?
    };
    let v = n.checked_mul(mult).ok_or_else(invalid)?;
    let v = if neg { -v } else { v };
    if matches!(rel, Rel::RoundDown | Rel::RoundUp) && v == 0 {
        return Err("division by zero".into());
    }
    Ok((rel, v))
}

pub struct Truncate;

async fn usage(ctx: &Context, msg: &str) -> CmdResult {
    Ok(super::util::usage_error(ctx, "truncate", msg).await)
}

#[async_trait]
impl Command for Truncate {
    fn name(&self) -> &'static str {
        "truncate"
    }
    fn summary(&self) -> &'static str {
        "shrink or extend the size of a file"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let (mut no_create, mut blocks) = (false, false);
        let mut size: Option<String> = None;
        let mut reference: Option<String> = None;
        let mut files: Vec<String> = Vec::new();
        let mut i = 0;
        let mut only_operands = false;
        while i < args.len() {
            let a = args[i].clone();
            i += 1;
            if only_operands || a == "-" || !a.starts_with('-') {
                files.push(a);
                continue;
            }
            if a == "--" {
                only_operands = true;
                continue;
            }
            if let Some(long) = a.strip_prefix("--") {
                let (name, val) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (long, None),
                };
                const LONGS: [&str; 5] = ["no-create", "io-blocks", "reference", "size", "help"];
                let hits: Vec<&str> = LONGS
                    .iter()
                    .copied()
                    .filter(|l| !name.is_empty() && l.starts_with(name))
                    .collect();
                let full = match hits.as_slice() {
                    [one] => *one,
                    [] => return usage(ctx, &format!("unrecognized option '{a}'")).await,
                    _ => return usage(ctx, &format!("option '{a}' is ambiguous")).await,
                };
                match full {
                    "help" => {
                        ctx.out(HELP).await?;
                        return Ok(0);
                    }
                    "no-create" | "io-blocks" => {
                        if val.is_some() {
                            return usage(
                                ctx,
                                &format!("option '--{full}' doesn't allow an argument"),
                            )
                            .await;
                        }
                        if full == "no-create" {
                            no_create = true;
                        } else {
                            blocks = true;
                        }
                    }
                    _ => {
                        let v = match val {
                            Some(v) => v,
                            None => match args.get(i) {
                                Some(v) => {
                                    i += 1;
                                    v.clone()
                                }
                                None => {
                                    return usage(
                                        ctx,
                                        &format!("option '--{full}' requires an argument"),
                                    )
                                    .await;
                                }
                            },
                        };
                        if full == "size" {
                            size = Some(v);
                        } else {
                            reference = Some(v);
                        }
                    }
                }
                continue;
            }
            let chars: Vec<char> = a[1..].chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                k += 1;
                match c {
                    'c' => no_create = true,
                    'o' => blocks = true,
                    'r' | 's' => {
                        let rest: String = chars[k..].iter().collect();
                        k = chars.len();
                        let v = if !rest.is_empty() {
                            rest
                        } else if let Some(v) = args.get(i) {
                            i += 1;
                            v.clone()
                        } else {
                            return usage(ctx, &format!("option requires an argument -- '{c}'"))
                                .await;
                        };
                        if c == 's' {
                            size = Some(v);
                        } else {
                            reference = Some(v);
                        }
                    }
                    _ => return usage(ctx, &format!("invalid option -- '{c}'")).await,
                }
            }
        }
        let parsed = match size.as_deref().map(parse_size) {
            None => None,
            Some(Ok(p)) => Some(p),
            Some(Err(msg)) => {
                if msg.starts_with("multiple") {
                    return usage(ctx, &msg).await;
                }
                ctx.warn("truncate", msg).await;
                return Ok(1);
            }
        };
        if blocks && parsed.is_none() {
            return usage(ctx, "'--io-blocks' was specified but '--size' was not").await;
        }
        if parsed.is_none() && reference.is_none() {
            return usage(ctx, "you must specify either '--size' or '--reference'").await;
        }
        if reference.is_some() && parsed.is_some_and(|(rel, _)| rel == Rel::Set) {
            return usage(
                ctx,
                "you must specify a relative '--size' with '--reference'",
            )
            .await;
        }
        if files.is_empty() {
            return usage(ctx, "missing file operand").await;
        }
        let ref_size = match &reference {
            None => None,
            Some(r) => match ctx.fs.stat(&ctx.path(r)).await {
                Ok(m) => Some(i64::try_from(m.len).unwrap_or(i64::MAX)),
                Err(e) => {
                    ctx.warn("truncate", format!("cannot stat {}: {e}", quote(r)))
                        .await;
                    return Ok(1);
                }
            },
        };
        let (rel, mut amount) = parsed.unwrap_or((Rel::Set, ref_size.unwrap_or(0)));
        if blocks {
            amount = amount.saturating_mul(IO_BLOCK);
        }
        let mut status = 0;
        for f in &files {
            ctx.checkpoint().await?;
            if !one(ctx, f, no_create, rel, amount, ref_size).await {
                status = 1;
            }
        }
        Ok(status)
    }
}

/// Truncates one file; false after reporting a failure.
async fn one(
    ctx: &Context,
    name: &str,
    no_create: bool,
    rel: Rel,
    amount: i64,
    ref_size: Option<i64>,
) -> bool {
    let path = ctx.path(name);
    let cannot_open = |e: FsError| format!("cannot open {} for writing: {e}", quote(name));
    let current = match ctx.fs.stat(&path).await {
        Ok(m) if m.is_dir() => {
            ctx.warn("truncate", cannot_open(FsError::IsADirectory))
                .await;
            return false;
        }
        Ok(m) => i64::try_from(m.len).unwrap_or(i64::MAX),
        Err(FsError::NotFound) if no_create => return true,
        Err(FsError::NotFound) => {
            let made = match ctx.fs.open_write(&path, WriteMode::Update).await {
                Ok(h) => h.close().await,
                Err(e) => Err(e),
            };
            if let Err(e) = made {
                ctx.warn("truncate", cannot_open(e)).await;
                return false;
            }
            0
        }
        Err(e) => {
            ctx.warn("truncate", cannot_open(e)).await;
            return false;
        }
    };
    let base = ref_size.unwrap_or(current);
    let new = match rel {
        Rel::Set => amount,
        Rel::Add => base.saturating_add(amount),
        Rel::AtMost => base.min(amount),
        Rel::AtLeast => base.max(amount),
        Rel::RoundDown => base / amount * amount,
        Rel::RoundUp => (base.saturating_add(amount - 1) / amount).saturating_mul(amount),
    }
    .max(0);
    if let Err(e) = ctx.fs.truncate(&path, new as u64).await {
        ctx.warn(
            "truncate",
            format!("failed to truncate {} at {new} bytes: {e}", quote(name)),
        )
        .await;
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("10"), Ok((Rel::Set, 10)));
        assert_eq!(parse_size("+5K"), Ok((Rel::Add, 5120)));
        assert_eq!(parse_size("-3"), Ok((Rel::Add, -3)));
        assert_eq!(parse_size("< 7"), Ok((Rel::AtMost, 7)));
        assert_eq!(parse_size("1KB"), Ok((Rel::Set, 1000)));
        assert_eq!(parse_size("1MiB"), Ok((Rel::Set, 1 << 20)));
        assert_eq!(parse_size("/0"), Err("division by zero".into()));
        assert_eq!(parse_size("2b"), Err("Invalid number: '2b'".into()));
        assert!(parse_size("<+5").is_err());
    }

    #[tokio::test]
    async fn grows_and_shrinks() {
        let inv = Invocation::default();
        assert_eq!(inv.run(&Truncate, &["-s", "10", "/f"]).await.0, 0);
        assert_eq!(inv.fs.stat("/f").await.map(|m| m.len), Ok(10));
        assert_eq!(inv.run(&Truncate, &["-s", "%8", "/f"]).await.0, 0);
        assert_eq!(inv.fs.stat("/f").await.map(|m| m.len), Ok(16));
        assert_eq!(inv.run(&Truncate, &["-c", "-s", "1", "/g"]).await.0, 0);
        assert!(inv.fs.stat("/g").await.is_err());
    }
}

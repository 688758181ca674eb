//! `base64`: encode or decode base64 (RFC 4648), GNU coreutils-style: lines of 76
//! characters by default (`-w COLS`, 0 for none), `-d` to decode (newlines skipped, `-i` to
//! skip any other character outside the alphabet too). Streams in chunks.

use async_trait::async_trait;

use super::util::{BufOut, Pacer, Reader, quotef};
use crate::{CmdResult, Command, Context};

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

const HELP: &str = "Usage: base64 [OPTION]... [FILE]
Base64 encode or decode FILE, or standard input, to standard output.

  -d, --decode          decode data
  -i, --ignore-garbage  when decoding, ignore non-alphabet characters
  -w, --wrap=COLS       wrap encoded lines after COLS character (default 76).
                        Use 0 to disable line wrapping
      --help            display this help and exit
";

fn value(c: u8) -> Option<u8> {
    ALPHABET.iter().position(|&a| a == c).map(|p| p as u8)
}

pub struct Base64;

#[async_trait]
impl Command for Base64 {
    fn name(&self) -> &'static str {
        "base64"
    }
    fn summary(&self) -> &'static str {
        "base64 encode/decode data"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let (mut decode, mut garbage, mut wrap) = (false, false, 76usize);
        let mut files = Vec::new();
        let mut i = 0;
        let bad =
            |msg: String| format!("base64: {msg}\nTry 'base64 --help' for more information.\n");
        while i < args.len() {
            let a = args[i].clone();
            i += 1;
            let wrap_value = |v: &str| -> Result<usize, String> {
                v.parse()
                    .map_err(|_| format!("base64: invalid wrap size: {}\n", quotef(v)))
            };
            match a.as_str() {
                "--help" => {
                    ctx.out(HELP).await?;
                    return Ok(0);
                }
                "-d" | "--decode" => decode = true,
                "-i" | "--ignore-garbage" => garbage = true,
                "-w" | "--wrap" => {
                    let Some(v) = args.get(i) else {
                        ctx.err(bad("option requires an argument -- 'w'".to_string()))
                            .await;
                        return Ok(1);
                    };
                    i += 1;
                    match wrap_value(v) {
                        Ok(w) => wrap = w,
                        Err(m) => {
                            ctx.err(m).await;
                            return Ok(1);
                        }
                    }
                }
                _ if a.starts_with("--wrap=") || (a.starts_with("-w") && a.len() > 2) => {
                    let v = a.strip_prefix("--wrap=").unwrap_or(&a[2..]);
                    match wrap_value(v) {
                        Ok(w) => wrap = w,
                        Err(m) => {
                            ctx.err(m).await;
                            return Ok(1);
                        }
                    }
                }
                "-di" | "-id" => {
                    decode = true;
                    garbage = true;
                }
                _ if a.starts_with('-') && a != "-" => {
                    let msg = if a.starts_with("--") {
                        format!("unrecognized option '{a}'")
                    } else {
                        format!("invalid option -- '{}'", &a[1..2])
                    };
                    ctx.err(bad(msg)).await;
                    return Ok(1);
                }
                _ => files.push(a),
            }
        }
        if files.len() > 1 {
            ctx.err(bad(format!(
                "extra operand {}",
                super::util::quote(&files[1])
            )))
            .await;
            return Ok(1);
        }
        let file = files.pop().unwrap_or_else(|| "-".into());
        let mut reader = match Reader::open(ctx, &file).await {
            Ok(r) => r,
            Err(e) => {
                ctx.warn("base64", format!("{}: {e}", quotef(&file))).await;
                return Ok(1);
            }
        };
        let mut out = BufOut::new(ctx);
        let mut pacer = Pacer::default();
        // Encoding: bytes waiting for a full group of 3, and the current line's length.
        let mut pending: Vec<u8> = Vec::new();
        let mut col = 0usize;
        // Decoding: sextets waiting for a group of 4, and whether padding was seen.
        let mut quad: Vec<u8> = Vec::new();
        let mut padded = 0usize;
        let mut failed = false;
        loop {
            let chunk = match reader.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => {
                    out.flush().await?;
                    ctx.warn("base64", format!("{}: {e}", quotef(&file))).await;
                    return Ok(1);
                }
            };
            pacer.tick(ctx).await?;
            if decode {
                let mut bytes = Vec::with_capacity(chunk.len());
                for &c in chunk.iter() {
                    if c == b'\n' {
                        continue;
                    }
                    if c == b'=' {
                        if quad.len() < 2 {
                            if garbage {
                                continue;
                            }
                            failed = true;
                            break;
                        }
                        padded += 1;
                        quad.push(0);
                    } else if let Some(v) = value(c) {
                        if padded > 0 {
                            failed = true;
                            break;
                        }
                        quad.push(v);
                    } else if garbage {
                        continue;
                    } else {
                        failed = true;
                        break;
                    }
                    if quad.len() == 4 {
                        let n = (u32::from(quad[0]) << 18)
                            | (u32::from(quad[1]) << 12)
                            | (u32::from(quad[2]) << 6)
                            | u32::from(quad[3]);
                        let b = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
                        bytes.extend_from_slice(&b[..3 - padded.min(2)]);
                        quad.clear();
                        if padded > 0 {
                            padded = 3;
                        }
                    }
                }
                out.write(&bytes).await?;
                if failed {
                    break;
                }
            } else {
                pending.extend_from_slice(&chunk);
                let whole = pending.len() / 3 * 3;
                let text = encode(&pending[..whole]);
                pending.drain(..whole);
                write_wrapped(&mut out, &text, wrap, &mut col).await?;
            }
        }
        if decode {
            if !failed && !quad.is_empty() {
                // A final group without its padding: decode what it holds, then fail.
                if quad.len() >= 2 {
                    let mut n = 0u32;
                    for (k, v) in quad.iter().enumerate() {
                        n |= u32::from(*v) << (18 - 6 * k);
                    }
                    let b = [(n >> 16) as u8, (n >> 8) as u8];
                    out.write(&b[..quad.len() - 1]).await?;
                }
                failed = true;
            }
            out.flush().await?;
            if failed {
                ctx.err("base64: invalid input\n").await;
                return Ok(1);
            }
            return Ok(0);
        }
        let text = encode(&pending);
        write_wrapped(&mut out, &text, wrap, &mut col).await?;
        if wrap > 0 && col > 0 {
            out.write(b"\n").await?;
        }
        out.flush().await?;
        Ok(0)
    }
}

fn encode(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len().div_ceil(3) * 4);
    for g in data.chunks(3) {
        let n = (u32::from(g[0]) << 16)
            | (u32::from(*g.get(1).unwrap_or(&0)) << 8)
            | u32::from(*g.get(2).unwrap_or(&0));
        for k in 0..4 {
            if k <= g.len() {
                out.push(ALPHABET[((n >> (18 - 6 * k)) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
    out
}

async fn write_wrapped(
    out: &mut BufOut<'_>,
    text: &[u8],
    wrap: usize,
    col: &mut usize,
) -> Result<(), crate::Interrupt> {
    if wrap == 0 {
        *col += text.len();
        return out.write(text).await;
    }
    let mut rest = text;
    while !rest.is_empty() {
        let n = (wrap - *col).min(rest.len());
        out.write(&rest[..n]).await?;
        *col += n;
        rest = &rest[n..];
        if *col == wrap {
            out.write(b"\n").await?;
            *col = 0;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn encodes_and_decodes() {
        let inv = |s: &str| Invocation {
            stdin: s.as_bytes().to_vec(),
            ..Invocation::default()
        };
        assert_eq!(inv("hello").run(&Base64, &[]).await.1, "aGVsbG8=\n");
        assert_eq!(inv("aGVsbG8=\n").run(&Base64, &["-d"]).await.1, "hello");
        assert_eq!(
            inv("abcdef").run(&Base64, &["-w", "4"]).await.1,
            "YWJj\nZGVm\n"
        );
        let (st, _, err) = inv("a!b").run(&Base64, &["-d"]).await;
        assert_eq!((st, err.as_str()), (1, "base64: invalid input\n"));
        assert_eq!(inv("").run(&Base64, &[]).await.1, "");
    }
}

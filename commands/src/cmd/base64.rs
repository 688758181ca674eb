//! `base64` and `base32`: encode or decode base64 or base32 (RFC 4648), GNU
//! coreutils-style: lines of 76 characters by default (`-w COLS`, 0 for none), `-d` to
//! decode (newlines skipped, `-i` to skip any other character outside the alphabet too).
//! Streams in chunks.

use async_trait::async_trait;

use super::util::{BufOut, Pacer, Reader, quotef};
use crate::{CmdResult, Command, Context};

/// One of the encodings: its name, alphabet and bits per character.
struct Radix {
    name: &'static str,
    alphabet: &'static [u8],
    bits: u32,
}

impl Radix {
    /// Characters in a group (a whole number of bytes): 4 for base64, 8 for base32.
    fn chars(&self) -> usize {
        if self.bits == 6 { 4 } else { 8 }
    }
    /// Bytes in a group: 3 for base64, 5 for base32.
    fn bytes(&self) -> usize {
        self.chars() * self.bits as usize / 8
    }
    fn value(&self, c: u8) -> Option<u8> {
        self.alphabet.iter().position(|&a| a == c).map(|p| p as u8)
    }
}

const BASE64: Radix = Radix {
    name: "base64",
    alphabet: b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    bits: 6,
};

const BASE32: Radix = Radix {
    name: "base32",
    alphabet: b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
    bits: 5,
};

const HELP: &str = "Usage: base64 [OPTION]... [FILE]
Base64 encode or decode FILE, or standard input, to standard output.

  -d, --decode          decode data
  -i, --ignore-garbage  when decoding, ignore non-alphabet characters
  -w, --wrap=COLS       wrap encoded lines after COLS character (default 76).
                        Use 0 to disable line wrapping
      --help            display this help and exit
";

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
        codec(ctx, args, &BASE64).await
    }
}

pub struct Base32;

#[async_trait]
impl Command for Base32 {
    fn name(&self) -> &'static str {
        "base32"
    }
    fn summary(&self) -> &'static str {
        "base32 encode/decode data"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        codec(ctx, args, &BASE32).await
    }
}

async fn codec(ctx: &Context, args: Vec<String>, r: &Radix) -> CmdResult {
    let name = r.name;
    {
        let (mut decode, mut garbage, mut wrap) = (false, false, 76usize);
        let mut files = Vec::new();
        let mut i = 0;
        let bad =
            |msg: String| format!("{name}: {msg}\nTry '{name} --help' for more information.\n");
        while i < args.len() {
            let a = args[i].clone();
            i += 1;
            let wrap_value = |v: &str| -> Result<usize, String> {
                v.parse()
                    .map_err(|_| format!("{name}: invalid wrap size: {}\n", quotef(v)))
            };
            match a.as_str() {
                "--help" => {
                    ctx.out(
                        HELP.replace("base64", name)
                            .replace("Base64", &name.to_uppercase()),
                    )
                    .await?;
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
                ctx.warn(name, format!("{}: {e}", quotef(&file))).await;
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
                    ctx.warn(name, format!("{}: {e}", quotef(&file))).await;
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
                    } else if let Some(v) = r.value(c) {
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
                    if quad.len() == r.chars() {
                        let data = r.chars() - padded.min(r.chars());
                        bytes.extend_from_slice(
                            &group_bytes(&quad, r)[..data * r.bits as usize / 8],
                        );
                        quad.clear();
                        if padded > 0 {
                            // Padding ends the data: anything after it is invalid.
                            padded = r.chars();
                        }
                    }
                }
                out.write(&bytes).await?;
                if failed {
                    break;
                }
            } else {
                pending.extend_from_slice(&chunk);
                let whole = pending.len() / r.bytes() * r.bytes();
                let text = encode(&pending[..whole], r);
                pending.drain(..whole);
                write_wrapped(&mut out, &text, wrap, &mut col).await?;
            }
        }
        if decode {
            if !failed && !quad.is_empty() {
                // A final group without its padding: decode what it holds, then fail.
                if quad.len() >= 2 {
                    let b = group_bytes(&quad, r);
                    out.write(&b[..quad.len() * r.bits as usize / 8]).await?;
                }
                failed = true;
            }
            out.flush().await?;
            if failed {
                ctx.err(format!("{name}: invalid input\n")).await;
                return Ok(1);
            }
            return Ok(0);
        }
        let text = encode(&pending, r);
        write_wrapped(&mut out, &text, wrap, &mut col).await?;
        if wrap > 0 && col > 0 {
            out.write(b"\n").await?;
        }
        out.flush().await?;
        Ok(0)
    }
}

/// The bytes a group of character values (missing ones 0) stands for.
fn group_bytes(values: &[u8], r: &Radix) -> Vec<u8> {
    let mut n = 0u64;
    for k in 0..r.chars() {
        n = (n << r.bits) | u64::from(values.get(k).copied().unwrap_or(0));
    }
    (0..r.bytes())
        .map(|k| (n >> (8 * (r.bytes() - 1 - k))) as u8)
        .collect()
}

fn encode(data: &[u8], r: &Radix) -> Vec<u8> {
    let mask = (1u64 << r.bits) - 1;
    let mut out = Vec::with_capacity(data.len().div_ceil(r.bytes()) * r.chars());
    for g in data.chunks(r.bytes()) {
        let mut n = 0u64;
        for k in 0..r.bytes() {
            n = (n << 8) | u64::from(g.get(k).copied().unwrap_or(0));
        }
        // Characters that carry data: enough for the group's bits, the rest padding.
        let used = (g.len() * 8).div_ceil(r.bits as usize);
        for k in 0..r.chars() {
            if k < used {
                let shift = r.bits as usize * (r.chars() - 1 - k);
                out.push(r.alphabet[((n >> shift) & mask) as usize]);
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

    #[tokio::test]
    async fn base32_round_trips() {
        let inv = |s: &str| Invocation {
            stdin: s.as_bytes().to_vec(),
            ..Invocation::default()
        };
        for (plain, coded) in [
            ("", ""),
            ("f", "MY======\n"),
            ("fo", "MZXQ====\n"),
            ("foo", "MZXW6===\n"),
            ("foob", "MZXW6YQ=\n"),
            ("fooba", "MZXW6YTB\n"),
            ("foobar", "MZXW6YTBOI======\n"),
        ] {
            assert_eq!(inv(plain).run(&Base32, &[]).await.1, coded);
            assert_eq!(inv(coded).run(&Base32, &["-d"]).await.1, plain);
        }
        let (st, _, err) = inv("1111").run(&Base32, &["-d"]).await;
        assert_eq!((st, err.as_str()), (1, "base32: invalid input\n"));
    }
}

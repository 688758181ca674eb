//! `strings`: print the runs of printable characters in files (binutils), streaming in
//! chunks; a run is held only up to the minimum length before it is written through.

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, Pacer, Reader};
use crate::{CmdResult, Command, Context, parse_args};

/// Display printable strings in FILEs (standard input by default): sequences of at
/// least 4 printable characters.
#[derive(Parser, Debug)]
#[command(name = "strings")]
struct Args {
    /// Scan the entire file (always done).
    #[arg(short = 'a', long = "all")]
    all: bool,
    /// Print the name of the file before each string.
    #[arg(short = 'f', long = "print-file-name")]
    print_file_name: bool,
    /// Locate and print any sequence of at least MIN-LEN characters.
    #[arg(short = 'n', long = "bytes", value_name = "MIN-LEN")]
    min: Option<String>,
    /// Print the location of the string in base 8, 10 or 16 (o, d, x).
    #[arg(short = 't', long = "radix", value_name = "RADIX")]
    radix: Option<String>,
    /// Like -t o.
    #[arg(short = 'o')]
    octal: bool,
    /// Files to read.
    files: Vec<String>,
}

fn printable(b: u8) -> bool {
    b == b'\t' || (0x20..0x7f).contains(&b)
}

/// Scanning state across chunks.
struct Scan {
    run: Vec<u8>,
    start: u64,
    /// The run is already being written (it reached the minimum).
    open: bool,
}

pub struct Strings;

#[async_trait]
impl Command for Strings {
    fn name(&self) -> &'static str {
        "strings"
    }
    fn summary(&self) -> &'static str {
        "print the sequences of printable characters in files"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        // `strings -8` is `strings -n 8`.
        let args: Vec<String> = args
            .into_iter()
            .map(|a| match a.strip_prefix('-') {
                Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    format!("-n{n}")
                }
                _ => a,
            })
            .collect();
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let min = match args.min.as_deref().map(str::parse::<usize>) {
            None => 4,
            Some(Ok(n)) if n > 0 => n,
            _ => {
                let v = args.min.clone().unwrap_or_default();
                ctx.warn("strings", format!("invalid minimum string length {v}"))
                    .await;
                return Ok(1);
            }
        };
        let radix = match (args.radix.as_deref(), args.octal) {
            (Some("o"), _) | (None, true) => Some(8),
            (Some("d"), _) => Some(10),
            (Some("x"), _) => Some(16),
            (None, false) => None,
            (Some(r), _) => {
                ctx.warn("strings", format!("invalid radix: {r}")).await;
                return Ok(1);
            }
        };
        let files = if args.files.is_empty() {
            vec!["-".to_string()]
        } else {
            args.files.clone()
        };
        let mut status = 0;
        let mut out = BufOut::new(ctx);
        let mut pacer = Pacer::default();
        for f in &files {
            let stdin = f == "-" && args.files.is_empty();
            if !stdin {
                match ctx.fs.stat(&ctx.path(f)).await {
                    Ok(m) if m.is_dir() => {
                        out.flush().await?;
                        ctx.warn("strings", format!("Warning: '{f}' is a directory"))
                            .await;
                        status = 1;
                        continue;
                    }
                    Ok(_) => {}
                    Err(_) => {
                        out.flush().await?;
                        ctx.warn("strings", format!("'{f}': No such file")).await;
                        status = 1;
                        continue;
                    }
                }
            }
            let mut reader = if stdin {
                Reader::stdin(ctx)
            } else {
                match Reader::open(ctx, if f == "-" { "./-" } else { f }).await {
                    Ok(r) => r,
                    Err(e) => {
                        out.flush().await?;
                        ctx.warn("strings", format!("{f}: {e}")).await;
                        status = 1;
                        continue;
                    }
                }
            };
            let name = if stdin {
                "{standard input}"
            } else {
                f.as_str()
            };
            let prefix = |start: u64| -> Vec<u8> {
                let mut p = Vec::new();
                if args.print_file_name {
                    p.extend_from_slice(format!("{name}: ").as_bytes());
                }
                match radix {
                    Some(8) => p.extend_from_slice(format!("{start:7o} ").as_bytes()),
                    Some(10) => p.extend_from_slice(format!("{start:7} ").as_bytes()),
                    Some(_) => p.extend_from_slice(format!("{start:7x} ").as_bytes()),
                    None => {}
                }
                p
            };
            let mut scan = Scan {
                run: Vec::new(),
                start: 0,
                open: false,
            };
            let mut off = 0u64;
            loop {
                let chunk = match reader.chunk().await {
                    Ok(Some(c)) => c,
                    Ok(None) => break,
                    Err(e) => {
                        out.flush().await?;
                        ctx.warn("strings", format!("{f}: {e}")).await;
                        status = 1;
                        break;
                    }
                };
                let mut buf = Vec::new();
                for &b in chunk.iter() {
                    if printable(b) {
                        if scan.open {
                            buf.push(b);
                        } else {
                            if scan.run.is_empty() {
                                scan.start = off;
                            }
                            scan.run.push(b);
                            if scan.run.len() >= min {
                                buf.extend_from_slice(&prefix(scan.start));
                                buf.append(&mut scan.run);
                                scan.open = true;
                            }
                        }
                    } else {
                        if scan.open {
                            buf.push(b'\n');
                            scan.open = false;
                        }
                        scan.run.clear();
                    }
                    off += 1;
                }
                out.write(&buf).await?;
                pacer.tick(ctx).await?;
            }
            if scan.open {
                out.write(b"\n").await?;
            }
        }
        out.flush().await?;
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn finds_runs() {
        let fs = MemFs::new();
        fs.put(
            "/bin",
            b"ab\0hello\tworld\x01xyz12345\n\x80longer string here",
        );
        fs.put_dir("/d");
        let inv = Invocation {
            fs,
            ..Invocation::default()
        };
        assert_eq!(
            inv.run(&Strings, &["bin"]).await.1,
            "hello\tworld\nxyz12345\nlonger string here\n"
        );
        assert_eq!(
            inv.run(&Strings, &["-t", "x", "-n", "8", "bin"]).await.1,
            "      3 hello\tworld\n      f xyz12345\n     19 longer string here\n"
        );
        let (st, _, err) = inv.run(&Strings, &["nope", "d"]).await;
        assert_eq!(st, 1);
        assert_eq!(
            err,
            "strings: 'nope': No such file\nstrings: Warning: 'd' is a directory\n"
        );
        assert_eq!(inv.run(&Strings, &["-n", "0", "bin"]).await.0, 1);
    }
}

//! `cat`: concatenate files (or stdin) to stdout, streaming in ranged chunks.

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, MAX_LINE, Pacer, Reader, copy_to_out, quotef};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Concatenate FILE(s) to standard output. With no FILE, or when FILE is -, read standard input.
#[derive(Parser, Debug)]
#[command(name = "cat")]
struct Args {
    /// Equivalent to -vET.
    #[arg(short = 'A', long = "show-all")]
    show_all: bool,
    /// Number nonempty output lines, overrides -n.
    #[arg(short = 'b', long = "number-nonblank")]
    number_nonblank: bool,
    /// Display $ at end of each line.
    #[arg(short = 'E', long = "show-ends")]
    show_ends: bool,
    /// Number all output lines.
    #[arg(short = 'n', long)]
    number: bool,
    /// Suppress repeated empty output lines.
    #[arg(short = 's', long = "squeeze-blank")]
    squeeze: bool,
    /// Display TAB characters as ^I.
    #[arg(short = 'T', long = "show-tabs")]
    show_tabs: bool,
    /// Use ^ and M- notation, except for LFD and TAB.
    #[arg(short = 'v', long = "show-nonprinting")]
    show_nonprinting: bool,
    /// (ignored)
    #[arg(short = 'u')]
    unbuffered: bool,
    /// Files to read.
    files: Vec<String>,
}

impl Args {
    fn plain(&self) -> bool {
        !(self.show_all
            || self.number_nonblank
            || self.show_ends
            || self.number
            || self.squeeze
            || self.show_tabs
            || self.show_nonprinting)
    }
}

/// Line-numbering state that carries across files, as GNU cat's does.
#[derive(Default)]
struct LineState {
    lineno: u64,
    prev_blank: bool,
}

fn nonprinting(b: u8, out: &mut Vec<u8>) {
    let mut b = b;
    if b >= 0x80 {
        out.extend_from_slice(b"M-");
        b -= 0x80;
    }
    if b < 0x20 {
        out.push(b'^');
        out.push(b + 64);
    } else if b == 0x7f {
        out.extend_from_slice(b"^?");
    } else {
        out.push(b);
    }
}

async fn cat_lines(
    ctx: &Context,
    args: &Args,
    reader: &mut Reader,
    st: &mut LineState,
) -> Result<crate::FsResult<()>, Interrupt> {
    let ends = args.show_ends || args.show_all;
    let tabs = args.show_tabs || args.show_all;
    let nonp = args.show_nonprinting || args.show_all;
    let mut out = BufOut::new(ctx);
    let mut pacer = Pacer::default();
    loop {
        let line = match reader.line(MAX_LINE).await? {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                out.flush().await?;
                return Ok(Err(e));
            }
        };
        let (body, nl) = match line.strip_suffix(b"\n") {
            Some(b) => (b, true),
            None => (&line[..], false),
        };
        let blank = body.is_empty() && nl;
        if args.squeeze && blank && st.prev_blank {
            continue;
        }
        st.prev_blank = blank;
        let mut buf = Vec::with_capacity(line.len() + 16);
        if args.number_nonblank {
            if !blank {
                st.lineno += 1;
                buf.extend_from_slice(format!("{:>6}\t", st.lineno).as_bytes());
            }
        } else if args.number {
            st.lineno += 1;
            buf.extend_from_slice(format!("{:>6}\t", st.lineno).as_bytes());
        }
        // GNU 9.1's -E shows the carriage return of a CRLF line ending as ^M.
        let (body, cr) = match body.strip_suffix(b"\r") {
            Some(b) if ends && nl && !nonp => (b, true),
            _ => (body, false),
        };
        for &b in body {
            match b {
                b'\t' if tabs => buf.extend_from_slice(b"^I"),
                b'\t' => buf.push(b),
                _ if nonp => nonprinting(b, &mut buf),
                _ => buf.push(b),
            }
        }
        if cr {
            buf.extend_from_slice(b"^M");
        }
        if nl {
            if ends {
                buf.push(b'$');
            }
            buf.push(b'\n');
        }
        out.write(&buf).await?;
        pacer.tick(ctx).await?;
    }
    out.flush().await?;
    Ok(Ok(()))
}

pub struct Cat;

#[async_trait]
impl Command for Cat {
    fn name(&self) -> &'static str {
        "cat"
    }
    fn summary(&self) -> &'static str {
        "concatenate files and print on the standard output"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let files = if args.files.is_empty() {
            vec!["-".to_string()]
        } else {
            args.files.clone()
        };
        let mut status = 0;
        let mut closed_stdin = false;
        let mut st = LineState::default();
        for f in &files {
            let mut reader = match Reader::open(ctx, f).await {
                Ok(r) => r,
                Err(e) => {
                    ctx.warn("cat", format!("{}: {e}", quotef(f))).await;
                    status = 1;
                    continue;
                }
            };
            let res = if args.plain() {
                copy_to_out(ctx, &mut reader).await?
            } else {
                cat_lines(ctx, &args, &mut reader, &mut st).await?
            };
            if let Err(e) = res {
                ctx.warn("cat", format!("{}: {e}", quotef(f))).await;
                status = 1;
                // GNU cat closes a standard input it read, and that fails too.
                closed_stdin |= f == "-" && e == crate::fs::FsError::BadDescriptor;
            }
        }
        if closed_stdin {
            ctx.warn("cat", "closing standard input: Bad file descriptor")
                .await;
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs, TINY_BUDGET};

    fn inv(stdin: &str) -> Invocation {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            fs: MemFs::with_files(&[("/a", "one\ntwo\n"), ("/b", "x\n\n\n\ty"), ("/d/e", "")]),
            ..Invocation::default()
        }
    }

    #[tokio::test]
    async fn concatenates_files_and_stdin() {
        let (st, out, err) = inv("IN\n").run(&Cat, &["a", "-", "/a"]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (0, "one\ntwo\nIN\none\ntwo\n", "")
        );
        assert_eq!(inv("only stdin").run(&Cat, &[]).await.1, "only stdin");
    }

    #[tokio::test]
    async fn errors_keep_going() {
        let (st, out, err) = inv("").run(&Cat, &["nofile", "d", "a"]).await;
        assert_eq!(st, 1);
        assert_eq!(out, "one\ntwo\n");
        assert_eq!(
            err,
            "cat: nofile: No such file or directory\ncat: d: Is a directory\n"
        );
        let (st, _, err) = inv("").run(&Cat, &["--bogus"]).await;
        assert_eq!(st, 1);
        assert!(err.contains("Try 'cat --help'"), "{err}");
    }

    #[tokio::test]
    async fn numbering_and_showing() {
        assert_eq!(
            inv("").run(&Cat, &["-n", "a", "b"]).await.1,
            "     1\tone\n     2\ttwo\n     3\tx\n     4\t\n     5\t\n     6\t\ty"
        );
        assert_eq!(
            inv("").run(&Cat, &["-b", "b"]).await.1,
            "     1\tx\n\n\n     2\t\ty"
        );
        assert_eq!(inv("").run(&Cat, &["-sA", "b"]).await.1, "x$\n$\n^Iy");
        assert_eq!(inv("\x01\u{e9}\n").run(&Cat, &["-v"]).await.1, "^AM-CM-)\n");
    }

    #[tokio::test]
    async fn binary_passes_through() {
        let fs = MemFs::new();
        let data: Vec<u8> = (0..=255u8).cycle().take(200_000).collect();
        fs.put("/bin", &data);
        let inv = Invocation {
            fs,
            ..Invocation::default()
        };
        let (st, out, _) = inv.run_bytes(&Cat, &["bin"]).await;
        assert_eq!((st, out), (0, data));
    }

    #[tokio::test]
    async fn a_numbered_line_over_the_budget_is_out_of_memory() {
        let long = format!("a\n{}\n", "x".repeat(4 * TINY_BUDGET));
        inv(&long).out_of_memory(&Cat, &["-n"], TINY_BUDGET).await;
        // Plain cat streams: no line is held.
        let inv = Invocation {
            budget: crate::Budget::new(TINY_BUDGET, 16),
            ..inv(&long)
        };
        assert_eq!(inv.run(&Cat, &[]).await.1, long);
        assert_eq!(
            super::tests::inv("a\n\nb\n").run(&Cat, &["-n"]).await.1,
            "     1\ta\n     2\t\n     3\tb\n"
        );
    }
}

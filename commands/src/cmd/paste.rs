//! `paste`: merge lines of files, side by side or (`-s`) one file per line, streaming.

use async_trait::async_trait;
use clap::Parser;

use super::textin::operands_or_stdin;
use super::util::{BufOut, MAX_LINE, Pacer, Reader, quotef};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Write lines consisting of the sequentially corresponding lines from each FILE,
/// separated by TABs, to standard output. With no FILE, or when FILE is -, read standard
/// input.
#[derive(Parser, Debug)]
#[command(name = "paste")]
struct Args {
    /// Reuse characters from LIST instead of TABs (\n, \t, \\ and \0 for none).
    #[arg(short = 'd', long = "delimiters", value_name = "LIST")]
    delimiters: Option<String>,
    /// Paste one file at a time instead of in parallel.
    #[arg(short = 's', long)]
    serial: bool,
    /// Line delimiter is NUL, not newline.
    #[arg(short = 'z', long = "zero-terminated")]
    zero: bool,
    /// Files to read.
    files: Vec<String>,
}

/// The delimiter list: each entry is one delimiter, possibly empty (`\0`).
fn parse_list(list: &str) -> Result<Vec<Vec<u8>>, ()> {
    let mut out = Vec::new();
    // Byte by byte (a byte that is not UTF-8 is one delimiter of its own).
    let list = crate::bytetext::encode(list);
    let mut bytes = list.iter().copied();
    while let Some(b) = bytes.next() {
        if b == b'\\' {
            match bytes.next() {
                None => return Err(()),
                Some(b'n') => out.push(vec![b'\n']),
                Some(b't') => out.push(vec![b'\t']),
                Some(b'0') => out.push(Vec::new()),
                Some(b'b') => out.push(vec![8]),
                Some(b'f') => out.push(vec![12]),
                Some(b'r') => out.push(vec![b'\r']),
                Some(b'v') => out.push(vec![11]),
                Some(c) => out.push(vec![c]),
            }
        } else {
            out.push(vec![b]);
        }
    }
    if out.is_empty() {
        out.push(Vec::new());
    }
    Ok(out)
}

/// One operand: its reader (stdin operands share one), or `None` once done or failed.
struct Source {
    reader: usize,
    done: bool,
}

pub struct Paste;

#[async_trait]
impl Command for Paste {
    fn name(&self) -> &'static str {
        "paste"
    }
    fn summary(&self) -> &'static str {
        "merge lines of files"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let list = args.delimiters.clone().unwrap_or_else(|| "\t".into());
        let Ok(delims) = parse_list(&list) else {
            ctx.warn(
                "paste",
                format!("delimiter list ends with an unescaped backslash: {list}"),
            )
            .await;
            return Ok(1);
        };
        let eol = if args.zero { 0u8 } else { b'\n' };
        let files = operands_or_stdin(&args.files);
        // Open everything first, as GNU does: a missing file stops paste before output.
        let mut readers: Vec<Reader> = Vec::new();
        let mut stdin_slot: Option<usize> = None;
        let mut sources = Vec::new();
        for f in &files {
            if f == "-" {
                let slot = match stdin_slot {
                    Some(s) => s,
                    None => {
                        readers.push(Reader::stdin(ctx));
                        stdin_slot = Some(readers.len() - 1);
                        readers.len() - 1
                    }
                };
                sources.push(Source {
                    reader: slot,
                    done: false,
                });
                continue;
            }
            match Reader::open(ctx, f).await {
                Ok(r) => {
                    readers.push(r);
                    sources.push(Source {
                        reader: readers.len() - 1,
                        done: false,
                    });
                }
                Err(e) => {
                    ctx.warn("paste", format!("{}: {e}", quotef(f))).await;
                    return Ok(1);
                }
            }
        }
        let mut out = BufOut::new(ctx);
        let res = if args.serial {
            serial(ctx, &files, &mut readers, &sources, &delims, eol, &mut out).await?
        } else {
            parallel(
                ctx,
                &files,
                &mut readers,
                &mut sources,
                &delims,
                eol,
                &mut out,
            )
            .await?
        };
        out.flush().await?;
        Ok(res)
    }
}

/// Reads the next line of `reader` without its end; `Err` carries a reported failure.
async fn next_line(
    ctx: &Context,
    reader: &mut Reader,
    name: &str,
    eol: u8,
) -> Result<Result<Option<Vec<u8>>, ()>, Interrupt> {
    match reader.record(eol, MAX_LINE).await? {
        Ok(Some(mut l)) => {
            if l.last() == Some(&eol) {
                l.pop();
            }
            Ok(Ok(Some(l)))
        }
        Ok(None) => Ok(Ok(None)),
        Err(e) => {
            ctx.warn("paste", format!("{}: {e}", quotef(name))).await;
            Ok(Err(()))
        }
    }
}

async fn parallel(
    ctx: &Context,
    files: &[String],
    readers: &mut [Reader],
    sources: &mut [Source],
    delims: &[Vec<u8>],
    eol: u8,
    out: &mut BufOut<'_>,
) -> Result<i32, Interrupt> {
    let mut status = 0;
    let mut pacer = Pacer::default();
    loop {
        let mut line = Vec::new();
        let mut any = false;
        for (i, src) in sources.iter_mut().enumerate() {
            if !src.done {
                match next_line(ctx, &mut readers[src.reader], &files[i], eol).await? {
                    Ok(Some(l)) => {
                        any = true;
                        line.extend_from_slice(&l);
                    }
                    Ok(None) => src.done = true,
                    Err(()) => {
                        src.done = true;
                        status = 1;
                    }
                }
            }
            if i + 1 < files.len() {
                line.extend_from_slice(&delims[i % delims.len()]);
            }
        }
        if !any {
            return Ok(status);
        }
        line.push(eol);
        out.write(&line).await?;
        pacer.tick(ctx).await?;
    }
}

async fn serial(
    ctx: &Context,
    files: &[String],
    readers: &mut [Reader],
    sources: &[Source],
    delims: &[Vec<u8>],
    eol: u8,
    out: &mut BufOut<'_>,
) -> Result<i32, Interrupt> {
    let mut status = 0;
    let mut pacer = Pacer::default();
    for (i, src) in sources.iter().enumerate() {
        let mut n = 0usize;
        loop {
            match next_line(ctx, &mut readers[src.reader], &files[i], eol).await? {
                Ok(Some(l)) => {
                    if n > 0 {
                        out.write(&delims[(n - 1) % delims.len()]).await?;
                    }
                    out.write(&l).await?;
                    n += 1;
                }
                Ok(None) => break,
                Err(()) => {
                    status = 1;
                    break;
                }
            }
            pacer.tick(ctx).await?;
        }
        out.write(&[eol]).await?;
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    async fn paste(stdin: &str, args: &[&str]) -> (i32, String, String) {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            fs: MemFs::with_files(&[("/a", "1\n2\n3\n"), ("/b", "x\ny")]),
            ..Invocation::default()
        }
        .run(&Paste, args)
        .await
    }

    #[tokio::test]
    async fn merges_like_gnu() {
        assert_eq!(paste("", &["a", "b"]).await.1, "1\tx\n2\ty\n3\t\n");
        assert_eq!(
            paste("", &["-d", ",:", "a", "b", "a"]).await.1,
            "1,x:1\n2,y:2\n3,:3\n"
        );
        assert_eq!(paste("p\nq\nr\n", &["-", "-"]).await.1, "p\tq\nr\t\n");
        assert_eq!(paste("", &["-s", "a", "b"]).await.1, "1\t2\t3\nx\ty\n");
        assert_eq!(paste("", &["-s", "-d", "\\n\\0", "a"]).await.1, "1\n23\n");
    }

    #[tokio::test]
    async fn errors() {
        let (st, out, err) = paste("", &["a", "nope"]).await;
        assert_eq!((st, out.as_str()), (1, ""));
        assert_eq!(err, "paste: nope: No such file or directory\n");
        let (st, _, err) = paste("", &["-d", "a\\", "a"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "paste: delimiter list ends with an unescaped backslash: a\\\n"
            )
        );
    }
}

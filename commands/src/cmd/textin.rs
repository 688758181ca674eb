//! Input helpers shared by the text tools that must see all of their input before they
//! can write (`tac`, `tsort`, `shuf`, `column`, `fmt` paragraphs…): read an operand whole,
//! charged to the session's budget, and report a failure the GNU way.

use super::util::{BufOut, MAX_LINE, Pacer, Reader, quotef};
use crate::{Charge, CmdResult, Context, Interrupt};

/// Reads `operand` (`-` is stdin) whole, charging what it holds to `charge`. A file that
/// cannot be read is reported as `name: FILE: reason` and gives `None`.
pub(crate) async fn slurp(
    ctx: &Context,
    name: &str,
    operand: &str,
    charge: &mut Charge,
) -> Result<Option<Vec<u8>>, Interrupt> {
    let mut reader = match Reader::open(ctx, operand).await {
        Ok(r) => r,
        Err(e) => {
            ctx.warn(name, format!("{}: {e}", quotef(operand))).await;
            return Ok(None);
        }
    };
    match reader.read_to_end(usize::MAX, charge).await? {
        Ok(data) => Ok(Some(data)),
        Err(e) => {
            ctx.warn(name, format!("{}: {e}", quotef(operand))).await;
            Ok(None)
        }
    }
}

/// Splits `data` into records ended by `delim`, without it; a last record without its
/// delimiter is kept, an empty tail is not.
pub(crate) fn records(data: &[u8], delim: u8) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = data.split(|b| *b == delim).collect();
    if data.is_empty() || data.last() == Some(&delim) {
        out.pop();
    }
    out
}

/// Runs `f` on each line of the operands (stdin when there are none), the line with its
/// newline if it had one, and writes out what `f` puts in the buffer. A file that cannot
/// be opened or read is reported as `name: FILE: reason` (after what came before it is
/// written) and makes the status 1; the next operand is read.
pub(crate) async fn each_raw_line(
    ctx: &Context,
    name: &str,
    files: &[String],
    mut f: impl FnMut(&[u8], &mut Vec<u8>) + Send,
) -> CmdResult {
    let mut status = 0;
    let mut out = BufOut::new(ctx);
    let mut pacer = Pacer::default();
    for file in operands_or_stdin(files) {
        let mut reader = match Reader::open(ctx, &file).await {
            Ok(r) => r,
            Err(e) => {
                out.flush().await?;
                ctx.warn(name, format!("{}: {e}", quotef(&file))).await;
                status = 1;
                continue;
            }
        };
        loop {
            let line = match reader.line(MAX_LINE).await? {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    out.flush().await?;
                    ctx.warn(name, format!("{}: {e}", quotef(&file))).await;
                    status = 1;
                    break;
                }
            };
            let mut buf = Vec::with_capacity(line.len() + 16);
            f(&line, &mut buf);
            out.write(&buf).await?;
            pacer.tick(ctx).await?;
        }
    }
    out.flush().await?;
    Ok::<_, Interrupt>(status)
}

/// [`each_raw_line`] with the newline taken off before `f` and put back after it.
pub(crate) async fn each_line(
    ctx: &Context,
    name: &str,
    files: &[String],
    mut f: impl FnMut(&[u8], &mut Vec<u8>) + Send,
) -> CmdResult {
    each_raw_line(ctx, name, files, |line, buf| {
        let (body, nl) = match line.strip_suffix(b"\n") {
            Some(b) => (b, true),
            None => (line, false),
        };
        f(body, buf);
        if nl {
            buf.push(b'\n');
        }
    })
    .await
}

/// The operands, or `-` (stdin) when there are none.
pub(crate) fn operands_or_stdin(files: &[String]) -> Vec<String> {
    if files.is_empty() {
        vec!["-".to_string()]
    } else {
        files.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_records() {
        assert_eq!(records(b"a\nb\n", b'\n'), vec![&b"a"[..], b"b"]);
        assert_eq!(records(b"a\n\nb", b'\n'), vec![&b"a"[..], b"", b"b"]);
        assert!(records(b"", b'\n').is_empty());
        assert_eq!(records(b"\n", b'\n'), vec![&b""[..]]);
    }
}

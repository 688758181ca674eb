//! `envsubst` (GNU gettext): copy standard input to standard output with `$VAR` and
//! `${VAR}` replaced by the environment's values (empty when unset). With a SHELL-FORMAT
//! operand only the variables named in it are replaced; `-v` lists those names.

use async_trait::async_trait;

use super::getopt::{Arg, Spec, opt, parse};
use super::util::{BufOut, MAX_LINE, Pacer, Reader};
use crate::{CmdResult, Command, Context};

const HELP: &str = "Usage: envsubst [OPTION] [SHELL-FORMAT]

Substitutes the values of environment variables.

Operation mode:
  -v, --variables             output the variables occurring in SHELL-FORMAT

Informative output:
  -h, --help                  display this help and exit
  -V, --version               output version information and exit

In normal operation mode, standard input is copied to standard output,
with references to environment variables of the form $VARIABLE or ${VARIABLE}
being replaced with the corresponding values.  If a SHELL-FORMAT is given,
only those environment variables that are referenced in SHELL-FORMAT are
substituted; otherwise all environment variables references occurring in
standard input are substituted.

When --variables is used, standard input is ignored, and the output consists
of the environment variables that are referenced in SHELL-FORMAT, one per line.
";

pub struct Envsubst;

/// One `$NAME` or `${NAME}` reference at the start of `s` (which starts with `$`): its
/// name and length.
fn reference(s: &[u8]) -> Option<(&[u8], usize)> {
    let braced = s.get(1) == Some(&b'{');
    let start = if braced { 2 } else { 1 };
    let first = *s.get(start)?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let mut end = start + 1;
    while end < s.len() && (s[end].is_ascii_alphanumeric() || s[end] == b'_') {
        end += 1;
    }
    if braced {
        if s.get(end) != Some(&b'}') {
            return None;
        }
        return Some((&s[start..end], end + 1));
    }
    Some((&s[start..end], end))
}

/// Every variable referenced in `s`, in order, repeats included.
fn names(s: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'$', &s[i..]) {
        i += off;
        match reference(&s[i..]) {
            Some((name, len)) => {
                out.push(name);
                i += len;
            }
            None => i += 1,
        }
    }
    out
}

#[async_trait]
impl Command for Envsubst {
    fn name(&self) -> &'static str {
        "envsubst"
    }
    fn summary(&self) -> &'static str {
        "substitute environment variables in text"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        const SPECS: [Spec; 3] = [
            opt('v', Some('v'), Some("variables"), Arg::No),
            opt('h', Some('h'), Some("help"), Arg::No),
            opt('V', Some('V'), Some("version"), Arg::No),
        ];
        let parsed = match parse(&SPECS, &args, true) {
            Ok(p) => p,
            Err(msg) => return Ok(super::util::usage_error(ctx, "envsubst", &msg).await),
        };
        if parsed.has('h') {
            ctx.out(HELP).await?;
            return Ok(0);
        }
        if parsed.has('V') {
            ctx.out("envsubst (forkbox) 0.21\n").await?;
            return Ok(0);
        }
        if parsed.operands.len() > 1 {
            ctx.warn("envsubst", "too many arguments").await;
            return Ok(1);
        }
        let format = parsed.operands.first();
        if parsed.has('v') {
            let Some(format) = format else {
                ctx.warn("envsubst", "missing arguments").await;
                return Ok(1);
            };
            let mut text = Vec::new();
            for name in names(format.as_bytes()) {
                text.extend_from_slice(name);
                text.push(b'\n');
            }
            ctx.out(text).await?;
            return Ok(0);
        }
        let only: Option<Vec<&[u8]>> = format.map(|f| names(f.as_bytes()));
        let mut reader = Reader::stdin(ctx);
        let mut out = BufOut::new(ctx);
        let mut pacer = Pacer::default();
        let mut line_out = Vec::new();
        loop {
            let line = match reader.line(MAX_LINE).await? {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    out.flush().await?;
                    let msg = format!("error while reading \"standard input\": {e}");
                    ctx.warn("envsubst", msg).await;
                    return Ok(1);
                }
            };
            line_out.clear();
            let mut i = 0;
            while let Some(off) = memchr::memchr(b'$', &line[i..]) {
                line_out.extend_from_slice(&line[i..i + off]);
                i += off;
                match reference(&line[i..]) {
                    Some((name, len)) if only.as_ref().is_none_or(|o| o.contains(&name)) => {
                        let value = std::str::from_utf8(name)
                            .ok()
                            .and_then(|n| ctx.env.get(n))
                            .map_or(&[][..], |v| v.as_bytes());
                        line_out.extend_from_slice(value);
                        i += len;
                    }
                    _ => {
                        line_out.push(b'$');
                        i += 1;
                    }
                }
            }
            line_out.extend_from_slice(&line[i..]);
            out.write(&line_out).await?;
            pacer.tick(ctx).await?;
        }
        out.flush().await?;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    fn inv(stdin: &str) -> Invocation {
        let mut inv = Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        };
        inv.env.insert("X".into(), "1".into());
        inv
    }

    #[tokio::test]
    async fn substitutes_references() {
        let text = "a $X ${X} ${Y} $ $1 ${X ${X}b \\$X $Xy\n";
        let (st, out, _) = inv(text).run(&Envsubst, &[]).await;
        assert_eq!((st, out.as_str()), (0, "a 1 1  $ $1 ${X 1b \\1 \n"));
        let (_, out, _) = inv("a $X ${Y}|").run(&Envsubst, &["$Y"]).await;
        assert_eq!(out, "a $X |");
        let (_, out, _) = inv("").run(&Envsubst, &["-v", "a $X ${Y} $X"]).await;
        assert_eq!(out, "X\nY\nX\n");
        let (st, _, err) = inv("").run(&Envsubst, &["a", "b"]).await;
        assert_eq!((st, err.as_str()), (1, "envsubst: too many arguments\n"));
    }
}

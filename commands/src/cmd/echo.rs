//! `echo`: bash's builtin. Leading words made only of `-n`, `-e`, `-E` letters are
//! options; anything else (including `--help` and `--`) is printed.

use async_trait::async_trait;

use super::printf::{Escapes, unescape};
use crate::{CmdResult, Command, Context};

pub struct Echo;

#[async_trait]
impl Command for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }
    fn summary(&self) -> &'static str {
        "write arguments to standard output"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        ctx.out(render(&args)).await?;
        Ok(0)
    }
}

/// What `echo ARGS` writes, with bash's rules: leading words made only of `-n`, `-e`,
/// `-E` letters are options; with `-e`, backslash escapes (`\0NNN`, `\xHH`, `\c` stops
/// all output).
pub fn render(args: &[String]) -> Vec<u8> {
    let mut newline = true;
    let mut escapes = false;
    let mut first = 0;
    for a in args {
        let is_opt = a.len() > 1
            && a.starts_with('-')
            && a[1..].bytes().all(|b| matches!(b, b'n' | b'e' | b'E'));
        if !is_opt {
            break;
        }
        for b in a[1..].bytes() {
            match b {
                b'n' => newline = false,
                b'e' => escapes = true,
                _ => escapes = false,
            }
        }
        first += 1;
    }
    let mut out = Vec::new();
    for (i, a) in args[first..].iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        if escapes {
            if unescape(a.as_bytes(), &mut out, Escapes::Echo) {
                return out;
            }
        } else {
            out.extend_from_slice(a.as_bytes());
        }
    }
    if newline {
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn echo(args: &[&str]) -> String {
        let (st, out, err) = Invocation::default().run(&Echo, args).await;
        assert_eq!((st, err.as_str()), (0, ""));
        out
    }

    #[tokio::test]
    async fn like_bash() {
        assert_eq!(echo(&["a", "b"]).await, "a b\n");
        assert_eq!(echo(&[]).await, "\n");
        assert_eq!(echo(&["-n", "x"]).await, "x");
        assert_eq!(echo(&["--help"]).await, "--help\n");
        assert_eq!(echo(&["--", "x"]).await, "-- x\n");
        assert_eq!(echo(&["-nx", "y"]).await, "-nx y\n");
        assert_eq!(echo(&["-"]).await, "-\n");
        assert_eq!(echo(&["a\\tb"]).await, "a\\tb\n");
        assert_eq!(echo(&["-e", "a\\tb\\x41\\0101\\\\"]).await, "a\tbAA\\\n");
        assert_eq!(echo(&["-ne", "a\\cb", "c"]).await, "a");
        assert_eq!(echo(&["-e", "-E", "a\\n"]).await, "a\\n\n");
        assert_eq!(echo(&["-e", "\\1"]).await, "\\1\n");
    }
}

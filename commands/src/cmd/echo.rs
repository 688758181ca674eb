//! `echo`: bash's builtin. Leading words made only of `-n`, `-e`, `-E` letters are
//! options; anything else (including `--help` and `--`) is printed.

use async_trait::async_trait;

use super::printf::{EscapeContext, Escapes, unescape_in};
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
        ctx.out(render_in(&args, crate::gnu_regex::c_locale(&ctx.env)))
            .await?;
        Ok(0)
    }
}

/// `/usr/bin/echo`, GNU coreutils' program, what `env echo`, `xargs echo` and `find -exec
/// echo` run: bash's rules, but a lone `--help` or `--version` is an option.
pub struct GnuEcho;

const GNU_HELP: &str = "Usage: echo [SHORT-OPTION]... [STRING]...
  or:  echo LONG-OPTION
Echo the STRING(s) to standard output.

  -n             do not output the trailing newline
  -e             enable interpretation of backslash escapes
  -E             disable interpretation of backslash escapes (default)
      --help        display this help and exit
      --version     output version information and exit

If -e is in effect, the following sequences are recognized:

  \\\\      backslash
  \\a      alert (BEL)
  \\b      backspace
  \\c      produce no further output
  \\e      escape
  \\f      form feed
  \\n      new line
  \\r      carriage return
  \\t      horizontal tab
  \\v      vertical tab
  \\0NNN   byte with octal value NNN (1 to 3 digits)
  \\xHH    byte with hexadecimal value HH (1 to 2 digits)

NOTE: your shell may have its own version of echo, which usually supersedes
the version described here.  Please refer to your shell's documentation
for details about the options it supports.

NOTE: printf(1) is a preferred alternative,
which does not have issues outputting option-like strings.
";

#[async_trait]
impl Command for GnuEcho {
    fn name(&self) -> &'static str {
        "echo"
    }
    fn summary(&self) -> &'static str {
        "write arguments to standard output (GNU coreutils' program)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        match args.as_slice() {
            [a] if a == "--help" => ctx.out(GNU_HELP).await?,
            [a] if a == "--version" => ctx.out("echo (GNU coreutils) 9.1\n").await?,
            _ => ctx.out(render(&args)).await?,
        }
        Ok(0)
    }
}

/// What `echo ARGS` writes, with bash's rules: leading words made only of `-n`, `-e`,
/// `-E` letters are options; with `-e`, backslash escapes (`\0NNN`, `\xHH`, `\c` stops
/// all output).
pub fn render(args: &[String]) -> Vec<u8> {
    render_in(args, false)
}

/// [`render`] in the C locale (`c_locale`), where a `\u`/`\U` past ASCII names no
/// character and stays as written, as bash's echo leaves it.
pub fn render_in(args: &[String], c_locale: bool) -> Vec<u8> {
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
    words(&args[first..], escapes, newline, c_locale)
}

/// What bash's `echo ARGS` writes in POSIX mode with `shopt -s xpg_echo`: no word is an
/// option, and backslash escapes are always interpreted.
pub fn render_posix_xpg(args: &[String], c_locale: bool) -> Vec<u8> {
    words(args, true, true, c_locale)
}

/// `args` joined by blanks, with escapes interpreted or not, and a newline or not.
fn words(args: &[String], escapes: bool, newline: bool, c_locale: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        if escapes {
            let mut cx = EscapeContext {
                c_locale,
                ..EscapeContext::default()
            };
            if unescape_in(
                &crate::bytetext::encode(a),
                &mut out,
                Escapes::Echo,
                &mut cx,
            ) {
                return out;
            }
        } else {
            out.extend_from_slice(&crate::bytetext::encode(a));
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

//! `nl`: number lines of files, streaming, with GNU's logical pages (header, body and
//! footer sections marked by `\:\:\:`, `\:\:` and `\:` lines).

use crate::gnu_regex::{self, Dialect, Flags, Regex};
use async_trait::async_trait;
use clap::Parser;

use super::textin::each_raw_line;
use super::util::quote;
use crate::{CmdResult, Command, Context, parse_args};

/// Write each FILE to standard output, with line numbers added. With no FILE, or when
/// FILE is -, read standard input.
#[derive(Parser, Debug)]
#[command(name = "nl", disable_help_flag = true)]
struct Args {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Use STYLE for numbering body lines (a: all, t: nonempty, n: none, pBRE: matching).
    #[arg(short = 'b', long = "body-numbering", value_name = "STYLE")]
    body: Option<String>,
    /// Use CC for logical page delimiters.
    #[arg(short = 'd', long = "section-delimiter", value_name = "CC")]
    delimiter: Option<String>,
    /// Use STYLE for numbering footer lines.
    #[arg(short = 'f', long = "footer-numbering", value_name = "STYLE")]
    footer: Option<String>,
    /// Use STYLE for numbering header lines.
    #[arg(short = 'h', long = "header-numbering", value_name = "STYLE")]
    header: Option<String>,
    /// Line number increment at each line.
    #[arg(short = 'i', long = "line-increment", value_name = "NUMBER")]
    increment: Option<String>,
    /// Group of NUMBER empty lines counted as one.
    #[arg(short = 'l', long = "join-blank-lines", value_name = "NUMBER")]
    join_blank: Option<String>,
    /// Insert line numbers according to FORMAT (ln, rn, rz).
    #[arg(short = 'n', long = "number-format", value_name = "FORMAT")]
    format: Option<String>,
    /// Do not reset line numbers for each section.
    #[arg(short = 'p', long = "no-renumber")]
    no_renumber: bool,
    /// Add STRING after (possible) line number.
    #[arg(short = 's', long = "number-separator", value_name = "STRING")]
    separator: Option<String>,
    /// First line number for each section.
    #[arg(short = 'v', long = "starting-line-number", value_name = "NUMBER")]
    start: Option<String>,
    /// Use NUMBER columns for line numbers.
    #[arg(short = 'w', long = "number-width", value_name = "NUMBER")]
    width: Option<String>,
    /// Files to read.
    files: Vec<String>,
}

enum Style {
    All,
    NonEmpty,
    None,
    Regex(Regex),
}

fn style(s: &str) -> Option<Style> {
    match s {
        "a" => Some(Style::All),
        "t" => Some(Style::NonEmpty),
        "n" => Some(Style::None),
        _ => {
            let re = s.strip_prefix('p')?;
            gnu_regex::compile(re, Dialect::Basic, Flags::default())
                .ok()
                .map(Style::Regex)
        }
    }
}

pub struct Nl;

/// Reports a bad option argument the way GNU nl words it (status 1).
async fn bad(ctx: &Context, what: &str, v: &str, extra: &str) -> i32 {
    ctx.err(format!(
        "nl: invalid {what}: {}{extra}\nTry 'nl --help' for more information.\n",
        quote(v)
    ))
    .await;
    1
}

#[async_trait]
impl Command for Nl {
    fn name(&self) -> &'static str {
        "nl"
    }
    fn summary(&self) -> &'static str {
        "number lines of files"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mut styles = Vec::new();
        for (v, dflt, what) in [
            (&args.header, "n", "header numbering style"),
            (&args.body, "t", "body numbering style"),
            (&args.footer, "n", "footer numbering style"),
        ] {
            let v = v.as_deref().unwrap_or(dflt);
            match style(v) {
                Some(s) => styles.push(s),
                None => return Ok(bad(ctx, what, v, "").await),
            }
        }
        let num = |v: &Option<String>, d: i64| -> Result<i64, String> {
            match v {
                None => Ok(d),
                Some(s) => s.parse::<i64>().map_err(|_| s.clone()),
            }
        };
        let start = match num(&args.start, 1) {
            Ok(n) => n,
            Err(v) => return Ok(bad(ctx, "starting line number", &v, "").await),
        };
        let incr = match num(&args.increment, 1) {
            Ok(n) => n,
            Err(v) => return Ok(bad(ctx, "line number increment", &v, "").await),
        };
        let join_blank = match num(&args.join_blank, 1) {
            Ok(n) if n >= 1 => n as u64,
            Ok(_) | Err(_) => {
                let v = args.join_blank.clone().unwrap_or_default();
                return Ok(bad(ctx, "line number of blank lines", &v, "").await);
            }
        };
        let width = match num(&args.width, 6) {
            Ok(n) if (1..=i64::from(i32::MAX)).contains(&n) => n as usize,
            _ => {
                let v = args.width.clone().unwrap_or_default();
                return Ok(bad(
                    ctx,
                    "line number field width",
                    &v,
                    ": Numerical result out of range",
                )
                .await);
            }
        };
        let format = args.format.as_deref().unwrap_or("rn");
        if !matches!(format, "ln" | "rn" | "rz") {
            return Ok(bad(ctx, "line numbering format", format, "").await);
        }
        let sep = args.separator.clone().unwrap_or_else(|| "\t".into());
        let mut delim = args.delimiter.clone().unwrap_or_else(|| "\\:".into());
        if delim.len() == 1 {
            delim.push(':');
        }
        let marks = [delim.repeat(3), delim.repeat(2), delim.clone()];
        let mut section = 1usize;
        let mut n = start;
        let mut blanks = 0u64;
        each_raw_line(ctx, "nl", &args.files, |line, buf| {
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            if let Some(i) = marks.iter().position(|m| m.as_bytes() == body) {
                section = i;
                if !args.no_renumber {
                    n = start;
                }
                buf.push(b'\n');
                return;
            }
            let numbered = match &styles[section] {
                Style::All => {
                    if body.is_empty() {
                        blanks += 1;
                        if blanks >= join_blank {
                            blanks = 0;
                            true
                        } else {
                            false
                        }
                    } else {
                        blanks = 0;
                        true
                    }
                }
                Style::NonEmpty => !body.is_empty(),
                Style::None => false,
                // A pattern too complex to finish counts as not matching.
                Style::Regex(re) => re.is_match(body).unwrap_or(false),
            };
            if numbered {
                let s = match format {
                    "ln" => format!("{n:<width$}"),
                    "rz" if n < 0 => format!("-{:0>w$}", n.unsigned_abs(), w = width - 1),
                    "rz" => format!("{n:0>width$}"),
                    _ => format!("{n:>width$}"),
                };
                buf.extend_from_slice(s.as_bytes());
                buf.extend_from_slice(sep.as_bytes());
                n = n.wrapping_add(incr);
            } else {
                buf.resize(width + sep.len(), b' ');
            }
            buf.extend_from_slice(line);
            if !line.ends_with(b"\n") {
                buf.push(b'\n');
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn nl(stdin: &str, args: &[&str]) -> (i32, String, String) {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(&Nl, args)
        .await
    }

    #[tokio::test]
    async fn numbers_like_gnu() {
        assert_eq!(
            nl("a\n\nb\n", &[]).await.1,
            "     1\ta\n       \n     2\tb\n"
        );
        assert_eq!(
            nl("a\n\nb\n", &["-ba", "-nln", "-w3", "-s:"]).await.1,
            "1  :a\n2  :\n3  :b\n"
        );
        assert_eq!(
            nl("a\nb\n", &["-nrz", "-v5", "-i2"]).await.1,
            "000005\ta\n000007\tb\n"
        );
        assert_eq!(
            nl("ab\nxb\n", &["-bp^a"]).await.1,
            "     1\tab\n       xb\n"
        );
        assert_eq!(
            nl("x\n\\:\\:\\:\nh\n\\:\\:\nb\n", &["-ha"]).await.1,
            "     1\tx\n\n     1\th\n\n     1\tb\n"
        );
    }

    #[tokio::test]
    async fn bad_options() {
        let (st, _, err) = nl("", &["-bq"]).await;
        assert_eq!(st, 1);
        assert!(
            err.starts_with("nl: invalid body numbering style: 'q'\n"),
            "{err}"
        );
        assert_eq!(nl("", &["-w0"]).await.0, 1);
    }
}

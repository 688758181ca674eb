//! `wc`: count lines, words, characters and bytes, streaming.

use async_trait::async_trait;
use clap::Parser;

use super::util::{Pacer, Reader, quotef};
use crate::{CmdResult, Command, Context, parse_args};

/// Print newline, word, and byte counts for each FILE, and a total line if more than one
/// FILE is specified. A word is a non-zero-length sequence of non-space characters.
/// With no FILE, or when FILE is -, read standard input.
#[derive(Parser, Debug)]
#[command(name = "wc")]
struct Args {
    /// Print the byte counts.
    #[arg(short = 'c', long)]
    bytes: bool,
    /// Print the character counts (UTF-8).
    #[arg(short = 'm', long)]
    chars: bool,
    /// Print the newline counts.
    #[arg(short = 'l', long)]
    lines: bool,
    /// Print the word counts.
    #[arg(short = 'w', long)]
    words: bool,
    /// Print the maximum display width (in characters).
    #[arg(short = 'L', long = "max-line-length")]
    max_line: bool,
    /// Read input from the files specified by NUL-terminated names in file F; if F is -
    /// then read names from standard input.
    #[arg(long = "files0-from", value_name = "F")]
    files0_from: Option<String>,
    /// Files to count.
    files: Vec<String>,
}

/// Most bytes of names `--files0-from` reads.
const MAX_NAMES: usize = 16 << 20;

/// The names `--files0-from=F` lists to `prog` (`wc`, `sort`; an empty one stays, to be
/// reported in its place), or the status to exit with (`status`) once the trouble is
/// reported.
pub(crate) async fn names_from(
    ctx: &Context,
    prog: &str,
    status: crate::Status,
    from: &str,
    files: &[String],
) -> Result<Vec<String>, CmdResult> {
    if let Some(extra) = files.first() {
        ctx.err(format!(
            "{prog}: extra operand {}\nfile operands cannot be combined with --files0-from\n\
             Try '{prog} --help' for more information.\n",
            super::util::quote(extra)
        ))
        .await;
        return Err(Ok(status));
    }
    let mut charge = ctx.budget.empty_charge();
    let read = match Reader::open(ctx, from).await {
        Ok(mut r) => r.read_to_end(MAX_NAMES, &mut charge).await,
        Err(e) => Ok(Err(e)),
    };
    let data = match read {
        Ok(Ok(d)) => d,
        Ok(Err(e)) => {
            let what = super::util::quote(from);
            ctx.warn(prog, format!("cannot open {what} for reading: {e}"))
                .await;
            return Err(Ok(status));
        }
        Err(i) => return Err(Err(i)),
    };
    let body = data.strip_suffix(b"\0").unwrap_or(&data);
    if body.is_empty() {
        return Ok(Vec::new());
    }
    Ok(body
        .split(|&b| b == 0)
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect())
}

#[derive(Default, Clone, Copy)]
struct Counts {
    lines: u64,
    words: u64,
    chars: u64,
    bytes: u64,
    max_line: u64,
}

#[derive(Default)]
struct Counter {
    c: Counts,
    in_word: bool,
    line_len: u64,
    /// Only lines and bytes are asked for: newlines are counted with `memchr`, not byte
    /// by byte (`wc -l` over a big file).
    lines_only: bool,
    /// A character is a UTF-8 sequence; in the C locale it is a byte.
    utf8: bool,
}

impl Counter {
    fn feed(&mut self, data: &[u8]) {
        self.c.bytes += data.len() as u64;
        if self.lines_only {
            self.c.lines += memchr::memchr_iter(b'\n', data).count() as u64;
            return;
        }
        for &b in data {
            // UTF-8 continuation bytes do not start a character.
            if !self.utf8 || b & 0xC0 != 0x80 {
                self.c.chars += 1;
                if b != b'\n' {
                    self.line_len += if b == b'\t' { 8 - self.line_len % 8 } else { 1 };
                }
            }
            if b == b'\n' {
                self.c.lines += 1;
                self.c.max_line = self.c.max_line.max(self.line_len);
                self.line_len = 0;
            }
            let space = matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
            if space {
                self.in_word = false;
            } else if !self.in_word {
                self.in_word = true;
                self.c.words += 1;
            }
        }
    }
    fn finish(mut self) -> Counts {
        self.c.max_line = self.c.max_line.max(self.line_len);
        self.c
    }
}

pub struct Wc;

#[async_trait]
impl Command for Wc {
    fn name(&self) -> &'static str {
        "wc"
    }
    fn summary(&self) -> &'static str {
        "print newline, word, and byte counts for each file"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if !(args.bytes || args.chars || args.lines || args.words || args.max_line) {
            args.lines = true;
            args.words = true;
            args.bytes = true;
        }
        let ncounts = [
            args.lines,
            args.words,
            args.chars,
            args.bytes,
            args.max_line,
        ]
        .iter()
        .filter(|b| **b)
        .count();
        let listed = match &args.files0_from {
            Some(from) => match names_from(ctx, "wc", 1, from, &args.files).await {
                Ok(names) => Some(names),
                Err(r) => return r,
            },
            None => None,
        };
        let named = listed.is_some() || !args.files.is_empty();
        let files = match &listed {
            Some(names) => names.clone(),
            None if args.files.is_empty() => vec!["-".to_string()],
            None => args.files.clone(),
        };
        // GNU sizes the columns from the regular files' total size (standard input's
        // too when it is a file: `wc < f`); anything else not regular gets 7 columns.
        let stdin_file = match files.iter().any(|f| f == "-") {
            true => ctx.stdin.file_status().await.filter(|(m, _)| m.is_file()),
            false => None,
        };
        let mut width_hint = 0u64;
        let mut irregular = false;
        for f in files.iter().filter(|f| !f.is_empty()) {
            match (f.as_str(), ctx.fs.stat(&ctx.path(f)).await) {
                ("-", _) => match &stdin_file {
                    Some((m, _)) => width_hint += m.len,
                    None => irregular = true,
                },
                (_, Ok(m)) if m.is_file() => width_hint += m.len,
                (_, Ok(_)) => irregular = true,
                _ => {}
            }
        }
        let mut width = width_hint.to_string().len();
        if irregular {
            width = width.max(7);
        }
        // Names read from standard input come one by one: GNU sizes nothing ahead.
        if (ncounts == 1 && files.len() == 1) || args.files0_from.as_deref() == Some("-") {
            width = 1;
        }
        let fmt = |c: &Counts, name: Option<&str>| {
            let mut cols = Vec::new();
            for (on, v) in [
                (args.lines, c.lines),
                (args.words, c.words),
                (args.chars, c.chars),
                (args.bytes, c.bytes),
                (args.max_line, c.max_line),
            ] {
                if on {
                    cols.push(format!("{v:>width$}"));
                }
            }
            let mut s = cols.join(" ");
            if let Some(n) = name {
                s.push(' ');
                s.push_str(n);
            }
            s.push('\n');
            s
        };
        let mut total = Counts::default();
        let mut status = 0;
        let utf8 = super::util::utf8_locale(&ctx.env);
        let mut pacer = Pacer::default();
        let bytes_only = args.bytes && ncounts == 1;
        for (i, f) in files.iter().enumerate() {
            if f.is_empty() && listed.is_some() {
                let from = args.files0_from.as_deref().unwrap_or("-");
                let from = super::util::quotef(from);
                ctx.warn(
                    "wc",
                    format!("{from}:{}: invalid zero-length file name", i + 1),
                )
                .await;
                status = 1;
                continue;
            }
            if let (true, "-", Some((m, pos))) = (bytes_only, f.as_str(), &stdin_file) {
                // A file's size answers `wc -c` without reading it (nor moving its
                // position), as GNU's fstat does: what is left from the position on.
                let c = Counts {
                    bytes: m.len.saturating_sub(*pos),
                    ..Counts::default()
                };
                total.bytes += c.bytes;
                let name = named.then_some("-");
                ctx.out_text(fmt(&c, name)).await?;
                continue;
            }
            let mut reader = match Reader::open(ctx, f).await {
                Ok(r) => r,
                Err(e) => {
                    ctx.warn("wc", format!("{}: {e}", quotef(f))).await;
                    status = 1;
                    continue;
                }
            };
            let mut counter = Counter {
                lines_only: !(args.words || args.chars || args.max_line),
                utf8,
                ..Counter::default()
            };
            loop {
                match reader.chunk().await {
                    Ok(Some(chunk)) => counter.feed(&chunk),
                    Ok(None) => break,
                    Err(e) => {
                        ctx.warn("wc", format!("{}: {e}", quotef(f))).await;
                        status = 1;
                        break;
                    }
                }
                pacer.tick(ctx).await?;
            }
            let c = counter.finish();
            total.lines += c.lines;
            total.words += c.words;
            total.chars += c.chars;
            total.bytes += c.bytes;
            total.max_line = total.max_line.max(c.max_line);
            let name = named.then_some(f.as_str());
            ctx.out_text(fmt(&c, name)).await?;
        }
        if files.len() > 1 {
            ctx.out_text(fmt(&total, Some("total"))).await?;
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    fn inv(stdin: &str) -> Invocation {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            fs: MemFs::with_files(&[("/a", "hello world\nfoo\n"), ("/b", "x"), ("/d/", "")]),
            ..Invocation::default()
        }
    }

    #[tokio::test]
    async fn counts_like_gnu() {
        assert_eq!(inv("").run(&Wc, &["a"]).await.1, " 2  3 16 a\n");
        assert_eq!(inv("").run(&Wc, &["-l", "a"]).await.1, "2 a\n");
        assert_eq!(
            inv("").run(&Wc, &["a", "b"]).await.1,
            " 2  3 16 a\n 0  1  1 b\n 2  4 17 total\n"
        );
        assert_eq!(
            inv("hi\n").run(&Wc, &[]).await.1,
            "      1       1       3\n"
        );
        assert_eq!(inv("hi\n").run(&Wc, &["-l"]).await.1, "1\n");
        // A character is a UTF-8 sequence in a UTF-8 locale, a byte in the C locale.
        let mut utf8 = inv("h\u{e9}\n");
        utf8.env.insert("LANG".into(), "C.UTF-8".into());
        assert_eq!(utf8.run(&Wc, &["-cm"]).await.1, "      3       4\n");
        assert_eq!(
            inv("h\u{e9}\n").run(&Wc, &["-cm"]).await.1,
            "      4       4\n"
        );
        assert_eq!(inv("ab\tc\nx\n").run(&Wc, &["-L"]).await.1, "9\n");
    }

    #[tokio::test]
    async fn errors_keep_counting() {
        let (st, out, err) = inv("").run(&Wc, &["nofile", "a"]).await;
        assert_eq!(st, 1);
        assert_eq!(out, " 2  3 16 a\n 2  3 16 total\n");
        assert_eq!(err, "wc: nofile: No such file or directory\n");
        let (st, out, err) = inv("").run(&Wc, &["d"]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (1, "      0       0       0 d\n", "wc: d: Is a directory\n")
        );
        assert_eq!(inv("").run(&Wc, &["-z"]).await.0, 1);
    }
}

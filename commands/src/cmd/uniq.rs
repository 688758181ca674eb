//! `uniq`: report or omit repeated adjacent lines, streaming. It holds the line of the
//! current group (charged to the session's budget) and writes OUTPUT as it goes.

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, MAX_LINE, OUT_BUF, Pacer, Reader, quotef};
use crate::fs::{FsError, WriteHandle, WriteMode};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Where `uniq` writes: stdout, or the OUTPUT file in [`OUT_BUF`] writes.
enum Out<'a> {
    Stdout(BufOut<'a>),
    File {
        handle: Box<dyn WriteHandle>,
        buf: Vec<u8>,
    },
}

impl Out<'_> {
    async fn write(&mut self, data: &[u8]) -> Result<Result<(), FsError>, Interrupt> {
        match self {
            Out::Stdout(out) => out.write(data).await.map(Ok),
            Out::File { handle, buf } => {
                buf.extend_from_slice(data);
                if buf.len() >= OUT_BUF {
                    let r = handle.write(buf).await;
                    buf.clear();
                    return Ok(r);
                }
                Ok(Ok(()))
            }
        }
    }

    /// Writes what is buffered and closes the file, where a write failure surfaces.
    async fn finish(self) -> Result<Result<(), FsError>, Interrupt> {
        match self {
            Out::Stdout(mut out) => out.flush().await.map(Ok),
            Out::File { mut handle, buf } => {
                let written = if buf.is_empty() {
                    Ok(())
                } else {
                    handle.write(&buf).await
                };
                let closed = handle.close().await;
                Ok(written.and(closed))
            }
        }
    }
}

/// Filter adjacent matching lines from INPUT (or standard input), writing to OUTPUT
/// (or standard output). With no options, matching lines are merged to the first
/// occurrence.
#[derive(Parser, Debug)]
#[command(name = "uniq")]
struct Args {
    /// Prefix lines by the number of occurrences.
    #[arg(short = 'c', long)]
    count: bool,
    /// Only print duplicate lines, one for each group.
    #[arg(short = 'd', long)]
    repeated: bool,
    /// Only print unique lines.
    #[arg(short = 'u', long)]
    unique: bool,
    /// Ignore differences in case when comparing.
    #[arg(short = 'i', long = "ignore-case")]
    ignore_case: bool,
    /// Avoid comparing the first N fields.
    #[arg(
        short = 'f',
        long = "skip-fields",
        value_name = "N",
        default_value_t = 0
    )]
    skip_fields: usize,
    /// Avoid comparing the first N characters.
    #[arg(
        short = 's',
        long = "skip-chars",
        value_name = "N",
        default_value_t = 0
    )]
    skip_chars: usize,
    /// Compare no more than N characters in lines.
    #[arg(short = 'w', long = "check-chars", value_name = "N")]
    check_chars: Option<usize>,
    /// Print all duplicate lines; METHOD delimits groups with an empty line: none,
    /// prepend (before each group) or separate (between groups).
    #[arg(short = 'D', long = "all-repeated", value_name = "METHOD", num_args = 0..=1,
          require_equals = true, default_missing_value = "none")]
    all_repeated: Option<String>,
    /// Show all lines, with an empty line delimiting groups; METHOD: separate, prepend,
    /// append or both.
    #[arg(long = "group", value_name = "METHOD", num_args = 0..=1, require_equals = true,
          default_missing_value = "separate")]
    group: Option<String>,
    /// Line delimiter is NUL, not newline.
    #[arg(short = 'z', long = "zero-terminated")]
    zero: bool,
    /// [INPUT [OUTPUT]]
    #[arg(value_name = "FILE")]
    files: Vec<String>,
}

impl Args {
    fn key<'l>(&self, line: &'l [u8]) -> Vec<u8> {
        let mut s: &'l [u8] = line;
        for _ in 0..self.skip_fields {
            // `-f 9223372036854775807` must not count to the end of time.
            if s.is_empty() {
                break;
            }
            let blanks = s.iter().take_while(|b| **b == b' ' || **b == b'\t').count();
            s = &s[blanks..];
            let word = s.iter().take_while(|b| **b != b' ' && **b != b'\t').count();
            s = &s[word..];
        }
        s = &s[self.skip_chars.min(s.len())..];
        if let Some(w) = self.check_chars {
            s = &s[..w.min(s.len())];
        }
        if self.ignore_case {
            s.to_ascii_lowercase()
        } else {
            s.to_vec()
        }
    }
}

pub struct Uniq;

/// How groups of equal lines are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// One line per group (the default, `-c`, `-d`, `-u`).
    Plain,
    /// `-D`: every line of each repeated group; `prepend`/`separate` delimiters.
    AllRepeated { prepend: bool, separate: bool },
    /// `-D -u`: GNU's reading of the two together: each repeated group's lines but its
    /// first.
    RepeatsOnly,
    /// `--group`: every line, groups delimited before and/or after.
    Group { before: bool, after: bool },
}

impl Mode {
    fn of(args: &Args) -> Result<Mode, String> {
        let bad = |method: &str, opt: &str, valid: &[&str]| {
            let list: Vec<String> = valid.iter().map(|v| format!("  - '{v}'")).collect();
            format!(
                "invalid argument '{method}' for '--{opt}'\nValid arguments are:\n{}",
                list.join("\n")
            )
        };
        if let Some(method) = &args.group {
            if args.count || args.repeated || args.unique || args.all_repeated.is_some() {
                return Err("--group is mutually exclusive with -c/-d/-D/-u".into());
            }
            let (before, after) = match method.as_str() {
                "separate" => (false, false),
                "prepend" => (true, false),
                "append" => (false, true),
                "both" => (true, true),
                m => return Err(bad(m, "group", &["prepend", "append", "separate", "both"])),
            };
            return Ok(Mode::Group { before, after });
        }
        let Some(method) = &args.all_repeated else {
            return Ok(Mode::Plain);
        };
        if args.count {
            return Err("printing all duplicated lines and repeat counts is meaningless".into());
        }
        let (prepend, separate) = match method.as_str() {
            "none" => (false, false),
            "prepend" => (true, false),
            "separate" => (false, true),
            m => return Err(bad(m, "all-repeated", &["none", "prepend", "separate"])),
        };
        if args.unique {
            return Ok(Mode::RepeatsOnly);
        }
        Ok(Mode::AllRepeated { prepend, separate })
    }

    /// Takes one record (`None` at the end of input) and gives the bytes to write. The
    /// group's first line stays in `current` with the group's size; `shown` says whether
    /// a group was written already (for delimiters between groups).
    #[allow(
        clippy::too_many_arguments,
        reason = "the loop's state, passed through"
    )]
    fn step(
        self,
        current: &mut Option<(Vec<u8>, Vec<u8>, u64)>,
        shown: &mut bool,
        rec: Option<Vec<u8>>,
        key: Option<Vec<u8>>,
        same: bool,
        delim: u8,
        charge: &mut crate::budget::Charge,
    ) -> Result<Vec<u8>, Interrupt> {
        let mut out = Vec::new();
        match (self, &rec) {
            (Mode::Group { after: true, .. }, None) if *shown => out.push(delim),
            (Mode::Group { before, .. }, Some(l)) => {
                if !same && (*shown || before) {
                    out.push(delim);
                }
                *shown = true;
                out.extend_from_slice(l);
                out.push(delim);
            }
            (Mode::AllRepeated { prepend, separate }, Some(l)) if same => {
                if let Some(c) = current.as_mut() {
                    c.2 += 1;
                    if c.2 == 2 {
                        if prepend || (separate && *shown) {
                            out.push(delim);
                        }
                        *shown = true;
                        out.extend_from_slice(&c.0);
                        out.push(delim);
                    }
                }
                out.extend_from_slice(l);
                out.push(delim);
            }
            (Mode::RepeatsOnly, Some(l)) if same => {
                out.extend_from_slice(l);
                out.push(delim);
            }
            _ => {}
        }
        match (rec, key) {
            (Some(l), Some(k)) => {
                if !same {
                    charge.resize(l.capacity() + k.capacity())?;
                    *current = Some((l, k, 1));
                }
            }
            _ => *current = None,
        }
        Ok(out)
    }
}

#[async_trait]
impl Command for Uniq {
    fn name(&self) -> &'static str {
        "uniq"
    }
    fn summary(&self) -> &'static str {
        "report or omit repeated lines"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if let Some(extra) = args.files.get(2) {
            let msg = format!("extra operand {}", super::util::quote(extra));
            return Ok(super::util::usage_error(ctx, "uniq", &msg).await);
        }
        let mode = match Mode::of(&args) {
            Ok(m) => m,
            Err(msg) => return Ok(super::util::usage_error(ctx, "uniq", &msg).await),
        };
        let input = args.files.first().cloned().unwrap_or_else(|| "-".into());
        let mut reader = match Reader::open(ctx, &input).await {
            Ok(r) => r,
            Err(e) => {
                ctx.warn("uniq", format!("{}: {e}", quotef(&input))).await;
                return Ok(1);
            }
        };
        let delim = if args.zero { 0u8 } else { b'\n' };
        // OUTPUT is opened once INPUT is, as GNU does (so `uniq f f` empties f).
        let to_file = args.files.get(1).filter(|f| *f != "-").cloned();
        let mut out = match &to_file {
            None => Out::Stdout(BufOut::new(ctx)),
            Some(f) => match ctx.fs.open_write(&ctx.path(f), WriteMode::Truncate).await {
                Ok(handle) => Out::File {
                    handle,
                    buf: Vec::new(),
                },
                Err(e) => {
                    ctx.warn("uniq", format!("{}: {e}", quotef(f))).await;
                    return Ok(1);
                }
            },
        };
        let mut write_error = None;
        // (line without delimiter, its key, count), charged while held.
        let mut current: Option<(Vec<u8>, Vec<u8>, u64)> = None;
        let mut charge = ctx.budget.empty_charge();
        let mut pacer = Pacer::default();
        let mut status = 0;
        let mut shown = false;
        // The output is finished (a file closed) on every way out of the loop.
        let looped: Result<(), Interrupt> = async {
            loop {
                let rec = match reader.record(delim, MAX_LINE).await? {
                    Ok(r) => r,
                    Err(e) => {
                        ctx.warn("uniq", format!("{}: {e}", quotef(&input))).await;
                        status = 1;
                        None
                    }
                };
                let rec = rec.map(|mut l| {
                    if l.last() == Some(&delim) {
                        l.pop();
                    }
                    l
                });
                let key = rec.as_ref().map(|l| args.key(l));
                let same = matches!((&current, &key), (Some((_, k, _)), Some(nk)) if k == nk);
                if mode != Mode::Plain {
                    let bytes =
                        mode.step(&mut current, &mut shown, rec, key, same, delim, &mut charge)?;
                    if let Err(e) = out.write(&bytes).await? {
                        write_error = Some(e);
                        break;
                    }
                    if current.is_none() {
                        break;
                    }
                    pacer.tick(ctx).await?;
                    continue;
                }
                if same {
                    if let Some(c) = current.as_mut() {
                        c.2 += 1;
                    }
                } else {
                    if let Some((line, _, n)) = current.take() {
                        let show = (!args.repeated || n > 1) && (!args.unique || n == 1);
                        if show {
                            let mut buf = Vec::with_capacity(line.len() + 9);
                            if args.count {
                                buf.extend_from_slice(format!("{n:>7} ").as_bytes());
                            }
                            buf.extend_from_slice(&line);
                            buf.push(delim);
                            if let Err(e) = out.write(&buf).await? {
                                write_error = Some(e);
                                break;
                            }
                        }
                    }
                    match (rec, key) {
                        (Some(l), Some(k)) => {
                            charge.resize(l.capacity() + k.capacity())?;
                            current = Some((l, k, 1));
                        }
                        _ => break,
                    }
                }
                pacer.tick(ctx).await?;
            }
            Ok(())
        }
        .await;
        let finished = out.finish().await;
        looped?;
        let finished = finished?;
        if let (Some(f), Some(e)) = (&to_file, write_error.or(finished.err())) {
            ctx.warn("uniq", format!("{}: {e}", quotef(f))).await;
            return Ok(1);
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs, TINY_BUDGET};

    async fn uniq(stdin: &str, args: &[&str]) -> (i32, String, String) {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(&Uniq, args)
        .await
    }

    /// Found by the fuzz harness: skipping a huge number of fields looped that many times
    /// per line, without ever yielding.
    #[tokio::test]
    async fn skipping_more_fields_than_a_line_has() {
        let (status, out, _) = uniq("a 1\nb 2\nc\n", &["-f", "9223372036854775807"]).await;
        assert_eq!((status, out.as_str()), (0, "a 1\n"));
    }

    #[tokio::test]
    async fn filters_adjacent() {
        let data = "a\na\nb\nA\nc\nc\nc";
        assert_eq!(uniq(data, &[]).await.1, "a\nb\nA\nc\n");
        assert_eq!(
            uniq(data, &["-c"]).await.1,
            "      2 a\n      1 b\n      1 A\n      3 c\n"
        );
        assert_eq!(uniq(data, &["-d"]).await.1, "a\nc\n");
        assert_eq!(uniq(data, &["-u"]).await.1, "b\nA\n");
        assert_eq!(uniq("a\nA\nb\n", &["-i"]).await.1, "a\nb\n");
        assert_eq!(uniq("1 x\n2 x\n3 y\n", &["-f", "1"]).await.1, "1 x\n3 y\n");
        assert_eq!(uniq("ax\nbx\n", &["-s", "1"]).await.1, "ax\n");
        assert_eq!(uniq("", &[]).await.1, "");
    }

    #[tokio::test]
    async fn files_and_errors() {
        let fs = MemFs::with_files(&[("/in", "x\nx\n")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        assert_eq!(inv.run(&Uniq, &["in", "out"]).await.0, 0);
        assert_eq!(fs.text("/out").unwrap(), "x\n");
        let (st, _, err) = inv.run(&Uniq, &["nofile"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "uniq: nofile: No such file or directory\n")
        );
        assert_eq!(inv.run(&Uniq, &["a", "b", "c"]).await.0, 1);
    }

    #[tokio::test]
    async fn a_line_over_the_budget_is_out_of_memory() {
        let long = format!("{}\n", "x".repeat(4 * TINY_BUDGET));
        Invocation {
            stdin: long.into_bytes(),
            ..Invocation::default()
        }
        .out_of_memory(&Uniq, &[], TINY_BUDGET)
        .await;
        // The group's line and its key are held while the next line is read.
        let two = format!("{0}\n{0}\n", "y".repeat(TINY_BUDGET / 2 + 100));
        Invocation {
            stdin: two.into_bytes(),
            ..Invocation::default()
        }
        .out_of_memory(&Uniq, &["-c"], TINY_BUDGET)
        .await;
    }

    #[tokio::test]
    async fn output_is_written_as_it_goes_like_gnu() {
        // GNU opens OUTPUT once INPUT is open, so `uniq f f` empties f.
        let fs = MemFs::with_files(&[("/f", "a\na\nb\n")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        assert_eq!(inv.run(&Uniq, &["f", "f"]).await.0, 0);
        assert_eq!(fs.text("/f").unwrap(), "");
        let (st, _, err) = inv.run(&Uniq, &["f", "no/such"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "uniq: no/such: No such file or directory\n")
        );
        fs.put("/in", b"x\nx\ny\n");
        fs.fail_close_on("/out");
        let (st, _, err) = inv.run(&Uniq, &["in", "out"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "uniq: out: No space left on device\n")
        );
    }
}

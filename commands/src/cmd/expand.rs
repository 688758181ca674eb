//! `expand` and `unexpand`: convert tabs to spaces and back, streaming line by line.
//! Both share GNU's tab-stop lists (`N`, `A,B,C`, a last `/N` or `+N`).

use async_trait::async_trait;
use clap::Parser;

use super::textin::each_line;
use super::util::quote;
use crate::{CmdResult, Command, Context, parse_args};

/// Tab stops: explicit positions, then a repeat (every `every` columns, or every
/// `every` after the last position).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TabStops {
    stops: Vec<usize>,
    every: Option<usize>,
}

impl Default for TabStops {
    fn default() -> Self {
        TabStops {
            stops: Vec::new(),
            every: Some(8),
        }
    }
}

impl TabStops {
    /// Parses the lists given with `-t` (several are joined), worded as GNU words errors.
    pub(crate) fn parse(lists: &[String]) -> Result<TabStops, String> {
        let mut stops: Vec<usize> = Vec::new();
        let mut every = None;
        let mut extend_after_last = false;
        for list in lists {
            for item in list.split([',', ' ', '\t']).filter(|s| !s.is_empty()) {
                let (prefix, digits) = match item.as_bytes()[0] {
                    b'/' | b'+' => (Some(item.as_bytes()[0]), &item[1..]),
                    _ => (None, item),
                };
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    let bad: String = digits.chars().skip_while(char::is_ascii_digit).collect();
                    return Err(format!(
                        "tab size contains invalid character(s): {}",
                        quote(&bad)
                    ));
                }
                let n: usize = digits
                    .parse()
                    .map_err(|_| format!("tab stop is too large {}", quote(digits)))?;
                match prefix {
                    Some(p) => {
                        if n == 0 {
                            return Err("tab size cannot be 0".into());
                        }
                        every = Some(n);
                        extend_after_last = p == b'+';
                    }
                    None => {
                        if stops.last().is_some_and(|l| n <= *l) {
                            return Err("tab sizes must be ascending".into());
                        }
                        stops.push(n);
                    }
                }
            }
        }
        match (stops.as_slice(), every) {
            ([], None) => Ok(TabStops::default()),
            ([0], None) => Err("tab size cannot be 0".into()),
            ([n], None) => Ok(TabStops {
                stops: Vec::new(),
                every: Some(*n),
            }),
            (_, Some(e)) if !extend_after_last => Ok(TabStops {
                stops: stops.clone(),
                every: Some(e),
            }),
            _ => {
                if stops.first() == Some(&0) {
                    return Err("tab size cannot be 0".into());
                }
                // `+N`: every N after the last stop, marked by a final `usize::MAX`.
                let mut stops = stops;
                if every.is_some() {
                    stops.push(usize::MAX);
                }
                Ok(TabStops { stops, every })
            }
        }
    }

    /// The first tab stop after `col`; `None` past the last stop of a list.
    pub(crate) fn next(&self, col: usize) -> Option<usize> {
        if let Some(s) = self.stops.iter().find(|s| **s > col && **s != usize::MAX) {
            return Some(*s);
        }
        let base = if self.stops.last() == Some(&usize::MAX) {
            // `+N`: every N after the last explicit stop.
            self.stops.iter().rev().nth(1).copied().unwrap_or_default()
        } else {
            0
        };
        let e = self.every?;
        if !self.stops.is_empty() && self.stops.last() != Some(&usize::MAX) && base == 0 {
            // `A,B,/N`: multiples of N past the last stop.
            let m = (col / e + 1) * e;
            return Some(m);
        }
        let from = col.checked_sub(base)?;
        Some(base + (from / e + 1) * e)
    }
}

/// Turns `-4` and `-2,6` into `-t 4`, `-t 2,6`, as GNU accepts them.
fn number_options(args: Vec<String>) -> Vec<String> {
    args.into_iter()
        .map(|a| match a.strip_prefix('-') {
            Some(n) if n.starts_with(|c: char| c.is_ascii_digit()) => format!("-t{n}"),
            _ => a,
        })
        .collect()
}

/// Convert tabs in each FILE to spaces, writing to standard output. With no FILE, or
/// when FILE is -, read standard input.
#[derive(Parser, Debug)]
#[command(name = "expand")]
struct ExpandArgs {
    /// Do not convert tabs after non blanks.
    #[arg(short = 'i', long)]
    initial: bool,
    /// Have tabs N characters apart, not 8, or use a comma separated list of positions.
    #[arg(short = 't', long, value_name = "N")]
    tabs: Vec<String>,
    /// Files to read.
    files: Vec<String>,
}

/// Convert blanks in each FILE to tabs, writing to standard output. With no FILE, or
/// when FILE is -, read standard input.
#[derive(Parser, Debug)]
#[command(name = "unexpand")]
struct UnexpandArgs {
    /// Convert all blanks, instead of just initial blanks.
    #[arg(short = 'a', long)]
    all: bool,
    /// Convert only leading sequences of blanks (overrides -a).
    #[arg(long = "first-only")]
    first_only: bool,
    /// Have tabs N characters apart instead of 8 (enables -a).
    #[arg(short = 't', long, value_name = "N")]
    tabs: Vec<String>,
    /// Files to read.
    files: Vec<String>,
}

fn expand_line(line: &[u8], tabs: &TabStops, initial: bool, out: &mut Vec<u8>) {
    let mut col = 0usize;
    let mut leading = true;
    for &c in line {
        match c {
            b'\t' if leading || !initial => {
                let to = tabs.next(col).unwrap_or(col + 1);
                out.resize(out.len() + (to - col), b' ');
                col = to;
            }
            b'\x08' => {
                out.push(c);
                col = col.saturating_sub(1);
            }
            _ => {
                if c != b' ' && c != b'\t' {
                    leading = false;
                }
                out.push(c);
                col += 1;
            }
        }
    }
}

fn unexpand_line(line: &[u8], tabs: &TabStops, all: bool, out: &mut Vec<u8>) {
    let mut col = 0usize;
    let mut converting = true;
    // Blanks seen since the last stop or non-blank: the spaces, not yet written.
    let mut pending = 0usize;
    // One space that ended at a stop: a tab if more blanks follow, else a space.
    let mut single = false;
    for &c in line {
        if single {
            single = false;
            let blank = converting && (c == b' ' || c == b'\t');
            out.push(if blank { b'\t' } else { b' ' });
        }
        if converting && (c == b' ' || c == b'\t') {
            let Some(stop) = tabs.next(col) else {
                out.resize(out.len() + pending, b' ');
                pending = 0;
                out.push(c);
                col += 1;
                continue;
            };
            if c == b'\t' {
                out.push(b'\t');
                pending = 0;
                col = stop;
                continue;
            }
            pending += 1;
            col += 1;
            if col == stop {
                if pending > 1 {
                    out.push(b'\t');
                } else {
                    single = true;
                }
                pending = 0;
            }
            continue;
        }
        out.resize(out.len() + pending, b' ');
        pending = 0;
        out.push(c);
        if c == b'\x08' {
            col = col.saturating_sub(1);
        } else {
            col += 1;
        }
        if !all && c != b' ' && c != b'\t' {
            converting = false;
        }
    }
    if single {
        out.push(b' ');
    }
    out.resize(out.len() + pending, b' ');
}

pub struct Expand;

#[async_trait]
impl Command for Expand {
    fn name(&self) -> &'static str {
        "expand"
    }
    fn summary(&self) -> &'static str {
        "convert tabs to spaces"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: ExpandArgs = match parse_args(ctx, self.name(), &number_options(args)).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let tabs = match TabStops::parse(&args.tabs) {
            Ok(t) => t,
            Err(msg) => {
                ctx.warn("expand", msg).await;
                return Ok(1);
            }
        };
        let initial = args.initial;
        each_line(ctx, "expand", &args.files, |l, out| {
            expand_line(l, &tabs, initial, out)
        })
        .await
    }
}

pub struct Unexpand;

#[async_trait]
impl Command for Unexpand {
    fn name(&self) -> &'static str {
        "unexpand"
    }
    fn summary(&self) -> &'static str {
        "convert spaces to tabs"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: UnexpandArgs = match parse_args(ctx, self.name(), &number_options(args)).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let tabs = match TabStops::parse(&args.tabs) {
            Ok(t) => t,
            Err(msg) => {
                ctx.warn("unexpand", msg).await;
                return Ok(1);
            }
        };
        let all = (args.all || !args.tabs.is_empty()) && !args.first_only;
        each_line(ctx, "unexpand", &args.files, |l, out| {
            unexpand_line(l, &tabs, all, out)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn run(cmd: &dyn Command, stdin: &str, args: &[&str]) -> (i32, String, String) {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(cmd, args)
        .await
    }

    #[tokio::test]
    async fn expands() {
        assert_eq!(run(&Expand, "a\tb\n", &[]).await.1, "a       b\n");
        assert_eq!(
            run(&Expand, "a\tb\tc\td\n", &["-t", "2,5"]).await.1,
            "a b  c d\n"
        );
        assert_eq!(
            run(&Expand, "\ta\tb\n", &["-i", "-t4"]).await.1,
            "    a\tb\n"
        );
        assert_eq!(run(&Expand, "\tx\n", &["-3"]).await.1, "   x\n");
        let (st, _, err) = run(&Expand, "", &["-t", "0"]).await;
        assert_eq!((st, err.as_str()), (1, "expand: tab size cannot be 0\n"));
        assert_eq!(run(&Expand, "", &["-t", "4,2"]).await.0, 1);
    }

    #[tokio::test]
    async fn unexpands() {
        assert_eq!(run(&Unexpand, "       x\n", &[]).await.1, "       x\n");
        assert_eq!(
            run(&Unexpand, "abcdefg h\n", &["-a"]).await.1,
            "abcdefg h\n"
        );
        assert_eq!(
            run(&Unexpand, "abcdefg  h\n", &["-a"]).await.1,
            "abcdefg\t h\n"
        );
        assert_eq!(run(&Unexpand, "  \t x\n", &[]).await.1, "\t x\n");
        assert_eq!(
            run(&Unexpand, "        a        b\n", &[]).await.1,
            "\ta        b\n"
        );
        assert_eq!(run(&Unexpand, "    a   b\n", &["-t4"]).await.1, "\ta\tb\n");
        assert_eq!(
            run(&Unexpand, "         x\n", &["--first-only", "-t4"])
                .await
                .1,
            "\t\t x\n"
        );
    }

    #[test]
    fn tab_lists() {
        let t = TabStops::parse(&["2,5".into()]).unwrap();
        assert_eq!((t.next(0), t.next(2), t.next(5)), (Some(2), Some(5), None));
        let t = TabStops::parse(&["2,/4".into()]).unwrap();
        assert_eq!((t.next(2), t.next(5)), (Some(4), Some(8)));
        let t = TabStops::parse(&["2,+4".into()]).unwrap();
        assert_eq!((t.next(2), t.next(6)), (Some(6), Some(10)));
    }
}

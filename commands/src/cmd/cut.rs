//! `cut`: print selected bytes, characters or fields of each line, streaming line by line.
//!
//! As in GNU coreutils, `-c` selects bytes (a multi-byte UTF-8 character is several
//! positions). Lines are cut straight out of
//! the chunks read; a line split across chunks is gathered whole, charged to the budget.

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, OUT_BUF, Pacer, Reader, quote, quotef};
use crate::{CmdResult, Command, Context, parse_args};

/// Print selected parts of lines from each FILE to standard output.
///
/// With no FILE, or when FILE is -, read standard input. Use one, and only one, of -b,
/// -c or -f. Each LIST is made up of one range, or many ranges separated by commas:
/// `N` (the Nth byte, character or field, counted from 1), `N-` (from N to the end of
/// the line), `N-M` (from N to M) or `-M` (from the first to M). Selected input is
/// written in the same order that it is read, and is written exactly once.
#[derive(Parser, Debug)]
#[command(name = "cut", override_usage = "cut OPTION... [FILE]...")]
struct Args {
    /// Select only these bytes.
    #[arg(short = 'b', long, value_name = "LIST", allow_hyphen_values = true)]
    bytes: Vec<String>,
    /// Select only these characters (the same as bytes here, as in GNU cut).
    #[arg(short = 'c', long, value_name = "LIST", allow_hyphen_values = true)]
    characters: Vec<String>,
    /// Select only these fields; also print any line that contains no delimiter
    /// character, unless -s is given.
    #[arg(short = 'f', long, value_name = "LIST", allow_hyphen_values = true)]
    fields: Vec<String>,
    /// Use DELIM instead of TAB for the field delimiter.
    #[arg(short = 'd', long, value_name = "DELIM", allow_hyphen_values = true)]
    delimiter: Option<String>,
    /// Do not print lines not containing delimiters.
    #[arg(short = 's', long = "only-delimited")]
    only_delimited: bool,
    /// Complement the set of selected bytes, characters or fields.
    #[arg(long)]
    complement: bool,
    /// Use STRING as the output delimiter; the default is the input delimiter
    /// (an empty STRING means NUL).
    #[arg(long = "output-delimiter", value_name = "STRING")]
    output_delimiter: Option<String>,
    /// Line delimiter is NUL, not newline.
    #[arg(short = 'z', long = "zero-terminated")]
    zero: bool,
    /// Ignored (GNU compatibility).
    #[arg(short = 'n')]
    no_split: bool,
    /// Files to read.
    files: Vec<String>,
}

/// What the list counts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Bytes,
    Fields,
}

/// Inclusive 1-based ranges, sorted, overlapping ones merged.
#[derive(Debug, PartialEq, Eq)]
struct List(Vec<(u64, u64)>);

/// Largest position a list may name; beyond it GNU reports the number as too large.
const MAX_POS: u64 = u64::MAX / 2;

impl List {
    fn parse(s: &str, unit: Unit) -> Result<List, String> {
        let from1 = match unit {
            Unit::Fields => "fields are numbered from 1",
            Unit::Bytes => "byte/character positions are numbered from 1",
        };
        let num = |t: &str| -> Result<u64, String> {
            if !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(match unit {
                    Unit::Fields => format!("invalid field value {}", quote(t)),
                    Unit::Bytes => format!("invalid byte/character position {}", quote(t)),
                });
            }
            match t.parse::<u64>() {
                Ok(n) if n <= MAX_POS => Ok(n),
                _ => Err(match unit {
                    Unit::Fields => format!("field number {} is too large", quote(t)),
                    Unit::Bytes => format!("byte/character offset {} is too large", quote(t)),
                }),
            }
        };
        let mut ranges = Vec::new();
        for piece in s.split([',', ' ', '\t']) {
            let (lo, hi) = match piece.split_once('-') {
                None => {
                    let n = if piece.is_empty() { 0 } else { num(piece)? };
                    (n, n)
                }
                Some(("", "")) => return Err("invalid range with no endpoint: -".into()),
                Some((a, b)) => {
                    if b.contains('-') {
                        return Err(match unit {
                            Unit::Fields => "invalid field range".into(),
                            Unit::Bytes => "invalid byte or character range".into(),
                        });
                    }
                    let lo = if a.is_empty() { 1 } else { num(a)? };
                    let hi = if b.is_empty() { u64::MAX } else { num(b)? };
                    if lo == 0 {
                        return Err(from1.into());
                    }
                    if hi < lo {
                        return Err("invalid decreasing range".into());
                    }
                    (lo, hi)
                }
            };
            if lo == 0 {
                return Err(from1.into());
            }
            ranges.push((lo, hi));
        }
        ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (lo, hi) in ranges {
            match merged.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        Ok(List(merged))
    }

    fn complement(&self) -> List {
        let mut out = Vec::new();
        let mut next = 1u64;
        for &(lo, hi) in &self.0 {
            if lo > next {
                out.push((next, lo - 1));
            }
            next = hi.saturating_add(1);
            if hi == u64::MAX {
                return List(out);
            }
        }
        out.push((next, u64::MAX));
        List(out)
    }

    /// The index of the range holding `pos`, if any; `from` is where to start looking
    /// (positions only grow along a line).
    fn find(&self, pos: u64, from: &mut usize) -> Option<usize> {
        while let Some(&(_, hi)) = self.0.get(*from) {
            if pos <= hi {
                break;
            }
            *from += 1;
        }
        let (lo, _) = *self.0.get(*from)?;
        (pos >= lo).then_some(*from)
    }
}

/// Everything a line needs to be cut.
struct Cutter {
    unit: Unit,
    list: List,
    delim: u8,
    /// `None`: the input delimiter (fields) or nothing (bytes).
    out_delim: Option<Vec<u8>>,
    only_delimited: bool,
    eol: u8,
}

impl Cutter {
    /// Appends the cut `line` (without its terminator) and a terminator to `out`.
    fn cut(&self, line: &[u8], out: &mut Vec<u8>) {
        let mut at = 0;
        match self.unit {
            Unit::Bytes => {
                let mut prev_range = None;
                for (i, &b) in line.iter().enumerate() {
                    let Some(r) = self.list.find(i as u64 + 1, &mut at) else {
                        continue;
                    };
                    if let (Some(d), Some(p)) = (&self.out_delim, prev_range)
                        && p != r
                    {
                        out.extend_from_slice(d);
                    }
                    prev_range = Some(r);
                    out.push(b);
                }
            }
            Unit::Fields => {
                if !line.contains(&self.delim) {
                    if !self.only_delimited {
                        out.extend_from_slice(line);
                        out.push(self.eol);
                    }
                    return;
                }
                let mut first = true;
                for (i, field) in line.split(|&b| b == self.delim).enumerate() {
                    if self.list.find(i as u64 + 1, &mut at).is_none() {
                        if at >= self.list.0.len() {
                            break;
                        }
                        continue;
                    }
                    if !first {
                        match &self.out_delim {
                            Some(d) => out.extend_from_slice(d),
                            None => out.push(self.delim),
                        }
                    }
                    first = false;
                    out.extend_from_slice(field);
                }
            }
        }
        out.push(self.eol);
    }
}

async fn usage(ctx: &Context, msg: &str) -> i32 {
    ctx.err(format!(
        "cut: {msg}\nTry 'cut --help' for more information.\n"
    ))
    .await;
    1
}

pub struct Cut;

#[async_trait]
impl Command for Cut {
    fn name(&self) -> &'static str {
        "cut"
    }
    fn summary(&self) -> &'static str {
        "remove sections from each line of files"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mut lists: Vec<(Unit, &String)> = Vec::new();
        lists.extend(args.bytes.iter().map(|l| (Unit::Bytes, l)));
        lists.extend(args.characters.iter().map(|l| (Unit::Bytes, l)));
        lists.extend(args.fields.iter().map(|l| (Unit::Fields, l)));
        if lists.len() > 1 {
            return Ok(usage(ctx, "only one list may be specified").await);
        }
        // The delimiter is a byte (one that is not UTF-8 too: `-d $'\xe9'`).
        let delim = args.delimiter.as_deref().map(crate::bytetext::encode);
        let delim = match delim.as_deref() {
            None => b'\t',
            Some([]) => 0,
            Some([d]) => *d,
            Some(_) => return Ok(usage(ctx, "the delimiter must be a single character").await),
        };
        let Some(&(unit, text)) = lists.first() else {
            return Ok(usage(
                ctx,
                "you must specify a list of bytes, characters, or fields",
            )
            .await);
        };
        let list = match List::parse(text, unit) {
            Ok(l) if args.complement => l.complement(),
            Ok(l) => l,
            Err(msg) => return Ok(usage(ctx, &msg).await),
        };
        if unit == Unit::Bytes && args.delimiter.is_some() {
            return Ok(usage(
                ctx,
                "an input delimiter may be specified only when operating on fields",
            )
            .await);
        }
        if unit == Unit::Bytes && args.only_delimited {
            return Ok(usage(
                ctx,
                "suppressing non-delimited lines makes sense\n\tonly when operating on fields",
            )
            .await);
        }
        let cutter = Cutter {
            unit,
            list,
            delim,
            out_delim: args.output_delimiter.as_ref().map(|d| {
                if d.is_empty() {
                    vec![0]
                } else {
                    crate::bytetext::encode(d).into_owned()
                }
            }),
            only_delimited: args.only_delimited,
            eol: if args.zero { 0 } else { b'\n' },
        };
        let files = if args.files.is_empty() {
            vec!["-".to_string()]
        } else {
            args.files.clone()
        };
        let mut out = BufOut::new(ctx);
        let mut pacer = Pacer::default();
        let mut status = 0;
        let mut cut = Vec::new();
        for f in &files {
            let mut reader = match Reader::open(ctx, f).await {
                Ok(r) => r,
                Err(e) => {
                    ctx.warn("cut", format!("{}: {e}", quotef(f))).await;
                    status = 1;
                    continue;
                }
            };
            // Whole lines are cut straight out of each chunk read; only a line split
            // across chunks is gathered (and charged) in `carry`.
            let mut carry: Vec<u8> = Vec::new();
            let mut charge = ctx.budget.empty_charge();
            loop {
                let chunk = match reader.chunk().await {
                    Ok(Some(c)) => c,
                    Ok(None) => {
                        if !carry.is_empty() {
                            cut.clear();
                            cutter.cut(&carry, &mut cut);
                            out.write(&cut).await?;
                        }
                        break;
                    }
                    Err(e) => {
                        out.flush().await?;
                        ctx.warn("cut", format!("{}: {e}", quotef(f))).await;
                        status = 1;
                        break;
                    }
                };
                let mut rest: &[u8] = &chunk;
                cut.clear();
                if !carry.is_empty() || memchr::memchr(cutter.eol, rest).is_none() {
                    let Some(i) = memchr::memchr(cutter.eol, rest) else {
                        charge.resize(carry.len() + rest.len())?;
                        carry.extend_from_slice(rest);
                        continue;
                    };
                    charge.resize(carry.len() + i)?;
                    carry.extend_from_slice(&rest[..i]);
                    cutter.cut(&carry, &mut cut);
                    carry = Vec::new();
                    charge.resize(0)?;
                    rest = &rest[i + 1..];
                }
                let mut start = 0;
                for i in memchr::memchr_iter(cutter.eol, rest) {
                    cutter.cut(&rest[start..i], &mut cut);
                    start = i + 1;
                    if cut.len() >= OUT_BUF {
                        out.write(&cut).await?;
                        cut.clear();
                        pacer.tick(ctx).await?;
                    }
                }
                out.write(&cut).await?;
                if start < rest.len() {
                    charge.resize(rest.len() - start)?;
                    carry.extend_from_slice(&rest[start..]);
                }
                ctx.checkpoint().await?;
            }
        }
        out.flush().await?;
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs, TINY_BUDGET};

    const TEXT: &str = "a:b:c:d\nnodelim\n1:2\n";

    fn inv(stdin: &str) -> Invocation {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            fs: MemFs::with_files(&[("/f", TEXT), ("/dd/", "")]),
            ..Invocation::default()
        }
    }

    async fn ok(args: &[&str]) -> String {
        let (st, out, err) = inv("").run(&Cut, args).await;
        assert_eq!((st, err.as_str()), (0, ""), "cut {args:?}");
        out
    }

    #[tokio::test]
    async fn fields_like_gnu() {
        assert_eq!(ok(&["-d:", "-f2", "f"]).await, "b\nnodelim\n2\n");
        assert_eq!(ok(&["-d:", "-f1,3-", "f"]).await, "a:c:d\nnodelim\n1\n");
        assert_eq!(ok(&["-d:", "-f-2", "-s", "f"]).await, "a:b\n1:2\n");
        assert_eq!(
            ok(&["-d:", "-s", "--complement", "-f1", "f"]).await,
            "b:c:d\n2\n"
        );
        assert_eq!(
            ok(&["-d:", "--complement", "-f2", "f"]).await,
            "a:c:d\nnodelim\n1\n"
        );
        assert_eq!(
            ok(&["-d:", "-f2,1", "--output-delimiter=_", "f"]).await,
            "a_b\nnodelim\n1_2\n"
        );
        assert_eq!(ok(&["-d:", "-f", "1 3", "f"]).await, "a:c\nnodelim\n1\n");
        assert_eq!(ok(&["-d", ":", "-f", "9", "f"]).await, "\nnodelim\n\n");
        let (_, out, _) = inv("a\tb\n").run(&Cut, &["-f2"]).await;
        assert_eq!(out, "b\n");
        let (_, out, _) = inv("a\0b\n").run(&Cut, &["-d", "", "-f2"]).await;
        assert_eq!(out, "b\n");
        let (_, out, _) = inv("x:y\0p:q").run(&Cut, &["-z", "-d:", "-f2"]).await;
        assert_eq!(out, "y\0q\0");
        let (_, out, _) = inv("a:b:c\n")
            .run(&Cut, &["-d:", "-f2-", "--output-delimiter="])
            .await;
        assert_eq!(out, "b\0c\n");
    }

    #[tokio::test]
    async fn bytes_and_characters() {
        assert_eq!(ok(&["-c2-3", "f"]).await, ":b\nod\n:2\n");
        assert_eq!(ok(&["-b-2,5", "f"]).await, "a:c\nnol\n1:\n");
        assert_eq!(ok(&["-b", "3-", "--complement", "f"]).await, "a:\nno\n1:\n");
        let (_, out, _) = inv("abcdef\n")
            .run(&Cut, &["-b1-2,4-5", "--output-delimiter=:"])
            .await;
        assert_eq!(out, "ab:de\n");
        // A missing final newline is added; -c counts bytes, like GNU.
        let (_, out, _) = inv("abc").run(&Cut, &["-c1", "-"]).await;
        assert_eq!(out, "a\n");
        let inv2 = Invocation {
            stdin: "h\u{e9}llo\n".as_bytes().to_vec(),
            ..Invocation::default()
        };
        let (_, out, _) = inv2.run_bytes(&Cut, &["-c2"]).await;
        assert_eq!(out, vec![0xc3, b'\n']);
    }

    #[tokio::test]
    async fn file_errors_keep_going() {
        let (st, out, err) = inv("").run(&Cut, &["-f1", "nofile", "f"]).await;
        assert_eq!(st, 1);
        assert_eq!(out, TEXT);
        assert_eq!(err, "cut: nofile: No such file or directory\n");
        let (st, out, err) = inv("").run(&Cut, &["-f1", "dd"]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (1, "", "cut: dd: Is a directory\n")
        );
    }

    #[tokio::test]
    async fn usage_errors() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["f"],
                "you must specify a list of bytes, characters, or fields",
            ),
            (&["-f1", "-c1", "f"], "only one list may be specified"),
            (
                &["-d:", "f"],
                "you must specify a list of bytes, characters, or fields",
            ),
            (
                &["-dab", "-f1", "f"],
                "the delimiter must be a single character",
            ),
            (&["-f0", "f"], "fields are numbered from 1"),
            (
                &["-b0", "f"],
                "byte/character positions are numbered from 1",
            ),
            (&["-f", "", "f"], "fields are numbered from 1"),
            (&["-f", "1,,2", "f"], "fields are numbered from 1"),
            (&["-f3-1", "f"], "invalid decreasing range"),
            (&["-f", "x", "f"], "invalid field value 'x'"),
            (&["-f", "-", "f"], "invalid range with no endpoint: -"),
            (&["-f", "1-2-3", "f"], "invalid field range"),
            (
                &["-b", "99999999999999999999", "f"],
                "byte/character offset '99999999999999999999' is too large",
            ),
            (
                &["-b1", "-s", "f"],
                "suppressing non-delimited lines makes sense\n\tonly when operating on fields",
            ),
            (
                &["-b1", "-d:", "f"],
                "an input delimiter may be specified only when operating on fields",
            ),
        ];
        for (args, msg) in cases {
            let (st, out, err) = inv("").run(&Cut, args).await;
            assert_eq!(
                (st, out.as_str(), err),
                (
                    1,
                    "",
                    format!("cut: {msg}\nTry 'cut --help' for more information.\n")
                ),
                "cut {args:?}"
            );
        }
        assert_eq!(inv("").run(&Cut, &["--bogus"]).await.0, 1);
    }

    #[test]
    fn lists() {
        assert_eq!(
            List::parse("7-,1,3-5,4", Unit::Fields),
            Ok(List(vec![(1, 1), (3, 5), (7, u64::MAX)]))
        );
        assert_eq!(
            List::parse("-3", Unit::Fields).map(|l| l.complement()),
            Ok(List(vec![(4, u64::MAX)]))
        );
        assert_eq!(
            List::parse("2-", Unit::Fields).map(|l| l.complement()),
            Ok(List(vec![(1, 1)]))
        );
    }

    #[tokio::test]
    async fn a_line_over_the_budget_is_out_of_memory() {
        // A line that is read in several chunks is gathered, and charged.
        let long = format!("{}\n", "x".repeat(64 * TINY_BUDGET + 1));
        let big = Invocation {
            fs: MemFs::with_files(&[("/long", long.as_str())]),
            ..Invocation::default()
        };
        big.out_of_memory(&Cut, &["-c1-3", "/long"], TINY_BUDGET)
            .await;
        let (st, out, _) = inv("abcdef\nxy\n").run(&Cut, &["-c2-3"]).await;
        assert_eq!((st, out.as_str()), (0, "bc\ny\n"));
    }
}

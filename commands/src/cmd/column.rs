//! `column`: columnate lists (util-linux's, as Debian ships it in bsdextrautils). The
//! input is read whole (charged to the session's budget): widths need every line.

use async_trait::async_trait;
use clap::Parser;

use super::textin::{operands_or_stdin, records, slurp};
use crate::{CmdResult, Command, Context, parse_args};

/// Width used when stdout is no terminal and COLUMNS is unset, as util-linux's.
const DEFAULT_WIDTH: usize = 80;

/// Columnate lists: fill columns before rows (or rows first with -x), or with -t build
/// a table from the input's fields.
#[derive(Parser, Debug)]
#[command(name = "column")]
struct Args {
    /// Create a table.
    #[arg(short = 't', long)]
    table: bool,
    /// Possible table delimiters (default: whitespace).
    #[arg(short = 's', long, value_name = "STRING")]
    separator: Option<String>,
    /// Columns delimiter for table output (default: two spaces).
    #[arg(short = 'o', long = "output-separator", value_name = "STRING")]
    output_separator: Option<String>,
    /// Comma separated columns names (a header line).
    #[arg(short = 'N', long = "table-columns", value_name = "NAMES")]
    names: Option<String>,
    /// Right align text in these columns (numbers or names).
    #[arg(short = 'R', long = "table-right", value_name = "COLUMNS")]
    right: Option<String>,
    /// Output width in number of characters.
    #[arg(short = 'c', long = "output-width", value_name = "WIDTH")]
    width: Option<String>,
    /// Fill rows before columns.
    #[arg(short = 'x', long = "fillrows")]
    fillrows: bool,
    /// Files to read.
    files: Vec<String>,
}

fn split_cells<'l>(line: &'l [u8], seps: Option<&[u8]>) -> Vec<&'l [u8]> {
    match seps {
        Some(s) => line.split(|b| s.contains(b)).collect(),
        None => line
            .split(|b| *b == b' ' || *b == b'\t')
            .filter(|c| !c.is_empty())
            .collect(),
    }
}

/// The table, one row per line, cells padded to the widest of their column.
fn table(rows: &[Vec<Vec<u8>>], sep: &[u8], right: &[bool]) -> Vec<u8> {
    let ncols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; ncols];
    for row in rows {
        for (i, c) in row.iter().enumerate() {
            widths[i] = widths[i].max(c.len());
        }
    }
    let mut out = Vec::new();
    for row in rows {
        for (i, c) in row.iter().enumerate() {
            let pad = widths[i] - c.len();
            let last = i + 1 == row.len();
            if right.get(i).copied().unwrap_or(false) {
                out.resize(out.len() + pad, b' ');
                out.extend_from_slice(c);
            } else {
                out.extend_from_slice(c);
                if !last {
                    out.resize(out.len() + pad, b' ');
                }
            }
            if !last {
                out.extend_from_slice(sep);
            }
        }
        out.push(b'\n');
    }
    out
}

/// Fills columns (or rows) of tab-aligned entries within `width`.
fn fill(items: &[&[u8]], width: usize, by_rows: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let maxlen = items.iter().map(|i| i.len()).max().unwrap_or(0);
    let colw = (maxlen + 8) & !7;
    let ncols = width / colw;
    if ncols <= 1 || maxlen >= width {
        for i in items {
            out.extend_from_slice(i);
            out.push(b'\n');
        }
        return out;
    }
    let nrows = items.len().div_ceil(ncols);
    for r in 0..nrows {
        let row: Vec<&[u8]> = (0..ncols)
            .filter_map(|c| {
                let idx = if by_rows {
                    r * ncols + c
                } else {
                    c * nrows + r
                };
                items.get(idx).copied()
            })
            .collect();
        for (k, item) in row.iter().enumerate() {
            out.extend_from_slice(item);
            if k + 1 < row.len() {
                let tabs = colw / 8 - item.len() / 8;
                out.resize(out.len() + tabs, b'\t');
            }
        }
        out.push(b'\n');
    }
    out
}

pub struct Column;

#[async_trait]
impl Command for Column {
    fn name(&self) -> &'static str {
        "column"
    }
    fn summary(&self) -> &'static str {
        "columnate lists"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let width = match &args.width {
            Some(w) => match w.parse::<usize>() {
                Ok(n) => n,
                Err(_) => {
                    ctx.warn("column", format!("invalid columns argument: '{w}'"))
                        .await;
                    return Ok(1);
                }
            },
            None => ctx
                .env
                .get("COLUMNS")
                .and_then(|c| c.parse().ok())
                .or(ctx.tty.map(|t| usize::from(t.cols)))
                .unwrap_or(DEFAULT_WIDTH),
        };
        let mut status = 0;
        let mut charge = ctx.budget.empty_charge();
        let mut data = Vec::new();
        for f in operands_or_stdin(&args.files) {
            match slurp(ctx, "column", &f, &mut charge).await? {
                Some(d) => {
                    data.extend_from_slice(&d);
                    if !d.is_empty() && !d.ends_with(b"\n") {
                        data.push(b'\n');
                    }
                }
                None => status = 1,
            }
            ctx.checkpoint().await?;
        }
        charge.grow(data.len() * 2)?;
        let lines: Vec<&[u8]> = records(&data, b'\n')
            .into_iter()
            .filter(|l| !l.iter().all(|b| *b == b' ' || *b == b'\t'))
            .collect();
        let out = if args.table {
            let seps = args.separator.as_ref().map(|s| s.as_bytes());
            let mut rows: Vec<Vec<Vec<u8>>> = Vec::new();
            let names: Vec<String> = args
                .names
                .as_deref()
                .map(|n| n.split(',').map(str::to_string).collect())
                .unwrap_or_default();
            if !names.is_empty() {
                rows.push(names.iter().map(|n| n.as_bytes().to_vec()).collect());
            }
            for l in &lines {
                rows.push(
                    split_cells(l, seps)
                        .into_iter()
                        .map(<[u8]>::to_vec)
                        .collect(),
                );
            }
            let ncols = rows.iter().map(Vec::len).max().unwrap_or(0);
            let mut right = vec![false; ncols];
            for r in args
                .right
                .as_deref()
                .unwrap_or("")
                .split(',')
                .filter(|s| !s.is_empty())
            {
                let idx = match r.parse::<usize>() {
                    Ok(n) => n.checked_sub(1),
                    Err(_) => names.iter().position(|n| n == r),
                };
                match idx {
                    Some(i) if i < ncols => right[i] = true,
                    Some(_) => {}
                    None => {
                        ctx.warn("column", format!("undefined column name '{r}'"))
                            .await;
                        return Ok(1);
                    }
                }
            }
            let sep = args.output_separator.clone().unwrap_or_else(|| "  ".into());
            table(&rows, sep.as_bytes(), &right)
        } else {
            fill(&lines, width, args.fillrows)
        };
        ctx.out(out).await?;
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn column(stdin: &str, args: &[&str]) -> String {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(&Column, args)
        .await
        .1
    }

    #[tokio::test]
    async fn tables() {
        assert_eq!(
            column("a b c\nlonger x y\n", &["-t"]).await,
            "a       b  c\nlonger  x  y\n"
        );
        assert_eq!(
            column("a:b\nlonger:x\n", &["-t", "-s:", "-o", " | "]).await,
            "a      | b\nlonger | x\n"
        );
        assert_eq!(
            column("a 1\nbbb 22\n", &["-t", "-R", "2"]).await,
            "a     1\nbbb  22\n"
        );
        assert_eq!(column("a,,b\n", &["-t", "-s,"]).await, "a    b\n");
    }

    #[tokio::test]
    async fn fills() {
        assert_eq!(
            column("1\n2\n3\n4\n5\n6\n7\n", &["-c", "20"]).await,
            "1\t5\n2\t6\n3\t7\n4\n"
        );
        assert_eq!(
            column("1\n2\n3\n4\n5\n6\n7\n", &["-x", "-c", "20"]).await,
            "1\t2\n3\t4\n5\t6\n7\n"
        );
        assert_eq!(column("a\n\nb\n", &[]).await, "a\tb\n");
    }
}

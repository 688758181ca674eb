//! `df`: the session's space and objects against its quota, laid out like GNU df.
//!
//! A session has one filesystem, its fork, mounted at `/`; every FILE operand is on it.
//! Blocks are the bytes the fork holds against its byte quota; inodes (`-i`) are the
//! objects it holds (files, symlinks, directories, deletion markers) against its object
//! quota. Numbers are rounded up, and `Use%` too, as GNU df does.

use async_trait::async_trait;
use clap::Parser;

use super::util::{human_size, quotef};
use crate::fs::Usage;
use crate::{CmdResult, Command, Context, parse_args};

/// What the Filesystem and Type columns show for the fork.
const SOURCE: &str = "forkbox";
/// Where the fork is mounted.
const TARGET: &str = "/";
/// Every field `--output` knows, in GNU's order (`--output` alone prints them all).
const ALL_FIELDS: &str =
    "source,fstype,itotal,iused,iavail,ipcent,size,used,avail,pcent,file,target";

/// Show information about the file system on which each FILE resides, or all file
/// systems by default.
///
/// A forkbox session has one file system: its fork, mounted at /. Its size is the
/// session's byte quota and its inodes are the session's object quota (files, symlinks,
/// directories and deletion markers); used space counts only what the session created or
/// changed. Sizes are in units of 1024 bytes unless -B, -h or -k says otherwise.
///
/// FIELD_LIST is a comma-separated list of columns: source, fstype, itotal, iused,
/// iavail, ipcent, size, used, avail, pcent, file and target.
#[derive(Parser, Debug)]
#[command(
    name = "df",
    disable_help_flag = true,
    override_usage = "df [OPTION]... [FILE]..."
)]
struct Args {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Include pseudo, duplicate and inaccessible file systems (there is only one).
    #[arg(short = 'a', long)]
    all: bool,
    /// Scale sizes by SIZE before printing them; e.g., '-BM' prints sizes in units of
    /// 1,048,576 bytes.
    #[arg(short = 'B', long = "block-size", value_name = "SIZE")]
    block_size: Option<String>,
    /// Print sizes in powers of 1024 (e.g., 1023M).
    #[arg(short = 'h', long = "human-readable")]
    human: bool,
    /// List inode information (objects of the fork) instead of block usage.
    #[arg(short = 'i', long)]
    inodes: bool,
    /// Like --block-size=1K.
    #[arg(short = 'k')]
    kilo: bool,
    /// Limit listing to local file systems (the fork is the only one).
    #[arg(short = 'l', long)]
    local: bool,
    /// Use the output format defined by FIELD_LIST, or print all fields if FIELD_LIST is
    /// omitted.
    #[arg(
        long,
        value_name = "FIELD_LIST",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ALL_FIELDS
    )]
    output: Option<String>,
    /// Print file system type.
    #[arg(short = 'T', long = "print-type")]
    print_type: bool,
    /// Files whose file system to show (all are on the fork).
    files: Vec<String>,
}

/// One column of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Source,
    Fstype,
    Itotal,
    Iused,
    Iavail,
    Ipcent,
    Size,
    Used,
    Avail,
    Pcent,
    File,
    Target,
}

impl Field {
    fn parse(name: &str) -> Option<Field> {
        Some(match name {
            "source" => Field::Source,
            "fstype" => Field::Fstype,
            "itotal" => Field::Itotal,
            "iused" => Field::Iused,
            "iavail" => Field::Iavail,
            "ipcent" => Field::Ipcent,
            "size" => Field::Size,
            "used" => Field::Used,
            "avail" => Field::Avail,
            "pcent" => Field::Pcent,
            "file" => Field::File,
            "target" => Field::Target,
            _ => return None,
        })
    }

    /// GNU's smallest width of the column.
    fn min_width(self) -> usize {
        match self {
            Field::Source => 14,
            Field::Fstype | Field::Pcent => 4,
            Field::File | Field::Target => 0,
            _ => 5,
        }
    }

    fn left_aligned(self) -> bool {
        matches!(
            self,
            Field::Source | Field::Fstype | Field::File | Field::Target
        )
    }
}

/// How byte counts are printed.
#[derive(Clone, Debug)]
enum Scale {
    Human,
    /// Units of `size` bytes, with `suffix` after each number (`-BM` prints `12M`).
    Blocks {
        size: u64,
        label: String,
        suffix: String,
    },
}

impl Scale {
    fn show(&self, n: u64) -> String {
        match self {
            Scale::Human => human_size(n),
            Scale::Blocks { size, suffix, .. } => format!("{}{suffix}", n.div_ceil(*size)),
        }
    }
}

/// Parses a `-B` argument: `1K`, `4096`, `M`, `1MB`, `1MiB`. A unit without digits also
/// puts the unit after every number, as GNU df does.
fn parse_block_size(s: &str) -> Option<Scale> {
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(digits);
    let n: u64 = if num.is_empty() { 1 } else { num.parse().ok()? };
    let letter = unit.chars().next().map(|c| c.to_ascii_uppercase());
    let power = match letter {
        None => 0,
        Some('K') => 1,
        Some('M') => 2,
        Some('G') => 3,
        Some('T') => 4,
        Some('P') => 5,
        Some('E') => 6,
        Some(_) => return None,
    };
    let base: u64 = match unit.get(1..).unwrap_or("") {
        "" | "iB" => 1024,
        "B" => 1000,
        _ => return None,
    };
    let size = n.checked_mul(base.checked_pow(power)?)?;
    if size == 0 {
        return None;
    }
    let suffix = if num.is_empty() {
        unit.to_string()
    } else {
        String::new()
    };
    Some(Scale::Blocks {
        size,
        label: block_label(size),
        suffix,
    })
}

/// The block size as GNU names it in the `1K-blocks` header.
fn block_label(size: u64) -> String {
    const UNITS: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    for (i, unit) in UNITS.iter().enumerate().rev() {
        let p = 1024u64.pow(i as u32 + 1);
        if size.is_multiple_of(p) {
            return format!("{}{unit}", size / p);
        }
    }
    for (i, unit) in ["kB", "MB", "GB", "TB", "PB", "EB"]
        .iter()
        .enumerate()
        .rev()
    {
        let p = 1000u64.pow(i as u32 + 1);
        if size.is_multiple_of(p) {
            return format!("{}{unit}", size / p);
        }
    }
    format!("{size}B")
}

/// `used` as a percentage of `used + avail`, rounded up; `-` when there is no limit.
fn percent(used: u64, limit: Option<u64>) -> String {
    match limit {
        Some(limit) if limit > 0 => {
            let total = (used as u128).max(limit as u128);
            format!("{}%", (used as u128 * 100).div_ceil(total))
        }
        _ => "-".to_string(),
    }
}

/// The cells of one row.
fn row(fields: &[Field], usage: &Usage, scale: &Scale, file: &str) -> Vec<String> {
    let count = |n: u64| match scale {
        Scale::Human => human_size(n),
        Scale::Blocks { .. } => n.to_string(),
    };
    let maybe = |n: Option<u64>, show: &dyn Fn(u64) -> String| n.map(show).unwrap_or("-".into());
    let bytes = |n: u64| scale.show(n);
    fields
        .iter()
        .map(|f| match f {
            Field::Source | Field::Fstype => SOURCE.to_string(),
            Field::Itotal => maybe(usage.objects_limit, &count),
            Field::Iused => count(usage.objects_used),
            Field::Iavail => maybe(
                usage
                    .objects_limit
                    .map(|l| l.saturating_sub(usage.objects_used)),
                &count,
            ),
            Field::Ipcent => percent(usage.objects_used, usage.objects_limit),
            Field::Size => maybe(usage.bytes_limit, &bytes),
            Field::Used => bytes(usage.bytes_used),
            Field::Avail => maybe(
                usage
                    .bytes_limit
                    .map(|l| l.saturating_sub(usage.bytes_used)),
                &bytes,
            ),
            Field::Pcent => percent(usage.bytes_used, usage.bytes_limit),
            Field::File => file.to_string(),
            Field::Target => TARGET.to_string(),
        })
        .collect()
}

fn header(field: Field, scale: &Scale, custom: bool) -> String {
    let human = matches!(scale, Scale::Human);
    match field {
        Field::Source => "Filesystem".into(),
        Field::Fstype => "Type".into(),
        Field::Itotal => "Inodes".into(),
        Field::Iused => "IUsed".into(),
        Field::Iavail => "IFree".into(),
        Field::Ipcent => "IUse%".into(),
        Field::Size => match scale {
            Scale::Human => "Size".into(),
            Scale::Blocks { label, .. } => format!("{label}-blocks"),
        },
        Field::Used => "Used".into(),
        Field::Avail if human || custom => "Avail".into(),
        Field::Avail => "Available".into(),
        Field::Pcent => "Use%".into(),
        Field::File => "File".into(),
        Field::Target => "Mounted on".into(),
    }
}

/// Lays the table out as GNU df does: each column as wide as its widest cell (at least
/// its minimum), one space apart, numbers right-aligned, the last column unpadded.
fn table(fields: &[Field], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
                .max(f.min_width())
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, (cell, f)) in r.iter().zip(fields).enumerate() {
            if i > 0 {
                line.push(' ');
            }
            let w = widths[i];
            if f.left_aligned() {
                if i + 1 == fields.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<w$}"));
                }
            } else {
                line.push_str(&format!("{cell:>w$}"));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

async fn usage_error(ctx: &Context, msg: &str) -> i32 {
    ctx.err(format!(
        "df: {msg}\nTry 'df --help' for more information.\n"
    ))
    .await;
    1
}

pub struct Df;

#[async_trait]
impl Command for Df {
    fn name(&self) -> &'static str {
        "df"
    }
    fn summary(&self) -> &'static str {
        "report the session's disk space and objects against its quota"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.output.is_some() && args.inodes {
            return Ok(usage_error(ctx, "options -i and --output are mutually exclusive").await);
        }
        if args.output.is_some() && args.print_type {
            return Ok(usage_error(ctx, "options -T and --output are mutually exclusive").await);
        }
        let scale = if args.human {
            Scale::Human
        } else if let Some(b) = &args.block_size {
            match parse_block_size(b) {
                Some(s) => s,
                None => {
                    ctx.warn("df", format!("invalid -B argument '{b}'")).await;
                    return Ok(1);
                }
            }
        } else {
            Scale::Blocks {
                size: 1024,
                label: "1K".into(),
                suffix: String::new(),
            }
        };
        let fields: Vec<Field> = match &args.output {
            Some(list) => {
                let mut fields = Vec::new();
                for name in list.split(',') {
                    let Some(f) = Field::parse(name) else {
                        let msg = format!("option --output: field ‘{name}’ unknown");
                        return Ok(usage_error(ctx, &msg).await);
                    };
                    if fields.contains(&f) {
                        let msg = format!("option --output: field ‘{name}’ used more than once");
                        return Ok(usage_error(ctx, &msg).await);
                    }
                    fields.push(f);
                }
                fields
            }
            None => {
                let mut fields = vec![Field::Source];
                if args.print_type {
                    fields.push(Field::Fstype);
                }
                if args.inodes {
                    fields.extend([Field::Itotal, Field::Iused, Field::Iavail, Field::Ipcent]);
                } else {
                    fields.extend([Field::Size, Field::Used, Field::Avail, Field::Pcent]);
                }
                fields.push(Field::Target);
                fields
            }
        };
        let usage = match ctx.fs.usage().await {
            Ok(u) => u,
            Err(e) => {
                ctx.warn("df", format!("cannot read the usage of /: {e}"))
                    .await;
                return Ok(1);
            }
        };
        let mut status = 0;
        let mut rows = vec![
            fields
                .iter()
                .map(|f| header(*f, &scale, args.output.is_some()))
                .collect::<Vec<_>>(),
        ];
        if args.files.is_empty() {
            rows.push(row(&fields, &usage, &scale, "-"));
        }
        let mut errors = Vec::new();
        for f in &args.files {
            match ctx.fs.stat(&ctx.path(f)).await {
                Ok(_) => rows.push(row(&fields, &usage, &scale, f)),
                Err(e) => {
                    errors.push(format!("{}: {e}", quotef(f)));
                    status = 1;
                }
            }
        }
        if rows.len() > 1 {
            ctx.out(table(&fields, &rows)).await?;
        }
        for e in errors {
            ctx.warn("df", e).await;
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    /// A MemFs holding 5000 + 3 bytes in 4 objects (a directory and three files/links),
    /// with a 1 MiB / 100-object quota.
    fn inv() -> Invocation {
        let fs = MemFs::with_files(&[("/d/big", &"0".repeat(5000)), ("/d/a", "xy")]);
        fs.put_symlink("a", "/d/s");
        fs.set_usage_limits(Some(1 << 20), Some(100));
        Invocation {
            fs,
            ..Invocation::default()
        }
    }

    async fn ok(args: &[&str]) -> String {
        let (st, out, err) = inv().run(&Df, args).await;
        assert_eq!((st, err.as_str()), (0, ""), "df {args:?}");
        out
    }

    #[tokio::test]
    async fn gnu_layout_against_the_quota() {
        // Column widths and rounding as GNU df 9.1 lays them out.
        assert_eq!(
            ok(&[]).await,
            "Filesystem     1K-blocks  Used Available Use% Mounted on\n\
             forkbox             1024     5      1020   1% /\n"
        );
        assert_eq!(
            ok(&["-h"]).await,
            "Filesystem      Size  Used Avail Use% Mounted on\n\
             forkbox         1.0M  4.9K 1020K   1% /\n"
        );
        assert_eq!(
            ok(&["-i"]).await,
            "Filesystem     Inodes IUsed IFree IUse% Mounted on\n\
             forkbox           100     4    96    4% /\n"
        );
        assert_eq!(
            ok(&["-B1"]).await,
            "Filesystem     1B-blocks  Used Available Use% Mounted on\n\
             forkbox          1048576  5003   1043573   1% /\n"
        );
        assert_eq!(
            ok(&["-BM", "-T"]).await,
            "Filesystem     Type    1M-blocks  Used Available Use% Mounted on\n\
             forkbox        forkbox        1M    1M        1M   1% /\n"
        );
        assert_eq!(ok(&["-k", "/d"]).await, ok(&[]).await);
        assert_eq!(
            ok(&["--output=file,size,pcent,target", "d", "/"]).await,
            "File 1K-blocks Use% Mounted on\n\
             d         1024   1% /\n\
             /         1024   1% /\n"
        );
        let all = ok(&["--output"]).await;
        assert!(
            all.starts_with("Filesystem     Type    Inodes IUsed IFree IUse% 1K-blocks  Used Avail Use% File Mounted on\n"),
            "{all}"
        );
    }

    #[tokio::test]
    async fn full_and_unlimited() {
        let fs = MemFs::with_files(&[("/f", &"x".repeat(2048))]);
        fs.set_usage_limits(Some(2048), None);
        let inv = Invocation {
            fs,
            ..Invocation::default()
        };
        let (st, out, _) = inv.run(&Df, &["-i"]).await;
        assert_eq!(
            (st, out.as_str()),
            (
                0,
                "Filesystem     Inodes IUsed IFree IUse% Mounted on\n\
                 forkbox             -     1     -     - /\n"
            )
        );
        let (_, out, _) = inv.run(&Df, &[]).await;
        assert!(
            out.ends_with("forkbox                2     2         0 100% /\n"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn errors() {
        let (st, out, err) = inv().run(&Df, &["/", "nofile"]).await;
        assert_eq!(st, 1);
        assert!(out.starts_with("Filesystem"), "{out}");
        assert_eq!(err, "df: nofile: No such file or directory\n");
        let (st, out, err) = inv().run(&Df, &["nofile"]).await;
        assert_eq!((st, out.as_str()), (1, ""));
        assert_eq!(err, "df: nofile: No such file or directory\n");
        let try_help = "Try 'df --help' for more information.\n";
        let cases: &[(&[&str], &str)] = &[
            (
                &["-i", "--output=size"],
                "options -i and --output are mutually exclusive",
            ),
            (
                &["-T", "--output"],
                "options -T and --output are mutually exclusive",
            ),
            (&["--output=foo"], "option --output: field ‘foo’ unknown"),
            (
                &["--output=size,size"],
                "option --output: field ‘size’ used more than once",
            ),
        ];
        for (args, msg) in cases {
            assert_eq!(
                inv().run(&Df, args).await,
                (1, String::new(), format!("df: {msg}\n{try_help}")),
                "df {args:?}"
            );
        }
        for bad in ["x", "0", "1Q"] {
            assert_eq!(
                inv().run(&Df, &["-B", bad]).await,
                (
                    1,
                    String::new(),
                    format!("df: invalid -B argument '{bad}'\n")
                ),
            );
        }
        assert_eq!(inv().run(&Df, &["--bogus"]).await.0, 1);
    }

    #[test]
    fn block_sizes() {
        let label = |s: &str| match parse_block_size(s) {
            Some(Scale::Blocks { size, label, .. }) => (size, label),
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(label("1K"), (1024, "1K".into()));
        assert_eq!(label("4096"), (4096, "4K".into()));
        assert_eq!(label("1000"), (1000, "1kB".into()));
        assert_eq!(label("1MB"), (1_000_000, "1MB".into()));
        assert_eq!(label("2MiB"), (2 << 20, "2M".into()));
        assert_eq!(label("G"), (1 << 30, "1G".into()));
        assert_eq!(label("1"), (1, "1B".into()));
    }
}

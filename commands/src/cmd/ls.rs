//! `ls`: list directory contents, GNU-style. Columns on a terminal, one name per line
//! otherwise. Owners and groups are the session user (the fork has no others); the link
//! count is always 1; times are UTC.

use std::time::SystemTime;

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, MAX_DEPTH, Pacer, human_size, mode_string, quote};
use super::zone::Zone;
use crate::fs::{FileKind, Metadata};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Width assumed for columns when the terminal reports none.
const DEFAULT_COLS: usize = 80;

/// List information about the FILEs (the current directory by default).
/// Entries are sorted by name.
#[derive(Parser, Debug)]
#[command(name = "ls", disable_help_flag = true)]
struct Args {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Do not ignore entries starting with '.'.
    #[arg(short = 'a', long)]
    all: bool,
    /// Do not list implied . and ..
    #[arg(short = 'A', long = "almost-all")]
    almost_all: bool,
    /// List directories themselves, not their contents.
    #[arg(short = 'd', long)]
    directory: bool,
    /// Append indicator (one of */@) to entries.
    #[arg(short = 'F', long)]
    classify: bool,
    /// Append / indicator to directories.
    #[arg(short = 'p')]
    slash: bool,
    /// Colorize the output: WHEN is 'always', 'auto' or 'never' (output here is never
    /// colored).
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true, default_missing_value = "always")]
    color: Option<String>,
    /// With -l, print sizes like 1K 234M 2G.
    #[arg(short = 'h', long = "human-readable")]
    human: bool,
    /// Use a long listing format.
    #[arg(short = 'l')]
    long: bool,
    /// Reverse order while sorting.
    #[arg(short = 'r', long)]
    reverse: bool,
    /// List subdirectories recursively.
    #[arg(short = 'R', long)]
    recursive: bool,
    /// Sort by file size, largest first.
    #[arg(short = 'S')]
    by_size: bool,
    /// Sort by modification time, newest first.
    #[arg(short = 't')]
    by_time: bool,
    /// List one file per line.
    #[arg(short = '1')]
    one: bool,
    /// Do not sort; list entries in directory order.
    #[arg(short = 'U')]
    unsorted: bool,
    /// List all entries in directory order (-a -U).
    #[arg(short = 'f')]
    all_unsorted: bool,
    /// Like -F, except do not append '*'.
    #[arg(long = "file-type")]
    file_type: bool,
    /// Append indicator with style WORD to entry names: none (default), slash (-p),
    /// file-type (--file-type), classify (-F).
    #[arg(long = "indicator-style", value_name = "WORD")]
    indicator_style: Option<String>,
    /// Sort by WORD instead of name: none (-U), size (-S), time (-t), name.
    #[arg(long = "sort", value_name = "WORD")]
    sort_word: Option<String>,
    /// Files or directories to list.
    files: Vec<String>,
}

/// One name to print, with what is known about it.
struct Item {
    name: String,
    meta: Metadata,
    /// The symlink's target, for `-l`.
    target: Option<String>,
    /// What the symlink points at, for `-F` and `-l` decoration.
    target_meta: Option<Metadata>,
}

fn indicator(meta: &Metadata) -> &'static str {
    match meta.kind {
        FileKind::Dir => "/",
        FileKind::Symlink => "@",
        FileKind::File if meta.mode & 0o111 != 0 => "*",
        FileKind::File | FileKind::CharDevice => "",
    }
}

fn fmt_time(t: SystemTime, now: SystemTime, zone: &Zone) -> String {
    let (dt, _) = zone.at(t);
    let six_months = std::time::Duration::from_secs(182 * 24 * 3600);
    let recent = match now.duration_since(t) {
        Ok(age) => age < six_months,
        Err(e) => e.duration() < std::time::Duration::from_secs(3600),
    };
    if recent {
        dt.format("%b %e %H:%M").to_string()
    } else {
        dt.format("%b %e  %Y").to_string()
    }
}

fn blocks(meta: &Metadata) -> u64 {
    match meta.kind {
        FileKind::File => meta.len.div_ceil(4096) * 4,
        FileKind::Dir => 4,
        FileKind::Symlink | FileKind::CharDevice => 0,
    }
}

struct Lister<'a> {
    ctx: &'a Context,
    args: &'a Args,
    user: String,
    now: SystemTime,
    /// `TZ`'s zone, which `-l` shows times in.
    zone: Zone,
    status: i32,
}

impl Lister<'_> {
    fn sort(&self, items: &mut [Item]) {
        if self.args.unsorted {
            return;
        }
        items.sort_by(|a, b| a.name.cmp(&b.name));
        if self.args.by_size {
            items.sort_by_key(|i| std::cmp::Reverse(i.meta.len));
        } else if self.args.by_time {
            items.sort_by_key(|i| std::cmp::Reverse(i.meta.mtime));
        }
        if self.args.reverse {
            items.reverse();
        }
    }

    fn display_name(&self, item: &Item) -> String {
        let mut s = item.name.clone();
        s.push_str(self.indicator(&item.meta));
        s
    }

    /// The indicator -F, --file-type or -p appends to a name of this kind.
    fn indicator(&self, meta: &Metadata) -> &'static str {
        if self.args.classify {
            indicator(meta)
        } else if self.args.file_type {
            match indicator(meta) {
                "*" => "",
                i => i,
            }
        } else if self.args.slash && meta.is_dir() {
            "/"
        } else {
            ""
        }
    }

    /// The size column's text for `meta`.
    fn size_text(&self, meta: &Metadata) -> String {
        if self.args.human {
            human_size(meta.len)
        } else {
            meta.len.to_string()
        }
    }

    async fn print_items(
        &self,
        out: &mut BufOut<'_>,
        items: &[Item],
        total: bool,
        min_size_width: usize,
    ) -> Result<(), Interrupt> {
        if items.is_empty() {
            if total && self.args.long {
                out.write(b"total 0\n").await?;
            }
            return Ok(());
        }
        if self.args.long {
            if total {
                let sum: u64 = items.iter().map(|i| blocks(&i.meta)).sum();
                out.write(format!("total {sum}\n").as_bytes()).await?;
            }
            let size = |i: &Item| self.size_text(&i.meta);
            let w = items
                .iter()
                .map(|i| size(i).len())
                .max()
                .unwrap_or(1)
                .max(min_size_width);
            for i in items {
                let mut line = format!(
                    "{} 1 {u} {u} {:>w$} {} {}",
                    mode_string(&i.meta),
                    size(i),
                    fmt_time(i.meta.mtime, self.now, &self.zone),
                    i.name,
                    u = self.user,
                );
                if let Some(t) = &i.target {
                    line.push_str(" -> ");
                    line.push_str(t);
                    if (self.args.classify || self.args.file_type)
                        && let Some(tm) = &i.target_meta
                    {
                        line.push_str(self.indicator(tm));
                    }
                } else {
                    line.push_str(self.indicator(&i.meta));
                }
                line.push('\n');
                out.write_text(&line).await?;
            }
            return Ok(());
        }
        let names: Vec<String> = items.iter().map(|i| self.display_name(i)).collect();
        match self.ctx.tty {
            Some(size) if !self.args.one => {
                let width = if size.cols == 0 {
                    DEFAULT_COLS
                } else {
                    usize::from(size.cols)
                };
                out.write_text(&columns(&names, width)).await?;
            }
            _ => {
                for n in names {
                    out.write_text(&format!("{n}\n")).await?;
                }
            }
        }
        Ok(())
    }

    async fn item(&self, name: String, path: &str, meta: Metadata) -> Item {
        let (target, target_meta) = if meta.is_symlink() {
            (
                self.ctx.fs.readlink(path).await.ok(),
                self.ctx.fs.stat(path).await.ok(),
            )
        } else {
            (None, None)
        };
        Item {
            name,
            meta,
            target,
            target_meta,
        }
    }

    /// Lists one directory's entries; with -R, then its subdirectories.
    async fn list_dir(
        &mut self,
        out: &mut BufOut<'_>,
        shown: &str,
        path: &str,
        header: bool,
        first: &mut bool,
    ) -> Result<(), Interrupt> {
        // An explicit stack keeps -R iterative: (shown name, path, depth).
        let mut stack = vec![(shown.to_string(), path.to_string(), 0usize)];
        let mut pacer = Pacer::default();
        while let Some((shown, path, depth)) = stack.pop() {
            pacer.tick(self.ctx).await?;
            let entries = match self.ctx.fs.read_dir(&path).await {
                Ok(e) => e,
                Err(e) => {
                    out.flush().await?;
                    self.ctx
                        .warn(
                            "ls",
                            format!("cannot open directory {}: {e}", quote(&shown)),
                        )
                        .await;
                    self.status = 2;
                    continue;
                }
            };
            if !*first {
                out.write(b"\n").await?;
            }
            *first = false;
            if header || self.args.recursive {
                out.write_text(&format!("{shown}:\n")).await?;
            }
            let mut items = Vec::new();
            if self.args.all {
                if let Ok(m) = self.ctx.fs.stat(&path).await {
                    items.push(Item {
                        name: ".".into(),
                        meta: m.clone(),
                        target: None,
                        target_meta: None,
                    });
                }
                let parent = crate::fs::join(&path, "..");
                if let Ok(m) = self.ctx.fs.stat(&parent).await {
                    items.push(Item {
                        name: "..".into(),
                        meta: m,
                        target: None,
                        target_meta: None,
                    });
                }
            }
            for e in entries {
                if e.name.starts_with('.') && !self.args.all && !self.args.almost_all {
                    continue;
                }
                let p = crate::fs::join(&path, &e.name);
                items.push(self.item(e.name, &p, e.meta).await);
            }
            self.sort(&mut items);
            self.print_items(out, &items, true, 0).await?;
            if self.args.recursive {
                if depth >= MAX_DEPTH {
                    self.ctx
                        .warn(
                            "ls",
                            format!("{}: directory nesting too deep", quote(&shown)),
                        )
                        .await;
                    self.status = 2;
                    continue;
                }
                let subdirs: Vec<_> = items
                    .iter()
                    .filter(|i| i.meta.is_dir() && i.name != "." && i.name != "..")
                    .map(|i| {
                        let s = if shown.ends_with('/') {
                            format!("{shown}{}", i.name)
                        } else {
                            format!("{shown}/{}", i.name)
                        };
                        (s, crate::fs::join(&path, &i.name), depth + 1)
                    })
                    .collect();
                stack.extend(subdirs.into_iter().rev());
            }
        }
        Ok(())
    }
}

/// Names in columns, filled top to bottom then left to right, as GNU ls does on a terminal.
pub(crate) fn columns(names: &[String], width: usize) -> String {
    let lens: Vec<usize> = names.iter().map(|n| n.chars().count()).collect();
    let n = names.len();
    let mut best_cols = 1;
    for cols in (1..=n.min(width / 3 + 1)).rev() {
        let rows = n.div_ceil(cols);
        let mut total = 0;
        for c in 0..cols {
            let w = (c * rows..((c + 1) * rows).min(n))
                .map(|i| lens[i])
                .max()
                .unwrap_or(0);
            total += w + if c + 1 < cols { 2 } else { 0 };
        }
        if total <= width {
            best_cols = cols;
            break;
        }
    }
    let rows = n.div_ceil(best_cols);
    let widths: Vec<usize> = (0..best_cols)
        .map(|c| {
            (c * rows..((c + 1) * rows).min(n))
                .map(|i| lens[i])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in 0..rows {
        let mut line = String::new();
        for (c, w) in widths.iter().enumerate() {
            let i = c * rows + r;
            if i >= n {
                break;
            }
            line.push_str(&names[i]);
            if (c + 1) * rows + r < n {
                line.push_str(&" ".repeat(w + 2 - lens[i]));
            }
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

pub struct Ls;

#[async_trait]
impl Command for Ls {
    fn name(&self) -> &'static str {
        "ls"
    }
    fn summary(&self) -> &'static str {
        "list directory contents"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.all_unsorted {
            args.all = true;
            args.unsorted = true;
        }
        let words: [(&str, &Option<String>, &[&str]); 2] = [
            (
                "--indicator-style",
                &args.indicator_style,
                &["none", "slash", "file-type", "classify"],
            ),
            ("--sort", &args.sort_word, &["none", "size", "time", "name"]),
        ];
        for (opt, word, valid) in words {
            if let Some(w) = word
                && !valid.contains(&w.as_str())
            {
                let mut msg = format!(
                    "ls: invalid argument {} for {}\nValid arguments are:\n",
                    quote(w),
                    quote(opt)
                );
                for v in valid {
                    msg.push_str(&format!("  - {}\n", quote(v)));
                }
                msg.push_str("Try 'ls --help' for more information.\n");
                ctx.err(msg).await;
                return Ok(2);
            }
        }
        match args.indicator_style.as_deref() {
            Some("slash") => args.slash = true,
            Some("file-type") => args.file_type = true,
            Some("classify") => args.classify = true,
            _ => {}
        }
        match args.sort_word.as_deref() {
            Some("none") => args.unsorted = true,
            Some("size") => args.by_size = true,
            Some("time") => args.by_time = true,
            _ => {}
        }
        let mut lister = Lister {
            ctx,
            args: &args,
            user: ctx
                .env
                .get("USER")
                .cloned()
                .unwrap_or_else(|| "user".into()),
            now: SystemTime::now(),
            zone: Zone::from_env(&ctx.env),
            status: 0,
        };
        let operands = if args.files.is_empty() {
            vec![".".to_string()]
        } else {
            args.files.clone()
        };
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        // GNU sizes the operands' size column over the directories among them too.
        let mut dir_size_width = 0;
        for op in &operands {
            let path = ctx.path(op);
            let meta = match ctx.fs.lstat(&path).await {
                Ok(m) => m,
                Err(e) => {
                    ctx.warn("ls", format!("cannot access {}: {e}", quote(op)))
                        .await;
                    lister.status = 2;
                    continue;
                }
            };
            let follow = !(args.long || args.directory || args.classify || args.file_type);
            let is_dir = match meta.kind {
                FileKind::Dir => true,
                FileKind::Symlink if follow => ctx.fs.stat(&path).await.is_ok_and(|m| m.is_dir()),
                _ => false,
            };
            if is_dir && !args.directory {
                dir_size_width = dir_size_width.max(lister.size_text(&meta).len());
                dirs.push((op.clone(), path));
            } else {
                files.push(lister.item(op.clone(), &path, meta).await);
            }
        }
        let mut out = BufOut::new(ctx);
        lister.sort(&mut files);
        lister
            .print_items(&mut out, &files, false, dir_size_width)
            .await?;
        let mut first = files.is_empty();
        if !args.unsorted {
            dirs.sort_by(|a, b| a.0.cmp(&b.0));
            if args.reverse {
                dirs.reverse();
            }
        }
        let header = operands.len() > 1;
        for (shown, path) in dirs {
            lister
                .list_dir(&mut out, &shown, &path, header, &mut first)
                .await?;
        }
        out.flush().await?;
        Ok(lister.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TermSize;
    use crate::testing::{Invocation, MemFs};

    fn inv() -> Invocation {
        let fs = MemFs::with_files(&[
            ("/d/b.txt", "hello"),
            ("/d/a.sh", ""),
            ("/d/.hidden", ""),
            ("/d/sub/x", "12345678901"),
            ("/top", ""),
        ]);
        fs.put_symlink("b.txt", "/d/link");
        fs.set_mtime_secs("/d/b.txt", 1_577_934_245); // 2020-01-02 03:04:05
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let mut env = inv.env.clone();
        env.insert("USER".into(), "me".into());
        Invocation { env, ..inv }
    }

    #[tokio::test]
    async fn one_per_line_when_not_a_tty() {
        let (st, out, err) = inv().run(&Ls, &["d"]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (0, "a.sh\nb.txt\nlink\nsub\n", "")
        );
        assert_eq!(
            inv().run(&Ls, &["-A", "/d"]).await.1,
            ".hidden\na.sh\nb.txt\nlink\nsub\n"
        );
        assert_eq!(
            inv().run(&Ls, &["-a", "d"]).await.1,
            ".\n..\n.hidden\na.sh\nb.txt\nlink\nsub\n"
        );
        assert_eq!(inv().run(&Ls, &[]).await.1, "d\ntop\n");
    }

    #[tokio::test]
    async fn files_before_dirs_and_headers() {
        let (st, out, _) = inv().run(&Ls, &["d/sub", "top", "d/b.txt"]).await;
        assert_eq!(st, 0);
        assert_eq!(out, "d/b.txt\ntop\n\nd/sub:\nx\n");
        assert_eq!(inv().run(&Ls, &["-d", "d", "top"]).await.1, "d\ntop\n");
        assert_eq!(
            inv().run(&Ls, &["-R", "d"]).await.1,
            "d:\na.sh\nb.txt\nlink\nsub\n\nd/sub:\nx\n"
        );
    }

    #[tokio::test]
    async fn long_format() {
        let (st, out, _) = inv().run(&Ls, &["-lF", "d"]).await;
        assert_eq!(st, 0);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "total 8");
        assert!(
            lines[1].starts_with("-rw-r--r-- 1 me me    0 "),
            "{}",
            lines[1]
        );
        assert_eq!(lines[2], "-rw-r--r-- 1 me me    5 Jan  2  2020 b.txt");
        assert!(
            lines[3].starts_with("lrwxrwxrwx 1 me me    5 ") && lines[3].ends_with("link -> b.txt"),
            "{}",
            lines[3]
        );
        assert!(lines[4].starts_with("drwxr-xr-x 1 me me 4096") && lines[4].ends_with(" sub/"));
        let (_, out, _) = inv().run(&Ls, &["-lh", "/d/sub/x"]).await;
        assert!(out.starts_with("-rw-r--r-- 1 me me 11 "), "{out}");
    }

    #[tokio::test]
    async fn columns_on_a_tty() {
        let mut i = inv();
        i.tty = Some(TermSize { cols: 20, rows: 24 });
        assert_eq!(i.run(&Ls, &["d"]).await.1, "a.sh   link\nb.txt  sub\n");
        i.tty = Some(TermSize { cols: 80, rows: 24 });
        assert_eq!(
            i.run(&Ls, &["-F", "d"]).await.1,
            "a.sh  b.txt  link@  sub/\n"
        );
        assert_eq!(i.run(&Ls, &["-1", "d"]).await.1, "a.sh\nb.txt\nlink\nsub\n");
    }

    #[tokio::test]
    async fn missing_operands() {
        let (st, out, err) = inv().run(&Ls, &["nope", "top"]).await;
        assert_eq!((st, out.as_str()), (2, "top\n"));
        assert_eq!(err, "ls: cannot access 'nope': No such file or directory\n");
        assert_eq!(inv().run(&Ls, &["--bogus"]).await.0, 2);
    }
}

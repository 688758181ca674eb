//! `du`: summarize the space files take, as apparent sizes.
//!
//! A fork's files are objects, and the space an object takes is its size, so du counts
//! apparent sizes (what `du --apparent-size` counts on Linux), including each
//! directory's and symlink's own size as the filesystem reports it. Symlinks are never
//! followed; the walk is bounded by [`MAX_DEPTH`] and yields as it goes.

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, MAX_DEPTH, Pacer, human_size, quote};
use crate::fs::{DirEntry, FileKind};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Summarize the disk usage of the set of FILEs, recursively for directories.
///
/// Sizes are apparent sizes (the bytes a file holds, which is what a forkbox file
/// occupies in object storage), printed in units of 1024 bytes rounded up unless -b or
/// -h is given. Symbolic links are not followed.
#[derive(Parser, Debug)]
#[command(
    name = "du",
    disable_help_flag = true,
    override_usage = "du [OPTION]... [FILE]..."
)]
struct Args {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Write counts for all files, not just directories.
    #[arg(short = 'a', long)]
    all: bool,
    /// Print apparent sizes (always the case in forkbox; accepted for compatibility).
    #[arg(long = "apparent-size")]
    apparent_size: bool,
    /// Print sizes in bytes (equivalent to --apparent-size --block-size=1).
    #[arg(short = 'b', long)]
    bytes: bool,
    /// Produce a grand total.
    #[arg(short = 'c', long)]
    total: bool,
    /// Print sizes in human readable format (e.g., 1K 234M 2G).
    #[arg(short = 'h', long = "human-readable")]
    human: bool,
    /// Print sizes in units of 1024 bytes (the default).
    #[arg(short = 'k')]
    kilo: bool,
    /// Print the total for a directory (or file, with --all) only if it is N or fewer
    /// levels below the command line argument; --max-depth=0 is the same as --summarize.
    #[arg(
        short = 'd',
        long = "max-depth",
        value_name = "N",
        allow_hyphen_values = true
    )]
    max_depth: Option<String>,
    /// Display only a total for each argument.
    #[arg(short = 's', long)]
    summarize: bool,
    /// Files or directories to measure (default: the current directory).
    files: Vec<String>,
}

/// How sizes are printed.
#[derive(Clone, Copy)]
enum Unit {
    Bytes,
    Human,
    Kilo,
}

impl Unit {
    fn show(self, bytes: u64) -> String {
        match self {
            Unit::Bytes => bytes.to_string(),
            Unit::Human => human_size(bytes),
            Unit::Kilo => bytes.div_ceil(1024).to_string(),
        }
    }
}

/// One directory being walked.
struct Frame {
    shown: String,
    path: String,
    depth: usize,
    entries: std::vec::IntoIter<DirEntry>,
    /// The directory's canonical path, when known (to skip earlier operands).
    canon: Option<String>,
    /// Bytes counted so far, starting with the directory's own size.
    total: u64,
}

struct Walker<'a> {
    ctx: &'a Context,
    out: BufOut<'a>,
    unit: Unit,
    all: bool,
    max_depth: usize,
    status: i32,
    pacer: Pacer,
    /// Canonical paths of the operands measured so far: GNU du counts a file once, so
    /// they are skipped when met again.
    seen: Vec<String>,
}

impl Walker<'_> {
    async fn print(&mut self, bytes: u64, shown: &str) -> Result<(), Interrupt> {
        let line = format!("{}\t{shown}\n", self.unit.show(bytes));
        self.out.write(line.as_bytes()).await
    }

    async fn fail(&mut self, msg: String) -> Result<(), Interrupt> {
        self.out.flush().await?;
        self.ctx.warn("du", msg).await;
        self.status = 1;
        Ok(())
    }

    /// Opens a directory for the walk; an unreadable one counts its own size only.
    async fn frame(
        &mut self,
        shown: String,
        path: String,
        depth: usize,
        own: u64,
        canon: Option<String>,
    ) -> Result<Frame, Interrupt> {
        let entries = match self.ctx.fs.read_dir(&path).await {
            Ok(e) => e,
            Err(e) => {
                self.fail(format!("cannot read directory {}: {e}", quote(&shown)))
                    .await?;
                Vec::new()
            }
        };
        Ok(Frame {
            shown,
            path,
            depth,
            entries: entries.into_iter(),
            canon,
            total: own,
        })
    }

    /// Measures one operand; returns its total in bytes.
    async fn operand(&mut self, f: &str) -> Result<Option<u64>, Interrupt> {
        let path = self.ctx.path(f);
        let meta = match self.ctx.fs.lstat(&path).await {
            Ok(m) => m,
            Err(e) => {
                self.fail(format!("cannot access {}: {e}", quote(f)))
                    .await?;
                return Ok(None);
            }
        };
        let canon = if meta.is_symlink() {
            None
        } else {
            self.ctx.fs.canonicalize(&path).await.ok()
        };
        if let Some(c) = &canon {
            let inside = |s: &String| c == s || s == "/" || c.starts_with(&format!("{s}/"));
            if self.seen.iter().any(inside) {
                return Ok(Some(0));
            }
            self.seen.push(c.clone());
        }
        if !meta.is_dir() {
            self.print(meta.len, f).await?;
            return Ok(Some(meta.len));
        }
        let root = self.frame(f.to_string(), path, 0, meta.len, canon).await?;
        let mut stack = vec![root];
        loop {
            self.pacer.tick(self.ctx).await?;
            let Some(top) = stack.last_mut() else {
                return Ok(None);
            };
            match top.entries.next() {
                Some(e) => {
                    let shown = format!("{}/{}", top.shown.trim_end_matches('/'), e.name);
                    let depth = top.depth + 1;
                    let canon = top.canon.as_ref().map(|c| crate::fs::join(c, &e.name));
                    if canon.as_ref().is_some_and(|c| self.seen.contains(c)) {
                        continue;
                    }
                    if e.meta.kind == FileKind::Dir {
                        if depth > MAX_DEPTH {
                            top.total += e.meta.len;
                            self.fail(format!("{}: directory nesting too deep", quote(&shown)))
                                .await?;
                            continue;
                        }
                        let path = crate::fs::join(&top.path, &e.name);
                        let frame = self.frame(shown, path, depth, e.meta.len, canon).await?;
                        stack.push(frame);
                    } else {
                        top.total += e.meta.len;
                        if self.all && depth <= self.max_depth {
                            self.print(e.meta.len, &shown).await?;
                        }
                    }
                }
                None => {
                    let Some(done) = stack.pop() else {
                        return Ok(None);
                    };
                    if done.depth <= self.max_depth {
                        self.print(done.total, &done.shown).await?;
                    }
                    match stack.last_mut() {
                        Some(parent) => parent.total += done.total,
                        None => return Ok(Some(done.total)),
                    }
                }
            }
        }
    }
}

async fn usage(ctx: &Context, msg: &str) -> i32 {
    ctx.err(format!(
        "du: {msg}\nTry 'du --help' for more information.\n"
    ))
    .await;
    1
}

pub struct Du;

#[async_trait]
impl Command for Du {
    fn name(&self) -> &'static str {
        "du"
    }
    fn summary(&self) -> &'static str {
        "estimate file space usage"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let max_depth = match &args.max_depth {
            None => None,
            Some(d) => match d.parse::<usize>() {
                Ok(n) => Some(n),
                Err(_) => {
                    return Ok(usage(ctx, &format!("invalid maximum depth {}", quote(d))).await);
                }
            },
        };
        if args.summarize && args.all {
            return Ok(usage(ctx, "cannot both summarize and show all entries").await);
        }
        if args.summarize && max_depth.is_some_and(|d| d > 0) {
            let d = max_depth.unwrap_or_default();
            return Ok(usage(
                ctx,
                &format!("warning: summarizing conflicts with --max-depth={d}"),
            )
            .await);
        }
        let unit = if args.human {
            Unit::Human
        } else if args.bytes {
            Unit::Bytes
        } else {
            Unit::Kilo
        };
        let files = if args.files.is_empty() {
            vec![".".to_string()]
        } else {
            args.files.clone()
        };
        let mut walker = Walker {
            ctx,
            out: BufOut::new(ctx),
            unit,
            all: args.all,
            max_depth: if args.summarize {
                0
            } else {
                max_depth.unwrap_or(usize::MAX)
            },
            status: 0,
            pacer: Pacer::default(),
            seen: Vec::new(),
        };
        let mut grand = 0u64;
        for f in &files {
            if let Some(n) = walker.operand(f).await? {
                grand += n;
            }
        }
        if args.total {
            walker.print(grand, "total").await?;
        }
        walker.out.flush().await?;
        Ok(walker.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    /// MemFs gives directories a size of 4096, as Linux does.
    fn inv() -> Invocation {
        let fs = MemFs::with_files(&[
            ("/d/a", "x"),
            ("/d/e/b", "y"),
            ("/d/big", &"0".repeat(5000)),
        ]);
        fs.put_symlink("a", "/d/s");
        Invocation {
            fs,
            cwd: "/".into(),
            ..Invocation::default()
        }
    }

    async fn ok(args: &[&str]) -> String {
        let (st, out, err) = inv().run(&Du, args).await;
        assert_eq!((st, err.as_str()), (0, ""), "du {args:?}");
        out
    }

    #[tokio::test]
    async fn apparent_sizes_like_gnu_apparent_size() {
        // Same numbers as GNU `du --apparent-size` on the same tree.
        assert_eq!(ok(&["d"]).await, "5\td/e\n13\td\n");
        assert_eq!(
            ok(&["-a", "d"]).await,
            "1\td/a\n5\td/big\n1\td/e/b\n5\td/e\n1\td/s\n13\td\n"
        );
        assert_eq!(ok(&["-s", "d"]).await, "13\td\n");
        assert_eq!(ok(&["-b", "d"]).await, "4097\td/e\n13195\td\n");
        assert_eq!(ok(&["--apparent-size", "-sh", "d"]).await, "13K\td\n");
        assert_eq!(ok(&["-h", "d/big"]).await, "4.9K\td/big\n");
        assert_eq!(ok(&["-b", "d/s"]).await, "1\td/s\n");
        assert_eq!(ok(&["-c", "-s", "d", "d/e"]).await, "13\td\n13\ttotal\n");
        assert_eq!(
            ok(&["-c", "-s", "d/e", "d"]).await,
            "5\td/e\n9\td\n13\ttotal\n"
        );
        assert_eq!(ok(&["-d", "0", "d"]).await, "13\td\n");
        assert_eq!(
            ok(&["--max-depth=1", "-a", "d/"]).await,
            "1\td/a\n5\td/big\n5\td/e\n1\td/s\n13\td/\n"
        );
        let at_d = Invocation {
            cwd: "/d".into(),
            ..inv()
        };
        assert_eq!(at_d.run(&Du, &[]).await.1, "5\t./e\n13\t.\n");
    }

    #[tokio::test]
    async fn errors() {
        let (st, out, err) = inv().run(&Du, &["-s", "nofile", "d"]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (
                1,
                "13\td\n",
                "du: cannot access 'nofile': No such file or directory\n"
            )
        );
        let try_help = "Try 'du --help' for more information.\n";
        let cases: &[(&[&str], &str)] = &[
            (
                &["-s", "-a", "d"],
                "cannot both summarize and show all entries",
            ),
            (&["-d", "x", "d"], "invalid maximum depth 'x'"),
            (&["-d", "-1", "d"], "invalid maximum depth '-1'"),
            (
                &["-s", "-d", "1", "d"],
                "warning: summarizing conflicts with --max-depth=1",
            ),
        ];
        for (args, msg) in cases {
            assert_eq!(
                inv().run(&Du, args).await,
                (1, String::new(), format!("du: {msg}\n{try_help}")),
                "du {args:?}"
            );
        }
        assert_eq!(inv().run(&Du, &["--bogus"]).await.0, 1);
        let (st, out, _) = inv().run(&Du, &["--help"]).await;
        assert_eq!(st, 0);
        assert!(out.contains("1024 bytes"), "{out}");
    }

    #[tokio::test]
    async fn deep_trees_are_bounded() {
        let fs = MemFs::new();
        let deep = format!("/t{}", "/x".repeat(MAX_DEPTH + 2));
        fs.put_dir(&deep);
        let inv = Invocation {
            fs,
            ..Invocation::default()
        };
        let (st, out, err) = inv.run(&Du, &["-s", "t"]).await;
        assert_eq!(st, 1);
        assert!(out.ends_with("\tt\n"), "{out}");
        assert!(err.contains("directory nesting too deep"), "{err}");
    }
}

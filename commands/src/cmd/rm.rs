//! `rm`: remove files and, with `-r`, directory trees. `-i` asks before each removal (the
//! answers read from stdin), and with `-r` about each entry of a directory it descends
//! into, as GNU's does.

use async_trait::async_trait;
use clap::Parser;

use super::util::{MAX_DEPTH, Pacer, base_name, missing_operand, quote};
use crate::fs::{FileKind, FsError};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Remove (unlink) the FILE(s).
///
/// By default, rm does not remove directories. Use -r to remove each listed directory
/// and its contents, or -d to remove empty ones.
#[derive(Parser, Debug)]
#[command(name = "rm")]
struct Args {
    /// Ignore nonexistent files and arguments, never prompt.
    #[arg(short = 'f', long, overrides_with = "interactive")]
    force: bool,
    /// Prompt before every removal (an answer is read from standard input).
    #[arg(short = 'i', overrides_with = "force")]
    interactive: bool,
    /// Remove directories and their contents recursively.
    #[arg(short = 'r', short_alias = 'R', long)]
    recursive: bool,
    /// Remove empty directories.
    #[arg(short = 'd', long)]
    dir: bool,
    /// Explain what is being done.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Do not treat '/' specially.
    #[arg(long = "no-preserve-root")]
    no_preserve_root: bool,
    /// Files to remove.
    files: Vec<String>,
}

pub struct Rm;

struct Remover<'a> {
    ctx: &'a Context,
    args: &'a Args,
    status: i32,
    pacer: Pacer,
}

impl Remover<'_> {
    async fn fail(&mut self, shown: &str, e: FsError) {
        self.ctx
            .warn("rm", format!("cannot remove {}: {e}", quote(shown)))
            .await;
        self.status = 1;
    }

    async fn removed(&self, shown: &str, dir: bool) -> Result<(), Interrupt> {
        if self.args.verbose {
            let what = if dir { "removed directory" } else { "removed" };
            self.ctx.out(format!("{what} {}\n", quote(shown))).await?;
        }
        Ok(())
    }

    /// `rm -ri`: asks about each entry of `path` (whose descent was agreed to), removing
    /// what is agreed to, depth first; then asks to remove `path` itself, unless a descent
    /// below it was refused (GNU then knows it stays and does not ask). Gives whether it
    /// asked.
    fn ask_tree<'b>(
        &'b mut self,
        asker: &'b mut super::util::Asker,
        shown: &'b str,
        path: &'b str,
        depth: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool, Interrupt>> + Send + 'b>>
    {
        Box::pin(async move {
            let entries = match self.ctx.fs.read_dir(path).await {
                Ok(e) => e,
                Err(e) => {
                    self.fail(shown, e).await;
                    return Ok(false);
                }
            };
            let mut kept_subtree = false;
            for e in entries {
                self.pacer.tick(self.ctx).await?;
                let child_shown = format!("{}/{}", shown.trim_end_matches('/'), e.name);
                let child = crate::fs::join(path, &e.name);
                if e.meta.kind == FileKind::Dir {
                    let empty = self
                        .ctx
                        .fs
                        .read_dir(&child)
                        .await
                        .is_ok_and(|c| c.is_empty());
                    if empty {
                        self.ask_rmdir(asker, &child_shown, &child).await?;
                        continue;
                    }
                    if depth + 1 > MAX_DEPTH {
                        self.ctx
                            .warn(
                                "rm",
                                format!("{}: directory nesting too deep", quote(&child_shown)),
                            )
                            .await;
                        self.status = 1;
                        continue;
                    }
                    let q = format!("rm: descend into directory {}? ", quote(&child_shown));
                    if !asker.ask(self.ctx, &q).await?
                        || !self
                            .ask_tree(asker, &child_shown, &child, depth + 1)
                            .await?
                    {
                        kept_subtree = true;
                    }
                    continue;
                }
                let what = match e.meta.kind {
                    FileKind::Symlink => "remove symbolic link",
                    _ if e.meta.len == 0 => "remove regular empty file",
                    _ => "remove regular file",
                };
                let q = format!("rm: {what} {}? ", quote(&child_shown));
                if asker.ask(self.ctx, &q).await? {
                    match self.ctx.fs.unlink(&child).await {
                        Ok(()) => self.removed(&child_shown, false).await?,
                        Err(e) => self.fail(&child_shown, e).await,
                    }
                }
            }
            if kept_subtree {
                return Ok(false);
            }
            self.ask_rmdir(asker, shown, path).await?;
            Ok(true)
        })
    }

    /// Asks to remove the directory `path`, and removes it on yes.
    async fn ask_rmdir(
        &mut self,
        asker: &mut super::util::Asker,
        shown: &str,
        path: &str,
    ) -> Result<(), Interrupt> {
        let q = format!("rm: remove directory {}? ", quote(shown));
        if asker.ask(self.ctx, &q).await? {
            match self.ctx.fs.rmdir(path).await {
                Ok(()) => self.removed(shown, true).await?,
                Err(e) => self.fail(shown, e).await,
            }
        }
        Ok(())
    }

    /// Removes a directory tree depth-first with an explicit stack.
    async fn remove_tree(&mut self, shown: &str, path: &str) -> Result<(), Interrupt> {
        // (shown, path, depth, children already pushed)
        let mut stack = vec![(shown.to_string(), path.to_string(), 0usize, false)];
        while let Some((shown, path, depth, expanded)) = stack.pop() {
            self.pacer.tick(self.ctx).await?;
            if !expanded {
                let entries = match self.ctx.fs.read_dir(&path).await {
                    Ok(e) => e,
                    Err(e) => {
                        self.fail(&shown, e).await;
                        continue;
                    }
                };
                stack.push((shown.clone(), path.clone(), depth, true));
                for e in entries.into_iter().rev() {
                    let child_shown = format!("{}/{}", shown.trim_end_matches('/'), e.name);
                    let child = crate::fs::join(&path, &e.name);
                    if e.meta.kind == FileKind::Dir {
                        if depth + 1 > MAX_DEPTH {
                            self.ctx
                                .warn(
                                    "rm",
                                    format!("{}: directory nesting too deep", quote(&child_shown)),
                                )
                                .await;
                            self.status = 1;
                            continue;
                        }
                        stack.push((child_shown, child, depth + 1, false));
                    } else {
                        match self.ctx.fs.unlink(&child).await {
                            Ok(()) => self.removed(&child_shown, false).await?,
                            Err(e) => self.fail(&child_shown, e).await,
                        }
                    }
                }
            } else {
                match self.ctx.fs.rmdir(&path).await {
                    Ok(()) => self.removed(&shown, true).await?,
                    // A child could not be removed; that failure was already reported.
                    Err(FsError::NotEmpty) if self.status != 0 => {}
                    Err(e) => self.fail(&shown, e).await,
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Command for Rm {
    fn name(&self) -> &'static str {
        "rm"
    }
    fn summary(&self) -> &'static str {
        "remove files or directories"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.files.is_empty() {
            return Ok(if args.force {
                0
            } else {
                missing_operand(ctx, "rm").await
            });
        }
        let mut rm = Remover {
            ctx,
            args: &args,
            status: 0,
            pacer: Pacer::default(),
        };
        let mut asker = super::util::Asker::default();
        for f in &args.files {
            let path = ctx.path(f);
            if matches!(base_name(f), "." | "..") {
                ctx.warn(
                    "rm",
                    format!(
                        "refusing to remove '.' or '..' directory: skipping {}",
                        quote(f)
                    ),
                )
                .await;
                rm.status = 1;
                continue;
            }
            let meta = match ctx.fs.lstat(&path).await {
                Ok(m) => m,
                Err(FsError::NotFound) if args.force => continue,
                Err(e) => {
                    rm.fail(f, e).await;
                    continue;
                }
            };
            if args.interactive {
                let what = match meta.kind {
                    FileKind::Dir if args.recursive || args.dir => {
                        let empty = ctx.fs.read_dir(&path).await.is_ok_and(|e| e.is_empty());
                        if empty || !args.recursive {
                            "remove directory"
                        } else {
                            "descend into directory"
                        }
                    }
                    FileKind::Dir => "",
                    FileKind::Symlink => "remove symbolic link",
                    _ if meta.len == 0 => "remove regular empty file",
                    _ => "remove regular file",
                };
                if !what.is_empty()
                    && !asker
                        .ask(ctx, &format!("rm: {what} {}? ", quote(f)))
                        .await?
                {
                    continue;
                }
            }
            if meta.kind != FileKind::Dir {
                match ctx.fs.unlink(&path).await {
                    Ok(()) => rm.removed(f, false).await?,
                    Err(e) => rm.fail(f, e).await,
                }
                continue;
            }
            if args.recursive {
                if crate::fs::normalize(&path) == "/" && !args.no_preserve_root {
                    ctx.err(format!(
                        "rm: it is dangerous to operate recursively on {}\nrm: use --no-preserve-root to override this failsafe\n",
                        quote(f)
                    ))
                    .await;
                    rm.status = 1;
                    continue;
                }
                let descended =
                    args.interactive && !ctx.fs.read_dir(&path).await.is_ok_and(|e| e.is_empty());
                if descended {
                    let _asked = rm.ask_tree(&mut asker, f, &path, 0).await?;
                } else {
                    rm.remove_tree(f, &path).await?;
                }
            } else if args.dir {
                match ctx.fs.rmdir(&path).await {
                    Ok(()) => rm.removed(f, true).await?,
                    Err(e) => rm.fail(f, e).await,
                }
            } else {
                rm.fail(f, FsError::IsADirectory).await;
            }
        }
        Ok(rm.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    fn setup() -> (std::sync::Arc<MemFs>, Invocation) {
        let fs = MemFs::with_files(&[("/d/a", ""), ("/d/s/b", ""), ("/e/", ""), ("/f", "")]);
        fs.put_symlink("/d", "/ln");
        (
            fs.clone(),
            Invocation {
                fs,
                ..Invocation::default()
            },
        )
    }

    #[tokio::test]
    async fn removes_files_and_trees() {
        let (fs, inv) = setup();
        assert_eq!(
            inv.run(&Rm, &["f", "ln"]).await,
            (0, String::new(), String::new())
        );
        assert!(!fs.exists("/f") && !fs.exists("/ln") && fs.exists("/d/a"));
        let (st, out, _) = inv.run(&Rm, &["-rv", "d"]).await;
        assert_eq!(st, 0);
        assert_eq!(
            out,
            "removed 'd/a'\nremoved 'd/s/b'\nremoved directory 'd/s'\nremoved directory 'd'\n"
        );
        assert!(!fs.exists("/d"));
        assert_eq!(inv.run(&Rm, &["-d", "e"]).await.0, 0);
        assert!(!fs.exists("/e"));
    }

    #[tokio::test]
    async fn errors_like_gnu() {
        let (fs, inv) = setup();
        let (st, _, err) = inv.run(&Rm, &["nofile", "d", "f"]).await;
        assert_eq!(st, 1);
        assert_eq!(
            err,
            "rm: cannot remove 'nofile': No such file or directory\nrm: cannot remove 'd': Is a directory\n"
        );
        assert!(!fs.exists("/f"));
        let (st, _, err) = inv.run(&Rm, &["-d", "d"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "rm: cannot remove 'd': Directory not empty\n")
        );
        assert_eq!(
            inv.run(&Rm, &["-f", "nofile"]).await,
            (0, String::new(), String::new())
        );
        assert_eq!(inv.run(&Rm, &["-f"]).await.0, 0);
        assert_eq!(inv.run(&Rm, &[]).await.0, 1);
        let (st, _, err) = inv.run(&Rm, &["-rf", "/"]).await;
        assert_eq!(st, 1);
        assert!(err.starts_with("rm: it is dangerous to operate recursively on '/'"));
        assert!(fs.exists("/d/a"));
        let (st, _, err) = inv.run(&Rm, &["-r", "d/.."]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "rm: refusing to remove '.' or '..' directory: skipping 'd/..'\n"
            )
        );
        assert_eq!(inv.run(&Rm, &["-x"]).await.0, 1);
    }
}

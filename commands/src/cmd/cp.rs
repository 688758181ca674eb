//! `cp`: copy files and directory trees through the filesystem port.

use std::collections::HashSet;

use async_trait::async_trait;
use clap::Parser;

use super::util::{CopyError, MAX_DEPTH, Pacer, quote, targets};
use crate::fs::{FileKind, FsError, Metadata, WriteMode};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Copy SOURCE to DEST, or multiple SOURCE(s) to DIRECTORY.
#[derive(Parser, Debug)]
#[command(name = "cp")]
struct Args {
    /// Same as -dR --preserve=all.
    #[arg(short = 'a', long)]
    archive: bool,
    /// Never follow symbolic links in SOURCE (copy them as links).
    #[arg(short = 'P', long = "no-dereference")]
    no_deref: bool,
    /// Always follow symbolic links in SOURCE.
    #[arg(short = 'L', long)]
    dereference: bool,
    /// If an existing destination file cannot be opened, remove it and try again.
    #[arg(short = 'f', long)]
    force: bool,
    /// Do not overwrite an existing file.
    #[arg(short = 'n', long = "no-clobber")]
    no_clobber: bool,
    /// Prompt before overwrite (an answer is read from standard input).
    #[arg(short = 'i', long)]
    interactive: bool,
    /// Preserve mode and modification time.
    #[arg(short = 'p')]
    preserve: bool,
    /// Copy directories recursively.
    #[arg(short = 'r', short_alias = 'R', long)]
    recursive: bool,
    /// Copy all SOURCE arguments into DIRECTORY.
    #[arg(short = 't', long = "target-directory", value_name = "DIRECTORY")]
    target_directory: Option<String>,
    /// Treat DEST as a normal file.
    #[arg(short = 'T', long = "no-target-directory")]
    no_target_directory: bool,
    /// Explain what is being done.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// SOURCE... DEST
    #[arg(value_name = "FILE")]
    files: Vec<String>,
}

struct Copier<'a> {
    ctx: &'a Context,
    args: &'a Args,
    status: i32,
    pacer: Pacer,
    asker: super::util::Asker,
}

impl Copier<'_> {
    fn preserve(&self) -> bool {
        self.args.preserve || self.args.archive
    }

    /// Whether symlinks are copied as links: -P, -a, or -r without -L.
    fn links_as_links(&self) -> bool {
        !self.args.dereference && (self.args.no_deref || self.args.archive || self.args.recursive)
    }

    async fn fail(&mut self, msg: String) {
        self.ctx.warn("cp", msg).await;
        self.status = 1;
    }

    async fn copy_one(
        &mut self,
        src_shown: &str,
        src: &str,
        dst_shown: &str,
        dst: &str,
    ) -> Result<(), Interrupt> {
        let meta = if self.links_as_links() {
            self.ctx.fs.lstat(src).await
        } else {
            self.ctx.fs.stat(src).await
        };
        let meta = match meta {
            Ok(m) => m,
            Err(e) => {
                self.fail(format!("cannot stat {}: {e}", quote(src_shown)))
                    .await;
                return Ok(());
            }
        };
        if meta.is_dir() {
            if !(self.args.recursive || self.args.archive) {
                self.fail(format!(
                    "-r not specified; omitting directory {}",
                    quote(src_shown)
                ))
                .await;
                return Ok(());
            }
            let (Ok(s), Ok(d)) = (self.canon(src).await, self.canon_parent(dst).await) else {
                return self.copy_tree(src_shown, src, dst_shown, dst, meta).await;
            };
            let inside = d.starts_with(&format!("{}/", s.trim_end_matches('/')));
            if d == s || inside {
                // GNU copies all but the copy itself (which `copy_tree` never descends
                // into), then reports it.
                if inside {
                    self.copy_tree(src_shown, src, dst_shown, dst, meta).await?;
                }
                self.fail(format!(
                    "cannot copy a directory, {}, into itself, {}",
                    quote(src_shown),
                    quote(dst_shown)
                ))
                .await;
                return Ok(());
            }
            return self.copy_tree(src_shown, src, dst_shown, dst, meta).await;
        }
        self.copy_leaf(src_shown, src, dst_shown, dst, &meta).await
    }

    async fn canon(&self, p: &str) -> Result<String, FsError> {
        self.ctx.fs.canonicalize(p).await
    }

    /// The canonical form of a path whose last component may not exist yet.
    async fn canon_parent(&self, p: &str) -> Result<String, FsError> {
        if let Ok(c) = self.ctx.fs.canonicalize(p).await {
            return Ok(c);
        }
        let norm = crate::fs::normalize(p);
        let (parent, name) = norm.rsplit_once('/').unwrap_or(("", &norm));
        let parent = if parent.is_empty() { "/" } else { parent };
        let c = self.ctx.fs.canonicalize(parent).await?;
        Ok(crate::fs::join(&c, name))
    }

    /// Copies a file or symlink (not a directory).
    async fn copy_leaf(
        &mut self,
        src_shown: &str,
        src: &str,
        dst_shown: &str,
        dst: &str,
        meta: &Metadata,
    ) -> Result<(), Interrupt> {
        let existing = self.ctx.fs.lstat(dst).await.ok();
        if let Some(d) = &existing {
            if self.args.no_clobber {
                return Ok(());
            }
            if d.is_dir() {
                self.fail(format!(
                    "cannot overwrite directory {} with non-directory",
                    quote(dst_shown)
                ))
                .await;
                return Ok(());
            }
            if let (Ok(a), Ok(b)) = (self.canon(src).await, self.canon(dst).await)
                && a == b
                && meta.kind != FileKind::Symlink
            {
                self.fail(format!(
                    "{} and {} are the same file",
                    quote(src_shown),
                    quote(dst_shown)
                ))
                .await;
                return Ok(());
            }
            if self.args.interactive
                && !self
                    .asker
                    .ask(self.ctx, &format!("cp: overwrite {}? ", quote(dst_shown)))
                    .await?
            {
                return Ok(());
            }
        }
        if meta.kind == FileKind::Symlink {
            let target = match self.ctx.fs.readlink(src).await {
                Ok(t) => t,
                Err(e) => {
                    self.fail(format!(
                        "cannot read symbolic link {}: {e}",
                        quote(src_shown)
                    ))
                    .await;
                    return Ok(());
                }
            };
            if existing.is_some() {
                let _ = self.ctx.fs.unlink(dst).await;
            }
            if let Err(e) = self.ctx.fs.symlink(&target, dst).await {
                self.fail(format!(
                    "cannot create symbolic link {}: {e}",
                    quote(dst_shown)
                ))
                .await;
                return Ok(());
            }
        } else {
            let mut res = super::util::copy_file(self.ctx, src, dst, WriteMode::Truncate).await?;
            if let Err(CopyError::Write(_)) = &res
                && self.args.force
                && existing.is_some()
                && self.ctx.fs.unlink(dst).await.is_ok()
            {
                res = super::util::copy_file(self.ctx, src, dst, WriteMode::Truncate).await?;
            }
            match res {
                Ok(()) => {}
                Err(CopyError::Read(e)) => {
                    self.fail(format!("error reading {}: {e}", quote(src_shown)))
                        .await;
                    return Ok(());
                }
                Err(CopyError::Write(e)) => {
                    let what = if existing.is_some() {
                        "cannot open"
                    } else {
                        "cannot create regular file"
                    };
                    let msg = match e {
                        FsError::NoSpace
                        | FsError::QuotaExceeded
                        | FsError::Io
                        | FsError::TooLarge => {
                            format!("error writing {}: {e}", quote(dst_shown))
                        }
                        _ if existing.is_some() => {
                            format!("{what} {} for writing: {e}", quote(dst_shown))
                        }
                        _ => format!("{what} {}: {e}", quote(dst_shown)),
                    };
                    self.fail(msg).await;
                    return Ok(());
                }
            }
            if self.preserve() {
                let _ = self.ctx.fs.chmod(dst, meta.mode).await;
                let _ = self.ctx.fs.set_mtime(dst, meta.mtime).await;
            } else if existing.is_none() {
                let _ = self
                    .ctx
                    .fs
                    .chmod(dst, meta.mode & !self.ctx.fs.umask())
                    .await;
            }
        }
        if self.args.verbose {
            self.ctx
                .out(format!("{} -> {}\n", quote(src_shown), quote(dst_shown)))
                .await?;
        }
        Ok(())
    }

    /// Copies a directory tree, breadth-first with an explicit queue.
    async fn copy_tree(
        &mut self,
        src_shown: &str,
        src: &str,
        dst_shown: &str,
        dst: &str,
        meta: Metadata,
    ) -> Result<(), Interrupt> {
        let mut queue = vec![(
            src_shown.to_string(),
            src.to_string(),
            dst_shown.to_string(),
            dst.to_string(),
            meta,
            0usize,
        )];
        // Directories created by this copy, so a copy into a subdirectory of itself
        // never recurses into what it just made.
        let mut made: HashSet<String> = HashSet::new();
        while let Some((ss, s, ds, d, meta, depth)) = queue.pop() {
            self.pacer.tick(self.ctx).await?;
            match self.ctx.fs.lstat(&d).await {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    self.fail(format!(
                        "cannot overwrite non-directory {} with directory {}",
                        quote(&ds),
                        quote(&ss)
                    ))
                    .await;
                    continue;
                }
                Err(_) => {
                    if let Err(e) = self.ctx.fs.mkdir(&d).await {
                        self.fail(format!("cannot create directory {}: {e}", quote(&ds)))
                            .await;
                        continue;
                    }
                    made.insert(crate::fs::normalize(&d));
                    if self.args.verbose {
                        self.ctx
                            .out(format!("{} -> {}\n", quote(&ss), quote(&ds)))
                            .await?;
                    }
                }
            }
            let entries = match self.ctx.fs.read_dir(&s).await {
                Ok(e) => e,
                Err(e) => {
                    self.fail(format!("cannot access {}: {e}", quote(&ss)))
                        .await;
                    continue;
                }
            };
            for e in entries {
                let cs = crate::fs::join(&s, &e.name);
                let css = format!("{}/{}", ss.trim_end_matches('/'), e.name);
                let cd = crate::fs::join(&d, &e.name);
                let cds = format!("{}/{}", ds.trim_end_matches('/'), e.name);
                let child_meta = if e.meta.is_symlink() && !self.links_as_links() {
                    match self.ctx.fs.stat(&cs).await {
                        Ok(m) => m,
                        Err(err) => {
                            self.fail(format!("cannot stat {}: {err}", quote(&css)))
                                .await;
                            continue;
                        }
                    }
                } else {
                    e.meta.clone()
                };
                if child_meta.is_dir() {
                    if made.contains(&crate::fs::normalize(&cs)) {
                        continue;
                    }
                    if depth + 1 > MAX_DEPTH {
                        self.fail(format!("{}: directory nesting too deep", quote(&css)))
                            .await;
                        continue;
                    }
                    queue.push((css, cs, cds, cd, child_meta, depth + 1));
                } else {
                    self.copy_leaf(&css, &cs, &cds, &cd, &child_meta).await?;
                }
            }
            if self.preserve() {
                let _ = self.ctx.fs.chmod(&d, meta.mode).await;
                let _ = self.ctx.fs.set_mtime(&d, meta.mtime).await;
            } else if made.contains(&crate::fs::normalize(&d)) {
                // A new directory takes the source's mode under the umask, once its
                // content is in (a read-only source stays copyable), as GNU's does.
                let _ = self
                    .ctx
                    .fs
                    .chmod(&d, meta.mode & !self.ctx.fs.umask())
                    .await;
            }
        }
        Ok(())
    }
}

pub struct Cp;

#[async_trait]
impl Command for Cp {
    fn name(&self) -> &'static str {
        "cp"
    }
    fn summary(&self) -> &'static str {
        "copy files and directories"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let Some(jobs) = targets(
            ctx,
            "cp",
            &args.files,
            args.target_directory.as_deref(),
            args.no_target_directory,
        )
        .await
        else {
            return Ok(1);
        };
        let mut copier = Copier {
            ctx,
            args: &args,
            status: 0,
            pacer: Pacer::default(),
            asker: super::util::Asker::default(),
        };
        for (src, dst_shown, dst) in jobs {
            let s = ctx.path(&src);
            copier.copy_one(&src, &s, &dst_shown, &dst).await?;
        }
        Ok(copier.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FileSystem;
    use crate::testing::{Invocation, MemFs};
    use std::sync::Arc;

    fn setup() -> (Arc<MemFs>, Invocation) {
        let fs = MemFs::with_files(&[("/f", "data"), ("/d/x", "X"), ("/d/s/y", "Y"), ("/e/", "")]);
        fs.put_symlink("x", "/d/lnk");
        (
            fs.clone(),
            Invocation {
                fs,
                ..Invocation::default()
            },
        )
    }

    #[tokio::test]
    async fn copies_files() {
        let (fs, inv) = setup();
        assert_eq!(
            inv.run(&Cp, &["f", "g"]).await,
            (0, String::new(), String::new())
        );
        assert_eq!(fs.text("/g").unwrap(), "data");
        let (st, out, _) = inv.run(&Cp, &["-v", "f", "g", "e"]).await;
        assert_eq!((st, out.as_str()), (0, "'f' -> 'e/f'\n'g' -> 'e/g'\n"));
        assert_eq!(fs.text("/e/g").unwrap(), "data");
        fs.put("/n", b"keep");
        assert_eq!(inv.run(&Cp, &["-n", "f", "n"]).await.0, 0);
        assert_eq!(fs.text("/n").unwrap(), "keep");
        fs.chmod("/f", 0o755).await.unwrap();
        fs.set_mtime_secs("/f", 1000);
        inv.run(&Cp, &["-p", "f", "p"]).await;
        let m = fs.stat("/p").await.unwrap();
        assert_eq!(
            (m.mode, crate::cmd::util::epoch_secs(m.mtime)),
            (0o755, 1000)
        );
    }

    #[tokio::test]
    async fn copies_trees() {
        let (fs, inv) = setup();
        let (st, _, err) = inv.run(&Cp, &["-r", "d", "e"]).await;
        assert_eq!((st, err.as_str()), (0, ""));
        assert_eq!(fs.text("/e/d/s/y").unwrap(), "Y");
        assert!(fs.lstat("/e/d/lnk").await.unwrap().is_symlink());
        inv.run(&Cp, &["-R", "d", "new"]).await;
        assert_eq!(fs.text("/new/x").unwrap(), "X");
        let (st, _, err) = inv.run(&Cp, &["-r", "d", "d/sub"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "cp: cannot copy a directory, 'd', into itself, 'd/sub'\n"
            )
        );
    }

    #[tokio::test]
    async fn errors_like_gnu() {
        let (fs, inv) = setup();
        let (st, _, err) = inv.run(&Cp, &["d", "nofile", "e"]).await;
        assert_eq!(st, 1);
        assert_eq!(
            err,
            "cp: -r not specified; omitting directory 'd'\ncp: cannot stat 'nofile': No such file or directory\n"
        );
        let (st, _, err) = inv.run(&Cp, &["f"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "cp: missing destination file operand after 'f'\nTry 'cp --help' for more information.\n"
            )
        );
        assert_eq!(inv.run(&Cp, &[]).await.0, 1);
        let (st, _, err) = inv.run(&Cp, &["f", "d/x", "zz"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "cp: target 'zz': No such file or directory\n")
        );
        let (st, _, err) = inv.run(&Cp, &["f", "d/x", "f"]).await;
        assert_eq!((st, err.as_str()), (1, "cp: target 'f': Not a directory\n"));
        let (st, _, err) = inv.run(&Cp, &["f", "f"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "cp: 'f' and 'f' are the same file\n")
        );
        let (st, _, err) = inv.run(&Cp, &["-r", "d", "f"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "cp: cannot overwrite non-directory 'f' with directory 'd'\n"
            )
        );
        fs.fail_close_on("/full");
        let (st, _, err) = inv.run(&Cp, &["f", "full"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "cp: error writing 'full': No space left on device\n")
        );
        assert_eq!(inv.run(&Cp, &["--bogus", "a", "b"]).await.0, 1);
    }
}

//! `ln`: make links. Symbolic links are real; the fork has no hard links, so a "hard
//! link" is a copy of the file's content made at that moment (the --help says so).

use async_trait::async_trait;
use clap::Parser;

use super::util::{CopyError, quote, targets};
use crate::fs::{FsError, WriteMode};
use crate::{CmdResult, Command, Context, parse_args};

/// Create a link to TARGET with the name LINK_NAME, or links in DIRECTORY.
///
/// Symbolic links (-s) are real links. This filesystem has no hard links: without -s, ln
/// makes a COPY of TARGET's content (later changes to one are not seen in the other).
#[derive(Parser, Debug)]
#[command(name = "ln")]
struct Args {
    /// Make symbolic links instead of hard links.
    #[arg(short = 's', long)]
    symbolic: bool,
    /// Remove existing destination files.
    #[arg(short = 'f', long)]
    force: bool,
    /// Treat LINK_NAME as a normal file if it is a symbolic link to a directory.
    #[arg(short = 'n', long = "no-dereference")]
    no_dereference: bool,
    /// Treat LINK_NAME as a normal file always.
    #[arg(short = 'T', long = "no-target-directory")]
    no_target_directory: bool,
    /// Create the links in DIRECTORY.
    #[arg(short = 't', long = "target-directory", value_name = "DIRECTORY")]
    target_directory: Option<String>,
    /// Print name of each linked file.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// With -s, create links relative to link location.
    #[arg(short = 'r', long)]
    relative: bool,
    /// TARGET... [LINK_NAME]
    #[arg(value_name = "TARGET")]
    files: Vec<String>,
}

pub struct Ln;

/// `-r`: `target` as a path from the directory `link` is in, both resolved as far as
/// they exist (GNU's `realpath -m`).
async fn relative_target(ctx: &Context, target: &str, link: &str) -> String {
    let resolve = |p: String| async move {
        match ctx.fs.canonicalize(&p).await {
            Ok(c) => c,
            Err(_) => crate::fs::normalize(&p),
        }
    };
    let to = resolve(ctx.path(target)).await;
    let dir = match link.rsplit_once('/') {
        Some(("", _)) => "/".to_string(),
        Some((d, _)) => d.to_string(),
        None => ctx.cwd.clone(),
    };
    let from = resolve(dir).await;
    super::readlink::relative(&to, &from)
}

#[async_trait]
impl Command for Ln {
    fn name(&self) -> &'static str {
        "ln"
    }
    fn summary(&self) -> &'static str {
        "make links between files (hard links are copies)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mut operands = args.files.clone();
        if operands.len() == 1 && args.target_directory.is_none() {
            // `ln -s /a/b` links to ./b.
            operands.push(".".into());
        }
        let dest_is_link = match operands.last() {
            Some(d) if args.no_dereference => ctx
                .fs
                .lstat(&ctx.path(d))
                .await
                .is_ok_and(|m| m.is_symlink()),
            _ => false,
        };
        let no_target = args.no_target_directory || dest_is_link;
        let Some(jobs) = targets(
            ctx,
            "ln",
            &operands,
            args.target_directory.as_deref(),
            no_target,
        )
        .await
        else {
            return Ok(1);
        };
        let mut status = 0;
        for (target, shown, link) in jobs {
            let target = if args.relative && args.symbolic {
                relative_target(ctx, &target, &link).await
            } else {
                target
            };
            let kind = if args.symbolic {
                "symbolic link"
            } else {
                "hard link"
            };
            if !args.symbolic {
                match ctx.fs.stat(&ctx.path(&target)).await {
                    Ok(m) if m.is_dir() => {
                        ctx.warn(
                            "ln",
                            format!("{target}: hard link not allowed for directory"),
                        )
                        .await;
                        status = 1;
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        ctx.warn("ln", format!("failed to access {}: {e}", quote(&target)))
                            .await;
                        status = 1;
                        continue;
                    }
                }
            }
            if let Ok(existing) = ctx.fs.lstat(&link).await {
                if !args.force {
                    ctx.warn(
                        "ln",
                        format!(
                            "failed to create {kind} {}: {}",
                            quote(&shown),
                            FsError::AlreadyExists
                        ),
                    )
                    .await;
                    status = 1;
                    continue;
                }
                let removed = if existing.is_dir() {
                    Err(FsError::IsADirectory)
                } else {
                    ctx.fs.unlink(&link).await
                };
                if let Err(e) = removed {
                    ctx.warn("ln", format!("cannot remove {}: {e}", quote(&shown)))
                        .await;
                    status = 1;
                    continue;
                }
            }
            let res = if args.symbolic {
                ctx.fs.symlink(&target, &link).await
            } else {
                match super::util::copy_file(ctx, &ctx.path(&target), &link, WriteMode::CreateNew)
                    .await?
                {
                    Ok(()) => Ok(()),
                    Err(CopyError::Read(e) | CopyError::Write(e)) => Err(e),
                }
            };
            match res {
                Ok(()) if args.verbose => {
                    let arrow = if args.symbolic { "->" } else { "=>" };
                    ctx.out(format!("{} {arrow} {}\n", quote(&shown), quote(&target)))
                        .await?;
                }
                Ok(()) => {}
                Err(e) => {
                    ctx.warn(
                        "ln",
                        format!("failed to create {kind} {}: {e}", quote(&shown)),
                    )
                    .await;
                    status = 1;
                }
            }
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FileSystem;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn symlinks_and_copies() {
        let fs = MemFs::with_files(&[("/a", "A"), ("/d/", "")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let (st, out, _) = inv.run(&Ln, &["-sv", "a", "b"]).await;
        assert_eq!((st, out.as_str()), (0, "'b' -> 'a'\n"));
        assert_eq!(fs.readlink("/b").await.unwrap(), "a");
        assert_eq!(fs.text("/b").unwrap(), "A");
        inv.run(&Ln, &["-s", "/a", "d"]).await;
        assert_eq!(fs.readlink("/d/a").await.unwrap(), "/a");
        let (st, out, _) = inv.run(&Ln, &["-v", "a", "h"]).await;
        assert_eq!((st, out.as_str()), (0, "'h' => 'a'\n"));
        assert_eq!(fs.text("/h").unwrap(), "A");
        assert_eq!(inv.run(&Ln, &["-sf", "x", "b"]).await.0, 0);
        assert_eq!(fs.readlink("/b").await.unwrap(), "x");
    }

    #[tokio::test]
    async fn errors_like_gnu() {
        let fs = MemFs::with_files(&[("/a", "A"), ("/b", ""), ("/d/", "")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let (st, _, err) = inv.run(&Ln, &["-s", "a", "b"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "ln: failed to create symbolic link 'b': File exists\n")
        );
        let (st, _, err) = inv.run(&Ln, &["d", "e"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "ln: d: hard link not allowed for directory\n")
        );
        assert_eq!(inv.run(&Ln, &[]).await.0, 1);
    }
}

//! `mv`: rename files and directories through the filesystem port's `rename`.

use async_trait::async_trait;
use clap::Parser;

use super::util::{quote, targets};
use crate::fs::FsError;
use crate::{CmdResult, Command, Context, parse_args};

/// Rename SOURCE to DEST, or move SOURCE(s) to DIRECTORY.
#[derive(Parser, Debug)]
#[command(name = "mv")]
struct Args {
    /// Do not prompt before overwriting.
    #[arg(short = 'f', long, overrides_with_all = ["interactive", "no_clobber"])]
    force: bool,
    /// Do not overwrite an existing file.
    #[arg(short = 'n', long = "no-clobber", overrides_with_all = ["interactive", "force"])]
    no_clobber: bool,
    /// Prompt before overwrite (an answer is read from standard input).
    #[arg(short = 'i', long, overrides_with_all = ["force", "no_clobber"])]
    interactive: bool,
    /// Move all SOURCE arguments into DIRECTORY.
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

/// The directory a path's last component would live in, found without touching the filesystem.
fn lexical_parent(path: &str) -> String {
    let norm = crate::fs::normalize(path);
    match norm.rfind('/') {
        Some(0) | None => "/".to_string(),
        Some(i) => norm[..i].to_string(),
    }
}

pub struct Mv;

#[async_trait]
impl Command for Mv {
    fn name(&self) -> &'static str {
        "mv"
    }
    fn summary(&self) -> &'static str {
        "move (rename) files"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let Some(jobs) = targets(
            ctx,
            "mv",
            &args.files,
            args.target_directory.as_deref(),
            args.no_target_directory,
        )
        .await
        else {
            return Ok(1);
        };
        let mut status = 0;
        let mut asker = super::util::Asker::default();
        for (src, dst_shown, dst) in jobs {
            let s = ctx.path(&src);
            let src_meta = match ctx.fs.lstat(&s).await {
                Ok(m) => m,
                Err(e) => {
                    ctx.warn("mv", format!("cannot stat {}: {e}", quote(&src)))
                        .await;
                    status = 1;
                    continue;
                }
            };
            let dst_meta = ctx.fs.lstat(&dst).await.ok();
            if dst_meta.is_some() {
                if args.no_clobber {
                    continue;
                }
                if args.interactive
                    && !asker
                        .ask(ctx, &format!("mv: overwrite {}? ", quote(&dst_shown)))
                        .await?
                {
                    continue;
                }
                let same = match (
                    ctx.fs.canonicalize(&s).await,
                    ctx.fs.canonicalize(&dst).await,
                ) {
                    (Ok(a), Ok(b)) => a == b && !src_meta.is_symlink(),
                    _ => false,
                };
                if same {
                    ctx.warn(
                        "mv",
                        format!(
                            "{} and {} are the same file",
                            quote(&src),
                            quote(&dst_shown)
                        ),
                    )
                    .await;
                    status = 1;
                    continue;
                }
            }
            if src_meta.is_dir()
                && let (Ok(a), Ok(parent)) = (
                    ctx.fs.canonicalize(&s).await,
                    ctx.fs.canonicalize(&lexical_parent(&dst)).await,
                )
                && (parent == a || parent.starts_with(&format!("{}/", a.trim_end_matches('/'))))
            {
                ctx.warn(
                    "mv",
                    format!(
                        "cannot move {} to a subdirectory of itself, {}",
                        quote(&src),
                        quote(&dst_shown)
                    ),
                )
                .await;
                status = 1;
                continue;
            }
            match ctx.fs.rename(&s, &dst).await {
                Ok(()) => {
                    if args.verbose {
                        ctx.out(format!(
                            "renamed {} -> {}\n",
                            quote(&src),
                            quote(&dst_shown)
                        ))
                        .await?;
                    }
                }
                Err(e) => {
                    let msg = match (e, &dst_meta) {
                        (FsError::IsADirectory, Some(_)) => {
                            format!(
                                "cannot overwrite directory {} with non-directory",
                                quote(&dst_shown)
                            )
                        }
                        (FsError::NotADirectory, Some(d)) if !d.is_dir() => format!(
                            "cannot overwrite non-directory {} with directory {}",
                            quote(&dst_shown),
                            quote(&src)
                        ),
                        (e, _) => {
                            format!("cannot move {} to {}: {e}", quote(&src), quote(&dst_shown))
                        }
                    };
                    ctx.warn("mv", msg).await;
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
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn renames_and_moves_into_dirs() {
        let fs = MemFs::with_files(&[("/f", "1"), ("/g", "2"), ("/d/x", "X"), ("/e/", "")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        assert_eq!(
            inv.run(&Mv, &["f", "h"]).await,
            (0, String::new(), String::new())
        );
        assert_eq!(fs.text("/h").unwrap(), "1");
        assert!(!fs.exists("/f"));
        let (st, out, _) = inv.run(&Mv, &["-v", "h", "d", "e"]).await;
        assert_eq!(
            (st, out.as_str()),
            (0, "renamed 'h' -> 'e/h'\nrenamed 'd' -> 'e/d'\n")
        );
        assert_eq!(fs.text("/e/d/x").unwrap(), "X");
        fs.put("/k", b"keep");
        assert_eq!(inv.run(&Mv, &["-n", "g", "k"]).await.0, 0);
        assert_eq!(fs.text("/k").unwrap(), "keep");
        assert_eq!(inv.run(&Mv, &["-f", "g", "k"]).await.0, 0);
        assert_eq!(fs.text("/k").unwrap(), "2");
    }

    #[tokio::test]
    async fn errors_like_gnu() {
        let fs = MemFs::with_files(&[("/f", "1"), ("/d/x", "X")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let (st, _, err) = inv.run(&Mv, &["nof", "x"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "mv: cannot stat 'nof': No such file or directory\n")
        );
        let (st, _, err) = inv.run(&Mv, &["d", "d/y"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "mv: cannot move 'd' to a subdirectory of itself, 'd/y'\n"
            )
        );
        let (st, _, err) = inv.run(&Mv, &["f", "f"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "mv: 'f' and 'f' are the same file\n")
        );
        let (st, _, err) = inv.run(&Mv, &["f", "nodir/x"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "mv: cannot move 'f' to 'nodir/x': No such file or directory\n"
            )
        );
        let (st, _, err) = inv.run(&Mv, &["a"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "mv: missing destination file operand after 'a'\nTry 'mv --help' for more information.\n"
            )
        );
        assert_eq!(inv.run(&Mv, &["-Z", "a", "b"]).await.0, 1);
    }
}

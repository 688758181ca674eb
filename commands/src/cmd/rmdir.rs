//! `rmdir`: remove empty directories.

use async_trait::async_trait;
use clap::Parser;

use super::util::{missing_operand, quote};
use crate::fs::FsError;
use crate::{CmdResult, Command, Context, parse_args};

/// Remove the DIRECTORY(ies), if they are empty.
#[derive(Parser, Debug)]
#[command(name = "rmdir")]
struct Args {
    /// Remove DIRECTORY and its ancestors; e.g., 'rmdir -p a/b' is similar to 'rmdir a/b a'.
    #[arg(short = 'p', long)]
    parents: bool,
    /// Ignore each failure to remove a non-empty directory.
    #[arg(long = "ignore-fail-on-non-empty")]
    ignore_non_empty: bool,
    /// Output a diagnostic for every directory processed.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Directories to remove.
    dirs: Vec<String>,
}

pub struct Rmdir;

#[async_trait]
impl Command for Rmdir {
    fn name(&self) -> &'static str {
        "rmdir"
    }
    fn summary(&self) -> &'static str {
        "remove empty directories"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.dirs.is_empty() {
            return Ok(missing_operand(ctx, "rmdir").await);
        }
        let mut status = 0;
        for d in &args.dirs {
            let mut target = d.trim_end_matches('/').to_string();
            if target.is_empty() {
                target = "/".into();
            }
            loop {
                if args.verbose {
                    ctx.out(format!("rmdir: removing directory, {}\n", quote(&target)))
                        .await?;
                }
                match ctx.fs.rmdir(&ctx.path(&target)).await {
                    Ok(()) => {}
                    Err(FsError::NotEmpty) if args.ignore_non_empty => break,
                    Err(e) => {
                        ctx.warn("rmdir", format!("failed to remove {}: {e}", quote(&target)))
                            .await;
                        status = 1;
                        break;
                    }
                }
                if !args.parents {
                    break;
                }
                match target.rfind('/') {
                    Some(0) | None => break,
                    Some(i) => target = target[..i].trim_end_matches('/').to_string(),
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
    async fn removes_and_parents() {
        let fs = MemFs::with_files(&[("/a/b/c/", ""), ("/e/", ""), ("/f", "")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        assert_eq!(
            inv.run(&Rmdir, &["e"]).await,
            (0, String::new(), String::new())
        );
        let (st, out, _) = inv.run(&Rmdir, &["-pv", "a/b/c/"]).await;
        assert_eq!(st, 0);
        assert_eq!(
            out,
            "rmdir: removing directory, 'a/b/c'\nrmdir: removing directory, 'a/b'\nrmdir: removing directory, 'a'\n"
        );
        assert!(!fs.exists("/a"));
    }

    #[tokio::test]
    async fn errors() {
        let fs = MemFs::with_files(&[("/d/x", ""), ("/f", "")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let (st, _, err) = inv.run(&Rmdir, &["f", "nofile", "d"]).await;
        assert_eq!(st, 1);
        assert_eq!(
            err,
            "rmdir: failed to remove 'f': Not a directory\n\
             rmdir: failed to remove 'nofile': No such file or directory\n\
             rmdir: failed to remove 'd': Directory not empty\n"
        );
        assert_eq!(
            inv.run(&Rmdir, &["--ignore-fail-on-non-empty", "d"])
                .await
                .0,
            0
        );
        assert_eq!(inv.run(&Rmdir, &[]).await.0, 1);
    }
}

//! `mkdir`: make directories.

use async_trait::async_trait;
use clap::Parser;

use super::chmod::Mode;
use super::util::{missing_operand, quote};
use crate::fs::FsError;
use crate::{CmdResult, Command, Context, parse_args};

/// Create the DIRECTORY(ies), if they do not already exist.
#[derive(Parser, Debug)]
#[command(name = "mkdir")]
struct Args {
    /// No error if existing, make parent directories as needed.
    #[arg(short = 'p', long)]
    parents: bool,
    /// Print a message for each created directory.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Set file mode (as in chmod: 755, u=rwx,g=rx), not a=rwx - umask; parents made
    /// by -p get the default.
    #[arg(short = 'm', long)]
    mode: Option<String>,
    /// Directories to create.
    dirs: Vec<String>,
}

pub struct Mkdir;

/// Makes one directory; `mode` set when given (the umask gives the rest theirs).
async fn make(
    ctx: &Context,
    args: &Args,
    mode: Option<u32>,
    shown: &str,
    path: &str,
) -> Result<(), FsError> {
    ctx.fs.mkdir(path).await?;
    if let Some(m) = mode {
        ctx.fs.chmod(path, m).await?;
    }
    if args.verbose {
        let _ = ctx
            .out(format!("mkdir: created directory {}\n", quote(shown)))
            .await;
    }
    Ok(())
}

#[async_trait]
impl Command for Mkdir {
    fn name(&self) -> &'static str {
        "mkdir"
    }
    fn summary(&self) -> &'static str {
        "make directories"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.dirs.is_empty() {
            return Ok(missing_operand(ctx, "mkdir").await);
        }
        let umask = ctx.fs.umask();
        // GNU applies -m to a=rwx, with the umask only for clauses without `ugoa`.
        let mode = match &args.mode {
            None => None,
            Some(m) => match Mode::parse(m) {
                Some(mode) => Some(mode.apply(0o777, true, umask)),
                None => {
                    ctx.warn("mkdir", format!("invalid mode {}", quote(m)))
                        .await;
                    return Ok(1);
                }
            },
        };
        // Parents -p makes are writable and searchable by their owner whatever the umask.
        let parent_mode = (umask & 0o300 != 0).then_some((0o777 & !umask) | 0o300);
        let mut status = 0;
        for d in &args.dirs {
            // The component an error is about, when not the whole operand.
            let mut failed: Option<String> = None;
            let result = if args.parents {
                // Create each missing component in turn; existing directories are fine.
                let mut shown = String::new();
                let mut res = Ok(());
                if d.starts_with('/') {
                    shown.push('/');
                }
                let comps: Vec<&str> = d.split('/').filter(|c| !c.is_empty()).collect();
                for (i, comp) in comps.iter().enumerate() {
                    if !shown.is_empty() && !shown.ends_with('/') {
                        shown.push('/');
                    }
                    shown.push_str(comp);
                    let path = ctx.path(&shown);
                    match ctx.fs.stat(&path).await {
                        Ok(m) if m.is_dir() => continue,
                        // A file where a parent should be: GNU names that component.
                        Ok(_) if i + 1 < comps.len() => {
                            res = Err(FsError::NotADirectory);
                            failed = Some(shown.clone());
                            break;
                        }
                        Ok(_) => {
                            res = Err(FsError::AlreadyExists);
                            break;
                        }
                        Err(FsError::NotFound) => {}
                        Err(e) => {
                            res = Err(e);
                            break;
                        }
                    }
                    let mode = if i + 1 < comps.len() {
                        parent_mode
                    } else {
                        mode
                    };
                    if let Err(e) = make(ctx, &args, mode, &shown, &path).await
                        && e != FsError::AlreadyExists
                    {
                        res = Err(e);
                        break;
                    }
                }
                res
            } else {
                make(ctx, &args, mode, d, &ctx.path(d)).await
            };
            if let Err(e) = result {
                ctx.warn(
                    "mkdir",
                    format!(
                        "cannot create directory {}: {e}",
                        quote(failed.as_deref().unwrap_or(d))
                    ),
                )
                .await;
                status = 1;
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
    async fn creates_and_reports() {
        let fs = MemFs::with_files(&[("/f", ""), ("/d/", "")]);
        let inv = Invocation {
            fs: fs.clone(),
            cwd: "/d".into(),
            ..Invocation::default()
        };
        assert_eq!(
            inv.run(&Mkdir, &["a"]).await,
            (0, String::new(), String::new())
        );
        assert!(fs.stat("/d/a").await.unwrap().is_dir());
        let (st, out, err) = inv.run(&Mkdir, &["-pv", "x/y", "a"]).await;
        assert_eq!((st, err.as_str()), (0, ""));
        assert_eq!(
            out,
            "mkdir: created directory 'x'\nmkdir: created directory 'x/y'\n"
        );
        assert!(fs.stat("/d/x/y").await.unwrap().is_dir());
        inv.run(&Mkdir, &["-m", "700", "m"]).await;
        assert_eq!(fs.stat("/d/m").await.unwrap().mode, 0o700);
    }

    #[tokio::test]
    async fn errors() {
        let fs = MemFs::with_files(&[("/f", ""), ("/d/", "")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let (st, _, err) = inv.run(&Mkdir, &["d", "a/b", "ok"]).await;
        assert_eq!(st, 1);
        assert_eq!(
            err,
            "mkdir: cannot create directory 'd': File exists\n\
             mkdir: cannot create directory 'a/b': No such file or directory\n"
        );
        assert!(fs.exists("/ok"));
        let (st, _, err) = inv.run(&Mkdir, &["-p", "f/x"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "mkdir: cannot create directory 'f': Not a directory\n")
        );
        let (st, _, err) = inv.run(&Mkdir, &[]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "mkdir: missing operand\nTry 'mkdir --help' for more information.\n"
            )
        );
        assert_eq!(inv.run(&Mkdir, &["-m", "99", "q"]).await.0, 1);
    }
}

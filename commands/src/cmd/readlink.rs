//! `readlink` and `realpath`: print symlink targets and resolved paths.

use async_trait::async_trait;
use clap::Parser;

use super::util::missing_operand;
use crate::fs::FsError;
use crate::{CmdResult, Command, Context, parse_args};

/// Print the value of a symbolic link or canonical file name.
#[derive(Parser, Debug)]
#[command(name = "readlink")]
struct ReadlinkArgs {
    /// Canonicalize by following every symlink; all but the last component must exist.
    #[arg(short = 'f', long)]
    canonicalize: bool,
    /// Canonicalize by following every symlink; all components must exist.
    #[arg(short = 'e', long = "canonicalize-existing")]
    existing: bool,
    /// Canonicalize by following every symlink; components need not exist.
    #[arg(short = 'm', long = "canonicalize-missing")]
    missing: bool,
    /// Do not output the trailing delimiter.
    #[arg(short = 'n', long = "no-newline")]
    no_newline: bool,
    /// Report error messages.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Suppress most error messages (the default).
    #[arg(short = 'q', long, short_alias = 's')]
    quiet: bool,
    /// End each output line with NUL, not newline.
    #[arg(short = 'z', long)]
    zero: bool,
    /// Files to resolve.
    files: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Canon {
    /// Every component must exist.
    Existing,
    /// All but the last must exist.
    Parent,
    /// Nothing needs to exist.
    Missing,
}

/// Resolves `path` the way `readlink -f/-e/-m` and `realpath` do.
async fn canonical(ctx: &Context, path: &str, mode: Canon) -> Result<String, FsError> {
    match ctx.fs.canonicalize(path).await {
        Ok(p) => return Ok(p),
        Err(e) if mode == Canon::Existing => return Err(e),
        Err(FsError::NotFound) => {}
        Err(e) => return Err(e),
    }
    let norm = crate::fs::normalize(path);
    let (parent, name) = match norm.rfind('/') {
        Some(0) => ("/", &norm[1..]),
        Some(i) => (&norm[..i], &norm[i + 1..]),
        None => ("/", norm.as_str()),
    };
    let base = match mode {
        Canon::Missing if parent != "/" => Box::pin(canonical(ctx, parent, Canon::Missing)).await?,
        _ => ctx.fs.canonicalize(parent).await?,
    };
    Ok(crate::fs::join(&base, name))
}

pub struct Readlink;

#[async_trait]
impl Command for Readlink {
    fn name(&self) -> &'static str {
        "readlink"
    }
    fn summary(&self) -> &'static str {
        "print resolved symbolic links or canonical file names"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: ReadlinkArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.files.is_empty() {
            return Ok(missing_operand(ctx, "readlink").await);
        }
        let mode = if args.existing {
            Some(Canon::Existing)
        } else if args.missing {
            Some(Canon::Missing)
        } else if args.canonicalize {
            Some(Canon::Parent)
        } else {
            None
        };
        let end = if args.zero {
            "\0"
        } else if args.no_newline && args.files.len() == 1 {
            ""
        } else {
            "\n"
        };
        let mut status = 0;
        for f in &args.files {
            let path = ctx.path(f);
            let res = match mode {
                Some(m) => canonical(ctx, &path, m).await,
                None => ctx.fs.readlink(&path).await,
            };
            match res {
                Ok(p) => ctx.out(format!("{p}{end}")).await?,
                Err(e) => {
                    if args.verbose {
                        ctx.warn("readlink", format!("{f}: {e}")).await;
                    }
                    status = 1;
                }
            }
        }
        Ok(status)
    }
}

/// Print the resolved absolute file name; all but the last component must exist.
#[derive(Parser, Debug)]
#[command(name = "realpath")]
struct RealpathArgs {
    /// All components of the path must exist.
    #[arg(short = 'e', long = "canonicalize-existing")]
    existing: bool,
    /// No path components need exist or be a directory.
    #[arg(short = 'm', long = "canonicalize-missing")]
    missing: bool,
    /// Suppress most error messages.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Don't expand symlinks: resolve '.' and '..' by the names alone.
    #[arg(short = 's', long = "strip", visible_alias = "no-symlinks")]
    strip: bool,
    /// End each output line with NUL, not newline.
    #[arg(short = 'z', long)]
    zero: bool,
    /// Files to resolve.
    files: Vec<String>,
}

pub struct Realpath;

#[async_trait]
impl Command for Realpath {
    fn name(&self) -> &'static str {
        "realpath"
    }
    fn summary(&self) -> &'static str {
        "print the resolved path"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: RealpathArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.files.is_empty() {
            return Ok(missing_operand(ctx, "realpath").await);
        }
        let mode = if args.existing {
            Canon::Existing
        } else if args.missing {
            Canon::Missing
        } else {
            Canon::Parent
        };
        let end = if args.zero { "\0" } else { "\n" };
        let mut status = 0;
        for f in &args.files {
            let resolved = if args.strip {
                let p = crate::fs::normalize(&ctx.path(f));
                match mode {
                    Canon::Missing => Ok(p),
                    Canon::Existing => ctx.fs.stat(&p).await.map(|_| p),
                    _ => {
                        let parent = match p.rfind('/') {
                            Some(0) | None => "/".to_string(),
                            Some(i) => p[..i].to_string(),
                        };
                        match ctx.fs.stat(&parent).await {
                            Ok(m) if m.is_dir() => Ok(p),
                            Ok(_) => Err(crate::fs::FsError::NotADirectory),
                            Err(e) => Err(e),
                        }
                    }
                }
            } else {
                canonical(ctx, &ctx.path(f), mode).await
            };
            match resolved {
                Ok(p) => ctx.out(format!("{p}{end}")).await?,
                Err(e) => {
                    if !args.quiet {
                        ctx.warn("realpath", format!("{f}: {e}")).await;
                    }
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

    fn inv() -> Invocation {
        let fs = MemFs::with_files(&[("/d/f", "")]);
        fs.put_symlink("d/f", "/ln");
        fs.put_symlink("/d", "/dl");
        Invocation {
            fs,
            cwd: "/d".into(),
            ..Invocation::default()
        }
    }

    #[tokio::test]
    async fn readlink_modes() {
        assert_eq!(
            inv().run(&Readlink, &["/ln"]).await,
            (0, "d/f\n".into(), String::new())
        );
        assert_eq!(
            inv().run(&Readlink, &["f"]).await,
            (1, String::new(), String::new())
        );
        assert_eq!(inv().run(&Readlink, &["-f", "/dl/../ln"]).await.1, "/d/f\n");
        assert_eq!(inv().run(&Readlink, &["-f", "/dl/new"]).await.1, "/d/new\n");
        assert_eq!(inv().run(&Readlink, &["-e", "/dl/new"]).await.0, 1);
        assert_eq!(inv().run(&Readlink, &["-m", "/x/y/z"]).await.1, "/x/y/z\n");
        assert_eq!(inv().run(&Readlink, &["-n", "/ln"]).await.1, "d/f");
        assert_eq!(inv().run(&Readlink, &[]).await.0, 1);
    }

    #[tokio::test]
    async fn realpath_resolves() {
        assert_eq!(
            inv().run(&Realpath, &["f", "../ln", "."]).await.1,
            "/d/f\n/d/f\n/d\n"
        );
        let (st, _, err) = inv().run(&Realpath, &["/no/x"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "realpath: /no/x: No such file or directory\n")
        );
    }
}

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
    /// Print the resolved path relative to DIR.
    #[arg(long = "relative-to", value_name = "DIR")]
    relative_to: Option<String>,
    /// Print absolute paths unless paths below DIR.
    #[arg(long = "relative-base", value_name = "DIR")]
    relative_base: Option<String>,
    /// Files to resolve.
    files: Vec<String>,
}

/// Whether the resolved `path` is `base` or below it.
fn is_below(path: &str, base: &str) -> bool {
    base == "/"
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// `path` relative to the directory `from` (both resolved and absolute): `..` for each of
/// `from`'s components past their common prefix, then the rest of `path`; `.` for the
/// directory itself.
pub(crate) fn relative(path: &str, from: &str) -> String {
    let p: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let f: Vec<&str> = from.split('/').filter(|c| !c.is_empty()).collect();
    let common = p.iter().zip(&f).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; f.len() - common];
    parts.extend_from_slice(&p[common..]);
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

pub struct Realpath;

impl Realpath {
    /// Resolves one operand as the options ask: `Err` is reported as `NAME: reason`.
    async fn resolve(
        &self,
        ctx: &Context,
        args: &RealpathArgs,
        f: &str,
        mode: Canon,
    ) -> Result<String, FsError> {
        if !args.strip {
            return canonical(ctx, &ctx.path(f), mode).await;
        }
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
    }
}

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
        // The directories of --relative-to and --relative-base, resolved as the operands.
        let mut dirs = [None, None];
        for (slot, dir) in dirs
            .iter_mut()
            .zip([&args.relative_to, &args.relative_base])
        {
            let Some(d) = dir else { continue };
            match self.resolve(ctx, &args, d, mode).await {
                Ok(p) => *slot = Some(p),
                Err(e) => {
                    ctx.warn("realpath", format!("{d}: {e}")).await;
                    return Ok(1);
                }
            }
        }
        let [to, base] = dirs;
        // --relative-base alone is also where paths are relative to.
        let to = to.or_else(|| base.clone());
        for f in &args.files {
            let resolved = self.resolve(ctx, &args, f, mode).await.map(|p| match &to {
                Some(dir)
                    if base
                        .as_deref()
                        .is_none_or(|b| is_below(&p, b) && is_below(dir, b)) =>
                {
                    relative(&p, dir)
                }
                _ => p,
            });
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

    #[test]
    fn relative_paths() {
        assert_eq!(relative("/a/b/f", "/c"), "../a/b/f");
        assert_eq!(relative("/a/b", "/a/b"), ".");
        assert_eq!(relative("/a", "/a/b"), "..");
        assert_eq!(relative("/x", "/"), "x");
        assert!(is_below("/a/b", "/a") && !is_below("/ab", "/a") && is_below("/a", "/"));
    }
}

//! `basename` and `dirname`: strip directory and suffix from file names.

use async_trait::async_trait;
use clap::Parser;

use super::util::{base_name, missing_operand, quote};
use crate::{CmdResult, Command, Context, parse_args};

/// Print NAME with any leading directory components removed.
/// If specified, also remove a trailing SUFFIX.
#[derive(Parser, Debug)]
#[command(name = "basename")]
struct BasenameArgs {
    /// Support multiple arguments and treat each as a NAME.
    #[arg(short = 'a', long)]
    multiple: bool,
    /// Remove a trailing SUFFIX; implies -a.
    #[arg(short = 's', long, value_name = "SUFFIX")]
    suffix: Option<String>,
    /// End each output line with NUL, not newline.
    #[arg(short = 'z', long)]
    zero: bool,
    /// NAME [SUFFIX], or NAME... with -a/-s.
    #[arg(value_name = "NAME")]
    names: Vec<String>,
}

fn strip(name: &str, suffix: Option<&str>) -> String {
    let base = base_name(name);
    match suffix {
        Some(s) if !s.is_empty() && base.len() > s.len() && base.ends_with(s) => {
            base[..base.len() - s.len()].to_string()
        }
        _ => base.to_string(),
    }
}

pub struct Basename;

#[async_trait]
impl Command for Basename {
    fn name(&self) -> &'static str {
        "basename"
    }
    fn summary(&self) -> &'static str {
        "strip directory and suffix from filenames"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: BasenameArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.names.is_empty() {
            return Ok(missing_operand(ctx, "basename").await);
        }
        let end = if args.zero { "\0" } else { "\n" };
        let mut out = String::new();
        if args.multiple || args.suffix.is_some() {
            for n in &args.names {
                out.push_str(&strip(n, args.suffix.as_deref()));
                out.push_str(end);
            }
        } else {
            if args.names.len() > 2 {
                ctx.err(format!(
                    "basename: extra operand {}\nTry 'basename --help' for more information.\n",
                    quote(&args.names[2])
                ))
                .await;
                return Ok(1);
            }
            out.push_str(&strip(
                &args.names[0],
                args.names.get(1).map(String::as_str),
            ));
            out.push_str(end);
        }
        ctx.out_text(out).await?;
        Ok(0)
    }
}

/// Output each NAME with its last non-slash component and trailing slashes removed;
/// if NAME contains no /'s, output '.' (meaning the current directory).
#[derive(Parser, Debug)]
#[command(name = "dirname")]
struct DirnameArgs {
    /// End each output line with NUL, not newline.
    #[arg(short = 'z', long)]
    zero: bool,
    /// Names to strip.
    #[arg(value_name = "NAME")]
    names: Vec<String>,
}

pub(crate) fn dir_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.starts_with('/') { "/" } else { "." };
    }
    match trimmed.rfind('/') {
        None => ".",
        Some(i) => {
            let d = trimmed[..i].trim_end_matches('/');
            if d.is_empty() { "/" } else { d }
        }
    }
}

pub struct Dirname;

#[async_trait]
impl Command for Dirname {
    fn name(&self) -> &'static str {
        "dirname"
    }
    fn summary(&self) -> &'static str {
        "strip last component from file name"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: DirnameArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.names.is_empty() {
            return Ok(missing_operand(ctx, "dirname").await);
        }
        let end = if args.zero { "\0" } else { "\n" };
        let out: String = args
            .names
            .iter()
            .map(|n| format!("{}{end}", dir_name(n)))
            .collect();
        ctx.out_text(out).await?;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn basename_like_gnu() {
        let inv = Invocation::default();
        assert_eq!(inv.run(&Basename, &["/a/b.c", ".c"]).await.1, "b\n");
        assert_eq!(inv.run(&Basename, &[".c", ".c"]).await.1, ".c\n");
        assert_eq!(inv.run(&Basename, &["/a/b/"]).await.1, "b\n");
        assert_eq!(inv.run(&Basename, &["/"]).await.1, "/\n");
        assert_eq!(
            inv.run(&Basename, &["-a", "/x/y.c", "z.c"]).await.1,
            "y.c\nz.c\n"
        );
        assert_eq!(
            inv.run(&Basename, &["-s", ".c", "/x/y.c", "z.c"]).await.1,
            "y\nz\n"
        );
        let (st, _, err) = inv.run(&Basename, &["a", "b", "c"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "basename: extra operand 'c'\nTry 'basename --help' for more information.\n"
            )
        );
        assert_eq!(inv.run(&Basename, &[]).await.0, 1);
    }

    #[tokio::test]
    async fn dirname_like_gnu() {
        let (st, out, _) = Invocation::default()
            .run(&Dirname, &["a", "/a/b/", "//", "/", "a/b//c", "/x"])
            .await;
        assert_eq!((st, out.as_str()), (0, ".\n/a\n/\n/\na/b\n/\n"));
        assert_eq!(Invocation::default().run(&Dirname, &[]).await.0, 1);
    }
}

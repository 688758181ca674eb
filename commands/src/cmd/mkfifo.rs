//! `mkfifo`: make named pipes. A fork holds files, directories and symlinks only (objects
//! in a bucket), so there are no FIFOs to make: each NAME is refused with "Operation not
//! supported", after the checks GNU's `mkfifo` would make first (an existing NAME, a
//! missing parent), so scripts see the same errors they would elsewhere.

use async_trait::async_trait;
use clap::Parser;

use super::util::quote;
use crate::fs::FsError;
use crate::{CmdResult, Command, Context, parse_args};

/// Create named pipes (FIFOs) with the given NAMEs. This session's filesystem has no
/// FIFOs: every NAME is refused ("Operation not supported").
#[derive(Parser, Debug)]
#[command(name = "mkfifo", override_usage = "mkfifo [OPTION]... NAME...")]
struct Args {
    /// Set file permission bits to MODE, not a=rw - umask.
    #[arg(short = 'm', long, value_name = "MODE")]
    mode: Option<String>,
    /// Set the SELinux security context to default type.
    #[arg(short = 'Z')]
    selinux: bool,
    /// Like -Z, or if CTX is specified then set the SELinux or SMACK security context to CTX.
    #[arg(long, value_name = "CTX", num_args = 0..=1)]
    context: Option<Option<String>>,
    names: Vec<String>,
}

pub struct Mkfifo;

#[async_trait]
impl Command for Mkfifo {
    fn name(&self) -> &'static str {
        "mkfifo"
    }
    fn summary(&self) -> &'static str {
        "make FIFOs (refused: the session's filesystem has none)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let a: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if let Some(m) = &a.mode
            && !valid_mode(m)
        {
            ctx.warn("mkfifo", "invalid mode").await;
            return Ok(1);
        }
        if a.names.is_empty() {
            ctx.err("mkfifo: missing operand\nTry 'mkfifo --help' for more information.\n")
                .await;
            return Ok(1);
        }
        for name in &a.names {
            let path = ctx.path(name);
            let reason = if ctx.fs.lstat(&path).await.is_ok() {
                FsError::AlreadyExists.to_string()
            } else {
                let parent = match path.trim_end_matches('/').rsplit_once('/') {
                    Some(("", _)) | None => "/",
                    Some((p, _)) => p,
                };
                match ctx.fs.stat(parent).await {
                    Ok(m) if m.is_dir() => FsError::Unsupported.to_string(),
                    Ok(_) => FsError::NotADirectory.to_string(),
                    Err(e) => e.to_string(),
                }
            };
            ctx.warn(
                "mkfifo",
                format!("cannot create fifo {}: {reason}", quote(name)),
            )
            .await;
        }
        Ok(1)
    }
}

/// Whether MODE is one chmod would take: octal, or symbolic clauses.
fn valid_mode(m: &str) -> bool {
    if m.chars().all(|c| c.is_ascii_digit()) {
        return !m.is_empty() && m.chars().all(|c| c < '8') && m.len() <= 4;
    }
    m.split(',').all(|clause| {
        let rest = clause.trim_start_matches(['u', 'g', 'o', 'a']);
        !rest.is_empty()
            && rest.starts_with(['+', '-', '='])
            && rest.chars().all(|c| "+-=rwxXstugo".contains(c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn refused_after_gnus_own_checks() {
        let inv = Invocation {
            fs: MemFs::with_files(&[("/f", "x")]),
            ..Invocation::default()
        };
        let (st, _, err) = inv.run(&Mkfifo, &["p"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "mkfifo: cannot create fifo 'p': Operation not supported\n"
            )
        );
        let (st, _, err) = inv.run(&Mkfifo, &["f"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "mkfifo: cannot create fifo 'f': File exists\n")
        );
        let (st, _, err) = inv.run(&Mkfifo, &["no/p"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "mkfifo: cannot create fifo 'no/p': No such file or directory\n"
            )
        );
        let (st, _, err) = inv.run(&Mkfifo, &["-m", "9", "p"]).await;
        assert_eq!((st, err.as_str()), (1, "mkfifo: invalid mode\n"));
        assert_eq!(inv.run(&Mkfifo, &[]).await.0, 1);
    }
}

//! `sync`: make what was written durable.
//!
//! A file in a forkbox session is stored when it is closed, so `sync` has little left to
//! do: it asks the filesystem to flush whatever it still holds ([`FileSystem::sync_all`])
//! and reports the operands it cannot open, as GNU does.
//!
//! [`FileSystem::sync_all`]: crate::FileSystem::sync_all

use async_trait::async_trait;
use clap::Parser;

use super::util::quote;
use crate::{CmdResult, Command, Context, parse_args};

/// Synchronize cached writes to persistent storage. If one or more files are specified,
/// sync only them, or their containing file systems. In a forkbox session every file is
/// stored when it is closed, so this mostly reports errors.
#[derive(Parser, Debug)]
#[command(name = "sync", args_override_self = true)]
struct Args {
    /// Sync only file data, no unneeded metadata.
    #[arg(short = 'd', long)]
    data: bool,
    /// Sync the file systems that contain the files.
    #[arg(short = 'f', long = "file-system")]
    file_system: bool,
    /// Files to sync.
    files: Vec<String>,
}

pub struct Sync;

#[async_trait]
impl Command for Sync {
    fn name(&self) -> &'static str {
        "sync"
    }
    fn summary(&self) -> &'static str {
        "synchronize cached writes to persistent storage"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let name = self.name();
        let args: Args = match parse_args(ctx, name, &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.data && args.file_system {
            ctx.warn(name, "cannot specify both --data and --file-system")
                .await;
            return Ok(1);
        }
        if args.data && args.files.is_empty() {
            ctx.warn(name, "--data needs at least one argument").await;
            return Ok(1);
        }
        let mut status = 0;
        let mut opened = Vec::new();
        for f in &args.files {
            match ctx.fs.stat(&ctx.path(f)).await {
                Ok(_) => opened.push(f),
                Err(e) => {
                    ctx.warn(name, format!("error opening {}: {e}", quote(f)))
                        .await;
                    status = 1;
                }
            }
        }
        if let Err(e) = ctx.fs.sync_all().await {
            if args.files.is_empty() {
                ctx.warn(name, format!("error syncing: {e}")).await;
            }
            for f in opened {
                ctx.warn(name, format!("error syncing {}: {e}", quote(f)))
                    .await;
            }
            status = 1;
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    fn inv() -> Invocation {
        Invocation {
            fs: MemFs::with_files(&[("/a", "x"), ("/d/", "")]),
            ..Invocation::default()
        }
    }

    /// Messages and statuses as GNU coreutils' sync gives them.
    #[tokio::test]
    async fn syncs_and_reports_like_gnu() {
        let run = |args: &'static [&'static str]| async move { inv().run(&Sync, args).await };
        assert_eq!(run(&[]).await, (0, String::new(), String::new()));
        assert_eq!(run(&["a", "d"]).await, (0, String::new(), String::new()));
        assert_eq!(run(&["-f", "a"]).await.0, 0);
        assert_eq!(
            run(&["nofile", "a"]).await,
            (
                1,
                String::new(),
                "sync: error opening 'nofile': No such file or directory\n".into()
            )
        );
        assert_eq!(
            run(&["-d"]).await,
            (
                1,
                String::new(),
                "sync: --data needs at least one argument\n".into()
            )
        );
        assert_eq!(
            run(&["-d", "-f", "a"]).await,
            (
                1,
                String::new(),
                "sync: cannot specify both --data and --file-system\n".into()
            )
        );
        assert_eq!(run(&["-x"]).await.0, 1);
    }
}

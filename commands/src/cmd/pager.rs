//! `less` and `more`.
//!
//! On a terminal (the command has [`Context::terminal`]) they page ([`page`]): `less`
//! full-screen, both ways, with `/` searches; `more` a page at a time under
//! `--More--(NN%)`. Otherwise (an exec channel, a pipe) they behave as they do when
//! their output is not a terminal: `less` copies its files (or stdin) through like
//! `cat`; `more` does too, preceding each file with util-linux's `::::::::::::::` / name
//! / `::::::::::::::` header, and notes directories and files it cannot open. Options
//! are accepted and ignored (they only change interactive paging), except those that
//! take a value, whose value is skipped.

pub(crate) mod page;
#[cfg(test)]
mod tests;

use async_trait::async_trait;

use super::util::{Reader, copy_to_out, quotef};
use crate::fs::FsError;
use crate::{CmdResult, Command, Context};

pub struct Less;
pub struct More;

/// less's options that take a value (`-x4`, `-x 4`, `--tabs=4`).
const LESS_VALUED: &str = "bhjkoOpPtTxyz#";

/// The file operands of a pager's command line: everything not an option (options are
/// ignored, as they only change interactive paging).
fn operands(args: &[String], valued: &str) -> Vec<String> {
    let mut files = Vec::new();
    let mut i = 0;
    let mut only = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if only || a == "-" || !a.starts_with('-') && !a.starts_with('+') {
            files.push(a.clone());
            continue;
        }
        if a == "--" {
            only = true;
            continue;
        }
        if a.starts_with("--") || a.starts_with('+') {
            continue;
        }
        // A short option that takes a value and has none attached takes the next word.
        if let Some(last) = a.chars().last()
            && a.len() == 2
            && valued.contains(last)
        {
            i += 1;
        }
    }
    files
}

/// Opens each operand for paging; a directory or a file that cannot be opened is
/// reported (as `more` words it, or as `less` does) and left out.
async fn open_texts(ctx: &Context, files: &[String], more: bool) -> Vec<page::Text> {
    let mut texts = Vec::new();
    for f in files {
        if f == "-" {
            texts.push(page::Text::new(
                ctx,
                String::new(),
                Reader::stdin(ctx),
                None,
            ));
            continue;
        }
        let meta = match ctx.fs.stat(&ctx.path(f)).await {
            Ok(m) if m.is_dir() => {
                if more {
                    ctx.out(format!("\n*** {f}: directory ***\n\n")).await.ok();
                } else {
                    ctx.err(format!("{f} is a directory\n")).await;
                }
                continue;
            }
            Ok(m) => m,
            Err(e) => {
                if more {
                    ctx.err(format!("more: cannot open {}: {e}\n", quotef(f)))
                        .await;
                } else {
                    ctx.err(format!("{f}: {e}\n")).await;
                }
                continue;
            }
        };
        match Reader::open(ctx, f).await {
            Ok(r) => texts.push(page::Text::new(ctx, f.clone(), r, Some(meta.len))),
            Err(e) => {
                if more {
                    ctx.err(format!("more: cannot open {}: {e}\n", quotef(f)))
                        .await;
                } else {
                    ctx.err(format!("{f}: {e}\n")).await;
                }
            }
        }
    }
    texts
}

#[async_trait]
impl Command for Less {
    fn name(&self) -> &'static str {
        "less"
    }
    fn summary(&self) -> &'static str {
        "pager (without a terminal: copies its input, like cat)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        if args.iter().any(|a| a == "--help") {
            ctx.out("less: a session's output is not a terminal here: less copies FILEs (or standard input) to standard output, like cat.\nUsage: less [OPTION]... [FILE]...\n").await?;
            return Ok(0);
        }
        let mut files = operands(&args, LESS_VALUED);
        if files.is_empty() {
            files.push("-".into());
        }
        if let Some(term) = ctx.terminal.clone() {
            let texts = open_texts(ctx, &files, false).await;
            if texts.is_empty() {
                return Ok(1);
            }
            return page::less(ctx, term, texts).await;
        }
        for f in files {
            let mut reader = match Reader::open(ctx, &f).await {
                Ok(r) => r,
                Err(e) => {
                    ctx.err(format!("{f}: {e}\n")).await;
                    continue;
                }
            };
            if let Err(e) = copy_to_out(ctx, &mut reader).await? {
                match e {
                    FsError::IsADirectory => ctx.err(format!("{f} is a directory\n")).await,
                    e => ctx.err(format!("{f}: {e}\n")).await,
                }
            }
        }
        Ok(0)
    }
}

#[async_trait]
impl Command for More {
    fn name(&self) -> &'static str {
        "more"
    }
    fn summary(&self) -> &'static str {
        "pager (without a terminal: copies files with a header each)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        if args.iter().any(|a| a == "--help") {
            ctx.out("more: a session's output is not a terminal here: more copies each FILE to standard output after a header naming it, and standard input as is.\nUsage: more [options] <file>...\n").await?;
            return Ok(0);
        }
        let files = operands(&args, "n");
        if let Some(term) = ctx.terminal.clone() {
            let operands = if files.is_empty() {
                vec!["-".to_string()]
            } else {
                files
            };
            let texts = open_texts(ctx, &operands, true).await;
            if texts.is_empty() {
                return Ok(1);
            }
            return page::more(ctx, term, texts).await;
        }
        if files.is_empty() {
            let mut reader = Reader::stdin(ctx);
            let _ = copy_to_out(ctx, &mut reader).await?;
            return Ok(0);
        }
        for f in files {
            let meta = ctx.fs.stat(&ctx.path(&f)).await;
            match meta {
                Ok(m) if m.is_dir() => {
                    ctx.out(format!("\n*** {f}: directory ***\n\n")).await?;
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    ctx.err(format!("more: cannot open {}: {e}\n", quotef(&f)))
                        .await;
                    continue;
                }
            }
            let mut reader = match Reader::open(ctx, &f).await {
                Ok(r) => r,
                Err(e) => {
                    ctx.err(format!("more: cannot open {}: {e}\n", quotef(&f)))
                        .await;
                    continue;
                }
            };
            ctx.out(format!("::::::::::::::\n{f}\n::::::::::::::\n"))
                .await?;
            if let Err(e) = copy_to_out(ctx, &mut reader).await? {
                ctx.err(format!("more: {}: {e}\n", quotef(&f))).await;
            }
        }
        Ok(0)
    }
}

//! `man`, `apropos` and `whatis`: manual pages for the session's own commands.
//!
//! There are no page files: a page is built from the texts every command already has, the
//! same ones `help NAME`, `commands` and `NAME --help` show. NAME is the registry's
//! one-line summary (the launcher's listing); SYNOPSIS is the `Usage:` line (and GNU's
//! `  or:` lines) of what `NAME --help` prints, and DESCRIPTION the rest of that text. A
//! command whose `--help` says nothing (`true`) gets its summary as its description.
//!
//! The page is laid out as man-db lays out a page when its output is not a terminal:
//! plain text (no bold, no underline), `NAME(1)` headers, sections indented by 7
//! columns, the lines at most the width (`MANWIDTH`, `COLUMNS`, the terminal's, else
//! 80). On a terminal it is paged: through `-P PAGER`, `$MANPAGER` or `$PAGER` when one
//! is set (run by `sh -c`, the page on its standard input), else through `less`.
//! `apropos`/`man -k` search the summaries, `whatis`/`man -f` look names up; what finds
//! nothing fails with status 16, as man-db's does.

use async_trait::async_trait;
use clap::Parser;

use super::pager::page;
use super::util::Reader;
use crate::io::{Input, Output, pipe_in};
use crate::{CmdResult, Command, CommandInfo, CommandKind, Context, parse_args};

/// man-db's status when a page (or an apropos/whatis answer) was not found.
const NOT_FOUND: i32 = 16;

/// The width of a page when nothing says otherwise (man-db's, off a terminal).
const DEFAULT_WIDTH: usize = 80;

/// Narrowest page laid out; below it lines are not wrapped further.
const MIN_WIDTH: usize = 20;

/// Most bytes of `NAME --help` a page takes: a help text is a few kilobytes, and this
/// bounds what a runaway one can cost.
const MAX_HELP: usize = 256 * 1024;

/// Columns sections are indented by (man's `.RS` default).
const INDENT: usize = 7;

/// Format and display the manual page of each NAME: a command or builtin of this shell.
/// The page is built from the command's one-line summary and its `--help` text. On a
/// terminal the page is shown through a pager; otherwise it is printed as plain text.
#[derive(Parser, Debug)]
#[command(name = "man", disable_version_flag = true)]
struct ManArgs {
    /// Search the one-line summaries for each keyword, as apropos does.
    #[arg(short = 'k', long = "apropos")]
    apropos: bool,
    /// Show the one-line summary of each name, as whatis does.
    #[arg(short = 'f', long = "whatis")]
    whatis: bool,
    /// Show every matching page (there is one per name here).
    #[arg(short = 'a', long = "all")]
    all: bool,
    /// The pager to show the page on a terminal (run with `sh -c`).
    #[arg(short = 'P', long = "pager", value_name = "PAGER")]
    pager: Option<String>,
    /// [SECTION] NAME...: the pages to show (every page here is in section 1).
    names: Vec<String>,
}

/// Search the one-line summaries (and names) of this shell's commands for each KEYWORD,
/// case-insensitively, and list the commands that match.
#[derive(Parser, Debug)]
#[command(name = "apropos", disable_version_flag = true)]
struct AproposArgs {
    /// Words to look for.
    keywords: Vec<String>,
}

/// Show the one-line summary of each NAME, a command of this shell.
#[derive(Parser, Debug)]
#[command(name = "whatis", disable_version_flag = true)]
struct WhatisArgs {
    /// Command names to look up.
    names: Vec<String>,
}

pub struct Man;
pub struct Apropos;
pub struct Whatis;

#[async_trait]
impl Command for Man {
    fn name(&self) -> &'static str {
        "man"
    }
    fn summary(&self) -> &'static str {
        "an interface to the manual pages of this shell's commands"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: ManArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        // `-a` changes nothing: each name has one page.
        let _ = args.all;
        if args.apropos {
            return apropos(ctx, &args.names).await;
        }
        if args.whatis {
            return whatis(ctx, "man", &args.names).await;
        }
        let mut names = args.names.as_slice();
        let mut section = None;
        if names.len() > 1 && is_section(&names[0]) {
            section = Some(names[0].clone());
            names = &names[1..];
        }
        if names.is_empty() {
            ctx.err("What manual page do you want?\nFor example, try 'man man'.\n")
                .await;
            return Ok(1);
        }
        let commands = ctx.launcher.commands();
        let width = page_width(ctx);
        let mut text = String::new();
        let mut status = 0;
        for name in names {
            let found = commands.iter().find(|c| &c.name == name);
            let info = match (found, section.as_deref()) {
                (Some(c), None | Some("1")) => c,
                (_, Some(s)) => {
                    ctx.err(format!("No manual entry for {name} in section {s}\n"))
                        .await;
                    status = NOT_FOUND;
                    continue;
                }
                (None, None) => {
                    ctx.err(format!("No manual entry for {name}\n")).await;
                    status = NOT_FOUND;
                    continue;
                }
            };
            let help = help_text(ctx, name).await?;
            text.push_str(&render(info, help.as_deref(), width));
        }
        if text.is_empty() {
            return Ok(status);
        }
        let pager = args
            .pager
            .or_else(|| ctx.env.get("MANPAGER").cloned())
            .or_else(|| ctx.env.get("PAGER").cloned())
            .filter(|p| !p.trim().is_empty());
        match ctx.terminal.clone() {
            Some(term) => {
                let paging = Context {
                    stdin: Input::from_bytes(text.into_bytes()),
                    ..ctx.clone()
                };
                if let Some(pager) = pager {
                    let shown = ctx.launcher.launch_sh(paging, pager).await;
                    return Ok(if status != 0 {
                        status
                    } else {
                        shown.unwrap_or(1)
                    });
                }
                let texts = vec![page::Text::new(
                    ctx,
                    String::new(),
                    Reader::stdin(&paging),
                    None,
                )];
                let shown = page::less(ctx, term, texts).await?;
                Ok(if status != 0 { status } else { shown })
            }
            None => {
                ctx.out(text).await?;
                Ok(status)
            }
        }
    }
}

#[async_trait]
impl Command for Apropos {
    fn name(&self) -> &'static str {
        "apropos"
    }
    fn summary(&self) -> &'static str {
        "search the manual page names and descriptions"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: AproposArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        apropos(ctx, &args.keywords).await
    }
}

#[async_trait]
impl Command for Whatis {
    fn name(&self) -> &'static str {
        "whatis"
    }
    fn summary(&self) -> &'static str {
        "display one-line manual page descriptions"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: WhatisArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        whatis(ctx, "whatis", &args.names).await
    }
}

/// Whether `word` names a manual section (`1`, `8`, `3p`, `n`), as man reads a first
/// operand followed by names.
fn is_section(word: &str) -> bool {
    let mut chars = word.chars();
    match chars.next() {
        Some(c) if c.is_ascii_digit() => chars.all(|c| c.is_ascii_alphanumeric()),
        Some('n' | 'l') => word.len() == 1,
        _ => false,
    }
}

/// One line of apropos and whatis: `name (1)`, padded to 20 columns, ` - ` summary.
fn whatis_line(c: &CommandInfo) -> String {
    format!("{:<20} - {}\n", format!("{} (1)", c.name), c.summary)
}

/// `apropos KEYWORD...`: every command whose name or summary holds one of the keywords,
/// ignoring case.
async fn apropos(ctx: &Context, keywords: &[String]) -> CmdResult {
    if keywords.is_empty() {
        ctx.err("apropos what?\n").await;
        return Ok(1);
    }
    let words: Vec<String> = keywords.iter().map(|k| k.to_lowercase()).collect();
    let mut out = String::new();
    for c in ctx.launcher.commands() {
        let hay = format!("{}\n{}", c.name.to_lowercase(), c.summary.to_lowercase());
        if words.iter().any(|w| hay.contains(w.as_str())) {
            out.push_str(&whatis_line(&c));
        }
    }
    if out.is_empty() {
        for k in keywords {
            ctx.err(format!("{k}: nothing appropriate.\n")).await;
        }
        return Ok(NOT_FOUND);
    }
    ctx.out(out).await?;
    Ok(0)
}

/// `whatis NAME...`: each name's summary line; a name that is no command is reported.
async fn whatis(ctx: &Context, name: &str, names: &[String]) -> CmdResult {
    if names.is_empty() {
        let what = if name == "man" { "whatis" } else { name };
        ctx.err(format!("{what} what?\n")).await;
        return Ok(1);
    }
    let commands = ctx.launcher.commands();
    let mut status = 0;
    for n in names {
        match commands.iter().find(|c| &c.name == n) {
            Some(c) => ctx.out(whatis_line(c)).await?,
            None => {
                ctx.err(format!("{n}: nothing appropriate.\n")).await;
                status = NOT_FOUND;
            }
        }
    }
    Ok(status)
}

/// The width pages are laid out for: `MANWIDTH`, then `COLUMNS`, then the terminal's,
/// else [`DEFAULT_WIDTH`].
fn page_width(ctx: &Context) -> usize {
    let from_env = |name: &str| {
        ctx.env
            .get(name)
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|w| *w > 0)
    };
    let cols = from_env("MANWIDTH")
        .or_else(|| from_env("COLUMNS"))
        .or_else(|| ctx.tty.map(|t| usize::from(t.cols)))
        .unwrap_or(DEFAULT_WIDTH);
    // man-db leaves a margin on a wide line: 78 columns of text in 80.
    let cols = if cols >= DEFAULT_WIDTH {
        cols - cols / 40
    } else {
        cols.saturating_sub(1)
    };
    cols.max(MIN_WIDTH)
}

/// What `NAME --help` prints, when it succeeds with some text: run through the launcher
/// as any program is (a builtin in a shell of its own), with no input and no terminal.
async fn help_text(ctx: &Context, name: &str) -> Result<Option<String>, crate::Interrupt> {
    let (tx, rx) = pipe_in(&ctx.budget);
    let helping = Context {
        stdin: Input::empty(),
        stdout: tx,
        stderr: Output::null(),
        tty: None,
        terminal: None,
        ..ctx.clone()
    };
    let argv = vec![name.to_string(), "--help".to_string()];
    let (status, text) = tokio::join!(ctx.launcher.launch(helping, argv), async {
        rx.read_to_end(MAX_HELP).await
    });
    if ctx.cancel.is_cancelled() {
        return Err(crate::Interrupt::Cancelled);
    }
    let text = String::from_utf8_lossy(&text.unwrap_or_default()).into_owned();
    // `echo --help` in bash prints `--help`: that is no help text.
    let useful = status == 0 && !text.trim().is_empty() && text.trim() != "--help";
    Ok(useful.then_some(text))
}

/// The page of `info` laid out at `width`, from its `--help` text `help`.
fn render(info: &CommandInfo, help: Option<&str>, width: usize) -> String {
    let title = format!("{}(1)", info.name.to_uppercase());
    let centre = match info.kind {
        CommandKind::Builtin => "Shell Builtin Commands",
        CommandKind::Native => "User Commands",
        CommandKind::Wasi => "WASI Tools",
    };
    let mut synopsis = Vec::new();
    let mut description = Vec::new();
    // `Usage: …` lines, and GNU's `  or: …` lines right after one, are the synopsis.
    let mut in_usage = false;
    for line in help.unwrap_or_default().lines() {
        let line = line.trim_end();
        let usage = line
            .strip_prefix("Usage:")
            .or_else(|| line.strip_prefix("usage:"))
            .or_else(|| line.trim_start().strip_prefix("or:").filter(|_| in_usage))
            .map(str::trim)
            .filter(|u| !u.is_empty());
        in_usage = usage.is_some();
        match usage {
            Some(u) => synopsis.push(u.to_string()),
            None => description.push(line.to_string()),
        }
    }
    if synopsis.is_empty() {
        synopsis.push(info.name.clone());
    }
    if description.iter().all(|l| l.trim().is_empty()) {
        description = vec![format!("{}.", info.summary)];
    }
    let mut out = header(&title, centre, &title, width);
    out.push_str("\n\nNAME\n");
    push_wrapped(
        &mut out,
        &format!("{} - {}", info.name, info.summary),
        width,
    );
    out.push_str("\nSYNOPSIS\n");
    for s in &synopsis {
        push_wrapped(&mut out, s, width);
    }
    out.push_str("\nDESCRIPTION\n");
    let mut blank = true;
    for para in paragraphs(&description) {
        if para.is_empty() {
            if !blank {
                out.push('\n');
            }
            blank = true;
            continue;
        }
        blank = false;
        push_wrapped(&mut out, &para, width);
    }
    if !blank {
        out.push('\n');
    }
    out.push_str(&header("forkbox", "", &title, width));
    out.push('\n');
    out
}

/// A header or footer line: `left` and `right` at the edges, `centre` in the middle.
fn header(left: &str, centre: &str, right: &str, width: usize) -> String {
    let (l, c, r) = (
        left.chars().count(),
        centre.chars().count(),
        right.chars().count(),
    );
    let centre_at = width.saturating_sub(c) / 2;
    let before = centre_at.saturating_sub(l).max(1);
    let after = width.saturating_sub(l + before + c + r).max(1);
    if centre.is_empty() {
        let gap = width.saturating_sub(l + r).max(1);
        return format!("{left}{}{right}", " ".repeat(gap));
    }
    format!(
        "{left}{}{centre}{}{right}",
        " ".repeat(before),
        " ".repeat(after)
    )
}

/// The help text's lines joined back into the paragraphs it was wrapped from (clap wraps
/// at its own width): a line continues the one before when both are indented alike, the
/// one before was long (it was wrapped), is no heading (`Options:`) and the line starts
/// no option of its own. A blank line is an empty paragraph.
fn paragraphs(lines: &[String]) -> Vec<String> {
    /// A line at least this long was wrapped, rather than ended where its writer wanted.
    const WRAPPED: usize = 60;
    let mut out: Vec<String> = Vec::new();
    let mut last_len = 0;
    for line in lines {
        let body = line.trim_start();
        let indent = line.len() - body.len();
        let joins = out.last().is_some_and(|p| {
            let p_indent = p.len() - p.trim_start().len();
            !p.trim().is_empty()
                && !body.is_empty()
                && (p_indent == indent || text_column(p) == Some(indent))
                && last_len >= WRAPPED
                && !p.ends_with(':')
                && !body.starts_with('-')
        });
        last_len = line.chars().count();
        match out.last_mut() {
            Some(p) if joins => {
                p.push(' ');
                p.push_str(body);
            }
            _ => out.push(if body.is_empty() {
                String::new()
            } else {
                line.clone()
            }),
        }
    }
    out
}

/// Where the text after an option's name starts on `line` (`  -a, --all  Do not…`):
/// after the first gap of two blanks past the indentation, if text follows it.
fn text_column(line: &str) -> Option<usize> {
    let body = line.trim_start();
    let own = line.len() - body.len();
    let gap = body.find("  ")?;
    let rest = &body[gap..];
    let at = own + gap + (rest.len() - rest.trim_start().len());
    (at < line.len()).then_some(at)
}

/// Appends `line` indented by [`INDENT`]: as it is when it fits in `width` columns (so
/// aligned option lists stay aligned), else wrapped at blanks. Continuations hang under
/// the line's text: after a gap of two blanks (an option's description), else under the
/// line's own indentation.
fn push_wrapped(out: &mut String, line: &str, width: usize) {
    if INDENT + line.chars().count() <= width {
        out.push_str(&" ".repeat(INDENT));
        out.push_str(line);
        out.push('\n');
        return;
    }
    let own = line.len() - line.trim_start().len();
    let room = width.saturating_sub(INDENT).max(MIN_WIDTH / 2);
    let hang = text_column(line).filter(|h| *h <= room / 2).unwrap_or(own);
    let (head, rest) = line.split_at(hang);
    let mut current = format!("{}{head}", " ".repeat(INDENT));
    let mut cols = head.chars().count();
    let mut fresh = true;
    for word in rest.split_whitespace() {
        let w = word.chars().count();
        if !fresh && cols + 1 + w > room {
            out.push_str(current.trim_end());
            out.push('\n');
            current = " ".repeat(INDENT + hang);
            cols = hang;
            fresh = true;
        }
        if !fresh {
            current.push(' ');
            cols += 1;
        }
        current.push_str(word);
        cols += w;
        fresh = false;
    }
    out.push_str(current.trim_end());
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, TestLauncher};
    use std::sync::Arc;

    fn inv() -> Invocation {
        Invocation {
            launcher: TestLauncher::with(vec![
                Arc::new(super::super::truefalse::True),
                Arc::new(super::super::head::Head),
                Arc::new(Man),
                Arc::new(Apropos),
                Arc::new(Whatis),
            ]),
            ..Invocation::default()
        }
    }

    #[tokio::test]
    async fn a_page_has_name_synopsis_and_description_from_the_help_text() {
        let (st, out, err) = inv().run(&Man, &["head"]).await;
        assert_eq!((st, err.as_str()), (0, ""));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "HEAD(1)                         User Commands                          HEAD(1)"
        );
        assert_eq!(lines[0].len(), 78);
        assert_eq!(
            &lines[1..4],
            &["", "NAME", "       head - output the first part of files"]
        );
        assert_eq!(lines[5], "SYNOPSIS");
        assert_eq!(lines[6], "       head [OPTIONS] [FILES]...");
        assert_eq!(lines[8], "DESCRIPTION");
        assert!(
            out.contains("\n       Print the first 10 lines of each FILE"),
            "{out}"
        );
        assert!(lines.iter().all(|l| l.chars().count() <= 78), "{out}");
        assert!(
            !out.contains('\u{8}') && !out.contains('\u{1b}'),
            "plain text: {out}"
        );
        assert_eq!(
            *lines.last().unwrap(),
            format!("forkbox{}HEAD(1)", " ".repeat(78 - 7 - 7))
        );
    }

    #[tokio::test]
    async fn a_command_without_help_text_is_described_by_its_summary() {
        let (st, out, _) = inv().run(&Man, &["true"]).await;
        assert_eq!(st, 0);
        assert!(
            out.contains(
                "SYNOPSIS\n       true\n\nDESCRIPTION\n       do nothing, successfully.\n"
            ),
            "{out}"
        );
    }

    #[tokio::test]
    async fn missing_pages_and_no_names_fail_as_man_db() {
        let (st, out, err) = inv().run(&Man, &["nosuch"]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (16, "", "No manual entry for nosuch\n")
        );
        let (st, _, err) = inv().run(&Man, &[]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "What manual page do you want?\nFor example, try 'man man'.\n"
            )
        );
        let (st, out, err) = inv().run(&Man, &["1", "true", "nosuch"]).await;
        assert_eq!(st, 16);
        assert!(out.contains("TRUE(1)"), "{out}");
        assert_eq!(err, "No manual entry for nosuch in section 1\n");
        let (st, _, err) = inv().run(&Man, &["3", "true"]).await;
        assert_eq!(
            (st, err.as_str()),
            (16, "No manual entry for true in section 3\n")
        );
    }

    #[tokio::test]
    async fn apropos_and_whatis_search_the_summaries() {
        let (st, out, _) = inv().run(&Man, &["-k", "FIRST"]).await;
        assert_eq!(
            (st, out.as_str()),
            (0, "head (1)             - output the first part of files\n")
        );
        let (st, out, _) = inv().run(&Apropos, &["successful", "manual"]).await;
        assert_eq!(st, 0);
        assert_eq!(out.lines().count(), 4, "{out}");
        let (st, _, err) = inv().run(&Apropos, &["zzz"]).await;
        assert_eq!((st, err.as_str()), (16, "zzz: nothing appropriate.\n"));
        let (st, out, err) = inv().run(&Whatis, &["true", "tru"]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (
                16,
                "true (1)             - do nothing, successfully\n",
                "tru: nothing appropriate.\n"
            )
        );
        let (st, out, _) = inv().run(&Man, &["-f", "head"]).await;
        assert_eq!((st, out.lines().count()), (0, 1));
        let (st, _, err) = inv().run(&Whatis, &[]).await;
        assert_eq!((st, err.as_str()), (1, "whatis what?\n"));
    }

    #[test]
    fn long_lines_wrap_under_their_text() {
        let mut out = String::new();
        push_wrapped(&mut out, "  -x  one two three four five six", 24);
        assert_eq!(
            out,
            "         -x  one two\n             three four\n             five six\n"
        );
        let mut out = String::new();
        push_wrapped(&mut out, "one two three four five six seven", 24);
        assert_eq!(
            out,
            "       one two three\n       four five six\n       seven\n"
        );
    }

    #[test]
    fn wrapped_help_lines_join_back_into_paragraphs() {
        let long = "a".repeat(30) + " " + &"b".repeat(35);
        let lines: Vec<String> = [
            long.as_str(),
            "end of it",
            "",
            "Options:",
            "  -a, --all",
            "          first half of a long description that clap wrapped at its width",
            "          and its second half",
            "  -b",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            paragraphs(&lines),
            vec![
                format!("{long} end of it"),
                String::new(),
                "Options:".to_string(),
                "  -a, --all".to_string(),
                "          first half of a long description that clap wrapped at its width and its second half".to_string(),
                "  -b".to_string(),
            ]
        );
    }
}

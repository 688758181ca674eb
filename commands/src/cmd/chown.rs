//! `chown`, `chgrp`: change a file's owner or group. A session has one user and one
//! group (see [`super::id`]), which own every file of its fork, so the only change there
//! is to make is none: naming the session's user or group (by name or number) succeeds
//! and is reported as retained, as GNU does for a file that already has that owner;
//! `root` (0) exists but may not be given away to ("Operation not permitted"); any other
//! name is unknown ("invalid user"), with GNU's wording, statuses and `-v`/`-c`/`-R`
//! output.

use async_trait::async_trait;
use clap::Parser;

use super::id::{GID, UID, user};
use super::util::{MAX_DEPTH, Pacer, quote, utf8_locale};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// Change the owner and/or group of each FILE to OWNER and/or GROUP.
///
/// OWNER[:[GROUP]]: owner is unchanged if missing; group is unchanged if missing, but
/// changed to the login group if implied by a ':' following a symbolic OWNER. OWNER and
/// GROUP may be numeric as well as symbolic. A session has one user and one group.
#[derive(Parser, Debug)]
#[command(
    name = "chown",
    disable_help_flag = true,
    override_usage = "chown [OPTION]... [OWNER][:[GROUP]] FILE..."
)]
struct ChownArgs {
    #[command(flatten)]
    common: Common,
}

/// Change the group of each FILE to GROUP. A session has one group.
#[derive(Parser, Debug)]
#[command(
    name = "chgrp",
    disable_help_flag = true,
    override_usage = "chgrp [OPTION]... GROUP FILE..."
)]
struct ChgrpArgs {
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args, Debug)]
struct Common {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Like verbose but report only when a change is made.
    #[arg(short = 'c', long, overrides_with = "verbose")]
    changes: bool,
    /// Suppress most error messages.
    #[arg(short = 'f', long, visible_alias = "quiet")]
    silent: bool,
    /// Output a diagnostic for every file processed.
    #[arg(short = 'v', long, overrides_with = "changes")]
    verbose: bool,
    /// Affect the referent of each symbolic link (the default).
    #[arg(long)]
    dereference: bool,
    /// Affect symbolic links instead of any referenced file.
    #[arg(short = 'h', long)]
    no_dereference: bool,
    /// Operate on files and directories recursively.
    #[arg(short = 'R', long)]
    recursive: bool,
    /// With -R: traverse a command-line symbolic link to a directory.
    #[arg(short = 'H')]
    follow_args: bool,
    /// With -R: traverse every symbolic link to a directory.
    #[arg(short = 'L')]
    follow_all: bool,
    /// With -R: do not traverse any symbolic links (the default).
    #[arg(short = 'P')]
    follow_none: bool,
    /// Use RFILE's owner and group rather than specifying OWNER:GROUP values.
    #[arg(long, value_name = "RFILE")]
    reference: Option<String>,
    /// Do not treat '/' specially (the default).
    #[arg(long)]
    no_preserve_root: bool,
    /// Fail to operate recursively on '/'.
    #[arg(long)]
    preserve_root: bool,
    /// The owner (or group) followed by the files.
    #[arg(value_name = "OWNER FILE", allow_hyphen_values = false)]
    operands: Vec<String>,
}

/// What a name in an OWNER or GROUP spec turned out to be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Who {
    /// The session's own user or group.
    Session,
    /// root, who exists but whom nothing may be given to.
    Root,
}

/// A parsed `OWNER[:GROUP]` (or chgrp's `GROUP`).
struct Spec {
    owner: Option<Who>,
    group: Option<Who>,
    /// The names as the report shows them (`root`, `root:root`, empty for `:`).
    shown: String,
}

/// Quoting for a spec in GNU's `quote()` messages: curly quotes in a UTF-8 locale.
fn locale_quote(ctx: &Context, s: &str) -> String {
    if utf8_locale(&ctx.env) {
        format!("\u{2018}{s}\u{2019}")
    } else {
        quote(s)
    }
}

fn lookup(name: &str, me: &str, session_id: u32) -> Option<Who> {
    if name == me || name.parse::<u32>() == Ok(session_id) {
        Some(Who::Session)
    } else if name == "root" || name.parse::<u32>() == Ok(0) {
        Some(Who::Root)
    } else {
        None
    }
}

fn name_of(who: Who, me: &str) -> String {
    match who {
        Who::Session => me.to_string(),
        Who::Root => "root".to_string(),
    }
}

pub struct Chown;
pub struct Chgrp;

#[async_trait]
impl Command for Chown {
    fn name(&self) -> &'static str {
        "chown"
    }
    fn summary(&self) -> &'static str {
        "change file owner and group (the session's only)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let a: ChownArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        run(ctx, "chown", a.common).await
    }
}

#[async_trait]
impl Command for Chgrp {
    fn name(&self) -> &'static str {
        "chgrp"
    }
    fn summary(&self) -> &'static str {
        "change group ownership (the session's only)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let a: ChgrpArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        run(ctx, "chgrp", a.common).await
    }
}

async fn usage(ctx: &Context, prog: &str, msg: &str) -> CmdResult {
    ctx.err(format!(
        "{prog}: {msg}\nTry '{prog} --help' for more information.\n"
    ))
    .await;
    Ok(1)
}

async fn run(ctx: &Context, prog: &'static str, a: Common) -> CmdResult {
    let me = user(ctx);
    let mut operands = a.operands.clone();
    let spec = if let Some(r) = &a.reference {
        if let Err(e) = ctx.fs.stat(&ctx.path(r)).await {
            ctx.warn(
                prog,
                format!("failed to get attributes of {}: {e}", quote(r)),
            )
            .await;
            return Ok(1);
        }
        let shown = if prog == "chown" {
            format!("{me}:{me}")
        } else {
            me.clone()
        };
        Spec {
            owner: (prog == "chown").then_some(Who::Session),
            group: Some(Who::Session),
            shown,
        }
    } else {
        if operands.is_empty() {
            return usage(ctx, prog, "missing operand").await;
        }
        let spec_word = operands.remove(0);
        if operands.is_empty() {
            let msg = format!("missing operand after {}", locale_quote(ctx, &spec_word));
            return usage(ctx, prog, &msg).await;
        }
        let parsed = if prog == "chown" {
            parse_owner(ctx, &spec_word, &me).await
        } else {
            parse_group(ctx, &spec_word, &me)
        };
        match parsed {
            Ok(s) => s,
            Err(msg) => {
                ctx.warn(prog, msg).await;
                return Ok(1);
            }
        }
    };
    if operands.is_empty() {
        return usage(ctx, prog, "missing operand").await;
    }
    let mut r = Run {
        ctx,
        prog,
        a: &a,
        spec,
        me,
        status: 0,
        pacer: Pacer::default(),
    };
    for f in &operands {
        r.operand(f).await?;
    }
    Ok(r.status)
}

/// `OWNER[:[GROUP]]` (also GNU's obsolete `OWNER.GROUP`, with its warning).
async fn parse_owner(ctx: &Context, word: &str, me: &str) -> Result<Spec, String> {
    let (owner, group, sep) = if let Some((o, g)) = word.split_once(':') {
        (o, Some(g), true)
    } else if let Some((o, g)) = word.split_once('.')
        && lookup(word, me, UID).is_none()
    {
        ctx.warn(
            "chown",
            format!("warning: '.' should be ':': {}", locale_quote(ctx, word)),
        )
        .await;
        (o, Some(g), true)
    } else {
        (word, None, false)
    };
    let owner_who = if owner.is_empty() {
        None
    } else {
        match lookup(owner, me, UID) {
            Some(w) => Some(w),
            None => return Err(format!("invalid user: {}", locale_quote(ctx, word))),
        }
    };
    let group_who = match group {
        Some("") if sep => owner_who,
        Some(g) => match lookup(g, me, GID) {
            Some(w) => Some(w),
            None => return Err(format!("invalid group: {}", locale_quote(ctx, word))),
        },
        None => None,
    };
    let shown = match (owner_who, group_who) {
        (Some(o), Some(g)) => format!("{}:{}", name_of(o, me), name_of(g, me)),
        (Some(o), None) => name_of(o, me),
        (None, Some(g)) => format!(":{}", name_of(g, me)),
        (None, None) => String::new(),
    };
    Ok(Spec {
        owner: owner_who,
        group: group_who,
        shown,
    })
}

fn parse_group(ctx: &Context, word: &str, me: &str) -> Result<Spec, String> {
    if word.is_empty() {
        return Ok(Spec {
            owner: None,
            group: None,
            shown: String::new(),
        });
    }
    match lookup(word, me, GID) {
        Some(w) => Ok(Spec {
            owner: None,
            group: Some(w),
            shown: name_of(w, me),
        }),
        None => Err(format!("invalid group: {}", locale_quote(ctx, word))),
    }
}

struct Run<'a> {
    ctx: &'a Context,
    prog: &'static str,
    a: &'a Common,
    spec: Spec,
    me: String,
    status: i32,
    pacer: Pacer,
}

impl Run<'_> {
    /// What a file's ownership is described as in a report (`user`, `user:user`).
    fn current(&self) -> String {
        match (self.spec.owner.is_some(), self.spec.group.is_some()) {
            (true, true) | (false, false) => format!("{}:{}", self.me, self.me),
            (true, false) => self.me.clone(),
            (false, true) => self.me.clone(),
        }
    }

    async fn operand(&mut self, f: &str) -> Result<(), Interrupt> {
        let path = self.ctx.path(f);
        let follow = !self.a.no_dereference;
        let meta = if follow {
            self.ctx.fs.stat(&path).await
        } else {
            self.ctx.fs.lstat(&path).await
        };
        match meta {
            Err(e) => {
                if !self.a.silent {
                    self.ctx
                        .warn(self.prog, format!("cannot access {}: {e}", quote(f)))
                        .await;
                }
                if self.a.verbose {
                    let what = self.what();
                    self.ctx
                        .out(format!(
                            "failed to change {what} of {} to {}\n",
                            quote(f),
                            self.spec.shown
                        ))
                        .await?;
                }
                self.status = 1;
                Ok(())
            }
            Ok(m) => {
                if self.a.recursive && m.is_dir() {
                    self.tree(f, &path, 0).await?;
                }
                self.change(f).await
            }
        }
    }

    fn what(&self) -> &'static str {
        if self.prog == "chgrp" || (self.spec.owner.is_none() && self.spec.group.is_some()) {
            "group"
        } else {
            "ownership"
        }
    }

    /// Children first, then the directory itself, as GNU reports them.
    fn tree<'b>(
        &'b mut self,
        shown: &'b str,
        path: &'b str,
        depth: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Interrupt>> + Send + 'b>>
    {
        Box::pin(async move {
            if depth >= MAX_DEPTH {
                return Ok(());
            }
            let entries = match self.ctx.fs.read_dir(path).await {
                Ok(e) => e,
                Err(e) => {
                    if !self.a.silent {
                        self.ctx
                            .warn(
                                self.prog,
                                format!("cannot read directory {}: {e}", quote(shown)),
                            )
                            .await;
                    }
                    self.status = 1;
                    return Ok(());
                }
            };
            for e in entries {
                self.pacer.tick(self.ctx).await?;
                let child_shown = format!("{}/{}", shown.trim_end_matches('/'), e.name);
                let child = format!("{}/{}", path.trim_end_matches('/'), e.name);
                let is_dir = self.ctx.fs.lstat(&child).await.is_ok_and(|m| m.is_dir());
                if is_dir {
                    self.tree(&child_shown, &child, depth + 1).await?;
                }
                self.change(&child_shown).await?;
            }
            Ok(())
        })
    }

    async fn change(&mut self, shown: &str) -> Result<(), Interrupt> {
        let to_root = self.spec.owner == Some(Who::Root) || self.spec.group == Some(Who::Root);
        if to_root {
            if !self.a.silent {
                let what = if self.what() == "group" {
                    "group"
                } else {
                    "ownership"
                };
                self.ctx
                    .warn(
                        self.prog,
                        format!(
                            "changing {what} of {}: Operation not permitted",
                            quote(shown)
                        ),
                    )
                    .await;
            }
            if self.a.verbose {
                self.ctx
                    .out(format!(
                        "failed to change {} of {} from {} to {}\n",
                        self.what(),
                        quote(shown),
                        self.current(),
                        self.spec.shown
                    ))
                    .await?;
            }
            self.status = 1;
            return Ok(());
        }
        if self.a.verbose {
            let line = if self.spec.shown.is_empty() {
                format!("ownership of {} retained\n", quote(shown))
            } else {
                format!(
                    "{} of {} retained as {}\n",
                    self.what(),
                    quote(shown),
                    self.spec.shown
                )
            };
            self.ctx.out(line).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    fn inv() -> Invocation {
        let mut inv = Invocation {
            fs: MemFs::with_files(&[("/f", "x"), ("/d/e/x", "y")]),
            ..Invocation::default()
        };
        inv.env.insert("USER".into(), "me".into());
        inv
    }

    #[tokio::test]
    async fn the_session_user_is_retained() {
        let inv = inv();
        assert_eq!(inv.run(&Chown, &["me", "f"]).await.0, 0);
        let (st, out, _) = inv.run(&Chown, &["-v", "1000:", "f"]).await;
        assert_eq!(
            (st, out.as_str()),
            (0, "ownership of 'f' retained as me:me\n")
        );
        let (st, out, _) = inv.run(&Chgrp, &["-Rv", "me", "d"]).await;
        assert_eq!(
            (st, out.as_str()),
            (
                0,
                "group of 'd/e/x' retained as me\ngroup of 'd/e' retained as me\ngroup of 'd' retained as me\n"
            )
        );
    }

    #[tokio::test]
    async fn others_are_refused_in_gnus_words() {
        let inv = inv();
        let (st, _, err) = inv.run(&Chown, &["bob", "f"]).await;
        assert_eq!((st, err.as_str()), (1, "chown: invalid user: 'bob'\n"));
        let (st, _, err) = inv.run(&Chgrp, &["staff", "f"]).await;
        assert_eq!((st, err.as_str()), (1, "chgrp: invalid group: 'staff'\n"));
        let (st, _, err) = inv.run(&Chown, &["root", "f"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "chown: changing ownership of 'f': Operation not permitted\n"
            )
        );
        let (st, _, err) = inv.run(&Chown, &["me", "nope"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "chown: cannot access 'nope': No such file or directory\n"
            )
        );
        let (st, _, err) = inv.run(&Chown, &["me"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "chown: missing operand after 'me'\nTry 'chown --help' for more information.\n"
            )
        );
    }
}

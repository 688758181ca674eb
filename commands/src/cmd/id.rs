//! `id`, `groups`, `logname`: the session's identity. A session has one user, named by
//! `$USER` (as `ls -l` and `stat` show it, "user" when unset), with the documented
//! numeric ids [`UID`] and [`GID`] and one group of the same name.

use async_trait::async_trait;
use clap::Parser;

use super::util::quote;
use crate::{CmdResult, Command, Context, parse_args};

/// The session user's numeric id: the first ordinary user's on a Debian system.
pub(crate) const UID: u32 = 1000;
/// The session user's group id.
pub(crate) const GID: u32 = 1000;

/// The session user's name, as `ls -l` shows it.
pub(crate) fn user(ctx: &Context) -> String {
    ctx.env
        .get("USER")
        .filter(|u| !u.is_empty())
        .cloned()
        .unwrap_or_else(|| "user".into())
}

/// Print user and group information for the session user (the only user there is).
#[derive(Parser, Debug)]
#[command(name = "id")]
struct IdArgs {
    /// Print only the effective group ID.
    #[arg(short = 'g', long)]
    group: bool,
    /// Print all group IDs.
    #[arg(short = 'G', long)]
    groups: bool,
    /// Print a name instead of a number, for -u, -g, -G.
    #[arg(short = 'n', long)]
    name: bool,
    /// Print the real ID instead of the effective ID, with -u, -g, -G.
    #[arg(short = 'r', long)]
    real: bool,
    /// Print only the effective user ID.
    #[arg(short = 'u', long)]
    user: bool,
    /// Delimit entries with NUL characters, not whitespace.
    #[arg(short = 'z', long)]
    zero: bool,
    /// USER
    users: Vec<String>,
}

pub struct Id;

#[async_trait]
impl Command for Id {
    fn name(&self) -> &'static str {
        "id"
    }
    fn summary(&self) -> &'static str {
        "print the session user's identity"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let a: IdArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let me = user(ctx);
        for u in &a.users {
            if *u != me && u.parse::<u32>() != Ok(UID) {
                ctx.warn("id", format!("{}: no such user", quote(u))).await;
                return Ok(1);
            }
        }
        let picks = [a.user, a.group, a.groups].iter().filter(|b| **b).count();
        if picks > 1 {
            ctx.warn("id", "cannot print \"only\" of more than one choice")
                .await;
            return Ok(1);
        }
        if picks == 0 && (a.name || a.real) {
            ctx.warn(
                "id",
                "cannot print only names or real IDs in default format",
            )
            .await;
            return Ok(1);
        }
        let end = if a.zero { '\0' } else { '\n' };
        let text = if a.user {
            if a.name { me.clone() } else { UID.to_string() }
        } else if a.group || a.groups {
            if a.name { me.clone() } else { GID.to_string() }
        } else {
            format!("uid={UID}({me}) gid={GID}({me}) groups={GID}({me})")
        };
        ctx.out(format!("{text}{end}")).await?;
        Ok(0)
    }
}

/// Print the groups the session user is in.
#[derive(Parser, Debug)]
#[command(name = "groups")]
struct GroupsArgs {
    /// USER
    users: Vec<String>,
}

pub struct Groups;

#[async_trait]
impl Command for Groups {
    fn name(&self) -> &'static str {
        "groups"
    }
    fn summary(&self) -> &'static str {
        "print the groups a user is in"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let a: GroupsArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let me = user(ctx);
        if a.users.is_empty() {
            ctx.out(format!("{me}\n")).await?;
            return Ok(0);
        }
        let mut status = 0;
        for u in &a.users {
            if *u == me {
                ctx.out(format!("{u} : {me}\n")).await?;
            } else {
                ctx.warn("groups", format!("{}: no such user", quote(u)))
                    .await;
                status = 1;
            }
        }
        Ok(status)
    }
}

/// Print the name of the session's user (who logged in over SSH).
#[derive(Parser, Debug)]
#[command(name = "logname")]
struct LognameArgs {}

pub struct Logname;

#[async_trait]
impl Command for Logname {
    fn name(&self) -> &'static str {
        "logname"
    }
    fn summary(&self) -> &'static str {
        "print the user's login name"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        if let Err(r) = parse_args::<LognameArgs>(ctx, self.name(), &args).await {
            return r;
        }
        match ctx.env.get("USER").filter(|u| !u.is_empty()) {
            Some(u) => {
                ctx.out(format!("{u}\n")).await?;
                Ok(0)
            }
            None => {
                ctx.warn("logname", "no login name").await;
                Ok(1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn the_session_user() {
        let mut inv = Invocation::default();
        inv.env.insert("USER".into(), "alice".into());
        assert_eq!(
            inv.run(&Id, &[]).await.1,
            "uid=1000(alice) gid=1000(alice) groups=1000(alice)\n"
        );
        assert_eq!(inv.run(&Id, &["-u"]).await.1, "1000\n");
        assert_eq!(inv.run(&Id, &["-un"]).await.1, "alice\n");
        assert_eq!(inv.run(&Id, &["-Gn"]).await.1, "alice\n");
        assert_eq!(inv.run(&Id, &["-ug"]).await.0, 1);
        assert_eq!(inv.run(&Id, &["-n"]).await.0, 1);
        assert_eq!(inv.run(&Id, &["bob"]).await.2, "id: 'bob': no such user\n");
        assert_eq!(inv.run(&Groups, &[]).await.1, "alice\n");
        assert_eq!(inv.run(&Logname, &[]).await.1, "alice\n");
        assert_eq!(Invocation::default().run(&Logname, &[]).await.0, 1);
    }
}

//! `whoami`, `hostname`, `uname`: who and where the session is. The values are the
//! session's own (its environment and forkbox), never the host's.

use async_trait::async_trait;
use clap::Parser;

use crate::{CmdResult, Command, Context, parse_args};

/// Print the user name associated with the session (the USER variable).
#[derive(Parser, Debug)]
#[command(name = "whoami")]
struct WhoamiArgs {}

pub struct Whoami;

#[async_trait]
impl Command for Whoami {
    fn name(&self) -> &'static str {
        "whoami"
    }
    fn summary(&self) -> &'static str {
        "print the session's user name"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        if let Err(r) = parse_args::<WhoamiArgs>(ctx, self.name(), &args).await {
            return r;
        }
        match ctx.env.get("USER").filter(|u| !u.is_empty()) {
            Some(u) => {
                ctx.out(format!("{u}\n")).await?;
                Ok(0)
            }
            None => {
                ctx.warn("whoami", "cannot find name for user: USER is not set")
                    .await;
                Ok(1)
            }
        }
    }
}

/// Print the session's host name (the HOSTNAME variable, or "forkbox").
#[derive(Parser, Debug)]
#[command(name = "hostname")]
struct HostnameArgs {}

fn host(ctx: &Context) -> String {
    ctx.env
        .get("HOSTNAME")
        .filter(|h| !h.is_empty())
        .cloned()
        .unwrap_or_else(|| "forkbox".into())
}

pub struct Hostname;

#[async_trait]
impl Command for Hostname {
    fn name(&self) -> &'static str {
        "hostname"
    }
    fn summary(&self) -> &'static str {
        "print the session's host name"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        if let Err(r) = parse_args::<HostnameArgs>(ctx, self.name(), &args).await {
            return r;
        }
        ctx.out(format!("{}\n", host(ctx))).await?;
        Ok(0)
    }
}

/// Print system information. This is forkbox, not a Linux kernel: the kernel name is
/// "forkbox", the release is forkbox's version, the machine is the server's CPU
/// architecture. With no OPTION, same as -s.
#[derive(Parser, Debug)]
#[command(name = "uname")]
struct UnameArgs {
    /// Print all information.
    #[arg(short = 'a', long)]
    all: bool,
    /// Print the kernel name ("forkbox").
    #[arg(short = 's', long = "kernel-name")]
    kernel_name: bool,
    /// Print the network node host name.
    #[arg(short = 'n', long)]
    nodename: bool,
    /// Print the kernel release (forkbox's version).
    #[arg(short = 'r', long = "kernel-release")]
    release: bool,
    /// Print the kernel version.
    #[arg(short = 'v', long = "kernel-version")]
    version: bool,
    /// Print the machine hardware name.
    #[arg(short = 'm', long)]
    machine: bool,
    /// Print the operating system.
    #[arg(short = 'o', long = "operating-system")]
    os: bool,
}

pub struct Uname;

#[async_trait]
impl Command for Uname {
    fn name(&self) -> &'static str {
        "uname"
    }
    fn summary(&self) -> &'static str {
        "print system information (forkbox's)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let a: UnameArgs = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let none = !(a.kernel_name || a.nodename || a.release || a.version || a.machine || a.os);
        let mut parts = Vec::new();
        if a.all || a.kernel_name || none {
            parts.push("forkbox".to_string());
        }
        if a.all || a.nodename {
            parts.push(host(ctx));
        }
        if a.all || a.release {
            parts.push(env!("CARGO_PKG_VERSION").to_string());
        }
        if a.all || a.version {
            parts.push("forkbox userspace shell".to_string());
        }
        if a.all || a.machine {
            parts.push(std::env::consts::ARCH.to_string());
        }
        if a.all || a.os {
            parts.push("forkbox".to_string());
        }
        ctx.out(format!("{}\n", parts.join(" "))).await?;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn identity() {
        let mut inv = Invocation::default();
        assert_eq!(inv.run(&Hostname, &[]).await.1, "forkbox\n");
        assert_eq!(inv.run(&Whoami, &[]).await.0, 1);
        inv.env.insert("USER".into(), "alice".into());
        inv.env.insert("HOSTNAME".into(), "box1".into());
        assert_eq!(inv.run(&Whoami, &[]).await.1, "alice\n");
        assert_eq!(inv.run(&Hostname, &[]).await.1, "box1\n");
        assert_eq!(inv.run(&Uname, &[]).await.1, "forkbox\n");
        assert_eq!(inv.run(&Uname, &["-sn"]).await.1, "forkbox box1\n");
        assert!(
            inv.run(&Uname, &["-a"])
                .await
                .1
                .starts_with("forkbox box1 ")
        );
        assert_eq!(inv.run(&Uname, &["-x"]).await.0, 1);
        assert_eq!(inv.run(&Whoami, &["extra"]).await.0, 1);
    }
}

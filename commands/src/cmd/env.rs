//! `env`: print the environment, or run a command in a changed one through the shell's
//! launcher (builtins, native commands and tools alike).

use std::collections::BTreeMap;

use async_trait::async_trait;

use crate::{CmdResult, Command, Context};

/// GNU env's status for its own failures (bad usage), distinct from the command's.
const STATUS_ENV_FAILED: i32 = 125;

const HELP: &str = "Usage: env [OPTION]... [-] [NAME=VALUE]... [COMMAND [ARG]...]
Set each NAME to VALUE in the environment and run COMMAND.

  -i, --ignore-environment  start with an empty environment
  -0, --null           end each output line with NUL, not newline
  -u, --unset=NAME     remove variable from the environment
      --help           display this help and exit

A mere - implies -i.  If no COMMAND, print the resulting environment.
";

pub struct Env;

async fn usage(ctx: &Context, msg: &str) -> i32 {
    ctx.err(format!(
        "env: {msg}\nTry 'env --help' for more information.\n"
    ))
    .await;
    STATUS_ENV_FAILED
}

#[async_trait]
impl Command for Env {
    fn name(&self) -> &'static str {
        "env"
    }
    fn summary(&self) -> &'static str {
        "run a program in a modified environment"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut env = ctx.env.clone();
        let mut nul = false;
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            match a {
                "--help" => {
                    ctx.out(HELP).await?;
                    return Ok(0);
                }
                "-i" | "--ignore-environment" | "-" => env.clear(),
                "-0" | "--null" => nul = true,
                "--" => {
                    i += 1;
                    break;
                }
                "-u" | "--unset" => {
                    let Some(name) = args.get(i + 1) else {
                        return Ok(usage(ctx, "option requires an argument -- 'u'").await);
                    };
                    env.remove(name);
                    i += 1;
                }
                _ if a.starts_with("--unset=") => {
                    env.remove(&a["--unset=".len()..]);
                }
                _ if a.starts_with("-u") && a.len() > 2 => {
                    env.remove(&a[2..]);
                }
                _ if a.starts_with('-') && a.len() > 1 => {
                    // Bundled short flags such as -i0.
                    if a[1..].chars().all(|c| c == 'i' || c == '0') {
                        if a.contains('i') {
                            env.clear();
                        }
                        if a.contains('0') {
                            nul = true;
                        }
                    } else {
                        let bad = a.trim_start_matches('-');
                        let msg = if a.starts_with("--") {
                            format!("unrecognized option '{a}'")
                        } else {
                            format!("invalid option -- '{}'", bad.chars().next().unwrap_or('?'))
                        };
                        return Ok(usage(ctx, &msg).await);
                    }
                }
                _ => break,
            }
            i += 1;
        }
        // Names set here that the environment did not have: listed after the others, in
        // the order they were set (putenv adds them at the end), behind those a program
        // before added the same way.
        let mut last: Vec<String> = ctx
            .env_last
            .iter()
            .filter(|n| env.contains_key(n.as_str()))
            .cloned()
            .collect();
        while let Some(a) = args.get(i) {
            match a.split_once('=') {
                Some((name, value)) if !name.is_empty() => {
                    let kept = ctx.env.contains_key(name) && env.contains_key(name);
                    if !kept && !last.iter().any(|n| n == name) {
                        last.push(name.to_string());
                    }
                    env.insert(name.to_string(), value.to_string());
                    i += 1;
                }
                _ => break,
            }
        }
        if i >= args.len() {
            ctx.out_text(listing(&env, &last, if nul { '\0' } else { '\n' }))
                .await?;
            return Ok(0);
        }
        if nul {
            return Ok(usage(ctx, "cannot specify --null (-0) with command").await);
        }
        let mut child = ctx.clone();
        child.env = env;
        child.env_last = last;
        // The command is looked up in the PATH it gets, as execvp does.
        if let Some(e) = ctx.launcher.unrunnable(&child, &args[i]).await {
            let name = super::util::quote(&args[i]);
            ctx.warn("env", format!("{name}: {e}")).await;
            return Ok(crate::unrunnable_status(&e));
        }
        Ok(ctx.launcher.launch(child, args[i..].to_vec()).await)
    }
}

/// The order in which bash hands a program its environment: by the bucket each name
/// falls in in bash's table of variables (its FNV-1 hash of the name, 1024 buckets),
/// with `_` (set to the program's path) last. Names of one bucket come by name.
pub(crate) fn bash_order(env: &BTreeMap<String, String>) -> Vec<(&String, &String)> {
    /// bash's `hash_string`: 32-bit FNV-1.
    fn bucket(name: &str) -> u32 {
        let h = name.bytes().fold(2_166_136_261_u32, |h, b| {
            h.wrapping_mul(16_777_619) ^ u32::from(b)
        });
        h & 1023
    }
    let mut all: Vec<(&String, &String)> = env.iter().collect();
    all.sort_by_key(|(k, _)| (k.as_str() == "_", bucket(k)));
    all
}

/// A program's listing of its environment `env`, each `NAME=value` ended by `end`: in
/// bash's order ([`bash_order`]), with the names `last` (added by a program, see
/// [`Context::env_last`]) after it in their own order.
pub(crate) fn listing(env: &BTreeMap<String, String>, last: &[String], end: char) -> String {
    let first = bash_order(env)
        .into_iter()
        .filter(|(k, _)| !last.contains(k))
        .map(|(k, _)| k);
    let mut out = String::new();
    for k in first.chain(last) {
        if let Some(v) = env.get(k) {
            out.push_str(&format!("{k}={v}{end}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    fn inv() -> Invocation {
        let mut inv = Invocation::default();
        inv.env.insert("B".into(), "2".into());
        inv.env.insert("A".into(), "1".into());
        inv
    }

    #[tokio::test]
    async fn prints_and_edits() {
        // bash's order: `B` falls in an earlier bucket than `A`.
        assert_eq!(inv().run(&Env, &[]).await.1, "B=2\nA=1\n");
        assert_eq!(inv().run(&Env, &["-u", "A", "C=3"]).await.1, "B=2\nC=3\n");
        assert_eq!(inv().run(&Env, &["Z=9", "A=0"]).await.1, "B=2\nA=0\nZ=9\n");
        assert_eq!(inv().run(&Env, &["-i", "X=y=z"]).await.1, "X=y=z\n");
        assert_eq!(inv().run(&Env, &["-0"]).await.1, "B=2\0A=1\0");
    }

    #[tokio::test]
    async fn runs_commands_through_the_launcher() {
        let (st, out, _) = inv().run(&Env, &["-i", "Q=1", "env"]).await;
        assert_eq!((st, out.as_str()), (0, "Q=1\n"));
        let (st, out, _) = inv().run(&Env, &["echo", "hi", "-n"]).await;
        assert_eq!((st, out.as_str()), (0, "hi -n\n"));
        let (st, _, err) = inv().run(&Env, &["nosuchcmd"]).await;
        assert_eq!(
            (st, err.as_str()),
            (127, "env: 'nosuchcmd': No such file or directory\n")
        );
        assert_eq!(inv().run(&Env, &["false"]).await.0, 1);
    }

    #[tokio::test]
    async fn usage_errors() {
        let (st, _, err) = inv().run(&Env, &["-u"]).await;
        assert_eq!(st, 125);
        assert_eq!(
            err,
            "env: option requires an argument -- 'u'\nTry 'env --help' for more information.\n"
        );
        assert_eq!(inv().run(&Env, &["-x"]).await.0, 125);
    }
}

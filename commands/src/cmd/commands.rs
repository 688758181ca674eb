//! `commands`: every command the session can run, with its kind and a one-line summary,
//! as a table or as JSON, from the launcher's registry (the shell's own resolution).

use async_trait::async_trait;
use clap::Parser;

use super::util::quote;
use crate::{CmdResult, Command, CommandInfo, CommandKind, Context, parse_args};

/// List every command this session can run: shell builtins, native commands and WASI
/// tools, with a one-line summary each. KIND (builtin, native or wasi) keeps only that
/// kind. Run `NAME --help` for one command's full help.
#[derive(Parser, Debug)]
#[command(name = "commands")]
struct Args {
    /// Print a JSON array of {"name", "kind", "summary", "path"} objects.
    #[arg(long)]
    json: bool,
    /// Kinds to list: builtin, native, wasi.
    kinds: Vec<String>,
}

fn kind_name(k: CommandKind) -> &'static str {
    match k {
        CommandKind::Builtin => "builtin",
        CommandKind::Native => "native",
        CommandKind::Wasi => "wasi",
    }
}

/// `s` as a JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json(list: &[CommandInfo]) -> String {
    let mut out = String::from("[");
    for (i, c) in list.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            "\n  {{\"name\": {}, \"kind\": \"{}\", \"summary\": {}, \"path\": {}}}",
            json_str(&c.name),
            kind_name(c.kind),
            json_str(&c.summary),
            c.path.as_deref().map_or("null".to_string(), json_str)
        ));
    }
    out.push_str(if list.is_empty() { "]\n" } else { "\n]\n" });
    out
}

fn table(list: &[CommandInfo]) -> String {
    let w = list
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for c in list {
        let line = format!("{:<w$}  {:<7}  {}", c.name, kind_name(c.kind), c.summary);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub struct Commands;

#[async_trait]
impl Command for Commands {
    fn name(&self) -> &'static str {
        "commands"
    }
    fn summary(&self) -> &'static str {
        "list every command the session can run, with its kind"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let mut kinds = Vec::new();
        for k in &args.kinds {
            let kind = match k.as_str() {
                "builtin" | "builtins" => CommandKind::Builtin,
                "native" => CommandKind::Native,
                "wasi" | "WASI" => CommandKind::Wasi,
                _ => {
                    ctx.err(format!(
                        "commands: invalid kind {} (builtin, native or wasi)\nTry 'commands --help' for more information.\n",
                        quote(k)
                    ))
                    .await;
                    return Ok(2);
                }
            };
            kinds.push(kind);
        }
        let mut list = ctx.launcher.commands();
        list.sort_by(|a, b| a.name.cmp(&b.name));
        list.retain(|c| kinds.is_empty() || kinds.contains(&c.kind));
        let text = if args.json { json(&list) } else { table(&list) };
        ctx.out(text).await?;
        Ok(0)
    }
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
                Arc::new(Commands),
            ]),
            ..Invocation::default()
        }
    }

    #[tokio::test]
    async fn lists_with_kinds() {
        let (st, out, _) = inv().run(&Commands, &[]).await;
        assert_eq!(st, 0);
        assert_eq!(
            out,
            "commands  native   list every command the session can run, with its kind\n\
             true      native   do nothing, successfully\n"
        );
        let (_, out, _) = inv().run(&Commands, &["--json", "native"]).await;
        assert!(
            out.starts_with("[\n  {\"name\": \"commands\", \"kind\": \"native\""),
            "{out}"
        );
        assert!(out.ends_with("\"path\": \"/usr/bin/true\"}\n]\n"), "{out}");
        assert_eq!(inv().run(&Commands, &["wasi"]).await.1, "");
        assert_eq!(inv().run(&Commands, &["--json", "builtin"]).await.1, "[]\n");
        assert_eq!(inv().run(&Commands, &["bogus"]).await.0, 2);
        assert_eq!(json_str("a\"b\\\n"), "\"a\\\"b\\\\\\n\"");
    }

    /// `NAME --help` works for every native command: a usage text on stdout, status 0
    /// (bash's own `printf`, `[`, `test`, `true` and `false` answer as bash does; ncurses'
    /// `tput` has no `--help` and complains, with its usage text, as the real one does).
    #[tokio::test]
    async fn every_native_command_has_a_usage_text() {
        let inv = Invocation::default();
        for cmd in crate::all() {
            if matches!(
                cmd.name(),
                "printf" | "[" | "test" | "true" | "false" | "tput" | "help"
            ) {
                continue;
            }
            let (st, out, err) = inv.run(cmd.as_ref(), &["--help"]).await;
            // bzip2 writes its help to stderr, as the real one does.
            let (out, err) = if matches!(cmd.name(), "bzip2" | "bunzip2" | "bzcat") {
                (err, out)
            } else {
                (out, err)
            };
            assert_eq!((cmd.name(), st, err.as_str()), (cmd.name(), 0, ""));
            // `tree` writes "usage:" as Debian's tree does.
            assert!(
                out.to_lowercase().contains("usage:"),
                "{}: {out}",
                cmd.name()
            );
            assert!(!cmd.summary().is_empty(), "{}", cmd.name());
        }
    }
}

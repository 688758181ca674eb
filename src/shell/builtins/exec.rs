//! `exec COMMAND [ARGS]`: run the command, then end the shell with its status.
//! `exec` with only redirections makes them permanent (see `Shell::exec_redirections`).

use crate::shell::Shell;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, mut args: Vec<String>, io: &Fds) -> Exec<i32> {
    // `-c` (empty environment) and `-l` (login dash) change nothing a native command
    // sees; they are accepted and dropped (the dispatcher checked them). `-a NAME` is the
    // `$0` of a shell it starts.
    let mut skip = 0;
    let mut arg0: Option<String> = None;
    while let Some(a) = args.get(skip) {
        if a == "--" {
            skip += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        if a.ends_with('a') {
            arg0 = args.get(skip + 1).cloned();
            skip += 2;
        } else {
            skip += 1;
        }
    }
    args.drain(..skip.min(args.len()));
    if let Some(arg0) = arg0
        && matches!(args.first().map(String::as_str), Some("sh" | "bash"))
        && !sh.functions.contains_key(&args[0])
    {
        let mut argv = args;
        argv[0] = arg0;
        let status = sh.run_nested(argv, &[], io).await;
        return Err(Flow::Exit(status));
    }
    if args.is_empty() {
        // Only redirections: handled where they are known (`exec_redirections`).
        return Ok(0);
    }
    if !args[0].contains('/') && super::type_::resolve(sh, &args[0]).await.is_none() {
        // bash's wording, and a non-interactive shell ends with 127.
        super::fail(sh, io, format!("exec: {}: not found", args[0]), 127).await?;
        if sh.interactive {
            return Ok(127);
        }
        return Err(Flow::Exit(127));
    }
    if args[0].contains('/') {
        let name = &args[0];
        let path = forkbox_commands::fs::join(&sh.cwd, name);
        if sh.fs.stat(&path).await.is_ok_and(|m| m.is_dir()) {
            // bash names the directory by the full path it tried (`./` dropped, `..`
            // kept), first as the failed execution, then as `exec`'s own failure.
            let full = if name.starts_with('/') {
                name.clone()
            } else {
                let rel = name.trim_start_matches("./");
                forkbox_commands::fs::join(&sh.cwd, rel)
            };
            let prefix = sh.message_prefix();
            let msg = format!(
                "{full}: Is a directory\n{prefix}exec: {full}: cannot execute: Is a directory"
            );
            super::fail(sh, io, msg, 126).await?;
            if sh.interactive {
                return Ok(126);
            }
            return Err(Flow::Exit(126));
        }
    }
    let status = sh.run_command(args, Vec::new(), io).await?;
    Err(Flow::Exit(status))
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::{run, run_on, shell};

    #[tokio::test]
    async fn exec_runs_the_command_and_ends_the_shell() {
        let expected = (0, "hi\n".to_string(), String::new());
        assert_eq!(run("exec echo hi; echo no").await, expected);
    }

    #[tokio::test]
    async fn exec_status_is_the_commands() {
        let mut sh = shell();
        let expected = (1, String::new(), String::new());
        assert_eq!(run_on(&mut sh, "exec false; echo no").await, expected);
        assert_eq!(sh.exit_requested(), Some(1));
    }
}

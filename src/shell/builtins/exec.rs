//! `exec COMMAND [ARGS]`: run the command, then end the shell with its status.
//! `exec` with only redirections makes them permanent (see `Shell::exec_redirections`).

use crate::shell::Shell;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, mut args: Vec<String>, io: &Fds) -> Exec<i32> {
    // `-l` (login dash) changes nothing a native command sees; `-c` runs the command with
    // an empty environment; `-a NAME` is the `$0` of a shell it starts. The dispatcher
    // checked the letters.
    let mut skip = 0;
    let mut arg0: Option<String> = None;
    let (mut clear_env, mut login) = (false, false);
    while let Some(a) = args.get(skip) {
        if a == "--" {
            skip += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        let mut letters = a[1..].chars();
        while let Some(c) = letters.next() {
            match c {
                'c' => clear_env = true,
                'l' => login = true,
                'a' => {
                    let inline = letters.as_str();
                    if inline.is_empty() {
                        skip += 1;
                        arg0 = args.get(skip).cloned();
                    } else {
                        arg0 = Some(inline.to_string());
                    }
                    break;
                }
                _ => {}
            }
        }
        skip += 1;
    }
    args.drain(..skip.min(args.len()));
    // `-l`: the `$0` a shell gets starts with a dash, as a login shell's does.
    if login && let Some(name) = arg0.clone().or_else(|| args.first().cloned()) {
        arg0 = Some(format!("-{name}"));
    }
    if args.is_empty() {
        // Only redirections: handled where they are known (`exec_redirections`).
        return Ok(0);
    }
    if !args[0].contains('/') && !runs_something(sh, &args[0]).await {
        // bash's wording (functions are not run by exec), and a non-interactive shell
        // ends with 127.
        let msg = format!("exec: {}: not found", args[0]);
        return end_with(sh, io, msg, 127).await;
    }
    if args[0].contains('/')
        && let Some((msg, status)) = unrunnable_path(sh, &args[0]).await
    {
        return end_with(sh, io, msg, status).await;
    }
    if clear_env {
        // The shell ends with the command: its variables need not be exported any more.
        sh.unexport_all();
    }
    if let Some(arg0) = arg0
        && matches!(args.first().map(String::as_str), Some("sh" | "bash"))
    {
        let mut argv = args;
        argv[0] = arg0;
        let status = sh.run_nested(argv, &[], io).await;
        return Err(Flow::Exit(status));
    }
    // Functions are not run by exec: builtins and commands resolve as for `command`.
    let status = sh
        .run_external(&args[0], args[1..].to_vec(), &[], io)
        .await?;
    Err(Flow::Exit(status))
}

/// Whether `name` (without a slash) is a builtin or a command exec can run: aliases,
/// keywords and functions are not.
async fn runs_something(sh: &Shell, name: &str) -> bool {
    match super::type_::describe(sh, name) {
        Some(("builtin" | "file", _)) => return true,
        Some(("function" | "alias" | "keyword", _)) => {}
        _ => return super::type_::resolve(sh, name).await.is_some(),
    }
    // Hidden by an alias, keyword or function: a command of that name is still run.
    let path = sh.get_str("PATH").unwrap_or_default();
    sh.registry.resolve(name).is_some()
        || super::type_::fork_file(sh, name, &path)
            .await
            .is_some_and(|(_, x)| x)
}

/// Why the file `name` (a path) cannot be run, as bash words it for exec (with the full
/// path it tried, `./` dropped): the message and status, or `None` when it can be run.
async fn unrunnable_path(sh: &Shell, name: &str) -> Option<(String, i32)> {
    let full = if name.starts_with('/') {
        name.to_string()
    } else {
        forkbox_commands::fs::join(&sh.cwd, name.trim_start_matches("./"))
    };
    let path = forkbox_commands::fs::join(&sh.cwd, name);
    let prefix = sh.message_prefix();
    match sh.fs.stat(&path).await {
        Err(_) if sh.registry.resolve(name).is_some() => None,
        Err(_) => Some((format!("{full}: No such file or directory"), 127)),
        Ok(m) if m.is_dir() => Some((
            format!("{full}: Is a directory\n{prefix}exec: {full}: cannot execute: Is a directory"),
            126,
        )),
        Ok(m) if m.mode & 0o111 == 0 => Some((
            format!(
                "{full}: Permission denied\n{prefix}exec: {full}: cannot execute: Permission denied"
            ),
            126,
        )),
        Ok(_) => None,
    }
}

/// Reports exec's failure; a non-interactive shell ends with `status`.
async fn end_with(sh: &Shell, io: &Fds, msg: String, status: i32) -> Exec<i32> {
    super::fail(sh, io, msg, status).await?;
    if sh.interactive {
        return Ok(status);
    }
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
    async fn exec_does_not_run_functions() {
        let script = "f() { echo fn; }; (exec f); echo st=$?";
        let expected = (
            0,
            "st=127\n".to_string(),
            "bash: line 1: exec: f: not found\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn exec_c_empties_the_environment() {
        let script = "export V=1; (exec -c bash -c 'echo \"[${V-unset}]\"')";
        let expected = (0, "[unset]\n".to_string(), String::new());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn exec_status_is_the_commands() {
        let mut sh = shell();
        let expected = (1, String::new(), String::new());
        assert_eq!(run_on(&mut sh, "exec false; echo no").await, expected);
        assert_eq!(sh.exit_requested(), Some(1));
    }
}

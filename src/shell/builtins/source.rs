//! `source FILE [ARGS]` / `. FILE [ARGS]`: run a file's commands in the current shell.

use forkbox_commands::fs;

use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;
use crate::shell::{MAX_SCRIPT, Shell};

pub(crate) async fn run(
    sh: &mut Shell,
    name: String,
    mut args: Vec<String>,
    io: &Fds,
) -> Exec<i32> {
    if args.first().is_some_and(|a| a == "--") {
        args.remove(0);
    }
    let Some(file) = args.first() else {
        return super::fail(
            sh,
            io,
            format!(
                "{name}: filename argument required\n{name}: usage: {name} filename [arguments]"
            ),
            2,
        )
        .await;
    };
    if file == "/dev/stdin" || file.starts_with("/dev/fd/") {
        // A descriptor of the shell (`. /dev/stdin <<< 'cmds'`), read to its end.
        let input = match sh.open_read(file, io).await {
            Ok(i) => i,
            Err(e) => return sh.fail(e, io).await,
        };
        let bytes = match input
            .read_to_end(usize::try_from(MAX_SCRIPT).unwrap_or(usize::MAX))
            .await
        {
            Ok(b) => b,
            Err(e) => return super::fail(sh, io, format!("{file}: {e}"), 1).await,
        };
        let text = forkbox_commands::bytetext::decode(bytes);
        return run_text(sh, &name, file.clone(), &text, args, io).await;
    }
    let files = sh.fs_for(io);
    let path = match find(sh, files.as_ref(), file).await {
        Some(p) => p,
        // POSIX mode says where it looked: the search of PATH found nothing.
        None if sh.opts.posix && !file.contains('/') && sh.shopts.on("sourcepath") => {
            return unreadable(sh, io, format!("{name}: {file}: file not found")).await;
        }
        None => {
            let msg = format!("{file}: {}", forkbox_commands::FsError::NotFound);
            return unreadable(sh, io, msg).await;
        }
    };
    if files.stat(&path).await.is_ok_and(|m| m.is_dir()) {
        return unreadable(sh, io, format!("{name}: {file}: is a directory")).await;
    }
    let bytes = match fs::read_all(files.as_ref(), &path, MAX_SCRIPT).await {
        Ok(b) => b,
        Err(e) => return unreadable(sh, io, format!("{file}: {e}")).await,
    };
    let text = forkbox_commands::bytetext::decode(bytes);
    let file = file.clone();
    run_text(sh, &name, file, &text, args, io).await
}

/// Runs the text of sourced `file` with `args[1..]` as its positional parameters;
/// `name` is how `source` was called (`.` or `source`).
async fn run_text(
    sh: &mut Shell,
    name: &str,
    file: String,
    text: &str,
    args: Vec<String>,
    io: &Fds,
) -> Exec<i32> {
    let changes = sh.positional_changes;
    // Under `extdebug` its arguments are a `BASH_ARGV` frame (taken before they replace
    // the positional parameters); without any, bash keeps the file's name as written.
    let frame_args = if args.len() > 1 {
        &args[1..]
    } else {
        &args[..]
    };
    let argv = sh.frame_argv(frame_args);
    let saved = if args.len() > 1 {
        Some(std::mem::replace(&mut sh.positional, args[1..].to_vec()))
    } else {
        None
    };
    sh.source_depth += 1;
    // A sourced file is a frame of its own (`FUNCNAME` shows `source`), read from its line 1.
    sh.funcnames.push("source".to_string());
    sh.lines.frames.push(crate::shell::lines::Frame {
        call_line: sh.lines.lineno,
        source: file.clone(),
        argv,
    });
    let saved_lines = (
        std::mem::replace(&mut sh.lines.line_base, 0),
        std::mem::replace(&mut sh.lines.source, file.clone()),
        sh.lines.lineno,
    );
    let mut r = sh.exec_nested_text(name, text, io).await;
    // The RETURN trap also runs as a sourced file ends.
    if sh.traps.contains_key(&crate::shell::jobs::TRAP_RETURN)
        && matches!(r, Ok(_) | Err(Flow::Return(_)))
    {
        // The handler sees `$?` of the last command before a `return`.
        if let Ok(s) = r {
            sh.last_status = s;
        }
        if let Err(fl) = sh.run_return_trap(io).await {
            r = Err(fl);
        }
    }
    (sh.lines.line_base, sh.lines.source, sh.lines.lineno) = saved_lines;
    sh.lines.frames.pop();
    sh.funcnames.pop();
    sh.source_depth -= 1;
    // The caller's parameters come back unless the file set its own (bash keeps those).
    if let Some(p) = saved.filter(|_| sh.positional_changes == changes) {
        sh.positional = p;
    }
    match r {
        Err(Flow::Return(s)) => Ok(s),
        other => other,
    }
}

/// A file `source` cannot read: the message, status 1. `.` is a special builtin, so in
/// POSIX mode this ends a script (a subshell, the script itself), as in bash.
async fn unreadable(sh: &mut Shell, io: &Fds, msg: String) -> Exec<i32> {
    sh.special_failed = true;
    super::fail(sh, io, msg, 1).await
}

/// The file `source NAME` reads: a name with a slash as it is; otherwise the first regular
/// file of that name in `PATH` (with `sourcepath` on, as by default), then, outside POSIX
/// mode, the working directory. `None` when there is none.
async fn find(sh: &Shell, files: &dyn fs::FileSystem, name: &str) -> Option<String> {
    let here = fs::join(&sh.cwd, name);
    if name.contains('/') {
        return Some(here);
    }
    if sh.shopts.on("sourcepath") {
        let path = sh.get_str("PATH").unwrap_or_default();
        for dir in path.split(':') {
            let dir = if dir.is_empty() { "." } else { dir };
            let candidate = fs::join(&fs::join(&sh.cwd, dir), name);
            if files.stat(&candidate).await.is_ok_and(|m| m.is_file()) {
                return Some(candidate);
            }
        }
    }
    if sh.opts.posix {
        return None;
    }
    files.stat(&here).await.is_ok().then_some(here)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn source_runs_in_current_shell() {
        let script = "echo 'v=1' > /s; . /s; echo $v";
        let expected = (0, "1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn source_with_args() {
        let script = "echo 'echo $# $1' > /s; set -- q; source /s a b; echo $1";
        let expected = (0, "2 a\nq\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn source_missing_file() {
        let script = "source /nope; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: /nope: No such file or directory\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn source_status_is_last() {
        let script = "echo false > /s; . /s; echo $?";
        let expected = (0, "1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

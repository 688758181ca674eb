//! Small builtins: `builtin`, `enable`, `times`, `logout`, `hash`.

use forkbox_commands::CommandKind;

use crate::shell::Shell;
use crate::shell::error::ShellError;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// `builtin name [arg ...]`: run the shell builtin `name`, bypassing functions.
pub(crate) async fn builtin(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let Some(name) = args.first().cloned() else {
        return Ok(0);
    };
    let is_builtin = sh
        .registry
        .resolve(&name)
        .is_some_and(|e| e.kind == CommandKind::Builtin && !name.contains('/'));
    if !is_builtin {
        if crate::registry::BASH_BUILTIN_COMMANDS.contains(&name.as_str()) {
            // bash's builtin that forkbox runs as its native command (`test`, `printf`).
            return sh.run_external(&name, args[1..].to_vec(), &[], io).await;
        }
        return super::fail(sh, io, format!("builtin: {name}: not a shell builtin"), 1).await;
    }
    super::run(sh, &name, args[1..].to_vec(), io).await
}

/// `hash [-lrt] [name ...]`: bash's table of command paths. Commands are never looked up
/// in `PATH` (the registry resolves them), so the table stays empty: a name that resolves
/// is fine, one that does not is `not found`, and the listing says the table is empty.
pub(crate) async fn hash(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut rest: &[String] = &args;
    let (mut list, mut show) = (false, false);
    while let Some(a) = rest.first().filter(|a| a.starts_with('-') && a.len() > 1) {
        if a == "--" {
            rest = &rest[1..];
            break;
        }
        list |= a.contains('l');
        show |= a.contains('t');
        if a.contains('r') && rest.len() == 1 {
            return Ok(0);
        }
        rest = &rest[1..];
    }
    if rest.is_empty() {
        if !list {
            let _ = io.stdout().write_str("hash: hash table empty\n").await;
        }
        return Ok(0);
    }
    let mut status = 0;
    for n in rest {
        if show || super::type_::describe(sh, n).is_none() {
            super::fail(sh, io, format!("hash: {n}: not found"), 1).await?;
            status = 1;
        }
    }
    Ok(status)
}

/// `enable [-n] [name ...]`: list builtins, or check that `name` is one. Disabling one
/// (`-n`) is not supported: every builtin stays enabled.
pub(crate) async fn enable(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let names: Vec<&(&str, &str)> = crate::registry::BUILTINS
        .iter()
        .filter(|(_, s)| *s != "not supported")
        .collect();
    let mut rest: &[String] = &args;
    let mut listing_disabled = false;
    while let Some(a) = rest.first().filter(|a| a.starts_with('-') && a.len() > 1) {
        match a.as_str() {
            "-n" => listing_disabled = true,
            "-a" | "-p" | "-s" => {}
            "--" => {
                rest = &rest[1..];
                break;
            }
            _ => {
                let msg = format!(
                    "enable: {a}: invalid option\nenable: usage: enable [-a] [-dnps] [-f filename] [name ...]"
                );
                return super::fail(sh, io, msg, 2).await;
            }
        }
        rest = &rest[1..];
    }
    if rest.is_empty() {
        if listing_disabled {
            return Ok(0);
        }
        let out: String = names.iter().map(|(n, _)| format!("enable {n}\n")).collect();
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
    }
    if listing_disabled {
        return sh
            .fail(ShellError::Unsupported("enable -n".into()), io)
            .await;
    }
    let mut status = 0;
    for n in rest {
        if !names.iter().any(|(b, _)| b == n) {
            super::fail(sh, io, format!("enable: {n}: not a shell builtin"), 1).await?;
            status = 1;
        }
    }
    Ok(status)
}

/// `times`: user and system times of the shell and its children. forkbox runs no
/// processes, so they are reported as bash reports an idle shell.
pub(crate) async fn times(_sh: &mut Shell, _args: Vec<String>, io: &Fds) -> Exec<i32> {
    let _ = io
        .stdout()
        .write_str("0m0.000s 0m0.000s\n0m0.000s 0m0.000s\n")
        .await;
    Ok(0)
}

/// `logout`: only a login shell may; forkbox's shells started by scripts are not.
pub(crate) async fn logout(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if sh.interactive {
        return super::exit::run(sh, args, io).await;
    }
    super::fail(sh, io, "logout: not login shell: use `exit'".into(), 1).await
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn builtin_runs_builtin() {
        let script = "echo() { printf 'fn\\n'; }; builtin echo real";
        let expected = (0, "real\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn builtin_not_a_builtin() {
        let script = "builtin ls; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "forkbox: builtin: ls: not a shell builtin\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn builtin_no_args() {
        let script = "builtin; echo $?";
        let expected = (0, "0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn enable_lists() {
        let script = "enable | grep -E '^enable (cd|echo)$'";
        let expected = (0, "enable cd\nenable echo\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn logout_not_login_shell() {
        let script = "logout; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "forkbox: logout: not login shell: use `exit'\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn times_prints_two_lines() {
        let script = "times | wc -l";
        let expected = (0, "2\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

//! Small builtins: `builtin`, `enable`, `times`, `logout`, `hash`.

use forkbox_commands::CommandKind;

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// `builtin name [arg ...]`: run the shell builtin `name`, bypassing functions.
pub(crate) async fn builtin(sh: &mut Shell, mut args: Vec<String>, io: &Fds) -> Exec<i32> {
    // `--` ends builtin's (empty) set of options.
    if args.first().is_some_and(|a| a == "--") {
        args.remove(0);
    }
    let Some(name) = args.first().cloned() else {
        return Ok(0);
    };
    let is_builtin = sh
        .registry
        .resolve(&name)
        .is_some_and(|e| e.kind == CommandKind::Builtin && !name.contains('/'))
        && !sh.disabled_builtins.contains(&name);
    if !is_builtin {
        if sh.disabled_builtins.contains(&name) {
            return super::fail(sh, io, format!("builtin: {name}: not a shell builtin"), 1).await;
        }
        if crate::registry::BASH_BUILTIN_COMMANDS.contains(&name.as_str()) {
            // bash's builtin that forkbox runs as its native command (`test`, `printf`).
            return sh.run_external(&name, args[1..].to_vec(), &[], io).await;
        }
        return super::fail(sh, io, format!("builtin: {name}: not a shell builtin"), 1).await;
    }
    super::run(sh, &name, args[1..].to_vec(), io).await
}

/// `hash [-lrt] [-p PATH] [-d] [name ...]`: bash's table of the paths of the commands
/// run by name (see `Shell::hashed`): listed with their hits, added by name, named with
/// `-t`, forgotten with `-d`/`-r`, set with `-p`.
pub(crate) async fn hash(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if !sh.opts.hashall {
        // `set +h`: whatever was asked, even a bad option.
        return super::fail(sh, io, "hash: hashing disabled".into(), 1).await;
    }
    let mut rest: &[String] = &args;
    let (mut list, mut show, mut delete, mut clear) = (false, false, false, false);
    let mut set_path: Option<String> = None;
    while let Some(a) = rest.first().filter(|a| a.starts_with('-') && a.len() > 1) {
        if a == "--" {
            rest = &rest[1..];
            break;
        }
        let mut chars = a[1..].chars();
        while let Some(c) = chars.next() {
            match c {
                'l' => list = true,
                't' => show = true,
                'd' => delete = true,
                'r' => clear = true,
                'p' => {
                    let inline: String = chars.by_ref().collect();
                    if inline.is_empty() {
                        rest = &rest[1..];
                        let Some(p) = rest.first() else {
                            super::fail(sh, io, "hash: -p: option requires an argument".into(), 2)
                                .await?;
                            return super::usage(io, "hash").await;
                        };
                        set_path = Some(p.clone());
                    } else {
                        set_path = Some(inline);
                    }
                }
                _ => return super::invalid_option(sh, io, "hash", &format!("-{c}")).await,
            }
        }
        rest = &rest[1..];
    }
    if clear {
        sh.hashed.clear();
    }
    if rest.is_empty() && (delete || show) {
        let opt = if delete { "-d" } else { "-t" };
        let msg = format!("hash: {opt}: option requires an argument");
        return super::fail(sh, io, msg, 1).await;
    }
    if rest.is_empty() {
        if clear {
            return Ok(0);
        }
        if sh.hashed.is_empty() {
            if !list {
                let _ = io.stdout().write_str("hash: hash table empty\n").await;
            }
            return Ok(0);
        }
        let rows = listing_order(&sh.hashed);
        let out: String = if list {
            rows.iter()
                .map(|(n, p, _)| format!("builtin hash -p {p} {n}\n"))
                .collect()
        } else {
            let rows: String = rows
                .iter()
                .map(|(_, p, hits)| format!("{hits:4}\t{p}\n"))
                .collect();
            format!("hits\tcommand\n{rows}")
        };
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
    }
    let mut status = 0;
    let mut out = String::new();
    for n in rest {
        if let Some(p) = &set_path {
            remember(&mut sh.hashed, n, p.clone());
        } else if delete && !show {
            // A name not in a table that holds others is an error (bash says nothing
            // when the table is empty); with `-t` too, bash only looks the name up.
            let before = sh.hashed.len();
            sh.hashed.retain(|(h, _, _)| h != n);
            if before > 0 && sh.hashed.len() == before {
                status = super::fail(sh, io, format!("hash: {n}: not found"), 1).await?;
            }
        } else if show {
            // Looking a name up counts as a use of it, as bash counts.
            let found = sh.hashed.iter_mut().find(|(h, _, _)| h == n).map(|row| {
                row.2 = row.2.saturating_add(1);
                row.clone()
            });
            match found {
                Some((_, p, _)) if list => out.push_str(&format!("builtin hash -p {p} {n}\n")),
                Some((_, p, _)) if rest.len() > 1 => out.push_str(&format!("{n}\t{p}\n")),
                Some((_, p, _)) => out.push_str(&format!("{p}\n")),
                None => {
                    let _ = io.stdout().write_str(&std::mem::take(&mut out)).await;
                    status = super::fail(sh, io, format!("hash: {n}: not found"), 1).await?;
                }
            }
        } else if n.contains('/') {
            // A path is run as it is, never looked up: nothing to remember.
        } else {
            match super::type_::resolve(sh, n).await {
                // Builtins and functions are not looked up in PATH: nothing to remember.
                Some((kind, _)) if kind != "file" => {}
                Some((_, p)) => remember(&mut sh.hashed, n, p),
                None => {
                    status = super::fail(sh, io, format!("hash: {n}: not found"), 1).await?;
                }
            }
        }
    }
    let _ = io.stdout().write_str(&out).await;
    Ok(status)
}

/// Sets the path of `name` in the table, where the name already is if it is there (so
/// its place in the listing stays), with no hits.
fn remember(hashed: &mut Vec<(String, String, u32)>, name: &str, path: String) {
    match hashed.iter_mut().find(|(h, _, _)| h == name) {
        Some(row) => *row = (name.to_string(), path, 0),
        None => hashed.push((name.to_string(), path, 0)),
    }
}

/// The table's rows in the order bash lists them: by bucket of its 256-bucket hash table
/// (the FNV-1 hash of the name), the newest first within a bucket (each is pushed on
/// the front of its chain).
fn listing_order(hashed: &[(String, String, u32)]) -> Vec<&(String, String, u32)> {
    let bucket = |name: &str| {
        name.bytes().fold(2_166_136_261u32, |h, b| {
            h.wrapping_mul(16_777_619) ^ u32::from(b)
        }) & 255
    };
    let mut rows: Vec<(usize, &(String, String, u32))> = hashed.iter().enumerate().collect();
    rows.sort_by_key(|(i, (n, _, _))| (bucket(n), std::cmp::Reverse(*i)));
    rows.into_iter().map(|(_, row)| row).collect()
}

/// `enable [-a] [-n] [-ps] [name ...]`: lists bash's builtins (those `-n` disabled
/// separately), disables (`-n`) or enables them. A disabled builtin is looked up as a
/// command: the file of that name runs if there is one (`echo`, `test`), otherwise the
/// name is not found.
pub(crate) async fn enable(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut rest: &[String] = &args;
    let (mut disable, mut all, mut print, mut special) = (false, false, false, false);
    // `-f FILE` (load builtins from a shared object) and `-d` (delete loaded ones): no
    // builtin is ever loaded, so both fail as bash's do when nothing can be.
    let (mut load, mut delete) = (None::<String>, false);
    while let Some(a) = rest.first().filter(|a| a.starts_with('-') && a.len() > 1) {
        if a == "--" {
            rest = &rest[1..];
            break;
        }
        let mut letters = a[1..].chars();
        while let Some(c) = letters.next() {
            match c {
                'n' => disable = true,
                'a' => all = true,
                'p' => print = true,
                's' => special = true,
                'd' => delete = true,
                'f' => {
                    // The dispatcher checked that a file name follows.
                    let inline = letters.as_str();
                    if inline.is_empty() {
                        rest = &rest[1..];
                        load = rest.first().cloned();
                    } else {
                        load = Some(inline.to_string());
                    }
                    break;
                }
                _ => {
                    let msg = format!(
                        "enable: -{c}: invalid option\nenable: usage: enable [-a] [-dnps] [-f filename] [name ...]"
                    );
                    return super::fail(sh, io, msg, 2).await;
                }
            }
        }
        rest = &rest[1..];
    }
    // `-p` lists, whatever names follow; `-s` only the POSIX special builtins.
    if rest.is_empty() || print {
        let out: String = crate::registry::BASH_BUILTIN_NAMES
            .iter()
            .filter(|n| !special || crate::shell::exec::is_special_builtin(n))
            .filter_map(|n| {
                let off = sh.disabled_builtins.contains(*n);
                match (all, disable, off) {
                    (true, _, true) | (false, true, true) => Some(format!("enable -n {n}\n")),
                    (true, _, false) | (false, false, false) => Some(format!("enable {n}\n")),
                    _ => None,
                }
            })
            .collect();
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
    }
    if let Some(file) = load {
        let path = forkbox_commands::fs::join(&sh.cwd, &file);
        let why = match sh.fs.stat(&path).await {
            Ok(m) if m.len < 64 => "file too short",
            Ok(_) => "invalid ELF header",
            Err(_) => "cannot open shared object file: No such file or directory",
        };
        let msg = format!("enable: cannot open shared object {file}: {file}: {why}");
        return super::fail(sh, io, msg, 1).await;
    }
    let mut status = 0;
    for n in rest {
        if delete {
            let why = if crate::registry::BASH_BUILTIN_NAMES.contains(&n.as_str()) {
                "not dynamically loaded"
            } else {
                "not a shell builtin"
            };
            status = super::fail(sh, io, format!("enable: {n}: {why}"), 1).await?;
        } else if !crate::registry::BASH_BUILTIN_NAMES.contains(&n.as_str()) {
            super::fail(sh, io, format!("enable: {n}: not a shell builtin"), 1).await?;
            status = 1;
        } else if disable {
            sh.disabled_builtins.insert(n.clone());
        } else {
            sh.disabled_builtins.remove(n);
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
            "bash: line 1: builtin: ls: not a shell builtin\n".to_string(),
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
            "bash: line 1: logout: not login shell: use `exit'\n".to_string(),
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

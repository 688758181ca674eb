//! `pushd`, `popd` and `dirs`: the directory stack.
//!
//! The stack is the working directory followed by [`Shell::dirstack`] (most recent
//! first). `DIRSTACK` is refreshed as an array whenever one of these builtins runs.

use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;
use crate::shell::{Shell, Value};

const PUSHD_USAGE: &str = "pushd: usage: pushd [-n] [+N | -N | dir]";
const POPD_USAGE: &str = "popd: usage: popd [-n] [+N | -N]";
const DIRS_USAGE: &str = "dirs: usage: dirs [-clpv] [+N] [-N]";

/// The whole stack: the working directory first.
/// The whole stack, the current directory first (`dirs -l`'s order; `~N` counts in it).
pub(crate) fn stack(sh: &Shell) -> Vec<String> {
    std::iter::once(sh.logical_cwd())
        .chain(sh.dirstack.iter().cloned())
        .collect()
}

fn refresh(sh: &mut Shell) {
    let arr = stack(sh)
        .into_iter()
        .enumerate()
        .map(|(i, d)| (i as i64, d))
        .collect();
    let _ = sh.set_value("DIRSTACK", Value::Array(arr));
}

/// Takes in what scripts assigned to `DIRSTACK`'s elements: that changes the
/// directories already on the stack (only `pushd` and `popd` add and remove them).
fn adopt(sh: &mut Shell) {
    let Some(Value::Array(arr)) = sh.vars.get("DIRSTACK").map(|v| &v.value) else {
        return;
    };
    for (i, d) in sh.dirstack.iter_mut().enumerate() {
        if let Some(v) = arr.get(&(i as i64 + 1)) {
            d.clone_from(v);
        }
    }
}

/// `+N` / `-N` as an index into a stack of `len` entries; `Err` when it is no number.
fn index(arg: &str, len: usize) -> Result<Option<usize>, ()> {
    let (from_end, digits) = match arg.split_at(1) {
        ("+", d) => (false, d),
        ("-", d) => (true, d),
        _ => return Err(()),
    };
    let n: usize = digits.parse().map_err(|_| ())?;
    if n >= len {
        return Ok(None);
    }
    Ok(Some(if from_end { len - 1 - n } else { n }))
}

fn is_index(arg: &str) -> bool {
    (arg.starts_with('+') || arg.starts_with('-'))
        && arg.len() > 1
        && arg[1..].chars().all(|c| c.is_ascii_digit())
}

/// `dirs` output of the whole stack, `~` for `$HOME` unless `long`.
fn listing(sh: &Shell, long: bool) -> String {
    let home = sh.get_str("HOME").unwrap_or_default();
    let shown: Vec<String> = stack(sh)
        .iter()
        .map(|d| if long { d.clone() } else { tilde(d, &home) })
        .collect();
    format!("{}\n", shown.join(" "))
}

fn tilde(path: &str, home: &str) -> String {
    if !home.is_empty() && home != "/" {
        if path == home {
            return "~".into();
        }
        if let Some(rest) = path.strip_prefix(home)
            && rest.starts_with('/')
        {
            return format!("~{rest}");
        }
    }
    path.to_string()
}

/// Changes to `dir` as `cd` would, reporting failures as `NAME: …`.
async fn go(sh: &mut Shell, io: &Fds, name: &str, dir: &str) -> Result<(), i32> {
    match super::cd::chdir(sh, dir, false).await {
        Ok(readonly) if readonly.is_empty() => Ok(()),
        Ok(readonly) => Err(super::cd::report_readonly(sh, io, &readonly).await),
        Err(msg) => {
            let _ = super::fail(sh, io, format!("{name}: {msg}"), 1).await;
            Err(1)
        }
    }
}

pub(crate) async fn pushd(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    adopt(sh);
    let mut no_cd = false;
    let mut rest = Vec::new();
    for a in &args {
        if a == "-n" {
            no_cd = true;
        } else if a.starts_with('-') && a.len() > 1 && !is_index(a) && a != "--" {
            let msg = format!("pushd: {a}: invalid number\n{PUSHD_USAGE}");
            return super::fail(sh, io, msg, 2).await;
        } else if a != "--" {
            rest.push(a.clone());
        }
    }
    if rest.len() > 1 {
        return super::fail(sh, io, "pushd: too many arguments".into(), 1).await;
    }
    match rest.first() {
        None => {
            if sh.dirstack.is_empty() {
                return super::fail(sh, io, "pushd: no other directory".into(), 1).await;
            }
            let top = sh.dirstack[0].clone();
            let old = sh.logical_cwd();
            if let Err(s) = go(sh, io, "pushd", &top).await {
                return Ok(s);
            }
            sh.dirstack[0] = old;
        }
        Some(a) if is_index(a) => {
            let mut all = stack(sh);
            if sh.dirstack.is_empty() {
                return super::fail(sh, io, "pushd: directory stack empty".into(), 1).await;
            }
            let Ok(Some(n)) = index(a, all.len()) else {
                let msg = format!("pushd: {a}: directory stack index out of range");
                return super::fail(sh, io, msg, 1).await;
            };
            all.rotate_left(n);
            if no_cd {
                // The stack turns but the working directory stays: it takes the place of
                // the new top, and nothing is printed (as bash does).
                sh.dirstack = all[1..].to_vec();
                refresh(sh);
                return Ok(0);
            }
            if let Err(s) = go(sh, io, "pushd", &all[0]).await {
                return Ok(s);
            }
            sh.dirstack = all[1..].to_vec();
        }
        Some(dir) => {
            if no_cd {
                sh.dirstack.insert(0, dir.clone());
            } else {
                let old = sh.logical_cwd();
                if let Err(s) = go(sh, io, "pushd", dir).await {
                    return Ok(s);
                }
                sh.dirstack.insert(0, old);
            }
        }
    }
    refresh(sh);
    let out = listing(sh, false);
    let _ = io.stdout().write_str(&out).await;
    Ok(0)
}

pub(crate) async fn popd(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    adopt(sh);
    let mut no_cd = false;
    let mut which: Option<String> = None;
    for a in &args {
        if a == "-n" {
            no_cd = true;
        } else if is_index(a) {
            which = Some(a.clone());
        } else if a.starts_with(['-', '+']) && a != "--" {
            let msg = format!("popd: {a}: invalid number\n{POPD_USAGE}");
            return super::fail(sh, io, msg, 2).await;
        } else if a != "--" {
            let msg = format!("popd: {a}: invalid argument\n{POPD_USAGE}");
            return super::fail(sh, io, msg, 2).await;
        }
    }
    if sh.dirstack.is_empty() {
        return super::fail(sh, io, "popd: directory stack empty".into(), 1).await;
    }
    let all = stack(sh);
    let n = match &which {
        None => 0,
        Some(a) => match index(a, all.len()) {
            Ok(Some(n)) => n,
            _ => {
                let msg = format!("popd: {a}: directory stack index out of range");
                return super::fail(sh, io, msg, 1).await;
            }
        },
    };
    if n == 0 && !no_cd {
        let next = sh.dirstack[0].clone();
        if let Err(s) = go(sh, io, "popd", &next).await {
            return Ok(s);
        }
        sh.dirstack.remove(0);
    } else {
        // `-n` without an index removes the entry after the working directory.
        sh.dirstack.remove(n.max(1) - 1);
    }
    refresh(sh);
    let out = listing(sh, false);
    let _ = io.stdout().write_str(&out).await;
    Ok(0)
}

pub(crate) async fn dirs(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    adopt(sh);
    let (mut clear, mut long, mut lines, mut numbered) = (false, false, false, false);
    let mut which: Option<String> = None;
    for a in &args {
        if a == "--" {
            // bash stops reading its arguments there.
            break;
        }
        if is_index(a) {
            which = Some(a.clone());
            continue;
        }
        // Each option is a word of its own (`-lv` is no option of bash's `dirs`).
        match a.as_str() {
            "-c" => clear = true,
            "-l" => long = true,
            "-p" => lines = true,
            "-v" => (lines, numbered) = (true, true),
            _ => {
                // A word that is neither an option nor an index is an `invalid option`.
                let what = if a.starts_with(['-', '+']) {
                    "invalid number"
                } else {
                    "invalid option"
                };
                let msg = format!("dirs: {a}: {what}\n{DIRS_USAGE}");
                return super::fail(sh, io, msg, 2).await;
            }
        }
    }
    if clear {
        sh.dirstack.clear();
        refresh(sh);
        return Ok(0);
    }
    refresh(sh);
    let home = sh.get_str("HOME").unwrap_or_default();
    let all: Vec<String> = stack(sh)
        .iter()
        .map(|d| if long { d.clone() } else { tilde(d, &home) })
        .collect();
    let out = if let Some(a) = which {
        match index(&a, all.len()) {
            Ok(Some(n)) if numbered => format!("{n:2}  {}\n", all[n]),
            Ok(Some(n)) => format!("{}\n", all[n]),
            _ => {
                let msg = format!("dirs: {}: directory stack index out of range", &a[1..]);
                return super::fail(sh, io, msg, 1).await;
            }
        }
    } else if numbered {
        all.iter()
            .enumerate()
            .map(|(i, d)| format!("{i:2}  {d}\n"))
            .collect()
    } else if lines {
        all.iter().map(|d| format!("{d}\n")).collect()
    } else {
        format!("{}\n", all.join(" "))
    };
    let _ = io.stdout().write_str(&out).await;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn pushd_popd_dirs() {
        let script = "mkdir /a /b; cd /; pushd /a; pushd /b; dirs; popd; dirs; popd; pwd";
        let expected = (
            0,
            "/a /\n/b /a /\n/b /a /\n/a /\n/a /\n/\n/\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn popd_empty_stack() {
        let script = "popd; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: popd: directory stack empty\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn pushd_no_other_dir() {
        let script = "pushd; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: pushd: no other directory\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn pushd_missing_dir() {
        let script = "pushd /nope; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: pushd: /nope: No such file or directory\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn dirs_v_and_clear() {
        let script = "mkdir /a; cd /; pushd -n /a >/dev/null; dirs -v; dirs -c; dirs";
        let expected = (0, " 0  /\n 1  /a\n/\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn pushd_rotates() {
        let script = "mkdir /a /b; cd /; pushd /a >/dev/null; pushd /b >/dev/null; pushd +1; pwd";
        let expected = (0, "/a / /b\n/a\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn dirstack_array() {
        let script = "mkdir /a; cd /; pushd /a >/dev/null; echo ${DIRSTACK[@]}";
        let expected = (0, "/a /\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

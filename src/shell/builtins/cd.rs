//! `cd`: change the shell working directory.

use clap::Parser;
use forkbox_commands::fs;

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// Change the shell working directory.
///
/// Change the current directory to DIR. The default DIR is the value of the HOME shell
/// variable; `cd -` goes to OLDPWD and prints it. Sets PWD and OLDPWD.
#[derive(Parser, Debug)]
#[command(name = "cd", disable_version_flag = true)]
struct Args {
    /// Use the logical path: `..` removes the previous component (default unless
    /// `set -o physical`).
    #[arg(short = 'L', overrides_with = "physical")]
    logical: bool,
    /// Use the physical directory structure, resolving symbolic links.
    #[arg(short = 'P', overrides_with = "logical")]
    physical: bool,
    /// With -P: fail when the new working directory cannot be determined (it always can
    /// here).
    #[arg(short = 'e')]
    check: bool,
    /// The directory to change to.
    #[arg(allow_hyphen_values = true)]
    dir: Option<String>,
    #[arg(hide = true)]
    extra: Vec<String>,
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let a: Args = match super::parse(sh, io, "cd", &args).await {
        Ok(a) => a,
        Err(s) => return Ok(s),
    };
    if !a.extra.is_empty() {
        return super::fail(sh, io, "cd: too many arguments".into(), 1).await;
    }
    let _ = a.check;
    // The last of -L and -P wins; without either, `set -o physical` decides.
    let physical = a.physical || (sh.opts.physical && !a.logical);
    let mut print = false;
    let dir = match a.dir.as_deref() {
        None => match sh.get_str("HOME") {
            Some(h) => h,
            None => return super::fail(sh, io, "cd: HOME not set".into(), 1).await,
        },
        Some("-") => match sh.get_str("OLDPWD") {
            Some(d) => {
                print = true;
                d
            }
            None => return super::fail(sh, io, "cd: OLDPWD not set".into(), 1).await,
        },
        Some(d) => d.to_string(),
    };
    if dir.is_empty() {
        return Ok(0);
    }
    // CDPATH: a relative name not starting with `.` is looked for in each entry; a
    // directory found through a non-empty entry is printed.
    let via_cdpath = !dir.starts_with('/') && !dir.starts_with('.');
    if via_cdpath && let Some(cdpath) = sh.get_str("CDPATH").filter(|c| !c.is_empty()) {
        for entry in cdpath.split(':') {
            let base = if entry.is_empty() { "." } else { entry };
            let cand = fs::normalize(&fs::join(&sh.cwd, &fs::join(base, &dir)));
            if matches!(sh.fs.stat(&cand).await, Ok(m) if m.is_dir()) {
                let readonly = match chdir(sh, &cand, physical).await {
                    Ok(r) => r,
                    Err(msg) => return super::fail(sh, io, format!("cd: {msg}"), 1).await,
                };
                if !entry.is_empty() {
                    print = true;
                }
                return finish(sh, io, print, &readonly).await;
            }
        }
    }
    let readonly = match chdir(sh, &dir, physical).await {
        Ok(r) => r,
        Err(msg) => return super::fail(sh, io, format!("cd: {msg}"), 1).await,
    };
    finish(sh, io, print, &readonly).await
}

async fn finish(sh: &Shell, io: &Fds, print: bool, readonly: &[&str]) -> Exec<i32> {
    if !readonly.is_empty() {
        return Ok(report_readonly(sh, io, readonly).await);
    }
    if print {
        let _ = io
            .stdout()
            .write_str(&format!("{}\n", sh.logical_cwd()))
            .await;
    }
    Ok(0)
}

impl Shell {
    /// The working directory as `$PWD` and `pwd` show it: with the leading `//` it was
    /// reached through (see `cwd_double_slash`).
    pub(crate) fn logical_cwd(&self) -> String {
        if self.cwd_double_slash {
            format!("/{}", self.cwd)
        } else {
            self.cwd.clone()
        }
    }
}

/// Changes the working directory to `dir` (relative to the current one), setting `PWD`
/// and `OLDPWD`; the error is worded `DIR: reason`. The names of those two that are
/// readonly (and so kept their values) are returned.
pub(crate) async fn chdir(
    sh: &mut Shell,
    dir: &str,
    physical: bool,
) -> Result<Vec<&'static str>, String> {
    let joined = fs::join(&sh.cwd, dir);
    // `-P`: `..` is the parent of where the symbolic links lead, not of the path shown.
    let physical_target = match physical {
        true => sh.fs.canonicalize(&joined).await.ok(),
        false => None,
    };
    let mut target = physical_target.unwrap_or_else(|| fs::normalize(&joined));
    match sh.fs.stat(&target).await {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(format!("{dir}: Not a directory")),
        Err(e) => return Err(format!("{dir}: {e}")),
    }
    if physical && let Ok(real) = sh.fs.canonicalize(&target).await {
        target = real;
    }
    let old = sh.logical_cwd();
    // bash keeps a leading `//` (not `///`) of the path it went through.
    let through = if dir.starts_with('/') {
        dir.to_string()
    } else {
        old.clone()
    };
    sh.cwd_double_slash = through.starts_with("//") && !through.starts_with("///");
    sh.cwd = target;
    // OLDPWD is what `$PWD` said, even when assigned by hand.
    let old = sh.get_str("PWD").unwrap_or(old);
    let mut readonly = Vec::new();
    for (name, value) in [("OLDPWD", old), ("PWD", sh.logical_cwd())] {
        if sh.vars.get(name).is_some_and(|v| v.readonly) {
            readonly.push(name);
        } else {
            sh.set_exported(name, &value);
        }
    }
    Ok(readonly)
}

/// Reports that `PWD`/`OLDPWD` (as [`chdir`] found them readonly) could not be set: the
/// directory changed all the same, but the builtin fails (status 1), as in bash.
pub(crate) async fn report_readonly(sh: &Shell, io: &Fds, names: &[&str]) -> i32 {
    for name in names {
        let e = crate::shell::ShellError::Readonly((*name).to_string());
        sh.report(&io.stderr(), &e).await;
    }
    i32::from(!names.is_empty())
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn cd_changes_pwd_and_oldpwd() {
        let script = "mkdir d; cd /d; echo $PWD $OLDPWD; cd -; echo $PWD";
        let expected = (0, "/d /\n/\n/\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn cd_missing_dir() {
        let script = "cd /nope; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: cd: /nope: No such file or directory\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn cd_to_file() {
        let script = "echo x > /f; cd /f; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: cd: /f: Not a directory\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn cd_too_many_args() {
        let script = "mkdir /a /b; cd /a /b; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: cd: too many arguments\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn cd_without_home() {
        let script = "unset HOME; cd; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: cd: HOME not set\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn cd_home() {
        let script = "mkdir -p /home/u; cd; pwd";
        let expected = (0, "/home/u\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn cd_dash_without_oldpwd() {
        let script = "unset OLDPWD; cd -; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: cd: OLDPWD not set\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn cd_dotdot_and_logical_symlink() {
        let script = "mkdir -p /r/s; ln -s /r/s /l; cd /l; pwd; cd -P /l; pwd; cd ..; pwd";
        let expected = (0, "/l\n/r/s\n/r\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

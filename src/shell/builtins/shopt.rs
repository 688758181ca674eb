//! `shopt [-pqsu] [-o] [optname ...]`: the shell's optional behaviours.
//!
//! Every option bash 5.2 has is known and listed in bash's order with its default for a
//! non-interactive shell. The ones forkbox acts on: `dotglob`, `extglob`, `failglob`,
//! `globstar`, `nocaseglob`, `nocasematch`, `nullglob`, `xpg_echo`, `globskipdots`
//! (see `expand`, `pattern`, `cond`, `echo`); the others are kept and reported (their
//! behaviour either is forkbox's anyway, or concerns interactive features forkbox lacks).

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// Every `shopt` option in bash's listing order, with its default in `bash -c`.
pub(crate) const SHOPTS: &[(&str, bool)] = &[
    ("autocd", false),
    ("assoc_expand_once", false),
    ("cdable_vars", false),
    ("cdspell", false),
    ("checkhash", false),
    ("checkjobs", false),
    ("checkwinsize", true),
    ("cmdhist", true),
    ("compat31", false),
    ("compat32", false),
    ("compat40", false),
    ("compat41", false),
    ("compat42", false),
    ("compat43", false),
    ("compat44", false),
    ("complete_fullquote", true),
    ("direxpand", false),
    ("dirspell", false),
    ("dotglob", false),
    ("execfail", false),
    ("expand_aliases", false),
    ("extdebug", false),
    ("extglob", false),
    ("extquote", true),
    ("failglob", false),
    ("force_fignore", true),
    ("globasciiranges", true),
    ("globskipdots", true),
    ("globstar", false),
    ("gnu_errfmt", false),
    ("histappend", false),
    ("histreedit", false),
    ("histverify", false),
    ("hostcomplete", true),
    ("huponexit", false),
    ("inherit_errexit", false),
    ("interactive_comments", true),
    ("lastpipe", false),
    ("lithist", false),
    ("localvar_inherit", false),
    ("localvar_unset", false),
    ("login_shell", false),
    ("mailwarn", false),
    ("no_empty_cmd_completion", false),
    ("nocaseglob", false),
    ("nocasematch", false),
    ("noexpand_translation", false),
    ("nullglob", false),
    ("patsub_replacement", true),
    ("progcomp", true),
    ("progcomp_alias", false),
    ("promptvars", true),
    ("restricted_shell", false),
    ("shift_verbose", false),
    ("sourcepath", true),
    ("varredir_close", false),
    ("xpg_echo", false),
];

/// The values of the `shopt` options: bit `i` is option `SHOPTS[i]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Shopts(u64);

impl Default for Shopts {
    fn default() -> Self {
        let mut bits = 0u64;
        for (i, (_, on)) in SHOPTS.iter().enumerate() {
            if *on {
                bits |= 1 << i;
            }
        }
        Shopts(bits)
    }
}

impl Shopts {
    fn index(name: &str) -> Option<usize> {
        SHOPTS.iter().position(|(n, _)| *n == name)
    }

    /// Whether option `name` is on (false for an unknown name).
    pub(crate) fn on(&self, name: &str) -> bool {
        Self::index(name).is_some_and(|i| self.0 & (1 << i) != 0)
    }

    /// `$BASHOPTS`: the names of the options that are on, `:`-separated.
    pub(crate) fn names_on(&self) -> String {
        SHOPTS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, (n, _))| *n)
            .collect::<Vec<_>>()
            .join(":")
    }

    /// Sets option `name`; false if there is no such option.
    pub(crate) fn set(&mut self, name: &str, on: bool) -> bool {
        let Some(i) = Self::index(name) else {
            return false;
        };
        if on {
            self.0 |= 1 << i;
        } else {
            self.0 &= !(1 << i);
        }
        true
    }
}

fn line(name: &str, on: bool, print: bool, set_o: bool) -> String {
    match (print, set_o) {
        (true, false) => format!("shopt {} {name}\n", if on { "-s" } else { "-u" }),
        (true, true) => format!("set {}o {name}\n", if on { '-' } else { '+' }),
        (false, _) => format!("{name:<15}\t{}\n", if on { "on" } else { "off" }),
    }
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let (mut set, mut unset, mut print, mut quiet, mut set_o) = (false, false, false, false, false);
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        for c in a[1..].chars() {
            match c {
                's' => set = true,
                'u' => unset = true,
                'p' => print = true,
                'q' => quiet = true,
                'o' => set_o = true,
                _ => {
                    let msg = format!(
                        "shopt: -{c}: invalid option\nshopt: usage: shopt [-pqsu] [-o] [optname ...]"
                    );
                    return super::fail(sh, io, msg, 2).await;
                }
            }
        }
        i += 1;
    }
    let names = &args[i..];
    if set && unset {
        let msg = "shopt: cannot set and unset shell options simultaneously".to_string();
        return super::fail(sh, io, msg, 1).await;
    }
    let all: Vec<(String, bool)> = if set_o {
        super::set::OPTIONS
            .iter()
            .map(|(n, _, _)| (n.to_string(), sh.option_value(n)))
            .collect()
    } else {
        SHOPTS
            .iter()
            .map(|(n, _)| (n.to_string(), sh.shopts.on(n)))
            .collect()
    };
    let mut status = 0;
    if (set || unset) && !names.is_empty() {
        for n in names {
            let ok = if set_o {
                match sh.set_option_name(n, set) {
                    Ok(()) => true,
                    Err(crate::shell::ShellError::Builtin(_)) => {
                        let msg = format!("shopt: {n}: invalid option name");
                        super::fail(sh, io, msg, 1).await?;
                        continue;
                    }
                    Err(e) => return sh.fail(e, io).await,
                }
            } else {
                sh.shopts.set(n, set)
            };
            if !ok {
                let msg = format!("shopt: {n}: invalid shell option name");
                super::fail(sh, io, msg, 1).await?;
                status = 1;
            }
        }
        return Ok(status);
    }
    let mut out = String::new();
    if names.is_empty() {
        for (n, on) in &all {
            if (set && !on) || (unset && *on) {
                continue;
            }
            if !quiet {
                out.push_str(&line(n, *on, print, set_o));
            }
        }
    } else {
        for n in names {
            match all.iter().find(|(name, _)| name == n) {
                Some((_, on)) => {
                    if !on {
                        status = 1;
                    }
                    if !quiet {
                        out.push_str(&line(n, *on, print, set_o));
                    }
                }
                None => {
                    let _ = io.stdout().write_str(&out).await;
                    out.clear();
                    let what = if set_o {
                        "option name"
                    } else {
                        "shell option name"
                    };
                    super::fail(sh, io, format!("shopt: {n}: invalid {what}"), 1).await?;
                    status = 1;
                }
            }
        }
    }
    let _ = io.stdout().write_str(&out).await;
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_set() {
        let mut s = Shopts::default();
        assert!(s.on("extquote"));
        assert!(!s.on("extglob"));
        assert!(s.set("extglob", true));
        assert!(s.on("extglob"));
        assert!(!s.set("nosuch", true));
        assert!(SHOPTS.len() < 64);
    }
}

#[cfg(test)]
mod script_tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn shopt_set_query_unset() {
        let script = "shopt -s nullglob; shopt nullglob; shopt -q nullglob; echo $?; shopt -u nullglob; shopt -q nullglob; echo $?";
        let expected = (0, "nullglob       \ton\n0\n1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn shopt_p() {
        let script = "shopt -p extglob dotglob";
        let expected = (
            1,
            "shopt -u extglob\nshopt -u dotglob\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn shopt_invalid() {
        let script = "shopt -s nope; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: shopt: nope: invalid shell option name\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn shopt_o_set_options() {
        let script = "shopt -so pipefail; set -o | grep pipefail";
        let expected = (0, "pipefail       \ton\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

#[cfg(test)]
mod behaviour_tests {
    use crate::shell::testing::run;

    fn ok(stdout: &str) -> (i32, String, String) {
        (0, stdout.to_string(), String::new())
    }

    #[tokio::test]
    async fn an_option_changes_behaviour() {
        // nullglob: a pattern that matches nothing expands to nothing.
        assert_eq!(
            run("echo x*.none y; shopt -s nullglob; echo x*.none y").await,
            ok("x*.none y\ny\n")
        );
    }

    #[tokio::test]
    async fn unknown_names_and_conflicting_flags_are_errors() {
        assert_eq!(
            run("shopt -s nope; echo $?; shopt -u -s x; echo $?").await,
            (
                0,
                "1\n1\n".to_string(),
                "bash: line 1: shopt: nope: invalid shell option name\n\
                 bash: line 1: shopt: cannot set and unset shell options simultaneously\n"
                    .to_string()
            )
        );
    }
}

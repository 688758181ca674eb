//! `set [-euxfC] [-o option] [--] [arg ...]`: shell options and positional parameters.

use crate::shell::error::ShellError;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;
use crate::shell::{Options, Shell};

/// How forkbox keeps one of bash's options.
#[derive(Clone, Copy)]
pub(crate) enum Kept {
    /// A real option of the interpreter.
    Flag(fn(&mut Options) -> &mut bool),
    /// An option whose value forkbox always has: setting it to that value is fine,
    /// setting it to the other one is a clear `not supported`, never a silent no-op.
    Fixed(bool),
}

/// Every option of `set -o`, in bash's (alphabetical) order, with its letter.
pub(crate) const OPTIONS: &[(&str, Option<char>, Kept)] = &[
    ("allexport", Some('a'), Kept::Flag(|o| &mut o.allexport)),
    ("braceexpand", Some('B'), Kept::Flag(|o| &mut o.braceexpand)),
    // The terminal's line editor has emacs-style keys whatever this says.
    ("emacs", None, Kept::Flag(|o| &mut o.emacs)),
    ("errexit", Some('e'), Kept::Flag(|o| &mut o.errexit)),
    ("errtrace", Some('E'), Kept::Flag(|o| &mut o.errtrace)),
    ("functrace", Some('T'), Kept::Flag(|o| &mut o.functrace)),
    // Commands are never looked up in PATH, so there is nothing to hash either way.
    ("hashall", Some('h'), Kept::Flag(|o| &mut o.hashall)),
    // History expansion applies to the lines the terminal's editor reads.
    ("histexpand", Some('H'), Kept::Flag(|o| &mut o.histexpand)),
    ("history", None, Kept::Flag(|o| &mut o.history)),
    ("ignoreeof", None, Kept::Flag(|o| &mut o.ignoreeof)),
    ("interactive-comments", None, Kept::Fixed(true)),
    ("keyword", Some('k'), Kept::Flag(|o| &mut o.keyword)),
    ("monitor", Some('m'), Kept::Flag(|o| &mut o.monitor)),
    ("noclobber", Some('C'), Kept::Flag(|o| &mut o.noclobber)),
    ("noexec", Some('n'), Kept::Flag(|o| &mut o.noexec)),
    ("noglob", Some('f'), Kept::Flag(|o| &mut o.noglob)),
    ("nolog", None, Kept::Flag(|o| &mut o.nolog)),
    ("notify", Some('b'), Kept::Flag(|o| &mut o.notify)),
    ("nounset", Some('u'), Kept::Flag(|o| &mut o.nounset)),
    ("onecmd", Some('t'), Kept::Flag(|o| &mut o.onecmd)),
    ("physical", Some('P'), Kept::Flag(|o| &mut o.physical)),
    ("pipefail", None, Kept::Flag(|o| &mut o.pipefail)),
    ("posix", None, Kept::Flag(|o| &mut o.posix)),
    ("privileged", Some('p'), Kept::Flag(|o| &mut o.privileged)),
    ("verbose", Some('v'), Kept::Flag(|o| &mut o.verbose)),
    ("vi", None, Kept::Flag(|o| &mut o.vi)),
    ("xtrace", Some('x'), Kept::Flag(|o| &mut o.xtrace)),
];

impl Shell {
    fn set_option(&mut self, name: &str, shown: &str, on: bool) -> Result<(), ShellError> {
        if name == "interactive-comments" {
            // The same option as `shopt interactive_comments` (comments are read in a
            // script either way, as in bash).
            let _ = self.shopts.set("interactive_comments", on);
            return Ok(());
        }
        let Some((_, _, kept)) = OPTIONS.iter().find(|(n, _, _)| *n == name) else {
            return Err(ShellError::Builtin(format!(
                "set: {shown}: invalid option name"
            )));
        };
        match kept {
            Kept::Flag(field) => {
                *field(&mut self.opts) = on;
                // One editing mode at a time: turning one on turns the other off.
                match name {
                    "vi" if on => self.opts.emacs = false,
                    "emacs" if on => self.opts.vi = false,
                    _ => {}
                }
                if name == "ignoreeof" {
                    // The option is whether IGNOREEOF is set; bash sets it to 10.
                    let _ = if on {
                        self.assign_str("IGNOREEOF", "10", false)
                    } else {
                        self.unset_var("IGNOREEOF")
                    };
                }
                if name == "posix" {
                    self.posix_shopts(on);
                    // bash says so to the programs it runs.
                    let _ = if on {
                        self.assign_str("POSIXLY_CORRECT", "y", false)
                    } else {
                        self.unset_var("POSIXLY_CORRECT")
                    };
                }
            }
            Kept::Fixed(value) if *value == on => {}
            Kept::Fixed(_) => {
                let sign = if on { '-' } else { '+' };
                return Err(ShellError::Unsupported(format!("set {sign}o {name}")));
            }
        }
        Ok(())
    }

    /// The `shopt` options POSIX mode changes as it starts or ends, as bash's: aliases
    /// expanded and `shift` errors shown while it is on; `inherit_errexit` turned on, and
    /// left on after.
    pub(crate) fn posix_shopts(&mut self, on: bool) {
        self.shopts.set("expand_aliases", on);
        self.shopts.set("shift_verbose", on);
        if on {
            self.shopts.set("inherit_errexit", true);
        }
    }

    pub(crate) fn set_option_letter(&mut self, c: char, on: bool) -> Result<(), ShellError> {
        match OPTIONS.iter().find(|(_, l, _)| *l == Some(c)) {
            Some((name, _, _)) => self.set_option(name, &format!("-{c}"), on),
            None => Err(ShellError::Builtin(format!(
                "set: {}{c}: invalid option",
                if on { '-' } else { '+' }
            ))),
        }
    }

    pub(crate) fn set_option_name(&mut self, name: &str, on: bool) -> Result<(), ShellError> {
        self.set_option(name, name, on)
    }

    /// `$SHELLOPTS`: the names of the `set -o` options that are on, `:`-separated.
    pub(crate) fn shellopts(&self) -> String {
        OPTIONS
            .iter()
            .filter(|(name, _, _)| self.option_value(name))
            .map(|(name, _, _)| *name)
            .collect::<Vec<_>>()
            .join(":")
    }

    pub(crate) fn option_value(&self, name: &str) -> bool {
        if name == "ignoreeof" {
            return self.vars.get("IGNOREEOF").is_some_and(|v| !v.attrs.unset);
        }
        if name == "interactive-comments" {
            return self.shopts.on("interactive_comments");
        }
        match OPTIONS.iter().find(|(n, _, _)| *n == name) {
            Some((_, _, Kept::Flag(field))) => *field(&mut self.opts.clone()),
            Some((_, _, Kept::Fixed(value))) => *value,
            None => false,
        }
    }
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if args.is_empty() {
        sh.refresh_option_vars();
        let mut names: Vec<(&String, &crate::shell::Var)> = sh.vars.iter().collect();
        names.sort_by(|a, b| a.0.cmp(b.0));
        let bytes = sh.byte_locale();
        let mut out = String::new();
        for (k, v) in names {
            if !v.attrs.unset {
                out.push_str(&crate::shell::vars::set_line(k, v, bytes));
            }
        }
        // Then the functions, as `declare -f` prints them (not in POSIX mode).
        let mut funcs: Vec<(
            &String,
            &std::sync::Arc<brush_parser::ast::FunctionDefinition>,
        )> = if sh.opts.posix {
            Vec::new()
        } else {
            sh.functions.iter().collect()
        };
        funcs.sort_by(|a, b| a.0.cmp(b.0));
        for (name, f) in funcs {
            out.push_str(&crate::shell::printer::function(name, f));
            out.push('\n');
        }
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
    }
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            sh.positional = args[i + 1..].to_vec();
            sh.positional_changes += 1;
            return Ok(0);
        }
        if a == "-" {
            // `set -` also turns off -x and -v, as bash does.
            sh.opts.xtrace = false;
            sh.opts.verbose = false;
            sh.positional = args[i + 1..].to_vec();
            sh.positional_changes += 1;
            return Ok(0);
        }
        if a == "+" {
            // A lone `+` is skipped: options and operands may follow.
            i += 1;
            continue;
        }
        if a == "-o" || a == "+o" {
            let on = a == "-o";
            match option_operand(&args, i + 1) {
                Some(name) => {
                    if let Err(e) = sh.set_option_name(name, on) {
                        return set_error(sh, io, e).await;
                    }
                    i += 2;
                }
                None => {
                    // No name (or an option word next): the listing, and on.
                    list_options(sh, on, io).await;
                    i += 1;
                }
            }
            continue;
        }
        if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            let on = a.starts_with('-');
            // bash checks every letter before it changes any (`set -eZ` leaves -e off).
            if let Some(c) = a[1..]
                .chars()
                .find(|c| *c != 'o' && !OPTIONS.iter().any(|(_, l, _)| *l == Some(*c)))
            {
                let sign = if on { '-' } else { '+' };
                let e = ShellError::Builtin(format!("set: {sign}{c}: invalid option"));
                return set_error(sh, io, e).await;
            }
            for c in a[1..].chars() {
                if c == 'o' {
                    // `-euo pipefail`: the option name is the next argument; without
                    // one, the listing `set -o` gives.
                    let Some(name) = option_operand(&args, i + 1) else {
                        list_options(sh, on, io).await;
                        continue;
                    };
                    i += 1;
                    if let Err(e) = sh.set_option_name(name, on) {
                        return set_error(sh, io, e).await;
                    }
                    continue;
                }
                if let Err(e) = sh.set_option_letter(c, on) {
                    return set_error(sh, io, e).await;
                }
            }
            i += 1;
            continue;
        }
        sh.positional = args[i..].to_vec();
        sh.positional_changes += 1;
        return Ok(0);
    }
    Ok(0)
}

/// The option name after `-o` at `args[i]`: none at the end or before another option
/// word (`set -o -e` lists, then sets -e).
fn option_operand(args: &[String], i: usize) -> Option<&String> {
    args.get(i).filter(|n| !n.starts_with(['-', '+']))
}

/// `set -o` (a table) or `set +o` (commands that restore the options).
async fn list_options(sh: &Shell, on: bool, io: &Fds) {
    let out: String = OPTIONS
        .iter()
        .map(|(n, _, _)| {
            let v = sh.option_value(n);
            if on {
                format!("{n:<15}\t{}\n", if v { "on" } else { "off" })
            } else {
                format!("set {}o {n}\n", if v { '-' } else { '+' })
            }
        })
        .collect();
    let _ = io.stdout().write_str(&out).await;
}

/// Reports a bad option to `set` as bash does: status 2, and the usage line after an
/// unknown letter (not after an unknown `-o` name).
async fn set_error(sh: &mut Shell, io: &Fds, e: ShellError) -> Exec<i32> {
    match &e {
        ShellError::Builtin(m) => {
            sh.report(&io.stderr(), &e).await;
            if m.ends_with("invalid option") {
                return super::usage(io, "set").await;
            }
            Ok(2)
        }
        _ => sh.fail(e, io).await,
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn set_positional() {
        let script = "set -- a 'b c'; echo $# $2; set --; echo $#";
        let expected = (0, "2 b c\n0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn set_o_lists_options() {
        let script = "set -o | grep -E '^(errexit|pipefail|noclobber) '";
        let expected = (
            0,
            "errexit        \toff\nnoclobber      \toff\npipefail       \toff\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn set_plus_o_prints_commands() {
        let script = "set -e; set +o | grep -E 'errexit|nounset'";
        let expected = (
            0,
            "set -o errexit\nset +o nounset\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn set_flags_variable() {
        let script = "set -eu; echo $-; set +eu; echo $-";
        let expected = (0, "ehuBc\nhBc\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn set_u_unbound() {
        let script = "set -u; echo $nope; echo no";
        let expected = (
            127,
            "".to_string(),
            "bash: line 1: nope: unbound variable\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn set_x_traces() {
        let script = "set -x; echo hi; set +x";
        let expected = (0, "hi\n".to_string(), "+ echo hi\n+ set +x\n".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn set_f_disables_glob() {
        let script = "touch /g1; cd /; set -f; echo g*; set +f; echo g*";
        let expected = (0, "g*\ng1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn set_lists_variables() {
        let script = "zzz=1; set | grep '^zzz='";
        let expected = (0, "zzz=1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn set_o_pipefail() {
        let script = "set -o pipefail; false | true; echo $?";
        let expected = (0, "1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn set_n_reads_only() {
        let script = "set -n; echo no";
        let expected = (0, "".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

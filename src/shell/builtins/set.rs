//! `set [-euxfC] [-o option] [--] [arg ...]`: shell options and positional parameters.

use crate::shell::error::ShellError;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;
use crate::shell::{Shell, Value};

/// `set -o` names and whether each is supported.
const OPTION_NAMES: &[&str] = &[
    "errexit",
    "noglob",
    "noclobber",
    "nounset",
    "pipefail",
    "verbose",
    "xtrace",
];

impl Shell {
    pub(crate) fn set_option_letter(&mut self, c: char, on: bool) -> Result<(), ShellError> {
        match c {
            'e' => self.opts.errexit = on,
            'u' => self.opts.nounset = on,
            'x' => self.opts.xtrace = on,
            'f' => self.opts.noglob = on,
            'C' => self.opts.noclobber = on,
            'v' => self.opts.verbose = on,
            'h' | 'B' | 'H' | 'm' | 'b' | 'P' | 'T' | 'E' => {}
            other => return Err(ShellError::Unsupported(format!("set -{other}"))),
        }
        Ok(())
    }

    pub(crate) fn set_option_name(&mut self, name: &str, on: bool) -> Result<(), ShellError> {
        match name {
            "errexit" => self.opts.errexit = on,
            "nounset" => self.opts.nounset = on,
            "xtrace" => self.opts.xtrace = on,
            "noglob" => self.opts.noglob = on,
            "noclobber" => self.opts.noclobber = on,
            "pipefail" => self.opts.pipefail = on,
            "verbose" => self.opts.verbose = on,
            "posix"
            | "braceexpand"
            | "hashall"
            | "interactive-comments"
            | "monitor"
            | "histexpand"
            | "history"
            | "emacs"
            | "vi" => {}
            other => return Err(ShellError::Unsupported(format!("set -o {other}"))),
        }
        Ok(())
    }

    fn option_value(&self, name: &str) -> bool {
        match name {
            "errexit" => self.opts.errexit,
            "nounset" => self.opts.nounset,
            "xtrace" => self.opts.xtrace,
            "noglob" => self.opts.noglob,
            "noclobber" => self.opts.noclobber,
            "pipefail" => self.opts.pipefail,
            "verbose" => self.opts.verbose,
            _ => false,
        }
    }
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if args.is_empty() {
        let mut names: Vec<(&String, &crate::shell::Var)> = sh.vars.iter().collect();
        names.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = String::new();
        for (k, v) in names {
            if let Value::Str(s) = &v.value {
                out.push_str(&format!("{k}={}\n", crate::shell::expand::shell_quote(s)));
            }
        }
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
    }
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            sh.positional = args[i + 1..].to_vec();
            return Ok(0);
        }
        if a == "-" {
            sh.positional = args[i + 1..].to_vec();
            return Ok(0);
        }
        if a == "-o" || a == "+o" {
            let on = a == "-o";
            match args.get(i + 1) {
                Some(name) => {
                    if let Err(e) = sh.set_option_name(name, on) {
                        return sh.fail(e, io).await;
                    }
                    i += 2;
                    continue;
                }
                None => {
                    let out: String = OPTION_NAMES
                        .iter()
                        .map(|n| {
                            if on {
                                format!(
                                    "{n:<15}\t{}\n",
                                    if sh.option_value(n) { "on" } else { "off" }
                                )
                            } else {
                                format!("set {}o {n}\n", if sh.option_value(n) { '-' } else { '+' })
                            }
                        })
                        .collect();
                    let _ = io.stdout().write_str(&out).await;
                    return Ok(0);
                }
            }
        }
        if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            let on = a.starts_with('-');
            for c in a[1..].chars() {
                if c == 'o' {
                    // `-euo pipefail`: the option name is the next argument.
                    i += 1;
                    let Some(name) = args.get(i) else {
                        return super::fail(
                            sh,
                            io,
                            "set: -o: option requires an argument".into(),
                            2,
                        )
                        .await;
                    };
                    if let Err(e) = sh.set_option_name(name, on) {
                        return sh.fail(e, io).await;
                    }
                    continue;
                }
                if let Err(e) = sh.set_option_letter(c, on) {
                    return sh.fail(e, io).await;
                }
            }
            i += 1;
            continue;
        }
        sh.positional = args[i..].to_vec();
        return Ok(0);
    }
    Ok(0)
}

//! `export [-n] [-p] [name[=value] ...]`: set the export attribute of shell variables.

use clap::Parser;

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// Set export attribute for shell variables.
///
/// Marks each NAME for automatic export to the environment of subsequently executed
/// commands. If VALUE is supplied, assign VALUE before exporting.
#[derive(Parser, Debug)]
#[command(name = "export", disable_version_flag = true)]
struct Args {
    /// Remove the export property from each NAME.
    #[arg(short = 'n')]
    unexport: bool,
    /// Refer to shell functions (not supported).
    #[arg(short = 'f')]
    functions: bool,
    /// Display a list of all exported variables.
    #[arg(short = 'p')]
    print: bool,
    /// NAME or NAME=VALUE.
    names: Vec<String>,
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let a: Args = match super::parse(sh, io, "export", &args).await {
        Ok(a) => a,
        Err(s) => return Ok(s),
    };
    if a.functions {
        // Exported functions reach nested shells as bash passes them: environment
        // variables `BASH_FUNC_NAME%%` holding `() BODY`.
        let mut status = 0;
        for n in &a.names {
            if sh.functions.contains_key(n) {
                sh.exported_functions.insert(n.clone());
            } else {
                status = super::fail(sh, io, format!("export: {n}: not a function"), 1).await?;
            }
        }
        return Ok(status);
    }
    if a.names.is_empty() {
        let mut names: Vec<(&String, &crate::shell::Var)> =
            sh.vars.iter().filter(|(_, v)| v.exported).collect();
        names.sort_by(|x, y| x.0.cmp(y.0));
        let mut out = String::new();
        for (k, v) in names {
            match v.value.as_str() {
                Some(s) => out.push_str(&format!("declare -x {k}={}\n", super::dq(s))),
                None => out.push_str(&format!("declare -x {k}\n")),
            }
        }
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
    }
    let mut status = 0;
    for n in &a.names {
        let (name, value) = match n.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (n.as_str(), None),
        };
        let name = name.strip_suffix('+').unwrap_or(name);
        if !super::is_name(name) {
            super::fail(sh, io, format!("export: `{n}': not a valid identifier"), 1).await?;
            status = 1;
            continue;
        }
        if let Some(v) = value {
            let v = if n.contains("+=") {
                format!("{}{v}", sh.get_str(name).unwrap_or_default())
            } else {
                v.to_string()
            };
            if let Err(e) = sh.set_var(name, &v) {
                status = sh.report(&io.stderr(), &e).await;
                continue;
            }
        }
        match sh.vars.get_mut(name) {
            Some(var) => var.exported = !a.unexport,
            None if !a.unexport => {
                sh.vars.insert(
                    name.to_string(),
                    crate::shell::Var {
                        value: crate::shell::Value::Str(String::new()),
                        exported: true,
                        readonly: false,
                    },
                );
                // `export x` without a value declares x without setting it; we give it "".
            }
            None => {}
        }
    }
    Ok(status)
}

//! `unset [-f] [-v] [name ...]`: unset shell variables and functions.

use clap::Parser;

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// Unset values and attributes of shell variables and functions.
///
/// Without options, unset a variable, and if there is none by that name, a function.
#[derive(Parser, Debug)]
#[command(name = "unset", disable_version_flag = true)]
struct Args {
    /// Treat each NAME as a shell function.
    #[arg(short = 'f')]
    functions: bool,
    /// Treat each NAME as a shell variable.
    #[arg(short = 'v')]
    variables: bool,
    /// Treat each NAME as a name reference (unsets the variable itself here).
    #[arg(short = 'n')]
    nameref: bool,
    names: Vec<String>,
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let a: Args = match super::parse(sh, io, "unset", &args).await {
        Ok(a) => a,
        Err(s) => return Ok(s),
    };
    let _ = a.nameref;
    let mut status = 0;
    for n in &a.names {
        if a.functions {
            sh.functions.remove(n);
            continue;
        }
        if let Some((name, idx)) = n.split_once('[') {
            let idx = idx.trim_end_matches(']');
            if let Ok(i) = idx.parse::<i64>()
                && let Some(crate::shell::Var {
                    value: crate::shell::Value::Array(m),
                    ..
                }) = sh.vars.get_mut(name)
            {
                m.remove(&i);
            }
            continue;
        }
        if !super::is_name(n) {
            super::fail(sh, io, format!("unset: `{n}': not a valid identifier"), 1).await?;
            status = 1;
            continue;
        }
        if sh.vars.contains_key(n) || a.variables {
            if sh.unset_var(n).is_err() {
                super::fail(
                    sh,
                    io,
                    format!("unset: {n}: cannot unset: readonly variable"),
                    1,
                )
                .await?;
                status = 1;
            }
        } else {
            sh.functions.remove(n);
        }
    }
    Ok(status)
}

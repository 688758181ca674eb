//! `declare`/`typeset [-aixrgpfF] [name[=value] ...]`: set variable values and attributes.
//! Inside a function, names become local unless `-g` is given. `-i` evaluates the value
//! as arithmetic once, at assignment (the attribute itself is not kept).

use std::collections::BTreeMap;

use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;
use crate::shell::{Shell, Value, Var};

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let in_function = !sh.local_frames.is_empty();
    declare(sh, "declare", args, io, in_function).await
}

fn format_var(name: &str, v: &Var) -> String {
    let mut flags = String::new();
    if matches!(v.value, Value::Array(_)) {
        flags.push('a');
    }
    if v.readonly {
        flags.push('r');
    }
    if v.exported {
        flags.push('x');
    }
    if flags.is_empty() {
        flags.push('-');
    }
    match &v.value {
        Value::Str(s) => format!("declare -{flags} {name}={}\n", super::dq(s)),
        Value::Array(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("[{k}]={}", super::dq(v)))
                .collect();
            format!("declare -{flags} {name}=({})\n", items.join(" "))
        }
    }
}

/// Shared by `declare`, `typeset` and `local`.
pub(crate) async fn declare(
    sh: &mut Shell,
    cmd: &str,
    args: Vec<String>,
    io: &Fds,
    make_local: bool,
) -> Exec<i32> {
    let (mut array, mut export, mut readonly, mut global, mut print, mut funcs, mut integer) =
        (false, false, false, false, false, false, false);
    let mut names = Vec::new();
    for a in &args {
        if names.is_empty() && a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) {
            for c in a[1..].chars() {
                match c {
                    'a' => array = true,
                    'x' => export = true,
                    'r' => readonly = true,
                    'g' => global = true,
                    'p' => print = true,
                    'f' | 'F' => funcs = true,
                    'i' => integer = true,
                    'l' | 'u' | 'n' | 't' | 'A' => {
                        return sh
                            .fail(
                                crate::shell::ShellError::Unsupported(format!("{cmd} -{c}")),
                                io,
                            )
                            .await;
                    }
                    _ => {
                        return super::fail(sh, io, format!("{cmd}: -{c}: invalid option"), 2)
                            .await;
                    }
                }
            }
            continue;
        }
        names.push(a.clone());
    }
    if funcs {
        let mut fnames: Vec<&String> = sh.functions.keys().collect();
        fnames.sort();
        let out: String = fnames
            .iter()
            .filter(|n| names.is_empty() || names.contains(n))
            .map(|n| format!("declare -f {n}\n"))
            .collect();
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
    }
    if print || names.is_empty() {
        let mut out = String::new();
        let mut all: Vec<(&String, &Var)> = sh.vars.iter().collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        for (k, v) in all {
            if names.is_empty() || names.contains(k) {
                out.push_str(&format_var(k, v));
            }
        }
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
    }
    let mut status = 0;
    for n in names {
        let (name, value) = match n.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (n.clone(), None),
        };
        let (name, append) = match name.strip_suffix('+') {
            Some(s) => (s.to_string(), true),
            None => (name, false),
        };
        if !super::is_name(&name) {
            super::fail(sh, io, format!("{cmd}: `{n}': not a valid identifier"), 1).await?;
            status = 1;
            continue;
        }
        if make_local && !global {
            sh.make_local(&name);
            if value.is_none() && !array {
                sh.vars.remove(&name);
            }
        }
        if let Some(mut v) = value {
            if integer {
                match crate::shell::arith::eval_str(sh, &v) {
                    Ok(n) => v = n.to_string(),
                    Err(m) => {
                        super::fail(sh, io, format!("{v}: {m}"), 1).await?;
                        status = 1;
                        continue;
                    }
                }
            }
            if array && v.starts_with('(') && v.ends_with(')') {
                let inner = &v[1..v.len() - 1];
                let items = sh.expand_fields(inner, io).await.unwrap_or_default();
                let map: BTreeMap<i64, String> = items
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| (i as i64, s))
                    .collect();
                if let Err(e) = sh.set_value(&name, Value::Array(map)) {
                    status = sh.report(&io.stderr(), &e).await;
                    continue;
                }
            } else {
                if append {
                    v = format!("{}{v}", sh.get_str(&name).unwrap_or_default());
                }
                if let Err(e) = sh.set_var(&name, &v) {
                    status = sh.report(&io.stderr(), &e).await;
                    continue;
                }
            }
        } else if array && !sh.vars.contains_key(&name) {
            let _ = sh.set_value(&name, Value::Array(BTreeMap::new()));
        } else if (export || readonly) && !sh.vars.contains_key(&name) {
            let _ = sh.set_var(&name, "");
        }
        if let Some(var) = sh.vars.get_mut(&name) {
            if export {
                var.exported = true;
            }
            if readonly {
                var.readonly = true;
            }
        }
    }
    Ok(status)
}

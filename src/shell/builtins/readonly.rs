//! `readonly [-aAf] [-p] [name[=value] ...]`: mark shell variables as unchangeable
//! (`declare -gr`), or list them (`declare -r` lines).

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut argv = vec!["-r".to_string(), "-g".to_string()];
    let mut funcs = false;
    let mut rest = args.as_slice();
    while let Some(a) = rest.first() {
        if a == "--" {
            rest = &rest[1..];
            break;
        }
        if !a.starts_with('-') || a.len() < 2 {
            break;
        }
        for c in a[1..].chars() {
            match c {
                'a' | 'A' => argv.push(format!("-{c}")),
                'f' => funcs = true,
                'p' => {}
                _ => {
                    let msg = format!(
                        "readonly: -{c}: invalid option\nreadonly: usage: readonly [-aAf] [name[=value] ...] or readonly -p"
                    );
                    return super::fail(sh, io, msg, 2).await;
                }
            }
        }
        rest = &rest[1..];
    }
    if funcs {
        let mut status = 0;
        for n in rest {
            if sh.functions.contains_key(n) {
                sh.readonly_functions.insert(n.clone());
            } else {
                super::fail(sh, io, format!("readonly: {n}: not a function"), 1).await?;
                status = 1;
            }
        }
        return Ok(status);
    }
    if rest.is_empty() {
        argv.push("-p".to_string());
    } else {
        argv.push("--".to_string());
        argv.extend(rest.iter().cloned());
    }
    super::declare::declare(sh, "readonly", argv, io, false).await
}

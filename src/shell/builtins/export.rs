//! `export [-fn] [-p] [name[=value] ...]`: set the export attribute of shell variables
//! (`declare -x` on the variable in scope: a function's local when it has one, else the
//! global), remove it (`-n`), or list exported variables (`declare -x` lines).

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut unexport = false;
    let mut funcs = false;
    // `-a`/`-A`: the variables are (made) arrays, as `declare -a`/`-A` does.
    let mut kinds: Vec<String> = Vec::new();
    let mut first = 0;
    for a in &args {
        if a == "--" {
            first += 1;
            break;
        }
        if !a.starts_with('-') || a.len() < 2 {
            break;
        }
        for c in a[1..].chars() {
            match c {
                'n' => unexport = true,
                'f' => funcs = true,
                'a' | 'A' => kinds.push(format!("-{c}")),
                'p' => {}
                _ => {
                    return super::invalid_option(sh, io, "export", &format!("-{c}")).await;
                }
            }
        }
        first += 1;
    }
    let names = &args[first..];
    if funcs && names.is_empty() {
        // `export -f`: each exported function, then its attributes.
        let listed: Vec<String> = sh.exported_functions.iter().cloned().collect();
        let out = super::declare::function_listing(sh, &listed);
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
    }
    if funcs {
        // Exported functions reach nested shells as bash passes them: environment
        // variables `BASH_FUNC_NAME%%` holding `() BODY`.
        let mut status = 0;
        for n in names {
            if !sh.functions.contains_key(n) {
                super::fail(sh, io, format!("export: {n}: not a function"), 1).await?;
                status = 1;
            } else if unexport {
                sh.exported_functions.remove(n);
            } else {
                sh.exported_functions.insert(n.clone());
            }
        }
        return Ok(status);
    }
    // `export -n NAME` of a variable that does not exist leaves it so.
    let names: Vec<String> = names
        .iter()
        .filter(|n| {
            !unexport || !super::is_name(n) || n.contains('=') || sh.vars.contains_key(n.as_str())
        })
        .cloned()
        .collect();
    if unexport && names.is_empty() && first < args.len() {
        return Ok(0);
    }
    let flag = if unexport { "+x" } else { "-x" };
    let mut argv = vec![flag.to_string()];
    argv.extend(kinds);
    if names.is_empty() {
        argv = vec!["-x".to_string(), "-p".to_string()];
    } else {
        argv.push("--".to_string());
        argv.extend(names.iter().cloned());
    }
    super::declare::declare(sh, "export", argv, io, false).await
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn export_p_lists() {
        let script = "export Q=1; export -p | grep ' Q='";
        let expected = (0, "declare -x Q=\"1\"\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn export_n_removes() {
        let script = "export Q=1; export -n Q; env | grep '^Q='; echo $? $Q";
        let expected = (0, "1 1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn export_invalid_name() {
        let script = "export 1a=b; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: export: `1a=b': not a valid identifier\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn export_bad_option() {
        let script = "export -z; echo $?";
        let expected = (0, "2\n".to_string(), "bash: line 1: export: -z: invalid option\nexport: usage: export [-fn] [name[=value] ...] or export -p\n".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn export_f_function() {
        let script = "f() { echo fx; }; export -f f; bash -c f";
        let expected = (0, "fx\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

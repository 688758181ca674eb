//! `readonly [-aAf] [-p] [name[=value] ...]`: mark shell variables as unchangeable
//! (`declare -r` on the variable in scope: a function's local when it has one, else the
//! global), or list them (`declare -r` lines).

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut argv = vec!["-r".to_string()];
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
                    return super::invalid_option(sh, io, "readonly", &format!("-{c}")).await;
                }
            }
        }
        rest = &rest[1..];
    }
    if funcs && rest.is_empty() {
        // `readonly -f`: each readonly function, then its attributes (as `export -f`).
        let mut listed: Vec<String> = sh.readonly_functions.iter().cloned().collect();
        listed.sort();
        let out = super::declare::function_listing(sh, &listed);
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
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

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn readonly_sets_and_blocks() {
        let script = "readonly a=1; a=2; echo $? $a";
        let expected = (
            1,
            "".to_string(),
            "bash: line 1: a: readonly variable\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn readonly_p_lists() {
        let script = "readonly zz=1; readonly -p | grep ' zz='";
        let expected = (0, "declare -r zz=\"1\"\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn readonly_array() {
        let script = "readonly -a ra=(1 2); ra[0]=5; echo $? ${ra[@]}";
        let expected = (
            1,
            "".to_string(),
            "bash: line 1: ra: readonly variable\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn readonly_function() {
        let script = "f() { :; }; readonly -f f; f() { echo x; }; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: f: readonly function\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn readonly_bad_option() {
        let script = "readonly -z; echo $?";
        let expected = (0, "2\n".to_string(), "bash: line 1: readonly: -z: invalid option\nreadonly: usage: readonly [-aAf] [name[=value] ...] or readonly -p\n".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn readonly_invalid_name() {
        let script = "readonly 1a=1; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: readonly: `1a=1': not a valid identifier\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn readonly_in_function_is_global() {
        let script = "f() { readonly fr=1; }; f; echo $fr; fr=2; echo $?";
        let expected = (
            1,
            "1\n".to_string(),
            "bash: line 1: fr: readonly variable\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }
}

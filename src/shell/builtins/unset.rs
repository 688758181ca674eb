//! `unset [-f] [-v] [-n] [name ...]`: unset shell variables and functions.

use clap::Parser;

use crate::shell::Shell;
use crate::shell::ShellError;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;
use crate::shell::vars::split_subscript;

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
    /// Treat each NAME as a name reference and unset the variable itself rather than
    /// the variable it references.
    #[arg(short = 'n')]
    nameref: bool,
    names: Vec<String>,
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let a: Args = match super::parse(sh, io, "unset", &args).await {
        Ok(a) => a,
        Err(s) => return Ok(s),
    };
    if a.functions && a.variables {
        let msg = "unset: cannot simultaneously unset a function and a variable";
        return super::fail(sh, io, msg.to_string(), 1).await;
    }
    let mut status = 0;
    for n in &a.names {
        if a.functions {
            if sh.readonly_functions.contains(n) {
                super::fail(
                    sh,
                    io,
                    format!("unset: {n}: cannot unset: readonly function"),
                    1,
                )
                .await?;
                status = 1;
            } else {
                remove_function(sh, n);
            }
            continue;
        }
        if let Some((name, sub)) = split_subscript(n) {
            if (sub.is_empty() || !closes_at_end(n)) && !a.variables {
                // Not an array reference: bash tries it as a function name, silently.
                if !sh.readonly_functions.contains(n) {
                    sh.functions.remove(n);
                }
                continue;
            }
            if !super::is_name(name) || sub.is_empty() {
                super::fail(sh, io, format!("unset: `{n}': not a valid identifier"), 1).await?;
                status = 1;
                continue;
            }
            // The subscript is expanded as a word (`unset 'a[${#a[@]}-1]'`, `'m[$k]'`).
            let spec = match sh.expand_subscript_arg(n, io).await {
                Ok(s) => s,
                Err(e) => return sh.fail(e, io).await,
            };
            let sub = split_subscript(&spec).map_or(sub, |(_, s)| s);
            if let Err(e) = sh.unset_subscript(name, sub) {
                let msg = match e {
                    ShellError::Readonly(v) => {
                        format!("unset: {v}: cannot unset: readonly variable")
                    }
                    // bash names only the subscript: `unset: [-5]: bad array subscript`.
                    ShellError::BadSubscript(_) => {
                        format!("unset: [{sub}]: bad array subscript")
                    }
                    // A subscript that is not an arithmetic expression (`a[1+]`) ends the
                    // shell, as any failed expansion.
                    other if other.is_fatal() => return sh.fail(other, io).await,
                    other => other.to_string(),
                };
                super::fail(sh, io, msg, 1).await?;
                status = 1;
            }
            continue;
        }
        if !super::is_name(n) && !a.variables && !a.nameref {
            // Not a variable name: bash then tries it as a function name, silently.
            if !sh.readonly_functions.contains(n) {
                remove_function(sh, n);
            }
            continue;
        }
        if !super::is_name(n) {
            super::fail(sh, io, format!("unset: `{n}': not a valid identifier"), 1).await?;
            status = 1;
            continue;
        }
        if n == "FUNCNAME" && !a.functions {
            sh.lines.funcname_unset = true;
        }
        // `LINENO` is a variable too while it keeps its special meaning.
        let is_var = sh.vars.contains_key(n)
            || (n == "LINENO" && !sh.lines.lineno_unset)
            || crate::shell::vars::option_list_var(n)
            || (crate::shell::vars::DYNAMIC_VARS.contains(&n.as_str())
                && !sh.unspecial.contains(n.as_str()));
        if is_var || a.variables || a.nameref {
            let r = if a.nameref {
                sh.unset_plain(n)
            } else {
                sh.unset_var(n)
            };
            if let Err(e) = r {
                let msg = match e {
                    ShellError::Readonly(v) => {
                        format!("unset: {v}: cannot unset: readonly variable")
                    }
                    other => other.to_string(),
                };
                super::fail(sh, io, msg, 1).await?;
                status = 1;
            }
        } else if !sh.readonly_functions.contains(n) {
            remove_function(sh, n);
        }
    }
    Ok(status)
}

/// Unsets function `n` with its attributes: a function defined again later starts
/// without them (bash keeps them on the function, which unset removes).
fn remove_function(sh: &mut Shell, n: &str) {
    sh.functions.remove(n);
    sh.traced_functions.remove(n);
    sh.exported_functions.remove(n);
}

/// Whether the `[` of `name[sub]` is closed by its last character, brackets nested in
/// the subscript counted (`a[${b[0]}]`): `m[a]]` is not an element reference for bash.
fn closes_at_end(spec: &str) -> bool {
    let Some(open) = spec.find('[') else {
        return false;
    };
    let mut depth = 0usize;
    for (i, c) in spec.char_indices().skip_while(|(i, _)| *i < open) {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1 == spec.len();
                }
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[test]
    fn element_references_close_at_the_end() {
        assert!(super::closes_at_end("a[1]"));
        assert!(super::closes_at_end("a[${b[0]}]"));
        assert!(!super::closes_at_end("m[a]]"));
        assert!(!super::closes_at_end("m[a]b"));
        assert!(!super::closes_at_end("m[a"));
    }

    #[tokio::test]
    async fn unset_variable() {
        let script = "x=1; unset x; echo \"[${x-u}]\"";
        let expected = (0, "[u]\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unset_function() {
        let script = "f() { :; }; unset -f f; f; echo $?";
        let expected = (
            0,
            "127\n".to_string(),
            "bash: line 1: f: command not found\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unset_prefers_variable() {
        let script = "f=1; f() { echo fn; }; unset f; f; echo \"[${f-u}]\"";
        let expected = (0, "fn\n[u]\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unset_v_only_variables() {
        let script = "f() { echo fn; }; unset -v f; f";
        let expected = (0, "fn\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unset_readonly() {
        let script = "readonly r=1; unset r; echo $? $r";
        let expected = (
            0,
            "1 1\n".to_string(),
            "bash: line 1: unset: r: cannot unset: readonly variable\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unset_array_element() {
        let script = "a=(1 2 3); unset 'a[1]'; declare -p a";
        let expected = (
            0,
            "declare -a a=([0]=\"1\" [2]=\"3\")\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unset_assoc_element() {
        let script = "declare -A m=([k]=v [j]=w); unset 'm[k]'; declare -p m";
        let expected = (0, "declare -A m=([j]=\"w\" )\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unset_through_reference() {
        let script = "t=1; declare -n r=t; unset r; echo \"[${t-u}]\"";
        let expected = (0, "[u]\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn unset_local_reveals_global() {
        let script = "x=g; f() { local x=l; unset x; echo \"[${x-u}]\"; }; f";
        let expected = (0, "[u]\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

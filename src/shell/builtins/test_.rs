//! `test` / `[` as the shell runs them: the operators that need the shell's state
//! (`-v NAME`, `-o OPTION`, `-R NAME`) are answered here; everything else is the native
//! command's, whose messages get the shell's prefix (`bash: line 1: [: x: integer expression
//! expected`), as bash's builtin prints them.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// Most bytes of diagnostics kept from the native command.
const MAX_MESSAGES: usize = 64 * 1024;

/// Whether variable (or array element) `spec` is set: `-v`, as `[[ -v ]]` answers it.
fn is_set(sh: &Shell, spec: &str) -> bool {
    sh.var_is_set(spec)
}

/// The answer to a shell-only unary test, `None` if `op` is not one.
fn shell_unary(sh: &Shell, op: &str, arg: &str) -> Option<bool> {
    match op {
        "-v" => Some(is_set(sh, arg)),
        "-o" => Some(super::set::OPTIONS.iter().any(|(n, _, _)| *n == arg) && sh.option_value(arg)),
        "-R" => Some(
            sh.vars
                .get(arg)
                .is_some_and(|v| v.attrs.nameref && !v.attrs.unset),
        ),
        _ => None,
    }
}

pub(crate) async fn run(sh: &mut Shell, name: &str, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let inner = if name == "[" {
        words
            .split_last()
            .filter(|(l, _)| **l == "]")
            .map(|(_, r)| r)
    } else {
        Some(&words[..])
    };
    if let Some(w) = inner {
        // `-v 'a[$i]'`: the subscript is expanded first.
        let spec = match w {
            ["-v", arg] | ["!", "-v", arg] => match sh.expand_subscript_arg(arg, io).await {
                Ok(s) => Some(s),
                Err(e) => return sh.fail(e, io).await,
            },
            _ => None,
        };
        if let Some(name) = spec
            .as_deref()
            .and_then(|s| sh.negative_subscript_out_of_range(s))
        {
            sh.report(&io.stderr(), &crate::shell::ShellError::BadSubscript(name))
                .await;
            return Ok(1);
        }
        let answer = match (w, spec.as_deref()) {
            ([op, _], Some(arg)) => shell_unary(sh, op, arg),
            (["!", op, _], Some(arg)) => shell_unary(sh, op, arg).map(|b| !b),
            ([op, arg], None) => shell_unary(sh, op, arg),
            (["!", op, arg], None) => shell_unary(sh, op, arg).map(|b| !b),
            _ => None,
        };
        if let Some(b) = answer {
            return Ok(i32::from(!b));
        }
    }
    Ok(run_prefixed(sh, name, args, io, false).await.0)
}

/// Runs the native command `name` with its diagnostics prefixed like a builtin's, and
/// its output captured when `capture` (for `printf -v`): (status, captured output).
async fn run_prefixed(
    sh: &mut Shell,
    name: &str,
    args: Vec<String>,
    io: &Fds,
    capture: bool,
) -> (i32, Vec<u8>) {
    let Some(cmd) = sh.registry.command(name) else {
        return (127, Vec::new());
    };
    let (err_out, err_in) = forkbox_commands::pipe();
    let (out, out_in) = forkbox_commands::pipe();
    let mut ctx = sh.context(io, &[]);
    ctx.stderr = err_out;
    if capture {
        ctx.stdout = out;
    } else {
        drop(out);
    }
    let collect = async {
        if capture {
            out_in
                .read_to_end(crate::shell::MAX_VALUE)
                .await
                .unwrap_or_default()
        } else {
            Vec::new()
        }
    };
    let running = async {
        let r = cmd.run(&ctx, args).await;
        let status = forkbox_commands::exit_status(name, r, &ctx.stderr).await;
        drop(ctx);
        status
    };
    let (status, output) = futures::future::join(running, collect).await;
    let messages = err_in.read_to_end(MAX_MESSAGES).await.unwrap_or_default();
    let prefix = sh.message_prefix();
    let text: String = forkbox_commands::bytetext::decode_slice(&messages)
        .lines()
        .map(|l| {
            // bash prints a builtin's usage line without the shell's prefix.
            if l.starts_with(&format!("{name}: usage: ")) {
                format!("{l}\n")
            } else {
                format!("{prefix}{l}\n")
            }
        })
        .collect();
    if !text.is_empty() {
        let _ = io.stderr().write_str(&text).await;
    }
    (status, output)
}

/// `printf [-v var] format [arguments]`: the native printf, with `-v` assigning its
/// output to a variable and its messages worded as the builtin's.
pub(crate) async fn printf(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if let Some(what) = super::bad_option(&args, "v:") {
        return super::option_error(sh, io, "printf", &what).await;
    }
    if let Some(first) = args.first().filter(|a| a.starts_with("-v")) {
        // `-v NAME` or `-vNAME`; the format and its arguments follow.
        let (var, rest) = if first.len() > 2 {
            (Some(first[2..].to_string()), 1)
        } else {
            (args.get(1).cloned(), 2)
        };
        let Some(var) = var else {
            let msg = "printf: -v: option requires an argument";
            super::fail(sh, io, msg.into(), 2).await?;
            return super::usage(io, "printf").await;
        };
        // A name, or a name and a subscript in brackets (`a[1]`, `m[k]`).
        let valid = match var.split_once('[') {
            Some((name, sub)) => super::is_name(name) && sub.len() > 1 && sub.ends_with(']'),
            None => super::is_name(&var),
        };
        if !valid {
            return super::fail(
                sh,
                io,
                format!("printf: `{var}': not a valid identifier"),
                2,
            )
            .await;
        }
        let var = match sh.expand_subscript_arg(&var, io).await {
            Ok(v) => v,
            Err(e) => return sh.fail(e, io).await,
        };
        let (status, out) = run_printf(sh, &args[rest..], io, true).await;
        // A variable cannot hold NUL: bash keeps what comes before the first one.
        let out = out.split(|&b| b == 0).next().unwrap_or_default();
        let value = forkbox_commands::bytetext::decode_slice(out).into_owned();
        // `printf -v 'a[2]'`: an element of an indexed array (a literal index).
        let element = var
            .split_once('[')
            .and_then(|(n, i)| Some((n, i.strip_suffix(']')?.trim().parse::<i64>().ok()?)));
        let set = match element {
            Some((n, i)) => sh.set_elem(n, i, &value),
            None => sh.set_var(&var, &value),
        };
        if let Err(e) = set {
            // A failed assignment fails printf, not the script.
            return Ok(sh.report(&io.stderr(), &e).await);
        }
        return Ok(status);
    }
    if io.is_unwritable(1) {
        // Writing anything fails (an empty output writes nothing, as in bash).
        let (status, out) = run_printf(sh, &args, io, true).await;
        if out.is_empty() {
            return Ok(status);
        }
        return super::fail(sh, io, "printf: write error: Bad file descriptor".into(), 1).await;
    }
    Ok(run_printf(sh, &args, io, false).await.0)
}

/// Runs bash's printf over this shell's descriptors, its messages prefixed as a
/// builtin's and written as they come (see `forkbox_commands::cmd::printf::builtin`);
/// with `capture` (`printf -v`), its output is returned instead of written.
async fn run_printf(sh: &mut Shell, args: &[String], io: &Fds, capture: bool) -> (i32, Vec<u8>) {
    let prefix = sh.message_prefix();
    let mut ctx = sh.context(io, &[]);
    let (out, out_in) = forkbox_commands::pipe();
    if capture {
        ctx.stdout = out;
    } else {
        drop(out);
    }
    let collect = async {
        if capture {
            out_in
                .read_to_end(crate::shell::MAX_VALUE)
                .await
                .unwrap_or_default()
        } else {
            Vec::new()
        }
    };
    let mut assigned = Vec::new();
    let running = async {
        let r =
            forkbox_commands::cmd::printf::builtin_assigning(&ctx, args, &prefix, &mut assigned)
                .await;
        let status = match r {
            Err(forkbox_commands::Interrupt::Write(e)) => {
                let msg = format!("{prefix}printf: write error: {e}\n");
                let _ = ctx.stderr.write_str(&msg).await;
                1
            }
            r => forkbox_commands::exit_status("printf", r, &ctx.stderr).await,
        };
        drop(ctx);
        status
    };
    let (status, out) = futures::future::join(running, collect).await;
    // `%n`: a variable that cannot be assigned (readonly) is reported; printf's status
    // stays, as in bash.
    for (name, count) in assigned {
        if let Err(e) = sh.set_var(&name, &count.to_string()) {
            sh.report(&io.stderr(), &e).await;
        }
    }
    (status, out)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn test_v_variable_set() {
        let script = "x=1; test -v x; echo $?; test -v y; echo $?; a=(1); [ -v 'a[0]' ]; echo $?";
        let expected = (0, "0\n1\n0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn test_o_option() {
        let script = "set -e; [ -o errexit ]; echo $?; [ -o nounset ]; echo $?; set +e";
        let expected = (1, "0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn test_integer_error_has_shell_prefix() {
        let script = "[ x -eq 1 ]; echo $?";
        let expected = (
            0,
            "2\n".to_string(),
            "bash: line 1: [: x: integer expression expected\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn test_missing_bracket() {
        let script = "[ 1 = 1; echo $?";
        let expected = (
            0,
            "2\n".to_string(),
            "bash: line 1: [: missing `]'\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn test_string_and_files() {
        let script = "touch /f; [ -f /f ] && [ a != b ] && [ -z '' ] && echo ok";
        let expected = (0, "ok\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn test_too_many_args() {
        let script = "test a b c; echo $?";
        let expected = (
            0,
            "2\n".to_string(),
            "bash: line 1: test: b: binary operator expected\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }
}

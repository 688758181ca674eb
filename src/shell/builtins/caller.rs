//! `caller [expr]`: the context of a function call, from the stack behind `FUNCNAME`,
//! `BASH_LINENO` and `BASH_SOURCE` (see `shell::lines`).
//!
//! Without an argument: `LINE FILE` of the current call; with frame N (0 the current
//! one): `LINE FUNCTION FILE`. Outside any function or sourced file, or past the outermost
//! frame, nothing is printed and the status is 1.

use crate::shell::Shell;
use crate::shell::error::ShellError;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if sh.funcnames.is_empty() {
        return Ok(1);
    }
    let mut rest = args.as_slice();
    if rest.first().is_some_and(|a| a == "--") {
        rest = &rest[1..];
    } else if let Some(what) = super::bad_option(rest, "") {
        return super::option_error(sh, io, "caller", &what).await;
    }
    let frames = &sh.lines.frames;
    // Innermost first, as the arrays show them.
    let at = |i: usize| frames.len().checked_sub(i + 1).and_then(|k| frames.get(k));
    let name_at = |i: usize| {
        sh.funcnames
            .len()
            .checked_sub(i + 1)
            .and_then(|k| sh.funcnames.get(k))
    };
    let line = match rest.first() {
        None => {
            let Some(cur) = at(0) else {
                return Ok(1);
            };
            let file = at(1).map_or("NULL", |f| f.source.as_str());
            format!("{} {file}\n", cur.call_line)
        }
        Some(a) => {
            let Ok(n) = a.trim().parse::<usize>() else {
                sh.report(
                    &io.stderr(),
                    &ShellError::Builtin(format!("caller: {a}: invalid number")),
                )
                .await;
                return super::usage(io, "caller").await;
            };
            match (at(n), name_at(n + 1), at(n + 1)) {
                (Some(cur), Some(func), Some(outer)) => {
                    format!("{} {func} {}\n", cur.call_line, outer.source)
                }
                _ => return Ok(1),
            }
        }
    };
    let _ = io.stdout().write_str(&line).await;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn caller_outside_a_function_fails_quietly() {
        assert_eq!(
            run("caller; echo $?").await,
            (0, "1\n".into(), String::new())
        );
    }

    #[tokio::test]
    async fn caller_names_the_calling_line_and_frame() {
        let script = "f() {\n  g\n}\ng() {\n  caller\n  caller 0\n}\nf";
        let expected = (
            0,
            "2 environment\n2 f environment\n".to_string(),
            String::new(),
        );
        assert_eq!(run(script).await, expected);
    }
}

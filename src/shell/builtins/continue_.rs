//! `continue [n]`: resume the next iteration of the n-th enclosing loop.

use crate::shell::Shell;
use crate::shell::error::ShellError;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    match loop_count(sh, "continue", &args, io).await? {
        // `continue 0` leaves every loop with status 1, as bash does.
        Ok(usize::MAX) => Err(Flow::Break(sh.loop_depth, 1)),
        Ok(n) => Err(Flow::Continue(n)),
        Err(status) => Ok(status),
    }
}

/// The loop count of `break`/`continue`, or the status after reporting why there is none.
///
/// As in bash: outside a loop it is a warning (none in POSIX mode) and status 0, whatever
/// the arguments; a count that is not a number ends the (sub)shell with the last status
/// or'ed with 128 (bash's `throw_to_top_level`), more than one argument with status 1; a
/// count below 1 leaves every enclosing loop.
pub(crate) async fn loop_count(
    sh: &Shell,
    name: &str,
    args: &[String],
    io: &Fds,
) -> Exec<Result<usize, i32>> {
    if sh.loop_depth == 0 {
        // POSIX leaves it unspecified; bash's POSIX mode says nothing.
        if !sh.opts.posix {
            let m = format!("{name}: only meaningful in a `for', `while', or `until' loop");
            sh.report(&io.stderr(), &ShellError::Builtin(m)).await;
        }
        return Ok(Err(0));
    }
    let n = match args.first() {
        None => 1,
        Some(a) => match a.trim().parse::<i64>() {
            Ok(n) => n,
            Err(_) => {
                let m = format!("{name}: {a}: numeric argument required");
                sh.report(&io.stderr(), &ShellError::Builtin(m)).await;
                return Err(Flow::Exit(128 | sh.last_status));
            }
        },
    };
    if args.len() > 1 {
        let m = format!("{name}: too many arguments");
        sh.report(&io.stderr(), &ShellError::Builtin(m)).await;
        return Err(Flow::Exit(1));
    }
    if n < 1 {
        let a = args.first().map_or("", String::as_str);
        let m = format!("{name}: {a}: loop count out of range");
        sh.report(&io.stderr(), &ShellError::Builtin(m)).await;
        return Ok(Ok(usize::MAX));
    }
    Ok(Ok(usize::try_from(n)
        .unwrap_or(usize::MAX)
        .min(sh.loop_depth)))
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn continue_skips_rest() {
        let script = "for i in 1 2 3; do [ $i = 2 ] && continue; echo $i; done";
        let expected = (0, "1\n3\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn continue_n_resumes_outer() {
        let script =
            "for i in 1 2; do for j in a b; do continue 2; echo no; done; echo no2; done; echo $i";
        let expected = (0, "2\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn continue_outside_loop() {
        let script = "continue; echo st=$?";
        let expected = (
            0,
            "st=0\n".to_string(),
            "bash: line 1: continue: only meaningful in a `for', `while', or `until' loop\n"
                .to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn continue_in_while() {
        let script =
            "n=0; while [ $n -lt 3 ]; do n=$((n+1)); [ $n = 2 ] && continue; echo $n; done";
        let expected = (0, "1\n3\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

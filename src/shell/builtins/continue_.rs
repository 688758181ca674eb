//! `continue [n]`: resume the next iteration of the n-th enclosing loop.

use crate::shell::Shell;
use crate::shell::error::ShellError;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    match loop_count(sh, "continue", &args, io).await {
        Ok(n) => Err(Flow::Continue(n)),
        Err(status) => Ok(status),
    }
}

/// The loop count of `break`/`continue`, or the status after reporting why there is none.
pub(crate) async fn loop_count(
    sh: &Shell,
    name: &str,
    args: &[String],
    io: &Fds,
) -> Result<usize, i32> {
    let (msg, status) = match args.first().map(|a| (a, a.parse::<i64>())) {
        None => (None, 1),
        Some((_, Ok(n))) if n >= 1 => (None, n as usize as i32),
        Some((a, Ok(_))) => (Some(format!("{name}: {a}: loop count out of range")), 1),
        Some((a, Err(_))) => (Some(format!("{name}: {a}: numeric argument required")), 128),
    };
    if let Some(m) = msg {
        sh.report(&io.stderr(), &ShellError::Builtin(m)).await;
        return Err(status);
    }
    if sh.loop_depth == 0 {
        let m = format!("{name}: only meaningful in a `for', `while', or `until' loop");
        sh.report(&io.stderr(), &ShellError::Builtin(m)).await;
        return Err(0);
    }
    Ok((status as usize).min(sh.loop_depth))
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
            "forkbox: continue: only meaningful in a `for', `while', or `until' loop\n".to_string(),
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

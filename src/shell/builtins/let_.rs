//! `let expr ...`: evaluate arithmetic; status 0 if the last value is non-zero.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, mut args: Vec<String>, io: &Fds) -> Exec<i32> {
    // A first `--` ends let's (empty) set of options.
    if args.first().is_some_and(|a| a == "--") {
        args.remove(0);
    }
    if args.is_empty() {
        return super::fail(sh, io, "let: expression expected".into(), 1).await;
    }
    let mut last = 0;
    for a in &args {
        match crate::shell::arith::eval_str(sh, a) {
            Ok(v) => last = v,
            Err(e) => {
                if let Some(name) = e.unbound() {
                    let err = crate::shell::ShellError::Unbound(name.to_string());
                    return sh.fail(err, io).await;
                }
                return super::fail(sh, io, format!("let: {e}"), 1).await;
            }
        }
    }
    Ok(i32::from(last == 0))
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn let_assigns() {
        let script = "let a=2*3 b=a+1; echo $a $b";
        let expected = (0, "6 7\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn let_status_from_last() {
        let script = "let 0; echo $?; let 1 0; echo $?; let 0 2; echo $?";
        let expected = (0, "1\n1\n0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn let_no_args() {
        let script = "let; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: let: expression expected\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn let_syntax_error() {
        let script = "let '1+'; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: let: 1+: syntax error: operand expected (error token is \"+\")\n"
                .to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn let_division_by_zero() {
        let script = "let 'x=1/0'; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: let: x=1/0: division by 0 (error token is \"0\")\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }
}

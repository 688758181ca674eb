//! `eval [arg ...]`: run the arguments, joined by spaces, as shell input.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let text = args.join(" ");
    sh.exec_nested_text("eval", &text, io).await
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn eval_runs_joined_args() {
        let script = "x='echo hi'; eval $x there";
        let expected = (0, "hi there\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn eval_sets_variables() {
        let script = "eval 'a=1; b=$((a+1))'; echo $a $b";
        let expected = (0, "1 2\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn eval_status() {
        let script = "eval false; echo $?; eval; echo $?";
        let expected = (0, "1\n0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

//! `false`: return an unsuccessful result.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(_sh: &mut Shell, _args: Vec<String>, _io: &Fds) -> Exec<i32> {
    Ok(1)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn false_fails() {
        let script = "false; echo $?; false --help; echo $?";
        let expected = (0, "1\n1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn false_negated() {
        let script = "! false; echo $?";
        let expected = (0, "0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

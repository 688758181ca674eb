//! `:` and `true`: do nothing, successfully. `hash` shares it: there is no PATH cache.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(_sh: &mut Shell, _args: Vec<String>, _io: &Fds) -> Exec<i32> {
    Ok(0)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn colon_and_true_succeed() {
        let script = "false; :; echo $?; false; true extra args; echo $?";
        let expected = (0, "0\n0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

//! `break [n]`: leave n enclosing loops.

use crate::shell::Shell;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    match super::continue_::loop_count(sh, "break", &args, io).await? {
        // A count out of range leaves every loop, with the status of the failed `break`.
        Ok(usize::MAX) => Err(Flow::Break(sh.loop_depth, 1)),
        Ok(n) => Err(Flow::Break(n.min(sh.loop_depth), 0)),
        Err(status) => Ok(status),
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn break_leaves_loop() {
        let script = "for i in 1 2 3; do echo $i; break; done; echo st=$?";
        let expected = (0, "1\nst=0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn break_n_leaves_outer_loops() {
        let script = "for i in 1 2; do for j in a b; do echo $i$j; break 2; done; done";
        let expected = (0, "1a\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn break_outside_loop_is_harmless() {
        let script = "break; echo st=$?";
        let expected = (
            0,
            "st=0\n".to_string(),
            "bash: line 1: break: only meaningful in a `for', `while', or `until' loop\n"
                .to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn break_larger_than_depth_leaves_all() {
        let script = "for i in 1 2; do for j in 1 2; do break 5; done; echo no; done; echo out";
        let expected = (0, "out\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

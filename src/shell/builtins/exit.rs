//! `exit [n]`: exit the shell with status n (default: the last command's).

use crate::shell::Shell;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let args = match args.first() {
        Some(a) if a == "--" => &args[1..],
        _ => &args[..],
    };
    let status = match args.first() {
        None => match sh.trap_saved {
            Some((0, saved)) => saved,
            _ => sh.last_status,
        },
        Some(a) => match a.trim().parse::<i64>() {
            Ok(n) => (n & 0xff) as i32,
            Err(_) => {
                super::fail(sh, io, format!("exit: {a}: numeric argument required"), 2).await?;
                2
            }
        },
    };
    if args.len() > 1 && status != 2 {
        // bash reports it and still ends the shell, with status 1.
        super::fail(sh, io, "exit: too many arguments".into(), 1).await?;
        return Err(Flow::Exit(1));
    }
    Err(Flow::Exit(in_place_exit_trap(sh, status, io).await))
}

/// bash runs the EXIT trap from `exit` itself: inside a function the trap sees its frames
/// (`FUNCNAME`, locals). Elsewhere it runs as the shell ends.
async fn in_place_exit_trap(sh: &mut Shell, status: i32, io: &Fds) -> i32 {
    if sh.call_depth > 0 && sh.in_trap == 0 {
        sh.run_exit_handler(status, io).await
    } else {
        status
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn exit_with_status() {
        let script = "exit 7; echo no";
        let expected = (7, "".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn exit_default_is_last_status() {
        let script = "false; exit";
        let expected = (1, "".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn exit_wraps_modulo_256() {
        let script = "exit 258";
        let expected = (2, "".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn exit_negative() {
        let script = "exit -1";
        let expected = (255, "".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn exit_non_numeric() {
        let script = "exit abc";
        let expected = (
            2,
            "".to_string(),
            "bash: line 1: exit: abc: numeric argument required\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn exit_in_subshell_only_leaves_it() {
        let script = "(exit 4); echo $?";
        let expected = (0, "4\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn exit_runs_exit_trap() {
        let script = "trap 'echo bye' EXIT; exit 2";
        let expected = (2, "bye\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

//! `return [n]`: return from a shell function or sourced script.

use crate::shell::Shell;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if sh.call_depth == 0 && sh.source_depth == 0 {
        return super::fail(
            sh,
            io,
            "return: can only `return' from a function or sourced script".into(),
            2,
        )
        .await;
    }
    let args = match args.first() {
        Some(a) if a == "--" => &args[1..],
        _ => &args[..],
    };
    let status = match args.first() {
        None => match sh.trap_saved {
            Some((n, saved)) if n != crate::shell::jobs::TRAP_DEBUG => saved,
            _ => sh.last_status,
        },
        Some(a) => match a.trim().parse::<i64>() {
            Ok(n) => (n & 0xff) as i32,
            Err(_) => {
                super::fail(sh, io, format!("return: {a}: numeric argument required"), 2).await?;
                2
            }
        },
    };
    if args.len() > 1 && status != 2 {
        // Like `exit 1 2`: reported, and the shell ends with status 1.
        super::fail(sh, io, "return: too many arguments".into(), 1).await?;
        return Err(Flow::Exit(1));
    }
    Err(Flow::Return(status))
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn return_sets_status() {
        let script = "f() { return 3; echo no; }; f; echo $?";
        let expected = (0, "3\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn return_default_last_status() {
        let script = "f() { false; return; }; f; echo $?";
        let expected = (0, "1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn return_outside_function() {
        let script = "return 1; echo $?";
        let expected = (
            0,
            "2\n".to_string(),
            "bash: line 1: return: can only `return' from a function or sourced script\n"
                .to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn return_wraps() {
        let script = "f() { return 257; }; f; echo $?";
        let expected = (0, "1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn return_from_sourced_file() {
        let script = "printf 'echo in\\nreturn 4\\necho no\\n' > /s; . /s; echo $?";
        let expected = (0, "in\n4\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

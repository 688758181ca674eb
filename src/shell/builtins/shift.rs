//! `shift [n]`: drop the first n positional parameters.

use crate::shell::Shell;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let args = match args.first() {
        Some(a) if a == "--" => &args[1..],
        _ => &args[..],
    };
    if args.len() > 1 {
        // As `exit 1 2`: reported, and the shell ends with status 1.
        super::fail(sh, io, "shift: too many arguments".into(), 1).await?;
        return Err(Flow::Exit(1));
    }
    let n = match args.first() {
        None => 1,
        Some(a) => match a.trim().parse::<i64>().map(usize::try_from) {
            Ok(Ok(n)) => n,
            // `-0` is 0; a count below it is out of range.
            Ok(Err(_)) => {
                return super::fail(sh, io, format!("shift: {a}: shift count out of range"), 1)
                    .await;
            }
            Err(_) => {
                return super::fail(sh, io, format!("shift: {a}: numeric argument required"), 1)
                    .await;
            }
        },
    };
    if n > sh.positional.len() {
        // Said only with `shift_verbose`, which POSIX mode implies; the count as written.
        if sh.shopts.on("shift_verbose") || sh.opts.posix {
            let count = args.first().map(|a| format!("{a}: ")).unwrap_or_default();
            let msg = format!("shift: {count}shift count out of range");
            return super::fail(sh, io, msg, 1).await;
        }
        return Ok(1);
    }
    sh.positional.drain(..n);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn shift_drops() {
        let script = "set -- a b c; shift; echo $@; shift 2; echo $#";
        let expected = (0, "b c\n0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn shift_too_far() {
        let script = "set -- a; shift 2; echo $? $#";
        let expected = (0, "1 1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn shift_non_numeric() {
        let script = "set -- a; shift x; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: shift: x: numeric argument required\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn shift_negative() {
        let script = "set -- a; shift -1; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: shift: -1: shift count out of range\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn shift_in_function_is_local_to_args() {
        let script = "f() { shift; echo $@; }; set -- x y; f 1 2 3; echo $@";
        let expected = (0, "2 3\nx y\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

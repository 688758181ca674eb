//! `shift [n]`: drop the first n positional parameters.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let n = match args.first() {
        None => 1,
        Some(a) => match a.trim().parse::<usize>() {
            Ok(n) => n,
            Err(_) if a.trim().parse::<i64>().is_ok() => {
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
        return Ok(1);
    }
    sh.positional.drain(..n);
    Ok(0)
}

//! `exit [n]`: exit the shell with status n (default: the last command's).

use crate::shell::Shell;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let status = match args.first() {
        None => sh.last_status,
        Some(a) => match a.trim().parse::<i64>() {
            Ok(n) => (n & 0xff) as i32,
            Err(_) => {
                super::fail(sh, io, format!("exit: {a}: numeric argument required"), 2).await?;
                2
            }
        },
    };
    if args.len() > 1 && status != 2 {
        return super::fail(sh, io, "exit: too many arguments".into(), 1).await;
    }
    Err(Flow::Exit(status))
}

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
    let status = match args.first() {
        None => sh.last_status,
        Some(a) => match a.trim().parse::<i64>() {
            Ok(n) => (n & 0xff) as i32,
            Err(_) => {
                super::fail(sh, io, format!("return: {a}: numeric argument required"), 2).await?;
                2
            }
        },
    };
    Err(Flow::Return(status))
}

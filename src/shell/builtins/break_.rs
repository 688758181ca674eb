//! `break [n]`: leave n enclosing loops.

use crate::shell::Shell;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    match super::continue_::loop_count(sh, "break", &args, io).await {
        Ok(n) => Err(Flow::Break(n)),
        Err(status) => Ok(status),
    }
}

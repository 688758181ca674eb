//! `:` and `true`: do nothing, successfully. `hash` shares it: there is no PATH cache.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(_sh: &mut Shell, _args: Vec<String>, _io: &Fds) -> Exec<i32> {
    Ok(0)
}

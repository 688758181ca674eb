//! `local [name[=value] ...]`: variables visible only in the running function (and the
//! functions it calls).

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if sh.local_frames.is_empty() {
        return super::fail(sh, io, "local: can only be used in a function".into(), 1).await;
    }
    super::declare::declare(sh, "local", args, io, true).await
}

//! `trap`: signal and exit handlers. Not supported: a session has no signals to catch, and
//! silently ignoring an EXIT handler would skip the script's cleanup.

use crate::shell::Shell;
use crate::shell::error::ShellError;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, _args: Vec<String>, io: &Fds) -> Exec<i32> {
    sh.fail(ShellError::Unsupported("trap".into()), io).await
}

//! Builtins forkbox does not support (job control: `bg`, `fg`, `jobs`, `disown`): each fails with
//! `bash: line N: NAME: not supported` and status 2.

use crate::shell::Shell;
use crate::shell::error::ShellError;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, name: String, io: &Fds) -> Exec<i32> {
    sh.fail(ShellError::Unsupported(name), io).await
}

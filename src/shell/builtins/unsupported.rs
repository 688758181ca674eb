//! Builtins forkbox does not support (`alias`, job control, `shopt`): each fails with
//! `forkbox: NAME: not supported` and status 2. Also `umask`, which only reports.

use crate::shell::Shell;
use crate::shell::error::ShellError;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, name: String, io: &Fds) -> Exec<i32> {
    sh.fail(ShellError::Unsupported(name), io).await
}

/// `umask`: files get their mode from the filesystem; the mask is always 0022.
pub(crate) async fn umask(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if args.is_empty() {
        let _ = io.stdout().write_str("0022\n").await;
        return Ok(0);
    }
    sh.fail(ShellError::Unsupported("umask MODE".into()), io)
        .await
}

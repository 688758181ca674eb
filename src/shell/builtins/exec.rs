//! `exec COMMAND [ARGS]`: run the command, then end the shell with its status.
//! `exec` with only redirections (making them permanent) is not supported.

use crate::shell::Shell;
use crate::shell::error::ShellError;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if args.is_empty() {
        return sh
            .fail(
                ShellError::Unsupported("exec without a command (permanent redirections)".into()),
                io,
            )
            .await;
    }
    let status = sh.run_command(args, Vec::new(), io).await?;
    Err(Flow::Exit(status))
}

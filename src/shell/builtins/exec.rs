//! `exec COMMAND [ARGS]`: run the command, then end the shell with its status.
//! `exec` with only redirections makes them permanent (see `Shell::exec_redirections`).

use crate::shell::Shell;
use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if args.is_empty() {
        // Only redirections: handled where they are known (`exec_redirections`).
        return Ok(0);
    }
    let status = sh.run_command(args, Vec::new(), io).await?;
    Err(Flow::Exit(status))
}

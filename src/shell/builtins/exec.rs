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

#[cfg(test)]
mod tests {
    use crate::shell::testing::{run, run_on, shell};

    #[tokio::test]
    async fn exec_runs_the_command_and_ends_the_shell() {
        let expected = (0, "hi\n".to_string(), String::new());
        assert_eq!(run("exec echo hi; echo no").await, expected);
    }

    #[tokio::test]
    async fn exec_status_is_the_commands() {
        let mut sh = shell();
        let expected = (1, String::new(), String::new());
        assert_eq!(run_on(&mut sh, "exec false; echo no").await, expected);
        assert_eq!(sh.exit_requested(), Some(1));
    }
}

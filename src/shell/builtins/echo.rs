//! `echo [-neE] [arg ...]`: write arguments to standard output (bash's builtin semantics;
//! like bash's, it has no `--help`). What it writes is [`forkbox_commands::cmd::echo::render`]:
//! one implementation, which launchers without a shell use too.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if io.is_closed(1) {
        return super::fail(sh, io, "echo: write error: Bad file descriptor".into(), 1).await;
    }
    // `shopt -s xpg_echo`: escapes are interpreted unless `-E` says otherwise.
    let args = if sh.shopts.on("xpg_echo") {
        std::iter::once("-e".to_string()).chain(args).collect()
    } else {
        args
    };
    let out = forkbox_commands::cmd::echo::render(&args);
    match io.stdout().write_all(&out).await {
        Ok(()) => Ok(0),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(forkbox_commands::STATUS_BROKEN_PIPE)
        }
        Err(_) => Ok(1),
    }
}

//! Shell builtins: commands that read or change the shell's own state. One file each;
//! the clap doc comments of each args struct are its `--help`.

use std::future::Future;
use std::pin::Pin;

use super::Shell;
use super::error::ShellError;
use super::exec::Exec;
use super::redirect::Fds;

pub(crate) mod alias;
mod break_;
pub(crate) mod cd;
mod colon;
mod command;
pub(crate) mod complete;
mod continue_;
mod declare;
mod dirstack;
mod echo;
mod eval;
mod exec;
pub(crate) mod exit;
mod export;
mod false_;
pub(crate) mod getopts;
mod jobs;
mod kill;
mod let_;
mod local;
mod mapfile;
mod misc;
mod pwd;
mod read;
mod readonly;
mod return_;
pub(crate) mod set;
mod shift;
pub(crate) mod shopt;
pub(crate) mod snapshot;
mod source;
mod test_;
mod trap;
pub(crate) mod type_;
pub(crate) mod umask;
mod unset;
mod unsupported;
mod wait;

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs builtin `name`, one the registry resolved as
/// [`forkbox_commands::CommandKind::Builtin`].
pub(crate) fn run<'a>(
    sh: &'a mut Shell,
    name: &str,
    args: Vec<String>,
    io: &'a Fds,
) -> BoxFut<'a, Exec<i32>> {
    match name {
        "." | "source" => Box::pin(source::run(sh, args, io)),
        ":" | "true" => Box::pin(colon::run(sh, args, io)),
        "false" => Box::pin(false_::run(sh, args, io)),
        "break" => Box::pin(break_::run(sh, args, io)),
        "cd" => Box::pin(cd::run(sh, args, io)),
        "command" => Box::pin(command::run(sh, args, io)),
        "continue" => Box::pin(continue_::run(sh, args, io)),
        "declare" | "typeset" => Box::pin(declare::run(sh, args, io)),
        "echo" => Box::pin(echo::run(sh, args, io)),
        "eval" => Box::pin(eval::run(sh, args, io)),
        "exec" => Box::pin(exec::run(sh, args, io)),
        "exit" => Box::pin(exit::run(sh, args, io)),
        "export" => Box::pin(export::run(sh, args, io)),
        "getopts" => Box::pin(getopts::run(sh, args, io)),
        "pushd" => Box::pin(dirstack::pushd(sh, args, io)),
        "popd" => Box::pin(dirstack::popd(sh, args, io)),
        "dirs" => Box::pin(dirstack::dirs(sh, args, io)),
        "mapfile" | "readarray" => Box::pin(mapfile::run(sh, args, io)),
        "alias" => Box::pin(alias::alias(sh, args, io)),
        "unalias" => Box::pin(alias::unalias(sh, args, io)),
        "builtin" => Box::pin(misc::builtin(sh, args, io)),
        "enable" => Box::pin(misc::enable(sh, args, io)),
        "times" => Box::pin(misc::times(sh, args, io)),
        "logout" => Box::pin(misc::logout(sh, args, io)),
        "compgen" => Box::pin(complete::compgen(sh, args, io)),
        "complete" => Box::pin(complete::complete(sh, args, io)),
        "hash" => Box::pin(colon::run(sh, args, io)),
        "jobs" => Box::pin(jobs::jobs(sh, args, io)),
        "disown" => Box::pin(jobs::disown(sh, args, io)),
        "fg" | "bg" => {
            let name = name.to_string();
            Box::pin(async move { jobs::fg_bg(sh, &name, io).await })
        }
        "kill" => Box::pin(kill::run(sh, args, io)),
        "ps" => Box::pin(jobs::ps(sh, args, io)),
        "suspend" => Box::pin(jobs::suspend(sh, args, io)),
        "let" => Box::pin(let_::run(sh, args, io)),
        "local" => Box::pin(local::run(sh, args, io)),
        "pwd" => Box::pin(pwd::run(sh, args, io)),
        "read" => Box::pin(read::run(sh, args, io)),
        "readonly" => Box::pin(readonly::run(sh, args, io)),
        "return" => Box::pin(return_::run(sh, args, io)),
        "set" => Box::pin(set::run(sh, args, io)),
        "shift" => Box::pin(shift::run(sh, args, io)),
        "shopt" => Box::pin(shopt::run(sh, args, io)),
        "snapshot" => Box::pin(snapshot::run(sh, args, io)),
        "trap" => Box::pin(trap::run(sh, args, io)),
        "type" => Box::pin(type_::run(sh, args, io)),
        "umask" => Box::pin(umask::run(sh, args, io)),
        "unset" => Box::pin(unset::run(sh, args, io)),
        "wait" => Box::pin(wait::run(sh, args, io)),
        "sh" | "bash" => {
            let mut argv = vec![name.to_string()];
            argv.extend(args);
            Box::pin(async move { Ok(sh.run_nested(argv, &[], io).await) })
        }
        other => {
            let other = other.to_string();
            Box::pin(unsupported::run(sh, other, io))
        }
    }
}

/// Runs `test` or `[` with the shell's own operators (see `test_`).
pub(crate) fn test<'a>(
    sh: &'a mut Shell,
    name: &'a str,
    args: Vec<String>,
    io: &'a Fds,
) -> BoxFut<'a, Exec<i32>> {
    Box::pin(test_::run(sh, name, args, io))
}

/// Runs `printf` as the builtin (`-v var`, builtin-worded messages; see `test_`).
pub(crate) fn printf<'a>(
    sh: &'a mut Shell,
    args: Vec<String>,
    io: &'a Fds,
) -> BoxFut<'a, Exec<i32>> {
    Box::pin(test_::printf(sh, args, io))
}

/// Parses builtin arguments with clap. `--help` prints to stdout and gives `Err(0)`;
/// a usage error prints `forkbox: NAME: …` and gives `Err(2)`, like bash.
pub(crate) async fn parse<T: clap::Parser>(
    sh: &Shell,
    io: &Fds,
    name: &str,
    args: &[String],
) -> Result<T, i32> {
    match forkbox_commands::parse_usage::<T>(name, args) {
        forkbox_commands::Usage::Args(t) => Ok(t),
        forkbox_commands::Usage::Help(text) => {
            let _ = io.stdout().write_str(&text).await;
            Err(0)
        }
        forkbox_commands::Usage::Error(msg) => {
            sh.report(
                &io.stderr(),
                &ShellError::Builtin(msg.trim_end().to_string()),
            )
            .await;
            Err(2)
        }
    }
}

/// Reports a builtin's own failure (`cd: x: No such file or directory`) and gives `status`.
pub(crate) async fn fail(sh: &Shell, io: &Fds, msg: String, status: i32) -> Exec<i32> {
    sh.report(&io.stderr(), &ShellError::Builtin(msg)).await;
    Ok(status)
}

/// Whether `s` is a valid variable name.
pub(crate) fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f == '_' || f.is_ascii_alphabetic())
        && c.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

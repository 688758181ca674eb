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
mod caller;
pub(crate) mod cd;
mod colon;
mod command;
pub(crate) mod complete;
mod continue_;
mod declare;
pub(crate) mod dirstack;
mod echo;
mod eval;
mod exec;
pub(crate) mod exit;
mod export;
mod false_;
pub(crate) mod getopts;
mod history;
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
pub(crate) mod ulimit;
pub(crate) mod umask;
mod unset;
mod unsupported;
mod wait;

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs builtin `name`, one the registry resolved as
/// [`forkbox_commands::CommandKind::Builtin`]. On a full device (`> /dev/full`) a
/// builtin that wrote anything fails as bash's do: `NAME: write error: REASON`, 1.
pub(crate) fn run<'a>(
    sh: &'a mut Shell,
    name: &str,
    args: Vec<String>,
    io: &'a Fds,
) -> BoxFut<'a, Exec<i32>> {
    let out = io.stdout();
    let Some(before) = out.tried() else {
        return dispatch(sh, name, args, io);
    };
    let name = name.to_string();
    Box::pin(async move {
        let status = dispatch(sh, &name, args, io).await?;
        if out.tried().is_some_and(|n| n > before) {
            let msg = format!("{name}: write error: No space left on device");
            return fail(sh, io, msg, 1).await;
        }
        Ok(status)
    })
}

fn dispatch<'a>(
    sh: &'a mut Shell,
    name: &str,
    args: Vec<String>,
    io: &'a Fds,
) -> BoxFut<'a, Exec<i32>> {
    // `NAME --help`: bash's help for the builtin, status 2 (the builtins that take no
    // options read `--help` as an operand).
    if args.first().is_some_and(|a| a == "--help")
        && !matches!(
            name,
            ":" | "true" | "false" | "echo" | "test" | "[" | "bind"
        )
        && let Some(text) = forkbox_commands::cmd::help::builtin_help(name)
    {
        return Box::pin(async move {
            let _ = io.stdout().write_str(&text).await;
            Ok(2)
        });
    }
    if let Some(letters) = option_letters(name)
        && !(name == "local" && sh.local_frames.is_empty())
        // `hash` with hashing off says so before looking at its options.
        && (name != "hash" || sh.opts.hashall)
        && let Some(what) = bad_option(&args, letters)
    {
        let name = name.to_string();
        return Box::pin(async move { option_error(sh, io, &name, &what).await });
    }
    match name {
        "." | "source" => {
            let name = name.to_string();
            Box::pin(source::run(sh, name, args, io))
        }
        ":" | "true" => Box::pin(colon::run(sh, args, io)),
        "false" => Box::pin(false_::run(sh, args, io)),
        "break" => Box::pin(break_::run(sh, args, io)),
        "caller" => Box::pin(caller::run(sh, args, io)),
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
        "history" => Box::pin(history::history(sh, args, io)),
        "fc" => Box::pin(history::fc(sh, args, io)),
        "pushd" => Box::pin(dirstack::pushd(sh, args, io)),
        "popd" => Box::pin(dirstack::popd(sh, args, io)),
        "dirs" => Box::pin(dirstack::dirs(sh, args, io)),
        "mapfile" | "readarray" => Box::pin(mapfile::run(sh, args, io)),
        "alias" => Box::pin(alias::alias(sh, args, io)),
        "unalias" => Box::pin(alias::unalias(sh, args, io)),
        "builtin" => Box::pin(misc::builtin(sh, args, io)),
        "enable" => Box::pin(misc::enable(sh, args, io)),
        "times" => Box::pin(misc::times(sh, args, io)),
        "bind" => Box::pin(history::bind(sh, args, io)),
        "logout" => Box::pin(misc::logout(sh, args, io)),
        "compgen" => Box::pin(complete::compgen(sh, args, io)),
        "complete" => Box::pin(complete::complete(sh, args, io)),
        "compopt" => Box::pin(complete::compopt(sh, args, io)),
        "hash" => Box::pin(misc::hash(sh, args, io)),
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
        "ulimit" => Box::pin(ulimit::run(sh, args, io)),
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

/// bash's `help` given patterns: its answer on stdout, its error after the shell's
/// prefix (`bash: line 1: help: …`).
pub(crate) async fn help(
    sh: &mut Shell,
    answer: forkbox_commands::cmd::help::Answer,
    io: &Fds,
) -> Exec<i32> {
    let _ = io.stdout().write_str(&answer.out).await;
    if let Some(m) = answer.message {
        let mut err = format!("{}{m}\n", sh.message_prefix());
        if answer.usage {
            err.push_str(forkbox_commands::cmd::help::USAGE);
            err.push('\n');
        }
        let _ = io.stderr().write_str(&err).await;
    }
    Ok(answer.status)
}

/// Parses builtin arguments with clap. `--help` prints to stdout and gives `Err(0)`;
/// a usage error prints `bash: line N: NAME: …` and gives `Err(2)`, like bash.
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

/// The option letters of builtins whose options are checked before they run (see
/// [`bad_option`]); the others check their own (`declare +Z`, `kill -9`, `pushd -1`).
fn option_letters(name: &str) -> Option<&'static str> {
    Some(match name {
        "alias" => "p",
        "builtin" | "eval" | "getopts" | "source" | "." | "times" => "",
        "cd" => "LPe",
        "command" => "pVv",
        "declare" | "typeset" | "local" => "aAcfFgiIlnrtuxp",
        "disown" => "har",
        "enable" => "adnpsf:",
        "exec" => "cla:",
        "export" => "aAfnp",
        "hash" => "lrp:dt",
        "jobs" => "lnprsx",
        "mapfile" | "readarray" => "d:n:O:s:tu:C:c:",
        "printf" => "v:",
        "pwd" => "LP",
        "read" => "ersa:d:i:n:N:p:t:u:",
        "readonly" => "aAfp",
        "shopt" => "pqsuo",
        "suspend" => "f",
        "trap" => "lp",
        "type" => "afptP",
        "umask" => "pS",
        "unalias" => "a",
        "unset" => "fvn",
        "wait" => "fnp:",
        _ => return None,
    })
}

/// bash's usage synopsis of builtin `name` (the text after `NAME: usage: `).
pub(crate) fn usage_of(name: &str) -> Option<&'static str> {
    Some(match name {
        "alias" => "alias [-p] [name[=value] ... ]",
        "builtin" => "builtin [shell-builtin [arg ...]]",
        "caller" => "caller [expr]",
        "cd" => "cd [-L|[-P [-e]] [-@]] [dir]",
        "command" => "command [-pVv] command [arg ...]",
        "compgen" => {
            "compgen [-abcdefgjksuv] [-o option] [-A action] [-G globpat] [-W wordlist] [-F function] [-C command] [-X filterpat] [-P prefix] [-S suffix] [word]"
        }
        "complete" => {
            "complete [-abcdefgjksuv] [-pr] [-DEI] [-o option] [-A action] [-G globpat] [-W wordlist] [-F function] [-C command] [-X filterpat] [-P prefix] [-S suffix] [name ...]"
        }
        "compopt" => "compopt [-o|+o option] [-DEI] [name ...]",
        "declare" => {
            "declare [-aAfFgiIlnrtux] [name[=value] ...] or declare -p [-aAfFilnrtux] [name ...]"
        }
        "typeset" => {
            "typeset [-aAfFgiIlnrtux] name[=value] ... or typeset -p [-aAfFilnrtux] [name ...]"
        }
        "local" => "local [option] name[=value] ...",
        "dirs" => "dirs [-clpv] [+N] [-N]",
        "disown" => "disown [-h] [-ar] [jobspec ... | pid ...]",
        "enable" => "enable [-a] [-dnps] [-f filename] [name ...]",
        "eval" => "eval [arg ...]",
        "exec" => "exec [-cl] [-a name] [command [argument ...]] [redirection ...]",
        "export" => "export [-fn] [name[=value] ...] or export -p",
        "getopts" => "getopts optstring name [arg ...]",
        "hash" => "hash [-lr] [-p pathname] [-dt] [name ...]",
        "history" => {
            "history [-c] [-d offset] [n] or history -anrw [filename] or history -ps arg [arg...]"
        }
        "fc" => "fc [-e ename] [-lnr] [first] [last] or fc -s [pat=rep] [command]",
        "jobs" => "jobs [-lnprs] [jobspec ...] or jobs -x command [args]",
        "kill" => "kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]",
        "mapfile" => {
            "mapfile [-d delim] [-n count] [-O origin] [-s count] [-t] [-u fd] [-C callback] [-c quantum] [array]"
        }
        "readarray" => {
            "readarray [-d delim] [-n count] [-O origin] [-s count] [-t] [-u fd] [-C callback] [-c quantum] [array]"
        }
        "popd" => "popd [-n] [+N | -N]",
        "printf" => "printf [-v var] format [arguments]",
        "pushd" => "pushd [-n] [+N | -N | dir]",
        "pwd" => "pwd [-LP]",
        "read" => {
            "read [-ers] [-a array] [-d delim] [-i text] [-n nchars] [-N nchars] [-p prompt] [-t timeout] [-u fd] [name ...]"
        }
        "readonly" => "readonly [-aAf] [name[=value] ...] or readonly -p",
        "set" => "set [-abefhkmnptuvxBCEHPT] [-o option-name] [--] [-] [arg ...]",
        "shopt" => "shopt [-pqsu] [-o] [optname ...]",
        "source" => "source filename [arguments]",
        "." => ". filename [arguments]",
        "suspend" => "suspend [-f]",
        "times" => "times",
        "bind" => {
            "bind [-lpsvPSVX] [-m keymap] [-f filename] [-q name] [-u name] [-r keyseq] [-x keyseq:shell-command] [keyseq:readline-function or readline-command]"
        }
        "trap" => "trap [-lp] [[arg] signal_spec ...]",
        "type" => "type [-afptP] name [name ...]",
        "ulimit" => "ulimit [-SHabcdefiklmnpqrstuvxPRT] [limit]",
        "umask" => "umask [-p] [-S] [mode]",
        "unalias" => "unalias [-a] name [name ...]",
        "unset" => "unset [-f] [-v] [-n] [name ...]",
        "wait" => "wait [-fn] [-p var] [id ...]",
        _ => return None,
    })
}

/// What is wrong with the options of `args` given the option `letters` (a letter followed
/// by `:` takes an argument, in the same word or the next), as bash's option parser
/// words it: `-Z: invalid option`, `-d: option requires an argument`. Options end at
/// `--`, at `-` alone, and at the first word not starting with `-`; `--word` is left to
/// the builtin (`--help`).
pub(crate) fn bad_option(args: &[String], letters: &str) -> Option<String> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" || a == "-" || !a.starts_with('-') || a.starts_with("--") {
            return None;
        }
        let mut chars = a[1..].chars();
        while let Some(c) = chars.next() {
            let Some(at) = letters.find(c).filter(|_| c != ':') else {
                return Some(format!("-{c}: invalid option"));
            };
            if letters[at + c.len_utf8()..].starts_with(':') {
                if chars.as_str().is_empty() {
                    if args.get(i + 1).is_none() {
                        return Some(format!("-{c}: option requires an argument"));
                    }
                    i += 1;
                }
                break;
            }
        }
        i += 1;
    }
    None
}

/// Writes bash's usage line of builtin `name` on stderr (no program prefix); status 2.
pub(crate) async fn usage(io: &Fds, name: &str) -> Exec<i32> {
    if let Some(u) = usage_of(name) {
        let _ = io
            .stderr()
            .write_str(&format!("{name}: usage: {u}\n"))
            .await;
    }
    Ok(2)
}

/// The one report of a bad option to a builtin: `NAME: -Z: invalid option` and bash's
/// usage line, status 2 (`opt` as the user wrote it, `-Z`).
pub(crate) async fn invalid_option(sh: &Shell, io: &Fds, name: &str, opt: &str) -> Exec<i32> {
    option_error(sh, io, name, &format!("{opt}: invalid option")).await
}

/// Reports `NAME: WHAT` (a [`bad_option`] finding) and bash's usage line; status 2.
pub(crate) async fn option_error(sh: &Shell, io: &Fds, name: &str, what: &str) -> Exec<i32> {
    sh.report(
        &io.stderr(),
        &ShellError::Builtin(format!("{name}: {what}")),
    )
    .await;
    usage(io, name).await
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

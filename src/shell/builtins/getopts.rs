//! `getopts optstring name [arg ...]`: parse options one call at a time.
//!
//! `OPTIND` is the index of the next argument; inside a cluster (`-abc`) the position of
//! the next letter is kept in the shell ([`GetoptsPos`]) and forgotten when `OPTIND` is set
//! to another value. Errors print `illegal option -- x` and `option requires an argument
//! -- x` unless `OPTERR=0` or the optstring starts with `:` (silent mode, where `OPTARG`
//! names the letter).

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// Where getopts stands inside a cluster of letters: the `OPTIND` it last set and the
/// byte offset of the next letter in that argument (0: at the start of an argument).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GetoptsPos {
    optind: i64,
    offset: usize,
}

pub(crate) async fn run(sh: &mut Shell, mut args: Vec<String>, io: &Fds) -> Exec<i32> {
    // `--` ends getopts' own (empty) set of options.
    if args.first().is_some_and(|a| a == "--") {
        args.remove(0);
    }
    if args.len() < 2 {
        let msg = "getopts: usage: getopts optstring name [arg ...]\n";
        let _ = io.stderr().write_str(msg).await;
        return Ok(2);
    }
    let (optstring, name) = (&args[0], &args[1]);
    if !super::is_name(name) {
        return super::fail(
            sh,
            io,
            format!("getopts: `{name}': not a valid identifier"),
            1,
        )
        .await;
    }
    let argv: Vec<String> = if args.len() > 2 {
        args[2..].to_vec()
    } else {
        sh.positional.clone()
    };
    let silent = optstring.starts_with(':');
    let report = !silent && sh.get_str("OPTERR").is_none_or(|v| v.trim() != "0");
    let mut optind = sh
        .get_str("OPTIND")
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(1)
        .max(1);
    let mut offset = if sh.getopts.optind == optind {
        sh.getopts.offset
    } else {
        0
    };
    let idx = usize::try_from(optind - 1).unwrap_or(usize::MAX);
    let Some(arg) = argv.get(idx) else {
        // Past the end: bash leaves OPTIND just after the last argument.
        let last = i64::try_from(argv.len())
            .unwrap_or(i64::MAX)
            .saturating_add(1);
        return finish(sh, io, name, optind.min(last)).await;
    };
    if offset == 0 || offset >= arg.len() {
        if arg == "--" {
            return finish(sh, io, name, optind + 1).await;
        }
        if !arg.starts_with('-') || arg == "-" {
            return finish(sh, io, name, optind).await;
        }
        offset = 1;
    }
    let Some(c) = arg[offset..].chars().next() else {
        return finish(sh, io, name, optind).await;
    };
    offset += c.len_utf8();
    let rest = &arg[offset..];
    let at_end = rest.is_empty();
    let spec = optstring.trim_start_matches(':');
    let pos = if c == ':' { None } else { spec.find(c) };
    let Some(pos) = pos else {
        if report {
            complain(sh, io, &format!("illegal option -- {c}")).await;
        }
        let (next_ind, next_off) = if at_end {
            (optind + 1, 0)
        } else {
            (optind, offset)
        };
        return set(
            sh,
            io,
            name,
            "?",
            silent.then(|| c.to_string()),
            next_ind,
            next_off,
        )
        .await;
    };
    let takes_arg = spec[pos + c.len_utf8()..].starts_with(':');
    if !takes_arg {
        let (next_ind, next_off) = if at_end {
            (optind + 1, 0)
        } else {
            (optind, offset)
        };
        return set(sh, io, name, &c.to_string(), None, next_ind, next_off).await;
    }
    if !at_end {
        let value = rest.to_string();
        return set(sh, io, name, &c.to_string(), Some(value), optind + 1, 0).await;
    }
    optind += 1;
    match argv.get(idx + 1) {
        Some(value) => {
            let value = value.clone();
            set(sh, io, name, &c.to_string(), Some(value), optind + 1, 0).await
        }
        None => {
            if silent {
                return set(sh, io, name, ":", Some(c.to_string()), optind, 0).await;
            }
            if report {
                complain(sh, io, &format!("option requires an argument -- {c}")).await;
            }
            set(sh, io, name, "?", None, optind, 0).await
        }
    }
}

/// Sets `name`, `OPTARG` (unset for `None`) and `OPTIND`; status 0.
async fn set(
    sh: &mut Shell,
    io: &Fds,
    name: &str,
    value: &str,
    optarg: Option<String>,
    optind: i64,
    offset: usize,
) -> Exec<i32> {
    if let Err(e) = sh.set_var(name, value) {
        // A readonly NAME: bash reports it and getopts fails with 2.
        sh.report(&io.stderr(), &e).await;
        sh.getopts = GetoptsPos { optind, offset };
        return Ok(2);
    }
    // A readonly `OPTARG` or `OPTIND` is reported; the option is still given (status 0),
    // as in bash.
    let optarg = match optarg {
        Some(a) => sh.set_var("OPTARG", &a),
        None => sh.unset_var("OPTARG"),
    };
    let optind_set = sh.set_var("OPTIND", &optind.to_string());
    for e in [optarg.err(), optind_set.err()].into_iter().flatten() {
        sh.report(&io.stderr(), &e).await;
    }
    sh.getopts = GetoptsPos { optind, offset };
    Ok(0)
}

/// The end of the options: `name` is `?`, `OPTIND` the first operand; status 1.
async fn finish(sh: &mut Shell, io: &Fds, name: &str, optind: i64) -> Exec<i32> {
    match set(sh, io, name, "?", None, optind, 0).await? {
        2 => Ok(2),
        _ => Ok(1),
    }
}

/// getopts' own complaint about the arguments it parses: like getopt(3), it starts with
/// `$0` alone (`bash: illegal option -- x`), with no line, even in a function.
async fn complain(sh: &Shell, io: &Fds, msg: &str) {
    let _ = io
        .stderr()
        .write_str(&format!("{}: {msg}\n", sh.arg0))
        .await;
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn getopts_parses_flags_and_args() {
        let script =
            "set -- -a -b val rest; while getopts ab: o; do echo $o ${OPTARG-}; done; echo $OPTIND";
        let expected = (0, "a\nb val\n4\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn getopts_cluster() {
        let script = "set -- -ab -c x; while getopts abc: o; do echo $o ${OPTARG-}; done";
        let expected = (0, "a\nb\nc x\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn getopts_illegal_option() {
        let script = "set -- -z; getopts a o; echo $? $o";
        let expected = (
            0,
            "0 ?\n".to_string(),
            "bash: illegal option -- z\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn getopts_silent_mode() {
        let script = "set -- -z -a; getopts :a: o; echo $o $OPTARG; getopts :a: o; echo $o $OPTARG";
        let expected = (0, "? z\n: a\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn getopts_missing_argument() {
        let script = "set -- -a; getopts a: o; echo $? $o";
        let expected = (
            0,
            "0 ?\n".to_string(),
            "bash: option requires an argument -- a\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn getopts_explicit_args() {
        let script = "getopts x o -x; echo $o $OPTIND";
        let expected = (0, "x 2\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn getopts_stops_at_double_dash() {
        let script = "set -- -- -a; getopts a o; echo $? $OPTIND";
        let expected = (0, "1 2\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn getopts_usage() {
        let script = "getopts; echo $?";
        let expected = (
            0,
            "2\n".to_string(),
            "getopts: usage: getopts optstring name [arg ...]\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn getopts_opterr_zero() {
        let script = "OPTERR=0; set -- -z; getopts a o; echo $? $o";
        let expected = (0, "0 ?\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

//! `getconf`: system configuration values, as glibc's `getconf` names and prints them on
//! a 64-bit Linux. The values are the session's: its processors are [`super::nproc`]'s
//! share, its limits those a Debian system reports (what scripts size buffers by).

use async_trait::async_trait;

use crate::{CmdResult, Command, Context};

const USAGE: &str = "Usage: getconf [-v specification] variable_name [pathname]
       getconf -a [pathname]
";

const HELP: &str = "Usage: getconf [-v SPEC] VAR
  or:  getconf [-v SPEC] PATH_VAR PATH

Get the configuration value for variable VAR, or for variable PATH_VAR
for path PATH.  If SPEC is given, give values for compilation
environment SPEC.

";

/// Values that need no path (sysconf and confstr names), as glibc's getconf prints them.
const SYSTEM: &[(&str, &str)] = &[
    ("ARG_MAX", "2097152"),
    ("_POSIX_ARG_MAX", "2097152"),
    ("CHILD_MAX", "96365"),
    ("_POSIX_CHILD_MAX", "96365"),
    ("CLK_TCK", "100"),
    ("NGROUPS_MAX", "65536"),
    ("_POSIX_NGROUPS_MAX", "65536"),
    ("OPEN_MAX", "1024"),
    ("_POSIX_OPEN_MAX", "1024"),
    ("PAGESIZE", "4096"),
    ("PAGE_SIZE", "4096"),
    ("_NPROCESSORS_ONLN", "1"),
    ("_NPROCESSORS_CONF", "1"),
    ("LONG_BIT", "64"),
    ("WORD_BIT", "32"),
    ("CHAR_BIT", "8"),
    ("CHAR_MAX", "127"),
    ("CHAR_MIN", "-128"),
    ("SCHAR_MAX", "127"),
    ("SCHAR_MIN", "-128"),
    ("UCHAR_MAX", "255"),
    ("SHRT_MAX", "32767"),
    ("SHRT_MIN", "-32768"),
    ("USHRT_MAX", "65535"),
    ("INT_MAX", "2147483647"),
    ("INT_MIN", "-2147483648"),
    ("UINT_MAX", "4294967295"),
    ("ULONG_MAX", "18446744073709551615"),
    ("SSIZE_MAX", "32767"),
    ("MB_LEN_MAX", "16"),
    ("NZERO", "20"),
    ("LINE_MAX", "2048"),
    ("_POSIX2_LINE_MAX", "2048"),
    ("BC_BASE_MAX", "99"),
    ("BC_DIM_MAX", "2048"),
    ("BC_SCALE_MAX", "99"),
    ("BC_STRING_MAX", "1000"),
    ("COLL_WEIGHTS_MAX", "255"),
    ("EXPR_NEST_MAX", "32"),
    ("RE_DUP_MAX", "32767"),
    ("HOST_NAME_MAX", "64"),
    ("LOGIN_NAME_MAX", "256"),
    ("TTY_NAME_MAX", "32"),
    ("SYMLOOP_MAX", ""),
    ("STREAM_MAX", "16"),
    ("TZNAME_MAX", ""),
    ("IOV_MAX", "1024"),
    ("_POSIX_VERSION", "200809"),
    ("POSIX2_VERSION", "200809"),
    ("_POSIX2_VERSION", "200809"),
    ("_XOPEN_VERSION", "700"),
    ("PATH", "/bin:/usr/bin"),
    ("CS_PATH", "/bin:/usr/bin"),
    ("GNU_LIBC_VERSION", "glibc 2.36"),
    ("GNU_LIBPTHREAD_VERSION", "NPTL 2.36"),
];

/// Values about a file system, which need a PATH operand (pathconf names).
const PER_PATH: &[(&str, &str)] = &[
    ("LINK_MAX", "127"),
    ("_POSIX_LINK_MAX", "127"),
    ("MAX_CANON", "255"),
    ("_POSIX_MAX_CANON", "255"),
    ("MAX_INPUT", "255"),
    ("_POSIX_MAX_INPUT", "255"),
    ("NAME_MAX", "255"),
    ("_POSIX_NAME_MAX", "255"),
    ("PATH_MAX", "4096"),
    ("_POSIX_PATH_MAX", "4096"),
    ("PIPE_BUF", "4096"),
    ("_POSIX_PIPE_BUF", "4096"),
    ("FILESIZEBITS", "64"),
    ("POSIX_ALLOC_SIZE_MIN", "4096"),
    ("POSIX_REC_XFER_ALIGN", "4096"),
    ("SYMLINK_MAX", ""),
    ("_POSIX_CHOWN_RESTRICTED", "1"),
    ("_POSIX_NO_TRUNC", "1"),
    ("_POSIX_VDISABLE", "0"),
];

pub struct Getconf;

#[async_trait]
impl Command for Getconf {
    fn name(&self) -> &'static str {
        "getconf"
    }
    fn summary(&self) -> &'static str {
        "query system configuration variables"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut args: &[String] = &args;
        if args.first().is_some_and(|a| a == "--help") {
            ctx.out(HELP).await?;
            return Ok(0);
        }
        if args.first().is_some_and(|a| a == "--version" || a == "-V") {
            ctx.out("getconf (forkbox)\n").await?;
            return Ok(0);
        }
        // `-v SPEC` names a compilation environment; a session has the one.
        if args.first().is_some_and(|a| a == "-v") {
            if args.len() < 2 {
                ctx.err(USAGE).await;
                return Ok(2);
            }
            args = &args[2..];
        } else if let Some(spec) = args.first().and_then(|a| a.strip_prefix("-v"))
            && !spec.is_empty()
        {
            args = &args[1..];
        }
        if args.first().is_some_and(|a| a == "-a") {
            return all(ctx, &args[1..]).await;
        }
        match args {
            [var] => {
                if let Some((_, v)) = SYSTEM.iter().find(|(n, _)| n == var) {
                    let v = if v.is_empty() { "undefined" } else { v };
                    ctx.out(format!("{v}\n")).await?;
                    Ok(0)
                } else if PER_PATH.iter().any(|(n, _)| n == var) {
                    ctx.err(USAGE).await;
                    Ok(2)
                } else {
                    ctx.warn("getconf", format!("Unrecognized variable `{var}'"))
                        .await;
                    Ok(2)
                }
            }
            [var, path] => {
                if let Some((_, v)) = PER_PATH.iter().find(|(n, _)| n == var) {
                    // glibc answers the limits that are constants on Linux without
                    // looking at the path; the others need it to exist.
                    let constant = matches!(
                        var.trim_start_matches("_POSIX_"),
                        "PATH_MAX" | "PIPE_BUF" | "MAX_CANON" | "MAX_INPUT"
                    );
                    if !constant && let Err(e) = ctx.fs.stat(&ctx.path(path)).await {
                        ctx.warn("getconf", format!("pathconf: {path}: {e}")).await;
                        return Ok(3);
                    }
                    let v = if v.is_empty() { "undefined" } else { v };
                    ctx.out(format!("{v}\n")).await?;
                    Ok(0)
                } else if SYSTEM.iter().any(|(n, _)| n == var) {
                    ctx.err(USAGE).await;
                    Ok(2)
                } else {
                    ctx.warn("getconf", format!("Unrecognized variable `{var}'"))
                        .await;
                    Ok(2)
                }
            }
            _ => {
                ctx.err(USAGE).await;
                Ok(2)
            }
        }
    }
}

/// `getconf -a [PATH]`: every name with its value, padded as glibc pads them.
async fn all(ctx: &Context, rest: &[String]) -> CmdResult {
    if rest.len() > 1 {
        ctx.err(USAGE).await;
        return Ok(2);
    }
    let path = rest.first().map_or("/", String::as_str);
    // glibc leaves a path's values empty when the path is missing, and still succeeds.
    let path_ok = ctx.fs.stat(&ctx.path(path)).await.is_ok();
    let mut out = String::new();
    for (n, v) in PER_PATH {
        let v = if path_ok { *v } else { "" };
        out.push_str(&format!("{n:<35}{v}\n"));
    }
    for (n, v) in SYSTEM {
        out.push_str(&format!("{n:<35}{v}\n"));
    }
    ctx.out(out).await?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn names_values_and_glibcs_errors() {
        let inv = Invocation::default();
        assert_eq!(
            inv.run(&Getconf, &["ARG_MAX"]).await,
            (0, "2097152\n".into(), String::new())
        );
        assert_eq!(inv.run(&Getconf, &["PATH_MAX", "/"]).await.1, "4096\n");
        assert_eq!(inv.run(&Getconf, &["-v", "x", "LONG_BIT"]).await.1, "64\n");
        assert_eq!(
            inv.run(&Getconf, &["PATH_MAX"]).await,
            (2, String::new(), USAGE.into())
        );
        assert_eq!(
            inv.run(&Getconf, &["BOGUS"]).await,
            (
                2,
                String::new(),
                "getconf: Unrecognized variable `BOGUS'\n".into()
            )
        );
        assert_eq!(
            inv.run(&Getconf, &["NAME_MAX", "/nope"]).await,
            (
                3,
                String::new(),
                "getconf: pathconf: /nope: No such file or directory\n".into()
            )
        );
    }
}

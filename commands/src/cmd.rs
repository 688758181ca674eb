//! One file per native command; [`all`] lists them for the shell's registry.

use std::sync::Arc;

use crate::Command;

mod awk;
mod base64;
mod basename;
mod bc;
mod bzip2;
mod cat;
mod chmod;
mod chown;
mod cmp;
mod codec;
mod column;
mod comm;
mod commands;
mod cp;
mod csplit;
mod cut;
mod date;
mod dd;
mod df;
mod diff;
mod du;
pub mod echo;
pub(crate) mod editor;
mod env;
mod envsubst;
mod expand;
mod expr;
mod factor;
mod file;
mod find;
mod fmt;
mod fold;
mod getconf;
mod getopt;
mod grep;
mod gzip;
mod head;
pub mod help;
mod hexdump;
mod iconv;
mod id;
mod install;
mod join;
mod kill;
mod ln;
mod locale;
mod ls;
mod man;
mod mkdir;
mod mkfifo;
mod mktemp;
mod mv;
mod nl;
mod nohup;
mod nproc;
mod numfmt;
mod od;
mod pager;
mod paste;
mod patch;
mod pr;
mod printenv;
pub mod printf;
mod pwd;
mod readlink;
mod rev;
mod rm;
mod rmdir;
mod sed;
mod seq;
mod shuf;
mod sleep;
mod sort;
mod split;
mod stat;
mod strings;
mod sum;
mod sync;
mod sysinfo;
mod tac;
mod tail;
mod tar;
mod tee;
mod test;
pub(crate) mod textin;
mod timeout;
mod touch;
mod tput;
mod tr;
mod tree;
mod truefalse;
mod truncate;
mod tsort;
mod tty;
mod uniq;
mod unzip;
mod uptime;
pub(crate) mod util;
mod watch;
mod wc;
mod which;
mod xargs;
mod xxd;
mod xz;
mod yes;
mod zip;
pub(crate) mod zone;

/// Every native command.
/// Commands for launchers that have no shell (this crate's tests): `echo`, `true` and
/// `false`, which sessions run as shell builtins (the builtin `echo` renders with
/// [`echo::render`], the same code).
pub fn builtin_stand_ins() -> Vec<Arc<dyn Command>> {
    vec![
        Arc::new(echo::Echo),
        Arc::new(truefalse::True),
        Arc::new(truefalse::False),
    ]
}

/// The programs whose file (`/usr/bin/printf`) behaves unlike the shell's command of the
/// same name: what `env`, `xargs`, `find -exec`, `timeout` and a path run instead.
pub fn programs() -> Vec<Arc<dyn Command>> {
    vec![
        Arc::new(printf::GnuPrintf),
        Arc::new(echo::GnuEcho),
        Arc::new(pwd::GnuPwd),
        Arc::new(test::GnuTest),
        Arc::new(test::GnuBracket),
        Arc::new(kill::Kill),
    ]
}

pub fn all() -> Vec<Arc<dyn Command>> {
    vec![
        Arc::new(basename::Basename),
        Arc::new(basename::Dirname),
        Arc::new(cat::Cat),
        Arc::new(chmod::Chmod),
        Arc::new(sum::Cksum),
        Arc::new(sum::BsdSum),
        Arc::new(cmp::Cmp),
        Arc::new(cp::Cp),
        Arc::new(cut::Cut),
        Arc::new(date::Date),
        Arc::new(df::Df),
        Arc::new(du::Du),
        Arc::new(env::Env),
        Arc::new(envsubst::Envsubst),
        Arc::new(nohup::Nohup),
        Arc::new(nohup::Stdbuf),
        Arc::new(grep::GrepCmd),
        Arc::new(head::Head),
        Arc::new(help::Help),
        Arc::new(man::Man),
        Arc::new(man::Apropos),
        Arc::new(man::Whatis),
        Arc::new(hexdump::Hexdump),
        Arc::new(hexdump::Hd),
        Arc::new(ln::Ln),
        Arc::new(ls::Ls),
        Arc::new(sum::Md5sum),
        Arc::new(mkdir::Mkdir),
        Arc::new(mv::Mv),
        Arc::new(printf::Printf),
        Arc::new(readlink::Readlink),
        Arc::new(readlink::Realpath),
        Arc::new(rm::Rm),
        Arc::new(rmdir::Rmdir),
        Arc::new(sed::Sed),
        Arc::new(seq::Seq),
        Arc::new(sum::Sha1sum),
        Arc::new(sum::Sha224sum),
        Arc::new(sum::Sha256sum),
        Arc::new(sum::Sha384sum),
        Arc::new(sum::Sha512sum),
        Arc::new(sleep::Sleep),
        Arc::new(sort::Sort),
        Arc::new(stat::Stat),
        Arc::new(sync::Sync),
        Arc::new(sysinfo::Whoami),
        Arc::new(sysinfo::Hostname),
        Arc::new(sysinfo::Uname),
        Arc::new(tail::Tail),
        Arc::new(tee::Tee),
        Arc::new(test::Test),
        Arc::new(test::Bracket),
        Arc::new(touch::Touch),
        Arc::new(tput::Tput),
        Arc::new(tr::Tr),
        Arc::new(uniq::Uniq),
        Arc::new(wc::Wc),
        Arc::new(which::Which),
        Arc::new(xargs::Xargs),
        Arc::new(yes::Yes),
        Arc::new(grep::EgrepCmd),
        Arc::new(grep::FgrepCmd),
        Arc::new(find::Find),
        Arc::new(diff::Diff),
        Arc::new(patch::Patch),
        Arc::new(tar::Tar),
        Arc::new(gzip::Gzip),
        Arc::new(gzip::Gunzip),
        Arc::new(gzip::Zcat),
        Arc::new(base64::Base64),
        Arc::new(base64::Base32),
        Arc::new(tac::Tac),
        Arc::new(rev::Rev),
        Arc::new(paste::Paste),
        Arc::new(comm::Comm),
        Arc::new(join::Join),
        Arc::new(nl::Nl),
        Arc::new(fold::Fold),
        Arc::new(fmt::Fmt),
        Arc::new(expand::Expand),
        Arc::new(expand::Unexpand),
        Arc::new(column::Column),
        Arc::new(tsort::Tsort),
        Arc::new(strings::Strings),
        Arc::new(shuf::Shuf),
        Arc::new(awk::Awk),
        Arc::new(awk::Gawk),
        Arc::new(split::Split),
        Arc::new(numfmt::NumfmtCmd),
        Arc::new(timeout::Timeout),
        Arc::new(id::Id),
        Arc::new(id::Groups),
        Arc::new(id::Logname),
        Arc::new(printenv::Printenv),
        Arc::new(tty::Tty),
        Arc::new(tty::Clear),
        Arc::new(nproc::Nproc),
        Arc::new(factor::Factor),
        Arc::new(expr::Expr),
        Arc::new(commands::Commands),
        Arc::new(od::Od),
        Arc::new(xxd::Xxd),
        Arc::new(mktemp::Mktemp),
        Arc::new(truncate::Truncate),
        Arc::new(dd::Dd),
        Arc::new(install::Install),
        Arc::new(tree::Tree),
        Arc::new(pr::Pr),
        Arc::new(watch::Watch),
        Arc::new(csplit::Csplit),
        Arc::new(bc::Bc),
        Arc::new(iconv::Iconv),
        Arc::new(file::File),
        Arc::new(uptime::Uptime),
        Arc::new(pager::Less),
        Arc::new(pager::More),
        Arc::new(editor::Nano),
        Arc::new(editor::Vi),
        Arc::new(editor::Vim),
        Arc::new(bzip2::Bzip2),
        Arc::new(bzip2::Bunzip2),
        Arc::new(bzip2::Bzcat),
        Arc::new(xz::Xz),
        Arc::new(xz::Unxz),
        Arc::new(xz::Xzcat),
        Arc::new(chown::Chown),
        Arc::new(chown::Chgrp),
        Arc::new(mkfifo::Mkfifo),
        Arc::new(getconf::Getconf),
        Arc::new(locale::Locale),
        Arc::new(zip::Zip),
        Arc::new(unzip::Unzip),
    ]
}

#[cfg(test)]
mod tests {
    use crate::testing::Invocation;

    /// Every command's clap definition is valid (clap checks it on first use) and each
    /// answers `--help` without error.
    #[tokio::test]
    async fn every_command_answers_help() {
        let inv = Invocation::default();
        let mut names: Vec<&str> = Vec::new();
        for cmd in super::all() {
            let (st, out, err) = inv.run(cmd.as_ref(), &["--help"]).await;
            // bash's printf, help and `[` answer --help with status 2, as bash does;
            // ncurses' tput has no --help and complains about it; bzip2 prints its help on
            // stderr.
            if !matches!(
                cmd.name(),
                "printf" | "help" | "[" | "false" | "tput" | "bzip2" | "bunzip2" | "bzcat"
            ) {
                assert_eq!((cmd.name(), st, err.as_str()), (cmd.name(), 0, ""));
                assert!(!out.is_empty() || cmd.name() == "true" || cmd.name() == "test");
            }
            names.push(cmd.name());
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(names.len(), sorted.len(), "duplicate command names");
    }
}

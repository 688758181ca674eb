//! `chmod`: change permission bits, octal or symbolic, optionally recursively.
//!
//! A symbolic mode without `ugoa` (`+x`, `-w`) is masked with the shell's umask
//! ([`crate::FileSystem::umask`]), as GNU's is with the process's. Symlinks have no mode of their own: a symlink operand
//! changes its target, and `-R` skips the symlinks it meets, as GNU's `chmod -R` does.

use async_trait::async_trait;
use clap::Parser;

use super::util::{MAX_DEPTH, Pacer, quote, quotef};
use crate::fs::{FileKind, FsError, Metadata};
use crate::{CmdResult, Command, Context, Interrupt, parse_args};

/// The umask of the tests: the one forkbox's own creation modes (0644, 0755) stand for.
#[cfg(test)]
const UMASK: u32 = 0o022;

/// Every bit chmod may set: permissions plus setuid, setgid and sticky.
const MODE_BITS: u32 = 0o7777;

/// Change the mode of each FILE to MODE.
///
/// MODE is octal (`755`, at most `7777`) or symbolic: comma-separated clauses
/// `[ugoa]*([-+=]([rwxXst]*|[ugo]))+`, e.g. `u+x`, `go-w`, `a=r`, `u=rw,go=r`. Without
/// `ugoa`, bits in the umask are left alone. A MODE like `-w` may come
/// before or after the options.
#[derive(Parser, Debug)]
#[command(
    name = "chmod",
    override_usage = "chmod [OPTION]... MODE[,MODE]... FILE...\n       chmod [OPTION]... --reference=RFILE FILE..."
)]
struct Args {
    /// Like verbose but report only when a change is made.
    #[arg(short = 'c', long, overrides_with = "verbose")]
    changes: bool,
    /// Suppress most error messages.
    #[arg(short = 'f', long, visible_alias = "quiet")]
    silent: bool,
    /// Output a diagnostic for every file processed.
    #[arg(short = 'v', long, overrides_with = "changes")]
    verbose: bool,
    /// Change files and directories recursively (symlinks met on the way are skipped).
    #[arg(short = 'R', long)]
    recursive: bool,
    /// Use RFILE's mode instead of specifying MODE values.
    #[arg(long, value_name = "RFILE")]
    reference: Option<String>,
    /// MODE followed by the files (or just the files with --reference).
    #[arg(value_name = "MODE FILE")]
    operands: Vec<String>,
}

/// Who a symbolic clause is about.
const WHO_U: u32 = 0o4700;
const WHO_G: u32 = 0o2070;
const WHO_O: u32 = 0o1007;

/// What a symbolic action adds, removes or sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Perms {
    /// Plain bits (`rwst`), plus whether `X` was given.
    Bits { bits: u32, cond_x: bool },
    /// Copy the current permissions of u, g or o (`g=u`): the shift of that triple.
    Copy(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Action {
    /// `ugoa` bits; 0 when none was given (the umask then applies).
    who: u32,
    op: u8,
    perms: Perms,
}

/// A parsed MODE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// An octal mode and the number of digits it was written with (fewer than 5 keep a
    /// directory's setuid/setgid bits, as GNU does).
    Octal {
        bits: u32,
        digits: usize,
    },
    Symbolic(Vec<Action>),
}

impl Mode {
    pub(crate) fn parse(s: &str) -> Option<Mode> {
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            if !s.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
                return None;
            }
            let bits = u32::from_str_radix(s.trim_start_matches('0'), 8)
                .ok()
                .or_else(|| s.bytes().all(|b| b == b'0').then_some(0))?;
            if bits > MODE_BITS {
                return None;
            }
            return Some(Mode::Octal {
                bits,
                digits: s.len(),
            });
        }
        let mut actions = Vec::new();
        for clause in s.split(',') {
            let b = clause.as_bytes();
            let mut i = 0;
            let mut who = 0;
            while i < b.len() {
                who |= match b[i] {
                    b'u' => WHO_U,
                    b'g' => WHO_G,
                    b'o' => WHO_O,
                    b'a' => MODE_BITS,
                    _ => break,
                };
                i += 1;
            }
            // A clause needs at least one action.
            if i >= b.len() {
                return None;
            }
            while i < b.len() {
                let op = b[i];
                if !matches!(op, b'+' | b'-' | b'=') {
                    return None;
                }
                i += 1;
                let perms = match b.get(i) {
                    Some(b'u') => Perms::Copy(6),
                    Some(b'g') => Perms::Copy(3),
                    Some(b'o') => Perms::Copy(0),
                    _ => {
                        let mut bits = 0;
                        let mut cond_x = false;
                        while let Some(&c) = b.get(i) {
                            match c {
                                b'r' => bits |= 0o444,
                                b'w' => bits |= 0o222,
                                b'x' => bits |= 0o111,
                                b'X' => cond_x = true,
                                b's' => bits |= 0o6000,
                                b't' => bits |= 0o1000,
                                _ => break,
                            }
                            i += 1;
                        }
                        actions.push(Action {
                            who,
                            op,
                            perms: Perms::Bits { bits, cond_x },
                        });
                        continue;
                    }
                };
                i += 1;
                actions.push(Action { who, op, perms });
            }
        }
        Some(Mode::Symbolic(actions))
    }

    /// The new mode of a file whose mode is `old`, with `umask` applied to clauses
    /// without `ugoa`.
    pub(crate) fn apply(&self, old: u32, is_dir: bool, umask: u32) -> u32 {
        match self {
            Mode::Octal { bits, digits } => {
                if is_dir && *digits < 5 {
                    bits | (old & 0o6000)
                } else {
                    *bits
                }
            }
            Mode::Symbolic(actions) => {
                let mut mode = old & MODE_BITS;
                for a in actions {
                    let mut value = match a.perms {
                        Perms::Copy(shift) => ((mode >> shift) & 0o7) * 0o111,
                        Perms::Bits { bits, cond_x } => {
                            if cond_x && (is_dir || mode & 0o111 != 0) {
                                bits | 0o111
                            } else {
                                bits
                            }
                        }
                    };
                    // A directory keeps setuid/setgid unless the clause names them.
                    let omit = if is_dir { 0o6000 & !value } else { 0 };
                    value &= if a.who != 0 {
                        a.who
                    } else {
                        !umask & MODE_BITS
                    };
                    value &= !omit;
                    mode = match a.op {
                        b'+' => mode | value,
                        b'-' => mode & !value,
                        _ => {
                            let preserved = (if a.who != 0 { !a.who } else { 0 }) | omit;
                            (mode & preserved) | value
                        }
                    };
                }
                mode & MODE_BITS
            }
        }
    }
}

/// `rwxr-xr-x` without the type letter.
fn perm_string(mode: u32) -> String {
    let meta = Metadata::new(FileKind::File, 0, mode, std::time::UNIX_EPOCH);
    super::util::mode_string(&meta)[1..].to_string()
}

/// True for an argument that is a MODE although it starts with `-` (`-w`, `-x,u+r`).
fn is_dash_mode(arg: &str) -> bool {
    arg.len() > 1
        && arg.starts_with('-')
        && !arg.starts_with("--")
        && arg[1..]
            .bytes()
            .all(|b| b"rwxXstugoa,+-=01234567".contains(&b))
}

pub struct Chmod;

struct Changer<'a> {
    ctx: &'a Context,
    args: &'a Args,
    /// `None` with --reference: every file gets `reference_mode`.
    mode: Option<Mode>,
    reference_mode: u32,
    status: i32,
    pacer: Pacer,
}

impl Changer<'_> {
    async fn fail(&mut self, msg: String) {
        if !self.args.silent {
            self.ctx.warn("chmod", msg).await;
        }
        self.status = 1;
    }

    /// Changes one path (symlinks followed) whose metadata is `meta`.
    async fn change(&mut self, shown: &str, path: &str, meta: &Metadata) -> Result<(), Interrupt> {
        let old = meta.mode & MODE_BITS;
        let new = match &self.mode {
            Some(m) => m.apply(old, meta.is_dir(), self.ctx.fs.umask()),
            None => self.reference_mode,
        };
        let changed = new != old;
        if changed && let Err(e) = self.ctx.fs.chmod(path, new).await {
            self.fail(format!("changing permissions of {}: {e}", quote(shown)))
                .await;
            return Ok(());
        }
        if self.args.verbose || (self.args.changes && changed) {
            let line = if changed {
                format!(
                    "mode of {} changed from {old:04o} ({}) to {new:04o} ({})\n",
                    quote(shown),
                    perm_string(old),
                    perm_string(new)
                )
            } else {
                format!(
                    "mode of {} retained as {new:04o} ({})\n",
                    quote(shown),
                    perm_string(new)
                )
            };
            self.ctx.out(line).await?;
        }
        // GNU warns when the umask kept a clause without `ugoa` from taking away all it
        // said (`-w` under 022); bits it kept from being added (`+x` under 077) are not
        // a surprise.
        if let Some(m) = &self.mode {
            let naive = m.apply(old, meta.is_dir(), 0);
            if new & !naive != 0 {
                self.fail(format!(
                    "{}: new permissions are {}, not {}",
                    quotef(shown),
                    perm_string(new),
                    perm_string(naive)
                ))
                .await;
            }
        }
        Ok(())
    }

    async fn skip_symlink(&self, shown: &str) -> Result<(), Interrupt> {
        if self.args.verbose {
            self.ctx
                .out(format!(
                    "neither symbolic link {} nor referent has been changed\n",
                    quote(shown)
                ))
                .await?;
        }
        Ok(())
    }

    async fn operand(&mut self, f: &str) -> Result<(), Interrupt> {
        let path = self.ctx.path(f);
        let lmeta = match self.ctx.fs.lstat(&path).await {
            Ok(m) => m,
            Err(e) => {
                self.fail(format!("cannot access {}: {e}", quote(f))).await;
                return Ok(());
            }
        };
        if lmeta.is_symlink() && self.args.recursive {
            return self.skip_symlink(f).await;
        }
        let meta = if lmeta.is_symlink() {
            match self.ctx.fs.stat(&path).await {
                Ok(m) => m,
                Err(FsError::NotFound) => {
                    self.fail(format!("cannot operate on dangling symlink {}", quote(f)))
                        .await;
                    return Ok(());
                }
                Err(e) => {
                    self.fail(format!("cannot access {}: {e}", quote(f))).await;
                    return Ok(());
                }
            }
        } else {
            lmeta
        };
        self.change(f, &path, &meta).await?;
        if self.args.recursive && meta.is_dir() {
            self.tree(f, &path).await?;
        }
        Ok(())
    }

    /// Changes everything below a directory, pre-order, with an explicit stack.
    async fn tree(&mut self, shown: &str, path: &str) -> Result<(), Interrupt> {
        let mut stack = vec![(shown.to_string(), path.to_string(), 0usize)];
        while let Some((shown, path, depth)) = stack.pop() {
            let entries = match self.ctx.fs.read_dir(&path).await {
                Ok(e) => e,
                Err(e) => {
                    self.fail(format!("cannot read directory {}: {e}", quote(&shown)))
                        .await;
                    continue;
                }
            };
            let mut subdirs = Vec::new();
            for e in entries {
                self.pacer.tick(self.ctx).await?;
                let child_shown = format!("{}/{}", shown.trim_end_matches('/'), e.name);
                let child = crate::fs::join(&path, &e.name);
                match e.meta.kind {
                    FileKind::Symlink => self.skip_symlink(&child_shown).await?,
                    FileKind::File | FileKind::CharDevice => {
                        self.change(&child_shown, &child, &e.meta).await?
                    }
                    FileKind::Dir => {
                        self.change(&child_shown, &child, &e.meta).await?;
                        if depth + 1 > MAX_DEPTH {
                            self.fail(format!(
                                "{}: directory nesting too deep",
                                quote(&child_shown)
                            ))
                            .await;
                        } else {
                            subdirs.push((child_shown, child, depth + 1));
                        }
                    }
                }
            }
            stack.extend(subdirs.into_iter().rev());
        }
        Ok(())
    }
}

async fn usage(ctx: &Context, msg: &str) -> i32 {
    ctx.err(format!(
        "chmod: {msg}\nTry 'chmod --help' for more information.\n"
    ))
    .await;
    1
}

#[async_trait]
impl Command for Chmod {
    fn name(&self) -> &'static str {
        "chmod"
    }
    fn summary(&self) -> &'static str {
        "change file mode bits"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        // `chmod -w f`: modes that look like options are taken out before clap sees them.
        let mut dash_modes = Vec::new();
        let mut rest = Vec::new();
        let mut after_dashes = false;
        for a in args {
            if !after_dashes && is_dash_mode(&a) {
                dash_modes.push(a);
            } else {
                after_dashes |= a == "--";
                rest.push(a);
            }
        }
        let args: Args = match parse_args(ctx, self.name(), &rest).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let (mode_text, files) = if !dash_modes.is_empty() {
            (Some(dash_modes.join(",")), &args.operands[..])
        } else if args.reference.is_some() {
            (None, &args.operands[..])
        } else {
            match args.operands.split_first() {
                Some((m, files)) => (Some(m.clone()), files),
                None => return Ok(usage(ctx, "missing operand").await),
            }
        };
        if files.is_empty() {
            let msg = match &mode_text {
                Some(m) => format!("missing operand after {}", quote(m)),
                None => "missing operand".to_string(),
            };
            return Ok(usage(ctx, &msg).await);
        }
        let mut reference_mode = 0;
        let mode = match (&mode_text, &args.reference) {
            (Some(text), _) => match Mode::parse(text) {
                Some(m) => Some(m),
                None => return Ok(usage(ctx, &format!("invalid mode: {}", quote(text))).await),
            },
            (None, Some(r)) => match ctx.fs.stat(&ctx.path(r)).await {
                Ok(m) => {
                    reference_mode = m.mode & MODE_BITS;
                    None
                }
                Err(e) => {
                    ctx.warn(
                        "chmod",
                        format!("failed to get attributes of {}: {e}", quote(r)),
                    )
                    .await;
                    return Ok(1);
                }
            },
            (None, None) => return Ok(usage(ctx, "missing operand").await),
        };
        let mut changer = Changer {
            ctx,
            args: &args,
            mode,
            reference_mode,
            status: 0,
            pacer: Pacer::default(),
        };
        for f in files {
            changer.operand(f).await?;
        }
        Ok(changer.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FileSystem;
    use crate::testing::{Invocation, MemFs};
    use std::sync::Arc;

    fn setup() -> (Arc<MemFs>, Invocation) {
        let fs = MemFs::with_files(&[("/f", "x"), ("/d/e/g", "y"), ("/d/h", "z")]);
        fs.put_symlink("/f", "/l");
        fs.put_symlink("/nope", "/dl");
        fs.put_symlink("/f", "/d/sl");
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        (fs, inv)
    }

    async fn mode_of(fs: &MemFs, p: &str) -> u32 {
        fs.stat(p).await.unwrap().mode
    }

    #[test]
    fn symbolic_modes_like_gnu() {
        let m = |s: &str, old: u32, dir: bool| Mode::parse(s).unwrap().apply(old, dir, UMASK);
        assert_eq!(m("u+x", 0o644, false), 0o744);
        assert_eq!(m("go-w", 0o666, false), 0o644);
        assert_eq!(m("a=r", 0o755, false), 0o444);
        assert_eq!(m("+x", 0o644, false), 0o755);
        assert_eq!(m("u=rw,go=r", 0o777, false), 0o644);
        assert_eq!(m("-w", 0o666, false), 0o466);
        assert_eq!(m("=r", 0o644, false), 0o444);
        assert_eq!(m("o=u", 0o640, false), 0o646);
        assert_eq!(m("u=", 0o644, false), 0o044);
        assert_eq!(m("ug+rw-x,o=", 0o755, false), 0o660);
        assert_eq!(m("a+X", 0o644, false), 0o644);
        assert_eq!(m("a+X", 0o744, false), 0o755);
        assert_eq!(m("a+X", 0o644, true), 0o755);
        assert_eq!(m("u+s,g+s,+t", 0o644, true), 0o7644);
        assert_eq!(m("u+t", 0o644, false), 0o644);
        assert_eq!(m("+", 0o644, false), 0o644);
        // Octal: a directory keeps setuid/setgid unless five digits are given.
        assert_eq!(m("755", 0o2755, true), 0o2755);
        assert_eq!(m("00755", 0o2755, true), 0o755);
        assert_eq!(m("755", 0o2755, false), 0o755);
        assert_eq!(m("0", 0o644, false), 0);
        for bad in ["", ",", "u", "zz", "8", "17777", "u+x,zz", "u+rz", "ua"] {
            assert_eq!(Mode::parse(bad), None, "{bad}");
        }
    }

    #[tokio::test]
    async fn octal_symbolic_and_dash_modes() {
        let (fs, inv) = setup();
        assert_eq!(
            inv.run(&Chmod, &["755", "f"]).await,
            (0, "".into(), "".into())
        );
        assert_eq!(mode_of(&fs, "/f").await, 0o755);
        assert_eq!(inv.run(&Chmod, &["-x", "f"]).await.0, 0);
        assert_eq!(mode_of(&fs, "/f").await, 0o644);
        assert_eq!(inv.run(&Chmod, &["-w", "-r", "f"]).await.0, 0);
        assert_eq!(mode_of(&fs, "/f").await, 0o000);
        assert_eq!(inv.run(&Chmod, &["u=rw,go=r", "--", "f"]).await.0, 0);
        assert_eq!(mode_of(&fs, "/f").await, 0o644);
        // A symlink operand changes its target.
        assert_eq!(inv.run(&Chmod, &["600", "l"]).await.0, 0);
        assert_eq!(mode_of(&fs, "/f").await, 0o600);
    }

    #[tokio::test]
    async fn verbose_and_changes() {
        let (_, inv) = setup();
        let (st, out, _) = inv.run(&Chmod, &["-v", "755", "f"]).await;
        assert_eq!(
            (st, out.as_str()),
            (
                0,
                "mode of 'f' changed from 0644 (rw-r--r--) to 0755 (rwxr-xr-x)\n"
            )
        );
        let (_, out, _) = inv.run(&Chmod, &["755", "-v", "f"]).await;
        assert_eq!(out, "mode of 'f' retained as 0755 (rwxr-xr-x)\n");
        assert_eq!(inv.run(&Chmod, &["-c", "755", "f"]).await.1, "");
        let (_, out, _) = inv.run(&Chmod, &["-c", "644", "f"]).await;
        assert_eq!(
            out,
            "mode of 'f' changed from 0755 (rwxr-xr-x) to 0644 (rw-r--r--)\n"
        );
    }

    #[tokio::test]
    async fn recursive_skips_symlinks() {
        let (fs, inv) = setup();
        let (st, out, err) = inv.run(&Chmod, &["-Rv", "700", "d"]).await;
        assert_eq!((st, err.as_str()), (0, ""));
        assert_eq!(
            out,
            "mode of 'd' changed from 0755 (rwxr-xr-x) to 0700 (rwx------)\n\
             mode of 'd/e' changed from 0755 (rwxr-xr-x) to 0700 (rwx------)\n\
             mode of 'd/h' changed from 0644 (rw-r--r--) to 0700 (rwx------)\n\
             neither symbolic link 'd/sl' nor referent has been changed\n\
             mode of 'd/e/g' changed from 0644 (rw-r--r--) to 0700 (rwx------)\n"
        );
        assert_eq!(mode_of(&fs, "/d/e/g").await, 0o700);
        assert_eq!(mode_of(&fs, "/f").await, 0o644);
    }

    #[tokio::test]
    async fn reference() {
        let (fs, inv) = setup();
        fs.chmod("/f", 0o600).await.unwrap();
        assert_eq!(inv.run(&Chmod, &["--reference=f", "d"]).await.0, 0);
        assert_eq!(mode_of(&fs, "/d").await, 0o600);
        let (st, _, err) = inv.run(&Chmod, &["--reference=nope", "d"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "chmod: failed to get attributes of 'nope': No such file or directory\n"
            )
        );
    }

    #[tokio::test]
    async fn errors() {
        let (fs, inv) = setup();
        let (st, out, err) = inv.run(&Chmod, &["zz", "f"]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (
                1,
                "",
                "chmod: invalid mode: 'zz'\nTry 'chmod --help' for more information.\n"
            )
        );
        let (st, _, err) = inv.run(&Chmod, &["u+x", "nofile", "f"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "chmod: cannot access 'nofile': No such file or directory\n"
            )
        );
        assert_eq!(mode_of(&fs, "/f").await, 0o744);
        let (st, _, err) = inv.run(&Chmod, &[]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "chmod: missing operand\nTry 'chmod --help' for more information.\n"
            )
        );
        let (st, _, err) = inv.run(&Chmod, &["644"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "chmod: missing operand after '644'\nTry 'chmod --help' for more information.\n"
            )
        );
        let (st, _, err) = inv.run(&Chmod, &["644", "dl"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "chmod: cannot operate on dangling symlink 'dl'\n")
        );
        let (st, _, err) = inv.run(&Chmod, &["-f", "644", "nofile"]).await;
        assert_eq!((st, err.as_str()), (1, ""));
        let (st, _, err) = inv.run(&Chmod, &["--bogus", "644", "f"]).await;
        assert_eq!(st, 1);
        assert!(
            err.starts_with("chmod: unrecognized option '--bogus'"),
            "{err}"
        );
        assert_eq!(inv.run(&Chmod, &["--help"]).await.0, 0);
    }

    #[tokio::test]
    async fn umask_warning() {
        let (fs, inv) = setup();
        fs.chmod("/f", 0o666).await.unwrap();
        let (st, _, err) = inv.run(&Chmod, &["-w", "f"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "chmod: f: new permissions are r--rw-rw-, not r--r--r--\n"
            )
        );
        assert_eq!(mode_of(&fs, "/f").await, 0o466);
    }
}

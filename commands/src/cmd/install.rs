//! `install`: copy files and set their mode (0755 unless `-m`), or make directories
//! (`-d`), GNU-style: `-D` makes the destination's missing parents, `-t DIR` / `-T`
//! choose how the last operand is read, `-C` leaves a destination that already has the
//! content and mode alone, `-p` keeps the source's modification time, `-v` says what it
//! did (`'a' -> 'b'`, `removed 'b'`, `install: creating directory 'd'`). A session has one
//! user and one group: `-o`/`-g` naming them (by name or id) are accepted, anything else is
//! GNU's `invalid user`/`invalid group`.

use async_trait::async_trait;

use super::chmod::Mode;
use super::getopt::{Arg, Spec, opt, parse};
use super::id::{GID, UID, user};
use super::util::{CopyError, base_name, copy_file, quote, usage_error};
use crate::fs::{FsError, WriteMode};
use crate::{CmdResult, Command, Context, Interrupt};

const HELP: &str = "Usage: install [OPTION]... [-T] SOURCE DEST
  or:  install [OPTION]... SOURCE... DIRECTORY
  or:  install [OPTION]... -t DIRECTORY SOURCE...
  or:  install [OPTION]... -d DIRECTORY...

This install program copies files (often just compiled) into destination
locations you choose.

  -C, --compare       compare content of source and destination files, and
                        if no change to content, ownership, and permissions,
                        do not modify the destination at all
  -d, --directory     treat all arguments as directory names; create all
                        components of the specified directories
  -D                  create all leading components of DEST except the last,
                        or all components of --target-directory,
                        then copy SOURCE to DEST
  -g, --group=GROUP   set group ownership, instead of process' current group
  -m, --mode=MODE     set permission mode (as in chmod), instead of rwxr-xr-x
  -o, --owner=OWNER   set ownership (super-user only)
  -p, --preserve-timestamps   apply access/modification times of SOURCE files
                        to corresponding destination files
  -t, --target-directory=DIRECTORY  copy all SOURCE arguments into DIRECTORY
  -T, --no-target-directory  treat DEST as a normal file
  -v, --verbose       print the name of each created file or directory
      --help          display this help and exit
";

const SPECS: &[Spec] = &[
    opt('C', Some('C'), Some("compare"), Arg::No),
    opt('d', Some('d'), Some("directory"), Arg::No),
    opt('D', Some('D'), None, Arg::No),
    opt('g', Some('g'), Some("group"), Arg::Required),
    opt('m', Some('m'), Some("mode"), Arg::Required),
    opt('o', Some('o'), Some("owner"), Arg::Required),
    opt('p', Some('p'), Some("preserve-timestamps"), Arg::No),
    opt('t', Some('t'), Some("target-directory"), Arg::Required),
    opt('T', Some('T'), Some("no-target-directory"), Arg::No),
    opt('v', Some('v'), Some("verbose"), Arg::No),
    opt('h', None, Some("help"), Arg::No),
    opt('V', None, Some("version"), Arg::No),
];

/// Mode of installed files and directories without `-m`.
const DEFAULT_MODE: u32 = 0o755;

pub struct Install;

struct Opts {
    compare: bool,
    parents: bool,
    mode: u32,
    preserve: bool,
    verbose: bool,
}

#[async_trait]
impl Command for Install {
    fn name(&self) -> &'static str {
        "install"
    }
    fn summary(&self) -> &'static str {
        "copy files and set attributes"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let p = match parse(SPECS, &args, true) {
            Ok(p) => p,
            Err(msg) => return Ok(usage_error(ctx, "install", &msg).await),
        };
        if p.has('h') {
            ctx.out(HELP).await?;
            return Ok(0);
        }
        if p.has('V') {
            ctx.out("install (GNU coreutils) 9.1\n").await?;
            return Ok(0);
        }
        let me = user(ctx);
        if let Some(o) = p.last('o')
            && o != me
            && o != UID.to_string()
        {
            ctx.warn("install", format!("invalid user {}", quote(o)))
                .await;
            return Ok(1);
        }
        if let Some(g) = p.last('g')
            && g != me
            && g != GID.to_string()
        {
            ctx.warn("install", format!("invalid group {}", quote(g)))
                .await;
            return Ok(1);
        }
        let mode = match p.last('m') {
            None => DEFAULT_MODE,
            Some(m) => match Mode::parse(m) {
                Some(mode) => mode.apply(0, false, ctx.fs.umask()),
                None => {
                    ctx.warn("install", format!("invalid mode {}", quote(m)))
                        .await;
                    return Ok(1);
                }
            },
        };
        let o = Opts {
            compare: p.has('C'),
            parents: p.has('D'),
            mode,
            preserve: p.has('p'),
            verbose: p.has('v'),
        };
        let target = p.last('t').map(str::to_string);
        let no_target = p.has('T');
        let dirs = p.has('d');
        let ops = p.operands;
        if dirs {
            if target.is_some() {
                return Ok(usage_error(
                    ctx,
                    "install",
                    "target directory not allowed when installing a directory",
                )
                .await);
            }
            if ops.is_empty() {
                return Ok(usage_error(ctx, "install", "missing file operand").await);
            }
            let mut status = 0;
            for d in &ops {
                if !make_dirs(ctx, d, Some(o.mode), o.verbose).await? {
                    status = 1;
                }
            }
            return Ok(status);
        }
        if target.is_some() && no_target {
            return Ok(usage_error(
                ctx,
                "install",
                "cannot combine --target-directory (-t) and --no-target-directory (-T)",
            )
            .await);
        }
        if ops.is_empty() {
            return Ok(usage_error(ctx, "install", "missing file operand").await);
        }
        // (source, destination as shown) pairs.
        let mut pairs: Vec<(String, String)> = Vec::new();
        if let Some(dir) = &target {
            if o.parents && !make_dirs(ctx, dir, None, o.verbose).await? {
                return Ok(1);
            }
            match ctx.fs.stat(&ctx.path(dir)).await {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    ctx.warn(
                        "install",
                        format!("failed to access {}: Not a directory", quote(dir)),
                    )
                    .await;
                    return Ok(1);
                }
                Err(e) => {
                    ctx.warn("install", format!("failed to access {}: {e}", quote(dir)))
                        .await;
                    return Ok(1);
                }
            }
            for s in &ops {
                pairs.push((s.clone(), into_dir(dir, s)));
            }
        } else {
            let [srcs @ .., dest] = ops.as_slice() else {
                return Ok(usage_error(ctx, "install", "missing file operand").await);
            };
            if srcs.is_empty() {
                return Ok(usage_error(
                    ctx,
                    "install",
                    &format!("missing destination file operand after {}", quote(dest)),
                )
                .await);
            }
            if no_target && srcs.len() > 1 {
                return Ok(
                    usage_error(ctx, "install", &format!("extra operand {}", quote(dest))).await,
                );
            }
            let dest_dir =
                !no_target && ctx.fs.stat(&ctx.path(dest)).await.is_ok_and(|m| m.is_dir());
            if srcs.len() > 1 && !dest_dir {
                if o.parents && !make_dirs(ctx, dest, None, o.verbose).await? {
                    return Ok(1);
                }
                match ctx.fs.stat(&ctx.path(dest)).await {
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => {
                        ctx.warn(
                            "install",
                            format!("target {}: Not a directory", quote(dest)),
                        )
                        .await;
                        return Ok(1);
                    }
                    Err(e) => {
                        ctx.warn("install", format!("target {}: {e}", quote(dest)))
                            .await;
                        return Ok(1);
                    }
                }
                for s in srcs {
                    pairs.push((s.clone(), into_dir(dest, s)));
                }
            } else if dest_dir {
                for s in srcs {
                    pairs.push((s.clone(), into_dir(dest, s)));
                }
            } else {
                if o.parents
                    && let Some(i) = dest.trim_end_matches('/').rfind('/')
                    && i > 0
                    && !make_dirs(ctx, &dest[..i], None, o.verbose).await?
                {
                    return Ok(1);
                }
                pairs.push((srcs[0].clone(), dest.clone()));
            }
        }
        let mut status = 0;
        for (src, dest) in pairs {
            if !install_file(ctx, &o, &src, &dest).await? {
                status = 1;
            }
        }
        Ok(status)
    }
}

/// `dir/NAME` for source `src`.
fn into_dir(dir: &str, src: &str) -> String {
    format!("{}/{}", dir.trim_end_matches('/'), base_name(src))
}

/// Makes `dir` and its missing parents (`mkdir -p`); `mode` is the last one's when given
/// (`-d -m`), the others get 0755. Reports a failure; false then.
async fn make_dirs(
    ctx: &Context,
    dir: &str,
    mode: Option<u32>,
    verbose: bool,
) -> Result<bool, Interrupt> {
    let comps: Vec<&str> = dir.split('/').filter(|c| !c.is_empty()).collect();
    let mut shown = if dir.starts_with('/') {
        "/".to_string()
    } else {
        String::new()
    };
    for (i, c) in comps.iter().enumerate() {
        if !shown.is_empty() && !shown.ends_with('/') {
            shown.push('/');
        }
        shown.push_str(c);
        let path = ctx.path(&shown);
        let last = i + 1 == comps.len();
        match ctx.fs.stat(&path).await {
            Ok(m) if m.is_dir() => {
                if last && let Some(mode) = mode {
                    let _ = ctx.fs.chmod(&path, mode).await;
                }
                continue;
            }
            Ok(_) => {
                let what = if last { dir } else { shown.as_str() };
                ctx.warn(
                    "install",
                    format!("cannot create directory {}: File exists", quote(what)),
                )
                .await;
                return Ok(false);
            }
            Err(FsError::NotFound) => {}
            Err(e) => {
                ctx.warn(
                    "install",
                    format!("cannot create directory {}: {e}", quote(&shown)),
                )
                .await;
                return Ok(false);
            }
        }
        if let Err(e) = ctx.fs.mkdir(&path).await {
            ctx.warn(
                "install",
                format!("cannot create directory {}: {e}", quote(&shown)),
            )
            .await;
            return Ok(false);
        }
        if verbose {
            ctx.out(format!("install: creating directory {}\n", quote(&shown)))
                .await?;
        }
        let m = if last {
            mode.unwrap_or(DEFAULT_MODE)
        } else {
            DEFAULT_MODE
        };
        // mkdir gave it 0777 minus the umask: 0755 only under 022.
        if (m != DEFAULT_MODE || ctx.fs.umask() != 0o022)
            && let Err(e) = ctx.fs.chmod(&path, m).await
        {
            ctx.warn(
                "install",
                format!("cannot change permissions of {}: {e}", quote(&shown)),
            )
            .await;
            return Ok(false);
        }
    }
    Ok(true)
}

/// Installs one file; reports a failure and gives false.
async fn install_file(ctx: &Context, o: &Opts, src: &str, dest: &str) -> Result<bool, Interrupt> {
    let (from, to) = (ctx.path(src), ctx.path(dest));
    let meta = match ctx.fs.stat(&from).await {
        Ok(m) => m,
        Err(e) => {
            ctx.warn("install", format!("cannot stat {}: {e}", quote(src)))
                .await;
            return Ok(false);
        }
    };
    if meta.is_dir() {
        ctx.warn("install", format!("omitting directory {}", quote(src)))
            .await;
        return Ok(false);
    }
    let existing = ctx.fs.stat(&to).await.ok();
    if let Some(d) = &existing {
        if d.is_dir() {
            ctx.warn(
                "install",
                format!(
                    "cannot overwrite directory {} with non-directory",
                    quote(dest)
                ),
            )
            .await;
            return Ok(false);
        }
        let (a, b) = (
            ctx.fs.canonicalize(&from).await,
            ctx.fs.canonicalize(&to).await,
        );
        if let (Ok(a), Ok(b)) = (a, b)
            && a == b
        {
            ctx.warn(
                "install",
                format!("{} and {} are the same file", quote(src), quote(dest)),
            )
            .await;
            return Ok(false);
        }
        if o.compare
            && d.is_file()
            && d.mode & 0o7777 == o.mode
            && d.len == meta.len
            && same_content(ctx, &from, &to).await?
        {
            return Ok(true);
        }
    }
    if existing.is_some() {
        // GNU unlinks the destination first; a symlink there is replaced, not followed.
        let _ = ctx.fs.unlink(&to).await;
        if o.verbose {
            ctx.out(format!("removed {}\n", quote(dest))).await?;
        }
    }
    match copy_file(ctx, &from, &to, WriteMode::Truncate).await? {
        Ok(()) => {}
        Err(CopyError::Read(e)) => {
            ctx.warn(
                "install",
                format!("cannot open {} for reading: {e}", quote(src)),
            )
            .await;
            return Ok(false);
        }
        Err(CopyError::Write(e)) => {
            ctx.warn(
                "install",
                format!("cannot create regular file {}: {e}", quote(dest)),
            )
            .await;
            return Ok(false);
        }
    }
    if let Err(e) = ctx.fs.chmod(&to, o.mode).await {
        ctx.warn(
            "install",
            format!("cannot change permissions of {}: {e}", quote(dest)),
        )
        .await;
        return Ok(false);
    }
    if o.preserve
        && let Err(e) = ctx.fs.set_mtime(&to, meta.mtime).await
    {
        ctx.warn(
            "install",
            format!("cannot set timestamps for {}: {e}", quote(dest)),
        )
        .await;
        return Ok(false);
    }
    if o.verbose {
        ctx.out(format!("{} -> {}\n", quote(src), quote(dest)))
            .await?;
    }
    Ok(true)
}

/// True when files `a` and `b` (of equal length) hold the same bytes.
async fn same_content(ctx: &Context, a: &str, b: &str) -> Result<bool, Interrupt> {
    let mut off = 0u64;
    loop {
        let (x, y) = match (
            ctx.fs.read_at(a, off, crate::fs::READ_CHUNK).await,
            ctx.fs.read_at(b, off, crate::fs::READ_CHUNK).await,
        ) {
            (Ok(x), Ok(y)) => (x, y),
            _ => return Ok(false),
        };
        if x != y {
            return Ok(false);
        }
        if x.is_empty() {
            return Ok(true);
        }
        off += x.len() as u64;
        ctx.checkpoint().await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::FileSystem;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn installs_with_mode_and_parents() {
        let fs = MemFs::with_files(&[("/a", "hi\n")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let (st, out, err) = inv.run(&Install, &["-vD", "-m", "640", "a", "x/y/z"]).await;
        assert_eq!((st, err.as_str()), (0, ""));
        assert_eq!(
            out,
            "install: creating directory 'x'\ninstall: creating directory 'x/y'\n'a' -> 'x/y/z'\n"
        );
        assert_eq!(fs.stat("/x/y/z").await.unwrap().mode & 0o7777, 0o640);
        let (st, _, err) = inv.run(&Install, &["a"]).await;
        assert_eq!(st, 1);
        assert!(err.starts_with("install: missing destination file operand after 'a'\n"));
    }
}

//! `path_*` calls: names relative to a directory descriptor.
//!
//! A name is joined to its directory's absolute path and handed to the filesystem port,
//! whose one resolver applies `..` (never above the session root) and symlinks (absolute
//! targets restart at the session root). Absolute names are refused with `EPERM`, as
//! wasmtime does: wasi-libc never sends one (it strips the preopen's `/`).

use forkbox_commands::{FileKind, OpenOptions, VfsPath};
use wasmtime::{Caller, Linker};

use super::abi::{self, Errno, LOOKUP_SYMLINK_FOLLOW, fdflags, oflags, rights};
use super::fd::{mtime_of, wrap_async};
use super::table::{Fd, ROOT_FD};
use super::{Host, HostResult, MODULE, ptr, split};

/// The absolute path `name` names relative to directory descriptor `fd`.
fn at(c: &mut Caller<'_, Host>, fd: u32, name: u32, len: u32) -> Result<String, Errno> {
    let (mem, host) = split(c)?;
    let name = mem.str(name, len)?;
    let base = host.fds.dir_path(fd)?;
    if name.starts_with('/') {
        return Err(Errno::PERM);
    }
    if name.is_empty() {
        return Err(Errno::NOENT);
    }
    if name.contains('\0') {
        return Err(Errno::INVAL);
    }
    Ok(forkbox_commands::fs::join(base, &name))
}

/// [`at`], for a guest whose names are looked for in the shell's directory first
/// ([`crate::wasi::ModuleSpec::cwd_first`]): under the root preopen a name is the one in
/// the shell's directory when that exists, else the one from the root when that exists,
/// else (a name about to be made) the one whose directory exists, the shell's first.
async fn resolve(c: &mut Caller<'_, Host>, fd: u32, name: u32, len: u32) -> Result<String, Errno> {
    let path = at(c, fd, name, len)?;
    let Some(cwd) = c.data().cwd_first.clone().filter(|_| fd == ROOT_FD) else {
        return Ok(path);
    };
    let in_cwd = forkbox_commands::fs::join(&cwd, path.trim_start_matches('/'));
    let fs = c.data().fs.clone();
    if in_cwd == path || fs.lstat(&in_cwd).await.is_ok() {
        return Ok(in_cwd);
    }
    if fs.lstat(&path).await.is_ok() {
        return Ok(path);
    }
    let dir = |p: &str| VfsPath::new(p).map(|v| v.parent().as_str().to_string());
    let (cwd_dir, root_dir) = (
        dir(&in_cwd).map_err(Errno::from)?,
        dir(&path).map_err(Errno::from)?,
    );
    if fs.lstat(&cwd_dir).await.is_ok() || fs.lstat(&root_dir).await.is_err() {
        return Ok(in_cwd);
    }
    Ok(path)
}

async fn create_directory(c: &mut Caller<'_, Host>, fd: u32, name: u32, len: u32) -> HostResult {
    let path = resolve(c, fd, name, len).await?;
    let fs = c.data().fs.clone();
    fs.mkdir(&path).await?;
    Ok(())
}

async fn remove_directory(c: &mut Caller<'_, Host>, fd: u32, name: u32, len: u32) -> HostResult {
    let path = resolve(c, fd, name, len).await?;
    let fs = c.data().fs.clone();
    fs.rmdir(&path).await?;
    Ok(())
}

async fn unlink_file(c: &mut Caller<'_, Host>, fd: u32, name: u32, len: u32) -> HostResult {
    let path = resolve(c, fd, name, len).await?;
    let fs = c.data().fs.clone();
    // `unlink("dir/")` names a directory: Linux says EISDIR before looking further.
    if path.ends_with('/') {
        let meta = fs.lstat(&path).await?;
        if meta.is_dir() {
            return Err(Errno::ISDIR.into());
        }
        return Err(Errno::NOTDIR.into());
    }
    fs.unlink(&path).await?;
    Ok(())
}

async fn filestat_get(
    c: &mut Caller<'_, Host>,
    fd: u32,
    flags: u32,
    name: u32,
    len: u32,
    out: u32,
) -> HostResult {
    let path = resolve(c, fd, name, len).await?;
    let fs = c.data().fs.clone();
    let meta = if flags & LOOKUP_SYMLINK_FOLLOW != 0 {
        fs.stat(&path).await?
    } else {
        fs.lstat(&path).await?
    };
    split(c)?.0.write(out, &abi::filestat(&meta))?;
    Ok(())
}

#[allow(
    clippy::too_many_arguments,
    reason = "the preview-1 signature of path_filestat_set_times"
)]
async fn filestat_set_times(
    c: &mut Caller<'_, Host>,
    fd: u32,
    flags: u32,
    name: u32,
    len: u32,
    atim: i64,
    mtim: i64,
    fst: u16,
) -> HostResult {
    let path = resolve(c, fd, name, len).await?;
    let mtime = mtime_of(atim as u64, mtim as u64, fst)?;
    let fs = c.data().fs.clone();
    let meta = if flags & LOOKUP_SYMLINK_FOLLOW != 0 {
        fs.stat(&path).await?
    } else {
        fs.lstat(&path).await?
    };
    if let Some(t) = mtime {
        if meta.is_symlink() {
            // A symlink's own times are not kept apart from its target's.
            return Err(Errno::NOTSUP.into());
        }
        fs.set_mtime(&path, t).await?;
    }
    Ok(())
}

#[allow(
    clippy::too_many_arguments,
    reason = "the preview-1 signature of path_open"
)]
async fn open(
    c: &mut Caller<'_, Host>,
    fd: u32,
    dirflags: u32,
    name: u32,
    len: u32,
    oflags: u16,
    base: u64,
    fdflags: u16,
    out: u32,
) -> HostResult {
    let path = resolve(c, fd, name, len).await?;
    let vpath = VfsPath::new(&path)?;
    // Rights are not enforced, but they are how preview 1 says read or write (as in
    // wasmtime): wasi-libc and Rust's std ask for exactly what `open`'s mode allows.
    let write = base & rights::WRITING != 0 || fdflags & fdflags::APPEND != 0;
    let read = base & (rights::FD_READ | rights::FD_READDIR) != 0 || !write;
    let mut opts = match (read, write) {
        (true, true) => OpenOptions::read_write(),
        (false, true) => OpenOptions::write_only(),
        _ => OpenOptions::read_only(),
    };
    opts = opts
        .append(fdflags & fdflags::APPEND != 0)
        .create(oflags & oflags::CREAT != 0)
        .exclusive(oflags & oflags::EXCL != 0)
        .truncate(oflags & oflags::TRUNC != 0)
        .directory(oflags & oflags::DIRECTORY != 0)
        .nofollow(dirflags & LOOKUP_SYMLINK_FOLLOW == 0);
    if oflags & !(oflags::CREAT | oflags::DIRECTORY | oflags::EXCL | oflags::TRUNC) != 0 {
        return Err(Errno::INVAL.into());
    }
    let fs = c.data().fs.clone();
    let handle = fs.open(&vpath, opts).await?;
    let entry = if handle.kind() == FileKind::Dir {
        handle.close().await?;
        Fd::Dir {
            path: vpath.as_str().to_string(),
            preopen: None,
            listing: Vec::new(),
        }
    } else {
        Fd::File {
            handle,
            path: vpath.as_str().to_string(),
            append: fdflags & fdflags::APPEND != 0,
            nonblock: fdflags & fdflags::NONBLOCK != 0,
        }
    };
    let n = match c.data_mut().fds.insert(entry) {
        Ok(n) => n,
        Err(e) => return Err(e.into()),
    };
    if let Err(e) = split(c).and_then(|(mut mem, _)| mem.put_u32(out, n)) {
        if let Ok(entry) = c.data_mut().fds.remove(n) {
            let _ = super::table::close(entry).await;
        }
        return Err(e.into());
    }
    Ok(())
}

async fn readlink(
    c: &mut Caller<'_, Host>,
    fd: u32,
    name: u32,
    len: u32,
    buf: u32,
    buf_len: u32,
    used: u32,
) -> HostResult {
    let path = resolve(c, fd, name, len).await?;
    let fs = c.data().fs.clone();
    let target = fs.readlink(&path).await?;
    let bytes = target.as_bytes();
    // Like readlink(2): a small buffer gets the start of the target, no NUL.
    let n = bytes.len().min(buf_len as usize);
    let (mut mem, _) = split(c)?;
    mem.write(buf, &bytes[..n])?;
    mem.put_u32(used, n as u32)?;
    Ok(())
}

async fn rename(
    c: &mut Caller<'_, Host>,
    fd: u32,
    old: u32,
    old_len: u32,
    new_fd: u32,
    new: u32,
    new_len: u32,
) -> HostResult {
    let from = resolve(c, fd, old, old_len).await?;
    let to = resolve(c, new_fd, new, new_len).await?;
    let fs = c.data().fs.clone();
    fs.rename(&from, &to).await?;
    Ok(())
}

async fn symlink(
    c: &mut Caller<'_, Host>,
    target: u32,
    target_len: u32,
    fd: u32,
    name: u32,
    len: u32,
) -> HostResult {
    let target = split(c)?.0.str(target, target_len)?;
    if target.is_empty() {
        return Err(Errno::NOENT.into());
    }
    let path = resolve(c, fd, name, len).await?;
    let fs = c.data().fs.clone();
    fs.symlink(&target, &path).await?;
    Ok(())
}

pub fn add_to_linker(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    wrap_async!(
        linker,
        "path_create_directory",
        |c, fd: i32, name: i32, len: i32| {
            create_directory(&mut c, fd as u32, ptr(name), ptr(len))
        }
    );
    wrap_async!(
        linker,
        "path_remove_directory",
        |c, fd: i32, name: i32, len: i32| {
            remove_directory(&mut c, fd as u32, ptr(name), ptr(len))
        }
    );
    wrap_async!(
        linker,
        "path_unlink_file",
        |c, fd: i32, name: i32, len: i32| { unlink_file(&mut c, fd as u32, ptr(name), ptr(len)) }
    );
    wrap_async!(
        linker,
        "path_filestat_get",
        |c, fd: i32, flags: i32, name: i32, len: i32, out: i32| {
            filestat_get(
                &mut c,
                fd as u32,
                flags as u32,
                ptr(name),
                ptr(len),
                ptr(out),
            )
        }
    );
    wrap_async!(
        linker,
        "path_filestat_set_times",
        |c, fd: i32, flags: i32, name: i32, len: i32, atim: i64, mtim: i64, fst: i32| {
            filestat_set_times(
                &mut c,
                fd as u32,
                flags as u32,
                ptr(name),
                ptr(len),
                atim,
                mtim,
                fst as u16,
            )
        }
    );
    wrap_async!(
        linker,
        "path_open",
        |c,
         fd: i32,
         dirflags: i32,
         name: i32,
         len: i32,
         oflags: i32,
         base: i64,
         _inheriting: i64,
         fdflags: i32,
         out: i32| {
            open(
                &mut c,
                fd as u32,
                dirflags as u32,
                ptr(name),
                ptr(len),
                oflags as u16,
                base as u64,
                fdflags as u16,
                ptr(out),
            )
        }
    );
    wrap_async!(
        linker,
        "path_readlink",
        |c, fd: i32, name: i32, len: i32, buf: i32, buf_len: i32, used: i32| {
            readlink(
                &mut c,
                fd as u32,
                ptr(name),
                ptr(len),
                ptr(buf),
                ptr(buf_len),
                ptr(used),
            )
        }
    );
    wrap_async!(
        linker,
        "path_rename",
        |c, fd: i32, old: i32, old_len: i32, new_fd: i32, new: i32, new_len: i32| {
            rename(
                &mut c,
                fd as u32,
                ptr(old),
                ptr(old_len),
                new_fd as u32,
                ptr(new),
                ptr(new_len),
            )
        }
    );
    wrap_async!(
        linker,
        "path_symlink",
        |c, target: i32, target_len: i32, fd: i32, name: i32, len: i32| {
            symlink(
                &mut c,
                ptr(target),
                ptr(target_len),
                fd as u32,
                ptr(name),
                ptr(len),
            )
        }
    );
    // A session's filesystem has no hard links (every file has one name).
    linker.func_wrap(
        MODULE,
        "path_link",
        |_c: Caller<'_, Host>,
         _fd: i32,
         _flags: i32,
         _old: i32,
         _old_len: i32,
         _new_fd: i32,
         _new: i32,
         _new_len: i32| i32::from(Errno::NOTSUP.0),
    )?;
    Ok(())
}

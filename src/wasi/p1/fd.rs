//! `fd_*` calls: I/O on stdio, files and directories by descriptor.

use std::io::SeekFrom;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use forkbox_commands::{FileKind, Readiness};
use wasmtime::{Caller, Linker};

use super::abi::{
    self, DIRENT_SIZE, Errno, FDSTAT_SIZE, fdflags, filetype, fstflags, iov_len, rights, whence,
};
use super::table::{self, DirSlot, Fd};
use super::{Fail, GuestExit, Host, HostResult, ptr, split};

/// Bytes one `fd_read`/`fd_write` moves at most: a bigger request is a short read or
/// write, which every libc loops over. Bounds the host-side copy of guest data.
pub const MAX_IO: usize = 1024 * 1024;

/// Registers an async host function whose body is `$body` (a future of [`HostResult`]).
macro_rules! wrap_async {
    ($linker:ident, $name:literal, |$c:ident $(, $a:ident : $t:ty)*| $body:expr) => {
        $linker.func_wrap_async(
            $crate::wasi::p1::MODULE,
            $name,
            |mut $c: wasmtime::Caller<'_, $crate::wasi::p1::Host>, ($($a,)*): ($($t,)*)| {
                Box::new(async move { $crate::wasi::p1::finish($body.await) })
            },
        )?;
    };
}
pub(crate) use wrap_async;

/// A guest offset (`i64` on the wire, unsigned in meaning): `INVAL` past `i64::MAX`.
fn offset(v: i64) -> Result<u64, Errno> {
    u64::try_from(v).map_err(|_| Errno::INVAL)
}

async fn read(c: &mut Caller<'_, Host>, fd: u32, iovs: u32, n: u32, nread: u32) -> HostResult {
    let iovs = split(c)?.0.iovecs(iovs, n)?;
    let want = iov_len(&iovs).min(MAX_IO);
    let data = read_into(c, fd, want, None).await?;
    let (mut mem, _) = split(c)?;
    let got = mem.scatter(&iovs, &data)?;
    mem.put_u32(nread, got as u32)?;
    Ok(())
}

async fn pread(
    c: &mut Caller<'_, Host>,
    fd: u32,
    iovs: u32,
    n: u32,
    at: i64,
    nread: u32,
) -> HostResult {
    let at = offset(at)?;
    let iovs = split(c)?.0.iovecs(iovs, n)?;
    let want = iov_len(&iovs).min(MAX_IO);
    let data = read_into(c, fd, want, Some(at)).await?;
    let (mut mem, _) = split(c)?;
    let got = mem.scatter(&iovs, &data)?;
    mem.put_u32(nread, got as u32)?;
    Ok(())
}

/// Reads up to `want` bytes from `fd` (at `at` for `pread`).
async fn read_into(
    c: &mut Caller<'_, Host>,
    fd: u32,
    want: usize,
    at: Option<u64>,
) -> Result<Bytes, Fail> {
    match c.data_mut().fds.get_mut(fd)? {
        Fd::In {
            input, nonblock, ..
        } => {
            if at.is_some() {
                return Err(Errno::SPIPE.into());
            }
            if want == 0 {
                return Ok(Bytes::new());
            }
            if *nonblock && input.ready() == Readiness::Pending {
                return Err(Errno::AGAIN.into());
            }
            let input = input.clone();
            match input.read_up_to(want).await {
                Ok(Some(b)) => Ok(b),
                Ok(None) => Ok(Bytes::new()),
                Err(_) => Err(Errno::IO.into()),
            }
        }
        Fd::Out { .. } => Err(Errno::BADF.into()),
        Fd::Dir { .. } => Err(Errno::ISDIR.into()),
        Fd::File { handle, .. } => {
            if want == 0 {
                return Ok(Bytes::new());
            }
            Ok(match at {
                Some(at) => handle.read_at(at, want).await?,
                None => handle.read(want).await?,
            })
        }
    }
}

async fn write(c: &mut Caller<'_, Host>, fd: u32, iovs: u32, n: u32, nwritten: u32) -> HostResult {
    let data = {
        let (mem, _) = split(c)?;
        let iovs = mem.iovecs(iovs, n)?;
        mem.gather(&iovs, MAX_IO)?
    };
    let done = write_from(c, fd, &data, None).await?;
    split(c)?.0.put_u32(nwritten, done as u32)?;
    Ok(())
}

async fn pwrite(
    c: &mut Caller<'_, Host>,
    fd: u32,
    iovs: u32,
    n: u32,
    at: i64,
    nwritten: u32,
) -> HostResult {
    let at = offset(at)?;
    let data = {
        let (mem, _) = split(c)?;
        let iovs = mem.iovecs(iovs, n)?;
        mem.gather(&iovs, MAX_IO)?
    };
    let done = write_from(c, fd, &data, Some(at)).await?;
    split(c)?.0.put_u32(nwritten, done as u32)?;
    Ok(())
}

/// Writes `data` to `fd` (at `at` for `pwrite`); gives the bytes written.
async fn write_from(
    c: &mut Caller<'_, Host>,
    fd: u32,
    data: &[u8],
    at: Option<u64>,
) -> Result<usize, Fail> {
    match c.data_mut().fds.get_mut(fd)? {
        Fd::Out { output, .. } => {
            if at.is_some() {
                return Err(Errno::SPIPE.into());
            }
            let output = output.clone();
            match output.write_all(data).await {
                Ok(()) => Ok(data.len()),
                // A process writing to a pipe nobody reads dies of SIGPIPE.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    Err(GuestExit::BrokenPipe.into())
                }
                Err(_) => Err(Errno::IO.into()),
            }
        }
        Fd::In { .. } => Err(Errno::BADF.into()),
        Fd::Dir { .. } => Err(Errno::ISDIR.into()),
        Fd::File { handle, append, .. } => {
            if data.is_empty() {
                return Ok(0);
            }
            if *append && !handle.options().append {
                // `O_APPEND` set after the open (`fd_fdstat_set_flags`): the handle does
                // not append by itself, so find the end and write there, `pwrite`
                // included (as on Linux).
                let end = handle.stat().await?.len;
                let n = handle.write_at(end, data).await?;
                if at.is_none() {
                    handle.seek(SeekFrom::Start(end + n as u64)).await?;
                }
                return Ok(n);
            }
            // A handle opened with `O_APPEND` appends as one step, `pwrite` included.
            Ok(match at {
                Some(at) => handle.write_at(at, data).await?,
                None => handle.write(data).await?,
            })
        }
    }
}

async fn seek(c: &mut Caller<'_, Host>, fd: u32, off: i64, wh: u8, out: u32) -> HostResult {
    let to = match wh {
        whence::SET => SeekFrom::Start(offset(off)?),
        whence::CUR => SeekFrom::Current(off),
        whence::END => SeekFrom::End(off),
        _ => return Err(Errno::INVAL.into()),
    };
    let pos = c.data_mut().fds.handle(fd)?.seek(to).await?;
    split(c)?.0.put_u64(out, pos)?;
    Ok(())
}

fn tell(c: &mut Caller<'_, Host>, fd: u32, out: u32) -> HostResult {
    let (mut mem, host) = split(c)?;
    let pos = host.fds.handle(fd)?.position();
    mem.put_u64(out, pos)?;
    Ok(())
}

async fn fdstat_get(c: &mut Caller<'_, Host>, fd: u32, out: u32) -> HostResult {
    let (ft, flags, base, inheriting) = match c.data_mut().fds.get_mut(fd)? {
        Fd::In { tty, nonblock, .. } => (
            stream_type(*tty),
            if *nonblock { fdflags::NONBLOCK } else { 0 },
            rights::STREAM,
            0,
        ),
        Fd::Out { tty, .. } => (stream_type(*tty), 0, rights::STREAM, 0),
        Fd::Dir { .. } => (filetype::DIRECTORY, 0, rights::ALL, rights::ALL),
        Fd::File {
            handle,
            append,
            nonblock,
            ..
        } => {
            let opts = handle.options();
            let mut base = rights::ALL;
            if !opts.read {
                base &= !(rights::FD_READ | rights::FD_READDIR);
            }
            if !opts.write {
                base &= !rights::WRITING;
            }
            let mut flags = 0;
            if *append {
                flags |= fdflags::APPEND;
            }
            if *nonblock {
                flags |= fdflags::NONBLOCK;
            }
            (abi::filetype_of(handle.kind()), flags, base, rights::ALL)
        }
    };
    let mut b = [0u8; FDSTAT_SIZE];
    b[0] = ft;
    b[2..4].copy_from_slice(&flags.to_le_bytes());
    b[8..16].copy_from_slice(&base.to_le_bytes());
    b[16..24].copy_from_slice(&inheriting.to_le_bytes());
    split(c)?.0.write(out, &b)?;
    Ok(())
}

/// What a stream descriptor says it is: the terminal is a character device (which is
/// what `isatty` asks), a pipe or redirection is left unknown, as wasmtime does.
fn stream_type(tty: bool) -> u8 {
    if tty {
        filetype::CHARACTER_DEVICE
    } else {
        filetype::UNKNOWN
    }
}

fn fdstat_set_flags(c: &mut Caller<'_, Host>, fd: u32, flags: u16) -> HostResult {
    if flags & (fdflags::DSYNC | fdflags::RSYNC | fdflags::SYNC) != 0 {
        return Err(Errno::NOTSUP.into());
    }
    let want_nonblock = flags & fdflags::NONBLOCK != 0;
    match c.data_mut().fds.get_mut(fd)? {
        Fd::In { nonblock, .. } => *nonblock = want_nonblock,
        Fd::Out { .. } | Fd::Dir { .. } => {}
        Fd::File {
            append, nonblock, ..
        } => {
            *append = flags & fdflags::APPEND != 0;
            *nonblock = want_nonblock;
        }
    }
    Ok(())
}

async fn filestat_get(c: &mut Caller<'_, Host>, fd: u32, out: u32) -> HostResult {
    let fs = c.data().fs.clone();
    let stat = match c.data_mut().fds.get_mut(fd)? {
        Fd::In { tty, .. } | Fd::Out { tty, .. } => abi::stream_filestat(stream_type(*tty)),
        Fd::Dir { path, .. } => {
            let path = path.clone();
            abi::filestat(&fs.stat(&path).await?)
        }
        Fd::File { handle, .. } => abi::filestat(&handle.stat().await?),
    };
    split(c)?.0.write(out, &stat)?;
    Ok(())
}

async fn filestat_set_size(c: &mut Caller<'_, Host>, fd: u32, size: i64) -> HostResult {
    let size = offset(size)?;
    c.data_mut().fds.handle(fd)?.set_len(size).await?;
    Ok(())
}

/// The new modification time `fst_flags` asks for, if any; `INVAL` for contradictory
/// flags, as `utimensat` gives.
pub fn mtime_of(atim: u64, mtim: u64, fst: u16) -> Result<Option<SystemTime>, Errno> {
    let _ = atim;
    if fst & fstflags::ATIM != 0 && fst & fstflags::ATIM_NOW != 0 {
        return Err(Errno::INVAL);
    }
    if fst & fstflags::MTIM != 0 && fst & fstflags::MTIM_NOW != 0 {
        return Err(Errno::INVAL);
    }
    if fst & !(fstflags::ATIM | fstflags::ATIM_NOW | fstflags::MTIM | fstflags::MTIM_NOW) != 0 {
        return Err(Errno::INVAL);
    }
    // Access times are not kept (a session's files report atime = mtime); setting one
    // succeeds and changes nothing, as on a `noatime` mount.
    Ok(if fst & fstflags::MTIM_NOW != 0 {
        Some(SystemTime::now())
    } else if fst & fstflags::MTIM != 0 {
        Some(UNIX_EPOCH + Duration::from_nanos(mtim))
    } else {
        None
    })
}

async fn filestat_set_times(
    c: &mut Caller<'_, Host>,
    fd: u32,
    atim: i64,
    mtim: i64,
    fst: u16,
) -> HostResult {
    let mtime = mtime_of(atim as u64, mtim as u64, fst)?;
    let path = match c.data().fds.get(fd)? {
        Fd::Dir { path, .. } | Fd::File { path, .. } => path.clone(),
        Fd::In { .. } | Fd::Out { .. } => return Ok(()),
    };
    if let Some(t) = mtime {
        let fs = c.data().fs.clone();
        fs.set_mtime(&path, t).await?;
    }
    Ok(())
}

async fn readdir(
    c: &mut Caller<'_, Host>,
    fd: u32,
    buf: u32,
    len: u32,
    cookie: i64,
    used: u32,
) -> HostResult {
    let fs = c.data().fs.clone();
    let cookie = cookie as u64;
    let (path, stale) = match c.data().fds.get(fd)? {
        Fd::Dir { path, listing, .. } => (path.clone(), cookie == 0 || listing.is_empty()),
        _ => return Err(Errno::NOTDIR.into()),
    };
    if stale {
        // A listing is taken at cookie 0 and served from until the next rewind, so
        // cookies stay stable while the guest removes what it lists (`rm -r`).
        let here = fs.stat(&path).await?;
        let parent = forkbox_commands::fs::normalize(&format!("{path}/.."));
        let up = fs.stat(&parent).await?;
        let mut slots = vec![
            DirSlot {
                name: ".".into(),
                ino: here.ino,
                filetype: filetype::DIRECTORY,
            },
            DirSlot {
                name: "..".into(),
                ino: up.ino,
                filetype: filetype::DIRECTORY,
            },
        ];
        for e in fs.read_dir(&path).await? {
            slots.push(DirSlot {
                ino: e.meta.ino,
                filetype: abi::filetype_of(e.meta.kind),
                name: e.name,
            });
        }
        if let Fd::Dir { listing, .. } = c.data_mut().fds.get_mut(fd)? {
            *listing = slots;
        }
    }
    let (mut mem, host) = split(c)?;
    let Fd::Dir { listing, .. } = host.fds.get(fd)? else {
        return Err(Errno::NOTDIR.into());
    };
    let cap = len as usize;
    let mut out = Vec::with_capacity(cap.min(64 * 1024));
    let start = usize::try_from(cookie).unwrap_or(usize::MAX);
    for (i, slot) in listing.iter().enumerate().skip(start) {
        if out.len() >= cap {
            break;
        }
        let mut head = [0u8; DIRENT_SIZE];
        head[0..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
        head[8..16].copy_from_slice(&slot.ino.to_le_bytes());
        head[16..20].copy_from_slice(&(slot.name.len() as u32).to_le_bytes());
        head[20] = slot.filetype;
        out.extend_from_slice(&head);
        out.extend_from_slice(slot.name.as_bytes());
    }
    // The last entry may be cut: a full buffer tells the guest to call again with a
    // bigger one (as wasi-libc does).
    out.truncate(cap);
    mem.write(buf, &out)?;
    mem.put_u32(used, out.len() as u32)?;
    Ok(())
}

async fn close(c: &mut Caller<'_, Host>, fd: u32) -> HostResult {
    let entry = c.data_mut().fds.remove(fd)?;
    table::close(entry).await?;
    Ok(())
}

async fn renumber(c: &mut Caller<'_, Host>, from: u32, to: u32) -> HostResult {
    let fds = &mut c.data_mut().fds;
    fds.get(from)?;
    fds.get(to)?;
    if from == to {
        return Ok(());
    }
    let moved = fds.remove(from)?;
    let old = fds.remove(to)?;
    fds.insert_at(to, moved);
    table::close(old).await?;
    Ok(())
}

async fn sync(c: &mut Caller<'_, Host>, fd: u32) -> HostResult {
    match c.data_mut().fds.get_mut(fd)? {
        Fd::File { handle, .. } => handle.sync().await?,
        Fd::Dir { .. } => {}
        Fd::In { .. } | Fd::Out { .. } => return Err(Errno::INVAL.into()),
    }
    Ok(())
}

fn advise(c: &mut Caller<'_, Host>, fd: u32, advice: u8) -> HostResult {
    match c.data().fds.get(fd)? {
        Fd::File { .. } => {}
        Fd::Dir { .. } => return Err(Errno::BADF.into()),
        Fd::In { .. } | Fd::Out { .. } => return Err(Errno::SPIPE.into()),
    }
    if advice > 5 {
        return Err(Errno::INVAL.into());
    }
    Ok(())
}

async fn allocate(c: &mut Caller<'_, Host>, fd: u32, at: i64, len: i64) -> HostResult {
    let (at, len) = (offset(at)?, offset(len)?);
    let end = at.checked_add(len).ok_or(Errno::FBIG)?;
    let handle = c.data_mut().fds.handle(fd)?;
    if !handle.options().write {
        return Err(Errno::BADF.into());
    }
    if handle.kind() != FileKind::File {
        return Err(Errno::NOTSUP.into());
    }
    if end > handle.stat().await?.len {
        handle.set_len(end).await?;
    }
    Ok(())
}

/// Rights are not enforced (as in wasmtime): dropping some always succeeds.
fn set_rights(c: &mut Caller<'_, Host>, fd: u32) -> HostResult {
    c.data().fds.get(fd)?;
    Ok(())
}

fn prestat_get(c: &mut Caller<'_, Host>, fd: u32, out: u32) -> HostResult {
    let (mut mem, host) = split(c)?;
    let Fd::Dir {
        preopen: Some(name),
        ..
    } = host.fds.get(fd)?
    else {
        return Err(Errno::BADF.into());
    };
    let mut b = [0u8; 8];
    b[4..8].copy_from_slice(&(name.len() as u32).to_le_bytes());
    mem.write(out, &b)?;
    Ok(())
}

fn prestat_dir_name(c: &mut Caller<'_, Host>, fd: u32, buf: u32, len: u32) -> HostResult {
    let (mut mem, host) = split(c)?;
    let Fd::Dir {
        preopen: Some(name),
        ..
    } = host.fds.get(fd)?
    else {
        return Err(Errno::BADF.into());
    };
    if (len as usize) < name.len() {
        return Err(Errno::NAMETOOLONG.into());
    }
    mem.write(buf, name.as_bytes())?;
    Ok(())
}

pub fn add_to_linker(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    wrap_async!(
        linker,
        "fd_read",
        |c, fd: i32, iovs: i32, n: i32, out: i32| {
            read(&mut c, fd as u32, ptr(iovs), ptr(n), ptr(out))
        }
    );
    wrap_async!(
        linker,
        "fd_pread",
        |c, fd: i32, iovs: i32, n: i32, at: i64, out: i32| {
            pread(&mut c, fd as u32, ptr(iovs), ptr(n), at, ptr(out))
        }
    );
    wrap_async!(
        linker,
        "fd_write",
        |c, fd: i32, iovs: i32, n: i32, out: i32| {
            write(&mut c, fd as u32, ptr(iovs), ptr(n), ptr(out))
        }
    );
    wrap_async!(
        linker,
        "fd_pwrite",
        |c, fd: i32, iovs: i32, n: i32, at: i64, out: i32| {
            pwrite(&mut c, fd as u32, ptr(iovs), ptr(n), at, ptr(out))
        }
    );
    wrap_async!(
        linker,
        "fd_seek",
        |c, fd: i32, off: i64, wh: i32, out: i32| {
            seek(&mut c, fd as u32, off, wh as u8, ptr(out))
        }
    );
    wrap_async!(linker, "fd_tell", |c, fd: i32, out: i32| {
        std::future::ready(tell(&mut c, fd as u32, ptr(out)))
    });
    wrap_async!(linker, "fd_fdstat_get", |c, fd: i32, out: i32| {
        fdstat_get(&mut c, fd as u32, ptr(out))
    });
    wrap_async!(linker, "fd_fdstat_set_flags", |c, fd: i32, flags: i32| {
        std::future::ready(fdstat_set_flags(&mut c, fd as u32, flags as u16))
    });
    wrap_async!(
        linker,
        "fd_fdstat_set_rights",
        |c, fd: i32, _base: i64, _inh: i64| { std::future::ready(set_rights(&mut c, fd as u32)) }
    );
    wrap_async!(linker, "fd_filestat_get", |c, fd: i32, out: i32| {
        filestat_get(&mut c, fd as u32, ptr(out))
    });
    wrap_async!(linker, "fd_filestat_set_size", |c, fd: i32, size: i64| {
        filestat_set_size(&mut c, fd as u32, size)
    });
    wrap_async!(
        linker,
        "fd_filestat_set_times",
        |c, fd: i32, atim: i64, mtim: i64, fst: i32| {
            filestat_set_times(&mut c, fd as u32, atim, mtim, fst as u16)
        }
    );
    wrap_async!(
        linker,
        "fd_readdir",
        |c, fd: i32, buf: i32, len: i32, cookie: i64, used: i32| {
            readdir(&mut c, fd as u32, ptr(buf), ptr(len), cookie, ptr(used))
        }
    );
    wrap_async!(linker, "fd_close", |c, fd: i32| close(&mut c, fd as u32));
    wrap_async!(linker, "fd_renumber", |c, from: i32, to: i32| {
        renumber(&mut c, from as u32, to as u32)
    });
    wrap_async!(linker, "fd_sync", |c, fd: i32| sync(&mut c, fd as u32));
    wrap_async!(linker, "fd_datasync", |c, fd: i32| sync(&mut c, fd as u32));
    wrap_async!(
        linker,
        "fd_advise",
        |c, fd: i32, _off: i64, _len: i64, advice: i32| {
            std::future::ready(advise(&mut c, fd as u32, advice as u8))
        }
    );
    wrap_async!(linker, "fd_allocate", |c, fd: i32, at: i64, len: i64| {
        allocate(&mut c, fd as u32, at, len)
    });
    wrap_async!(linker, "fd_prestat_get", |c, fd: i32, out: i32| {
        std::future::ready(prestat_get(&mut c, fd as u32, ptr(out)))
    });
    wrap_async!(
        linker,
        "fd_prestat_dir_name",
        |c, fd: i32, buf: i32, len: i32| {
            std::future::ready(prestat_dir_name(&mut c, fd as u32, ptr(buf), ptr(len)))
        }
    );
    Ok(())
}

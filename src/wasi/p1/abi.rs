//! The `wasi_snapshot_preview1` ABI: errno values, flag bits and struct layouts as the
//! witx definitions fix them, and checked access to the guest's linear memory.
//!
//! Numbers here are the wire format, not Linux's: WASI's `ENOENT` is 44, not 2.

use forkbox_commands::{FileKind, FsError, Metadata};

/// A WASI errno (`__wasi_errno_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub u16);

impl Errno {
    pub const SUCCESS: Errno = Errno(0);
    pub const ACCES: Errno = Errno(2);
    pub const AGAIN: Errno = Errno(6);
    pub const BADF: Errno = Errno(8);
    pub const DQUOT: Errno = Errno(19);
    pub const EXIST: Errno = Errno(20);
    pub const FAULT: Errno = Errno(21);
    pub const FBIG: Errno = Errno(22);
    pub const ILSEQ: Errno = Errno(25);
    pub const INVAL: Errno = Errno(28);
    pub const IO: Errno = Errno(29);
    pub const ISDIR: Errno = Errno(31);
    pub const LOOP: Errno = Errno(32);
    pub const MFILE: Errno = Errno(33);
    pub const NAMETOOLONG: Errno = Errno(37);
    pub const NOENT: Errno = Errno(44);
    pub const NOSPC: Errno = Errno(51);
    pub const NOSYS: Errno = Errno(52);
    pub const NOTDIR: Errno = Errno(54);
    pub const NOTEMPTY: Errno = Errno(55);
    pub const NOTSUP: Errno = Errno(58);
    pub const OVERFLOW: Errno = Errno(61);
    pub const PERM: Errno = Errno(63);
    pub const ROFS: Errno = Errno(69);
    pub const SPIPE: Errno = Errno(70);
}

impl From<FsError> for Errno {
    fn from(e: FsError) -> Errno {
        match e {
            FsError::NotFound => Errno::NOENT,
            FsError::AlreadyExists => Errno::EXIST,
            FsError::NotADirectory => Errno::NOTDIR,
            FsError::IsADirectory => Errno::ISDIR,
            FsError::NotEmpty => Errno::NOTEMPTY,
            FsError::PermissionDenied => Errno::ACCES,
            FsError::ReadOnly => Errno::ROFS,
            FsError::InvalidArgument => Errno::INVAL,
            FsError::Loop => Errno::LOOP,
            FsError::NameTooLong => Errno::NAMETOOLONG,
            FsError::NoSpace => Errno::NOSPC,
            FsError::QuotaExceeded => Errno::DQUOT,
            FsError::TooLarge => Errno::FBIG,
            FsError::Unsupported => Errno::NOTSUP,
            FsError::Io => Errno::IO,
            FsError::BadDescriptor => Errno::BADF,
        }
    }
}

/// `__wasi_filetype_t`.
pub mod filetype {
    pub const UNKNOWN: u8 = 0;
    pub const CHARACTER_DEVICE: u8 = 2;
    pub const DIRECTORY: u8 = 3;
    pub const REGULAR_FILE: u8 = 4;
    pub const SYMBOLIC_LINK: u8 = 7;
}

/// The WASI file type of a port file kind.
pub fn filetype_of(kind: FileKind) -> u8 {
    match kind {
        FileKind::File => filetype::REGULAR_FILE,
        FileKind::Dir => filetype::DIRECTORY,
        FileKind::Symlink => filetype::SYMBOLIC_LINK,
        FileKind::CharDevice => filetype::CHARACTER_DEVICE,
    }
}

/// `__wasi_fdflags_t`.
pub mod fdflags {
    pub const APPEND: u16 = 1;
    pub const DSYNC: u16 = 2;
    pub const NONBLOCK: u16 = 4;
    pub const RSYNC: u16 = 8;
    pub const SYNC: u16 = 16;
}

/// `__wasi_oflags_t`.
pub mod oflags {
    pub const CREAT: u16 = 1;
    pub const DIRECTORY: u16 = 2;
    pub const EXCL: u16 = 4;
    pub const TRUNC: u16 = 8;
}

/// `__wasi_lookupflags_t`.
pub const LOOKUP_SYMLINK_FOLLOW: u32 = 1;

/// `__wasi_fstflags_t`.
pub mod fstflags {
    pub const ATIM: u16 = 1;
    pub const ATIM_NOW: u16 = 2;
    pub const MTIM: u16 = 4;
    pub const MTIM_NOW: u16 = 8;
}

/// `__wasi_rights_t` bits this host looks at. Rights are otherwise not enforced (as in
/// wasmtime): the access mode of an open comes from them, nothing else.
pub mod rights {
    pub const FD_DATASYNC: u64 = 1 << 0;
    pub const FD_READ: u64 = 1 << 1;
    pub const FD_SEEK: u64 = 1 << 2;
    pub const FD_TELL: u64 = 1 << 5;
    pub const FD_WRITE: u64 = 1 << 6;
    pub const FD_ALLOCATE: u64 = 1 << 8;
    pub const FD_READDIR: u64 = 1 << 14;
    pub const FD_FILESTAT_SET_SIZE: u64 = 1 << 22;
    /// Every right preview 1 defines.
    pub const ALL: u64 = (1 << 29) - 1;
    /// What a terminal or pipe has: everything but seeking (wasi-libc's `isatty` checks
    /// exactly that a character device lacks `FD_SEEK` and `FD_TELL`).
    pub const STREAM: u64 = ALL & !(FD_SEEK | FD_TELL);
    /// Rights that make an open writable.
    pub const WRITING: u64 = FD_DATASYNC | FD_WRITE | FD_ALLOCATE | FD_FILESTAT_SET_SIZE;
}

/// `__wasi_clockid_t`.
pub mod clock {
    pub const REALTIME: u32 = 0;
    pub const MONOTONIC: u32 = 1;
    pub const PROCESS_CPUTIME: u32 = 2;
    pub const THREAD_CPUTIME: u32 = 3;
}

/// `__wasi_eventtype_t` and poll layouts.
pub mod event {
    pub const CLOCK: u8 = 0;
    pub const FD_READ: u8 = 1;
    pub const FD_WRITE: u8 = 2;
    /// `__wasi_subclockflags_t`: the timeout is an absolute time.
    pub const ABSTIME: u16 = 1;
    /// `__wasi_eventrwflags_t`: the peer hung up (end-of-file).
    pub const HANGUP: u16 = 1;
    /// Size of `__wasi_subscription_t`.
    pub const SUBSCRIPTION_SIZE: u32 = 48;
    /// Size of `__wasi_event_t`.
    pub const EVENT_SIZE: u32 = 32;
}

/// `__wasi_whence_t`.
pub mod whence {
    pub const SET: u8 = 0;
    pub const CUR: u8 = 1;
    pub const END: u8 = 2;
}

/// Size of `__wasi_dirent_t` before the name.
pub const DIRENT_SIZE: usize = 24;
/// Size of `__wasi_filestat_t`.
pub const FILESTAT_SIZE: usize = 64;
/// Size of `__wasi_fdstat_t`.
pub const FDSTAT_SIZE: usize = 24;

/// Nanoseconds since the epoch of a time (0 before it), as WASI timestamps are.
pub fn nanos(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `__wasi_filestat_t` of `meta`, little-endian, as the guest reads it.
pub fn filestat(meta: &Metadata) -> [u8; FILESTAT_SIZE] {
    let mut b = [0u8; FILESTAT_SIZE];
    // Every file of a session is on one device.
    b[0..8].copy_from_slice(&1u64.to_le_bytes());
    b[8..16].copy_from_slice(&meta.ino.to_le_bytes());
    b[16] = filetype_of(meta.kind);
    b[24..32].copy_from_slice(&meta.nlink.to_le_bytes());
    b[32..40].copy_from_slice(&meta.len.to_le_bytes());
    b[40..48].copy_from_slice(&nanos(meta.atime).to_le_bytes());
    b[48..56].copy_from_slice(&nanos(meta.mtime).to_le_bytes());
    b[56..64].copy_from_slice(&nanos(meta.ctime).to_le_bytes());
    b
}

/// A `__wasi_filestat_t` for something that is no file (a pipe, the terminal).
pub fn stream_filestat(filetype: u8) -> [u8; FILESTAT_SIZE] {
    let mut b = [0u8; FILESTAT_SIZE];
    b[16] = filetype;
    b[24..32].copy_from_slice(&1u64.to_le_bytes());
    b
}

/// Checked views of the guest's linear memory: every access outside it is `EFAULT`.
pub struct Mem<'a>(pub &'a mut [u8]);

impl<'a> Mem<'a> {
    fn range(&self, ptr: u32, len: usize) -> Result<std::ops::Range<usize>, Errno> {
        let start = ptr as usize;
        let end = start.checked_add(len).ok_or(Errno::FAULT)?;
        if end > self.0.len() {
            return Err(Errno::FAULT);
        }
        Ok(start..end)
    }

    pub fn slice(&self, ptr: u32, len: usize) -> Result<&[u8], Errno> {
        let r = self.range(ptr, len)?;
        Ok(&self.0[r])
    }

    pub fn slice_mut(&mut self, ptr: u32, len: usize) -> Result<&mut [u8], Errno> {
        let r = self.range(ptr, len)?;
        Ok(&mut self.0[r])
    }

    pub fn write(&mut self, ptr: u32, data: &[u8]) -> Result<(), Errno> {
        self.slice_mut(ptr, data.len())?.copy_from_slice(data);
        Ok(())
    }

    pub fn u8(&self, ptr: u32) -> Result<u8, Errno> {
        Ok(self.slice(ptr, 1)?[0])
    }

    pub fn u16(&self, ptr: u32) -> Result<u16, Errno> {
        let s = self.slice(ptr, 2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }

    pub fn u32(&self, ptr: u32) -> Result<u32, Errno> {
        let s = self.slice(ptr, 4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    pub fn u64(&self, ptr: u32) -> Result<u64, Errno> {
        let s = self.slice(ptr, 8)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(s);
        Ok(u64::from_le_bytes(b))
    }

    pub fn put_u16(&mut self, ptr: u32, v: u16) -> Result<(), Errno> {
        self.write(ptr, &v.to_le_bytes())
    }

    pub fn put_u32(&mut self, ptr: u32, v: u32) -> Result<(), Errno> {
        self.write(ptr, &v.to_le_bytes())
    }

    pub fn put_u64(&mut self, ptr: u32, v: u64) -> Result<(), Errno> {
        self.write(ptr, &v.to_le_bytes())
    }

    /// A path or other string argument: `ILSEQ` unless it is UTF-8 (WASI strings are).
    pub fn str(&self, ptr: u32, len: u32) -> Result<String, Errno> {
        let bytes = self.slice(ptr, len as usize)?;
        std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|_| Errno::ILSEQ)
    }

    /// The `(ptr, len)` pairs of an iovec array (`__wasi_iovec_t`, 8 bytes each).
    pub fn iovecs(&self, ptr: u32, count: u32) -> Result<Vec<(u32, u32)>, Errno> {
        let mut out = Vec::with_capacity((count as usize).min(1024));
        for i in 0..count {
            let at = ptr
                .checked_add(i.checked_mul(8).ok_or(Errno::FAULT)?)
                .ok_or(Errno::FAULT)?;
            let base = self.u32(at)?;
            let len = self.u32(at + 4)?;
            // Each buffer must lie in memory, as the kernel checks with EFAULT.
            self.range(base, len as usize)?;
            out.push((base, len));
        }
        Ok(out)
    }

    /// Gathers the bytes of `iovs`, at most `max` of them (a short write).
    pub fn gather(&self, iovs: &[(u32, u32)], max: usize) -> Result<Vec<u8>, Errno> {
        let mut out = Vec::new();
        for &(base, len) in iovs {
            let room = max - out.len();
            if room == 0 {
                break;
            }
            let take = (len as usize).min(room);
            out.extend_from_slice(self.slice(base, take)?);
        }
        Ok(out)
    }

    /// Scatters `data` over `iovs` in order; gives the bytes placed.
    pub fn scatter(&mut self, iovs: &[(u32, u32)], data: &[u8]) -> Result<usize, Errno> {
        let mut done = 0;
        for &(base, len) in iovs {
            if done == data.len() {
                break;
            }
            let take = (len as usize).min(data.len() - done);
            self.write(base, &data[done..done + take])?;
            done += take;
        }
        Ok(done)
    }
}

/// Total length of `iovs`, saturated to `usize`.
pub fn iov_len(iovs: &[(u32, u32)]) -> usize {
    iovs.iter()
        .fold(0usize, |acc, &(_, len)| acc.saturating_add(len as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_access_is_bounds_checked() {
        let mut buf = vec![0u8; 16];
        let mut m = Mem(&mut buf);
        m.put_u32(12, 7).unwrap();
        assert_eq!(m.u32(12), Ok(7));
        assert_eq!(m.u32(13), Err(Errno::FAULT));
        assert_eq!(m.slice(u32::MAX, 2).err(), Some(Errno::FAULT));
        assert_eq!(m.str(0, 17).err(), Some(Errno::FAULT));
        m.write(0, &[0xff, 0xfe]).unwrap();
        assert_eq!(m.str(0, 2).err(), Some(Errno::ILSEQ));
    }

    #[test]
    fn iovecs_gather_and_scatter() {
        let mut buf = vec![0u8; 64];
        let mut m = Mem(&mut buf);
        // Two iovecs at 0: (32, 3) and (40, 2).
        m.put_u32(0, 32).unwrap();
        m.put_u32(4, 3).unwrap();
        m.put_u32(8, 40).unwrap();
        m.put_u32(12, 2).unwrap();
        let iovs = m.iovecs(0, 2).unwrap();
        assert_eq!(iov_len(&iovs), 5);
        assert_eq!(m.scatter(&iovs, b"abcdefg").unwrap(), 5);
        assert_eq!(m.gather(&iovs, 4).unwrap(), b"abcd");
        assert_eq!(m.gather(&iovs, 100).unwrap(), b"abcde");
        m.put_u32(8, 63).unwrap();
        assert_eq!(m.iovecs(0, 2).err(), Some(Errno::FAULT));
    }
}

//! Local reads and stats tried on the calling thread first, from the kernel's caches only.
//!
//! A trip to tokio's blocking pool costs 10–40 µs on a small VM, more than reading a
//! megabyte that is already in the page cache (docs/BENCHMARKS.md). Linux can say "this
//! would wait for the disk" instead of waiting: `openat2` with `RESOLVE_CACHED` resolves a
//! path only from the dentry cache, and `preadv2` with `RWF_NOWAIT` reads only what is in
//! the page cache. Both fail with `EAGAIN` otherwise. So a local read or stat is first made
//! on the async thread with these flags, and only what would block — a path or pages not
//! cached — goes to the blocking pool, as io_uring does with its requests.
//!
//! Where the kernel or filesystem does not take the flags (`RWF_NOWAIT` on tmpfs, say, or
//! `openat2` before Linux 5.12) the first refusal switches the attempts off for that
//! directory tree ([`NoWait`]), and everything goes to the blocking pool as before.

use std::fs::File;
use std::io;
use std::io::IoSliceMut;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::buffer::spare_capacity;
use rustix::fs::{CWD, Mode, OFlags, ResolveFlags, openat2};
use rustix::io::{Errno, ReadWriteFlags, preadv2};

/// Reads of up to this many bytes allocate their buffer before knowing the file's size:
/// the `fstat` that would tell costs more than the allocation. (The commands read 64 KiB
/// at a time, and the VFS already bounds a read by the size it knows.)
const SMALL_READ: usize = 64 * 1024;

/// Whether the nonblocking attempts work under one directory tree; cleared by the first
/// refusal of the flags, after which every call there goes to the blocking pool.
#[derive(Debug)]
pub(super) struct NoWait(AtomicBool);

impl Default for NoWait {
    fn default() -> NoWait {
        NoWait(AtomicBool::new(true))
    }
}

/// What a nonblocking attempt gave. An attempt never reports an error of its own: any
/// failure (a filesystem's, or a seccomp filter's) leaves the call to the blocking path,
/// which reports what a plain system call says.
pub(super) enum Tried<T, R> {
    /// The whole answer.
    Done(T),
    /// The rest must be done where waiting is allowed; `R` is what the attempt got so far.
    Blocked(R),
}

/// What opening from the dentry cache gave.
enum Opened {
    File(File),
    /// The cache knows the path does not exist (or a component is not a directory).
    Missing,
    /// For the blocking path: not cached, attempts off, or an error it should report.
    Blocked,
}

/// A read that may have stopped short: `buf` holds the first bytes wanted, `want` is how
/// many are wanted in all.
#[derive(Debug, Default)]
pub(super) struct PartialRead {
    pub buf: Vec<u8>,
    pub want: usize,
}

impl PartialRead {
    /// Reads the rest from `file` (where the read began at `offset`), waiting for the disk
    /// if need be — so on the blocking pool — up to the end of the file. Reads into the
    /// buffer's spare capacity without zeroing it first, retrying short reads and `EINTR`.
    pub fn finish(mut self, file: &File, offset: u64) -> io::Result<Vec<u8>> {
        self.buf
            .reserve_exact(self.want.saturating_sub(self.buf.len()));
        while self.buf.len() < self.want {
            let at = offset + self.buf.len() as u64;
            match rustix::io::pread(file, spare_capacity(&mut self.buf), at) {
                Ok(0) => break,
                Ok(_) => {}
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        // The spare capacity may have been larger than what was wanted.
        self.buf.truncate(self.want);
        Ok(self.buf)
    }
}

impl NoWait {
    fn on(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Turns the attempts off when the kernel refused the flags or the system call
    /// itself (`EPERM` is what a seccomp filter answers for a call it does not allow).
    fn refused(&self, e: Errno) -> bool {
        let refused = matches!(
            e,
            Errno::OPNOTSUPP | Errno::INVAL | Errno::NOSYS | Errno::PERM
        );
        if refused {
            self.0.store(false, Ordering::Relaxed);
        }
        refused
    }

    /// Opens `path` with `flags` if every component is in the dentry cache.
    fn open(&self, path: &Path, flags: OFlags) -> Opened {
        if !self.on() {
            return Opened::Blocked;
        }
        match openat2(
            CWD,
            path,
            flags | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::CACHED,
        ) {
            Ok(fd) => Opened::File(File::from(fd)),
            Err(Errno::NOENT | Errno::NOTDIR) => Opened::Missing,
            Err(e) => {
                self.refused(e);
                Opened::Blocked
            }
        }
    }

    /// Reads up to `len` bytes at `offset` of the host file `path`, like `read(2)` (fewer
    /// at the end of the file), as far as the caches allow. Blocked with `None` when the
    /// path is not cached: all of it is for the blocking pool.
    pub fn read(
        &self,
        path: &Path,
        offset: u64,
        len: usize,
    ) -> Tried<Vec<u8>, Option<(File, PartialRead)>> {
        // Non-blocking so that a FIFO put in the file's place does not wait for a writer
        // (a regular file's reads ignore the flag).
        let Opened::File(file) = self.open(path, OFlags::RDONLY | OFlags::NONBLOCK) else {
            return Tried::Blocked(None);
        };
        // The size bounds the buffer: a large `len` on a small file allocates what is
        // there. A small `len` is allocated as it is (one system call fewer) and the buffer
        // shrunk to what was read.
        let want = if len <= SMALL_READ {
            len
        } else {
            match file.metadata() {
                Ok(md) => {
                    usize::try_from(md.len().saturating_sub(offset)).map_or(len, |n| n.min(len))
                }
                Err(_) => return Tried::Blocked(None),
            }
        };
        match self.read_file(&file, offset, want) {
            Tried::Done(done) => Tried::Done(done),
            Tried::Blocked(partial) => Tried::Blocked(Some((file, partial))),
        }
    }

    /// Reads up to `want` bytes at `offset` of an open file from the page cache; what is
    /// not cached is left to [`PartialRead::finish`].
    pub fn read_file(&self, file: &File, offset: u64, want: usize) -> Tried<Vec<u8>, PartialRead> {
        if !self.on() {
            return Tried::Blocked(PartialRead {
                buf: Vec::new(),
                want,
            });
        }
        // Zeroed: `preadv2` takes initialised memory (forkbox has no `unsafe`), a pass over
        // the buffer that the blocking path does not make.
        let mut buf = vec![0; want];
        let mut filled = 0;
        while filled < want {
            let mut slices = [IoSliceMut::new(&mut buf[filled..])];
            match preadv2(
                file,
                &mut slices,
                offset + filled as u64,
                ReadWriteFlags::NOWAIT,
            ) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(Errno::INTR) => {}
                Err(e) => {
                    // Not cached (`EAGAIN`), refused, or an error for the blocking path
                    // to report.
                    self.refused(e);
                    buf.truncate(filled);
                    return Tried::Blocked(PartialRead { buf, want });
                }
            }
        }
        buf.truncate(filled);
        if filled < want / 2 {
            buf.shrink_to_fit();
        }
        Tried::Done(buf)
    }

    /// `lstat` of the host path `path` from the caches: `None` when it does not exist.
    /// A symlink is [`Tried::Blocked`], since reading its target may need the disk.
    pub fn lstat(&self, path: &Path) -> Tried<Option<std::fs::Metadata>, ()> {
        let file = match self.open(path, OFlags::PATH | OFlags::NOFOLLOW) {
            Opened::File(file) => file,
            Opened::Missing => return Tried::Done(None),
            Opened::Blocked => return Tried::Blocked(()),
        };
        match file.metadata() {
            Ok(md) if !md.file_type().is_symlink() => Tried::Done(Some(md)),
            _ => Tried::Blocked(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(path: &Path, len: usize) -> Vec<u8> {
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(path, &data).unwrap();
        data
    }

    /// Reads `path` whatever the attempt gives, finishing on this thread.
    fn read_all(nw: &NoWait, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        match nw.read(path, offset, len) {
            Tried::Done(done) => Ok(done),
            Tried::Blocked(Some((file, partial))) => partial.finish(&file, offset),
            Tried::Blocked(None) => {
                let file = File::open(path)?;
                let size = file.metadata()?.len();
                let want = (size.saturating_sub(offset) as usize).min(len);
                PartialRead {
                    buf: Vec::new(),
                    want,
                }
                .finish(&file, offset)
            }
        }
    }

    #[test]
    fn reads_like_pread_at_any_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data = fill(&path, 300_000);
        let nw = NoWait::default();
        for (offset, len) in [
            (0, 10),
            (0, 300_000),
            (299_990, 100),
            (300_000, 5),
            (400_000, 5),
        ] {
            let got = read_all(&nw, &path, offset, len).unwrap();
            let from = (offset as usize).min(data.len());
            let to = (from + len).min(data.len());
            assert_eq!(got, data[from..to], "offset {offset} len {len}");
        }
    }

    #[test]
    fn a_cached_file_is_read_without_blocking() {
        // The temp dir is on a disk filesystem (ext4 on the CI machines), where the flags
        // work; on one that refuses them this checks that attempts switch off instead.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data = fill(&path, 1 << 20);
        let nw = NoWait::default();
        match nw.read(&path, 0, 1 << 20) {
            Tried::Done(got) => assert_eq!(got, data),
            Tried::Blocked(_) => assert!(!nw.on(), "a file just written is in the page cache"),
        }
    }

    #[test]
    fn an_evicted_file_goes_to_the_blocking_path_and_reads_right() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data = fill(&path, 256 * 1024);
        let file = File::open(&path).unwrap();
        file.sync_all().unwrap();
        // Clean pages can be dropped from the page cache; the kernel may keep some.
        rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        let nw = NoWait::default();
        let got = match nw.read_file(&file, 0, data.len()) {
            Tried::Done(done) => done,
            Tried::Blocked(partial) => {
                assert!(partial.buf.len() < data.len());
                partial.finish(&file, 0).unwrap()
            }
        };
        assert_eq!(got, data);
    }

    #[test]
    fn lstat_answers_from_the_caches_and_leaves_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fill(&file, 10);
        std::os::unix::fs::symlink("f", dir.path().join("l")).unwrap();
        let nw = NoWait::default();
        match nw.lstat(&file) {
            Tried::Done(md) => assert_eq!(md.unwrap().len(), 10),
            Tried::Blocked(()) => assert!(!nw.on()),
        }
        assert!(matches!(
            nw.lstat(&dir.path().join("l")),
            Tried::Blocked(())
        ));
        match nw.lstat(&dir.path().join("missing")) {
            Tried::Done(md) => assert!(md.is_none()),
            Tried::Blocked(()) => {} // not in the dentry cache: the blocking path answers
        }
        match nw.lstat(&file.join("under-a-file")) {
            Tried::Done(md) => assert!(md.is_none()),
            Tried::Blocked(()) => {}
        }
    }

    #[test]
    fn a_fifo_does_not_wait_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let nw = NoWait::default();
        // Opened at once; a positioned read of a pipe is refused (`ESPIPE`), here and
        // on the blocking path, which reports it.
        let err = read_all(&nw, &fifo, 0, 10).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(Errno::SPIPE.raw_os_error()));
        assert!(nw.on(), "an error of the file's is no refusal");
    }

    #[test]
    fn a_refusal_switches_attempts_off() {
        let nw = NoWait::default();
        assert!(nw.refused(Errno::OPNOTSUPP));
        assert!(!nw.on());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fill(&path, 10);
        assert!(matches!(nw.read(&path, 0, 10), Tried::Blocked(None)));
        assert!(matches!(nw.lstat(&path), Tried::Blocked(())));
        // A seccomp filter's answer switches them off too; not being cached, or a file's
        // own error, does not.
        let nw = NoWait::default();
        assert!(nw.refused(Errno::PERM));
        assert!(!nw.on());
        for e in [Errno::AGAIN, Errno::SPIPE, Errno::IO, Errno::ACCESS] {
            assert!(!NoWait::default().refused(e), "{e:?}");
        }
    }
}

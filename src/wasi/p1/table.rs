//! The guest's file descriptors: stdio streams, the preopened root, open directories
//! and open files, each a slot of a bounded table.

use std::collections::BTreeMap;

use forkbox_commands::fs::FileHandle;
use forkbox_commands::{FsError, Input, Output};

use super::abi::Errno;

/// Open descriptors one guest may hold, as a process's `RLIMIT_NOFILE` (1024 on most
/// Linux systems): each open file holds buffers in the session filesystem, so a guest
/// opening files in a loop must hit `EMFILE`, not exhaust the host.
pub const MAX_FDS: usize = 1024;

/// The descriptor of the preopened session root (`/`), the first one after stdio.
pub const ROOT_FD: u32 = 3;

/// One open descriptor.
pub enum Fd {
    /// Standard input: the command's stdin stream.
    In {
        input: Input,
        tty: bool,
        nonblock: bool,
    },
    /// Standard output or error: one of the command's output streams.
    Out { output: Output, tty: bool },
    /// A directory, by its absolute physical path in the session filesystem (the port
    /// has no directory handles, so `*at` calls join to it). `preopen` is the name the
    /// guest learns from `fd_prestat_dir_name`.
    Dir {
        path: String,
        preopen: Option<String>,
        /// The listing `fd_readdir` serves cookies from, taken at cookie 0.
        listing: Vec<DirSlot>,
    },
    /// An open file. `path` is where it was opened (for `fd_filestat_set_times`, which
    /// the port only offers by path); `append` is `O_APPEND` as the guest set it.
    File {
        handle: FileHandle,
        path: String,
        append: bool,
        nonblock: bool,
    },
}

/// One entry of a directory listing, as `fd_readdir` writes it.
#[derive(Clone, Debug)]
pub struct DirSlot {
    pub name: String,
    pub ino: u64,
    pub filetype: u8,
}

/// The descriptor table. Numbers are given out lowest-free first, as POSIX does.
#[derive(Default)]
pub struct FdTable {
    fds: BTreeMap<u32, Fd>,
}

impl FdTable {
    pub fn new() -> FdTable {
        FdTable::default()
    }

    /// Puts `fd` at `n` (stdio and the preopen, at start).
    pub fn insert_at(&mut self, n: u32, fd: Fd) {
        self.fds.insert(n, fd);
    }

    /// Puts `fd` at the lowest free number; `EMFILE` past [`MAX_FDS`].
    pub fn insert(&mut self, fd: Fd) -> Result<u32, Errno> {
        if self.fds.len() >= MAX_FDS {
            return Err(Errno::MFILE);
        }
        let mut n = 0u32;
        for &used in self.fds.keys() {
            if used != n {
                break;
            }
            n += 1;
        }
        self.fds.insert(n, fd);
        Ok(n)
    }

    pub fn get(&self, n: u32) -> Result<&Fd, Errno> {
        self.fds.get(&n).ok_or(Errno::BADF)
    }

    pub fn get_mut(&mut self, n: u32) -> Result<&mut Fd, Errno> {
        self.fds.get_mut(&n).ok_or(Errno::BADF)
    }

    pub fn remove(&mut self, n: u32) -> Result<Fd, Errno> {
        self.fds.remove(&n).ok_or(Errno::BADF)
    }

    /// The absolute path of directory descriptor `n`: `BADF` if there is none,
    /// `NOTDIR` if it is not a directory.
    pub fn dir_path(&self, n: u32) -> Result<&str, Errno> {
        match self.get(n)? {
            Fd::Dir { path, .. } => Ok(path),
            _ => Err(Errno::NOTDIR),
        }
    }

    /// The open file of descriptor `n`, for calls that need one.
    pub fn handle(&mut self, n: u32) -> Result<&mut FileHandle, Errno> {
        match self.get_mut(n)? {
            Fd::File { handle, .. } => Ok(handle),
            Fd::Dir { .. } => Err(Errno::ISDIR),
            Fd::In { .. } | Fd::Out { .. } => Err(Errno::SPIPE),
        }
    }

    /// Takes every descriptor out (the guest ended), to close the files.
    pub fn drain(&mut self) -> Vec<Fd> {
        std::mem::take(&mut self.fds).into_values().collect()
    }
}

/// Closes what a descriptor holds: an open file stores what was written.
pub async fn close(fd: Fd) -> Result<(), FsError> {
    match fd {
        Fd::File { handle, .. } => handle.close().await,
        Fd::In { .. } | Fd::Out { .. } | Fd::Dir { .. } => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(path: &str) -> Fd {
        Fd::Dir {
            path: path.to_string(),
            preopen: None,
            listing: Vec::new(),
        }
    }

    #[test]
    fn lowest_free_number_first_and_bounded() {
        let mut t = FdTable::new();
        assert_eq!(t.insert(dir("/")), Ok(0));
        assert_eq!(t.insert(dir("/")), Ok(1));
        assert_eq!(t.insert(dir("/")), Ok(2));
        assert!(t.remove(1).is_ok());
        assert_eq!(t.insert(dir("/a")), Ok(1));
        assert_eq!(t.dir_path(1), Ok("/a"));
        assert_eq!(t.dir_path(9).err(), Some(Errno::BADF));
        for _ in 3..MAX_FDS {
            t.insert(dir("/")).unwrap();
        }
        assert_eq!(t.insert(dir("/")).err(), Some(Errno::MFILE));
    }
}

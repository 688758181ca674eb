//! The filesystem port: the only way a command touches files.
//!
//! forkbox's `Vfs` implements it over a session's fork; [`crate::testing::MemFs`] implements it
//! in memory for unit tests. Paths given to the port are absolute (commands join relative
//! arguments to the working directory with [`crate::Context::path`]); the implementation
//! normalizes `.` and `..`, follows symlinks and keeps every path inside the session root.
//!
//! Two ways in: the path calls (`read_at`, `open_write`, `stat`, … with `&str` paths)
//! most commands use, and open files ([`FileSystem::open`] with a validated [`VfsPath`]
//! and [`OpenOptions`], giving a [`FileHandle`]) for what needs a file rather than a name
//! (the WASI host, SFTP).
//!
//! - [`path`]: [`VfsPath`], a validated absolute path.
//! - [`resolve`]: the one path resolver every implementation drives with its own lookup.
//! - [`open`]: open flags, the [`OpenFile`] an implementation gives, the [`FileHandle`].

use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;

pub mod open;
pub mod path;
pub mod resolve;

pub use open::{FileHandle, OpenAction, OpenFile, OpenOptions};
pub use path::{NAME_MAX, PATH_MAX, VfsPath};
pub use resolve::{Follow, MAX_SYMLINK_HOPS, Resolved};
pub use std::io::SeekFrom;

/// The owner of everything in a session (`uid`, `gid`): a session is one user, and
/// everything in its fork is theirs. 1000 is the first ordinary user on most Linux
/// systems, which is what tools expect to see.
pub const SESSION_UID: u32 = 1000;
/// See [`SESSION_UID`].
pub const SESSION_GID: u32 = 1000;

/// What kind of thing a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    /// A device such as `/dev/null` (from the session's mount table, never the fork).
    CharDevice,
}

/// What `stat` tells about a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    pub kind: FileKind,
    /// Size in bytes (for a symlink, the length of its target).
    pub len: u64,
    /// Permission bits (`0o644`), without the file-type bits.
    pub mode: u32,
    pub mtime: SystemTime,
    /// The file's identity within its filesystem (`st_ino`): the same for the same file
    /// across stats, renames and open handles for as long as the filesystem lives; never
    /// shared by two files that exist at once.
    pub ino: u64,
    /// Names the file has (`st_nlink`): 1 for a file or symlink (there are no hard
    /// links), 2 for a directory, 0 for a file unlinked while open.
    pub nlink: u64,
    /// Owner and group: [`SESSION_UID`] and [`SESSION_GID`] for everything.
    pub uid: u32,
    pub gid: u32,
    /// Last access; where it is not tracked, the modification time.
    pub atime: SystemTime,
    /// Last change of content or attributes; where it is not tracked, the modification
    /// time.
    pub ctime: SystemTime,
}

impl Metadata {
    /// Metadata of a `kind` entry: owned by the session user, one name (two for a
    /// directory), access and change times equal to `mtime`, inode 0 (the filesystem sets
    /// it: [`Metadata::with_ino`]).
    pub fn new(kind: FileKind, len: u64, mode: u32, mtime: SystemTime) -> Metadata {
        Metadata {
            kind,
            len,
            mode,
            mtime,
            ino: 0,
            nlink: if kind == FileKind::Dir { 2 } else { 1 },
            uid: SESSION_UID,
            gid: SESSION_GID,
            atime: mtime,
            ctime: mtime,
        }
    }

    /// The same with inode number `ino`.
    pub fn with_ino(mut self, ino: u64) -> Metadata {
        self.ino = ino;
        self
    }

    pub fn is_dir(&self) -> bool {
        self.kind == FileKind::Dir
    }
    pub fn is_file(&self) -> bool {
        self.kind == FileKind::File
    }
    pub fn is_symlink(&self) -> bool {
        self.kind == FileKind::Symlink
    }
}

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    /// The entry's own metadata (not followed, like `lstat`).
    pub meta: Metadata,
}

/// How [`FileSystem::open_write`] opens a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Create the file or truncate it to empty (`>`).
    Truncate,
    /// Create the file or keep its content and write after it (`>>`).
    Append,
    /// Create the file; fail with [`FsError::AlreadyExists`] if it exists (`set -C`, `mktemp`).
    CreateNew,
    /// Create the file or keep its content, writing from offset 0 over it (`<>`, and
    /// positioned writes with [`WriteHandle::write_at`]).
    Update,
}

/// How much of its quota a filesystem holds, as `df` shows it.
///
/// Bytes are the sizes of the files (and symlink targets) the session stored; objects are
/// the entries it stored (files, symlinks, directories, deletion markers). A limit of
/// `None` means there is none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub bytes_used: u64,
    pub bytes_limit: Option<u64>,
    pub objects_used: u64,
    pub objects_limit: Option<u64>,
}

/// Bytes a session's fork may hold unless configured otherwise: room for real work (a
/// source checkout, build outputs, a data set) while no single session can fill the store.
pub const DEFAULT_QUOTA_BYTES: u64 = 1 << 30;
/// Objects (files, symlinks, directory markers, whiteouts) a fork may hold unless configured
/// otherwise: bounds what listing, snapshotting and deleting the fork costs.
pub const DEFAULT_QUOTA_OBJECTS: u64 = 100_000;

/// What a session's filesystem may hold. `None` is no limit. It lives with the port (not
/// with the session filesystem that enforces it) so configuration can name it without
/// depending on the filesystem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    /// Bytes of files and symlink targets the session stored.
    pub bytes: Option<u64>,
    /// Files, symlinks, directories and deletion markers the session stored.
    pub objects: Option<u64>,
}

impl Quota {
    /// No limit at all (tests that need one).
    pub const UNLIMITED: Quota = Quota {
        bytes: None,
        objects: None,
    };
}

impl Default for Quota {
    /// [`DEFAULT_QUOTA_BYTES`] and [`DEFAULT_QUOTA_OBJECTS`].
    fn default() -> Self {
        Quota {
            bytes: Some(DEFAULT_QUOTA_BYTES),
            objects: Some(DEFAULT_QUOTA_OBJECTS),
        }
    }
}

/// A filesystem error, as the C library's `strerror` would word it.
///
/// It carries no path and never a storage detail (bucket, key, request id): the command
/// adds the user's own path, and the implementation logs the internals.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    #[error("No such file or directory")]
    NotFound,
    #[error("File exists")]
    AlreadyExists,
    #[error("Not a directory")]
    NotADirectory,
    #[error("Is a directory")]
    IsADirectory,
    #[error("Directory not empty")]
    NotEmpty,
    #[error("Permission denied")]
    PermissionDenied,
    #[error("Read-only file system")]
    ReadOnly,
    #[error("Invalid argument")]
    InvalidArgument,
    #[error("Too many levels of symbolic links")]
    Loop,
    #[error("File name too long")]
    NameTooLong,
    #[error("No space left on device")]
    NoSpace,
    #[error("Disk quota exceeded")]
    QuotaExceeded,
    #[error("File too large")]
    TooLarge,
    #[error("Operation not supported")]
    Unsupported,
    #[error("Input/output error")]
    Io,
    /// A read on a handle not open for reading, or a write on one not open for writing.
    #[error("Bad file descriptor")]
    BadDescriptor,
}

impl FsError {
    /// The Linux `errno` value of the error, for hosts that speak errno (WASI, SFTP map
    /// from it).
    pub fn errno(&self) -> i32 {
        match self {
            FsError::NotFound => 2,
            FsError::Io => 5,
            FsError::BadDescriptor => 9,
            FsError::PermissionDenied => 13,
            FsError::AlreadyExists => 17,
            FsError::NotADirectory => 20,
            FsError::IsADirectory => 21,
            FsError::InvalidArgument => 22,
            FsError::TooLarge => 27,
            FsError::NoSpace => 28,
            FsError::ReadOnly => 30,
            FsError::NameTooLong => 36,
            FsError::NotEmpty => 39,
            FsError::Loop => 40,
            FsError::Unsupported => 95,
            FsError::QuotaExceeded => 122,
        }
    }

    /// The error a failed read of a stream gives (`EBADF` of a closed standard input,
    /// `EISDIR` of a directory opened for reading); anything else is an I/O error.
    pub fn from_io(e: &std::io::Error) -> FsError {
        match e.raw_os_error() {
            Some(9) => FsError::BadDescriptor,
            Some(21) => FsError::IsADirectory,
            _ => FsError::Io,
        }
    }
}

pub type FsResult<T> = Result<T, FsError>;

/// A file open for writing. Nothing is promised durable until [`WriteHandle::close`]
/// returns `Ok`; a failure there is the command's failure.
#[async_trait]
pub trait WriteHandle: Send {
    /// Writes at the handle's position (the end for an append) and moves it past the data.
    async fn write(&mut self, data: &[u8]) -> FsResult<()>;
    /// Writes at `offset`, leaving the position alone (`pwrite`); a gap reads as zeros.
    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()>;
    /// Makes what was written so far durable (`fsync`); the file stays open.
    async fn sync(&mut self) -> FsResult<()>;
    /// Makes the content durable and closes the file.
    async fn close(self: Box<Self>) -> FsResult<()>;
}

/// The filesystem a command sees. All paths are absolute.
#[async_trait]
pub trait FileSystem: Send + Sync {
    /// Metadata of the path, following symlinks.
    async fn stat(&self, path: &str) -> FsResult<Metadata>;
    /// Metadata of the path itself (a symlink is reported as one).
    async fn lstat(&self, path: &str) -> FsResult<Metadata>;
    /// Reads up to `len` bytes at `offset`; an empty result means end-of-file.
    async fn read_at(&self, path: &str, offset: u64, len: usize) -> FsResult<Bytes>;
    /// Opens a file for writing (creating it with mode 0644 if needed).
    async fn open_write(&self, path: &str, mode: WriteMode) -> FsResult<Box<dyn WriteHandle>>;
    /// Entries of a directory, sorted by name, without `.` and `..`.
    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>>;
    /// Names and kinds of a directory's entries (each entry's own kind: a symlink is
    /// one), sorted by name, without `.` and `..`: what `readdir` with `d_type` gives, for
    /// callers that need nothing more (`find -name`). A filesystem whose listing carries
    /// kinds answers without reading each entry's metadata.
    async fn read_dir_kinds(&self, path: &str) -> FsResult<Vec<(String, FileKind)>> {
        let entries = self.read_dir(path).await?;
        Ok(entries.into_iter().map(|e| (e.name, e.meta.kind)).collect())
    }
    async fn mkdir(&self, path: &str) -> FsResult<()>;
    async fn rmdir(&self, path: &str) -> FsResult<()>;
    /// Removes a file or symlink (never a directory).
    async fn unlink(&self, path: &str) -> FsResult<()>;
    /// Renames a file, symlink or directory; replaces an existing file at `to`.
    async fn rename(&self, from: &str, to: &str) -> FsResult<()>;
    /// Creates `link` as a symlink whose content is `target` (not checked).
    async fn symlink(&self, target: &str, link: &str) -> FsResult<()>;
    async fn readlink(&self, path: &str) -> FsResult<String>;
    async fn chmod(&self, path: &str, mode: u32) -> FsResult<()>;
    async fn set_mtime(&self, path: &str, mtime: SystemTime) -> FsResult<()>;
    async fn truncate(&self, path: &str, len: u64) -> FsResult<()>;
    /// The path with `.`/`..` resolved and every symlink followed (`realpath`).
    async fn canonicalize(&self, path: &str) -> FsResult<String>;
    /// Space and objects used against the quota (`df`). A filesystem that does not keep
    /// count says [`FsError::Unsupported`].
    async fn usage(&self) -> FsResult<Usage> {
        Err(FsError::Unsupported)
    }
    /// Opens `path` as POSIX `open` does with `opts` (see [`OpenOptions`] for each flag's
    /// errors). The handle is on the file, not the name: it keeps working after the path
    /// is renamed or unlinked, and what is written through it is visible at once to other
    /// handles and path reads of the same file in this filesystem. A filesystem without
    /// open files says [`FsError::Unsupported`].
    async fn open(&self, path: &VfsPath, opts: OpenOptions) -> FsResult<FileHandle> {
        let _ = (path, opts);
        Err(FsError::Unsupported)
    }
    /// Makes everything written so far durable (`sync`). A file is stored when it is
    /// closed, so by default there is nothing left to do; an implementation that holds
    /// writes back flushes them here and reports a failure to do so.
    async fn sync_all(&self) -> FsResult<()> {
        Ok(())
    }
    /// The permission bits denied to what is created here (the shell's `umask`): what a
    /// command that sets a new file's mode itself (`cp`, `chmod +x`, `install -m +x`)
    /// masks that mode with. The filesystem's own creation modes (0644, 0755) stand for
    /// 022.
    fn umask(&self) -> u32 {
        0o022
    }
}

/// Joins `path` to `cwd` when it is relative. No normalization: the filesystem does that.
pub fn join(cwd: &str, path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else if path.is_empty() {
        cwd.to_string()
    } else if cwd.ends_with('/') {
        format!("{cwd}{path}")
    } else {
        format!("{cwd}/{path}")
    }
}

/// Normalizes an absolute path lexically: collapses `//`, drops `.`, applies `..`
/// (never above `/`). Used for logical paths such as `$PWD`; the filesystem resolves
/// symlinks itself.
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for comp in path.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Reads a whole file through the port in ranged chunks, failing past `limit` bytes.
pub async fn read_all(fs: &dyn FileSystem, path: &str, limit: u64) -> FsResult<Vec<u8>> {
    let mut out = Vec::new();
    let mut off = 0u64;
    loop {
        let chunk = fs.read_at(path, off, READ_CHUNK).await?;
        if chunk.is_empty() {
            return Ok(out);
        }
        off += chunk.len() as u64;
        if off > limit {
            return Err(FsError::TooLarge);
        }
        out.extend_from_slice(&chunk);
    }
}

/// The size of one ranged read when a command streams a file.
pub const READ_CHUNK: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_stays_in_root() {
        assert_eq!(normalize("/../../etc"), "/etc");
        assert_eq!(normalize("/a/./b//c/.."), "/a/b");
        assert_eq!(normalize("/"), "/");
        assert_eq!(normalize("/.."), "/");
    }

    #[test]
    fn join_relative_and_absolute() {
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(join("/", "b"), "/b");
        assert_eq!(join("/a", "/c"), "/c");
    }
}

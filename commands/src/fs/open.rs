//! Open files: [`OpenOptions`] (POSIX `open` flags), the [`OpenFile`] a filesystem
//! implements for one open file, and the [`FileHandle`] callers hold, which keeps the
//! file position and checks the access mode in one place for every filesystem.

use std::io::SeekFrom;

use async_trait::async_trait;
use bytes::Bytes;

use super::{FileKind, FsError, FsResult, Metadata, VfsPath};

/// How to open a path, as POSIX `open` flags. Built with the constructors for the access
/// mode and the chained setters for the rest:
/// `OpenOptions::write_only().create(true).truncate(true)` is `O_WRONLY|O_CREAT|O_TRUNC`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Reads allowed (`O_RDONLY`, `O_RDWR`).
    pub read: bool,
    /// Writes allowed (`O_WRONLY`, `O_RDWR`).
    pub write: bool,
    /// Every write goes at the end of the file (`O_APPEND`); implies `write`.
    pub append: bool,
    /// Create the file (mode 0644) if it does not exist (`O_CREAT`).
    pub create: bool,
    /// With `create`: fail with "File exists" if anything is there, a symlink included,
    /// which is not followed (`O_EXCL`).
    pub exclusive: bool,
    /// Cut an existing file to empty when opened for writing (`O_TRUNC`).
    pub truncate: bool,
    /// Fail with "Too many levels of symbolic links" when the last component is a
    /// symlink (`O_NOFOLLOW`); symlinks before it are still followed.
    pub nofollow: bool,
    /// Fail with "Not a directory" unless the path is a directory (`O_DIRECTORY`).
    pub directory: bool,
}

impl OpenOptions {
    /// `O_RDONLY`.
    pub fn read_only() -> OpenOptions {
        OpenOptions {
            read: true,
            ..OpenOptions::default()
        }
    }
    /// `O_WRONLY`.
    pub fn write_only() -> OpenOptions {
        OpenOptions {
            write: true,
            ..OpenOptions::default()
        }
    }
    /// `O_RDWR`.
    pub fn read_write() -> OpenOptions {
        OpenOptions {
            read: true,
            write: true,
            ..OpenOptions::default()
        }
    }
    pub fn append(mut self, on: bool) -> OpenOptions {
        self.append = on;
        if on {
            self.write = true;
        }
        self
    }
    pub fn create(mut self, on: bool) -> OpenOptions {
        self.create = on;
        self
    }
    pub fn exclusive(mut self, on: bool) -> OpenOptions {
        self.exclusive = on;
        self
    }
    pub fn truncate(mut self, on: bool) -> OpenOptions {
        self.truncate = on;
        self
    }
    pub fn nofollow(mut self, on: bool) -> OpenOptions {
        self.nofollow = on;
        self
    }
    pub fn directory(mut self, on: bool) -> OpenOptions {
        self.directory = on;
        self
    }

    /// True when the last component must not be followed: `O_NOFOLLOW`, and
    /// `O_CREAT|O_EXCL` (which fails on a symlink rather than create its target).
    pub fn no_follow_last(&self) -> bool {
        self.nofollow || (self.create && self.exclusive)
    }

    /// Decides what opening `path` does, given what it names (resolved without
    /// following the last component when [`OpenOptions::no_follow_last`], else
    /// followed). The one place the flags' rules live, shared by every filesystem.
    pub fn decide(&self, path: &VfsPath, existing: Option<FileKind>) -> FsResult<OpenAction> {
        if self.directory && self.create && existing.is_none() {
            return Err(FsError::InvalidArgument);
        }
        let Some(kind) = existing else {
            return match (self.create, path.must_be_dir()) {
                // `O_CREAT` makes files: a path that must be a directory is refused.
                (true, true) => Err(FsError::IsADirectory),
                (true, false) => Ok(OpenAction::Create),
                (false, _) => Err(FsError::NotFound),
            };
        };
        if self.create && self.exclusive {
            return Err(FsError::AlreadyExists);
        }
        match kind {
            FileKind::Symlink => Err(FsError::Loop),
            _ if self.directory && kind != FileKind::Dir => Err(FsError::NotADirectory),
            FileKind::Dir if self.write || self.truncate || self.create => {
                Err(FsError::IsADirectory)
            }
            FileKind::Dir => Ok(OpenAction::Directory),
            FileKind::File if self.truncate && self.write => Ok(OpenAction::Truncate),
            FileKind::File | FileKind::CharDevice => Ok(OpenAction::Existing),
        }
    }
}

/// What an open does, as [`OpenOptions::decide`] rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenAction {
    /// Open the existing file (or device) as it is.
    Existing,
    /// Open the existing file and cut it to empty.
    Truncate,
    /// Create a new empty file (mode 0644).
    Create,
    /// Open the directory (for `stat`; reads and writes fail).
    Directory,
}

/// One open file, as a filesystem implements it: positional I/O on the file itself,
/// whatever path it was opened by. It keeps working after that path is renamed or
/// unlinked (it is the file, not the name). The access mode and the file position are
/// not its business: [`FileHandle`] checks and keeps those.
#[async_trait]
pub trait OpenFile: Send + Sync {
    /// Reads up to `len` bytes at `offset`; empty at or past the end.
    async fn read_at(&mut self, offset: u64, len: usize) -> FsResult<Bytes>;
    /// Writes `data` at `offset`; a gap before it reads as zeros.
    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()>;
    /// Writes `data` at the end of the file as one step (no other write lands between
    /// finding the end and writing); gives the offset it was written at.
    async fn append(&mut self, data: &[u8]) -> FsResult<u64>;
    /// The file's metadata now (`fstat`).
    async fn stat(&mut self) -> FsResult<Metadata>;
    /// Cuts or extends (with zeros) the file to `len` bytes (`ftruncate`).
    async fn set_len(&mut self, len: u64) -> FsResult<()>;
    /// Makes what was written durable (`fsync`).
    async fn sync(&mut self) -> FsResult<()>;
    /// Closes the file: what was written is made durable, and a failure to do so is
    /// reported here.
    async fn close(self: Box<Self>) -> FsResult<()>;
}

/// An open file as a caller holds it (what a file descriptor stands for): the
/// [`OpenFile`], the flags it was opened with and its position.
///
/// Reads and writes on a handle opened without read or write access fail with "Bad file
/// descriptor"; on a directory with "Is a directory". `O_APPEND` writes go at the end of
/// the file, whatever the position, and leave the position after them.
pub struct FileHandle {
    file: Box<dyn OpenFile>,
    opts: OpenOptions,
    kind: FileKind,
    pos: u64,
}

impl std::fmt::Debug for FileHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileHandle")
            .field("opts", &self.opts)
            .field("kind", &self.kind)
            .field("pos", &self.pos)
            .finish()
    }
}

impl FileHandle {
    /// A handle on `file` (of `kind`), opened with `opts`, at position 0.
    pub fn new(file: Box<dyn OpenFile>, opts: OpenOptions, kind: FileKind) -> FileHandle {
        let mut opts = opts;
        if !opts.write {
            // `O_RDONLY` is the absence of the others: a handle can always be read
            // unless it was opened for writing only.
            opts.read = true;
        }
        FileHandle {
            file,
            opts,
            kind,
            pos: 0,
        }
    }

    /// The same handle over `f(file)`: for a filesystem that wraps another (a quota, a
    /// failure injector) and adds to what its open files do.
    pub fn map_file(self, f: impl FnOnce(Box<dyn OpenFile>) -> Box<dyn OpenFile>) -> FileHandle {
        FileHandle {
            file: f(self.file),
            ..self
        }
    }

    /// The flags the handle was opened with.
    pub fn options(&self) -> OpenOptions {
        self.opts
    }

    /// What the handle is open on (a file, a directory, a device).
    pub fn kind(&self) -> FileKind {
        self.kind
    }

    /// The current position.
    pub fn position(&self) -> u64 {
        self.pos
    }

    fn readable(&self) -> FsResult<()> {
        if self.kind == FileKind::Dir {
            return Err(FsError::IsADirectory);
        }
        if !self.opts.read {
            return Err(FsError::BadDescriptor);
        }
        Ok(())
    }

    fn writable(&self) -> FsResult<()> {
        if !self.opts.write {
            return Err(FsError::BadDescriptor);
        }
        if self.kind == FileKind::Dir {
            return Err(FsError::IsADirectory);
        }
        Ok(())
    }

    /// Reads up to `len` bytes at the position and moves it past them (`read`); empty
    /// at end-of-file.
    pub async fn read(&mut self, len: usize) -> FsResult<Bytes> {
        self.readable()?;
        let data = self.file.read_at(self.pos, len).await?;
        self.pos = self.pos.saturating_add(data.len() as u64);
        Ok(data)
    }

    /// Reads up to `len` bytes at `offset`, leaving the position alone (`pread`).
    pub async fn read_at(&mut self, offset: u64, len: usize) -> FsResult<Bytes> {
        self.readable()?;
        self.file.read_at(offset, len).await
    }

    /// Writes all of `data` at the position (at the end with `O_APPEND`) and moves the
    /// position past it (`write`). Gives the bytes written.
    pub async fn write(&mut self, data: &[u8]) -> FsResult<usize> {
        self.writable()?;
        let at = if self.opts.append {
            self.file.append(data).await?
        } else {
            end_of(self.pos, data.len())?;
            self.file.write_at(self.pos, data).await?;
            self.pos
        };
        self.pos = end_of(at, data.len())?;
        Ok(data.len())
    }

    /// Writes all of `data` at `offset`, leaving the position alone (`pwrite`). As on
    /// Linux, a handle opened with `O_APPEND` writes at the end regardless.
    pub async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<usize> {
        self.writable()?;
        if self.opts.append {
            self.file.append(data).await?;
        } else {
            end_of(offset, data.len())?;
            self.file.write_at(offset, data).await?;
        }
        Ok(data.len())
    }

    /// Moves the position (`lseek`); gives the new one. A position before 0 fails with
    /// "Invalid argument" and leaves it alone; past the end is allowed (a write there
    /// leaves a gap of zeros).
    pub async fn seek(&mut self, to: SeekFrom) -> FsResult<u64> {
        let (base, delta) = match to {
            SeekFrom::Start(n) => (0, i128::from(n)),
            SeekFrom::Current(d) => (self.pos, i128::from(d)),
            SeekFrom::End(d) => (self.file.stat().await?.len, i128::from(d)),
        };
        let new = i128::from(base) + delta;
        if new < 0 || new > i128::from(i64::MAX) {
            return Err(FsError::InvalidArgument);
        }
        self.pos = new as u64;
        Ok(self.pos)
    }

    /// The open file's metadata (`fstat`), whatever became of its path since.
    pub async fn stat(&mut self) -> FsResult<Metadata> {
        self.file.stat().await
    }

    /// Cuts or extends the file to `len` bytes (`ftruncate`); the position stays.
    pub async fn set_len(&mut self, len: u64) -> FsResult<()> {
        self.writable()?;
        if len > i64::MAX as u64 {
            return Err(FsError::InvalidArgument);
        }
        self.file.set_len(len).await
    }

    /// Makes what was written so far durable (`fsync`).
    pub async fn sync(&mut self) -> FsResult<()> {
        self.file.sync().await
    }

    /// Closes the handle; a failure to store what was written is reported here.
    pub async fn close(self) -> FsResult<()> {
        self.file.close().await
    }
}

/// The offset after `len` bytes at `at`, or "File too large" past what a file can hold.
fn end_of(at: u64, len: usize) -> FsResult<u64> {
    at.checked_add(len as u64)
        .filter(|end| *end <= i64::MAX as u64)
        .ok_or(FsError::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_decide_like_open() {
        use FileKind::*;
        use OpenAction as A;
        let f = VfsPath::new("/f").unwrap();
        let ro = OpenOptions::read_only();
        let wo = OpenOptions::write_only();
        assert_eq!(ro.decide(&f, None), Err(FsError::NotFound));
        assert_eq!(wo.create(true).decide(&f, None), Ok(A::Create));
        assert_eq!(
            wo.create(true).exclusive(true).decide(&f, Some(File)),
            Err(FsError::AlreadyExists)
        );
        assert_eq!(
            wo.create(true).exclusive(true).decide(&f, Some(Symlink)),
            Err(FsError::AlreadyExists)
        );
        assert_eq!(
            ro.nofollow(true).decide(&f, Some(Symlink)),
            Err(FsError::Loop)
        );
        assert_eq!(
            ro.directory(true).decide(&f, Some(File)),
            Err(FsError::NotADirectory)
        );
        assert_eq!(ro.directory(true).decide(&f, Some(Dir)), Ok(A::Directory));
        assert_eq!(ro.decide(&f, Some(Dir)), Ok(A::Directory));
        assert_eq!(wo.decide(&f, Some(Dir)), Err(FsError::IsADirectory));
        assert_eq!(wo.truncate(true).decide(&f, Some(File)), Ok(A::Truncate));
        assert_eq!(ro.truncate(true).decide(&f, Some(File)), Ok(A::Existing));
        assert_eq!(
            ro.directory(true).create(true).decide(&f, None),
            Err(FsError::InvalidArgument)
        );
        assert!(OpenOptions::read_only().append(true).write);
        assert_eq!(
            ro.create(true).decide(&f, Some(Dir)),
            Err(FsError::IsADirectory)
        );
        let slash = VfsPath::new("/new/").unwrap();
        assert_eq!(
            wo.create(true).decide(&slash, None),
            Err(FsError::IsADirectory)
        );
    }
}

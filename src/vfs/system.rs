//! Read-only system mounts: files of the server (a WASI tool's stdlib, provisioned by
//! `wasm/provision` and checked against the manifest) that every session sees at a fixed
//! path, such as Python's stdlib zip at `/usr/local/lib/python315.zip`.
//!
//! A system file is an entry of the [`super::mounts::Mounts`] table, so it is never part
//! of a fork, never counted against a fork's quota, and shared by every session: the
//! server opens it once and serves positional reads of it on the blocking pool. Writing,
//! truncating, removing or renaming it fails with "Read-only file system". The directories
//! above a mount point that the fork lacks (`/usr`, `/usr/local`, `/usr/local/lib`) are
//! shown by the mount table as empty read-only directories holding the mounts.
//!
//! Only the operator's provisioned files are ever opened here, by path, at start-up; what a
//! session names never reaches a host path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use forkbox_commands::fs::{FileHandle, OpenAction, OpenFile, OpenOptions, VfsPath, normalize};
use forkbox_commands::{
    DirEntry, FileKind, FileSystem, FsError, FsResult, Metadata, WriteHandle, WriteMode,
};

/// Inode numbers of system files and of the directories above them: apart from the fork's
/// (which count up from small numbers) and the devices' (`1 << 62` up).
const SYSTEM_INO_BASE: u64 = 1 << 61;

/// The most one read of a system file returns; callers ask again for more.
const MAX_READ: usize = 1 << 20;

/// Why a system mount could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SystemMountError {
    #[error("cannot open {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{at}: a system mount must be an absolute path outside / and /dev")]
    BadPoint { at: String },
    #[error("{at}: mounted twice")]
    Duplicate { at: String },
}

/// One read-only file of the server, mounted at a path of every session.
pub struct SystemFile {
    /// The mount point (normalized, absolute).
    at: String,
    file: Arc<std::fs::File>,
    meta: Metadata,
}

impl std::fmt::Debug for SystemFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemFile")
            .field("at", &self.at)
            .field("len", &self.meta.len)
            .finish()
    }
}

impl SystemFile {
    /// Opens `host` (read-only) to be mounted at `at`; `index` tells its inode apart.
    pub fn open(at: &str, host: &Path, index: u64) -> Result<SystemFile, SystemMountError> {
        let open_err = |source| SystemMountError::Open {
            path: host.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(host).map_err(open_err)?;
        let host_meta = file.metadata().map_err(open_err)?;
        let mtime = host_meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        let meta = Metadata::new(FileKind::File, host_meta.len(), 0o444, mtime)
            .with_ino(SYSTEM_INO_BASE + 1 + index);
        Ok(SystemFile {
            at: normalize(at),
            file: Arc::new(file),
            meta,
        })
    }

    /// The mount point.
    pub fn at(&self) -> &str {
        &self.at
    }

    /// Checks that `path` (normalized) is the file itself: below it is nothing.
    fn check(&self, path: &str) -> FsResult<()> {
        if path == self.at {
            Ok(())
        } else {
            Err(FsError::NotADirectory)
        }
    }

    async fn pread(&self, offset: u64, len: usize) -> FsResult<Bytes> {
        let len = len.min(MAX_READ);
        if offset >= self.meta.len || len == 0 {
            return Ok(Bytes::new());
        }
        let file = self.file.clone();
        tokio::task::spawn_blocking(move || {
            use std::os::unix::fs::FileExt;
            let mut buf = vec![0u8; len];
            let mut got = 0;
            while got < len {
                match file.read_at(&mut buf[got..], offset + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return Err(FsError::Io),
                }
            }
            buf.truncate(got);
            Ok(Bytes::from(buf))
        })
        .await
        .map_err(|_| FsError::Io)?
    }
}

/// A system file open for reading.
struct OpenSystemFile {
    file: Arc<SystemFile>,
}

#[async_trait]
impl OpenFile for OpenSystemFile {
    async fn read_at(&mut self, offset: u64, len: usize) -> FsResult<Bytes> {
        self.file.pread(offset, len).await
    }
    async fn write_at(&mut self, _offset: u64, _data: &[u8]) -> FsResult<()> {
        Err(FsError::ReadOnly)
    }
    async fn append(&mut self, _data: &[u8]) -> FsResult<u64> {
        Err(FsError::ReadOnly)
    }
    async fn stat(&mut self) -> FsResult<Metadata> {
        Ok(self.file.meta.clone())
    }
    async fn set_len(&mut self, _len: u64) -> FsResult<()> {
        Err(FsError::ReadOnly)
    }
    async fn sync(&mut self) -> FsResult<()> {
        Ok(())
    }
    async fn close(self: Box<Self>) -> FsResult<()> {
        Ok(())
    }
}

/// A [`SystemFile`] as the [`FileSystem`] mounted at its path.
#[derive(Debug, Clone)]
pub struct SystemFileFs(Arc<SystemFile>);

#[async_trait]
impl FileSystem for SystemFileFs {
    async fn stat(&self, path: &str) -> FsResult<Metadata> {
        self.0.check(path)?;
        Ok(self.0.meta.clone())
    }
    async fn lstat(&self, path: &str) -> FsResult<Metadata> {
        self.stat(path).await
    }
    async fn read_at(&self, path: &str, offset: u64, len: usize) -> FsResult<Bytes> {
        self.0.check(path)?;
        self.0.pread(offset, len).await
    }
    async fn open_write(&self, path: &str, _mode: WriteMode) -> FsResult<Box<dyn WriteHandle>> {
        self.0.check(path)?;
        Err(FsError::ReadOnly)
    }
    async fn open(&self, path: &VfsPath, opts: OpenOptions) -> FsResult<FileHandle> {
        let p = normalize(path.as_str());
        self.0.check(&p)?;
        match opts.decide(path, Some(FileKind::File))? {
            OpenAction::Existing if !opts.write => {}
            _ => return Err(FsError::ReadOnly),
        }
        let file = OpenSystemFile {
            file: self.0.clone(),
        };
        Ok(FileHandle::new(Box::new(file), opts, FileKind::File))
    }
    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        self.0.check(path)?;
        Err(FsError::NotADirectory)
    }
    async fn mkdir(&self, path: &str) -> FsResult<()> {
        self.0.check(path)?;
        Err(FsError::AlreadyExists)
    }
    async fn rmdir(&self, path: &str) -> FsResult<()> {
        self.0.check(path)?;
        Err(FsError::NotADirectory)
    }
    async fn unlink(&self, path: &str) -> FsResult<()> {
        self.0.check(path)?;
        Err(FsError::ReadOnly)
    }
    async fn rename(&self, _from: &str, _to: &str) -> FsResult<()> {
        Err(FsError::ReadOnly)
    }
    async fn symlink(&self, _target: &str, link: &str) -> FsResult<()> {
        self.0.check(link)?;
        Err(FsError::AlreadyExists)
    }
    async fn readlink(&self, path: &str) -> FsResult<String> {
        self.0.check(path)?;
        Err(FsError::InvalidArgument)
    }
    async fn chmod(&self, path: &str, _mode: u32) -> FsResult<()> {
        self.0.check(path)?;
        Err(FsError::ReadOnly)
    }
    async fn set_mtime(&self, path: &str, _mtime: SystemTime) -> FsResult<()> {
        self.0.check(path)?;
        Err(FsError::ReadOnly)
    }
    async fn truncate(&self, path: &str, _len: u64) -> FsResult<()> {
        self.0.check(path)?;
        Err(FsError::ReadOnly)
    }
    async fn canonicalize(&self, path: &str) -> FsResult<String> {
        self.0.check(path)?;
        Ok(path.to_string())
    }
}

/// Every system file of a server, shared by all its sessions, with the directories above
/// them.
#[derive(Debug, Default, Clone)]
pub struct SystemMounts {
    files: Vec<Arc<SystemFile>>,
    /// Each directory above a mount point (`/usr`, `/usr/local`, …; never `/`) with the
    /// names of what is mounted or implied directly in it.
    dirs: BTreeMap<String, BTreeSet<String>>,
}

impl SystemMounts {
    /// No system files.
    pub fn none() -> SystemMounts {
        SystemMounts::default()
    }

    /// Opens each `(mount point, host file)`.
    pub fn open<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a Path)>,
    ) -> Result<SystemMounts, SystemMountError> {
        let mut out = SystemMounts::default();
        for (i, (at, host)) in files.into_iter().enumerate() {
            let norm = normalize(at);
            if !at.starts_with('/') || norm == "/" || norm == "/dev" || norm.starts_with("/dev/") {
                return Err(SystemMountError::BadPoint { at: at.to_string() });
            }
            if out.files.iter().any(|f| f.at == norm) || out.dirs.contains_key(&norm) {
                return Err(SystemMountError::Duplicate { at: norm });
            }
            let file = SystemFile::open(&norm, host, i as u64)?;
            out.add_ancestors(&norm)?;
            out.files.push(Arc::new(file));
        }
        Ok(out)
    }

    fn add_ancestors(&mut self, at: &str) -> Result<(), SystemMountError> {
        let mut child = at;
        while let Some((parent, name)) = child.rsplit_once('/') {
            if parent.is_empty() {
                break;
            }
            if self.files.iter().any(|f| f.at == parent) {
                return Err(SystemMountError::Duplicate {
                    at: parent.to_string(),
                });
            }
            self.dirs
                .entry(parent.to_string())
                .or_default()
                .insert(name.to_string());
            child = parent;
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The mount table entries: each file's point and filesystem.
    pub fn entries(&self) -> Vec<(String, Arc<dyn FileSystem>)> {
        self.files
            .iter()
            .map(|f| {
                let fs: Arc<dyn FileSystem> = Arc::new(SystemFileFs(f.clone()));
                (f.at.clone(), fs)
            })
            .collect()
    }

    /// The names directly in `dir` that system mounts put there, if `dir` (normalized)
    /// is above a mount point.
    pub fn children(&self, dir: &str) -> Option<&BTreeSet<String>> {
        self.dirs.get(dir)
    }

    /// Metadata of `dir`, a directory above a mount point that the fork lacks.
    pub fn dir_meta(&self, dir: &str) -> Metadata {
        let index = self.dirs.keys().position(|d| d == dir).unwrap_or(0) as u64;
        let ino = SYSTEM_INO_BASE + 1 + self.files.len() as u64 + index;
        Metadata::new(
            FileKind::Dir,
            super::state::DIR_SIZE,
            0o755,
            SystemTime::UNIX_EPOCH,
        )
        .with_ino(ino)
    }
}

//! The shell's `umask` applied to what is created: a view of the session's filesystem
//! that gives new files `0666 & !umask` and new directories `0777 & !umask`.
//!
//! The filesystem itself creates files 0644 and directories 0755 (what the default umask
//! 022 gives), so the view is only put in place while the umask is something else. A new
//! file gets its mode when it is closed (the content is written first, as a process
//! would write into a file it created with that mode).

use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use forkbox_commands::fs::{FileHandle, OpenOptions, Usage, VfsPath};
use forkbox_commands::{
    DirEntry, FileKind, FileSystem, FsResult, Metadata, WriteHandle, WriteMode,
};

/// The umask the filesystem's own creation modes already stand for.
pub(crate) const NATIVE_UMASK: u32 = 0o022;

/// `inner`, creating with the modes `umask` gives.
pub(crate) struct UmaskFs {
    pub(crate) inner: Arc<dyn FileSystem>,
    pub(crate) umask: u32,
}

/// `fs` as seen under `umask`: itself when the umask is the native one.
pub(crate) fn with_umask(fs: Arc<dyn FileSystem>, umask: u32) -> Arc<dyn FileSystem> {
    if umask == NATIVE_UMASK {
        return fs;
    }
    Arc::new(UmaskFs { inner: fs, umask })
}

/// A new file's handle: sets its mode once its content is written.
struct ModeOnClose {
    inner: Box<dyn WriteHandle>,
    fs: Arc<dyn FileSystem>,
    path: String,
    mode: u32,
}

#[async_trait]
impl WriteHandle for ModeOnClose {
    async fn write(&mut self, data: &[u8]) -> FsResult<()> {
        self.inner.write(data).await
    }
    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        self.inner.write_at(offset, data).await
    }
    async fn sync(&mut self) -> FsResult<()> {
        self.inner.sync().await
    }
    async fn close(self: Box<Self>) -> FsResult<()> {
        let ModeOnClose {
            inner,
            fs,
            path,
            mode,
        } = *self;
        inner.close().await?;
        fs.chmod(&path, mode).await
    }
}

impl UmaskFs {
    fn file_mode(&self) -> u32 {
        0o666 & !self.umask
    }
}

#[async_trait]
impl FileSystem for UmaskFs {
    fn umask(&self) -> u32 {
        self.umask
    }
    async fn stat(&self, path: &str) -> FsResult<Metadata> {
        self.inner.stat(path).await
    }
    async fn lstat(&self, path: &str) -> FsResult<Metadata> {
        self.inner.lstat(path).await
    }
    async fn read_at(&self, path: &str, offset: u64, len: usize) -> FsResult<Bytes> {
        self.inner.read_at(path, offset, len).await
    }
    async fn open_write(&self, path: &str, mode: WriteMode) -> FsResult<Box<dyn WriteHandle>> {
        let new = self.inner.stat(path).await.is_err();
        let handle = self.inner.open_write(path, mode).await?;
        if !new || path.starts_with("/dev/") {
            return Ok(handle);
        }
        Ok(Box::new(ModeOnClose {
            inner: handle,
            fs: self.inner.clone(),
            path: path.to_string(),
            mode: self.file_mode(),
        }))
    }
    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        self.inner.read_dir(path).await
    }
    async fn read_dir_kinds(&self, path: &str) -> FsResult<Vec<(String, FileKind)>> {
        self.inner.read_dir_kinds(path).await
    }
    async fn mkdir(&self, path: &str) -> FsResult<()> {
        self.inner.mkdir(path).await?;
        self.inner.chmod(path, 0o777 & !self.umask).await
    }
    async fn rmdir(&self, path: &str) -> FsResult<()> {
        self.inner.rmdir(path).await
    }
    async fn unlink(&self, path: &str) -> FsResult<()> {
        self.inner.unlink(path).await
    }
    async fn rename(&self, from: &str, to: &str) -> FsResult<()> {
        self.inner.rename(from, to).await
    }
    async fn symlink(&self, target: &str, link: &str) -> FsResult<()> {
        self.inner.symlink(target, link).await
    }
    async fn readlink(&self, path: &str) -> FsResult<String> {
        self.inner.readlink(path).await
    }
    async fn chmod(&self, path: &str, mode: u32) -> FsResult<()> {
        self.inner.chmod(path, mode).await
    }
    async fn set_mtime(&self, path: &str, mtime: SystemTime) -> FsResult<()> {
        self.inner.set_mtime(path, mtime).await
    }
    async fn truncate(&self, path: &str, len: u64) -> FsResult<()> {
        self.inner.truncate(path, len).await
    }
    async fn canonicalize(&self, path: &str) -> FsResult<String> {
        self.inner.canonicalize(path).await
    }
    async fn open(&self, path: &VfsPath, opts: OpenOptions) -> FsResult<FileHandle> {
        let new = opts.create && self.inner.lstat(path.as_str()).await.is_err();
        let handle = self.inner.open(path, opts).await?;
        if new {
            // The handle keeps working whatever the mode says, as an open descriptor does.
            let _ = self.inner.chmod(path.as_str(), self.file_mode()).await;
        }
        Ok(handle)
    }
    async fn usage(&self) -> FsResult<Usage> {
        self.inner.usage().await
    }
    async fn sync_all(&self) -> FsResult<()> {
        self.inner.sync_all().await
    }
}

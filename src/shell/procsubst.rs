//! Process substitution (`<(LIST)`, `>(LIST)`) and descriptors above 2 seen as files.
//!
//! `<(LIST)` runs LIST in a subshell on a task of the session with its stdout into a pipe,
//! and the word becomes `/dev/fd/N` (N from 63 down, as bash numbers them) for a
//! descriptor N of the command holding the pipe's read end; `>(LIST)` is the same with
//! LIST reading the pipe. A command opens `/dev/fd/N` through [`FdFs`], a view of the
//! session's filesystem that serves the command's descriptors above 2 (also those of
//! `exec 3<file`) and passes everything else through. The command waits for its `>(…)`
//! lists to end, so what they print comes before what follows (bash does not wait, and
//! the order there depends on timing).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use brush_parser::ast::{ProcessSubstitutionKind, SubshellCommand};
use bytes::Bytes;
use forkbox_commands::fs::{FileHandle, OpenOptions, Usage, VfsPath};
use forkbox_commands::{
    DirEntry, FileKind, FileSystem, FsError, FsResult, Metadata, Output, WriteHandle, WriteMode,
    pipe_in,
};
use tokio::task::JoinHandle;

use super::Shell;
use super::error::ShellError;
use super::exec::flow_status;
use super::redirect::{Fd, Fds};

/// The first descriptor a process substitution gets (then 62, 61, …).
pub const FIRST_FD: i32 = 63;

/// The path of descriptor `n`.
pub fn fd_path(n: i32) -> String {
    format!("/dev/fd/{n}")
}

impl Shell {
    /// The filesystem a command run with `fds` sees: the session's, plus `/dev/fd/N` for
    /// its descriptors above 2.
    pub(crate) fn fs_for(&self, fds: &Fds) -> Arc<dyn FileSystem> {
        let high = fds.high_fds();
        let fs = super::umask_fs::with_umask(self.fs.clone(), self.umask);
        if high.is_empty() {
            return fs;
        }
        Arc::new(FdFs {
            inner: fs,
            fds: high,
        })
    }

    /// Starts one process substitution: the descriptor the command gets, and the task
    /// running the list.
    pub(crate) fn start_procsubst(
        &mut self,
        kind: &ProcessSubstitutionKind,
        cmd: &SubshellCommand,
        fds: &Fds,
    ) -> Result<(Fd, JoinHandle<i32>), ShellError> {
        let mut sub = self.subshell()?;
        let (out, input) = pipe_in(&self.budget);
        let (fd, sub_fds) = match kind {
            ProcessSubstitutionKind::Read => (Fd::Read(input), fds.with_stdout(out)),
            ProcessSubstitutionKind::Write => (Fd::Write(out), fds.with_stdin(input)),
        };
        let list = cmd.list.clone();
        let task = self.budget.spawn(async move {
            let r = sub.exec_list(&list, &sub_fds).await;
            let status = flow_status(r, sub.last_status);
            let status = sub.run_exit_trap(status, &sub_fds).await;
            drop(sub_fds);
            status
        });
        Ok((fd, task))
    }
}

/// The session's filesystem as one command sees it: its descriptors above 2 are the
/// files `/dev/fd/N`.
pub(crate) struct FdFs {
    pub inner: Arc<dyn FileSystem>,
    pub fds: BTreeMap<i32, Fd>,
}

impl FdFs {
    /// The descriptor `/dev/fd/N` names, when it is a stream (a pipe, a terminal); one
    /// opened on a regular file is that file, as on Linux (see [`FdFs::real`]).
    fn fd(&self, path: &str) -> Option<&Fd> {
        self.descriptor(path).filter(|d| d.origin().is_none())
    }

    fn descriptor(&self, path: &str) -> Option<&Fd> {
        let n = path.strip_prefix("/dev/fd/")?.parse::<i32>().ok()?;
        self.fds.get(&n)
    }

    /// The path the session's filesystem serves for `path`: the regular file a
    /// descriptor was opened on for its `/dev/fd/N`, else `path` itself.
    fn real<'a>(&'a self, path: &'a str) -> &'a str {
        self.descriptor(path).and_then(Fd::origin).unwrap_or(path)
    }
}

fn pipe_meta() -> Metadata {
    Metadata::new(FileKind::CharDevice, 0, 0o600, SystemTime::UNIX_EPOCH)
}

/// Writes into a descriptor's stream.
struct OutHandle(Output);

#[async_trait]
impl WriteHandle for OutHandle {
    async fn write(&mut self, data: &[u8]) -> FsResult<()> {
        self.0.write_all(data).await.map_err(|_| FsError::Io)
    }
    async fn write_at(&mut self, _offset: u64, data: &[u8]) -> FsResult<()> {
        self.write(data).await
    }
    async fn sync(&mut self) -> FsResult<()> {
        Ok(())
    }
    async fn close(self: Box<Self>) -> FsResult<()> {
        Ok(())
    }
}

#[async_trait]
impl FileSystem for FdFs {
    async fn stat(&self, path: &str) -> FsResult<Metadata> {
        match self.fd(path) {
            Some(_) => Ok(pipe_meta()),
            None => self.inner.stat(self.real(path)).await,
        }
    }
    async fn lstat(&self, path: &str) -> FsResult<Metadata> {
        match self.fd(path) {
            Some(_) => Ok(pipe_meta()),
            None => self.inner.lstat(self.real(path)).await,
        }
    }
    async fn read_at(&self, path: &str, offset: u64, len: usize) -> FsResult<Bytes> {
        // A pipe has no offsets: reads take what comes next.
        match self.fd(path) {
            Some(d) => match d.input() {
                Some(i) => Ok(i
                    .read_up_to(len)
                    .await
                    .map_err(|_| FsError::Io)?
                    .unwrap_or_default()),
                None => Err(FsError::PermissionDenied),
            },
            None => self.inner.read_at(self.real(path), offset, len).await,
        }
    }
    async fn open_write(&self, path: &str, mode: WriteMode) -> FsResult<Box<dyn WriteHandle>> {
        match self.fd(path) {
            Some(d) => match d.output() {
                Some(o) => Ok(Box::new(OutHandle(o.clone()))),
                None => Err(FsError::PermissionDenied),
            },
            // A file a redirection is writing: its own stream where a fresh open would
            // write the same place (the redirection stores the file when it ends, so
            // what a second writer put there would be overwritten).
            None => match self
                .descriptor(path)
                .and_then(|d| super::redirect::reopened_stream(d, mode))
            {
                Some(o) => Ok(Box::new(OutHandle(o))),
                None => self.inner.open_write(self.real(path), mode).await,
            },
        }
    }
    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        self.inner.read_dir(path).await
    }
    async fn read_dir_kinds(&self, path: &str) -> FsResult<Vec<(String, FileKind)>> {
        self.inner.read_dir_kinds(path).await
    }
    async fn mkdir(&self, path: &str) -> FsResult<()> {
        self.inner.mkdir(path).await
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
        match self.fd(path) {
            Some(_) => Ok(path.to_string()),
            None => self.inner.canonicalize(self.real(path)).await,
        }
    }
    async fn open(&self, path: &VfsPath, opts: OpenOptions) -> FsResult<FileHandle> {
        // A descriptor's stream has no offsets to open with; files open as usual.
        match self.fd(path.as_str()) {
            Some(_) => Err(FsError::Unsupported),
            None => match self.descriptor(path.as_str()).and_then(Fd::origin) {
                Some(file) => self.inner.open(&VfsPath::new(file)?, opts).await,
                None => self.inner.open(path, opts).await,
            },
        }
    }
    async fn usage(&self) -> FsResult<Usage> {
        self.inner.usage().await
    }
    fn umask(&self) -> u32 {
        self.inner.umask()
    }
    async fn sync_all(&self) -> FsResult<()> {
        self.inner.sync_all().await
    }
}

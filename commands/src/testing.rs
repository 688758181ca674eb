//! In-memory filesystem and harness for unit tests.
//!
//! - [`MemFs`]: a complete [`FileSystem`] in memory: inodes (files, directories and
//!   symlinks) named by paths, resolved by the port's one resolver (`..` never climbs
//!   above `/`, at most [`MAX_SYMLINK_HOPS`] symlinks per lookup), with open files. Its
//!   clock is fake and advances one second per change, so tests about mtimes are
//!   deterministic.
//! - [`contract`]: the port's contract, one suite every [`FileSystem`] must pass; run
//!   here over [`MemFs`] and in the main crate over the session filesystem.
//! - [`QuotaFs`]: a [`MemFs`] whose writes stop at a quota, and which counts the files
//!   created (commands that write scratch files).
//! - [`run_cmd`] / [`Invocation`]: run one command with pipes for stdin/stdout/stderr and
//!   collect its status and output; [`Invocation::out_of_memory`] checks a command's
//!   failure under a tiny budget ([`TINY_BUDGET`]).
//! - [`NullLauncher`] and [`TestLauncher`]: the shell's side of the contract for commands
//!   that launch others (`env`, `xargs`) or list them (`help`, `which`).
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test support: a broken harness must fail the test loudly"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::fs::{
    DirEntry, FileHandle, FileSystem, FsError, FsResult, Metadata, OpenFile, OpenOptions, VfsPath,
    WriteHandle, WriteMode,
};
use crate::io::{Input, pipe};
use crate::{Command, CommandInfo, Context, Launcher, Status, TermSize, exit_status};

/// Symlinks one lookup may follow before failing with [`FsError::Loop`] (the port's
/// one resolver's bound).
pub use crate::fs::resolve::MAX_SYMLINK_HOPS;

/// Bytes of stdout or stderr the harness collects; a runaway command fails the test
/// instead of eating the machine's memory.
pub const HARNESS_OUTPUT_LIMIT: usize = 64 * 1024 * 1024;

pub mod contract;
mod memfs;

pub use memfs::MemFs;

/// A [`FileSystem`] over a [`MemFs`] that enforces a quota on bytes written, the way the
/// session's `Vfs` does (a write past it fails with [`FsError::NoSpace`] as the data
/// comes), and counts the files it created. For commands that write scratch files.
pub struct QuotaFs {
    inner: Arc<MemFs>,
    /// Bytes writes may still add; unlinking gives nothing back.
    room: Arc<Mutex<u64>>,
    /// Files created by `open_write` (that did not exist before).
    created: Mutex<Vec<String>>,
}

impl QuotaFs {
    /// `inner` with `room` bytes left for writes (`u64::MAX`: no limit).
    pub fn new(inner: Arc<MemFs>, room: u64) -> Arc<QuotaFs> {
        Arc::new(QuotaFs {
            inner,
            room: Arc::new(Mutex::new(room)),
            created: Mutex::new(Vec::new()),
        })
    }

    /// Paths of the files created so far, in order.
    pub fn created(&self) -> Vec<String> {
        self.created
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

struct QuotaWriter {
    inner: Box<dyn WriteHandle>,
    room: Arc<Mutex<u64>>,
}

impl QuotaWriter {
    fn take(&self, bytes: usize) -> FsResult<()> {
        let mut room = self.room.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = bytes as u64;
        if bytes > *room {
            return Err(FsError::NoSpace);
        }
        *room -= bytes;
        Ok(())
    }
}

#[async_trait]
impl WriteHandle for QuotaWriter {
    async fn write(&mut self, data: &[u8]) -> FsResult<()> {
        self.take(data.len())?;
        self.inner.write(data).await
    }
    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        self.take(data.len())?;
        self.inner.write_at(offset, data).await
    }
    async fn sync(&mut self) -> FsResult<()> {
        self.inner.sync().await
    }
    async fn close(self: Box<Self>) -> FsResult<()> {
        self.inner.close().await
    }
}

/// An open file of a [`QuotaFs`]: growth takes from the room left.
struct QuotaFile {
    inner: Box<dyn OpenFile>,
    room: Arc<Mutex<u64>>,
}

impl QuotaFile {
    async fn grow_to(&mut self, end: u64) -> FsResult<()> {
        let len = self.inner.stat().await?.len;
        let mut room = self.room.lock().unwrap_or_else(|e| e.into_inner());
        let more = end.saturating_sub(len);
        if more > *room {
            return Err(FsError::NoSpace);
        }
        *room -= more;
        Ok(())
    }
}

#[async_trait]
impl OpenFile for QuotaFile {
    async fn read_at(&mut self, offset: u64, len: usize) -> FsResult<Bytes> {
        self.inner.read_at(offset, len).await
    }
    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        self.grow_to(offset.saturating_add(data.len() as u64))
            .await?;
        self.inner.write_at(offset, data).await
    }
    async fn append(&mut self, data: &[u8]) -> FsResult<u64> {
        let len = self.inner.stat().await?.len;
        self.grow_to(len.saturating_add(data.len() as u64)).await?;
        self.inner.append(data).await
    }
    async fn stat(&mut self) -> FsResult<Metadata> {
        self.inner.stat().await
    }
    async fn set_len(&mut self, len: u64) -> FsResult<()> {
        self.grow_to(len).await?;
        self.inner.set_len(len).await
    }
    async fn sync(&mut self) -> FsResult<()> {
        self.inner.sync().await
    }
    async fn close(self: Box<Self>) -> FsResult<()> {
        self.inner.close().await
    }
}

#[async_trait]
impl FileSystem for QuotaFs {
    async fn open(&self, path: &VfsPath, opts: OpenOptions) -> FsResult<FileHandle> {
        let existed = self.inner.exists(path.as_str());
        let handle = self.inner.open(path, opts).await?;
        if !existed {
            self.created
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(path.as_str().to_string());
        }
        let room = self.room.clone();
        Ok(handle.map_file(|inner| Box::new(QuotaFile { inner, room })))
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
        let existed = self.inner.exists(path);
        let inner = self.inner.open_write(path, mode).await?;
        if !existed {
            self.created
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(path.to_string());
        }
        Ok(Box::new(QuotaWriter {
            inner,
            room: self.room.clone(),
        }))
    }
    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        self.inner.read_dir(path).await
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
        self.inner.canonicalize(path).await
    }
}

/// A launcher that knows a fixed list of names and runs none of them.
pub struct NullLauncher {
    names: Vec<CommandInfo>,
}

impl NullLauncher {
    pub fn new(names: &[&str]) -> Arc<NullLauncher> {
        let mut names: Vec<CommandInfo> =
            names.iter().map(|n| CommandInfo::native(n, "")).collect();
        names.sort_by(|a, b| a.name.cmp(&b.name));
        Arc::new(NullLauncher { names })
    }
}

#[async_trait]
impl Launcher for NullLauncher {
    async fn launch(&self, ctx: Context, argv: Vec<String>) -> Status {
        let name = argv.first().cloned().unwrap_or_default();
        ctx.err(format!("forkbox: {name}: command not found\n"))
            .await;
        127
    }

    fn commands(&self) -> Vec<CommandInfo> {
        self.names.clone()
    }
}

/// A launcher that runs this crate's commands by name (and nothing else), so commands
/// that launch others can be tested end to end.
pub struct TestLauncher {
    commands: Vec<Arc<dyn Command>>,
}

impl TestLauncher {
    /// A launcher over every command of [`crate::all`], plus stand-ins for the shell
    /// builtins commands launch most (`echo`, `true`, `false`).
    pub fn new() -> Arc<TestLauncher> {
        let mut all = crate::all();
        all.extend(crate::cmd::builtin_stand_ins());
        TestLauncher::with(all)
    }

    /// A launcher over the given commands only.
    pub fn with(mut commands: Vec<Arc<dyn Command>>) -> Arc<TestLauncher> {
        commands.sort_by_key(|c| c.name());
        Arc::new(TestLauncher { commands })
    }
}

#[async_trait]
impl Launcher for TestLauncher {
    async fn launch(&self, ctx: Context, argv: Vec<String>) -> Status {
        let name = argv.first().cloned().unwrap_or_default();
        let Some(cmd) = self.commands.iter().find(|c| c.name() == name) else {
            ctx.err(format!("forkbox: {name}: command not found\n"))
                .await;
            return 127;
        };
        let result = cmd.run(&ctx, argv[1..].to_vec()).await;
        exit_status(cmd.name(), result, &ctx.stderr).await
    }

    fn commands(&self) -> Vec<CommandInfo> {
        self.commands
            .iter()
            .map(|c| CommandInfo::native(c.name(), c.summary()))
            .collect()
    }
}

/// One invocation of a command under test, with everything but the command defaulted:
/// empty stdin, an empty [`MemFs`], cwd `/`, no environment, no terminal, a
/// [`TestLauncher`].
#[derive(Clone)]
pub struct Invocation {
    pub stdin: Vec<u8>,
    pub fs: Arc<dyn FileSystem>,
    pub cwd: String,
    pub env: BTreeMap<String, String>,
    pub tty: Option<TermSize>,
    pub launcher: Arc<dyn Launcher>,
    pub budget: crate::Budget,
}

impl Default for Invocation {
    fn default() -> Self {
        Invocation {
            stdin: Vec::new(),
            fs: MemFs::new(),
            cwd: "/".to_string(),
            env: BTreeMap::new(),
            tty: None,
            launcher: TestLauncher::new(),
            budget: crate::Budget::default(),
        }
    }
}

impl Invocation {
    /// Runs `cmd` with `args`, draining stdout and stderr concurrently; gives the exit
    /// status (through [`exit_status`]) and the outputs (lossily decoded).
    pub async fn run(&self, cmd: &dyn Command, args: &[&str]) -> (Status, String, String) {
        let (status, out, err) = self.run_bytes(cmd, args).await;
        (
            status,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    /// Like [`Invocation::run`], with the raw output bytes.
    pub async fn run_bytes(&self, cmd: &dyn Command, args: &[&str]) -> (Status, Vec<u8>, Vec<u8>) {
        let (out_w, out_r) = pipe();
        let (err_w, err_r) = pipe();
        let ctx = Context {
            stdin: Input::from_bytes(self.stdin.clone()),
            stdout: out_w,
            stderr: err_w,
            env: self.env.clone(),
            env_last: Vec::new(),
            cwd: self.cwd.clone(),
            fs: self.fs.clone(),
            cancel: CancellationToken::new(),
            tty: self.tty,
            terminal: None,
            launcher: self.launcher.clone(),
            budget: self.budget.clone(),
        };
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let run = async move {
            let result = cmd.run(&ctx, args).await;
            let status = exit_status(cmd.name(), result, &ctx.stderr).await;
            drop(ctx);
            status
        };
        // Each reader owns its pipe end, so a reader that gives up (output over the limit)
        // breaks the pipe and stops the command instead of leaving it blocked.
        let drain = |input: Input| async move { input.read_to_end(HARNESS_OUTPUT_LIMIT).await };
        let (status, out, err) = tokio::join!(run, drain(out_r), drain(err_r));
        (
            status,
            out.expect("stdout exceeded the harness limit"),
            err.expect("stderr exceeded the harness limit"),
        )
    }
}

/// A session budget small enough that any buffer of user data overruns it, for tests of
/// what a command does out of memory.
pub const TINY_BUDGET: usize = 1024;

impl Invocation {
    /// Runs `cmd` under a fresh budget of `limit` bytes and checks that it failed as a
    /// command out of memory must: `forkbox: NAME: out of memory (session limit …)` as its
    /// last message, status 1, and nothing left charged once it returned. Gives stdout
    /// (what it wrote before running out).
    pub async fn out_of_memory(&self, cmd: &dyn Command, args: &[&str], limit: usize) -> String {
        let budget = crate::Budget::new(limit, crate::budget::DEFAULT_TASKS);
        let inv = Invocation {
            budget: budget.clone(),
            ..self.clone()
        };
        let (status, out, err) = inv.run(cmd, args).await;
        let want = format!(
            "forkbox: {}: {}\n",
            cmd.name(),
            crate::OutOfMemory { limit }
        );
        assert!(
            status == 1 && err.ends_with(&want),
            "{} {args:?}: status {status}, stderr {err:?}",
            cmd.name()
        );
        assert_eq!(
            budget.mem_used(),
            0,
            "{} {args:?}: left charged",
            cmd.name()
        );
        out
    }
}

/// Runs `cmd` with `args`, `stdin`, `fs` and `cwd` (see [`Invocation`] for the rest).
pub async fn run_cmd(
    cmd: &dyn Command,
    args: &[&str],
    stdin: &[u8],
    fs: Arc<dyn FileSystem>,
    cwd: &str,
) -> (Status, String, String) {
    Invocation {
        stdin: stdin.to_vec(),
        fs,
        cwd: cwd.to_string(),
        ..Invocation::default()
    }
    .run(cmd, args)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::Usage;

    #[tokio::test]
    async fn memfs_keeps_the_port_contract() {
        contract::run_all(|quota| async move {
            let fs: Arc<dyn FileSystem> = MemFs::with_quota(quota);
            fs
        })
        .await;
    }

    async fn write(fs: &Arc<MemFs>, path: &str, data: &[u8], mode: WriteMode) -> FsResult<()> {
        let mut h = fs.open_write(path, mode).await?;
        h.write(data).await?;
        h.close().await
    }

    #[tokio::test]
    async fn files_dirs_and_listing() {
        let fs = MemFs::with_files(&[("/a/b.txt", "hi"), ("/a/a.txt", "x"), ("/c", "")]);
        let names: Vec<String> = fs
            .read_dir("/a")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["a.txt", "b.txt"]);
        let root: Vec<String> = fs
            .read_dir("/")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(root, ["a", "c"]);
        assert_eq!(fs.read_at("/a/b.txt", 1, 10).await.unwrap(), &b"i"[..]);
        assert_eq!(fs.read_at("/a", 0, 10).await, Err(FsError::IsADirectory));
        assert_eq!(fs.read_at("/c/x", 0, 10).await, Err(FsError::NotADirectory));
        assert_eq!(fs.stat("/nope").await, Err(FsError::NotFound));
        assert_eq!(fs.read_dir("/c").await, Err(FsError::NotADirectory));
        assert_eq!(fs.stat("/../a/../a/b.txt").await.unwrap().len, 2);
    }

    #[tokio::test]
    async fn writes_modes_and_close_failure() {
        let fs = MemFs::new();
        write(&fs, "/f", b"one", WriteMode::Truncate).await.unwrap();
        write(&fs, "/f", b"two", WriteMode::Append).await.unwrap();
        assert_eq!(fs.contents("/f").unwrap(), b"onetwo");
        assert_eq!(
            write(&fs, "/f", b"x", WriteMode::CreateNew).await,
            Err(FsError::AlreadyExists)
        );
        write(&fs, "/f", b"3", WriteMode::Truncate).await.unwrap();
        assert_eq!(fs.text("/f").unwrap(), "3");
        assert_eq!(
            write(&fs, "/no/f", b"", WriteMode::Truncate).await,
            Err(FsError::NotFound)
        );
        assert_eq!(
            write(&fs, "/", b"", WriteMode::Truncate).await,
            Err(FsError::IsADirectory)
        );
        fs.fail_close_on("/g");
        assert_eq!(
            write(&fs, "/g", b"x", WriteMode::Truncate).await,
            Err(FsError::NoSpace)
        );
    }

    #[tokio::test]
    async fn symlinks_resolve_inside_root() {
        let fs = MemFs::with_files(&[("/d/f", "data")]);
        fs.symlink("../../../d", "/d/up").await.unwrap();
        fs.symlink("/d/f", "/abs").await.unwrap();
        fs.symlink("loop", "/loop").await.unwrap();
        assert_eq!(fs.contents("/d/up/f").unwrap(), b"data");
        assert_eq!(fs.contents("/abs").unwrap(), b"data");
        assert!(fs.lstat("/abs").await.unwrap().is_symlink());
        assert!(fs.stat("/abs").await.unwrap().is_file());
        assert_eq!(fs.stat("/loop").await, Err(FsError::Loop));
        assert_eq!(fs.canonicalize("/d/up/up/f").await.unwrap(), "/d/f");
        assert_eq!(fs.readlink("/abs").await.unwrap(), "/d/f");
        assert_eq!(fs.readlink("/d").await, Err(FsError::InvalidArgument));
        // A dangling symlink: lstat works, stat does not.
        fs.symlink("/missing", "/dangle").await.unwrap();
        assert_eq!(fs.stat("/dangle").await, Err(FsError::NotFound));
        assert!(fs.lstat("/dangle").await.is_ok());
        fs.unlink("/abs").await.unwrap();
        assert!(fs.contents("/d/f").is_some());
    }

    #[tokio::test]
    async fn dirs_rename_and_errors() {
        let fs = MemFs::with_files(&[("/a/x", "1"), ("/b", "2")]);
        assert_eq!(fs.mkdir("/a").await, Err(FsError::AlreadyExists));
        assert_eq!(fs.mkdir("/q/r").await, Err(FsError::NotFound));
        assert_eq!(fs.rmdir("/a").await, Err(FsError::NotEmpty));
        assert_eq!(fs.rmdir("/b").await, Err(FsError::NotADirectory));
        assert_eq!(fs.unlink("/a").await, Err(FsError::IsADirectory));
        assert_eq!(fs.rename("/b", "/a").await, Err(FsError::IsADirectory));
        assert_eq!(fs.rename("/a", "/a/x/y").await, Err(FsError::NotADirectory));
        fs.mkdir("/e").await.unwrap();
        assert_eq!(fs.rename("/a", "/e/in").await, Ok(()));
        assert_eq!(fs.contents("/e/in/x").unwrap(), b"1");
        assert!(!fs.exists("/a"));
        assert_eq!(
            fs.rename("/e", "/e/in/z").await,
            Err(FsError::InvalidArgument)
        );
        fs.rename("/b", "/e/in/x").await.unwrap();
        assert_eq!(fs.contents("/e/in/x").unwrap(), b"2");
        fs.truncate("/e/in/x", 3).await.unwrap();
        assert_eq!(fs.contents("/e/in/x").unwrap(), b"2\0\0");
        fs.chmod("/e/in/x", 0o700).await.unwrap();
        assert_eq!(fs.stat("/e/in/x").await.unwrap().mode, 0o700);
        fs.unlink("/e/in/x").await.unwrap();
        fs.rmdir("/e/in").await.unwrap();
        assert_eq!(fs.read_dir("/e").await.unwrap(), vec![]);
    }

    #[tokio::test]
    async fn usage_counts_files_links_and_dirs() {
        let fs = MemFs::with_files(&[("/d/f", "abc")]);
        fs.put_symlink("f", "/d/l");
        assert_eq!(
            fs.usage().await.unwrap(),
            Usage {
                bytes_used: 4,
                bytes_limit: None,
                objects_used: 3,
                objects_limit: None,
            }
        );
        fs.set_usage_limits(Some(10), Some(5));
        let u = fs.usage().await.unwrap();
        assert_eq!((u.bytes_limit, u.objects_limit), (Some(10), Some(5)));
    }

    #[tokio::test]
    async fn launchers() {
        let inv = Invocation {
            launcher: NullLauncher::new(&["b", "a"]),
            ..Invocation::default()
        };
        let names: Vec<String> = inv
            .launcher
            .commands()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["a", "b"]);
    }
}

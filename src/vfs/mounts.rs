//! The namespace a session sees: its fork at `/`, and beside it a mount table of
//! filesystems that are not part of the fork: the devices under `/dev` and read-only
//! system files ([`SystemMounts`], a WASI tool's stdlib). Nothing mounted is ever stored
//! in the fork or counted against its quota.
//!
//! [`Mounts`] is the [`FileSystem`] the shell and the commands get: each path is
//! normalized and goes to the filesystem mounted at its longest matching prefix, else to
//! the fork. Paths reached through a symlink inside the fork are the fork's own (the
//! fork resolves them), so a symlink to `/dev/null` is not the device.

use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use forkbox_commands::fs::{FileHandle, OpenAction, OpenFile, OpenOptions, VfsPath, normalize};
use forkbox_commands::{
    DirEntry, FileKind, FileSystem, FsError, FsResult, Metadata, WriteHandle, WriteMode,
};

use super::system::SystemMounts;

/// A fork with filesystems mounted beside it.
pub struct Mounts {
    root: Arc<dyn FileSystem>,
    /// Mount points (normalized, without a trailing `/`) and what is mounted there.
    table: Vec<(String, Arc<dyn FileSystem>)>,
    /// The system files of the table, for the directories above them: where the fork
    /// has no such directory (`/usr/local/lib`), one is shown, read-only, holding the
    /// mounts; where it has one, the mounts are listed among its entries. `/` itself
    /// lists only the fork's entries.
    system: SystemMounts,
}

impl std::fmt::Debug for Mounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let points: Vec<&str> = self.table.iter().map(|(p, _)| p.as_str()).collect();
        f.debug_struct("Mounts").field("points", &points).finish()
    }
}

impl Mounts {
    /// `root` at `/` with the session's devices at `/dev`.
    pub fn with_devices(root: Arc<dyn FileSystem>) -> Mounts {
        Mounts::with_system(root, &SystemMounts::none())
    }

    /// `root` at `/` with the session's devices at `/dev` and the server's read-only
    /// system files.
    pub fn with_system(root: Arc<dyn FileSystem>, system: &SystemMounts) -> Mounts {
        let mut table: Vec<(String, Arc<dyn FileSystem>)> =
            vec![("/dev".to_string(), Arc::new(Devices))];
        table.extend(system.entries());
        Mounts {
            root,
            table,
            system: system.clone(),
        }
    }

    /// Whether `path` names a directory above a system mount (lexically).
    fn system_dir(&self, path: &str) -> Option<String> {
        let p = normalize(path);
        self.system.children(&p).is_some().then_some(p)
    }

    /// `result` of the fork for `path`, or the directory above a system mount that the
    /// fork lacks.
    fn or_system_dir(&self, path: &str, result: FsResult<Metadata>) -> FsResult<Metadata> {
        match (result, self.system_dir(path)) {
            (Err(FsError::NotFound), Some(dir)) => Ok(self.system.dir_meta(&dir)),
            (r, _) => r,
        }
    }

    /// Creates in the fork the directories above `path` that only system mounts show,
    /// so that `mkdir /usr/local/lib/x` works where the fork has no `/usr`.
    async fn materialize_parents(&self, path: &str) -> FsResult<()> {
        let p = normalize(path);
        let Some((parent, _)) = p.rsplit_once('/') else {
            return Ok(());
        };
        if parent.is_empty() || self.system.children(parent).is_none() {
            return Ok(());
        }
        let mut cur = String::new();
        for comp in parent.split('/').filter(|c| !c.is_empty()) {
            cur.push('/');
            cur.push_str(comp);
            match self.root.mkdir(&cur).await {
                Ok(()) | Err(FsError::AlreadyExists) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The filesystem that serves `path` (normalized).
    fn route(&self, path: &str) -> &dyn FileSystem {
        for (point, fs) in &self.table {
            if path == point
                || path
                    .strip_prefix(point.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
            {
                return fs.as_ref();
            }
        }
        self.root.as_ref()
    }

    fn is_mounted(&self, path: &str) -> bool {
        !std::ptr::addr_eq(self.route(path), self.root.as_ref())
    }

    /// The filesystem for `path` and the path to give it. A mount gets the path
    /// normalized; the fork gets it as it is, so that it resolves `..` after a symlink
    /// from the symlink's target and checks a trailing `/`, as its resolver (and Linux)
    /// do — unless a `..` climbs out of a mount point (`/dev/../x`), which only the
    /// lexical form resolves.
    fn route_path(&self, path: &str) -> (&dyn FileSystem, String) {
        let p = normalize(path);
        if self.is_mounted(&p) {
            return (self.route(&p), p);
        }
        let mut cur: Vec<&str> = Vec::new();
        for comp in path.split('/') {
            match comp {
                "" | "." => {}
                ".." => {
                    if self.is_mounted(&format!("/{}", cur.join("/"))) {
                        return (self.root.as_ref(), p);
                    }
                    cur.pop();
                }
                c => cur.push(c),
            }
        }
        (self.root.as_ref(), path.to_string())
    }
}

#[async_trait]
impl FileSystem for Mounts {
    async fn stat(&self, path: &str) -> FsResult<Metadata> {
        let (fs, p) = self.route_path(path);
        let r = fs.stat(&p).await;
        self.or_system_dir(path, r)
    }
    async fn lstat(&self, path: &str) -> FsResult<Metadata> {
        let (fs, p) = self.route_path(path);
        let r = fs.lstat(&p).await;
        self.or_system_dir(path, r)
    }
    async fn read_at(&self, path: &str, offset: u64, len: usize) -> FsResult<Bytes> {
        let (fs, p) = self.route_path(path);
        fs.read_at(&p, offset, len).await
    }
    async fn open_write(&self, path: &str, mode: WriteMode) -> FsResult<Box<dyn WriteHandle>> {
        let (fs, p) = self.route_path(path);
        fs.open_write(&p, mode).await
    }
    async fn open(&self, path: &VfsPath, opts: OpenOptions) -> FsResult<FileHandle> {
        let (fs, p) = self.route_path(path.as_str());
        let r = if p == path.as_str() {
            // Unchanged: keep what the path says beyond its text (a trailing `/`).
            fs.open(path, opts).await
        } else {
            fs.open(&VfsPath::new(&p)?, opts).await
        };
        match (r, self.system_dir(path.as_str())) {
            (Err(FsError::NotFound), Some(dir)) => {
                let meta = self.system.dir_meta(&dir);
                match opts.decide(path, Some(FileKind::Dir))? {
                    OpenAction::Directory => Ok(FileHandle::new(
                        Box::new(SystemDir { meta }),
                        opts,
                        FileKind::Dir,
                    )),
                    _ => Err(FsError::IsADirectory),
                }
            }
            (Err(FsError::NotFound), None) if opts.create => {
                // Creating a file in a directory only system mounts show.
                self.materialize_parents(path.as_str()).await?;
                fs.open(path, opts).await
            }
            (r, _) => r,
        }
    }
    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        let (fs, p) = self.route_path(path);
        let r = fs.read_dir(&p).await;
        let Some(dir) = self.system_dir(path) else {
            return r;
        };
        let mut entries = match r {
            Err(FsError::NotFound) => Vec::new(),
            r => r?,
        };
        if let Some(names) = self.system.children(&dir) {
            for name in names {
                if entries.iter().any(|e| &e.name == name) {
                    continue;
                }
                let meta = self.lstat(&format!("{dir}/{name}")).await?;
                entries.push(DirEntry {
                    name: name.clone(),
                    meta,
                });
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
    async fn read_dir_kinds(&self, path: &str) -> FsResult<Vec<(String, FileKind)>> {
        if self.system_dir(path).is_some() {
            // System mounts show beside the fork's entries: the full listing merges them.
            let entries = self.read_dir(path).await?;
            return Ok(entries.into_iter().map(|e| (e.name, e.meta.kind)).collect());
        }
        let (fs, p) = self.route_path(path);
        fs.read_dir_kinds(&p).await
    }
    async fn mkdir(&self, path: &str) -> FsResult<()> {
        if self.system_dir(path).is_some() {
            // There already, in the fork or above a system mount.
            return Err(FsError::AlreadyExists);
        }
        let (fs, p) = self.route_path(path);
        match fs.mkdir(&p).await {
            Err(FsError::NotFound) => {
                self.materialize_parents(path).await?;
                fs.mkdir(&p).await
            }
            r => r,
        }
    }
    async fn rmdir(&self, path: &str) -> FsResult<()> {
        let (fs, p) = self.route_path(path);
        match fs.rmdir(&p).await {
            Err(FsError::NotFound) if self.system_dir(path).is_some() => Err(FsError::ReadOnly),
            r => r,
        }
    }
    async fn unlink(&self, path: &str) -> FsResult<()> {
        let (fs, p) = self.route_path(path);
        fs.unlink(&p).await
    }
    async fn rename(&self, from: &str, to: &str) -> FsResult<()> {
        let ((from_fs, f), (to_fs, t)) = (self.route_path(from), self.route_path(to));
        let root = self.root.as_ref();
        if !std::ptr::addr_eq(from_fs, root) || !std::ptr::addr_eq(to_fs, root) {
            // Nothing mounted can be renamed, or replaced by a file of the fork.
            let system = |p: &str| self.table.iter().skip(1).any(|(point, _)| *point == p);
            if system(&normalize(from)) || system(&normalize(to)) {
                return Err(FsError::ReadOnly);
            }
            return Err(FsError::PermissionDenied);
        }
        self.root.rename(&f, &t).await
    }
    async fn symlink(&self, target: &str, link: &str) -> FsResult<()> {
        let (fs, p) = self.route_path(link);
        fs.symlink(target, &p).await
    }
    async fn readlink(&self, path: &str) -> FsResult<String> {
        let (fs, p) = self.route_path(path);
        fs.readlink(&p).await
    }
    async fn chmod(&self, path: &str, mode: u32) -> FsResult<()> {
        let (fs, p) = self.route_path(path);
        fs.chmod(&p, mode).await
    }
    async fn set_mtime(&self, path: &str, mtime: SystemTime) -> FsResult<()> {
        let (fs, p) = self.route_path(path);
        fs.set_mtime(&p, mtime).await
    }
    async fn truncate(&self, path: &str, len: u64) -> FsResult<()> {
        let (fs, p) = self.route_path(path);
        fs.truncate(&p, len).await
    }
    async fn canonicalize(&self, path: &str) -> FsResult<String> {
        let (fs, p) = self.route_path(path);
        match (fs.canonicalize(&p).await, self.system_dir(path)) {
            (Err(FsError::NotFound), Some(dir)) => Ok(dir),
            (r, _) => r,
        }
    }
    async fn usage(&self) -> FsResult<forkbox_commands::fs::Usage> {
        self.root.usage().await
    }
    async fn sync_all(&self) -> FsResult<()> {
        self.root.sync_all().await
    }
}

/// A directory above a system mount that the fork lacks, open (for `stat`).
struct SystemDir {
    meta: Metadata,
}

#[async_trait]
impl OpenFile for SystemDir {
    async fn read_at(&mut self, _offset: u64, _len: usize) -> FsResult<Bytes> {
        Err(FsError::IsADirectory)
    }
    async fn write_at(&mut self, _offset: u64, _data: &[u8]) -> FsResult<()> {
        Err(FsError::IsADirectory)
    }
    async fn append(&mut self, _data: &[u8]) -> FsResult<u64> {
        Err(FsError::IsADirectory)
    }
    async fn stat(&mut self) -> FsResult<Metadata> {
        Ok(self.meta.clone())
    }
    async fn set_len(&mut self, _len: u64) -> FsResult<()> {
        Err(FsError::IsADirectory)
    }
    async fn sync(&mut self) -> FsResult<()> {
        Ok(())
    }
    async fn close(self: Box<Self>) -> FsResult<()> {
        Ok(())
    }
}

/// The devices under `/dev`. Streams that belong to a command (`/dev/stdin`,
/// `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/dev/tty`) are listed here but served by
/// the shell's redirections and the commands' readers, which know the command's streams.
#[derive(Debug)]
pub struct Devices;

/// What a device does when read and written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Device {
    /// Reads end at once; writes vanish.
    Null,
    /// Reads give zeros forever; writes vanish.
    Zero,
    /// Reads give random bytes forever; writes vanish.
    Random,
    /// Reads give zeros; writes fail with no space.
    Full,
    /// A stream of the running command, served by the shell.
    Stream,
}

const DEVICES: [(&str, Device); 10] = [
    ("full", Device::Full),
    ("null", Device::Null),
    ("random", Device::Random),
    ("stderr", Device::Stream),
    ("stdin", Device::Stream),
    ("stdout", Device::Stream),
    ("tty", Device::Stream),
    ("urandom", Device::Random),
    ("zero", Device::Zero),
    ("fd", Device::Stream),
];

/// The epoch of the devices' times: they have no history worth showing.
fn epoch() -> SystemTime {
    SystemTime::UNIX_EPOCH
}

fn device(path: &str) -> FsResult<Option<Device>> {
    if path == "/dev" {
        return Ok(None);
    }
    let name = path.strip_prefix("/dev/").ok_or(FsError::NotFound)?;
    if name == "fd" {
        return Ok(Some(Device::Stream));
    }
    // A command's descriptors above 2 are served by the shell while they are open; one
    // that reaches the devices is not open, and its `/dev/fd/N` does not exist.
    if let Some(n) = name.strip_prefix("fd/") {
        return match n.parse::<u8>() {
            Ok(0..=2) => Ok(Some(Device::Stream)),
            _ => Err(FsError::NotFound),
        };
    }
    DEVICES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, d)| Some(*d))
        .ok_or(FsError::NotFound)
}

/// Inode numbers of the devices: far above any the fork gives out, so a device and a
/// file of the fork never share one. `/dev` is the first, then each name of [`DEVICES`]
/// in order; `/dev/fd/N` are all the `fd` entry.
const DEV_INO_BASE: u64 = 1 << 62;

fn ino_of(path: &str) -> u64 {
    let name = path.strip_prefix("/dev/").unwrap_or("");
    let name = if name.starts_with("fd/") { "fd" } else { name };
    match DEVICES.iter().position(|(n, _)| *n == name) {
        Some(i) => DEV_INO_BASE + 1 + i as u64,
        None => DEV_INO_BASE,
    }
}

fn meta_of(dev: Option<Device>, path: &str) -> Metadata {
    let dir = dev.is_none() || path == "/dev/fd";
    let kind = if dir {
        FileKind::Dir
    } else {
        FileKind::CharDevice
    };
    let mode = if dir { 0o755 } else { 0o666 };
    Metadata::new(kind, 0, mode, epoch()).with_ino(ino_of(path))
}

/// A device (or `/dev` itself) open through [`FileSystem::open`].
struct DevFile {
    dev: Option<Device>,
    path: String,
}

#[async_trait]
impl OpenFile for DevFile {
    async fn read_at(&mut self, offset: u64, len: usize) -> FsResult<Bytes> {
        Devices.read_at(&self.path, offset, len).await
    }
    async fn write_at(&mut self, _offset: u64, data: &[u8]) -> FsResult<()> {
        Sink {
            full: self.dev == Some(Device::Full),
        }
        .write(data)
        .await
    }
    async fn append(&mut self, data: &[u8]) -> FsResult<u64> {
        self.write_at(0, data).await.map(|()| 0)
    }
    async fn stat(&mut self) -> FsResult<Metadata> {
        Ok(meta_of(self.dev, &self.path))
    }
    async fn set_len(&mut self, _len: u64) -> FsResult<()> {
        Ok(())
    }
    async fn sync(&mut self) -> FsResult<()> {
        Ok(())
    }
    async fn close(self: Box<Self>) -> FsResult<()> {
        Ok(())
    }
}

/// A write handle that discards what it is given, or refuses it (`/dev/full`).
struct Sink {
    full: bool,
}

#[async_trait]
impl WriteHandle for Sink {
    async fn write(&mut self, _data: &[u8]) -> FsResult<()> {
        if self.full {
            Err(FsError::NoSpace)
        } else {
            Ok(())
        }
    }
    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        let _ = offset;
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
impl FileSystem for Devices {
    async fn stat(&self, path: &str) -> FsResult<Metadata> {
        Ok(meta_of(device(path)?, path))
    }
    async fn lstat(&self, path: &str) -> FsResult<Metadata> {
        self.stat(path).await
    }
    async fn read_at(&self, path: &str, _offset: u64, len: usize) -> FsResult<Bytes> {
        match device(path)? {
            None => Err(FsError::IsADirectory),
            Some(Device::Null) => Ok(Bytes::new()),
            Some(Device::Zero | Device::Full) => Ok(Bytes::from(vec![0u8; len])),
            Some(Device::Random) => {
                let mut buf = vec![0u8; len];
                rand::fill(&mut buf[..]);
                Ok(Bytes::from(buf))
            }
            // Only a command's own streams can serve these; the shell does.
            Some(Device::Stream) => Err(FsError::Unsupported),
        }
    }
    async fn open_write(&self, path: &str, _mode: WriteMode) -> FsResult<Box<dyn WriteHandle>> {
        match device(path)? {
            None => Err(FsError::IsADirectory),
            Some(Device::Full) => Ok(Box::new(Sink { full: true })),
            Some(Device::Stream) => Err(FsError::Unsupported),
            Some(_) => Ok(Box::new(Sink { full: false })),
        }
    }
    async fn open(&self, path: &VfsPath, opts: OpenOptions) -> FsResult<FileHandle> {
        let p = normalize(path.as_str());
        let dev = match device(&p) {
            Ok(dev) => dev,
            // Nothing can be created among the devices.
            Err(FsError::NotFound) if opts.create => return Err(FsError::PermissionDenied),
            Err(e) => return Err(e),
        };
        let meta = meta_of(dev, &p);
        match opts.decide(path, Some(meta.kind))? {
            OpenAction::Create => return Err(FsError::PermissionDenied),
            _ if dev == Some(Device::Stream) && p != "/dev/fd" => {
                // Only a command's own streams can serve these; the shell does.
                return Err(FsError::Unsupported);
            }
            _ => {}
        }
        let file = DevFile { dev, path: p };
        Ok(FileHandle::new(Box::new(file), opts, meta.kind))
    }
    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        match device(path)? {
            None => {
                let mut entries: Vec<DirEntry> = DEVICES
                    .iter()
                    .map(|(name, _)| {
                        let full = format!("/dev/{name}");
                        DirEntry {
                            name: name.to_string(),
                            meta: meta_of(device(&full).ok().flatten(), &full),
                        }
                    })
                    .collect();
                entries.sort_by(|a, b| a.name.cmp(&b.name));
                Ok(entries)
            }
            Some(_) if path == "/dev/fd" => Ok(Vec::new()),
            Some(_) => Err(FsError::NotADirectory),
        }
    }
    async fn mkdir(&self, path: &str) -> FsResult<()> {
        device(path).map_or(Err(FsError::PermissionDenied), |_| {
            Err(FsError::AlreadyExists)
        })
    }
    async fn rmdir(&self, path: &str) -> FsResult<()> {
        device(path)?;
        Err(FsError::PermissionDenied)
    }
    async fn unlink(&self, path: &str) -> FsResult<()> {
        device(path)?;
        Err(FsError::PermissionDenied)
    }
    async fn rename(&self, _from: &str, _to: &str) -> FsResult<()> {
        Err(FsError::PermissionDenied)
    }
    async fn symlink(&self, _target: &str, _link: &str) -> FsResult<()> {
        Err(FsError::PermissionDenied)
    }
    async fn readlink(&self, path: &str) -> FsResult<String> {
        device(path)?;
        Err(FsError::InvalidArgument)
    }
    async fn chmod(&self, path: &str, _mode: u32) -> FsResult<()> {
        device(path)?;
        Err(FsError::PermissionDenied)
    }
    async fn set_mtime(&self, path: &str, _mtime: SystemTime) -> FsResult<()> {
        device(path)?;
        Err(FsError::PermissionDenied)
    }
    async fn truncate(&self, path: &str, _len: u64) -> FsResult<()> {
        match device(path)? {
            None => Err(FsError::IsADirectory),
            Some(_) => Ok(()),
        }
    }
    async fn canonicalize(&self, path: &str) -> FsResult<String> {
        device(path)?;
        Ok(path.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use forkbox_commands::testing::MemFs;

    fn mounts() -> (Arc<MemFs>, Mounts) {
        let fs = MemFs::new();
        fs.put_dir("/d");
        let m = Mounts::with_devices(fs.clone());
        (fs, m)
    }

    #[tokio::test]
    async fn devices_read_and_write() {
        let (_, m) = mounts();
        assert!(m.read_at("/dev/null", 0, 10).await.unwrap().is_empty());
        assert_eq!(&m.read_at("/dev/zero", 0, 4).await.unwrap()[..], &[0; 4]);
        assert_eq!(m.read_at("/dev/urandom", 0, 16).await.unwrap().len(), 16);
        let mut w = m
            .open_write("/d/../dev/null", WriteMode::Truncate)
            .await
            .unwrap();
        w.write(b"gone").await.unwrap();
        w.close().await.unwrap();
        let mut w = m.open_write("/dev/full", WriteMode::Append).await.unwrap();
        assert_eq!(w.write(b"x").await, Err(FsError::NoSpace));
        let meta = m.stat("/dev/null").await.unwrap();
        assert_eq!((meta.kind, meta.mode), (FileKind::CharDevice, 0o666));
        assert!(m.stat("/dev").await.unwrap().is_dir());
        let names: Vec<String> = m
            .read_dir("/dev")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert!(names.contains(&"null".to_string()) && names.contains(&"stdin".to_string()));
    }

    #[tokio::test]
    async fn devices_cannot_be_changed_and_the_fork_is_untouched() {
        let (fs, m) = mounts();
        assert_eq!(m.stat("/dev/nope").await, Err(FsError::NotFound));
        assert_eq!(m.unlink("/dev/null").await, Err(FsError::PermissionDenied));
        assert_eq!(m.mkdir("/dev/x").await, Err(FsError::PermissionDenied));
        assert_eq!(
            m.open_write("/dev/new", WriteMode::Truncate).await.err(),
            Some(FsError::NotFound)
        );
        assert_eq!(
            m.rename("/d", "/dev/d").await,
            Err(FsError::PermissionDenied)
        );
        assert_eq!(
            m.rename("/dev/null", "/d/n").await,
            Err(FsError::PermissionDenied)
        );
        // Everything else is the fork's.
        m.mkdir("/devices").await.unwrap();
        assert!(fs.stat("/devices").await.unwrap().is_dir());
        assert_eq!(fs.stat("/dev").await, Err(FsError::NotFound));
    }

    #[tokio::test]
    async fn system_files_are_read_only_beside_the_fork() {
        let host = tempfile::tempdir().unwrap();
        let zip = host.path().join("stdlib.zip");
        std::fs::write(&zip, b"PK-content").unwrap();
        let system = SystemMounts::open([("/usr/local/lib/python315.zip", zip.as_path())]).unwrap();
        let fs = MemFs::new();
        fs.put_dir("/d");
        let m = Mounts::with_system(fs.clone(), &system);

        let meta = m.stat("/usr/local/lib/python315.zip").await.unwrap();
        assert_eq!(
            (meta.kind, meta.len, meta.mode),
            (FileKind::File, 10, 0o444)
        );
        assert_eq!(
            &m.read_at("/usr/local/lib/python315.zip", 3, 4)
                .await
                .unwrap()[..],
            b"cont"
        );
        let mut h = m
            .open(
                &VfsPath::new("/usr/local/lib/python315.zip").unwrap(),
                OpenOptions::read_only(),
            )
            .await
            .unwrap();
        assert_eq!(&h.read(100).await.unwrap()[..], b"PK-content");
        // The directories above it, where the fork has none, hold it and nothing else.
        for dir in ["/usr", "/usr/local", "/usr/local/lib", "/d/../usr/local"] {
            assert!(m.stat(dir).await.unwrap().is_dir(), "{dir}");
        }
        let names = |v: Vec<DirEntry>| v.into_iter().map(|e| e.name).collect::<Vec<_>>();
        assert_eq!(
            names(m.read_dir("/usr/local/lib").await.unwrap()),
            ["python315.zip"]
        );
        assert_eq!(names(m.read_dir("/usr").await.unwrap()), ["local"]);
        // `/` lists the fork only.
        assert_eq!(names(m.read_dir("/").await.unwrap()), ["d"]);

        // Writes fail, read-only; nothing reaches the fork or the host file.
        let zip_path = "/usr/local/lib/python315.zip";
        assert_eq!(
            m.open_write(zip_path, WriteMode::Truncate).await.err(),
            Some(FsError::ReadOnly)
        );
        assert_eq!(m.unlink(zip_path).await, Err(FsError::ReadOnly));
        assert_eq!(m.truncate(zip_path, 0).await, Err(FsError::ReadOnly));
        assert_eq!(m.chmod(zip_path, 0o777).await, Err(FsError::ReadOnly));
        assert_eq!(m.rename(zip_path, "/d/z").await, Err(FsError::ReadOnly));
        assert_eq!(m.rename("/d", zip_path).await, Err(FsError::ReadOnly));
        assert_eq!(
            m.open(&VfsPath::new(zip_path).unwrap(), OpenOptions::read_write())
                .await
                .err(),
            Some(FsError::ReadOnly)
        );
        assert_eq!(m.rmdir("/usr/local").await, Err(FsError::ReadOnly));
        assert_eq!(m.mkdir("/usr").await, Err(FsError::AlreadyExists));
        assert_eq!(std::fs::read(&zip).unwrap(), b"PK-content");
        assert_eq!(m.usage().await.unwrap(), fs.usage().await.unwrap());

        // Beside it the fork is writable: the directories it lacks are made on the way.
        m.mkdir("/usr/local/lib/mine").await.unwrap();
        assert!(fs.stat("/usr/local/lib/mine").await.unwrap().is_dir());
        assert_eq!(
            names(m.read_dir("/usr/local/lib").await.unwrap()),
            ["mine", "python315.zip"]
        );
        assert_eq!(
            fs.stat("/usr/local/lib/python315.zip").await,
            Err(FsError::NotFound)
        );
    }

    #[test]
    fn system_mount_points_are_checked() {
        let host = tempfile::tempdir().unwrap();
        let f = host.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        for at in ["relative", "/", "/dev/x"] {
            assert!(SystemMounts::open([(at, f.as_path())]).is_err(), "{at}");
        }
        assert!(SystemMounts::open([("/a/b", f.as_path()), ("/a/b", f.as_path())]).is_err());
        assert!(SystemMounts::open([("/a/b", f.as_path()), ("/a", f.as_path())]).is_err());
        assert!(SystemMounts::open([("/a", host.path().join("missing").as_path())]).is_err());
    }
}

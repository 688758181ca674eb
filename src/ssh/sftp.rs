//! The SFTP subsystem: SFTP version 3 (what OpenSSH's `sftp` and `scp` speak) over a
//! session's own filesystem, the same [`FileSystem`] its shells see, so what one writes
//! the other reads at once.
//!
//! [`Sftp`] answers a request packet with one reply packet and knows nothing of SSH;
//! [`serve`] frames a channel's byte stream into packets for it and answers up to
//! [`MAX_IN_FLIGHT`] requests at once (OpenSSH keeps 64 reads or writes in flight), each
//! reply sent as soon as it is ready, in any order, as the protocol allows. Requests on one
//! handle are served in the order they came (its reads and writes, then its close);
//! requests that name paths are served in order among themselves and after every close
//! sent before them. So transfers of several files overlap, and a slow read never holds up
//! a `stat`. The server holds at most [`MAX_IN_FLIGHT`] requests and their replies (each at
//! most [`MAX_PACKET`]) whatever the file sizes. Files are
//! read and written at the offsets the client names, through open handles
//! ([`FileSystem::open`]), never whole.
//!
//! Paths resolve exactly as in the shell: relative ones against `/` (the session's home),
//! `..`, absolute paths and symlinks all inside the session's fork. Quotas are the
//! filesystem's, so an upload past one fails with "Disk quota exceeded".
//!
//! Extensions: `posix-rename@openssh.com`, `statvfs@openssh.com`, `fstatvfs@openssh.com`,
//! `fsync@openssh.com`, `expand-path@openssh.com`, `limits@openssh.com`, and
//! `hardlink@openssh.com`, which always answers "operation unsupported" (the fork has no
//! hard links) so the client says why.

mod wire;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use bytes::{Buf, Bytes, BytesMut};
use forkbox_commands::budget::{Budget, Charge};
use forkbox_commands::fs::{
    FileHandle, FileSystem, FsError, Metadata, OpenOptions, SESSION_GID, SESSION_UID, VfsPath,
};
use futures::FutureExt;
use futures::stream::{FuturesUnordered, StreamExt};
use russh::server::Msg;
use russh::{ChannelMsg, ChannelReadHalf, ChannelWriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::session::Activity;
use crate::session::flow::Outbound;
use wire::{Attrs, Code, Malformed, Reader, Writer};

/// Longest request accepted (the length field's value), as OpenSSH's own server: room for
/// a write of 255 KiB and its header, what clients that do not ask for limits may send.
/// A longer length cannot be a request, and the stream cannot be resynchronised after
/// it, so the subsystem ends.
pub const MAX_PACKET: usize = 256 * 1024;
/// Most bytes one read returns (longer reads are cut to it, which SFTP allows), and the
/// read and write size `limits@openssh.com` offers: with OpenSSH's 64 requests in flight,
/// 4 MiB queued at most per transfer.
pub const MAX_IO: usize = 64 * 1024;
/// Bytes of requests read but not answered yet that a channel may hold: OpenSSH's 64
/// writes in flight of the largest size a client may send unasked, and then some.
pub const MAX_QUEUED: usize = 20 * 1024 * 1024;
/// Requests one SFTP channel answers at once: OpenSSH's `sftp` and `scp` keep 64 in
/// flight by default (`-R`), and each one answered holds a request and a reply.
pub const MAX_IN_FLIGHT: usize = 64;
/// Files and directories one SFTP channel may hold open: enough for any client's
/// recursive transfer, bounded so a client cannot grow the table without end.
pub const MAX_HANDLES: usize = 256;
/// Memory one held directory entry takes besides its name (its metadata and bookkeeping),
/// as charged to the session's budget.
const ENTRY_COST: usize = std::mem::size_of::<(String, Metadata)>();
/// Directory entries sent in one `SSH_FXP_NAME` reply.
const READDIR_BATCH: usize = 128;
/// Permission bits a new file or directory never gets from the client's request, as
/// with the usual `umask 022` of an SSH server.
const UMASK: u32 = 0o022;

/// Why a request failed: the status code and the message sent with it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fail(Code, String);

impl From<FsError> for Fail {
    fn from(e: FsError) -> Fail {
        let code = match e {
            FsError::NotFound => Code::NoSuchFile,
            FsError::PermissionDenied | FsError::ReadOnly => Code::PermissionDenied,
            FsError::Unsupported => Code::OpUnsupported,
            _ => Code::Failure,
        };
        Fail(code, e.to_string())
    }
}

impl From<Malformed> for Fail {
    fn from(_: Malformed) -> Fail {
        Fail(Code::BadMessage, "Bad message".into())
    }
}

type Reply = Result<Vec<u8>, Fail>;

/// An open file, shared by the requests on its handle (which [`serve`] runs one after
/// the other); `None` once closed.
type SharedFile = Arc<tokio::sync::Mutex<Option<FileHandle>>>;

/// What a handle is open on.
enum Open {
    File {
        file: SharedFile,
        /// The path it was opened by, for `fsetstat` of mode and times.
        path: String,
    },
    Dir {
        /// Entries not sent yet, in reverse order (the next one last).
        pending: Vec<(String, Metadata)>,
        /// What the listing takes of the session's memory budget, while it is held.
        _charge: Charge,
    },
}

/// The SFTP server of one channel: the filesystem and the channel's open handles. Several
/// requests may be answered at once (see [`serve`]): the table is locked only between
/// awaits, and each open file has a lock of its own.
pub struct Sftp {
    fs: Arc<dyn FileSystem>,
    /// The session's memory budget: directory listings held open are charged to it.
    budget: Budget,
    table: std::sync::Mutex<Table>,
}

/// The open handles of a channel.
#[derive(Default)]
struct Table {
    handles: HashMap<u32, Open>,
    next_handle: u32,
}

impl Sftp {
    pub fn new(fs: Arc<dyn FileSystem>, budget: Budget) -> Sftp {
        Sftp {
            fs,
            budget,
            table: std::sync::Mutex::new(Table::default()),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Handles open now.
    pub fn open_handles(&self) -> usize {
        self.table().handles.len()
    }

    /// Answers one request (the packet without its length field) with its reply packet.
    pub async fn request(&self, body: &[u8]) -> Vec<u8> {
        let mut r = Reader::new(body);
        let Ok(kind) = r.u8() else {
            return wire::status(0, Code::BadMessage, "Bad message");
        };
        if kind == wire::FXP_INIT {
            return version();
        }
        let Ok(id) = r.u32() else {
            return wire::status(0, Code::BadMessage, "Bad message");
        };
        match self.dispatch(kind, id, &mut r).await {
            Ok(reply) => reply,
            Err(Fail(code, msg)) => wire::status(id, code, &msg),
        }
    }

    /// Closes every handle still open, storing what was written through them; the
    /// first failure is logged (the client that would see it is gone).
    pub async fn close_all(&self) {
        let left: Vec<Open> = self.table().handles.drain().map(|(_, o)| o).collect();
        for open in left {
            if let Open::File { file, path } = open
                && let Some(file) = file.lock().await.take()
                && let Err(e) = file.close().await
            {
                tracing::warn!(path, error = %e, "sftp: closing a handle left open failed");
            }
        }
    }

    async fn dispatch(&self, kind: u8, id: u32, r: &mut Reader<'_>) -> Reply {
        use wire::*;
        match kind {
            FXP_OPEN => {
                let path = absolute(r.string()?);
                let flags = r.u32()?;
                let attrs = r.attrs()?;
                self.open(id, &path, flags, attrs).await
            }
            FXP_CLOSE => {
                let h = handle_id(r)?;
                let open = self.table().handles.remove(&h);
                match open {
                    Some(Open::File { file, .. }) => {
                        if let Some(file) = file.lock().await.take() {
                            file.close().await?;
                        }
                    }
                    Some(Open::Dir { .. }) => {}
                    None => return Err(bad_handle()),
                }
                ok(id)
            }
            FXP_READ => {
                let h = handle_id(r)?;
                let offset = r.u64()?;
                let len = (r.u32()? as usize).min(MAX_IO);
                let file = self.file(h)?;
                let mut file = file.lock().await;
                let data = open_file(&mut file)?.read_at(offset, len).await?;
                if data.is_empty() && len > 0 {
                    return Err(Fail(Code::Eof, "End of file".into()));
                }
                let mut w = Writer::new(FXP_DATA, Some(id));
                w.bytes(&data);
                Ok(w.finish())
            }
            FXP_WRITE => {
                let h = handle_id(r)?;
                let offset = r.u64()?;
                let data = r.bytes()?;
                let file = self.file(h)?;
                let mut file = file.lock().await;
                open_file(&mut file)?.write_at(offset, data).await?;
                ok(id)
            }
            FXP_LSTAT | FXP_STAT => {
                let path = absolute(r.string()?);
                let meta = if kind == FXP_STAT {
                    self.fs.stat(&path).await?
                } else {
                    self.fs.lstat(&path).await?
                };
                Ok(attrs_reply(id, &meta))
            }
            FXP_FSTAT => {
                let h = handle_id(r)?;
                let file = self.file(h)?;
                let mut file = file.lock().await;
                let meta = open_file(&mut file)?.stat().await?;
                Ok(attrs_reply(id, &meta))
            }
            FXP_SETSTAT => {
                let path = absolute(r.string()?);
                let attrs = r.attrs()?;
                self.fs.lstat(&path).await?;
                self.set_attrs(&path, attrs).await?;
                ok(id)
            }
            FXP_FSETSTAT => {
                let h = handle_id(r)?;
                let attrs = r.attrs()?;
                self.fsetstat(h, attrs).await?;
                ok(id)
            }
            FXP_OPENDIR => {
                let path = absolute(r.string()?);
                self.opendir(id, &path).await
            }
            FXP_READDIR => {
                let h = handle_id(r)?;
                self.readdir(id, h)
            }
            FXP_REMOVE => {
                self.fs.unlink(&absolute(r.string()?)).await?;
                ok(id)
            }
            FXP_MKDIR => {
                let path = absolute(r.string()?);
                let attrs = r.attrs()?;
                self.fs.mkdir(&path).await?;
                if let Some(mode) = attrs.permissions {
                    self.fs.chmod(&path, mode & 0o7777 & !UMASK).await?;
                }
                ok(id)
            }
            FXP_RMDIR => {
                self.fs.rmdir(&absolute(r.string()?)).await?;
                ok(id)
            }
            FXP_REALPATH => {
                let path = r.string()?;
                let real = self.realpath(path).await?;
                Ok(name_reply(id, &real))
            }
            FXP_RENAME => {
                let from = absolute(r.string()?);
                let to = absolute(r.string()?);
                // SFTP v3's rename never replaces (posix-rename does).
                self.fs.lstat(&from).await?;
                if self.fs.lstat(&to).await.is_ok() {
                    return Err(FsError::AlreadyExists.into());
                }
                self.fs.rename(&from, &to).await?;
                ok(id)
            }
            FXP_READLINK => {
                let target = self.fs.readlink(&absolute(r.string()?)).await?;
                Ok(name_reply(id, &target))
            }
            FXP_SYMLINK => {
                // OpenSSH sends the target first and the link second (the reverse of the
                // draft); every client follows OpenSSH.
                let target = r.string()?;
                let link = absolute(r.string()?);
                self.fs.symlink(target, &link).await?;
                ok(id)
            }
            FXP_EXTENDED => {
                let name = r.string()?;
                self.extended(id, name, r).await
            }
            _ => Err(Fail(
                Code::OpUnsupported,
                format!("Operation unsupported (request type {kind})"),
            )),
        }
    }

    async fn open(&self, id: u32, path: &str, flags: u32, attrs: Attrs) -> Reply {
        use wire::*;
        self.room()?;
        let mut opts = match (flags & FXF_READ != 0, flags & FXF_WRITE != 0) {
            (_, false) => OpenOptions::read_only(),
            (false, true) => OpenOptions::write_only(),
            (true, true) => OpenOptions::read_write(),
        };
        opts = opts
            .append(flags & FXF_APPEND != 0)
            .create(flags & FXF_CREAT != 0)
            .truncate(flags & FXF_TRUNC != 0)
            .exclusive(flags & FXF_EXCL != 0);
        let vpath = VfsPath::new(path)?;
        // A file this open creates gets the client's permission bits.
        let created = opts.create && self.fs.lstat(path).await.is_err();
        let file = self.fs.open(&vpath, opts).await?;
        if created
            && let Some(mode) = attrs.permissions
            && let Err(e) = self.fs.chmod(path, mode & 0o7777 & !UMASK).await
        {
            let _ = file.close().await;
            return Err(e.into());
        }
        let inserted = self.insert(Open::File {
            file: Arc::new(tokio::sync::Mutex::new(Some(file))),
            path: path.to_string(),
        });
        match inserted {
            Ok(h) => Ok(handle_reply(id, h)),
            Err((Open::File { file, .. }, full)) => {
                // Other opens answered meanwhile took the last places.
                if let Some(file) = file.lock().await.take() {
                    let _ = file.close().await;
                }
                Err(full)
            }
            Err((Open::Dir { .. }, full)) => Err(full),
        }
    }

    async fn opendir(&self, id: u32, path: &str) -> Reply {
        self.room()?;
        let meta = self.fs.stat(path).await?;
        if !meta.is_dir() {
            return Err(FsError::NotADirectory.into());
        }
        let listing = self.fs.read_dir(path).await?;
        let parent = self
            .fs
            .stat(&format!("{}/..", path.trim_end_matches('/')))
            .await
            .unwrap_or_else(|_| meta.clone());
        let cost: usize = listing
            .iter()
            .map(|e| e.name.len() + ENTRY_COST)
            .sum::<usize>()
            + 2 * ENTRY_COST;
        let charge = self
            .budget
            .charge(cost)
            .map_err(|e| Fail(Code::Failure, e.to_string()))?;
        let mut pending = Vec::with_capacity(listing.len() + 2);
        pending.push((".".to_string(), meta));
        pending.push(("..".to_string(), parent));
        pending.extend(listing.into_iter().map(|e| (e.name, e.meta)));
        pending.reverse();
        let h = self
            .insert(Open::Dir {
                pending,
                _charge: charge,
            })
            .map_err(|(_, full)| full)?;
        Ok(handle_reply(id, h))
    }

    fn readdir(&self, id: u32, h: u32) -> Reply {
        let mut table = self.table();
        let Some(Open::Dir { pending, .. }) = table.handles.get_mut(&h) else {
            return Err(bad_handle());
        };
        if pending.is_empty() {
            return Err(Fail(Code::Eof, "End of file".into()));
        }
        let now = SystemTime::now();
        let mut w = Writer::new(wire::FXP_NAME, Some(id));
        let count_at = w.len();
        w.u32(0);
        let mut count: u32 = 0;
        while let Some((name, meta)) = pending.pop() {
            w.string(&name)
                .string(&wire::long_name(&name, &meta, now))
                .attrs(&Attrs::of(&meta));
            count += 1;
            if count as usize >= READDIR_BATCH || w.len() > MAX_PACKET / 2 {
                break;
            }
        }
        let mut pkt = w.finish();
        pkt[count_at..count_at + 4].copy_from_slice(&count.to_be_bytes());
        Ok(pkt)
    }

    async fn fsetstat(&self, h: u32, attrs: Attrs) -> Result<(), Fail> {
        let (file, path) = match self.table().handles.get(&h) {
            Some(Open::File { file, path }) => (file.clone(), path.clone()),
            Some(Open::Dir { .. }) => return Err(FsError::Unsupported.into()),
            None => return Err(bad_handle()),
        };
        let mut file = file.lock().await;
        let file = open_file(&mut file)?;
        if let Some(size) = attrs.size {
            if file.options().write {
                file.set_len(size).await?;
            } else {
                self.fs.truncate(&path, size).await?;
            }
        }
        let rest = Attrs {
            size: None,
            ..attrs
        };
        self.set_attrs(&path, rest).await
    }

    /// Applies `attrs` to `path`: size, owner (only the session's own), mode, times.
    async fn set_attrs(&self, path: &str, attrs: Attrs) -> Result<(), Fail> {
        if let Some(size) = attrs.size {
            self.fs.truncate(path, size).await?;
        }
        if let Some((uid, gid)) = attrs.uid_gid
            && (uid != SESSION_UID || gid != SESSION_GID)
        {
            return Err(FsError::PermissionDenied.into());
        }
        if let Some(mode) = attrs.permissions {
            self.fs.chmod(path, mode & 0o7777).await?;
        }
        if let Some((_, mtime)) = attrs.times {
            self.fs.set_mtime(path, wire::time_of(mtime)).await?;
        }
        Ok(())
    }

    /// `realpath` as OpenSSH's server answers it: `.`/`..` and symlinks resolved; a last
    /// component that does not exist yet is kept as named (a client asks before creating).
    async fn realpath(&self, path: &str) -> Result<String, Fail> {
        let path = if path.is_empty() { "." } else { path };
        let abs = absolute(path);
        match self.fs.canonicalize(&abs).await {
            Ok(real) => Ok(real),
            Err(FsError::NotFound) => {
                let norm = abs.trim_end_matches('/');
                let (parent, name) = norm.rsplit_once('/').unwrap_or(("", norm));
                if matches!(name, "" | "." | "..") {
                    return Err(FsError::NotFound.into());
                }
                let parent = self
                    .fs
                    .canonicalize(if parent.is_empty() { "/" } else { parent })
                    .await?;
                Ok(forkbox_commands::fs::join(&parent, name))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn extended(&self, id: u32, name: &str, r: &mut Reader<'_>) -> Reply {
        match name {
            "posix-rename@openssh.com" => {
                let from = absolute(r.string()?);
                let to = absolute(r.string()?);
                self.fs.rename(&from, &to).await?;
                ok(id)
            }
            "statvfs@openssh.com" => {
                let path = absolute(r.string()?);
                self.fs.stat(&path).await?;
                self.statvfs(id).await
            }
            "fstatvfs@openssh.com" => {
                let h = handle_id(r)?;
                if !self.table().handles.contains_key(&h) {
                    return Err(bad_handle());
                }
                self.statvfs(id).await
            }
            "fsync@openssh.com" => {
                let h = handle_id(r)?;
                let file = self.file(h)?;
                let mut file = file.lock().await;
                open_file(&mut file)?.sync().await?;
                ok(id)
            }
            "hardlink@openssh.com" => Err(Fail(
                Code::OpUnsupported,
                "hard links are not supported".into(),
            )),
            "expand-path@openssh.com" => {
                let path = r.string()?;
                let expanded = match path.strip_prefix('~') {
                    // The session's one user has `/` as home.
                    Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                        format!("/{}", rest.trim_start_matches('/'))
                    }
                    Some(_) => return Err(FsError::NotFound.into()),
                    None => path.to_string(),
                };
                let real = self.realpath(&expanded).await?;
                Ok(name_reply(id, &real))
            }
            "limits@openssh.com" => {
                let mut w = Writer::new(wire::FXP_EXTENDED_REPLY, Some(id));
                w.u64(MAX_PACKET as u64)
                    .u64(MAX_IO as u64)
                    .u64(MAX_IO as u64)
                    .u64(MAX_HANDLES as u64);
                Ok(w.finish())
            }
            _ => Err(Fail(
                Code::OpUnsupported,
                format!("Operation unsupported ({name})"),
            )),
        }
    }

    /// `statvfs` of the session's filesystem: its quota as the disk's size.
    async fn statvfs(&self, id: u32) -> Reply {
        const BLOCK: u64 = 4096;
        let usage = self.fs.usage().await?;
        // Without a limit, a size no upload reaches.
        let limit = usage.bytes_limit.unwrap_or(1 << 50);
        let blocks = limit / BLOCK;
        let free = limit.saturating_sub(usage.bytes_used) / BLOCK;
        let files = usage.objects_limit.unwrap_or(1 << 32);
        let ffree = files.saturating_sub(usage.objects_used);
        let mut w = Writer::new(wire::FXP_EXTENDED_REPLY, Some(id));
        w.u64(BLOCK) // f_bsize
            .u64(BLOCK) // f_frsize
            .u64(blocks)
            .u64(free) // f_bfree
            .u64(free) // f_bavail
            .u64(files)
            .u64(ffree)
            .u64(ffree) // f_favail
            .u64(0) // f_fsid
            .u64(0) // f_flag
            .u64(forkbox_commands::fs::NAME_MAX as u64);
        Ok(w.finish())
    }

    /// Fails with "too many open handles" when the table is full.
    fn room(&self) -> Result<(), Fail> {
        if self.table().handles.len() >= MAX_HANDLES {
            return Err(table_full());
        }
        Ok(())
    }

    /// Puts `open` in the table under a new handle; gives it back if the table filled up
    /// since [`Sftp::room`] said there was room.
    fn insert(&self, open: Open) -> Result<u32, (Open, Fail)> {
        let mut t = self.table();
        if t.handles.len() >= MAX_HANDLES {
            return Err((open, table_full()));
        }
        // Ids are never reused while open: the table holds far fewer than 2^32.
        while t.handles.contains_key(&t.next_handle) {
            t.next_handle = t.next_handle.wrapping_add(1);
        }
        let h = t.next_handle;
        t.next_handle = t.next_handle.wrapping_add(1);
        t.handles.insert(h, open);
        Ok(h)
    }

    fn file(&self, h: u32) -> Result<SharedFile, Fail> {
        match self.table().handles.get(&h) {
            Some(Open::File { file, .. }) => Ok(file.clone()),
            Some(Open::Dir { .. }) => Err(FsError::IsADirectory.into()),
            None => Err(bad_handle()),
        }
    }
}

/// The file behind a locked handle, unless a close took it meanwhile.
fn open_file(slot: &mut Option<FileHandle>) -> Result<&mut FileHandle, Fail> {
    slot.as_mut().ok_or_else(bad_handle)
}

fn table_full() -> Fail {
    Fail(
        Code::Failure,
        format!("Too many open files (at most {MAX_HANDLES} handles per SFTP session)"),
    )
}

/// The server's `SSH_FXP_VERSION`: version 3 and the extensions it answers.
fn version() -> Vec<u8> {
    let mut w = Writer::new(wire::FXP_VERSION, None);
    w.u32(3);
    for (name, version) in [
        ("posix-rename@openssh.com", "1"),
        ("statvfs@openssh.com", "2"),
        ("fstatvfs@openssh.com", "2"),
        ("hardlink@openssh.com", "1"),
        ("fsync@openssh.com", "1"),
        ("expand-path@openssh.com", "1"),
        ("limits@openssh.com", "1"),
    ] {
        w.string(name).string(version);
    }
    w.finish()
}

/// A client path as the filesystem takes it: relative ones start at `/`.
fn absolute(path: &str) -> String {
    forkbox_commands::fs::join("/", path)
}

fn handle_id(r: &mut Reader<'_>) -> Result<u32, Fail> {
    let b = r.bytes()?;
    let b: [u8; 4] = b.try_into().map_err(|_| bad_handle())?;
    Ok(u32::from_be_bytes(b))
}

fn bad_handle() -> Fail {
    Fail(Code::Failure, "Invalid handle".into())
}

fn ok(id: u32) -> Reply {
    Ok(wire::status(id, Code::Ok, "Success"))
}

fn handle_reply(id: u32, h: u32) -> Vec<u8> {
    let mut w = Writer::new(wire::FXP_HANDLE, Some(id));
    w.bytes(&h.to_be_bytes());
    w.finish()
}

fn attrs_reply(id: u32, meta: &Metadata) -> Vec<u8> {
    let mut w = Writer::new(wire::FXP_ATTRS, Some(id));
    w.attrs(&Attrs::of(meta));
    w.finish()
}

/// A `SSH_FXP_NAME` with one name and no attributes (`realpath`, `readlink`).
fn name_reply(id: u32, name: &str) -> Vec<u8> {
    let mut w = Writer::new(wire::FXP_NAME, Some(id));
    w.u32(1).string(name).string(name).attrs(&Attrs::default());
    w.finish()
}

/// Serves SFTP on a channel until the client closes it or the session ends: frames the
/// channel's data into requests, answers each in order, and closes every handle the client
/// left open (storing what was written) when it leaves.
///
/// Reading the channel and answering run side by side. russh's connection loop waits
/// while a channel's queue of incoming messages is full, and it is that loop which
/// takes in the client's window adjustments: were the requests read only between
/// answers, an answer waiting for window (a client with more reads in flight than its
/// window holds, as OpenSSH's `sftp` has with large reads) would wait for ever. So
/// requests are taken off the channel as they come and queued, up to [`MAX_QUEUED`]
/// bytes; a client that sends more without reading its answers loses the subsystem.
pub async fn serve(
    fs: Arc<dyn FileSystem>,
    budget: Budget,
    rx: ChannelReadHalf,
    tx: &ChannelWriteHalf<Msg>,
    cancel: CancellationToken,
    activity: Arc<Activity>,
    outbound: &Outbound,
) {
    let (queue_tx, queue_rx) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    let stop = cancel.child_token();
    let reader = read_requests(rx, queue_tx, queued.clone(), stop.clone(), activity);
    let sftp = Sftp::new(fs, budget);
    let answer = answer_requests(&sftp, queue_rx, queued, tx, outbound, stop.clone());
    let ((), clean) = tokio::join!(reader, answer);
    // A session that is ending deletes its fork: nothing left to store.
    if !cancel.is_cancelled() {
        if !clean {
            tracing::info!("sftp: subsystem ended early");
        }
        sftp.close_all().await;
    }
}

/// Takes requests off the channel into the queue until the client's EOF, or until `stop`.
async fn read_requests(
    mut rx: ChannelReadHalf,
    queue: mpsc::UnboundedSender<Bytes>,
    queued: Arc<AtomicUsize>,
    stop: CancellationToken,
    activity: Arc<Activity>,
) {
    let mut buf = BytesMut::new();
    loop {
        let msg = tokio::select! {
            msg = rx.wait() => msg,
            _ = stop.cancelled() => return,
        };
        match msg {
            Some(ChannelMsg::Data { data }) => {
                activity.touch();
                buf.extend_from_slice(&data);
            }
            Some(ChannelMsg::Eof | ChannelMsg::Close) | None => return,
            Some(_) => continue,
        }
        loop {
            match next_packet(&mut buf) {
                Ok(Some(p)) => {
                    let total = queued.fetch_add(p.len(), Ordering::SeqCst) + p.len();
                    if total > MAX_QUEUED {
                        tracing::info!(total, "sftp: too many requests unanswered; closing");
                        stop.cancel();
                        return;
                    }
                    if queue.send(p).is_err() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(len) => {
                    tracing::info!(len, "sftp: request length out of bounds; closing");
                    stop.cancel();
                    return;
                }
            }
        }
    }
}

/// Answers queued requests until the queue ends (the client's EOF) or `stop`, up to
/// [`MAX_IN_FLIGHT`] at once, each reply sent as soon as it is ready; false when it
/// stopped early. Requests wait for those before them in their lanes ([`lanes_of`]).
async fn answer_requests(
    sftp: &Sftp,
    queue: mpsc::UnboundedReceiver<Bytes>,
    queued: Arc<AtomicUsize>,
    tx: &ChannelWriteHalf<Msg>,
    outbound: &Outbound,
    stop: CancellationToken,
) -> bool {
    // A reply that waits (for window) lets other channels' stdin readers keep russh's
    // loop going, so the client's window grant is read (see crate::session::flow).
    let send = |reply: Bytes| outbound.send(tx.data_bytes(reply)).map(|sent| sent.is_ok());
    answer_with(sftp, queue, queued, stop, send).await
}

/// [`answer_requests`] with the replies going to `send` (false: the client is gone).
async fn answer_with<F, S>(
    sftp: &Sftp,
    mut queue: mpsc::UnboundedReceiver<Bytes>,
    queued: Arc<AtomicUsize>,
    stop: CancellationToken,
    mut send: S,
) -> bool
where
    S: FnMut(Bytes) -> F,
    F: std::future::Future<Output = bool>,
{
    let mut running = FuturesUnordered::new();
    // The last request taken in each lane: the next one in that lane waits for it.
    let mut tails: HashMap<Lane, Done> = HashMap::new();
    let mut ended = false;
    loop {
        if ended && running.is_empty() {
            return true;
        }
        tokio::select! {
            _ = stop.cancelled() => return false,
            packet = queue.recv(), if !ended && running.len() < MAX_IN_FLIGHT => {
                let Some(packet) = packet else {
                    ended = true;
                    continue;
                };
                let lanes = lanes_of(&packet);
                let before: Vec<Done> = lanes.iter().filter_map(|l| tails.get(l).cloned()).collect();
                let (done_tx, done_rx) = oneshot::channel::<()>();
                let done: Done = done_rx.map(|_| ()).boxed().shared();
                for lane in lanes {
                    tails.insert(lane, done.clone());
                }
                // Lanes whose last request has been answered need no entry.
                if tails.len() > 2 * MAX_IN_FLIGHT {
                    tails.retain(|_, d| d.peek().is_none());
                }
                running.push(async move {
                    for d in before {
                        d.await;
                    }
                    let reply = sftp.request(&packet).await;
                    drop(done_tx);
                    (packet.len(), reply)
                });
            }
            Some((len, reply)) = running.next(), if !running.is_empty() => {
                queued.fetch_sub(len, Ordering::SeqCst);
                if !send(Bytes::from(reply)).await {
                    stop.cancel();
                    return false;
                }
            }
        }
    }
}

/// Resolves once a request has been answered.
type Done = futures::future::Shared<futures::future::BoxFuture<'static, ()>>;

/// What a request must wait for: the requests before it on the same handle, or, for one
/// that names paths, those before it that name paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Lane {
    Paths,
    Handle(u32),
}

/// The lanes of a request (the packet without its length field): a handle's reads,
/// writes, `fstat`s and listings go in its lane; its close, `fsetstat` and `fsync` in its
/// lane and the paths' (a rename after a close sees the file closed); everything else in
/// the paths' lane, in order, as before there were lanes. A packet too short to say goes
/// in the paths' lane, where it is answered "Bad message".
fn lanes_of(packet: &[u8]) -> Vec<Lane> {
    use wire::*;
    let mut r = Reader::new(packet);
    let (Ok(kind), Ok(_id)) = (r.u8(), r.u32()) else {
        return vec![Lane::Paths];
    };
    let (handle_first, barrier) = match kind {
        FXP_READ | FXP_WRITE | FXP_FSTAT | FXP_READDIR => (true, false),
        FXP_CLOSE | FXP_FSETSTAT => (true, true),
        FXP_EXTENDED => match r.string() {
            Ok("fstatvfs@openssh.com") => (true, false),
            Ok("fsync@openssh.com") => (true, true),
            _ => (false, true),
        },
        _ => (false, true),
    };
    let handle = if handle_first {
        handle_id(&mut r).ok()
    } else {
        None
    };
    match (handle, barrier) {
        (Some(h), false) => vec![Lane::Handle(h)],
        (Some(h), true) => vec![Lane::Handle(h), Lane::Paths],
        (None, _) => vec![Lane::Paths],
    }
}

/// Takes the next whole request off `buf`, if one is there; `Err(len)` when its length
/// field is out of bounds.
fn next_packet(buf: &mut BytesMut) -> Result<Option<Bytes>, usize> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len == 0 || len > MAX_PACKET {
        return Err(len);
    }
    if buf.len() < 4 + len {
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(len).freeze()))
}

#[cfg(test)]
mod tests;

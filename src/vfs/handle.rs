//! Files open through [`FileSystem::open`]: one shared open file per inode, whatever
//! path or how many handles reach it.
//!
//! An open file reads its stored object until something writes to it; from then on its
//! content is staged (see [`crate::storage::Staged`]) and the staged bytes are the file:
//! every handle on it, `stat` and path reads of the session see them at once. They reach
//! the store on `sync`, on each `close` of a handle that wrote, and before any path call
//! that rewrites the file (`>`, `truncate`, `chmod`, …), so a path call never works on
//! stale content. The open file follows its inode: a rename moves it (it publishes to the
//! new path), and an unlink or a rename over it detaches it — its content is staged then
//! and lives, with what the quota counted for it, until its last handle closes, when it
//! is dropped.
//!
//! Quota: staged bytes beyond what the index already counts for the path are reserved as
//! they come, exactly as for a writer of the path API ([`super::writer`]).

use forkbox_commands::fs::{FileHandle, OpenAction, OpenFile, OpenOptions};
use tokio::sync::Mutex as AsyncMutex;

use super::*;

/// An inode that handles are open on.
pub(super) struct OpenEntry {
    /// Where it is now (root-relative); `None` once unlinked or replaced.
    pub(super) rel: Option<String>,
    /// Handles open on it; the entry goes when the last one closes.
    handles: usize,
    content: Arc<AsyncMutex<Content>>,
}

/// The shared state of one open file.
pub(super) struct Content {
    /// The file's content once written through a handle (or detached from its path).
    staged: Option<Staged>,
    /// True when `staged` holds bytes the store does not have yet.
    dirty: bool,
    /// Bytes the index already counts for the path (what publishing replaces).
    credit: u64,
    /// Room reserved for staged bytes beyond `credit`.
    held: Held,
    /// The node as last seen, for `fstat` once the path is gone.
    last: Node,
}

/// A handle's side of an open file.
struct VfsFile {
    vfs: Vfs,
    ino: u64,
    content: Arc<AsyncMutex<Content>>,
    /// Set once closed, so dropping does not close again.
    closed: bool,
}

impl Vfs {
    /// [`FileSystem::open`] for the fork.
    pub(super) async fn open_file(
        &self,
        path: &VfsPath,
        opts: OpenOptions,
    ) -> FsResult<FileHandle> {
        let follow = if opts.no_follow_last() {
            Follow::No
        } else {
            Follow::Yes
        };
        let r = forkbox_commands::fs::resolve::resolve(&Tree(self), path, follow).await?;
        let action = opts.decide(path, r.node.as_ref().map(|n| n.kind))?;
        let (rel, node) = match (action, r.node) {
            (OpenAction::Create, _) => {
                if r.rel.is_empty() {
                    return Err(FsError::IsADirectory);
                }
                let node = self.create_empty(&r.rel).await?;
                (r.rel, node)
            }
            (_, Some(node)) => (r.rel, node),
            (_, None) => return Err(FsError::NotFound),
        };
        let kind = node.kind;
        let (ino, content) = {
            let mut st = self.state();
            let ino = st.ino(&rel);
            let entry = st.open.entry(ino).or_insert_with(|| OpenEntry {
                rel: Some(rel.clone()),
                handles: 0,
                content: Arc::new(AsyncMutex::new(Content {
                    staged: None,
                    dirty: false,
                    credit: 0,
                    held: Held::none(self),
                    last: node.clone(),
                })),
            });
            entry.handles += 1;
            (ino, entry.content.clone())
        };
        let mut file = VfsFile {
            vfs: self.clone(),
            ino,
            content,
            closed: false,
        };
        if action == OpenAction::Truncate {
            let mut c = file.content.lock().await;
            let cut = match self.ensure_staged(ino, &mut c, false, false).await {
                Ok(()) => set_staged_len(&mut c, 0).await,
                Err(e) => Err(e),
            };
            drop(c);
            if let Err(e) = cut {
                file.release().await;
                return Err(e);
            }
        }
        Ok(FileHandle::new(Box::new(file), opts, kind))
    }

    /// Stores a new empty file at `rel` (mode 0644) and indexes it.
    async fn create_empty(&self, rel: &str) -> FsResult<Node> {
        let now = SystemTime::now();
        let attrs = Attrs {
            mode: Some(DEFAULT_FILE_MODE),
            mtime: Some(now),
            symlink: None,
        };
        let held = self.hold_replacing(rel, 0)?;
        self.upper()
            .store
            .put(&self.upper().key(rel), Bytes::new(), &attrs)
            .await
            .map_err(|e| storage_failure("create", rel, e))?;
        let node = Node {
            kind: FileKind::File,
            len: 0,
            mode: DEFAULT_FILE_MODE,
            mtime: now,
            target: None,
            origin: Origin::Upper,
            stored: true,
        };
        held.land(|st| st.put_upper(rel.to_string(), node.clone()));
        Ok(node)
    }

    /// Where the open file `ino` is now.
    fn open_rel(&self, ino: u64) -> Option<String> {
        self.state().open.get(&ino).and_then(|e| e.rel.clone())
    }

    /// The open file at `rel`, if handles are open on what is there.
    fn open_at(&self, rel: &str) -> Option<(u64, Arc<AsyncMutex<Content>>)> {
        let st = self.state();
        let ino = *st.inos.get(rel)?;
        st.open.get(&ino).map(|e| (ino, e.content.clone()))
    }

    /// Stages the open file's content if it is not yet: empty, or (`copy`) a copy of what
    /// is stored. `force` reserves the copy's room without checking the quota (an unlink
    /// must not fail for want of room it is about to free).
    async fn ensure_staged(
        &self,
        ino: u64,
        c: &mut Content,
        copy: bool,
        force: bool,
    ) -> FsResult<()> {
        if c.staged.is_some() {
            return Ok(());
        }
        let rel = self.open_rel(ino).ok_or(FsError::Io)?;
        let node = self.lookup(&rel).await?.ok_or(FsError::NotFound)?;
        let attrs = Attrs {
            mode: Some(node.mode),
            mtime: None,
            symlink: None,
        };
        c.credit = self.state().upper_cost(&rel);
        let mut staged = self
            .upper()
            .store
            .stage(&self.upper().key(&rel), &attrs)
            .await
            .map_err(|e| storage_failure("open", &rel, e))?;
        if copy && node.len > 0 {
            let need = node.len.saturating_sub(c.credit + c.held.bytes);
            if force {
                c.held.force(need);
            } else if let Err(e) = c.held.grow(need, 0) {
                staged.abort().await;
                return Err(e);
            }
            if let Err(e) = self.copy_content(&rel, &node, &mut staged, u64::MAX).await {
                staged.abort().await;
                return Err(e);
            }
        }
        c.last = node;
        c.staged = Some(staged);
        Ok(())
    }

    /// Stores the open file's staged content at its path (if it has one and the store
    /// lacks some of it). `finish` ends staging: the store then holds the file and reads
    /// go back to it.
    async fn publish(&self, ino: u64, c: &mut Content, finish: bool) -> FsResult<()> {
        let rel = self.open_rel(ino);
        let Some(rel) = rel else {
            // Unlinked: nothing to store.
            return Ok(());
        };
        if !c.dirty {
            if finish && let Some(staged) = c.staged.take() {
                staged.abort().await;
                c.held = Held::none(self);
            }
            return Ok(());
        }
        let Some(staged) = c.staged.as_mut() else {
            return Ok(());
        };
        let len = staged.len();
        let (cost, new_object, mode) = {
            let st = self.state();
            (
                st.upper_cost(&rel),
                !st.upper.contains_key(&rel),
                st.upper.get(&rel).map(|n| n.mode),
            )
        };
        let bytes = len.saturating_sub(cost).saturating_sub(c.held.bytes);
        let objects = u64::from(new_object).saturating_sub(c.held.objects);
        c.held.grow(bytes, objects)?;
        staged.set_key(&self.upper().key(&rel));
        let mode = mode.unwrap_or(c.last.mode);
        let now = SystemTime::now();
        staged.attrs_mut().mode = Some(mode);
        staged.attrs_mut().mtime = Some(now);
        if finish {
            let staged = c.staged.take().ok_or(FsError::Io)?;
            staged
                .close()
                .await
                .map_err(|e| storage_failure("close", &rel, e))?;
        } else {
            staged
                .publish()
                .await
                .map_err(|e| storage_failure("sync", &rel, e))?;
        }
        let node = Node {
            kind: FileKind::File,
            len,
            mode,
            mtime: now,
            target: None,
            origin: Origin::Upper,
            stored: true,
        };
        let held = std::mem::replace(&mut c.held, Held::none(self));
        held.land(|st| st.put_upper(rel, node.clone()));
        c.last = node;
        c.credit = len;
        c.dirty = false;
        Ok(())
    }

    /// Before a path call rewrites the file at `rel` (`>`, truncate, chmod): an open file
    /// there stores what it staged, so the call works on the current content.
    pub(super) async fn flush_open(&self, rel: &str) -> FsResult<()> {
        let Some((ino, content)) = self.open_at(rel) else {
            return Ok(());
        };
        let mut c = content.lock().await;
        self.publish(ino, &mut c, true).await
    }

    /// Before the entry at `rel` goes (unlink, a rename over it): an open file there
    /// keeps its content, staged, and what the quota counted for it, and has no path.
    pub(super) async fn detach_open(&self, rel: &str) -> FsResult<()> {
        let Some((ino, content)) = self.open_at(rel) else {
            return Ok(());
        };
        let mut c = content.lock().await;
        if c.last.kind == FileKind::File {
            self.ensure_staged(ino, &mut c, true, true).await?;
            // The entry's bytes leave the index; the open file holds them instead.
            let credit = std::mem::take(&mut c.credit);
            c.held.force(credit);
            c.dirty = true;
        }
        self.state().forget_ino(rel);
        Ok(())
    }

    /// The length of the open file at `rel` when its content is staged (it may differ
    /// from what the index says).
    pub(super) async fn open_len(&self, rel: &str) -> Option<u64> {
        let (_, content) = self.open_at(rel)?;
        let c = content.lock().await;
        c.staged.as_ref().map(Staged::len)
    }

    /// A read of the open file at `rel` from its staged content, if it has any.
    pub(super) async fn read_open(
        &self,
        rel: &str,
        offset: u64,
        len: usize,
    ) -> Option<FsResult<Bytes>> {
        let (_, content) = self.open_at(rel)?;
        let mut c = content.lock().await;
        let staged = c.staged.as_mut()?;
        Some(
            staged
                .read_at(offset, len.min(MAX_READ))
                .await
                .map_err(|e| storage_failure("read", rel, e)),
        )
    }

    /// Stores every open file's staged content (`sync`).
    pub(super) async fn sync_open(&self) -> FsResult<()> {
        let open: Vec<(u64, Arc<AsyncMutex<Content>>)> = self
            .state()
            .open
            .iter()
            .map(|(ino, e)| (*ino, e.content.clone()))
            .collect();
        for (ino, content) in open {
            let mut c = content.lock().await;
            self.publish(ino, &mut c, false).await?;
        }
        Ok(())
    }
}

/// Cuts or extends the staged content, reserving growth.
async fn set_staged_len(c: &mut Content, len: u64) -> FsResult<()> {
    let need = len.saturating_sub(c.credit + c.held.bytes);
    c.held.grow(need, 0)?;
    let staged = c.staged.as_mut().ok_or(FsError::Io)?;
    staged
        .set_len(len)
        .await
        .map_err(|e| storage_failure("truncate", "", e))?;
    c.dirty = true;
    Ok(())
}

impl VfsFile {
    /// Writes at `offset` (`None`: at the end); gives the offset written at.
    async fn write(&mut self, offset: Option<u64>, data: &[u8]) -> FsResult<u64> {
        let mut c = self.content.lock().await;
        self.vfs
            .ensure_staged(self.ino, &mut c, true, false)
            .await?;
        let len = c.staged.as_ref().map(Staged::len).unwrap_or(0);
        let at = offset.unwrap_or(len);
        let end = at.checked_add(data.len() as u64).ok_or(FsError::TooLarge)?;
        let need = end.max(len).saturating_sub(c.credit + c.held.bytes);
        c.held.grow(need, 0)?;
        let staged = c.staged.as_mut().ok_or(FsError::Io)?;
        staged
            .write_at(at, data)
            .await
            .map_err(|e| storage_failure("write", "", e))?;
        c.dirty = true;
        Ok(at)
    }

    /// Gives the handle up: the last one drops the open file (and its reservation).
    async fn release(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        let last = {
            let mut st = self.vfs.state();
            match st.open.get_mut(&self.ino) {
                Some(e) => {
                    e.handles = e.handles.saturating_sub(1);
                    if e.handles == 0 {
                        st.open.remove(&self.ino);
                        true
                    } else {
                        false
                    }
                }
                None => false,
            }
        };
        if last {
            let mut c = self.content.lock().await;
            if let Some(staged) = c.staged.take() {
                staged.abort().await;
            }
            c.held = Held::none(&self.vfs);
        }
    }
}

impl Drop for VfsFile {
    /// A handle dropped without `close` (its command was cancelled) gives its share of
    /// the open file up; what it wrote and nobody stored is dropped with the last one.
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let mut st = self.vfs.state();
        if let Some(e) = st.open.get_mut(&self.ino) {
            e.handles = e.handles.saturating_sub(1);
            if e.handles == 0
                && let Some(e) = st.open.remove(&self.ino)
                && let Ok(rt) = tokio::runtime::Handle::try_current()
            {
                rt.spawn(async move {
                    let mut c = e.content.lock().await;
                    if let Some(staged) = c.staged.take() {
                        staged.abort().await;
                    }
                });
            }
        }
    }
}

#[async_trait]
impl OpenFile for VfsFile {
    async fn read_at(&mut self, offset: u64, len: usize) -> FsResult<Bytes> {
        let mut c = self.content.lock().await;
        if let Some(staged) = c.staged.as_mut() {
            return staged
                .read_at(offset, len.min(MAX_READ))
                .await
                .map_err(|e| storage_failure("read", "", e));
        }
        drop(c);
        let rel = self.vfs.open_rel(self.ino).ok_or(FsError::Io)?;
        let node = self.vfs.lookup(&rel).await?.ok_or(FsError::Io)?;
        if node.kind == FileKind::Dir {
            return Err(FsError::IsADirectory);
        }
        self.vfs.read_node(&rel, &node, offset, len).await
    }

    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        self.write(Some(offset), data).await.map(|_| ())
    }

    async fn append(&mut self, data: &[u8]) -> FsResult<u64> {
        self.write(None, data).await
    }

    async fn stat(&mut self) -> FsResult<Metadata> {
        let c = self.content.lock().await;
        let staged_len = c.staged.as_ref().map(Staged::len);
        let rel = self.vfs.open_rel(self.ino);
        let mut meta = match &rel {
            Some(rel) => match self.vfs.lookup(rel).await? {
                Some(node) => node.meta(self.ino),
                None => c.last.meta(self.ino),
            },
            None => {
                let mut m = c.last.meta(self.ino);
                m.nlink = 0;
                m
            }
        };
        if let Some(len) = staged_len {
            meta.len = len;
        }
        Ok(meta)
    }

    async fn set_len(&mut self, len: u64) -> FsResult<()> {
        let mut c = self.content.lock().await;
        self.vfs
            .ensure_staged(self.ino, &mut c, len > 0, false)
            .await?;
        set_staged_len(&mut c, len).await
    }

    async fn sync(&mut self) -> FsResult<()> {
        let mut c = self.content.lock().await;
        self.vfs.publish(self.ino, &mut c, false).await
    }

    async fn close(mut self: Box<Self>) -> FsResult<()> {
        let stored = {
            let mut c = self.content.lock().await;
            self.vfs.publish(self.ino, &mut c, false).await
        };
        self.release().await;
        stored
    }
}

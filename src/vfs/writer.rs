//! A file being written through the VFS: staged in the store, charged to the quota as
//! data arrives, published on close.

use super::*;

/// A file being written through the VFS. Its content is staged (see
/// [`crate::storage::Staged`]) and becomes visible and durable when `sync` or `close`
/// succeeds; room for it is reserved against the quota write by write, before the data is
/// staged.
pub(super) struct VfsWriter {
    pub(super) vfs: Vfs,
    pub(super) rel: String,
    pub(super) staged: Option<Staged>,
    /// Where `write` goes: an offset (update mode), or (`None`) the end.
    pub(super) pos: Option<u64>,
    pub(super) mode: u32,
    /// Bytes of this path the index already counts (kept content of an upper file, or
    /// what the last `sync` published): staging them costs no more quota.
    pub(super) credit: u64,
    /// Room reserved for what is staged beyond `credit`.
    pub(super) held: Held,
    /// True when opening left an empty file in the index (`>`, a new file); false when
    /// the index keeps the old content until the file is published.
    pub(super) truncated: bool,
    /// Set once a write failed: the file was settled, and every later call fails alike.
    pub(super) failed: Option<FsError>,
}

impl VfsWriter {
    fn staged(&mut self) -> FsResult<&mut Staged> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.staged.as_mut().ok_or(FsError::InvalidArgument)
    }

    /// Gives the file up after a failed write, leaving the index and the store agreeing
    /// and the usage exact: a truncated or new file stays empty (as `>` left it); an
    /// append leaves the file as it was.
    async fn settle(&mut self, err: FsError) -> FsError {
        tracing::info!(path = %self.rel, error = %err, "write failed; file given up");
        let held = std::mem::replace(&mut self.held, Held::none(&self.vfs));
        if let Some(w) = self.staged.take() {
            w.abort().await;
        }
        if self.truncated {
            // Store the empty file the index shows, over any older content.
            let attrs = Attrs {
                mode: Some(self.mode),
                mtime: None,
                symlink: None,
            };
            let layer = self.vfs.upper();
            match layer
                .store
                .put(&layer.key(&self.rel), Bytes::new(), &attrs)
                .await
            {
                Ok(()) => {
                    let node = self.node(0);
                    held.land(|st| st.put_upper(self.rel.clone(), node))
                }
                Err(e) => {
                    storage_failure("write", &self.rel, e);
                }
            }
        }
        self.failed = Some(err.clone());
        err
    }

    fn node(&self, len: u64) -> Node {
        Node {
            kind: FileKind::File,
            len,
            mode: self.mode,
            mtime: SystemTime::now(),
            target: None,
            origin: Origin::Upper,
            stored: true,
        }
    }

    /// Reserves what growing the staged content to `len` bytes costs beyond what is held.
    fn reserve_to(&mut self, len: u64) -> FsResult<()> {
        let need = len
            .saturating_sub(self.credit)
            .saturating_sub(self.held.bytes);
        self.held.grow(need, 0)
    }

    async fn stage_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        let staged = self.staged()?;
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or(FsError::TooLarge)?;
        let new_len = staged.len().max(end);
        let result = match self.reserve_to(new_len) {
            Ok(()) => self
                .staged()?
                .write_at(offset, data)
                .await
                .map_err(|e| storage_failure("write", &self.rel, e)),
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => Ok(()),
            Err(e) => Err(self.settle(e).await),
        }
    }

    /// Reserves what publishing the staged content costs now (the entry it replaces may
    /// have shrunk or gone since the writer opened: a truncate or unlink meanwhile).
    fn reserve_publish(&mut self, len: u64) -> FsResult<()> {
        let (cost, new_object) = {
            let st = self.vfs.state();
            (st.upper_cost(&self.rel), !st.upper.contains_key(&self.rel))
        };
        let bytes = len.saturating_sub(cost).saturating_sub(self.held.bytes);
        let objects = u64::from(new_object).saturating_sub(self.held.objects);
        self.held.grow(bytes, objects)
    }

    /// Records the published content in the index and gives the reservation back.
    fn land(&mut self, len: u64) {
        let held = std::mem::replace(&mut self.held, Held::none(&self.vfs));
        let node = self.node(len);
        held.land(|st| st.put_upper(self.rel.clone(), node));
    }
}

#[async_trait]
impl WriteHandle for VfsWriter {
    async fn write(&mut self, data: &[u8]) -> FsResult<()> {
        let at = match self.pos {
            Some(p) => p,
            None => self.staged()?.len(),
        };
        self.stage_at(at, data).await?;
        if let Some(p) = &mut self.pos {
            *p += data.len() as u64;
        }
        Ok(())
    }

    async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
        self.stage_at(offset, data).await
    }

    async fn sync(&mut self) -> FsResult<()> {
        let len = self.staged()?.len();
        if let Err(e) = self.reserve_publish(len) {
            return Err(self.settle(e).await);
        }
        self.staged()?
            .publish()
            .await
            .map_err(|e| storage_failure("sync", &self.rel, e))?;
        self.land(len);
        // The index now counts the published bytes; the writer goes on from there.
        self.credit = len;
        self.truncated = false;
        Ok(())
    }

    async fn close(mut self: Box<Self>) -> FsResult<()> {
        let len = self.staged()?.len();
        if let Err(e) = self.reserve_publish(len) {
            return Err(self.settle(e).await);
        }
        let staged = self.staged.take().ok_or(FsError::InvalidArgument)?;
        staged
            .close()
            .await
            .map_err(|e| storage_failure("close", &self.rel, e))?;
        self.land(len);
        Ok(())
    }
}

impl Drop for VfsWriter {
    /// A writer dropped without `close` (its command was cancelled) gives its staged
    /// content up in the background; its reservation goes back when `held` drops.
    fn drop(&mut self) {
        if let Some(w) = self.staged.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(w.abort());
        }
    }
}

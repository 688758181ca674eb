//! The filesystem port: [`FileSystem`] for [`Vfs`], what the shell, the commands and
//! later the WASI host and SFTP see.

use forkbox_commands::fs::{FileHandle, OpenOptions, VfsPath};

use super::*;

#[async_trait]
impl FileSystem for Vfs {
    async fn stat(&self, path: &str) -> FsResult<Metadata> {
        let (rel, node) = self.existing(path, true).await?;
        Ok(self.meta_of(&rel, &node).await)
    }

    async fn lstat(&self, path: &str) -> FsResult<Metadata> {
        let (rel, node) = self.existing(path, false).await?;
        Ok(self.meta_of(&rel, &node).await)
    }

    async fn read_at(&self, path: &str, offset: u64, len: usize) -> FsResult<Bytes> {
        let (rel, node) = self.existing(path, true).await?;
        if node.kind == FileKind::Dir {
            return Err(FsError::IsADirectory);
        }
        if let Some(read) = self.read_open(&rel, offset, len).await {
            return read;
        }
        self.read_node(&rel, &node, offset, len).await
    }

    async fn open(&self, path: &VfsPath, opts: OpenOptions) -> FsResult<FileHandle> {
        self.open_file(path, opts).await
    }

    async fn open_write(&self, path: &str, mode: WriteMode) -> FsResult<Box<dyn WriteHandle>> {
        let (rel, node) = self.resolve(path, true).await?;
        if rel.is_empty() {
            return Err(FsError::IsADirectory);
        }
        self.flush_open(&rel).await?;
        if let Some(n) = &node {
            if n.kind == FileKind::Dir {
                return Err(FsError::IsADirectory);
            }
            if mode == WriteMode::CreateNew {
                return Err(FsError::AlreadyExists);
            }
        }
        let file_mode = node.as_ref().map(|n| n.mode).unwrap_or(DEFAULT_FILE_MODE);
        let attrs = Attrs {
            mode: Some(file_mode),
            mtime: None,
            symlink: None,
        };
        // Append and update keep the current content; everything else starts empty.
        let keep = matches!(mode, WriteMode::Append | WriteMode::Update) && node.is_some();
        // Room for what the writer starts with: kept content costs nothing for an upper
        // file (the index counts it already: `credit`) and its full size for a base file
        // (copy-up); anything else costs one object if the path is new.
        let credit = if keep {
            self.state().upper_cost(&rel)
        } else {
            0
        };
        let start_len = match (&node, keep) {
            (Some(n), true) => n.len,
            _ => 0,
        };
        let held = self.hold_replacing(&rel, start_len)?;
        let key = self.upper().key(&rel);
        let mut staged = self
            .upper()
            .store
            .stage(&key, &attrs)
            .await
            .map_err(|e| storage_failure("open", &rel, e))?;
        let held = match &node {
            Some(n) if keep => {
                if let Err(e) = self.copy_content(&rel, n, &mut staged, u64::MAX).await {
                    staged.abort().await;
                    return Err(e);
                }
                held
            }
            _ => {
                // Truncation is visible at once, as with O_TRUNC: the file reads as empty
                // until the writer closes.
                held.land(|st| {
                    st.put_upper(
                        rel.clone(),
                        Node {
                            kind: FileKind::File,
                            len: 0,
                            mode: file_mode,
                            mtime: SystemTime::now(),
                            target: None,
                            origin: Origin::Upper,
                            stored: false,
                        },
                    )
                });
                Held::none(self)
            }
        };
        Ok(Box::new(VfsWriter {
            vfs: self.clone(),
            rel,
            staged: Some(staged),
            pos: (mode == WriteMode::Update).then_some(0),
            mode: file_mode,
            credit,
            held,
            truncated: !keep,
            failed: None,
        }))
    }

    async fn read_dir(&self, path: &str) -> FsResult<Vec<DirEntry>> {
        let rel = self.existing_dir(path).await?;
        self.list_dir(&rel).await
    }

    async fn read_dir_kinds(&self, path: &str) -> FsResult<Vec<(String, FileKind)>> {
        let rel = self.existing_dir(path).await?;
        self.list_kinds(&rel).await
    }

    async fn mkdir(&self, path: &str) -> FsResult<()> {
        let (rel, node) = self.resolve(path.trim_end_matches('/'), false).await?;
        if node.is_some() || rel.is_empty() {
            return Err(FsError::AlreadyExists);
        }
        self.make_dir(&rel, DEFAULT_DIR_MODE).await
    }

    async fn rmdir(&self, path: &str) -> FsResult<()> {
        let (rel, node) = self.existing(path.trim_end_matches('/'), false).await?;
        if rel.is_empty() {
            return Err(FsError::PermissionDenied);
        }
        if node.kind != FileKind::Dir {
            return Err(FsError::NotADirectory);
        }
        if !self.list_dir(&rel).await?.is_empty() {
            return Err(FsError::NotEmpty);
        }
        self.remove_entry(&rel, &node).await
    }

    async fn unlink(&self, path: &str) -> FsResult<()> {
        let (rel, node) = self.existing(path, false).await?;
        if node.kind == FileKind::Dir {
            return Err(FsError::IsADirectory);
        }
        self.detach_open(&rel).await?;
        self.remove_entry(&rel, &node).await
    }

    async fn rename(&self, from: &str, to: &str) -> FsResult<()> {
        let (src, node) = self.existing(from.trim_end_matches('/'), false).await?;
        let (dst, existing) = self.resolve(to.trim_end_matches('/'), false).await?;
        if src == dst || src.is_empty() || dst.is_empty() || dst.starts_with(&format!("{src}/")) {
            return self.rename_entry(&src, node, &dst, existing).await;
        }
        // The inode numbers (and open files) under `src` move with it.
        let taken = self.state().take_inos(&src);
        let moved = self.rename_entry(&src, node, &dst, existing).await;
        let mut st = self.state();
        match moved {
            Ok(()) => st.put_inos(taken, &src, &dst),
            Err(_) => st.put_inos(taken, &src, &src),
        }
        moved
    }

    async fn symlink(&self, target: &str, link: &str) -> FsResult<()> {
        let (rel, node) = self.resolve(link, false).await?;
        if node.is_some() || rel.is_empty() {
            return Err(FsError::AlreadyExists);
        }
        if target.is_empty() {
            return Err(FsError::NotFound);
        }
        self.put_symlink(&rel, target).await
    }

    async fn readlink(&self, path: &str) -> FsResult<String> {
        let (_, node) = self.existing(path, false).await?;
        match (node.kind, node.target) {
            (FileKind::Symlink, Some(t)) => Ok(t),
            _ => Err(FsError::InvalidArgument),
        }
    }

    async fn chmod(&self, path: &str, mode: u32) -> FsResult<()> {
        self.set_attrs(path, |n| n.mode = mode & 0o7777).await
    }

    async fn set_mtime(&self, path: &str, mtime: SystemTime) -> FsResult<()> {
        self.set_attrs(path, |n| n.mtime = mtime).await
    }

    async fn truncate(&self, path: &str, len: u64) -> FsResult<()> {
        let (rel, node) = self.existing(path, true).await?;
        if node.kind == FileKind::Dir {
            return Err(FsError::IsADirectory);
        }
        self.flush_open(&rel).await?;
        let node = self.lookup(&rel).await?.ok_or(FsError::NotFound)?;
        self.rewrite_file(
            &rel,
            &node,
            &rel,
            node.len,
            len,
            node.mode,
            SystemTime::now(),
        )
        .await
    }

    async fn canonicalize(&self, path: &str) -> FsResult<String> {
        let (rel, _) = self.existing(path, true).await?;
        Ok(format!("/{rel}"))
    }

    /// Stores what open files staged; files of the path API are stored on close.
    async fn sync_all(&self) -> FsResult<()> {
        self.sync_open().await
    }

    /// What the layer holds plus what operations in flight reserved.
    async fn usage(&self) -> FsResult<Usage> {
        let st = self.state();
        Ok(Usage {
            bytes_used: st.upper_bytes.saturating_add(st.reserved_bytes),
            bytes_limit: self.inner.quota.bytes,
            objects_used: st.objects().saturating_add(st.reserved_objects),
            objects_limit: self.inner.quota.objects,
        })
    }
}

impl Vfs {
    /// What `stat` shows of `node` at `rel`: its inode number, and the size of an open
    /// file's staged content.
    async fn meta_of(&self, rel: &str, node: &Node) -> Metadata {
        let ino = self.state().ino(rel);
        let mut meta = node.meta(ino);
        if node.kind == FileKind::File
            && let Some(len) = self.open_len(rel).await
        {
            meta.len = len;
        }
        meta
    }

    /// Renames `src` (holding `node`) to `dst` (holding `existing`, if anything).
    async fn rename_entry(
        &self,
        src: &str,
        node: Node,
        dst: &str,
        existing: Option<Node>,
    ) -> FsResult<()> {
        if src == dst {
            return Ok(());
        }
        if src.is_empty() || dst.is_empty() || dst.starts_with(&format!("{src}/")) {
            return Err(FsError::InvalidArgument);
        }
        if node.kind == FileKind::Dir {
            if let Some(e) = &existing {
                if e.kind != FileKind::Dir {
                    return Err(FsError::NotADirectory);
                }
                if !self.list_dir(dst).await?.is_empty() {
                    return Err(FsError::NotEmpty);
                }
                self.remove_entry(dst, e).await?;
            }
            let mut budget = MAX_RENAME_ENTRIES;
            self.count_tree(src, &mut budget).await?;
            return self.move_tree(src, &node, dst).await;
        }
        if existing.as_ref().is_some_and(|e| e.kind == FileKind::Dir) {
            return Err(FsError::IsADirectory);
        }
        if existing.is_some() {
            self.detach_open(dst).await?;
        }
        self.move_entry(src, &node, dst).await
    }
}

//! The session filesystem over every storage backend: one set of cases, run against the
//! memory store, a local directory and a real S3-compatible server (moto).
//!
//! Each case gets a fresh [`Backend`] (a seeded base and an empty forks store: two buckets of
//! their own on S3) and works through the same API a session does: an overlay fork, a `Vfs`
//! and the commands' filesystem port. Where the backends differ in what they can record, the
//! case says so and checks each one's own behaviour:
//!
//! - S3 records mode and mtime exactly, as TigrisFS-style user metadata (`x-amz-meta-mode`
//!   holds `st_mode` with the file-type bits, `x-amz-meta-mtime` whole seconds).
//! - A local store keeps them as host permission bits and times; the host file always stays
//!   readable and writable by its owner (the server), so it carries `0o600 | mode`.
//! - The memory store keeps no user metadata at all: attributes live only in the session's
//!   index, and symlinks are objects whose body is the target.
//!
//! The S3 cases run in a child process of this binary that has the test credentials in its
//! environment (see `support/s3.rs`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/s3.rs"]
mod s3_support;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_sdk_s3::Client;
use bytes::Bytes;
use forkbox::fork::{ForkStrategy, ForkView, Lease, Overlay, ServerId, SessionId};
use forkbox::storage::{Attrs, ObjectKind, Store};
use forkbox::vfs::{Quota, Vfs};
use forkbox_commands::fs::read_all;
use forkbox_commands::{FileKind, FileSystem, FsError, WriteMode};
use futures::StreamExt;

/// What the base holds at the start of every case.
const SEED: [(&str, &str); 4] = [
    ("README.md", "hello\n"),
    ("dir/a.txt", "A"),
    ("dir/sub/b.txt", "B"),
    ("etc/passwd", "fork-passwd\n"),
];
/// A base file larger than the small quotas below.
const BIG_BASE: (&str, usize) = ("blob.bin", 200_000);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Memory,
    Local,
    S3,
}

/// The S3 side of a backend: a plain client and the two buckets.
struct S3Side {
    client: Client,
    base_bucket: String,
    forks_bucket: String,
}

/// A base store and a forks store of one kind.
struct Backend {
    kind: Kind,
    base: Store,
    forks: Store,
    s3: Option<S3Side>,
    /// Local stores' directories and staging space; removed with the backend.
    tmp: tempfile::TempDir,
}

/// One session's fork.
struct Fork {
    fs: Vfs,
    view: ForkView,
    overlay: Overlay,
    id: SessionId,
}

impl Fork {
    /// The forks-store key of a path in the session's layer.
    fn upper_key(&self, rel: &str) -> String {
        self.view.upper.key(rel)
    }

    fn whiteout_key(&self, rel: &str) -> String {
        self.view.whiteouts.as_ref().unwrap().key(rel)
    }
}

impl Backend {
    async fn memory() -> Backend {
        let tmp = tempfile::tempdir().unwrap();
        let forks = Store::memory().with_spill_dir(tmp.path());
        Backend::seeded(Kind::Memory, Store::memory(), forks, None, tmp).await
    }

    async fn local() -> Backend {
        let tmp = tempfile::tempdir().unwrap();
        let base = Store::local(&tmp.path().join("base")).unwrap();
        let forks = Store::local(&tmp.path().join("forks")).unwrap();
        Backend::seeded(Kind::Local, base, forks, None, tmp).await
    }

    /// Two new buckets on the test server, wired as `forkbox serve --backend s3` wires them.
    async fn s3() -> Backend {
        let tmp = tempfile::tempdir().unwrap();
        let endpoint = s3_support::endpoint();
        let client = s3_support::client(&endpoint);
        let base_bucket = s3_support::unique_bucket("base");
        let forks_bucket = format!("{base_bucket}-forks");
        s3_support::create_bucket(&client, &base_bucket).await;
        s3_support::create_bucket(&client, &forks_bucket).await;
        let cfg = s3_support::s3_config(&endpoint);
        let base = Store::s3(&cfg, &base_bucket).unwrap();
        let forks = Store::s3(&cfg, &forks_bucket)
            .unwrap()
            .with_spill_dir(tmp.path())
            .with_server_side(std::sync::Arc::new(forkbox::fork::s3::S3ServerSide {
                client: client.clone(),
                bucket: forks_bucket.clone(),
            }));
        let s3 = S3Side {
            client,
            base_bucket,
            forks_bucket,
        };
        Backend::seeded(Kind::S3, base, forks, Some(s3), tmp).await
    }

    async fn seeded(
        kind: Kind,
        base: Store,
        forks: Store,
        s3: Option<S3Side>,
        tmp: tempfile::TempDir,
    ) -> Backend {
        for (k, v) in SEED {
            base.put(k, Bytes::from(v), &Attrs::default())
                .await
                .unwrap();
        }
        base.put(
            BIG_BASE.0,
            Bytes::from(pattern(7, BIG_BASE.1)),
            &Attrs::default(),
        )
        .await
        .unwrap();
        Backend {
            kind,
            base,
            forks,
            s3,
            tmp,
        }
    }

    async fn fork(&self) -> Fork {
        self.fork_with(Quota::UNLIMITED).await
    }

    async fn fork_with(&self, quota: Quota) -> Fork {
        let overlay = Overlay::new(self.base.clone(), self.forks.clone());
        let id = SessionId::new();
        let lease = Lease::new(ServerId::new(), Duration::from_secs(600));
        let view = overlay.create(id, &lease).await.unwrap();
        Fork {
            fs: Vfs::with_quota(view.clone(), quota),
            view,
            overlay,
            id,
        }
    }

    /// The mode a store reports for an object given `mode` (see the module header).
    fn stored_mode(&self, mode: u32) -> Option<u32> {
        match self.kind {
            Kind::S3 => Some(mode),
            Kind::Local => Some(0o600 | mode),
            Kind::Memory => None,
        }
    }
}

/// Deterministic pseudo-random bytes (xorshift64*), the same for the same seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    Rng::new(seed).fill(&mut v);
    v
}

/// FNV-1a, 64 bits: a checksum to compare content streamed in and out.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn update(&mut self, data: &[u8]) {
        for b in data {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

async fn write(fs: &Vfs, path: &str, data: &[u8], mode: WriteMode) {
    let mut w = fs.open_write(path, mode).await.unwrap();
    w.write(data).await.unwrap();
    w.close().await.unwrap();
}

async fn read(fs: &Vfs, path: &str) -> Result<String, FsError> {
    read_all(fs, path, 1 << 20)
        .await
        .map(|b| String::from_utf8(b).unwrap())
}

async fn read_bytes(fs: &Vfs, path: &str) -> Vec<u8> {
    read_all(fs, path, 64 << 20).await.unwrap()
}

/// A whole object of a store, read in ranged pieces.
async fn object(store: &Store, key: &str) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let chunk = store.read(key, out.len() as u64, 4 << 20).await.unwrap();
        if chunk.is_empty() {
            return out;
        }
        out.extend_from_slice(&chunk);
    }
}

async fn names(fs: &Vfs, dir: &str) -> Vec<String> {
    fs.read_dir(dir)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect()
}

fn secs(t: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(t)
}

/// Every case, against every backend.
macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(&super::Backend::memory().await).await
                }
            )*
        }
        mod local {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(&super::Backend::local().await).await
                }
            )*
        }
        mod s3 {
            $(
                #[test]
                fn $case() {
                    if !crate::s3_support::credentialed() {
                        return;
                    }
                    super::runtime().block_on(async {
                        super::$case(&super::Backend::s3().await).await
                    })
                }
            )*
        }
    };
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

cases!(
    reads_see_writes_and_the_base_stays,
    whiteouts_hide_base_paths,
    renames_of_files_and_directories,
    symlinks_resolve_inside_the_fork,
    chmod_and_touch_are_stored,
    writes_at_random_offsets,
    a_big_file_goes_up_whole,
    quotas_stop_writes,
    a_fork_of_ten_thousand_objects_is_deleted,
    fork_objects_are_plain_objects,
    reads_after_changes_see_the_changes,
);

async fn reads_see_writes_and_the_base_stays(b: &Backend) {
    let f = b.fork().await;
    let fs = &f.fs;
    assert_eq!(read(fs, "/README.md").await.unwrap(), "hello\n");
    write(fs, "/README.md", b"mine\n", WriteMode::Truncate).await;
    assert_eq!(read(fs, "/README.md").await.unwrap(), "mine\n");
    write(fs, "/README.md", b"more\n", WriteMode::Append).await;
    assert_eq!(read(fs, "/README.md").await.unwrap(), "mine\nmore\n");
    assert_eq!(&fs.read_at("/README.md", 1, 3).await.unwrap()[..], b"ine");
    assert!(fs.read_at("/README.md", 100, 3).await.unwrap().is_empty());
    fs.mkdir("/new").await.unwrap();
    write(fs, "/new/f", b"x", WriteMode::CreateNew).await;
    assert_eq!(
        fs.open_write("/new/f", WriteMode::CreateNew).await.err(),
        Some(FsError::AlreadyExists)
    );
    assert_eq!(names(fs, "/new").await, ["f"]);
    assert_eq!(
        names(fs, "/").await,
        ["README.md", "blob.bin", "dir", "etc", "new"]
    );
    // The session's layer holds what it wrote; the base is untouched, and another fork
    // sees it as it was.
    assert_eq!(
        object(&b.forks, &f.upper_key("README.md")).await,
        b"mine\nmore\n"
    );
    assert_eq!(object(&b.base, "README.md").await, b"hello\n");
    assert!(b.base.stat("new").await.unwrap().is_none());
    let other = b.fork().await;
    assert_eq!(read(&other.fs, "/README.md").await.unwrap(), "hello\n");
    assert_eq!(other.fs.stat("/new").await.unwrap_err(), FsError::NotFound);
}

async fn whiteouts_hide_base_paths(b: &Backend) {
    let f = b.fork().await;
    let fs = &f.fs;
    fs.unlink("/dir/a.txt").await.unwrap();
    assert_eq!(fs.stat("/dir/a.txt").await.unwrap_err(), FsError::NotFound);
    assert_eq!(names(fs, "/dir").await, ["sub"]);
    // The deletion is a marker in the fork; the base keeps the file.
    assert!(
        b.forks
            .stat(&f.whiteout_key("dir/a.txt"))
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(object(&b.base, "dir/a.txt").await, b"A");
    // Recreating the path works and shows the new content only.
    write(fs, "/dir/a.txt", b"again", WriteMode::Truncate).await;
    assert_eq!(read(fs, "/dir/a.txt").await.unwrap(), "again");
    assert_eq!(names(fs, "/dir").await, ["a.txt", "sub"]);
    // Removing a whole base directory hides everything in it, also once it is recreated.
    assert_eq!(fs.rmdir("/dir").await.unwrap_err(), FsError::NotEmpty);
    fs.unlink("/dir/sub/b.txt").await.unwrap();
    fs.rmdir("/dir/sub").await.unwrap();
    fs.unlink("/dir/a.txt").await.unwrap();
    fs.rmdir("/dir").await.unwrap();
    assert!(!names(fs, "/").await.contains(&"dir".to_string()));
    fs.mkdir("/dir").await.unwrap();
    assert!(names(fs, "/dir").await.is_empty());
    assert_eq!(
        fs.stat("/dir/sub/b.txt").await.unwrap_err(),
        FsError::NotFound
    );
    assert_eq!(object(&b.base, "dir/sub/b.txt").await, b"B");
    let other = b.fork().await;
    assert_eq!(names(&other.fs, "/dir").await, ["a.txt", "sub"]);
}

async fn renames_of_files_and_directories(b: &Backend) {
    let f = b.fork().await;
    let fs = &f.fs;
    // A base file.
    fs.rename("/README.md", "/R2").await.unwrap();
    assert_eq!(read(fs, "/R2").await.unwrap(), "hello\n");
    assert_eq!(fs.stat("/README.md").await.unwrap_err(), FsError::NotFound);
    // A fork file, into a base directory, then over an existing file.
    write(fs, "/x", b"X", WriteMode::Truncate).await;
    fs.rename("/x", "/dir/y").await.unwrap();
    assert_eq!(read(fs, "/dir/y").await.unwrap(), "X");
    write(fs, "/z", b"Z", WriteMode::Truncate).await;
    fs.rename("/dir/y", "/z").await.unwrap();
    assert_eq!(read(fs, "/z").await.unwrap(), "X");
    assert_eq!(fs.stat("/dir/y").await.unwrap_err(), FsError::NotFound);
    // A directory mixing base and fork content.
    write(fs, "/dir/new.txt", b"N", WriteMode::Truncate).await;
    fs.rename("/dir", "/moved").await.unwrap();
    assert_eq!(fs.stat("/dir").await.unwrap_err(), FsError::NotFound);
    assert_eq!(names(fs, "/moved").await, ["a.txt", "new.txt", "sub"]);
    assert_eq!(read(fs, "/moved/sub/b.txt").await.unwrap(), "B");
    assert_eq!(read(fs, "/moved/new.txt").await.unwrap(), "N");
    assert_eq!(
        fs.rename("/moved", "/moved/inside").await.unwrap_err(),
        FsError::InvalidArgument
    );
    // The moved tree is in the session's layer; the base is as it was.
    assert_eq!(
        object(&b.forks, &f.upper_key("moved/sub/b.txt")).await,
        b"B"
    );
    assert_eq!(object(&b.base, "dir/a.txt").await, b"A");
    assert_eq!(object(&b.base, "README.md").await, b"hello\n");
}

async fn symlinks_resolve_inside_the_fork(b: &Backend) {
    let f = b.fork().await;
    let fs = &f.fs;
    fs.symlink("/etc/passwd", "/p").await.unwrap();
    assert_eq!(read(fs, "/p").await.unwrap(), "fork-passwd\n");
    assert_eq!(fs.readlink("/p").await.unwrap(), "/etc/passwd");
    assert_eq!(fs.lstat("/p").await.unwrap().kind, FileKind::Symlink);
    assert_eq!(fs.stat("/p").await.unwrap().kind, FileKind::File);
    // A relative target climbing past the root stays in the fork.
    fs.symlink("../../../../etc/passwd", "/dir/q")
        .await
        .unwrap();
    assert_eq!(read(fs, "/dir/q").await.unwrap(), "fork-passwd\n");
    fs.symlink("/nowhere", "/dangling").await.unwrap();
    assert_eq!(read(fs, "/dangling").await.unwrap_err(), FsError::NotFound);
    fs.symlink("/loop2", "/loop1").await.unwrap();
    fs.symlink("/loop1", "/loop2").await.unwrap();
    assert_eq!(fs.stat("/loop1").await.unwrap_err(), FsError::Loop);
    // Writing through a symlink writes its target.
    fs.symlink("dir/a.txt", "/to-a").await.unwrap();
    write(fs, "/to-a", b"via link", WriteMode::Truncate).await;
    assert_eq!(read(fs, "/dir/a.txt").await.unwrap(), "via link");
    assert_eq!(fs.lstat("/to-a").await.unwrap().kind, FileKind::Symlink);
    // How the store keeps it.
    let m = b.forks.stat(&f.upper_key("p")).await.unwrap().unwrap();
    match b.kind {
        Kind::S3 | Kind::Local => {
            assert_eq!(m.kind, ObjectKind::Symlink);
            assert_eq!(m.symlink.as_deref(), Some("/etc/passwd"));
        }
        Kind::Memory => {
            assert_eq!(m.kind, ObjectKind::File);
            assert_eq!(object(&b.forks, &f.upper_key("p")).await, b"/etc/passwd");
        }
    }
}

async fn chmod_and_touch_are_stored(b: &Backend) {
    let f = b.fork().await;
    let fs = &f.fs;
    let t1 = secs(1_600_000_000);
    let t2 = secs(1_234_567_890);
    // A base file: copied up, then given its new attributes.
    fs.chmod("/README.md", 0o444).await.unwrap();
    fs.set_mtime("/README.md", t1).await.unwrap();
    // A file of the session's own.
    write(fs, "/own.sh", b"#!/bin/sh\n", WriteMode::Truncate).await;
    fs.chmod("/own.sh", 0o751).await.unwrap();
    fs.set_mtime("/own.sh", t2).await.unwrap();
    let m = fs.stat("/README.md").await.unwrap();
    assert_eq!((m.mode, m.mtime), (0o444, t1));
    let m = fs.stat("/own.sh").await.unwrap();
    assert_eq!((m.mode, m.mtime), (0o751, t2));
    assert_eq!(read(fs, "/README.md").await.unwrap(), "hello\n");
    // What the store holds (see the module header for what each backend records).
    for (rel, mode, t) in [("README.md", 0o444, t1), ("own.sh", 0o751, t2)] {
        let m = b.forks.stat(&f.upper_key(rel)).await.unwrap().unwrap();
        assert_eq!(m.kind, ObjectKind::File);
        assert_eq!(m.mode, b.stored_mode(mode), "{rel}");
        if b.kind != Kind::Memory {
            assert_eq!(m.mtime, Some(t), "{rel}");
        }
    }
    // The base's copy keeps its own attributes.
    let m = b.base.stat("README.md").await.unwrap().unwrap();
    assert_ne!(m.mtime, Some(t1));
    assert_ne!(m.mode, Some(0o444));
    // Attributes survive a later rewrite of the content.
    write(fs, "/own.sh", b"#!/bin/sh\nexit 0\n", WriteMode::Truncate).await;
    assert_eq!(fs.stat("/own.sh").await.unwrap().mode, 0o751);
    let m = b.forks.stat(&f.upper_key("own.sh")).await.unwrap().unwrap();
    assert_eq!(m.mode, b.stored_mode(0o751));
}

async fn writes_at_random_offsets(b: &Backend) {
    const SPAN: u64 = 10 << 20;
    let f = b.fork().await;
    let fs = &f.fs;
    let mut rng = Rng::new(42);
    // Update mode on a base file starts from its content (a copy-up).
    let mut model = pattern(7, BIG_BASE.1);
    let mut w = fs.open_write("/blob.bin", WriteMode::Update).await.unwrap();
    for i in 0..240 {
        let off = rng.below(SPAN);
        let len = 1 + rng.below(64 * 1024) as usize;
        let mut data = vec![0; len];
        rng.fill(&mut data);
        w.write_at(off, &data).await.unwrap();
        let end = off as usize + len;
        if model.len() < end {
            model.resize(end, 0);
        }
        model[off as usize..end].copy_from_slice(&data);
        if i == 120 {
            // A sync in the middle publishes what is there; writing goes on after it.
            w.sync().await.unwrap();
            assert_eq!(fs.stat("/blob.bin").await.unwrap().len, model.len() as u64);
            assert_eq!(read_bytes(fs, "/blob.bin").await, model);
        }
    }
    w.close().await.unwrap();
    assert_eq!(read_bytes(fs, "/blob.bin").await, model);
    assert_eq!(object(&b.forks, &f.upper_key("blob.bin")).await, model);
    // Reopened: update mode keeps the session's own content; `write` goes from offset 0.
    let mut w = fs.open_write("/blob.bin", WriteMode::Update).await.unwrap();
    w.write(b"HEAD").await.unwrap();
    w.write(b"+MORE").await.unwrap();
    model[..9].copy_from_slice(b"HEAD+MORE");
    for _ in 0..40 {
        let off = rng.below(model.len() as u64 + 4096);
        let mut data = vec![0; 1 + rng.below(4096) as usize];
        rng.fill(&mut data);
        w.write_at(off, &data).await.unwrap();
        let end = off as usize + data.len();
        if model.len() < end {
            model.resize(end, 0);
        }
        model[off as usize..end].copy_from_slice(&data);
    }
    w.close().await.unwrap();
    assert_eq!(read_bytes(fs, "/blob.bin").await, model);
    assert_eq!(object(&b.forks, &f.upper_key("blob.bin")).await, model);
    // The base file never changed.
    assert_eq!(object(&b.base, BIG_BASE.0).await, pattern(7, BIG_BASE.1));
}

async fn a_big_file_goes_up_whole(b: &Backend) {
    // Past forkbox's single-request limit (8 MiB): three parts on S3.
    const LEN: usize = 21 * 1024 * 1024 + 12_345;
    const CHUNK: usize = 64 * 1024;
    let f = b.fork().await;
    let fs = &f.fs;
    fs.mkdir("/big").await.unwrap();
    let mut rng = Rng::new(2024);
    let mut sum_in = Fnv::new();
    let mut w = fs
        .open_write("/big/data.bin", WriteMode::Truncate)
        .await
        .unwrap();
    let mut left = LEN;
    let mut buf = vec![0u8; CHUNK];
    while left > 0 {
        let n = left.min(CHUNK);
        rng.fill(&mut buf[..n]);
        sum_in.update(&buf[..n]);
        w.write(&buf[..n]).await.unwrap();
        left -= n;
    }
    w.close().await.unwrap();
    assert_eq!(fs.stat("/big/data.bin").await.unwrap().len, LEN as u64);
    // Read back through the filesystem in ranged pieces, and compared byte for byte with
    // the same stream regenerated, besides the checksums.
    let mut rng = Rng::new(2024);
    let mut sum_out = Fnv::new();
    let mut off = 0u64;
    let mut expect = vec![0u8; CHUNK];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let got = fs.read_at("/big/data.bin", off, 1 << 20).await.unwrap();
        if got.is_empty() {
            break;
        }
        off += got.len() as u64;
        sum_out.update(&got);
        pending.extend_from_slice(&got);
        while pending.len() >= CHUNK || (off == LEN as u64 && !pending.is_empty()) {
            let n = pending.len().min(CHUNK);
            rng.fill(&mut expect[..n]);
            assert!(pending[..n] == expect[..n], "content differs before {off}");
            pending.drain(..n);
        }
    }
    assert_eq!(off, LEN as u64);
    assert_eq!(sum_out.0, sum_in.0, "checksums differ");
    let m = b
        .forks
        .stat(&f.upper_key("big/data.bin"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(m.len, LEN as u64);
    if let Some(s3) = &b.s3 {
        // A multipart upload: its ETag ends with the number of parts.
        let head = s3
            .client
            .head_object()
            .bucket(&s3.forks_bucket)
            .key(f.upper_key("big/data.bin"))
            .send()
            .await
            .unwrap();
        assert_eq!(head.content_length(), Some(LEN as i64));
        let etag = head.e_tag().unwrap_or_default();
        assert!(etag.trim_matches('"').ends_with("-3"), "ETag {etag}");
    }
}

async fn quotas_stop_writes(b: &Backend) {
    let f = b
        .fork_with(Quota {
            bytes: Some(100_000),
            objects: Some(20),
        })
        .await;
    let fs = &f.fs;
    let mut w = fs.open_write("/f", WriteMode::Truncate).await.unwrap();
    let mut accepted = 0;
    let err = loop {
        match w.write(&[b'q'; 16 * 1024]).await {
            Ok(()) => accepted += 16 * 1024,
            Err(e) => break e,
        }
    };
    assert_eq!((err.clone(), accepted), (FsError::NoSpace, 6 * 16 * 1024));
    assert_eq!(w.close().await, Err(FsError::NoSpace));
    // The file is left empty, as `>` left it, in the index and in the store alike.
    assert_eq!(fs.stat("/f").await.unwrap().len, 0);
    assert_eq!(
        b.forks.stat(&f.upper_key("f")).await.unwrap().unwrap().len,
        0
    );
    let u = fs.usage().await.unwrap();
    assert_eq!((u.bytes_used, u.objects_used), (0, 1));
    // A base file bigger than the quota cannot be copied up; it stays as it was.
    assert_eq!(fs.chmod("/blob.bin", 0o600).await, Err(FsError::NoSpace));
    assert_eq!(
        fs.open_write("/blob.bin", WriteMode::Append).await.err(),
        Some(FsError::NoSpace)
    );
    assert_eq!(fs.stat("/blob.bin").await.unwrap().len, BIG_BASE.1 as u64);
    assert!(
        b.forks
            .stat(&f.upper_key("blob.bin"))
            .await
            .unwrap()
            .is_none()
    );
    // Within the quota the session goes on.
    write(fs, "/g", &[b'g'; 90_000], WriteMode::Truncate).await;
    assert_eq!(
        b.forks.stat(&f.upper_key("g")).await.unwrap().unwrap().len,
        90_000
    );
    let u = fs.usage().await.unwrap();
    assert_eq!((u.bytes_used, u.objects_used), (90_000, 2));
}

async fn a_fork_of_ten_thousand_objects_is_deleted(b: &Backend) {
    const N: usize = 10_000;
    let f = b.fork().await;
    let live = b.fork().await;
    write(&live.fs, "/keep.txt", b"still here", WriteMode::Truncate).await;
    // Filled straight through the store, many requests at once: the session's layer as a
    // busy session would leave it (files in many directories).
    let started = Instant::now();
    let keys: Vec<String> = (0..N)
        .map(|i| f.upper_key(&format!("d{:02}/f{i:05}", i % 50)))
        .collect();
    let forks = &b.forks;
    futures::stream::iter(keys.iter())
        .map(|k| async move {
            forks
                .put(k, Bytes::from_static(b"x"), &Attrs::default())
                .await
        })
        .buffer_unordered(32)
        .for_each(|r| async { r.unwrap() })
        .await;
    let filled = started.elapsed();
    assert!(f.overlay.exists(f.id).await.unwrap());
    let started = Instant::now();
    forkbox::fork::delete_with_deadline(&f.overlay, f.id, Duration::from_secs(600))
        .await
        .unwrap();
    let deleted = started.elapsed();
    println!(
        "{:?}: {N} objects stored in {filled:?}, fork deleted in {deleted:?}",
        b.kind
    );
    assert!(!f.overlay.exists(f.id).await.unwrap());
    assert!(b.forks.stat(&keys[N / 2]).await.unwrap().is_none());
    // The other fork in the same store is untouched.
    assert_eq!(f.overlay.list().await.unwrap(), vec![live.id]);
    assert_eq!(read(&live.fs, "/keep.txt").await.unwrap(), "still here");
    assert_eq!(
        object(&b.forks, &live.upper_key("keep.txt")).await,
        b"still here"
    );
}

async fn fork_objects_are_plain_objects(b: &Backend) {
    let f = b.fork().await;
    let fs = &f.fs;
    let t = 1_500_000_000;
    fs.mkdir("/newdir").await.unwrap();
    write(fs, "/newdir/x.txt", b"plain\n", WriteMode::Truncate).await;
    fs.chmod("/newdir/x.txt", 0o751).await.unwrap();
    fs.set_mtime("/newdir/x.txt", secs(t)).await.unwrap();
    fs.symlink("x.txt", "/newdir/l").await.unwrap();
    fs.unlink("/README.md").await.unwrap();
    let file = f.upper_key("newdir/x.txt");
    match (&b.s3, b.kind) {
        (Some(s3), _) => {
            // Any S3 client sees the fork: keys are paths, attributes are user metadata.
            let c = &s3.client;
            let bucket = s3.forks_bucket.as_str();
            let head = c
                .head_object()
                .bucket(bucket)
                .key(&file)
                .send()
                .await
                .unwrap();
            let meta = head.metadata().unwrap();
            let get = |k: &str| meta.get(k).map(String::as_str);
            assert_eq!(get("mode"), Some((0o100000 | 0o751).to_string().as_str()));
            assert_eq!(get("mtime"), Some(t.to_string().as_str()));
            assert_eq!((get("uid"), get("gid")), (Some("1000"), Some("1000")));
            let body = c
                .get_object()
                .bucket(bucket)
                .key(&file)
                .send()
                .await
                .unwrap();
            let body = body.body.collect().await.unwrap().into_bytes();
            assert_eq!(&body[..], b"plain\n");
            let link = f.upper_key("newdir/l");
            let head = c
                .head_object()
                .bucket(bucket)
                .key(&link)
                .send()
                .await
                .unwrap();
            let meta = head.metadata().unwrap();
            assert_eq!(
                meta.get("--symlink-target").map(String::as_str),
                Some("x.txt")
            );
            assert_eq!(
                meta.get("mode").map(String::as_str),
                Some((0o120000 | 0o777).to_string().as_str())
            );
            let prefix = format!("forks/{}/", f.id);
            assert_eq!(
                s3_support::keys_in(c, bucket, &prefix).await,
                [
                    format!("{prefix}lease"),
                    format!("{prefix}root/"),
                    format!("{prefix}root/newdir/"),
                    format!("{prefix}root/newdir/l"),
                    format!("{prefix}root/newdir/x.txt"),
                    format!("{prefix}whiteouts/README.md"),
                ]
            );
            let lease = c
                .get_object()
                .bucket(bucket)
                .key(format!("{prefix}lease"))
                .send()
                .await
                .unwrap();
            let lease = lease.body.collect().await.unwrap().into_bytes();
            let lease = String::from_utf8_lossy(&lease).into_owned();
            assert!(Lease::decode(&lease).is_some(), "{lease:?}");
            // The base bucket still holds exactly what it was seeded with.
            let mut seeded: Vec<String> = SEED.iter().map(|(k, _)| k.to_string()).collect();
            seeded.push(BIG_BASE.0.to_string());
            seeded.sort();
            assert_eq!(s3_support::keys_in(c, &s3.base_bucket, "").await, seeded);
        }
        (None, Kind::Local) => {
            // Plain host files: content, permission bits, times and symlinks.
            use std::os::unix::fs::PermissionsExt;
            let root = b.tmp.path().join("forks");
            let host = root.join(&file);
            assert_eq!(std::fs::read(&host).unwrap(), b"plain\n");
            let md = std::fs::metadata(&host).unwrap();
            assert_eq!(md.permissions().mode() & 0o7777, 0o751);
            assert_eq!(md.modified().unwrap(), secs(t));
            let link = root.join(f.upper_key("newdir/l"));
            assert_eq!(std::fs::read_link(link).unwrap().to_str(), Some("x.txt"));
            assert!(root.join(f.whiteout_key("README.md")).exists());
        }
        (None, _) => {
            assert_eq!(object(&b.forks, &file).await, b"plain\n");
            assert!(
                b.forks
                    .stat(&f.whiteout_key("README.md"))
                    .await
                    .unwrap()
                    .is_some()
            );
        }
    }
}

/// Reads `path` in 64 KiB calls from `from` to `to`, checking each against `model`.
async fn read_span(fs: &Vfs, path: &str, model: &[u8], from: usize, to: usize) {
    const CALL: usize = 64 * 1024;
    let mut pos = from;
    while pos < to {
        let got = fs.read_at(path, pos as u64, CALL).await.unwrap();
        let end = (pos + CALL).min(model.len());
        assert!(got[..] == model[pos..end], "{path}: bytes at {pos} differ");
        pos = end;
    }
}

/// A file read part way (on S3, read-ahead then holds windows of it), changed, and read on
/// from where the reader was: always the new content.
async fn reads_after_changes_see_the_changes(b: &Backend) {
    const LEN: usize = 6 << 20;
    const PART: usize = 3 << 19;
    let f = b.fork().await;
    let fs = &f.fs;
    let (x, y) = (pattern(21, LEN), pattern(22, LEN));
    write(fs, "/f", &x, WriteMode::Truncate).await;
    read_span(fs, "/f", &x, 0, PART).await;
    // Overwritten.
    write(fs, "/f", &y, WriteMode::Truncate).await;
    read_span(fs, "/f", &y, PART, LEN).await;
    // Appended to.
    read_span(fs, "/f", &y, 0, PART).await;
    write(fs, "/f", b"tail", WriteMode::Append).await;
    let mut model = y.clone();
    model.extend_from_slice(b"tail");
    read_span(fs, "/f", &model, PART, model.len()).await;
    // Truncated below where the reader is, then grown back with zeros.
    read_span(fs, "/f", &model, 0, PART).await;
    fs.truncate("/f", 1 << 20).await.unwrap();
    assert!(fs.read_at("/f", PART as u64, 64).await.unwrap().is_empty());
    fs.truncate("/f", LEN as u64).await.unwrap();
    let mut model = y[..1 << 20].to_vec();
    model.resize(LEN, 0);
    read_span(fs, "/f", &model, PART, LEN).await;
    // Another file renamed over it.
    read_span(fs, "/f", &model, 0, PART).await;
    write(fs, "/g", &x, WriteMode::Truncate).await;
    fs.rename("/g", "/f").await.unwrap();
    read_span(fs, "/f", &x, PART, LEN).await;
    assert_eq!(read_bytes(fs, "/f").await, x);
}

use bytes::Bytes;
use forkbox_commands::fs::read_all;

use super::*;
use crate::fork::{ForkStrategy, Overlay, SessionId};
use crate::storage::Store;

async fn seeded_base() -> Store {
    let base = Store::memory();
    for (k, v) in [
        ("README.md", "hello\n"),
        ("dir/a.txt", "A"),
        ("dir/sub/b.txt", "B"),
        ("etc/passwd", "fork-passwd\n"),
    ] {
        base.put(k, Bytes::from(v), &Attrs::default())
            .await
            .unwrap();
    }
    base
}

async fn fork_of(base: &Store) -> (Vfs, Overlay, SessionId) {
    let overlay = Overlay::new(base.clone(), Store::memory());
    let id = SessionId::new();
    let lease = crate::fork::Lease::new(
        crate::fork::ServerId::new(),
        std::time::Duration::from_secs(60),
    );
    let view = overlay.create(id, &lease).await.unwrap();
    (Vfs::new(view), overlay, id)
}

async fn write(fs: &Vfs, path: &str, data: &str, mode: WriteMode) {
    let mut w = fs.open_write(path, mode).await.unwrap();
    w.write(data.as_bytes()).await.unwrap();
    w.close().await.unwrap();
}

async fn read(fs: &Vfs, path: &str) -> FsResult<String> {
    read_all(fs, path, 1 << 20)
        .await
        .map(|b| String::from_utf8(b).unwrap())
}

fn names(entries: &[DirEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.name.as_str()).collect()
}

#[tokio::test]
async fn reads_fall_through_and_writes_stay_in_the_fork() {
    let base = seeded_base().await;
    let (fs, _, _) = fork_of(&base).await;
    assert_eq!(read(&fs, "/README.md").await.unwrap(), "hello\n");
    write(&fs, "/README.md", "mine\n", WriteMode::Truncate).await;
    assert_eq!(read(&fs, "/README.md").await.unwrap(), "mine\n");
    write(&fs, "/README.md", "more\n", WriteMode::Append).await;
    assert_eq!(read(&fs, "/README.md").await.unwrap(), "mine\nmore\n");
    // The base is untouched, and a second fork sees it.
    assert_eq!(
        base.read("README.md", 0, 100).await.unwrap(),
        Bytes::from("hello\n")
    );
    let (other, _, _) = fork_of(&base).await;
    assert_eq!(read(&other, "/README.md").await.unwrap(), "hello\n");
}

#[tokio::test]
async fn a_local_listing_fills_the_metadata_cache() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("d");
    std::fs::create_dir(&host).unwrap();
    std::fs::write(host.join("a.txt"), "A").unwrap();
    std::os::unix::fs::symlink("a.txt", host.join("link")).unwrap();
    std::fs::create_dir(host.join("sub")).unwrap();
    let base = Store::local(dir.path()).unwrap();
    let (fs, _, _) = fork_of(&base).await;
    let listed = fs.read_dir("/d").await.unwrap();
    assert_eq!(names(&listed), ["a.txt", "link", "sub"]);
    let kinds: Vec<FileKind> = listed.iter().map(|e| e.meta.kind).collect();
    assert_eq!(kinds, [FileKind::File, FileKind::Symlink, FileKind::Dir]);
    // The base is immutable, so what the listing read answers later lookups: with the
    // host entries gone, the fork still sees them as listed (no request per child).
    std::fs::remove_file(host.join("a.txt")).unwrap();
    std::fs::remove_file(host.join("link")).unwrap();
    std::fs::remove_dir(host.join("sub")).unwrap();
    assert_eq!(fs.lstat("/d/a.txt").await.unwrap().len, 1);
    assert_eq!(fs.readlink("/d/link").await.unwrap(), "a.txt");
    assert!(fs.stat("/d/sub").await.unwrap().is_dir());
}

#[tokio::test]
async fn a_kinds_listing_agrees_with_the_full_one() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("d");
    std::fs::create_dir(&host).unwrap();
    for f in ["a.txt", "gone", "moved", "replaced"] {
        std::fs::write(host.join(f), "A").unwrap();
    }
    std::os::unix::fs::symlink("a.txt", host.join("link")).unwrap();
    std::fs::create_dir(host.join("sub")).unwrap();
    let base = Store::local(dir.path()).unwrap();
    let (fs, _, _) = fork_of(&base).await;
    // The session's changes: a whiteout, a rename, a file turned directory, new entries.
    fs.unlink("/d/gone").await.unwrap();
    fs.rename("/d/moved", "/d/sub/moved").await.unwrap();
    fs.unlink("/d/replaced").await.unwrap();
    fs.mkdir("/d/replaced").await.unwrap();
    write(&fs, "/d/new", "n", WriteMode::Truncate).await;
    fs.symlink("sub", "/d/ln2").await.unwrap();
    for d in ["/d", "/d/sub", "/"] {
        let full: Vec<(String, FileKind)> = fs
            .read_dir(d)
            .await
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.meta.kind))
            .collect();
        assert_eq!(fs.read_dir_kinds(d).await.unwrap(), full, "{d}");
    }
    let kinds = fs.read_dir_kinds("/d").await.unwrap();
    assert_eq!(
        kinds,
        [
            ("a.txt".to_string(), FileKind::File),
            ("link".to_string(), FileKind::Symlink),
            ("ln2".to_string(), FileKind::Symlink),
            ("new".to_string(), FileKind::File),
            ("replaced".to_string(), FileKind::Dir),
            ("sub".to_string(), FileKind::Dir),
        ]
    );
    assert_eq!(
        fs.read_dir_kinds("/d/a.txt").await.unwrap_err(),
        FsError::NotADirectory
    );
    // A base without kinds in its listing (an object store) lists through metadata.
    let (mem, _, _) = fork_of(&seeded_base().await).await;
    assert_eq!(
        mem.read_dir_kinds("/dir").await.unwrap(),
        [
            ("a.txt".to_string(), FileKind::File),
            ("sub".to_string(), FileKind::Dir)
        ]
    );
}

#[tokio::test]
async fn ranged_reads() {
    let base = seeded_base().await;
    let (fs, _, _) = fork_of(&base).await;
    assert_eq!(
        fs.read_at("/README.md", 1, 3).await.unwrap(),
        Bytes::from("ell")
    );
    assert!(fs.read_at("/README.md", 100, 3).await.unwrap().is_empty());
    assert_eq!(
        fs.read_at("/dir", 0, 3).await.unwrap_err(),
        FsError::IsADirectory
    );
}

#[tokio::test]
async fn whiteouts_hide_base_files_and_recreate_works() {
    let base = seeded_base().await;
    let (fs, _, _) = fork_of(&base).await;
    fs.unlink("/dir/a.txt").await.unwrap();
    assert_eq!(fs.stat("/dir/a.txt").await.unwrap_err(), FsError::NotFound);
    assert_eq!(names(&fs.read_dir("/dir").await.unwrap()), vec!["sub"]);
    write(&fs, "/dir/a.txt", "again", WriteMode::Truncate).await;
    assert_eq!(read(&fs, "/dir/a.txt").await.unwrap(), "again");
    assert_eq!(
        base.read("dir/a.txt", 0, 10).await.unwrap(),
        Bytes::from("A")
    );
}

#[tokio::test]
async fn removed_base_directory_stays_hidden_when_recreated() {
    let base = seeded_base().await;
    let (fs, _, _) = fork_of(&base).await;
    assert_eq!(fs.rmdir("/dir").await.unwrap_err(), FsError::NotEmpty);
    fs.unlink("/dir/sub/b.txt").await.unwrap();
    fs.rmdir("/dir/sub").await.unwrap();
    fs.unlink("/dir/a.txt").await.unwrap();
    fs.rmdir("/dir").await.unwrap();
    assert!(!names(&fs.read_dir("/").await.unwrap()).contains(&"dir"));
    fs.mkdir("/dir").await.unwrap();
    assert!(fs.read_dir("/dir").await.unwrap().is_empty());
}

#[tokio::test]
async fn rename_files_and_directories() {
    let base = seeded_base().await;
    let (fs, _, _) = fork_of(&base).await;
    fs.rename("/README.md", "/R2").await.unwrap();
    assert_eq!(read(&fs, "/R2").await.unwrap(), "hello\n");
    assert_eq!(fs.stat("/README.md").await.unwrap_err(), FsError::NotFound);
    write(&fs, "/dir/new.txt", "N", WriteMode::Truncate).await;
    fs.rename("/dir", "/moved").await.unwrap();
    assert_eq!(fs.stat("/dir").await.unwrap_err(), FsError::NotFound);
    assert_eq!(
        names(&fs.read_dir("/moved").await.unwrap()),
        vec!["a.txt", "new.txt", "sub"]
    );
    assert_eq!(read(&fs, "/moved/sub/b.txt").await.unwrap(), "B");
    assert_eq!(read(&fs, "/moved/new.txt").await.unwrap(), "N");
    assert_eq!(
        fs.rename("/moved", "/moved/inside").await.unwrap_err(),
        FsError::InvalidArgument
    );
    assert_eq!(
        base.read("dir/a.txt", 0, 10).await.unwrap(),
        Bytes::from("A")
    );
}

#[tokio::test]
async fn paths_never_leave_the_root() {
    let base = seeded_base().await;
    let (fs, _, _) = fork_of(&base).await;
    assert_eq!(
        read(&fs, "/../../../etc/passwd").await.unwrap(),
        "fork-passwd\n"
    );
    assert_eq!(fs.canonicalize("/..").await.unwrap(), "/");
    fs.symlink("/etc/passwd", "/p").await.unwrap();
    assert_eq!(read(&fs, "/p").await.unwrap(), "fork-passwd\n");
    fs.symlink("../../../../etc/passwd", "/dir/q")
        .await
        .unwrap();
    assert_eq!(read(&fs, "/dir/q").await.unwrap(), "fork-passwd\n");
    fs.symlink("/nowhere/shadow", "/s").await.unwrap();
    assert_eq!(read(&fs, "/s").await.unwrap_err(), FsError::NotFound);
    assert_eq!(fs.readlink("/p").await.unwrap(), "/etc/passwd");
    assert_eq!(fs.lstat("/p").await.unwrap().kind, FileKind::Symlink);
}

#[tokio::test]
async fn symlink_loops_fail() {
    let (fs, _, _) = fork_of(&Store::memory()).await;
    fs.symlink("/b", "/a").await.unwrap();
    fs.symlink("/a", "/b").await.unwrap();
    assert_eq!(fs.stat("/a").await.unwrap_err(), FsError::Loop);
}

#[tokio::test]
async fn errors_are_errno_like() {
    let base = seeded_base().await;
    let (fs, _, _) = fork_of(&base).await;
    assert_eq!(
        fs.stat("/README.md/x").await.unwrap_err(),
        FsError::NotADirectory
    );
    assert_eq!(fs.mkdir("/dir").await.unwrap_err(), FsError::AlreadyExists);
    assert_eq!(fs.mkdir("/no/such").await.unwrap_err(), FsError::NotFound);
    assert_eq!(fs.unlink("/dir").await.unwrap_err(), FsError::IsADirectory);
    assert_eq!(
        fs.rmdir("/README.md").await.unwrap_err(),
        FsError::NotADirectory
    );
    assert!(fs.open_write("/dir", WriteMode::Truncate).await.is_err());
    assert_eq!(
        fs.open_write("/README.md", WriteMode::CreateNew)
            .await
            .err(),
        Some(FsError::AlreadyExists)
    );
    let long = "x".repeat(300);
    assert_eq!(
        fs.stat(&format!("/{long}")).await.unwrap_err(),
        FsError::NameTooLong
    );
}

#[tokio::test]
async fn chmod_truncate_and_times() {
    let base = seeded_base().await;
    let (fs, _, _) = fork_of(&base).await;
    fs.chmod("/README.md", 0o755).await.unwrap();
    assert_eq!(fs.stat("/README.md").await.unwrap().mode, 0o755);
    assert_eq!(read(&fs, "/README.md").await.unwrap(), "hello\n");
    fs.truncate("/README.md", 2).await.unwrap();
    assert_eq!(read(&fs, "/README.md").await.unwrap(), "he");
    fs.truncate("/README.md", 4).await.unwrap();
    assert_eq!(read(&fs, "/README.md").await.unwrap(), "he\0\0");
    let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    fs.set_mtime("/dir/a.txt", t).await.unwrap();
    assert_eq!(fs.stat("/dir/a.txt").await.unwrap().mtime, t);
}

#[tokio::test]
async fn deleting_the_fork_removes_the_layer() {
    let base = seeded_base().await;
    let (fs, overlay, id) = fork_of(&base).await;
    fs.mkdir("/x").await.unwrap();
    fs.mkdir("/x/y").await.unwrap();
    write(&fs, "/x/y/z", "deep", WriteMode::Truncate).await;
    assert!(fs.open_write("/nope/z", WriteMode::Truncate).await.is_err());
    fs.unlink("/README.md").await.unwrap();
    assert!(overlay.exists(id).await.unwrap());
    overlay.delete(id).await.unwrap();
    assert!(!overlay.exists(id).await.unwrap());
}

// Quotas.

const KIB: usize = 1024;

async fn limited_on(base: &Store, forks: Store, bytes: u64, objects: u64) -> Vfs {
    let overlay = Overlay::new(base.clone(), forks);
    let lease = crate::fork::Lease::new(
        crate::fork::ServerId::new(),
        std::time::Duration::from_secs(60),
    );
    let view = overlay.create(SessionId::new(), &lease).await.unwrap();
    Vfs::with_quota(
        view,
        Quota {
            bytes: Some(bytes),
            objects: Some(objects),
        },
    )
}

async fn limited(base: &Store, bytes: u64, objects: u64) -> Vfs {
    limited_on(base, Store::memory(), bytes, objects).await
}

/// (bytes used, objects used).
async fn used(fs: &Vfs) -> (u64, u64) {
    let u = fs.usage().await.unwrap();
    (u.bytes_used, u.objects_used)
}

/// Writes `chunk`-byte pieces into `path` until a write fails or `total` bytes went in;
/// the bytes accepted and the outcome of close.
async fn write_until(
    fs: &Vfs,
    path: &str,
    mode: WriteMode,
    chunk: usize,
    total: usize,
) -> (usize, FsResult<()>) {
    let mut w = fs.open_write(path, mode).await.unwrap();
    let mut n = 0;
    while n < total {
        if let Err(e) = w.write(&vec![b'z'; chunk]).await {
            // Every later call fails alike.
            assert_eq!(w.write(b"more").await, Err(e.clone()));
            assert_eq!(w.close().await, Err(e.clone()));
            return (n, Err(e));
        }
        n += chunk;
    }
    (n, w.close().await)
}

/// Bytes of the regular files under `dir` on the host.
fn bytes_under(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let md = e.metadata().unwrap();
        total += if md.is_dir() {
            bytes_under(&e.path())
        } else {
            md.len()
        };
    }
    total
}

/// Bytes of the session layers (`forks/*/root`) in a local forks store; the fork's own
/// bookkeeping (its lease) is not the session's data.
fn bytes_on_disk(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir.join("forks"))
        .unwrap()
        .flatten()
        .map(|fork| bytes_under(&fork.path().join("root")))
        .sum()
}

#[tokio::test]
async fn a_runaway_writer_stops_at_the_byte_quota() {
    let dir = tempfile::tempdir().unwrap();
    let base = seeded_base().await;
    let fs = limited_on(&base, Store::local(dir.path()).unwrap(), 10_000, 100).await;
    let (n, closed) = write_until(&fs, "/big", WriteMode::Truncate, 4 * KIB, 1 << 20).await;
    assert_eq!((n, closed), (8 * KIB, Err(FsError::NoSpace)));
    // The file is given up: it exists, empty, and the store holds nothing of it.
    assert_eq!(fs.stat("/big").await.unwrap().len, 0);
    assert_eq!(read(&fs, "/big").await.unwrap(), "");
    assert_eq!(used(&fs).await, (0, 1));
    assert_eq!(bytes_on_disk(dir.path()), 0);
    // The session goes on within its quota.
    write(&fs, "/small", &"s".repeat(9_000), WriteMode::Truncate).await;
    assert_eq!(used(&fs).await, (9_000, 2));
    assert_eq!(bytes_on_disk(dir.path()), 9_000);
    let u = fs.usage().await.unwrap();
    assert_eq!((u.bytes_limit, u.objects_limit), (Some(10_000), Some(100)));
}

#[tokio::test]
async fn a_failed_append_leaves_the_file_as_it_was() {
    let base = seeded_base().await;
    let dir = tempfile::tempdir().unwrap();
    for store in [Store::memory(), Store::local(dir.path()).unwrap()] {
        let fs = limited_on(&base, store, 10_000, 100).await;
        write(&fs, "/f", &"o".repeat(3_000), WriteMode::Truncate).await;
        let (n, closed) = write_until(&fs, "/f", WriteMode::Append, 4 * KIB, 1 << 20).await;
        assert_eq!((n, closed), (4 * KIB, Err(FsError::NoSpace)));
        assert_eq!(read(&fs, "/f").await.unwrap(), "o".repeat(3_000));
        assert_eq!(used(&fs).await, (3_000, 1));
    }
    // Nothing of the failed append (nor a scratch object) is left on disk.
    assert_eq!(bytes_on_disk(dir.path()), 3_000);
}

/// Regression: the local store used to truncate a file when a writer opened it, while an
/// append or a truncate was still copying the old content from it, so everything past
/// the first copied chunk was lost.
#[tokio::test]
async fn appends_and_truncates_keep_large_files_on_a_local_store() {
    let dir = tempfile::tempdir().unwrap();
    let fs = limited_on(
        &Store::memory(),
        Store::local(dir.path()).unwrap(),
        1 << 30,
        1000,
    )
    .await;
    let big = "x".repeat(3 * 1024 * 1024 + 17);
    write(&fs, "/f", &big, WriteMode::Truncate).await;
    write(&fs, "/f", "tail", WriteMode::Append).await;
    assert_eq!(fs.stat("/f").await.unwrap().len, big.len() as u64 + 4);
    let whole = |fs: Vfs| async move { read_all(&fs, "/f", 16 << 20).await.unwrap() };
    assert_eq!(whole(fs.clone()).await, format!("{big}tail").into_bytes());
    fs.truncate("/f", 2 * 1024 * 1024 + 1).await.unwrap();
    assert_eq!(
        whole(fs.clone()).await,
        big.as_bytes()[..2 * 1024 * 1024 + 1]
    );
}

#[tokio::test]
async fn unlink_truncate_and_overwrite_free_space() {
    let base = seeded_base().await;
    let fs = limited(&base, 10_000, 100).await;
    write(&fs, "/a", &"a".repeat(6_000), WriteMode::Truncate).await;
    let (_, closed) = write_until(&fs, "/b", WriteMode::Truncate, 6_000, 6_000).await;
    assert_eq!(closed, Err(FsError::NoSpace));
    fs.unlink("/a").await.unwrap();
    assert_eq!(used(&fs).await, (0, 1));
    write(&fs, "/b", &"b".repeat(6_000), WriteMode::Truncate).await;
    fs.truncate("/b", 1_000).await.unwrap();
    assert_eq!(used(&fs).await, (1_000, 1));
    // Growing by truncate is a write too.
    assert_eq!(fs.truncate("/b", 20_000).await, Err(FsError::NoSpace));
    assert_eq!(fs.stat("/b").await.unwrap().len, 1_000);
    // Overwriting frees the old content as the file is opened.
    write(&fs, "/b", &"c".repeat(9_500), WriteMode::Truncate).await;
    assert_eq!(used(&fs).await, (9_500, 1));
    write(&fs, "/b", "short", WriteMode::Truncate).await;
    assert_eq!(used(&fs).await, (5, 1));
}

#[tokio::test]
async fn rename_keeps_the_totals() {
    let base = seeded_base().await;
    let fs = limited(&base, 10_000, 100).await;
    write(&fs, "/x", &"x".repeat(3_000), WriteMode::Truncate).await;
    fs.mkdir("/d").await.unwrap();
    assert_eq!(used(&fs).await, (3_000, 2));
    fs.rename("/x", "/d/y").await.unwrap();
    assert_eq!(used(&fs).await, (3_000, 2));
    write(&fs, "/z", &"z".repeat(1_000), WriteMode::Truncate).await;
    fs.rename("/d/y", "/z").await.unwrap();
    assert_eq!(used(&fs).await, (3_000, 2));
    fs.rename("/d", "/e").await.unwrap();
    fs.symlink("z", "/e/l").await.unwrap();
    fs.rename("/e/l", "/l").await.unwrap();
    assert_eq!(used(&fs).await, (3_001, 3));
}

#[tokio::test]
async fn copy_up_counts_the_base_file() {
    let base = seeded_base().await;
    base.put("huge", Bytes::from(vec![b'h'; 20_000]), &Attrs::default())
        .await
        .unwrap();
    let fs = limited(&base, 10_000, 100).await;
    assert_eq!(used(&fs).await, (0, 0));
    fs.chmod("/README.md", 0o600).await.unwrap();
    assert_eq!(used(&fs).await, (6, 1));
    write(&fs, "/dir/a.txt", "B", WriteMode::Append).await;
    assert_eq!(used(&fs).await, (8, 2));
    // A deletion of a base path is a whiteout: one object, no bytes.
    fs.unlink("/etc/passwd").await.unwrap();
    assert_eq!(used(&fs).await, (8, 3));
    // A base file bigger than the quota cannot be copied up, and stays as it was.
    assert_eq!(fs.chmod("/huge", 0o600).await, Err(FsError::NoSpace));
    assert_eq!(
        fs.open_write("/huge", WriteMode::Append).await.err(),
        Some(FsError::NoSpace)
    );
    assert_eq!(fs.rename("/huge", "/moved").await, Err(FsError::NoSpace));
    assert_eq!(fs.stat("/huge").await.unwrap().len, 20_000);
    assert_eq!(used(&fs).await, (8, 3));
    // Overwriting it costs only what is written.
    write(&fs, "/huge", "small", WriteMode::Truncate).await;
    assert_eq!(used(&fs).await, (13, 4));
}

#[tokio::test]
async fn the_object_quota_counts_every_kind_of_entry() {
    let base = seeded_base().await;
    let fs = limited(&base, 1 << 20, 3).await;
    fs.mkdir("/a").await.unwrap();
    write(&fs, "/a/f", "f", WriteMode::Truncate).await;
    fs.symlink("f", "/a/l").await.unwrap();
    assert_eq!(used(&fs).await, (2, 3));
    assert_eq!(
        fs.open_write("/g", WriteMode::Truncate).await.err(),
        Some(FsError::NoSpace)
    );
    assert_eq!(fs.mkdir("/b").await, Err(FsError::NoSpace));
    assert_eq!(fs.symlink("x", "/m").await, Err(FsError::NoSpace));
    assert_eq!(fs.unlink("/README.md").await, Err(FsError::NoSpace));
    assert_eq!(fs.chmod("/README.md", 0o600).await, Err(FsError::NoSpace));
    assert_eq!(read(&fs, "/README.md").await.unwrap(), "hello\n");
    // Rewriting what exists needs no new object.
    write(&fs, "/a/f", "again", WriteMode::Truncate).await;
    fs.unlink("/a/l").await.unwrap();
    fs.mkdir("/b").await.unwrap();
    assert_eq!(used(&fs).await, (5, 3));
}

#[tokio::test]
async fn concurrent_writers_share_the_quota() {
    let base = seeded_base().await;
    let fs = limited(&base, 100_000, 100).await;
    let tasks: Vec<_> = (0..4)
        .map(|i| {
            let fs = fs.clone();
            tokio::spawn(async move {
                write_until(&fs, &format!("/w{i}"), WriteMode::Truncate, 1_000, 1 << 20).await
            })
        })
        .collect();
    let mut stored = 0;
    for (i, t) in tasks.into_iter().enumerate() {
        let (n, closed) = t.await.unwrap();
        assert_eq!(closed, Err(FsError::NoSpace), "writer {i} wrote {n}");
        stored += fs.stat(&format!("/w{i}")).await.unwrap().len;
    }
    // Every writer ran into the quota; none of them stored anything, and the books
    // balance exactly afterwards.
    assert_eq!(stored, 0);
    assert_eq!(used(&fs).await, (0, 4));
    // Writers that fit all succeed together.
    let tasks: Vec<_> = (0..4)
        .map(|i| {
            let fs = fs.clone();
            tokio::spawn(async move {
                write_until(&fs, &format!("/w{i}"), WriteMode::Truncate, 1_000, 25_000).await
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), (25_000, Ok(())));
    }
    assert_eq!(used(&fs).await, (100_000, 4));
}

#[tokio::test]
async fn a_dropped_writer_gives_its_reservation_back() {
    let base = seeded_base().await;
    let fs = limited(&base, 10_000, 100).await;
    let mut w = fs.open_write("/f", WriteMode::Truncate).await.unwrap();
    w.write(&[b'x'; 8_000]).await.unwrap();
    assert_eq!(used(&fs).await, (8_000, 1));
    drop(w);
    assert_eq!(used(&fs).await, (0, 1));
    write(&fs, "/g", &"g".repeat(9_000), WriteMode::Truncate).await;
}

#[tokio::test]
async fn commands_report_no_space_clearly() {
    use forkbox_commands::testing::Invocation;
    let base = seeded_base().await;
    let fs = limited(&base, 10_000, 100).await;
    write(&fs, "/data", &"d".repeat(6_000), WriteMode::Truncate).await;
    let fs: std::sync::Arc<dyn FileSystem> = std::sync::Arc::new(fs);
    let cmd = |name: &str| {
        forkbox_commands::all()
            .into_iter()
            .find(|c| c.name() == name)
            .unwrap()
    };
    let inv = Invocation {
        fs: fs.clone(),
        stdin: vec![b'i'; 6_000],
        ..Invocation::default()
    };
    let (st, _, err) = inv.run(cmd("cp").as_ref(), &["data", "copy"]).await;
    assert_eq!(st, 1);
    assert!(
        err.starts_with("cp: ") && err.ends_with(": No space left on device\n"),
        "{err}"
    );
    let (st, out, err) = inv.run(cmd("tee").as_ref(), &["t"]).await;
    assert_eq!((st, out.len()), (1, 6_000));
    assert_eq!(err, "tee: t: No space left on device\n");
    let (st, out, _) = inv
        .run(cmd("df").as_ref(), &["-B1", "--output=used,size"])
        .await;
    assert_eq!(
        (st, out.as_str()),
        (0, " Used 1B-blocks\n 6000     10000\n")
    );
    // GNU sed gives 4 for an I/O error; it rewrites the file in place, so the file is
    // left empty, as `>` leaves it.
    let (st, _, err) = inv
        .run(cmd("sed").as_ref(), &["-i", "s/d/dd/g", "data"])
        .await;
    assert_eq!(
        (st, err.as_str()),
        (4, "sed: couldn't edit data: No space left on device\n")
    );
}

/// A fork that is a whole copy of the base (a Tigris bucket fork): base and upper are one
/// bucket and there are no whiteouts, so deleting and renaming change the bucket itself.
#[tokio::test]
async fn an_in_place_fork_changes_its_own_bucket() {
    let bucket = seeded_base().await;
    let layer = Layer {
        store: bucket.clone(),
        prefix: String::new(),
    };
    let fs = Vfs::new(ForkView {
        base: Some(layer.clone()),
        upper: layer,
        whiteouts: None,
    });
    fs.unlink("/README.md").await.unwrap();
    assert_eq!(fs.stat("/README.md").await, Err(FsError::NotFound));
    assert!(bucket.stat("README.md").await.unwrap().is_none());
    fs.rename("/dir/a.txt", "/moved.txt").await.unwrap();
    assert_eq!(read(&fs, "/moved.txt").await.unwrap(), "A");
    assert!(bucket.stat("dir/a.txt").await.unwrap().is_none());
    assert_eq!(names(&fs.read_dir("/dir").await.unwrap()), vec!["sub"]);
    fs.chmod("/moved.txt", 0o600).await.unwrap();
    assert_eq!(fs.stat("/moved.txt").await.unwrap().mode, 0o600);
    // Recreating a deleted path works.
    write(&fs, "/README.md", "again", WriteMode::Truncate).await;
    assert_eq!(read(&fs, "/README.md").await.unwrap(), "again");
}

/// Positioned writes, update mode, sync and read-back on the staged path.
#[tokio::test]
async fn writes_at_offsets_update_in_place() {
    let base = seeded_base().await;
    let (fs, _, _) = fork_of(&base).await;
    // Update mode keeps the base file's content and writes over it from offset 0.
    let mut w = fs
        .open_write("/README.md", WriteMode::Update)
        .await
        .unwrap();
    w.write(b"J").await.unwrap();
    w.write_at(4, b"O!\n").await.unwrap();
    w.sync().await.unwrap();
    assert_eq!(read(&fs, "/README.md").await.unwrap(), "JellO!\n");
    w.write_at(10, b"end").await.unwrap();
    w.close().await.unwrap();
    assert_eq!(read(&fs, "/README.md").await.unwrap(), "JellO!\n\0\0\0end");
    // A file larger than the in-memory staging threshold, written out of order.
    let block = vec![b'x'; 256 * 1024];
    let mut w = fs.open_write("/big", WriteMode::Truncate).await.unwrap();
    for i in (0..8u64).rev() {
        w.write_at(i * block.len() as u64, &block).await.unwrap();
    }
    w.write_at(3, b"abc").await.unwrap();
    w.close().await.unwrap();
    assert_eq!(fs.stat("/big").await.unwrap().len, 8 * 256 * 1024);
    assert_eq!(&fs.read_at("/big", 0, 8).await.unwrap()[..], b"xxxabcxx");
    assert_eq!(fs.usage().await.unwrap().bytes_used, 8 * 256 * 1024 + 13);
}

/// A fresh, empty overlay fork over `base` with its layer in `forks`, as the port.
async fn empty_fork(base: Store, forks: Store, quota: Quota) -> Arc<dyn FileSystem> {
    let overlay = Overlay::new(base, forks);
    let lease = crate::fork::Lease::new(
        crate::fork::ServerId::new(),
        std::time::Duration::from_secs(60),
    );
    let view = overlay.create(SessionId::new(), &lease).await.unwrap();
    Arc::new(Vfs::with_quota(view, quota))
}

#[tokio::test]
async fn the_memory_fork_keeps_the_port_contract() {
    forkbox_commands::testing::contract::run_all(|quota| {
        empty_fork(Store::memory(), Store::memory(), quota)
    })
    .await;
}

#[tokio::test]
async fn the_local_fork_keeps_the_port_contract() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    forkbox_commands::testing::contract::run_all(|quota| {
        let i = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let base = dir.path().join(format!("base{i}"));
        let forks = dir.path().join(format!("forks{i}"));
        std::fs::create_dir_all(&base).unwrap();
        std::fs::create_dir_all(&forks).unwrap();
        empty_fork(
            Store::local(&base).unwrap(),
            Store::local(&forks).unwrap(),
            quota,
        )
    })
    .await;
}

/// The same contract through the session's mount table (the fork at `/`, devices at
/// `/dev`), and what the devices do when opened.
#[tokio::test]
async fn the_mount_table_keeps_the_port_contract_and_opens_devices() {
    forkbox_commands::testing::contract::run_all(|quota| async move {
        let fork = empty_fork(Store::memory(), Store::memory(), quota).await;
        let m: Arc<dyn FileSystem> = Arc::new(mounts::Mounts::with_devices(fork));
        m
    })
    .await;
    use forkbox_commands::fs::{OpenOptions, VfsPath};
    let fork = empty_fork(Store::memory(), Store::memory(), Quota::UNLIMITED).await;
    let m = mounts::Mounts::with_devices(fork);
    let p = |s: &str| VfsPath::new(s).unwrap();
    let mut null = m
        .open(&p("/dev/null"), OpenOptions::read_write())
        .await
        .unwrap();
    assert_eq!(null.write(b"gone").await, Ok(4));
    assert!(null.read(10).await.unwrap().is_empty());
    assert_eq!(null.stat().await.unwrap().kind, FileKind::CharDevice);
    null.close().await.unwrap();
    let mut zero = m
        .open(&p("/dev/zero"), OpenOptions::read_only())
        .await
        .unwrap();
    assert_eq!(&zero.read(3).await.unwrap()[..], &[0, 0, 0]);
    let mut full = m
        .open(&p("/dev/full"), OpenOptions::write_only())
        .await
        .unwrap();
    assert_eq!(full.write(b"x").await, Err(FsError::NoSpace));
    let create = OpenOptions::write_only().create(true);
    assert_eq!(
        m.open(&p("/dev/new"), create).await.err(),
        Some(FsError::PermissionDenied)
    );
    assert_eq!(
        m.open(&p("/dev/null"), create.exclusive(true)).await.err(),
        Some(FsError::AlreadyExists)
    );
    assert_eq!(
        m.open(&p("/dev"), OpenOptions::write_only()).await.err(),
        Some(FsError::IsADirectory)
    );
    assert_eq!(
        m.open(&p("/dev/null"), OpenOptions::read_only().directory(true))
            .await
            .err(),
        Some(FsError::NotADirectory)
    );
    let fork_root = m.stat("/").await.unwrap().ino;
    assert_ne!(m.stat("/dev/null").await.unwrap().ino, fork_root);
    assert_ne!(
        m.stat("/dev/null").await.unwrap().ino,
        m.stat("/dev/zero").await.unwrap().ino
    );
}

/// A host symlink whose target is gone is still removed (the local store's backend looks
/// through symlinks), so renaming a directory that holds one works.
#[tokio::test]
async fn renaming_a_directory_with_a_symlink_on_the_local_store() {
    let dir = tempfile::tempdir().unwrap();
    let (base, forks) = (dir.path().join("base"), dir.path().join("forks"));
    std::fs::create_dir_all(&base).unwrap();
    std::fs::create_dir_all(&forks).unwrap();
    let fs = empty_fork(
        Store::local(&base).unwrap(),
        Store::local(&forks).unwrap(),
        Quota::UNLIMITED,
    )
    .await;
    fs.mkdir("/d").await.unwrap();
    let mut w = fs.open_write("/d/a", WriteMode::Truncate).await.unwrap();
    w.write(b"a").await.unwrap();
    w.close().await.unwrap();
    fs.symlink("a", "/d/l").await.unwrap();
    fs.rename("/d", "/e").await.unwrap();
    assert_eq!(fs.stat("/d").await, Err(FsError::NotFound));
    assert_eq!(fs.readlink("/e/l").await.unwrap(), "a");
    assert_eq!(read_all(fs.as_ref(), "/e/l", 10).await.unwrap(), b"a");
}

#[tokio::test]
async fn tmp_exists_free_until_used_and_can_be_removed() {
    let base = seeded_base().await;
    let forks = Store::memory();
    let fs = limited_on(&base, forks.clone(), 1 << 20, 2).await;
    let objects = |forks: Store| async move {
        let mut all = Vec::new();
        let mut dirs = vec![String::new()];
        while let Some(d) = dirs.pop() {
            for e in forks.list_entries(&d).await.unwrap() {
                let key = if d.is_empty() {
                    e.name.clone()
                } else {
                    format!("{d}/{}", e.name)
                };
                dirs.push(key.clone());
                all.push(key);
            }
        }
        all
    };
    let before = objects(forks.clone()).await;
    let fs = fs.with_tmp();
    let st = fs.stat("/tmp").await.unwrap();
    assert_eq!(st.kind, FileKind::Dir);
    assert_eq!(st.mode, 0o1777);
    assert!(names(&fs.read_dir("/").await.unwrap()).contains(&"tmp"));
    // It holds no object and costs nothing.
    assert_eq!(used(&fs).await, (0, 0));
    assert_eq!(objects(forks.clone()).await, before, "no store request");
    // Files under it are stored as any other, and count.
    write(&fs, "/tmp/x", "data", WriteMode::Truncate).await;
    assert_eq!(read(&fs, "/tmp/x").await.unwrap(), "data");
    assert_eq!(names(&fs.read_dir("/tmp").await.unwrap()), vec!["x"]);
    assert_eq!(used(&fs).await, (4, 1));
    // It is a directory like any other: not empty, then removable.
    assert_eq!(fs.rmdir("/tmp").await, Err(FsError::NotEmpty));
    fs.unlink("/tmp/x").await.unwrap();
    fs.rmdir("/tmp").await.unwrap();
    assert_eq!(fs.stat("/tmp").await.err(), Some(FsError::NotFound));
    assert!(!names(&fs.read_dir("/").await.unwrap()).contains(&"tmp"));
    assert_eq!(used(&fs).await, (0, 0));
    fs.mkdir("/tmp").await.unwrap();
    assert_eq!(used(&fs).await, (0, 1));
}

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

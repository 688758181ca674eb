//! The port's contract: one suite of checks every [`FileSystem`] must pass, run over
//! [`super::MemFs`] here and over the session's real `Vfs` in the main crate, so the test
//! double and the real thing cannot drift apart.
//!
//! [`run_all`] takes a maker that gives a fresh, empty filesystem (just `/`) holding at
//! most the given [`Quota`]; each check gets its own. A failing check panics with its
//! name and what differed.

use std::future::Future;
use std::io::SeekFrom;
use std::sync::Arc;

use crate::fs::{
    FileHandle, FileKind, FileSystem, FsError, FsResult, OpenOptions, Quota, SESSION_GID,
    SESSION_UID, VfsPath,
};

fn p(path: &str) -> VfsPath {
    VfsPath::new(path).expect("a valid test path")
}

fn rw_create() -> OpenOptions {
    OpenOptions::read_write().create(true)
}

async fn open(fs: &dyn FileSystem, path: &str, opts: OpenOptions) -> FsResult<FileHandle> {
    fs.open(&p(path), opts).await
}

async fn put(fs: &dyn FileSystem, path: &str, data: &[u8]) {
    let mut h = open(fs, path, rw_create().truncate(true))
        .await
        .unwrap_or_else(|e| panic!("create {path}: {e}"));
    h.write(data).await.expect("write");
    h.close().await.expect("close");
}

async fn read_path(fs: &dyn FileSystem, path: &str) -> FsResult<Vec<u8>> {
    crate::fs::read_all(fs, path, 1 << 20).await
}

async fn read_handle(h: &mut FileHandle) -> Vec<u8> {
    let mut out = Vec::new();
    let mut off = 0u64;
    loop {
        let chunk = h.read_at(off, 4096).await.expect("read_at");
        if chunk.is_empty() {
            return out;
        }
        off += chunk.len() as u64;
        out.extend_from_slice(&chunk);
    }
}

/// The bytes quota [`quota_applies_to_handles`] runs under.
pub const CONTRACT_QUOTA_BYTES: u64 = 64 * 1024;

/// Runs every check, each over a fresh filesystem from `make`.
pub async fn run_all<F, Fut>(make: F)
where
    F: Fn(Quota) -> Fut,
    Fut: Future<Output = Arc<dyn FileSystem>>,
{
    macro_rules! check {
        ($name:ident) => {
            eprintln!("contract: {}", stringify!($name));
            $name(make(Quota::UNLIMITED).await.as_ref()).await;
        };
    }
    check!(create_write_read_and_reopen);
    check!(writes_are_visible_to_other_opens_at_once);
    check!(exclusive_create);
    check!(missing_paths_and_files_as_directories);
    check!(directory_flag_and_directory_handles);
    check!(nofollow_and_symlinks);
    check!(access_modes);
    check!(seek_and_gaps);
    check!(append_goes_at_the_end);
    check!(truncate_and_set_len);
    check!(rename_keeps_open_handles);
    check!(rename_over_an_open_file);
    check!(unlink_keeps_open_handles);
    check!(inode_numbers_are_stable_and_distinct);
    check!(owners_links_and_times);
    check!(resolution_rules);
    check!(path_calls_and_handles_agree);
    eprintln!("contract: quota_applies_to_handles");
    let quota = Quota {
        bytes: Some(CONTRACT_QUOTA_BYTES),
        objects: None,
    };
    quota_applies_to_handles(make(quota).await.as_ref()).await;
}

/// A created file can be written, read back through the handle and by path, and
/// reopened.
pub async fn create_write_read_and_reopen(fs: &dyn FileSystem) {
    let mut h = open(fs, "/f", rw_create()).await.expect("create");
    assert_eq!(h.write(b"hello").await, Ok(5));
    assert_eq!(h.position(), 5);
    assert_eq!(h.read(10).await.expect("read at end"), &b""[..]);
    assert_eq!(h.seek(SeekFrom::Start(1)).await, Ok(1));
    assert_eq!(h.read(3).await.expect("read"), &b"ell"[..]);
    assert_eq!(h.position(), 4);
    let meta = h.stat().await.expect("fstat");
    assert_eq!((meta.kind, meta.len, meta.mode), (FileKind::File, 5, 0o644));
    h.sync().await.expect("sync");
    h.close().await.expect("close");
    assert_eq!(read_path(fs, "/f").await.expect("read path"), b"hello");
    let mut again = open(fs, "/f", OpenOptions::read_only())
        .await
        .expect("reopen");
    assert_eq!(read_handle(&mut again).await, b"hello");
    again.close().await.expect("close");
}

/// What is written through one handle is visible to another open of the same file, to
/// `stat` and to path reads before the writer syncs or closes.
pub async fn writes_are_visible_to_other_opens_at_once(fs: &dyn FileSystem) {
    put(fs, "/v", b"old").await;
    let mut w = open(fs, "/v", OpenOptions::write_only())
        .await
        .expect("open w");
    w.write(b"NEW!").await.expect("write");
    let mut r = open(fs, "/v", OpenOptions::read_only())
        .await
        .expect("open r");
    assert_eq!(read_handle(&mut r).await, b"NEW!");
    assert_eq!(fs.stat("/v").await.expect("stat").len, 4);
    assert_eq!(read_path(fs, "/v").await.expect("path read"), b"NEW!");
    // A reader opened before a write sees it too.
    w.write_at(8, b"z").await.expect("write_at");
    assert_eq!(read_handle(&mut r).await, b"NEW!\0\0\0\0z");
    w.sync().await.expect("sync");
    w.close().await.expect("close");
    assert_eq!(read_handle(&mut r).await, b"NEW!\0\0\0\0z");
    r.close().await.expect("close");
    assert_eq!(
        read_path(fs, "/v").await.expect("path read"),
        b"NEW!\0\0\0\0z"
    );
}

/// `O_CREAT|O_EXCL` fails on anything existing, a symlink (even dangling) included.
pub async fn exclusive_create(fs: &dyn FileSystem) {
    let excl = OpenOptions::write_only().create(true).exclusive(true);
    open(fs, "/e", excl)
        .await
        .expect("new file")
        .close()
        .await
        .expect("close");
    assert_eq!(
        open(fs, "/e", excl).await.err(),
        Some(FsError::AlreadyExists)
    );
    fs.mkdir("/d").await.expect("mkdir");
    assert_eq!(
        open(fs, "/d", excl).await.err(),
        Some(FsError::AlreadyExists)
    );
    fs.symlink("/nowhere", "/dangle").await.expect("symlink");
    assert_eq!(
        open(fs, "/dangle", excl).await.err(),
        Some(FsError::AlreadyExists)
    );
    assert_eq!(fs.stat("/nowhere").await, Err(FsError::NotFound));
    // Without O_EXCL, O_CREAT through a dangling symlink creates its target.
    open(fs, "/dangle", OpenOptions::write_only().create(true))
        .await
        .expect("create through symlink")
        .close()
        .await
        .expect("close");
    assert!(fs.stat("/nowhere").await.expect("target").is_file());
}

/// Missing files without `O_CREAT`, missing parents, and files used as directories.
pub async fn missing_paths_and_files_as_directories(fs: &dyn FileSystem) {
    put(fs, "/file", b"x").await;
    let ro = OpenOptions::read_only();
    assert_eq!(open(fs, "/nope", ro).await.err(), Some(FsError::NotFound));
    assert_eq!(
        open(fs, "/nope", OpenOptions::write_only()).await.err(),
        Some(FsError::NotFound)
    );
    assert_eq!(
        open(fs, "/no/dir/f", rw_create()).await.err(),
        Some(FsError::NotFound)
    );
    assert_eq!(
        open(fs, "/file/x", rw_create()).await.err(),
        Some(FsError::NotADirectory)
    );
    assert_eq!(
        open(fs, "/file/", ro).await.err(),
        Some(FsError::NotADirectory)
    );
    assert_eq!(
        open(fs, "/", OpenOptions::write_only()).await.err(),
        Some(FsError::IsADirectory)
    );
    // O_CREAT makes files: not over a directory, not at a path that must be one.
    assert_eq!(
        open(fs, "/", OpenOptions::read_only().create(true))
            .await
            .err(),
        Some(FsError::IsADirectory)
    );
    assert_eq!(
        open(fs, "/new/", rw_create()).await.err(),
        Some(FsError::IsADirectory)
    );
    assert_eq!(fs.stat("/new").await, Err(FsError::NotFound));
}

/// `O_DIRECTORY`, and handles on directories.
pub async fn directory_flag_and_directory_handles(fs: &dyn FileSystem) {
    put(fs, "/file", b"x").await;
    fs.mkdir("/d").await.expect("mkdir");
    let dir = OpenOptions::read_only().directory(true);
    assert_eq!(
        open(fs, "/file", dir).await.err(),
        Some(FsError::NotADirectory)
    );
    assert_eq!(
        open(fs, "/new", dir.create(true)).await.err(),
        Some(FsError::InvalidArgument)
    );
    assert_eq!(
        open(fs, "/d", OpenOptions::read_write()).await.err(),
        Some(FsError::IsADirectory)
    );
    let mut h = open(fs, "/d", dir).await.expect("open dir");
    assert_eq!(h.kind(), FileKind::Dir);
    assert_eq!(h.read(1).await, Err(FsError::IsADirectory));
    let meta = h.stat().await.expect("fstat dir");
    assert!(meta.is_dir());
    assert_eq!(meta.ino, fs.stat("/d").await.expect("stat").ino);
    h.close().await.expect("close");
    let mut root = open(fs, "/", dir).await.expect("open /");
    assert!(root.stat().await.expect("fstat /").is_dir());
    root.close().await.expect("close");
}

/// `O_NOFOLLOW` refuses a last symlink only; without it the target is opened.
pub async fn nofollow_and_symlinks(fs: &dyn FileSystem) {
    fs.mkdir("/d").await.expect("mkdir");
    put(fs, "/d/t", b"target").await;
    fs.symlink("/d/t", "/l").await.expect("symlink");
    fs.symlink("d", "/dl").await.expect("symlink");
    let nf = OpenOptions::read_only().nofollow(true);
    assert_eq!(open(fs, "/l", nf).await.err(), Some(FsError::Loop));
    // Symlinks before the last component are followed.
    let mut h = open(fs, "/dl/t", nf).await.expect("through a dir link");
    assert_eq!(read_handle(&mut h).await, b"target");
    h.close().await.expect("close");
    let mut h = open(fs, "/l", OpenOptions::read_only())
        .await
        .expect("follow");
    assert_eq!(read_handle(&mut h).await, b"target");
    assert_eq!(
        h.stat().await.expect("fstat").ino,
        fs.stat("/d/t").await.expect("stat").ino
    );
    h.close().await.expect("close");
    fs.symlink("loop", "/loop").await.expect("symlink");
    assert_eq!(
        open(fs, "/loop", OpenOptions::read_only()).await.err(),
        Some(FsError::Loop)
    );
    assert_eq!(
        open(fs, "/loop", rw_create()).await.err(),
        Some(FsError::Loop)
    );
}

/// Reads need read access, writes write access ("Bad file descriptor").
pub async fn access_modes(fs: &dyn FileSystem) {
    put(fs, "/f", b"data").await;
    let mut ro = open(fs, "/f", OpenOptions::read_only()).await.expect("ro");
    assert_eq!(ro.write(b"x").await, Err(FsError::BadDescriptor));
    assert_eq!(ro.write_at(0, b"x").await, Err(FsError::BadDescriptor));
    assert_eq!(ro.set_len(0).await, Err(FsError::BadDescriptor));
    ro.close().await.expect("close");
    let mut wo = open(fs, "/f", OpenOptions::write_only()).await.expect("wo");
    assert_eq!(wo.read(1).await, Err(FsError::BadDescriptor));
    assert_eq!(wo.read_at(0, 1).await, Err(FsError::BadDescriptor));
    // Opening for writing without O_TRUNC keeps the content; writes go from 0.
    wo.write(b"DA").await.expect("write");
    wo.close().await.expect("close");
    assert_eq!(read_path(fs, "/f").await.expect("read"), b"DAta");
}

/// `lseek` from the start, the position and the end; before 0 is refused; a write past
/// the end leaves a gap of zeros.
pub async fn seek_and_gaps(fs: &dyn FileSystem) {
    let mut h = open(fs, "/s", rw_create()).await.expect("create");
    h.write(b"0123456789").await.expect("write");
    assert_eq!(h.seek(SeekFrom::End(-3)).await, Ok(7));
    assert_eq!(h.read(10).await.expect("read"), &b"789"[..]);
    assert_eq!(h.seek(SeekFrom::Current(-5)).await, Ok(5));
    assert_eq!(
        h.seek(SeekFrom::Current(-6)).await,
        Err(FsError::InvalidArgument)
    );
    assert_eq!(
        h.seek(SeekFrom::End(-11)).await,
        Err(FsError::InvalidArgument)
    );
    assert_eq!(h.position(), 5);
    assert_eq!(h.seek(SeekFrom::Start(12)).await, Ok(12));
    assert_eq!(h.read(1).await.expect("read past end"), &b""[..]);
    h.write(b"!").await.expect("write past end");
    assert_eq!(h.stat().await.expect("fstat").len, 13);
    assert_eq!(read_handle(&mut h).await, b"0123456789\0\0!");
    h.close().await.expect("close");
}

/// `O_APPEND` writes go at the end, whatever the position and whoever else wrote.
pub async fn append_goes_at_the_end(fs: &dyn FileSystem) {
    put(fs, "/log", b"start\n").await;
    let app = OpenOptions::write_only().append(true);
    let mut a = open(fs, "/log", app).await.expect("a");
    let mut b = open(fs, "/log", app).await.expect("b");
    a.write(b"a1\n").await.expect("a1");
    b.write(b"b1\n").await.expect("b1");
    assert_eq!(b.position(), 12);
    a.seek(SeekFrom::Start(0)).await.expect("seek");
    a.write(b"a2\n").await.expect("a2");
    assert_eq!(a.position(), 15);
    b.write_at(0, b"b2\n").await.expect("pwrite appends");
    a.close().await.expect("close");
    b.close().await.expect("close");
    assert_eq!(
        read_path(fs, "/log").await.expect("read"),
        b"start\na1\nb1\na2\nb2\n"
    );
}

/// `O_TRUNC` empties a file; `ftruncate` cuts and extends with zeros.
pub async fn truncate_and_set_len(fs: &dyn FileSystem) {
    put(fs, "/t", b"0123456789").await;
    let mut h = open(fs, "/t", OpenOptions::read_write().truncate(true))
        .await
        .expect("trunc");
    assert_eq!(h.stat().await.expect("fstat").len, 0);
    assert_eq!(fs.stat("/t").await.expect("stat").len, 0);
    h.write(b"abcdef").await.expect("write");
    h.set_len(3).await.expect("shrink");
    assert_eq!(read_handle(&mut h).await, b"abc");
    h.set_len(5).await.expect("grow");
    assert_eq!(read_handle(&mut h).await, b"abc\0\0");
    assert_eq!(h.position(), 6);
    h.close().await.expect("close");
    assert_eq!(read_path(fs, "/t").await.expect("read"), b"abc\0\0");
    // O_TRUNC without write access leaves the file alone.
    let mut r = open(fs, "/t", OpenOptions::read_only().truncate(true))
        .await
        .expect("ro trunc");
    assert_eq!(r.stat().await.expect("fstat").len, 5);
    r.close().await.expect("close");
}

/// A handle is on the file: renaming its path changes nothing for it, and what it
/// writes afterwards is at the new path.
pub async fn rename_keeps_open_handles(fs: &dyn FileSystem) {
    fs.mkdir("/d").await.expect("mkdir");
    put(fs, "/d/a", b"one").await;
    let ino = fs.stat("/d/a").await.expect("stat").ino;
    let mut h = open(fs, "/d/a", OpenOptions::read_write())
        .await
        .expect("open");
    fs.rename("/d/a", "/b").await.expect("rename");
    assert_eq!(fs.stat("/d/a").await, Err(FsError::NotFound));
    assert_eq!(read_handle(&mut h).await, b"one");
    h.seek(SeekFrom::End(0)).await.expect("seek");
    h.write(b"two").await.expect("write after rename");
    assert_eq!(h.stat().await.expect("fstat").ino, ino);
    assert_eq!(fs.stat("/b").await.expect("stat").ino, ino);
    h.sync().await.expect("sync");
    assert_eq!(read_path(fs, "/b").await.expect("read"), b"onetwo");
    // Renaming the directory it is in changes nothing either.
    fs.rename("/b", "/d/b").await.expect("rename back");
    fs.rename("/d", "/e").await.expect("rename dir");
    h.write(b"3").await.expect("write after dir rename");
    h.close().await.expect("close");
    assert_eq!(read_path(fs, "/e/b").await.expect("read"), b"onetwo3");
    assert_eq!(fs.stat("/e/b").await.expect("stat").ino, ino);
    assert!(!fs.read_dir("/e").await.expect("ls").is_empty());
}

/// Renaming another file over an open one replaces the name only: the handle keeps the
/// old file.
pub async fn rename_over_an_open_file(fs: &dyn FileSystem) {
    put(fs, "/victim", b"old content").await;
    put(fs, "/new", b"new").await;
    let old_ino = fs.stat("/victim").await.expect("stat").ino;
    let new_ino = fs.stat("/new").await.expect("stat").ino;
    assert_ne!(old_ino, new_ino);
    let mut h = open(fs, "/victim", OpenOptions::read_write())
        .await
        .expect("open");
    fs.rename("/new", "/victim").await.expect("rename over");
    assert_eq!(read_path(fs, "/victim").await.expect("read"), b"new");
    assert_eq!(fs.stat("/victim").await.expect("stat").ino, new_ino);
    assert_eq!(read_handle(&mut h).await, b"old content");
    h.write(b"OLD").await.expect("write to the replaced file");
    assert_eq!(read_handle(&mut h).await, b"OLD content");
    let meta = h.stat().await.expect("fstat");
    assert_eq!((meta.ino, meta.nlink), (old_ino, 0));
    h.close().await.expect("close");
    assert_eq!(read_path(fs, "/victim").await.expect("read"), b"new");
}

/// An unlinked file lives on for its open handles, and the name is free at once.
pub async fn unlink_keeps_open_handles(fs: &dyn FileSystem) {
    put(fs, "/u", b"keep me").await;
    let mut h = open(fs, "/u", OpenOptions::read_write())
        .await
        .expect("open");
    fs.unlink("/u").await.expect("unlink");
    assert_eq!(fs.stat("/u").await, Err(FsError::NotFound));
    assert_eq!(
        open(fs, "/u", OpenOptions::read_only()).await.err(),
        Some(FsError::NotFound)
    );
    assert_eq!(read_handle(&mut h).await, b"keep me");
    h.seek(SeekFrom::End(0)).await.expect("seek");
    h.write(b"!").await.expect("write unlinked");
    assert_eq!(read_handle(&mut h).await, b"keep me!");
    assert_eq!(h.stat().await.expect("fstat").nlink, 0);
    put(fs, "/u", b"other").await;
    assert_eq!(read_handle(&mut h).await, b"keep me!");
    h.sync().await.expect("sync unlinked");
    h.close().await.expect("close unlinked");
    assert_eq!(read_path(fs, "/u").await.expect("read"), b"other");
    assert_eq!(
        fs.read_dir("/")
            .await
            .expect("ls")
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>(),
        ["u"]
    );
}

/// The same file has the same inode number however it is reached; different files have
/// different ones.
pub async fn inode_numbers_are_stable_and_distinct(fs: &dyn FileSystem) {
    fs.mkdir("/d").await.expect("mkdir");
    put(fs, "/d/a", b"a").await;
    put(fs, "/d/b", b"b").await;
    fs.symlink("a", "/d/l").await.expect("symlink");
    let ino = |m: FsResult<crate::Metadata>| m.expect("stat").ino;
    let a = ino(fs.stat("/d/a").await);
    assert_ne!(a, 0);
    assert_eq!(a, ino(fs.stat("/d/a").await));
    assert_eq!(a, ino(fs.stat("/d/./a").await));
    assert_eq!(a, ino(fs.stat("/d/l").await));
    assert_eq!(a, ino(fs.lstat("/d/a").await));
    let others = [
        ino(fs.stat("/d/b").await),
        ino(fs.lstat("/d/l").await),
        ino(fs.stat("/d").await),
        ino(fs.stat("/").await),
    ];
    let mut all = vec![a];
    all.extend(others);
    let mut unique = all.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "inode numbers {all:?}");
    assert_eq!(ino(fs.stat("/d/.").await), ino(fs.stat("/d").await));
    assert_eq!(ino(fs.stat("/d/..").await), ino(fs.stat("/").await));
    let listed = fs.read_dir("/d").await.expect("ls");
    let listed_a = listed.iter().find(|e| e.name == "a").expect("a listed");
    assert_eq!(listed_a.meta.ino, a);
    // Renames keep the number, for files and directories.
    let d = ino(fs.stat("/d").await);
    fs.rename("/d/a", "/d/c").await.expect("rename");
    assert_eq!(ino(fs.stat("/d/c").await), a);
    fs.rename("/d", "/e").await.expect("rename dir");
    assert_eq!(ino(fs.stat("/e").await), d);
    assert_eq!(ino(fs.stat("/e/c").await), a);
    // A new file at an old name is a new file.
    put(fs, "/e/a", b"again").await;
    assert!(!all.contains(&ino(fs.stat("/e/a").await)));
}

/// Owner, links and times of what `stat` gives.
pub async fn owners_links_and_times(fs: &dyn FileSystem) {
    put(fs, "/f", b"x").await;
    fs.mkdir("/d").await.expect("mkdir");
    for path in ["/f", "/d", "/"] {
        let m = fs.stat(path).await.expect("stat");
        assert_eq!((m.uid, m.gid), (SESSION_UID, SESSION_GID), "{path}");
        assert!(m.atime >= m.mtime, "{path}");
        assert!(m.ctime >= m.mtime, "{path}");
    }
    assert_eq!(fs.stat("/f").await.expect("stat").nlink, 1);
    assert!(fs.stat("/d").await.expect("stat").nlink >= 2);
    let mut h = open(fs, "/f", OpenOptions::read_only())
        .await
        .expect("open");
    let m = h.stat().await.expect("fstat");
    assert_eq!((m.uid, m.gid, m.nlink), (SESSION_UID, SESSION_GID, 1));
    h.close().await.expect("close");
}

/// Path resolution through the port: `..` after a symlink is the parent of its target,
/// never above `/`; trailing slashes need directories.
pub async fn resolution_rules(fs: &dyn FileSystem) {
    fs.mkdir("/d").await.expect("mkdir");
    fs.mkdir("/d/sub").await.expect("mkdir");
    put(fs, "/d/sub/f", b"f").await;
    fs.symlink("/d/sub", "/l").await.expect("symlink");
    let ino = |m: FsResult<crate::Metadata>| m.expect("stat").ino;
    assert_eq!(ino(fs.stat("/l/..").await), ino(fs.stat("/d").await));
    let mut h = open(fs, "/l/../sub/f", OpenOptions::read_only())
        .await
        .expect("open through ..");
    assert_eq!(read_handle(&mut h).await, b"f");
    h.close().await.expect("close");
    assert_eq!(ino(fs.stat("/../../d").await), ino(fs.stat("/d").await));
    fs.symlink("../../../../d/sub/f", "/d/up")
        .await
        .expect("symlink");
    assert_eq!(read_path(fs, "/d/up").await.expect("read"), b"f");
    assert_eq!(fs.stat("/d/sub/f/").await, Err(FsError::NotADirectory));
    assert!(fs.stat("/l/").await.expect("stat").is_dir());
    assert_eq!(fs.canonicalize("/l/f").await.expect("realpath"), "/d/sub/f");
}

/// The path calls and the handles see one filesystem.
pub async fn path_calls_and_handles_agree(fs: &dyn FileSystem) {
    let mut w = fs
        .open_write("/p", crate::WriteMode::Truncate)
        .await
        .expect("open_write");
    w.write(b"path api").await.expect("write");
    w.close().await.expect("close");
    let mut h = open(fs, "/p", OpenOptions::read_write())
        .await
        .expect("open");
    assert_eq!(read_handle(&mut h).await, b"path api");
    h.write(b"PATH").await.expect("write");
    h.close().await.expect("close");
    assert_eq!(read_path(fs, "/p").await.expect("read"), b"PATH api");
    fs.truncate("/p", 4).await.expect("truncate");
    let mut h = open(fs, "/p", OpenOptions::read_only())
        .await
        .expect("open");
    assert_eq!(read_handle(&mut h).await, b"PATH");
    h.close().await.expect("close");
    fs.chmod("/p", 0o600).await.expect("chmod");
    let mut h = open(fs, "/p", OpenOptions::read_only())
        .await
        .expect("open");
    assert_eq!(h.stat().await.expect("fstat").mode, 0o600);
    h.close().await.expect("close");
}

/// Writes through handles count against the quota: past it, "No space left on device",
/// and the file keeps what fit.
pub async fn quota_applies_to_handles(fs: &dyn FileSystem) {
    let half = vec![b'x'; (CONTRACT_QUOTA_BYTES / 2) as usize];
    let mut h = open(fs, "/big", rw_create()).await.expect("create");
    h.write(&half).await.expect("first half");
    assert_eq!(h.write(&half).await.err(), None, "exactly the quota fits");
    assert_eq!(h.write(b"!").await, Err(FsError::NoSpace));
    assert_eq!(
        h.set_len(CONTRACT_QUOTA_BYTES * 2).await,
        Err(FsError::NoSpace)
    );
    h.set_len(10).await.expect("shrinking frees");
    h.close().await.expect("close");
    assert_eq!(fs.stat("/big").await.expect("stat").len, 10);
    let mut other = open(fs, "/other", rw_create()).await.expect("create");
    other.write(&half).await.expect("room freed by the shrink");
    other.close().await.expect("close");
}

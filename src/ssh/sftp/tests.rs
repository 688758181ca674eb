//! The SFTP server over the in-memory filesystem, request by request.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on a broken assumption"
)]

use forkbox_commands::budget::Budget;
use forkbox_commands::testing::MemFs;

use super::wire::*;
use super::*;

/// A reply, parsed enough for the tests.
#[derive(Debug, PartialEq, Eq)]
enum Got {
    Status(Code, String),
    Handle(Vec<u8>),
    Data(Vec<u8>),
    Names(Vec<(String, String, Attrs)>),
    Attrs(Attrs),
    Other(u8),
}

struct Client {
    sftp: Sftp,
    fs: Arc<MemFs>,
    id: u32,
}

fn code_of(n: u32) -> Code {
    match n {
        0 => Code::Ok,
        1 => Code::Eof,
        2 => Code::NoSuchFile,
        3 => Code::PermissionDenied,
        4 => Code::Failure,
        5 => Code::BadMessage,
        8 => Code::OpUnsupported,
        n => panic!("unexpected status {n}"),
    }
}

impl Client {
    fn new() -> Client {
        let fs = MemFs::new();
        Client {
            sftp: Sftp::new(fs.clone(), Budget::default()),
            fs,
            id: 0,
        }
    }

    /// Sends a request of `kind` whose fields `build` writes; checks the reply's id.
    async fn req(&mut self, kind: u8, build: impl FnOnce(&mut Writer)) -> Got {
        self.id += 1;
        let mut w = Writer::new(kind, Some(self.id));
        build(&mut w);
        let pkt = w.finish();
        let reply = self.sftp.request(&pkt[4..]).await;
        let mut r = Reader::new(&reply[4..]);
        let t = r.u8().unwrap();
        assert_eq!(r.u32().unwrap(), self.id, "reply id");
        let got = match t {
            FXP_STATUS => {
                let code = code_of(r.u32().unwrap());
                let msg = r.string().unwrap().to_string();
                r.string().unwrap();
                Got::Status(code, msg)
            }
            FXP_HANDLE => Got::Handle(r.bytes().unwrap().to_vec()),
            FXP_DATA => Got::Data(r.bytes().unwrap().to_vec()),
            FXP_ATTRS => Got::Attrs(r.attrs().unwrap()),
            FXP_NAME => {
                let n = r.u32().unwrap();
                let mut v = Vec::new();
                for _ in 0..n {
                    let a = r.string().unwrap().to_string();
                    let b = r.string().unwrap().to_string();
                    v.push((a, b, r.attrs().unwrap()));
                }
                Got::Names(v)
            }
            t => return Got::Other(t),
        };
        assert!(r.rest().is_empty(), "trailing bytes in reply {t}");
        got
    }

    async fn open(&mut self, path: &str, flags: u32, mode: Option<u32>) -> Got {
        self.req(FXP_OPEN, |w| {
            w.string(path).u32(flags).attrs(&Attrs {
                permissions: mode,
                ..Attrs::default()
            });
        })
        .await
    }

    async fn handle(&mut self, path: &str, flags: u32) -> Vec<u8> {
        match self.open(path, flags, None).await {
            Got::Handle(h) => h,
            other => panic!("open {path}: {other:?}"),
        }
    }

    async fn write(&mut self, h: &[u8], offset: u64, data: &[u8]) -> Got {
        self.req(FXP_WRITE, |w| {
            w.bytes(h).u64(offset).bytes(data);
        })
        .await
    }

    async fn read(&mut self, h: &[u8], offset: u64, len: u32) -> Got {
        self.req(FXP_READ, |w| {
            w.bytes(h).u64(offset).u32(len);
        })
        .await
    }

    async fn close(&mut self, h: &[u8]) -> Got {
        self.req(FXP_CLOSE, |w| {
            w.bytes(h);
        })
        .await
    }

    async fn path(&mut self, kind: u8, path: &str) -> Got {
        self.req(kind, |w| {
            w.string(path);
        })
        .await
    }

    async fn two(&mut self, kind: u8, a: &str, b: &str) -> Got {
        self.req(kind, |w| {
            w.string(a).string(b);
        })
        .await
    }

    async fn ext(&mut self, name: &str, build: impl FnOnce(&mut Writer)) -> Got {
        self.req(FXP_EXTENDED, |w| {
            w.string(name);
            build(w);
        })
        .await
    }
}

fn ok() -> Got {
    Got::Status(Code::Ok, "Success".into())
}

fn status(code: Code, msg: &str) -> Got {
    Got::Status(code, msg.into())
}

#[tokio::test]
async fn init_answers_version_3_with_the_extensions() {
    let c = Client::new();
    let reply = c.sftp.request(&[FXP_INIT, 0, 0, 0, 3]).await;
    let mut r = Reader::new(&reply[4..]);
    assert_eq!(r.u8(), Ok(FXP_VERSION));
    assert_eq!(r.u32(), Ok(3));
    let mut names = Vec::new();
    while !r.rest().is_empty() {
        names.push(r.string().unwrap().to_string());
        r.string().unwrap();
    }
    assert!(names.contains(&"posix-rename@openssh.com".to_string()));
    assert!(names.contains(&"limits@openssh.com".to_string()));
}

#[tokio::test]
async fn write_then_read_back_in_ranges() {
    let mut c = Client::new();
    let h = c.handle("/f", FXF_WRITE | FXF_CREAT | FXF_TRUNC).await;
    assert_eq!(c.write(&h, 0, b"hello ").await, ok());
    assert_eq!(c.write(&h, 6, b"world\n").await, ok());
    assert_eq!(c.close(&h).await, ok());
    assert_eq!(
        forkbox_commands::fs::read_all(&*c.fs, "/f", 100)
            .await
            .unwrap(),
        b"hello world\n"
    );
    // Relative paths start at `/`.
    let h = c.handle("f", FXF_READ).await;
    assert_eq!(c.read(&h, 6, 100).await, Got::Data(b"world\n".to_vec()));
    assert_eq!(c.read(&h, 12, 100).await, status(Code::Eof, "End of file"));
    // A read longer than the limit is cut to it.
    assert_eq!(
        c.read(&h, 0, u32::MAX).await,
        Got::Data(b"hello world\n".to_vec())
    );
    assert_eq!(c.close(&h).await, ok());
    assert_eq!(c.close(&h).await, status(Code::Failure, "Invalid handle"));
    assert_eq!(c.sftp.open_handles(), 0);
}

#[tokio::test]
async fn created_files_take_the_clients_mode_under_umask() {
    let mut c = Client::new();
    let Got::Handle(h) = c.open("/x", FXF_WRITE | FXF_CREAT, Some(0o777)).await else {
        panic!()
    };
    c.close(&h).await;
    assert_eq!(c.fs.stat("/x").await.unwrap().mode, 0o755);
    // An existing file keeps its mode.
    c.fs.chmod("/x", 0o600).await.unwrap();
    let Got::Handle(h) = c.open("/x", FXF_WRITE | FXF_TRUNC, Some(0o644)).await else {
        panic!()
    };
    c.close(&h).await;
    assert_eq!(c.fs.stat("/x").await.unwrap().mode, 0o600);
}

#[tokio::test]
async fn errors_map_to_status_codes() {
    let mut c = Client::new();
    assert_eq!(
        c.open("/missing", FXF_READ, None).await,
        status(Code::NoSuchFile, "No such file or directory")
    );
    assert_eq!(
        c.path(FXP_STAT, "/missing").await,
        status(Code::NoSuchFile, "No such file or directory")
    );
    c.fs.mkdir("/d").await.unwrap();
    assert_eq!(
        c.path(FXP_REMOVE, "/d").await,
        status(Code::Failure, "Is a directory")
    );
    c.fs.open_write("/d/f", WriteModeAlias::Truncate)
        .await
        .unwrap()
        .close()
        .await
        .unwrap();
    assert_eq!(
        c.path(FXP_RMDIR, "/d").await,
        status(Code::Failure, "Directory not empty")
    );
    assert_eq!(
        c.ext("hardlink@openssh.com", |w| {
            w.string("/d/f").string("/g");
        })
        .await,
        status(Code::OpUnsupported, "hard links are not supported")
    );
    assert_eq!(
        c.ext("no-such@example.com", |_| {}).await,
        status(
            Code::OpUnsupported,
            "Operation unsupported (no-such@example.com)"
        )
    );
    assert_eq!(
        c.req(99, |_| {}).await,
        status(
            Code::OpUnsupported,
            "Operation unsupported (request type 99)"
        )
    );
    // A request cut short is a bad message, answered with its id.
    assert_eq!(
        c.req(FXP_OPEN, |w| {
            w.u32(1000);
        })
        .await,
        status(Code::BadMessage, "Bad message")
    );
    assert_eq!(
        c.sftp.request(&[]).await,
        wire::status(0, Code::BadMessage, "Bad message")
    );
}

use forkbox_commands::fs::WriteMode as WriteModeAlias;

#[tokio::test]
async fn directories_list_dot_entries_then_eof() {
    let mut c = Client::new();
    c.fs.mkdir("/d").await.unwrap();
    for i in 0..300 {
        c.fs.open_write(&format!("/d/f{i:03}"), WriteModeAlias::Truncate)
            .await
            .unwrap()
            .close()
            .await
            .unwrap();
    }
    let Got::Handle(h) = c.path(FXP_OPENDIR, "/d").await else {
        panic!()
    };
    let mut names = Vec::new();
    loop {
        match c
            .req(FXP_READDIR, |w| {
                w.bytes(&h);
            })
            .await
        {
            Got::Names(v) => {
                assert!(v.len() <= READDIR_BATCH);
                names.extend(v);
            }
            Got::Status(Code::Eof, _) => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(names.len(), 302);
    assert_eq!(names[0].0, ".");
    assert_eq!(names[1].0, "..");
    assert_eq!(names[2].0, "f000");
    assert!(
        names[2]
            .1
            .starts_with("-rw-r--r--   1 1000     1000            0 ")
    );
    assert!(names[2].1.ends_with(" f000"));
    assert_eq!(
        names[0].2.permissions.map(|p| p & 0o170_000),
        Some(0o040_000)
    );
    assert_eq!(c.close(&h).await, ok());
    assert_eq!(
        c.path(FXP_OPENDIR, "/d/f000").await,
        status(Code::Failure, "Not a directory")
    );
}

#[tokio::test]
async fn the_handle_table_is_bounded() {
    let mut c = Client::new();
    c.fs.open_write("/f", WriteModeAlias::Truncate)
        .await
        .unwrap()
        .close()
        .await
        .unwrap();
    let mut handles = Vec::new();
    for _ in 0..MAX_HANDLES {
        handles.push(c.handle("/f", FXF_READ).await);
    }
    let refused = format!("Too many open files (at most {MAX_HANDLES} handles per SFTP session)");
    assert_eq!(
        c.open("/f", FXF_READ, None).await,
        status(Code::Failure, &refused)
    );
    assert_eq!(
        c.path(FXP_OPENDIR, "/").await,
        status(Code::Failure, &refused)
    );
    let last = handles.pop().unwrap();
    assert_eq!(c.close(&last).await, ok());
    let again = c.handle("/f", FXF_READ).await;
    assert_ne!(again, handles[0]);
    c.sftp.close_all().await;
    assert_eq!(c.sftp.open_handles(), 0);
}

#[tokio::test]
async fn listings_held_open_are_charged_to_the_session_budget() {
    let mut c = Client::new();
    c.fs.mkdir("/d").await.unwrap();
    for i in 0..100 {
        c.fs.open_write(&format!("/d/{i:0>100}"), WriteModeAlias::Truncate)
            .await
            .unwrap()
            .close()
            .await
            .unwrap();
    }
    let budget = Budget::new(16 * 1024, 8);
    c.sftp = Sftp::new(c.fs.clone(), budget.clone());
    let Got::Handle(h) = c.path(FXP_OPENDIR, "/").await else {
        panic!()
    };
    let held = budget.mem_used();
    assert!(held > 0);
    let Got::Status(Code::Failure, msg) = c.path(FXP_OPENDIR, "/d").await else {
        panic!()
    };
    assert!(msg.starts_with("out of memory (session limit"), "{msg}");
    assert_eq!(budget.mem_used(), held);
    c.close(&h).await;
    assert_eq!(budget.mem_used(), 0);
}

#[tokio::test]
async fn rename_refuses_to_replace_but_posix_rename_does() {
    let mut c = Client::new();
    for name in ["/a", "/b"] {
        let h = c.handle(name, FXF_WRITE | FXF_CREAT).await;
        c.write(&h, 0, name.as_bytes()).await;
        c.close(&h).await;
    }
    assert_eq!(
        c.two(FXP_RENAME, "/a", "/b").await,
        status(Code::Failure, "File exists")
    );
    assert_eq!(c.two(FXP_RENAME, "/a", "/c").await, ok());
    assert_eq!(
        c.ext("posix-rename@openssh.com", |w| {
            w.string("/c").string("/b");
        })
        .await,
        ok()
    );
    assert_eq!(
        forkbox_commands::fs::read_all(&*c.fs, "/b", 10)
            .await
            .unwrap(),
        b"/a"
    );
    assert!(c.fs.stat("/c").await.is_err());
}

#[tokio::test]
async fn symlinks_take_the_target_first_and_stay_inside() {
    let mut c = Client::new();
    assert_eq!(c.two(FXP_SYMLINK, "/", "/root-link").await, ok());
    assert_eq!(
        c.path(FXP_READLINK, "/root-link").await,
        Got::Names(vec![("/".into(), "/".into(), Attrs::default())])
    );
    // Through the link, `..` and absolute host paths, nothing outside the fork.
    for path in ["/root-link/etc/passwd", "../../etc/passwd", "/etc/passwd"] {
        assert_eq!(
            c.open(path, FXF_READ, None).await,
            status(Code::NoSuchFile, "No such file or directory"),
            "{path}"
        );
    }
    let Got::Attrs(a) = c.path(FXP_LSTAT, "/root-link").await else {
        panic!()
    };
    assert_eq!(a.permissions.map(|p| p & 0o170_000), Some(0o120_000));
}

#[tokio::test]
async fn realpath_resolves_and_keeps_a_new_last_name() {
    let mut c = Client::new();
    c.fs.mkdir("/d").await.unwrap();
    let name = |s: &str| Got::Names(vec![(s.into(), s.into(), Attrs::default())]);
    assert_eq!(c.path(FXP_REALPATH, ".").await, name("/"));
    assert_eq!(c.path(FXP_REALPATH, "").await, name("/"));
    assert_eq!(c.path(FXP_REALPATH, "/d/../d/./").await, name("/d"));
    assert_eq!(c.path(FXP_REALPATH, "/../../d/new").await, name("/d/new"));
    assert_eq!(
        c.path(FXP_REALPATH, "/nope/new").await,
        status(Code::NoSuchFile, "No such file or directory")
    );
    assert_eq!(
        c.ext("expand-path@openssh.com", |w| {
            w.string("~/d");
        })
        .await,
        name("/d")
    );
}

#[tokio::test]
async fn setstat_changes_mode_times_and_size() {
    let mut c = Client::new();
    let h = c.handle("/f", FXF_WRITE | FXF_CREAT).await;
    c.write(&h, 0, b"0123456789").await;
    assert_eq!(
        c.req(FXP_FSETSTAT, |w| {
            w.bytes(&h).attrs(&Attrs {
                size: Some(4),
                permissions: Some(0o100_600),
                times: Some((5, 1_000_000)),
                ..Attrs::default()
            });
        })
        .await,
        ok()
    );
    c.close(&h).await;
    let m = c.fs.stat("/f").await.unwrap();
    assert_eq!((m.len, m.mode), (4, 0o600));
    assert_eq!(m.mtime, wire::time_of(1_000_000));
    assert_eq!(
        c.req(FXP_SETSTAT, |w| {
            w.string("/f").attrs(&Attrs {
                uid_gid: Some((0, 0)),
                ..Attrs::default()
            });
        })
        .await,
        status(Code::PermissionDenied, "Permission denied")
    );
    assert_eq!(
        c.req(FXP_MKDIR, |w| {
            w.string("/d").attrs(&Attrs {
                permissions: Some(0o777),
                ..Attrs::default()
            });
        })
        .await,
        ok()
    );
    assert_eq!(c.fs.stat("/d").await.unwrap().mode, 0o755);
}

#[test]
fn framing_takes_whole_packets_and_refuses_bad_lengths() {
    let mut buf = BytesMut::from(&[0u8, 0, 0, 2, 1, 2, 0, 0][..]);
    assert_eq!(next_packet(&mut buf), Ok(Some(Bytes::from_static(&[1, 2]))));
    assert_eq!(next_packet(&mut buf), Ok(None));
    buf.extend_from_slice(&[0, 1]);
    // Length 1, one byte short yet.
    assert_eq!(next_packet(&mut buf), Ok(None));
    let mut huge = BytesMut::from(&[0x10u8, 0, 0, 0][..]);
    assert_eq!(next_packet(&mut huge), Err(0x1000_0000));
    let mut zero = BytesMut::from(&[0u8, 0, 0, 0][..]);
    assert_eq!(next_packet(&mut zero), Err(0));
}

mod concurrent {
    //! Several requests answered at once: lanes, and a slow read that holds up nothing
    //! but its own handle.

    use std::time::{Duration, SystemTime};

    use forkbox_commands::fs::{DirEntry, FsResult, OpenFile, Usage, WriteHandle};
    use tokio::sync::Semaphore;

    use super::*;

    fn packet(kind: u8, id: u32, build: impl FnOnce(&mut Writer)) -> Bytes {
        let mut w = Writer::new(kind, Some(id));
        build(&mut w);
        Bytes::from(w.finish()[4..].to_vec())
    }

    #[test]
    fn lanes_keep_a_handles_requests_and_closes_in_order() {
        let h = 7u32.to_be_bytes();
        let read = packet(FXP_READ, 1, |w| {
            w.bytes(&h).u64(0).u32(10);
        });
        let close = packet(FXP_CLOSE, 2, |w| {
            w.bytes(&h);
        });
        let stat = packet(FXP_STAT, 3, |w| {
            w.string("/x");
        });
        let fsync = packet(FXP_EXTENDED, 4, |w| {
            w.string("fsync@openssh.com").bytes(&h);
        });
        let limits = packet(FXP_EXTENDED, 5, |w| {
            w.string("limits@openssh.com");
        });
        assert_eq!(lanes_of(&read), vec![Lane::Handle(7)]);
        assert_eq!(lanes_of(&close), vec![Lane::Handle(7), Lane::Paths]);
        assert_eq!(lanes_of(&stat), vec![Lane::Paths]);
        assert_eq!(lanes_of(&fsync), vec![Lane::Handle(7), Lane::Paths]);
        assert_eq!(lanes_of(&limits), vec![Lane::Paths]);
        assert_eq!(lanes_of(&[FXP_READ]), vec![Lane::Paths]);
    }

    /// A filesystem whose open files' reads wait for a permit of `gate`.
    struct GatedFs {
        inner: Arc<MemFs>,
        gate: Arc<Semaphore>,
    }

    struct GatedFile {
        inner: Box<dyn OpenFile>,
        gate: Arc<Semaphore>,
    }

    #[async_trait::async_trait]
    impl OpenFile for GatedFile {
        async fn read_at(&mut self, offset: u64, len: usize) -> FsResult<Bytes> {
            let _permit = self.gate.acquire().await.unwrap();
            self.inner.read_at(offset, len).await
        }
        async fn write_at(&mut self, offset: u64, data: &[u8]) -> FsResult<()> {
            self.inner.write_at(offset, data).await
        }
        async fn append(&mut self, data: &[u8]) -> FsResult<u64> {
            self.inner.append(data).await
        }
        async fn stat(&mut self) -> FsResult<Metadata> {
            self.inner.stat().await
        }
        async fn set_len(&mut self, len: u64) -> FsResult<()> {
            self.inner.set_len(len).await
        }
        async fn sync(&mut self) -> FsResult<()> {
            self.inner.sync().await
        }
        async fn close(self: Box<Self>) -> FsResult<()> {
            self.inner.close().await
        }
    }

    #[async_trait::async_trait]
    impl FileSystem for GatedFs {
        async fn stat(&self, path: &str) -> FsResult<Metadata> {
            self.inner.stat(path).await
        }
        async fn lstat(&self, path: &str) -> FsResult<Metadata> {
            self.inner.lstat(path).await
        }
        async fn read_at(&self, path: &str, offset: u64, len: usize) -> FsResult<Bytes> {
            self.inner.read_at(path, offset, len).await
        }
        async fn open_write(
            &self,
            path: &str,
            mode: forkbox_commands::fs::WriteMode,
        ) -> FsResult<Box<dyn WriteHandle>> {
            self.inner.open_write(path, mode).await
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
        async fn usage(&self) -> FsResult<Usage> {
            self.inner.usage().await
        }
        async fn open(&self, path: &VfsPath, opts: OpenOptions) -> FsResult<FileHandle> {
            let gate = self.gate.clone();
            let handle = self.inner.open(path, opts).await?;
            Ok(handle.map_file(|inner| Box::new(GatedFile { inner, gate })))
        }
    }

    /// The id of a reply packet (with its length field).
    fn reply_id(reply: &[u8]) -> u32 {
        let mut r = Reader::new(&reply[4..]);
        r.u8().unwrap();
        r.u32().unwrap()
    }

    #[tokio::test]
    async fn a_slow_read_holds_up_neither_a_stat_nor_another_handle() {
        let mem = MemFs::new();
        mem.put("/a", b"aaaa");
        mem.put("/b", b"bbbb");
        let gate = Arc::new(Semaphore::new(0));
        let fs = Arc::new(GatedFs {
            inner: mem.clone(),
            gate: gate.clone(),
        });
        let sftp = Sftp::new(fs, Budget::default());
        // Open both files first, as a client does before reading.
        let mut handles = Vec::new();
        for (i, path) in ["/a", "/b"].into_iter().enumerate() {
            let reply = sftp
                .request(&packet(FXP_OPEN, i as u32, |w| {
                    w.string(path).u32(FXF_READ).u32(0);
                }))
                .await;
            let mut r = Reader::new(&reply[4..]);
            assert_eq!(r.u8(), Ok(FXP_HANDLE), "{reply:?}");
            r.u32().unwrap();
            handles.push(r.bytes().unwrap().to_vec());
        }
        let (queue_tx, queue_rx) = mpsc::unbounded_channel();
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Bytes>();
        let queued = Arc::new(AtomicUsize::new(0));
        // Read a (10), stat (11), read b (12), close a (13): only the reads wait at the
        // gate, and the close waits for the read before it on its handle.
        let h0 = handles[0].clone();
        let h1 = handles[1].clone();
        let requests = [
            packet(FXP_READ, 10, |w| {
                w.bytes(&h0).u64(0).u32(4);
            }),
            packet(FXP_STAT, 11, |w| {
                w.string("/b");
            }),
            packet(FXP_READ, 12, |w| {
                w.bytes(&h1).u64(0).u32(4);
            }),
            packet(FXP_CLOSE, 13, |w| {
                w.bytes(&h0);
            }),
        ];
        for p in requests {
            queued.fetch_add(p.len(), Ordering::SeqCst);
            queue_tx.send(p).unwrap();
        }
        drop(queue_tx);
        let stop = CancellationToken::new();
        let answering = answer_with(&sftp, queue_rx, queued.clone(), stop, |reply| {
            let _ = out_tx.send(reply);
            std::future::ready(true)
        });
        tokio::pin!(answering);
        let mut order = Vec::new();
        // The stat is answered while both reads wait; the close waits for its read.
        tokio::select! {
            _ = &mut answering => panic!("ended with reads pending"),
            reply = out_rx.recv() => order.push(reply_id(&reply.unwrap())),
        }
        assert_eq!(order, vec![11]);
        tokio::select! {
            _ = &mut answering => panic!("ended with reads pending"),
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        assert!(out_rx.try_recv().is_err(), "nothing else passes the gate");
        // Let the reads through: each is answered, and the close only after its read.
        gate.add_permits(2);
        assert!(answering.await, "the queue ended cleanly");
        while let Ok(reply) = out_rx.try_recv() {
            order.push(reply_id(&reply));
        }
        assert_eq!(order.len(), 4, "{order:?}");
        let pos = |id| order.iter().position(|x| *x == id).unwrap();
        assert!(pos(10) < pos(13), "{order:?}");
        assert_eq!(queued.load(Ordering::SeqCst), 0);
        assert_eq!(sftp.open_handles(), 1);
    }
}

//! A probe of the forkbox WASI host: one sub-command per thing a guest does, printing
//! what it saw so tests can compare. Errors print as `error: errno N` (WASI errno).

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::time::{Duration, SystemTime};
use std::{env, fs};

fn fail(e: io::Error) -> ! {
    println!("error: errno {}", e.raw_os_error().unwrap_or(-1));
    std::process::exit(1);
}

fn ok<T>(r: io::Result<T>) -> T {
    r.unwrap_or_else(|e| fail(e))
}

fn kind(m: &fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        "symlink"
    } else if t.is_dir() {
        "dir"
    } else if t.is_file() {
        "file"
    } else {
        "other"
    }
}

fn errno_of(r: Result<(), wasi::Errno>) -> String {
    match r {
        Ok(()) => "ok".to_string(),
        Err(e) => format!("errno {}", e.raw()),
    }
}

fn main() {
    let mut args: Vec<String> = env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--no-chdir") {
        args.remove(0);
    } else if let Ok(pwd) = env::var("PWD") {
        // wasi-libc starts in `/`: take the shell's directory from PWD.
        ok(env::set_current_dir(pwd));
    }
    let a = |i: usize| args.get(i).cloned().unwrap_or_default();
    let out = io::stdout();
    let mut out = out.lock();
    match a(0).as_str() {
        "cat" => {
            let mut f = ok(fs::File::open(a(1)));
            let mut buf = Vec::new();
            ok(f.read_to_end(&mut buf));
            ok(out.write_all(&buf));
        }
        "write" => ok(fs::write(a(1), a(2))),
        "append" => {
            let mut f = ok(fs::OpenOptions::new().append(true).create(true).open(a(1)));
            ok(f.write_all(a(2).as_bytes()));
        }
        "create-new" => {
            ok(fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(a(1)));
        }
        "mkdir" => ok(fs::create_dir(a(1))),
        "mkdir-p" => ok(fs::create_dir_all(a(1))),
        "rmdir" => ok(fs::remove_dir(a(1))),
        "rm" => ok(fs::remove_file(a(1))),
        "rm-r" => ok(fs::remove_dir_all(a(1))),
        "ls" => {
            let mut names: Vec<String> = ok(fs::read_dir(a(1)))
                .map(|e| {
                    let e = ok(e);
                    let t = ok(e.file_type());
                    let k = if t.is_dir() {
                        "/"
                    } else if t.is_symlink() {
                        "@"
                    } else {
                        ""
                    };
                    format!("{}{k}", e.file_name().to_string_lossy())
                })
                .collect();
            names.sort();
            for n in names {
                ok(writeln!(out, "{n}"));
            }
        }
        "rename" => ok(fs::rename(a(1), a(2))),
        "symlink" => {
            // std's symlink is unstable on WASI: the raw call, under the root preopen.
            let r = unsafe { wasi::path_symlink(&a(1), 3, &under_root(&a(2))) };
            if let Err(e) = r {
                fail(io::Error::from_raw_os_error(i32::from(e.raw())));
            }
        }
        "readlink" => {
            let t = ok(fs::read_link(a(1)));
            ok(writeln!(out, "{}", t.display()));
        }
        "link" => ok(fs::hard_link(a(1), a(2))),
        "stat" | "lstat" => {
            let m = if a(0) == "stat" {
                ok(fs::metadata(a(1)))
            } else {
                ok(fs::symlink_metadata(a(1)))
            };
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map(|d| d.as_secs())
                .unwrap_or(0);
            ok(writeln!(out, "{} {} {}", kind(&m), m.len(), mtime));
        }
        "utimes" => {
            let f = ok(fs::File::options().write(true).open(a(1)));
            let secs: u64 = a(2).parse().unwrap_or(0);
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
            ok(f.set_modified(t));
        }
        "set-len" => {
            let f = ok(fs::File::options().write(true).open(a(1)));
            ok(f.set_len(a(2).parse().unwrap_or(0)));
        }
        "seek" => {
            // Write, seek back, read; then positional I/O through the raw calls.
            let mut f = ok(fs::File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(a(1)));
            ok(f.write_all(b"hello world"));
            ok(f.seek(SeekFrom::Start(6)));
            let mut s = String::new();
            ok(f.read_to_string(&mut s));
            let end = ok(f.stream_position());
            ok(writeln!(out, "{s} {end}"));
        }
        "pio" => {
            // pwrite/pread leave the position alone.
            let path = a(1);
            ok(fs::write(&path, "0123456789"));
            let mut f = ok(fs::File::options().read(true).write(true).open(&path));
            ok(f.seek(SeekFrom::Start(2)));
            let fd = raw_fd(&f);
            let data = b"AB";
            let iov = [wasi::Ciovec {
                buf: data.as_ptr(),
                buf_len: data.len(),
            }];
            let n = raw_pwrite(fd, &iov, 5);
            let mut buf = [0u8; 4];
            let got = raw_pread(fd, &mut buf, 4);
            let pos = ok(f.stream_position());
            ok(writeln!(
                out,
                "{n} {} {pos}",
                String::from_utf8_lossy(&buf[..got])
            ));
        }
        "env" => {
            let mut vars: Vec<(String, String)> = env::vars().collect();
            vars.sort();
            for (k, v) in vars {
                ok(writeln!(out, "{k}={v}"));
            }
        }
        "args" => {
            for arg in env::args() {
                ok(writeln!(out, "{arg}"));
            }
        }
        "cwd" => ok(writeln!(out, "{}", ok(env::current_dir()).display())),
        "clock" => {
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let t0 = std::time::Instant::now();
            std::thread::sleep(Duration::from_millis(20));
            let slept = t0.elapsed();
            ok(writeln!(
                out,
                "{} {}",
                now > 1_600_000_000,
                slept >= Duration::from_millis(20)
            ));
        }
        "random" => {
            let mut buf = [0u8; 64];
            let r = random(&mut buf);
            ok(writeln!(out, "{r} {}", buf.iter().any(|&b| b != 0)));
        }
        "poll-stdin" => {
            let ms: u64 = a(1).parse().unwrap_or(0);
            let ready = poll_stdin(ms);
            ok(writeln!(out, "{ready}"));
            if ready == "ready" {
                let mut s = String::new();
                ok(io::stdin().read_to_string(&mut s));
                ok(write!(out, "{s}"));
            }
        }
        "sleep" => {
            std::thread::sleep(Duration::from_millis(a(1).parse().unwrap_or(0)));
            ok(writeln!(out, "slept"));
        }
        "stdin" => {
            let mut buf = Vec::new();
            ok(io::stdin().read_to_end(&mut buf));
            ok(out.write_all(&buf));
        }
        "stderr" => {
            ok(io::stderr().write_all(a(1).as_bytes()));
        }
        "yes" => loop {
            if out.write_all(b"y\n").is_err() {
                std::process::exit(3);
            }
        },
        "spin" => {
            let mut x: u64 = 1;
            loop {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        "alloc" => {
            let mut keep: Vec<Vec<u8>> = Vec::new();
            loop {
                let mut v = vec![0u8; 16 << 20];
                v[0] = 1;
                keep.push(std::hint::black_box(v));
            }
        }
        "exit" => {
            ok(out.flush());
            std::process::exit(a(1).parse().unwrap_or(0));
        }
        "abort" => std::process::abort(),
        "escape" => {
            // Read through every way out a guest might try; print what each gave.
            for p in args.iter().skip(1) {
                match fs::read_to_string(p) {
                    Ok(s) => ok(writeln!(out, "{p}: {}", s.trim_end())),
                    Err(e) => ok(writeln!(
                        out,
                        "{p}: errno {}",
                        e.raw_os_error().unwrap_or(-1)
                    )),
                }
            }
        }
        "raw" => raw(&args[1..], &mut out),
        other => {
            eprintln!("probe: unknown sub-command {other:?}");
            std::process::exit(2);
        }
    }
}

/// `path` (relative to the cwd or absolute) as a name under the root preopen (fd 3).
fn under_root(path: &str) -> String {
    let abs = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{}/{path}", ok(env::current_dir()).display())
    };
    let rel = abs.trim_start_matches('/');
    if rel.is_empty() {
        ".".to_string()
    } else {
        rel.to_string()
    }
}

fn raw_fd(f: &fs::File) -> wasi::Fd {
    use std::os::fd::AsRawFd;
    f.as_raw_fd() as wasi::Fd
}

fn random(buf: &mut [u8]) -> String {
    // The `wasi` crate's raw calls are `unsafe fn`: they take raw pointers.
    errno_of(unsafe { wasi::random_get(buf.as_mut_ptr(), buf.len()) })
}

fn raw_pwrite(fd: wasi::Fd, iov: &[wasi::Ciovec], at: u64) -> usize {
    unsafe { wasi::fd_pwrite(fd, iov, at) }.unwrap_or(usize::MAX)
}

fn raw_pread(fd: wasi::Fd, buf: &mut [u8], at: u64) -> usize {
    let iov = [wasi::Iovec {
        buf: buf.as_mut_ptr(),
        buf_len: buf.len(),
    }];
    unsafe { wasi::fd_pread(fd, &iov, at) }.unwrap_or(0)
}

/// Polls stdin for reading with a timeout; gives "ready", "eof" or "timeout".
fn poll_stdin(ms: u64) -> &'static str {
    let subs = [
        wasi::Subscription {
            userdata: 1,
            u: wasi::SubscriptionU {
                tag: wasi::EVENTTYPE_FD_READ.raw(),
                u: wasi::SubscriptionUU {
                    fd_read: wasi::SubscriptionFdReadwrite { file_descriptor: 0 },
                },
            },
        },
        wasi::Subscription {
            userdata: 2,
            u: wasi::SubscriptionU {
                tag: wasi::EVENTTYPE_CLOCK.raw(),
                u: wasi::SubscriptionUU {
                    clock: wasi::SubscriptionClock {
                        id: wasi::CLOCKID_MONOTONIC,
                        timeout: ms * 1_000_000,
                        precision: 0,
                        flags: 0,
                    },
                },
            },
        },
    ];
    let mut events = [wasi::Event {
        userdata: 0,
        error: wasi::ERRNO_SUCCESS,
        type_: wasi::EVENTTYPE_CLOCK,
        fd_readwrite: wasi::EventFdReadwrite {
            nbytes: 0,
            flags: 0,
        },
    }; 2];
    let n = unsafe { wasi::poll_oneoff(subs.as_ptr(), events.as_mut_ptr(), 2) }.unwrap_or(0);
    let evs = &events[..n];
    if let Some(e) = evs.iter().find(|e| e.userdata == 1) {
        if e.fd_readwrite.flags & wasi::EVENTRWFLAGS_FD_READWRITE_HANGUP != 0 {
            return "eof";
        }
        return "ready";
    }
    "timeout"
}

/// Raw preview-1 calls whose errno the tests check: `raw NAME ARGS`.
fn raw(args: &[String], out: &mut impl Write) {
    let a = |i: usize| args.get(i).cloned().unwrap_or_default();
    let r = match a(0).as_str() {
        "link" => errno_of(unsafe { wasi::path_link(3, 0, &a(1), 3, &a(2)) }),
        "open-abs" => errno_of(unsafe {
            wasi::path_open(3, 1, &a(1), 0, wasi::RIGHTS_FD_READ, 0, 0).map(|_| ())
        }),
        "renumber-bad" => errno_of(unsafe { wasi::fd_renumber(3, 77) }),
        "close-bad" => errno_of(unsafe { wasi::fd_close(99) }),
        "seek-stdout" => errno_of(unsafe { wasi::fd_seek(1, 0, wasi::WHENCE_SET).map(|_| ()) }),
        "raise" => errno_of(unsafe { wasi::proc_raise(wasi::SIGNAL_TERM) }),
        "sock" => errno_of(unsafe { wasi::sock_shutdown(0, wasi::SDFLAGS_RD) }),
        "yield" => errno_of(unsafe { wasi::sched_yield() }),
        "prestat" => match unsafe { wasi::fd_prestat_get(3) } {
            Ok(p) => {
                let len = unsafe { p.u.dir.pr_name_len };
                let mut name = vec![0u8; len];
                let r = unsafe { wasi::fd_prestat_dir_name(3, name.as_mut_ptr(), len) };
                format!("{} {}", errno_of(r), String::from_utf8_lossy(&name))
            }
            Err(e) => format!("errno {}", e.raw()),
        },
        "fdstat" => match unsafe { wasi::fd_fdstat_get(a(1).parse().unwrap_or(0)) } {
            Ok(st) => format!(
                "type {} seek {}",
                st.fs_filetype.raw(),
                st.fs_rights_base & wasi::RIGHTS_FD_SEEK != 0
            ),
            Err(e) => format!("errno {}", e.raw()),
        },
        "prestat-4" => errno_of(unsafe { wasi::fd_prestat_get(4).map(|_| ()) }),
        "dir-read" => {
            let fd = unsafe {
                wasi::path_open(
                    3,
                    1,
                    ".",
                    wasi::OFLAGS_DIRECTORY,
                    wasi::RIGHTS_FD_READ,
                    0,
                    0,
                )
            };
            match fd {
                Ok(fd) => {
                    let mut b = [0u8; 4];
                    let iov = [wasi::Iovec {
                        buf: b.as_mut_ptr(),
                        buf_len: 4,
                    }];
                    errno_of(unsafe { wasi::fd_read(fd, &iov).map(|_| ()) })
                }
                Err(e) => format!("errno {}", e.raw()),
            }
        }
        other => format!("unknown raw call {other}"),
    };
    let _ = writeln!(out, "{r}");
}

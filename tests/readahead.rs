//! Read-ahead on S3, against a recording S3 server: how many GETs a read makes and what
//! ranges they ask for, that no change to a file is ever answered from stale read-ahead, and
//! that a failed GET is an error that does not stick. Request counts, never times.
//!
//! The window schedule these counts come from is in `src/vfs/readahead.rs`: a first read asks
//! for exactly itself, then windows of [`INITIAL_WINDOW`] doubling up to [`MAX_WINDOW`].
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

#[path = "support/recorder.rs"]
mod recorder;

use std::time::Duration;

use forkbox::fork::{ForkStrategy, ForkView, Layer, Lease, Overlay, ServerId, SessionId};
use forkbox::storage::{S3Config, Store};
use forkbox::vfs::readahead::{INITIAL_WINDOW, MAX_WINDOW};
use forkbox::vfs::{Quota, Vfs};
use forkbox_commands::{FileSystem, FsError, WriteMode};
use recorder::{Recorded, Recorder, in_child};

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;
/// What the commands read per call (`forkbox_commands::fs::READ_CHUNK`).
const CHUNK: usize = 64 * KIB;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn store(recorder: &Recorder, bucket: &str) -> Store {
    let cfg = S3Config {
        endpoint: Some(recorder.endpoint()),
        region: Some("us-east-1".into()),
        path_style: true,
    };
    Store::s3(&cfg, bucket).unwrap()
}

/// Deterministic bytes, different for each seed.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// An overlay fork of bucket `base` (its layer in `forks`) on the recorder.
async fn overlay_fork(recorder: &Recorder) -> Vfs {
    recorder.create_bucket("forks");
    let overlay = Overlay::new(store(recorder, "base"), store(recorder, "forks"));
    let lease = Lease::new(ServerId::new(), Duration::from_secs(600));
    let view = overlay.create(SessionId::new(), &lease).await.unwrap();
    Vfs::with_quota(view, Quota::UNLIMITED)
}

/// A fork changed in place (as a Tigris bucket fork is): base and upper are one bucket.
fn in_place_fork(recorder: &Recorder, bucket: &str) -> Vfs {
    let layer = Layer {
        store: store(recorder, bucket),
        prefix: String::new(),
    };
    let view = ForkView {
        base: Some(layer.clone()),
        upper: layer,
        whiteouts: None,
    };
    Vfs::with_quota(view, Quota::UNLIMITED)
}

/// The GETs of `key` in `bucket` received so far.
fn gets(recorder: &Recorder, bucket: &str, key: &str) -> Vec<Recorded> {
    recorder
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.bucket == bucket && r.key == key)
        .collect()
}

/// The byte range a GET asked for, `(first, last)` inclusive.
fn range(r: &Recorded) -> (u64, u64) {
    let spec = r.header("range").expect("every read is ranged");
    let (a, b) = spec
        .strip_prefix("bytes=")
        .and_then(|s| s.split_once('-'))
        .unwrap_or_else(|| panic!("range {spec:?}"));
    (a.parse().unwrap(), b.parse().unwrap())
}

/// The GETs one sequential reader of a `len`-byte file makes reading `chunk` bytes a call
/// from the start: the first read exactly, then windows from [`INITIAL_WINDOW`] (or the
/// read's size, if more) doubling up to [`MAX_WINDOW`], the last cut at the end of the file.
fn schedule(len: u64, chunk: usize) -> usize {
    let mut pos = chunk as u64;
    let mut n = 1;
    let mut window = INITIAL_WINDOW.max(chunk);
    while pos < len {
        pos += window as u64;
        n += 1;
        window = (window * 2).min(MAX_WINDOW);
    }
    n
}

async fn write(fs: &Vfs, path: &str, data: &[u8], mode: WriteMode) {
    let mut w = fs.open_write(path, mode).await.unwrap();
    for part in data.chunks(MIB) {
        w.write(part).await.unwrap();
    }
    w.close().await.unwrap();
}

/// Reads `path` from `from` to its end, [`CHUNK`] bytes a call.
async fn read_from(fs: &Vfs, path: &str, from: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let got = fs
            .read_at(path, from + out.len() as u64, CHUNK)
            .await
            .unwrap();
        if got.is_empty() {
            return out;
        }
        out.extend_from_slice(&got);
    }
}

/// Reads the [`CHUNK`]s of `path` from `from` up to `to`, checking them against `model`.
async fn read_span(fs: &Vfs, path: &str, model: &[u8], from: usize, to: usize) {
    let mut pos = from;
    while pos < to {
        let got = fs.read_at(path, pos as u64, CHUNK).await.unwrap();
        let end = (pos + CHUNK).min(model.len());
        assert!(got[..] == model[pos..end], "{path}: bytes at {pos} differ");
        pos = end;
    }
}

#[test]
fn sequential_reads_make_few_large_gets() {
    if in_child("sequential_reads_make_few_large_gets") {
        return;
    }
    let recorder = Recorder::start();
    let len = 32 * MIB;
    let data = pattern(1, len);
    recorder.put("base", "big.bin", &data);
    runtime().block_on(async {
        let fs = overlay_fork(&recorder).await;
        assert!(
            read_from(&fs, "/big.bin", 0).await == data,
            "content differs"
        );
        let got = gets(&recorder, "base", "big.bin");
        // 512 calls of 64 KiB; 10 GETs by the schedule (64 KiB, then 256 KiB .. 8 MiB).
        let bound = schedule(len as u64, CHUNK);
        assert_eq!(bound, 10);
        assert!(
            got.len() <= bound,
            "{} GETs:\n{}",
            got.len(),
            recorder.summary()
        );
        // Every byte asked for once: nothing fetched twice or past the end. (A window
        // fetched in the background may arrive before the one being read.)
        let mut ranges: Vec<(u64, u64)> = got.iter().map(range).collect();
        ranges.sort();
        let mut next = 0;
        for (a, b) in ranges {
            assert_eq!(a, next, "{}", recorder.summary());
            next = b + 1;
        }
        assert_eq!(next, len as u64);
        // The same through reads of 1 MiB (a copy-up's chunk): the first window is 1 MiB.
        let before = gets(&recorder, "base", "big.bin").len();
        let mut off = 0;
        loop {
            let got = fs.read_at("/big.bin", off, MIB).await.unwrap();
            if got.is_empty() {
                break;
            }
            assert!(got[..] == data[off as usize..off as usize + got.len()]);
            off += got.len() as u64;
        }
        let n = gets(&recorder, "base", "big.bin").len() - before;
        assert!(n <= schedule(len as u64, MIB), "{n} GETs");
    });
}

#[test]
fn small_and_random_reads_ask_for_what_they_read() {
    if in_child("small_and_random_reads_ask_for_what_they_read") {
        return;
    }
    let recorder = Recorder::start();
    let len = 64 * MIB;
    let data = pattern(2, len);
    recorder.put("base", "large.bin", &data);
    runtime().block_on(async {
        let fs = overlay_fork(&recorder).await;
        let got = fs.read_at("/large.bin", 0, 4 * KIB).await.unwrap();
        assert!(got[..] == data[..4 * KIB]);
        let log = gets(&recorder, "base", "large.bin");
        assert_eq!(log.len(), 1, "{}", recorder.summary());
        assert_eq!(log[0].header("range"), Some("bytes=0-4095"));
        // Seeks all over the object: each read is one GET of exactly its range.
        let offsets = [
            (len / 2) as u64,
            7,
            (len - 100) as u64,
            12_345_678,
            (3 * MIB) as u64,
            (len / 2) as u64 + 100_000,
        ];
        for &off in &offsets {
            let got = fs.read_at("/large.bin", off, 4 * KIB).await.unwrap();
            let end = (off as usize + 4 * KIB).min(len);
            assert!(got[..] == data[off as usize..end], "at {off}");
        }
        let log = gets(&recorder, "base", "large.bin");
        assert_eq!(log.len(), 1 + offsets.len(), "{}", recorder.summary());
        for (r, &off) in log[1..].iter().zip(&offsets) {
            let end = (off + 4 * KIB as u64).min(len as u64) - 1;
            assert_eq!(range(r), (off, end));
        }
    });
}

#[test]
fn interleaved_reads_of_two_files_both_read_ahead() {
    if in_child("interleaved_reads_of_two_files_both_read_ahead") {
        return;
    }
    let recorder = Recorder::start();
    let len = 16 * MIB;
    let (a, b) = (pattern(3, len), pattern(4, len));
    recorder.put("base", "a.bin", &a);
    recorder.put("base", "b.bin", &b);
    runtime().block_on(async {
        let fs = overlay_fork(&recorder).await;
        let mut pos = 0;
        while pos < len {
            for (path, model) in [("/a.bin", &a), ("/b.bin", &b)] {
                let got = fs.read_at(path, pos as u64, CHUNK).await.unwrap();
                assert!(got[..] == model[pos..pos + CHUNK], "{path} at {pos}");
            }
            pos += CHUNK;
        }
        for key in ["a.bin", "b.bin"] {
            let n = gets(&recorder, "base", key).len();
            assert!(n <= schedule(len as u64, CHUNK), "{key}: {n} GETs");
        }
    });
}

/// Reads `path` part way (so read-ahead holds windows of it), has `change` change it, and
/// reads it again from where the reader was and from the start: always `model` after the
/// change, never what read-ahead held before it.
async fn read_change_read<F: AsyncFnOnce(&Vfs)>(
    fs: &Vfs,
    path: &str,
    before: &[u8],
    change: F,
    after: &[u8],
) {
    let stop = (3 * MIB / 2).min(before.len());
    read_span(fs, path, before, 0, stop).await;
    change(fs).await;
    assert_eq!(
        fs.stat(path).await.unwrap().len,
        after.len() as u64,
        "{path}"
    );
    read_span(fs, path, after, stop.min(after.len()), after.len()).await;
    assert!(
        read_from(fs, path, 0).await == after,
        "{path}: content differs"
    );
}

/// The changes a session can make to a file it is reading, each followed by reads.
async fn changes_are_never_served_stale(fs: &Vfs, base_file: &str, base: &[u8]) {
    let len = base.len();
    let (x, y, z) = (pattern(10, len), pattern(11, len), pattern(12, 2 * MIB));
    // A base file, overwritten (the session's copy replaces it).
    read_change_read(
        fs,
        base_file,
        base,
        async |fs| write(fs, base_file, &x, WriteMode::Truncate).await,
        &x,
    )
    .await;
    // The session's own file, overwritten again.
    read_change_read(
        fs,
        base_file,
        &x,
        async |fs| write(fs, base_file, &y, WriteMode::Truncate).await,
        &y,
    )
    .await;
    // Appended to.
    let mut appended = y.clone();
    appended.extend_from_slice(&z);
    read_change_read(
        fs,
        base_file,
        &y,
        async |fs| write(fs, base_file, &z, WriteMode::Append).await,
        &appended,
    )
    .await;
    // Truncated, shorter than where the reader was.
    read_change_read(
        fs,
        base_file,
        &appended,
        async |fs| fs.truncate(base_file, MIB as u64).await.unwrap(),
        &appended[..MIB],
    )
    .await;
    // Extended by truncate (zeros), then written in place at an offset.
    let mut grown = appended[..MIB].to_vec();
    grown.resize(4 * MIB, 0);
    grown[2 * MIB..2 * MIB + 5].copy_from_slice(b"HELLO");
    read_change_read(
        fs,
        base_file,
        &appended[..MIB],
        async |fs| {
            fs.truncate(base_file, 4 * MIB as u64).await.unwrap();
            let mut w = fs.open_write(base_file, WriteMode::Update).await.unwrap();
            w.write_at(2 * MIB as u64, b"HELLO").await.unwrap();
            w.close().await.unwrap();
        },
        &grown,
    )
    .await;
    // Another file renamed over it.
    write(fs, "/other.bin", &z, WriteMode::Truncate).await;
    read_change_read(
        fs,
        base_file,
        &grown,
        async |fs| fs.rename("/other.bin", base_file).await.unwrap(),
        &z,
    )
    .await;
    // Unlinked and made again.
    read_change_read(
        fs,
        base_file,
        &z,
        async |fs| {
            fs.unlink(base_file).await.unwrap();
            assert_eq!(
                fs.read_at(base_file, 0, CHUNK).await.unwrap_err(),
                FsError::NotFound
            );
            write(fs, base_file, &x, WriteMode::CreateNew).await;
        },
        &x,
    )
    .await;
    // Renamed away: the old name is gone, the new one reads right from wherever.
    read_change_read(
        fs,
        base_file,
        &x,
        async |fs| {
            fs.rename(base_file, "/moved.bin").await.unwrap();
            write(fs, base_file, &y, WriteMode::CreateNew).await;
        },
        &y,
    )
    .await;
    assert!(read_from(fs, "/moved.bin", 0).await == x);
}

#[test]
fn changes_are_never_served_stale_on_an_overlay_fork() {
    if in_child("changes_are_never_served_stale_on_an_overlay_fork") {
        return;
    }
    let recorder = Recorder::start();
    let base = pattern(5, 6 * MIB);
    recorder.put("base", "f.bin", &base);
    runtime().block_on(async {
        let fs = overlay_fork(&recorder).await;
        changes_are_never_served_stale(&fs, "/f.bin", &base).await;
        // A base file copied up by chmod, then appended to.
        recorder.put("base", "g.bin", &base);
        let mut more = base.clone();
        more.extend_from_slice(b"tail");
        read_change_read(
            &fs,
            "/g.bin",
            &base,
            async |fs| {
                fs.chmod("/g.bin", 0o600).await.unwrap();
                write(fs, "/g.bin", b"tail", WriteMode::Append).await;
            },
            &more,
        )
        .await;
    });
    // The base bucket still holds what it did.
    assert!(recorder.object("base", "f.bin").unwrap() == base);
}

#[test]
fn changes_are_never_served_stale_on_an_in_place_fork() {
    if in_child("changes_are_never_served_stale_on_an_in_place_fork") {
        return;
    }
    let recorder = Recorder::start();
    let base = pattern(6, 6 * MIB);
    recorder.put("fork", "f.bin", &base);
    runtime().block_on(async {
        let fs = in_place_fork(&recorder, "fork");
        changes_are_never_served_stale(&fs, "/f.bin", &base).await;
    });
}

#[test]
fn a_failed_get_is_an_error_that_does_not_stick() {
    if in_child("a_failed_get_is_an_error_that_does_not_stick") {
        return;
    }
    let recorder = Recorder::start();
    let len = 8 * MIB;
    let data = pattern(7, len);
    recorder.put("base", "f.bin", &data);
    runtime().block_on(async {
        let fs = overlay_fork(&recorder).await;
        // A first read fails, then works.
        recorder.fail_gets("f.bin", 1);
        assert_eq!(
            fs.read_at("/f.bin", 0, CHUNK).await.unwrap_err(),
            FsError::Io
        );
        read_span(&fs, "/f.bin", &data, 0, CHUNK).await;
        // The window the next read waits for fails: an error, and the read after it asks
        // the store again and gets the bytes.
        recorder.fail_gets("f.bin", 1);
        assert_eq!(
            fs.read_at("/f.bin", CHUNK as u64, CHUNK).await.unwrap_err(),
            FsError::Io
        );
        read_span(&fs, "/f.bin", &data, CHUNK, 3 * MIB).await;
        // A window fetched ahead fails: the read that needs its bytes reports it.
        recorder.fail_gets("f.bin", 5);
        let mut pos = 3 * MIB;
        let err = loop {
            match fs.read_at("/f.bin", pos as u64, CHUNK).await {
                Ok(got) => {
                    assert!(got[..] == data[pos..pos + CHUNK]);
                    pos += CHUNK;
                }
                Err(e) => break e,
            }
        };
        assert_eq!(err, FsError::Io);
        recorder.fail_gets("f.bin", 0);
        read_span(&fs, "/f.bin", &data, pos, len).await;
        assert!(read_from(&fs, "/f.bin", 0).await == data);
        // Every request was ranged.
        for r in gets(&recorder, "base", "f.bin") {
            range(&r);
        }
    });
}

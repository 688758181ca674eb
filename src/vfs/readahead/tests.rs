//! The window schedule, the memory bound and invalidation, against a fake store that logs
//! every fetch. Request counts, never times.

use std::collections::HashSet;
use std::sync::Mutex;

use forkbox_commands::FsError;

use super::*;

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

impl Table for Mutex<Streams> {
    fn with<R>(&self, f: impl FnOnce(&mut Streams) -> R) -> R {
        f(&mut self.lock().unwrap())
    }
}

/// The byte at `off` of every fake object named `rel`: different per object.
fn byte(rel: &str, off: u64) -> u8 {
    let salt = rel
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    (off.wrapping_mul(2_654_435_761) >> 7).wrapping_add(salt) as u8
}

fn expected(rel: &str, off: u64, len: usize) -> Vec<u8> {
    (off..off + len as u64).map(|o| byte(rel, o)).collect()
}

/// A fake store: objects of given lengths whose content is [`byte`]; logs every fetch, and
/// fails fetches that start at an offset in `failing`.
#[derive(Clone, Default)]
struct Fake {
    log: Arc<Mutex<Vec<(String, u64, usize)>>>,
    failing: Arc<Mutex<HashSet<u64>>>,
}

impl Fake {
    fn fetcher(&self, rel: &str, file_len: u64) -> Fetcher {
        let fake = self.clone();
        let rel = rel.to_string();
        Arc::new(move |start, len| {
            fake.log.lock().unwrap().push((rel.clone(), start, len));
            let fail = fake.failing.lock().unwrap().contains(&start);
            let rel = rel.clone();
            async move {
                if fail {
                    return Err(FsError::Io);
                }
                let end = (start + len as u64).min(file_len);
                Ok(Bytes::from(expected(&rel, start, (end - start) as usize)))
            }
            .boxed()
        })
    }

    /// The fetches of `rel` so far, as (offset, length).
    fn fetches(&self, rel: &str) -> Vec<(u64, usize)> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|(r, _, _)| r == rel)
            .map(|(_, o, l)| (*o, *l))
            .collect()
    }
}

/// The fetches of one sequential reader of a `file_len`-byte file reading `chunk` bytes a
/// call from the start, by the schedule in the module header, windows capped at `cap`.
fn schedule(file_len: u64, chunk: usize, cap: usize) -> Vec<(u64, usize)> {
    let mut out = vec![(0, chunk.min(file_len as usize))];
    let mut pos = chunk as u64;
    let mut last = 0;
    while pos < file_len {
        let n = grown(last)
            .max(if last == 0 { chunk } else { 0 })
            .min(cap)
            .min((file_len - pos) as usize);
        out.push((pos, n));
        pos += n as u64;
        last = n;
    }
    out
}

struct Reader<'a> {
    table: &'a Mutex<Streams>,
    fake: &'a Fake,
}

impl Reader<'_> {
    async fn read(&self, rel: &str, file_len: u64, off: u64, len: usize) -> FsResult<Bytes> {
        let len = len.min(file_len.saturating_sub(off) as usize);
        let fetcher = self.fake.fetcher(rel, file_len);
        let got = read(self.table, &fetcher, Origin::Base, rel, file_len, off, len).await;
        let held = self.table.with(|t| t.held());
        assert!(held <= BUDGET, "{held} bytes held");
        got
    }

    /// Reads `rel` from `off` to its end, `chunk` bytes a call, checking every byte.
    async fn read_through(&self, rel: &str, file_len: u64, off: u64, chunk: usize) {
        let mut pos = off;
        while pos < file_len {
            let got = self.read(rel, file_len, pos, chunk).await.unwrap();
            assert_eq!(got[..], expected(rel, pos, got.len())[..], "at {pos}");
            assert!(!got.is_empty());
            pos += got.len() as u64;
        }
    }
}

#[tokio::test]
async fn sequential_reads_fetch_growing_windows() {
    let (table, fake) = (Mutex::new(Streams::default()), Fake::default());
    let r = Reader {
        table: &table,
        fake: &fake,
    };
    let len = 32 * MIB as u64;
    r.read_through("big", len, 0, 64 * KIB).await;
    let want = schedule(len, 64 * KIB, MAX_WINDOW);
    assert_eq!(fake.fetches("big"), want);
    // 64 KiB, then 256 KiB doubling to 8 MiB: 10 requests instead of 512.
    assert_eq!(want.len(), 10);
    // At the end of the file nothing is held.
    assert_eq!(table.with(|t| t.held()), 0);
}

#[tokio::test]
async fn a_large_first_read_sets_the_first_window() {
    let (table, fake) = (Mutex::new(Streams::default()), Fake::default());
    let r = Reader {
        table: &table,
        fake: &fake,
    };
    let len = 20 * MIB as u64 + 5;
    r.read_through("f", len, 0, MIB).await;
    assert_eq!(fake.fetches("f"), schedule(len, MIB, MAX_WINDOW));
}

#[tokio::test]
async fn first_and_random_reads_ask_for_what_they_read() {
    let (table, fake) = (Mutex::new(Streams::default()), Fake::default());
    let r = Reader {
        table: &table,
        fake: &fake,
    };
    let gib = 1u64 << 30;
    let got = r.read("huge", gib, 0, 4 * KIB).await.unwrap();
    assert_eq!(got[..], expected("huge", 0, 4 * KIB)[..]);
    assert_eq!(fake.fetches("huge"), [(0, 4 * KIB)]);
    // Seeks: each read asks for exactly itself, and nothing is fetched ahead.
    let offsets = [gib / 2, 7, gib - 100, 123_456_789, 5 * MIB as u64];
    for off in offsets {
        let got = r.read("huge", gib, off, 4 * KIB).await.unwrap();
        assert_eq!(got[..], expected("huge", off, got.len())[..]);
    }
    let mut want = vec![(0, 4 * KIB)];
    want.extend(
        offsets
            .iter()
            .map(|&o| (o, (4 * KIB).min((gib - o) as usize))),
    );
    assert_eq!(fake.fetches("huge"), want);
    assert_eq!(table.with(|t| t.held()), 0);
}

#[tokio::test]
async fn a_seek_resets_the_window() {
    let (table, fake) = (Mutex::new(Streams::default()), Fake::default());
    let r = Reader {
        table: &table,
        fake: &fake,
    };
    let len = 64 * MIB as u64;
    // Into the stream's growth, then far away, then on from there.
    for i in 0..40u64 {
        r.read("f", len, i * 64 * KIB as u64, 64 * KIB)
            .await
            .unwrap();
    }
    let before = fake.fetches("f").len();
    let far = 40 * MIB as u64;
    r.read_through("f", len, far, 64 * KIB).await;
    let after: Vec<(u64, usize)> = fake.fetches("f")[before..].to_vec();
    // Same schedule from the new place: exact read, then 256 KiB up.
    let want: Vec<(u64, usize)> = schedule(len - far, 64 * KIB, MAX_WINDOW)
        .into_iter()
        .map(|(o, n)| (o + far, n))
        .collect();
    assert_eq!(after, want);
}

#[tokio::test]
async fn two_interleaved_files_both_read_ahead() {
    let (table, fake) = (Mutex::new(Streams::default()), Fake::default());
    let r = Reader {
        table: &table,
        fake: &fake,
    };
    let len = 16 * MIB as u64;
    let mut pos = 0;
    while pos < len {
        for rel in ["a", "b"] {
            let got = r.read(rel, len, pos, 64 * KIB).await.unwrap();
            assert_eq!(got[..], expected(rel, pos, got.len())[..]);
        }
        pos += 64 * KIB as u64;
    }
    // Two streams fit the budget at full size: each file gets the single-reader schedule.
    for rel in ["a", "b"] {
        assert_eq!(
            fake.fetches(rel),
            schedule(len, 64 * KIB, MAX_WINDOW),
            "{rel}"
        );
    }
}

#[tokio::test]
async fn many_interleaved_files_share_the_budget() {
    let (table, fake) = (Mutex::new(Streams::default()), Fake::default());
    let r = Reader {
        table: &table,
        fake: &fake,
    };
    let files: Vec<String> = (0..6).map(|i| format!("f{i}")).collect();
    let len = 10 * MIB as u64;
    let mut pos = 0;
    while pos < len {
        for rel in &files {
            let got = r.read(rel, len, pos, 64 * KIB).await.unwrap();
            assert_eq!(got[..], expected(rel, pos, got.len())[..]);
        }
        pos += 64 * KIB as u64;
    }
    // Windows capped at an equal share of the budget (and the held bytes, checked at every
    // read, never above it); no window thrown away unread, so at most the schedule with that
    // cap, plus the growth a stream made before the others joined.
    let share = BUDGET / (2 * files.len());
    for rel in &files {
        let got = fake.fetches(rel);
        let want = schedule(len, 64 * KIB, share);
        assert!(
            got.len() <= want.len() + 1,
            "{rel}: {} fetches, schedule {}: {got:?}",
            got.len(),
            want.len()
        );
        let asked: usize = got.iter().map(|(_, n)| n).sum();
        assert_eq!(asked as u64, len, "{rel}: every byte fetched once");
    }
}

#[tokio::test]
async fn two_readers_of_one_file_keep_their_streams() {
    let (table, fake) = (Mutex::new(Streams::default()), Fake::default());
    let r = Reader {
        table: &table,
        fake: &fake,
    };
    let len = 16 * MIB as u64;
    let half = len / 2;
    let mut pos = 0;
    while pos < half {
        for start in [0, half] {
            let got = r.read("f", len, start + pos, 64 * KIB).await.unwrap();
            assert_eq!(got[..], expected("f", start + pos, got.len())[..]);
        }
        pos += 64 * KIB as u64;
    }
    // Each reader has a stream of its own: two schedules over half the file each, plus the
    // one window the first reader fetches ahead into the second half and never reads.
    let got = fake.fetches("f");
    let one = schedule(half, 64 * KIB, MAX_WINDOW).len();
    assert!(got.len() <= 2 * one + 1, "{one} per reader: {got:?}");
}

#[tokio::test]
async fn a_change_drops_the_streams_of_its_path() {
    let (table, fake) = (Mutex::new(Streams::default()), Fake::default());
    let r = Reader {
        table: &table,
        fake: &fake,
    };
    let len = 16 * MIB as u64;
    for i in 0..20u64 {
        r.read("f", len, i * 64 * KIB as u64, 64 * KIB)
            .await
            .unwrap();
        r.read("g", len, i * 64 * KIB as u64, 64 * KIB)
            .await
            .unwrap();
    }
    assert!(table.with(|t| t.held()) > 0);
    let held_g = {
        let t = table.lock().unwrap();
        t.streams
            .iter()
            .filter(|s| s.rel == "g")
            .map(Stream::held)
            .sum::<usize>()
    };
    table.with(|t| t.forget("f"));
    assert_eq!(table.with(|t| t.held()), held_g);
    // The next read of `f` is a first read again: exactly what it asks.
    let n = fake.fetches("f").len();
    let off = 20 * 64 * KIB as u64;
    r.read("f", len, off, 64 * KIB).await.unwrap();
    assert_eq!(fake.fetches("f")[n..], [(off, 64 * KIB)]);
}

#[tokio::test]
async fn a_failed_fetch_is_an_error_and_later_reads_work() {
    let (table, fake) = (Mutex::new(Streams::default()), Fake::default());
    let r = Reader {
        table: &table,
        fake: &fake,
    };
    let len = 8 * MIB as u64;
    let chunk = 64 * KIB as u64;
    r.read("f", len, 0, 64 * KIB).await.unwrap();
    // The window the second read waits for fails.
    fake.failing.lock().unwrap().insert(chunk);
    assert_eq!(r.read("f", len, chunk, 64 * KIB).await, Err(FsError::Io));
    assert_eq!(r.read("f", len, chunk, 64 * KIB).await, Err(FsError::Io));
    fake.failing.lock().unwrap().clear();
    r.read_through("f", len, chunk, 64 * KIB).await;
    // A background fetch that fails surfaces at the read that needs its bytes.
    let n = fake.fetches("g").len();
    assert_eq!(n, 0);
    r.read("g", len, 0, 64 * KIB).await.unwrap();
    let ahead = chunk + INITIAL_WINDOW as u64;
    fake.failing.lock().unwrap().insert(ahead);
    let mut pos = chunk;
    while pos < ahead {
        r.read("g", len, pos, 64 * KIB).await.unwrap();
        pos += chunk;
    }
    assert_eq!(r.read("g", len, ahead, 64 * KIB).await, Err(FsError::Io));
    fake.failing.lock().unwrap().clear();
    r.read_through("g", len, ahead, 64 * KIB).await;
}

#[tokio::test]
async fn dropped_windows_abort_their_fetches() {
    let table = Mutex::new(Streams::default());
    let alive = Arc::new(());
    let pending = alive.clone();
    // A store that never answers; each fetch holds a reference to `alive`.
    let fetcher: Fetcher = Arc::new(move |_, _| {
        let held = pending.clone();
        async move {
            let _held = held;
            std::future::pending::<FsResult<Bytes>>().await
        }
        .boxed()
    });
    for rel in ["a", "b"] {
        // A first read (direct, nothing kept), then a sequential one that starts a window.
        table.with(|t| {
            let first = t.step(&fetcher, Origin::Base, rel, 1 << 30, 0, 4096);
            assert!(matches!(first, Step::Direct));
            let next = t.step(&fetcher, Origin::Base, rel, 1 << 30, 4096, 4096);
            assert!(matches!(next, Step::Wait { start: 4096, .. }));
        });
    }
    tokio::task::yield_now().await;
    // `alive`, the fetcher's own reference, and one per window's task.
    assert_eq!(Arc::strong_count(&alive), 4);
    table.with(|t| t.forget("a"));
    settle(&alive, 3).await;
    drop(table);
    settle(&alive, 2).await;
}

/// Lets the runtime run (a bounded number of turns) until `alive` has `n` references.
async fn settle(alive: &Arc<()>, n: usize) {
    for _ in 0..100 {
        if Arc::strong_count(alive) == n {
            return;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(Arc::strong_count(alive), n);
}

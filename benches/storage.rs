//! Storage and VFS benchmarks: `cargo bench --bench storage [-- FILTER...]`.
//!
//! Every result is printed beside a baseline measured in the same run, on the same store:
//!
//! - `fork/<store>`: creating an overlay fork (`Overlay::create` + `Vfs::new`) of a base of
//!   1k, 10k and 100k objects, then the first `stat` of a base file through the new fork.
//!   Both should be flat: the baseline is the same work on the 1k base.
//! - `delete/<store>`: force-deleting a fork that holds 10,000 objects (`Overlay::delete`),
//!   in objects/s. Baseline: `std::fs::remove_dir_all` of the same objects written the same
//!   way into the same store (local store: what opendal's recursive delete does there), or
//!   opendal's own recursive delete of as many objects on a raw operator (memory, S3).
//! - `write/<store>`, `read/<store>`: a 256 MiB file written through the VFS
//!   (`open_write` + 1 MiB `write`s + `close`) and read back (`read_at`, 1 MiB at a time),
//!   against the store layer itself on the same store (`Store::writer` with 1 MiB writes,
//!   `Store::read` in 1 MiB chunks), and on the local store, where `Store` has fast paths of
//!   its own, also against a raw opendal `Fs` operator on the same directory (writer with
//!   1 MiB writes, ranged reads of 1 MiB) and against `std::fs`. On S3
//!   also read with 64 KiB calls, the size the commands read (`READ_CHUNK`), against the
//!   same `Store::read` in 1 MiB chunks.
//!
//! Stores: a local directory (under the system temp directory) and memory; S3 as well when
//! `FORKBOX_BENCH_S3_ENDPOINT` is set (bucket-name prefix `FORKBOX_BENCH_S3_BUCKET`, default
//! `forkbox-bench`; credentials from the standard AWS environment; smaller sizes, see
//! [`Sizes::s3`]). Local stores and spill files go under `FORKBOX_BENCH_DIR` (default: the
//! system temp directory). `FORKBOX_BENCH_QUICK=1` runs everything small, as a smoke test.
//! A FILTER (`fork`, `delete/local`, `read`...) keeps the benchmarks whose name contains it.
//!
//! Times are medians of several iterations measured with [`Instant`]; VFS and baseline
//! iterations alternate so that drift (page cache, other load) hits both alike. Nothing
//! here asserts a time: docs/BENCHMARKS.md records and discusses the results.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use forkbox::fork::{ForkStrategy, Lease, Overlay, ServerId, SessionId};
use forkbox::storage::{Attrs, S3Config, Store};
use forkbox::vfs::{Quota, Vfs};
use forkbox_commands::{FileSystem, WriteMode};
use futures::StreamExt;

/// Bytes moved per write or read call, on both sides of a comparison.
const CHUNK: usize = 1024 * 1024;
/// What the commands read per call (`forkbox_commands::fs::READ_CHUNK`).
const SMALL_CHUNK: usize = 64 * 1024;
/// Object writes or deletes in flight while preparing data (not timed).
const PREPARE_CONCURRENCY: usize = 64;
/// Files per directory in the bases and in the fork that is deleted.
const PER_DIR: usize = 1000;
/// Forks created and thrown away before the timed ones, for each base.
const FORK_WARMUP: usize = 3;
/// Where the delete baseline builds its copy of the fork's tree.
const RM_TREE: &str = "rm-tree";

/// How much work each benchmark does; see [`Sizes::full`].
#[derive(Clone, Debug)]
struct Sizes {
    /// Object counts of the bases forked.
    bases: Vec<usize>,
    /// Forks created (and timed) per base.
    fork_iters: usize,
    /// Objects in the fork that is deleted.
    delete_objects: usize,
    delete_iters: usize,
    /// Size of the file written and read.
    file_mib: usize,
    io_iters: usize,
}

impl Sizes {
    /// What the issue asks for.
    fn full() -> Sizes {
        Sizes {
            bases: vec![1_000, 10_000, 100_000],
            fork_iters: 50,
            delete_objects: 10_000,
            delete_iters: 2,
            file_mib: 256,
            io_iters: 5,
        }
    }

    /// A smoke test: everything runs, in seconds.
    fn quick() -> Sizes {
        Sizes {
            bases: vec![1_000, 10_000],
            fork_iters: 10,
            delete_objects: 1_000,
            delete_iters: 2,
            file_mib: 16,
            io_iters: 2,
        }
    }

    /// Over the network every object is a request: 100k puts to prepare a base is too slow
    /// for a routine run.
    fn s3(&self) -> Sizes {
        Sizes {
            bases: self
                .bases
                .iter()
                .copied()
                .filter(|&n| n <= 10_000)
                .collect(),
            fork_iters: self.fork_iters.min(20),
            delete_objects: self.delete_objects,
            delete_iters: self.delete_iters.min(2),
            file_mib: self.file_mib.min(64),
            io_iters: self.io_iters.min(3),
        }
    }
}

/// Which backend a benchmark runs on.
#[derive(Clone, Debug)]
enum Kind {
    Local,
    Memory,
    S3 { cfg: S3Config, prefix: String },
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Local => "local",
            Kind::Memory => "memory",
            Kind::S3 { .. } => "s3",
        }
    }
}

/// Timings of one measured operation.
#[derive(Default)]
struct Samples(Vec<Duration>);

impl Samples {
    fn push(&mut self, d: Duration) {
        self.0.push(d);
    }

    fn median(&self) -> Duration {
        let mut v = self.0.clone();
        v.sort();
        match v.len() {
            0 => Duration::ZERO,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2,
        }
    }

    fn spread(&self) -> String {
        let min = self.0.iter().min().copied().unwrap_or_default();
        let max = self.0.iter().max().copied().unwrap_or_default();
        format!("{}..{} n={}", fmt_dur(min), fmt_dur(max), self.0.len())
    }
}

fn fmt_dur(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// One line of the results table.
struct Row {
    bench: String,
    what: String,
    value: String,
    baseline: String,
    base_value: String,
    /// Result relative to the baseline, written so that above 1 is better for the VFS
    /// side (throughputs divided, times inverted) — except fork rows, which are plain
    /// time ratios against the 1k base (flat is 1).
    ratio: f64,
}

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
}

impl Report {
    fn add(&mut self, row: Row) {
        println!(
            "{:<16} {:<34} {:>22} | {:<30} {:>22} | ratio {:.2}",
            row.bench, row.what, row.value, row.baseline, row.base_value, row.ratio
        );
        self.rows.push(row);
    }

    fn markdown(&self) -> String {
        let mut s = String::from(
            "| bench | measured | result | baseline | baseline result | ratio |\n|---|---|---|---|---|---|\n",
        );
        for r in &self.rows {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {:.2} |\n",
                r.bench, r.what, r.value, r.baseline, r.base_value, r.ratio
            ));
        }
        s
    }
}

fn mib_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / d.as_secs_f64()
}

fn lease() -> Lease {
    Lease::new(ServerId::new(), Duration::from_secs(3600))
}

/// Where a benchmark keeps its data and how it reaches its stores.
struct Bench {
    kind: Kind,
    sizes: Sizes,
    /// Scratch space on the host: local stores, spill files.
    tmp: PathBuf,
}

impl Bench {
    /// The store sessions write to (fork layers).
    async fn forks_store(&self, tag: &str) -> Store {
        match &self.kind {
            Kind::Local => {
                Store::local(&self.tmp.join(format!("forks-{tag}"))).expect("local store")
            }
            // As `forkbox exec` has it: files being written stay in memory.
            Kind::Memory => Store::memory(),
            Kind::S3 { cfg, prefix } => {
                let bucket = format!("{prefix}-forks");
                ensure_bucket(cfg, &bucket).await;
                Store::s3(cfg, &bucket)
                    .expect("s3 store")
                    .with_spill_dir(&self.tmp.join("spill"))
            }
        }
    }

    /// A base holding `n` small files, `d<i>/f<j>.txt` with [`PER_DIR`] files a directory.
    /// An S3 base is kept between runs and only filled when incomplete.
    async fn base_store(&self, n: usize) -> Store {
        match &self.kind {
            Kind::Local => {
                let dir = self.tmp.join(format!("base-{n}"));
                let d = dir.clone();
                tokio::task::spawn_blocking(move || {
                    for i in 0..n {
                        let (sub, name) = base_key_parts(i);
                        let sub = d.join(sub);
                        if i % PER_DIR == 0 {
                            std::fs::create_dir_all(&sub).expect("mkdir");
                        }
                        std::fs::write(sub.join(name), format!("file {i}\n")).expect("write");
                    }
                })
                .await
                .expect("base writer");
                Store::local(&dir).expect("local store")
            }
            Kind::Memory => {
                let store = Store::memory();
                fill(&store, (0..n).map(base_key)).await;
                store
            }
            Kind::S3 { cfg, prefix } => {
                let bucket = format!("{prefix}-base-{n}");
                ensure_bucket(cfg, &bucket).await;
                let store = Store::s3(cfg, &bucket).expect("s3 store");
                let last = base_key(n - 1);
                if store.stat(&last).await.expect("stat").is_none() {
                    fill(&store, (0..n).map(base_key)).await;
                }
                store
            }
        }
    }

    /// Fork creation and the first base lookup through the fork, for each base size.
    async fn forks(&self, report: &mut Report) {
        let bench = format!("fork/{}", self.kind.name());
        let forks = self.forks_store("create").await;
        let mut first: Option<(Duration, Duration)> = None;
        for &n in &self.sizes.bases {
            let t = Instant::now();
            let base = self.base_store(n).await;
            eprintln!(
                "{bench}: base of {n} objects ready in {}",
                fmt_dur(t.elapsed())
            );
            let overlay = Overlay::new(base, forks.clone());
            let probe = format!("/{}", base_key(n / 2));
            let (mut create, mut stat) = (Samples::default(), Samples::default());
            // The first forks of a run pay for cold caches; they are not counted.
            for i in 0..FORK_WARMUP + self.sizes.fork_iters {
                let id = SessionId::new();
                let t = Instant::now();
                let view = overlay.create(id, &lease()).await.expect("create fork");
                let vfs = Vfs::new(view);
                create.push(t.elapsed());
                let t = Instant::now();
                let m = vfs.stat(&probe).await.expect("stat base file");
                stat.push(t.elapsed());
                assert!(m.len > 0);
                overlay.delete(id).await.expect("delete fork");
                if i < FORK_WARMUP {
                    create.0.pop();
                    stat.0.pop();
                }
            }
            let (c, s) = (create.median(), stat.median());
            let (c1, s1) = *first.get_or_insert((c, s));
            let label = if n >= 1000 {
                format!("{}k", n / 1000)
            } else {
                n.to_string()
            };
            report.add(Row {
                bench: bench.clone(),
                what: format!("create, base of {label}"),
                value: format!("{} ({})", fmt_dur(c), create.spread()),
                baseline: "create, base of 1k".into(),
                base_value: fmt_dur(c1),
                ratio: c.as_secs_f64() / c1.as_secs_f64(),
            });
            report.add(Row {
                bench: bench.clone(),
                what: format!("first stat, base of {label}"),
                value: format!("{} ({})", fmt_dur(s), stat.spread()),
                baseline: "first stat, base of 1k".into(),
                base_value: fmt_dur(s1),
                ratio: s.as_secs_f64() / s1.as_secs_f64(),
            });
        }
    }

    /// Deleting a fork holding `delete_objects` objects, against the baseline.
    async fn delete(&self, report: &mut Report) {
        let bench = format!("delete/{}", self.kind.name());
        let n = self.sizes.delete_objects;
        let forks = self.forks_store("delete").await;
        let overlay = Overlay::new(Store::memory(), forks.clone());
        let raw = self.raw_operator("delete").await;
        let (mut ours, mut theirs) = (Samples::default(), Samples::default());
        for iter in 0..self.sizes.delete_iters {
            // Sides take turns going first: a disk's background work after one side's
            // deletes (discards, write-back) must not always fall on the same side.
            for side in [iter % 2, 1 - iter % 2] {
                if side == 0 {
                    let t = Instant::now();
                    let id = SessionId::new();
                    overlay.create(id, &lease()).await.expect("create fork");
                    let keys = (0..n).map(|i| format!("forks/{id}/root/{}", fork_key(i)));
                    fill(&forks, keys).await;
                    eprintln!("{bench}: {n} objects written in {}", fmt_dur(t.elapsed()));
                    settle_disk(&self.kind).await;
                    let t = Instant::now();
                    overlay.delete(id).await.expect("delete fork");
                    ours.push(t.elapsed());
                    assert!(!overlay.exists(id).await.expect("exists"));
                } else {
                    theirs.push(self.delete_baseline(&forks, raw.as_ref()).await);
                }
            }
        }
        let rate = |d: Duration| n as f64 / d.as_secs_f64();
        let baseline = match self.kind {
            Kind::Local => "std::fs::remove_dir_all",
            _ => "opendal recursive delete",
        };
        report.add(Row {
            bench,
            what: format!("delete a fork of {n} objects"),
            value: format!(
                "{:.0} obj/s ({}; {})",
                rate(ours.median()),
                fmt_dur(ours.median()),
                ours.spread()
            ),
            baseline: baseline.into(),
            base_value: format!(
                "{:.0} obj/s ({})",
                rate(theirs.median()),
                fmt_dur(theirs.median())
            ),
            ratio: theirs.median().as_secs_f64() / ours.median().as_secs_f64(),
        });
    }

    /// The baseline of [`Bench::delete`]: the same number of objects removed by the
    /// filesystem (local) or by a raw opendal operator's recursive delete.
    async fn delete_baseline(&self, forks: &Store, raw: Option<&opendal::Operator>) -> Duration {
        let n = self.sizes.delete_objects;
        match (&self.kind, raw) {
            (Kind::Local, _) => {
                // The same objects, written the same way (so the disk holds them in the
                // same state), removed as `rm -rf` would.
                fill(forks, (0..n).map(|i| format!("{RM_TREE}/{}", fork_key(i)))).await;
                let dir = forks.local_root().expect("local store").join(RM_TREE);
                settle_disk(&self.kind).await;
                let t = Instant::now();
                tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir))
                    .await
                    .expect("remover")
                    .expect("remove_dir_all");
                t.elapsed()
            }
            (_, Some(op)) => {
                let keys = (0..n).map(|i| format!("{RM_TREE}/{}", fork_key(i)));
                futures::stream::iter(keys)
                    .map(|k| async move { op.write(&k, Bytes::from_static(b"x")).await })
                    .buffer_unordered(PREPARE_CONCURRENCY)
                    .for_each(|r| async move {
                        r.expect("raw write");
                    })
                    .await;
                let t = Instant::now();
                op.delete_with(&format!("{RM_TREE}/"))
                    .recursive(true)
                    .await
                    .expect("raw delete");
                t.elapsed()
            }
            (_, None) => unreachable!("memory and s3 have a raw operator"),
        }
    }

    /// A raw opendal operator on the same backend as [`Bench::forks_store`] (local, S3) or
    /// an equivalent one (memory), without forkbox's layers.
    async fn raw_operator(&self, tag: &str) -> Option<opendal::Operator> {
        match &self.kind {
            Kind::Local => None,
            Kind::Memory => Some(
                opendal::Operator::new(opendal::services::Memory::default())
                    .expect("memory operator"),
            ),
            Kind::S3 { cfg, prefix } => {
                let bucket = format!("{prefix}-forks");
                ensure_bucket(cfg, &bucket).await;
                let mut b = opendal::services::S3::default()
                    .bucket(&bucket)
                    .region(&cfg.region())
                    .root(&format!("/bench-{tag}"));
                if let Some(e) = cfg.endpoint() {
                    b = b.endpoint(&e);
                }
                Some(opendal::Operator::new(b).expect("s3 operator"))
            }
        }
    }

    /// Sequential write and read of one file through the VFS against the store itself.
    async fn throughput(&self, report: &mut Report) {
        let name = self.kind.name();
        let size = (self.sizes.file_mib * CHUNK) as u64;
        let store = self.forks_store("io").await;
        let overlay = Overlay::new(Store::memory(), store.clone());
        let id = SessionId::new();
        let vfs = Vfs::with_quota(
            overlay.create(id, &lease()).await.expect("create fork"),
            Quota::UNLIMITED,
        );
        let vfs_key = format!("forks/{id}/root/big.bin");
        let raw_key = "raw/big.bin";
        let std_path = self.tmp.join("std-big.bin");
        let chunk: Arc<Vec<u8>> = Arc::new((0..CHUNK).map(|i| (i * 7 + 3) as u8).collect());

        // On the local store, `Store` has fast paths of its own; the baseline, the
        // raw opendal operator, is measured beside it there.
        let raw_fs = store.local_root().map(|root| {
            let fs = opendal::services::Fs::default().root(&root.to_string_lossy());
            opendal::Operator::new(fs).expect("fs operator")
        });
        let mut w: [Samples; 4] = Default::default();
        let mut r: [Samples; 4] = Default::default();
        // On memory, also a fork whose files spill past 1 MiB, as on S3.
        let spilling = match self.kind {
            Kind::Memory => {
                let store = Store::memory().with_spill_dir(&self.tmp.join("spill"));
                let overlay = Overlay::new(Store::memory(), store);
                let fork = overlay.create(id, &lease()).await.expect("create fork");
                Some(Vfs::with_quota(fork, Quota::UNLIMITED))
            }
            _ => None,
        };
        let mut spilled = Samples::default();
        let mut small = Samples::default();
        let s3 = matches!(self.kind, Kind::S3 { .. });
        for _ in 0..self.sizes.io_iters {
            // Writes: each side starts from a missing file.
            let _ = vfs.unlink("/big.bin").await;
            store.delete(raw_key).await.expect("delete");
            w[0].push(vfs_write(&vfs, "/big.bin", &chunk, size).await);
            if let Some(spilling) = &spilling {
                let _ = spilling.unlink("/big.bin").await;
                spilled.push(vfs_write(spilling, "/big.bin", &chunk, size).await);
            }
            w[1].push(store_write(&store, raw_key, &chunk, size).await);
            if let Some(op) = &raw_fs {
                let _ = std::fs::remove_file(&std_path);
                w[2].push(std_write(&std_path, &chunk, size).await);
                w[3].push(opendal_write(op, raw_key, &chunk, size).await);
            }
            // Reads of what was just written.
            r[0].push(vfs_read(&vfs, "/big.bin", size, CHUNK).await);
            r[1].push(store_read(&store, &vfs_key, size).await);
            if s3 {
                small.push(vfs_read(&vfs, "/big.bin", size, SMALL_CHUNK).await);
            }
            if let Some(op) = &raw_fs {
                r[2].push(std_read(&std_path, size).await);
                r[3].push(opendal_read(op, raw_key, size).await);
            }
        }
        let _ = vfs.unlink("/big.bin").await;
        store.delete(raw_key).await.expect("delete");
        let _ = std::fs::remove_file(&std_path);
        overlay.delete(id).await.expect("delete fork");

        let mib = self.sizes.file_mib;
        for (op, samples, store_api, std_api, raw_api) in [
            (
                "write",
                &w,
                "Store::writer, 1 MiB writes",
                "std::fs::File::write_all, 1 MiB",
                "opendal Operator::writer, 1 MiB writes",
            ),
            (
                "read",
                &r,
                "Store::read, 1 MiB chunks",
                "std::fs::File::read, 1 MiB",
                "opendal Operator::read_with, 1 MiB ranges",
            ),
        ] {
            let mut baselines = vec![(store_api, &samples[1])];
            if raw_fs.is_some() {
                baselines.extend([(raw_api, &samples[3]), (std_api, &samples[2])]);
            }
            for (api, base) in baselines {
                let what = format!("VFS {op} {mib} MiB, 1 MiB calls");
                report.add(rate_row(op, name, what, size, &samples[0], api, base));
            }
        }
        if spilling.is_some() {
            let what = format!("VFS write {mib} MiB, 1 MiB calls, spilling past 1 MiB");
            let api = "Store::writer, 1 MiB writes";
            report.add(rate_row("write", name, what, size, &spilled, api, &w[1]));
        }
        if s3 {
            let what = format!("VFS read {mib} MiB, 64 KiB calls");
            let api = "Store::read, 1 MiB chunks";
            report.add(rate_row("read", name, what, size, &small, api, &r[1]));
        }
    }
}

/// A throughput row: `ours` and `base` are timings of moving `size` bytes.
fn rate_row(
    op: &str,
    store: &str,
    what: String,
    size: u64,
    ours: &Samples,
    baseline: &str,
    base: &Samples,
) -> Row {
    let (rate, base_rate) = (
        mib_per_s(size, ours.median()),
        mib_per_s(size, base.median()),
    );
    Row {
        bench: format!("{op}/{store}"),
        what,
        value: format!("{rate:.0} MiB/s ({})", ours.spread()),
        baseline: baseline.into(),
        base_value: format!("{base_rate:.0} MiB/s"),
        ratio: rate / base_rate,
    }
}

/// `d<i>/f<j>.txt` split in its directory and file name.
fn base_key_parts(i: usize) -> (String, String) {
    (
        format!("d{:03}", i / PER_DIR),
        format!("f{:04}.txt", i % PER_DIR),
    )
}

fn base_key(i: usize) -> String {
    let (d, f) = base_key_parts(i);
    format!("{d}/{f}")
}

/// The path of object `i` inside the fork that is deleted.
fn fork_key(i: usize) -> String {
    base_key(i)
}

/// Writes a small object at each key, many at once.
async fn fill(store: &Store, keys: impl Iterator<Item = String>) {
    futures::stream::iter(keys)
        .map(|k| {
            let store = store.clone();
            async move {
                let body = Bytes::from(format!("{k}\n"));
                store.put(&k, body, &Attrs::default()).await
            }
        })
        .buffer_unordered(PREPARE_CONCURRENCY)
        .for_each(|r| async move {
            r.expect("put");
        })
        .await;
}

/// Lets a local store's disk write back everything before a timed delete, so that each
/// side deletes objects in the same state: on a disk with online discard, deleting blocks
/// that are already on disk costs far more than deleting ones still in the page cache.
async fn settle_disk(kind: &Kind) {
    if matches!(kind, Kind::Local) {
        let status = tokio::process::Command::new("sync").status().await;
        assert!(status.is_ok_and(|s| s.success()), "sync failed");
    }
}

async fn ensure_bucket(cfg: &S3Config, bucket: &str) {
    let client = forkbox::fork::s3::client(cfg).await;
    forkbox::fork::s3::ensure_bucket(&client, bucket)
        .await
        .unwrap_or_else(|e| panic!("cannot create bucket {bucket}: {e:?}"));
}

async fn vfs_write(vfs: &Vfs, path: &str, chunk: &[u8], size: u64) -> Duration {
    let t = Instant::now();
    let mut w = vfs
        .open_write(path, WriteMode::Truncate)
        .await
        .expect("open");
    let mut done = 0;
    while done < size {
        w.write(chunk).await.expect("vfs write");
        done += chunk.len() as u64;
    }
    w.close().await.expect("vfs close");
    t.elapsed()
}

async fn store_write(store: &Store, key: &str, chunk: &[u8], size: u64) -> Duration {
    let t = Instant::now();
    let mut w = store.writer(key, &Attrs::default()).await.expect("writer");
    feed(&mut w, chunk, size, async |w, b| {
        w.write(b).await.expect("write")
    })
    .await;
    w.close().await.expect("close");
    t.elapsed()
}

/// Like [`store_write`], straight through an opendal operator.
async fn opendal_write(op: &opendal::Operator, key: &str, chunk: &[u8], size: u64) -> Duration {
    let t = Instant::now();
    let mut w = op.writer(key).await.expect("opendal writer");
    feed(&mut w, chunk, size, async |w, b| {
        w.write(b).await.expect("write")
    })
    .await;
    w.close().await.expect("close");
    t.elapsed()
}

/// Writes `size` bytes to `w` with `write`, each a copy of `chunk`: the caller's buffer is
/// copied into each write, as the VFS's `write(&[u8])` must.
async fn feed<W>(w: &mut W, chunk: &[u8], size: u64, mut write: impl AsyncFnMut(&mut W, Bytes)) {
    let mut done = 0;
    while done < size {
        write(w, Bytes::copy_from_slice(chunk)).await;
        done += chunk.len() as u64;
    }
}

async fn std_write(path: &Path, chunk: &Arc<Vec<u8>>, size: u64) -> Duration {
    let (path, chunk) = (path.to_path_buf(), chunk.clone());
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let t = Instant::now();
        let mut f = std::fs::File::create(&path).expect("create");
        let mut done = 0;
        while done < size {
            f.write_all(&chunk).expect("write");
            done += chunk.len() as u64;
        }
        drop(f);
        t.elapsed()
    })
    .await
    .expect("std writer")
}

async fn vfs_read(vfs: &Vfs, path: &str, size: u64, chunk: usize) -> Duration {
    let t = Instant::now();
    let mut off = 0;
    loop {
        let b = vfs.read_at(path, off, chunk).await.expect("vfs read");
        if b.is_empty() {
            break;
        }
        off += b.len() as u64;
    }
    let d = t.elapsed();
    assert_eq!(off, size);
    d
}

async fn store_read(store: &Store, key: &str, size: u64) -> Duration {
    let t = Instant::now();
    let mut off = 0;
    loop {
        let b = store.read(key, off, CHUNK).await.expect("read");
        if b.is_empty() {
            break;
        }
        off += b.len() as u64;
    }
    let d = t.elapsed();
    assert_eq!(off, size);
    d
}

/// Like [`store_read`], straight through an opendal operator.
async fn opendal_read(op: &opendal::Operator, key: &str, size: u64) -> Duration {
    let t = Instant::now();
    let mut off = 0;
    while off < size {
        let end = (off + CHUNK as u64).min(size);
        let b = op.read_with(key).range(off..end).await.expect("read");
        off += b.len() as u64;
    }
    t.elapsed()
}

async fn std_read(path: &Path, size: u64) -> Duration {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let t = Instant::now();
        let mut f = std::fs::File::open(&path).expect("open");
        let mut buf = vec![0u8; CHUNK];
        let mut off = 0u64;
        loop {
            let n = f.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            off += n as u64;
        }
        let d = t.elapsed();
        assert_eq!(off, size);
        d
    })
    .await
    .expect("std reader")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        // `cargo test --benches` runs this binary without `--bench`: nothing to time there.
        println!("storage benchmarks: run with `cargo bench --bench storage`");
        return;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let selected = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(*f));

    let quick = std::env::var("FORKBOX_BENCH_QUICK").is_ok_and(|v| v == "1");
    let sizes = if quick { Sizes::quick() } else { Sizes::full() };
    let mut kinds = vec![Kind::Local, Kind::Memory];
    if let Ok(endpoint) = std::env::var("FORKBOX_BENCH_S3_ENDPOINT")
        && !endpoint.is_empty()
    {
        kinds.push(Kind::S3 {
            cfg: S3Config {
                endpoint: Some(endpoint),
                region: None,
                path_style: true,
            },
            prefix: std::env::var("FORKBOX_BENCH_S3_BUCKET")
                .unwrap_or_else(|_| "forkbox-bench".into()),
        });
    }

    let tmp_root = std::env::var_os("FORKBOX_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut report = Report::default();
    let started = Instant::now();
    runtime.block_on(async {
        for kind in kinds {
            let tmp = tempfile::Builder::new()
                .prefix("forkbox-bench-")
                .tempdir_in(&tmp_root)
                .expect("temp dir");
            let bench = Bench {
                sizes: match kind {
                    Kind::S3 { .. } => sizes.s3(),
                    _ => sizes.clone(),
                },
                kind,
                tmp: tmp.path().to_path_buf(),
            };
            let name = bench.kind.name();
            if selected(&format!("fork/{name}")) {
                bench.forks(&mut report).await;
            }
            if selected(&format!("delete/{name}")) {
                bench.delete(&mut report).await;
            }
            if selected(&format!("write/{name}")) || selected(&format!("read/{name}")) {
                bench.throughput(&mut report).await;
            }
        }
    });
    println!("\n{}", report.markdown());
    println!("total {}", fmt_dur(started.elapsed()));
}

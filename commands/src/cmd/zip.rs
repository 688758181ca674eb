//! `zip`: package files into a zip archive (through the `zip` crate, deflate by flate2's
//! pure-Rust backend), worded as Info-ZIP's zip 3.0: `zip [-rqjD0-9] ZIPFILE FILE...`
//! adds or updates entries and reports each (`  adding: f (deflated 53%)`); warnings and
//! errors go to stdout as Info-ZIP's do, with its statuses (12: nothing to do, 16: bad
//! arguments, 18: a file could not be read). The archive is built in memory charged to
//! the session's budget, then written out; the compressed bytes are flate2's, so
//! percentages can differ from Info-ZIP's by a little.

use std::io::{Cursor, Write};

use async_trait::async_trait;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use super::codec::{Early, Word, Words};
use super::util::{MAX_DEPTH, Pacer, utc};
use crate::fs::{WriteMode, read_all};
use crate::{CmdResult, Command, Context, Interrupt, Status};

/// Largest file or archive zip reads: an archive is built in memory.
const MAX_INPUT: u64 = 1 << 30;

const HELP: &str = "Copyright (c) 1990-2008 Info-ZIP - Type 'zip \"-L\"' for software license.
Zip 3.0 (July 5th 2008). Usage:
zip [-options] [-b path] [-t mmddyyyy] [-n suffixes] [zipfile list] [-xi list]
  The default action is to add or replace zipfile entries from list, which
  can include the special name - to compress standard input.
  If zipfile and list are omitted, zip compresses stdin to stdout.
  -f   freshen: only changed files  -u   update: only changed or new files
  -d   delete entries in zipfile    -m   move into zipfile (delete OS files)
  -r   recurse into directories     -j   junk (don't record) directory names
  -0   store only                   -l   convert LF to CR LF (-ll CR LF to LF)
  -1   compress faster              -9   compress better
  -q   quiet operation              -v   verbose operation/print version info
  -c   add one-line comments        -z   add zipfile comment
  -@   read names from stdin        -o   make zipfile as old as latest entry
  -x   exclude the following names  -i   include only the following names
  -F   fix zipfile (-FF try harder) -D   do not add directory entries
  -A   adjust self-extracting exe   -J   junk zipfile prefix (unzipsfx)
  -T   test zipfile integrity       -X   eXclude eXtra file attributes
  -y   store symbolic links as the link instead of the referenced file
  -e   encrypt                      -n   don't compress these suffixes
  -h2  show more help
";

#[derive(Default)]
struct Opts {
    recurse: bool,
    quiet: bool,
    junk: bool,
    no_dirs: bool,
    level: Option<u32>,
    words: Vec<String>,
}

/// zip's options, anywhere among the names; `-h` is answered with the help, a bad
/// argument with zip's complaint on stdout (status 16).
fn parse(args: &[String]) -> Result<Opts, Early> {
    let mut o = Opts::default();
    let help = || Early::out(HELP, 0);
    let bad = |msg: &str| {
        Early::out(
            format!("\nzip error: Invalid command arguments ({msg})\n"),
            16,
        )
    };
    for w in Words::new(args) {
        match w {
            Word::Operand(a) => o.words.push(a.clone()),
            Word::Long(long, _) => match long {
                "help" => return Err(help()),
                "recurse-paths" => o.recurse = true,
                "quiet" => o.quiet = true,
                "junk-paths" => o.junk = true,
                "no-dir-entries" => o.no_dirs = true,
                _ => return Err(bad(&format!("long option '{long}' not supported"))),
            },
            Word::Short(letters, _) => {
                for c in letters.chars() {
                    match c {
                        'h' => return Err(help()),
                        'r' => o.recurse = true,
                        'q' => o.quiet = true,
                        'j' => o.junk = true,
                        'D' => o.no_dirs = true,
                        '0'..='9' => o.level = c.to_digit(10),
                        'x' => {
                            return Err(bad(
                                "option 'x' (exclude files matching patterns) requires a value",
                            ));
                        }
                        _ => return Err(bad(&format!("short option '{c}' not supported"))),
                    }
                }
            }
        }
    }
    Ok(o)
}

/// One entry to write: its name in the archive and where its data comes from.
struct Entry {
    name: String,
    /// Absolute path of the file; `None` for a directory entry.
    path: Option<String>,
    meta: crate::fs::Metadata,
}

pub struct Zip;

#[async_trait]
impl Command for Zip {
    fn name(&self) -> &'static str {
        "zip"
    }
    fn summary(&self) -> &'static str {
        "package and compress files into a zip archive"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let o = match parse(&args) {
            Ok(o) => o,
            Err(early) => return early.give(ctx).await,
        };
        let Some((archive, names)) = o.words.split_first() else {
            ctx.out("\nzip error: Invalid command arguments (nothing to select from)\n")
                .await?;
            return Ok(16);
        };
        if archive == "-" || names.iter().any(|n| n == "-") {
            ctx.out("\nzip error: Invalid command arguments (streaming through stdin or stdout is not supported here)\n")
                .await?;
            return Ok(16);
        }
        // Info-ZIP adds `.zip` to an archive name without a suffix.
        let base = archive.rsplit('/').next().unwrap_or(archive);
        let archive = if base.contains('.') {
            archive.clone()
        } else {
            format!("{archive}.zip")
        };
        let mut entries: Vec<Entry> = Vec::new();
        let mut pacer = Pacer::default();
        for n in names {
            let abs = ctx.path(n);
            match ctx.fs.stat(&abs).await {
                Ok(meta) => {
                    collect(ctx, &o, n, &abs, meta, 0, &mut entries, &mut pacer).await?;
                }
                Err(_) => {
                    if !o.quiet {
                        ctx.out(format!("\tzip warning: name not matched: {n}\n"))
                            .await?;
                    }
                }
            }
        }
        let archive_abs = ctx.path(&archive);
        let old = match ctx.fs.stat(&archive_abs).await {
            Ok(m) if m.is_file() => {
                match read_all(ctx.fs.as_ref(), &archive_abs, MAX_INPUT).await {
                    Ok(data) => {
                        let _charge = ctx.budget.charge(data.len())?;
                        match ZipArchive::new(Cursor::new(data)) {
                            Ok(a) => Some(a),
                            Err(_) => {
                                ctx.out(format!(
                                    "\nzip error: Zip file structure invalid ({archive})\n"
                                ))
                                .await?;
                                return Ok(3);
                            }
                        }
                    }
                    Err(e) => {
                        ctx.out(format!(
                            "\nzip error: Could not open zip file ({archive}): {e}\n"
                        ))
                        .await?;
                        return Ok(15);
                    }
                }
            }
            _ => None,
        };
        if entries.is_empty() {
            ctx.out(format!("\nzip error: Nothing to do! ({archive})\n"))
                .await?;
            return Ok(12);
        }
        build(ctx, &o, &archive, old, entries).await
    }
}

/// Adds `shown` (and with `-r` what is under it) to `entries`.
#[allow(clippy::too_many_arguments, reason = "one recursive walk's state")]
fn collect<'a>(
    ctx: &'a Context,
    o: &'a Opts,
    shown: &'a str,
    abs: &'a str,
    meta: crate::fs::Metadata,
    depth: usize,
    entries: &'a mut Vec<Entry>,
    pacer: &'a mut Pacer,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Interrupt>> + Send + 'a>> {
    Box::pin(async move {
        pacer.tick(ctx).await?;
        let mut name = shown
            .trim_start_matches("./")
            .trim_start_matches('/')
            .to_string();
        if o.junk {
            name = name.rsplit('/').next().unwrap_or(&name).to_string();
        }
        if meta.is_dir() {
            if !o.no_dirs && !o.junk && !name.is_empty() {
                let dir_name = format!("{}/", name.trim_end_matches('/'));
                entries.push(Entry {
                    name: dir_name,
                    path: None,
                    meta: meta.clone(),
                });
            }
            if !o.recurse || depth >= MAX_DEPTH {
                return Ok(());
            }
            let Ok(list) = ctx.fs.read_dir(abs).await else {
                return Ok(());
            };
            for e in list {
                let child_shown = format!("{}/{}", shown.trim_end_matches('/'), e.name);
                let child_abs = format!("{}/{}", abs.trim_end_matches('/'), e.name);
                if let Ok(m) = ctx.fs.stat(&child_abs).await {
                    collect(
                        ctx,
                        o,
                        &child_shown,
                        &child_abs,
                        m,
                        depth + 1,
                        entries,
                        pacer,
                    )
                    .await?;
                }
            }
            return Ok(());
        }
        if entries.iter().any(|e| e.name == name) {
            return Ok(());
        }
        entries.push(Entry {
            name,
            path: Some(abs.to_string()),
            meta,
        });
        Ok(())
    })
}

/// Info-ZIP's percentage: the share saved, to the nearest whole percent.
fn percent(len: u64, packed: u64) -> u64 {
    if len == 0 || packed >= len {
        return 0;
    }
    ((len - packed) * 100 + len / 2) / len
}

/// Writes the new archive: the old entries in their order (replaced ones updated in
/// place), then the new ones, reporting each as Info-ZIP does.
async fn build(
    ctx: &Context,
    o: &Opts,
    archive: &str,
    old: Option<ZipArchive<Cursor<Vec<u8>>>>,
    entries: Vec<Entry>,
) -> CmdResult {
    let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
    let mut status: Status = 0;
    let mut report = String::new();
    let mut done = vec![false; entries.len()];
    let mut charges = Vec::new();
    let failed = |e: zip::result::ZipError| format!("\nzip error: {e} ({archive})\n");
    if let Some(mut old) = old {
        for i in 0..old.len() {
            ctx.checkpoint().await?;
            let name = match old.by_index_raw(i) {
                Ok(f) => f.name().map(|n| n.to_string()).unwrap_or_default(),
                Err(e) => {
                    ctx.out(failed(e)).await?;
                    return Ok(3);
                }
            };
            if let Some(k) = entries.iter().position(|e| e.name == name) {
                done[k] = true;
                let line = add(ctx, o, &mut writer, &entries[k], &mut charges).await?;
                match line {
                    Ok(msg) => report.push_str(&format!("updating: {}{msg}\n", entries[k].name)),
                    Err(msg) => {
                        report.push_str(&msg);
                        status = 18;
                    }
                }
            } else {
                let copied = match old.by_index_raw(i) {
                    Ok(f) => writer.raw_copy_file(f),
                    Err(e) => Err(e),
                };
                if let Err(e) = copied {
                    ctx.out(failed(e)).await?;
                    return Ok(3);
                }
            }
        }
    }
    for (k, e) in entries.iter().enumerate() {
        if done[k] {
            continue;
        }
        ctx.checkpoint().await?;
        match add(ctx, o, &mut writer, e, &mut charges).await? {
            Ok(msg) => report.push_str(&format!("  adding: {}{msg}\n", e.name)),
            Err(msg) => {
                report.push_str(&msg);
                status = 18;
            }
        }
        if !o.quiet && report.len() > 4096 {
            ctx.out(std::mem::take(&mut report)).await?;
        }
    }
    if !o.quiet {
        ctx.out(std::mem::take(&mut report)).await?;
    } else {
        report.retain(|_| false);
    }
    let data = match writer.finish() {
        Ok(c) => c.into_inner(),
        Err(e) => {
            ctx.out(failed(e)).await?;
            return Ok(3);
        }
    };
    let path = ctx.path(archive);
    let written = async {
        let mut h = ctx.fs.open_write(&path, WriteMode::Truncate).await?;
        for chunk in data.chunks(crate::fs::READ_CHUNK) {
            h.write(chunk).await?;
        }
        h.close().await
    }
    .await;
    if let Err(e) = written {
        ctx.out(format!(
            "\nzip I/O error: {e}\n\nzip error: Temporary file failure ({archive})\n"
        ))
        .await?;
        return Ok(10);
    }
    Ok(status)
}

/// Adds one entry; gives the ` (deflated N%)` that follows its name in the report, or a
/// warning line for a file that could not be read.
async fn add(
    ctx: &Context,
    o: &Opts,
    writer: &mut ZipWriter<Cursor<Vec<u8>>>,
    e: &Entry,
    charges: &mut Vec<crate::Charge>,
) -> Result<Result<String, String>, Interrupt> {
    let t = utc(e.meta.mtime);
    use chrono::{Datelike, Timelike};
    let when = zip::DateTime::from_date_and_time(
        t.year().clamp(1980, 2107) as u16,
        t.month() as u8,
        t.day() as u8,
        t.hour() as u8,
        t.minute() as u8,
        t.second() as u8,
    )
    .unwrap_or_default();
    let base = SimpleFileOptions::default()
        .last_modified_time(when)
        .unix_permissions(e.meta.mode & 0o7777);
    let Some(path) = &e.path else {
        if let Err(err) = writer.add_directory(e.name.as_str(), base) {
            return Ok(Err(format!("\tzip warning: {err}: {}\n", e.name)));
        }
        return Ok(Ok(" (stored 0%)".to_string()));
    };
    let data = match read_all(ctx.fs.as_ref(), path, MAX_INPUT).await {
        Ok(d) => d,
        Err(err) => {
            return Ok(Err(format!(
                "\tzip warning: could not open for reading: {}\n\tzip warning: {err}\n",
                e.name
            )));
        }
    };
    charges.push(ctx.budget.charge(data.len() * 2)?);
    let level = o.level.unwrap_or(6);
    // Info-ZIP stores what deflate does not shrink.
    let packed_len = if level == 0 || data.is_empty() {
        None
    } else {
        let mut enc =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
        let packed = enc.write_all(&data).and_then(|_| enc.finish());
        packed
            .ok()
            .map(|p| p.len() as u64)
            .filter(|n| *n < data.len() as u64)
    };
    let options = match packed_len {
        Some(_) => base
            .compression_method(CompressionMethod::Deflated)
            .compression_level(Some(i64::from(level))),
        None => base.compression_method(CompressionMethod::Stored),
    };
    let wrote = writer
        .start_file(e.name.as_str(), options)
        .and_then(|_| writer.write_all(&data).map_err(zip::result::ZipError::from));
    if let Err(err) = wrote {
        return Ok(Err(format!("\tzip warning: {err}: {}\n", e.name)));
    }
    Ok(Ok(match packed_len {
        Some(n) => format!(" (deflated {}%)", percent(data.len() as u64, n)),
        None => " (stored 0%)".to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn adds_updates_and_refuses_as_info_zip() {
        let many: String = (1..2000).map(|i| format!("{i}\n")).collect();
        let fs = MemFs::with_files(&[("/a.txt", "hello\n"), ("/d/n.txt", many.as_str())]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let (st, out, _) = inv.run(&Zip, &["-r", "arch", "a.txt", "d"]).await;
        assert_eq!(st, 0);
        assert!(out.starts_with(
            "  adding: a.txt (stored 0%)\n  adding: d/ (stored 0%)\n  adding: d/n.txt (deflated "
        ));
        assert!(fs.exists("/arch.zip"));
        let (st, out, _) = inv.run(&Zip, &["arch.zip", "a.txt"]).await;
        assert_eq!((st, out.as_str()), (0, "updating: a.txt (stored 0%)\n"));
        let data = fs.contents("/arch.zip").unwrap_or_default();
        let a = ZipArchive::new(Cursor::new(data));
        assert_eq!(a.map(|a| a.len()).unwrap_or(0), 3);
        let (st, out, _) = inv.run(&Zip, &["x.zip", "nope"]).await;
        assert_eq!(
            (st, out.as_str()),
            (
                12,
                "\tzip warning: name not matched: nope\n\nzip error: Nothing to do! (x.zip)\n"
            )
        );
        assert_eq!(percent(588_895, 215_139), 63);
    }
}

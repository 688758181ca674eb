//! `gzip`, `gunzip`, `zcat`: compress or expand files in the gzip format (through the
//! `flate2` crate), GNU gzip-style: `FILE` becomes `FILE.gz` (and back), keeping the mode
//! and modification time; `-c` writes to stdout; no operand (or `-`) filters stdin. The
//! compressed bytes are flate2's, not GNU's: equal content, different encoding.

use std::io::Write;
use std::time::UNIX_EPOCH;
#[cfg(test)]
use std::time::{Duration, SystemTime};

use flate2::write::{GzEncoder, MultiGzDecoder};
use flate2::{Compression, GzBuilder};

use super::codec::{Early, Word, Words, codec_command};
use super::util::{MAX_DEPTH, Pacer};
use crate::fs::{FsError, READ_CHUNK, WriteHandle, WriteMode};
use crate::{CmdResult, Context, Interrupt, Status};

const HELP: &str = "Usage: gzip [OPTION]... [FILE]...
Compress or uncompress FILEs (by default, compress FILES in-place).

  -c, --stdout      write on standard output, keep original files unchanged
  -d, --decompress  decompress
  -f, --force       force overwrite of output file
  -k, --keep        keep (don't delete) input files
  -l, --list        list compressed file contents
  -n, --no-name     do not save or restore the original name and timestamp
  -N, --name        save or restore the original name and timestamp
  -q, --quiet       suppress all warnings
  -r, --recursive   operate recursively on directories
  -S, --suffix=SUF  use suffix SUF on compressed files
  -t, --test        test compressed file integrity
  -v, --verbose     verbose mode
  -1, --fast        compress faster
  -9, --best        compress better
";

#[derive(Debug, Default, Clone)]
struct Opts {
    stdout: bool,
    decompress: bool,
    force: bool,
    keep: bool,
    list: bool,
    no_name: bool,
    name: bool,
    quiet: bool,
    recursive: bool,
    test: bool,
    verbose: bool,
    level: u32,
    /// `-S SUF`: the suffix compressed files get (`.gz` when not given).
    suffix: Option<String>,
    files: Vec<String>,
}

/// Longest `-S` suffix (GNU's `MAX_SUFFIX`).
const MAX_SUFFIX: usize = 30;

/// The suffixes gzip knows besides its own `-S` one (GNU's `known_suffixes`).
const KNOWN_SUFFIXES: [&str; 7] = [".gz", ".z", ".taz", ".tgz", "-gz", "-z", "_z"];

fn parse_opts(prog: &str, args: &[String]) -> Result<Opts, Early> {
    let mut o = Opts {
        level: 6,
        ..Opts::default()
    };
    let bad = |what: String| {
        Early::err(
            format!("{prog}: {what}\nTry `{prog} --help' for more information.\n"),
            1,
        )
    };
    let mut words = Words::new(args);
    while let Some(w) = words.next() {
        match w {
            Word::Operand(f) => o.files.push(f.clone()),
            Word::Long(long, a) => match long {
                "help" => return Err(Early::out(HELP, 0)),
                "suffix" => match words.value() {
                    Some(v) => o.suffix = Some(v.clone()),
                    None => return Err(bad(format!("option '{a}' requires an argument"))),
                },
                _ if long.starts_with("suffix=") => {
                    o.suffix = Some(long["suffix=".len()..].to_string());
                }
                "stdout" | "to-stdout" => o.stdout = true,
                "decompress" | "uncompress" => o.decompress = true,
                "force" => o.force = true,
                "keep" => o.keep = true,
                "list" => o.list = true,
                "no-name" => o.no_name = true,
                "name" => o.name = true,
                "quiet" => o.quiet = true,
                "recursive" => o.recursive = true,
                "test" => o.test = true,
                "verbose" => o.verbose = true,
                "fast" => o.level = 1,
                "best" => o.level = 9,
                _ => return Err(bad(format!("unrecognized option '{a}'"))),
            },
            Word::Short(letters, _) => {
                for (i, c) in letters.char_indices() {
                    match c {
                        'S' => {
                            let rest = &letters[i + 1..];
                            o.suffix = Some(if rest.is_empty() {
                                match words.value() {
                                    Some(v) => v.clone(),
                                    None => {
                                        return Err(bad(
                                            "option requires an argument -- 'S'".to_string()
                                        ));
                                    }
                                }
                            } else {
                                rest.to_string()
                            });
                            break;
                        }
                        'c' => o.stdout = true,
                        'd' => o.decompress = true,
                        'f' => o.force = true,
                        'k' => o.keep = true,
                        'l' => o.list = true,
                        'n' => o.no_name = true,
                        'N' => o.name = true,
                        'q' => o.quiet = true,
                        'r' => o.recursive = true,
                        't' => o.test = true,
                        'v' => o.verbose = true,
                        '1'..='9' => o.level = c.to_digit(10).unwrap_or(6),
                        _ => return Err(bad(format!("invalid option -- '{c}'"))),
                    }
                }
            }
        }
    }
    Ok(o)
}

/// Where a (de)compressed stream goes.
enum Out {
    Stdout,
    File(Box<dyn WriteHandle>),
    /// `-t`/`-l`: only counted.
    Discard,
}

enum OutKind {
    Stdout,
    Other,
}

enum Coder {
    Enc(GzEncoder<Vec<u8>>),
    Dec(MultiGzDecoder<Vec<u8>>),
}

impl Coder {
    fn push(&mut self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        match self {
            Coder::Enc(e) => {
                e.write_all(data)?;
                Ok(std::mem::take(e.get_mut()))
            }
            Coder::Dec(d) => {
                d.write_all(data)?;
                Ok(std::mem::take(d.get_mut()))
            }
        }
    }
    fn finish(self) -> std::io::Result<Vec<u8>> {
        match self {
            Coder::Enc(e) => e.finish(),
            Coder::Dec(d) => d.finish(),
        }
    }
}

struct Run<'a> {
    ctx: &'a Context,
    prog: &'static str,
    o: Opts,
    status: Status,
    pacer: Pacer,
    listed_header: bool,
}

// Every name words its messages as `gzip`.
codec_command!(parse_opts, |ctx, _prog, o| run(ctx, "gzip", o);
    Gzip("gzip", "compress or expand files", decompress: false, stdout: false);
    Gunzip("gunzip", "expand gzip files", decompress: true, stdout: false);
    Zcat("zcat", "expand gzip files to stdout", decompress: true, stdout: true);
);

async fn run(ctx: &Context, prog: &'static str, o: Opts) -> CmdResult {
    if let Some(suf) = &o.suffix
        && ((suf.is_empty() && !o.decompress) || suf.len() > MAX_SUFFIX)
    {
        ctx.err(format!("{prog}: invalid suffix '{suf}'\n")).await;
        return Ok(1);
    }
    let files = if o.files.is_empty() {
        vec!["-".to_string()]
    } else {
        o.files.clone()
    };
    let mut r = Run {
        ctx,
        prog,
        o,
        status: 0,
        pacer: Pacer::default(),
        listed_header: false,
    };
    for f in files {
        r.operand(&f, 0).await?;
    }
    Ok(r.status)
}

impl Run<'_> {
    async fn warn(&mut self, msg: String, status: Status) {
        if status == 2 && self.o.quiet {
            self.status = self.status.max(2);
            return;
        }
        self.ctx.err(format!("{}: {msg}\n", self.prog)).await;
        self.status = self.status.max(status);
    }

    fn operand<'b>(
        &'b mut self,
        f: &'b str,
        depth: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Interrupt>> + Send + 'b>>
    {
        Box::pin(async move {
            if f == "-" {
                return self.stream(None, f).await;
            }
            let mut abs = self.ctx.path(f);
            let mut meta = self.ctx.fs.lstat(&abs).await;
            // `gunzip f` means `f.gz` (`f` and the `-S` suffix) when there is no `f`.
            let with_suffix = format!("{f}{}", self.suffix());
            let mut f = f;
            if self.o.decompress && meta.is_err() && self.known_suffix(f).is_none() {
                abs = self.ctx.path(&with_suffix);
                meta = self.ctx.fs.lstat(&abs).await;
                f = &with_suffix;
            }
            let meta = match meta {
                Ok(m) => m,
                Err(e) => {
                    self.warn(format!("{f}: {e}"), 1).await;
                    return Ok(());
                }
            };
            if meta.is_dir() {
                if !self.o.recursive || depth >= MAX_DEPTH {
                    self.warn(format!("{f} is a directory -- ignored"), 2).await;
                    return Ok(());
                }
                let entries = match self.ctx.fs.read_dir(&abs).await {
                    Ok(e) => e,
                    Err(e) => {
                        self.warn(format!("{f}: {e}"), 1).await;
                        return Ok(());
                    }
                };
                for e in entries {
                    let child = format!("{}/{}", f.trim_end_matches('/'), e.name);
                    self.operand(&child, depth + 1).await?;
                }
                return Ok(());
            }
            if meta.is_symlink() && !self.o.force && !self.o.stdout {
                self.warn(format!("{f}: Too many levels of symbolic links"), 2)
                    .await;
                return Ok(());
            }
            self.stream(Some(abs), f).await
        })
    }

    /// The suffix compressed files get.
    fn suffix(&self) -> &str {
        self.o.suffix.as_deref().unwrap_or(".gz")
    }

    /// The known suffix `f` ends with (case aside), the `-S` one first, as GNU's
    /// `get_suffix`: the name must be longer and not end in a directory there.
    fn known_suffix<'f>(&self, f: &'f str) -> Option<&'f str> {
        let own = self.suffix();
        std::iter::once(own)
            .chain(KNOWN_SUFFIXES)
            .filter(|s| !s.is_empty())
            .find_map(|s| {
                let cut = f.len().checked_sub(s.len())?;
                let tail = f.get(cut..)?;
                (cut > 0 && !f[..cut].ends_with('/') && tail.eq_ignore_ascii_case(s))
                    .then_some(tail)
            })
    }

    /// The output name for `f`, or `None` after a warning.
    async fn out_name(&mut self, f: &str) -> Option<String> {
        if self.o.decompress {
            if let Some(tail) = self.known_suffix(f) {
                let stem = &f[..f.len() - tail.len()];
                let lower = tail.to_ascii_lowercase();
                let repl = if lower == ".tgz" || lower == ".taz" {
                    ".tar"
                } else {
                    ""
                };
                return Some(format!("{stem}{repl}"));
            }
            self.warn(format!("{f}: unknown suffix -- ignored"), 2)
                .await;
            None
        } else {
            if let Some(tail) = self.known_suffix(f) {
                // A warning that leaves the status alone, as GNU's does.
                self.ctx
                    .err(format!(
                        "{}: {f} already has {tail} suffix -- unchanged\n",
                        self.prog
                    ))
                    .await;
                return None;
            }
            Some(format!("{f}{}", self.suffix()))
        }
    }

    async fn stream(&mut self, abs: Option<String>, f: &str) -> Result<(), Interrupt> {
        let listing = self.o.list;
        let to_stdout = self.o.stdout || abs.is_none();
        let check_only = self.o.test || listing;
        let in_meta = match &abs {
            Some(a) => self.ctx.fs.stat(a).await.ok(),
            None => None,
        };
        let target = if abs.is_some() && !to_stdout && !check_only {
            match self.out_name(f).await {
                Some(n) => Some(n),
                None => return Ok(()),
            }
        } else {
            None
        };
        let mut out = if check_only {
            Out::Discard
        } else if let Some(t) = &target {
            let tabs = self.ctx.path(t);
            if self.ctx.fs.lstat(&tabs).await.is_ok() {
                if !self.o.force {
                    self.warn(format!("{t} already exists;\tnot overwritten"), 2)
                        .await;
                    return Ok(());
                }
                let _ = self.ctx.fs.unlink(&tabs).await;
            }
            match self.ctx.fs.open_write(&tabs, WriteMode::CreateNew).await {
                Ok(h) => Out::File(h),
                Err(e) => {
                    self.warn(format!("{t}: {e}"), 1).await;
                    return Ok(());
                }
            }
        } else {
            Out::Stdout
        };
        let decompress = self.o.decompress || check_only;
        // The gzip header's and trailer's bytes (for -v's ratio): what is written when
        // compressing, what the input's first chunk holds when decompressing.
        let mut header_bytes: u64 = 18;
        let mut coder = if decompress {
            Coder::Dec(MultiGzDecoder::new(Vec::new()))
        } else {
            // OS 3 (Unix), as GNU gzip writes it (flate2's default is 255, unknown).
            let mut b = GzBuilder::new().operating_system(3);
            if !self.o.no_name
                && let Some(m) = &in_meta
            {
                b = b.mtime(
                    m.mtime
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs() as u32),
                );
                if abs.is_some() {
                    b = b.filename(super::util::base_name(f).as_bytes());
                    header_bytes += super::util::base_name(f).len() as u64 + 1;
                }
            }
            Coder::Enc(b.write(Vec::new(), Compression::new(self.o.level)))
        };
        let mut off = 0u64;
        let (mut read_bytes, mut written) = (0u64, 0u64);
        let mut first = true;
        // `-d -f` to stdout (`zcat -f`): data that is not gzip passes through as it is.
        let mut raw = false;
        let mut failed: Option<String> = None;
        loop {
            self.pacer.tick(self.ctx).await?;
            let chunk = match &abs {
                Some(a) => match self.ctx.fs.read_at(a, off, READ_CHUNK).await {
                    Ok(c) => c.to_vec(),
                    Err(e) => {
                        failed = Some(format!("{f}: {e}"));
                        break;
                    }
                },
                None => match self.ctx.stdin.read_chunk().await {
                    Ok(Some(c)) => c.to_vec(),
                    Ok(None) => Vec::new(),
                    Err(_) => {
                        failed = Some(format!("{f}: {}", FsError::Io));
                        break;
                    }
                },
            };
            if chunk.is_empty() {
                break;
            }
            if first && decompress && !chunk.starts_with(&[0x1f, 0x8b]) {
                if self.o.force && matches!(out, Out::Stdout) {
                    raw = true;
                } else {
                    let name = if abs.is_some() { f } else { "stdin" };
                    failed = Some(format!("{name}: not in gzip format"));
                    break;
                }
            }
            if first && decompress {
                header_bytes = gzip_header_len(&chunk);
            }
            first = false;
            off += chunk.len() as u64;
            read_bytes += chunk.len() as u64;
            if raw {
                self.emit(&mut out, &chunk).await?;
                continue;
            }
            match coder.push(&chunk) {
                Ok(data) => {
                    written += data.len() as u64;
                    self.emit(&mut out, &data).await?;
                }
                Err(_) => {
                    let name = if abs.is_some() { f } else { "stdin" };
                    failed = Some(format!("{name}: invalid compressed data--format violated"));
                    break;
                }
            }
        }
        if failed.is_none() && !raw {
            if first && decompress {
                let name = if abs.is_some() { f } else { "stdin" };
                failed = Some(format!("{name}: unexpected end of file"));
            } else {
                match coder.finish() {
                    Ok(data) => {
                        written += data.len() as u64;
                        self.emit(&mut out, &data).await?;
                    }
                    Err(_) => {
                        let name = if abs.is_some() { f } else { "stdin" };
                        failed = Some(format!("{name}: unexpected end of file"));
                    }
                }
            }
        }
        if let Some(msg) = failed {
            let out_kind = match &out {
                Out::Stdout | Out::Discard => OutKind::Stdout,
                Out::File(_) => OutKind::Other,
            };
            if let Out::File(h) = out {
                let _ = h.close().await;
            }
            if let Some(t) = &target {
                let _ = self.ctx.fs.unlink(&self.ctx.path(t)).await;
            }
            // GNU starts a new line first when the bad data would have gone to stdout (or
            // nowhere: -t, -l).
            if matches!(out_kind, OutKind::Stdout) && msg.ends_with("not in gzip format") {
                self.ctx.err("\n").await;
            }
            self.warn(msg, 1).await;
            return Ok(());
        }
        if let Out::File(h) = out {
            let t = target.clone().unwrap_or_default();
            let tabs = self.ctx.path(&t);
            if let Err(e) = h.close().await {
                self.warn(format!("{t}: {e}"), 1).await;
                return Ok(());
            }
            if let Some(m) = &in_meta {
                let _ = self.ctx.fs.chmod(&tabs, m.mode).await;
                let _ = self.ctx.fs.set_mtime(&tabs, m.mtime).await;
            }
            if !self.o.keep
                && let Some(a) = &abs
                && let Err(e) = self.ctx.fs.unlink(a).await
            {
                self.warn(format!("{f}: {e}"), 1).await;
            }
            if self.o.verbose && !self.o.quiet {
                // GNU's ratio leaves the gzip header and trailer out of the compressed size.
                let (plain, packed) = if decompress {
                    (written, read_bytes)
                } else {
                    (read_bytes, written)
                };
                let data = packed.saturating_sub(header_bytes) as f64;
                let ratio = if plain == 0 {
                    0.0
                } else {
                    (plain as f64 - data) * 100.0 / plain as f64
                };
                let sign = if ratio < 0.0 { '-' } else { ' ' };
                let keep = if self.o.keep {
                    "created"
                } else {
                    "replaced with"
                };
                self.ctx
                    .err(format!("{f}:\t{sign}{:4.1}% -- {keep} {t}\n", ratio.abs()))
                    .await;
            }
        }
        if listing {
            if !self.listed_header {
                self.listed_header = true;
                self.ctx
                    .out("         compressed        uncompressed  ratio uncompressed_name\n")
                    .await?;
            }
            let name = if abs.is_some() {
                match self.known_suffix(f) {
                    Some(tail) => f[..f.len() - tail.len()].to_string(),
                    None => f.to_string(),
                }
            } else {
                String::new()
            };
            let ratio = if written == 0 {
                0.0
            } else {
                (written as f64 - read_bytes as f64) * 100.0 / written as f64
            };
            self.ctx
                .out(format!(
                    "{read_bytes:>19} {written:>19} {ratio:>5.1}% {name}\n"
                ))
                .await?;
        }
        Ok(())
    }

    async fn emit(&mut self, out: &mut Out, data: &[u8]) -> Result<(), Interrupt> {
        if data.is_empty() {
            return Ok(());
        }
        match out {
            Out::Stdout => self.ctx.out(data).await,
            Out::Discard => Ok(()),
            Out::File(h) => {
                if let Err(e) = h.write(data).await {
                    self.warn(format!("write error: {e}"), 1).await;
                }
                Ok(())
            }
        }
    }
}

/// The bytes of a gzip member's header (from its first chunk `b`) and trailer: 10, the
/// stored name's when the FNAME flag is set, and 8.
fn gzip_header_len(b: &[u8]) -> u64 {
    let name = if b.get(3).is_some_and(|f| f & 0x08 != 0) {
        b.get(10..)
            .and_then(|rest| rest.iter().position(|&c| c == 0))
            .map_or(0, |n| n as u64 + 1)
    } else {
        0
    };
    18 + name
}

/// The modification time stored in a gzip header (for tests and `-N`).
#[cfg(test)]
fn header_mtime(data: &[u8]) -> Option<SystemTime> {
    let b = data.get(4..8)?;
    let secs = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    Some(UNIX_EPOCH + Duration::from_secs(u64::from(secs)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn round_trip_in_place() {
        let fs = MemFs::with_files(&[("/f", "hello hello hello\n")]);
        fs.set_mtime_secs("/f", 1_577_836_800);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let (st, _, err) = inv.run(&Gzip, &["f"]).await;
        assert_eq!((st, err.as_str()), (0, ""));
        assert!(!fs.exists("/f"));
        let gz = fs.contents("/f.gz").unwrap_or_default();
        assert_eq!(
            header_mtime(&gz),
            Some(UNIX_EPOCH + Duration::from_secs(1_577_836_800))
        );
        let (st, out, _) = inv.run(&Zcat, &["f.gz"]).await;
        assert_eq!((st, out.as_str()), (0, "hello hello hello\n"));
        let (st, _, _) = inv.run(&Gunzip, &["f.gz"]).await;
        assert_eq!(st, 0);
        assert_eq!(fs.text("/f").as_deref(), Some("hello hello hello\n"));
        let (st, _, err) = inv.run(&Gunzip, &["f"]).await;
        assert_eq!(
            (st, err.as_str()),
            (2, "gzip: f: unknown suffix -- ignored\n")
        );
        let (st, _, err) = inv.run(&Zcat, &["f"]).await;
        assert_eq!((st, err.as_str()), (1, "\ngzip: f: not in gzip format\n"));
    }
}

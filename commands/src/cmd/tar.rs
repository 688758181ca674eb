//! `tar`: create (`c`), list (`t`) and extract (`x`) archives in GNU tar's format
//! (ustar headers with GNU's magic and `././@LongLink` entries for long names), optionally
//! gzip-, bzip2- or xz-compressed (`z`, `j`, `J` to write; reading recognises each by its
//! magic). Archives stream through in blocks: nothing is held whole, files are read and
//! written in chunks; bzip2 and xz run on [`super::codec`]'s blocking coder.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use flate2::Compression;
use flate2::write::{GzDecoder, GzEncoder};

use super::codec::{Coder, Format};

use super::find::pattern::glob_match;
use super::util::{MAX_DEPTH, Pacer, mode_string, utc};
use crate::fs::{FileKind, FsError, READ_CHUNK, WriteHandle, WriteMode};
use crate::io::Input;
use crate::{CmdResult, Command, Context, Interrupt, Status};

const BLOCK: usize = 512;
/// GNU pads an archive to records of 20 blocks.
const RECORD: usize = 20 * BLOCK;

const HELP: &str = "Usage: tar [OPTION...] [FILE]...
Create, list or extract tar archives.

  -c, --create            create a new archive
  -r, --append            append files to the end of an archive
  -u, --update            only append files newer than copy in archive
  -t, --list              list the contents of an archive
  -x, --extract, --get    extract files from an archive
  -f, --file=ARCHIVE      use archive file ARCHIVE ('-' is stdin/stdout)
  -j, --bzip2             filter the archive through bzip2
  -J, --xz                filter the archive through xz
  -z, --gzip              filter the archive through gzip
  -C, --directory=DIR     change to directory DIR
  -v, --verbose           verbosely list files processed
  -p, --preserve-permissions  extract permissions as archived (always done)
  -O, --to-stdout         extract files to standard output
      --exclude=PATTERN   exclude files matching PATTERN
      --strip-components=NUMBER   strip NUMBER leading components from file
                          names on extraction
";

#[derive(Debug, Clone, Copy, PartialEq)]
enum KeepOld {
    Error,
    Silent,
}

#[derive(Debug, Default)]
struct Opts {
    op: Option<char>,
    file: Option<String>,
    gzip: bool,
    /// `j`/`J`: bzip2 or xz instead of gzip.
    filter: Option<Format>,
    verbose: bool,
    to_stdout: bool,
    excludes: Vec<String>,
    /// `--strip-components=N`: leading path components dropped from names on extraction.
    strip: usize,
    /// `-k`: an existing file is not replaced, and that is an error; `--skip-old-files`:
    /// nor replaced, silently.
    keep_old: Option<KeepOld>,
    /// Operands, each with the `-C` directory in force where it was given.
    members: Vec<(Option<String>, String)>,
    dir: Option<String>,
}

fn usage(msg: &str) -> String {
    format!("tar: {msg}\nTry 'tar --help' or 'tar --usage' for more information.\n")
}

fn parse_opts(args: &[String]) -> Result<Option<Opts>, String> {
    let mut o = Opts::default();
    let mut i = 0;
    let set_op = |o: &mut Opts, c: char| -> Result<(), String> {
        match o.op {
            Some(p) if p != c => Err(usage(
                "You may not specify more than one '-Acdtrux', '--delete' or  '--test-label' option",
            )),
            _ => {
                o.op = Some(c);
                Ok(())
            }
        }
    };
    // The first word may hold old-style letters without a dash (`tar czf x.tgz d`).
    let mut words: Vec<String> = args.to_vec();
    if let Some(first) = words.first()
        && !first.starts_with('-')
        && !first.is_empty()
        && first.chars().all(|c| "ctxruzjJvfpOCk".contains(c))
    {
        let letters: Vec<char> = first.chars().collect();
        let mut rest = words.split_off(1);
        words.clear();
        let mut pending = Vec::new();
        for c in letters {
            if c == 'f' || c == 'C' {
                if rest.is_empty() {
                    return Err(usage(&format!("Old option '{c}' requires an argument.")));
                }
                pending.push(format!("-{c}"));
                pending.push(rest.remove(0));
            } else {
                pending.push(format!("-{c}"));
            }
        }
        words.extend(pending);
        words.extend(rest);
    }
    let args = &words;
    while i < args.len() {
        let a = args[i].clone();
        i += 1;
        if a == "-" || !a.starts_with('-') {
            o.members.push((o.dir.clone(), a));
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, val) = match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (long.to_string(), None),
            };
            let value = |i: &mut usize| -> Result<String, String> {
                if let Some(v) = &val {
                    return Ok(v.clone());
                }
                let v = args
                    .get(*i)
                    .cloned()
                    .ok_or_else(|| usage(&format!("option '--{name}' requires an argument")))?;
                *i += 1;
                Ok(v)
            };
            match name.as_str() {
                "help" => return Ok(None),
                "create" => set_op(&mut o, 'c')?,
                "append" => set_op(&mut o, 'r')?,
                "update" => set_op(&mut o, 'u')?,
                "list" => set_op(&mut o, 't')?,
                "extract" | "get" => set_op(&mut o, 'x')?,
                "file" => o.file = Some(value(&mut i)?),
                "gzip" | "gunzip" | "ungzip" => o.gzip = true,
                "bzip2" => o.filter = Some(Format::Bzip2),
                "xz" => o.filter = Some(Format::Xz),
                "directory" => o.dir = Some(value(&mut i)?),
                "verbose" => o.verbose = true,
                "to-stdout" => o.to_stdout = true,
                "keep-old-files" => o.keep_old = Some(KeepOld::Error),
                "skip-old-files" => o.keep_old = Some(KeepOld::Silent),
                "exclude" => o.excludes.push(value(&mut i)?),
                "strip-components" | "strip" => {
                    let v = value(&mut i)?;
                    o.strip = v.parse().map_err(|_| {
                        format!(
                            "tar: Invalid number of elements: {}\n",
                            super::util::quote(&v)
                        )
                    })?;
                }
                "preserve-permissions" | "same-permissions" | "no-same-owner" | "same-owner" => {}
                _ => return Err(usage(&format!("unrecognized option '{a}'"))),
            }
            continue;
        }
        let chars: Vec<char> = a[1..].chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            k += 1;
            match c {
                'c' | 't' | 'x' | 'r' | 'u' => set_op(&mut o, c)?,
                'z' => o.gzip = true,
                'j' => o.filter = Some(Format::Bzip2),
                'J' => o.filter = Some(Format::Xz),
                'v' => o.verbose = true,
                'p' => {}
                'O' => o.to_stdout = true,
                'k' => o.keep_old = Some(KeepOld::Error),
                'f' | 'C' => {
                    let v: String = if k < chars.len() {
                        let v = chars[k..].iter().collect();
                        k = chars.len();
                        v
                    } else {
                        let v = args.get(i).cloned().ok_or_else(|| {
                            usage(&format!("option requires an argument -- '{c}'"))
                        })?;
                        i += 1;
                        v
                    };
                    if c == 'f' {
                        o.file = Some(v);
                    } else {
                        o.dir = Some(v);
                    }
                }
                _ => return Err(usage(&format!("invalid option -- '{c}'"))),
            }
        }
    }
    if matches!(o.op, Some('r' | 'u')) {
        if o.file.as_deref().is_none_or(|f| f == "-") {
            return Err(usage("Options '-Aru' are incompatible with '-f -'"));
        }
        if o.gzip || o.filter.is_some() {
            return Err(usage("Cannot update compressed archives"));
        }
    }
    Ok(Some(o))
}

/// Largest archive `-r`/`-u` rewrite: it is read whole, then written back with the new
/// members after it.
const MAX_APPEND_ARCHIVE: usize = 256 * 1024 * 1024;

/// Walks the headers of an uncompressed archive: where its end-of-archive blocks start
/// (or its end), and each member's name and modification time (for `-u`).
fn scan_members(data: &[u8]) -> (usize, std::collections::HashMap<String, u64>) {
    let mut members = std::collections::HashMap::new();
    let mut off = 0;
    let mut long: Option<String> = None;
    while off + BLOCK <= data.len() {
        let h = &data[off..off + BLOCK];
        if h.iter().all(|b| *b == 0) {
            return (off, members);
        }
        let size = usize::try_from(parse_octal(&h[124..136])).unwrap_or(usize::MAX);
        let body_end = off
            .saturating_add(BLOCK)
            .saturating_add(size)
            .min(data.len());
        match h[156] {
            b'L' => long = Some(cstr(&data[off + BLOCK..body_end])),
            b'K' | b'x' | b'g' => {}
            _ => {
                let name = long.take().unwrap_or_else(|| {
                    let prefix = cstr(&h[345..500]);
                    let name = cstr(&h[..100]);
                    if &h[257..263] == b"ustar\0" && !prefix.is_empty() {
                        format!("{prefix}/{name}")
                    } else {
                        name
                    }
                });
                members.insert(name, parse_octal(&h[136..148]));
            }
        }
        off = off
            .saturating_add(BLOCK)
            .saturating_add(size.div_ceil(BLOCK).saturating_mul(BLOCK));
    }
    (off.min(data.len()), members)
}

/// Where archive bytes go: stdout or a file, through gzip with `z`.
struct Sink<'a> {
    ctx: &'a Context,
    file: Option<Box<dyn WriteHandle>>,
    gz: Option<GzEncoder<Vec<u8>>>,
    /// `j`/`J`: the coder, and the output it has handed back not yet written.
    coder: Option<(Coder, Pending)>,
    written: usize,
}

/// Output of a [`Coder`] gathered between its calls and the writes that follow.
type Pending = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

/// Takes what a coder handed back.
fn drain(pending: &Pending) -> Vec<u8> {
    pending
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default()
}

/// A coder's `emit`: gathers its output into `pending`.
fn gather(
    pending: &Pending,
) -> impl FnMut(Vec<u8>) -> std::future::Ready<Result<(), Interrupt>> + '_ {
    move |data| {
        if let Ok(mut v) = pending.lock() {
            v.extend_from_slice(&data);
        }
        std::future::ready(Ok(()))
    }
}

impl Sink<'_> {
    async fn raw(&mut self, data: &[u8]) -> Result<Result<(), FsError>, Interrupt> {
        if data.is_empty() {
            return Ok(Ok(()));
        }
        match &mut self.file {
            Some(h) => Ok(h.write(data).await),
            None => {
                self.ctx.out(data).await?;
                Ok(Ok(()))
            }
        }
    }

    async fn write(&mut self, data: &[u8]) -> Result<Result<(), FsError>, Interrupt> {
        self.written += data.len();
        if let Some((coder, pending)) = &mut self.coder {
            if coder
                .push(&self.ctx.cancel, data.to_vec(), gather(pending))
                .await?
                .is_err()
            {
                return Ok(Err(FsError::Io));
            }
            let out = drain(pending);
            return self.raw(&out).await;
        }
        match &mut self.gz {
            Some(gz) => {
                if gz.write_all(data).is_err() {
                    return Ok(Err(FsError::Io));
                }
                let out = std::mem::take(gz.get_mut());
                self.raw(&out).await
            }
            None => self.raw(data).await,
        }
    }

    async fn finish(mut self) -> Result<Result<(), FsError>, Interrupt> {
        let pad = (RECORD - self.written % RECORD) % RECORD;
        if let Err(e) = self.write(&vec![0u8; pad]).await? {
            return Ok(Err(e));
        }
        if let Some(gz) = self.gz.take() {
            let Ok(rest) = gz.finish() else {
                return Ok(Err(FsError::Io));
            };
            if let Err(e) = self.raw(&rest).await? {
                return Ok(Err(e));
            }
        }
        if let Some((coder, pending)) = self.coder.take() {
            if coder
                .finish(&self.ctx.cancel, gather(&pending))
                .await?
                .is_err()
            {
                return Ok(Err(FsError::Io));
            }
            let out = drain(&pending);
            if let Err(e) = self.raw(&out).await? {
                return Ok(Err(e));
            }
        }
        match self.file.take() {
            Some(h) => Ok(h.close().await),
            None => Ok(Ok(())),
        }
    }
}

/// Where archive bytes come from, gunzipped when they start with gzip's magic.
struct Source<'a> {
    ctx: &'a Context,
    stdin: Option<Input>,
    path: Option<String>,
    off: u64,
    gz: Option<GzDecoder<Vec<u8>>>,
    /// A bzip2 or xz archive's decoder, and its output not yet buffered.
    coder: Option<(Coder, Pending)>,
    first: bool,
    buf: Vec<u8>,
    eof: bool,
}

impl Source<'_> {
    async fn raw(&mut self) -> Result<Result<Option<Vec<u8>>, FsError>, Interrupt> {
        if let Some(input) = &self.stdin {
            return Ok(match input.read_chunk().await {
                Ok(c) => Ok(c.map(|b| b.to_vec())),
                Err(_) => Err(FsError::Io),
            });
        }
        let Some(path) = &self.path else {
            return Ok(Ok(None));
        };
        match self.ctx.fs.read_at(path, self.off, READ_CHUNK).await {
            Ok(c) if c.is_empty() => Ok(Ok(None)),
            Ok(c) => {
                self.off += c.len() as u64;
                Ok(Ok(Some(c.to_vec())))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    /// Fills the buffer to at least `n` bytes (fewer at end of input).
    async fn fill(&mut self, n: usize) -> Result<Result<(), FsError>, Interrupt> {
        while self.buf.len() < n && !self.eof {
            self.ctx.checkpoint().await?;
            let chunk = match self.raw().await? {
                Ok(Some(c)) => c,
                Ok(None) => {
                    self.eof = true;
                    if let Some(gz) = self.gz.take() {
                        match gz.finish() {
                            Ok(rest) => self.buf.extend_from_slice(&rest),
                            Err(_) => return Ok(Err(FsError::Io)),
                        }
                    }
                    if let Some((coder, pending)) = self.coder.take() {
                        if coder
                            .finish(&self.ctx.cancel, gather(&pending))
                            .await?
                            .is_err()
                        {
                            return Ok(Err(FsError::Io));
                        }
                        self.buf.extend_from_slice(&drain(&pending));
                    }
                    break;
                }
                Err(e) => return Ok(Err(e)),
            };
            if self.first {
                self.first = false;
                if chunk.starts_with(&[0x1f, 0x8b]) {
                    self.gz = Some(GzDecoder::new(Vec::new()));
                }
                for f in [Format::Bzip2, Format::Xz] {
                    if f.sniff(&chunk) {
                        self.coder = Some((Coder::start(f, true, 6), Pending::default()));
                    }
                }
            }
            if let Some((coder, pending)) = &mut self.coder {
                if coder
                    .push(&self.ctx.cancel, chunk, gather(pending))
                    .await?
                    .is_err()
                {
                    return Ok(Err(FsError::Io));
                }
                self.buf.extend_from_slice(&drain(pending));
                continue;
            }
            match &mut self.gz {
                Some(gz) => {
                    if gz.write_all(&chunk).is_err() {
                        return Ok(Err(FsError::Io));
                    }
                    let out = std::mem::take(gz.get_mut());
                    self.buf.extend_from_slice(&out);
                }
                None => self.buf.extend_from_slice(&chunk),
            }
        }
        Ok(Ok(()))
    }

    async fn take(&mut self, n: usize) -> Result<Result<Vec<u8>, FsError>, Interrupt> {
        if let Err(e) = self.fill(n).await? {
            return Ok(Err(e));
        }
        let n = n.min(self.buf.len());
        Ok(Ok(self.buf.drain(..n).collect()))
    }
}

fn octal(field: &mut [u8], v: u64) {
    let digits = field.len() - 1;
    let s = format!("{v:0digits$o}");
    let s = if s.len() > digits {
        "7".repeat(digits)
    } else {
        s
    };
    field[..digits].copy_from_slice(s.as_bytes());
    field[digits] = 0;
}

fn parse_octal(field: &[u8]) -> u64 {
    let mut v = 0u64;
    for &b in field {
        match b {
            b'0'..=b'7' => v = v.wrapping_mul(8).wrapping_add(u64::from(b - b'0')),
            b' ' if v == 0 => {}
            _ => break,
        }
    }
    v
}

fn cstr(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// A GNU-format header block.
fn header(
    name: &[u8],
    kind: u8,
    mode: u32,
    size: u64,
    mtime: u64,
    link: &str,
    user: &str,
) -> [u8; BLOCK] {
    let mut h = [0u8; BLOCK];
    let n = name.len().min(100);
    h[..n].copy_from_slice(&name[..n]);
    octal(&mut h[100..108], u64::from(mode & 0o7777));
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], mtime);
    h[156] = kind;
    let l = link.len().min(100);
    h[157..157 + l].copy_from_slice(&link.as_bytes()[..l]);
    h[257..265].copy_from_slice(b"ustar  \0");
    let u = user.len().min(31);
    h[265..265 + u].copy_from_slice(&user.as_bytes()[..u]);
    h[297..297 + u].copy_from_slice(&user.as_bytes()[..u]);
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    h
}

fn secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

pub struct Tar;

struct Run<'a> {
    ctx: &'a Context,
    o: Opts,
    status: Status,
    user: String,
    /// Width of `user/group size` in `tv` listings; grows like GNU's.
    ugs_width: usize,
    /// Where `-v` names go: stderr when the archive itself is stdout.
    verbose_to_err: bool,
    pacer: Pacer,
    /// `-u`: the archive's members and their modification times.
    archived: Option<std::collections::HashMap<String, u64>>,
}

#[async_trait]
impl Command for Tar {
    fn name(&self) -> &'static str {
        "tar"
    }
    fn summary(&self) -> &'static str {
        "create, list or extract tar archives"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let o = match parse_opts(&args) {
            Ok(Some(o)) => o,
            Ok(None) => {
                ctx.out(HELP).await?;
                return Ok(0);
            }
            Err(m) => {
                ctx.err(m).await;
                return Ok(2);
            }
        };
        let Some(op) = o.op else {
            ctx.err(usage(
                "You must specify one of the '-Acdtrux', '--delete' or '--test-label' options",
            ))
            .await;
            return Ok(2);
        };
        let user = ctx
            .env
            .get("USER")
            .filter(|u| !u.is_empty())
            .cloned()
            .unwrap_or_else(|| "user".into());
        let archive = o.file.clone().unwrap_or_else(|| "-".into());
        let mut run = Run {
            ctx,
            verbose_to_err: op == 'c' && archive == "-",
            o,
            status: 0,
            user,
            ugs_width: 19,
            pacer: Pacer::default(),
            archived: None,
        };
        let st = match op {
            'c' => run.create(&archive).await?,
            'r' | 'u' => run.append(&archive, op == 'u').await?,
            _ => run.read(&archive, op).await?,
        };
        if st == 0 && run.status != 0 {
            ctx.err("tar: Exiting with failure status due to previous errors\n")
                .await;
        }
        Ok(st.max(run.status))
    }
}

impl Run<'_> {
    async fn fatal(&self, what: &str, e: FsError) -> Status {
        self.ctx
            .err(format!(
                "tar: {what}: Cannot open: {e}\ntar: Error is not recoverable: exiting now\n"
            ))
            .await;
        2
    }

    fn excluded(&self, name: &str) -> bool {
        let name = name.trim_end_matches('/');
        self.o.excludes.iter().any(|p| {
            glob_match(p, name, false)
                || name.split('/').enumerate().any(|(i, _)| {
                    let tail: Vec<&str> = name.split('/').skip(i).collect();
                    glob_match(p, &tail.join("/"), false)
                })
        })
    }

    async fn verbose(&self, line: String) -> Result<(), Interrupt> {
        if self.verbose_to_err {
            self.ctx.err(line).await;
            Ok(())
        } else {
            self.ctx.out(line).await
        }
    }

    /// `-r` (and `-u`, which adds only what is newer than the archive's copy): the
    /// archive up to its end-of-archive blocks, then the new members, rewritten.
    async fn append(&mut self, archive: &str, update: bool) -> Result<Status, Interrupt> {
        let mut charge = self.ctx.budget.empty_charge();
        let old = match super::util::Reader::open(self.ctx, archive).await {
            Ok(mut r) => match r.read_to_end(MAX_APPEND_ARCHIVE, &mut charge).await? {
                Ok(d) => d,
                Err(e) => return Ok(self.fatal(archive, e).await),
            },
            Err(FsError::NotFound) => Vec::new(),
            Err(e) => return Ok(self.fatal(archive, e).await),
        };
        if old.starts_with(&[0x1f, 0x8b]) || Format::Bzip2.sniff(&old) || Format::Xz.sniff(&old) {
            self.ctx
                .err("tar: Cannot update compressed archives\ntar: Error is not recoverable: exiting now\n")
                .await;
            return Ok(2);
        }
        let (end, members) = scan_members(&old);
        if update {
            self.archived = Some(members);
        }
        self.write_archive(archive, &old[..end]).await
    }

    async fn create(&mut self, archive: &str) -> Result<Status, Interrupt> {
        if self.o.members.is_empty() {
            self.ctx
                .err(usage("Cowardly refusing to create an empty archive"))
                .await;
            return Ok(2);
        }
        let file = if archive == "-" {
            None
        } else {
            match self
                .ctx
                .fs
                .open_write(&self.ctx.path(archive), WriteMode::Truncate)
                .await
            {
                Ok(h) => Some(h),
                Err(e) => return Ok(self.fatal(archive, e).await),
            }
        };
        self.fill_archive(archive, file, &[]).await
    }

    /// `-r`/`-u`: the archive rewritten from `kept` (its members so far).
    async fn write_archive(&mut self, archive: &str, kept: &[u8]) -> Result<Status, Interrupt> {
        let file = match self
            .ctx
            .fs
            .open_write(&self.ctx.path(archive), WriteMode::Truncate)
            .await
        {
            Ok(h) => h,
            Err(e) => return Ok(self.fatal(archive, e).await),
        };
        self.fill_archive(archive, Some(file), kept).await
    }

    /// Writes `kept`, then the members named on the command line, then the end of the
    /// archive.
    async fn fill_archive(
        &mut self,
        archive: &str,
        file: Option<Box<dyn WriteHandle>>,
        kept: &[u8],
    ) -> Result<Status, Interrupt> {
        let mut sink = Sink {
            ctx: self.ctx,
            file,
            gz: self
                .o
                .gzip
                .then(|| GzEncoder::new(Vec::new(), Compression::default())),
            coder: self.o.filter.map(|f| {
                let level = if f == Format::Bzip2 { 9 } else { 6 };
                (Coder::start(f, false, level), Pending::default())
            }),
            written: 0,
        };
        if !kept.is_empty() {
            self.write(&mut sink, kept).await?;
        }
        let mut warned_abs = false;
        for (dir, m) in std::mem::take(&mut self.o.members) {
            let base = match &dir {
                Some(d) => self.ctx.path(d),
                None => self.ctx.cwd.clone(),
            };
            let abs = crate::fs::join(&base, &m);
            let mut name = m.trim_start_matches('/').to_string();
            if name.len() != m.len() && !warned_abs {
                warned_abs = true;
                self.ctx
                    .err("tar: Removing leading `/' from member names\n")
                    .await;
            }
            if name.is_empty() {
                name = ".".into();
            }
            self.add(&mut sink, &abs, &name, &m, 0).await?;
        }
        let _ = sink.write(&[0u8; 2 * BLOCK]).await?;
        if let Err(e) = sink.finish().await? {
            self.ctx
                .err(format!("tar: {archive}: Cannot write: {e}\n"))
                .await;
            return Ok(2);
        }
        Ok(0)
    }

    fn add<'b>(
        &'b mut self,
        sink: &'b mut Sink<'_>,
        abs: &'b str,
        name: &'b str,
        shown: &'b str,
        depth: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Interrupt>> + Send + 'b>>
    {
        Box::pin(async move {
            self.pacer.tick(self.ctx).await?;
            if self.excluded(name) {
                return Ok(());
            }
            let meta = match self.ctx.fs.lstat(abs).await {
                Ok(m) => m,
                Err(e) => {
                    self.ctx
                        .err(format!("tar: {shown}: Cannot stat: {e}\n"))
                        .await;
                    self.status = 2;
                    return Ok(());
                }
            };
            let mtime = secs(meta.mtime);
            // `-u`: what the archive holds at least as new is not added again (a
            // directory's members are still looked at).
            let up_to_date = |n: &str| {
                self.archived
                    .as_ref()
                    .and_then(|m| m.get(n))
                    .is_some_and(|&t| t >= mtime)
            };
            let (kind, size, link, entry_name) = match meta.kind {
                FileKind::Dir => {
                    let n = if name.ends_with('/') {
                        name.to_string()
                    } else {
                        format!("{name}/")
                    };
                    (b'5', 0, String::new(), n)
                }
                FileKind::Symlink => {
                    let t = self.ctx.fs.readlink(abs).await.unwrap_or_default();
                    (b'2', 0, t, name.to_string())
                }
                _ => (b'0', meta.len, String::new(), name.to_string()),
            };
            let skip = up_to_date(&entry_name);
            if skip && meta.kind != FileKind::Dir {
                return Ok(());
            }
            if self.o.verbose && !skip {
                self.verbose(format!("{entry_name}\n")).await?;
            }
            if skip {
                // A directory the archive has: only its members may be new.
            } else if entry_name.len() > 100 {
                let mut long = entry_name.clone().into_bytes();
                long.push(0);
                let h = header(
                    b"././@LongLink",
                    b'L',
                    0o644,
                    long.len() as u64,
                    0,
                    "",
                    "root",
                );
                self.write(sink, &h).await?;
                let pad = (BLOCK - long.len() % BLOCK) % BLOCK;
                long.extend(std::iter::repeat_n(0, pad));
                self.write(sink, &long).await?;
            }
            if link.len() > 100 {
                let mut long = link.clone().into_bytes();
                long.push(0);
                let h = header(
                    b"././@LongLink",
                    b'K',
                    0o644,
                    long.len() as u64,
                    0,
                    "",
                    "root",
                );
                self.write(sink, &h).await?;
                let pad = (BLOCK - long.len() % BLOCK) % BLOCK;
                long.extend(std::iter::repeat_n(0, pad));
                self.write(sink, &long).await?;
            }
            let h = header(
                entry_name.as_bytes(),
                kind,
                meta.mode,
                size,
                mtime,
                &link,
                &self.user,
            );
            if !skip {
                self.write(sink, &h).await?;
            }
            match meta.kind {
                FileKind::File => {
                    let mut off = 0u64;
                    while off < size {
                        let want = READ_CHUNK.min((size - off) as usize);
                        let chunk = match self.ctx.fs.read_at(abs, off, want).await {
                            Ok(c) if !c.is_empty() => c.to_vec(),
                            Ok(_) => vec![0u8; want],
                            Err(e) => {
                                self.ctx
                                    .err(format!("tar: {shown}: Read error: {e}\n"))
                                    .await;
                                self.status = 2;
                                vec![0u8; want]
                            }
                        };
                        off += chunk.len() as u64;
                        self.write(sink, &chunk).await?;
                        self.pacer.tick(self.ctx).await?;
                    }
                    let pad = (BLOCK - (size as usize) % BLOCK) % BLOCK;
                    self.write(sink, &vec![0u8; pad]).await?;
                }
                FileKind::Dir => {
                    if depth >= MAX_DEPTH {
                        self.ctx
                            .err(format!("tar: {shown}: directory nesting too deep\n"))
                            .await;
                        self.status = 2;
                        return Ok(());
                    }
                    let entries = match self.ctx.fs.read_dir(abs).await {
                        Ok(e) => e,
                        Err(e) => {
                            self.ctx
                                .err(format!("tar: {shown}: Cannot open: {e}\n"))
                                .await;
                            self.status = 2;
                            return Ok(());
                        }
                    };
                    for e in entries {
                        let child_abs = format!("{}/{}", abs.trim_end_matches('/'), e.name);
                        let child_name = format!("{entry_name}{}", e.name);
                        let child_shown = format!("{}/{}", shown.trim_end_matches('/'), e.name);
                        self.add(sink, &child_abs, &child_name, &child_shown, depth + 1)
                            .await?;
                    }
                }
                _ => {}
            }
            Ok(())
        })
    }

    async fn write(&mut self, sink: &mut Sink<'_>, data: &[u8]) -> Result<(), Interrupt> {
        if let Err(e) = sink.write(data).await? {
            self.ctx.err(format!("tar: Cannot write: {e}\n")).await;
            self.status = 2;
        }
        Ok(())
    }

    async fn read(&mut self, archive: &str, op: char) -> Result<Status, Interrupt> {
        let mut src = Source {
            ctx: self.ctx,
            stdin: None,
            path: None,
            off: 0,
            gz: None,
            coder: None,
            first: true,
            buf: Vec::new(),
            eof: false,
        };
        if archive == "-" {
            src.stdin = Some(self.ctx.stdin.clone());
        } else {
            let p = self.ctx.path(archive);
            if let Err(e) = self.ctx.fs.stat(&p).await {
                return Ok(self.fatal(archive, e).await);
            }
            src.path = Some(p);
        }
        let base = match &self.o.dir {
            Some(d) => {
                let p = self.ctx.path(d);
                match self.ctx.fs.stat(&p).await {
                    Ok(m) if m.is_dir() => p,
                    Ok(_) => return Ok(self.fatal(d, FsError::NotADirectory).await),
                    Err(e) => return Ok(self.fatal(d, e).await),
                }
            }
            None => self.ctx.cwd.clone(),
        };
        let wanted: Vec<String> = self
            .o
            .members
            .iter()
            .map(|(_, m)| m.trim_end_matches('/').to_string())
            .collect();
        let mut found = vec![false; wanted.len()];
        let mut long_name: Option<String> = None;
        let mut long_link: Option<String> = None;
        let mut dir_times: Vec<(String, SystemTime)> = Vec::new();
        let mut zero_blocks = 0;
        // Headers read so far: a short first block is no archive at all.
        let mut headers = 0usize;
        loop {
            let block = match src.take(BLOCK).await? {
                Ok(b) => b,
                Err(e) => {
                    self.ctx
                        .err(format!("tar: {archive}: Read error: {e}\n"))
                        .await;
                    return Ok(2);
                }
            };
            if block.is_empty() {
                break;
            }
            if block.len() < BLOCK {
                if headers == 0 {
                    self.ctx.err("tar: This does not look like a tar archive\ntar: Exiting with failure status due to previous errors\n").await;
                } else {
                    self.ctx.err("tar: Unexpected EOF in archive\ntar: Error is not recoverable: exiting now\n").await;
                }
                return Ok(2);
            }
            headers += 1;
            if block.iter().all(|&b| b == 0) {
                zero_blocks += 1;
                if zero_blocks >= 2 {
                    break;
                }
                continue;
            }
            zero_blocks = 0;
            let stored: u32 = parse_octal(&block[148..156]) as u32;
            let mut check: u32 = block.iter().map(|&b| u32::from(b)).sum();
            check = check - block[148..156].iter().map(|&b| u32::from(b)).sum::<u32>() + 8 * 32;
            if stored != check {
                self.ctx.err("tar: This does not look like a tar archive\ntar: Exiting with failure status due to previous errors\n").await;
                return Ok(2);
            }
            let kind = block[156];
            let size = parse_octal(&block[124..136]);
            let padded = size.div_ceil(BLOCK as u64) * BLOCK as u64;
            if matches!(kind, b'L' | b'K' | b'x' | b'g') {
                let data = match src.take(padded as usize).await? {
                    Ok(d) => d,
                    Err(_) => return Ok(2),
                };
                let body = &data[..(size as usize).min(data.len())];
                match kind {
                    b'L' => long_name = Some(cstr(body)),
                    b'K' => long_link = Some(cstr(body)),
                    b'x' => {
                        for rec in pax_records(body) {
                            match rec.0.as_str() {
                                "path" => long_name = Some(rec.1),
                                "linkpath" => long_link = Some(rec.1),
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
                continue;
            }
            let mut name = long_name.take().unwrap_or_else(|| {
                let prefix = cstr(&block[345..500]);
                let n = cstr(&block[..100]);
                if block[257..262] == *b"ustar" && block[263] == b'0' && !prefix.is_empty() {
                    format!("{prefix}/{n}")
                } else {
                    n
                }
            });
            let link = long_link.take().unwrap_or_else(|| cstr(&block[157..257]));
            let mode = parse_octal(&block[100..108]) as u32;
            let mtime = UNIX_EPOCH + Duration::from_secs(parse_octal(&block[136..148]));
            let uname = cstr(&block[265..297]);
            let gname = cstr(&block[297..329]);
            let fkind = match kind {
                b'5' => FileKind::Dir,
                b'2' => FileKind::Symlink,
                _ => FileKind::File,
            };
            let trimmed = name.trim_end_matches('/').to_string();
            let selected = wanted.is_empty()
                || wanted.iter().enumerate().any(|(i, w)| {
                    let hit = trimmed == *w || trimmed.starts_with(&format!("{w}/"));
                    if hit {
                        found[i] = true;
                    }
                    hit
                });
            let selected = selected && !self.excluded(&trimmed);
            let data_size = if kind == b'5' || kind == b'2' {
                0
            } else {
                padded
            };
            if !selected {
                if let Err(e) = self.skip(&mut src, data_size).await? {
                    self.ctx
                        .err(format!("tar: {archive}: Read error: {e}\n"))
                        .await;
                    return Ok(2);
                }
                continue;
            }
            // `--strip-components=N` on extraction: the name without its first N
            // components; a member with no more than N is neither extracted nor listed.
            let mut stripped = None;
            if op == 'x' && self.o.strip > 0 {
                let parts: Vec<&str> = name.split('/').filter(|c| !c.is_empty()).collect();
                if parts.len() <= self.o.strip {
                    if let Err(e) = self.skip(&mut src, data_size).await? {
                        self.ctx
                            .err(format!("tar: {archive}: Read error: {e}\n"))
                            .await;
                        return Ok(2);
                    }
                    continue;
                }
                stripped = Some(parts[self.o.strip..].join("/"));
            }
            if op == 't' || self.o.verbose {
                let line = if self.o.verbose && op == 't' {
                    self.long_line(fkind, mode, &uname, &gname, size, mtime, &name, &link)
                } else {
                    format!("{name}\n")
                };
                self.verbose(line).await?;
            }
            if op == 't' {
                if let Err(e) = self.skip(&mut src, data_size).await? {
                    self.ctx
                        .err(format!("tar: {archive}: Read error: {e}\n"))
                        .await;
                    return Ok(2);
                }
                continue;
            }
            // Extract, keeping the path inside the destination.
            name = name.trim_start_matches('/').to_string();
            if let Some(short) = stripped {
                name = short;
            }
            if name.split('/').any(|c| c == "..") {
                self.ctx
                    .err("tar: Removing leading `../' from member names\n")
                    .await;
                name = name
                    .split('/')
                    .filter(|c| *c != "..")
                    .collect::<Vec<_>>()
                    .join("/");
            }
            let dest = crate::fs::join(&base, name.trim_end_matches('/'));
            if !self.o.to_stdout {
                self.make_parents(&base, name.trim_end_matches('/')).await;
            }
            match fkind {
                FileKind::Dir => {
                    if self.o.to_stdout {
                        continue;
                    }
                    match self.ctx.fs.mkdir(&dest).await {
                        Ok(()) | Err(FsError::AlreadyExists) => {}
                        Err(e) => {
                            self.cannot(&name, "mkdir", e).await;
                            continue;
                        }
                    }
                    let _ = self.ctx.fs.chmod(&dest, mode).await;
                    dir_times.push((dest, mtime));
                }
                FileKind::Symlink => {
                    if self.o.to_stdout {
                        continue;
                    }
                    let _ = self.ctx.fs.unlink(&dest).await;
                    if let Err(e) = self.ctx.fs.symlink(&link, &dest).await {
                        self.cannot(&name, "symlink", e).await;
                    }
                }
                _ => {
                    if self.o.to_stdout {
                        let mut left = size;
                        while left > 0 {
                            let n = READ_CHUNK.min(left as usize);
                            let chunk = match src.take(n).await? {
                                Ok(c) if !c.is_empty() => c,
                                _ => return Ok(self.eof().await),
                            };
                            left -= chunk.len() as u64;
                            self.ctx.out(&chunk).await?;
                        }
                        if let Err(e) = self.skip(&mut src, padded - size).await? {
                            self.ctx
                                .err(format!("tar: {archive}: Read error: {e}\n"))
                                .await;
                            return Ok(2);
                        }
                        continue;
                    }
                    let existing = self.ctx.fs.lstat(&dest).await.ok();
                    let kept = existing.is_some() && self.o.keep_old.is_some();
                    if kept && self.o.keep_old == Some(KeepOld::Error) {
                        self.cannot(&name, "open", FsError::AlreadyExists).await;
                    }
                    if !kept
                        && let Some(m) = &existing
                        && !m.is_dir()
                    {
                        let _ = self.ctx.fs.unlink(&dest).await;
                    }
                    let opened = if kept {
                        None
                    } else {
                        Some(self.ctx.fs.open_write(&dest, WriteMode::Truncate).await)
                    };
                    let mut handle = match opened {
                        Some(Ok(h)) => Some(h),
                        Some(Err(e)) => {
                            self.cannot(&name, "open", e).await;
                            None
                        }
                        None => None,
                    };
                    let mut left = size;
                    while left > 0 {
                        let n = READ_CHUNK.min(left as usize);
                        let chunk = match src.take(n).await? {
                            Ok(c) if !c.is_empty() => c,
                            _ => return Ok(self.eof().await),
                        };
                        left -= chunk.len() as u64;
                        if let Some(h) = &mut handle
                            && let Err(e) = h.write(&chunk).await
                        {
                            self.cannot(&name, "write", e).await;
                        }
                    }
                    if let Err(e) = self.skip(&mut src, padded - size).await? {
                        self.ctx
                            .err(format!("tar: {archive}: Read error: {e}\n"))
                            .await;
                        return Ok(2);
                    }
                    if let Some(h) = handle {
                        if let Err(e) = h.close().await {
                            self.cannot(&name, "close", e).await;
                        }
                        let _ = self.ctx.fs.chmod(&dest, mode).await;
                        let _ = self.ctx.fs.set_mtime(&dest, mtime).await;
                    }
                }
            }
        }
        for (d, t) in dir_times.into_iter().rev() {
            let _ = self.ctx.fs.set_mtime(&d, t).await;
        }
        for (i, w) in wanted.iter().enumerate() {
            if !found[i] {
                self.ctx
                    .err(format!("tar: {w}: Not found in archive\n"))
                    .await;
                self.status = 2;
            }
        }
        Ok(0)
    }

    /// Creates the directories leading to `name` under `base` that do not exist yet
    /// (an archive need not hold them), 0755 as GNU makes them.
    async fn make_parents(&self, base: &str, name: &str) {
        let parts: Vec<&str> = name.split('/').filter(|c| !c.is_empty()).collect();
        let mut path = base.trim_end_matches('/').to_string();
        for part in parts.iter().take(parts.len().saturating_sub(1)) {
            path.push('/');
            path.push_str(part);
            if self.ctx.fs.stat(&path).await.is_err() {
                let _ = self.ctx.fs.mkdir(&path).await;
            }
        }
    }

    async fn eof(&self) -> Status {
        self.ctx
            .err("tar: Unexpected EOF in archive\ntar: Error is not recoverable: exiting now\n")
            .await;
        2
    }

    async fn cannot(&mut self, name: &str, what: &str, e: FsError) {
        self.ctx
            .err(format!("tar: {name}: Cannot {what}: {e}\n"))
            .await;
        self.status = 2;
    }

    async fn skip(
        &mut self,
        src: &mut Source<'_>,
        mut n: u64,
    ) -> Result<Result<(), FsError>, Interrupt> {
        while n > 0 {
            let step = READ_CHUNK.min(n as usize);
            let got = match src.take(step).await? {
                Ok(g) => g,
                Err(e) => return Ok(Err(e)),
            };
            if got.is_empty() {
                return Ok(Err(FsError::Io));
            }
            n -= got.len() as u64;
        }
        Ok(Ok(()))
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "one listing line has that many fields"
    )]
    fn long_line(
        &mut self,
        kind: FileKind,
        mode: u32,
        uname: &str,
        gname: &str,
        size: u64,
        mtime: SystemTime,
        name: &str,
        link: &str,
    ) -> String {
        let meta = crate::fs::Metadata::new(kind, size, mode, mtime);
        let ug = format!("{uname}/{gname}");
        let size_s = size.to_string();
        let need = ug.len() + 1 + size_s.len();
        if need > self.ugs_width {
            self.ugs_width = need;
        }
        let pad = self.ugs_width - ug.len() - size_s.len();
        let when = utc(mtime).format("%Y-%m-%d %H:%M");
        let mut line = format!(
            "{} {ug}{}{size_s} {when} {name}",
            mode_string(&meta),
            " ".repeat(pad)
        );
        if kind == FileKind::Symlink {
            line.push_str(" -> ");
            line.push_str(link);
        }
        line.push('\n');
        line
    }
}

/// `LEN key=value\n` records of a pax header.
fn pax_records(body: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let Some(sp) = rest.iter().position(|&b| b == b' ') else {
            break;
        };
        let Some(len) = std::str::from_utf8(&rest[..sp])
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
        else {
            break;
        };
        if len == 0 || len > rest.len() {
            break;
        }
        let rec = String::from_utf8_lossy(&rest[sp + 1..len])
            .trim_end_matches('\n')
            .to_string();
        if let Some((k, v)) = rec.split_once('=') {
            out.push((k.to_string(), v.to_string()));
        }
        rest = &rest[len..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn round_trip_plain_and_gzip() {
        let fs = MemFs::with_files(&[("/d/a", "hello\n"), ("/d/sub/b", "bee")]);
        fs.put_symlink("a", "/d/l");
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        for (flags, file) in [("cf", "x.tar"), ("czf", "x.tgz")] {
            let (st, _, err) = inv.run(&Tar, &[flags, file, "d"]).await;
            assert_eq!((st, err.as_str()), (0, ""));
            let (st, out, _) = inv.run(&Tar, &["tf", file]).await;
            assert_eq!((st, out.as_str()), (0, "d/\nd/a\nd/l\nd/sub/\nd/sub/b\n"));
            fs.put_dir("/out");
            let (st, _, err) = inv.run(&Tar, &["xf", file, "-C", "out"]).await;
            assert_eq!((st, err.as_str()), (0, ""));
            assert_eq!(fs.text("/out/d/sub/b").as_deref(), Some("bee"));
        }
        let (st, _, err) = inv.run(&Tar, &["cf", "e.tar"]).await;
        assert_eq!(st, 2);
        assert!(err.starts_with("tar: Cowardly refusing"), "{err}");
    }
}

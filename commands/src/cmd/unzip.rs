//! `unzip`: list, test and extract zip archives (through the `zip` crate), worded as
//! Info-ZIP's UnZip 6.00: `-l` lists, `-p` pipes members to stdout, `-t` tests, and the
//! default extracts (`-d DIR` into DIR, `-j` without paths, `-o` overwriting, `-n`
//! never overwriting, `-q` quietly); member operands are wildcards. An existing file
//! without `-o`/`-n` is asked about on stdin as Info-ZIP asks (y, n, A, N; end of input
//! means None). Statuses are Info-ZIP's (1 warnings, 9 no archive, 11 no match).
//! Names that would leave the extraction directory lose their `..` and `/` parts.

use std::io::{Cursor, Read};
use std::time::{Duration, UNIX_EPOCH};

use async_trait::async_trait;
use zip::ZipArchive;

use super::codec::Early;
use crate::fs::{WriteMode, read_all};
use crate::{CmdResult, Command, Context, Interrupt, Status};

/// Largest archive unzip reads (it is read into memory, charged to the session).
const MAX_ARCHIVE: u64 = 1 << 30;
/// Bytes extracted between writes.
const CHUNK: usize = 64 * 1024;

const HELP: &str = "UnZip 6.00 of 20 April 2009, by Debian. Original by Info-ZIP.

Usage: unzip [-Z] [-opts[modifiers]] file[.zip] [list] [-x xlist] [-d exdir]
  Default action is to extract files in list, except those in xlist, to exdir;
  file[.zip] may be a wildcard.  -Z => ZipInfo mode (\"unzip -Z\" for usage).

  -p  extract files to pipe, no messages     -l  list files (short format)
  -f  freshen existing files, create none    -t  test compressed archive data
  -u  update files, create if necessary      -z  display archive comment only
  -v  list verbosely/show version info       -T  timestamp archive to latest
  -x  exclude files that follow (in xlist)   -d  extract files into exdir
modifiers:
  -n  never overwrite existing files         -q  quiet mode (-qq => quieter)
  -o  overwrite files WITHOUT prompting      -a  auto-convert any text files
  -j  junk paths (do not make directories)   -aa treat ALL files as text
  -U  use escapes for all non-ASCII Unicode  -UU ignore any Unicode fields
  -C  match filenames case-insensitively     -L  make (some) names lowercase
  -X  restore UID/GID info                   -V  retain VMS version numbers
  -K  keep setuid/setgid/tacky permissions   -M  pipe through \"more\" pager
";

#[derive(Default)]
struct Opts {
    list: bool,
    pipe: bool,
    test: bool,
    overwrite: bool,
    never: bool,
    quiet: u8,
    junk: bool,
    dir: Option<String>,
    archive: Option<String>,
    members: Vec<String>,
    excludes: Vec<String>,
}

/// unzip's options, anywhere among the names: `-h` is answered with the help, a bad
/// option with unzip's complaint on stderr (status 10).
fn parse(args: &[String]) -> Result<Opts, Early> {
    let mut o = Opts::default();
    let mut it = args.iter().peekable();
    let mut excluding = false;
    while let Some(a) = it.next() {
        if a == "--help" {
            return Err(Early::out(HELP, 0));
        }
        if a.starts_with('-') && a.len() > 1 {
            excluding = false;
            let mut chars = a[1..].chars();
            while let Some(c) = chars.next() {
                match c {
                    'l' => o.list = true,
                    'p' => o.pipe = true,
                    't' => o.test = true,
                    'o' => o.overwrite = true,
                    'n' => o.never = true,
                    'q' => o.quiet += 1,
                    'j' => o.junk = true,
                    'h' => return Err(Early::out(HELP, 0)),
                    'x' => excluding = true,
                    'd' => {
                        let rest = chars.as_str();
                        if !rest.is_empty() {
                            o.dir = Some(rest.to_string());
                        } else if let Some(d) = it.next() {
                            o.dir = Some(d.clone());
                        } else {
                            return Err(Early::err(
                                "error:  must specify directory to which to extract with -d option\n",
                                10,
                            ));
                        }
                        break;
                    }
                    'a' | 'b' | 'C' | 'L' | 'U' | 'X' | 'K' | 'V' => {}
                    _ => return Err(Early::err(format!("unzip:  invalid option: -{c}\n"), 10)),
                }
            }
            continue;
        }
        if o.archive.is_none() {
            o.archive = Some(a.clone());
        } else if excluding {
            o.excludes.push(a.clone());
        } else {
            o.members.push(a.clone());
        }
    }
    Ok(o)
}

/// Whether `name` matches an Info-ZIP wildcard (`*`, `?`, `[...]`; `*` crosses `/`).
fn matches(pattern: &str, name: &str) -> bool {
    match glob::Pattern::new(pattern) {
        Ok(p) => p.matches_with(
            name,
            glob::MatchOptions {
                case_sensitive: true,
                require_literal_separator: false,
                require_literal_leading_dot: false,
            },
        ),
        Err(_) => pattern == name,
    }
}

/// A member's name made safe to extract: no leading `/`, no `..` or `.` components.
fn safe_name(name: &str) -> String {
    name.split('/')
        .filter(|c| !c.is_empty() && *c != "." && *c != "..")
        .collect::<Vec<_>>()
        .join("/")
}

pub struct Unzip;

#[async_trait]
impl Command for Unzip {
    fn name(&self) -> &'static str {
        "unzip"
    }
    fn summary(&self) -> &'static str {
        "list, test and extract zip archives"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let o = match parse(&args) {
            Ok(o) => o,
            Err(early) => return early.give(ctx).await,
        };
        let Some(name) = o.archive.clone() else {
            ctx.out(HELP).await?;
            return Ok(0);
        };
        let mut found = None;
        for candidate in [name.clone(), format!("{name}.zip"), format!("{name}.ZIP")] {
            if ctx
                .fs
                .stat(&ctx.path(&candidate))
                .await
                .is_ok_and(|m| m.is_file())
            {
                found = Some(candidate);
                break;
            }
        }
        let Some(shown) = found else {
            ctx.err(format!(
                "unzip:  cannot find or open {name}, {name}.zip or {name}.ZIP.\n"
            ))
            .await;
            return Ok(9);
        };
        let data = match read_all(ctx.fs.as_ref(), &ctx.path(&shown), MAX_ARCHIVE).await {
            Ok(d) => d,
            Err(e) => {
                ctx.err(format!("unzip:  cannot find or open {shown}: {e}\n"))
                    .await;
                return Ok(9);
            }
        };
        let _charge = ctx.budget.charge(data.len())?;
        let mut archive = match ZipArchive::new(Cursor::new(data)) {
            Ok(a) => a,
            Err(_) => {
                if o.quiet < 2 && !o.pipe {
                    ctx.out(format!("Archive:  {shown}\n")).await?;
                }
                ctx.err(format!(
                    "  End-of-central-directory signature not found.  Either this file is not\n  a zipfile, or it constitutes one disk of a multi-part archive.  In the\n  latter case the central directory and zipfile comment will be found on\n  the last disk(s) of this archive.\nunzip:  cannot find zipfile directory in one of {shown} or\n        {shown}.zip, and cannot find {shown}.ZIP, period.\n"
                ))
                .await;
                return Ok(9);
            }
        };
        let mut r = Run {
            ctx,
            o: &o,
            shown,
            status: 0,
            answer_all: None,
        };
        r.go(&mut archive).await
    }
}

struct Run<'a> {
    ctx: &'a Context,
    o: &'a Opts,
    shown: String,
    status: Status,
    /// `A` or `N` answered to a replace question: the answer for every later file.
    answer_all: Option<bool>,
}

/// What a member is, read once from the archive.
struct Member {
    index: usize,
    name: String,
    size: u64,
    dir: bool,
    stored: bool,
    mode: Option<u32>,
    when: Option<zip::DateTime>,
}

impl Run<'_> {
    async fn go(&mut self, archive: &mut ZipArchive<Cursor<Vec<u8>>>) -> CmdResult {
        let mut members = Vec::new();
        for i in 0..archive.len() {
            let Ok(f) = archive.by_index_raw(i) else {
                continue;
            };
            members.push(Member {
                index: i,
                name: f.name().map(|n| n.to_string()).unwrap_or_default(),
                size: f.size(),
                dir: f.is_dir(),
                stored: f.compression() == zip::CompressionMethod::Stored,
                mode: f.unix_mode(),
                when: f.last_modified(),
            });
        }
        let o = self.o;
        let mut used = vec![false; o.members.len()];
        let selected: Vec<&Member> = members
            .iter()
            .filter(|m| {
                let mut hit = o.members.is_empty();
                for (k, p) in o.members.iter().enumerate() {
                    if matches(p, &m.name) {
                        used[k] = true;
                        hit = true;
                    }
                }
                hit && !o.excludes.iter().any(|p| matches(p, &m.name))
            })
            .collect();
        let header = o.quiet == 0 && (!o.pipe || o.list);
        if header {
            self.ctx.out(format!("Archive:  {}\n", self.shown)).await?;
        }
        if o.list {
            self.list(&selected).await?;
        } else if o.pipe {
            for m in &selected {
                self.pipe(archive, m).await?;
            }
        } else if o.test {
            let mut bad = 0;
            for m in &selected {
                let ok = self.check(archive, m).await?;
                if o.quiet == 0 {
                    let state = if ok { "OK" } else { "bad CRC" };
                    self.ctx
                        .out(format!("    testing: {:<24} {state}\n", m.name))
                        .await?;
                }
                bad += usize::from(!ok);
            }
            if bad == 0 {
                if o.quiet < 2 {
                    self.ctx
                        .out(format!(
                            "No errors detected in compressed data of {}.\n",
                            self.shown
                        ))
                        .await?;
                }
            } else {
                self.ctx
                    .out(format!(
                        "At least one error was detected in {}.\n",
                        self.shown
                    ))
                    .await?;
                self.status = 2;
            }
        } else {
            for m in &selected {
                self.extract(archive, m).await?;
            }
        }
        for (k, p) in o.members.iter().enumerate() {
            if !used[k] {
                self.ctx
                    .err(format!("caution: filename not matched:  {p}\n"))
                    .await;
                self.status = self.status.max(11);
            }
        }
        Ok(self.status)
    }

    async fn list(&mut self, selected: &[&Member]) -> Result<(), Interrupt> {
        let mut out = String::new();
        if self.o.quiet < 2 {
            out.push_str(
                "  Length      Date    Time    Name\n---------  ---------- -----   ----\n",
            );
        }
        let mut total = 0u64;
        for m in selected {
            total += m.size;
            let (date, time) = match m.when {
                Some(t) => (
                    format!("{:04}-{:02}-{:02}", t.year(), t.month(), t.day()),
                    format!("{:02}:{:02}", t.hour(), t.minute()),
                ),
                None => ("1980-00-00".to_string(), "00:00".to_string()),
            };
            out.push_str(&format!("{:>9}  {date} {time}   {}\n", m.size, m.name));
        }
        if self.o.quiet < 2 {
            let n = selected.len();
            let files = if n == 1 { "file" } else { "files" };
            out.push_str(&format!(
                "---------                     -------\n{total:>9}                     {n} {files}\n"
            ));
        }
        self.ctx.out(out).await
    }

    async fn pipe(
        &mut self,
        archive: &mut ZipArchive<Cursor<Vec<u8>>>,
        m: &Member,
    ) -> Result<(), Interrupt> {
        if m.dir {
            return Ok(());
        }
        let mut f = match archive.by_index(m.index) {
            Ok(f) => f,
            Err(e) => {
                self.ctx.err(format!("error:  {}: {e}\n", m.name)).await;
                self.status = self.status.max(2);
                return Ok(());
            }
        };
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match f.read(&mut buf) {
                Ok(n) => n,
                Err(e) => {
                    self.ctx.err(format!("error:  {}: {e}\n", m.name)).await;
                    self.status = self.status.max(2);
                    return Ok(());
                }
            };
            if n == 0 {
                return Ok(());
            }
            self.ctx.out(&buf[..n]).await?;
            self.ctx.checkpoint().await?;
        }
    }

    /// Reads a member through (its CRC is checked at the end): whether it is intact.
    async fn check(
        &mut self,
        archive: &mut ZipArchive<Cursor<Vec<u8>>>,
        m: &Member,
    ) -> Result<bool, Interrupt> {
        let Ok(mut f) = archive.by_index(m.index) else {
            return Ok(false);
        };
        let mut buf = vec![0u8; CHUNK];
        loop {
            match f.read(&mut buf) {
                Ok(0) => return Ok(true),
                Ok(_) => self.ctx.checkpoint().await?,
                Err(_) => return Ok(false),
            }
        }
    }

    /// Whether an existing `shown` may be replaced: -o, -n, or the answer on stdin.
    async fn may_replace(&mut self, shown: &str) -> Result<bool, Interrupt> {
        if self.o.overwrite {
            return Ok(true);
        }
        if self.o.never {
            return Ok(false);
        }
        if let Some(all) = self.answer_all {
            return Ok(all);
        }
        let question = format!("replace {shown}? [y]es, [n]o, [A]ll, [N]one, [r]ename: ");
        self.ctx.err(&question).await;
        let line = self
            .ctx
            .stdin
            .read_line(4096)
            .await
            .ok()
            .flatten()
            .map(|l| String::from_utf8_lossy(&l).into_owned());
        match line.as_deref().map(|l| l.trim_end_matches('\n')) {
            Some(l) if l.starts_with('y') => Ok(true),
            Some(l) if l.starts_with('A') => {
                self.answer_all = Some(true);
                Ok(true)
            }
            Some(l) if l.starts_with('N') => {
                self.answer_all = Some(false);
                Ok(false)
            }
            Some(_) => Ok(false),
            None => {
                self.ctx
                    .err(" NULL\n(EOF or read error, treating as \"[N]one\" ...)\n")
                    .await;
                self.answer_all = Some(false);
                self.status = self.status.max(1);
                Ok(false)
            }
        }
    }

    async fn extract(
        &mut self,
        archive: &mut ZipArchive<Cursor<Vec<u8>>>,
        m: &Member,
    ) -> Result<(), Interrupt> {
        let ctx = self.ctx;
        let mut rel = safe_name(&m.name);
        if self.o.junk {
            if m.dir {
                return Ok(());
            }
            rel = rel.rsplit('/').next().unwrap_or(&rel).to_string();
        }
        if rel.is_empty() {
            return Ok(());
        }
        let shown = match &self.o.dir {
            Some(d) => format!("{}/{rel}", d.trim_end_matches('/')),
            None => rel.clone(),
        };
        let abs = ctx.path(&shown);
        if let Some(parent) = abs.rsplit_once('/').map(|(p, _)| p)
            && !parent.is_empty()
        {
            make_dirs(ctx, parent).await;
        }
        let quiet = self.o.quiet > 0;
        if m.dir {
            if ctx.fs.stat(&abs).await.is_err() {
                if !quiet {
                    ctx.out(format!("   creating: {shown}/\n")).await?;
                }
                make_dirs(ctx, &abs).await;
            }
            return Ok(());
        }
        if ctx.fs.lstat(&abs).await.is_ok() && !self.may_replace(&shown).await? {
            return Ok(());
        }
        if !quiet {
            let verb = if m.stored {
                " extracting"
            } else {
                "  inflating"
            };
            ctx.out(format!("{verb}: {shown:<23} \n")).await?;
        }
        let mut f = match archive.by_index(m.index) {
            Ok(f) => f,
            Err(e) => {
                ctx.err(format!("error:  {}: {e}\n", m.name)).await;
                self.status = self.status.max(2);
                return Ok(());
            }
        };
        let mut h = match ctx.fs.open_write(&abs, WriteMode::Truncate).await {
            Ok(h) => h,
            Err(e) => {
                ctx.err(format!("error:  cannot create {shown}\n        {e}\n"))
                    .await;
                self.status = self.status.max(1);
                return Ok(());
            }
        };
        let mut buf = vec![0u8; CHUNK];
        let mut bad = None;
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Err(e) = h.write(&buf[..n]).await {
                        bad = Some(format!("write error: {e}"));
                        break;
                    }
                }
                Err(e) => {
                    bad = Some(e.to_string());
                    break;
                }
            }
            ctx.checkpoint().await?;
        }
        let closed = h.close().await;
        if let Some(e) = bad.or(closed.err().map(|e| e.to_string())) {
            ctx.err(format!("error:  {shown}: {e}\n")).await;
            self.status = self.status.max(2);
            return Ok(());
        }
        if let Some(mode) = m.mode {
            let _ = ctx.fs.chmod(&abs, mode & 0o7777).await;
        }
        if let Some(t) = m.when
            && let Some(date) =
                chrono::NaiveDate::from_ymd_opt(t.year().into(), t.month().into(), t.day().into())
            && let Some(at) =
                date.and_hms_opt(t.hour().into(), t.minute().into(), t.second().into())
        {
            let secs = at.and_utc().timestamp();
            if let Ok(secs) = u64::try_from(secs) {
                let _ = ctx
                    .fs
                    .set_mtime(&abs, UNIX_EPOCH + Duration::from_secs(secs))
                    .await;
            }
        }
        Ok(())
    }
}

/// `mkdir -p`: each missing directory on the way to `path`.
async fn make_dirs(ctx: &Context, path: &str) {
    let mut at = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at.push('/');
        at.push_str(part);
        if ctx.fs.stat(&at).await.is_err() {
            let _ = ctx.fs.mkdir(&at).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn lists_pipes_and_extracts() {
        let fs = MemFs::with_files(&[("/a.txt", "hello\n"), ("/d/n.txt", "one\ntwo\n")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let (st, _, _) = inv
            .run(&super::super::zip::Zip, &["-qr", "a.zip", "a.txt", "d"])
            .await;
        assert_eq!(st, 0);
        let (st, out, _) = inv.run(&Unzip, &["-p", "a.zip", "d/*"]).await;
        assert_eq!((st, out.as_str()), (0, "one\ntwo\n"));
        let (st, out, _) = inv.run(&Unzip, &["-l", "a.zip"]).await;
        assert_eq!(st, 0);
        assert!(out.starts_with("Archive:  a.zip\n  Length      Date    Time    Name\n"));
        assert!(out.ends_with("       14                     3 files\n"));
        let (st, out, _) = inv.run(&Unzip, &["a.zip", "-d", "x"]).await;
        assert_eq!(st, 0, "{out}");
        assert_eq!(fs.text("/x/d/n.txt").as_deref(), Some("one\ntwo\n"));
        let (st, _, err) = inv.run(&Unzip, &["-o", "a.zip", "nope"]).await;
        assert_eq!(
            (st, err.as_str()),
            (11, "caution: filename not matched:  nope\n")
        );
        let (st, _, err) = inv.run(&Unzip, &["missing"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                9,
                "unzip:  cannot find or open missing, missing.zip or missing.ZIP.\n"
            )
        );
        let (st, _, err) = inv.run(&Unzip, &["a.zip", "a.txt"]).await;
        assert_eq!(st, 1);
        assert!(err.ends_with("(EOF or read error, treating as \"[N]one\" ...)\n"));
        assert_eq!(safe_name("../../etc/x"), "etc/x");
    }
}

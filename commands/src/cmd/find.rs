//! `find`: search for files in a directory hierarchy, GNU findutils-style.
//!
//! The command line becomes a [`parse::Plan`] (starting points, options and an expression
//! tree); the walker visits each starting point depth-first, in the filesystem's order
//! (sorted by name in forkbox, where GNU follows readdir order), evaluating the expression
//! on each file with GNU's short-circuit rules. Owners are the session user (a fork has no
//! other); times are the modification time (the only one a fork keeps) shown in UTC;
//! `-exec` and friends run through the shell's launcher.

use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use async_trait::async_trait;

use super::util::{BufOut, MAX_DEPTH, Pacer, mode_string, quote, utc};
use super::zone::Zone;
use crate::fs::{DirEntry, FileKind, FsError, Metadata, WriteHandle, WriteMode};
use crate::{CmdResult, Command, Context, Interrupt, Status};

mod parse;
pub(crate) mod pattern;

use parse::{Env, Expr, Follow, Piece, Plan, Test};
use pattern::glob_match;

/// Bytes of file names one `-exec … {} +` batch gathers before it runs (about what GNU
/// puts on one command line under Linux's limits).
const BATCH_BYTES: usize = 128 * 1024;

/// Longest answer line `-ok` reads from stdin.
const MAX_ANSWER: usize = 4096;

const HELP: &str = "Usage: find [-H] [-L] [-P] [starting-point...] [expression]

Search for files in a directory hierarchy.

Options: -H -L -P (follow symlinks: starting points, all, none).
Global: -depth -maxdepth LEVELS -mindepth LEVELS -regextype TYPE -xdev -noleaf
Tests: -name -iname -path -ipath -wholename -regex -iregex -lname -type -xtype
  -size -mtime -mmin -newer -newerXY -perm -user -group -empty -readable -writable
  -executable -true -false
Actions: -print -print0 -printf -fprint -fprint0 -fprintf -ls -fls -delete -prune
  -quit -exec -execdir -ok -okdir
Operators: ( EXPR ) ! EXPR -not EXPR EXPR -a EXPR EXPR -o EXPR EXPR , EXPR
";

/// One file the walk reached.
struct Entry {
    /// The name as printed (`%p`): the starting point joined with the names below it.
    path: String,
    /// Its absolute path for the filesystem port.
    abs: String,
    /// The starting point it was reached from (`%H`).
    start: String,
    depth: usize,
    /// Metadata as the walk sees it (following symlinks under `-L`, or `-H` for a
    /// starting point).
    meta: Metadata,
    /// Whether the file itself is a symlink.
    is_link: bool,
}

impl Entry {
    /// The last component, as `-name` and `%f` see it.
    fn name(&self) -> &str {
        let t = self.path.trim_end_matches('/');
        if t.is_empty() {
            return if self.path.is_empty() { "" } else { "/" };
        }
        match t.rfind('/') {
            Some(i) => &t[i + 1..],
            None => t,
        }
    }

    /// The leading directories (`%h`): `.` when there are none.
    fn dir(&self) -> &str {
        let t = self.path.trim_end_matches('/');
        match t.rfind('/') {
            Some(i) => &t[..i],
            None => ".",
        }
    }
}

/// A `-exec … {} +` batch being gathered.
#[derive(Default)]
struct Batch {
    names: Vec<String>,
    bytes: usize,
    /// The directory the batch runs in (for `-execdir`).
    dir: Option<String>,
}

/// A `-fprint` file and what was written to it but not yet handed to it.
struct OutFile {
    name: String,
    handle: Option<Box<dyn WriteHandle>>,
    buf: Vec<u8>,
}

struct Walker<'a> {
    ctx: &'a Context,
    plan: &'a Plan,
    out: BufOut<'a>,
    files: Vec<OutFile>,
    batches: Vec<Batch>,
    status: Status,
    quit: bool,
    /// Set by `-prune` on the file being evaluated.
    prune: bool,
    user: String,
    now: SystemTime,
    /// `TZ`'s zone, which `-printf`'s and `-ls`'s times are shown in.
    zone: Zone,
    pacer: Pacer,
    /// Canonical paths of the directories being walked under `-L` (loop detection).
    ancestors: Vec<String>,
}

type Fut<'b, T> = Pin<Box<dyn Future<Output = Result<T, Interrupt>> + Send + 'b>>;

pub struct Find;

#[async_trait]
impl Command for Find {
    fn name(&self) -> &'static str {
        "find"
    }
    fn summary(&self) -> &'static str {
        "search for files in a directory hierarchy"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        if matches!(args.first().map(String::as_str), Some("--help")) {
            ctx.out(HELP).await?;
            return Ok(0);
        }
        let user = ctx
            .env
            .get("USER")
            .filter(|u| !u.is_empty())
            .cloned()
            .unwrap_or_else(|| "user".into());
        let now = SystemTime::now();
        // The reference files of -newer, looked up ahead so that parsing stays plain code.
        let mut refs = std::collections::HashMap::new();
        for w in args.windows(2) {
            if w[0].starts_with("-newer") || matches!(w[0].as_str(), "-anewer" | "-cnewer") {
                let r = ctx
                    .fs
                    .stat(&ctx.path(&w[1]))
                    .await
                    .map(|m| m.mtime)
                    .map_err(|e| format!("{}: {e}", quote(&w[1])));
                refs.insert(w[1].clone(), r);
            }
        }
        let lookup = |f: &str| {
            refs.get(f)
                .cloned()
                .unwrap_or_else(|| Err(format!("{}: No such file or directory", quote(f))))
        };
        let parsed = parse::parse(
            &args,
            &Env {
                user: &user,
                mtime_of: &lookup,
                zone: &Zone::from_env(&ctx.env),
            },
        );
        let plan = match parsed {
            Ok(p) => p,
            Err(e) => {
                ctx.warn("find", e).await;
                return Ok(1);
            }
        };
        if plan.help {
            ctx.out(HELP).await?;
            return Ok(0);
        }
        warn_formats(ctx, &plan.expr).await;
        let mut files = Vec::new();
        for name in &plan.outputs {
            match ctx
                .fs
                .open_write(&ctx.path(name), WriteMode::Truncate)
                .await
            {
                Ok(h) => files.push(OutFile {
                    name: name.clone(),
                    handle: Some(h),
                    buf: Vec::new(),
                }),
                Err(e) => {
                    ctx.warn("find", format!("{}: {e}", quote(name))).await;
                    return Ok(1);
                }
            }
        }
        let mut w = Walker {
            ctx,
            plan: &plan,
            out: BufOut::new(ctx),
            files,
            batches: plan.execs.iter().map(|_| Batch::default()).collect(),
            status: 0,
            quit: false,
            prune: false,
            user,
            now,
            zone: Zone::from_env(&ctx.env),
            pacer: Pacer::default(),
            ancestors: Vec::new(),
        };
        let result = w.walk_all().await;
        // What was gathered still runs and is written, even after -quit.
        if result.is_ok() {
            for i in 0..w.batches.len() {
                w.flush_batch(i).await?;
            }
        }
        w.out.flush().await?;
        for f in std::mem::take(&mut w.files) {
            w.close_file(f).await;
        }
        result?;
        Ok(w.status)
    }
}

/// GNU warns about `-printf` directives and escapes it does not know when it parses them.
async fn warn_formats(ctx: &Context, e: &Expr) {
    let mut stack = vec![e];
    let mut msgs = Vec::new();
    while let Some(e) = stack.pop() {
        match e {
            Expr::And(a, b) | Expr::Or(a, b) | Expr::Comma(a, b) => {
                stack.push(b);
                stack.push(a);
            }
            Expr::Not(a) => stack.push(a),
            Expr::Test(Test::Printf { fmt, .. }) => {
                for p in fmt {
                    if let Piece::Dir { kind, sub, .. } = p {
                        if *kind == '\\' {
                            msgs.push(format!(
                                "warning: unrecognized escape `\\{}'",
                                sub.unwrap_or(' ')
                            ));
                        } else if !known_directive(*kind) {
                            msgs.push(format!("warning: unrecognized format directive `%{kind}'"));
                        }
                    }
                }
            }
            Expr::Test(_) => {}
        }
    }
    for m in msgs {
        ctx.warn("find", m).await;
    }
}

fn known_directive(k: char) -> bool {
    "aAbcCdfghHklmMnpPstTuyY".contains(k)
}

impl<'a> Walker<'a> {
    async fn walk_all(&mut self) -> Result<(), Interrupt> {
        for start in &self.plan.starts {
            if self.quit {
                break;
            }
            if start.is_empty() {
                self.ctx.warn("find", "'': No such file or directory").await;
                self.status = 1;
                continue;
            }
            let abs = self.ctx.path(start);
            let follow = self.plan.follow != Follow::Never;
            let lmeta = match self.ctx.fs.lstat(&abs).await {
                Ok(m) => m,
                Err(e) => {
                    self.ctx
                        .warn("find", format!("{}: {e}", quote(start)))
                        .await;
                    self.status = 1;
                    continue;
                }
            };
            let meta = if follow && lmeta.is_symlink() {
                self.ctx.fs.stat(&abs).await.unwrap_or(lmeta.clone())
            } else {
                lmeta.clone()
            };
            self.ancestors.clear();
            if self.plan.follow == Follow::Always && meta.is_dir() {
                let canon = self.ctx.fs.canonicalize(&abs).await.unwrap_or(abs.clone());
                self.ancestors.push(canon);
            }
            let entry = Entry {
                path: start.clone(),
                abs,
                start: start.clone(),
                depth: 0,
                meta,
                is_link: lmeta.is_symlink(),
            };
            self.visit(entry).await?;
        }
        Ok(())
    }

    fn visit(&mut self, f: Entry) -> Fut<'_, ()> {
        Box::pin(async move {
            self.pacer.tick(self.ctx).await?;
            let plan = self.plan;
            let depth_ok = f.depth >= plan.mindepth;
            self.prune = false;
            if !plan.depth_first && depth_ok {
                self.eval(&plan.expr, &f).await?;
            }
            let pruned = self.prune && !plan.depth_first;
            if self.quit {
                return Ok(());
            }
            let descend = f.meta.is_dir() && plan.maxdepth.is_none_or(|m| f.depth < m) && !pruned;
            if descend {
                self.children(&f).await?;
            }
            if self.quit {
                return Ok(());
            }
            if plan.depth_first && depth_ok {
                self.prune = false;
                self.eval(&plan.expr, &f).await?;
            }
            Ok(())
        })
    }

    async fn children(&mut self, f: &Entry) -> Result<(), Interrupt> {
        if f.depth >= MAX_DEPTH {
            self.ctx
                .warn(
                    "find",
                    format!("{}: directory nesting too deep", quote(&f.path)),
                )
                .await;
            self.status = 1;
            return Ok(());
        }
        let listed = if self.plan.names_and_kinds_suffice() {
            // Only the kind is read of an entry listed so (see `names_and_kinds_suffice`).
            self.ctx.fs.read_dir_kinds(&f.abs).await.map(|v| {
                v.into_iter()
                    .map(|(name, kind)| DirEntry {
                        name,
                        meta: Metadata::new(kind, 0, 0, std::time::UNIX_EPOCH),
                    })
                    .collect()
            })
        } else {
            self.ctx.fs.read_dir(&f.abs).await
        };
        let entries: Vec<DirEntry> = match listed {
            Ok(e) => e,
            Err(e) => {
                self.ctx
                    .warn("find", format!("{}: {e}", quote(&f.path)))
                    .await;
                self.status = 1;
                return Ok(());
            }
        };
        for ent in entries {
            if self.quit {
                break;
            }
            let path = if f.path.ends_with('/') {
                format!("{}{}", f.path, ent.name)
            } else {
                format!("{}/{}", f.path, ent.name)
            };
            let abs = if f.abs.ends_with('/') {
                format!("{}{}", f.abs, ent.name)
            } else {
                format!("{}/{}", f.abs, ent.name)
            };
            let is_link = ent.meta.is_symlink();
            let mut meta = ent.meta;
            let mut pushed = false;
            if self.plan.follow == Follow::Always && is_link {
                if let Ok(m) = self.ctx.fs.stat(&abs).await {
                    meta = m;
                }
                if meta.is_dir() {
                    let canon = self.ctx.fs.canonicalize(&abs).await.unwrap_or(abs.clone());
                    if let Some(i) = self.ancestors.iter().position(|a| *a == canon) {
                        let looped = self.ancestor_path(f, i);
                        self.ctx
                            .warn(
                                "find",
                                format!(
                                    "File system loop detected; {} is part of the same file system loop as {}.",
                                    quote(&path),
                                    quote(&looped)
                                ),
                            )
                            .await;
                        self.status = 1;
                        continue;
                    }
                    self.ancestors.push(canon);
                    pushed = true;
                }
            } else if self.plan.follow == Follow::Always && meta.is_dir() {
                let canon = self.ctx.fs.canonicalize(&abs).await.unwrap_or(abs.clone());
                self.ancestors.push(canon);
                pushed = true;
            }
            let child = Entry {
                path,
                abs,
                start: f.start.clone(),
                depth: f.depth + 1,
                meta,
                is_link,
            };
            let r = self.visit(child).await;
            if pushed {
                self.ancestors.pop();
            }
            r?;
        }
        Ok(())
    }

    /// The printed path of the `i`-th directory being walked (an ancestor of `f`).
    fn ancestor_path(&self, f: &Entry, i: usize) -> String {
        let up = self.ancestors.len().saturating_sub(1 + i);
        let mut p = f.path.trim_end_matches('/').to_string();
        for _ in 0..up {
            match p.rfind('/') {
                Some(j) => p.truncate(j),
                None => break,
            }
        }
        p
    }

    fn eval<'b>(&'b mut self, e: &'b Expr, f: &'b Entry) -> Fut<'b, bool> {
        Box::pin(async move {
            Ok(match e {
                Expr::And(a, b) => self.eval(a, f).await? && !self.quit && self.eval(b, f).await?,
                Expr::Or(a, b) => self.eval(a, f).await? || (!self.quit && self.eval(b, f).await?),
                Expr::Comma(a, b) => {
                    self.eval(a, f).await?;
                    !self.quit && self.eval(b, f).await?
                }
                Expr::Not(a) => !self.eval(a, f).await?,
                Expr::Test(t) => self.test(t, f).await?,
            })
        })
    }

    async fn test(&mut self, t: &Test, f: &Entry) -> Result<bool, Interrupt> {
        Ok(match t {
            Test::True => true,
            Test::False => false,
            Test::Name { pat, icase } => glob_match(pat, f.name(), *icase),
            Test::Path { pat, icase } => glob_match(pat, &f.path, *icase),
            Test::Lname { pat, icase } => {
                if f.is_link {
                    match self.ctx.fs.readlink(&f.abs).await {
                        Ok(target) => glob_match(pat, &target, *icase),
                        Err(_) => false,
                    }
                } else {
                    false
                }
            }
            Test::Regex(re) => re.is_match(&f.path),
            Test::Type(kinds) => kinds.contains(&f.meta.kind),
            Test::XType(kinds) => {
                let other = if self.plan.follow == Follow::Always {
                    if f.is_link {
                        FileKind::Symlink
                    } else {
                        f.meta.kind
                    }
                } else if f.is_link {
                    match self.ctx.fs.stat(&f.abs).await {
                        Ok(m) => m.kind,
                        Err(_) => FileKind::Symlink,
                    }
                } else {
                    f.meta.kind
                };
                kinds.contains(&other)
            }
            Test::Size { cmp, n, unit } => cmp.holds(f.meta.len.div_ceil(*unit), *n),
            Test::Age { cmp, n, unit } => {
                let age = match self.now.duration_since(f.meta.mtime) {
                    Ok(d) => d.as_secs() / unit,
                    // In the future: less than any age (GNU counts it as negative).
                    Err(_) => return Ok(*cmp == parse::Cmp::Lt),
                };
                cmp.holds(age, *n)
            }
            Test::Newer(t) => f.meta.mtime > *t,
            Test::Perm { mode, how } => {
                let m = f.meta.mode & 0o7777;
                match how {
                    parse::PermHow::Exact => m == *mode,
                    parse::PermHow::All => m & mode == *mode,
                    parse::PermHow::Any => *mode == 0 || m & mode != 0,
                }
            }
            Test::Owner(yes) => *yes,
            Test::Empty => match f.meta.kind {
                FileKind::File => f.meta.len == 0,
                FileKind::Dir => match self.ctx.fs.read_dir(&f.abs).await {
                    Ok(e) => e.is_empty(),
                    Err(e) => {
                        self.ctx
                            .warn("find", format!("{}: {e}", quote(&f.path)))
                            .await;
                        self.status = 1;
                        false
                    }
                },
                _ => false,
            },
            Test::Access(bit) => f.meta.mode & bit != 0,
            Test::Print { out, zero } => {
                let mut line = f.path.clone().into_bytes();
                line.push(if *zero { 0 } else { b'\n' });
                self.emit(*out, &line).await?;
                true
            }
            Test::Printf { out, fmt } => {
                let text = self.render(fmt, f).await;
                self.emit(*out, &text).await?;
                true
            }
            Test::Ls { out } => {
                let line = self.ls_line(f).await;
                self.emit(*out, line.as_bytes()).await?;
                true
            }
            Test::Delete => self.delete(f).await,
            Test::Prune => {
                self.prune = true;
                true
            }
            Test::Quit => {
                self.quit = true;
                true
            }
            Test::Exec(i) => self.exec(*i, f).await?,
        })
    }

    async fn emit(&mut self, out: Option<usize>, data: &[u8]) -> Result<(), Interrupt> {
        // Names may hold bytes that are not UTF-8: they go out as those bytes.
        let data = &*crate::bytetext::encode_bytes(data);
        match out.and_then(|i| self.files.get_mut(i)) {
            None => self.out.write(data).await,
            Some(file) => {
                file.buf.extend_from_slice(data);
                if file.buf.len() >= super::util::OUT_BUF {
                    let buf = std::mem::take(&mut file.buf);
                    let failed = match &mut file.handle {
                        Some(h) => h.write(&buf).await.err(),
                        None => None,
                    };
                    if let Some(e) = failed {
                        file.handle = None;
                        let name = file.name.clone();
                        self.ctx
                            .warn("find", format!("{}: {e}", quote(&name)))
                            .await;
                        self.status = 1;
                    }
                }
                Ok(())
            }
        }
    }

    async fn close_file(&mut self, mut f: OutFile) {
        let Some(mut h) = f.handle.take() else {
            return;
        };
        let mut r = Ok(());
        if !f.buf.is_empty() {
            r = h.write(&f.buf).await;
        }
        let closed = h.close().await;
        if let Err(e) = r.and(closed) {
            self.ctx
                .warn("find", format!("{}: {e}", quote(&f.name)))
                .await;
            self.status = 1;
        }
    }

    async fn delete(&mut self, f: &Entry) -> bool {
        // GNU skips the starting point `.` (removing it would fail anyway).
        if f.path == "." {
            return true;
        }
        let r = if f.meta.is_dir() && !f.is_link {
            self.ctx.fs.rmdir(&f.abs).await
        } else {
            self.ctx.fs.unlink(&f.abs).await
        };
        match r {
            Ok(()) => true,
            Err(e) => {
                self.ctx
                    .warn("find", format!("cannot delete {}: {e}", quote(&f.path)))
                    .await;
                self.status = 1;
                false
            }
        }
    }

    /// The directory a `-execdir` command runs in, and the name it gets for `{}`.
    fn exec_place(&self, f: &Entry, in_dir: bool) -> (String, String) {
        if in_dir {
            let dir = crate::fs::normalize(&self.ctx.path(f.dir()));
            (dir, format!("./{}", f.name()))
        } else {
            (self.ctx.cwd.clone(), f.path.clone())
        }
    }

    async fn exec(&mut self, i: usize, f: &Entry) -> Result<bool, Interrupt> {
        let ex = &self.plan.execs[i];
        let (dir, name) = self.exec_place(f, ex.in_dir);
        if ex.batch {
            let needs_flush = {
                let b = &self.batches[i];
                (!b.names.is_empty() && ex.in_dir && b.dir.as_deref() != Some(dir.as_str()))
                    || b.bytes + name.len() > BATCH_BYTES
            };
            if needs_flush {
                self.flush_batch(i).await?;
            }
            let b = &mut self.batches[i];
            b.bytes += name.len() + 1;
            b.names.push(name);
            b.dir = Some(dir);
            return Ok(true);
        }
        let argv: Vec<String> = ex.argv.iter().map(|a| a.replace("{}", &name)).collect();
        if ex.ask {
            self.out.flush().await?;
            let cmd = argv.first().cloned().unwrap_or_default();
            self.ctx.err(format!("< {cmd} ... {name} > ? ")).await;
            let answer = self
                .ctx
                .stdin
                .read_line(MAX_ANSWER)
                .await
                .ok()
                .flatten()
                .unwrap_or_default();
            if !matches!(answer.first(), Some(b'y' | b'Y')) {
                return Ok(false);
            }
        }
        Ok(self.launch(argv, dir).await? == 0)
    }

    async fn flush_batch(&mut self, i: usize) -> Result<(), Interrupt> {
        let b = std::mem::take(&mut self.batches[i]);
        if b.names.is_empty() {
            return Ok(());
        }
        let ex = &self.plan.execs[i];
        let mut argv: Vec<String> = ex.argv[..ex.argv.len() - 1].to_vec();
        argv.extend(b.names);
        let dir = b.dir.unwrap_or_else(|| self.ctx.cwd.clone());
        if self.launch(argv, dir).await? != 0 {
            self.status = 1;
        }
        Ok(())
    }

    async fn launch(&mut self, argv: Vec<String>, dir: String) -> Result<Status, Interrupt> {
        self.out.flush().await?;
        self.ctx.checkpoint().await?;
        let name = argv.first().map_or("", String::as_str);
        let mut child = self.ctx.clone();
        child.cwd = dir;
        if let Some(e) = self.ctx.launcher.unrunnable(&child, name).await {
            let msg = format!("{}: {e}", quote(name));
            self.ctx.warn("find", msg).await;
            return Ok(crate::unrunnable_status(&e));
        }
        let st = self.ctx.launcher.launch(child, argv).await;
        if self.ctx.cancel.is_cancelled() {
            return Err(Interrupt::Cancelled);
        }
        Ok(st)
    }

    fn kind_char(kind: FileKind) -> char {
        match kind {
            FileKind::File => 'f',
            FileKind::Dir => 'd',
            FileKind::Symlink => 'l',
            FileKind::CharDevice => 'c',
        }
    }

    /// 1K blocks, as `ls -s` and `du` count them in forkbox.
    fn blocks_k(meta: &Metadata) -> u64 {
        match meta.kind {
            FileKind::File => meta.len.div_ceil(4096) * 4,
            FileKind::Dir => 4,
            FileKind::Symlink | FileKind::CharDevice => 0,
        }
    }

    /// The link count GNU shows: 2 plus subdirectories for a directory, else 1.
    async fn links(&mut self, f: &Entry) -> u64 {
        if !f.meta.is_dir() {
            return 1;
        }
        match self.ctx.fs.read_dir(&f.abs).await {
            Ok(e) => 2 + e.iter().filter(|d| d.meta.is_dir()).count() as u64,
            Err(_) => 2,
        }
    }

    async fn lmeta(&mut self, f: &Entry) -> Metadata {
        if f.is_link && f.meta.kind != FileKind::Symlink {
            self.ctx.fs.lstat(&f.abs).await.unwrap_or(f.meta.clone())
        } else {
            f.meta.clone()
        }
    }

    async fn ls_line(&mut self, f: &Entry) -> String {
        let meta = if self.plan.follow == Follow::Always {
            f.meta.clone()
        } else {
            self.lmeta(f).await
        };
        let (dt, _) = self.zone.at(meta.mtime);
        let six_months = std::time::Duration::from_secs(182 * 24 * 3600);
        let recent = match self.now.duration_since(meta.mtime) {
            Ok(age) => age < six_months,
            Err(_) => false,
        };
        let time = if recent {
            dt.format("%b %e %H:%M").to_string()
        } else {
            dt.format("%b %e  %Y").to_string()
        };
        let mut line = format!(
            "{:>9} {:>6} {} {:>3} {:<8} {:<8} {:>8} {} {}",
            0,
            Self::blocks_k(&meta),
            mode_string(&meta),
            self.links(f).await,
            self.user,
            self.user,
            meta.len,
            time,
            f.path
        );
        if meta.is_symlink()
            && let Ok(t) = self.ctx.fs.readlink(&f.abs).await
        {
            line.push_str(" -> ");
            line.push_str(&t);
        }
        line.push('\n');
        line
    }

    async fn render(&mut self, fmt: &[Piece], f: &Entry) -> Vec<u8> {
        let mut out = Vec::new();
        for p in fmt {
            let (left, width, prec, kind, sub) = match p {
                Piece::Lit(l) => {
                    out.extend_from_slice(l);
                    continue;
                }
                Piece::Stop => break,
                Piece::Dir {
                    left,
                    alt,
                    width,
                    prec,
                    kind,
                    sub,
                } => {
                    let _ = alt;
                    (*left, *width, *prec, *kind, *sub)
                }
            };
            let alt = matches!(p, Piece::Dir { alt: true, .. });
            let text: String = match kind {
                '\\' => format!("\\{}", sub.unwrap_or(' ')),
                'p' => f.path.clone(),
                'f' => f.name().to_string(),
                'h' => f.dir().to_string(),
                'P' => {
                    let rest = f.path.strip_prefix(&f.start).unwrap_or(&f.path);
                    rest.strip_prefix('/').unwrap_or(rest).to_string()
                }
                'H' => f.start.clone(),
                'd' => f.depth.to_string(),
                's' => f.meta.len.to_string(),
                'k' => Self::blocks_k(&f.meta).to_string(),
                'b' => (Self::blocks_k(&f.meta) * 2).to_string(),
                'm' => {
                    if alt {
                        format!("{:#o}", f.meta.mode & 0o7777).replace("0o", "0")
                    } else {
                        format!("{:o}", f.meta.mode & 0o7777)
                    }
                }
                'M' => mode_string(&f.meta),
                'n' => self.links(f).await.to_string(),
                'u' | 'g' => self.user.clone(),
                'y' => {
                    let m = self.lmeta(f).await;
                    Self::kind_char(m.kind).to_string()
                }
                'Y' => {
                    if f.is_link {
                        match self.ctx.fs.stat(&f.abs).await {
                            Ok(m) => Self::kind_char(m.kind).to_string(),
                            Err(FsError::Loop) => "L".into(),
                            Err(_) => "N".into(),
                        }
                    } else {
                        Self::kind_char(f.meta.kind).to_string()
                    }
                }
                'l' => {
                    if f.is_link {
                        self.ctx.fs.readlink(&f.abs).await.unwrap_or_default()
                    } else {
                        String::new()
                    }
                }
                'a' | 'c' | 't' => ctime(f.meta.mtime, &self.zone),
                'A' | 'B' | 'C' | 'T' => time_field(f.meta.mtime, sub.unwrap_or('+'), &self.zone),
                other => format!("%{other}"),
            };
            let mut text = text;
            if let Some(p) = prec {
                text = text.chars().take(p).collect();
            }
            let w = width.unwrap_or(0);
            let len = text.chars().count();
            if len < w {
                let pad = " ".repeat(w - len);
                text = if left {
                    format!("{text}{pad}")
                } else {
                    format!("{pad}{text}")
                };
            }
            out.extend_from_slice(text.as_bytes());
        }
        out
    }
}

/// `Wed Jan  1 00:00:00.0000000000 2020`: GNU's `%t`.
fn ctime(t: SystemTime, zone: &Zone) -> String {
    let (dt, _) = zone.at(t);
    format!(
        "{}{} {}",
        dt.format("%a %b %e %H:%M:%S"),
        frac(t),
        dt.format("%Y")
    )
}

/// `.NNNNNNNNN0`: the fraction of a second as GNU prints it (nanoseconds and a zero).
fn frac(t: SystemTime) -> String {
    format!(".{:09}0", utc(t).timestamp_subsec_nanos())
}

/// One field of a time (`%T` followed by `k`).
fn time_field(t: SystemTime, k: char, zone: &Zone) -> String {
    let (dt, abbrev) = zone.at(t);
    match k {
        '@' => format!("{}{}", dt.timestamp(), frac(t)),
        'S' => format!("{}{}", dt.format("%S"), frac(t)),
        'T' => format!("{}{}", dt.format("%H:%M:%S"), frac(t)),
        '+' => format!("{}{}", dt.format("%Y-%m-%d+%H:%M:%S"), frac(t)),
        'Z' => abbrev,
        k if k.is_ascii_alphabetic() => {
            let spec = format!("%{k}");
            let items: Vec<chrono::format::Item<'_>> =
                chrono::format::StrftimeItems::new(&spec).collect();
            if items
                .iter()
                .any(|i| matches!(i, chrono::format::Item::Error))
            {
                String::new()
            } else {
                dt.format_with_items(items.into_iter()).to_string()
            }
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs, TestLauncher};
    use std::sync::Arc;

    fn inv() -> (Invocation, Arc<MemFs>) {
        let fs = MemFs::with_files(&[
            ("/d/a.txt", "hello"),
            ("/d/b.log", ""),
            ("/d/sub/c.txt", "x"),
            ("/d/.hidden", "h"),
        ]);
        fs.put_dir("/d/empty");
        fs.put_symlink("a.txt", "/d/link");
        (
            Invocation {
                fs: fs.clone(),
                cwd: "/d".into(),
                launcher: TestLauncher::with(crate::cmd::builtin_stand_ins()),
                ..Invocation::default()
            },
            fs,
        )
    }

    async fn find(args: &[&str]) -> (Status, String, String) {
        inv().0.run(&Find, args).await
    }

    #[tokio::test]
    async fn walks_and_filters() {
        let (st, out, err) = find(&[]).await;
        assert_eq!((st, err.as_str()), (0, ""));
        assert_eq!(
            out,
            ".\n./.hidden\n./a.txt\n./b.log\n./empty\n./link\n./sub\n./sub/c.txt\n"
        );
        assert_eq!(find(&["-name", "*.txt"]).await.1, "./a.txt\n./sub/c.txt\n");
        assert_eq!(find(&[".", "-type", "d"]).await.1, ".\n./empty\n./sub\n");
        assert_eq!(find(&["-type", "l"]).await.1, "./link\n");
        assert_eq!(find(&["-L", ".", "-type", "l"]).await.1, "");
        assert_eq!(find(&["-empty"]).await.1, "./b.log\n./empty\n");
        assert_eq!(find(&["-maxdepth", "1", "-name", "c*"]).await.1, "");
        assert_eq!(find(&["-mindepth", "2"]).await.1, "./sub/c.txt\n");
        assert_eq!(
            find(&["-name", "sub", "-prune", "-o", "-name", "*.txt", "-print"])
                .await
                .1,
            "./a.txt\n"
        );
        assert_eq!(find(&["sub", "-depth"]).await.1, "sub/c.txt\nsub\n");
        assert_eq!(
            find(&["-size", "+0", "-type", "f", "-name", "a*"]).await.1,
            "./a.txt\n"
        );
        assert_eq!(
            find(&["-regex", r".*/[ab]\..*"]).await.1,
            "./a.txt\n./b.log\n"
        );
        assert_eq!(
            find(&["-path", "./sub*", "-printf", "%d %f %h %P|\\n"])
                .await
                .1,
            "1 sub . sub|\n2 c.txt ./sub sub/c.txt|\n"
        );
        assert_eq!(
            find(&["-name", "a.txt", "-quit", "-o", "-print"]).await.1,
            ".\n./.hidden\n"
        );
    }

    #[tokio::test]
    async fn errors_and_missing_start() {
        let (st, out, err) = find(&["nope", "sub"]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (
                1,
                "sub\nsub/c.txt\n",
                "find: 'nope': No such file or directory\n"
            )
        );
        let (st, _, err) = find(&["-bogus"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "find: unknown predicate `-bogus'\n")
        );
    }

    #[tokio::test]
    async fn exec_and_delete() {
        let (i, fs) = inv();
        let (st, out, _) = i
            .run(&Find, &["sub", "-exec", "echo", "got", "{}", ";"])
            .await;
        assert_eq!((st, out.as_str()), (0, "got sub\ngot sub/c.txt\n"));
        let (_, out, _) = i.run(&Find, &["sub", "-exec", "echo", "{}", "+"]).await;
        assert_eq!(out, "sub sub/c.txt\n");
        let (_, out, _) = i
            .run(
                &Find,
                &["sub", "-name", "c.txt", "-execdir", "echo", "{}", ";"],
            )
            .await;
        assert_eq!(out, "./c.txt\n");
        let (_, out, _) = i
            .run(&Find, &["sub", "-exec", "false", ";", "-o", "-print"])
            .await;
        assert_eq!(out, "sub\nsub/c.txt\n");
        let (st, _, _) = i.run(&Find, &["sub", "-exec", "false", "{}", "+"]).await;
        assert_eq!(st, 1);
        let (st, _, err) = i.run(&Find, &["sub", "-delete"]).await;
        assert_eq!((st, err.as_str()), (0, ""));
        assert!(!fs.exists("/d/sub"));
    }

    #[test]
    fn times() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_577_836_800);
        let utc = Zone::utc();
        assert_eq!(ctime(t, &utc), "Wed Jan  1 00:00:00.0000000000 2020");
        assert_eq!(time_field(t, '@', &utc), "1577836800.0000000000");
        assert_eq!(time_field(t, '+', &utc), "2020-01-01+00:00:00.0000000000");
        assert_eq!(time_field(t, 'Y', &utc), "2020");
        let tokyo = Zone::parse("Asia/Tokyo");
        assert_eq!(time_field(t, 'H', &tokyo), "09");
        assert_eq!(time_field(t, 'Z', &tokyo), "JST");
    }
}

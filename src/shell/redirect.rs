//! The descriptor table of a command and the redirections that change it.
//!
//! A descriptor is a shared pipe end ([`Input`] or [`Output`]). Files are never opened as
//! host files: `> f` opens a [`WriteHandle`] through the session's [`FileSystem`] and a task
//! drains a pipe into it; the command's status becomes 1 if closing the file fails.
//! `< f` opens the file itself, at one position its readers share (a device, or a
//! filesystem without open files, is streamed into a pipe by a task in ranged reads).

use std::collections::BTreeMap;
use std::sync::Arc;

use brush_parser::ast::{IoFileRedirectKind, IoFileRedirectTarget, IoRedirect};
use forkbox_commands::{FileSystem, FsError, Input, Output, TermSize, WriteMode, pipe};
use tokio::task::JoinHandle;

use super::error::ShellError;
use super::{MAX_HEREDOC, Shell, Stdio};

/// One open descriptor.
#[derive(Clone, Debug)]
pub(crate) enum Fd {
    Read(Input),
    Write(Output),
    /// A file open for reading and writing (`<>`): both ends work on one
    /// [`forkbox_commands::SharedFile`], at one position.
    ReadWrite(Input, Output),
}

impl Fd {
    /// The stream reads of this descriptor take from, if it is open for reading.
    pub(crate) fn input(&self) -> Option<&Input> {
        match self {
            Fd::Read(i) | Fd::ReadWrite(i, _) => Some(i),
            Fd::Write(_) => None,
        }
    }

    /// The regular file this descriptor was opened on, if any (see [`descriptor_file`]).
    pub(crate) fn origin(&self) -> Option<&str> {
        self.input()
            .and_then(Input::origin)
            .or_else(|| self.output().and_then(Output::origin))
    }

    /// The stream writes to this descriptor go to, if it is open for writing.
    pub(crate) fn output(&self) -> Option<&Output> {
        match self {
            Fd::Write(o) | Fd::ReadWrite(_, o) => Some(o),
            Fd::Read(_) => None,
        }
    }
}

/// The descriptors a command runs with. Cloning shares the streams; dropping the last
/// clone of a write end is what gives its reader end-of-file.
#[derive(Clone, Debug)]
pub(crate) struct Fds {
    map: BTreeMap<i32, Fd>,
    /// `Some` while fd 1 is still the session's terminal.
    pub tty: Option<TermSize>,
    /// The terminal itself, for full-screen programs; cleared with `tty`.
    pub terminal: Option<crate::shell::TerminalHandle>,
    /// Which `exec` redirection table this one derives from (0: the script's streams);
    /// a list picks up a newer table between two commands (see `Shell::exec_fds`).
    pub generation: u64,
}

impl Fds {
    pub fn from_stdio(io: &Stdio) -> Fds {
        let mut map = BTreeMap::new();
        map.insert(0, Fd::Read(io.stdin.clone()));
        map.insert(1, Fd::Write(io.stdout.clone()));
        map.insert(2, Fd::Write(io.stderr.clone()));
        Fds {
            map,
            tty: io.tty,
            terminal: io.terminal.clone(),
            generation: 0,
        }
    }

    /// The standard input; closed (`<&-`) or open only for writing, every read of it
    /// fails with `EBADF`, as a program's `read(0, …)` does.
    pub fn stdin(&self) -> Input {
        self.input(0)
            .unwrap_or_else(|| Input::failing(rustix::io::Errno::BADF.raw_os_error()))
    }

    /// The input open on descriptor `fd`, if it is open for reading.
    pub fn input(&self, fd: i32) -> Option<Input> {
        self.map.get(&fd).and_then(Fd::input).cloned()
    }

    pub fn stdout(&self) -> Output {
        self.output(1)
    }

    pub fn stderr(&self) -> Output {
        self.output(2)
    }

    /// Descriptor `fd` when it is open for writing (`BASH_XTRACEFD`'s target).
    pub(crate) fn open_output(&self, fd: i32) -> Option<Output> {
        self.map.get(&fd).and_then(Fd::output).cloned()
    }

    fn output(&self, fd: i32) -> Output {
        match self.map.get(&fd).and_then(Fd::output) {
            Some(o) => o.clone(),
            // A closed descriptor: writes fail like writes to a pipe without reader.
            None => Output::broken(),
        }
    }

    /// True when descriptor `fd` is closed (`>&-`).
    pub fn is_closed(&self, fd: i32) -> bool {
        !self.map.contains_key(&fd)
    }

    /// True when a write to descriptor `fd` fails with `EBADF`: it is closed, or open for
    /// reading only (`exec 3<file; echo x >&3`).
    pub fn is_unwritable(&self, fd: i32) -> bool {
        self.map.get(&fd).and_then(Fd::output).is_none()
    }

    pub fn with_stdin(&self, input: Input) -> Fds {
        let mut f = self.clone();
        f.map.insert(0, Fd::Read(input));
        f
    }

    pub fn with_stdout(&self, output: Output) -> Fds {
        let mut f = self.clone();
        f.map.insert(1, Fd::Write(output));
        f.tty = None;
        f.terminal = None;
        f
    }

    /// Descriptors above 2 (files a command may open as `/dev/fd/N`).
    pub fn high_fds(&self) -> BTreeMap<i32, Fd> {
        self.map.range(3..).map(|(k, v)| (*k, v.clone())).collect()
    }

    /// The highest free descriptor at or below `from` (for `<(…)` and `{var}>file`).
    pub fn free_fd_below(&self, from: i32) -> i32 {
        let mut n = from;
        while self.map.contains_key(&n) && n > 3 {
            n -= 1;
        }
        n
    }

    pub(crate) fn set_fd(&mut self, fd: i32, d: Fd) {
        self.set(fd, d);
    }

    pub(crate) fn close_fd(&mut self, fd: i32) {
        self.close(fd);
    }

    fn set(&mut self, fd: i32, d: Fd) {
        if fd == 1 {
            self.tty = None;
            self.terminal = None;
        }
        self.map.insert(fd, d);
    }

    fn close(&mut self, fd: i32) {
        if fd == 1 {
            self.tty = None;
            self.terminal = None;
        }
        self.map.remove(&fd);
    }

    fn get(&self, fd: i32) -> Option<Fd> {
        self.map.get(&fd).cloned()
    }
}

/// The regular file a descriptor's device (`/dev/stdin`, `/dev/stdout`, `/dev/stderr`,
/// `/dev/fd/N`) names when the descriptor was opened on one: on Linux opening such a
/// device opens the file itself afresh (at its start, truncating it for `>`), not a
/// duplicate of the descriptor, so `{ read l; cat /dev/stdin; } < f` prints all of `f`.
/// `None` for a pipe, a terminal or a closed descriptor, which the device duplicates.
pub(crate) fn descriptor_file(name: &str, fds: &Fds) -> Option<String> {
    fds.get(descriptor_number(name)?)?
        .origin()
        .map(str::to_string)
}

/// The descriptor a device names: `/dev/stdin` 0, `/dev/stdout` 1, `/dev/stderr` 2,
/// `/dev/fd/N` N.
fn descriptor_number(name: &str) -> Option<i32> {
    match name {
        "/dev/stdin" => Some(0),
        "/dev/stdout" => Some(1),
        "/dev/stderr" => Some(2),
        _ => name.strip_prefix("/dev/fd/")?.parse().ok(),
    }
}

/// A descriptor's device opened for writing while the descriptor writes a file through
/// a redirection: the descriptor's own stream, where that gives what Linux's fresh open
/// of the file gives — an append, or a truncation before anything was written. The
/// redirection stores its file when it ends, so a second writer opened on the file
/// would be overwritten by it (`echo msg >/dev/stderr` inside `2>log` would be lost).
/// `None`: the file is opened afresh.
fn descriptor_stream(name: &str, mode: WriteMode, fds: &Fds) -> Option<Output> {
    reopened_stream(&fds.get(descriptor_number(name)?)?, mode)
}

/// [`descriptor_stream`] of one descriptor: its stream when it writes a regular file and
/// a fresh open of that file in `mode` would write where the stream does.
pub(crate) fn reopened_stream(fd: &Fd, mode: WriteMode) -> Option<Output> {
    let out = fd.output()?;
    out.origin()?;
    let unwritten = out
        .sent_counter()
        .load(std::sync::atomic::Ordering::Relaxed)
        == 0;
    let same = match mode {
        WriteMode::Append => true,
        WriteMode::Truncate => unwritten,
        WriteMode::CreateNew | WriteMode::Update => false,
    };
    same.then(|| out.clone())
}

/// `name`, or the regular file it names when it is a descriptor's device opened on one
/// (see [`descriptor_file`]).
fn opened_name<'a>(name: &'a str, fds: &Fds) -> std::borrow::Cow<'a, str> {
    match descriptor_file(name, fds) {
        Some(file) => std::borrow::Cow::Owned(file),
        None => std::borrow::Cow::Borrowed(name),
    }
}

/// bash names a bad descriptor of `>&WORD` as WORD was written (`$fd`, `"${C[1]}"`),
/// and one that expanded to nothing after an explicit descriptor (`2>&""`) by that
/// descriptor.
fn bad_fd_named(e: ShellError, written: &str, expanded: &str, explicit: Option<i32>) -> ShellError {
    match (e, explicit) {
        (ShellError::BadFd(_), Some(n)) if expanded.is_empty() => ShellError::BadFd(n.to_string()),
        (ShellError::BadFd(_), _) if written != expanded => ShellError::BadFd(written.to_string()),
        (other, _) => other,
    }
}

/// A file being written by a redirection: awaited after the command finishes.
pub(crate) struct Closer {
    pub path: String,
    pub task: JoinHandle<Result<(), FsError>>,
    /// Tells the drain to write what is buffered and close the file even though writers
    /// remain (an `exec` redirection being replaced or the shell ending).
    pub stop: Option<tokio_util::sync::CancellationToken>,
    /// For a file `exec` holds open: how far its drain has written.
    pub sync: Option<Arc<FileSync>>,
}

/// How far the drain of a file `exec` holds open has got: the shell waits between two
/// commands until it wrote all that was sent into the descriptor's pipe.
pub(crate) struct FileSync {
    /// Bytes sent into the pipe (by every writer of the descriptor).
    sent: Arc<std::sync::atomic::AtomicU64>,
    /// Bytes the drain wrote to the file.
    written: std::sync::atomic::AtomicU64,
    /// Set when the drain ended (the file is closed; nothing more will be written).
    done: std::sync::atomic::AtomicBool,
    /// Woken after each write and at the end.
    progress: tokio::sync::Notify,
}

impl FileSync {
    /// Waits until the drain wrote everything sent so far (or ended); what writers still
    /// running (a background job) send meanwhile is not waited for.
    async fn wait(&self) {
        use std::sync::atomic::Ordering;
        let target = self.sent.load(Ordering::Acquire);
        loop {
            let notified = self.progress.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.done.load(Ordering::Acquire) || self.written.load(Ordering::Acquire) >= target {
                return;
            }
            notified.await;
        }
    }
}

/// The error of a redirection that could not open `name`.
fn file_error(name: &str, source: FsError) -> ShellError {
    ShellError::File {
        path: name.to_string(),
        source,
    }
}

/// Waits for every redirection file to be written and closed; reports failures.
/// Returns `false` if any failed (the command's status then becomes 1).
pub(crate) async fn finish(closers: Vec<Closer>, stderr: &Output, sh: &Shell) -> bool {
    let mut ok = true;
    for c in closers {
        let res = match c.task.await {
            Ok(r) => r,
            Err(_) => Err(FsError::Io),
        };
        if let Err(e) = res {
            sh.report(
                stderr,
                &ShellError::File {
                    path: c.path,
                    source: e,
                },
            )
            .await;
            ok = false;
        }
    }
    ok
}

impl Shell {
    /// Applies one redirection to the table `fds`.
    pub(crate) async fn apply_one(
        &mut self,
        r: &IoRedirect,
        fds: &mut Fds,
        closers: &mut Vec<Closer>,
    ) -> Result<(), ShellError> {
        match r {
            IoRedirect::File(fd, kind, target) => {
                // `{ …; } {name}>file`, as the parse rewrite carries it.
                let named;
                let (fd, target) = match self.named_fd(fd, kind, target, fds)? {
                    Some((n, t)) => {
                        named = t;
                        (&Some(n), &named)
                    }
                    None => (fd, target),
                };
                let default_fd = match kind {
                    IoFileRedirectKind::Read
                    | IoFileRedirectKind::DuplicateInput
                    | IoFileRedirectKind::ReadAndWrite => 0,
                    _ => 1,
                };
                let explicit = *fd;
                let fd = fd.unwrap_or(default_fd);
                match target {
                    IoFileRedirectTarget::Filename(word) => {
                        let name = self.expand_redirect_target(word, fds).await?;
                        match kind {
                            IoFileRedirectKind::Read => {
                                let input = self.open_read_seekable(&name, fds).await?;
                                fds.set(fd, Fd::Read(input));
                            }
                            IoFileRedirectKind::ReadAndWrite => {
                                let d = self.open_read_write(&name, fds, closers).await?;
                                fds.set(fd, d);
                            }
                            IoFileRedirectKind::Write | IoFileRedirectKind::Clobber => {
                                let mode = if matches!(kind, IoFileRedirectKind::Write) {
                                    self.truncating()
                                } else {
                                    WriteMode::Truncate
                                };
                                let o = match self.open_write(&name, mode, fds, closers).await {
                                    Err(ShellError::File {
                                        path,
                                        source: forkbox_commands::FsError::AlreadyExists,
                                    }) if mode == WriteMode::CreateNew => {
                                        return Err(ShellError::Builtin(format!(
                                            "{path}: cannot overwrite existing file"
                                        )));
                                    }
                                    other => other?,
                                };
                                fds.set(fd, Fd::Write(o));
                            }
                            IoFileRedirectKind::Append => {
                                let o = self
                                    .open_write(&name, WriteMode::Append, fds, closers)
                                    .await?;
                                fds.set(fd, Fd::Write(o));
                            }
                            IoFileRedirectKind::DuplicateInput
                            | IoFileRedirectKind::DuplicateOutput => {
                                self.duplicate(fd, &name, kind, fds, closers)
                                    .await
                                    .map_err(|e| bad_fd_named(e, &word.value, &name, explicit))?;
                            }
                        }
                    }
                    IoFileRedirectTarget::Fd(src) => {
                        self.duplicate(fd, &src.to_string(), kind, fds, closers)
                            .await?;
                    }
                    IoFileRedirectTarget::Duplicate(word) => {
                        let name = self.expand_redirect_target(word, fds).await?;
                        self.duplicate(fd, &name, kind, fds, closers)
                            .await
                            .map_err(|e| bad_fd_named(e, &word.value, &name, explicit))?;
                    }
                    IoFileRedirectTarget::ProcessSubstitution(pkind, cmd) => {
                        // `< <(cmd)`, `> >(cmd)`: the descriptor is the pipe itself.
                        let (d, task) = self.start_procsubst(pkind, cmd, fds)?;
                        if let Fd::Write(_) = d {
                            closers.push(Closer {
                                stop: None,
                                sync: None,
                                path: String::new(),
                                task: self.budget.spawn(async move {
                                    let _ = task.await;
                                    Ok(())
                                }),
                            });
                        }
                        fds.set(fd, d);
                    }
                }
            }
            IoRedirect::OutputAndError(word, append) => {
                let name = self.expand_redirect_target(word, fds).await?;
                let mode = if *append {
                    WriteMode::Append
                } else {
                    self.truncating()
                };
                let o = self.open_write(&name, mode, fds, closers).await?;
                fds.set(1, Fd::Write(o.clone()));
                fds.set(2, Fd::Write(o));
            }
            IoRedirect::HereDocument(fd, doc) => {
                let body = if doc.requires_expansion {
                    let joined = join_continued_lines(&doc.doc.value);
                    self.expand_heredoc(&ansi_c_literal(&joined), fds).await?
                } else {
                    doc.doc.value.clone()
                };
                if body.len() > MAX_HEREDOC {
                    return Err(ShellError::HereDocTooLarge(MAX_HEREDOC));
                }
                fds.set(
                    fd.unwrap_or(0),
                    Fd::Read(Input::from_bytes(
                        forkbox_commands::bytetext::encode(&body).into_owned(),
                    )),
                );
            }
            IoRedirect::HereString(fd, word) => {
                let mut body = self.expand_no_split(word, fds).await?;
                body.push('\n');
                if body.len() > MAX_HEREDOC {
                    return Err(ShellError::HereDocTooLarge(MAX_HEREDOC));
                }
                fds.set(
                    fd.unwrap_or(0),
                    Fd::Read(Input::from_bytes(
                        forkbox_commands::bytetext::encode(&body).into_owned(),
                    )),
                );
            }
        }
        Ok(())
    }

    /// For a `{name}>target` redirection (a target word carrying
    /// [`rewrite::NAMED_FD`](super::parse::rewrite::NAMED_FD)): the descriptor and the target
    /// as written. A new descriptor (the lowest free from 10) is stored in `name`;
    /// `{name}>&-` closes the one `name` holds.
    fn named_fd(
        &mut self,
        fd: &Option<i32>,
        kind: &IoFileRedirectKind,
        target: &IoFileRedirectTarget,
        fds: &Fds,
    ) -> Result<Option<(i32, IoFileRedirectTarget)>, ShellError> {
        let (IoFileRedirectTarget::Filename(w) | IoFileRedirectTarget::Duplicate(w)) = target
        else {
            return Ok(None);
        };
        let Some((name, rest)) = super::parse::rewrite::named_fd_target(&w.value) else {
            return Ok(None);
        };
        if fd.is_some() {
            return Ok(None);
        }
        let word = brush_parser::ast::Word {
            value: rest.to_string(),
            loc: w.loc.clone(),
        };
        let closing = matches!(
            kind,
            IoFileRedirectKind::DuplicateOutput | IoFileRedirectKind::DuplicateInput
        ) && rest == "-";
        let n = if closing {
            match self
                .get_str(name)
                .and_then(|v| v.trim().parse::<i32>().ok())
            {
                Some(n) => n,
                None => return Err(ShellError::BadFd(format!("{{{name}}}"))),
            }
        } else {
            let mut n = 10;
            while !fds.is_closed(n) {
                n += 1;
            }
            self.assign_str(name, &n.to_string(), false)?;
            n
        };
        let target = match target {
            IoFileRedirectTarget::Filename(_) => IoFileRedirectTarget::Filename(word),
            _ => IoFileRedirectTarget::Duplicate(word),
        };
        Ok(Some((n, target)))
    }

    /// `N>&M`, `N<&M`, `N>&-`, `>&file`.
    async fn duplicate(
        &mut self,
        fd: i32,
        target: &str,
        kind: &IoFileRedirectKind,
        fds: &mut Fds,
        closers: &mut Vec<Closer>,
    ) -> Result<(), ShellError> {
        if target == "-" {
            fds.close(fd);
            return Ok(());
        }
        if target.is_empty() {
            // Named by the caller ([`bad_fd_named`]).
            return Err(ShellError::BadFd(String::new()));
        }
        let (num, moving) = match target.strip_suffix('-') {
            Some(n) => (n, true),
            None => (target, false),
        };
        if !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) && num.parse::<i32>().is_err()
        {
            // A descriptor number too large for any table: bash names the redirected one,
            // except for standard input and output, where it names the number written.
            let named = if fd == 0 || fd == 1 {
                num.to_string()
            } else {
                fd.to_string()
            };
            return Err(ShellError::BadFd(named));
        }
        if let Ok(src) = num.parse::<i32>() {
            match fds.get(src) {
                Some(d) => {
                    fds.set(fd, d);
                    if moving {
                        fds.close(src);
                    }
                    Ok(())
                }
                None => Err(ShellError::BadFd(src.to_string())),
            }
        } else if matches!(kind, IoFileRedirectKind::DuplicateOutput) {
            // `>&file` is `&>file`.
            let o = self
                .open_write(target, self.truncating(), fds, closers)
                .await?;
            fds.set(1, Fd::Write(o.clone()));
            if fd == 1 {
                fds.set(2, Fd::Write(o));
            }
            Ok(())
        } else {
            Err(ShellError::AmbiguousRedirect(target.to_string()))
        }
    }

    /// A readable stream for `< name`: a device or a file streamed by a task.
    pub(crate) async fn open_read(&self, name: &str, fds: &Fds) -> Result<Input, ShellError> {
        let opened = opened_name(name, fds);
        let name = opened.as_ref();
        match name {
            "/dev/null" => return Ok(Input::empty()),
            "/dev/stdin" | "/dev/fd/0" => return Ok(fds.stdin()),
            // Other devices (`/dev/zero`, `/dev/urandom`) are files of the mount table.
            _ => {}
        }
        if let Some(n) = name.strip_prefix("/dev/fd/")
            && let Ok(n) = n.parse::<i32>()
        {
            return match fds.get(n).as_ref().and_then(Fd::input) {
                Some(i) => Ok(i.clone()),
                None => Err(ShellError::BadFd(n.to_string())),
            };
        }
        let path = forkbox_commands::fs::join(&self.cwd, name);
        let file_err = |e| ShellError::File {
            path: name.to_string(),
            source: e,
        };
        let meta = self.fs.stat(&path).await.map_err(file_err)?;
        if meta.is_dir() {
            return Ok(Input::failing(rustix::io::Errno::ISDIR.raw_os_error()));
        }
        let first = self
            .fs
            .read_at(&path, 0, forkbox_commands::fs::READ_CHUNK)
            .await
            .map_err(file_err)?;
        let (out, input) = pipe();
        let input = input.with_origin(&path);
        let fs: Arc<dyn FileSystem> = self.fs.clone();
        self.budget.spawn(async move {
            let mut off = first.len() as u64;
            if first.is_empty() || out.write_bytes(first).await.is_err() {
                return;
            }
            loop {
                match fs
                    .read_at(&path, off, forkbox_commands::fs::READ_CHUNK)
                    .await
                {
                    Ok(chunk) if !chunk.is_empty() => {
                        off += chunk.len() as u64;
                        if out.write_bytes(chunk).await.is_err() {
                            return;
                        }
                    }
                    _ => return,
                }
            }
        });
        Ok(input)
    }

    /// The descriptor `< name` opens: a device as [`Shell::open_read`] gives it, else the
    /// file itself, open for reading at one position its readers share, so `{ head -n1;
    /// cat; } < f` prints every line once and `wc < f` sees a regular file (see
    /// [`forkbox_commands::file_input`]).
    async fn open_read_seekable(&self, name: &str, fds: &Fds) -> Result<Input, ShellError> {
        let opened = opened_name(name, fds);
        let name = opened.as_ref();
        if name.starts_with("/dev/") {
            return self.open_read(name, fds).await;
        }
        let path = self.open_path(name)?;
        let opts = forkbox_commands::fs::OpenOptions::read_only();
        match self.fs.open(&path, opts).await {
            // Linux opens a directory for reading; only its reads fail.
            Ok(h) if h.kind() == forkbox_commands::FileKind::Dir => {
                Ok(Input::failing(rustix::io::Errno::ISDIR.raw_os_error()))
            }
            Ok(h) => Ok(forkbox_commands::file_input(h).with_origin(path.as_str())),
            // A filesystem without open files: the file streamed instead.
            Err(FsError::Unsupported) => self.open_read(name, fds).await,
            Err(e) => Err(file_error(name, e)),
        }
    }

    /// The path a redirection opens `name` at; an empty name names nothing, as in bash.
    fn open_path(&self, name: &str) -> Result<forkbox_commands::fs::VfsPath, ShellError> {
        if name.is_empty() {
            return Err(file_error(name, FsError::NotFound));
        }
        let path = forkbox_commands::fs::join(&self.cwd, name);
        forkbox_commands::fs::VfsPath::new(&path).map_err(|e| file_error(name, e))
    }

    /// The descriptor `<> name` opens: the file opened for reading and writing (created if
    /// missing, never truncated), both directions at one shared position; the file is
    /// closed (a [`Closer`]) once no descriptor holds it. A device is its two ends.
    async fn open_read_write(
        &self,
        name: &str,
        fds: &Fds,
        closers: &mut Vec<Closer>,
    ) -> Result<Fd, ShellError> {
        let opened = opened_name(name, fds);
        let name = opened.as_ref();
        if name.starts_with("/dev/") {
            let input = self.open_read(name, fds).await?;
            let output = self
                .open_write(name, WriteMode::Update, fds, closers)
                .await?;
            return Ok(Fd::ReadWrite(input, output));
        }
        let path = self.open_path(name)?;
        let opts = forkbox_commands::fs::OpenOptions::read_write().create(true);
        let handle = super::umask_fs::with_umask(self.fs.clone(), self.umask)
            .open(&path, opts)
            .await
            .map_err(|e| file_error(name, e))?;
        let (file, closer) = forkbox_commands::shared_file(handle);
        let stop = tokio_util::sync::CancellationToken::new();
        let stopped = stop.clone();
        closers.push(Closer {
            path: name.to_string(),
            task: self
                .budget
                .spawn(async move { closer.close(stopped.cancelled_owned()).await }),
            stop: Some(stop),
            // Writes reach the file itself, not a pipe: nothing to wait for.
            sync: None,
        });
        let origin = path.as_str();
        Ok(Fd::ReadWrite(
            file.input().with_origin(origin),
            file.output().with_origin(origin),
        ))
    }

    /// How `>`, `&>` and `>&file` open their file: under `set -C` only when it is new.
    fn truncating(&self) -> WriteMode {
        if self.opts.noclobber {
            WriteMode::CreateNew
        } else {
            WriteMode::Truncate
        }
    }

    /// A writable stream for `> name`: a device, or a pipe drained into the file by a task.
    async fn open_write(
        &self,
        name: &str,
        mode: WriteMode,
        fds: &Fds,
        closers: &mut Vec<Closer>,
    ) -> Result<Output, ShellError> {
        if let Some(out) = descriptor_stream(name, mode, fds) {
            return Ok(out);
        }
        let opened = opened_name(name, fds);
        let name = opened.as_ref();
        match name {
            "/dev/null" => return Ok(Output::null()),
            "/dev/full" => return Ok(Output::full()),
            "/dev/stdout" | "/dev/fd/1" => return Ok(fds.stdout()),
            "/dev/stderr" | "/dev/fd/2" => return Ok(fds.stderr()),
            // A script without a terminal (an exec request, a nested shell reading a
            // pipe) has no controlling terminal to open, as bash run so.
            "/dev/tty" if !self.interactive && fds.tty.is_none() => {
                return Err(ShellError::Builtin(format!(
                    "{name}: No such device or address"
                )));
            }
            "/dev/tty" => return Ok(fds.stdout()),
            _ => {}
        }
        if let Some(n) = name.strip_prefix("/dev/fd/")
            && let Ok(n) = n.parse::<i32>()
        {
            return match fds.get(n).as_ref().and_then(Fd::output) {
                Some(o) => Ok(o.clone()),
                None => Err(ShellError::BadFd(n.to_string())),
            };
        }
        if name.is_empty() {
            return Err(ShellError::File {
                path: String::new(),
                source: FsError::NotFound,
            });
        }
        let path = forkbox_commands::fs::join(&self.cwd, name);
        if self.exec_opening
            && let Some(out) = self.open_exec_file(name, &path, mode, closers).await?
        {
            return Ok(out.with_origin(&path));
        }
        let mut handle = super::umask_fs::with_umask(self.fs.clone(), self.umask)
            .open_write(&path, mode)
            .await
            .map_err(|e| match e {
                // `set -C`: bash's own wording.
                FsError::AlreadyExists if matches!(mode, WriteMode::CreateNew) => {
                    ShellError::Builtin(format!("{name}: cannot overwrite existing file"))
                }
                e => ShellError::File {
                    path: name.to_string(),
                    source: e,
                },
            })?;
        let (out, input) = pipe();
        let stop = tokio_util::sync::CancellationToken::new();
        let stopped = stop.clone();
        let task = self.budget.spawn(async move {
            let mut result = Ok(());
            loop {
                let next = tokio::select! {
                    biased;
                    c = input.read_chunk() => c,
                    _ = stopped.cancelled() => {
                        // Writers remain: take what they already wrote, then close.
                        use futures::FutureExt;
                        match input.read_chunk().now_or_never() {
                            Some(c @ Ok(Some(_))) => c,
                            _ => Ok(None),
                        }
                    }
                };
                match next {
                    Ok(Some(chunk)) => {
                        if let Err(e) = handle.write(&chunk).await {
                            result = Err(e);
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(_) => {
                        result = Err(FsError::Io);
                        break;
                    }
                }
            }
            // Dropping the read end makes further writes fail with a broken pipe.
            drop(input);
            let closed = handle.close().await;
            result.and(closed)
        });
        closers.push(Closer {
            path: name.to_string(),
            task,
            stop: Some(stop),
            sync: None,
        });
        Ok(out.with_origin(&path))
    }

    /// `exec N>file`: the file opened as an open file (whose writes path reads see at
    /// once) and drained into from the descriptor's pipe, with a [`FileSync`] so the
    /// shell can wait for the drain between commands (`exec 3>f; echo a >&3; cat f`).
    /// `None` when the filesystem has no open files.
    async fn open_exec_file(
        &self,
        name: &str,
        path: &str,
        mode: WriteMode,
        closers: &mut Vec<Closer>,
    ) -> Result<Option<Output>, ShellError> {
        use forkbox_commands::fs::{OpenOptions, VfsPath};
        use std::sync::atomic::Ordering;
        let file_err = |e| ShellError::File {
            path: name.to_string(),
            source: e,
        };
        let opts = match mode {
            WriteMode::Truncate => OpenOptions::write_only().create(true).truncate(true),
            WriteMode::Append => OpenOptions::write_only().append(true).create(true),
            WriteMode::CreateNew => OpenOptions::write_only().create(true).exclusive(true),
            WriteMode::Update => OpenOptions::write_only().create(true),
        };
        let vpath = VfsPath::new(path).map_err(file_err)?;
        let fs = super::umask_fs::with_umask(self.fs.clone(), self.umask);
        let mut handle = match fs.open(&vpath, opts).await {
            Ok(h) => h,
            Err(FsError::Unsupported) => return Ok(None),
            Err(FsError::AlreadyExists) if matches!(mode, WriteMode::CreateNew) => {
                return Err(ShellError::Builtin(format!(
                    "{name}: cannot overwrite existing file"
                )));
            }
            Err(e) => return Err(file_err(e)),
        };
        let (out, input) = pipe();
        let sync = Arc::new(FileSync {
            sent: out.sent_counter(),
            written: std::sync::atomic::AtomicU64::new(0),
            done: std::sync::atomic::AtomicBool::new(false),
            progress: tokio::sync::Notify::new(),
        });
        let stop = tokio_util::sync::CancellationToken::new();
        let stopped = stop.clone();
        let progress = sync.clone();
        let task = self.budget.spawn(async move {
            let mut result = Ok(());
            loop {
                let next = tokio::select! {
                    biased;
                    c = input.read_chunk() => c,
                    _ = stopped.cancelled() => {
                        use futures::FutureExt;
                        match input.read_chunk().now_or_never() {
                            Some(c @ Ok(Some(_))) => c,
                            _ => Ok(None),
                        }
                    }
                };
                match next {
                    Ok(Some(chunk)) => {
                        if let Err(e) = handle.write(&chunk).await {
                            result = Err(e);
                            break;
                        }
                        progress
                            .written
                            .fetch_add(chunk.len() as u64, Ordering::Release);
                        progress.progress.notify_waiters();
                    }
                    Ok(None) => break,
                    Err(_) => {
                        result = Err(FsError::Io);
                        break;
                    }
                }
            }
            drop(input);
            let closed = handle.close().await;
            progress.done.store(true, Ordering::Release);
            progress.progress.notify_waiters();
            result.and(closed)
        });
        closers.push(Closer {
            path: name.to_string(),
            task,
            stop: Some(stop),
            sync: Some(sync),
        });
        Ok(Some(out))
    }

    /// Waits until every file `exec` holds open has what was written to it so far.
    pub(crate) async fn sync_exec_files(&self) {
        let syncs: Vec<Arc<FileSync>> = {
            let held = self.exec_closers.lock().unwrap_or_else(|p| p.into_inner());
            if held.is_empty() {
                return;
            }
            held.iter().filter_map(|(_, c)| c.sync.clone()).collect()
        };
        for s in syncs {
            s.wait().await;
        }
    }
}

/// The name of a `{name}>target` redirection that opens a descriptor (not `{name}>&-`).
fn named_fd_name(r: &IoRedirect) -> Option<&str> {
    let IoRedirect::File(
        None,
        _,
        IoFileRedirectTarget::Filename(w) | IoFileRedirectTarget::Duplicate(w),
    ) = r
    else {
        return None;
    };
    let (name, rest) = super::parse::rewrite::named_fd_target(&w.value)?;
    (rest != "-").then_some(name)
}

/// The descriptors a redirection sets.
fn targets(r: &IoRedirect) -> Vec<i32> {
    match r {
        IoRedirect::File(fd, kind, _) => {
            let default_fd = match kind {
                IoFileRedirectKind::Read
                | IoFileRedirectKind::DuplicateInput
                | IoFileRedirectKind::ReadAndWrite => 0,
                _ => 1,
            };
            vec![fd.unwrap_or(default_fd)]
        }
        IoRedirect::OutputAndError(..) => vec![1, 2],
        IoRedirect::HereDocument(fd, _) | IoRedirect::HereString(fd, _) => vec![fd.unwrap_or(0)],
    }
}

impl Shell {
    /// A redirection of a command failed with `e` after others were applied (`partial`):
    /// the message goes to the standard error those set up (`2>log >/no/dir/f` writes it
    /// into `log`, as bash does), then the files opened so far are closed.
    pub(crate) async fn abandon_redirects(
        &mut self,
        e: ShellError,
        partial: Fds,
        closers: Vec<Closer>,
        fds: &Fds,
    ) -> super::exec::Exec<i32> {
        let status = self.fail(e, &partial).await;
        // A file's drain ends only when no descriptor writes into it any more.
        drop(partial);
        finish(closers, &fds.stderr(), self).await;
        status
    }

    /// Applies `redirs` to a copy of `fds` as [`Shell::begin_redirects`] does, but sets
    /// apart the files of the redirections to descriptors in `keep` (`cmd {fd}>file`,
    /// which bash leaves open after the command): the second list, for
    /// [`Shell::keep_fds`].
    pub(crate) async fn begin_redirects_keeping(
        &mut self,
        redirs: &[&IoRedirect],
        keep: &[i32],
        fds: &Fds,
    ) -> Result<(Fds, Vec<Closer>, Vec<Closer>), super::exec::Exec<i32>> {
        let (out, closers, kept, _) = self.begin_redirects_with(redirs, keep, false, fds).await?;
        Ok((out, closers, kept))
    }

    /// [`Shell::begin_redirects_keeping`] for a compound command: the `{name}>file`
    /// redirections after it (targets marked [`rewrite::NAMED_FD`]) stay open in the
    /// shell as a simple command's do; their descriptors are the last list.
    ///
    /// [`rewrite::NAMED_FD`]: super::parse::rewrite::NAMED_FD
    pub(crate) async fn begin_redirects_keeping_named(
        &mut self,
        redirs: &[&IoRedirect],
        fds: &Fds,
    ) -> Result<(Fds, Vec<Closer>, Vec<Closer>, Vec<i32>), super::exec::Exec<i32>> {
        let named = !self.shopts.on("varredir_close");
        self.begin_redirects_with(redirs, &[], named, fds).await
    }

    async fn begin_redirects_with(
        &mut self,
        redirs: &[&IoRedirect],
        keep: &[i32],
        named: bool,
        fds: &Fds,
    ) -> Result<(Fds, Vec<Closer>, Vec<Closer>, Vec<i32>), super::exec::Exec<i32>> {
        let mut out = fds.clone();
        let (mut closers, mut kept, mut kept_fds) = (Vec::new(), Vec::new(), Vec::new());
        for r in redirs {
            let before = closers.len();
            let name = named.then(|| named_fd_name(r)).flatten();
            // A file a descriptor that stays open writes to is opened as `exec` opens
            // one: what goes to it is in the file before the next command reads it.
            let keeping = targets(r).iter().any(|t| keep.contains(t)) || name.is_some();
            let saved = self.exec_opening;
            self.exec_opening = saved || keeping;
            let applied = self.apply_one(r, &mut out, &mut closers).await;
            self.exec_opening = saved;
            if let Err(e) = applied {
                closers.append(&mut kept);
                return Err(self.abandon_redirects(e, out, closers, fds).await);
            }
            if keeping {
                kept.extend(closers.drain(before..));
            }
            if let Some(n) = name.and_then(|n| self.get_str(n)?.trim().parse::<i32>().ok()) {
                kept_fds.push(n);
            }
        }
        Ok((out, closers, kept, kept_fds))
    }

    /// Leaves descriptors `keep` of a command's table `cmd_fds` open in the shell, as
    /// `exec` would have opened them; `kept` are their files, closed when `exec` closes
    /// the descriptors or the shell ends.
    pub(crate) fn keep_fds(&mut self, cmd_fds: &Fds, keep: &[i32], kept: Vec<Closer>, fds: &Fds) {
        let mut table = self.exec_fds.clone().unwrap_or_else(|| fds.clone());
        for n in keep {
            match cmd_fds.get(*n) {
                Some(d) => table.set(*n, d),
                None => table.close(*n),
            }
        }
        self.exec_gen += 1;
        table.generation = self.exec_gen;
        self.exec_fds = Some(table);
        let mut held = self.exec_closers.lock().unwrap_or_else(|p| p.into_inner());
        for c in kept {
            held.push((keep.to_vec(), c));
        }
    }

    /// `exec` with only redirections: they stay for the rest of the shell. Files it opened
    /// for writing before on the same descriptors are closed (so `exec 3>&-; cat f` sees
    /// what went to 3).
    pub(crate) async fn exec_redirections(
        &mut self,
        redirs: &[&IoRedirect],
        fds: &Fds,
    ) -> super::exec::Exec<i32> {
        self.exec_opening = true;
        let begun = self.begin_redirects(redirs, fds).await;
        self.exec_opening = false;
        let (mut f, closers) = match begun {
            Ok(x) => x,
            Err(r) => return r,
        };
        let touched: Vec<i32> = redirs.iter().flat_map(|r| targets(r)).collect();
        self.exec_gen += 1;
        f.generation = self.exec_gen;
        // A file `exec` opened stays open while a descriptor still writes into it: the
        // descriptors that did (`fds`) are followed into the new table, through copies
        // (`4>&3`) and moves (`4>&3-`); one no descriptor holds any more is closed.
        let retired: Vec<Closer> = {
            let mut held = self.exec_closers.lock().unwrap_or_else(|p| p.into_inner());
            let mut gone = Vec::new();
            for (on, c) in std::mem::take(&mut *held) {
                let now: Vec<i32> = f
                    .map
                    .iter()
                    .filter(|(_, d)| {
                        let Some(new) = d.output() else { return false };
                        on.iter().any(|n| {
                            matches!(fds.map.get(n).and_then(Fd::output), Some(old) if old.same_stream(new))
                        })
                    })
                    .map(|(n, _)| *n)
                    .collect();
                if now.is_empty() {
                    gone.push(c);
                } else {
                    held.push((now, c));
                }
            }
            for c in closers {
                held.push((touched.clone(), c));
            }
            gone
        };
        self.exec_fds = Some(f);
        let ok = self.close_exec_files(retired, fds).await;
        Ok(if ok { 0 } else { 1 })
    }

    /// Closes files `exec` opened, even though descriptors still name them.
    pub(crate) async fn close_exec_files(&self, closers: Vec<Closer>, fds: &Fds) -> bool {
        for c in &closers {
            if let Some(stop) = &c.stop {
                stop.cancel();
            }
        }
        finish(closers, &fds.stderr(), self).await
    }

    /// Every file `exec` opened, closed as the (sub)shell ends.
    pub(crate) async fn close_all_exec_files(&mut self, fds: &Fds) {
        let all: Vec<Closer> =
            std::mem::take(&mut *self.exec_closers.lock().unwrap_or_else(|p| p.into_inner()))
                .into_iter()
                .map(|(_, c)| c)
                .collect();
        if !all.is_empty() {
            self.close_exec_files(all, fds).await;
        }
    }
}

/// An unquoted here-document body with each `$'` inside a `${ … }` escaped: bash keeps
/// `$'…'` literal there (`${x-$'\t'}` gives `$'\t'`), where double quotes would expand
/// it. A command substitution inside keeps its own quoting.
fn ansi_c_literal(body: &str) -> std::borrow::Cow<'_, str> {
    if !body.contains("${") || !body.contains("$'") {
        return std::borrow::Cow::Borrowed(body);
    }
    let b = body.as_bytes();
    let mut out = String::with_capacity(body.len() + 8);
    // What each open `${` or `(` is, innermost last.
    let mut open: Vec<u8> = Vec::new();
    let mut from = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'\'' if open.last() == Some(&b'(') => {
                while i + 1 < b.len() && b[i + 1] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b'$' if b.get(i + 1) == Some(&b'{') => {
                open.push(b'{');
                i += 1;
            }
            b'$' if b.get(i + 1) == Some(&b'\'') && open.last() == Some(&b'{') => {
                out.push_str(&body[from..i]);
                out.push('\\');
                from = i;
            }
            b'(' if !open.is_empty() => open.push(b'('),
            b'}' if open.last() == Some(&b'{') => {
                open.pop();
            }
            b')' if open.last() == Some(&b'(') => {
                open.pop();
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&body[from..]);
    std::borrow::Cow::Owned(out)
}

/// An unquoted here-document body with its backslash-newline pairs taken out, as bash
/// joins continued lines there (`\\` before a newline is an escaped backslash instead).
fn join_continued_lines(body: &str) -> std::borrow::Cow<'_, str> {
    if !body.contains("\\\n") {
        return std::borrow::Cow::Borrowed(body);
    }
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                    continue;
                }
                Some('\\') => {
                    out.push(c);
                    out.push('\\');
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    struct FakeTerminal;

    struct NoKeys;

    #[async_trait::async_trait]
    impl forkbox_commands::RawKeys for NoKeys {
        async fn read(&mut self) -> Option<bytes::Bytes> {
            None
        }
    }

    impl forkbox_commands::Terminal for FakeTerminal {
        fn size(&self) -> forkbox_commands::TermSize {
            forkbox_commands::TermSize { cols: 80, rows: 24 }
        }
        fn raw(&self) -> Box<dyn forkbox_commands::RawKeys> {
            Box::new(NoKeys)
        }
    }

    #[tokio::test]
    async fn a_command_gets_the_terminal_only_while_stdout_is_the_terminal() {
        use forkbox_commands::{Input, Output, TermSize, pipe};
        let sh = crate::shell::testing::shell();
        let stdio = crate::shell::Stdio {
            stdin: Input::empty(),
            stdout: Output::null(),
            stderr: Output::null(),
            tty: Some(TermSize { cols: 80, rows: 24 }),
            terminal: Some(crate::shell::TerminalHandle(std::sync::Arc::new(
                FakeTerminal,
            ))),
        };
        let fds = super::Fds::from_stdio(&stdio);
        let ctx = sh.context(&fds, &[]);
        assert_eq!(ctx.terminal.map(|t| t.size().cols), Some(80));
        let (to_pipe, _reader) = pipe();
        assert!(
            sh.context(&fds.with_stdout(to_pipe), &[])
                .terminal
                .is_none()
        );
        let mut closed = fds.clone();
        closed.close(1);
        assert!(sh.context(&closed, &[]).terminal.is_none());
        // Redirecting stdin or stderr leaves it.
        assert!(
            sh.context(&fds.with_stdin(Input::empty()), &[])
                .terminal
                .is_some()
        );
    }

    #[tokio::test]
    async fn redirect_out_truncates() {
        let script = "echo one > /f; echo two > /f; cat /f";
        let expected = (0, "two\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn redirect_append() {
        let script = "echo one > /f; echo two >> /f; cat /f";
        let expected = (0, "one\ntwo\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn redirect_in() {
        let script = "echo data > /f; cat < /f; read x < /f; echo $x";
        let expected = (0, "data\ndata\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn redirect_stderr_to_stdout() {
        let script = "{ echo out; echo err >&2; } 2>&1 | cat > /f; cat /f";
        let expected = (0, "out\nerr\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn redirect_order_matters() {
        let script = "{ echo err >&2; } 2>&1 >/dev/null | cat; { echo e2 >&2; } >/dev/null 2>&1 | cat; echo end";
        let expected = (0, "err\nend\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn redirect_and_greater_both() {
        let script = "{ echo out; echo err >&2; } &> /f; cat /f; { echo more >&2; } &>> /f; cat /f";
        let expected = (0, "out\nerr\nout\nerr\nmore\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn redirect_read_write_creates() {
        let script = "echo x 1<> /new; cat /new";
        let expected = (0, "x\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn heredoc_expands() {
        let script = "v=1; cat <<EOF\nv=$v $(echo s)\nEOF";
        let expected = (0, "v=1 s\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn heredoc_quoted_is_literal() {
        let script = "v=1; cat <<'EOF'\nv=$v\nEOF";
        let expected = (0, "v=$v\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn heredoc_strips_tabs() {
        let script = "cat <<-EOF\n\tindented\n\tEOF";
        let expected = (0, "indented\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn herestring() {
        let script = "v='a b'; cat <<< $v; read x y <<< 'p q'; echo $y";
        let expected = (0, "a b\nq\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn bad_fd_duplication() {
        let script = "echo x >&7; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: 7: Bad file descriptor\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn close_stdout() {
        let script = "echo x >&-; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: echo: write error: Bad file descriptor\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn noclobber_allows_new_and_devnull() {
        let script = "set -C; echo a > /n; echo b > /dev/null; cat /n";
        let expected = (0, "a\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn missing_dir_target_fails() {
        let script = "echo x > /nodir/f; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: /nodir/f: No such file or directory\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn missing_input_file() {
        let script = "cat < /nope; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: /nope: No such file or directory\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn failed_redirect_skips_command() {
        let script = "echo ran > /nodir/f && echo no; echo st=$?";
        let expected = (
            0,
            "st=1\n".to_string(),
            "bash: line 1: /nodir/f: No such file or directory\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn redirect_to_directory() {
        let script = "mkdir /d; echo x > /d; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: /d: Is a directory\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn ambiguous_redirect() {
        let script = "v='a b'; echo x > $v; echo $?; echo y > $nope; echo $?";
        let expected = (
            0,
            "1\n1\n".to_string(),
            "bash: line 1: $v: ambiguous redirect\nbash: line 1: $nope: ambiguous redirect\n"
                .to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn redirect_on_compound() {
        let script = "for i in 1 2; do echo $i; done > /f; cat /f; { echo g; } > /g; cat /g";
        let expected = (0, "1\n2\ng\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn redirect_on_function_call() {
        let script = "f() { echo in f; }; f > /f; cat /f";
        let expected = (0, "in f\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn redirect_on_function_definition() {
        let script = "f() { echo body; } > /f; f; f; cat /f";
        let expected = (0, "body\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn dev_null_and_stdin_devices() {
        let script = "echo gone > /dev/null; echo x | cat /dev/stdin; echo e > /dev/stderr";
        let expected = (0, "x\n".to_string(), "e\n".to_string());
        assert_eq!(run(script).await, expected);
    }
}

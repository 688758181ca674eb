//! The interpreter's input and output: the main input through ARGV, `getline` in its
//! forms, redirections to files and commands, `close`, `fflush` and `system`.

use super::*;

/// How much gawk asks standard input for at a time (its buffer, a file's block size):
/// an awk that exits early leaves a seekable standard input just past what it read,
/// e.g. 4 KiB into a file, where the next command (`{ awk 'NR==1{exit}'; cat; } < f`)
/// starts.
const GAWK_READ: usize = 4096;

/// gawk's error for a redirection under `--sandbox`.
fn sandboxed() -> Fail {
    Fail::Fatal("redirection not allowed in sandbox mode".into())
}

impl Interp {
    /// The next record of the main input, moving through ARGV's operands.
    pub(super) fn next_main_record(&mut self) -> R<Option<Vec<u8>>> {
        loop {
            if self.main.done {
                return Ok(None);
            }
            if self.main.cur.is_none() && !self.open_next_main()? {
                self.main.done = true;
                return Ok(None);
            }
            let mode = self.rs_mode.clone();
            let rt = self.rt.clone();
            let Some(reader) = self.main.cur.as_mut() else {
                continue;
            };
            match reader.next(&rt, &mode) {
                Ok(Some(rec)) => {
                    self.set_rt(&rec.rt);
                    return Ok(Some(rec.text));
                }
                Ok(None) => {
                    self.main.cur = None;
                    let prog = self.prog.clone();
                    if !prog.endfile.is_empty()
                        && let Flow::Exit = self.exec_block(&prog.endfile)?
                    {
                        self.main.done = true;
                        return Ok(None);
                    }
                }
                Err(e) => {
                    let name = self.global_str(V_FILENAME);
                    return Err(self.read_error(&lossy(&name), e));
                }
            }
        }
    }

    pub(super) fn read_error(&self, name: &str, e: ReadError) -> Fail {
        match e {
            ReadError::Fs(e) => Fail::Fatal(format!("error reading input file `{name}': {e}")),
            ReadError::Mem(m) => Fail::Stop(Interrupt::OutOfMemory(m)),
            ReadError::Regex(m) => Fail::Fatal(m),
        }
    }

    pub(super) fn argv_get(&self, i: usize) -> Option<Value> {
        match &self.globals[V_ARGV] {
            Cell::Arr(a) => match a.borrow().get(&key_num(i as f64)[..]) {
                Some(Cell::Val(v)) => Some(v.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    /// Opens the next operand; false when none is left.
    pub(super) fn open_next_main(&mut self) -> R<bool> {
        loop {
            let argc = self.cell_value(V_ARGC).to_num();
            if (self.main.argi as f64) >= argc {
                if self.main.used_file {
                    return Ok(false);
                }
                self.main.used_file = true;
                let reader = Reader::stdin_in_reads_of(&self.ctx, GAWK_READ);
                // gawk names standard input `-`.
                self.set_global_raw(V_FILENAME, Value::str(b"-".to_vec()));
                self.main.cur = Some(RecordReader::new(reader, self.ctx.budget.empty_charge()));
                self.fnr = 0.0;
                return self.begin_file();
            }
            let i = self.main.argi;
            self.main.argi += 1;
            let Some(arg) = self.argv_get(i) else {
                continue;
            };
            let name = arg.to_str_with(b"%.6g");
            if name.is_empty() {
                continue;
            }
            if let Some(eq) = name.iter().position(|&b| b == b'=')
                && self.operand_assigns
                && super::super::lex::legal_name(&name[..eq])
            {
                let (k, v) = (lossy(&name[..eq]), lossy(&name[eq + 1..]));
                self.assign_cmdline(&k, &v)?;
                continue;
            }
            self.main.used_file = true;
            // The previous file is done: messages about this one name no record.
            self.fnr = 0.0;
            let fname = lossy(&name);
            if let Ok(meta) = self.rt.block_on(self.ctx.fs.stat(&self.ctx.path(&fname)))
                && meta.is_dir()
            {
                match self.beginfile_unreadable(&name, "Is a directory")? {
                    Flow::NextFile => continue,
                    Flow::Exit => return Ok(false),
                    _ => {}
                }
                self.warn(&format!(
                    "command line argument `{fname}' is a directory: skipped"
                ));
                continue;
            }
            let reader = match self.rt.block_on(Reader::open(&self.ctx, &fname)) {
                Ok(r) => r,
                Err(e) => {
                    match self.beginfile_unreadable(&name, &e.to_string())? {
                        Flow::NextFile => continue,
                        Flow::Exit => return Ok(false),
                        _ => {}
                    }
                    return Err(Fail::Fatal(format!(
                        "cannot open file `{fname}' for reading: {e}"
                    )));
                }
            };
            self.set_global_raw(V_ERRNO, Value::str(Vec::new()));
            self.set_global_raw(V_FILENAME, Value::str(name.to_vec()));
            if let Some(slot) = self.argind {
                self.set_global_raw(slot, Value::Num(i as f64));
            }
            self.main.cur = Some(RecordReader::new(reader, self.ctx.budget.empty_charge()));
            self.fnr = 0.0;
            return self.begin_file();
        }
    }

    /// BEGINFILE for an operand that cannot be read: it sees why in ERRNO and may skip the
    /// file with `nextfile` (`Flow::NextFile`) or `exit` (`Flow::Exit`, input done);
    /// otherwise (or without BEGINFILE) the caller reports the file.
    fn beginfile_unreadable(&mut self, name: &[u8], why: &str) -> R<Flow> {
        let prog = self.prog.clone();
        if prog.beginfile.is_empty() {
            return Ok(Flow::Normal);
        }
        self.set_global_raw(V_FILENAME, Value::str(name.to_vec()));
        self.set_errno(why);
        let flow = self.exec_block(&prog.beginfile)?;
        match flow {
            Flow::NextFile => self.set_global_raw(V_ERRNO, Value::str(Vec::new())),
            Flow::Exit => self.main.done = true,
            _ => {}
        }
        Ok(flow)
    }

    pub(super) fn begin_file(&mut self) -> R<bool> {
        let prog = self.prog.clone();
        if !prog.beginfile.is_empty() {
            match self.exec_block(&prog.beginfile)? {
                Flow::Exit => {
                    self.main.done = true;
                    self.main.cur = None;
                    return Ok(false);
                }
                // The file was opened, so its ENDFILE still runs (gawk does this too).
                Flow::NextFile => {
                    self.main.cur = None;
                    if !prog.endfile.is_empty()
                        && let Flow::Exit = self.exec_block(&prog.endfile)?
                    {
                        self.main.done = true;
                        return Ok(false);
                    }
                }
                _ => {}
            }
        }
        Ok(true)
    }

    // ---- output ----

    pub(super) fn maybe_flush(&mut self) -> R<()> {
        if self.out.len() >= OUT_BUF || self.ctx.tty.is_some() {
            self.flush_stdout()?;
        }
        Ok(())
    }

    pub fn flush_stdout(&mut self) -> R<()> {
        if !self.out.is_empty() {
            let data = bytes::Bytes::from(std::mem::take(&mut self.out));
            self.rt
                .block_on(self.ctx.stdout.write_bytes(data))
                .map_err(|e| Fail::Stop(Interrupt::from(e)))?;
        }
        Ok(())
    }

    pub(super) fn flush_stream(&mut self, name: &[u8]) -> R<()> {
        let rt = self.rt.clone();
        let ctx = self.ctx.clone();
        let Some(s) = self.outs.get_mut(name) else {
            return Ok(());
        };
        if s.buf.is_empty() {
            return Ok(());
        }
        let data = std::mem::take(&mut s.buf);
        match &mut s.dest {
            Dest::Stdout => rt
                .block_on(ctx.stdout.write_all(&data))
                .map_err(|e| Fail::Stop(Interrupt::from(e))),
            Dest::Stderr => rt
                .block_on(ctx.stderr.write_all(&data))
                .map_err(|e| Fail::Stop(Interrupt::from(e))),
            Dest::File(h) => rt
                .block_on(h.write(&data))
                .map_err(|e| Fail::Fatal(format!("write failure on `{}': {e}", lossy(name)))),
            Dest::Pipe { tx: Some(tx), .. } => {
                // A command that stopped reading is not awk's error.
                let _ = rt.block_on(tx.write_all(&data));
                Ok(())
            }
            Dest::Pipe { tx: None, .. } => Ok(()),
        }
    }

    pub(super) fn flush_all(&mut self) -> R<()> {
        self.flush_stdout()?;
        let names: Vec<Vec<u8>> = self.outs.keys().cloned().collect();
        for n in names {
            self.flush_stream(&n)?;
        }
        // What was written to files is there for the command about to run (`system("cat
        // f")` after `print > "f"`), as gawk's flush makes it.
        let rt = self.rt.clone();
        for s in self.outs.values_mut() {
            if let Dest::File(h) = &mut s.dest {
                let _ = rt.block_on(h.sync());
            }
        }
        Ok(())
    }

    /// The context a command runs in: awk's, with the environment `ENVIRON` holds now
    /// (gawk passes its changes on).
    fn child_ctx(&self) -> Context {
        let mut child = self.ctx.clone();
        if let Cell::Arr(env) = &self.globals[V_ENVIRON] {
            child.env = env
                .borrow()
                .entries()
                .into_iter()
                .filter_map(|e| match e.val {
                    Cell::Val(v) => Some((lossy(e.key), lossy(&v.to_str_with(&self.convfmt)))),
                    _ => None,
                })
                .collect();
        }
        child
    }

    /// The name an output redirection is kept under: its own, except that a pipe to a
    /// command named as an open output file (or a file named as an open pipe's command)
    /// is a second stream, as in gawk (`print > "cat"; print | "cat"`), kept under the
    /// name with a 0xFF byte before it (which `close` of the name leaves open).
    fn out_key(&self, kind: Redir, name: &[u8]) -> Vec<u8> {
        let clash = match self.outs.get(name) {
            Some(s) => matches!(s.dest, Dest::Pipe { .. }) != (kind == Redir::Pipe),
            None => false,
        };
        if clash && kind != Redir::Coproc {
            let mut k = Vec::with_capacity(name.len() + 1);
            k.push(0xff);
            k.extend_from_slice(name);
            k
        } else {
            name.to_vec()
        }
    }

    /// Opens (or finds) the output stream kept under `key` for a redirection to `name`.
    fn out_stream(&mut self, kind: Redir, key: &[u8], name: &[u8]) -> R<()> {
        if self.outs.contains_key(key) {
            return Ok(());
        }
        if self.outs.len() + self.ins.len() >= MAX_OPEN_STREAMS {
            return Err(Fail::Fatal(format!(
                "cannot open `{}': too many open files",
                lossy(name)
            )));
        }
        let sname = lossy(name);
        if self.sandbox {
            return Err(sandboxed());
        }
        let dest = match kind {
            Redir::Coproc => return self.coprocess(name),
            Redir::Pipe => {
                self.flush_all()?;
                let (tx, rx) = crate::pipe();
                let mut child = self.child_ctx();
                child.stdin = rx;
                let job = self.spawn_sh(child, name);
                Dest::Pipe {
                    tx: Some(tx),
                    job: Some(job),
                }
            }
            _ if name == b"/dev/stdout" || name == b"/dev/fd/1" || name == b"-" => Dest::Stdout,
            _ if name == b"/dev/stderr" || name == b"/dev/fd/2" => Dest::Stderr,
            _ => {
                let mode = if kind == Redir::Append {
                    WriteMode::Append
                } else {
                    WriteMode::Truncate
                };
                let path = self.ctx.path(&sname);
                match self.rt.block_on(self.ctx.fs.open_write(&path, mode)) {
                    Ok(h) => Dest::File(h),
                    // Under PROCINFO["NONFATAL"] the output goes nowhere and ERRNO says why.
                    Err(e) if self.nonfatal(name) => {
                        self.set_errno(&e.to_string());
                        return Ok(());
                    }
                    Err(e) => {
                        return Err(Fail::Fatal(format!("cannot redirect to `{sname}': {e}")));
                    }
                }
            }
        };
        self.outs.insert(
            key.to_vec(),
            OutStream {
                dest,
                buf: Vec::new(),
            },
        );
        Ok(())
    }

    pub(super) fn emit(&mut self, dest: Option<(Redir, Vec<u8>)>, data: &[u8]) -> R<()> {
        match dest {
            None => {
                self.out.extend_from_slice(data);
                self.maybe_flush()
            }
            Some((kind, target)) => {
                let name = self.out_key(kind, &target);
                self.out_stream(kind, &name, &target)?;
                if matches!(self.outs.get(&name).map(|s| &s.dest), Some(Dest::Stdout)) {
                    // `/dev/stdout` is standard output itself, with its buffer.
                    self.out.extend_from_slice(data);
                    return self.maybe_flush();
                }
                let mut flush = false;
                if let Some(s) = self.outs.get_mut(&name) {
                    s.buf.extend_from_slice(data);
                    flush = s.buf.len() >= OUT_BUF || matches!(s.dest, Dest::Stderr);
                }
                if flush {
                    self.flush_stream(&name)?;
                }
                Ok(())
            }
        }
    }

    /// Starts the two-way coprocess `cmd` (`print |& cmd`, `cmd |& getline`) unless it
    /// runs: its standard input is an output stream and its standard output an input
    /// stream, both named by the command, so `close(cmd, "to")` can end one side.
    pub(super) fn coprocess(&mut self, name: &[u8]) -> R<()> {
        if self.outs.contains_key(name) || self.ins.contains_key(name) {
            return Ok(());
        }
        if self.outs.len() + self.ins.len() + 1 >= MAX_OPEN_STREAMS {
            return Err(Fail::Fatal(format!(
                "cannot open `{}': too many open files",
                lossy(name)
            )));
        }
        self.flush_all()?;
        let (to_tx, to_rx) = crate::pipe();
        let (from_tx, from_rx) = crate::pipe();
        let mut child = self.child_ctx();
        child.stdin = to_rx;
        child.stdout = from_tx;
        let job = self.spawn_sh(child, name);
        let reader = self.pipe_reader(from_rx);
        self.outs.insert(
            name.to_vec(),
            OutStream {
                dest: Dest::Pipe {
                    tx: Some(to_tx),
                    job: None,
                },
                buf: Vec::new(),
            },
        );
        self.ins.insert(name.to_vec(), InStream::Cmd(reader, job));
        Ok(())
    }

    /// Runs `cmd` through the session's `sh -c` with `child`'s streams, in the background.
    fn spawn_sh(&self, child: Context, cmd: &[u8]) -> tokio::task::JoinHandle<crate::Status> {
        let launcher = self.ctx.launcher.clone();
        let cmd = lossy(cmd);
        self.ctx
            .budget
            .spawn(async move { wait_status(launcher.launch_sh(child, cmd).await) })
    }

    /// Records read from a command's output.
    fn pipe_reader(&self, rx: crate::Input) -> RecordReader {
        let mut rctx = self.ctx.clone();
        rctx.stdin = rx;
        RecordReader::new(Reader::stdin(&rctx), self.ctx.budget.empty_charge())
    }

    /// `close(cmd, "to")` or `close(cmd, "from")`: one side of a coprocess (or of any
    /// stream of that name); the other stays open.
    pub fn close_side(&mut self, name: &[u8], to: bool) -> R<f64> {
        if to {
            if !self.outs.contains_key(name) {
                return Ok(-1.0);
            }
            self.flush_stream(name)?;
            self.outs.shift_remove(name);
            return Ok(0.0);
        }
        match self.ins.remove(name) {
            None => Ok(-1.0),
            Some(InStream::File(_)) => Ok(0.0),
            Some(InStream::Cmd(r, job)) => {
                drop(r);
                if self.outs.contains_key(name) {
                    // Its input is still open: the command may still be running.
                    return Ok(0.0);
                }
                Ok(self.rt.block_on(job).map_or(-1.0, f64::from))
            }
        }
    }

    /// Closes a stream by name; the status close() returns (-1 if none was open).
    pub(super) fn close_stream(&mut self, name: &[u8]) -> R<f64> {
        let mut result = None;
        if self.outs.contains_key(name) {
            self.flush_stream(name)?;
            if let Some(s) = self.outs.shift_remove(name) {
                result = Some(match s.dest {
                    Dest::Stdout | Dest::Stderr => 0.0,
                    Dest::File(h) => match self.rt.block_on(h.close()) {
                        Ok(()) => 0.0,
                        Err(_) => -1.0,
                    },
                    Dest::Pipe { tx, job } => {
                        drop(tx);
                        match job {
                            Some(j) => match self.rt.block_on(j) {
                                Ok(st) => f64::from(st),
                                Err(_) => -1.0,
                            },
                            None => 0.0,
                        }
                    }
                });
            }
        }
        if let Some(s) = self.ins.remove(name) {
            result = Some(match s {
                InStream::File(_) => 0.0,
                InStream::Cmd(r, job) => {
                    drop(r);
                    match self.rt.block_on(job) {
                        Ok(st) => f64::from(st),
                        Err(_) => -1.0,
                    }
                }
            });
        }
        Ok(result.unwrap_or(-1.0))
    }

    /// At exit, as gawk's `close_io`: close every redirection, the most recently opened
    /// first (waiting for commands), then flush standard output. So the output of
    /// `print | "sort"` comes before plain prints still in the buffer.
    pub(super) fn finish(&mut self) -> R<()> {
        let names: Vec<Vec<u8>> = self.outs.keys().rev().cloned().collect();
        for n in names {
            if self.lint != Lint::Off {
                let pipe =
                    matches!(self.outs.get(&n), Some(s) if matches!(s.dest, Dest::Pipe { .. }));
                self.lint_unclosed(if pipe { "pipe" } else { "file" }, &n);
            }
            self.close_stream(&n)?;
        }
        let names: Vec<Vec<u8>> = self.ins.keys().cloned().collect();
        for n in names {
            if self.lint != Lint::Off {
                let pipe = matches!(self.ins.get(&n), Some(InStream::Cmd(..)));
                self.lint_unclosed(if pipe { "pipe" } else { "file" }, &n);
            }
            self.close_stream(&n)?;
        }
        self.flush_stdout()
    }

    /// `--lint`'s note at exit about a redirection the program left open.
    fn lint_unclosed(&mut self, what: &str, name: &[u8]) {
        let text = format!(
            "awk: warning: no explicit close of {what} `{}' provided\n",
            lossy(name)
        );
        let _ = self.flush_stdout();
        let _ = self.rt.block_on(self.ctx.stderr.write_str(&text));
    }

    /// Cleanup on an abnormal end: pending output is still written.
    pub fn abort_cleanup(&mut self) {
        let _ = self.finish();
    }

    // ---- getline ----

    pub(super) fn getline(&mut self, src: &GetSrc, lv: Option<&LValue>) -> R<Value> {
        match src {
            GetSrc::Main => {
                let place = self.getline_place(lv)?;
                let Some(rec) = self.next_main_record()? else {
                    return Ok(Value::Num(0.0));
                };
                self.nr += 1.0;
                self.fnr += 1.0;
                self.getline_store(place, rec)
            }
            GetSrc::Coproc(_) | GetSrc::File(_) | GetSrc::Cmd(_) if self.sandbox => {
                Err(sandboxed())
            }
            GetSrc::File(e) => {
                let name = self.eval(e)?.to_str_with(&self.convfmt).to_vec();
                if name.is_empty() {
                    return Err(null_redirect("<"));
                }
                let place = self.getline_place(lv)?;
                if !self.ins.contains_key(&name) {
                    if self.outs.contains_key(&name) {
                        self.flush_stream(&name)?;
                    }
                    let fname = lossy(&name);
                    if let Ok(meta) = self.rt.block_on(self.ctx.fs.stat(&self.ctx.path(&fname)))
                        && meta.is_dir()
                    {
                        self.set_errno("Is a directory");
                        return Ok(Value::Num(-1.0));
                    }
                    let reader = match self.rt.block_on(Reader::open(&self.ctx, &fname)) {
                        Ok(r) => r,
                        Err(e) => {
                            self.set_errno(&e.to_string());
                            return Ok(Value::Num(-1.0));
                        }
                    };
                    self.ins.insert(
                        name.clone(),
                        InStream::File(RecordReader::new(reader, self.ctx.budget.empty_charge())),
                    );
                }
                let Some(rec) = self.read_stream(&name)? else {
                    return Ok(Value::Num(0.0));
                };
                self.getline_store(place, rec)
            }
            GetSrc::Coproc(e) => {
                let name = self.eval(e)?.to_str_with(&self.convfmt).to_vec();
                let place = self.getline_place(lv)?;
                self.coprocess(&name)?;
                // What was written to it is sent before waiting for its answer.
                self.flush_stream(&name)?;
                let Some(rec) = self.read_stream(&name)? else {
                    return Ok(Value::Num(0.0));
                };
                self.getline_store(place, rec)
            }
            GetSrc::Cmd(e) => {
                let name = self.eval(e)?.to_str_with(&self.convfmt).to_vec();
                if name.is_empty() {
                    return Err(null_redirect("|"));
                }
                let place = self.getline_place(lv)?;
                if !self.ins.contains_key(&name) {
                    self.flush_all()?;
                    let (tx, rx) = crate::pipe();
                    let mut child = self.child_ctx();
                    child.stdout = tx;
                    let job = self.spawn_sh(child, &name);
                    let reader = self.pipe_reader(rx);
                    self.ins.insert(name.clone(), InStream::Cmd(reader, job));
                }
                let Some(rec) = self.read_stream(&name)? else {
                    return Ok(Value::Num(0.0));
                };
                self.getline_store(place, rec)
            }
        }
    }

    /// getline's variable, resolved before reading (`getline a[++i]` counts even at the
    /// end of input).
    fn getline_place<'a>(&mut self, lv: Option<&'a LValue>) -> R<Option<Place<'a>>> {
        let place = lv.map(|lv| self.place(lv)).transpose()?;
        // An element is referenced, so made, even when nothing is read.
        if let Some(Place::Elem(_, arr, _, (key, strnum))) = &place {
            let mut a = arr.borrow_mut();
            if !a.contains_key(key) {
                a.insert_typed(key.clone(), *strnum, Cell::Val(Value::Uninit));
            }
        }
        Ok(place)
    }

    /// Stores a record getline read: in its variable, or as $0.
    fn getline_store(&mut self, place: Option<Place<'_>>, rec: Vec<u8>) -> R<Value> {
        match place {
            Some(p) => self.store(p, Value::strnum(&rec))?,
            None => self.set_record(rec),
        }
        Ok(Value::Num(1.0))
    }

    pub(super) fn read_stream(&mut self, name: &[u8]) -> R<Option<Vec<u8>>> {
        let mode = self.rs_mode.clone();
        let rt = self.rt.clone();
        let r = match self.ins.get_mut(name) {
            Some(InStream::File(r)) | Some(InStream::Cmd(r, _)) => r.next(&rt, &mode),
            None => return Ok(None),
        };
        match r {
            Ok(Some(rec)) => {
                self.set_rt(&rec.rt);
                Ok(Some(rec.text))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(self.read_error(&lossy(name), e)),
        }
    }

    /// `system(cmd)`: output flushed first, the command run through the shell.
    pub(super) fn system(&mut self, cmd: &[u8]) -> R<f64> {
        if self.sandbox {
            return Err(Fail::Fatal(
                "'system' function not allowed in sandbox mode".into(),
            ));
        }
        self.flush_all()?;
        let mut child = self.child_ctx();
        child.stdin = self.ctx.stdin.clone();
        let launcher = self.ctx.launcher.clone();
        let st = wait_status(self.rt.block_on(launcher.launch_sh(child, lossy(cmd))));
        if self.ctx.cancel.is_cancelled() {
            return Err(Fail::Stop(Interrupt::Cancelled));
        }
        Ok(f64::from(st))
    }
}

/// The status `system()` and `close()` give for a command: its exit status, or gawk's
/// 256 + the signal that ended it.
fn wait_status(r: Result<crate::Status, i32>) -> crate::Status {
    r.unwrap_or_else(|sig| 256 + sig)
}

impl Interp {
    /// The `readfile` extension's `readfile(path)`: the whole file, or "" with ERRNO set.
    pub(crate) fn readfile(&mut self, name: &[u8]) -> R<Value> {
        let path = self.ctx.path(&lossy(name));
        let read = crate::fs::read_all(self.ctx.fs.as_ref(), &path, super::MAX_STRING as u64);
        match self.rt.block_on(read) {
            Ok(data) => Ok(Value::str(data)),
            Err(e) => {
                self.set_errno(&e.to_string());
                Ok(Value::str(Vec::new()))
            }
        }
    }
}

impl Interp {
    /// Sets ERRNO to a system error's text, and `PROCINFO["errno"]` to its number.
    pub(crate) fn set_errno(&mut self, text: &str) {
        self.set_global_raw(V_ERRNO, Value::str(text.as_bytes()));
        let code = match text {
            "Operation not permitted" => 1,
            "No such file or directory" => 2,
            "Permission denied" => 13,
            "Not a directory" => 20,
            "Is a directory" => 21,
            "Too many open files" => 24,
            _ => 5,
        };
        if let Cell::Arr(p) = &self.globals[V_PROCINFO] {
            p.borrow_mut().insert(
                Rc::from(&b"errno"[..]),
                Cell::Val(Value::Num(f64::from(code))),
            );
        }
    }
}

impl Interp {
    /// Whether output errors for `name` are not fatal: `PROCINFO["NONFATAL"]` or
    /// `PROCINFO[name, "NONFATAL"]` is true.
    fn nonfatal(&self, name: &[u8]) -> bool {
        let Cell::Arr(p) = &self.globals[V_PROCINFO] else {
            return false;
        };
        let p = p.borrow();
        let mut per_name = name.to_vec();
        per_name.extend_from_slice(&self.subsep);
        per_name.extend_from_slice(b"NONFATAL");
        [&b"NONFATAL"[..], &per_name]
            .iter()
            .any(|k| matches!(p.get(k), Some(Cell::Val(v)) if v.truthy()))
    }
}

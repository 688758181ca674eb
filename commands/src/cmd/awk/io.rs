//! awk's input and output streams: records split from big chunks of a file, stdin or a
//! command's output, and buffered writers to files, pipes and stdout.
//!
//! The interpreter runs on a blocking thread and reaches the (async) streams through
//! `Handle::block_on`, once per chunk, never per record.

use std::rc::Rc;

use super::re::Regex;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use super::super::util::Reader;
use crate::budget::{Charge, OutOfMemory};
use crate::fs::{FsError, WriteHandle};
use crate::{Output, Status};

/// How records are separated (from RS).
#[derive(Clone)]
pub enum RsMode {
    /// One byte (`\n` by default).
    Byte(u8),
    /// `RS = ""`: blank lines separate records.
    Para,
    /// A regular expression (RS longer than one character).
    Regex(Rc<Regex>),
}

/// One record and the text that ended it (RT).
pub struct Record {
    pub text: Vec<u8>,
    pub rt: Vec<u8>,
}

/// Splits records from a stream read in chunks.
pub struct RecordReader {
    src: Reader,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    /// Covers `buf`'s capacity.
    charge: Charge,
}

/// Why reading failed.
pub enum ReadError {
    Fs(FsError),
    Mem(OutOfMemory),
    /// An `RS` regex search gave up.
    Regex(String),
}

impl RecordReader {
    pub fn new(src: Reader, charge: Charge) -> RecordReader {
        RecordReader {
            src,
            buf: Vec::new(),
            pos: 0,
            eof: false,
            charge,
        }
    }

    /// Reads one more chunk into the buffer; false at end of input.
    fn fill(&mut self, rt: &Handle) -> Result<bool, ReadError> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        match rt.block_on(self.src.chunk()) {
            Ok(Some(chunk)) => {
                let need = self.buf.len() + chunk.len();
                if need > self.buf.capacity() {
                    let cap = need.max(self.buf.capacity() * 2);
                    self.charge.resize(cap).map_err(ReadError::Mem)?;
                    self.buf.reserve_exact(cap - self.buf.len());
                }
                self.buf.extend_from_slice(&chunk);
                Ok(true)
            }
            Ok(None) => {
                self.eof = true;
                Ok(false)
            }
            Err(e) => Err(ReadError::Fs(e)),
        }
    }

    pub fn next(&mut self, rt: &Handle, mode: &RsMode) -> Result<Option<Record>, ReadError> {
        match mode {
            RsMode::Byte(b) => self.next_byte(rt, *b),
            RsMode::Para => self.next_para(rt),
            RsMode::Regex(re) => self.next_regex(rt, re),
        }
    }

    fn take(&mut self, end: usize, next: usize) -> Record {
        let text = self.buf[self.pos..end].to_vec();
        let rt = self.buf[end..next].to_vec();
        self.pos = next;
        Record { text, rt }
    }

    fn next_byte(&mut self, rt: &Handle, b: u8) -> Result<Option<Record>, ReadError> {
        let mut scanned = self.pos;
        loop {
            if let Some(i) = memchr::memchr(b, &self.buf[scanned..]) {
                let end = scanned + i;
                return Ok(Some(self.take(end, end + 1)));
            }
            scanned = self.buf.len();
            let before = self.pos;
            if !self.fill(rt)? {
                if self.pos < self.buf.len() {
                    let end = self.buf.len();
                    return Ok(Some(self.take(end, end)));
                }
                return Ok(None);
            }
            // fill may have moved the data to the front.
            scanned -= before - self.pos;
        }
    }

    fn next_para(&mut self, rt: &Handle) -> Result<Option<Record>, ReadError> {
        // Leading newlines never start a record.
        loop {
            while self.pos < self.buf.len() && self.buf[self.pos] == b'\n' {
                self.pos += 1;
            }
            if self.pos < self.buf.len() {
                break;
            }
            if !self.fill(rt)? {
                return Ok(None);
            }
        }
        loop {
            if let Some(i) = memchr::memmem::find(&self.buf[self.pos..], b"\n\n") {
                // Offsets relative to pos: fill may move the data.
                let end = i;
                let mut next = end;
                loop {
                    while self.pos + next < self.buf.len() && self.buf[self.pos + next] == b'\n' {
                        next += 1;
                    }
                    if self.pos + next < self.buf.len() || self.eof {
                        break;
                    }
                    if !self.fill(rt)? {
                        break;
                    }
                }
                let (end, next) = (self.pos + end, self.pos + next);
                return Ok(Some(self.take(end, next)));
            }
            if !self.fill(rt)? {
                let mut end = self.buf.len();
                while end > self.pos && self.buf[end - 1] == b'\n' {
                    end -= 1;
                }
                let total = self.buf.len();
                return Ok(Some(self.take(end, total)));
            }
        }
    }

    fn next_regex(&mut self, rt: &Handle, re: &Regex) -> Result<Option<Record>, ReadError> {
        loop {
            let hay = &self.buf[self.pos..];
            let found = re.find_nonempty_at(hay, 0).map_err(ReadError::Regex)?;
            if let Some((s, e)) = found
                && (e < hay.len() || self.eof)
            {
                let (s, e) = (self.pos + s, self.pos + e);
                return Ok(Some(self.take(s, e)));
            }
            if !self.fill(rt)? {
                if self.pos < self.buf.len() {
                    let hay = &self.buf[self.pos..];
                    if let Some((ms, me)) = re.find_nonempty_at(hay, 0).map_err(ReadError::Regex)? {
                        let (s, e) = (self.pos + ms, self.pos + me);
                        return Ok(Some(self.take(s, e)));
                    }
                    let end = self.buf.len();
                    return Ok(Some(self.take(end, end)));
                }
                return Ok(None);
            }
        }
    }
}

/// Where an output stream goes.
pub enum Dest {
    Stdout,
    Stderr,
    File(Box<dyn WriteHandle>),
    Pipe {
        tx: Option<Output>,
        job: Option<JoinHandle<Status>>,
    },
}

/// An open output redirection with its pending bytes.
pub struct OutStream {
    pub dest: Dest,
    pub buf: Vec<u8>,
}

/// Bytes gathered before a stream is written through.
pub const OUT_BUF: usize = 64 * 1024;

//! The SFTP version 3 wire format (draft-ietf-secsh-filexfer-02, as OpenSSH speaks it):
//! packet types, status codes, attribute encoding, and a reader and a writer for the
//! packet body. Nothing here touches a filesystem.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use forkbox_commands::fs::{FileKind, Metadata};

pub const FXP_INIT: u8 = 1;
pub const FXP_VERSION: u8 = 2;
pub const FXP_OPEN: u8 = 3;
pub const FXP_CLOSE: u8 = 4;
pub const FXP_READ: u8 = 5;
pub const FXP_WRITE: u8 = 6;
pub const FXP_LSTAT: u8 = 7;
pub const FXP_FSTAT: u8 = 8;
pub const FXP_SETSTAT: u8 = 9;
pub const FXP_FSETSTAT: u8 = 10;
pub const FXP_OPENDIR: u8 = 11;
pub const FXP_READDIR: u8 = 12;
pub const FXP_REMOVE: u8 = 13;
pub const FXP_MKDIR: u8 = 14;
pub const FXP_RMDIR: u8 = 15;
pub const FXP_REALPATH: u8 = 16;
pub const FXP_STAT: u8 = 17;
pub const FXP_RENAME: u8 = 18;
pub const FXP_READLINK: u8 = 19;
pub const FXP_SYMLINK: u8 = 20;
pub const FXP_STATUS: u8 = 101;
pub const FXP_HANDLE: u8 = 102;
pub const FXP_DATA: u8 = 103;
pub const FXP_NAME: u8 = 104;
pub const FXP_ATTRS: u8 = 105;
pub const FXP_EXTENDED: u8 = 200;
pub const FXP_EXTENDED_REPLY: u8 = 201;

/// `SSH_FXF_*` open flags.
pub const FXF_READ: u32 = 0x01;
pub const FXF_WRITE: u32 = 0x02;
pub const FXF_APPEND: u32 = 0x04;
pub const FXF_CREAT: u32 = 0x08;
pub const FXF_TRUNC: u32 = 0x10;
pub const FXF_EXCL: u32 = 0x20;

/// `SSH_FILEXFER_ATTR_*` flags.
pub const ATTR_SIZE: u32 = 0x01;
pub const ATTR_UIDGID: u32 = 0x02;
pub const ATTR_PERMISSIONS: u32 = 0x04;
pub const ATTR_ACMODTIME: u32 = 0x08;
pub const ATTR_EXTENDED: u32 = 0x8000_0000;

/// `SSH_FX_*` status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Code {
    Ok = 0,
    Eof = 1,
    NoSuchFile = 2,
    PermissionDenied = 3,
    Failure = 4,
    BadMessage = 5,
    OpUnsupported = 8,
}

/// File-type bits of `st_mode`, which SFTP's permissions field carries.
const S_IFREG: u32 = 0o100_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFCHR: u32 = 0o020_000;

/// A request that does not parse: the packet is answered with `SSH_FX_BAD_MESSAGE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// Reads the fields of one packet body.
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    pub fn u8(&mut self) -> Result<u8, Malformed> {
        let (&b, rest) = self.buf.split_first().ok_or(Malformed)?;
        self.buf = rest;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.buf.len() < n {
            return Err(Malformed);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    pub fn u32(&mut self) -> Result<u32, Malformed> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64, Malformed> {
        let hi = u64::from(self.u32()?);
        let lo = u64::from(self.u32()?);
        Ok(hi << 32 | lo)
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8], Malformed> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    /// A length-prefixed string that must be UTF-8 (paths: the session's names are).
    pub fn string(&mut self) -> Result<&'a str, Malformed> {
        std::str::from_utf8(self.bytes()?).map_err(|_| Malformed)
    }

    /// Whatever is left unread.
    #[cfg(test)]
    pub fn rest(&self) -> &'a [u8] {
        self.buf
    }

    pub fn attrs(&mut self) -> Result<Attrs, Malformed> {
        let flags = self.u32()?;
        let mut a = Attrs::default();
        if flags & ATTR_SIZE != 0 {
            a.size = Some(self.u64()?);
        }
        if flags & ATTR_UIDGID != 0 {
            a.uid_gid = Some((self.u32()?, self.u32()?));
        }
        if flags & ATTR_PERMISSIONS != 0 {
            a.permissions = Some(self.u32()?);
        }
        if flags & ATTR_ACMODTIME != 0 {
            a.times = Some((self.u32()?, self.u32()?));
        }
        if flags & ATTR_EXTENDED != 0 {
            let n = self.u32()?;
            for _ in 0..n {
                self.bytes()?;
                self.bytes()?;
            }
        }
        Ok(a)
    }
}

/// Builds one packet: length, type, then the fields.
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// A packet of type `kind`; `id` follows it unless it is `None` (`SSH_FXP_VERSION`).
    pub fn new(kind: u8, id: Option<u32>) -> Writer {
        let mut w = Writer {
            buf: vec![0, 0, 0, 0, kind],
        };
        if let Some(id) = id {
            w.u32(id);
        }
        w
    }

    pub fn u32(&mut self, v: u32) -> &mut Writer {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Writer {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn bytes(&mut self, v: &[u8]) -> &mut Writer {
        // Every string forkbox sends is far below 4 GiB (packets are bounded).
        self.u32(u32::try_from(v.len()).unwrap_or(u32::MAX));
        self.buf.extend_from_slice(v);
        self
    }

    pub fn string(&mut self, v: &str) -> &mut Writer {
        self.bytes(v.as_bytes())
    }

    pub fn attrs(&mut self, a: &Attrs) -> &mut Writer {
        let mut flags = 0;
        if a.size.is_some() {
            flags |= ATTR_SIZE;
        }
        if a.uid_gid.is_some() {
            flags |= ATTR_UIDGID;
        }
        if a.permissions.is_some() {
            flags |= ATTR_PERMISSIONS;
        }
        if a.times.is_some() {
            flags |= ATTR_ACMODTIME;
        }
        self.u32(flags);
        if let Some(s) = a.size {
            self.u64(s);
        }
        if let Some((u, g)) = a.uid_gid {
            self.u32(u).u32(g);
        }
        if let Some(p) = a.permissions {
            self.u32(p);
        }
        if let Some((at, mt)) = a.times {
            self.u32(at).u32(mt);
        }
        self
    }

    /// The finished packet, its length field filled in.
    pub fn finish(mut self) -> Vec<u8> {
        let len = u32::try_from(self.buf.len() - 4).unwrap_or(u32::MAX);
        self.buf[..4].copy_from_slice(&len.to_be_bytes());
        self.buf
    }

    /// Bytes of the packet so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
}

/// A status reply.
pub fn status(id: u32, code: Code, message: &str) -> Vec<u8> {
    let mut w = Writer::new(FXP_STATUS, Some(id));
    w.u32(code as u32).string(message).string("en");
    w.finish()
}

/// File attributes as SFTP carries them; `None` is a field not present.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attrs {
    pub size: Option<u64>,
    pub uid_gid: Option<(u32, u32)>,
    /// `st_mode`: file-type bits and permission bits.
    pub permissions: Option<u32>,
    /// Access and modification times, seconds since the epoch.
    pub times: Option<(u32, u32)>,
}

fn secs(t: SystemTime) -> u32 {
    let s = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    u32::try_from(s).unwrap_or(u32::MAX)
}

/// The time `secs` seconds after the epoch.
pub fn time_of(secs: u32) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(u64::from(secs))
}

impl Attrs {
    pub fn of(meta: &Metadata) -> Attrs {
        Attrs {
            size: Some(meta.len),
            uid_gid: Some((meta.uid, meta.gid)),
            permissions: Some(type_bits(meta.kind) | (meta.mode & 0o7777)),
            times: Some((secs(meta.atime), secs(meta.mtime))),
        }
    }
}

fn type_bits(kind: FileKind) -> u32 {
    match kind {
        FileKind::File => S_IFREG,
        FileKind::Dir => S_IFDIR,
        FileKind::Symlink => S_IFLNK,
        FileKind::CharDevice => S_IFCHR,
    }
}

/// The `ls -l` line of an entry, as OpenSSH's server words a directory listing's
/// `longname` (the client prints it as is for `ls -l`).
pub fn long_name(name: &str, meta: &Metadata, now: SystemTime) -> String {
    let kind = match meta.kind {
        FileKind::File => '-',
        FileKind::Dir => 'd',
        FileKind::Symlink => 'l',
        FileKind::CharDevice => 'c',
    };
    let mut mode = String::with_capacity(10);
    mode.push(kind);
    let m = meta.mode;
    let bit = |mask: u32, c: char| if m & mask != 0 { c } else { '-' };
    let exec = |x: u32, special: u32, set: char, unset: char| match (m & x != 0, m & special != 0) {
        (true, true) => set,
        (false, true) => unset,
        (true, false) => 'x',
        (false, false) => '-',
    };
    mode.push(bit(0o400, 'r'));
    mode.push(bit(0o200, 'w'));
    mode.push(exec(0o100, 0o4000, 's', 'S'));
    mode.push(bit(0o040, 'r'));
    mode.push(bit(0o020, 'w'));
    mode.push(exec(0o010, 0o2000, 's', 'S'));
    mode.push(bit(0o004, 'r'));
    mode.push(bit(0o002, 'w'));
    mode.push(exec(0o001, 0o1000, 't', 'T'));
    let when = chrono::DateTime::<chrono::Utc>::from(meta.mtime);
    let recent = now
        .duration_since(meta.mtime)
        .map_or(true, |d| d < Duration::from_secs(182 * 24 * 3600));
    let date = if recent {
        when.format("%b %e %H:%M")
    } else {
        when.format("%b %e  %Y")
    };
    format!(
        "{mode} {:>3} {:<8} {:<8} {:>8} {date} {name}",
        meta.nlink, meta.uid, meta.gid, meta.len
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_round_trip() {
        let a = Attrs {
            size: Some(1 << 40),
            uid_gid: Some((1000, 1000)),
            permissions: Some(0o100_644),
            times: Some((1, 2)),
        };
        let mut w = Writer::new(FXP_ATTRS, Some(7));
        w.attrs(&a);
        let pkt = w.finish();
        assert_eq!(
            u32::from_be_bytes([pkt[0], pkt[1], pkt[2], pkt[3]]) as usize,
            pkt.len() - 4
        );
        let mut r = Reader::new(&pkt[4..]);
        assert_eq!(r.u8(), Ok(FXP_ATTRS));
        assert_eq!(r.u32(), Ok(7));
        assert_eq!(r.attrs(), Ok(a));
        assert!(r.rest().is_empty());
    }

    #[test]
    fn short_fields_are_malformed() {
        assert_eq!(Reader::new(&[0, 0, 1]).u32(), Err(Malformed));
        assert_eq!(Reader::new(&[0, 0, 0, 9, b'a']).bytes(), Err(Malformed));
        assert_eq!(Reader::new(&[0, 0, 0, 1, 0xff]).string(), Err(Malformed));
        assert_eq!(
            Reader::new(&ATTR_SIZE.to_be_bytes()).attrs(),
            Err(Malformed)
        );
    }

    #[test]
    fn long_names_read_like_ls() {
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let meta = Metadata::new(FileKind::File, 1234, 0o644, t);
        assert_eq!(
            long_name("f", &meta, t),
            "-rw-r--r--   1 1000     1000         1234 Nov 14 22:13 f"
        );
        let dir = Metadata::new(FileKind::Dir, 0, 0o1777, t);
        let later = t + Duration::from_secs(400 * 24 * 3600);
        assert_eq!(
            long_name("tmp", &dir, later),
            "drwxrwxrwt   2 1000     1000            0 Nov 14  2023 tmp"
        );
    }
}

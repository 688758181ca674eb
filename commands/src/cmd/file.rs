//! `file`: determine file types, as Debian's `file` 5.44 words them, from the first bytes
//! of each file: the binary formats agents meet (ELF, gzip, zip, tar, PNG, JPEG, GIF, PDF),
//! scripts by their `#!` line, JSON, HTML and XML, and text by charset (ASCII, UTF-8 with
//! or without BOM, ISO-8859, extended ASCII) with its line terminators, long lines and
//! escape sequences; `-i`/`--mime-type`/`--mime-encoding` give the MIME forms. Like `file`,
//! a file that cannot be read is reported on stdout and the status stays 0 (1 with `-E`).

use async_trait::async_trait;

use super::getopt::{Arg, Spec, opt, parse};
use super::util::{BufOut, utc};
use crate::fs::{FileKind, FsError};
use crate::{CmdResult, Command, Context};

/// Bytes of a file examined (as `file`'s default `bytes` parameter).
const EXAMINE: usize = 1 << 20;
/// A text line longer than this makes "with very long lines".
const MAX_LINE_LEN: usize = 300;

const USAGE: &str = "Usage: file [-bcCdEhikLlNnprsSvzZ0] [--apple] [--extension] [--mime-encoding]
            [--mime-type] [-e <testname>] [-F <separator>]  [-f <namefile>]
            [-m <magicfiles>] [-P <parameter=value>] [--exclude-quiet]
            <file> ...
       file -C [-m <magicfiles>]
       file [--help]
";

const SPECS: &[Spec] = &[
    opt('b', Some('b'), Some("brief"), Arg::No),
    opt('E', Some('E'), None, Arg::No),
    opt('h', Some('h'), Some("no-dereference"), Arg::No),
    opt('i', Some('i'), Some("mime"), Arg::No),
    opt('L', Some('L'), Some("dereference"), Arg::No),
    opt('T', None, Some("mime-type"), Arg::No),
    opt('e', None, Some("mime-encoding"), Arg::No),
    opt('F', Some('F'), Some("separator"), Arg::Required),
    opt('N', Some('N'), Some("no-pad"), Arg::No),
    opt('H', None, Some("help"), Arg::No),
    opt('v', Some('v'), Some("version"), Arg::No),
];

pub struct File;

#[derive(Clone, Copy, PartialEq)]
enum Show {
    Text,
    Mime,
    MimeType,
    MimeEncoding,
}

#[async_trait]
impl Command for File {
    fn name(&self) -> &'static str {
        "file"
    }
    fn summary(&self) -> &'static str {
        "determine file type"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let p = match parse(SPECS, &args, true) {
            Ok(p) => p,
            Err(msg) => {
                ctx.err(format!("file: {msg}\n{USAGE}")).await;
                return Ok(1);
            }
        };
        if p.has('H') {
            ctx.out(USAGE).await?;
            return Ok(0);
        }
        if p.has('v') {
            ctx.out("file-5.44\nmagic file from /usr/share/misc/magic\n")
                .await?;
            return Ok(0);
        }
        if p.operands.is_empty() {
            ctx.err(USAGE).await;
            return Ok(1);
        }
        let mut show = Show::Text;
        for (k, _) in &p.opts {
            match k {
                'i' => show = Show::Mime,
                'T' => show = Show::MimeType,
                'e' => show = Show::MimeEncoding,
                _ => {}
            }
        }
        let brief = p.has('b');
        let follow = p.opts.iter().rev().find_map(|(k, _)| match k {
            'L' => Some(true),
            'h' => Some(false),
            _ => None,
        });
        let follow = follow.unwrap_or(false);
        let sep = p.last('F').unwrap_or(":").to_string();
        let pad = !p.has('N');
        let strict = p.has('E');
        let shown = |f: &str| {
            if f == "-" {
                "/dev/stdin".to_string()
            } else {
                f.to_string()
            }
        };
        let width = p
            .operands
            .iter()
            .map(|f| shown(f).chars().count())
            .max()
            .unwrap_or(0);
        let mut out = BufOut::new(ctx);
        let mut status = 0;
        for f in &p.operands {
            let (desc, failed) = describe(ctx, f, show, follow).await?;
            if failed && strict {
                let name = shown(f);
                let desc = desc.replacen("cannot open", "cannot stat", 1);
                out.write(format!("{name}: ERROR: {desc}\n").as_bytes())
                    .await?;
                status = 1;
                continue;
            }
            let line = if brief {
                format!("{desc}\n")
            } else {
                let name = format!("{}{sep}", shown(f));
                if pad {
                    let w = width + sep.chars().count();
                    format!("{name:<w$} {desc}\n")
                } else {
                    format!("{name} {desc}\n")
                }
            };
            out.write(line.as_bytes()).await?;
            ctx.checkpoint().await?;
        }
        out.flush().await?;
        Ok(status)
    }
}

/// The description of operand `f` and whether it could not be examined.
async fn describe(
    ctx: &Context,
    f: &str,
    show: Show,
    follow: bool,
) -> Result<(String, bool), crate::Interrupt> {
    let mime = |t: &str, enc: &str| match show {
        Show::Mime => format!("{t}; charset={enc}"),
        Show::MimeType => t.to_string(),
        Show::MimeEncoding => enc.to_string(),
        Show::Text => String::new(),
    };
    let data: Vec<u8> = if f == "-" {
        let mut r = super::util::Reader::stdin(ctx);
        let mut charge = ctx.budget.empty_charge();
        match r.read_to_end(EXAMINE, &mut charge).await? {
            Ok(d) => d,
            Err(e) => return Ok((format!("cannot read `/dev/stdin' ({e})"), true)),
        }
    } else {
        let path = ctx.path(f);
        let meta = if follow {
            ctx.fs.stat(&path).await
        } else {
            ctx.fs.lstat(&path).await
        };
        let meta = match meta {
            Ok(m) => m,
            Err(e) => return Ok((format!("cannot open `{f}' ({e})"), true)),
        };
        match meta.kind {
            FileKind::Dir => {
                return Ok((
                    if show == Show::Text {
                        "directory".into()
                    } else {
                        mime("inode/directory", "binary")
                    },
                    false,
                ));
            }
            FileKind::Symlink => {
                let target = ctx.fs.readlink(&path).await.unwrap_or_default();
                let broken = ctx.fs.stat(&path).await.is_err();
                return Ok((
                    if show != Show::Text {
                        mime("inode/symlink", "binary")
                    } else if broken {
                        format!("broken symbolic link to {target}")
                    } else {
                        format!("symbolic link to {target}")
                    },
                    false,
                ));
            }
            FileKind::CharDevice => {
                return Ok((
                    if show == Show::Text {
                        "character special".into()
                    } else {
                        mime("inode/chardevice", "binary")
                    },
                    false,
                ));
            }
            FileKind::File => {}
        }
        let mut buf = Vec::new();
        let mut off = 0u64;
        while buf.len() < EXAMINE {
            match ctx.fs.read_at(&path, off, crate::fs::READ_CHUNK).await {
                Ok(c) if c.is_empty() => break,
                Ok(c) => {
                    off += c.len() as u64;
                    buf.extend_from_slice(&c);
                }
                Err(FsError::IsADirectory) => break,
                Err(e) => return Ok((format!("cannot open `{f}' ({e})"), true)),
            }
            ctx.checkpoint().await?;
        }
        buf.truncate(EXAMINE);
        buf
    };
    let (text, mtype, enc) = classify(&data);
    Ok((
        if show == Show::Text {
            text
        } else {
            mime(&mtype, &enc)
        },
        false,
    ))
}

fn le16(d: &[u8], at: usize) -> u32 {
    d.get(at..at + 2)
        .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))
        .unwrap_or(0)
}
fn be16(d: &[u8], at: usize) -> u32 {
    d.get(at..at + 2)
        .map(|b| u32::from(u16::from_be_bytes([b[0], b[1]])))
        .unwrap_or(0)
}
fn be32(d: &[u8], at: usize) -> u32 {
    d.get(at..at + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .unwrap_or(0)
}
fn le32(d: &[u8], at: usize) -> u32 {
    d.get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .unwrap_or(0)
}

/// (description, MIME type, MIME encoding) of content `d`.
fn classify(d: &[u8]) -> (String, String, String) {
    let bin = |desc: String, t: &str| (desc, t.to_string(), "binary".to_string());
    if d.is_empty() {
        return bin("empty".into(), "inode/x-empty");
    }
    if d.len() == 1 {
        return bin(
            "very short file (no magic)".into(),
            "application/octet-stream",
        );
    }
    if d.starts_with(b"\x7fELF") && d.len() >= 20 {
        return bin(elf(d), elf_mime(d));
    }
    if d.starts_with(&[0x1f, 0x8b]) && d.len() >= 10 {
        return bin(gzip(d), "application/gzip");
    }
    if d.starts_with(b"\x89PNG\r\n\x1a\n") && d.len() >= 29 && &d[12..16] == b"IHDR" {
        let (w, h) = (be32(d, 16), be32(d, 20));
        let (depth, color, interlace) = (d[24], d[25], d[28]);
        let color = match color {
            0 => format!("{depth}-bit grayscale"),
            2 => format!("{depth}-bit/color RGB"),
            3 => format!("{depth}-bit colormap"),
            4 => format!("{depth}-bit gray+alpha"),
            6 => format!("{depth}-bit/color RGBA"),
            _ => format!("{depth}-bit"),
        };
        let il = if interlace == 0 {
            "non-interlaced"
        } else {
            "interlaced"
        };
        return bin(
            format!("PNG image data, {w} x {h}, {color}, {il}"),
            "image/png",
        );
    }
    if (d.starts_with(b"GIF87a") || d.starts_with(b"GIF89a")) && d.len() >= 10 {
        let v = String::from_utf8_lossy(&d[3..6]).into_owned();
        return bin(
            format!(
                "GIF image data, version {v}, {} x {}",
                le16(d, 6),
                le16(d, 8)
            ),
            "image/gif",
        );
    }
    if d.starts_with(&[0xff, 0xd8, 0xff]) {
        return bin(jpeg(d), "image/jpeg");
    }
    if d.starts_with(b"%PDF-") {
        let v: String = d[5..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'.')
            .map(|b| *b as char)
            .collect();
        return (
            format!("PDF document, version {v}"),
            "application/pdf".into(),
            text_charset(d).unwrap_or("binary").into(),
        );
    }
    if d.starts_with(b"PK\x03\x04") && d.len() >= 30 {
        let need = le16(d, 4);
        let method = match le16(d, 8) {
            0 => "store".to_string(),
            8 => "deflate".to_string(),
            12 => "bzip2".to_string(),
            14 => "lzma".to_string(),
            n => n.to_string(),
        };
        return bin(
            format!(
                "Zip archive data, at least v{}.{} to extract, compression method={method}",
                need / 10,
                need % 10
            ),
            "application/zip",
        );
    }
    if d.len() >= 263 && &d[257..262] == b"ustar" {
        let desc = if &d[257..265] == b"ustar  \0" {
            "POSIX tar archive (GNU)"
        } else {
            "POSIX tar archive"
        };
        return bin(desc.into(), "application/x-tar");
    }
    let Some(enc) = text_charset(d) else {
        return bin("data".into(), "application/octet-stream");
    };
    let charset = match enc {
        "us-ascii" => "ASCII text".to_string(),
        "utf-8" if d.starts_with(b"\xef\xbb\xbf") => "Unicode text, UTF-8 (with BOM) text".into(),
        "utf-8" => "Unicode text, UTF-8 text".into(),
        "iso-8859-1" => "ISO-8859 text".into(),
        _ => "Non-ISO extended-ASCII text".into(),
    };
    let extras = text_extras(d);
    let body = d.strip_prefix(b"\xef\xbb\xbf").unwrap_or(d);
    if let Some((kind, mtype)) = script(body) {
        let desc = if kind == "Perl script" {
            format!("{kind} text executable{extras}")
        } else {
            format!("{kind}, {charset} executable{extras}")
        };
        return (desc, mtype.into(), enc.into());
    }
    let trimmed: &[u8] = {
        let start = body
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(body.len());
        &body[start..]
    };
    if (trimmed.starts_with(b"{") || trimmed.starts_with(b"[")) && json_ok(trimmed) {
        return (
            "JSON text data".into(),
            "application/json".into(),
            enc.into(),
        );
    }
    let lower: Vec<u8> = trimmed
        .iter()
        .take(64)
        .map(u8::to_ascii_lowercase)
        .collect();
    if lower.starts_with(b"<!doctype html") || lower.starts_with(b"<html") {
        return (
            format!("HTML document, {charset}{extras}"),
            "text/html".into(),
            enc.into(),
        );
    }
    if trimmed.starts_with(b"<?xml version=\"") {
        let v: String = trimmed[15..]
            .iter()
            .take_while(|b| **b != b'"')
            .map(|b| *b as char)
            .collect();
        return (
            format!("XML {v} document, {charset}{extras}"),
            "text/xml".into(),
            enc.into(),
        );
    }
    (
        format!("{charset}{extras}"),
        "text/plain".into(),
        enc.into(),
    )
}

/// The MIME charset of `d` when it is text: `us-ascii`, `utf-8`, `iso-8859-1`,
/// `unknown-8bit`; `None` for binary data.
fn text_charset(d: &[u8]) -> Option<&'static str> {
    let texty = |b: u8| matches!(b, 0x07..=0x0d | 0x1b | 0x20..=0x7e);
    if d.iter().all(|b| texty(*b)) {
        return Some("us-ascii");
    }
    if d.iter().any(|b| *b < 0x80 && !texty(*b)) {
        return None;
    }
    if std::str::from_utf8(d).is_ok() {
        return Some("utf-8");
    }
    if d.iter().all(|b| *b < 0x80 || *b >= 0xa0) {
        return Some("iso-8859-1");
    }
    Some("unknown-8bit")
}

/// `, with very long lines (N)`, the line terminators and escape sequences, as `file`
/// appends them to a text description.
fn text_extras(d: &[u8]) -> String {
    let (mut crlf, mut cr, mut lf) = (0usize, 0usize, 0usize);
    let (mut longest, mut cur) = (0usize, 0usize);
    let mut escapes = false;
    let mut i = 0;
    while i < d.len() {
        match d[i] {
            b'\r' if d.get(i + 1) == Some(&b'\n') => {
                crlf += 1;
                longest = longest.max(cur);
                cur = 0;
                i += 1;
            }
            b'\r' => {
                cr += 1;
                longest = longest.max(cur);
                cur = 0;
            }
            b'\n' => {
                lf += 1;
                longest = longest.max(cur);
                cur = 0;
            }
            0x1b => {
                escapes = true;
                cur += 1;
            }
            _ => cur += 1,
        }
        i += 1;
    }
    longest = longest.max(cur);
    let mut s = String::new();
    if longest > MAX_LINE_LEN {
        s.push_str(&format!(", with very long lines ({longest})"));
    }
    if crlf + cr + lf == 0 {
        s.push_str(", with no line terminators");
    } else if crlf + cr > 0 {
        let mut kinds = Vec::new();
        if crlf > 0 {
            kinds.push("CRLF");
        }
        if cr > 0 {
            kinds.push("CR");
        }
        if lf > 0 {
            kinds.push("LF");
        }
        s.push_str(&format!(", with {} line terminators", kinds.join(", ")));
    }
    if escapes {
        s.push_str(", with escape sequences");
    }
    s
}

/// The script kind and MIME type named by a `#!` line.
fn script(d: &[u8]) -> Option<(&'static str, &'static str)> {
    let rest = d.strip_prefix(b"#!")?;
    let line = rest.split(|b| *b == b'\n').next().unwrap_or(rest);
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let mut prog = words.next()?.rsplit('/').next()?.to_string();
    if prog == "env" {
        prog = words.find(|w| !w.starts_with('-'))?.to_string();
    }
    let prog = prog.trim_end_matches('\r');
    Some(match prog {
        "sh" | "dash" | "ksh" => ("POSIX shell script", "text/x-shellscript"),
        "bash" => ("Bourne-Again shell script", "text/x-shellscript"),
        "zsh" => ("Paul Falstad's zsh script", "text/x-shellscript"),
        p if p.starts_with("python") => ("Python script", "text/x-script.python"),
        p if p.starts_with("perl") => ("Perl script", "text/x-perl"),
        "node" | "nodejs" => ("Node.js script", "application/javascript"),
        "ruby" => ("Ruby script", "text/x-ruby"),
        "awk" | "gawk" => ("awk or perl script", "text/x-awk"),
        _ => return None,
    })
}

/// True when `d` is one JSON value (object or array) with only whitespace after it.
fn json_ok(d: &[u8]) -> bool {
    let mut p = Json { d, i: 0, depth: 0 };
    if !p.value() {
        return false;
    }
    p.ws();
    p.i == d.len()
}

struct Json<'a> {
    d: &'a [u8],
    i: usize,
    depth: usize,
}

impl Json<'_> {
    fn ws(&mut self) {
        while self.i < self.d.len() && matches!(self.d[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    fn eat(&mut self, b: u8) -> bool {
        self.ws();
        if self.d.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn value(&mut self) -> bool {
        self.ws();
        self.depth += 1;
        if self.depth > 256 {
            return false;
        }
        let ok = match self.d.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                if self.eat(b'}') {
                    true
                } else {
                    loop {
                        self.ws();
                        if !self.string() || !self.eat(b':') || !self.value() {
                            break false;
                        }
                        if self.eat(b'}') {
                            break true;
                        }
                        if !self.eat(b',') {
                            break false;
                        }
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                if self.eat(b']') {
                    true
                } else {
                    loop {
                        if !self.value() {
                            break false;
                        }
                        if self.eat(b']') {
                            break true;
                        }
                        if !self.eat(b',') {
                            break false;
                        }
                    }
                }
            }
            Some(b'"') => self.string(),
            Some(b't') => self.word(b"true"),
            Some(b'f') => self.word(b"false"),
            Some(b'n') => self.word(b"null"),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.i;
                while self.i < self.d.len()
                    && matches!(
                        self.d[self.i],
                        b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
                    )
                {
                    self.i += 1;
                }
                self.i > start
            }
            _ => false,
        };
        self.depth -= 1;
        ok
    }
    fn word(&mut self, w: &[u8]) -> bool {
        if self.d[self.i..].starts_with(w) {
            self.i += w.len();
            true
        } else {
            false
        }
    }
    fn string(&mut self) -> bool {
        if self.d.get(self.i) != Some(&b'"') {
            return false;
        }
        self.i += 1;
        while let Some(&b) = self.d.get(self.i) {
            self.i += 1;
            match b {
                b'"' => return true,
                b'\\' => self.i += 1,
                0..=0x1f => return false,
                _ => {}
            }
        }
        false
    }
}

fn elf_mime(d: &[u8]) -> &'static str {
    match le16(d, 16) {
        1 => "application/x-object",
        2 => "application/x-executable",
        3 => "application/x-sharedlib",
        4 => "application/x-coredump",
        _ => "application/octet-stream",
    }
}

fn elf(d: &[u8]) -> String {
    let bits = if d[4] == 2 { "64-bit" } else { "32-bit" };
    let little = d[5] != 2;
    let order = if little { "LSB" } else { "MSB" };
    let half = |at| if little { le16(d, at) } else { be16(d, at) };
    let word = |at| if little { le32(d, at) } else { be32(d, at) };
    let kind = match half(16) {
        1 => "relocatable",
        2 => "executable",
        3 => "shared object",
        4 => "core file",
        _ => "unknown type",
    };
    let machine = match half(18) {
        2 => "SPARC".to_string(),
        3 => "Intel 80386".to_string(),
        8 => "MIPS".to_string(),
        20 => "PowerPC or cisco 4500".to_string(),
        21 => "64-bit PowerPC or cisco 7500".to_string(),
        40 => "ARM".to_string(),
        62 => "x86-64".to_string(),
        183 => "ARM aarch64".to_string(),
        243 => "UCB RISC-V".to_string(),
        n => format!("*unknown arch {n:#x}*"),
    };
    let version = word(20);
    let abi = match d[7] {
        0 => "SYSV",
        3 => "GNU/Linux",
        9 => "FreeBSD",
        _ => "unknown",
    };
    format!("ELF {bits} {order} {kind}, {machine}, version {version} ({abi})")
}

fn gzip(d: &[u8]) -> String {
    let flags = d[3];
    let mtime = le32(d, 4);
    let mut s = String::from("gzip compressed data");
    if flags & 0x08 != 0 {
        let mut at = 10;
        if flags & 0x04 != 0 {
            at += 2 + le16(d, 10) as usize;
        }
        if let Some(rest) = d.get(at..) {
            let name: Vec<u8> = rest.iter().take_while(|b| **b != 0).copied().collect();
            s.push_str(&format!(", was \"{}\"", String::from_utf8_lossy(&name)));
        }
    }
    if mtime != 0 {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(u64::from(mtime));
        s.push_str(&format!(
            ", last modified: {}",
            utc(t).format("%a %b %e %H:%M:%S %Y")
        ));
    }
    match d[8] {
        2 => s.push_str(", max compression"),
        4 => s.push_str(", max speed"),
        _ => {}
    }
    let os = match d[9] {
        0 => "FAT filesystem (MS-DOS, OS/2, NT)",
        3 => "Unix",
        7 => "Macintosh",
        11 => "NTFS filesystem (NT)",
        _ => "",
    };
    if !os.is_empty() {
        s.push_str(&format!(", from {os}"));
    }
    if d.len() >= 18 {
        s.push_str(&format!(
            ", original size modulo 2^32 {}",
            le32(d, d.len() - 4)
        ));
    }
    s
}

fn jpeg(d: &[u8]) -> String {
    let mut s = String::from("JPEG image data");
    if d.len() >= 18 && &d[6..11] == b"JFIF\0" {
        let units = match d[13] {
            1 => "resolution (DPI)",
            2 => "resolution (DPCM)",
            _ => "aspect ratio",
        };
        s.push_str(&format!(
            ", JFIF standard {}.{:02}, {units}, density {}x{}, segment length {}",
            d[11],
            d[12],
            be16(d, 14),
            be16(d, 16),
            be16(d, 4)
        ));
    }
    // The frame header, if one is in the examined bytes.
    let mut i = 2;
    while i + 9 < d.len() {
        if d[i] != 0xff {
            break;
        }
        let marker = d[i + 1];
        let len = be16(d, i + 2) as usize;
        if matches!(marker, 0xc0..=0xc2) {
            let kind = if marker == 0xc2 {
                "progressive"
            } else {
                "baseline"
            };
            s.push_str(&format!(
                ", {kind}, precision {}, {}x{}, components {}",
                d[i + 4],
                be16(d, i + 7),
                be16(d, i + 5),
                d[i + 9]
            ));
            break;
        }
        if marker == 0xda || len < 2 {
            break;
        }
        i += 2 + len;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_kinds() {
        assert_eq!(classify(b"hello\n").0, "ASCII text");
        assert_eq!(
            classify(b"a\r\nb\n").0,
            "ASCII text, with CRLF, LF line terminators"
        );
        assert_eq!(classify(b"noeol").0, "ASCII text, with no line terminators");
        assert_eq!(classify("café\n".as_bytes()).0, "Unicode text, UTF-8 text");
        assert_eq!(classify(b"caf\xe9\n").0, "ISO-8859 text");
        assert_eq!(classify(b"{\"a\": [1, 2]}\n").0, "JSON text data");
        assert_eq!(classify(b"{bad\n").0, "ASCII text");
        assert_eq!(
            classify(b"#!/usr/bin/env python3\n").0,
            "Python script, ASCII text executable"
        );
        assert_eq!(classify(b"\x00\x01\x02").0, "data");
    }
}

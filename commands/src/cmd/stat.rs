//! `stat`: show what the filesystem knows about a path, GNU-style.
//!
//! forkbox keeps one timestamp per path (the object's mtime), which it reports for
//! access, modification and change alike, and no birth time. There are no devices,
//! inodes, numeric owners or hard links: those fields print `?` (or `1` for the link
//! count), and owner and group names are the session user, as in `ls -l`.

use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use clap::Parser;

use super::printf::{Escapes, unescape};
use super::util::{mode_string, quote, quotef};
use super::zone::Zone;
use crate::fs::{FileKind, Metadata};
use crate::{CmdResult, Command, Context, parse_args};

/// The I/O block size reported (`%o`), the unit `%b` counts in (`%B`) and the
/// allocation granularity blocks are rounded to: the usual Linux values.
const IO_BLOCK: u64 = 4096;
const BLOCK_UNIT: u64 = 512;

/// Display file or file system status.
///
/// The valid format sequences for files are: %a access rights in octal, %A access
/// rights in human readable form, %b number of blocks allocated (see %B), %B the size
/// in bytes of each block reported by %b, %f raw mode in hex, %F file type, %g group
/// ID (unknown: ?), %G group name, %h number of hard links, %n file name, %N quoted
/// file name with dereference if symbolic link, %o optimal I/O transfer size hint, %s
/// total size in bytes, %u user ID (unknown: ?), %U user name, %w/%W time of birth
/// (unknown: - and 0), %x/%X time of last access, %y/%Y time of last data
/// modification, %z/%Z time of last status change (human readable and seconds since
/// the Epoch). forkbox keeps one time per file and reports it for access, modification
/// and change.
#[derive(Parser, Debug)]
#[command(name = "stat", override_usage = "stat [OPTION]... FILE...")]
struct Args {
    /// Follow links.
    #[arg(short = 'L', long)]
    dereference: bool,
    /// Use the specified FORMAT instead of the default; output a newline after each use
    /// of FORMAT.
    #[arg(short = 'c', long, value_name = "FORMAT", allow_hyphen_values = true)]
    format: Option<String>,
    /// Like --format, but interpret backslash escapes, and do not output a mandatory
    /// trailing newline.
    #[arg(long, value_name = "FORMAT", allow_hyphen_values = true)]
    printf: Option<String>,
    /// Print the information in terse form.
    #[arg(short = 't', long)]
    terse: bool,
    /// Files to describe.
    files: Vec<String>,
}

/// What one file's format is expanded from.
struct Subject<'a> {
    name: &'a str,
    meta: Metadata,
    /// The target of a symlink (for `%N` and the default format).
    target: Option<String>,
    user: &'a str,
    /// `TZ`'s zone, which times are shown in.
    zone: &'a Zone,
}

fn file_type(meta: &Metadata) -> &'static str {
    match meta.kind {
        FileKind::File if meta.len == 0 => "regular empty file",
        FileKind::File => "regular file",
        FileKind::Dir => "directory",
        FileKind::Symlink => "symbolic link",
        FileKind::CharDevice => "character special file",
    }
}

fn blocks(meta: &Metadata) -> u64 {
    match meta.kind {
        FileKind::File => meta.len.div_ceil(IO_BLOCK) * (IO_BLOCK / BLOCK_UNIT),
        FileKind::Dir => IO_BLOCK / BLOCK_UNIT,
        FileKind::Symlink | FileKind::CharDevice => 0,
    }
}

fn raw_mode(meta: &Metadata) -> u32 {
    let kind = match meta.kind {
        FileKind::File => 0o100000,
        FileKind::Dir => 0o040000,
        FileKind::Symlink => 0o120000,
        FileKind::CharDevice => 0o020000,
    };
    kind | (meta.mode & 0o7777)
}

fn epoch(t: SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        ),
        Err(e) => (
            -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
            0,
        ),
    }
}

/// `2023-11-14 22:13:20.000000000 +0000`, in `zone`.
fn human_time(t: SystemTime, zone: &Zone) -> String {
    let (dt, _) = zone.at(t);
    dt.format("%Y-%m-%d %H:%M:%S.%9f %z").to_string()
}

impl Subject<'_> {
    /// The value of one `%` directive; `None` for an unknown one.
    fn directive(&self, c: u8) -> Option<String> {
        let m = &self.meta;
        Some(match c {
            b'a' => format!("{:o}", m.mode & 0o7777),
            b'A' => mode_string(m),
            b'b' => blocks(m).to_string(),
            b'B' => BLOCK_UNIT.to_string(),
            b'f' => format!("{:x}", raw_mode(m)),
            b'F' => file_type(m).to_string(),
            b'g' | b'u' | b'd' | b'D' | b'i' | b't' | b'T' | b'C' | b'm' => "?".to_string(),
            b'G' | b'U' => self.user.to_string(),
            b'h' => "1".to_string(),
            b'n' => self.name.to_string(),
            b'N' => match &self.target {
                Some(t) => format!("{} -> {}", quote(self.name), quote(t)),
                None => quote(self.name),
            },
            b'o' => IO_BLOCK.to_string(),
            b's' => m.len.to_string(),
            b'w' => "-".to_string(),
            b'W' => "0".to_string(),
            b'x' | b'y' | b'z' => human_time(m.mtime, self.zone),
            b'X' | b'Y' | b'Z' => epoch(m.mtime).0.to_string(),
            _ => return None,
        })
    }

    /// Expands a format: `%[-0#+ ]*WIDTH?(.PREC)?C` and `%%`; an unknown directive
    /// prints `?`, a trailing lone `%` prints itself.
    fn expand(&self, fmt: &[u8], out: &mut Vec<u8>) {
        let mut i = 0;
        while i < fmt.len() {
            if fmt[i] != b'%' {
                out.push(fmt[i]);
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            let mut left = false;
            let mut zero = false;
            while let Some(&f) = fmt.get(i) {
                match f {
                    b'-' => left = true,
                    b'0' => zero = true,
                    b'#' | b'+' | b' ' | b'\'' => {}
                    _ => break,
                }
                i += 1;
            }
            let mut width = 0usize;
            while let Some(d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
                width = width
                    .saturating_mul(10)
                    .saturating_add(usize::from(d - b'0'));
                i += 1;
            }
            // Bound the padding a format can ask for.
            width = width.min(MAX_WIDTH);
            let mut prec = None;
            if fmt.get(i) == Some(&b'.') {
                i += 1;
                let mut p = 0usize;
                while let Some(d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
                    p = p.saturating_mul(10).saturating_add(usize::from(d - b'0'));
                    i += 1;
                }
                prec = Some(p);
            }
            let Some(&c) = fmt.get(i) else {
                out.extend_from_slice(&fmt[start..]);
                break;
            };
            i += 1;
            if c == b'%' && i == start + 2 {
                out.push(b'%');
                continue;
            }
            let mut value = self.directive(c).unwrap_or_else(|| "?".to_string());
            if let Some(p) = prec
                && !matches!(c, b'x' | b'y' | b'z')
                && value.len() > p
                && value.is_char_boundary(p)
            {
                value.truncate(p);
            }
            let pad = width.saturating_sub(value.chars().count());
            let numeric = value.bytes().all(|b| b.is_ascii_digit()) && !value.is_empty();
            if left {
                out.extend_from_slice(value.as_bytes());
                out.extend(std::iter::repeat_n(b' ', pad));
            } else {
                let fill = if zero && numeric { b'0' } else { b' ' };
                out.extend(std::iter::repeat_n(fill, pad));
                out.extend_from_slice(value.as_bytes());
            }
        }
    }

    fn default_format(&self) -> String {
        let m = &self.meta;
        let name = match &self.target {
            Some(t) => format!("{} -> {}", quotef(self.name), quotef(t)),
            None => quotef(self.name),
        };
        let time = human_time(m.mtime, self.zone);
        format!(
            "  File: {name}\n  Size: {:<10}\tBlocks: {:<10} IO Block: {:<6} {}\n\
             Links: 1\n\
             Access: ({:04o}/{})  Uid: ({:>5}/{:>8})   Gid: ({:>5}/{:>8})\n\
             Access: {time}\nModify: {time}\nChange: {time}\n Birth: -\n",
            m.len,
            blocks(m),
            IO_BLOCK,
            file_type(m),
            m.mode & 0o7777,
            mode_string(m),
            "?",
            self.user,
            "?",
            self.user,
        )
    }

    fn terse(&self) -> String {
        let m = &self.meta;
        let (secs, _) = epoch(m.mtime);
        format!(
            "{} {} {} {:x} ? ? ? ? 1 ? ? {secs} {secs} {secs} 0 {}\n",
            self.name,
            m.len,
            blocks(m),
            raw_mode(m),
            IO_BLOCK
        )
    }
}

/// Widest field padding a format may ask for (`%999999999s` would otherwise allocate
/// without bound).
const MAX_WIDTH: usize = 4096;

pub struct Stat;

#[async_trait]
impl Command for Stat {
    fn name(&self) -> &'static str {
        "stat"
    }
    fn summary(&self) -> &'static str {
        "display file status"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if args.files.is_empty() {
            return Ok(super::util::missing_operand(ctx, "stat").await);
        }
        let user = ctx
            .env
            .get("USER")
            .filter(|u| !u.is_empty())
            .cloned()
            .unwrap_or_else(|| "user".into());
        // --printf wins over --format when both are given, as in GNU.
        let format: Option<(Vec<u8>, bool)> = match (&args.printf, &args.format) {
            (Some(p), _) => {
                let mut f = Vec::new();
                unescape(p.as_bytes(), &mut f, Escapes::Format);
                Some((f, false))
            }
            (None, Some(c)) => Some((c.as_bytes().to_vec(), true)),
            (None, None) => None,
        };
        let mut status = 0;
        let zone = Zone::from_env(&ctx.env);
        for f in &args.files {
            let path = ctx.path(f);
            let got = if args.dereference {
                ctx.fs.stat(&path).await
            } else {
                ctx.fs.lstat(&path).await
            };
            let meta = match got {
                Ok(m) => m,
                Err(e) => {
                    ctx.warn("stat", format!("cannot statx {}: {e}", quote(f)))
                        .await;
                    status = 1;
                    continue;
                }
            };
            let target = if meta.is_symlink() {
                ctx.fs.readlink(&path).await.ok()
            } else {
                None
            };
            let subject = Subject {
                name: f,
                meta,
                target,
                user: &user,
                zone: &zone,
            };
            let text = match &format {
                Some((fmt, newline)) => {
                    let mut out = Vec::new();
                    subject.expand(fmt, &mut out);
                    if *newline {
                        out.push(b'\n');
                    }
                    out
                }
                None if args.terse => subject.terse().into_bytes(),
                None => subject.default_format().into_bytes(),
            };
            ctx.out(text).await?;
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    fn inv() -> Invocation {
        let fs = MemFs::with_files(&[("/f", "hello"), ("/d/", ""), ("/empty", "")]);
        fs.put_symlink("f", "/l");
        fs.set_mtime_secs("/f", 1_700_000_000);
        let mut env = std::collections::BTreeMap::new();
        env.insert("USER".to_string(), "me".to_string());
        Invocation {
            fs,
            env,
            ..Invocation::default()
        }
    }

    #[tokio::test]
    async fn default_format() {
        let (st, out, err) = inv().run(&Stat, &["f"]).await;
        assert_eq!((st, err.as_str()), (0, ""));
        assert_eq!(
            out,
            "  File: f\n\
             \x20 Size: 5         \tBlocks: 8          IO Block: 4096   regular file\n\
             Links: 1\n\
             Access: (0644/-rw-r--r--)  Uid: (    ?/      me)   Gid: (    ?/      me)\n\
             Access: 2023-11-14 22:13:20.000000000 +0000\n\
             Modify: 2023-11-14 22:13:20.000000000 +0000\n\
             Change: 2023-11-14 22:13:20.000000000 +0000\n \
             Birth: -\n"
        );
        let (_, out, _) = inv().run(&Stat, &["l"]).await;
        assert!(out.starts_with("  File: l -> f\n  Size: 1 "), "{out}");
        assert!(out.contains("symbolic link\n"), "{out}");
        let (_, out, _) = inv().run(&Stat, &["-L", "l"]).await;
        assert!(out.starts_with("  File: l\n  Size: 5 "), "{out}");
    }

    #[tokio::test]
    async fn formats() {
        let (st, out, _) = inv()
            .run(
                &Stat,
                &["-c", "%n %s %a %A %F %Y %y %U %G %h", "f", "d", "l"],
            )
            .await;
        assert_eq!(st, 0);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "f 5 644 -rw-r--r-- regular file 1700000000 2023-11-14 22:13:20.000000000 +0000 me me 1"
        );
        assert!(
            lines[1].starts_with("d 4096 755 drwxr-xr-x directory "),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with("l 1 777 lrwxrwxrwx symbolic link "),
            "{}",
            lines[2]
        );
        let run = |args: &'static [&'static str]| async move { inv().run(&Stat, args).await.1 };
        assert_eq!(
            run(&["-L", "-c", "%n %F %N", "l"]).await,
            "l regular file 'l'\n"
        );
        assert_eq!(run(&["-c", "%N", "l", "f"]).await, "'l' -> 'f'\n'f'\n");
        assert_eq!(run(&["-c", "%F", "empty"]).await, "regular empty file\n");
        assert_eq!(run(&["-c", "%%%q|x%", "f"]).await, "%?|x%\n");
        assert_eq!(
            run(&["-c", "%10s|%-5a|%05s", "f"]).await,
            "         5|644  |00005\n"
        );
        assert_eq!(
            run(&["-c", "%b %B %o %f %w %W", "f"]).await,
            "8 512 4096 81a4 - 0\n"
        );
        assert_eq!(run(&["-c", "", "f"]).await, "\n");
        assert_eq!(run(&["--printf", "%n\\t%s\\\\n", "f"]).await, "f\t5\\n");
    }

    #[tokio::test]
    async fn errors() {
        let (st, out, err) = inv().run(&Stat, &["nofile", "f"]).await;
        assert_eq!(st, 1);
        assert!(out.starts_with("  File: f\n"));
        assert_eq!(
            err,
            "stat: cannot statx 'nofile': No such file or directory\n"
        );
        let (st, _, err) = inv().run(&Stat, &[]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "stat: missing operand\nTry 'stat --help' for more information.\n"
            )
        );
        assert_eq!(inv().run(&Stat, &["--bogus", "f"]).await.0, 1);
        assert_eq!(inv().run(&Stat, &["-c"]).await.0, 1);
    }
}

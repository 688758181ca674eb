//! `md5sum`, `sha1sum`, `sha224sum`, `sha256sum`, `sha384sum`, `sha512sum`, `cksum` and
//! `sum`: print or check checksums, streaming each file through the hash in ranged reads.
//!
//! Output and `--check` follow GNU coreutils: `HASH  NAME` lines (`HASH *NAME` with
//! `--binary`), BSD-style `ALGO (NAME) = HASH` lines with `--tag` (cksum's default for
//! digests), a leading `\` and `\\`, `\n`, `\r` escapes for a name that needs them, and
//! GNU's messages, counts and exit statuses when checking. `cksum` defaults to the POSIX
//! CRC (`CRC BYTES NAME`); its `-a` takes the digests above and `sum`'s BSD and System V
//! checksums (`-a bsd`, `-a sysv`), not blake2b or sm3.

use std::borrow::Cow;

use async_trait::async_trait;
use clap::{CommandFactory, Parser, parser::ValueSource};
use crc::{CRC_32_CKSUM, Crc};
use sha2::digest::DynDigest;

use super::util::{MAX_LINE, Pacer, Reader, quotef};
use crate::fs::{FsError, FsResult};
use crate::{CmdResult, Command, Context, Interrupt, Status, parse_args};

/// Bytes hashed between two yields to the runtime: about a millisecond of SHA-512 on a
/// slow core, so hashing a big file never holds a worker thread from other sessions.
const HASH_SLICE: usize = 256 * 1024;

/// POSIX `cksum`'s CRC: polynomial 0x04C11DB7, not reflected, complemented at the end.
static CKSUM_CRC: Crc<u32> = Crc::<u32>::new(&CRC_32_CKSUM);

/// A checksum algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algo {
    Crc,
    /// `sum -r`: a 16-bit rotating checksum, with the size in 1024-byte blocks.
    Bsd,
    /// `sum -s`: the byte sum folded to 16 bits, with the size in 512-byte blocks.
    Sysv,
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl Algo {
    /// The digests whose BSD-style lines `cksum --check` recognizes by their tag.
    const TAGGED: [Algo; 6] = [
        Algo::Md5,
        Algo::Sha1,
        Algo::Sha224,
        Algo::Sha256,
        Algo::Sha384,
        Algo::Sha512,
    ];

    /// The name in a BSD-style line and in messages.
    fn tag(self) -> &'static str {
        match self {
            Algo::Crc => "CRC",
            Algo::Bsd => "BSD",
            Algo::Sysv => "SYSV",
            Algo::Md5 => "MD5",
            Algo::Sha1 => "SHA1",
            Algo::Sha224 => "SHA224",
            Algo::Sha256 => "SHA256",
            Algo::Sha384 => "SHA384",
            Algo::Sha512 => "SHA512",
        }
    }

    /// Length of the digest in hex digits.
    fn hex_len(self) -> usize {
        match self {
            Algo::Crc => 8,
            Algo::Bsd | Algo::Sysv => 5,
            Algo::Md5 => 32,
            Algo::Sha1 => 40,
            Algo::Sha224 => 56,
            Algo::Sha256 => 64,
            Algo::Sha384 => 96,
            Algo::Sha512 => 128,
        }
    }

    fn hasher(self) -> Hasher {
        let digest: Box<dyn DynDigest + Send> = match self {
            Algo::Crc => {
                return Hasher::Crc {
                    digest: CKSUM_CRC.digest(),
                    len: 0,
                };
            }
            Algo::Bsd => return Hasher::Bsd { sum: 0, len: 0 },
            Algo::Sysv => return Hasher::Sysv { sum: 0, len: 0 },
            Algo::Md5 => Box::new(md5::Md5::default()),
            Algo::Sha1 => Box::new(sha1::Sha1::default()),
            Algo::Sha224 => Box::new(sha2::Sha224::default()),
            Algo::Sha256 => Box::new(sha2::Sha256::default()),
            Algo::Sha384 => Box::new(sha2::Sha384::default()),
            Algo::Sha512 => Box::new(sha2::Sha512::default()),
        };
        Hasher::Digest(digest)
    }
}

enum Hasher {
    /// The CRC so far and the byte count, which POSIX appends to the data.
    Crc {
        digest: crc::Digest<'static, u32>,
        len: u64,
    },
    Digest(Box<dyn DynDigest + Send>),
    /// The BSD checksum so far (16 bits) and the byte count.
    Bsd {
        sum: u16,
        len: u64,
    },
    /// The byte sum so far (modulo 2^32, as GNU's folding reads it) and the byte count.
    Sysv {
        sum: u32,
        len: u64,
    },
}

/// A finished checksum.
#[derive(Debug, PartialEq, Eq)]
enum Sum {
    Crc {
        crc: u32,
        len: u64,
    },
    /// Lowercase hex.
    Digest(String),
    /// `sum`'s lines: `CHECKSUM BLOCKS`, BSD's padded (`%05d %5s`), System V's not.
    Blocks {
        bsd: bool,
        sum: u16,
        blocks: u64,
    },
}

impl Hasher {
    fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Crc { digest, len } => {
                digest.update(data);
                *len += data.len() as u64;
            }
            Hasher::Digest(d) => d.update(data),
            Hasher::Bsd { sum, len } => {
                for &b in data {
                    *sum = sum.rotate_right(1).wrapping_add(u16::from(b));
                }
                *len += data.len() as u64;
            }
            Hasher::Sysv { sum, len } => {
                for &b in data {
                    *sum = sum.wrapping_add(u32::from(b));
                }
                *len += data.len() as u64;
            }
        }
    }

    fn finish(self) -> Sum {
        match self {
            Hasher::Crc { mut digest, len } => {
                // The length goes in least significant byte first, as few bytes as it needs.
                let mut n = len;
                while n != 0 {
                    digest.update(&[n as u8]);
                    n >>= 8;
                }
                Sum::Crc {
                    crc: digest.finalize(),
                    len,
                }
            }
            Hasher::Digest(mut d) => {
                let mut out = vec![0u8; d.output_size()];
                // The buffer has exactly the output size, so this cannot fail.
                let _ = d.finalize_into_reset(&mut out);
                Sum::Digest(out.iter().map(|b| format!("{b:02x}")).collect())
            }
            Hasher::Bsd { sum, len } => Sum::Blocks {
                bsd: true,
                sum,
                blocks: len.div_ceil(1024),
            },
            Hasher::Sysv { sum, len } => {
                let r = (sum & 0xffff) + (sum >> 16);
                Sum::Blocks {
                    bsd: false,
                    sum: ((r & 0xffff) + (r >> 16)) as u16,
                    blocks: len.div_ceil(512),
                }
            }
        }
    }
}

/// Hashes one operand (`-` is stdin) in ranged reads, yielding every [`HASH_SLICE`]
/// bytes; the inner error is the opening's or the reading's.
async fn hash_operand(
    ctx: &Context,
    algo: Algo,
    operand: &str,
) -> Result<FsResult<Sum>, Interrupt> {
    let mut reader = match Reader::open(ctx, operand).await {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    let mut hasher = algo.hasher();
    let mut since_yield = 0;
    loop {
        match reader.chunk().await {
            Ok(Some(chunk)) => {
                hasher.update(&chunk);
                since_yield += chunk.len();
                if since_yield >= HASH_SLICE {
                    since_yield = 0;
                    ctx.checkpoint().await?;
                }
            }
            Ok(None) => return Ok(Ok(hasher.finish())),
            Err(e) => return Ok(Err(e)),
        }
    }
}

/// Where `--help` lists [`VerifyArgs`].
const VERIFY_HEADING: &str = "Options useful only when verifying checksums";

/// The options that only make sense with `--check`, shared by every command here. The
/// last of `--quiet`, `--status` and `--warn` wins, as in GNU.
#[derive(clap::Args, Debug)]
struct VerifyArgs {
    /// Don't fail or report status for missing files.
    #[arg(long, help_heading = VERIFY_HEADING)]
    ignore_missing: bool,
    /// Don't print OK for each successfully verified file.
    #[arg(long, help_heading = VERIFY_HEADING, overrides_with_all = ["status", "warn"])]
    quiet: bool,
    /// Don't output anything, status code shows success.
    #[arg(long, help_heading = VERIFY_HEADING, overrides_with_all = ["quiet", "warn"])]
    status: bool,
    /// Exit non-zero for improperly formatted checksum lines.
    #[arg(long, help_heading = VERIFY_HEADING)]
    strict: bool,
    /// Warn about improperly formatted checksum lines.
    #[arg(short = 'w', long, help_heading = VERIFY_HEADING, overrides_with_all = ["quiet", "status"])]
    warn: bool,
}

/// The options of `md5sum` and the `sha*sum` commands.
#[derive(clap::Args, Debug)]
struct DigestArgs {
    /// Read in binary mode (marks the name with `*`; the sum is the same either way).
    #[arg(short = 'b', long)]
    binary: bool,
    /// Read checksums from the FILEs and check them.
    #[arg(short = 'c', long)]
    check: bool,
    /// Create a BSD-style checksum.
    #[arg(long)]
    tag: bool,
    /// Read in text mode (default).
    #[arg(short = 't', long)]
    text: bool,
    /// End each output line with NUL, not newline, and disable file name escaping.
    #[arg(short = 'z', long)]
    zero: bool,
    #[command(flatten)]
    verify: VerifyArgs,
    /// Files to sum (or, with --check, files of sums); none or `-` is standard input.
    files: Vec<String>,
}

/// Which of `-b`, `-t` and `--tag` came last on the command line: GNU lets the last one
/// choose between text and binary mode, and `--tag` wants binary.
fn last_mode<C: CommandFactory>(name: &str, args: &[String]) -> Option<&'static str> {
    let argv = std::iter::once(name.to_string()).chain(args.iter().cloned());
    let matches = C::command().try_get_matches_from(argv).ok()?;
    ["binary", "text", "tag"]
        .into_iter()
        .filter(|id| matches.value_source(id) == Some(ValueSource::CommandLine))
        .max_by_key(|id| matches.index_of(id))
}

/// Defines one `*sum` command: its clap front (name and about line for `--help`) over
/// [`DigestArgs`], and its [`Command`] impl.
macro_rules! digest_command {
    ($cmd:ident, $cli:ident, $name:literal, $algo:expr, $summary:literal, $about:literal) => {
        #[derive(Parser, Debug)]
        #[command(name = $name, about = $about, args_override_self = true)]
        struct $cli {
            #[command(flatten)]
            args: DigestArgs,
        }

        pub struct $cmd;

        #[async_trait]
        impl Command for $cmd {
            fn name(&self) -> &'static str {
                $name
            }
            fn summary(&self) -> &'static str {
                $summary
            }
            async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
                let cli: $cli = match parse_args(ctx, $name, &args).await {
                    Ok(c) => c,
                    Err(r) => return r,
                };
                let last = last_mode::<$cli>($name, &args);
                run_digest(ctx, $name, $algo, cli.args, last).await
            }
        }
    };
}

digest_command!(
    Md5sum,
    Md5Cli,
    "md5sum",
    Algo::Md5,
    "print or check MD5 (128-bit) checksums",
    "Print or check MD5 (128-bit) checksums. With no FILE, or when FILE is -, read standard input."
);
digest_command!(
    Sha1sum,
    Sha1Cli,
    "sha1sum",
    Algo::Sha1,
    "print or check SHA1 (160-bit) checksums",
    "Print or check SHA1 (160-bit) checksums. With no FILE, or when FILE is -, read standard input."
);
digest_command!(
    Sha224sum,
    Sha224Cli,
    "sha224sum",
    Algo::Sha224,
    "print or check SHA224 (224-bit) checksums",
    "Print or check SHA224 (224-bit) checksums. With no FILE, or when FILE is -, read standard input."
);
digest_command!(
    Sha256sum,
    Sha256Cli,
    "sha256sum",
    Algo::Sha256,
    "print or check SHA256 (256-bit) checksums",
    "Print or check SHA256 (256-bit) checksums. With no FILE, or when FILE is -, read standard input."
);
digest_command!(
    Sha384sum,
    Sha384Cli,
    "sha384sum",
    Algo::Sha384,
    "print or check SHA384 (384-bit) checksums",
    "Print or check SHA384 (384-bit) checksums. With no FILE, or when FILE is -, read standard input."
);
digest_command!(
    Sha512sum,
    Sha512Cli,
    "sha512sum",
    Algo::Sha512,
    "print or check SHA512 (512-bit) checksums",
    "Print or check SHA512 (512-bit) checksums. With no FILE, or when FILE is -, read standard input."
);

/// Reports a usage problem GNU words itself, with GNU's status 1.
async fn usage_error(ctx: &Context, prog: &str, msg: &str) -> Status {
    ctx.err(format!(
        "{prog}: {msg}\nTry '{prog} --help' for more information.\n"
    ))
    .await;
    1
}

/// Reports the first check-only option given without `--check`, as GNU does.
async fn verify_without_check(ctx: &Context, prog: &str, v: &VerifyArgs) -> Option<Status> {
    let option = [
        (v.ignore_missing, "--ignore-missing"),
        (v.status, "--status"),
        (v.warn, "--warn"),
        (v.quiet, "--quiet"),
        (v.strict, "--strict"),
    ]
    .into_iter()
    .find_map(|(set, name)| set.then_some(name))?;
    let msg = format!("the {option} option is meaningful only when verifying checksums");
    Some(usage_error(ctx, prog, &msg).await)
}

async fn run_digest(
    ctx: &Context,
    prog: &'static str,
    algo: Algo,
    args: DigestArgs,
    last: Option<&'static str>,
) -> CmdResult {
    if args.tag && last == Some("text") {
        return Ok(usage_error(ctx, prog, "--tag does not support --text mode").await);
    }
    if args.check {
        let problem = if args.zero {
            Some("the --zero option is not supported when verifying checksums")
        } else if args.tag {
            Some("the --tag option is meaningless when verifying checksums")
        } else if args.binary || args.text {
            Some("the --binary and --text options are meaningless when verifying checksums")
        } else {
            None
        };
        if let Some(msg) = problem {
            return Ok(usage_error(ctx, prog, msg).await);
        }
    } else if let Some(status) = verify_without_check(ctx, prog, &args.verify).await {
        return Ok(status);
    }
    let opts = Opts {
        prog,
        algo: Some(algo),
        tag: args.tag,
        binary: matches!(last, Some("binary" | "tag")),
        zero: args.zero,
        verify: args.verify,
    };
    if args.check {
        check_files(ctx, &opts, &args.files).await
    } else {
        print_sums(ctx, &opts, algo, &args.files).await
    }
}

/// Print or verify checksums. By default use the 32-bit CRC algorithm of POSIX cksum and
/// print `CRC BYTES FILE`. With no FILE, or when FILE is -, read standard input.
#[derive(Parser, Debug)]
#[command(name = "cksum", args_override_self = true)]
struct CksumArgs {
    /// Select the digest type to use.
    #[arg(
        short = 'a',
        long,
        value_name = "TYPE",
        value_parser = ["bsd", "sysv", "crc", "md5", "sha1", "sha224", "sha256", "sha384", "sha512"],
    )]
    algorithm: Option<String>,
    /// Read checksums from the FILEs and check them (digest types only).
    #[arg(short = 'c', long)]
    check: bool,
    /// Create a BSD-style checksum (the default).
    #[arg(long, overrides_with = "untagged")]
    tag: bool,
    /// Create a reversed style checksum, without digest type.
    #[arg(long, overrides_with = "tag")]
    untagged: bool,
    /// End each output line with NUL, not newline, and disable file name escaping.
    #[arg(short = 'z', long)]
    zero: bool,
    #[command(flatten)]
    verify: VerifyArgs,
    /// Files to sum (or, with --check, files of sums); none or `-` is standard input.
    files: Vec<String>,
}

pub struct Cksum;

#[async_trait]
impl Command for Cksum {
    fn name(&self) -> &'static str {
        "cksum"
    }
    fn summary(&self) -> &'static str {
        "print or check CRC and digest checksums"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let prog = self.name();
        let args: CksumArgs = match parse_args(ctx, prog, &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let algo = match args.algorithm.as_deref() {
            None => None,
            Some("bsd") => Some(Algo::Bsd),
            Some("sysv") => Some(Algo::Sysv),
            Some("md5") => Some(Algo::Md5),
            Some("sha1") => Some(Algo::Sha1),
            Some("sha224") => Some(Algo::Sha224),
            Some("sha256") => Some(Algo::Sha256),
            Some("sha384") => Some(Algo::Sha384),
            Some("sha512") => Some(Algo::Sha512),
            Some(_) => Some(Algo::Crc),
        };
        if args.check {
            if matches!(algo, Some(Algo::Crc | Algo::Bsd | Algo::Sysv)) {
                ctx.warn(
                    prog,
                    "--check is not supported with --algorithm={bsd,sysv,crc}",
                )
                .await;
                return Ok(1);
            }
            if args.zero {
                let msg = "the --zero option is not supported when verifying checksums";
                return Ok(usage_error(ctx, prog, msg).await);
            }
        } else if let Some(status) = verify_without_check(ctx, prog, &args.verify).await {
            return Ok(status);
        }
        let opts = Opts {
            prog,
            algo,
            tag: !args.untagged,
            binary: false,
            zero: args.zero,
            verify: args.verify,
        };
        if args.check {
            check_files(ctx, &opts, &args.files).await
        } else {
            print_sums(ctx, &opts, algo.unwrap_or(Algo::Crc), &args.files).await
        }
    }
}

/// Print or check BSD (16-bit) checksums. With no FILE, or when FILE is -, read standard
/// input.
#[derive(Parser, Debug)]
#[command(name = "sum", args_override_self = true)]
struct SumArgs {
    /// use BSD sum algorithm (the default), use 1K blocks
    #[arg(short = 'r', overrides_with = "sysv")]
    bsd: bool,
    /// use System V sum algorithm, use 512 bytes blocks
    #[arg(short = 's', long, overrides_with = "bsd")]
    sysv: bool,
    /// Files to sum; none or `-` is standard input.
    files: Vec<String>,
}

pub struct BsdSum;

#[async_trait]
impl Command for BsdSum {
    fn name(&self) -> &'static str {
        "sum"
    }
    fn summary(&self) -> &'static str {
        "checksum and count the blocks in a file"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let prog = self.name();
        let args: SumArgs = match parse_args(ctx, prog, &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let algo = if args.sysv { Algo::Sysv } else { Algo::Bsd };
        let opts = Opts {
            prog,
            algo: Some(algo),
            tag: false,
            binary: false,
            zero: false,
            verify: VerifyArgs {
                ignore_missing: false,
                quiet: false,
                status: false,
                strict: false,
                warn: false,
            },
        };
        print_sums(ctx, &opts, algo, &args.files).await
    }
}

/// What one invocation does, whichever command it came from.
struct Opts {
    /// The command's name, for messages.
    prog: &'static str,
    /// `None` only for `cksum --check` without `-a`: each line's tag names its digest.
    algo: Option<Algo>,
    /// BSD-style `ALGO (NAME) = HASH` lines.
    tag: bool,
    /// Mark names with `*` in untagged lines.
    binary: bool,
    /// NUL-terminated lines, names unescaped.
    zero: bool,
    verify: VerifyArgs,
}

/// True for a name GNU prints escaped, behind a leading `\`.
fn needs_escape(name: &str) -> bool {
    name.contains(['\\', '\n', '\r'])
}

/// `\\`, `\n` and `\r` for a backslash, newline and carriage return.
fn escape(name: &str) -> String {
    name.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

/// The inverse of [`escape`]; `None` for any other backslash sequence.
fn unescape(name: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(name.len());
    let mut bytes = name.iter();
    while let Some(&b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        out.push(match bytes.next()? {
            b'\\' => b'\\',
            b'n' => b'\n',
            b'r' => b'\r',
            _ => return None,
        });
    }
    Some(out)
}

/// One output line for `name` (`None`: stdin, read without operands).
fn sum_line(opts: &Opts, algo: Algo, sum: &Sum, name: Option<&str>) -> String {
    let end = if opts.zero { '\0' } else { '\n' };
    let hex = match sum {
        Sum::Crc { crc, len } => {
            return match name {
                Some(n) => format!("{crc} {len} {n}{end}"),
                None => format!("{crc} {len}{end}"),
            };
        }
        Sum::Digest(hex) => hex,
        Sum::Blocks { bsd, sum, blocks } => {
            let mut line = if *bsd {
                format!("{sum:05} {blocks:5}")
            } else {
                format!("{sum} {blocks}")
            };
            if let Some(n) = name {
                line.push(' ');
                line.push_str(n);
            }
            line.push(end);
            return line;
        }
    };
    let name = name.unwrap_or("-");
    let (lead, name) = if !opts.zero && needs_escape(name) {
        ("\\", Cow::Owned(escape(name)))
    } else {
        ("", Cow::Borrowed(name))
    };
    if opts.tag {
        format!("{lead}{} ({name}) = {hex}{end}", algo.tag())
    } else {
        let mark = if opts.binary { '*' } else { ' ' };
        format!("{lead}{hex} {mark}{name}{end}")
    }
}

async fn print_sums(ctx: &Context, opts: &Opts, algo: Algo, files: &[String]) -> CmdResult {
    let stdin = ["-".to_string()];
    let operands = if files.is_empty() { &stdin[..] } else { files };
    let mut status = 0;
    for f in operands {
        match hash_operand(ctx, algo, f).await? {
            Ok(sum) => {
                let shown = (!files.is_empty()).then_some(f.as_str());
                ctx.out(sum_line(opts, algo, &sum, shown)).await?;
            }
            Err(e) => {
                ctx.warn(opts.prog, format!("{}: {e}", quotef(f))).await;
                status = 1;
            }
        }
    }
    Ok(status)
}

/// One well-formed line of a checksum file.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    algo: Algo,
    /// Lowercase hex.
    hex: String,
    name: String,
}

/// What lasts from one checksum line to the next, across all the files checked.
#[derive(Debug)]
struct CheckState {
    /// How untagged lines separate the hash from the name, fixed by the first one:
    /// `HASH  NAME`/`HASH *NAME` (false) or BSD `-r`'s `HASH NAME` (true). Mixing is
    /// refused, as in GNU, so a name with a leading space cannot be misread.
    reversed: Option<bool>,
    /// The digest named in warnings: the command's, or the last one `cksum` recognized.
    algo: Algo,
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn trim_blanks(mut s: &[u8]) -> &[u8] {
    while let [b, rest @ ..] = s
        && is_blank(*b)
    {
        s = rest;
    }
    s
}

/// The digest when `hex` is one of `algo`'s, lowercased.
fn valid_hex(hex: &[u8], algo: Algo) -> Option<String> {
    (hex.len() == algo.hex_len() && hex.iter().all(u8::is_ascii_hexdigit))
        .then(|| String::from_utf8_lossy(hex).to_ascii_lowercase())
}

/// Parses one line (without its line end) in the forms GNU reads: an optional `\`
/// (escaped name) then `ALGO (NAME) = HASH`, or `HASH  NAME`, `HASH *NAME` or
/// `HASH NAME`. `want` is the digest expected; `None` takes any tagged digest.
fn parse_line(line: &[u8], want: Option<Algo>, state: &mut CheckState) -> Option<Entry> {
    let mut s = trim_blanks(line);
    let escaped = s.first() == Some(&b'\\');
    if escaped {
        s = &s[1..];
    }
    let tagged = match want {
        Some(algo) => vec![algo],
        None => Algo::TAGGED.to_vec(),
    };
    for algo in tagged {
        let Some(rest) = s.strip_prefix(algo.tag().as_bytes()) else {
            continue;
        };
        let rest = rest.strip_prefix(b" ").unwrap_or(rest);
        if want.is_some() || rest.first() == Some(&b'(') {
            return parse_tagged(rest.strip_prefix(b"(")?, algo, escaped);
        }
    }
    let algo = want?;
    let n = algo.hex_len();
    if s.len() < n + 2 || !is_blank(s[n]) {
        return None;
    }
    let hex = valid_hex(&s[..n], algo)?;
    let mut name = &s[n + 1..];
    if name.len() == 1 || !matches!(name[0], b' ' | b'*') {
        if state.reversed == Some(false) {
            return None;
        }
        state.reversed = Some(true);
    } else if state.reversed != Some(true) {
        state.reversed = Some(false);
        name = &name[1..];
    }
    entry(algo, hex, name, escaped)
}

/// The rest of a BSD-style line after `ALGO (`: `NAME) = HASH`, where the name ends at
/// the last `)`.
fn parse_tagged(rest: &[u8], algo: Algo, escaped: bool) -> Option<Entry> {
    let close = rest.iter().rposition(|&b| b == b')')?;
    let after = trim_blanks(&rest[close + 1..]);
    let hex = valid_hex(trim_blanks(after.strip_prefix(b"=")?), algo)?;
    entry(algo, hex, &rest[..close], escaped)
}

fn entry(algo: Algo, hex: String, name: &[u8], escaped: bool) -> Option<Entry> {
    let name = if escaped {
        Cow::Owned(unescape(name)?)
    } else {
        Cow::Borrowed(name)
    };
    Some(Entry {
        algo,
        hex,
        name: String::from_utf8_lossy(&name).into_owned(),
    })
}

/// Counts over one checksum file, for its summary and status.
#[derive(Default)]
struct Tally {
    misformatted: u64,
    formatted: u64,
    unreadable: u64,
    mismatched: u64,
    matched: u64,
}

async fn check_files(ctx: &Context, opts: &Opts, files: &[String]) -> CmdResult {
    let stdin = ["-".to_string()];
    let operands = if files.is_empty() { &stdin[..] } else { files };
    let mut state = CheckState {
        reversed: None,
        algo: opts.algo.unwrap_or(Algo::Crc),
    };
    let mut status = 0;
    for f in operands {
        if !check_file(ctx, opts, &mut state, f).await? {
            status = 1;
        }
    }
    Ok(status)
}

/// `N thing` or `N things`, for GNU's warnings.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Checks the sums listed in one file (`-` is stdin); true when all is well.
async fn check_file(
    ctx: &Context,
    opts: &Opts,
    state: &mut CheckState,
    operand: &str,
) -> Result<bool, Interrupt> {
    let prog = opts.prog;
    let v = &opts.verify;
    let shown = quotef(if operand == "-" {
        "standard input"
    } else {
        operand
    });
    let mut reader = match Reader::open(ctx, operand).await {
        Ok(r) => r,
        Err(e) => {
            ctx.warn(prog, format!("{shown}: {e}")).await;
            return Ok(false);
        }
    };
    let mut tally = Tally::default();
    let mut line_no = 0u64;
    let mut pacer = Pacer::default();
    loop {
        let line = match reader.line(MAX_LINE).await? {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(_) => {
                ctx.warn(prog, format!("{shown}: read error")).await;
                return Ok(false);
            }
        };
        line_no += 1;
        pacer.tick(ctx).await?;
        if line.first() == Some(&b'#') {
            continue;
        }
        let mut l = line.as_slice();
        l = l.strip_suffix(b"\n").unwrap_or(l);
        l = l.strip_suffix(b"\r").unwrap_or(l);
        if l.is_empty() {
            continue;
        }
        let parsed = parse_line(l, opts.algo, state);
        let Some(entry) = parsed.filter(|e| !(operand == "-" && e.name == "-")) else {
            tally.misformatted += 1;
            if v.warn {
                let tag = state.algo.tag();
                let msg = format!("{shown}: {line_no}: improperly formatted {tag} checksum line");
                ctx.warn(prog, msg).await;
            }
            continue;
        };
        tally.formatted += 1;
        state.algo = entry.algo;
        // GNU escapes a name here only when it holds a newline.
        let name = if entry.name.contains('\n') {
            Cow::Owned(format!("\\{}", escape(&entry.name)))
        } else {
            Cow::Borrowed(entry.name.as_str())
        };
        match hash_operand(ctx, entry.algo, &entry.name).await? {
            Err(FsError::NotFound) if v.ignore_missing => {}
            Err(e) => {
                ctx.warn(prog, format!("{}: {e}", quotef(&entry.name)))
                    .await;
                tally.unreadable += 1;
                if !v.status {
                    ctx.out(format!("{name}: FAILED open or read\n")).await?;
                }
            }
            Ok(sum) => {
                let ok = sum == Sum::Digest(entry.hex);
                if ok {
                    tally.matched += 1;
                } else {
                    tally.mismatched += 1;
                }
                if !v.status && (!ok || !v.quiet) {
                    let verdict = if ok { "OK" } else { "FAILED" };
                    ctx.out(format!("{name}: {verdict}\n")).await?;
                }
            }
        }
    }
    if tally.formatted == 0 {
        ctx.warn(
            prog,
            format!("{shown}: no properly formatted checksum lines found"),
        )
        .await;
        return Ok(false);
    }
    if !v.status {
        let mut warnings = Vec::new();
        if tally.misformatted > 0 {
            let n = plural(tally.misformatted, "line is", "lines are");
            warnings.push(format!("WARNING: {n} improperly formatted"));
        }
        if tally.unreadable > 0 {
            let n = plural(tally.unreadable, "listed file", "listed files");
            warnings.push(format!("WARNING: {n} could not be read"));
        }
        if tally.mismatched > 0 {
            let n = plural(tally.mismatched, "computed checksum", "computed checksums");
            warnings.push(format!("WARNING: {n} did NOT match"));
        }
        if v.ignore_missing && tally.matched == 0 {
            warnings.push(format!("{shown}: no file was verified"));
        }
        for w in warnings {
            ctx.warn(prog, w).await;
        }
    }
    Ok(tally.mismatched == 0
        && tally.unreadable == 0
        && (!v.strict || tally.misformatted == 0)
        && (!v.ignore_missing || tally.matched > 0))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;
    use crate::testing::{Invocation, MemFs};

    /// The same files on the host (for the GNU tools) and in a [`MemFs`] (for ours).
    struct Fixture {
        dir: PathBuf,
        fs: Arc<MemFs>,
    }

    impl Fixture {
        fn new(tag: &str) -> Fixture {
            let dir =
                std::env::temp_dir().join(format!("forkbox-sum-{}-{tag}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("d")).unwrap();
            let fs = MemFs::new();
            fs.put_dir("d");
            Fixture { dir, fs }
        }

        /// The usual files: plain, empty, binary, and names GNU escapes.
        fn with_files(tag: &str) -> Fixture {
            let fx = Fixture::new(tag);
            fx.put("a", b"hello\n");
            fx.put("empty", b"");
            fx.put("bin", &(0..=255u8).cycle().take(1000).collect::<Vec<_>>());
            fx.put("b\\c", b"x");
            fx.put("n\nl", b"y");
            fx.put("sp ace", b"z");
            fx
        }

        fn put(&self, name: &str, data: &[u8]) {
            std::fs::write(self.dir.join(name), data).unwrap();
            self.fs.put(name, data);
        }

        /// Runs the real `prog`; `None` when it is not installed.
        fn gnu(&self, prog: &str, args: &[&str], stdin: &[u8]) -> Option<(i32, String, String)> {
            use std::io::Write;
            use std::process::{Command, Stdio};
            let mut child = match Command::new(prog)
                .args(args)
                .current_dir(&self.dir)
                .env("LC_ALL", "C")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
            {
                Ok(c) => c,
                // The comparison is the point of the test: a missing tool is a failure
                // (.ci/run installs coreutils).
                Err(e) => panic!("running {prog} (GNU coreutils, needed for this test): {e}"),
            };
            // The tool may exit before reading its input (a usage error).
            let _ = child.stdin.take().unwrap().write_all(stdin);
            let out = child.wait_with_output().unwrap();
            Some((
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ))
        }

        /// Runs our `prog` over the same files.
        async fn ours(&self, prog: &str, args: &[&str], stdin: &[u8]) -> (i32, String, String) {
            let cmd = crate::cmd::all()
                .into_iter()
                .find(|c| c.name() == prog)
                .unwrap();
            Invocation {
                stdin: stdin.to_vec(),
                fs: self.fs.clone(),
                ..Invocation::default()
            }
            .run(cmd.as_ref(), args)
            .await
        }

        /// Runs the real `prog` and writes its stdout to `name` in both worlds.
        fn save(&self, name: &str, prog: &str, args: &[&str]) -> bool {
            match self.gnu(prog, args, b"") {
                Some((_, out, _)) => {
                    self.put(name, out.as_bytes());
                    true
                }
                None => false,
            }
        }

        /// Runs every case through GNU and ours; fails listing each difference.
        async fn compare(&self, cases: &[(&str, &[&str], &str)]) {
            let mut failures = Vec::new();
            for (prog, args, stdin) in cases {
                let Some(want) = self.gnu(prog, args, stdin.as_bytes()) else {
                    continue;
                };
                let got = self.ours(prog, args, stdin.as_bytes()).await;
                if got != want {
                    failures.push(format!(
                        "{prog} {args:?} <<< {stdin:?}\n  gnu:  {want:?}\n  ours: {got:?}"
                    ));
                }
            }
            assert!(failures.is_empty(), "{}", failures.join("\n"));
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    #[tokio::test]
    async fn sums_match_gnu() {
        let fx = Fixture::with_files("sums");
        fx.compare(&[
            ("md5sum", &["a"], ""),
            ("md5sum", &[], "hello\n"),
            ("md5sum", &["-", "a", "-"], "from stdin"),
            (
                "md5sum",
                &["a", "b\\c", "n\nl", "sp ace", "empty", "bin"],
                "",
            ),
            ("md5sum", &["a", "nofile", "d", "empty"], ""),
            ("md5sum", &["-b", "a", "b\\c"], ""),
            ("md5sum", &["-t", "-b", "a"], ""),
            ("md5sum", &["-b", "-t", "a"], ""),
            ("md5sum", &["--tag", "a", "b\\c", "n\nl"], ""),
            ("md5sum", &["-t", "--tag", "a"], ""),
            ("md5sum", &["--tag", "-b", "--tag", "a"], ""),
            ("md5sum", &["--tag", "-t", "--tag", "a"], ""),
            ("md5sum", &["-tb", "a"], ""),
            ("md5sum", &["-bt", "a"], ""),
            ("md5sum", &["-z", "a", "b\\c", "n\nl"], ""),
            ("md5sum", &["-z", "--tag", "n\nl"], ""),
            ("sha1sum", &["a", "bin", "-"], "x"),
            ("sha224sum", &["--tag", "a", "empty"], ""),
            ("sha256sum", &["a", "b\\c", "bin"], ""),
            ("sha256sum", &["--tag"], "stdin\n"),
            ("sha384sum", &["-b", "a", "nofile"], ""),
            ("sha512sum", &["a", "empty", "bin", "d"], ""),
            ("sha512sum", &["--tag", "-z", "a"], ""),
            ("cksum", &["a", "empty", "bin", "sp ace", "b\\c"], ""),
            ("cksum", &[], "hello\n"),
            ("cksum", &["-"], ""),
            ("cksum", &["nofile", "a"], ""),
            ("cksum", &["-a", "crc", "a"], ""),
            ("cksum", &["-a", "md5", "a", "b\\c", "n\nl"], ""),
            ("cksum", &["-a", "sha1"], "stdin"),
            ("cksum", &["-a", "sha256", "--untagged", "a", "b\\c"], ""),
            ("cksum", &["-a", "sha512", "--untagged", "--tag", "bin"], ""),
            ("cksum", &["-a", "sha384", "-z", "a", "n\nl"], ""),
        ])
        .await;
    }

    #[tokio::test]
    async fn usage_errors_match_gnu() {
        let fx = Fixture::with_files("usage");
        fx.compare(&[
            ("md5sum", &["--tag", "-t", "a"], ""),
            ("md5sum", &["-t", "--tag", "-bt", "a"], ""),
            ("md5sum", &["--tag", "-t", "-c", "a"], ""),
            ("md5sum", &["-c", "-z", "--tag", "a"], ""),
            ("md5sum", &["-c", "--tag", "-b", "a"], ""),
            ("md5sum", &["-c", "-b", "a"], ""),
            ("sha256sum", &["-c", "-t", "a"], ""),
            ("md5sum", &["--status", "a"], ""),
            ("md5sum", &["--status", "--warn", "a"], ""),
            ("md5sum", &["--quiet", "--strict", "a"], ""),
            ("md5sum", &["--strict", "--ignore-missing", "a"], ""),
            ("sha1sum", &["-w", "a"], ""),
            ("cksum", &["-a", "crc", "-c", "a"], ""),
            ("cksum", &["-a", "md5", "-c", "-z", "a"], ""),
            ("cksum", &["--status", "a"], ""),
        ])
        .await;
    }

    #[tokio::test]
    async fn checks_match_gnu() {
        let fx = Fixture::with_files("check");
        if !fx.save("sums", "md5sum", &["a", "n\nl", "sp ace", "empty", "bin"])
            || !fx.save("tagged", "sha256sum", &["--tag", "a", "n\nl", "bin"])
            || !fx.save("sha1", "cksum", &["-a", "sha1", "a"])
        {
            return;
        }
        let mut bad = fx.fs.contents("/sums").unwrap();
        bad.extend_from_slice(b"bad line\n");
        bad.extend_from_slice(b"00000000000000000000000000000000  a\n");
        bad.extend_from_slice(b"b1946ac92492d2347c6235b4d2611184  missing\n");
        bad.extend_from_slice(b"b1946ac92492d2347c6235b4d2611184  d\n");
        fx.put("bad", &bad);
        fx.put("garbage", b"garbage\n\n# just a comment\n");
        fx.put("missing", b"b1946ac92492d2347c6235b4d2611184  gone\n");
        fx.put(
            "mixed",
            b"00000000000000000000000000000000  a\nb1946ac92492d2347c6235b4d2611184  gone\n",
        );
        fx.put(
            "partly",
            b"b1946ac92492d2347c6235b4d2611184  a\nb1946ac92492d2347c6235b4d2611184  gone\n",
        );
        fx.put(
            "reversed",
            b"b1946ac92492d2347c6235b4d2611184 a\nb1946ac92492d2347c6235b4d2611184  a\n",
        );
        fx.put(
            "normal",
            b"b1946ac92492d2347c6235b4d2611184  a\nb1946ac92492d2347c6235b4d2611184 a\n",
        );
        fx.put(
            "odd",
            b"  B1946AC92492D2347C6235B4D2611184 *a\r\n#c\n\nMD5(a)= b1946ac92492d2347c6235b4d2611184\n\\b1946ac92492d2347c6235b4d2611184  a\\x\nMD5 (a) =b1946ac92492d2347c6235b4d2611184 \nb1946ac92492d2347c6235b4d2611184\ta",
        );
        fx.put(
            "short",
            b"b1946ac92492d2347c6235b4d2611184  \nb1946ac92492d2347c6235b4d2611184 \n",
        );
        fx.put("stdin", b"b1946ac92492d2347c6235b4d2611184  -\n");
        fx.put("both", b"MD5 (a) = b1946ac92492d2347c6235b4d2611184\nSHA1 (a) = f572d396fae9206628714fb2ce00f72e94f2258f\nSHA256 (a) = 0000000000000000000000000000000000000000000000000000000000000000\n");
        fx.compare(&[
            ("md5sum", &["-c", "sums"], ""),
            ("md5sum", &["--check", "bad"], ""),
            ("md5sum", &["-c", "--quiet", "bad"], ""),
            ("md5sum", &["-c", "--status", "bad"], ""),
            ("md5sum", &["-c", "-w", "bad"], ""),
            ("md5sum", &["-c", "--status", "-w", "bad"], ""),
            ("md5sum", &["-c", "-w", "--status", "bad"], ""),
            ("md5sum", &["-c", "--quiet", "-w", "bad"], ""),
            ("md5sum", &["-c", "--ignore-missing", "bad"], ""),
            ("md5sum", &["-c", "--strict", "bad"], ""),
            (
                "md5sum",
                &["-cc", "--strict", "--quiet", "--strict", "--quiet", "bad"],
                "",
            ),
            ("md5sum", &["-c", "--strict", "--quiet", "sums"], ""),
            ("md5sum", &["-c", "garbage"], ""),
            ("md5sum", &["-c", "--status", "garbage"], ""),
            ("md5sum", &["-c", "--ignore-missing", "missing"], ""),
            (
                "md5sum",
                &["-c", "--ignore-missing", "--status", "missing"],
                "",
            ),
            ("md5sum", &["-c", "--ignore-missing", "mixed"], ""),
            ("md5sum", &["-c", "--ignore-missing", "partly"], ""),
            ("md5sum", &["-c", "partly"], ""),
            ("md5sum", &["-c", "reversed"], ""),
            ("md5sum", &["-c", "normal"], ""),
            ("md5sum", &["-c", "-w", "normal", "reversed"], ""),
            ("md5sum", &["-c", "-w", "odd"], ""),
            ("md5sum", &["-c", "-w", "short"], ""),
            ("md5sum", &["-c", "stdin"], "hello\n"),
            (
                "md5sum",
                &["-c", "-w"],
                "b1946ac92492d2347c6235b4d2611184  -\n",
            ),
            ("md5sum", &["-c"], "b1946ac92492d2347c6235b4d2611184  a\n"),
            (
                "md5sum",
                &["-c", "-", "sums"],
                "b1946ac92492d2347c6235b4d2611184  a\n",
            ),
            ("md5sum", &["-c", "nofile", "sums", "d", "empty"], ""),
            ("md5sum", &["-c", "-w", "tagged"], ""),
            ("sha256sum", &["-c", "tagged"], ""),
            ("sha256sum", &["-c", "-w", "sums"], ""),
            ("sha1sum", &["-c", "sha1"], ""),
            ("cksum", &["-c", "tagged", "sha1"], ""),
            ("cksum", &["-c", "-w", "both", "sums"], ""),
            ("cksum", &["-c", "-w", "sums"], ""),
            ("cksum", &["-a", "md5", "-c", "sums", "both"], ""),
            ("cksum", &["-a", "sha256", "-c", "--quiet", "tagged"], ""),
        ])
        .await;
    }

    /// A file of several MiB streams through every algorithm in many reads.
    #[tokio::test]
    async fn big_files_match_gnu() {
        let fx = Fixture::new("big");
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let data: Vec<u8> = (0..5 * 1024 * 1024 + 17)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        fx.put("big", &data);
        if !fx.save("big.sha256", "sha256sum", &["big"]) {
            return;
        }
        fx.compare(&[
            ("md5sum", &["big"], ""),
            ("sha1sum", &["big"], ""),
            ("sha224sum", &["big"], ""),
            ("sha256sum", &["big"], ""),
            ("sha384sum", &["big"], ""),
            ("sha512sum", &["big"], ""),
            ("cksum", &["big"], ""),
            ("sha256sum", &["-c", "big.sha256"], ""),
        ])
        .await;
    }

    /// Behaviour that GNU versions disagree on, pinned to what we chose.
    #[tokio::test]
    async fn version_dependent_cases() {
        let fx = Fixture::with_files("pinned");
        // GNU 9.1 escapes a name in --check output only when it holds a newline.
        fx.put("esc", b"\\9dd4e461268c8034f5c8564e155c67a6  b\\\\c\n");
        assert_eq!(
            fx.ours("md5sum", &["-c", "esc"], b"").await,
            (0, "b\\c: OK\n".into(), String::new())
        );
        // GNU 9.1 sums a directory as empty; later versions report it.
        assert_eq!(
            fx.ours("cksum", &["d", "empty"], b"").await,
            (
                1,
                "4294967295 0 empty\n".into(),
                "cksum: d: Is a directory\n".into()
            )
        );
        // -z ends CRC lines with NUL too, as documented.
        assert_eq!(
            fx.ours("cksum", &["-z", "a"], b"").await.1,
            "3015617425 6 a\0"
        );
        // Algorithms we do not have are usage errors.
        let (st, out, err) = fx.ours("cksum", &["-a", "blake2b", "a"], b"").await;
        assert_eq!((st, out.as_str()), (1, ""));
        assert!(err.starts_with("cksum: invalid value 'blake2b'"), "{err}");
        // A checksum file that cannot be read.
        assert_eq!(
            fx.ours("md5sum", &["-c", "d"], b"").await,
            (1, String::new(), "md5sum: d: read error\n".into())
        );
    }

    #[test]
    fn parses_check_lines() {
        let hex = "b1946ac92492d2347c6235b4d2611184";
        let mut st = CheckState {
            reversed: None,
            algo: Algo::Md5,
        };
        let entry = |name: &str| {
            Some(Entry {
                algo: Algo::Md5,
                hex: hex.to_string(),
                name: name.to_string(),
            })
        };
        let line = format!("\\MD5 (a\\nb)c) = {}", hex.to_uppercase());
        assert_eq!(
            parse_line(line.as_bytes(), Some(Algo::Md5), &mut st),
            entry("a\nb)c")
        );
        assert_eq!(st.reversed, None);
        let line = format!("{hex} *x\\y");
        assert_eq!(
            parse_line(line.as_bytes(), Some(Algo::Md5), &mut st),
            entry("x\\y")
        );
        assert_eq!(st.reversed, Some(false));
        // Once names follow two characters, a one-space line is refused.
        let line = format!("{hex} x");
        assert_eq!(parse_line(line.as_bytes(), Some(Algo::Md5), &mut st), None);
        let line = format!("\\{hex}  x\\t");
        assert_eq!(parse_line(line.as_bytes(), Some(Algo::Md5), &mut st), None);
        let line = format!("SHA1 (a) = {hex}");
        assert_eq!(parse_line(line.as_bytes(), Some(Algo::Md5), &mut st), None);
        assert_eq!(parse_line(line.as_bytes(), None, &mut st), None);
        let line = format!("MD5 (a) = {hex}");
        assert_eq!(parse_line(line.as_bytes(), None, &mut st), entry("a"));
        // Untagged lines need the algorithm.
        let line = format!("{hex}  a");
        assert_eq!(parse_line(line.as_bytes(), None, &mut st), None);
    }

    #[test]
    fn escapes_round_trip() {
        let name = "a\\b\nc\rd";
        assert!(needs_escape(name));
        assert_eq!(escape(name), "a\\\\b\\nc\\rd");
        assert_eq!(unescape(escape(name).as_bytes()).unwrap(), name.as_bytes());
        assert_eq!(unescape(b"trailing\\"), None);
        assert!(!needs_escape("plain name"));
    }

    #[tokio::test]
    async fn a_check_line_over_the_budget_is_out_of_memory() {
        let fs = MemFs::with_files(&[("/a", "hello\n")]);
        let long = format!("{}  a\n", "0".repeat(4 * crate::testing::TINY_BUDGET));
        fs.put("/sums", long.as_bytes());
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        inv.out_of_memory(&Md5sum, &["-c", "sums"], crate::testing::TINY_BUDGET)
            .await;
        fs.put("/sums", b"b1946ac92492d2347c6235b4d2611184  a\n");
        assert_eq!(
            inv.run(&Md5sum, &["-c", "sums"]).await,
            (0, "a: OK\n".into(), String::new())
        );
    }
}

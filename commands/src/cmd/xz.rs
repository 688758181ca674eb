//! `xz`, `unxz`, `xzcat`: compress or expand files in the .xz format (through the
//! pure-Rust `lzma-rust2` crate), worded as XZ Utils words things: `FILE` becomes
//! `FILE.xz` (and back), keeping its mode and modification time; `-c` writes to stdout;
//! no operand (or `-`) filters stdin. The compressed bytes are lzma-rust2's, not
//! liblzma's: equal content, different encoding. The engine is [`super::codec`].

use super::codec::{self, Early, Format, Opts, Word, Words, codec_command};

const HELP: &str = "Usage: xz [OPTION]... [FILE]...
Compress or decompress FILEs in the .xz format.

  -z, --compress      force compression
  -d, --decompress    force decompression
  -t, --test          test compressed file integrity
  -k, --keep          keep (don't delete) input files
  -f, --force         force overwrite of output file and (de)compress links
  -c, --stdout        write to standard output and don't delete input files
  -0 ... -9           compression preset; default is 6; take compressor *and*
                      decompressor memory usage into account before using 7-9!
  -e, --extreme       try to improve compression ratio by using more CPU time;
                      does not affect decompressor memory requirements
  -T, --threads=NUM   use at most NUM threads; the default is 1; set to 0
                      to use as many threads as there are processor cores
  -q, --quiet         suppress warnings; specify twice to suppress errors too
  -v, --verbose       be verbose; specify twice for even more verbose
  -h, --help          display this short help and exit
  -V, --version       display the version number and exit

With no FILE, or when FILE is -, read standard input.
";

/// xz's options (GNU getopt style: anywhere among the files, `--` ends them).
fn parse(prog: &str, args: &[String]) -> Result<Opts, Early> {
    let mut o = Opts {
        level: 6,
        ..Opts::default()
    };
    let help = || Early::out(HELP.replace("Usage: xz", &format!("Usage: {prog}")), 0);
    let version = || Early::out(format!("{prog} (XZ Utils, forkbox)\n"), 0);
    let bad = |msg: String| {
        Early::err(
            format!("{msg}\n{prog}: Try `{prog} --help' for more information.\n"),
            1,
        )
    };
    let mut words = Words::new(args);
    while let Some(w) = words.next() {
        match w {
            Word::Operand(f) => o.files.push(f.clone()),
            Word::Long(long, a) => {
                let (key, value) = match long.split_once('=') {
                    Some((k, v)) => (k, Some(v)),
                    None => (long, None),
                };
                match key {
                    "help" | "long-help" => return Err(help()),
                    "version" => return Err(version()),
                    "compress" => o.decompress = false,
                    "decompress" | "uncompress" => o.decompress = true,
                    "test" => o.test = true,
                    "keep" => o.keep = true,
                    "force" => o.force = true,
                    "stdout" | "to-stdout" => o.stdout = true,
                    "quiet" => o.quiet = true,
                    "verbose" | "extreme" | "no-warn" => {}
                    "fast" => o.level = 0,
                    "best" => o.level = 9,
                    "threads" | "format" | "check" | "memlimit" => {
                        if value.is_none() && words.value().is_none() {
                            return Err(bad(format!("{prog}: option '{a}' requires an argument")));
                        }
                    }
                    _ => return Err(bad(format!("{prog}: unrecognized option '{a}'"))),
                }
            }
            Word::Short(letters, _) => {
                let mut chars = letters.chars();
                while let Some(c) = chars.next() {
                    match c {
                        'h' | 'H' => return Err(help()),
                        'V' => return Err(version()),
                        'z' => o.decompress = false,
                        'd' => o.decompress = true,
                        't' => o.test = true,
                        'k' => o.keep = true,
                        'f' => o.force = true,
                        'c' => o.stdout = true,
                        'q' => o.quiet = true,
                        'v' | 'e' => {}
                        '0'..='9' => o.level = c.to_digit(10).unwrap_or(6),
                        'T' | 'F' | 'C' | 'M' => {
                            // The value is the rest of the word, or the next word.
                            if chars.as_str().is_empty() && words.value().is_none() {
                                return Err(bad(format!(
                                    "{prog}: option requires an argument -- '{c}'"
                                )));
                            }
                            break;
                        }
                        _ => return Err(bad(format!("{prog}: invalid option -- '{c}'"))),
                    }
                }
            }
        }
    }
    Ok(o)
}

codec_command!(parse, |ctx, prog, o| codec::run(ctx, prog, Format::Xz, o);
    Xz("xz", "compress or expand files (.xz)", decompress: false, stdout: false);
    Unxz("unxz", "expand .xz files", decompress: true, stdout: false);
    Xzcat("xzcat", "expand .xz files to stdout", decompress: true, stdout: true);
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test(flavor = "multi_thread")]
    async fn round_trip_in_place_and_xzs_refusals() {
        let fs = MemFs::with_files(&[("/f", "hello hello hello\n")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        assert_eq!(
            inv.run(&Xz, &["-k", "f"]).await,
            (0, String::new(), String::new())
        );
        assert!(fs.exists("/f"));
        let (st, out, _) = inv.run(&Xzcat, &["f.xz"]).await;
        assert_eq!((st, out.as_str()), (0, "hello hello hello\n"));
        let (st, _, err) = inv.run(&Unxz, &["f.xz"]).await;
        assert_eq!((st, err.as_str()), (1, "unxz: f: File exists\n"));
        let (st, _, err) = inv.run(&Xz, &["-d", "f"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "xz: f: File format not recognized\n")
        );
        let (st, _, err) = inv.run(&Xz, &["f.xz"]).await;
        assert_eq!(
            (st, err.as_str()),
            (2, "xz: f.xz: File already has `.xz' suffix, skipping\n")
        );
        assert_eq!(inv.run(&Unxz, &["-f", "f.xz"]).await.0, 0);
        assert!(!fs.exists("/f.xz"));
        let (st, _, err) = inv.run(&Xz, &["-x"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "xz: invalid option -- 'x'\nxz: Try `xz --help' for more information.\n"
            )
        );
    }
}

//! `bzip2`, `bunzip2`, `bzcat`: compress or expand files in the bzip2 format (through
//! the `bzip2` crate's pure-Rust libbzip2), worded as bzip2 1.0.8 words things: `FILE`
//! becomes `FILE.bz2` (and back), keeping its mode and modification time; `-c` writes to
//! stdout; no operand (or `-`) filters stdin. The engine is [`super::codec`].

use super::codec::{self, Early, Format, Opts, Word, Words, codec_command};

const HELP: &str = "bzip2, a block-sorting file compressor.  Version 1.0.8, 13-Jul-2019.

   usage: bzip2 [flags and input files in any order]

   -h --help           print this message
   -d --decompress     force decompression
   -z --compress       force compression
   -k --keep           keep (don't delete) input files
   -f --force          overwrite existing output files
   -t --test           test compressed file integrity
   -c --stdout         output to standard out
   -q --quiet          suppress noncritical error messages
   -v --verbose        be verbose (a 2nd -v gives more)
   -L --license        display software version & license
   -V --version        display software version & license
   -s --small          use less memory (at most 2500k)
   -1 .. -9            set block size to 100k .. 900k
   --fast              alias for -1
   --best              alias for -9

   If invoked as `bzip2', default action is to compress.
              as `bunzip2',  default action is to decompress.
              as `bzcat', default action is to decompress to stdout.

   If no file names are given, bzip2 compresses or decompresses
   from standard input to standard output.  You can combine
   short flags, so `-v -4' means the same as -v4 or -4v, &c.

";

/// bzip2's flags, in any order among the files; `--` ends them. `--help` and a bad flag
/// are answered on stderr, as bzip2 does.
fn parse(prog: &str, args: &[String]) -> Result<Opts, Early> {
    let mut o = Opts {
        level: 9,
        ..Opts::default()
    };
    let help = || Early::err(HELP, 0);
    let bad = |a: &str| Early::err(format!("{prog}: Bad flag `{a}'\n{HELP}"), 1);
    for w in Words::new(args) {
        match w {
            Word::Operand(f) => o.files.push(f.clone()),
            Word::Long(long, a) => match long {
                "help" | "license" | "version" => return Err(help()),
                "decompress" => o.decompress = true,
                "compress" => o.decompress = false,
                "keep" => o.keep = true,
                "force" => o.force = true,
                "test" => o.test = true,
                "stdout" => o.stdout = true,
                "quiet" => o.quiet = true,
                "verbose" | "small" | "repetitive-fast" | "repetitive-best" => {}
                "fast" => o.level = 1,
                "best" => o.level = 9,
                _ => return Err(bad(a)),
            },
            Word::Short(letters, a) => {
                for c in letters.chars() {
                    match c {
                        'h' | 'L' | 'V' => return Err(help()),
                        'd' => o.decompress = true,
                        'z' => o.decompress = false,
                        'k' => o.keep = true,
                        'f' => o.force = true,
                        't' => o.test = true,
                        'c' => o.stdout = true,
                        'q' => o.quiet = true,
                        'v' | 's' => {}
                        '1'..='9' => o.level = c.to_digit(10).unwrap_or(9),
                        _ => return Err(bad(a)),
                    }
                }
            }
        }
    }
    Ok(o)
}

codec_command!(parse, |ctx, prog, o| codec::run(ctx, prog, Format::Bzip2, o);
    Bzip2("bzip2", "compress or expand files (bzip2)", decompress: false, stdout: false);
    Bunzip2("bunzip2", "expand bzip2 files", decompress: true, stdout: false);
    Bzcat("bzcat", "expand bzip2 files to stdout", decompress: true, stdout: true);
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test(flavor = "multi_thread")]
    async fn round_trip_in_place_and_gnus_refusals() {
        let fs = MemFs::with_files(&[("/f", "hello hello hello\n")]);
        fs.set_mtime_secs("/f", 1_577_836_800);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        assert_eq!(
            inv.run(&Bzip2, &["f"]).await,
            (0, String::new(), String::new())
        );
        assert!(!fs.exists("/f"));
        assert!(
            fs.contents("/f.bz2")
                .unwrap_or_default()
                .starts_with(b"BZh9")
        );
        let (st, out, _) = inv.run(&Bzcat, &["f.bz2"]).await;
        assert_eq!((st, out.as_str()), (0, "hello hello hello\n"));
        assert_eq!(inv.run(&Bunzip2, &["-k", "f.bz2"]).await.0, 0);
        assert_eq!(fs.text("/f").as_deref(), Some("hello hello hello\n"));
        let (st, _, err) = inv.run(&Bzip2, &["f"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "bzip2: Output file f.bz2 already exists.\n")
        );
        let (st, _, err) = inv.run(&Bzcat, &["f"]).await;
        assert_eq!((st, err.as_str()), (2, "bzcat: f is not a bzip2 file.\n"));
        let (st, _, err) = inv.run(&Bzip2, &["nope"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                1,
                "bzip2: Can't open input file nope: No such file or directory.\n"
            )
        );
        let (st, _, err) = inv.run(&Bzip2, &["-x"]).await;
        assert_eq!(st, 1);
        assert!(err.starts_with("bzip2: Bad flag `-x'\n"));
    }
}

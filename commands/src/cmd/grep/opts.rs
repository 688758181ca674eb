//! grep's command line, read the way GNU's getopt_long reads it: options anywhere among
//! the operands (`grep pat file -n`), clustered short options with attached values
//! (`-m1`, `-A1`, `-inm2`), `-NUM` for context, long options with `=` or a separate
//! value, unambiguous abbreviations (`--count` as `--cou`), `--` ending the options.
//! Messages and the order of an ambiguity's possibilities are GNU grep 3.8's.

/// An option's value, as getopt sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum HasArg {
    No,
    Required,
    Optional,
}

/// What an option does; short options are their letter.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Key {
    Short(char),
    BinaryFiles,
    Color,
    Exclude,
    ExcludeFrom,
    ExcludeDir,
    GroupSeparator,
    NoGroupSeparator,
    Help,
    Include,
    NoIgnoreCase,
    Label,
    LineBuffered,
}

/// grep's long options, in GNU's table order (it decides how ambiguities are listed).
const LONG: &[(&str, HasArg, Key)] = &[
    ("basic-regexp", HasArg::No, Key::Short('G')),
    ("extended-regexp", HasArg::No, Key::Short('E')),
    ("fixed-regexp", HasArg::No, Key::Short('F')),
    ("fixed-strings", HasArg::No, Key::Short('F')),
    ("perl-regexp", HasArg::No, Key::Short('P')),
    ("after-context", HasArg::Required, Key::Short('A')),
    ("before-context", HasArg::Required, Key::Short('B')),
    ("binary-files", HasArg::Required, Key::BinaryFiles),
    ("byte-offset", HasArg::No, Key::Short('b')),
    ("context", HasArg::Required, Key::Short('C')),
    ("color", HasArg::Optional, Key::Color),
    ("colour", HasArg::Optional, Key::Color),
    ("count", HasArg::No, Key::Short('c')),
    ("devices", HasArg::Required, Key::Short('D')),
    ("directories", HasArg::Required, Key::Short('d')),
    ("dereference-recursive", HasArg::No, Key::Short('R')),
    ("exclude", HasArg::Required, Key::Exclude),
    ("exclude-from", HasArg::Required, Key::ExcludeFrom),
    ("exclude-dir", HasArg::Required, Key::ExcludeDir),
    ("file", HasArg::Required, Key::Short('f')),
    ("files-with-matches", HasArg::No, Key::Short('l')),
    ("files-without-match", HasArg::No, Key::Short('L')),
    ("group-separator", HasArg::Required, Key::GroupSeparator),
    ("help", HasArg::No, Key::Help),
    ("include", HasArg::Required, Key::Include),
    ("ignore-case", HasArg::No, Key::Short('i')),
    ("no-ignore-case", HasArg::No, Key::NoIgnoreCase),
    ("initial-tab", HasArg::No, Key::Short('T')),
    ("label", HasArg::Required, Key::Label),
    ("line-buffered", HasArg::No, Key::LineBuffered),
    ("line-number", HasArg::No, Key::Short('n')),
    ("line-regexp", HasArg::No, Key::Short('x')),
    ("max-count", HasArg::Required, Key::Short('m')),
    ("no-filename", HasArg::No, Key::Short('h')),
    ("no-group-separator", HasArg::No, Key::NoGroupSeparator),
    ("no-messages", HasArg::No, Key::Short('s')),
    ("null", HasArg::No, Key::Short('Z')),
    ("null-data", HasArg::No, Key::Short('z')),
    ("only-matching", HasArg::No, Key::Short('o')),
    ("quiet", HasArg::No, Key::Short('q')),
    ("recursive", HasArg::No, Key::Short('r')),
    ("regexp", HasArg::Required, Key::Short('e')),
    ("invert-match", HasArg::No, Key::Short('v')),
    ("silent", HasArg::No, Key::Short('q')),
    ("text", HasArg::No, Key::Short('a')),
    ("binary", HasArg::No, Key::Short('U')),
    ("unix-byte-offsets", HasArg::No, Key::Short('u')),
    ("version", HasArg::No, Key::Short('V')),
    ("with-filename", HasArg::No, Key::Short('H')),
    ("word-regexp", HasArg::No, Key::Short('w')),
];

/// Short options that take a value (getopt's `X:`).
const SHORT_WITH_VALUE: &str = "ABCDXdefm";
/// Short options without one.
const SHORT_FLAGS: &str = "EFGHIPTUVZabchiLlnoqRrsuvwxyz";

/// One option as parsed, with its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Opt {
    pub key: Key,
    pub value: Option<String>,
}

/// The command line: options in order, then operands in order.
#[derive(Debug, Default)]
pub(super) struct Line {
    pub opts: Vec<Opt>,
    pub operands: Vec<String>,
}

/// A usage error, worded as GNU's getopt words it (without the `grep: ` prefix).
/// `permute`: options may follow operands (not so under `POSIXLY_CORRECT`, where the
/// first operand ends the options).
pub(super) fn parse(args: &[String], permute: bool) -> Result<Line, String> {
    let mut line = Line::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            line.operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, attached) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let (full, has, key) = lookup(name, a)?;
            let value = match (has, attached) {
                (HasArg::No, Some(_)) => {
                    return Err(format!("option '--{full}' doesn't allow an argument"));
                }
                (HasArg::No, None) => None,
                (HasArg::Optional, v) => v,
                (HasArg::Required, Some(v)) => Some(v),
                (HasArg::Required, None) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => return Err(format!("option '--{full}' requires an argument")),
                },
            };
            line.opts.push(Opt { key, value });
            continue;
        }
        if a.len() < 2 || !a.starts_with('-') {
            line.operands.push(a.clone());
            if !permute {
                line.operands.extend(args[i..].iter().cloned());
                break;
            }
            continue;
        }
        // A cluster of short options; digits make up a -NUM context.
        let chars: Vec<char> = a.chars().skip(1).collect();
        let mut digits = String::new();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            k += 1;
            if c.is_ascii_digit() {
                digits.push(c);
                continue;
            }
            if !digits.is_empty() {
                line.opts.push(Opt {
                    key: Key::Short('C'),
                    value: Some(std::mem::take(&mut digits)),
                });
            }
            if SHORT_WITH_VALUE.contains(c) {
                let rest: String = chars[k..].iter().collect();
                let value = if !rest.is_empty() {
                    rest
                } else if let Some(v) = args.get(i) {
                    i += 1;
                    v.clone()
                } else {
                    return Err(format!("option requires an argument -- '{c}'"));
                };
                line.opts.push(Opt {
                    key: Key::Short(c),
                    value: Some(value),
                });
                k = chars.len();
            } else if SHORT_FLAGS.contains(c) {
                line.opts.push(Opt {
                    key: Key::Short(c),
                    value: None,
                });
            } else {
                return Err(format!("invalid option -- '{c}'"));
            }
        }
        if !digits.is_empty() {
            line.opts.push(Opt {
                key: Key::Short('C'),
                value: Some(digits),
            });
        }
    }
    Ok(line)
}

/// Finds a long option by its name or an unambiguous prefix of it.
fn lookup(name: &str, arg: &str) -> Result<(&'static str, HasArg, Key), String> {
    // getopt names the whole argument, `=value` included.
    let shown = arg;
    if let Some(&(full, has, key)) = LONG.iter().find(|(n, ..)| *n == name) {
        return Ok((full, has, key));
    }
    let found: Vec<&(&str, HasArg, Key)> =
        LONG.iter().filter(|(n, ..)| n.starts_with(name)).collect();
    let Some(&&first) = found.first() else {
        return Err(format!("unrecognized option '{shown}'"));
    };
    let others: Vec<&&(&str, HasArg, Key)> = found[1..]
        .iter()
        .filter(|(_, has, key)| (*has, *key) != (first.1, first.2))
        .collect();
    if others.is_empty() || name.is_empty() {
        if name.is_empty() {
            return Err(format!("unrecognized option '{shown}'"));
        }
        return Ok(first);
    }
    let mut msg = format!(
        "option '{shown}' is ambiguous; possibilities: '--{}'",
        first.0
    );
    for o in others {
        msg.push_str(&format!(" '--{}'", o.0));
    }
    Err(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Line, String> {
        parse(
            &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            true,
        )
    }

    fn keys(l: &Line) -> Vec<(Key, Option<&str>)> {
        l.opts.iter().map(|o| (o.key, o.value.as_deref())).collect()
    }

    #[test]
    fn permutes_and_attaches() {
        let l = p(&["pat", "file", "-n", "-m1", "-A", "2", "-inC3"]).expect("parses");
        assert_eq!(l.operands, ["pat", "file"]);
        assert_eq!(
            keys(&l),
            [
                (Key::Short('n'), None),
                (Key::Short('m'), Some("1")),
                (Key::Short('A'), Some("2")),
                (Key::Short('i'), None),
                (Key::Short('n'), None),
                (Key::Short('C'), Some("3")),
            ]
        );
        let l = p(&["-5", "x", "--", "-n", "-"]).expect("parses");
        assert_eq!(keys(&l), [(Key::Short('C'), Some("5"))]);
        assert_eq!(l.operands, ["x", "-n", "-"]);
    }

    #[test]
    fn long_options() {
        let l = p(&[
            "--include=*.py",
            "--exclude-dir",
            "node_modules",
            "--cou",
            "--color",
        ])
        .expect("parses");
        assert_eq!(
            keys(&l),
            [
                (Key::Include, Some("*.py")),
                (Key::ExcludeDir, Some("node_modules")),
                (Key::Short('c'), None),
                (Key::Color, None),
            ]
        );
        // Equal entries (`--col` is color or colour) are no ambiguity.
        assert_eq!(
            keys(&p(&["--col=never"]).expect("parses")),
            [(Key::Color, Some("never"))]
        );
        assert_eq!(
            keys(&p(&["--fixed"]).expect("parses")),
            [(Key::Short('F'), None)]
        );
    }

    #[test]
    fn gnu_errors() {
        assert_eq!(p(&["-k"]).unwrap_err(), "invalid option -- 'k'");
        assert_eq!(p(&["--foo"]).unwrap_err(), "unrecognized option '--foo'");
        assert_eq!(
            p(&["-e"]).unwrap_err(),
            "option requires an argument -- 'e'"
        );
        assert_eq!(
            p(&["--file"]).unwrap_err(),
            "option '--file' requires an argument"
        );
        assert_eq!(
            p(&["--count=3"]).unwrap_err(),
            "option '--count' doesn't allow an argument"
        );
        assert_eq!(
            p(&["--co", "x"]).unwrap_err(),
            "option '--co' is ambiguous; possibilities: '--context' '--color' '--colour' '--count'"
        );
        assert_eq!(
            p(&["--fi"]).unwrap_err(),
            "option '--fi' is ambiguous; possibilities: '--fixed-regexp' '--file' '--files-with-matches' '--files-without-match'"
        );
    }
}

//! GNU jq's command line over jaq 1.6's (the `jq` tool's `args_adapter = "jq"`).
//!
//! jaq 1.6 (the newest jaq whose CLI builds for wasm32-wasip1) lacks two flags scripts use
//! a lot: `--argjson NAME JSON` and `-S`/`--sort-keys`. Both are expressible in the filter
//! itself, so the adapter rewrites the command line instead of the guest: each
//! `--argjson NAME JSON` becomes `(JSON) as $NAME | ` before the filter, and `-S` wraps
//! the filter's output in a `walk` that sorts object keys. Combined short flags (`-rS`)
//! are split first. Everything else goes to jaq unchanged.

/// Options of jq that take values, with how many.
const WITH_VALUES: &[(&str, usize)] = &[
    ("--arg", 2),
    ("--argjson", 2),
    ("--slurpfile", 2),
    ("--rawfile", 2),
    ("--indent", 1),
    ("-f", 1),
    ("--from-file", 1),
    ("-L", 1),
];

/// jq's short flags that take no value (what may be combined, as in `-rc`).
const SHORT_FLAGS: &str = "nrjacCMSseh";

/// The sorting `walk` for `-S` (jaq 1.6 keeps object keys in insertion order).
const SORT_KEYS: &str = "def forkbox_sort_keys: if type == \"object\" then to_entries | \
     sort_by(.key) | map(.value |= forkbox_sort_keys) | from_entries elif type == \"array\" \
     then map(forkbox_sort_keys) else . end;";

/// The two lines jq 1.6 ends every command-line error with (its `die()`), status 2.
const JQ_DIE: &str = "Use jq --help for help with command-line options,\n\
     or see the jq manpage, or online docs  at https://stedolan.github.io/jq\n";

/// The status jq gives a command-line error.
pub const STATUS_USAGE: i32 = 2;

/// jq 1.6's long options (`--NAME`) that take no value.
const JQ_LONG: &[&str] = &[
    "slurp",
    "raw-output",
    "join-output",
    "ascii-output",
    "tab",
    "compact-output",
    "color-output",
    "monochrome-output",
    "null-input",
    "from-file",
    "unbuffered",
    "sort-keys",
    "raw-input",
    "seq",
    "stream",
    "stream-errors",
    "exit-status",
    "args",
    "jsonargs",
    "debug-dump-disasm",
    "debug-trace",
    "debug-trace=all",
    "help",
    "version",
    "run-tests",
];

/// jq 1.6's short options (what `-rc` may combine).
const JQ_SHORT: &str = "srjacCMSRnfehV";

/// The error jq 1.6 gives for this command line before it reads any input, in its words
/// (stderr, then status [`STATUS_USAGE`]); `None` when jq would accept it. jq checks its
/// arguments in order and stops at the first fault: an option it does not know, `--arg`,
/// `--argjson`, `--slurpfile`/`--rawfile`/`--argfile` without their two values,
/// `--argjson` whose text is not one JSON value, `--indent` without a value or outside
/// -1..7. Everything past those checks is left to jaq.
pub fn cli_error(args: &[String]) -> Option<String> {
    let mut bound: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let text = args[i].as_str();
        if text == "--" {
            // Operands follow (jq 1.6 wants a filter before it, which jaq also says).
            return None;
        }
        let bytes = text.as_bytes();
        // jq's `isoptarg`: `-` then `-` or a letter; anything else is an operand.
        let is_option = bytes.first() == Some(&b'-')
            && bytes
                .get(1)
                .is_some_and(|b| *b == b'-' || b.is_ascii_alphabetic());
        if !is_option {
            i += 1;
            continue;
        }
        let left = args.len() - i - 1;
        let die = |first: String| Some(format!("jq: {first}\n{JQ_DIE}"));
        if let Some(long) = text.strip_prefix("--") {
            match long {
                "arg" | "argjson" => {
                    if left < 2 {
                        let what = if long == "arg" { "value" } else { "text" };
                        return die(format!(
                            "--{long} takes two parameters (e.g. --{long} varname {what})"
                        ));
                    }
                    let name = args[i + 1].as_str();
                    // The first binding of a name wins; a later one is not even parsed.
                    if long == "argjson" && !bound.contains(&name) && !one_json_value(&args[i + 2])
                    {
                        return die("invalid JSON text passed to --argjson".into());
                    }
                    bound.push(name);
                    i += 3;
                }
                "slurpfile" | "rawfile" | "argfile" => {
                    if left < 2 {
                        return die(format!(
                            "--{long} takes two parameters (e.g. --{long} varname filename)"
                        ));
                    }
                    // jq reads the file here; jaq reports a missing one itself.
                    return None;
                }
                "indent" => {
                    if left < 1 {
                        return die("--indent takes one parameter".into());
                    }
                    // jq reads the number with `atoi`: leading digits, else 0.
                    if !(-1..=7).contains(&atoi(&args[i + 1])) {
                        return die("--indent takes a number between -1 and 7".into());
                    }
                    i += 2;
                }
                _ if JQ_LONG.contains(&long) => i += 1,
                _ => return die(format!("Unknown option {text}")),
            }
            continue;
        }
        if bytes[1] == b'L' {
            // `-L DIR` / `-LDIR`: jaq does not know it; left to it.
            return None;
        }
        // Combined short options: each letter must be one of jq's, and each may appear
        // once (jq counts the distinct letters it recognises against the length).
        let letters = &text[1..];
        let known = JQ_SHORT.chars().filter(|c| letters.contains(*c)).count();
        if known != letters.len() {
            return die(format!("Unknown option {text}"));
        }
        i += 1;
    }
    None
}

/// C's `atoi`: optional blanks and sign, then the leading digits; 0 without any.
fn atoi(s: &str) -> i64 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut n: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if neg { -n } else { n }
}

/// Whether `text` is exactly one JSON value (blanks around it allowed), as jq's parser
/// takes `--argjson` text.
fn one_json_value(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// Rewrites GNU jq arguments for jaq 1.6. `None` when there is nothing to rewrite.
pub fn adapt(args: &[String]) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut bindings: Vec<(String, String)> = Vec::new();
    let mut sort = false;
    let mut filter_at: Option<usize> = None;
    let mut from_file = false;
    let mut i = 0;
    let mut options_done = false;
    while i < args.len() {
        let a = &args[i];
        if options_done || !a.starts_with('-') || a == "-" {
            if filter_at.is_none() && !from_file {
                filter_at = Some(out.len());
            }
            out.push(a.clone());
            i += 1;
            continue;
        }
        if a == "--" {
            options_done = true;
            out.push(a.clone());
            i += 1;
            continue;
        }
        if a == "-S" || a == "--sort-keys" {
            sort = true;
            i += 1;
            continue;
        }
        if a == "--argjson" {
            if i + 2 >= args.len() {
                // Let jaq report the missing value.
                out.extend(args[i..].iter().cloned());
                break;
            }
            bindings.push((args[i + 1].clone(), args[i + 2].clone()));
            i += 3;
            continue;
        }
        if let Some((_, n)) = WITH_VALUES.iter().find(|(o, _)| o == a) {
            if a == "-f" || a == "--from-file" {
                from_file = true;
            }
            let end = (i + 1 + n).min(args.len());
            out.extend(args[i..end].iter().cloned());
            i = end;
            continue;
        }
        let short = a.strip_prefix('-').filter(|s| !s.starts_with('-'));
        if let Some(flags) =
            short.filter(|f| f.len() > 1 && f.chars().all(|c| SHORT_FLAGS.contains(c)))
        {
            for c in flags.chars() {
                if c == 'S' {
                    sort = true;
                } else {
                    out.push(format!("-{c}"));
                }
            }
            i += 1;
            continue;
        }
        out.push(a.clone());
        i += 1;
    }
    if bindings.is_empty() && !sort {
        return None;
    }
    let Some(at) = filter_at else {
        // No filter on the command line (`-f FILE`, or none): nothing to rewrite into.
        return Some(out);
    };
    let mut filter = String::new();
    if sort {
        filter.push_str(SORT_KEYS);
        filter.push(' ');
    }
    for (name, json) in &bindings {
        filter.push_str(&format!("({json}) as ${name} | "));
    }
    if sort {
        filter.push_str(&format!("(({}) | forkbox_sort_keys)", out[at]));
    } else {
        filter.push_str(&format!("({})", out[at]));
    }
    out[at] = filter;
    Some(out)
}

/// Whether a GNU jq command line reads no input (`-n`, `--null-input`) and whether it
/// slurps it (`-s`, `--slurp`), short flags combined or not.
pub fn input_flags(args: &[String]) -> (bool, bool) {
    let (mut null_input, mut slurp) = (false, false);
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if a == "--" {
            break;
        }
        match a {
            "--null-input" => null_input = true,
            "--slurp" => slurp = true,
            _ if a.starts_with("--") => {
                if let Some((_, n)) = WITH_VALUES.iter().find(|(o, _)| *o == a) {
                    i += n;
                }
            }
            _ => {
                if let Some(flags) = a
                    .strip_prefix('-')
                    .filter(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_alphabetic()))
                {
                    null_input |= flags.contains('n');
                    slurp |= flags.contains('s');
                    if let Some((_, n)) = WITH_VALUES.iter().find(|(o, _)| *o == a) {
                        i += n;
                    }
                }
            }
        }
    }
    (null_input, slurp)
}

/// The filter and the input files of a GNU jq command line: the first operand is the
/// filter (unless `-f` gave it), the rest are files (none after `--args`/`--jsonargs`,
/// whose operands are values).
pub fn filter_and_files(args: &[String]) -> (Option<String>, Vec<String>) {
    let mut filter = None;
    let mut files = Vec::new();
    let mut from_file = false;
    let mut operands_are_values = false;
    let mut options_done = false;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if options_done || !a.starts_with('-') || a == "-" {
            if filter.is_none() && !from_file {
                filter = Some(a.clone());
            } else if !operands_are_values {
                files.push(a.clone());
            }
            continue;
        }
        match a.as_str() {
            "--" => options_done = true,
            "--args" | "--jsonargs" => operands_are_values = true,
            "-f" | "--from-file" => from_file = true,
            _ => {}
        }
        if let Some((_, n)) = WITH_VALUES.iter().find(|(o, _)| o == a) {
            i += n;
        }
    }
    (filter, files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_filter_and_the_files_are_found() {
        assert_eq!(
            filter_and_files(&v(&["-r", "--arg", "a", "b", ".x", "f1", "f2"])),
            (Some(".x".to_string()), v(&["f1", "f2"]))
        );
        assert_eq!(
            filter_and_files(&v(&["-f", "prog.jq", "in.json"])),
            (None, v(&["in.json"]))
        );
        assert_eq!(
            filter_and_files(&v(&["-n", "$ARGS", "--args", "a"])),
            (Some("$ARGS".to_string()), v(&[]))
        );
    }

    /// The first lines jq 1.6 (Debian's) writes for these command lines, each followed
    /// by its two `Use jq --help` lines and status 2.
    #[test]
    fn command_line_errors_are_jq_16s() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["--arg"],
                "--arg takes two parameters (e.g. --arg varname value)",
            ),
            (
                &["-n", "--arg", "x", "1", "--arg"],
                "--arg takes two parameters (e.g. --arg varname value)",
            ),
            (
                &["--argjson", "x"],
                "--argjson takes two parameters (e.g. --argjson varname text)",
            ),
            (
                &["-n", "--argjson", "x", "{bad", "$x"],
                "invalid JSON text passed to --argjson",
            ),
            (
                &["-n", "--argjson", "x", "1 2", "$x"],
                "invalid JSON text passed to --argjson",
            ),
            (
                &["-n", "--argjson", "x", "", "$x"],
                "invalid JSON text passed to --argjson",
            ),
            (
                &["-n", "--argjson", "x", "nan", "$x"],
                "invalid JSON text passed to --argjson",
            ),
            (
                &["--slurpfile", "x"],
                "--slurpfile takes two parameters (e.g. --slurpfile varname filename)",
            ),
            (
                &["--rawfile", "x"],
                "--rawfile takes two parameters (e.g. --rawfile varname filename)",
            ),
            (&["--indent"], "--indent takes one parameter"),
            (
                &["--indent", "9", "."],
                "--indent takes a number between -1 and 7",
            ),
            (&["-Z", "."], "Unknown option -Z"),
            (&["-rZ", "."], "Unknown option -rZ"),
            (&["--tab", "-n", "1", "--xyz"], "Unknown option --xyz"),
            (&["--badflag", "."], "Unknown option --badflag"),
        ];
        for (args, first) in cases {
            assert_eq!(
                cli_error(&v(args)).as_deref(),
                Some(format!("jq: {first}\n{JQ_DIE}").as_str()),
                "{args:?}"
            );
        }
        for ok in [
            &["-rc", ".a", "f.json"][..],
            &["-n", "--argjson", "x", " {\"a\": [1e400]} ", "$x"],
            // Only the first binding of a name is parsed.
            &["-n", "--argjson", "x", "1", "--argjson", "x", "{", "$x"],
            &["--indent", "3", "."],
            &["--indent", "-1", "."],
            &["-n", "-1"],
            &["--", "--xyz"],
            &["-e", "--tab", "--sort-keys", "-S", "."],
        ] {
            assert_eq!(cli_error(&v(ok)), None, "{ok:?}");
        }
    }

    #[test]
    fn null_input_and_slurp_are_found() {
        assert_eq!(input_flags(&v(&["-n", "."])), (true, false));
        assert_eq!(input_flags(&v(&["-rsc", "."])), (false, true));
        assert_eq!(input_flags(&v(&["--slurp", "--null-input"])), (true, true));
        // Values of options are not flags.
        assert_eq!(input_flags(&v(&["--arg", "-n", "-s", "."])), (false, false));
        assert_eq!(input_flags(&v(&[".", "--", "-n"])), (false, false));
    }

    #[test]
    fn plain_arguments_are_left_alone() {
        assert_eq!(adapt(&v(&["-r", ".a", "f.json"])), None);
        assert_eq!(adapt(&v(&["--arg", "x", "1", "$x"])), None);
    }

    #[test]
    fn argjson_becomes_a_binding() {
        assert_eq!(
            adapt(&v(&["-n", "--argjson", "y", "{\"z\":1}", "[$y]"])).unwrap(),
            v(&["-n", "({\"z\":1}) as $y | ([$y])"])
        );
    }

    #[test]
    fn sort_keys_wraps_the_filter_and_combined_flags_split() {
        let out = adapt(&v(&["-cS", ".", "f"])).unwrap();
        assert_eq!(out[0], "-c");
        assert!(out[1].starts_with("def forkbox_sort_keys:"), "{}", out[1]);
        assert!(out[1].ends_with("((.) | forkbox_sort_keys)"), "{}", out[1]);
        assert_eq!(out[2], "f");
        // A value that looks like a flag is a value.
        let out = adapt(&v(&["--arg", "a", "-S", "-S", "$a"])).unwrap();
        assert_eq!(&out[..3], &v(&["--arg", "a", "-S"]));
    }
}

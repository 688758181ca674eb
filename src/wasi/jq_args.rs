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

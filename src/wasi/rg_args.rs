//! ripgrep's implicit standard input (the `rg` tool's `args_adapter = "rg"`).
//!
//! Given no path, ripgrep on a host searches standard input when it is "readable" and the
//! current directory otherwise (`grep_cli::is_readable_stdin`: not a terminal, and `fstat`
//! says a regular file, a FIFO or a socket). That test exists only for Unix and Windows:
//! built for wasm32-wasip1 it is compiled as a constant `false`, so no answer the host
//! gives to `fd_fdstat_get` or `fd_filestat_get` can make the guest read its stdin, and
//! `printf 'x\n' | rg x` would search the directory instead. The adapter makes the
//! decision the host build would: when the command line names no path, ripgrep would
//! search (not list files or types, print help or its version), standard input was not
//! taken for patterns (`-f -`) and it is neither the session's terminal nor `/dev/null`
//! (a character device to `fstat`), `-` is appended as the one path. With an explicit `-` ripgrep prints what it prints for an implicit one
//! (no file name, as for one file).
//!
//! The flags that take a value are ripgrep 15's (its `flags/defs.rs`); anything the
//! adapter does not understand is left alone.

/// ripgrep's short flags that take a value.
const SHORT_WITH_VALUE: &str = "ABCEfgMmdertTj";

/// ripgrep's long flags that take a value (aliases included).
const LONG_WITH_VALUE: &[&str] = &[
    "after-context",
    "before-context",
    "color",
    "colors",
    "context",
    "context-separator",
    "dfa-size-limit",
    "encoding",
    "engine",
    "field-context-separator",
    "field-match-separator",
    "file",
    "generate",
    "glob",
    "hostname-bin",
    "hyperlink-format",
    "iglob",
    "ignore-file",
    "max-columns",
    "max-count",
    "max-depth",
    "maxdepth",
    "max-filesize",
    "path-separator",
    "pre",
    "pre-glob",
    "regex-size-limit",
    "regexp",
    "replace",
    "sort",
    "sortr",
    "threads",
    "type",
    "type-add",
    "type-clear",
    "type-not",
];

/// Long flags after which ripgrep does not search (other modes, help, version).
const LONG_NOT_SEARCH: &[&str] = &[
    "files",
    "type-list",
    "generate",
    "help",
    "version",
    "pcre2-version",
];

/// Short flags after which ripgrep does not search.
const SHORT_NOT_SEARCH: &str = "hV";

/// What a command line says, as far as the implicit path goes.
#[derive(Default)]
struct Scan {
    positionals: usize,
    /// `-e`/`--regexp` or `-f`/`--file` given: every positional is a path.
    patterns_by_flag: bool,
    /// `-f -`: standard input holds the patterns.
    stdin_consumed: bool,
    not_search: bool,
    /// A value flag at the end with no value: left for ripgrep to report.
    incomplete: bool,
}

impl Scan {
    fn value(&mut self, flag: &str, value: &str) {
        match flag {
            "e" | "regexp" => self.patterns_by_flag = true,
            "f" | "file" => {
                self.patterns_by_flag = true;
                if value == "-" {
                    self.stdin_consumed = true;
                }
            }
            _ => {}
        }
    }
}

fn scan(args: &[String]) -> Scan {
    let mut s = Scan::default();
    let mut it = args.iter();
    let mut options_done = false;
    while let Some(a) = it.next() {
        if options_done || a == "-" || !a.starts_with('-') {
            s.positionals += 1;
            continue;
        }
        if a == "--" {
            options_done = true;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            if LONG_NOT_SEARCH.contains(&name) {
                s.not_search = true;
            }
            if LONG_WITH_VALUE.contains(&name) {
                match inline.or_else(|| it.next().map(String::as_str)) {
                    Some(v) => s.value(name, v),
                    None => s.incomplete = true,
                }
            }
            continue;
        }
        // A cluster of short flags: the first that takes a value takes the rest of the
        // cluster, or the next argument.
        let cluster = &a[1..];
        for (i, c) in cluster.char_indices() {
            if SHORT_NOT_SEARCH.contains(c) {
                s.not_search = true;
            }
            if SHORT_WITH_VALUE.contains(c) {
                let rest = &cluster[i + c.len_utf8()..];
                let v = if rest.is_empty() {
                    it.next().map(String::as_str)
                } else {
                    Some(rest)
                };
                match v {
                    Some(v) => s.value(c.encode_utf8(&mut [0; 4]), v),
                    None => s.incomplete = true,
                }
                break;
            }
        }
    }
    s
}

/// The command line ripgrep on a host would have acted on: `args` with `-` appended when
/// it would search standard input implicitly (see the module doc). `stdin_readable` is
/// ripgrep's own test: standard input is neither the terminal nor `/dev/null` (a pipe,
/// a file, a here-document). `None` when nothing changes.
pub fn adapt(args: &[String], stdin_readable: bool) -> Option<Vec<String>> {
    if !stdin_readable {
        return None;
    }
    let s = scan(args);
    let paths = if s.patterns_by_flag {
        s.positionals
    } else {
        // No pattern at all: ripgrep reports it.
        s.positionals.checked_sub(1)?
    };
    if paths > 0 || s.not_search || s.stdin_consumed || s.incomplete {
        return None;
    }
    let mut out = args.to_vec();
    out.push("-".to_string());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    fn adds_stdin(args: &[&str]) -> bool {
        adapt(&v(args), true).is_some_and(|out| out.last().map(String::as_str) == Some("-"))
    }

    #[test]
    fn a_pattern_alone_searches_piped_stdin() {
        assert!(adds_stdin(&["needle"]));
        assert!(adds_stdin(&["-i", "-n", "needle"]));
        assert!(adds_stdin(&["-A", "2", "needle"]));
        assert!(adds_stdin(&["-A2", "-inw", "needle"]));
        assert!(adds_stdin(&["--max-count=3", "needle"]));
        assert!(adds_stdin(&["--glob", "*.rs", "needle"]));
        assert!(adds_stdin(&["-e", "a", "-e", "b"]));
        assert!(adds_stdin(&["-ea"]));
        assert!(adds_stdin(&["--", "-needle"]));
    }

    #[test]
    fn a_path_a_terminal_or_another_mode_leaves_the_line_alone() {
        assert_eq!(adapt(&v(&["needle"]), false), None);
        assert!(!adds_stdin(&["needle", "src"]));
        assert!(!adds_stdin(&["needle", "-"]));
        assert!(!adds_stdin(&["-e", "a", "src"]));
        assert!(!adds_stdin(&["-f", "pats", "src"]));
        assert!(!adds_stdin(&["-f", "-"]));
        assert!(!adds_stdin(&["--file=-"]));
        assert!(!adds_stdin(&["--files"]));
        assert!(!adds_stdin(&["--type-list"]));
        assert!(!adds_stdin(&["--version"]));
        assert!(!adds_stdin(&["-h"]));
        assert!(!adds_stdin(&[]));
        // A value flag with no value is ripgrep's to report.
        assert!(!adds_stdin(&["needle", "-A"]));
    }
}

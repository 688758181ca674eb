//! GNU jq's wording for jaq 1.6's error reports, where it can be known exactly.
//!
//! jaq reports an error once, as the last thing it writes before it exits: a line
//! `Error: …`, and for a filter that does not compile, a drawing of the filter with the
//! offending span underlined. The `jq` tool forwards the guest's stderr as it comes until
//! such a line, keeps the rest, and when the guest has ended gives it to [`rewrite`]:
//!
//! | jaq | jq |
//! |---|---|
//! | `Error: FILE: No such file or directory (os error 44)` (FILE an input file) | `jq: error: Could not open file FILE: No such file or directory` |
//! | `Error: undefined filter` / `undefined variable`, one line of filter | `jq: error: NAME/ARITY is not defined at <top-level>, line 1:` the filter (padded with as many spaces as the name's column, as jq does) and `jq: N compile error(s)` |
//!
//! Input that is not JSON (`Error: failed to parse: …`) keeps jaq's words but ends with jq
//! 1.6's status, 4 ([`status`]). Anything else is left as jaq wrote it: jq's syntax errors name bison's tokens
//! (`unexpected $end`, `INVALID_CHARACTER`) that jaq's parser does not know, and its
//! runtime errors carry an input position (`(at <stdin>:3)`) that only the guest knew.

/// The status jq 1.6 gives input that is not JSON (jaq gives 5, as for any error).
pub const STATUS_BAD_INPUT: i32 = 4;

/// The status jq would end with, given jaq's final report and jaq's status: input that
/// does not parse (`Error: failed to parse: …`, jaq's report for its input, not for
/// `fromjson` or `--slurpfile`) ends jq 1.6 with [`STATUS_BAD_INPUT`]; anything else
/// keeps jaq's.
pub fn status(report: &str, jaq_status: i32) -> i32 {
    if jaq_status == 5 && report.starts_with("Error: failed to parse: ") {
        STATUS_BAD_INPUT
    } else {
        jaq_status
    }
}

/// The marks of the span underline in jaq's drawing of a filter.
const UNDERLINE: [char; 2] = ['─', '┬'];

/// `text` (what jaq wrote to stderr from its first `Error: ` line on) in jq's words,
/// for a command line whose input files are `files` and whose filter is `filter`.
/// `None` when it is not one of the reports whose jq wording is known.
pub fn rewrite(text: &str, filter: Option<&str>, files: &[String]) -> Option<String> {
    if let Some(out) = open_error(text, files) {
        return Some(out);
    }
    undefined(text, filter?)
}

/// `Error: FILE: MESSAGE (os error N)` for one of the input files.
fn open_error(text: &str, files: &[String]) -> Option<String> {
    let line = text.strip_suffix('\n')?;
    if line.contains('\n') {
        return None;
    }
    let rest = line.strip_prefix("Error: ")?;
    let (rest, _) = rest.rsplit_once(" (os error ")?;
    let (file, message) = rest.rsplit_once(": ")?;
    if !files.iter().any(|f| f == file) {
        return None;
    }
    if !matches!(message, "No such file or directory" | "Permission denied") {
        return None;
    }
    Some(format!(
        "jq: error: Could not open file {file}: {message}\n"
    ))
}

/// Reports of names not defined, each `Error: undefined filter|variable` and a drawing.
fn undefined(text: &str, filter: &str) -> Option<String> {
    if filter.contains(['\n', '\t']) || !filter.is_ascii() {
        return None;
    }
    let mut names: Vec<(usize, String)> = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let what = line.strip_prefix("Error: ")?;
        if what != "undefined filter" && what != "undefined variable" {
            return None;
        }
        // The drawing: the code line (`1 │ CODE`), then the underline (`  ┆ ─┬─`).
        let mut code_prefix = None;
        let mut span = None;
        for l in lines.by_ref() {
            if code_prefix.is_none() {
                if let Some((gutter, code)) = l.split_once(" │ ")
                    && gutter.trim() == "1"
                    && code == filter
                {
                    code_prefix = Some(gutter.chars().count() + 3);
                }
                continue;
            }
            if span.is_none() {
                let chars: Vec<char> = l.chars().collect();
                let start = chars.iter().position(|c| UNDERLINE.contains(c))?;
                let len = chars[start..]
                    .iter()
                    .take_while(|c| UNDERLINE.contains(c))
                    .count();
                span = Some((start.checked_sub(code_prefix?)?, len));
            }
            if l.starts_with('─') && l.ends_with('╯') {
                break;
            }
        }
        let (start, len) = span?;
        let name = filter.get(start..start + len)?;
        let name = if what == "undefined variable" {
            if name.starts_with('$') {
                name.to_string()
            } else {
                format!("${name}")
            }
        } else {
            format!("{name}/{}", arity(&filter[start + len..])?)
        };
        names.push((start, name));
    }
    if names.is_empty() {
        return None;
    }
    names.sort();
    let mut out = String::new();
    for (start, name) in &names {
        out.push_str(&format!(
            "jq: error: {name} is not defined at <top-level>, line 1:\n{filter}{}\n",
            " ".repeat(*start)
        ));
    }
    match names.len() {
        1 => out.push_str("jq: 1 compile error\n"),
        n => out.push_str(&format!("jq: {n} compile errors\n")),
    }
    Some(out)
}

/// The number of arguments of a call whose name ends where `after` starts: 0 without
/// parentheses, else the `;`-separated arguments inside them. `None` when the
/// parentheses do not close.
fn arity(after: &str) -> Option<usize> {
    let rest = after.trim_start();
    let Some(inner) = rest.strip_prefix('(') else {
        return Some(0);
    };
    let mut depth = 0usize;
    let mut args = 1;
    let mut in_string = false;
    let mut escaped = false;
    for c in inner.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' | '[' | '{' => depth += 1,
            ')' if depth == 0 => return Some(args),
            ')' | ']' | '}' => depth = depth.checked_sub(1)?,
            ';' if depth == 0 => args += 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What jaq 1.6 writes for `jq foo` (captured from the provisioned module).
    const FOO: &str = "Error: undefined filter\n  ╭─\n  │\n1 │ foo\n  ┆ ─┬─\n  ┆  │ \n  ┆  ╰── undefined filter\n──╯\n";

    #[test]
    fn a_missing_input_file_is_worded_as_jq_words_it() {
        let files = vec!["nofile.json".to_string()];
        assert_eq!(
            rewrite(
                "Error: nofile.json: No such file or directory (os error 44)\n",
                Some("."),
                &files
            )
            .unwrap(),
            "jq: error: Could not open file nofile.json: No such file or directory\n"
        );
        // Not an input file (a write error, a --slurpfile): left alone.
        assert_eq!(
            rewrite("Error: Broken pipe (os error 64)\n", Some("."), &files),
            None
        );
    }

    #[test]
    fn an_undefined_name_is_worded_as_jq_words_it() {
        assert_eq!(
            rewrite(FOO, Some("foo"), &[]).unwrap(),
            "jq: error: foo/0 is not defined at <top-level>, line 1:\nfoo\njq: 1 compile error\n"
        );
        let bar = FOO.replace("1 │ foo", "1 │ . | foo(1; [2;3])");
        let bar = bar.replace("  ┆ ─┬─", "  ┆     ─┬─");
        assert_eq!(
            rewrite(&bar, Some(". | foo(1; [2;3])"), &[]).unwrap(),
            "jq: error: foo/2 is not defined at <top-level>, line 1:\n. | foo(1; [2;3])    \njq: 1 compile error\n"
        );
        // Another filter than the one drawn, or another kind of report: left alone.
        assert_eq!(rewrite(FOO, Some("bar"), &[]), None);
        assert_eq!(rewrite("Error: expected term\n", Some(".a |"), &[]), None);
        assert_eq!(
            rewrite("Error: cannot index 1 with \"a\"\n", Some(".a"), &[]),
            None
        );
    }

    #[test]
    fn input_that_is_not_json_ends_with_jq_16s_status() {
        assert_eq!(
            status("Error: failed to parse: value expected\n", 5),
            STATUS_BAD_INPUT
        );
        assert_eq!(
            status("Error: cannot parse a as JSON: value expected\n", 5),
            5
        );
        assert_eq!(status("Error: failed to parse: x\n", 141), 141);
    }

    #[test]
    fn arity_counts_top_level_arguments() {
        assert_eq!(arity(""), Some(0));
        assert_eq!(arity(" | x"), Some(0));
        assert_eq!(arity("(1)"), Some(1));
        assert_eq!(arity("(1; \";)\"; (2;3))"), Some(3));
        assert_eq!(arity("(1"), None);
    }
}

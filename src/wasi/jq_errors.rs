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
//! | `Error: cannot index [1] with "a"` and the others [`runtime`] lists | `jq: error (at <stdin>:1): Cannot index array with string "a"`, where the position is known: `<unknown>` with `-n`, else one value on stdin or in the one input file ([`input_position`]) |
//!
//! Input that is not JSON (`Error: failed to parse: …`) keeps jaq's words but ends with
//! jq 1.6's status, 4 ([`status`]). Anything else is left as jaq wrote it: jq's syntax
//! errors name bison's tokens (`unexpected $end`, `INVALID_CHARACTER`) that jaq's parser
//! does not know; jaq's `cannot use 1 as iterable` stands for both jq's `Cannot index
//! number with string "a"` and `Cannot iterate over number (1)` without the key; and with
//! several input values (or input files) which one failed is not known.

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

/// The most of the input kept to say where a runtime error happened: past it the input's
/// position is not known and jaq's wording is kept.
pub const MAX_POSITION_INPUT: usize = 1 << 20;

/// Where jq 1.6 says a runtime error happened, for input `text` read from `name`
/// (`<stdin>` or a file): `NAME:LINE`, LINE being the newlines jq's parser had read when
/// it gave the value: through the value, then blanks up to and including the first
/// newline after it (so `1\n\n` is line 1, `{"a":\n1}` line 1, `1` line 0); with
/// `--slurp`, the whole input. `None` unless the input is exactly one JSON value (or is
/// slurped): with several, jaq stops at the first error and which value failed is not
/// known.
pub fn input_position(name: &str, text: &[u8], slurp: bool) -> Option<String> {
    let newlines = |b: &[u8]| b.iter().filter(|&&c| c == b'\n').count();
    if slurp {
        return Some(format!("{name}:{}", newlines(text)));
    }
    let mut values =
        serde_json::Deserializer::from_slice(text).into_iter::<serde::de::IgnoredAny>();
    values.next()?.ok()?;
    let end = values.byte_offset();
    if values.next().is_some() {
        return None;
    }
    let after = text[end..]
        .iter()
        .find(|c| !matches!(c, b' ' | b'\t' | b'\r'))
        .is_some_and(|&c| c == b'\n');
    Some(format!(
        "{name}:{}",
        newlines(&text[..end]) + usize::from(after)
    ))
}

/// jaq's report of a runtime error in jq 1.6's words, `jq: error (at AT): …`, for the
/// errors whose jq wording follows from what jaq says:
///
/// | jaq | jq |
/// |---|---|
/// | `cannot index [1] with "a"` | `Cannot index array with string "a"` |
/// | `cannot index {} with 0` | `Cannot index object with number` |
/// | `cannot calculate "x" + 1` (`+ - * /`) | `string ("x") and number (1) cannot be added` |
/// | `true has no length` | `boolean (true) has no length` |
///
/// Values are rewritten only when jq would print them the same (ASCII strings without
/// escapes, integers, compact arrays and objects of those with sorted keys), cut to 11
/// bytes and `...` past 14 as jq cuts them.
pub fn runtime(text: &str, at: &str) -> Option<String> {
    let msg = text.strip_suffix('\n')?.strip_prefix("Error: ")?;
    if msg.contains('\n') {
        return None;
    }
    let jq = if let Some(rest) = msg.strip_prefix("cannot index ") {
        index_error(rest)?
    } else if let Some(rest) = msg.strip_prefix("cannot calculate ") {
        calculate_error(rest)?
    } else {
        let v = msg.strip_suffix(" has no length")?;
        if v != "true" && v != "false" {
            return None;
        }
        format!("boolean ({v}) has no length")
    };
    Some(format!("jq: error (at {at}): {jq}\n"))
}

/// `V with K` of `cannot index V with K`.
fn index_error(rest: &str) -> Option<String> {
    let (value, key) = split_values(rest, " with ")?;
    let kind = kind_name(&value);
    match key {
        serde_json::Value::String(k)
            if !k.contains(['\\', '"']) && !k.chars().any(char::is_control) =>
        {
            Some(format!("Cannot index {kind} with string \"{k}\""))
        }
        serde_json::Value::Number(_) => Some(format!("Cannot index {kind} with number")),
        _ => None,
    }
}

/// `A OP B` of `cannot calculate A OP B`.
fn calculate_error(rest: &str) -> Option<String> {
    for (op, word) in [
        (" + ", "added"),
        (" - ", "subtracted"),
        (" * ", "multiplied"),
        (" / ", "divided"),
    ] {
        let Some((a, b)) = split_values(rest, op) else {
            continue;
        };
        // Numbers divided: jq's own checks (a zero divisor) word it otherwise.
        if op == " / " && a.is_number() && b.is_number() {
            return None;
        }
        let (da, db) = (jq_dump(&a)?, jq_dump(&b)?);
        return Some(format!(
            "{} ({da}) and {} ({db}) cannot be {word}",
            kind_name(&a),
            kind_name(&b)
        ));
    }
    None
}

/// `text` cut at one of the places `sep` occurs so that both sides are JSON values as
/// jaq printed them (compact, and as serde_json prints them back).
fn split_values(text: &str, sep: &str) -> Option<(serde_json::Value, serde_json::Value)> {
    let mut from = 0;
    while let Some(i) = text[from..].find(sep) {
        let (l, r) = (&text[..from + i], &text[from + i + sep.len()..]);
        if let (Ok(a), Ok(b)) = (
            serde_json::from_str::<serde_json::Value>(l),
            serde_json::from_str::<serde_json::Value>(r),
        ) && serde_json::to_string(&a).ok()? == l
            && serde_json::to_string(&b).ok()? == r
        {
            return Some((a, b));
        }
        from += i + sep.len();
    }
    None
}

/// jq's name of a value's kind.
fn kind_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

/// How jq 1.6 shows a value in an error (`jv_dump_string_trunc` into 15 bytes), when that
/// is known: only for values whose dump is the compact JSON (integers below 10^17, ASCII
/// strings without escapes).
fn jq_dump(v: &serde_json::Value) -> Option<String> {
    fn plain(v: &serde_json::Value) -> bool {
        match v {
            serde_json::Value::Null | serde_json::Value::Bool(_) => true,
            serde_json::Value::Number(n) => n
                .as_i64()
                .is_some_and(|i| i.unsigned_abs() < 100_000_000_000_000_000),
            serde_json::Value::String(s) => {
                s.is_ascii() && !s.contains(['\\', '"']) && !s.chars().any(char::is_control)
            }
            serde_json::Value::Array(a) => a.iter().all(plain),
            serde_json::Value::Object(o) => o
                .iter()
                .all(|(k, v)| plain(&serde_json::Value::String(k.clone())) && plain(v)),
        }
    }
    if !plain(v) {
        return None;
    }
    let dump = serde_json::to_string(v).ok()?;
    Some(if dump.len() > 14 {
        format!("{}...", &dump[..11])
    } else {
        dump
    })
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

    /// The jq texts are Debian's jq 1.6's for the same filters.
    #[test]
    fn runtime_errors_are_worded_as_jq_words_them() {
        let cases = [
            (
                "cannot index [1] with \"a\"",
                "Cannot index array with string \"a\"",
            ),
            ("cannot index {} with 0", "Cannot index object with number"),
            (
                "cannot calculate \"x\" + 1",
                "string (\"x\") and number (1) cannot be added",
            ),
            (
                "cannot calculate {} - 1",
                "object ({}) and number (1) cannot be subtracted",
            ),
            (
                "cannot calculate \"a\" * {}",
                "string (\"a\") and object ({}) cannot be multiplied",
            ),
            (
                "cannot calculate {} / 1",
                "object ({}) and number (1) cannot be divided",
            ),
            (
                "cannot calculate {\"a\":\"bbbbbbbbbb\"} + 1",
                "object ({\"a\":\"bbbbb...) and number (1) cannot be added",
            ),
            ("true has no length", "boolean (true) has no length"),
        ];
        for (jaq, jq) in cases {
            assert_eq!(
                runtime(&format!("Error: {jaq}\n"), "<unknown>").as_deref(),
                Some(format!("jq: error (at <unknown>): {jq}\n").as_str()),
                "{jaq}"
            );
        }
        // Unknown to jq's words, or values jq would print otherwise: left alone.
        for jaq in [
            "cannot use 1 as iterable (array or object)",
            "cannot calculate 1 / 0",
            "cannot calculate 1.5 + \"a\"",
            "cannot calculate {\"b\":1,\"a\":2} + 1",
            "boom",
        ] {
            assert_eq!(
                runtime(&format!("Error: {jaq}\n"), "<unknown>"),
                None,
                "{jaq}"
            );
        }
    }

    /// Positions as Debian's jq 1.6 gives them for one value on stdin.
    #[test]
    fn the_input_position_is_jqs() {
        let at = |t: &str, slurp| input_position("<stdin>", t.as_bytes(), slurp);
        assert_eq!(at("1", false).as_deref(), Some("<stdin>:0"));
        assert_eq!(at("1 ", false).as_deref(), Some("<stdin>:0"));
        assert_eq!(at("1\n\n", false).as_deref(), Some("<stdin>:1"));
        assert_eq!(at("{\"a\":1}  \n", false).as_deref(), Some("<stdin>:1"));
        assert_eq!(at("{\"a\":\n1}\n\n", false).as_deref(), Some("<stdin>:2"));
        assert_eq!(at("\n\n1\n", false).as_deref(), Some("<stdin>:3"));
        assert_eq!(at("[1,2]\n", true).as_deref(), Some("<stdin>:1"));
        // Several values, or not JSON: not known.
        assert_eq!(at("1 2\n", false), None);
        assert_eq!(at("{\n", false), None);
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

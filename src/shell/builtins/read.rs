//! `read`: read a line from standard input and split it into fields.

use std::collections::BTreeMap;

use clap::Parser;
use forkbox_commands::bytetext;

use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;
use crate::shell::{MAX_LINE, Shell, ShellError, Value};

/// Read a line from the standard input and split it into fields.
///
/// The line is split on IFS; the first word goes to the first NAME, the second to the
/// second, and the rest of the line to the last NAME. Without NAMEs the line is stored in
/// REPLY. The status is 1 at end of file.
#[derive(Parser, Debug)]
#[command(name = "read", disable_version_flag = true)]
struct Args {
    /// Do not treat backslashes as escape characters.
    #[arg(short = 'r')]
    raw: bool,
    /// Print PROMPT on standard error before reading.
    #[arg(short = 'p')]
    prompt: Option<String>,
    /// Assign the words to the indexed array ARRAY, starting at 0.
    #[arg(short = 'a')]
    array: Option<String>,
    /// Read until the first character of DELIM instead of newline.
    #[arg(short = 'd')]
    delim: Option<String>,
    /// Return after reading NCHARS characters.
    #[arg(short = 'n', allow_hyphen_values = true)]
    nchars: Option<String>,
    /// Return after reading exactly NCHARS characters, ignoring any delimiter.
    #[arg(short = 'N', allow_hyphen_values = true)]
    exact: Option<String>,
    /// Read from file descriptor FD instead of the standard input.
    #[arg(short = 'u', allow_hyphen_values = true)]
    fd: Option<String>,
    /// Use the line editor (the session's terminal edits lines anyway).
    #[arg(short = 'e')]
    editor: bool,
    /// Text to start the line with when the line editor is used.
    #[arg(short = 'i')]
    initial: Option<String>,
    /// Do not echo input (input is never echoed by the shell itself).
    #[arg(short = 's')]
    silent: bool,
    /// Time out after TIMEOUT seconds (status greater than 128).
    #[arg(short = 't', allow_hyphen_values = true)]
    timeout: Option<String>,
    /// Variable names.
    names: Vec<String>,
}

/// The arguments of the common forms (`read -r line`, `read a b`) without clap, whose
/// parser costs more than the rest of a `read` in a `while read` loop: `None` when any
/// argument is an option other than one `-r`, which then goes through clap.
fn simple_args(args: &[String]) -> Option<Args> {
    let mut raw = false;
    let mut names = Vec::with_capacity(args.len());
    for a in args {
        if a == "-r" && !raw {
            raw = true;
        } else if a.starts_with('-') {
            return None;
        } else {
            names.push(a.clone());
        }
    }
    Some(Args {
        raw,
        prompt: None,
        array: None,
        delim: None,
        nchars: None,
        exact: None,
        fd: None,
        editor: false,
        initial: None,
        silent: false,
        timeout: None,
        names,
    })
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let a: Args = match simple_args(&args) {
        Some(a) => a,
        None => match super::parse(sh, io, "read", &args).await {
            Ok(a) => a,
            Err(s) => return Ok(s),
        },
    };
    let _ = a.silent;
    // A NAME may be an element (`read 'a[1]'`); the array of `-a` may not.
    let element =
        |n: &str| crate::shell::vars::split_subscript(n).is_some_and(|(b, _)| super::is_name(b));
    for n in a.names.iter().filter(|n| !element(n)).chain(a.array.iter()) {
        if !super::is_name(n) {
            return super::fail(sh, io, format!("read: `{n}': not a valid identifier"), 1).await;
        }
    }
    if let Some(arr) = &a.array
        && sh.is_assoc(arr)
    {
        return super::fail(sh, io, format!("read: {arr}: not an indexed array"), 1).await;
    }
    let _ = (a.editor, &a.initial);
    // The numbers of -n, -N, -u and -t, checked as bash does (status 1, not 2).
    let count = |v: &Option<String>| -> Result<Option<usize>, String> {
        match v {
            None => Ok(None),
            Some(t) => match t.trim().parse::<i64>() {
                Ok(n) if n >= 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
                _ => Err(format!("read: {t}: invalid number")),
            },
        }
    };
    let (nchars, exact) = match (count(&a.nchars), count(&a.exact)) {
        (Ok(n), Ok(e)) => (n, e),
        (Err(m), _) | (_, Err(m)) => return super::fail(sh, io, m, 1).await,
    };
    let fd = match &a.fd {
        None => None,
        Some(t) => match t.trim().parse::<i32>() {
            Ok(n) if n >= 0 => Some(n),
            _ => {
                let msg = format!("read: {t}: invalid file descriptor specification");
                return super::fail(sh, io, msg, 1).await;
            }
        },
    };
    let timeout = match &a.timeout {
        None => None,
        Some(t) => match parse_timeout(t) {
            Some(v) => Some(v),
            None => {
                let msg = format!("read: {t}: invalid timeout specification");
                return super::fail(sh, io, msg, 1).await;
            }
        },
    };
    let input = match fd {
        None => match io.input(0) {
            Some(i) => i,
            None => {
                let msg = "read: read error: 0: Bad file descriptor".to_string();
                return super::fail(sh, io, msg, 1).await;
            }
        },
        Some(fd) => match io.input(fd) {
            Some(i) => i,
            None => {
                let msg = format!("read: {fd}: invalid file descriptor: Bad file descriptor");
                return super::fail(sh, io, msg, 1).await;
            }
        },
    };
    // A descriptor open on a directory (`read x < /`): its reads fail.
    if let Some(errno) = input.failure() {
        let e = forkbox_commands::FsError::from_io(&std::io::Error::from_raw_os_error(errno));
        let msg = format!("read: read error: {}: {e}", fd.unwrap_or(0));
        return super::fail(sh, io, msg, 1).await;
    }
    // `-t 0`: no read at all; whether input is there (data, or end-of-file) right now.
    // The task that feeds a redirected file gets a moment to start first: a file always
    // has its data or its end there, where a pipe's writer may still be working.
    if timeout == Some(0.0) {
        /// How long `read -t 0` lets a just-started feeder deliver its first chunk.
        const SETTLE: std::time::Duration = std::time::Duration::from_millis(10);
        let ready = match input.ready() {
            forkbox_commands::Readiness::Pending => {
                tokio::time::timeout(SETTLE, input.wait_ready()).await.ok()
            }
            r => Some(r),
        };
        return Ok(i32::from(ready.is_none()));
    }
    // bash shows the prompt only when the input is a terminal.
    if let Some(p) = &a.prompt
        && input.is_pull_source()
    {
        let _ = io.stderr().write_str(p).await;
    }
    // `-N`: a count of characters and no delimiter at all.
    let nchars = exact.or(nchars);
    let exact = exact.is_some();
    // In a locale that is not UTF-8 every byte is a character.
    let byte_chars = sh.byte_locale();
    let delim = match &a.delim {
        _ if exact => None,
        // A byte that is not UTF-8 (`-d $'\xe9'`) is that byte.
        Some(d) => Some(bytetext::encode(d).first().copied().unwrap_or(0)),
        None => Some(b'\n'),
    };
    let reading = async {
        let mut line: Vec<u8> = Vec::new();
        let mut eof = false;
        // For `-n`/`-N`: characters read (escaping backslashes not counted), the bytes
        // the current character still lacks, and whether a backslash quotes the next byte.
        let mut chars = 0usize;
        let mut char_left = 0u8;
        let mut escaped = false;
        loop {
            if nchars == Some(0) {
                break;
            }
            if delim == Some(b'\n') && nchars.is_none() {
                match input.read_line(MAX_LINE).await {
                    Ok(Some(mut l)) => {
                        let complete = l.last() == Some(&b'\n');
                        if complete {
                            l.pop();
                        }
                        let continued =
                            !a.raw && complete && l.last() == Some(&b'\\') && !ends_escaped(&l);
                        if continued {
                            l.pop();
                            line.extend_from_slice(&l);
                            continue;
                        }
                        line.extend_from_slice(&l);
                        if !complete {
                            eof = true;
                        }
                    }
                    _ => eof = true,
                }
                break;
            }
            match input.read_up_to(1).await {
                Ok(Some(b)) if !b.is_empty() => {
                    let b = b[0];
                    if escaped {
                        // Without `-r` a backslash quotes the next byte: an escaped
                        // delimiter is data, a backslash-newline is nothing at all.
                        escaped = false;
                        if b == b'\n' {
                            line.pop();
                            continue;
                        }
                    } else if Some(b) == delim {
                        break;
                    } else if b == 0 {
                        // A NUL byte is skipped, not counted (bash's strings end at one).
                        continue;
                    } else if b == b'\\' && !a.raw {
                        escaped = true;
                        line.push(b);
                        continue;
                    }
                    line.push(b);
                    // A character is counted once its last byte is in.
                    if byte_chars {
                        char_left = 0;
                    } else if b & 0xc0 != 0x80 {
                        char_left = match b {
                            0xf0.. => 3,
                            0xe0.. => 2,
                            0xc0.. => 1,
                            _ => 0,
                        };
                    } else {
                        char_left = char_left.saturating_sub(1);
                    }
                    if char_left == 0 {
                        chars += 1;
                    }
                    if nchars.is_some_and(|n| chars >= n) {
                        break;
                    }
                    if line.len() >= MAX_LINE {
                        break;
                    }
                }
                _ => {
                    eof = true;
                    break;
                }
            }
        }
        (line, eof)
    };
    let (line, eof) = match timeout {
        Some(t) if t >= 0.0 => {
            match tokio::time::timeout(std::time::Duration::from_secs_f64(t.min(1e6)), reading)
                .await
            {
                Ok(r) => r,
                Err(_) => return Ok(142),
            }
        }
        _ => reading.await,
    };
    // bash's variables cannot hold NUL: read drops them.
    let nothing = line.is_empty();
    let text = bytetext::decode(line).replace('\0', "");
    let status = if eof { 1 } else { 0 };
    if eof && nothing {
        // At end-of-file the variables are emptied all the same: `-a`'s array too.
        for n in &a.names {
            let _ = sh.set_var(n, "");
        }
        if let Some(arr) = &a.array {
            let _ = sh.set_value(arr, Value::Array(BTreeMap::new()));
        } else if a.names.is_empty() {
            let _ = sh.set_var("REPLY", "");
        }
        return Ok(1);
    }
    let ifs = sh.get_str("IFS").unwrap_or_else(|| " \t\n".to_string());
    // In the C locale each byte of an `IFS` past ASCII separates on its own: the line is
    // split between bytes, and each value made text again.
    let by_bytes = !ifs.is_ascii() && sh.byte_locale();
    let (text, ifs) = if by_bytes {
        (
            bytetext::byte_view(&text).into_owned(),
            bytetext::byte_view(&ifs).into_owned(),
        )
    } else {
        (text, ifs)
    };
    let text_of = |fields: Vec<String>| -> Vec<String> {
        if by_bytes {
            fields.into_iter().map(bytetext::normalise).collect()
        } else {
            fields
        }
    };
    if let Some(arr) = &a.array {
        // `-N` assigns what it read as it stands, unsplit.
        let fields = if exact {
            vec![bytetext::normalise(unescape(&text, a.raw))]
        } else {
            text_of(split_all(&text, &ifs, a.raw))
        };
        let map: BTreeMap<i64, String> = fields
            .into_iter()
            .enumerate()
            .map(|(i, s)| (i as i64, s))
            .collect();
        if let Err(e) = sh.set_value(arr, Value::Array(map)) {
            return Ok(sh.report(&io.stderr(), &e).await);
        }
        return Ok(status);
    }
    if a.names.is_empty() {
        let v = bytetext::normalise(unescape(&text, a.raw));
        if let Err(e) = sh.set_var("REPLY", &v) {
            return read_failed(sh, e, io).await;
        }
        return Ok(status);
    }
    let values = if exact {
        let mut v = vec![bytetext::normalise(unescape(&text, a.raw))];
        v.resize(a.names.len(), String::new());
        v
    } else {
        text_of(split_n(&text, &ifs, a.names.len(), a.raw))
    };
    for (n, v) in a.names.iter().zip(values) {
        if let Err(e) = sh.set_var(n, &v) {
            return read_failed(sh, e, io).await;
        }
    }
    Ok(status)
}

/// A variable `read` could not set: the builtin fails, or for an integer variable's
/// bad arithmetic the script ends (bash's `read: 1 +: syntax error ...`).
async fn read_failed(sh: &mut Shell, e: ShellError, io: &Fds) -> Exec<i32> {
    if matches!(e, ShellError::ArithmeticAssign { .. }) {
        super::fail(sh, io, format!("read: {e}"), 1).await?;
        return Err(Flow::Abort(1));
    }
    Ok(sh.report(&io.stderr(), &e).await)
}

/// A timeout as bash reads it: digits with an optional fraction, no sign or exponent.
fn parse_timeout(t: &str) -> Option<f64> {
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return None;
    }
    format!("0{int}.{frac}0").parse().ok()
}

fn ends_escaped(l: &[u8]) -> bool {
    // An even number of trailing backslashes means the last one is itself escaped.
    let n = l.iter().rev().take_while(|&&b| b == b'\\').count();
    n % 2 == 0
}

fn unescape(s: &str, raw: bool) -> String {
    if raw {
        return s.to_string();
    }
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn is_ws(c: char, ifs: &str) -> bool {
    matches!(c, ' ' | '\t' | '\n') && ifs.contains(c)
}

/// Splits into every field (for `read -a`). Without `raw`, a backslash makes the next
/// character data, never a delimiter.
fn split_all(s: &str, ifs: &str, raw: bool) -> Vec<String> {
    if ifs.is_empty() {
        return vec![unescape(s, raw)];
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut have = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' && !raw {
            if let Some(n) = chars.next() {
                cur.push(n);
            }
            have = true;
        } else if ifs.contains(c) {
            if have || !is_ws(c, ifs) {
                out.push(std::mem::take(&mut cur));
            }
            have = false;
        } else {
            cur.push(c);
            have = true;
        }
    }
    if have {
        out.push(cur);
    }
    out
}

/// Splits into `n` values: the last gets the rest of the line, trailing IFS whitespace
/// removed. Backslash escapes (without `-r`) protect delimiters.
fn split_n(s: &str, ifs: &str, n: usize, raw: bool) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && is_ws(chars[*i], ifs) {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    while out.len() + 1 < n {
        if i >= chars.len() {
            break;
        }
        let mut field = String::new();
        while i < chars.len() && !ifs.contains(chars[i]) {
            if chars[i] == '\\' && !raw && i + 1 < chars.len() {
                field.push(chars[i + 1]);
                i += 2;
                continue;
            }
            field.push(chars[i]);
            i += 1;
        }
        out.push(field);
        // One delimiter: surrounding IFS whitespace plus at most one non-whitespace char.
        skip_ws(&mut i);
        if i < chars.len() && ifs.contains(chars[i]) && !is_ws(chars[i], ifs) {
            i += 1;
            skip_ws(&mut i);
        }
    }
    // The rest goes to the last variable. When it is one field and one delimiter
    // (`IFS=' :' read a b <<< 'p x : '`), it is that field alone; otherwise it is the rest
    // as it stands, less trailing IFS whitespace.
    let start = i.min(chars.len());
    let mut j = start;
    let mut field = String::new();
    while j < chars.len() && !ifs.contains(chars[j]) {
        if chars[j] == '\\' && !raw && j + 1 < chars.len() {
            field.push(chars[j]);
            field.push(chars[j + 1]);
            j += 2;
            continue;
        }
        field.push(chars[j]);
        j += 1;
    }
    skip_ws(&mut j);
    if j < chars.len() && ifs.contains(chars[j]) && !is_ws(chars[j], ifs) {
        j += 1;
        skip_ws(&mut j);
    }
    let mut rest: String = if j >= chars.len() && start < chars.len() {
        field
    } else {
        chars[start..].iter().collect()
    };
    while rest.chars().last().is_some_and(|c| is_ws(c, ifs)) && !rest.ends_with("\\ ") {
        rest.pop();
    }
    out.push(unescape(&rest, raw));
    while out.len() < n {
        out.push(String::new());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_args_agree_with_clap() {
        let lists: [&[&str]; 6] = [
            &[],
            &["-r"],
            &["-r", "line"],
            &["a", "b", "c"],
            &["a", "-r", "b"],
            &["", "x"],
        ];
        for list in lists {
            let args: Vec<String> = list.iter().map(|s| s.to_string()).collect();
            let fast = simple_args(&args);
            let slow = match forkbox_commands::parse_usage::<Args>("read", &args) {
                forkbox_commands::Usage::Args(a) => Some(a),
                _ => None,
            };
            let view = |a: &Option<Args>| a.as_ref().map(|a| (a.raw, a.names.clone()));
            assert!(fast.is_some(), "{list:?} takes the fast path");
            assert_eq!(view(&fast), view(&slow), "{list:?}");
        }
        for list in [
            &["-r", "-r"][..],
            &["-d", ":"],
            &["-ra", "x"],
            &["--", "x"],
            &["-"],
        ] {
            let args: Vec<String> = list.iter().map(|s| s.to_string()).collect();
            assert!(simple_args(&args).is_none(), "{list:?} goes through clap");
        }
    }

    #[test]
    fn splitting() {
        assert_eq!(split_n("  a  b c  ", " \t\n", 2, true), ["a", "b c"]);
        assert_eq!(split_n("a:b:c", ":", 2, true), ["a", "b:c"]);
        assert_eq!(split_n("a", " ", 3, true), ["a", "", ""]);
        assert_eq!(split_n("x:y:", ":", 2, true), ["x", "y"]);
        assert_eq!(split_n("x:y:z:", ":", 2, true), ["x", "y:z:"]);
        assert_eq!(split_all(" a  b ", " ", true), ["a", "b"]);
    }
}

#[cfg(test)]
mod script_tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn read_splits_fields() {
        let script = "echo 'a b c' | { read x y; echo \"$x|$y\"; }";
        let expected = (0, "a|b c\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn read_r_keeps_backslash() {
        let script = "printf 'a\\\\b\\n' | { read -r x; echo \"$x\"; read y; }; printf 'a\\\\b\\n' | { read x; echo \"$x\"; }";
        let expected = (0, "a\\b\nab\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn read_a_array() {
        let script = "echo '1 2 3' | { read -a arr; declare -p arr; }";
        let expected = (
            0,
            "declare -a arr=([0]=\"1\" [1]=\"2\" [2]=\"3\")\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn read_eof_fails() {
        let script = "read x < /dev/null; echo $? \"[$x]\"";
        let expected = (0, "1 []\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn read_d_and_n() {
        let script = "printf 'ab:cd' | { read -d : x; read -n 1 y; echo $x $y; }";
        let expected = (0, "ab c\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn read_default_reply() {
        let script = "echo hi | { read; echo $REPLY; }";
        let expected = (0, "hi\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn read_invalid_name() {
        let script = "echo a | read 1x; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: read: `1x': not a valid identifier\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn read_readonly() {
        let script = "readonly ro=1; echo a | { read ro; echo $?; }";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: ro: readonly variable\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn read_ifs() {
        let script = "echo 'a:b' | { IFS=: read x y; echo $x $y; }";
        let expected = (0, "a b\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

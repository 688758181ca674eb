//! `mapfile`/`readarray`: read lines into an indexed array.

use std::collections::BTreeMap;

use crate::shell::exec::Exec;
use crate::shell::exec::Flow;
use crate::shell::expand::shell_quote;
use crate::shell::redirect::Fds;
use crate::shell::{MAX_ARRAY_LEN, MAX_LINE, Shell, Value, parse_program};

const USAGE: &str = "mapfile: usage: mapfile [-d delim] [-n count] [-O origin] [-s count] [-t] [-u fd] [-C callback] [-c quantum] [array]";

struct Opts {
    delim: u8,
    count: usize,
    origin: Option<i64>,
    skip: usize,
    trim: bool,
    fd: i32,
    callback: Option<String>,
    quantum: usize,
    name: String,
}

async fn parse(sh: &Shell, io: &Fds, args: &[String]) -> Result<Opts, i32> {
    let mut o = Opts {
        delim: b'\n',
        count: 0,
        origin: None,
        skip: 0,
        trim: false,
        fd: 0,
        callback: None,
        quantum: 5000,
        name: "MAPFILE".into(),
    };
    let mut i = 0;
    let bad = |msg: String, status: i32| async move {
        let _ = super::fail(sh, io, msg, status).await;
        Err(status)
    };
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        for (at, c) in a[1..].char_indices() {
            if c == 't' {
                o.trim = true;
                continue;
            }
            if !"dnOsuCc".contains(c) {
                return bad(format!("mapfile: -{c}: invalid option\n{USAGE}"), 2).await;
            }
            // The value is the rest of this argument or the next one.
            let rest = &a[1 + at + c.len_utf8()..];
            let value = if !rest.is_empty() {
                rest.to_string()
            } else {
                i += 1;
                match args.get(i) {
                    Some(v) => v.clone(),
                    None => {
                        let msg = format!("mapfile: -{c}: option requires an argument\n{USAGE}");
                        return bad(msg, 2).await;
                    }
                }
            };
            let num = value.trim().parse::<i64>().ok().filter(|n| *n >= 0);
            match c {
                // A byte that is not UTF-8 (`-d $'\xe9'`) is that byte.
                'd' => {
                    o.delim = forkbox_commands::bytetext::encode(&value)
                        .first()
                        .copied()
                        .unwrap_or(0)
                }
                'n' | 's' | 'c' => {
                    let Some(n) = num.and_then(|n| usize::try_from(n).ok()) else {
                        let what = if c == 'c' {
                            "callback quantum"
                        } else {
                            "line count"
                        };
                        return bad(format!("mapfile: {value}: invalid {what}"), 1).await;
                    };
                    match c {
                        'n' => o.count = n,
                        's' => o.skip = n,
                        _ if n == 0 => {
                            return bad(format!("mapfile: {value}: invalid callback quantum"), 1)
                                .await;
                        }
                        _ => o.quantum = n,
                    }
                }
                'O' => match num {
                    Some(n) => o.origin = Some(n),
                    None => return bad(format!("mapfile: {value}: invalid array origin"), 1).await,
                },
                'u' => match num.and_then(|n| i32::try_from(n).ok()) {
                    Some(n) => o.fd = n,
                    None => {
                        return bad(
                            format!("mapfile: {value}: invalid file descriptor specification"),
                            1,
                        )
                        .await;
                    }
                },
                _ => o.callback = Some(value),
            }
            break;
        }
        i += 1;
    }
    if let Some(n) = args.get(i) {
        if !super::is_name(n) {
            return bad(format!("mapfile: `{n}': not a valid identifier"), 1).await;
        }
        o.name = n.clone();
    }
    Ok(o)
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let o = match parse(sh, io, &args).await {
        Ok(o) => o,
        Err(s) => return Ok(s),
    };
    let Some(input) = io.input(o.fd) else {
        let msg = format!(
            "mapfile: {}: invalid file descriptor: Bad file descriptor",
            o.fd
        );
        return super::fail(sh, io, msg, 1).await;
    };
    if sh
        .vars
        .get(&o.name)
        .is_some_and(|v| matches!(v.value, Value::Assoc(_)))
    {
        let msg = format!("mapfile: {}: not an indexed array", o.name);
        return super::fail(sh, io, msg, 1).await;
    }
    let mut arr: BTreeMap<i64, String> = match (o.origin, sh.vars.get(&o.name)) {
        (Some(_), Some(v)) => match &v.value {
            Value::Array(a) => a.clone(),
            Value::Str(s) => BTreeMap::from([(0, s.clone())]),
            Value::Assoc(_) => BTreeMap::new(),
        },
        _ => BTreeMap::new(),
    };
    let mut index = o.origin.unwrap_or(0);
    let (mut read, mut stored) = (0usize, 0usize);
    loop {
        if o.count > 0 && stored >= o.count {
            break;
        }
        let line = if o.delim == b'\n' {
            match input.read_line(MAX_LINE).await {
                Ok(Some(l)) => l,
                _ => break,
            }
        } else {
            let mut l = Vec::new();
            loop {
                match input.read_up_to(1).await {
                    Ok(Some(b)) if !b.is_empty() => {
                        l.push(b[0]);
                        if b[0] == o.delim || l.len() >= MAX_LINE {
                            break;
                        }
                    }
                    _ => break,
                }
            }
            if l.is_empty() {
                break;
            }
            l
        };
        if read % 64 == 63 {
            sh.budget.pace().await;
        }
        if sh.cancel.is_cancelled() {
            return Err(Flow::Abort(forkbox_commands::STATUS_INTERRUPTED));
        }
        read += 1;
        if read <= o.skip {
            continue;
        }
        let mut line = line;
        if o.trim && line.last() == Some(&o.delim) {
            line.pop();
        }
        // bash keeps each line as a C string: it ends at a NUL byte (with `-d ''`, the
        // delimiter that stays without `-t`).
        let kept = line.split(|b| *b == 0).next().unwrap_or_default();
        let text = forkbox_commands::bytetext::decode_slice(kept).into_owned();
        if let Some(cb) = &o.callback
            && (stored + 1) % o.quantum == 0
        {
            let cmd = format!("{cb} {index} {}", shell_quote(&text));
            let _ = sh.set_value(&o.name, Value::Array(arr.clone()));
            match parse_program(&cmd) {
                Ok(p) => {
                    sh.exec_nested_input("mapfile", &p, None, io).await?;
                }
                Err(e) => {
                    sh.fail(e, io).await?;
                }
            }
        }
        arr.insert(index, text);
        if arr.len() > MAX_ARRAY_LEN {
            break;
        }
        index += 1;
        stored += 1;
    }
    if let Err(e) = sh.set_value(&o.name, Value::Array(arr)) {
        // A builtin's failed assignment fails the builtin, not the script.
        return Ok(sh.report(&io.stderr(), &e).await);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn mapfile_reads_lines() {
        let script = "printf 'a\\nb\\n' > /f; mapfile arr < /f; declare -p arr";
        let expected = (
            0,
            "declare -a arr=([0]=$'a\\n' [1]=$'b\\n')\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn mapfile_t_strips() {
        let script = "printf 'a\\nb\\n' | { mapfile -t arr; declare -p arr; }";
        let expected = (
            0,
            "declare -a arr=([0]=\"a\" [1]=\"b\")\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn mapfile_n_count_and_s_skip() {
        let script = "printf '1\\n2\\n3\\n4\\n' > /f; mapfile -t -s 1 -n 2 a < /f; echo ${a[@]}";
        let expected = (0, "2 3\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn mapfile_upper_o_origin() {
        let script = "a=(x y z); printf 'p\\nq\\n' > /f; mapfile -t -O 1 a < /f; declare -p a";
        let expected = (
            0,
            "declare -a a=([0]=\"x\" [1]=\"p\" [2]=\"q\")\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn mapfile_d_delimiter() {
        let script = "printf 'a:b:' > /f; mapfile -t -d : a < /f; declare -p a";
        let expected = (
            0,
            "declare -a a=([0]=\"a\" [1]=\"b\")\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn mapfile_default_name() {
        let script = "printf 'z\\n' > /f; mapfile < /f; declare -p MAPFILE";
        let expected = (
            0,
            "declare -a MAPFILE=([0]=$'z\\n')\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn readarray_alias() {
        let script = "printf 'r\\n' > /f; readarray -t r < /f; echo $r";
        let expected = (0, "r\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn mapfile_bad_option() {
        let script = "mapfile -q; echo $?";
        let expected = (0, "2\n".to_string(), "bash: line 1: mapfile: -q: invalid option\nmapfile: usage: mapfile [-d delim] [-n count] [-O origin] [-s count] [-t] [-u fd] [-C callback] [-c quantum] [array]\n".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn mapfile_bad_count() {
        let script = "mapfile -n x a < /dev/null; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: mapfile: x: invalid line count\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn mapfile_callback() {
        let script =
            "printf '1\\n2\\n3\\n' > /f; mapfile -t -C 'echo cb' -c 2 a < /f; echo ${a[@]}";
        let expected = (0, "cb 1 2\n1 2 3\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}

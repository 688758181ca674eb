//! `history`, `fc` and `bind`: the interactive history and line-editing builtins, as a
//! non-interactive bash has them. A script keeps no history of its own commands; only
//! what `history -s` adds is listed. There is no line editor for `bind` to configure.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// Most entries `history -s` keeps (the oldest go first).
const MAX_HISTORY: usize = 500;

/// `history [-c] [-d OFFSET] [N]`, `history -s ARG…`, `history -p ARG…`,
/// `history -anrw [FILE]`.
pub(crate) async fn history(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut rest: &[String] = &args;
    while let Some(a) = rest.first().filter(|a| a.starts_with('-') && a.len() > 1) {
        if a == "--" {
            rest = &rest[1..];
            break;
        }
        match a.as_str() {
            "-c" => sh.history.clear(),
            "-s" => {
                let line = rest[1..].join(" ");
                sh.history.push(line);
                if sh.history.len() > MAX_HISTORY {
                    sh.history.remove(0);
                }
                return Ok(0);
            }
            "-p" => {
                // History expansion is off in a script: the words come back as they are.
                let out: String = rest[1..].iter().map(|w| format!("{w}\n")).collect();
                let _ = io.stdout().write_str(&out).await;
                return Ok(0);
            }
            "-d" => {
                let Some(n) = rest.get(1) else {
                    return super::fail(
                        sh,
                        io,
                        "history: -d: option requires an argument".into(),
                        2,
                    )
                    .await;
                };
                let len = sh.history.len() as i64;
                let at = n
                    .parse::<i64>()
                    .ok()
                    .map(|k| if k < 0 { len + k + 1 } else { k });
                match at.filter(|k| *k >= 1 && *k <= len) {
                    Some(k) => {
                        sh.history.remove((k - 1) as usize);
                    }
                    None => {
                        let msg = format!("history: {n}: history position out of range");
                        return super::fail(sh, io, msg, 1).await;
                    }
                }
                return Ok(0);
            }
            "-a" | "-n" | "-r" | "-w" => return Ok(0),
            other => {
                let opt = other.get(..2).unwrap_or(other);
                return super::invalid_option(sh, io, "history", opt).await;
            }
        }
        rest = &rest[1..];
    }
    let count = match rest.first() {
        None => sh.history.len(),
        Some(n) => match n.parse::<usize>() {
            Ok(k) => k.min(sh.history.len()),
            Err(_) => {
                let msg = format!("history: {n}: numeric argument required");
                return super::fail(sh, io, msg, 1).await;
            }
        },
    };
    let first = sh.history.len() - count;
    let out: String = sh.history[first..]
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{:5}  {l}\n", first + i + 1))
        .collect();
    let _ = io.stdout().write_str(&out).await;
    Ok(0)
}

/// `fc`: edits or re-runs history entries; a script has none to list or run.
pub(crate) async fn fc(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if let Some(a) = args.first().filter(|a| a.starts_with('-') && a.len() > 1)
        && let Some(c) = a[1..].chars().find(|c| !"elnrs0123456789".contains(*c))
    {
        return super::invalid_option(sh, io, "fc", &format!("-{c}")).await;
    }
    Ok(0)
}

/// `bind`: there is no line editor in a script, as bash warns.
pub(crate) async fn bind(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if let Some(a) = args.first().filter(|a| a.starts_with('-') && a.len() > 1)
        && let Some(c) = a[1..]
            .chars()
            .find(|c| !"lpsvPSVXm:f:q:u:r:x:".contains(*c) || *c == ':')
    {
        return super::invalid_option(sh, io, "bind", &format!("-{c}")).await;
    }
    super::fail(sh, io, "bind: warning: line editing not enabled".into(), 0).await
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn history_lists_what_s_added() {
        let script = "history; history -s 'echo a'; history -s b c; history; history 1; history -d 1; history";
        let expected = (
            0,
            "    1  echo a\n    2  b c\n    2  b c\n    1  b c\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn bind_warns() {
        let script = "bind -l; echo $?";
        let expected = (
            0,
            "0\n".to_string(),
            "forkbox: bind: warning: line editing not enabled\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }
}

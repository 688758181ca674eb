//! `ulimit [-SHa] [-cdefilmnpqrstuvxR] [limit]`: show and set the shell's resource limits.
//!
//! forkbox runs no host processes, so these limits are recorded and reported, not
//! enforced: what bounds a session is its own budget (memory, tasks, storage quota, see
//! `forkbox_commands::Budget`). They behave as bash's do otherwise: a subshell gets a
//! copy, a hard limit can be lowered but not raised, a soft limit never exceeds its hard
//! one, and setting a limit without `-S`/`-H` sets both.

use crate::shell::Shell;
use crate::shell::error::ShellError;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// One limit: its option letter, bash's description and unit, and its default value
/// (`None` is unlimited).
struct Resource {
    letter: char,
    what: &'static str,
    unit: Option<&'static str>,
    soft: Option<u64>,
    hard: Option<u64>,
}

/// bash's limits on Linux in `ulimit -a` order, with a typical system's defaults.
const RESOURCES: &[Resource] = &[
    res(
        'R',
        "real-time non-blocking time",
        Some("microseconds"),
        None,
        None,
    ),
    res('c', "core file size", Some("blocks"), Some(0), None),
    res('d', "data seg size", Some("kbytes"), None, None),
    res('e', "scheduling priority", None, Some(0), Some(0)),
    res('f', "file size", Some("blocks"), None, None),
    res('i', "pending signals", None, Some(63_704), Some(63_704)),
    res(
        'l',
        "max locked memory",
        Some("kbytes"),
        Some(8192),
        Some(8192),
    ),
    res('m', "max memory size", Some("kbytes"), None, None),
    res('n', "open files", None, Some(1024), Some(1_048_576)),
    res('p', "pipe size", Some("512 bytes"), Some(8), Some(8)),
    res(
        'q',
        "POSIX message queues",
        Some("bytes"),
        Some(819_200),
        Some(819_200),
    ),
    res('r', "real-time priority", None, Some(0), Some(0)),
    res('s', "stack size", Some("kbytes"), Some(8192), None),
    res('t', "cpu time", Some("seconds"), None, None),
    res('u', "max user processes", None, Some(63_704), Some(63_704)),
    res('v', "virtual memory", Some("kbytes"), None, None),
    res('x', "file locks", None, None, None),
];

const fn res(
    letter: char,
    what: &'static str,
    unit: Option<&'static str>,
    soft: Option<u64>,
    hard: Option<u64>,
) -> Resource {
    Resource {
        letter,
        what,
        unit,
        soft,
        hard,
    }
}

/// The shell's current limits: (soft, hard) per entry of [`RESOURCES`].
#[derive(Clone, Debug)]
pub(crate) struct Limits(Vec<(Option<u64>, Option<u64>)>);

impl Default for Limits {
    fn default() -> Self {
        Limits(RESOURCES.iter().map(|r| (r.soft, r.hard)).collect())
    }
}

fn shown(v: Option<u64>) -> String {
    v.map_or_else(|| "unlimited".to_string(), |n| n.to_string())
}

/// `LABEL (UNIT, -X) ` as bash pads it in listings.
fn label(r: &Resource) -> String {
    let unit = match r.unit {
        Some(u) => format!("({u}, -{}) ", r.letter),
        None => format!("(-{}) ", r.letter),
    };
    format!("{:<20} {unit:>20}", r.what)
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let (mut soft, mut hard, mut all) = (false, false, false);
    // Each limit asked for, with its own value if one followed it (`-t 5 -f 100`): as
    // bash's options with an optional argument, the rest of the word or the next word
    // unless that is an option.
    let mut chosen: Vec<(usize, Option<String>)> = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if a == "--" {
            break;
        }
        if !a.starts_with('-') || a == "-" {
            i -= 1;
            break;
        }
        for (at, c) in a.char_indices().skip(1) {
            match c {
                'S' => soft = true,
                'H' => hard = true,
                'a' => all = true,
                _ => {
                    let Some(r) = RESOURCES.iter().position(|r| r.letter == c) else {
                        let opt = format!("-{c}");
                        return super::invalid_option(sh, io, "ulimit", &opt).await;
                    };
                    let attached = &a[at + c.len_utf8()..];
                    if !attached.is_empty() {
                        chosen.push((r, Some(attached.to_string())));
                        break;
                    }
                    let next = args.get(i).filter(|n| !n.starts_with('-') || *n == "-");
                    if next.is_some() {
                        i += 1;
                    }
                    chosen.push((r, next.cloned()));
                }
            }
        }
    }
    let show_hard = hard && !soft;
    if all {
        return show(sh, &(0..RESOURCES.len()).collect::<Vec<_>>(), show_hard, io).await;
    }
    let mut operand = args.get(i).cloned();
    if chosen.is_empty() {
        let f = RESOURCES.iter().position(|r| r.letter == 'f').unwrap_or(0);
        chosen.push((f, operand.take()));
    }
    // An operand is the value of the last limit when that has none of its own.
    if let Some(last) = chosen.last_mut()
        && last.1.is_none()
    {
        last.1 = operand;
    }
    let labelled = chosen.len() > 1;
    for (r, value) in &chosen {
        match value {
            Some(v) => {
                // The first failure ends the command.
                if let Err(msg) = set_limit(sh, *r, v, soft, hard) {
                    let e = ShellError::Builtin(format!("ulimit: {msg}"));
                    sh.report(&io.stderr(), &e).await;
                    return Ok(1);
                }
            }
            None if labelled => show(sh, &[*r], show_hard, io).await.map(|_| ())?,
            None => {
                let (s, h) = sh.ulimits.0.get(*r).copied().unwrap_or((None, None));
                let v = shown(if show_hard { h } else { s });
                let _ = io.stdout().write_str(&format!("{v}\n")).await;
            }
        }
    }
    Ok(0)
}

/// Limits `which`, each on a line with its label.
async fn show(sh: &Shell, which: &[usize], show_hard: bool, io: &Fds) -> Exec<i32> {
    let mut out = String::new();
    for &i in which {
        let (s, h) = sh.ulimits.0.get(i).copied().unwrap_or((None, None));
        out.push_str(&label(&RESOURCES[i]));
        out.push_str(&shown(if show_hard { h } else { s }));
        out.push('\n');
    }
    let _ = io.stdout().write_str(&out).await;
    Ok(0)
}

/// A limit given as a number, read as bash reads it: decimal digits only (leading zeros
/// too; none at all is 0), accumulated in an unsigned word that wraps; `0x…` is refused
/// as a hex number. The value in bytes (times the unit's block size) must fit a signed
/// word, else it is out of range.
fn parse_value(r: &Resource, v: &str) -> Result<u64, String> {
    if v.starts_with("0x") {
        return Err(format!("{v}: invalid hex number"));
    }
    if !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{v}: invalid number"));
    }
    let n = v.bytes().fold(0u64, |n, b| {
        n.wrapping_mul(10).wrapping_add(u64::from(b - b'0'))
    });
    let factor: i64 = match r.unit {
        Some("blocks" | "512 bytes") => 512,
        Some("kbytes") => 1024,
        _ => 1,
    };
    // The wrapped word reinterpreted as signed, as bash multiplies it.
    if (n as i64).checked_mul(factor).is_none() {
        return Err(format!("{v}: limit out of range"));
    }
    Ok(n)
}

/// Sets limit `i` to `value` (a number, `unlimited`, `soft` or `hard`), or bash's message.
fn set_limit(sh: &mut Shell, i: usize, value: &str, soft: bool, hard: bool) -> Result<(), String> {
    let r = &RESOURCES[i];
    let (cur_soft, cur_hard) = sh.ulimits.0.get(i).copied().unwrap_or((None, None));
    let new = match value {
        "unlimited" => None,
        "hard" => cur_hard,
        "soft" => cur_soft,
        v => Some(parse_value(r, v)?),
    };
    let (set_soft, set_hard) = if soft || hard {
        (soft, hard)
    } else {
        (true, true)
    };
    let above = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(a), Some(b)) => a > b,
    };
    let denied = |why: &str| format!("{}: cannot modify limit: {why}", r.what);
    if r.letter == 'p' && new != cur_soft {
        return Err(denied("Invalid argument"));
    }
    if set_hard && above(new, cur_hard) {
        return Err(denied("Operation not permitted"));
    }
    let hard_after = if set_hard { new } else { cur_hard };
    if set_soft && above(new, hard_after) {
        return Err(denied("Invalid argument"));
    }
    if !set_soft && above(cur_soft, new) {
        return Err(denied("Invalid argument"));
    }
    if let Some(slot) = sh.ulimits.0.get_mut(i) {
        if set_soft {
            slot.0 = new;
        }
        if set_hard {
            slot.1 = new;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn lowering_is_kept_and_raising_the_hard_limit_is_refused() {
        let script = "ulimit -n 64; ulimit -n; ulimit -n 128; echo $?; ulimit -Hn";
        let expected = (
            0,
            "64\n1\n64\n".to_string(),
            "bash: line 1: ulimit: open files: cannot modify limit: Operation not permitted\n"
                .to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn several_limits_are_labelled() {
        let script = "ulimit -t 10; ulimit -n -t";
        let expected = (
            0,
            "open files                          (-n) 1024\ncpu time                   (seconds, -t) 10\n"
                .to_string(),
            String::new(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn a_bad_value_is_an_invalid_number() {
        let script = "ulimit -n abc; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: ulimit: abc: invalid number\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }
}

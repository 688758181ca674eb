//! Signal numbers and names (Linux x86-64): what `kill`, `trap` and `timeout` take and
//! show. The shell delivers signals as messages (see the shell's jobs); this is only the
//! vocabulary.

/// Signal numbers and names (Linux x86-64), as `kill -l` lists them.
pub const SIGNALS: &[(i32, &str)] = &[
    (1, "HUP"),
    (2, "INT"),
    (3, "QUIT"),
    (4, "ILL"),
    (5, "TRAP"),
    (6, "ABRT"),
    (7, "BUS"),
    (8, "FPE"),
    (9, "KILL"),
    (10, "USR1"),
    (11, "SEGV"),
    (12, "USR2"),
    (13, "PIPE"),
    (14, "ALRM"),
    (15, "TERM"),
    (16, "STKFLT"),
    (17, "CHLD"),
    (18, "CONT"),
    (19, "STOP"),
    (20, "TSTP"),
    (21, "TTIN"),
    (22, "TTOU"),
    (23, "URG"),
    (24, "XCPU"),
    (25, "XFSZ"),
    (26, "VTALRM"),
    (27, "PROF"),
    (28, "WINCH"),
    (29, "IO"),
    (30, "PWR"),
    (31, "SYS"),
];

/// The name of real-time signal `n` (34..=64) as bash shows it.
fn rt_name(n: i32) -> Option<String> {
    match n {
        34 => Some("RTMIN".into()),
        35..=49 => Some(format!("RTMIN+{}", n - 34)),
        50..=63 => Some(format!("RTMAX-{}", 64 - n)),
        64 => Some("RTMAX".into()),
        _ => None,
    }
}

/// The name of signal `n` without `SIG` (`TERM`), if it is one.
pub fn signal_name(n: i32) -> Option<String> {
    SIGNALS
        .iter()
        .find(|(k, _)| *k == n)
        .map(|(_, s)| (*s).to_string())
        .or_else(|| rt_name(n))
}

/// The number of a signal given as a number, `TERM`, `SIGTERM` or `term`.
pub fn signal_number(spec: &str) -> Option<i32> {
    if let Ok(n) = spec.parse::<i32>() {
        return (signal_name(n).is_some()).then_some(n);
    }
    let up = spec.to_ascii_uppercase();
    let bare = up.strip_prefix("SIG").unwrap_or(&up);
    (1..=64).find(|n| signal_name(*n).is_some_and(|s| s == bare))
}

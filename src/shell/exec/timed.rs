//! The `time` keyword's report: `TIMEFORMAT` (`%[p][l]R|U|S`, `%P`, `%%`), `time -p`.
//! A session runs no processes of its own, so user and system time are reported as 0.

/// bash's default `TIMEFORMAT`.
const DEFAULT: &str = "\nreal\t%3lR\nuser\t%3lU\nsys\t%3lS";

/// `time -p`'s format.
const POSIX: &str = "real %2R\nuser %2U\nsys %2S";

/// The report for a pipeline that took `real` seconds; `None` when `TIMEFORMAT` is empty.
pub(super) fn report(format: Option<&str>, posix: bool, real: f64) -> Option<String> {
    let format = if posix {
        POSIX
    } else {
        format.unwrap_or(DEFAULT)
    };
    if format.is_empty() {
        return None;
    }
    let mut out = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut precision = 3;
        if let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
            precision = d.min(3) as usize;
            chars.next();
        }
        let long = chars.peek() == Some(&'l');
        if long {
            chars.next();
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some(k @ ('R' | 'U' | 'S')) => {
                let secs = if k == 'R' { real } else { 0.0 };
                out.push_str(&seconds(secs, precision, long));
            }
            Some('P') => out.push_str(&format!("{:.2}", 0.0)),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    out.push('\n');
    Some(out)
}

fn seconds(secs: f64, precision: usize, long: bool) -> String {
    if long {
        let mins = (secs / 60.0).floor();
        let rest = secs - mins * 60.0;
        if precision == 0 {
            format!("{mins}m{rest:.0}s")
        } else {
            format!("{mins}m{rest:.precision$}s")
        }
    } else {
        format!("{secs:.precision$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_bash() {
        assert_eq!(
            report(None, false, 1.5).as_deref(),
            Some("\nreal\t0m1.500s\nuser\t0m0.000s\nsys\t0m0.000s\n")
        );
        assert_eq!(
            report(Some("%R|%1R|%lR|%P|%%"), false, 61.25).as_deref(),
            Some("61.250|61.2|1m1.250s|0.00|%\n")
        );
        assert_eq!(
            report(None, true, 0.0).as_deref(),
            Some("real 0.00\nuser 0.00\nsys 0.00\n")
        );
        assert_eq!(report(Some(""), false, 1.0), None);
    }
}

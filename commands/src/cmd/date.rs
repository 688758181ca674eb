//! `date`: print the time in the zone `TZ` names (UTC when unset; see [`Zone`]), GNU's
//! default format or +FORMAT via chrono's strftime. Setting the clock is not possible.

use std::time::SystemTime;

use async_trait::async_trait;
use chrono::{DateTime, FixedOffset};
use clap::Parser;

use super::touch::parse_date;
use super::util::quote;
use super::zone::Zone;
use crate::{CmdResult, Command, Context, parse_args};

/// Display the current time in the given FORMAT (+FORMAT, strftime-style),
/// or GNU's default format.
#[derive(Parser, Debug)]
#[command(name = "date")]
struct Args {
    /// Display time described by STRING (@SECONDS, YYYY-MM-DD[ HH:MM[:SS]], RFC 3339).
    #[arg(short = 'd', long = "date", value_name = "STRING")]
    date: Option<String>,
    /// Display the last modification time of FILE.
    #[arg(short = 'r', long = "reference", value_name = "FILE")]
    reference: Option<String>,
    /// Output date and time in RFC 5322 format.
    #[arg(short = 'R', long = "rfc-email")]
    rfc_email: bool,
    /// Print or read Coordinated Universal Time, whatever TZ says.
    #[arg(short = 'u', long = "utc", visible_alias = "universal")]
    utc: bool,
    /// Output date/time in ISO 8601 format: FMT 'date' (the default), 'hours', 'minutes',
    /// 'seconds' or 'ns'.
    #[arg(short = 'I', long = "iso-8601", value_name = "FMT", num_args = 0..=1, require_equals = true, default_missing_value = "date")]
    iso: Option<String>,
    /// Output date/time in RFC 3339 format: FMT 'date', 'seconds' or 'ns'.
    #[arg(long = "rfc-3339", value_name = "FMT")]
    rfc_3339: Option<String>,
    /// +FORMAT
    #[arg(value_name = "+FORMAT")]
    format: Option<String>,
}

pub struct Date;

#[async_trait]
impl Command for Date {
    fn name(&self) -> &'static str {
        "date"
    }
    fn summary(&self) -> &'static str {
        "print the date and time"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        // `-Iseconds`: GNU's optional argument of -I, attached.
        let args: Vec<String> = args
            .into_iter()
            .map(|a| match a.strip_prefix("-I") {
                Some(v) if !v.is_empty() && !v.starts_with('=') => format!("--iso-8601={v}"),
                _ => a,
            })
            .collect();
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        let zone = if args.utc {
            Zone::utc()
        } else {
            Zone::from_env(&ctx.env)
        };
        let time: SystemTime = if let Some(d) = &args.date {
            match read_date(d, &zone) {
                Some(t) => t,
                None => {
                    ctx.warn("date", format!("invalid date {}", quote(d))).await;
                    return Ok(1);
                }
            }
        } else if let Some(r) = &args.reference {
            match ctx.fs.stat(&ctx.path(r)).await {
                Ok(m) => m.mtime,
                Err(e) => {
                    ctx.warn("date", format!("{r}: {e}")).await;
                    return Ok(1);
                }
            }
        } else {
            SystemTime::now()
        };
        let (dt, abbrev) = zone.at(time);
        let fmt = match &args.format {
            Some(f) => match f.strip_prefix('+') {
                Some(f) => f.to_string(),
                None if args.date.is_some() || args.reference.is_some() => {
                    ctx.err(format!(
                        "date: the argument {} lacks a leading '+';\n\
                         when using an option to specify date(s), any non-option\n\
                         argument must be a format string beginning with '+'\n\
                         Try 'date --help' for more information.\n",
                        quote(f)
                    ))
                    .await;
                    return Ok(1);
                }
                // Without -d, an operand is a date to set the clock to.
                None => {
                    ctx.warn("date", format!("invalid date {}", quote(f))).await;
                    return Ok(1);
                }
            },
            None if args.rfc_email => "%a, %d %b %Y %H:%M:%S %z".into(),
            None if args.iso.is_some() || args.rfc_3339.is_some() => {
                let none = String::new();
                let (opt, spec, fmts): (_, _, &[(&str, &str)]) = match &args.iso {
                    Some(v) => (
                        "--iso-8601",
                        v,
                        &[
                            ("hours", "%Y-%m-%dT%H%:z"),
                            ("minutes", "%Y-%m-%dT%H:%M%:z"),
                            ("date", "%Y-%m-%d"),
                            ("seconds", "%Y-%m-%dT%H:%M:%S%:z"),
                            ("ns", "%Y-%m-%dT%H:%M:%S,%9f%:z"),
                        ],
                    ),
                    None => (
                        "--rfc-3339",
                        args.rfc_3339.as_ref().unwrap_or(&none),
                        &[
                            ("date", "%Y-%m-%d"),
                            ("seconds", "%Y-%m-%d %H:%M:%S%:z"),
                            ("ns", "%Y-%m-%d %H:%M:%S.%9f%:z"),
                        ],
                    ),
                };
                // GNU takes any unambiguous prefix of a name.
                let hits: Vec<&(&str, &str)> = fmts
                    .iter()
                    .filter(|(n, _)| !spec.is_empty() && n.starts_with(spec.as_str()))
                    .collect();
                match hits.as_slice() {
                    [(_, f)] => f.to_string(),
                    _ => {
                        let why = if hits.is_empty() {
                            "invalid"
                        } else {
                            "ambiguous"
                        };
                        let mut msg = format!(
                            "date: {why} argument {} for {}\nValid arguments are:\n",
                            quote(spec),
                            quote(opt)
                        );
                        for (n, _) in fmts {
                            msg.push_str(&format!("  - {}\n", quote(n)));
                        }
                        msg.push_str("Try 'date --help' for more information.\n");
                        ctx.err(msg).await;
                        return Ok(1);
                    }
                }
            }
            None => "%a %b %e %H:%M:%S %Z %Y".into(),
        };
        let fmt = gnu_directives(&fmt, &dt, &abbrev);
        // chrono reports a bad specifier when formatting; catch it instead of panicking.
        let mut text = String::new();
        let items = chrono::format::StrftimeItems::new(&fmt);
        if items
            .clone()
            .any(|i| matches!(i, chrono::format::Item::Error))
        {
            ctx.warn("date", format!("invalid format {}", quote(&fmt)))
                .await;
            return Ok(1);
        }
        use std::fmt::Write as _;
        if write!(text, "{}", dt.format_with_items(items)).is_err() {
            ctx.warn("date", format!("invalid format {}", quote(&fmt)))
                .await;
            return Ok(1);
        }
        ctx.out(format!("{text}\n")).await?;
        Ok(0)
    }
}

/// Rewrites the directives GNU's date has and chrono's strftime lacks into literal text:
/// `%N` (nanoseconds; `%3N` the first 3 digits), `%q` (the quarter), `%Z` (the zone's
/// abbreviation `abbrev`, where chrono would show a fixed offset's digits), and the flags
/// and widths ([`with_flags`]). The rest is left to chrono.
fn gnu_directives(fmt: &str, dt: &DateTime<FixedOffset>, abbrev: &str) -> String {
    use chrono::{Datelike, Timelike};
    let literal = |s: &str| s.replace('%', "%%");
    let mut out = String::with_capacity(fmt.len());
    let mut rest = fmt;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let spec = &rest[i + 1..];
        if let Some(after) = spec.strip_prefix('%') {
            out.push_str("%%");
            rest = after;
            continue;
        }
        let flags = spec.len() - spec.trim_start_matches(['-', '_', '0', '^', '#']).len();
        let after_flags = &spec[flags..];
        let digits = after_flags.len()
            - after_flags
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .len();
        let width: Option<usize> = after_flags[..digits].parse().ok();
        let Some(conv) = after_flags[digits..].chars().next() else {
            out.push_str(&rest[i..]);
            return out;
        };
        let whole = &rest[i..i + 1 + flags + digits + conv.len_utf8()];
        rest = &after_flags[digits + conv.len_utf8()..];
        match conv {
            'N' => {
                let nanos = format!("{:09}", dt.nanosecond() % 1_000_000_000);
                let w = width.unwrap_or(9);
                let digits: String = nanos
                    .chars()
                    .chain(std::iter::repeat('0'))
                    .take(w)
                    .collect();
                out.push_str(&digits);
            }
            'q' => out.push_str(&((dt.month() - 1) / 3 + 1).to_string()),
            'Z' => out.push_str(&literal(&with_flags(&spec[..flags], width, conv, abbrev))),
            _ if flags > 0 || width.is_some() => {
                let plain = format!("%{conv}");
                let items = chrono::format::StrftimeItems::new(&plain);
                if items
                    .clone()
                    .any(|i| matches!(i, chrono::format::Item::Error))
                {
                    out.push_str(whole);
                } else {
                    let text = dt.format_with_items(items).to_string();
                    out.push_str(&literal(&with_flags(&spec[..flags], width, conv, &text)));
                }
            }
            _ => out.push_str(whole),
        }
    }
    out.push_str(rest);
    out
}

/// One conversion's text `text` under GNU's flags and width: `-` no padding, `_` spaces,
/// `0` zeros (numbers pad with zeros by default, `%e`, `%k`, `%l` and words with spaces),
/// `^` upper case, `#` the opposite case (`%#Z` is `utc`, `%#a` `TUE`).
fn with_flags(flags: &str, width: Option<usize>, conv: char, text: &str) -> String {
    let body = if flags.contains('^') {
        text.to_uppercase()
    } else if flags.contains('#') {
        match conv {
            'a' | 'A' | 'b' | 'B' | 'h' => text.to_uppercase(),
            'p' | 'Z' => text.to_lowercase(),
            _ => text.to_string(),
        }
    } else {
        text.to_string()
    };
    if !"CdegGHIjklmMsSuUVwWyY".contains(conv) {
        let w = width.unwrap_or(0);
        let pad = if flags.contains('0') { '0' } else { ' ' };
        let fill: String =
            std::iter::repeat_n(pad, w.saturating_sub(body.chars().count())).collect();
        return fill + &body;
    }
    let natural = body.len();
    let (sign, unsigned) = match body.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", body.as_str()),
    };
    let digits = match unsigned.trim_start_matches([' ', '0']) {
        "" => "0",
        d => d,
    };
    let pad = if flags.contains('-') {
        return format!("{sign}{digits}");
    } else if flags.contains('_') {
        ' '
    } else if flags.contains('0') || !"ekl".contains(conv) {
        '0'
    } else {
        ' '
    };
    let fill = width
        .unwrap_or(natural)
        .saturating_sub(sign.len() + digits.len());
    let fill: String = std::iter::repeat_n(pad, fill).collect();
    if pad == '0' {
        format!("{sign}{fill}{digits}")
    } else {
        format!("{fill}{sign}{digits}")
    }
}

/// `date -d`'s STRING in `zone`: a leading `TZ="RULE"` reads the rest in RULE's zone
/// (an unknown RULE is UTC, as in glibc), then the fixed forms [`parse_date`] knows, then
/// GNU's free-form ones ([`relative_date`]).
pub(crate) fn read_date(text: &str, zone: &Zone) -> Option<SystemTime> {
    let (zone, text) = match text.trim_start().strip_prefix("TZ=\"") {
        Some(rest) => {
            let mut rule = String::new();
            let mut chars = rest.char_indices();
            let end = loop {
                match chars.next()? {
                    (_, '\\') => rule.push(chars.next()?.1),
                    (i, '"') => break i,
                    (_, c) => rule.push(c),
                }
            };
            (Zone::parse(&rule), &rest[end + 1..])
        }
        None => (zone.clone(), text),
    };
    if text.trim().is_empty() {
        return Some(SystemTime::now());
    }
    let text = time_zone_offsets(text)?;
    parse_date(&text, &zone).or_else(|| relative_date(&text, &zone))
}

/// GNU reads a signed number right after a time of day as that time's UTC offset
/// (`12:00 +2` is 12:00+02:00, `-0530` -05:30) and a bare unit word after it as one unit
/// (`12:00 +2 hours` is 10:00 UTC plus an hour), where parse_datetime would read `+2 hours`
/// as a relative item: rewrites `text` into the explicit form (`12:00+02:00 +1 hours`).
/// `None` for an offset past 24 hours, which GNU finds invalid.
fn time_zone_offsets(text: &str) -> Option<String> {
    static TIME_SIGNED: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(
        || {
            regex::Regex::new(
                r"(?i)(^|\s)(\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)\s*([+-])\s*(\d{1,4})(?::(\d{2}))?(\s+(?:year|month|fortnight|week|day|hour|minute|min|second|sec)s?\b|\s|$)",
            )
            .ok()
        },
    );
    let Some(re) = TIME_SIGNED.as_ref() else {
        return Some(text.to_string());
    };
    let mut valid = true;
    let out = re.replace(text, |c: &regex::Captures| {
        let digits = &c[4];
        let n: u32 = digits.parse().unwrap_or(0);
        let (h, m) = match c.get(5) {
            Some(m) => (n, m.as_str().parse().unwrap_or(0)),
            None if digits.len() <= 2 => (n, 0),
            None => (n / 100, n % 100),
        };
        valid &= h < 24 || (h == 24 && m == 0);
        let unit = c.get(6).map_or("", |u| u.as_str());
        let unit = if unit.trim().is_empty() {
            unit.to_string()
        } else {
            format!(" +1 {}", unit.trim())
        };
        format!("{}{}{}{h:02}:{m:02}{unit}", &c[1], &c[2], &c[3])
    });
    valid.then(|| out.into_owned())
}

/// GNU's free-form dates that [`parse_date`] leaves: relative items (`+1 day`,
/// `2 weeks ago`, `yesterday`, `next monday`), month names and the like, read in `zone`
/// relative to now.
fn relative_date(text: &str, zone: &Zone) -> Option<SystemTime> {
    let now = jiff::Timestamp::now().to_zoned(zone.tz().clone());
    let when = parse_datetime::parse_datetime_at_date(now, text)
        .ok()?
        .into_zoned()?;
    let t = when.timestamp();
    let secs = t.as_second();
    let nanos = u32::try_from(t.subsec_nanosecond()).unwrap_or(0);
    if secs >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(secs.unsigned_abs(), nanos))
    } else {
        SystemTime::UNIX_EPOCH
            .checked_sub(std::time::Duration::new(secs.unsigned_abs(), 0))?
            .checked_add(std::time::Duration::new(0, nanos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[test]
    fn signed_number_after_a_time_is_its_zone() {
        let f = |s: &str| time_zone_offsets(s);
        assert_eq!(
            f("2024-01-01 12:00 +2 hours").as_deref(),
            Some("2024-01-01 12:00+02:00 +1 hours")
        );
        assert_eq!(f("12:00:30 - 0130").as_deref(), Some("12:00:30-01:30"));
        assert_eq!(
            f("2024-01-01 +2 hours").as_deref(),
            Some("2024-01-01 +2 hours")
        );
        assert_eq!(f("12:00 +25 hours"), None);
    }

    #[tokio::test]
    async fn named_zones() {
        let inv = Invocation {
            env: [("TZ".to_string(), "Asia/Tokyo".to_string())]
                .into_iter()
                .collect(),
            ..Invocation::default()
        };
        assert_eq!(
            inv.run(&Date, &["-d", "@0"]).await.1,
            "Thu Jan  1 09:00:00 JST 1970\n"
        );
        assert_eq!(
            inv.run(&Date, &["-d", "2020-01-01 09:00", "+%s %Z %z"])
                .await
                .1,
            "1577836800 JST +0900\n"
        );
        assert_eq!(
            inv.run(
                &Date,
                &["-d", "TZ=\"Europe/Paris\" 2020-07-01 02:00", "+%F %T"]
            )
            .await
            .1,
            "2020-07-01 09:00:00\n"
        );
    }

    #[test]
    fn flags_and_widths() {
        assert_eq!(with_flags("-", None, 'd', "05"), "5");
        assert_eq!(with_flags("_", None, 'H', "04"), " 4");
        assert_eq!(with_flags("0", None, 'e', " 5"), "05");
        assert_eq!(with_flags("", Some(10), 'Y', "2024"), "0000002024");
        assert_eq!(with_flags("#", None, 'Z', "UTC"), "utc");
        assert_eq!(with_flags("^", Some(6), 'a', "Tue"), "   TUE");
    }

    /// Found by the fuzz harness's edge inputs: each panicked, in `SystemTime` arithmetic,
    /// in `Duration::from_secs_f64` or in chrono's conversion.
    #[tokio::test]
    async fn times_out_of_range() {
        let inv = Invocation::default();
        for d in [
            "@9223372036854775807",
            "@-9223372036854775808",
            "@1e20",
            "@inf",
            "@nan",
            "@99999999999999",
        ] {
            let (st, out, err) = inv.run(&Date, &["-d", d]).await;
            assert_eq!((st, out.as_str()), (1, ""), "{d}");
            assert!(err.contains("invalid date"), "{d}: {err}");
        }
        let (st, out, _) = inv.run(&Date, &["-d", "@-1.5", "+%s"]).await;
        assert_eq!((st, out.as_str()), (0, "-2\n"));
    }

    /// A file's mtime is metadata anyone may set: one past chrono's range is shown as the
    /// range's end by `date -r`, `ls -l` and `stat`, not a panic.
    #[tokio::test]
    async fn mtimes_out_of_range() {
        let fs = crate::testing::MemFs::with_files(&[("/f", "x")]);
        fs.set_mtime_secs("/f", 1 << 60);
        let inv = Invocation {
            fs,
            ..Invocation::default()
        };
        let (st, out, _) = inv.run(&Date, &["-r", "/f", "+%Y"]).await;
        assert_eq!((st, out.as_str()), (0, "+262142\n"));
        let (st, out, _) = inv.run(&super::super::ls::Ls, &["-l", "/f"]).await;
        assert!(st == 0 && out.contains("262142"), "{out}");
        let (st, out, _) = inv
            .run(&super::super::stat::Stat, &["-c", "%y", "/f"])
            .await;
        assert!(st == 0 && out.contains("262142"), "{out}");
    }

    #[tokio::test]
    async fn formats() {
        let inv = Invocation::default();
        let at = |f: &'static str| ["-d", "2024-03-05 07:08:09", f];
        assert_eq!(
            inv.run(&Date, &at("+%s%N")).await.1,
            "1709622489000000000\n"
        );
        assert_eq!(
            inv.run(&Date, &at("+%3N|%12N|%q|%^a %^b|%%N")).await.1,
            "000|000000000000|1|TUE MAR|%N\n"
        );
        assert_eq!(
            inv.run(&Date, &["-d", "@0"]).await.1,
            "Thu Jan  1 00:00:00 UTC 1970\n"
        );
        assert_eq!(
            inv.run(
                &Date,
                &["-d", "2020-01-02 03:04:05", "+%Y/%m/%d %H:%M:%S %s"]
            )
            .await
            .1,
            "2020/01/02 03:04:05 1577934245\n"
        );
        assert_eq!(
            inv.run(&Date, &["-u", "-d", "@86400", "-I"]).await.1,
            "1970-01-02\n"
        );
        let (st, out, _) = inv.run(&Date, &["+%Y"]).await;
        assert_eq!((st, out.len()), (0, 5));
        assert_eq!(inv.run(&Date, &["-d", "nonsense"]).await.0, 1);
        assert_eq!(inv.run(&Date, &["2020"]).await.0, 1);
        assert_eq!(inv.run(&Date, &["+%Q"]).await.0, 1);
    }
}

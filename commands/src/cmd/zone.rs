//! The time zone `TZ` names, read as glibc reads it: a name in the IANA database
//! (`Europe/Paris`, `:Asia/Tokyo`), a POSIX rule (`EST5EDT`, `<+03>-3`, `UTC0`), or unset
//! or empty for UTC (the session's default). A `TZ` that is none of these is UTC shown
//! under the name's leading letters, as glibc shows it (`TZ=Nowhere/Land` is `Nowhere`,
//! +0000).
//!
//! The database is jiff's bundled copy, compiled into the binary: a session has no
//! `/usr/share/zoneinfo`, and the host's is never read on a session's behalf.

use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::SystemTime;

use chrono::{DateTime, FixedOffset, NaiveDateTime, Offset as _};
use jiff::tz::{AmbiguousOffset, TimeZone, TimeZoneDatabase};

use super::util::utc;

/// The IANA time-zone database inside the binary, opened once.
static DB: LazyLock<TimeZoneDatabase> = LazyLock::new(TimeZoneDatabase::bundled);

/// A time zone and, for a `TZ` glibc does not recognize, the abbreviation it shows.
#[derive(Clone, Debug)]
pub(crate) struct Zone {
    tz: TimeZone,
    /// Set when `tz` is a stand-in (UTC) for an unknown `TZ`.
    abbrev: Option<String>,
}

impl Zone {
    pub(crate) fn utc() -> Zone {
        Zone {
            tz: TimeZone::UTC,
            abbrev: None,
        }
    }

    /// The zone of a command's environment (`TZ`).
    pub(crate) fn from_env(env: &BTreeMap<String, String>) -> Zone {
        env.get("TZ").map_or_else(Zone::utc, |s| Zone::parse(s))
    }

    /// The zone a `TZ` value names; see the module header.
    pub(crate) fn parse(spec: &str) -> Zone {
        Zone::named(spec).unwrap_or_else(|| {
            let letters: String = spec
                .trim_start_matches(':')
                .chars()
                .take_while(char::is_ascii_alphabetic)
                .collect();
            Zone {
                tz: TimeZone::UTC,
                abbrev: Some(letters),
            }
        })
    }

    /// The zone `spec` names, or `None` when it is neither a database name nor a POSIX
    /// rule (`TZ="..."` in `date -d` then fails, where `TZ=` in the environment does not).
    pub(crate) fn named(spec: &str) -> Option<Zone> {
        let name = spec.strip_prefix(':').unwrap_or(spec);
        if name.is_empty() {
            return Some(Zone::utc());
        }
        let tz = DB.get(name).ok().or_else(|| TimeZone::posix(name).ok())?;
        Some(Zone { tz, abbrev: None })
    }

    pub(crate) fn tz(&self) -> &TimeZone {
        &self.tz
    }

    /// `t` in this zone, and the zone's abbreviation then (`CET`, `CEST`, `+03`).
    pub(crate) fn at(&self, t: SystemTime) -> (DateTime<FixedOffset>, String) {
        let u = utc(t);
        let ts = jiff::Timestamp::from_second(u.timestamp()).unwrap_or(if u.timestamp() < 0 {
            jiff::Timestamp::MIN
        } else {
            jiff::Timestamp::MAX
        });
        let info = self.tz.to_offset_info(ts);
        let abbrev = self
            .abbrev
            .clone()
            .unwrap_or_else(|| info.abbreviation().to_string());
        let offset = FixedOffset::east_opt(info.offset().seconds()).unwrap_or(chrono::Utc.fix());
        (u.with_timezone(&offset), abbrev)
    }

    /// The instant a wall-clock time `dt` in this zone stands for: `None` in a gap (a
    /// time skipped when clocks go forward, which GNU reports as an invalid date); in a
    /// fold, the later of the two, as glibc's `mktime` picks here.
    pub(crate) fn instant(&self, dt: NaiveDateTime) -> Option<SystemTime> {
        use chrono::{Datelike, Timelike};
        let civil = jiff::civil::DateTime::new(
            i16::try_from(dt.year()).ok()?,
            i8::try_from(dt.month()).ok()?,
            i8::try_from(dt.day()).ok()?,
            i8::try_from(dt.hour()).ok()?,
            i8::try_from(dt.minute()).ok()?,
            i8::try_from(dt.second()).ok()?,
            i32::try_from(dt.nanosecond()).ok()?,
        )
        .ok()?;
        let offset = match self.tz.to_ambiguous_timestamp(civil).offset() {
            AmbiguousOffset::Unambiguous { offset } => offset,
            AmbiguousOffset::Gap { .. } => return None,
            AmbiguousOffset::Fold { after, .. } => after,
        };
        let utc = dt - chrono::TimeDelta::seconds(i64::from(offset.seconds()));
        Some(utc.and_utc().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(z: &Zone, secs: i64) -> String {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs.unsigned_abs());
        let (dt, abbrev) = z.at(t);
        format!("{} {abbrev}", dt.format("%F %T %z"))
    }

    #[test]
    fn names_rules_and_unknowns() {
        assert_eq!(
            show(&Zone::parse("America/New_York"), 0),
            "1969-12-31 19:00:00 -0500 EST"
        );
        assert_eq!(
            show(&Zone::parse(":Asia/Tokyo"), 0),
            "1970-01-01 09:00:00 +0900 JST"
        );
        assert_eq!(
            show(&Zone::parse("EST5EDT"), 1_720_000_000),
            "2024-07-03 05:46:40 -0400 EDT"
        );
        assert_eq!(
            show(&Zone::parse("Nowhere/Land"), 0),
            "1970-01-01 00:00:00 +0000 Nowhere"
        );
        assert_eq!(show(&Zone::parse(""), 0), "1970-01-01 00:00:00 +0000 UTC");
        assert!(Zone::named("Nowhere/Land").is_none());
    }

    #[test]
    fn wall_clock_gaps_and_folds() {
        let z = Zone::parse("Europe/Berlin");
        let at = |s: &str| NaiveDateTime::parse_from_str(s, "%F %T").ok();
        assert!(z.instant(at("2024-03-31 02:30:00").unwrap()).is_none());
        let fold = z.instant(at("2024-10-27 02:30:00").unwrap()).unwrap();
        assert_eq!(show(&z, epoch(fold)), "2024-10-27 02:30:00 +0100 CET");
    }

    fn epoch(t: SystemTime) -> i64 {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }
}

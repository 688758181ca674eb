//! `locale`: the session's locale settings, as Debian's glibc `locale` prints them. A
//! session has the locales a minimal Debian system has (`C`, `C.utf8`, `POSIX`); its
//! categories follow `LC_ALL`, `LC_*` and `LANG` as glibc resolves them, and the keywords
//! of the numeric, time, messages, paper and measurement categories and `charmap` can be
//! queried by name.

use async_trait::async_trait;

use crate::{CmdResult, Command, Context};

const HELP: &str = "Usage: locale [OPTION...] NAME
  or:  locale [OPTION...] [-a|-m]
Get locale-specific information.

 System information:
  -a, --all-locales          Write names of available locales
  -m, --charmaps             Write names of available charmaps

 Modify output format:
  -c, --category-name        Write names of selected categories
  -k, --keyword-name         Write names of selected keywords
  -v, --verbose              Print more information

  -?, --help                 Give this help list
      --usage                Give a short usage message
  -V, --version              Print program version

";

/// The categories `locale` lists, in glibc's order.
const CATEGORIES: &[&str] = &[
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_MESSAGES",
    "LC_PAPER",
    "LC_NAME",
    "LC_ADDRESS",
    "LC_TELEPHONE",
    "LC_MEASUREMENT",
    "LC_IDENTIFICATION",
];

/// How a keyword's value prints: strings are quoted after `-k`'s `name=`, numbers are not.
#[derive(Clone, Copy)]
enum Val {
    Str(&'static str),
    Num(&'static str),
    /// The category's character set (`UTF-8` or `ANSI_X3.4-1968`), a string.
    Codeset,
}

/// The keywords of the categories that can be listed, with the C locale's values (which
/// C.UTF-8 shares but for the codeset).
const KEYWORDS: &[(&str, &[(&str, Val)])] = &[
    (
        "LC_NUMERIC",
        &[
            ("decimal_point", Val::Str(".")),
            ("thousands_sep", Val::Str("")),
            ("grouping", Val::Num("-1")),
            ("numeric-decimal-point-wc", Val::Num("46")),
            ("numeric-thousands-sep-wc", Val::Num("0")),
            ("numeric-codeset", Val::Codeset),
        ],
    ),
    (
        "LC_TIME",
        &[
            ("abday", Val::Str("Sun;Mon;Tue;Wed;Thu;Fri;Sat")),
            (
                "day",
                Val::Str("Sunday;Monday;Tuesday;Wednesday;Thursday;Friday;Saturday"),
            ),
            (
                "abmon",
                Val::Str("Jan;Feb;Mar;Apr;May;Jun;Jul;Aug;Sep;Oct;Nov;Dec"),
            ),
            (
                "mon",
                Val::Str(
                    "January;February;March;April;May;June;July;August;September;October;November;December",
                ),
            ),
            ("am_pm", Val::Str("AM;PM")),
            ("d_t_fmt", Val::Str("%a %b %e %H:%M:%S %Y")),
            ("d_fmt", Val::Str("%m/%d/%y")),
            ("t_fmt", Val::Str("%H:%M:%S")),
            ("t_fmt_ampm", Val::Str("%I:%M:%S %p")),
            ("era", Val::Num("")),
            ("era_year", Val::Str("")),
            ("era_d_fmt", Val::Str("")),
            ("alt_digits", Val::Num("")),
            ("era_d_t_fmt", Val::Str("")),
            ("era_t_fmt", Val::Str("")),
            ("time-era-num-entries", Val::Num("0")),
            ("time-era-entries", Val::Str("")),
            ("week-ndays", Val::Num("7")),
            ("week-1stday", Val::Num("19971130")),
            ("week-1stweek", Val::Num("4")),
            ("first_weekday", Val::Num("1")),
            ("first_workday", Val::Num("2")),
            ("cal_direction", Val::Num("1")),
            ("timezone", Val::Str("")),
            ("date_fmt", Val::Str("%a %b %e %H:%M:%S %Z %Y")),
            ("time-codeset", Val::Codeset),
            (
                "alt_mon",
                Val::Str(
                    "January;February;March;April;May;June;July;August;September;October;November;December",
                ),
            ),
            (
                "ab_alt_mon",
                Val::Str("Jan;Feb;Mar;Apr;May;Jun;Jul;Aug;Sep;Oct;Nov;Dec"),
            ),
        ],
    ),
    (
        "LC_MESSAGES",
        &[
            ("yesexpr", Val::Str("^[yY]")),
            ("noexpr", Val::Str("^[nN]")),
            ("yesstr", Val::Str("")),
            ("nostr", Val::Str("")),
            ("messages-codeset", Val::Codeset),
        ],
    ),
    (
        "LC_PAPER",
        &[
            ("height", Val::Num("297")),
            ("width", Val::Num("210")),
            ("paper-codeset", Val::Codeset),
        ],
    ),
    (
        "LC_MEASUREMENT",
        &[
            ("measurement", Val::Num("1")),
            ("measurement-codeset", Val::Codeset),
        ],
    ),
];

/// The name of the UTF-8 character map and of the C locale's (ASCII) one.
const UTF8: &str = "UTF-8";
const ASCII: &str = "ANSI_X3.4-1968";

fn env_value<'a>(ctx: &'a Context, name: &str) -> Option<&'a str> {
    ctx.env
        .get(name)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// The locale a category resolves to, as glibc picks it.
fn effective(ctx: &Context, category: &str) -> String {
    env_value(ctx, "LC_ALL")
        .or_else(|| env_value(ctx, category))
        .or_else(|| env_value(ctx, "LANG"))
        .unwrap_or("POSIX")
        .to_string()
}

/// Whether a locale name is a UTF-8 one (`C.UTF-8`, `C.utf8`).
fn is_utf8(locale: &str) -> bool {
    let l = locale.to_ascii_lowercase();
    l.ends_with(".utf-8") || l.ends_with(".utf8")
}

fn codeset(ctx: &Context, category: &str) -> &'static str {
    if is_utf8(&effective(ctx, category)) {
        UTF8
    } else {
        ASCII
    }
}

pub struct Locale;

#[derive(Default)]
struct Opts {
    all: bool,
    charmaps: bool,
    category: bool,
    keyword: bool,
    names: Vec<String>,
}

async fn bad_option(ctx: &Context, msg: String) -> CmdResult {
    ctx.err(format!(
        "locale: {msg}\nTry `locale --help' or `locale --usage' for more information.\n"
    ))
    .await;
    Ok(64)
}

#[async_trait]
impl Command for Locale {
    fn name(&self) -> &'static str {
        "locale"
    }
    fn summary(&self) -> &'static str {
        "get locale-specific information"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut o = Opts::default();
        let mut only_names = false;
        for a in &args {
            if only_names || !a.starts_with('-') || a == "-" {
                o.names.push(a.clone());
                continue;
            }
            if a == "--" {
                only_names = true;
                continue;
            }
            if let Some(long) = a.strip_prefix("--") {
                match long {
                    "help" => {
                        ctx.out(HELP).await?;
                        return Ok(0);
                    }
                    "usage" => {
                        ctx.out("Usage: locale [-a?ckmvV] [--all-locales] [--charmaps] [--category-name]\n            [--keyword-name] [--verbose] [--help] [--usage] [--version] NAME\n            [-a|-m]\n").await?;
                        return Ok(0);
                    }
                    "version" => {
                        ctx.out("locale (forkbox)\n").await?;
                        return Ok(0);
                    }
                    "all-locales" => o.all = true,
                    "charmaps" => o.charmaps = true,
                    "category-name" => o.category = true,
                    "keyword-name" => o.keyword = true,
                    "verbose" => {}
                    _ => return bad_option(ctx, format!("unrecognized option '{a}'")).await,
                }
                continue;
            }
            for c in a[1..].chars() {
                match c {
                    'a' => o.all = true,
                    'm' => o.charmaps = true,
                    'c' => o.category = true,
                    'k' => o.keyword = true,
                    'v' => {}
                    '?' => {
                        ctx.out(HELP).await?;
                        return Ok(0);
                    }
                    'V' => {
                        ctx.out("locale (forkbox)\n").await?;
                        return Ok(0);
                    }
                    _ => return bad_option(ctx, format!("invalid option -- '{c}'")).await,
                }
            }
        }
        if o.all {
            ctx.out("C\nC.utf8\nPOSIX\n").await?;
            return Ok(0);
        }
        if o.charmaps {
            ctx.out(format!("{ASCII}\n{UTF8}\n")).await?;
            return Ok(0);
        }
        if o.names.is_empty() {
            return listing(ctx).await;
        }
        let mut out = String::new();
        let mut status = 0;
        for name in &o.names {
            if name == "charmap" {
                let v = codeset(ctx, "LC_CTYPE");
                if o.category {
                    out.push_str("LC_CTYPE\n");
                }
                if o.keyword {
                    out.push_str(&format!("charmap=\"{v}\"\n"));
                } else {
                    out.push_str(&format!("{v}\n"));
                }
                continue;
            }
            if let Some((cat, words)) = KEYWORDS.iter().find(|(c, _)| c == name) {
                if o.category {
                    out.push_str(&format!("{cat}\n"));
                }
                for (k, v) in *words {
                    out.push_str(&render(ctx, cat, k, *v, o.keyword));
                }
                continue;
            }
            let found = KEYWORDS
                .iter()
                .find_map(|(cat, words)| words.iter().find(|(k, _)| k == name).map(|w| (cat, w)));
            match found {
                Some((cat, (k, v))) => {
                    if o.category {
                        out.push_str(&format!("{cat}\n"));
                    }
                    out.push_str(&render(ctx, cat, k, *v, o.keyword));
                }
                None => {
                    ctx.out(std::mem::take(&mut out)).await?;
                    ctx.err(format!("locale: unknown name \"{name}\"\n")).await;
                    status = 1;
                }
            }
        }
        ctx.out(out).await?;
        Ok(status)
    }
}

/// One keyword's line: `value`, or with `-k` `name=value` (strings quoted).
fn render(ctx: &Context, category: &str, key: &str, v: Val, keyword: bool) -> String {
    let (text, quoted) = match v {
        Val::Str(s) => (s, true),
        Val::Num(s) => (s, false),
        Val::Codeset => (codeset(ctx, category), true),
    };
    if !keyword {
        format!("{text}\n")
    } else if quoted {
        format!("{key}=\"{text}\"\n")
    } else {
        format!("{key}={text}\n")
    }
}

/// `locale` with no operand: each variable and what every category resolves to, a value
/// quoted when it was not set for that category itself.
async fn listing(ctx: &Context) -> CmdResult {
    let lang = env_value(ctx, "LANG").unwrap_or("");
    let mut out = format!(
        "LANG={lang}\nLANGUAGE={}\n",
        env_value(ctx, "LANGUAGE").unwrap_or("")
    );
    let lc_all = env_value(ctx, "LC_ALL");
    for cat in CATEGORIES {
        match (lc_all, env_value(ctx, cat)) {
            (None, Some(v)) => out.push_str(&format!("{cat}={v}\n")),
            _ => out.push_str(&format!("{cat}=\"{}\"\n", effective(ctx, cat))),
        }
    }
    out.push_str(&format!("LC_ALL={}\n", lc_all.unwrap_or("")));
    ctx.out(out).await?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn listing_follows_lc_all_lc_star_and_lang() {
        let mut inv = Invocation::default();
        inv.env.insert("LANG".into(), "C.UTF-8".into());
        inv.env.insert("LC_TIME".into(), "C".into());
        let (st, out, _) = inv.run(&Locale, &[]).await;
        assert_eq!(st, 0);
        assert!(out.starts_with("LANG=C.UTF-8\nLANGUAGE=\nLC_CTYPE=\"C.UTF-8\"\n"));
        assert!(out.contains("\nLC_TIME=C\n"));
        assert!(out.ends_with("LC_ALL=\n"));
        assert_eq!(inv.run(&Locale, &["charmap"]).await.1, "UTF-8\n");
        inv.env.insert("LC_ALL".into(), "C".into());
        assert_eq!(inv.run(&Locale, &["charmap"]).await.1, "ANSI_X3.4-1968\n");
        assert_eq!(
            inv.run(&Locale, &["-k", "decimal_point", "grouping"])
                .await
                .1,
            "decimal_point=\".\"\ngrouping=-1\n"
        );
        assert_eq!(
            inv.run(&Locale, &["bogus"]).await,
            (1, String::new(), "locale: unknown name \"bogus\"\n".into())
        );
    }
}

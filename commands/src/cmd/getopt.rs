//! GNU `getopt_long` option parsing for hand-parsed commands: options anywhere among the
//! operands (permutation), `--` ends them, clustered short options (`-dv`), attached or
//! separate values (`-m755`, `-m 755`), long options abbreviated to any unambiguous prefix,
//! with `=VALUE` or a separate value, and GNU's wording for each mistake. The caller gets
//! the options in order (so "last one wins" and order-dependent tools work) and reports a
//! mistake with [`super::util::usage_error`].

/// Whether an option takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arg {
    No,
    Required,
    /// Only attached: `-xVALUE`, `--name=VALUE`.
    Optional,
}

/// One option a command accepts: its short letter and/or long name, and its value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec {
    /// The key the caller matches on (usually the short letter, or a made-up one for
    /// long-only options).
    pub(crate) key: char,
    pub(crate) short: Option<char>,
    pub(crate) long: Option<&'static str>,
    pub(crate) arg: Arg,
}

/// Shorthand for a [`Spec`].
pub(crate) const fn opt(
    key: char,
    short: Option<char>,
    long: Option<&'static str>,
    arg: Arg,
) -> Spec {
    Spec {
        key,
        short,
        long,
        arg,
    }
}

/// What parsing gave: the options in order with their values, and the operands.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub(crate) opts: Vec<(char, Option<String>)>,
    pub(crate) operands: Vec<String>,
}

impl Parsed {
    /// True when option `key` was given.
    pub(crate) fn has(&self, key: char) -> bool {
        self.opts.iter().any(|(k, _)| *k == key)
    }
    /// The last value given for `key`.
    pub(crate) fn last(&self, key: char) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.as_deref())
    }
}

/// Parses `args` against `specs`. `Err` holds GNU's message (without the program name),
/// e.g. `invalid option -- 'z'` or `unrecognized option '--bogus'`. When `permute` is
/// false the first operand ends the options (POSIXLY_CORRECT style, as `install` does not
/// need but some tools do).
pub(crate) fn parse(specs: &[Spec], args: &[String], permute: bool) -> Result<Parsed, String> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            out.operands.extend(args[i..].iter().cloned());
            break;
        }
        if a == "-" || !a.starts_with('-') {
            out.operands.push(a.clone());
            if !permute {
                out.operands.extend(args[i..].iter().cloned());
                break;
            }
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, val) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let exact = specs.iter().find(|s| s.long == Some(name));
            let spec = match exact {
                Some(s) => *s,
                None => {
                    let hits: Vec<&Spec> = specs
                        .iter()
                        .filter(|s| s.long.is_some_and(|l| l.starts_with(name)))
                        .collect();
                    match hits.as_slice() {
                        [one] => **one,
                        [] => return Err(format!("unrecognized option '{a}'")),
                        [first, rest @ ..] => {
                            // Prefixes of one option under several names are not ambiguous.
                            if rest.iter().all(|s| s.key == first.key) {
                                **first
                            } else {
                                let names: Vec<String> = hits
                                    .iter()
                                    .filter_map(|s| s.long.map(|l| format!("'--{l}'")))
                                    .collect();
                                return Err(format!(
                                    "option '--{name}' is ambiguous; possibilities: {}",
                                    names.join(" ")
                                ));
                            }
                        }
                    }
                }
            };
            let full = spec.long.unwrap_or(name);
            match (spec.arg, val) {
                (Arg::No, Some(_)) => {
                    return Err(format!("option '--{full}' doesn't allow an argument"));
                }
                (Arg::No, None) => out.opts.push((spec.key, None)),
                (Arg::Optional, v) => out.opts.push((spec.key, v)),
                (Arg::Required, Some(v)) => out.opts.push((spec.key, Some(v))),
                (Arg::Required, None) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        out.opts.push((spec.key, Some(v.clone())));
                    }
                    None => return Err(format!("option '--{full}' requires an argument")),
                },
            }
            continue;
        }
        let chars: Vec<char> = a[1..].chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            k += 1;
            let Some(spec) = specs.iter().find(|s| s.short == Some(c)) else {
                return Err(format!("invalid option -- '{c}'"));
            };
            match spec.arg {
                Arg::No => out.opts.push((spec.key, None)),
                Arg::Optional | Arg::Required => {
                    let rest: String = chars[k..].iter().collect();
                    k = chars.len();
                    if !rest.is_empty() {
                        out.opts.push((spec.key, Some(rest)));
                    } else if spec.arg == Arg::Optional {
                        out.opts.push((spec.key, None));
                    } else if let Some(v) = args.get(i) {
                        i += 1;
                        out.opts.push((spec.key, Some(v.clone())));
                    } else {
                        return Err(format!("option requires an argument -- '{c}'"));
                    }
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[Spec] = &[
        opt('d', Some('d'), Some("directory"), Arg::No),
        opt('m', Some('m'), Some("mode"), Arg::Required),
        opt('v', Some('v'), Some("verbose"), Arg::No),
        opt('V', None, Some("version"), Arg::No),
        opt('s', Some('s'), Some("suffix"), Arg::Optional),
    ];

    fn p(args: &[&str]) -> Result<Parsed, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse(SPECS, &args, true)
    }

    #[test]
    fn shorts_longs_values_and_permutation() {
        let r = p(&[
            "a",
            "-dvm755",
            "b",
            "--mode",
            "600",
            "--dir",
            "--suffix=x",
            "--",
            "-v",
        ])
        .unwrap();
        assert_eq!(r.operands, vec!["a", "b", "-v"]);
        assert!(r.has('d') && r.has('v'));
        assert_eq!(r.last('m'), Some("600"));
        assert_eq!(r.last('s'), Some("x"));
        let r = p(&["-m", "7", "-s", "f"]).unwrap();
        assert_eq!(r.last('m'), Some("7"));
        assert_eq!(r.operands, vec!["f"]);
    }

    #[test]
    fn gnu_wording_of_mistakes() {
        assert_eq!(p(&["-z"]).unwrap_err(), "invalid option -- 'z'");
        assert_eq!(
            p(&["--bogus"]).unwrap_err(),
            "unrecognized option '--bogus'"
        );
        assert_eq!(
            p(&["-m"]).unwrap_err(),
            "option requires an argument -- 'm'"
        );
        assert_eq!(
            p(&["--mode"]).unwrap_err(),
            "option '--mode' requires an argument"
        );
        assert_eq!(
            p(&["--dir=x"]).unwrap_err(),
            "option '--directory' doesn't allow an argument"
        );
        assert_eq!(
            p(&["--ver"]).unwrap_err(),
            "option '--ver' is ambiguous; possibilities: '--verbose' '--version'"
        );
    }
}

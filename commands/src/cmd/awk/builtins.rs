//! awk's builtin functions: string, math, I/O and gawk's common extensions.
//!
//! Lengths and positions count characters when the string is valid UTF-8 (as gawk does
//! in a UTF-8 locale) and bytes otherwise.

use std::rc::Rc;

use super::re::Regex;
use crate::gnu_regex::Captures;

use super::interp::{Array, Cell, Fail, Interp, Lint, Operand, bool_num, key_num, split_str};
use super::parse::{Expr, LValue};
use super::value::{Str, Value, as_chars, non_decimal, str_to_num};

type R<T> = Result<T, Fail>;

fn char_count(s: &[u8]) -> usize {
    match as_chars(s) {
        Some(t) => t.chars().count(),
        None => s.len(),
    }
}

/// Byte offset of character `ci` (clamped to the end).
fn byte_at(s: &[u8], ci: usize) -> usize {
    match as_chars(s) {
        Some(t) => t.char_indices().nth(ci).map_or(s.len(), |(i, _)| i),
        None => ci.min(s.len()),
    }
}

/// Character index of byte offset `bi`.
fn char_index(s: &[u8], bi: usize) -> usize {
    match as_chars(&s[..bi.min(s.len())]) {
        Some(t) => t.chars().count(),
        None => bi,
    }
}

fn char_len_at(s: &[u8], bi: usize) -> usize {
    match as_chars(s) {
        Some(t) => t
            .get(bi..)
            .and_then(|r| r.chars().next())
            .map_or(1, char::len_utf8),
        None => 1,
    }
}

/// Expands a sub/gsub replacement by gawk's rules: `&` is the match, `\&` a literal
/// `&`, `\\&` a backslash then the match, `\\\&` a literal `\&`, `\\\\` two
/// backslashes; any other backslash stays.
fn expand_sub(repl: &[u8], m: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < repl.len() {
        let rest = &repl[i..];
        match repl[i] {
            b'\\' if rest.starts_with(b"\\\\\\&") || rest.starts_with(b"\\\\\\\\") => {
                out.push(b'\\');
                out.push(rest[3]);
                i += 4;
            }
            b'\\' if rest.starts_with(b"\\\\&") => {
                out.push(b'\\');
                out.extend_from_slice(m);
                i += 3;
            }
            b'\\' if rest.starts_with(b"\\&") => {
                out.push(b'&');
                i += 2;
            }
            b'&' => {
                out.extend_from_slice(m);
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

/// Expands a gensub replacement: `\0`/`&` the match, `\N` group N, `\q` a plain q.
fn expand_gensub(repl: &[u8], s: &[u8], caps: &Captures, out: &mut Vec<u8>) {
    let mut i = 0;
    while i < repl.len() {
        match repl[i] {
            b'\\' if i + 1 < repl.len() && repl[i + 1].is_ascii_digit() => {
                let g = usize::from(repl[i + 1] - b'0');
                if let Some((a, b)) = caps.get(g) {
                    out.extend_from_slice(&s[a..b]);
                }
                i += 2;
            }
            // `\q` is `q` for any other q (`\&`, `\\`).
            b'\\' if i + 1 < repl.len() => {
                out.push(repl[i + 1]);
                i += 2;
            }
            b'&' => {
                if let Some((a, b)) = caps.get(0) {
                    out.extend_from_slice(&s[a..b]);
                }
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

/// Replaces matches of `re` in `s`: every one (`which == 0`) or only the `which`-th.
/// `f` writes the replacement for a match. Returns the new text and the count.
fn substitute(
    re: &Regex,
    s: &[u8],
    which: usize,
    f: &mut dyn FnMut(&Captures, &mut Vec<u8>),
) -> Result<(Vec<u8>, usize), String> {
    let mut out = Vec::with_capacity(s.len());
    let mut pos = 0;
    let mut last_end: Option<usize> = None;
    let mut count = 0;
    let mut seen = 0;
    while pos <= s.len() {
        let Some(caps) = re.captures_at(s, pos)? else {
            break;
        };
        let Some((ms, me)) = caps.get(0) else { break };
        if ms == me && last_end == Some(ms) {
            // An empty match right after a match: move on one character.
            if ms >= s.len() {
                break;
            }
            let l = char_len_at(s, ms);
            out.extend_from_slice(&s[pos..ms + l]);
            pos = ms + l;
            continue;
        }
        seen += 1;
        out.extend_from_slice(&s[pos..ms]);
        if which == 0 || seen == which {
            f(&caps, &mut out);
            count += 1;
        } else {
            out.extend_from_slice(&s[ms..me]);
        }
        last_end = Some(me);
        if ms == me {
            if ms >= s.len() {
                pos = s.len() + 1;
                break;
            }
            let l = char_len_at(s, ms);
            out.extend_from_slice(&s[ms..ms + l]);
            pos = ms + l;
        } else {
            pos = me;
        }
        if which != 0 && seen >= which {
            break;
        }
    }
    if pos <= s.len() {
        out.extend_from_slice(&s[pos..]);
    }
    Ok((out, count))
}

fn case_map(s: &[u8], upper: bool) -> Vec<u8> {
    match as_chars(s) {
        // Character by character, as towupper/towlower map (`ß` stays itself).
        Some(t) => {
            let mut out = String::with_capacity(t.len());
            for c in t.chars() {
                let mut m = if upper {
                    c.to_uppercase().collect::<Vec<char>>()
                } else {
                    c.to_lowercase().collect::<Vec<char>>()
                };
                if m.len() != 1 {
                    m = vec![c];
                }
                out.extend(m);
            }
            out.into_bytes()
        }
        None => {
            if upper {
                s.to_ascii_uppercase()
            } else {
                s.to_ascii_lowercase()
            }
        }
    }
}

fn arity(name: &str, args: &[Expr], min: usize, max: usize) -> R<()> {
    if args.len() < min || args.len() > max {
        return Err(Fail::Fatal(format!(
            "{name}: called with {} arguments",
            args.len()
        )));
    }
    Ok(())
}

impl Interp {
    /// `--lint`'s warnings about `substr`'s start `m` and length `n` on a string of `len`
    /// characters, in gawk's order.
    fn lint_substr(&mut self, m: f64, n: Option<f64>, len: f64) -> R<()> {
        let g = |x: f64| {
            String::from_utf8_lossy(
                &super::value::sprintf(b"%g", &[Value::Num(x)], b"%.6g").unwrap_or_default(),
            )
            .into_owned()
        };
        if let Some(n) = n {
            if n.is_nan() || n < 1.0 {
                return self.lint_warn(&format!("substr: length {} is not >= 1", g(n)));
            }
            if n.trunc() != n {
                self.lint_warn(&format!(
                    "substr: non-integer length {} will be truncated",
                    g(n)
                ))?;
            }
        }
        if len == 0.0 {
            return self.lint_warn("substr: source string is zero length");
        }
        if m.is_nan() || m < 1.0 {
            self.lint_warn(&format!("substr: start index {} is invalid, using 1", g(m)))?;
        } else if m.trunc() != m {
            self.lint_warn(&format!(
                "substr: non-integer start index {} will be truncated",
                g(m)
            ))?;
        }
        let first = if m >= 1.0 { m.trunc() } else { 1.0 };
        if first > len {
            return self.lint_warn(&format!(
                "substr: start index {} is past end of string",
                g(m)
            ));
        }
        if let Some(n) = n
            && n.trunc() > len - first + 1.0
        {
            self.lint_warn(&format!(
                "substr: length {} at start index {} exceeds length of first argument ({})",
                g(n),
                g(m),
                len
            ))?;
        }
        Ok(())
    }

    pub(super) fn builtin(&mut self, name: &str, args: &[Expr]) -> R<Value> {
        let num = |x: f64| Ok(Value::Num(x));
        match name {
            "length" => {
                arity(name, args, 0, 1)?;
                let Some(a) = args.first() else {
                    if self.lint != Lint::Off {
                        self.lint_field(0);
                    }
                    let r = self.record_text();
                    return num(char_count(&r) as f64);
                };
                match self.operand(a, false)? {
                    Operand::Array(_, _) if super::lex::compat() == super::lex::Compat::Posix => {
                        Err(Fail::Fatal("length: received array argument".into()))
                    }
                    Operand::Array(arr, _) => {
                        self.lint_warn("`length(array)' is a gawk extension")?;
                        num(arr.borrow().len() as f64)
                    }
                    Operand::Scalar(v) => num(char_count(&v.to_str_with(&self.convfmt())) as f64),
                }
            }
            "substr" => {
                arity(name, args, 2, 3)?;
                let s = self.eval_str(&args[0])?;
                let m = self.eval_num(&args[1])?;
                let len = char_count(&s) as f64;
                let n = match args.get(2) {
                    Some(e) => Some(self.eval_num(e)?),
                    None => None,
                };
                if self.lint != Lint::Off {
                    self.lint_substr(m, n, len)?;
                }
                // gawk truncates both, and a start before 1 keeps the length.
                let first = if m.is_nan() { 1.0 } else { m.trunc().max(1.0) };
                let end = match n {
                    Some(n) if n.is_nan() => first,
                    Some(n) => first + n.trunc(),
                    None => f64::INFINITY,
                };
                let last = end.min(len + 1.0);
                if last <= first {
                    return Ok(Value::str(Vec::new()));
                }
                let a = byte_at(&s, (first - 1.0) as usize);
                let b = byte_at(&s, (last - 1.0) as usize);
                Ok(Value::str(s[a..b].to_vec()))
            }
            "index" => {
                arity(name, args, 2, 2)?;
                let s = self.eval_str(&args[0])?;
                let t = match &args[1] {
                    Expr::Regex(_) => {
                        return Err(Fail::Fatal(
                            "index: regexp constant as second argument is not allowed".into(),
                        ));
                    }
                    e => self.eval_str(e)?,
                };
                let pos = if t.is_empty() {
                    Some(0)
                } else if self.ignoring_case() {
                    // Byte offsets stay valid: ASCII folding keeps lengths.
                    memchr::memmem::find(&s.to_ascii_lowercase(), &t.to_ascii_lowercase())
                } else {
                    memchr::memmem::find(&s, &t)
                };
                num(pos.map_or(0.0, |p| (char_index(&s, p) + 1) as f64))
            }
            "split" => {
                arity(name, args, 2, 4)?;
                let s = self.eval_str(&args[0])?;
                let arr = self.array_of(&args[1], "split: second")?;
                let seps_arr = match args.get(3) {
                    Some(e) => Some(self.array_of(e, "split: fourth")?),
                    None => None,
                };
                if seps_arr.as_ref().is_some_and(|sa| Rc::ptr_eq(sa, &arr)) {
                    return Err(Fail::Fatal(
                        "split: cannot use the same array for second and fourth args".into(),
                    ));
                }
                let pieces = split_str(self, &s, args.get(2))?;
                let mut total = 0;
                {
                    let mut a = arr.borrow_mut();
                    a.clear();
                    for (i, &(x, y)) in pieces.iter().enumerate() {
                        total += y - x + 64;
                        a.insert(key_num((i + 1) as f64), Cell::Val(Value::strnum(&s[x..y])));
                    }
                }
                if let Some(sa) = seps_arr {
                    let mut sa = sa.borrow_mut();
                    sa.clear();
                    for (i, w) in pieces.windows(2).enumerate() {
                        sa.insert(
                            key_num((i + 1) as f64),
                            Cell::Val(Value::strnum(&s[w[0].1..w[1].0])),
                        );
                    }
                    // Splitting on blanks also keeps the leading and trailing blanks.
                    if self.splits_on_blanks(args.get(2))? {
                        let first = pieces.first().map_or(s.len(), |p| p.0);
                        let last = pieces.last().map_or(s.len(), |p| p.1);
                        if first > 0 {
                            sa.insert(key_num(0.0), Cell::Val(Value::strnum(&s[..first])));
                        }
                        if last < s.len() && !pieces.is_empty() {
                            sa.insert(
                                key_num(pieces.len() as f64),
                                Cell::Val(Value::strnum(&s[last..])),
                            );
                        }
                    }
                }
                self.charge_elems(total)?;
                num(pieces.len() as f64)
            }
            "patsplit" => {
                arity(name, args, 2, 4)?;
                let s = self.eval_str(&args[0])?;
                let arr = self.array_of(&args[1], "patsplit: second")?;
                let re = match args.get(2) {
                    Some(e) => self.regex_for(e)?,
                    None => {
                        let fpat = self.fpat_text();
                        self.dyn_regex(&fpat)?
                    }
                };
                let seps_arr = match args.get(3) {
                    Some(e) => Some(self.array_of(e, "patsplit: fourth")?),
                    None => None,
                };
                let mut pieces = Vec::new();
                let mut seps = Vec::new();
                super::interp::fpat_split(&s, &re, &mut pieces, Some(&mut seps));
                let mut total = 0;
                {
                    let mut a = arr.borrow_mut();
                    a.clear();
                    for (i, &(x, y)) in pieces.iter().enumerate() {
                        total += y - x + 64;
                        a.insert(key_num((i + 1) as f64), Cell::Val(Value::strnum(&s[x..y])));
                    }
                }
                if let Some(sa) = seps_arr {
                    let mut sa = sa.borrow_mut();
                    sa.clear();
                    if !s.is_empty() {
                        for (i, &(x, y)) in seps.iter().enumerate() {
                            total += y - x + 64;
                            sa.insert(key_num(i as f64), Cell::Val(Value::strnum(&s[x..y])));
                        }
                    }
                }
                self.charge_elems(total)?;
                num(pieces.len() as f64)
            }
            "sub" | "gsub" => {
                arity(name, args, 2, 3)?;
                let re = self.regex_for(&args[0])?;
                let repl = self.eval_str(&args[1])?;
                let target_lv = match args.get(2) {
                    None => None,
                    Some(Expr::Lv(lv)) => Some(lv),
                    Some(Expr::Group(g)) if matches!(**g, Expr::Lv(_)) => match &**g {
                        Expr::Lv(lv) => Some(lv),
                        _ => None,
                    },
                    Some(_) => {
                        // A non-lvalue target: gawk computes and discards the result.
                        let t = self.eval_str(&args[2])?;
                        let which = usize::from(name == "sub");
                        let (_, n) = substitute(&re, &t, which, &mut |c, o| {
                            expand_sub(&repl, c.get(0).map_or(&b""[..], |(a, b)| &t[a..b]), o)
                        })
                        .map_err(Fail::Fatal)?;
                        return num(n as f64);
                    }
                };
                let cur = match target_lv {
                    Some(lv) => self.lv_value(lv)?,
                    None => Value::strnum(&self.record_text()),
                };
                let t = cur.to_str_with(&self.convfmt());
                let which = usize::from(name == "sub");
                let (out, n) = substitute(&re, &t, which, &mut |c, o| {
                    expand_sub(&repl, c.get(0).map_or(&b""[..], |(a, b)| &t[a..b]), o)
                })
                .map_err(Fail::Fatal)?;
                if n > 0 {
                    match target_lv {
                        Some(lv) => self.lv_assign(lv, Value::str(out))?,
                        None => self.lv_assign(
                            &LValue::Field(Box::new(Expr::Const(Value::Num(0.0)))),
                            Value::str(out),
                        )?,
                    }
                }
                num(n as f64)
            }
            "gensub" => {
                arity(name, args, 3, 4)?;
                let re = self.regex_for(&args[0])?;
                let repl = self.eval_str(&args[1])?;
                let how = self.eval(&args[2])?;
                let hs = how.to_str_with(b"%.6g");
                let which = if hs.first().is_some_and(|c| *c == b'g' || *c == b'G') {
                    0
                } else {
                    let n = how.to_num();
                    if n < 1.0 {
                        // gawk quotes the string, and a number's integer part.
                        let shown = match &how {
                            Value::Num(x) => format!("`{}'", fmt_arg(x.trunc())),
                            other => format!("`{}'", lossy_str(&other.to_str_with(b"%.6g"))),
                        };
                        self.warning(&format!("gensub: third argument {shown} treated as 1"));
                        1
                    } else {
                        n as usize
                    }
                };
                let t = match args.get(3) {
                    Some(e) => self.eval_str(e)?,
                    None => Rc::from(self.record_text()),
                };
                let (out, _) =
                    substitute(&re, &t, which, &mut |c, o| expand_gensub(&repl, &t, c, o))
                        .map_err(Fail::Fatal)?;
                Ok(Value::str(out))
            }
            "match" => {
                arity(name, args, 2, 3)?;
                let s = self.eval_str(&args[0])?;
                let re = self.regex_for(&args[1])?;
                let arr = match args.get(2) {
                    Some(e) => Some(self.array_of(e, "match: third")?),
                    None => None,
                };
                match re.captures_at(&s, 0).map_err(Fail::Fatal)? {
                    Some(caps) => {
                        let m = caps.get(0).unwrap_or((0, 0));
                        let start = char_index(&s, m.0) + 1;
                        let len = char_count(&s[m.0..m.1]);
                        self.set_rstart(start as f64, len as f64);
                        if let Some(arr) = arr {
                            let mut a = arr.borrow_mut();
                            a.clear();
                            for g in 0..caps.len() {
                                if let Some((cs, ce)) = caps.get(g) {
                                    a.insert(
                                        key_num(g as f64),
                                        Cell::Val(Value::strnum(&s[cs..ce])),
                                    );
                                    let mut k = key_num(g as f64).to_vec();
                                    k.push(0x1c);
                                    let mut ks = k.clone();
                                    ks.extend_from_slice(b"start");
                                    a.insert(
                                        Rc::from(ks),
                                        Cell::Val(Value::Num((char_index(&s, cs) + 1) as f64)),
                                    );
                                    k.extend_from_slice(b"length");
                                    a.insert(
                                        Rc::from(k),
                                        Cell::Val(Value::Num(char_count(&s[cs..ce]) as f64)),
                                    );
                                }
                            }
                        }
                        num(start as f64)
                    }
                    None => {
                        self.set_rstart(0.0, -1.0);
                        if let Some(arr) = arr {
                            arr.borrow_mut().clear();
                        }
                        num(0.0)
                    }
                }
            }
            "sprintf" => {
                if args.is_empty() {
                    return Err(Fail::Fatal("sprintf: no arguments".into()));
                }
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let fmt = vals[0].to_str_with(&self.convfmt());
                let out = self.format_pub(&fmt, &vals[1..])?;
                Ok(Value::str(out))
            }
            "sin" | "cos" | "exp" | "log" | "sqrt" | "int" => {
                arity(name, args, 1, 1)?;
                let x = self.eval_num(&args[0])?;
                num(match name {
                    "sin" => x.sin(),
                    "cos" => x.cos(),
                    "exp" => {
                        let r = x.exp();
                        if x.is_finite() && (r.is_infinite() || r < f64::MIN_POSITIVE) {
                            self.warning(&format!("exp: argument {} is out of range", fmt_arg(x)));
                        }
                        r
                    }
                    "log" => {
                        if x < 0.0 {
                            self.warning(&format!(
                                "log: received negative argument {}",
                                fmt_arg(x)
                            ));
                        }
                        x.ln()
                    }
                    "sqrt" => {
                        if x < 0.0 {
                            self.warning(&format!(
                                "sqrt: received negative argument {}",
                                fmt_arg(x)
                            ));
                        }
                        x.sqrt()
                    }
                    _ => x.trunc(),
                })
            }
            "atan2" => {
                arity(name, args, 2, 2)?;
                let y = self.eval_num(&args[0])?;
                let x = self.eval_num(&args[1])?;
                num(y.atan2(x))
            }
            "rand" => {
                arity(name, args, 0, 0)?;
                num(self.rand_next())
            }
            "srand" => {
                arity(name, args, 0, 1)?;
                let seed = match args.first() {
                    Some(e) => self.eval_num(e)?,
                    None => now_secs() as f64,
                };
                num(self.srand(seed))
            }
            "tolower" | "toupper" => {
                arity(name, args, 1, 1)?;
                let s = self.eval_str(&args[0])?;
                Ok(Value::str(case_map(&s, name == "toupper")))
            }
            "system" => {
                arity(name, args, 1, 1)?;
                let cmd = self.eval_str(&args[0])?;
                num(self.do_system(&cmd)?)
            }
            "close" => {
                arity(name, args, 1, 2)?;
                let n = self.eval_str(&args[0])?;
                let Some(how) = args.get(1) else {
                    return num(self.do_close(&n)?);
                };
                let how = self.eval_str(how)?.to_ascii_lowercase();
                match &how[..] {
                    b"to" => num(self.close_side(&n, true)?),
                    b"from" => num(self.close_side(&n, false)?),
                    _ => Err(Fail::Fatal(
                        "close: second argument must be `to' or `from'".into(),
                    )),
                }
            }
            "fflush" => {
                arity(name, args, 0, 1)?;
                match args.first() {
                    None => num(self.do_fflush(None)?),
                    Some(e) => {
                        let n = self.eval_str(e)?;
                        num(self.do_fflush(Some(&n))?)
                    }
                }
            }
            "systime" => num(now_secs() as f64),
            "strftime" => {
                arity(name, args, 0, 3)?;
                let fmt: Str = match args.first() {
                    Some(e) => self.eval_str(e)?,
                    None => Rc::from(&b"%a %b %e %H:%M:%S %Z %Y"[..]),
                };
                let ts = match args.get(1) {
                    Some(e) => self.eval_num(e)? as i64,
                    None => now_secs(),
                };
                let utc = match args.get(2) {
                    Some(e) => self.eval(e)?.truthy(),
                    None => false,
                };
                let zone = if utc { None } else { Some(zone(self.env())) };
                Ok(Value::str(strftime(&fmt, ts, zone.as_ref())))
            }
            "mktime" => {
                arity(name, args, 1, 2)?;
                let s = self.eval_str(&args[0])?;
                let utc = match args.get(1) {
                    Some(e) => self.eval(e)?.truthy(),
                    None => false,
                };
                let zone = if utc {
                    jiff::tz::TimeZone::UTC
                } else {
                    zone(self.env())
                };
                num(mktime(&s, &zone))
            }
            "asort" | "asorti" => {
                arity(name, args, 1, 3)?;
                let src = self.array_of(&args[0], &format!("{name}: first"))?;
                let how = match args.get(2) {
                    Some(e) => {
                        let h = self.eval_str(e)?;
                        self.sort_how(&h)?
                    }
                    None if name == "asort" => SortHow::Builtin(Order::ValType, false),
                    None => SortHow::Builtin(Order::IndStr, false),
                };
                let entries = src.borrow().cloned_entries();
                let entries = self.sort_entries(entries, &how)?;
                if args.len() == 2
                    && let (Expr::Lv(LValue::Var(a)), Expr::Lv(LValue::Var(b))) =
                        (&args[0], &args[1])
                    && a == b
                {
                    self.warning(
                        "asort/asorti: using the same array as source and destination without a third argument is silly.",
                    );
                }
                let dest = match args.get(1) {
                    Some(e) => self.array_of(e, &format!("{name}: second"))?,
                    None => src,
                };
                let n = entries.len();
                let mut out = Array::default();
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    // asorti's values are the indices, as strings (gawk's typeof says so).
                    let v = if name == "asort" {
                        v
                    } else {
                        Cell::Val(Value::Str(k))
                    };
                    out.insert(key_num((i + 1) as f64), v);
                }
                *dest.borrow_mut() = out;
                num(n as f64)
            }
            "and" | "or" | "xor" => {
                if args.len() < 2 {
                    return Err(Fail::Fatal(format!(
                        "{name}: called with less than two arguments"
                    )));
                }
                let mut acc: Option<u64> = None;
                for (i, a) in args.iter().enumerate() {
                    let x = self.eval_num(a)?;
                    if x < 0.0 {
                        return Err(Fail::Fatal(format!(
                            "{name}: argument {} negative value {} is not allowed",
                            i + 1,
                            fmt_arg(x)
                        )));
                    }
                    let v = to_uint(x);
                    acc = Some(match (acc, name) {
                        (None, _) => v,
                        (Some(acc), "and") => acc & v,
                        (Some(acc), "or") => acc | v,
                        (Some(acc), _) => acc ^ v,
                    });
                }
                num(adjust_uint(acc.unwrap_or(0)))
            }
            "lshift" | "rshift" => {
                arity(name, args, 2, 2)?;
                let x = self.eval_num(&args[0])?;
                let sh = self.eval_num(&args[1])?;
                if x < 0.0 || sh < 0.0 {
                    return Err(Fail::Fatal(format!(
                        "{name}({x:.6}, {sh:.6}): negative values are not allowed"
                    )));
                }
                let (v, s) = (to_uint(x), (to_uint(sh) % 64) as u32);
                num(adjust_uint(if name == "lshift" { v << s } else { v >> s }))
            }
            "compl" => {
                arity(name, args, 1, 1)?;
                let x = self.eval_num(&args[0])?;
                if x < 0.0 {
                    return Err(Fail::Fatal(format!(
                        "compl({x:.6}): negative value is not allowed"
                    )));
                }
                num(adjust_uint(!to_uint(x)))
            }
            "strtonum" => {
                arity(name, args, 1, 1)?;
                let v = self.eval(&args[0])?;
                match &v {
                    Value::Num(n) => return num(*n),
                    // Input that looks numeric (`077` from a field) is that number.
                    Value::StrNum(s) if super::value::looks_numeric(s) => return num(v.to_num()),
                    _ => {}
                }
                let s = v.to_str_with(b"%.6g");
                num(strtonum(&s))
            }
            // No message catalogs here: every string is its own translation, as with
            // gawk in the C locale.
            "dcgettext" | "bindtextdomain" => {
                let s = self.eval_str(&args[0])?;
                for a in &args[1..] {
                    self.eval(a)?;
                }
                Ok(Value::str(s.to_vec()))
            }
            "dcngettext" => {
                let one = self.eval_str(&args[0])?;
                let many = self.eval_str(&args[1])?;
                let n = self.eval_num(&args[2])?;
                for a in &args[3..] {
                    self.eval(a)?;
                }
                Ok(Value::str(if n == 1.0 { one } else { many }.to_vec()))
            }
            // The `ordchr` extension.
            "ord" => {
                let s = self.eval_str(&args[0])?;
                let code = if super::value::utf8_mode() {
                    String::from_utf8_lossy(&s)
                        .chars()
                        .next()
                        .map_or(0, u32::from)
                } else {
                    s.first().map_or(0, |&b| u32::from(b))
                };
                num(f64::from(code))
            }
            "chr" => {
                let n = self.eval_num(&args[0])?;
                let n = if n.is_finite() { n.trunc() as i64 } else { 0 };
                let text = match u32::try_from(n).ok().and_then(char::from_u32) {
                    Some(c) if super::value::utf8_mode() => c.to_string().into_bytes(),
                    _ => vec![(n & 0xff) as u8],
                };
                Ok(Value::str(text))
            }
            // The `readfile` extension.
            "readfile" => {
                let path = self.eval_str(&args[0])?;
                self.readfile(&path)
            }
            "mkbool" => {
                arity(name, args, 1, 1)?;
                let v = self.eval(&args[0])?;
                Ok(Value::Bool(v.truthy()))
            }
            "isarray" => {
                arity(name, args, 1, 1)?;
                let b = !self.is_untyped_var(&args[0])
                    && matches!(self.operand(&args[0], false)?, Operand::Array(..));
                num(bool_num(b))
            }
            "typeof" => {
                arity(name, args, 1, 1)?;
                if self.is_untyped_var(&args[0]) {
                    return Ok(Value::str(&b"untyped"[..]));
                }
                if self.is_unassigned_var(&args[0]) {
                    return Ok(Value::str(&b"unassigned"[..]));
                }
                if let Expr::Lv(LValue::Field(ix)) = &args[0] {
                    let i = self.eval_num(ix)?;
                    if i >= 1.0 && i as usize > self.field_count() {
                        return Ok(Value::str(&b"unassigned"[..]));
                    }
                }
                let v = match self.operand(&args[0], false)? {
                    Operand::Array(..) => return Ok(Value::str(&b"array"[..])),
                    Operand::Scalar(v) => v,
                };
                let t: &[u8] = match v {
                    Value::Uninit => b"untyped",
                    Value::Num(_) => b"number",
                    Value::Bool(_) => b"number|bool",
                    Value::Str(_) => b"string",
                    Value::Regex(_) => b"regexp",
                    Value::StrNum(s) => {
                        if Interp::looks_num(&s) {
                            b"strnum"
                        } else {
                            b"string"
                        }
                    }
                };
                Ok(Value::str(t))
            }
            other => Err(Fail::Fatal(format!("function `{other}' not defined"))),
        }
    }
}

fn lossy_str(s: &[u8]) -> String {
    String::from_utf8_lossy(s).into_owned()
}

fn fmt_arg(x: f64) -> String {
    String::from_utf8_lossy(&super::value::num_to_str(x, b"%.6g")).into_owned()
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// gawk's `strtonum` of a string: hex after a leading `0x`, octal after a leading `0` (unless
/// an 8 or 9, a `.` or an exponent makes it decimal), else the ordinary decimal value. The
/// prefix must come first: `" 0x10"` and `"-0x10"` are decimal (so 0), as in gawk.
fn strtonum(s: &[u8]) -> f64 {
    non_decimal(s).unwrap_or_else(|| str_to_num(s))
}

/// An awk number as the unsigned integer the bit functions work on (C's truncating cast).
fn to_uint(x: f64) -> u64 {
    if x.is_nan() { 0 } else { x as u64 }
}

/// gawk's `adjust_uint`: a result wider than a double's 53-bit fraction loses its leading
/// bits (not its low ones), so `compl(0)` is 2^53-1 and `or(2^60, 1)` is 1.
fn adjust_uint(n: u64) -> f64 {
    let keep = 53 + n.trailing_zeros().min(11);
    let kept = if keep < 64 {
        n & ((1u64 << keep) - 1)
    } else {
        n
    };
    kept as f64
}

/// The local time zone of `strftime` and `mktime`: the environment's `TZ` (an IANA name or
/// a POSIX rule such as `EST5EDT`, an optional leading `:` ignored), else UTC, the session's
/// own zone. A name neither knows is UTC, as in the C library.
fn zone(env: &std::collections::BTreeMap<String, String>) -> jiff::tz::TimeZone {
    use jiff::tz::TimeZone;
    match env.get("TZ").map(|t| t.trim_start_matches(':')) {
        Some(t) if !t.is_empty() => TimeZone::get(t)
            .or_else(|_| TimeZone::posix(t))
            .unwrap_or(TimeZone::UTC),
        _ => TimeZone::UTC,
    }
}

/// `strftime` in a time zone (`None`: UTC, which C's gmtime names `GMT`).
fn strftime(fmt: &[u8], ts: i64, zone: Option<&jiff::tz::TimeZone>) -> Vec<u8> {
    use chrono::format::{Item, StrftimeItems};
    use chrono::{FixedOffset, TimeZone};
    use std::fmt::Write;
    let (offset, abbrev) = match (zone, jiff::Timestamp::from_second(ts)) {
        (Some(z), Ok(t)) => {
            let info = z.to_offset_info(t);
            (info.offset().seconds(), info.abbreviation().to_string())
        }
        _ => (0, "GMT".to_string()),
    };
    // %Z is the zone's abbreviation, which chrono does not know for a fixed offset.
    let f = String::from_utf8_lossy(fmt);
    let mut g = String::with_capacity(f.len());
    let mut it = f.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            g.push(c);
            continue;
        }
        match it.next() {
            Some('Z') => g.push_str(&abbrev.replace('%', "%%")),
            Some(n) => {
                g.push('%');
                g.push(n);
            }
            None => g.push('%'),
        }
    }
    let items: Vec<Item<'_>> = StrftimeItems::new(&g).collect();
    if items.iter().any(|i| matches!(i, Item::Error)) {
        return fmt.to_vec();
    }
    let mut out = String::new();
    let ok = match FixedOffset::east_opt(offset).and_then(|o| o.timestamp_opt(ts, 0).single()) {
        Some(t) => write!(out, "{}", t.format_with_items(items.iter())).is_ok(),
        None => false,
    };
    if ok { out.into_bytes() } else { Vec::new() }
}

/// `mktime("YYYY MM DD HH MM SS [DST]")` in a time zone; -1 when it cannot be read.
fn mktime(s: &[u8], zone: &jiff::tz::TimeZone) -> f64 {
    use chrono::{Datelike, NaiveDate, Timelike};
    let parts: Vec<i64> = String::from_utf8_lossy(s)
        .split_whitespace()
        .map(|p| p.parse::<i64>().unwrap_or(i64::MIN))
        .collect();
    if parts.len() < 6 || parts.iter().take(6).any(|&p| p == i64::MIN) {
        return -1.0;
    }
    let (y, mo, d, h, mi, se) = (parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]);
    // Out-of-range parts carry over, as mktime(3) normalizes them.
    let Some(base) = i32::try_from(y)
        .ok()
        .and_then(|y| NaiveDate::from_ymd_opt(y, 1, 1))
    else {
        return -1.0;
    };
    let Some(date) = base
        .checked_add_months(chrono::Months::new(0))
        .and_then(|b| {
            let months = mo - 1;
            if months >= 0 {
                b.checked_add_months(chrono::Months::new(u32::try_from(months).ok()?))
            } else {
                b.checked_sub_months(chrono::Months::new(u32::try_from(-months).ok()?))
            }
        })
    else {
        return -1.0;
    };
    let Some(dt) = date
        .and_hms_opt(0, 0, 0)
        .and_then(|t| t.checked_add_signed(chrono::Duration::try_days(d - 1)?))
        .and_then(|t| {
            t.checked_add_signed(chrono::Duration::try_seconds(h * 3600 + mi * 60 + se)?)
        })
    else {
        return -1.0;
    };
    let Ok(civil) = jiff::civil::DateTime::new(
        i16::try_from(dt.year()).unwrap_or(i16::MAX),
        dt.month() as i8,
        dt.day() as i8,
        dt.hour() as i8,
        dt.minute() as i8,
        dt.second() as i8,
        0,
    ) else {
        return -1.0;
    };
    match zone.to_ambiguous_timestamp(civil).compatible() {
        Ok(t) => t.as_second() as f64,
        Err(_) => -1.0,
    }
}

/// A builtin order of `PROCINFO["sorted_in"]`, `asort` and `asorti`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Order {
    IndStr,
    IndNum,
    ValStr,
    ValNum,
    ValType,
}

/// How to order array entries: a builtin order (descending when true), a user
/// comparison function, or as stored.
pub enum SortHow {
    Builtin(Order, bool),
    Func(usize),
    Unsorted,
}

/// Whether a value sorts as a number by type (`@val_type_*`, asort's default).
/// The scalar a cell holds (an unset cell is untyped).
fn cell_value(c: &Cell) -> Value {
    match c {
        Cell::Val(v) => v.clone(),
        _ => Value::Uninit,
    }
}

fn sorts_as_number(v: &Value) -> bool {
    match v {
        Value::Num(_) | Value::Uninit | Value::Bool(_) => true,
        Value::StrNum(_) => v.is_numeric(),
        Value::Str(_) | Value::Regex(_) => false,
    }
}

/// Compares strings for sorting: under IGNORECASE case-folded first, the bytes breaking
/// ties (gawk sorts `A a B b`).
fn str_order(x: &[u8], y: &[u8], ignorecase: bool) -> std::cmp::Ordering {
    if ignorecase {
        super::interp::fold_case(x)
            .cmp(&super::interp::fold_case(y))
            .then_with(|| x.cmp(y))
    } else {
        x.cmp(y)
    }
}

fn order_cmp(
    o: Order,
    a: &(Str, Cell),
    b: &(Str, Cell),
    conv: &[u8],
    ic: bool,
) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let by_index = || a.0.cmp(&b.0);
    let (x, y) = match (o, &a.1, &b.1) {
        (Order::IndStr, ..) => return str_order(&a.0, &b.0, ic),
        (Order::IndNum, ..) => {
            return str_to_num(&a.0)
                .total_cmp(&str_to_num(&b.0))
                .then_with(by_index);
        }
        // By value: subarrays after every scalar, among themselves by index.
        (_, Cell::Arr(_), Cell::Arr(_)) => return by_index(),
        (_, Cell::Arr(_), _) => return Ordering::Greater,
        (_, _, Cell::Arr(_)) => return Ordering::Less,
        (_, x, y) => (cell_value(x), cell_value(y)),
    };
    match o {
        Order::ValStr => {
            str_order(&x.to_str_with(conv), &y.to_str_with(conv), ic).then_with(by_index)
        }
        Order::ValNum => x.to_num().total_cmp(&y.to_num()).then_with(by_index),
        _ => match (sorts_as_number(&x), sorts_as_number(&y)) {
            (true, true) => x.to_num().total_cmp(&y.to_num()).then_with(by_index),
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => {
                str_order(&x.to_str_with(conv), &y.to_str_with(conv), ic).then_with(by_index)
            }
        },
    }
}

/// A stable merge sort whose comparison may fail (a user function's error stops it);
/// unlike the standard sorts it never panics on an inconsistent comparison.
fn merge_sort<T: Clone>(
    v: Vec<T>,
    cmp: &mut dyn FnMut(&T, &T) -> R<std::cmp::Ordering>,
) -> R<Vec<T>> {
    let n = v.len();
    let mut src = v;
    let mut width = 1;
    while width < n {
        let mut dst: Vec<T> = Vec::with_capacity(n);
        let mut lo = 0;
        while lo < n {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            let (mut i, mut j) = (lo, mid);
            while i < mid && j < hi {
                if cmp(&src[j], &src[i])? == std::cmp::Ordering::Less {
                    dst.push(src[j].clone());
                    j += 1;
                } else {
                    dst.push(src[i].clone());
                    i += 1;
                }
            }
            dst.extend_from_slice(&src[i..mid]);
            dst.extend_from_slice(&src[j..hi]);
            lo = hi;
        }
        src = dst;
        width *= 2;
    }
    Ok(src)
}

impl Interp {
    /// Reads an ordering name: `@ind_str_asc` and the like, `@unsorted`, or the name of
    /// a user function taking (i1, v1, i2, v2).
    pub(super) fn sort_how(&mut self, how: &[u8]) -> R<SortHow> {
        let order = match how {
            b"@unsorted" => return Ok(SortHow::Unsorted),
            b"@ind_str_asc" | b"@ind_str_desc" => Some(Order::IndStr),
            b"@ind_num_asc" | b"@ind_num_desc" => Some(Order::IndNum),
            b"@val_str_asc" | b"@val_str_desc" => Some(Order::ValStr),
            b"@val_num_asc" | b"@val_num_desc" => Some(Order::ValNum),
            b"@val_type_asc" | b"@val_type_desc" => Some(Order::ValType),
            _ => None,
        };
        if let Some(o) = order {
            return Ok(SortHow::Builtin(o, how.ends_with(b"_desc")));
        }
        match self.func_index(how) {
            Some(f) => Ok(SortHow::Func(f)),
            // gawk says so for any name, `@` or not, identifier or not.
            None => Err(Fail::Fatal(format!(
                "sort comparison function `{}' is not defined",
                String::from_utf8_lossy(how)
            ))),
        }
    }

    /// Orders (index, value) pairs.
    pub(super) fn sort_entries(
        &mut self,
        mut entries: Vec<(Str, Cell)>,
        how: &SortHow,
    ) -> R<Vec<(Str, Cell)>> {
        match *how {
            SortHow::Unsorted => Ok(entries),
            SortHow::Builtin(o, desc) => {
                let conv = self.convfmt();
                let ic = self.ignoring_case();
                if desc {
                    entries.sort_by(|a, b| order_cmp(o, b, a, &conv, ic));
                } else {
                    entries.sort_by(|a, b| order_cmp(o, a, b, &conv, ic));
                }
                Ok(entries)
            }
            SortHow::Func(f) => merge_sort(entries, &mut |a, b| {
                let frame = vec![
                    Cell::Val(Value::StrNum(a.0.clone())),
                    a.1.clone(),
                    Cell::Val(Value::StrNum(b.0.clone())),
                    b.1.clone(),
                ];
                let r = self.call_frame(f, frame)?.to_num();
                Ok(if r < 0.0 {
                    std::cmp::Ordering::Less
                } else if r > 0.0 {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                })
            }),
        }
    }

    pub(super) fn format_pub(&mut self, fmt: &[u8], vals: &[Value]) -> R<Vec<u8>> {
        match super::value::sprintf(fmt, vals, &self.convfmt()) {
            Ok(b) => Ok(b),
            Err(e) => Err(Fail::Fatal(e.message(fmt))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gsub_empty_matches() {
        let re = super::super::re::compile(b"x*", false).unwrap();
        let (out, n) = substitute(&re, b"abc", 0, &mut |_, o| o.push(b'-')).unwrap();
        assert_eq!((out.as_slice(), n), (&b"-a-b-c-"[..], 4));
        let (out, _) = substitute(&re, b"xxa", 0, &mut |_, o| o.push(b'-')).unwrap();
        assert_eq!(out, b"-a-");
    }

    #[test]
    fn sub_replacement_escapes() {
        let mut o = Vec::new();
        expand_sub(b"[&] \\& \\\\ \\\\& \\\\\\& \\q", b"m", &mut o);
        assert_eq!(o, b"[m] & \\\\ \\m \\& \\q");
    }

    #[test]
    fn strtonum_bases() {
        assert_eq!(strtonum(b"0x1F"), 31.0);
        assert_eq!(strtonum(b"017"), 15.0);
        assert_eq!(strtonum(b"12.5"), 12.5);
    }
}

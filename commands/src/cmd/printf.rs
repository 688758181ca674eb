//! `printf`: bash's builtin, not GNU's binary: `%s %d %i %u %o %x %X %f %F %e %E %g %G
//! %c %b %q %Q %%` with flags, widths, precisions and `*`; the format is reused while
//! arguments remain; a bad number warns `printf: X: invalid number` and gives status 1.
//! `-v VAR` needs the shell and is refused here. No clap: bash's printf has no `--help`.

use async_trait::async_trait;

use super::util::quote;
use crate::{CmdResult, Command, Context, STATUS_USAGE};

/// Bytes one `printf` may produce in total (a `%1000000000d` width, or a format reused
/// over many arguments, must not allocate without bound).
const MAX_PRINTF_OUTPUT: usize = 64 * 1024 * 1024;

/// Largest width or precision accepted, so one conversion stays bounded.
const MAX_FIELD: usize = 1024 * 1024;

/// How backslash escapes are read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Escapes {
    /// A printf format: `\nnn` octal with 1–3 digits, `\"`, `\'`, `\?`.
    Format,
    /// `echo -e`: octal is `\0nnn` (the leading 0 plus up to 3 digits); `\c` stops all
    /// output.
    Echo,
    /// `%b`: as `echo -e`, and `\nnn` without the leading 0 is octal too.
    Percent,
}

/// Appends `s` with backslash escapes expanded. Returns true when `\c` asked to stop.
pub(crate) fn unescape(s: &[u8], out: &mut Vec<u8>, mode: Escapes) -> bool {
    unescape_in(s, out, mode, &mut EscapeContext::default())
}

/// What expanding escapes depends on beyond the text, and what it has to say.
#[derive(Default)]
pub(crate) struct EscapeContext {
    /// The C locale: a `\u`/`\U` past ASCII has no character there and stays as written
    /// (with its digits in upper case, as bash shows it).
    pub c_locale: bool,
    /// Warn (bash's printf) about a `\x`, `\u` or `\U` without digits.
    pub warn: bool,
    /// The warnings given.
    pub warnings: Vec<String>,
}

/// [`unescape`] in `cx`.
pub(crate) fn unescape_in(
    s: &[u8],
    out: &mut Vec<u8>,
    mode: Escapes,
    cx: &mut EscapeContext,
) -> bool {
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if b != b'\\' || i + 1 >= s.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let e = s[i + 1];
        i += 2;
        match e {
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'e' | b'E' => out.push(0x1b),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'\\' => out.push(b'\\'),
            b'c' if mode != Escapes::Format => return true,
            b'"' | b'\'' | b'?' if mode == Escapes::Format => out.push(e),
            b'0'..=b'7' => {
                let (start, max) = match (mode, e) {
                    (Escapes::Echo | Escapes::Percent, b'0') => (i, 3),
                    (Escapes::Echo, _) => {
                        // echo -e has no `\1`-style octal: keep it literally.
                        out.push(b'\\');
                        out.push(e);
                        continue;
                    }
                    (Escapes::Format | Escapes::Percent, _) => (i - 1, 3),
                };
                let mut v: u32 = 0;
                let mut j = start;
                while j < s.len() && j < start + max && (b'0'..=b'7').contains(&s[j]) {
                    v = v * 8 + u32::from(s[j] - b'0');
                    j += 1;
                }
                out.push((v & 0xff) as u8);
                i = j;
            }
            b'x' | b'u' | b'U' => {
                let max = match e {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let mut v: u32 = 0;
                let mut j = i;
                while j < s.len() && j < i + max && s[j].is_ascii_hexdigit() {
                    v = v * 16 + (s[j] as char).to_digit(16).unwrap_or(0);
                    j += 1;
                }
                if j == i {
                    if cx.warn {
                        let what = if e == b'x' { "hex" } else { "unicode" };
                        cx.warnings.push(format!(
                            "printf: missing {what} digit for \\{}\n",
                            e as char
                        ));
                    }
                    out.push(b'\\');
                    out.push(e);
                    continue;
                }
                i = j;
                if e == b'x' {
                    out.push(v as u8);
                } else if cx.c_locale && v > 0x7f {
                    // bash writes the escape back by the value's size, not as it was
                    // written (`\U000000e9` is `\u00E9`).
                    let text = if v < 0x10000 {
                        format!("\\u{v:04X}")
                    } else {
                        format!("\\U{v:08X}")
                    };
                    out.extend_from_slice(text.as_bytes());
                } else {
                    let c = char::from_u32(v).unwrap_or('\u{fffd}');
                    let mut tmp = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                }
            }
            _ => {
                out.push(b'\\');
                out.push(e);
            }
        }
    }
    false
}

/// The code of the first character of `s` (`printf %d "'c"`): in the C locale, or for a
/// byte that is not UTF-8, its first byte; 0 for nothing.
fn char_code(s: &str, c_locale: bool) -> u32 {
    match s.chars().next() {
        Some(c) if c_locale || crate::bytetext::char_byte(c).is_some() => {
            crate::bytetext::encode(s)
                .first()
                .map_or(0, |&b| u32::from(b))
        }
        Some(c) => u32::from(c),
        None => 0,
    }
}

/// One `%` conversion's flags, width and precision.
#[derive(Default, Clone)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

impl Spec {
    /// Pads `body` (already signed) to the width.
    /// What goes before a number: `-`, or what `+` or ` ` asks for.
    fn sign(&self, neg: bool) -> &'static str {
        if neg {
            "-"
        } else if self.plus {
            "+"
        } else if self.space {
            " "
        } else {
            ""
        }
    }

    fn pad(&self, body: &[u8], numeric: bool, out: &mut Vec<u8>) {
        let width = self.width.unwrap_or(0);
        if body.len() >= width {
            out.extend_from_slice(body);
            return;
        }
        let fill = width - body.len();
        if self.left {
            out.extend_from_slice(body);
            out.resize(out.len() + fill, b' ');
        } else if self.zero && numeric {
            // Zeros go after the sign and any 0x prefix.
            let mut split = 0;
            if matches!(body.first(), Some(b'-' | b'+' | b' ')) {
                split = 1;
            }
            if body.len() >= split + 2
                && body[split] == b'0'
                && matches!(body[split + 1], b'x' | b'X')
            {
                split += 2;
            }
            out.extend_from_slice(&body[..split]);
            out.resize(out.len() + fill, b'0');
            out.extend_from_slice(&body[split..]);
        } else {
            out.resize(out.len() + fill, b' ');
            out.extend_from_slice(body);
        }
    }
}

/// The state of one `printf` run: the arguments left and whether a warning was given.
struct Run<'a> {
    args: &'a [String],
    next: usize,
    status: i32,
    warnings: Vec<String>,
    /// GNU coreutils' `printf` program (`env printf`, `xargs printf`), not bash's
    /// builtin: its messages, its `%q`, no `%(…)T`.
    gnu: bool,
    /// The C locale (for GNU's `%q`: bytes past ASCII are not printable there).
    c_locale: bool,
    /// bash's `%n`: each variable named and the bytes the use of the format had written
    /// so far, for the shell to assign.
    assigned: Vec<(String, usize)>,
    /// Where in the output the current use of the format began (for `%n`).
    pass_start: usize,
}

impl Run<'_> {
    /// How escapes expand in this run: bash's builtin warns about missing digits.
    fn escapes(&self) -> EscapeContext {
        EscapeContext {
            c_locale: self.c_locale,
            warn: !self.gnu,
            warnings: Vec::new(),
        }
    }

    fn take(&mut self) -> Option<&str> {
        let a = self.args.get(self.next)?;
        self.next += 1;
        Some(a.as_str())
    }

    /// Parses an integer argument the way bash does: decimal, `0x` hex, `0` octal, or
    /// `'c` for a character's code. Invalid text warns and yields what parsed.
    fn int(&mut self, arg: Option<&str>) -> i128 {
        self.int_as(arg, false)
    }

    /// [`Run::int`] for a signed (`%d`) or an unsigned (`%u`, `%o`, `%x`) conversion.
    fn int_as(&mut self, arg: Option<&str>, unsigned: bool) -> i128 {
        let Some(arg) = arg else { return 0 };
        let s = arg.trim_start();
        if s.is_empty() {
            // An empty argument is 0; one of blanks only is not a number.
            if !arg.is_empty() {
                self.not_a_number(arg);
            }
            return 0;
        }
        if let Some(rest) = s.strip_prefix('\'').or_else(|| s.strip_prefix('"')) {
            return i128::from(char_code(rest, self.c_locale));
        }
        let (neg, digits) = match s.as_bytes()[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let (radix, body) = if let Some(h) = digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
        {
            (16, h)
        } else if digits.len() > 1 && digits.starts_with('0') {
            (8, &digits[1..])
        } else {
            (10, digits)
        };
        let mut v: i128 = 0;
        let mut used = 0;
        let mut overflow = false;
        for c in body.chars() {
            let Some(d) = c.to_digit(radix) else { break };
            v = v * i128::from(radix) + i128::from(d);
            if v > i128::from(u64::MAX) {
                overflow = true;
                v = i128::from(u64::MAX);
            }
            used += c.len_utf8();
        }
        // bash reads %d's argument with strtoimax and %u/%o/%x's with strtoumax: past
        // their range it warns and uses the limit (the status stays 0).
        let limit = match (unsigned, neg) {
            (true, _) => i128::from(u64::MAX),
            (false, false) => i128::from(i64::MAX),
            (false, true) => -i128::from(i64::MIN),
        };
        if self.gnu {
            let nothing = used == 0 && radix != 8;
            if nothing || used < body.len() || overflow {
                let why = if nothing {
                    "expected a numeric value"
                } else if used < body.len() {
                    "value not completely converted"
                } else {
                    "Numerical result out of range"
                };
                self.warnings
                    .push(format!("printf: {}: {why}\n", quote(arg)));
                self.status = 1;
            }
            if overflow {
                v = if neg {
                    i128::from(i64::MAX) + 1
                } else {
                    i128::from(i64::MAX)
                };
            }
        } else if used < body.len() || (used == 0 && radix != 8) {
            // bash names what the number looked like: `08` an octal one, `0x…` a hex one.
            let b = arg.as_bytes();
            let what = match (b.first(), b.get(1)) {
                (Some(b'0'), Some(d)) if d.is_ascii_digit() => "invalid octal number",
                (Some(b'0'), Some(b'x')) => "invalid hex number",
                _ => "invalid number",
            };
            self.warnings.push(format!("printf: {arg}: {what}\n"));
            self.status = 1;
        } else if overflow || v > limit {
            self.warnings.push(format!(
                "printf: warning: {arg}: Numerical result out of range\n"
            ));
            if unsigned && neg {
                return i128::from(u64::MAX);
            }
            v = limit;
        }
        if neg { -v } else { v }
    }

    /// Warns that `arg` (blanks only) is no number at all; status 1.
    fn not_a_number(&mut self, arg: &str) {
        let msg = if self.gnu {
            format!("printf: {}: expected a numeric value\n", quote(arg))
        } else {
            format!("printf: {arg}: invalid number\n")
        };
        self.warnings.push(msg);
        self.status = 1;
    }

    fn float(&mut self, arg: Option<&str>) -> f64 {
        let Some(arg) = arg else { return 0.0 };
        // Leading blanks are skipped (strtold); trailing ones are not part of a number.
        let s = arg.trim_start();
        if s.is_empty() {
            if !arg.is_empty() {
                self.not_a_number(arg);
            }
            return 0.0;
        }
        if let Some(rest) = s.strip_prefix('\'').or_else(|| s.strip_prefix('"')) {
            return f64::from(char_code(rest, self.c_locale));
        }
        if let Ok(v) = s.parse::<f64>() {
            return v;
        }
        if s.starts_with("0x") || s.starts_with("0X") || s.starts_with("-0x") {
            return self.int(Some(s)) as f64;
        }
        // The longest prefix that parses.
        let mut best = 0.0;
        for end in (1..s.len()).rev() {
            if s.is_char_boundary(end)
                && let Ok(v) = s[..end].parse::<f64>()
            {
                best = v;
                break;
            }
        }
        let msg = if !self.gnu {
            format!("printf: {arg}: invalid number\n")
        } else if best == 0.0 && !s.starts_with(['0', '.', '-', '+']) {
            format!("printf: {}: expected a numeric value\n", quote(arg))
        } else {
            format!("printf: {}: value not completely converted\n", quote(arg))
        };
        self.warnings.push(msg);
        self.status = 1;
        best
    }
}

fn fmt_int(v: i128, conv: u8, spec: &Spec, out: &mut Vec<u8>) {
    let signed = matches!(conv, b'd' | b'i');
    let (neg, mag): (bool, u128) = if signed {
        let v = v.clamp(i128::from(i64::MIN), i128::from(i64::MAX));
        (v < 0, v.unsigned_abs())
    } else {
        // Unsigned conversions see a negative number as its two's complement.
        let u = if v < 0 {
            (v as i64) as u64
        } else {
            v.min(i128::from(u64::MAX)) as u64
        };
        (false, u128::from(u))
    };
    let mut digits = match conv {
        b'o' => format!("{mag:o}"),
        b'x' => format!("{mag:x}"),
        b'X' => format!("{mag:X}"),
        _ => mag.to_string(),
    };
    if let Some(p) = spec.prec {
        if p == 0 && mag == 0 {
            digits.clear();
        }
        if digits.len() < p {
            // One allocation: inserting a zero at a time was quadratic in the precision.
            digits = format!("{}{digits}", "0".repeat(p - digits.len()));
        }
    }
    if spec.alt {
        match conv {
            b'o' if !digits.starts_with('0') => digits.insert(0, '0'),
            b'x' if mag != 0 => digits.insert_str(0, "0x"),
            b'X' if mag != 0 => digits.insert_str(0, "0X"),
            _ => {}
        }
    }
    let sign = if neg {
        "-"
    } else if signed && spec.plus {
        "+"
    } else if signed && spec.space {
        " "
    } else {
        ""
    };
    let body = format!("{sign}{digits}");
    let mut spec = spec.clone();
    if spec.prec.is_some() {
        spec.zero = false;
    }
    spec.pad(body.as_bytes(), true, out);
}

/// `d.dddddde+XX`, C's `%e`.
fn exp_form(v: f64, prec: usize, upper: bool) -> String {
    let s = format!("{v:.prec$e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    let e = if upper { 'E' } else { 'e' };
    format!("{mant}{e}{sign}{:02}", exp.abs())
}

fn strip_zeros(s: &str) -> String {
    if !s.contains('.') {
        return s.to_string();
    }
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let mant = mant.trim_end_matches('0').trim_end_matches('.');
    format!("{mant}{exp}")
}

fn fmt_float(v: f64, conv: u8, spec: &Spec, out: &mut Vec<u8>) {
    let upper = conv.is_ascii_uppercase();
    let prec = spec.prec.unwrap_or(6);
    let mag = v.abs();
    let mut body = if !v.is_finite() {
        let s = if v.is_nan() { "nan" } else { "inf" };
        if upper {
            s.to_uppercase()
        } else {
            s.to_string()
        }
    } else {
        match conv.to_ascii_lowercase() {
            b'e' => exp_form(mag, prec, upper),
            b'g' => {
                let p = if prec == 0 { 1 } else { prec };
                let x = if mag == 0.0 {
                    0
                } else {
                    let e = exp_form(mag, p - 1, false);
                    e.rsplit_once('e')
                        .and_then(|(_, x)| x.parse::<i32>().ok())
                        .unwrap_or(0)
                };
                let s = if x < -4 || x >= p as i32 {
                    exp_form(mag, p - 1, upper)
                } else {
                    let fp = (p as i32 - 1 - x).max(0) as usize;
                    format!("{mag:.fp$}")
                };
                if spec.alt { s } else { strip_zeros(&s) }
            }
            _ => {
                let s = format!("{mag:.prec$}");
                if spec.alt && prec == 0 {
                    format!("{s}.")
                } else {
                    s
                }
            }
        }
    };
    let neg = v.is_sign_negative() && !(v.is_nan());
    let sign = spec.sign(neg);
    body.insert_str(0, sign);
    spec.pad(body.as_bytes(), v.is_finite(), out);
}

/// `%a`/`%A` as bash and coreutils print them on x86-64, where they format a `long
/// double`: its 64-bit significand (the integer bit first, so the first hex digit is 8 to
/// f) without trailing zeros, and the binary exponent of that first digit (`0x8p-3` for
/// one). A decimal argument is rounded to 64 bits from its exact value (as `strtold`
/// does), so `0.1` shows the digits of the long double, not of the nearest `f64`.
fn hex_float(arg: Option<&str>, v: f64, upper: bool, spec: &Spec, out: &mut Vec<u8>) {
    // A decimal past an f64's range may still be a long double (`1e400`).
    let exact = arg.and_then(decimal_significand);
    if v.is_nan() || (v.is_infinite() && exact.is_none()) {
        let mut spec = spec.clone();
        spec.zero = false;
        return fmt_float(v, if upper { b'E' } else { b'e' }, &spec, out);
    }
    let (mut m, mut exp) = exact.unwrap_or_else(|| f64_significand(v.abs()));
    let frac_digits = 15usize;
    let digits = match spec.prec {
        Some(p) if p < frac_digits && m != 0 => {
            // Round to `p` hex digits after the point, half to even.
            let shift = 4 * (frac_digits - p) as u32;
            let (q, r) = (m >> shift, m & ((1u64 << shift) - 1));
            let half = 1u64 << (shift - 1);
            let mut q = u128::from(q);
            if r > half || (r == half && q & 1 == 1) {
                q += 1;
            }
            let wide = q << shift;
            if wide >> 64 != 0 {
                m = 1 << 63;
                exp += 1;
            } else {
                m = wide as u64;
            }
            p
        }
        Some(p) => p,
        None => frac_digits,
    };
    let (lead, frac) = if m == 0 {
        (0, 0)
    } else {
        (m >> 60, m & ((1u64 << 60) - 1))
    };
    let mut frac_hex = format!("{frac:015x}");
    if spec.prec.is_none() {
        frac_hex = frac_hex.trim_end_matches('0').to_string();
    } else if digits <= frac_digits {
        frac_hex.truncate(digits);
    } else {
        frac_hex.extend(std::iter::repeat_n('0', digits - frac_digits));
    }
    let shown = if m == 0 { 0 } else { exp + 60 };
    let point = if frac_hex.is_empty() && !spec.alt {
        ""
    } else {
        "."
    };
    let sign = spec.sign(v.is_sign_negative());
    let body = format!("{sign}0x{lead:x}{point}{frac_hex}p{shown:+}");
    let body = if upper { body.to_uppercase() } else { body };
    spec.pad(body.as_bytes(), true, out);
}

/// `v` (finite, not negative) as a 64-bit significand with its top bit set (0 for zero)
/// and the exponent of its last bit.
fn f64_significand(v: f64) -> (u64, i64) {
    let bits = v.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i64;
    let f = bits & ((1u64 << 52) - 1);
    let (m, exp) = if e == 0 {
        (f, -1074)
    } else {
        (f | (1 << 52), e - 1075)
    };
    if m == 0 {
        return (0, 0);
    }
    let shift = m.leading_zeros();
    (m << shift, exp - i64::from(shift))
}

/// A plain decimal number (`-1.5e3`) rounded to a 64-bit significand as
/// [`f64_significand`] gives it, from its exact value; `None` for any other form (hex,
/// `inf`, a character constant) or an exponent too large to work out exactly.
fn decimal_significand(s: &str) -> Option<(u64, i64)> {
    use num_bigint::BigUint;
    let s = s.trim();
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (num, e10) = match s.find(['e', 'E']) {
        Some(at) => (&s[..at], s[at + 1..].parse::<i64>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let e10 = e10.checked_sub(frac.len() as i64)?;
    // Past a long double's range (about 1e±4950) the value is its infinity or zero.
    if e10.abs() > 4950 {
        return None;
    }
    let digits = format!("{int}{frac}");
    let d = BigUint::parse_bytes(digits.as_bytes(), 10).unwrap_or_default();
    if d == BigUint::ZERO {
        return Some((0, 0));
    }
    let ten = BigUint::from(10u32);
    let round = |q: BigUint, twice_r: std::cmp::Ordering| -> BigUint {
        let odd = q.bit(0);
        match twice_r {
            std::cmp::Ordering::Greater => q + 1u32,
            std::cmp::Ordering::Equal if odd => q + 1u32,
            _ => q,
        }
    };
    let (q, exp) = if e10 >= 0 {
        let n = d * ten.pow(e10 as u32);
        let bits = n.bits() as i64;
        if bits <= 64 {
            (n << (64 - bits) as usize, bits - 64)
        } else {
            let k = (bits - 64) as usize;
            let q = &n >> k;
            let r = &n - (&q << k);
            let twice = (r << 1usize).cmp(&(BigUint::from(1u32) << k));
            (round(q, twice), k as i64)
        }
    } else {
        let p = ten.pow((-e10) as u32);
        let mut shift = 64 + p.bits() as i64 - d.bits() as i64;
        loop {
            // d × 2^shift / p, exactly: the shift goes on whichever side keeps it whole.
            let (num, den) = if shift >= 0 {
                (&d << shift as usize, p.clone())
            } else {
                (d.clone(), &p << (-shift) as usize)
            };
            let q = &num / &den;
            match q.bits() {
                b if b > 64 => shift -= 1,
                b if b < 64 => shift += 1,
                _ => {
                    let r = num - &q * &den;
                    let twice = (r << 1usize).cmp(&den);
                    break (round(q, twice), -shift);
                }
            }
        }
    };
    // Rounding up may carry into a 65th bit.
    let (q, exp) = if q.bits() > 64 {
        (q >> 1usize, exp + 1)
    } else {
        (q, exp)
    };
    let m = q.iter_u64_digits().next().unwrap_or(0);
    Some((m, exp))
}

/// What a `%f`/`%e`/`%g` argument is as the `long double` bash and coreutils read it
/// into (`strtold` on x86-64: a 64-bit significand, exponents to ±16383).
enum LongDouble {
    /// A plain decimal, not zero, in range: its significand and the exponent of its last
    /// bit, exactly as rounded.
    Exact(u64, i64),
    /// A plain decimal past the range (`1e5000`, `1e-5000`): `strtold` gives infinity or
    /// zero with ERANGE, which bash warns about.
    OutOfRange,
    /// Zero, hex, `inf`, a character constant, or not a number: the `f64` path.
    Other,
}

fn long_double(arg: &str) -> LongDouble {
    let s = arg.trim();
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (num, e10) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], body[at + 1..].parse::<i64>().ok()),
        None => (body, Some(0)),
    };
    let plain = !num.is_empty()
        && num.bytes().filter(|b| *b == b'.').count() <= 1
        && num.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && num.bytes().any(|b| b.is_ascii_digit());
    if !plain || e10.is_none() || !num.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return LongDouble::Other;
    }
    match decimal_significand(s) {
        // The top bit is bit 63 + exp: a normal long double has it in -16382..=16383.
        Some((m, exp)) if m != 0 && (-16382..=16383).contains(&(exp + 63)) => {
            LongDouble::Exact(m, exp)
        }
        // Subnormal long doubles keep fewer bits than this rounding did: left to f64.
        Some((m, exp)) if m != 0 && exp + 63 < -16382 && exp + 63 >= -16445 => LongDouble::Other,
        _ => LongDouble::OutOfRange,
    }
}

/// `m` × 2^`exp` as a fraction.
fn ratio(m: u64, exp: i64) -> (num_bigint::BigUint, num_bigint::BigUint) {
    use num_bigint::BigUint;
    let one = BigUint::from(1u32);
    if exp >= 0 {
        (BigUint::from(m) << exp as usize, one)
    } else {
        (BigUint::from(m), one << (-exp) as usize)
    }
}

/// `num/den` × 10^`k`, rounded to an integer half to even (as glibc rounds the exact
/// binary value).
fn scaled(num: &num_bigint::BigUint, den: &num_bigint::BigUint, k: i64) -> num_bigint::BigUint {
    use num_bigint::BigUint;
    let ten = BigUint::from(10u32);
    let (n, d) = if k >= 0 {
        (num * ten.pow(k as u32), den.clone())
    } else {
        (num.clone(), den * ten.pow((-k) as u32))
    };
    let q = &n / &d;
    let r = n - &q * &d;
    match (r << 1usize).cmp(&d) {
        std::cmp::Ordering::Greater => q + 1u32,
        std::cmp::Ordering::Equal if q.bit(0) => q + 1u32,
        _ => q,
    }
}

/// `%.Pf` of `num/den`: its digits with the point `prec` places from the end.
fn exact_fixed(num: &num_bigint::BigUint, den: &num_bigint::BigUint, prec: usize) -> String {
    let digits = scaled(num, den, prec as i64).to_string();
    let digits = format!("{digits:0>width$}", width = prec + 1);
    let (int, frac) = digits.split_at(digits.len() - prec);
    if prec == 0 {
        int.to_string()
    } else {
        format!("{int}.{frac}")
    }
}

/// The `prec + 1` significant digits of `num/den` (not zero), rounded, and the decimal
/// exponent of the first.
fn exact_digits(
    num: &num_bigint::BigUint,
    den: &num_bigint::BigUint,
    prec: usize,
) -> (String, i64) {
    // log10 of the value, to within one either way.
    let log2 = num.bits() as f64 - den.bits() as f64;
    let mut x = (log2 * std::f64::consts::LOG10_2).floor() as i64;
    loop {
        let q = scaled(num, den, prec as i64 - x).to_string();
        match q.len().cmp(&(prec + 1)) {
            // Rounding up to a power of ten gives one digit too many, all but one zeros.
            std::cmp::Ordering::Greater
                if q.len() == prec + 2 && q[1..].bytes().all(|b| b == b'0') =>
            {
                return (q[..prec + 1].to_string(), x + 1);
            }
            std::cmp::Ordering::Greater => x += 1,
            std::cmp::Ordering::Less => x -= 1,
            std::cmp::Ordering::Equal => return (q, x),
        }
    }
}

/// `d.ddde±XX` from [`exact_digits`].
fn exp_text(digits: &str, x: i64, alt: bool, upper: bool) -> String {
    let (first, rest) = digits.split_at(1);
    let point = if rest.is_empty() && !alt { "" } else { "." };
    let e = if upper { 'E' } else { 'e' };
    let sign = if x < 0 { '-' } else { '+' };
    format!("{first}{point}{rest}{e}{sign}{:02}", x.abs())
}

/// `%f`, `%e` or `%g` of the long double `m` × 2^`exp` (negative when `neg`), from its
/// exact value, as glibc prints a long double: `printf %f 1e400` shows all 401 digits.
fn exact_float(m: u64, exp: i64, neg: bool, conv: u8, spec: &Spec, out: &mut Vec<u8>) {
    let upper = conv.is_ascii_uppercase();
    let prec = spec.prec.unwrap_or(6);
    let (num, den) = ratio(m, exp);
    let mut body = match conv.to_ascii_lowercase() {
        b'e' => {
            let (d, x) = exact_digits(&num, &den, prec);
            exp_text(&d, x, spec.alt, upper)
        }
        b'g' => {
            let p = prec.max(1);
            let (d, x) = exact_digits(&num, &den, p - 1);
            let s = if x < -4 || x >= p as i64 {
                exp_text(&d, x, spec.alt, upper)
            } else {
                let s = exact_fixed(&num, &den, (p as i64 - 1 - x) as usize);
                if spec.alt && !s.contains('.') {
                    format!("{s}.")
                } else {
                    s
                }
            };
            if spec.alt { s } else { strip_zeros(&s) }
        }
        _ => {
            let s = exact_fixed(&num, &den, prec);
            if spec.alt && prec == 0 {
                format!("{s}.")
            } else {
                s
            }
        }
    };
    let sign = spec.sign(neg);
    body.insert_str(0, sign);
    spec.pad(body.as_bytes(), true, out);
}

/// bash's `%q`: a form the shell reads back as the same word.
pub(crate) fn shell_quote(s: &str) -> String {
    shell_quote_in(s, false)
}

/// [`shell_quote`] in the C locale (`c_locale`) or a UTF-8 one: in the C locale no
/// character past ASCII is printable, so a text with one is `$'…'`-quoted, each of its
/// bytes in octal.
pub(crate) fn shell_quote_in(s: &str, c_locale: bool) -> String {
    if s.is_empty() {
        return "''".to_string();
    }
    if s.chars().any(|c| {
        c.is_control() || (c_locale && !c.is_ascii()) || crate::bytetext::char_byte(c).is_some()
    }) {
        let mut q = String::from("$'");
        for c in s.chars() {
            match c {
                '\n' => q.push_str("\\n"),
                '\t' => q.push_str("\\t"),
                '\r' => q.push_str("\\r"),
                '\x1b' => q.push_str("\\E"),
                '\x07' => q.push_str("\\a"),
                '\x08' => q.push_str("\\b"),
                '\x0c' => q.push_str("\\f"),
                '\x0b' => q.push_str("\\v"),
                '\'' => q.push_str("\\'"),
                '\\' => q.push_str("\\\\"),
                c if c.is_control() => q.push_str(&format!("\\{:03o}", c as u32 & 0xff)),
                // A byte that is not UTF-8: its number (the low byte of its character).
                c if crate::bytetext::char_byte(c).is_some() => {
                    q.push_str(&format!("\\{:03o}", c as u32 & 0xff));
                }
                c if c_locale && !c.is_ascii() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        q.push_str(&format!("\\{b:03o}"));
                    }
                }
                c => q.push(c),
            }
        }
        q.push('\'');
        return q;
    }
    let mut q = String::new();
    let mut prev: Option<char> = None;
    for c in s.chars() {
        // `#` is special only where a word starts, `~` also after `=` or `:`.
        let special = " \t!\"$&'()*;<>?[\\]`{|}^,".contains(c)
            || (c == '#' && prev.is_none())
            || (c == '~' && prev.is_none_or(|p| matches!(p, '=' | ':')));
        prev = Some(c);
        if special {
            q.push('\\');
        }
        q.push(c);
    }
    q
}

/// GNU printf's refusal of a conversion it does not know: the text from `%` through the
/// character that ended it; nothing more is printed.
fn gnu_invalid(fmt: &[u8], start: usize, at: usize, run: &mut Run) -> bool {
    let end = (at + 1).min(fmt.len());
    let mut spec = String::from_utf8_lossy(&fmt[start..end]).into_owned();
    if at >= fmt.len() {
        spec = String::from_utf8_lossy(&fmt[start..]).into_owned();
    }
    run.warnings.push(format!(
        "printf: {spec}: invalid conversion specification\n"
    ));
    run.status = 1;
    true
}

/// One character of a word for [`gnu_quote`]: its text, and what it is.
enum QChar<'a> {
    /// Printable: written as is.
    Plain(&'a str),
    /// Written as escapes inside `$'…'`: a letter (`n` for a newline) or octal bytes.
    Escape(String),
}

/// GNU's `%q` (gnulib's shell-escape quoting, as `ls` and coreutils' `printf` use it): the
/// word bare when nothing in it is special to the shell; else in single quotes, with a
/// single quote as `'\''` and unprintable characters as `$'\n'`/`$'\ooo'` pieces; a word
/// whose only special characters are single quotes and blanks goes in double quotes
/// instead. `c_locale`: bytes past ASCII are unprintable (escaped as octal).
pub(crate) fn gnu_quote(s: &str, c_locale: bool) -> String {
    if s.is_empty() {
        return "''".to_string();
    }
    let mut chars: Vec<(usize, QChar)> = Vec::new();
    for (i, c) in s.char_indices() {
        let text = &s[i..i + c.len_utf8()];
        let esc = match c {
            '\x07' => Some("a".to_string()),
            '\x08' => Some("b".to_string()),
            '\x0c' => Some("f".to_string()),
            '\n' => Some("n".to_string()),
            '\r' => Some("r".to_string()),
            '\t' => Some("t".to_string()),
            '\x0b' => Some("v".to_string()),
            c if crate::bytetext::char_byte(c).is_some() => {
                Some(format!("{:03o}", c as u32 & 0xff))
            }
            c if c.is_control() || (c_locale && !c.is_ascii()) => Some(
                text.bytes()
                    .map(|b| format!("{:03o}", b))
                    .collect::<Vec<_>>()
                    .join("\\"),
            ),
            _ => None,
        };
        chars.push((
            i,
            match esc {
                Some(e) => QChar::Escape(e),
                None => QChar::Plain(text),
            },
        ));
    }
    let lone = chars.len() == 1;
    // Whether a character makes the word need quotes, and whether it may stand inside
    // double quotes unescaped.
    let special = |i: usize, c: &QChar| -> bool {
        match c {
            QChar::Escape(_) => true,
            QChar::Plain(t) => match t.as_bytes()[0] {
                b'{' | b'}' => lone,
                b'#' | b'~' => i == 0,
                b => b" !\"$&()*;<=>[^`|'?\\".contains(&b),
            },
        }
    };
    let plain_ok = |i: usize, c: &QChar| -> bool {
        match c {
            QChar::Escape(_) => false,
            QChar::Plain(t) => match t.as_bytes()[0] {
                b'{' | b'}' => lone,
                b'#' | b'~' => i == 0,
                b' ' | b'\'' => true,
                b => b.is_ascii_alphanumeric() || b"%+,-./:]_@".contains(&b) || b >= 0x80,
            },
        }
    };
    if !chars.iter().any(|(i, c)| special(*i, c)) {
        return s.to_string();
    }
    let has_quote = s.contains('\'');
    if has_quote && chars.iter().all(|(i, c)| plain_ok(*i, c)) {
        return format!("\"{s}\"");
    }
    // In `$'…'` after the last character (gnulib keeps this across its second pass).
    let mut in_escape = false;
    let mut out = String::new();
    let passes = if has_quote { 2 } else { 1 };
    for _ in 0..passes {
        out.clear();
        out.push('\'');
        for (_, c) in &chars {
            match c {
                QChar::Plain("'") => {
                    out.push_str("'\\''");
                    in_escape = false;
                }
                QChar::Plain(t) => {
                    if in_escape {
                        out.push_str("''");
                        in_escape = false;
                    }
                    out.push_str(t);
                }
                QChar::Escape(e) => {
                    if !in_escape {
                        out.push_str("'$'");
                        in_escape = true;
                    }
                    out.push('\\');
                    out.push_str(e);
                }
            }
        }
        out.push('\'');
    }
    out
}

/// Applies the format once; returns true when `%b`'s `\c` stopped everything.
/// Whether `s` is a shell variable name (for `%n`).
fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f == '_' || f.is_ascii_alphabetic())
        && c.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn format_once(fmt: &[u8], run: &mut Run, out: &mut Vec<u8>) -> bool {
    let mut i = 0;
    run.pass_start = out.len();
    while i < fmt.len() {
        if out.len() > MAX_PRINTF_OUTPUT {
            return true;
        }
        let b = fmt[i];
        if b == b'\\' {
            // One escape at a time, so a `\c` can be told apart.
            let end = escape_end(fmt, i);
            // GNU's printf stops at a `\c` in the format too; bash's prints it as is.
            if run.gnu && fmt.get(i + 1) == Some(&b'c') {
                return true;
            }
            let mut cx = run.escapes();
            unescape_in(&fmt[i..end], out, Escapes::Format, &mut cx);
            run.warnings.append(&mut cx.warnings);
            i = end;
            continue;
        }
        if b != b'%' {
            out.push(b);
            i += 1;
            continue;
        }
        i += 1;
        if i >= fmt.len() {
            if run.gnu {
                return gnu_invalid(fmt, i - 1, i, run);
            }
            // bash stops at a `%` that ends the format.
            run.warnings
                .push("printf: `%': missing format character\n".to_string());
            run.status = 1;
            return true;
        }
        if fmt[i] == b'%' {
            out.push(b'%');
            i += 1;
            continue;
        }
        let start = i - 1;
        let mut spec = Spec::default();
        while i < fmt.len() {
            match fmt[i] {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                b'0' => spec.zero = true,
                b'\'' => {}
                _ => break,
            }
            i += 1;
        }
        if i < fmt.len() && fmt[i] == b'*' {
            let w = run.take().map(str::to_string);
            let w = run.int(w.as_deref());
            if w < 0 {
                spec.left = true;
            }
            spec.width = Some((w.unsigned_abs() as usize).min(MAX_FIELD));
            i += 1;
        } else {
            let mut w = 0usize;
            let mut any = false;
            while i < fmt.len() && fmt[i].is_ascii_digit() {
                w = (w * 10 + usize::from(fmt[i] - b'0')).min(MAX_FIELD);
                any = true;
                i += 1;
            }
            if any {
                spec.width = Some(w);
            }
        }
        if i < fmt.len() && fmt[i] == b'.' {
            i += 1;
            if i < fmt.len() && fmt[i] == b'*' {
                let p = run.take().map(str::to_string);
                let p = run.int(p.as_deref());
                spec.prec = if p < 0 {
                    None
                } else {
                    Some((p as usize).min(MAX_FIELD))
                };
                i += 1;
            } else {
                let mut p = 0usize;
                while i < fmt.len() && fmt[i].is_ascii_digit() {
                    p = (p * 10 + usize::from(fmt[i] - b'0')).min(MAX_FIELD);
                    i += 1;
                }
                spec.prec = Some(p);
            }
        }
        // `%(FORMAT)T`: the argument (seconds since the epoch; -1 or none: now) as strftime
        // formats it, padded like a string.
        if run.gnu
            && !matches!(fmt.get(i), Some(c) if b"diouxXfFeEgGaAcsbq".contains(c) || b"hlLjzt".contains(c))
        {
            return gnu_invalid(fmt, start, i, run);
        }
        if fmt.get(i) == Some(&b'(') {
            // The `)` that closes the `(` (they nest); without one, or without a `T` after
            // it, bash warns (naming the byte after the `)`, NUL at the end), prints the
            // `%` and goes on from the `(` as plain text.
            let mut depth = 0usize;
            let close = fmt[i..]
                .iter()
                .position(|&b| {
                    match b {
                        b'(' => depth += 1,
                        b')' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map(|p| i + p);
            let conv = close.and_then(|c| fmt.get(c + 1).copied());
            let Some(close) = close.filter(|_| conv == Some(b'T')) else {
                let c = conv.map_or('\0', char::from);
                run.warnings.push(format!(
                    "printf: warning: `{c}': invalid time format specification\n"
                ));
                out.push(b'%');
                i = start + 1;
                continue;
            };
            let arg = run.take().map(str::to_string);
            let secs = match arg.as_deref() {
                None => -1,
                Some(a) => run.int(Some(a)),
            };
            let datefmt = String::from_utf8_lossy(&fmt[i + 1..close]);
            let mut body = strftime(&datefmt, secs).into_bytes();
            if let Some(p) = spec.prec {
                body.truncate(p);
            }
            spec.pad(&body, false, out);
            i = close + 2;
            continue;
        }
        while i < fmt.len() && b"hlLjzt".contains(&fmt[i]) {
            i += 1;
        }
        if run.gnu
            && !matches!(fmt.get(i), Some(c) if b"diouxXfFeEgGaAcsb".contains(c) || (*c == b'q' && i == start + 1))
        {
            return gnu_invalid(fmt, start, i, run);
        }
        let Some(&conv) = fmt.get(i) else {
            run.warnings.push(format!(
                "printf: `{}': missing format character\n",
                String::from_utf8_lossy(&fmt[start..])
            ));
            run.status = 1;
            return true;
        };
        i += 1;
        match conv {
            b's' | b'q' | b'b' | b'c' | b'Q' => {
                let arg = run.take().unwrap_or("").to_string();
                let mut body: Vec<u8> = match conv {
                    b's' => crate::bytetext::encode(&arg).into_owned(),
                    b'q' if run.gnu => gnu_quote(&arg, run.c_locale).into_bytes(),
                    b'q' => shell_quote_in(&arg, run.c_locale).into_bytes(),
                    // bash 5.2's `%Q`: the precision cuts the argument, not its quoted form.
                    b'Q' => {
                        let mut end = spec.prec.unwrap_or(arg.len()).min(arg.len());
                        while !arg.is_char_boundary(end) {
                            end -= 1;
                        }
                        shell_quote_in(&arg[..end], run.c_locale).into_bytes()
                    }
                    // The first byte, in any locale (bash's and GNU's alike); an empty or
                    // missing argument is a NUL byte, as in C.
                    b'c' => vec![crate::bytetext::encode(&arg).first().copied().unwrap_or(0)],
                    _ => {
                        let mut v = Vec::new();
                        let mut cx = run.escapes();
                        let arg = crate::bytetext::encode(&arg);
                        let stop = unescape_in(&arg, &mut v, Escapes::Percent, &mut cx);
                        run.warnings.append(&mut cx.warnings);
                        if stop {
                            let mut s2 = spec.clone();
                            s2.zero = false;
                            s2.pad(&v, false, out);
                            return true;
                        }
                        v
                    }
                };
                if let Some(p) = spec.prec
                    && conv != b'c'
                    && conv != b'Q'
                {
                    body.truncate(p);
                }
                spec.pad(&body, false, out);
            }
            b'd' | b'i' | b'u' | b'o' | b'x' | b'X' => {
                let arg = run.take().map(str::to_string);
                let v = run.int_as(arg.as_deref(), !matches!(conv, b'd' | b'i'));
                fmt_int(v, if conv == b'i' { b'd' } else { conv }, &spec, out);
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                let arg = run.take().map(str::to_string);
                let v = run.float(arg.as_deref());
                if matches!(conv, b'a' | b'A') {
                    hex_float(arg.as_deref(), v, conv == b'A', &spec, out);
                } else {
                    match arg.as_deref().map_or(LongDouble::Other, long_double) {
                        LongDouble::Exact(m, exp) => {
                            let neg = arg.as_deref().is_some_and(|a| a.trim().starts_with('-'));
                            exact_float(m, exp, neg, conv, &spec, out);
                        }
                        LongDouble::OutOfRange => {
                            let a = arg.as_deref().unwrap_or_default();
                            run.warnings.push(if run.gnu {
                                run.status = 1;
                                format!("printf: {}: Numerical result out of range\n", quote(a))
                            } else {
                                format!("printf: warning: {a}: Numerical result out of range\n")
                            });
                            fmt_float(v, conv, &spec, out);
                        }
                        LongDouble::Other => fmt_float(v, conv, &spec, out),
                    }
                }
            }
            // bash's `%n`: the bytes this use of the format wrote so far go to the
            // variable its argument names (none or an empty one: nowhere).
            b'n' if !run.gnu => {
                let name = run.take().unwrap_or_default().to_string();
                if name.is_empty() {
                    continue;
                }
                if !is_identifier(&name) {
                    run.warnings
                        .push(format!("printf: `{name}': not a valid identifier\n"));
                    run.status = 1;
                    return true;
                }
                run.assigned.push((name, out.len() - run.pass_start));
            }
            other => {
                run.warnings.push(format!(
                    "printf: `{}': invalid format character\n",
                    other as char
                ));
                run.status = 1;
                return true;
            }
        }
    }
    false
}

/// The time `secs` seconds after the epoch (-1 and -2: now), in UTC (the session's only
/// time zone), formatted by `fmt` as strftime does (empty: `%X`). A conversion strftime
/// does not know is printed as it is, as glibc does.
fn strftime(fmt: &str, secs: i128) -> String {
    use chrono::format::{Item, StrftimeItems};
    let when = if secs == -1 || secs == -2 {
        Some(chrono::Utc::now())
    } else {
        i64::try_from(secs)
            .ok()
            .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
    };
    let Some(when) = when else {
        return String::new();
    };
    let fmt = if fmt.is_empty() { "%X" } else { fmt };
    // Each `%` conversion (flags, width, modifier, letter) that chrono cannot do is made
    // literal text.
    let mut safe = String::with_capacity(fmt.len());
    let mut rest = fmt;
    while let Some(at) = rest.find('%') {
        safe.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let len = tail
            .char_indices()
            .find(|&(_, c)| !matches!(c, '-' | '_' | '0'..='9' | '^' | '#' | ':' | '.' | 'E' | 'O'))
            .map(|(k, c)| k + c.len_utf8())
            .unwrap_or(tail.len());
        let conv = &rest[at..at + 1 + len];
        let known = len > 0 && !StrftimeItems::new(conv).any(|item| matches!(item, Item::Error));
        if known {
            safe.push_str(conv);
        } else {
            safe.push_str(&conv.replace('%', "%%"));
        }
        rest = &rest[at + 1 + len..];
    }
    safe.push_str(rest);
    let mut text = String::new();
    use std::fmt::Write as _;
    if write!(
        text,
        "{}",
        when.format_with_items(StrftimeItems::new(&safe))
    )
    .is_err()
    {
        return String::new();
    }
    text
}

/// End of the escape sequence starting at `fmt[i] == '\\'`.
fn escape_end(fmt: &[u8], i: usize) -> usize {
    let Some(&e) = fmt.get(i + 1) else {
        return i + 1;
    };
    let (max, pred): (usize, fn(&u8) -> bool) = match e {
        b'0'..=b'7' => (3, |b| (b'0'..=b'7').contains(b)),
        b'x' => (2, u8::is_ascii_hexdigit),
        b'u' => (4, u8::is_ascii_hexdigit),
        b'U' => (8, u8::is_ascii_hexdigit),
        _ => return i + 2,
    };
    let first = if e.is_ascii_digit() { i + 1 } else { i + 2 };
    let mut j = first;
    while j < fmt.len() && j < first + max && pred(&fmt[j]) {
        j += 1;
    }
    j.max(i + 2)
}

/// What `printf --help` prints (bash prints its builtin help and gives status 2).
const HELP: &str = "printf: printf [-v var] format [arguments]
    Formats and prints ARGUMENTS under control of the FORMAT.

    FORMAT is a character string which contains three types of objects: plain
    characters, which are simply copied to standard output; character escape
    sequences, which are converted and copied to the standard output; and
    format specifications, each of which causes printing of the next successive
    argument. Conversions: %s %b %q %c %d %i %u %o %x %X %f %F %e %E %g %G %%,
    with flags -+ #0, a width and a precision (either may be *).
    The format is re-used as necessary to consume all of the arguments.
    -v (assign to a variable) only works in the shell's own printf.
";

/// Formats `args` with a printf `fmt` once per use of the format (as `printf` does),
/// ignoring warnings; for commands such as `seq -f` and `stat -c`-like formatting.
pub(crate) fn sprintf(fmt: &str, args: &[String]) -> Vec<u8> {
    let mut run = Run {
        args,
        next: 0,
        status: 0,
        warnings: Vec::new(),
        gnu: false,
        c_locale: false,
        assigned: Vec::new(),
        pass_start: 0,
    };
    let mut out = Vec::new();
    format_once(&crate::bytetext::encode(fmt), &mut run, &mut out);
    out
}

pub struct Printf;

#[async_trait]
impl Command for Printf {
    fn name(&self) -> &'static str {
        "printf"
    }
    fn summary(&self) -> &'static str {
        "format and print data"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        builtin(ctx, &args, "").await
    }
}

/// bash's `printf` builtin over `ctx`, each of its messages but the usage line after
/// `prefix` (the shell's `bash: line N: `). The shell calls this itself rather than
/// going through a pipe, so that messages and output interleave as bash's do: a
/// message at once, the output of each use of the format when it is done.
pub async fn builtin(ctx: &Context, args: &[String], prefix: &str) -> CmdResult {
    builtin_assigning(ctx, args, prefix, &mut Vec::new()).await
}

/// [`builtin`], with the variables `%n` names and the counts to assign them put in
/// `assigned` (only the shell can assign them).
pub async fn builtin_assigning(
    ctx: &Context,
    args: &[String],
    prefix: &str,
    assigned: &mut Vec<(String, usize)>,
) -> CmdResult {
    let say = |msg: String| async move {
        let text: String = msg
            .lines()
            .map(|l| {
                if l.starts_with("printf: usage: ") {
                    format!("{l}\n")
                } else {
                    format!("{prefix}{l}\n")
                }
            })
            .collect();
        ctx.err(text).await;
    };
    let mut args = args;
    let ended = args.first().map(String::as_str) == Some("--");
    if ended {
        args = &args[1..];
    }
    let Some(fmt) = args.first() else {
        say("printf: usage: printf [-v var] format [arguments]\n".into()).await;
        return Ok(STATUS_USAGE);
    };
    if fmt == "--help" {
        ctx.out(HELP).await?;
        return Ok(STATUS_USAGE);
    }
    if fmt == "-v" {
        say("printf: -v: only the shell's own printf can set a variable\n".into()).await;
        return Ok(STATUS_USAGE);
    }
    // After `--` a format may start with `-` (`printf -- '-%s' x`).
    if !ended && fmt.starts_with('-') && fmt.len() > 1 {
        say(format!(
            "printf: {fmt}: invalid option\nprintf: usage: printf [-v var] format [arguments]\n"
        ))
        .await;
        return Ok(STATUS_USAGE);
    }
    print(ctx, fmt, &args[1..], false, prefix, assigned).await
}

/// GNU coreutils' `printf` program, which `env`, `xargs`, `find -exec` and `timeout` run
/// (the shell's `printf` is bash's builtin, [`Printf`]): the same formatting, with GNU's
/// `%q` quoting, GNU's messages (`'x': expected a numeric value`, `missing operand`,
/// `invalid conversion specification`, the warning for excess arguments) and no
/// `%(…)T`; every operand after the first is an argument, even one that starts with `-`.
pub struct GnuPrintf;

#[async_trait]
impl Command for GnuPrintf {
    fn name(&self) -> &'static str {
        "printf"
    }
    fn summary(&self) -> &'static str {
        "format and print data (GNU coreutils' program)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut args = args.as_slice();
        match args.first().map(String::as_str) {
            Some("--help") if args.len() == 1 => {
                ctx.out(GNU_HELP).await?;
                return Ok(0);
            }
            Some("--version") if args.len() == 1 => {
                ctx.out("printf (GNU coreutils) 9.1\n").await?;
                return Ok(0);
            }
            Some("--") => args = &args[1..],
            _ => {}
        }
        let Some(fmt) = args.first() else {
            ctx.err("printf: missing operand\nTry 'printf --help' for more information.\n")
                .await;
            return Ok(1);
        };
        print(ctx, fmt, &args[1..], true, "", &mut Vec::new()).await
    }
}

const GNU_HELP: &str = "Usage: printf FORMAT [ARGUMENT]...
  or:  printf OPTION
Print ARGUMENT(s) according to FORMAT, or execute according to OPTION:

      --help     display this help and exit
      --version  output version information and exit
";

/// Prints `args` through `fmt`, reusing it while arguments remain; each message after
/// `prefix`. A message goes out before the output of the use of the format it came from
/// (bash writes that when the use is done).
async fn print(
    ctx: &Context,
    fmt: &str,
    args: &[String],
    gnu: bool,
    prefix: &str,
    assigned: &mut Vec<(String, usize)>,
) -> CmdResult {
    let mut run = Run {
        args,
        next: 0,
        status: 0,
        warnings: Vec::new(),
        gnu,
        c_locale: crate::gnu_regex::c_locale(&ctx.env),
        assigned: Vec::new(),
        pass_start: 0,
    };
    let mut out = Vec::new();
    // Covers `out`: one use of the format may make it large (bounded by
    // MAX_PRINTF_OUTPUT), so it is charged after each use, before it is written.
    let mut charge = ctx.budget.empty_charge();
    let fmt = crate::bytetext::encode(fmt);
    loop {
        let before = run.next;
        let done = out.len();
        let stop = format_once(&fmt, &mut run, &mut out);
        charge.resize(out.capacity())?;
        if !run.warnings.is_empty() {
            // What earlier uses printed comes first, then this use's messages.
            if done > 0 {
                ctx.out(&out[..done]).await?;
                out.drain(..done);
            }
            for w in run.warnings.drain(..) {
                ctx.err(format!("{prefix}{w}")).await;
            }
        }
        if out.len() >= crate::io::PIPE_CHUNK {
            ctx.out(std::mem::take(&mut out)).await?;
            charge.resize(0)?;
        }
        if stop || run.next >= run.args.len() || run.next == before {
            if gnu && !stop && run.next == 0 && !run.args.is_empty() {
                ctx.err(format!(
                    "printf: warning: ignoring excess arguments, starting with {}\n",
                    quote(&run.args[0])
                ))
                .await;
            }
            break;
        }
        ctx.checkpoint().await?;
    }
    ctx.out(out).await?;
    assigned.append(&mut run.assigned);
    Ok(run.status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn pf(args: &[&str]) -> (i32, String, String) {
        Invocation::default().run(&Printf, args).await
    }

    #[test]
    fn percent_n_counts_each_use_of_the_format() {
        let args: Vec<String> = ["x", "y"].map(String::from).to_vec();
        let mut run = Run {
            args: &args,
            next: 0,
            status: 0,
            warnings: Vec::new(),
            gnu: false,
            c_locale: true,
            assigned: Vec::new(),
            pass_start: 0,
        };
        let mut out = Vec::new();
        format_once(b"ab%n", &mut run, &mut out);
        format_once(b"ab%n", &mut run, &mut out);
        assert_eq!(out, b"abab");
        assert_eq!(run.assigned, vec![("x".into(), 2), ("y".into(), 2)]);
    }

    #[tokio::test]
    async fn percent_n_needs_a_name() {
        let (status, out, err) = pf(&["a%nb", "1x"]).await;
        assert_eq!((status, out.as_str()), (1, "a"));
        assert_eq!(err, "printf: `1x': not a valid identifier\n");
    }

    #[tokio::test]
    async fn time_format_without_its_t_is_text() {
        // bash warns, prints the `%` and reads on from the `(`.
        let (status, out, err) = pf(&["%(%Y)d|", "0"]).await;
        assert_eq!((status, out.as_str()), (1, "%("));
        assert_eq!(
            err,
            "printf: warning: `d': invalid time format specification\nprintf: `Y': invalid format character\n"
        );
    }

    #[tokio::test]
    async fn blanks_are_not_a_number() {
        let (status, out, err) = pf(&["%d|%d", "", " "]).await;
        assert_eq!((status, out.as_str()), (1, "0|0"));
        assert_eq!(err, "printf:  : invalid number\n");
    }

    #[tokio::test]
    async fn time_conversion_formats_seconds_in_utc() {
        assert_eq!(
            pf(&["%(%F %T)T|%()T", "86400", "0"]).await.1,
            "1970-01-02 00:00:00|00:00:00"
        );
        // Conversions strftime does not know stay as written; width and precision apply.
        assert_eq!(
            pf(&["[%(%Y %Q %%)T][%6.2(%Y)T]", "0", "0"]).await.1,
            "[1970 %Q %][    19]"
        );
        let (status, _, err) = pf(&["%(%Y)T", "x"]).await;
        assert_eq!((status, err.as_str()), (1, "printf: x: invalid number\n"));
    }

    #[tokio::test]
    async fn strings_widths_and_reuse() {
        assert_eq!(pf(&["%s-%s\n", "a", "b", "c"]).await.1, "a-b\nc-\n");
        assert_eq!(
            pf(&["[%5s|%-5s|%.2s]", "ab", "cd", "xyz"]).await.1,
            "[   ab|cd   |xy]"
        );
        assert_eq!(pf(&["[%*s]", "4", "a"]).await.1, "[   a]");
        assert_eq!(pf(&["no args\\n"]).await.1, "no args\n");
        assert_eq!(pf(&["%%|%c|%q\n", "xyz", "a b"]).await.1, "%|x|a\\ b\n");
        assert_eq!(pf(&["%q\n", ""]).await.1, "''\n");
        assert_eq!(pf(&["%b|", "a\\tb", "\\0101"]).await.1, "a\tb|A|");
        assert_eq!(pf(&["%b%s", "x\\cy", "z"]).await.1, "x");
        // No locale set is the C locale, where `\u00e9` has no character and stays.
        assert_eq!(pf(&["\\101\\x41\\u00e9\\u41"]).await.1, "AA\\u00E9A");
    }

    #[tokio::test]
    async fn precision_pads_with_zeros() {
        assert_eq!(
            pf(&["%.5d|%.3x|%.0d", "42", "255", "0"]).await.1,
            "00042|0ff|"
        );
        // Found by the fuzz harness's edge inputs: this took seconds, one zero at a time.
        let (st, out, _) = pf(&["%.1000000000d", "7"]).await;
        assert_eq!((st, out.len()), (0, MAX_FIELD));
        assert!(out.ends_with("007"), "{}", &out[out.len() - 3..]);
    }

    #[tokio::test]
    async fn numbers_like_bash() {
        assert_eq!(pf(&["%d %i %u", "42", "-7", "3"]).await.1, "42 -7 3");
        assert_eq!(
            pf(&["%05d|%-4d|%+d|% d", "42", "7", "5", "5"]).await.1,
            "00042|7   |+5| 5"
        );
        assert_eq!(
            pf(&["%x %X %o %#x %#o", "255", "255", "8", "255", "8"])
                .await
                .1,
            "ff FF 10 0xff 010"
        );
        assert_eq!(pf(&["%d %d %d", "0x10", "010", "'A"]).await.1, "16 8 65");
        assert_eq!(pf(&["%.3d", "5"]).await.1, "005");
        assert_eq!(pf(&["%u", "-1"]).await.1, "18446744073709551615");
        assert_eq!(
            pf(&[
                "%f|%.2f|%e|%g|%g",
                "1.5",
                "2.345",
                "1234.5",
                "0.0001",
                "1e10"
            ])
            .await
            .1,
            "1.500000|2.35|1.234500e+03|0.0001|1e+10"
        );
        assert_eq!(
            pf(&["%8.3f|%-8.1e|", "-3.14159", "100"]).await.1,
            "  -3.142|1.0e+02 |"
        );
        assert_eq!(pf(&["%g %G", "100000", "1e-5"]).await.1, "100000 1E-05");
    }

    #[tokio::test]
    async fn decimals_print_as_the_exact_long_double() {
        for (fmt, arg, want) in [
            ("%f", "1e23", "100000000000000000000000.000000"),
            ("%.20f", "0.1", "0.10000000000000000000"),
            ("%.25e", "0.1", "1.0000000000000000000135525e-01"),
            ("%e", "1e400", "1.000000e+400"),
            ("%g", "1e-400", "1e-400"),
            ("%.0f", "2.5", "2"),
            ("%#g", "1", "1.00000"),
            ("%+.1f", "-0.05", "-0.1"),
            ("%g", "100000", "100000"),
            ("%g", "1000000", "1e+06"),
        ] {
            assert_eq!(pf(&[fmt, arg]).await.1, want, "{fmt} {arg}");
        }
        let (status, out, err) = pf(&["%f", "1e5000"]).await;
        assert_eq!((status, out.as_str()), (0, "inf"));
        assert!(
            err.contains("warning: 1e5000: Numerical result out of range"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn hex_floats_as_x86_long_double() {
        for (arg, want) in [
            ("1", "0x8p-3"),
            ("0.5", "0x8p-4"),
            ("0.1", "0xc.ccccccccccccccdp-7"),
            ("-2", "-0x8p-2"),
            ("1e10", "0x9.502f9p+30"),
            ("0", "0x0p+0"),
            ("3.14", "0xc.8f5c28f5c28f5c3p-2"),
            ("1e-10", "0xd.be6fecebdedd5bfp-37"),
            ("255", "0xf.fp+4"),
        ] {
            assert_eq!(pf(&["%a", arg]).await.1, want, "{arg}");
        }
        assert_eq!(
            pf(&["%A|%.2a|%10a", "0.1", "1", "1"]).await.1,
            "0XC.CCCCCCCCCCCCCCDP-7|0x8.00p-3|    0x8p-3"
        );
    }

    #[tokio::test]
    async fn invalid_numbers_warn_with_status_1() {
        let (st, out, err) = pf(&["%d,%d\n", "abc", "12x"]).await;
        assert_eq!(st, 1);
        assert_eq!(out, "0,12\n");
        assert_eq!(
            err,
            "printf: abc: invalid number\nprintf: 12x: invalid number\n"
        );
        let (st, out, _) = pf(&["%f", "zz"]).await;
        assert_eq!((st, out.as_str()), (1, "0.000000"));
    }

    #[tokio::test]
    async fn usage_errors() {
        let (st, out, err) = pf(&[]).await;
        assert_eq!((st, out.as_str()), (2, ""));
        assert_eq!(err, "printf: usage: printf [-v var] format [arguments]\n");
        let (st, _, err) = pf(&["%z"]).await;
        assert_eq!(st, 1);
        assert_eq!(err, "printf: `%z': missing format character\n");
        let (st, _, err) = pf(&["%y"]).await;
        assert_eq!(st, 1);
        assert_eq!(err, "printf: `y': invalid format character\n");
        let (st, out, err) = pf(&["%d", "99999999999999999999"]).await;
        assert_eq!((st, out.as_str()), (0, "9223372036854775807"));
        assert_eq!(
            err,
            "printf: warning: 99999999999999999999: Numerical result out of range\n"
        );
        assert_eq!(pf(&["-v", "x", "y"]).await.0, 2);
        assert_eq!(pf(&["--", "%s", "-v"]).await.1, "-v");
        assert_eq!(pf(&["--", "-%s", "x"]).await.1, "-x");
    }

    #[tokio::test]
    async fn output_over_the_budget_is_out_of_memory() {
        let width = format!("%{}s", 4 * crate::testing::TINY_BUDGET);
        Invocation::default()
            .out_of_memory(&Printf, &[&width, "x"], crate::testing::TINY_BUDGET)
            .await;
        assert_eq!(pf(&["%5s|\n", "ab"]).await.1, "   ab|\n");
    }

    #[test]
    fn gnu_quote_as_coreutils_printf() {
        // Each checked against /usr/bin/printf %q (coreutils 9.1, LC_ALL=C).
        let c = |s: &str| gnu_quote(s, true);
        assert_eq!(c("abc"), "abc");
        assert_eq!(c(""), "''");
        assert_eq!(c("a b"), "'a b'");
        assert_eq!(c("x~"), "x~");
        assert_eq!(c("~x"), "'~x'");
        assert_eq!(c("{"), "'{'");
        assert_eq!(c("a{b"), "a{b");
        assert_eq!(c("it's"), r#""it's""#);
        assert_eq!(c("it's $x"), r"'it'\''s $x'");
        assert_eq!(c("a\nb"), r"'a'$'\n''b'");
        assert_eq!(c("\t"), r"''$'\t'");
        assert_eq!(c("a'\n"), r"'''a'\'''$'\n'");
        assert_eq!(c("\u{e9}"), r"''$'\303\251'");
        assert_eq!(gnu_quote("\u{e9}", false), "\u{e9}");
    }
}

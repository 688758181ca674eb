//! awk values: numbers, strings and "strnums" (strings from input that compare as
//! numbers when they look like one), with gawk's conversions both ways and `printf`.

use std::rc::Rc;

thread_local! {
    /// Whether the locale is UTF-8 (characters) or not (bytes), as gawk decides from
    /// LC_ALL / LC_CTYPE / LANG. Per thread: each awk runs on a thread of its own.
    static UTF8: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

thread_local! {
    /// gawk's `--non-decimal-data`: strings with a leading `0x` or `0` convert to numbers as
    /// hex or octal. Per thread, as [`UTF8`].
    static NON_DECIMAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Sets `--non-decimal-data` for this thread's awk.
pub fn set_non_decimal_data(on: bool) {
    NON_DECIMAL.with(|u| u.set(on));
}

/// The value of a hex (`0x1A`) or octal (`011`) constant as gawk reads it (`nondec2awknum`):
/// `None` unless `s` starts with `0` and is not decimal (a `.`, an exponent, an 8 or a 9
/// make it decimal).
pub fn non_decimal(s: &[u8]) -> Option<f64> {
    if s.len() > 1 && s[0] == b'0' && matches!(s[1], b'x' | b'X') {
        return Some(
            s[2..]
                .iter()
                .map_while(|c| char::from(*c).to_digit(16))
                .fold(0.0, |acc, d| acc * 16.0 + f64::from(d)),
        );
    }
    if s.first() != Some(&b'0') {
        return None;
    }
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    if matches!(s.get(digits), Some(b'.' | b'e' | b'E'))
        || s[..digits].iter().any(|c| matches!(c, b'8' | b'9'))
    {
        return None;
    }
    Some(
        s[..digits]
            .iter()
            .fold(0.0, |acc, d| acc * 8.0 + f64::from(d - b'0')),
    )
}

/// Sets the character mode for this thread's awk.
pub fn set_utf8_mode(on: bool) {
    UTF8.with(|u| u.set(on));
}

/// True when strings are handled as UTF-8 characters.
pub fn utf8_mode() -> bool {
    UTF8.with(std::cell::Cell::get)
}

/// The text as characters when the locale and the bytes allow it.
pub fn as_chars(s: &[u8]) -> Option<&str> {
    if utf8_mode() {
        std::str::from_utf8(s).ok()
    } else {
        None
    }
}

/// Bytes of a string value, shared cheaply.
pub type Str = Rc<[u8]>;

#[derive(Clone, Debug, Default)]
pub enum Value {
    /// Never assigned: "" and 0 at once.
    #[default]
    Uninit,
    Num(f64),
    Str(Str),
    /// A string from input (fields, `getline`, `ARGV`, `-v`): numeric if it looks so.
    StrNum(Str),
    /// gawk's typed regexp (`@/re/`): its text as a string, 0 as a number.
    Regex(Str),
    /// gawk 5.2's `mkbool()` result: the number 1 or 0, typed `number|bool`.
    Bool(bool),
}

impl Value {
    pub fn str(s: impl Into<Vec<u8>>) -> Value {
        Value::Str(Rc::from(s.into()))
    }
    pub fn strnum(s: &[u8]) -> Value {
        Value::StrNum(Rc::from(s))
    }

    pub fn to_num(&self) -> f64 {
        match self {
            Value::Uninit | Value::Regex(_) => 0.0,
            Value::Num(n) => *n,
            Value::Bool(b) => f64::from(u8::from(*b)),
            Value::Str(s) | Value::StrNum(s) => str_to_num(s),
        }
    }

    /// Whether it compares as a number.
    pub fn is_numeric(&self) -> bool {
        match self {
            Value::Uninit | Value::Num(_) | Value::Bool(_) => true,
            Value::Str(_) | Value::Regex(_) => false,
            Value::StrNum(s) => looks_numeric(s),
        }
    }

    pub fn truthy(&self) -> bool {
        match self {
            Value::Uninit => false,
            Value::Num(n) => *n != 0.0,
            Value::Bool(b) => *b,
            Value::Str(s) | Value::Regex(s) => !s.is_empty(),
            Value::StrNum(s) => {
                if looks_numeric(s) {
                    str_to_num(s) != 0.0
                } else {
                    !s.is_empty()
                }
            }
        }
    }

    /// The string value, numbers converted with `convfmt` (CONVFMT).
    pub fn to_str_with(&self, convfmt: &[u8]) -> Str {
        match self {
            Value::Uninit => Rc::from(&b""[..]),
            Value::Num(n) => Rc::from(num_to_str(*n, convfmt)),
            Value::Bool(b) => Rc::from(if *b { &b"1"[..] } else { &b"0"[..] }),
            Value::Str(s) | Value::StrNum(s) | Value::Regex(s) => s.clone(),
        }
    }

    /// Appends the string value to `out`.
    pub fn append_to(&self, out: &mut Vec<u8>, convfmt: &[u8]) {
        match self {
            Value::Uninit => {}
            Value::Num(n) => push_num(out, *n, convfmt),
            Value::Bool(b) => out.push(if *b { b'1' } else { b'0' }),
            Value::Str(s) | Value::StrNum(s) | Value::Regex(s) => out.extend_from_slice(s),
        }
    }
}

/// Appends a number as awk shows it: integers as integers, others with `fmt`.
pub fn push_num(out: &mut Vec<u8>, n: f64, fmt: &[u8]) {
    if n == n.trunc() && n.abs() < 1e16 {
        // i64 holds it exactly.
        let i = n as i64;
        out.extend_from_slice(i.to_string().as_bytes());
    } else if n.is_nan() {
        out.extend_from_slice(if n.is_sign_negative() {
            b"-nan"
        } else {
            b"+nan"
        });
    } else if n.is_infinite() {
        out.extend_from_slice(if n < 0.0 { b"-inf" } else { b"+inf" });
    } else if n == n.trunc() {
        out.extend_from_slice(format!("{n:.0}").as_bytes());
    } else if fmt == b"%.6g" {
        fmt_g(out, n, 6, false, false);
    } else {
        out.extend_from_slice(&sprintf(fmt, &[Value::Num(n)], b"%.6g").unwrap_or_default());
    }
}

pub fn num_to_str(n: f64, fmt: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    push_num(&mut v, n, fmt);
    v
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

/// Length of the numeric prefix of `s` (after `start`), as strtod reads it (decimal only).
fn num_prefix(s: &[u8]) -> usize {
    let mut i = 0;
    if i < s.len() && matches!(s[i], b'+' | b'-') {
        i += 1;
    }
    let digits_start = i;
    while i < s.len() && s[i].is_ascii_digit() {
        i += 1;
    }
    let mut nd = i - digits_start;
    if i < s.len() && s[i] == b'.' {
        let j = i + 1;
        let mut k = j;
        while k < s.len() && s[k].is_ascii_digit() {
            k += 1;
        }
        nd += k - j;
        if nd > 0 {
            i = k;
        }
    }
    if nd == 0 {
        return 0;
    }
    if i < s.len() && matches!(s[i], b'e' | b'E') {
        let mut j = i + 1;
        if j < s.len() && matches!(s[j], b'+' | b'-') {
            j += 1;
        }
        if j < s.len() && s[j].is_ascii_digit() {
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    i
}

/// `+inf`, `-nan` and the like (gawk accepts them only with a sign).
fn special(s: &[u8]) -> Option<(f64, usize)> {
    if s.len() < 4 || !matches!(s[0], b'+' | b'-') {
        return None;
    }
    let word = s[1..4].to_ascii_lowercase();
    let neg = s[0] == b'-';
    match word.as_slice() {
        b"inf" => Some((
            if neg {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            },
            4,
        )),
        b"nan" => Some((if neg { -f64::NAN } else { f64::NAN }, 4)),
        _ => None,
    }
}

/// The number at the start of `s` (leading blanks skipped), 0 if none.
pub fn str_to_num(s: &[u8]) -> f64 {
    let mut i = 0;
    while i < s.len() && is_blank(s[i]) {
        i += 1;
    }
    let rest = &s[i..];
    if let Some((v, _)) = special(rest) {
        return v;
    }
    if NON_DECIMAL.with(std::cell::Cell::get)
        && let Some(v) = non_decimal(rest)
    {
        return v;
    }
    let n = num_prefix(rest);
    if n == 0 {
        return 0.0;
    }
    std::str::from_utf8(&rest[..n])
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0.0)
}

/// Whether the whole of `s` (blanks around allowed) is a number.
pub fn looks_numeric(s: &[u8]) -> bool {
    let mut a = 0;
    let mut b = s.len();
    while a < b && is_blank(s[a]) {
        a += 1;
    }
    while b > a && is_blank(s[b - 1]) {
        b -= 1;
    }
    let t = &s[a..b];
    if t.is_empty() {
        return false;
    }
    if let Some((_, n)) = special(t) {
        return n == t.len();
    }
    if NON_DECIMAL.with(std::cell::Cell::get)
        && t.len() > 2
        && t[0] == b'0'
        && matches!(t[1], b'x' | b'X')
    {
        return t[2..].iter().all(u8::is_ascii_hexdigit);
    }
    num_prefix(t) == t.len()
}

/// `%e` with `prec` digits, C style (`1.5e+00`).
fn fmt_e(out: &mut Vec<u8>, x: f64, prec: usize, upper: bool, alt: bool) {
    let s = format!("{:.*e}", prec, x);
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    out.extend_from_slice(mant.as_bytes());
    if alt && prec == 0 {
        out.push(b'.');
    }
    out.push(if upper { b'E' } else { b'e' });
    let e: i32 = exp.parse().unwrap_or(0);
    out.push(if e < 0 { b'-' } else { b'+' });
    let ea = e.unsigned_abs();
    if ea < 10 {
        out.push(b'0');
    }
    out.extend_from_slice(ea.to_string().as_bytes());
}

/// `%g`: the shorter of `%e` and `%f` for `prec` significant digits, trailing zeros
/// dropped unless `alt`.
fn fmt_g(out: &mut Vec<u8>, x: f64, prec: usize, upper: bool, alt: bool) {
    let p = if prec == 0 { 1 } else { prec };
    if x == 0.0 {
        if x.is_sign_negative() {
            out.push(b'-');
        }
        out.push(b'0');
        if alt && p > 1 {
            out.push(b'.');
            out.extend(std::iter::repeat_n(b'0', p - 1));
        }
        return;
    }
    // The exponent after rounding to p digits.
    let s = format!("{:.*e}", p - 1, x);
    let exp: i32 = s
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    let start = out.len();
    if exp < -4 || exp >= p as i32 {
        fmt_e(out, x, p - 1, upper, alt);
        if !alt {
            // Strip zeros in the mantissa.
            let body = out[start..].to_vec();
            let epos = body
                .iter()
                .position(|&c| c == b'e' || c == b'E')
                .unwrap_or(body.len());
            let (m, e) = body.split_at(epos);
            let m = strip_zeros(m);
            out.truncate(start);
            out.extend_from_slice(m);
            out.extend_from_slice(e);
        }
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        let s = format!("{:.*}", decimals, x);
        if alt {
            out.extend_from_slice(s.as_bytes());
            if decimals == 0 {
                out.push(b'.');
            }
        } else {
            out.extend_from_slice(strip_zeros(s.as_bytes()));
        }
    }
}

/// C's `%a` of a finite non-negative double, after the `0x`: `1.8p+1`; all the mantissa's
/// significant hex digits without a precision, else rounded (to even) to that many.
fn fmt_a(out: &mut Vec<u8>, x: f64, prec: Option<usize>, upper: bool, alt: bool) {
    let bits = x.to_bits();
    let raw_exp = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1u64 << 52) - 1);
    let (mut lead, mut mant, exp) = match (raw_exp, frac) {
        (0, 0) => (0u64, 0u64, 0i64),
        (0, f) => (0, f, -1022),
        (e, f) => (1, f, e - 1023),
    };
    let mut digits = 13usize;
    if let Some(p) = prec.filter(|&p| p < 13) {
        let shift = (13 - p) * 4;
        let whole = (lead << 52) | mant;
        let (mut q, rem) = (whole >> shift, whole & ((1u64 << shift) - 1));
        let half = 1u64 << (shift - 1);
        if rem > half || (rem == half && q & 1 == 1) {
            q += 1;
        }
        lead = q >> (p * 4);
        mant = q & ((1u64 << (p * 4)) - 1);
        digits = p;
    }
    let mut hex: Vec<u8> = (0..digits)
        .rev()
        .map(|i| b"0123456789abcdef"[((mant >> (i * 4)) & 0xf) as usize])
        .collect();
    match prec {
        None => {
            while hex.last() == Some(&b'0') {
                hex.pop();
            }
        }
        Some(p) => hex.resize(p, b'0'),
    }
    let mut s = format!("{lead}").into_bytes();
    if !hex.is_empty() || alt {
        s.push(b'.');
    }
    s.extend_from_slice(&hex);
    s.extend_from_slice(format!("p{exp:+}").as_bytes());
    if upper {
        s.make_ascii_uppercase();
    }
    out.extend_from_slice(&s);
}

fn strip_zeros(m: &[u8]) -> &[u8] {
    if !m.contains(&b'.') {
        return m;
    }
    let mut end = m.len();
    while end > 0 && m[end - 1] == b'0' {
        end -= 1;
    }
    if end > 0 && m[end - 1] == b'.' {
        end -= 1;
    }
    &m[..end]
}

/// Why a format could not be applied.
#[derive(Debug)]
pub enum FormatError {
    /// The conversion at this offset had no argument.
    RanOut(usize),
    /// Some conversions use `N$` and others not.
    Mixed,
    /// `N$` past the arguments.
    IndexTooBig(usize),
    /// `0$`.
    IndexZero,
}

impl FormatError {
    /// gawk's fatal message for it.
    pub fn message(&self, fmt: &[u8]) -> String {
        match self {
            FormatError::RanOut(at) => format!(
                "not enough arguments to satisfy format string\n\t`{}'\n\t{}^ ran out for this one",
                String::from_utf8_lossy(fmt),
                " ".repeat(at + 1)
            ),
            FormatError::Mixed => "must use `count$' on all formats or none".into(),
            FormatError::IndexTooBig(n) => {
                format!("argument index {n} greater than total number of supplied arguments")
            }
            FormatError::IndexZero => "argument index with `$' must be > 0".into(),
        }
    }
}

/// Reads `N$` at `fmt[*i..]` (a positional argument), moving past it.
fn positional(fmt: &[u8], i: &mut usize) -> Option<usize> {
    let mut j = *i;
    let mut n = 0usize;
    while j < fmt.len() && fmt[j].is_ascii_digit() {
        n = (n * 10 + usize::from(fmt[j] - b'0')).min(1_000_000);
        j += 1;
    }
    if j > *i && fmt.get(j) == Some(&b'$') {
        *i = j + 1;
        Some(n)
    } else {
        None
    }
}

/// printf's flag characters at `fmt[*i..]`, moving past them: whether `-`, `+`, ` `, `#`
/// and `0` were among them (`'` is accepted and ignored).
fn read_flags(fmt: &[u8], i: &mut usize) -> [bool; 5] {
    let mut flags = [false; 5];
    while let Some(&c) = fmt.get(*i) {
        match c {
            b'-' => flags[0] = true,
            b'+' => flags[1] = true,
            b' ' => flags[2] = true,
            b'#' => flags[3] = true,
            b'0' => flags[4] = true,
            b'\'' => {}
            _ => break,
        }
        *i += 1;
    }
    flags
}

/// The decimal number at `fmt[*i..]` (0 if none), moving past it; capped at a million.
fn read_number(fmt: &[u8], i: &mut usize) -> usize {
    let mut n = 0usize;
    while let Some(d) = fmt.get(*i).filter(|d| d.is_ascii_digit()) {
        n = (n * 10 + usize::from(d - b'0')).min(1_000_000);
        *i += 1;
    }
    n
}

/// Hands out `sprintf`'s arguments in turn or by position, as gawk allows (one way or
/// the other in a format, never both).
struct Args<'a> {
    args: &'a [Value],
    next: usize,
    /// Whether the format uses `N$` (decided by its first conversion).
    positional: Option<bool>,
}

impl<'a> Args<'a> {
    fn take(&mut self, pos: Option<usize>, start: usize) -> Result<&'a Value, FormatError> {
        let is_pos = pos.is_some();
        if *self.positional.get_or_insert(is_pos) != is_pos {
            return Err(FormatError::Mixed);
        }
        match pos {
            Some(0) => Err(FormatError::IndexZero),
            Some(n) => self.args.get(n - 1).ok_or(FormatError::IndexTooBig(n)),
            None => {
                let a = self.args.get(self.next).ok_or(FormatError::RanOut(start))?;
                self.next += 1;
                Ok(a)
            }
        }
    }
}

/// The characters of a string value (UTF-8 when valid, else bytes).
fn chars_prefix(s: &[u8], n: usize) -> &[u8] {
    match as_chars(s) {
        Some(t) => match t.char_indices().nth(n) {
            Some((i, _)) => &s[..i],
            None => s,
        },
        None => &s[..n.min(s.len())],
    }
}

fn char_width(s: &[u8]) -> usize {
    match as_chars(s) {
        Some(t) => t.chars().count(),
        None => s.len(),
    }
}

/// `sprintf(fmt, args…)`.
pub fn sprintf(fmt: &[u8], args: &[Value], convfmt: &[u8]) -> Result<Vec<u8>, FormatError> {
    let mut out = Vec::with_capacity(fmt.len() + 16);
    let mut args = Args {
        args,
        next: 0,
        positional: None,
    };
    let mut i = 0;
    while i < fmt.len() {
        let c = fmt[i];
        if c != b'%' {
            out.push(c);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        if fmt.get(i) == Some(&b'%') {
            out.push(b'%');
            i += 1;
            continue;
        }
        let pos = positional(fmt, &mut i);
        let [mut left, mut plus, mut space, mut alt, mut zero] = read_flags(fmt, &mut i);
        let mut width: usize = 0;
        if i < fmt.len() && fmt[i] == b'*' {
            i += 1;
            let p = positional(fmt, &mut i);
            let w = args.take(p, start)?.to_num();
            if w < 0.0 {
                left = true;
            }
            width = w.abs().min(1e6) as usize;
        } else {
            while i < fmt.len() && fmt[i].is_ascii_digit() {
                width = (width * 10 + usize::from(fmt[i] - b'0')).min(1_000_000);
                i += 1;
            }
        }
        let mut prec: Option<usize> = None;
        if i < fmt.len() && fmt[i] == b'.' {
            i += 1;
            if i < fmt.len() && fmt[i] == b'*' {
                i += 1;
                let pp = positional(fmt, &mut i);
                let p = args.take(pp, start)?.to_num();
                prec = if p < 0.0 {
                    None
                } else {
                    Some(p.min(1e6) as usize)
                };
            } else {
                let mut p = 0usize;
                while i < fmt.len() && fmt[i].is_ascii_digit() {
                    p = (p * 10 + usize::from(fmt[i] - b'0')).min(1_000_000);
                    i += 1;
                }
                prec = Some(p);
            }
        }
        // Length modifiers are accepted and ignored, but one given twice (`%lld`) ends the
        // conversion: gawk prints it as written, up to the repeated letter.
        let mut seen: Vec<u8> = Vec::new();
        let mut repeated = false;
        while i < fmt.len() && matches!(fmt[i], b'h' | b'l' | b'L' | b'j' | b'z' | b't') {
            repeated = seen.contains(&fmt[i]);
            seen.push(fmt[i]);
            i += 1;
            if repeated {
                break;
            }
        }
        if repeated {
            out.extend_from_slice(&fmt[start..i]);
            continue;
        }
        // gawk takes flags, a width and a precision after a length modifier too
        // (`%l-5d` is `%-5d`), so `%z %d` is a `%%` and prints `%d`.
        if !seen.is_empty() {
            let [l, p, sp, a, z] = read_flags(fmt, &mut i);
            (left, plus, space, alt, zero) = (left | l, plus | p, space | sp, alt | a, zero | z);
            if fmt.get(i).is_some_and(u8::is_ascii_digit) {
                width = read_number(fmt, &mut i);
            }
            if fmt.get(i) == Some(&b'.') {
                i += 1;
                prec = Some(read_number(fmt, &mut i));
            }
        }
        let Some(&conv) = fmt.get(i) else {
            out.extend_from_slice(&fmt[start..]);
            break;
        };
        i += 1;
        if conv == b'%' {
            out.push(b'%');
            continue;
        }
        if !b"cdiouxXeEfFgGsaA".contains(&conv) {
            // Not a conversion: printed as written.
            out.extend_from_slice(&fmt[start..i]);
            continue;
        }
        let arg = args.take(pos, start)?;
        // An integer conversion of a value no 64-bit integer holds falls back to %g
        // (gawk's "emergency" format), flags, width and precision kept.
        let conv = match conv {
            b'o' | b'u' | b'x' | b'X' => {
                let n = arg.to_num().trunc();
                if !(-9_223_372_036_854_775_808.0..18_446_744_073_709_551_616.0).contains(&n) {
                    b'g'
                } else {
                    conv
                }
            }
            c => c,
        };
        let mut body: Vec<u8> = Vec::new();
        let mut sign: &[u8] = b"";
        let mut numeric = true;
        match conv {
            b'c' => {
                numeric = false;
                // A number (a field that looks like one too) is a character code.
                let code = match arg {
                    Value::Num(n) => Some(*n),
                    Value::StrNum(s) if looks_numeric(s) => Some(str_to_num(s)),
                    _ => None,
                };
                match code {
                    Some(n) => {
                        let code = n as u32;
                        if code < 128 || !utf8_mode() {
                            body.push(code as u8);
                        } else if let Some(ch) = char::from_u32(code) {
                            let mut b = [0u8; 4];
                            body.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                        } else {
                            body.push(code as u8);
                        }
                    }
                    None => {
                        let s = arg.to_str_with(convfmt);
                        if s.is_empty() {
                            // gawk writes the string's terminating NUL.
                            body.push(0);
                        } else {
                            body.extend_from_slice(chars_prefix(&s, 1));
                        }
                    }
                }
            }
            b's' => {
                numeric = false;
                let s = match arg {
                    Value::Num(n) => Rc::from(num_to_str(*n, convfmt)),
                    other => other.to_str_with(convfmt),
                };
                match prec {
                    Some(p) => body.extend_from_slice(chars_prefix(&s, p)),
                    None => body.extend_from_slice(&s),
                }
            }
            b'd' | b'i' => {
                let n = arg.to_num();
                if n.is_nan() || n.is_infinite() {
                    // gawk prints these as print would, width and flags ignored.
                    push_num(&mut out, n, b"%.6g");
                    continue;
                } else {
                    let t = n.trunc();
                    if t < 0.0 {
                        sign = b"-";
                    } else if plus {
                        sign = b"+";
                    } else if space {
                        sign = b" ";
                    }
                    let digits = if t.abs() < 1e18 {
                        (t.abs() as u64).to_string()
                    } else {
                        format!("{:.0}", t.abs())
                    };
                    if let Some(p) = prec {
                        if p != 0 || digits != "0" {
                            body.extend(std::iter::repeat_n(b'0', p.saturating_sub(digits.len())));
                            body.extend_from_slice(digits.as_bytes());
                        }
                        zero = false;
                    } else {
                        body.extend_from_slice(digits.as_bytes());
                    }
                }
            }
            b'o' | b'u' | b'x' | b'X' => {
                let n = arg.to_num().trunc();
                if n.is_nan() || n.is_infinite() {
                    push_num(&mut out, n, b"%.6g");
                    continue;
                }
                let v: u64 = if n < 0.0 {
                    (n as i64) as u64
                } else if n >= 1.8e19 {
                    u64::MAX
                } else {
                    n as u64
                };
                let digits = match conv {
                    b'o' => format!("{v:o}"),
                    b'u' => v.to_string(),
                    b'x' => format!("{v:x}"),
                    _ => format!("{v:X}"),
                };
                if alt && v != 0 {
                    match conv {
                        b'x' => sign = b"0x",
                        b'X' => sign = b"0X",
                        _ => {}
                    }
                }
                let mut d = digits.into_bytes();
                if prec == Some(0) && v == 0 {
                    // C prints no digits for zero at precision 0.
                    d.clear();
                }
                if alt && conv == b'o' && d.first() != Some(&b'0') {
                    d.insert(0, b'0');
                }
                if let Some(p) = prec {
                    body.extend(std::iter::repeat_n(b'0', p.saturating_sub(d.len())));
                    zero = false;
                }
                body.extend_from_slice(&d);
            }
            _ => {
                let n = arg.to_num();
                if n.is_sign_negative() && !n.is_nan() {
                    sign = b"-";
                } else if plus {
                    sign = b"+";
                } else if space {
                    sign = b" ";
                }
                let a = n.abs();
                if a.is_nan() || a.is_infinite() {
                    // gawk writes these signed, width and precision ignored.
                    let word: &[u8] = if a.is_nan() { b"nan" } else { b"inf" };
                    out.push(if n.is_sign_negative() { b'-' } else { b'+' });
                    if conv.is_ascii_uppercase() {
                        out.extend_from_slice(&word.to_ascii_uppercase());
                    } else {
                        out.extend_from_slice(word);
                    }
                    continue;
                } else {
                    let p = prec.unwrap_or(6);
                    match conv {
                        b'e' | b'E' => fmt_e(&mut body, a, p, conv == b'E', alt),
                        b'f' | b'F' => {
                            body.extend_from_slice(format!("{:.*}", p, a).as_bytes());
                            if alt && p == 0 {
                                body.push(b'.');
                            }
                        }
                        b'a' | b'A' => {
                            let up = conv == b'A';
                            sign = match (sign, up) {
                                (b"-", false) => &b"-0x"[..],
                                (b"-", true) => &b"-0X"[..],
                                (b"+", false) => &b"+0x"[..],
                                (b"+", true) => &b"+0X"[..],
                                (b" ", false) => &b" 0x"[..],
                                (b" ", true) => &b" 0X"[..],
                                (_, false) => &b"0x"[..],
                                (_, true) => &b"0X"[..],
                            };
                            fmt_a(&mut body, a, prec, up, alt);
                        }
                        _ => fmt_g(&mut body, a, p, conv == b'G', alt),
                    }
                }
            }
        }
        let len = if numeric {
            sign.len() + body.len()
        } else {
            char_width(&body)
        };
        let pad = width.saturating_sub(len);
        if left {
            out.extend_from_slice(sign);
            out.extend_from_slice(&body);
            out.extend(std::iter::repeat_n(b' ', pad));
        } else if zero && numeric {
            out.extend_from_slice(sign);
            out.extend(std::iter::repeat_n(b'0', pad));
            out.extend_from_slice(&body);
        } else {
            out.extend(std::iter::repeat_n(b' ', pad));
            out.extend_from_slice(sign);
            out.extend_from_slice(&body);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, args: &[Value]) -> String {
        String::from_utf8(sprintf(fmt.as_bytes(), args, b"%.6g").unwrap()).unwrap()
    }

    #[test]
    fn numbers_print_like_gawk() {
        assert_eq!(num_to_str(3.0, b"%.6g"), b"3");
        assert_eq!(num_to_str(0.1 + 0.2, b"%.6g"), b"0.3");
        assert_eq!(
            num_to_str(1e30, b"%.6g"),
            b"1000000000000000019884624838656"
        );
        assert_eq!(num_to_str(123456.789, b"%.6g"), b"123457");
        assert_eq!(num_to_str(1234567.5, b"%.6g"), b"1.23457e+06");
        assert_eq!(num_to_str(0.0001, b"%.6g"), b"0.0001");
        assert_eq!(num_to_str(0.00001, b"%.6g"), b"1e-05");
        assert_eq!(num_to_str(f64::INFINITY, b"%.6g"), b"+inf");
        assert_eq!(num_to_str(2.71725, b"%.2f"), b"2.72");
    }

    #[test]
    fn strnum_rules() {
        assert!(looks_numeric(b" 12 "));
        assert!(looks_numeric(b"1e3"));
        assert!(looks_numeric(b".5"));
        assert!(looks_numeric(b"+inf"));
        assert!(!looks_numeric(b"inf"));
        assert!(!looks_numeric(b"0x1A"));
        assert!(!looks_numeric(b"12abc"));
        assert!(!looks_numeric(b""));
        assert_eq!(str_to_num(b"12abc"), 12.0);
        assert_eq!(str_to_num(b"  -3.5e1x"), -35.0);
        assert_eq!(str_to_num(b"abc"), 0.0);
        assert_eq!(str_to_num(b"."), 0.0);
        assert!(Value::strnum(b"0.0").is_numeric() && !Value::strnum(b"0.0").truthy());
        assert!(Value::str(&b"0"[..]).truthy());
    }

    #[test]
    fn printf_conversions() {
        let n = Value::Num;
        assert_eq!(
            f("%d|%5.2f|%c|%x", &[n(12.9), n(2.71725), n(65.0), n(255.0)]),
            "12| 2.72|A|ff"
        );
        assert_eq!(
            f(
                "%-5d|%+d|%05.1f|%#o|%#x",
                &[n(42.0), n(5.0), n(2.71725), n(8.0), n(255.0)]
            ),
            "42   |+5|002.7|010|0xff"
        );
        assert_eq!(
            f("%e|%G|%.3d", &[n(12345.678), n(1e-10), n(5.0)]),
            "1.234568e+04|1E-10|005"
        );
        assert_eq!(
            f(
                "%5.3s|%c|%%",
                &[Value::str(&b"abcdef"[..]), Value::str(&b"hello"[..])]
            ),
            "  abc|h|%"
        );
        assert_eq!(
            f("%*d|%-*d|", &[n(4.0), n(7.0), n(3.0), n(1.0)]),
            "   7|1  |"
        );
        assert_eq!(f("%x", &[n(-1.0)]), "ffffffffffffffff");
        assert!(sprintf(b"%s %s", &[n(1.0)], b"%.6g").is_err());
        assert_eq!(f("%z %d|%zd|%z|a%zb", &[n(5.0)]), "%d|5|%z|a%zb");
        assert_eq!(
            f("[%l-5d][%h+d][%l.3d]", &[n(7.0), n(8.0), n(9.0)]),
            "[7    ][+8][009]"
        );
    }
}

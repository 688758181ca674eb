//! `sort`: sort lines.
//!
//! Up to [`RUN_BYTES`] of lines are held in memory, charged to the session's budget, and
//! sorted on the blocking pool so a big sort does not stall other sessions. Larger input is
//! sorted in runs of that size written to run files in the session's `/tmp` and merged
//! (see [`runs`]): memory stays bounded whatever the input size, and the total input is
//! bounded by the session's quota (the run files take as much room as the input), not by
//! memory. `-c` reads line by line and holds two lines.

use std::cmp::Ordering;
use std::sync::Arc;

use async_trait::async_trait;
use clap::Parser;

use super::util::{Pacer, Reader, quote};
use crate::fs::WriteMode;
use crate::{CmdResult, Command, Context, Interrupt, Status, parse_args};

mod runs;

use runs::{Held, LineReader, Run, RunFiles, Sink, SortError, Tuning};

/// Bytes of lines (with their index) one in-memory run holds before it is sorted and
/// written to a run file: inputs of a few MiB are sorted without touching the filesystem,
/// and a sort of any size holds about this much (plus [`MERGE_FAN_IN`] read buffers).
const RUN_BYTES: usize = 8 * 1024 * 1024;

/// Run files merged at once. Each input of a merge holds up to three read chunks (64 KiB
/// each) besides its current line, so a merge holds about 3 MiB; more runs are merged in
/// passes, each pass reading and writing the data once more.
const MERGE_FAN_IN: usize = 16;

/// Write sorted concatenation of all FILE(s) to standard output.
/// With no FILE, or when FILE is -, read standard input.
///
/// KEYDEF is F[.C][OPTS][,F[.C][OPTS]] for start and stop position, where F is a field
/// number and C a character position in the field; both are origin 1. OPTS is one or
/// more single-letter ordering options [bdfghinMrV], which override global ordering
/// options for that key. Input too large for memory is sorted in runs written to /tmp,
/// which count against the session's quota while the sort runs.
#[derive(Parser, Debug, Clone)]
#[command(name = "sort", disable_help_flag = true)]
struct Args {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Ignore leading blanks.
    #[arg(short = 'b', long = "ignore-leading-blanks")]
    ignore_blanks: bool,
    /// Consider only blanks and alphanumeric characters.
    #[arg(short = 'd', long = "dictionary-order")]
    dictionary: bool,
    /// Fold lower case to upper case characters.
    #[arg(short = 'f', long = "ignore-case")]
    fold: bool,
    /// Consider only printable characters.
    #[arg(short = 'i', long = "ignore-nonprinting")]
    nonprinting: bool,
    /// Compare according to general numerical value.
    #[arg(short = 'g', long = "general-numeric-sort")]
    general: bool,
    /// Compare human readable numbers (e.g., 2K 1G).
    #[arg(short = 'h', long = "human-numeric-sort")]
    human: bool,
    /// Compare (unknown) < 'JAN' < ... < 'DEC'.
    #[arg(short = 'M', long = "month-sort")]
    month: bool,
    /// Compare according to string numerical value.
    #[arg(short = 'n', long = "numeric-sort")]
    numeric: bool,
    /// Reverse the result of comparisons.
    #[arg(short = 'r', long)]
    reverse: bool,
    /// Natural sort of (version) numbers within text.
    #[arg(short = 'V', long = "version-sort")]
    version: bool,
    /// Shuffle, but group identical keys (a random hash of each key is compared).
    #[arg(short = 'R', long = "random-sort")]
    random: bool,
    /// Accepted for compatibility; the order is random either way.
    #[arg(long = "random-source", value_name = "FILE")]
    random_source: Option<String>,
    /// Check for sorted input; do not sort.
    #[arg(short = 'c', long)]
    check: bool,
    /// Like -c, but do not report the first bad line (only the status says).
    #[arg(short = 'C')]
    check_quiet: bool,
    /// Merge already sorted files (they are sorted together: the same output for sorted
    /// inputs).
    #[arg(short = 'm', long)]
    merge: bool,
    /// Sort via a key; KEYDEF gives location and type.
    #[arg(short = 'k', long = "key", value_name = "KEYDEF")]
    keys: Vec<String>,
    /// Write result to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<String>,
    /// Stabilize sort by disabling last-resort comparison.
    #[arg(short = 's', long)]
    stable: bool,
    /// Use SEP instead of non-blank to blank transition.
    #[arg(short = 't', long = "field-separator", value_name = "SEP")]
    separator: Option<String>,
    /// Output only the first of an equal run.
    #[arg(short = 'u', long)]
    unique: bool,
    /// Line delimiter is NUL, not newline.
    #[arg(short = 'z', long = "zero-terminated")]
    zero: bool,
    /// Read the names of the files to sort from F, separated by NULs (- for standard
    /// input).
    #[arg(long = "files0-from", value_name = "F")]
    files0_from: Option<String>,
    /// Files to sort.
    files: Vec<String>,
}

#[derive(Clone, Copy, Default, Debug)]
struct Opts {
    blanks: bool,
    dictionary: bool,
    fold: bool,
    nonprinting: bool,
    general: bool,
    human: bool,
    month: bool,
    numeric: bool,
    reverse: bool,
    version: bool,
    random: bool,
    /// The key of `random`'s hash: one per invocation, so equal keys hash alike.
    salt: u64,
}

impl Opts {
    fn any(&self) -> bool {
        self.blanks
            || self.dictionary
            || self.nonprinting
            || self.fold
            || self.general
            || self.human
            || self.month
            || self.numeric
            || self.reverse
            || self.version
            || self.random
    }

    fn apply(&mut self, letters: &str) -> Result<(), char> {
        for c in letters.chars() {
            match c {
                'b' => self.blanks = true,
                'd' => self.dictionary = true,
                'f' => self.fold = true,
                'g' => self.general = true,
                'h' => self.human = true,
                'i' => self.nonprinting = true,
                'M' => self.month = true,
                'n' => self.numeric = true,
                'r' => self.reverse = true,
                'V' => self.version = true,
                'R' => self.random = true,
                other => return Err(other),
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
struct Key {
    start_field: usize,
    start_char: usize,
    /// `None`: to the end of the line.
    end_field: Option<usize>,
    /// 0: to the end of the field.
    end_char: usize,
    opts: Opts,
}

fn parse_pos(s: &str) -> Option<(usize, usize, &str)> {
    let end = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (pos, opts) = s.split_at(end);
    let (f, c) = match pos.split_once('.') {
        Some((f, c)) => (f.parse().ok()?, c.parse().ok()?),
        None => (pos.parse().ok()?, 0),
    };
    Some((f, c, opts))
}

fn parse_key(s: &str, global: Opts) -> Result<Key, String> {
    let bad = || {
        format!(
            "invalid number at field start: invalid count at start of {}",
            quote(s)
        )
    };
    let (start, end) = match s.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let (sf, sc, sopts) = parse_pos(start).ok_or_else(bad)?;
    if sf == 0 {
        return Err(format!(
            "field number is zero: invalid field specification {}",
            quote(s)
        ));
    }
    // A start's character offset counts from 1 (an end's 0 is the field's end).
    if sc == 0 && start[..start.len() - sopts.len()].contains('.') {
        return Err(format!(
            "character offset is zero: invalid field specification {}",
            quote(s)
        ));
    }
    let mut opts = Opts::default();
    opts.apply(sopts).map_err(|c| {
        format!(
            "stray character in field spec: invalid field specification {} ({c})",
            quote(s)
        )
    })?;
    let (end_field, end_char) = match end {
        Some(e) => {
            let (ef, ec, eopts) = parse_pos(e).ok_or_else(bad)?;
            opts.apply(eopts)
                .map_err(|_| format!("invalid field specification {}", quote(s)))?;
            (Some(ef), ec)
        }
        None => (None, 0),
    };
    if !opts.any() {
        opts = global;
    }
    Ok(Key {
        start_field: sf,
        start_char: sc.max(1),
        end_field,
        end_char,
        opts,
    })
}

/// Fields as GNU sees them: with a separator, split on it; without, each field starts
/// at a blank-to-non-blank transition and keeps its leading blanks.
fn field_bounds(line: &[u8], sep: Option<u8>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    match sep {
        Some(t) => {
            let mut start = 0;
            for (i, &b) in line.iter().enumerate() {
                if b == t {
                    out.push((start, i));
                    start = i + 1;
                }
            }
            out.push((start, line.len()));
        }
        None => {
            let mut i = 0;
            while i < line.len() {
                let start = i;
                while i < line.len() && (line[i] == b' ' || line[i] == b'\t') {
                    i += 1;
                }
                while i < line.len() && line[i] != b' ' && line[i] != b'\t' {
                    i += 1;
                }
                out.push((start, i));
            }
        }
    }
    out
}

fn skip_blanks(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| **b == b' ' || **b == b'\t').count();
    &s[n..]
}

fn extract<'l>(line: &'l [u8], key: &Key, sep: Option<u8>) -> &'l [u8] {
    let fields = field_bounds(line, sep);
    let Some(&(fs, fe)) = fields.get(key.start_field - 1) else {
        return &[];
    };
    let mut field = &line[fs..fe];
    if key.opts.blanks {
        field = skip_blanks(field);
    }
    let offset = field.as_ptr() as usize - line.as_ptr() as usize;
    let start = (offset + key.start_char - 1).min(line.len());
    let end = match key.end_field {
        None => line.len(),
        Some(ef) => match fields.get(ef.saturating_sub(1)) {
            None => line.len(),
            Some(&(es, ee)) => {
                if key.end_char == 0 {
                    ee
                } else {
                    let mut f = &line[es..ee];
                    if key.opts.blanks {
                        f = skip_blanks(f);
                    }
                    let off = f.as_ptr() as usize - line.as_ptr() as usize;
                    (off + key.end_char).min(ee)
                }
            }
        },
    };
    if end <= start { &[] } else { &line[start..end] }
}

fn num_prefix(s: &[u8]) -> f64 {
    let s = skip_blanks(s);
    let mut end = 0;
    if s.first() == Some(&b'-') {
        end = 1;
    }
    let mut seen_dot = false;
    while end < s.len() && (s[end].is_ascii_digit() || (s[end] == b'.' && !seen_dot)) {
        seen_dot |= s[end] == b'.';
        end += 1;
    }
    std::str::from_utf8(&s[..end])
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0.0)
}

/// The longest prefix `strtold` would read, as `-g` compares it: decimal with an
/// exponent, hexadecimal (`0x10`, `0x1p3`), `inf`/`infinity`/`nan`; no number at all
/// is `None`.
fn general_value(s: &[u8]) -> Option<f64> {
    let t = skip_blanks(s);
    let (neg, body) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let lower: Vec<u8> = body.iter().take(8).map(u8::to_ascii_lowercase).collect();
    let v = if lower.starts_with(b"inf") {
        Some(f64::INFINITY)
    } else if lower.starts_with(b"nan") {
        Some(f64::NAN)
    } else if lower.starts_with(b"0x")
        && body.get(2).is_some_and(|b| {
            b.is_ascii_hexdigit() || (*b == b'.' && body.get(3).is_some_and(u8::is_ascii_hexdigit))
        })
    {
        Some(hex_value(&body[2..]))
    } else {
        decimal_prefix(body)
    };
    v.map(|v| if neg { -v } else { v })
}

/// `-g`'s order: text that is no number first, then NaNs, then numbers.
fn general_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let rank = |v: Option<f64>| match v {
        None => (0, 0.0),
        Some(v) if v.is_nan() => (1, 0.0),
        Some(v) => (2, v),
    };
    let (ra, va) = rank(general_value(a));
    let (rb, vb) = rank(general_value(b));
    ra.cmp(&rb)
        .then(va.partial_cmp(&vb).unwrap_or(Ordering::Equal))
}

/// A decimal number at the start of `s` (digits, a point, an exponent), if any.
fn decimal_prefix(s: &[u8]) -> Option<f64> {
    let mut end = 0;
    let mut digits = 0;
    while end < s.len() && s[end].is_ascii_digit() {
        end += 1;
        digits += 1;
    }
    if s.get(end) == Some(&b'.') {
        end += 1;
        while end < s.len() && s[end].is_ascii_digit() {
            end += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(s.get(end), Some(b'e' | b'E')) {
        let mut e = end + 1;
        if matches!(s.get(e), Some(b'+' | b'-')) {
            e += 1;
        }
        if s.get(e).is_some_and(u8::is_ascii_digit) {
            while e < s.len() && s[e].is_ascii_digit() {
                e += 1;
            }
            end = e;
        }
    }
    std::str::from_utf8(&s[..end]).ok()?.parse().ok()
}

/// The hexadecimal number after `0x`: digits, a point, a binary exponent (`p3`).
fn hex_value(s: &[u8]) -> f64 {
    let mut v = 0.0f64;
    let mut i = 0;
    let mut scale = 0i32;
    let mut point = false;
    while let Some(&b) = s.get(i) {
        if b == b'.' && !point {
            point = true;
        } else if let Some(d) = (b as char).to_digit(16) {
            v = v * 16.0 + f64::from(d);
            if point {
                scale -= 4;
            }
        } else {
            break;
        }
        i += 1;
    }
    if matches!(s.get(i), Some(b'p' | b'P')) {
        let mut e = i + 1;
        let neg = s.get(e) == Some(&b'-');
        if matches!(s.get(e), Some(b'+' | b'-')) {
            e += 1;
        }
        let start = e;
        let mut exp = 0i32;
        while let Some(d) = s.get(e).filter(|b| b.is_ascii_digit()) {
            exp = exp.saturating_mul(10).saturating_add(i32::from(d - b'0'));
            e += 1;
        }
        if e > start {
            scale = scale.saturating_add(if neg { -exp } else { exp });
        }
    }
    v * 2f64.powi(scale)
}

fn human_value(s: &[u8]) -> f64 {
    let s = skip_blanks(s);
    let v = num_prefix(s);
    let digits = s
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'.' || **b == b'-')
        .count();
    let mult = match s.get(digits) {
        Some(b'K' | b'k') => 1e3,
        Some(b'M') => 1e6,
        Some(b'G') => 1e9,
        Some(b'T') => 1e12,
        Some(b'P') => 1e15,
        Some(b'E') => 1e18,
        _ => 1.0,
    };
    v * mult
}

fn month_value(s: &[u8]) -> usize {
    const MONTHS: [&[u8]; 12] = [
        b"JAN", b"FEB", b"MAR", b"APR", b"MAY", b"JUN", b"JUL", b"AUG", b"SEP", b"OCT", b"NOV",
        b"DEC",
    ];
    let s = skip_blanks(s);
    if s.len() < 3 {
        return 0;
    }
    let up = s[..3].to_ascii_uppercase();
    MONTHS
        .iter()
        .position(|m| *m == up.as_slice())
        .map(|i| i + 1)
        .unwrap_or(0)
}

/// Version order, as gnulib's `filevercmp` (GNU `sort -V`, `ls -v`): `.` and `..` and other
/// names with a leading dot first; the file suffixes (`(\.[A-Za-z~][A-Za-z0-9~]*)*$`) are
/// compared only when the rest ties; runs of digits compare as numbers, and between them
/// `~` sorts before everything, letters before the other characters.
pub(crate) fn version_cmp(a: &[u8], b: &[u8]) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    match (a[0] == b'.', b[0] == b'.') {
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        (true, true) => {
            for special in [&b"."[..], b".."] {
                match (a == special, b == special) {
                    (true, true) => return Ordering::Equal,
                    (true, false) => return Ordering::Less,
                    (false, true) => return Ordering::Greater,
                    _ => {}
                }
            }
        }
        _ => {}
    }
    let (ap, bp) = (file_prefix_len(a), file_prefix_len(b));
    let first = verrevcmp(&a[..ap], &b[..bp]);
    if first != Ordering::Equal || (ap == a.len() && bp == b.len()) {
        return first;
    }
    verrevcmp(a, b)
}

/// The length of `s` without its file suffix (see [`version_cmp`]).
fn file_prefix_len(s: &[u8]) -> usize {
    let n = s.len();
    let mut prefix = 0;
    let mut i = 0;
    loop {
        if i == n {
            return prefix;
        }
        i += 1;
        prefix = i;
        while i + 1 < n && s[i] == b'.' && (s[i + 1].is_ascii_alphabetic() || s[i + 1] == b'~') {
            i += 2;
            while i < n && (s[i].is_ascii_alphanumeric() || s[i] == b'~') {
                i += 1;
            }
        }
    }
}

/// A byte's weight between digit runs: none past the end or at a digit, `~` lowest,
/// letters, then everything else.
fn version_order(s: &[u8], pos: usize) -> i32 {
    match s.get(pos) {
        None => 0,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => i32::from(*c),
        Some(b'~') => -1,
        Some(c) => i32::from(*c) + 256,
    }
}

/// The Debian version comparison `filevercmp` is built on.
fn verrevcmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut i, mut j) = (0, 0);
    let digit = |s: &[u8], p: usize| s.get(p).is_some_and(u8::is_ascii_digit);
    while i < a.len() || j < b.len() {
        while (i < a.len() && !digit(a, i)) || (j < b.len() && !digit(b, j)) {
            let (x, y) = (version_order(a, i), version_order(b, j));
            if x != y {
                return x.cmp(&y);
            }
            i += 1;
            j += 1;
        }
        while a.get(i) == Some(&b'0') {
            i += 1;
        }
        while b.get(j) == Some(&b'0') {
            j += 1;
        }
        let mut first_diff = Ordering::Equal;
        while digit(a, i) && digit(b, j) {
            if first_diff == Ordering::Equal {
                first_diff = a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
        if digit(a, i) {
            return Ordering::Greater;
        }
        if digit(b, j) {
            return Ordering::Less;
        }
        if first_diff != Ordering::Equal {
            return first_diff;
        }
    }
    Ordering::Equal
}

fn text_cmp(a: &[u8], b: &[u8], o: &Opts) -> Ordering {
    if !(o.fold || o.dictionary || o.nonprinting) {
        return a.cmp(b);
    }
    let norm = |s: &[u8]| -> Vec<u8> {
        s.iter()
            .filter(|c| {
                !o.dictionary
                    || c.is_ascii_alphanumeric()
                    || **c == b' '
                    || **c == b'\t'
                    || **c >= 0x80
            })
            .filter(|c| !o.nonprinting || (b' '..=b'~').contains(*c))
            .map(|c| if o.fold { c.to_ascii_uppercase() } else { *c })
            .collect()
    };
    norm(a).cmp(&norm(b))
}

/// `-R`'s order: a hash of the key under the invocation's salt.
fn random_hash(key: &[u8], salt: u64) -> u64 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write_u64(salt);
    h.write(key);
    h.finish()
}

fn key_cmp(a: &[u8], b: &[u8], o: &Opts) -> Ordering {
    let (a, b) = if o.blanks {
        (skip_blanks(a), skip_blanks(b))
    } else {
        (a, b)
    };
    let ord = if o.numeric {
        num_prefix(a)
            .partial_cmp(&num_prefix(b))
            .unwrap_or(Ordering::Equal)
    } else if o.general {
        general_cmp(a, b)
    } else if o.human {
        human_value(a)
            .partial_cmp(&human_value(b))
            .unwrap_or(Ordering::Equal)
    } else if o.month {
        month_value(a).cmp(&month_value(b))
    } else if o.version {
        version_cmp(a, b)
    } else if o.random {
        let norm: Vec<u8> = if o.fold {
            a.to_ascii_uppercase()
        } else {
            a.to_vec()
        };
        let normb: Vec<u8> = if o.fold {
            b.to_ascii_uppercase()
        } else {
            b.to_vec()
        };
        random_hash(&norm, o.salt).cmp(&random_hash(&normb, o.salt))
    } else {
        text_cmp(a, b, o)
    };
    if o.reverse { ord.reverse() } else { ord }
}

struct Sorter {
    keys: Vec<Key>,
    global: Opts,
    sep: Option<u8>,
    /// Lines whose keys compare equal are ordered by their bytes; GNU turns this off
    /// with `-s` and with `-u` (which then keeps the first of equal lines in input order).
    last_resort: bool,
}

impl Sorter {
    /// Compares by the keys only (what -u calls equal).
    fn keys_cmp(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.keys.is_empty() {
            return key_cmp(a, b, &self.global);
        }
        for k in &self.keys {
            let ord = key_cmp(extract(a, k, self.sep), extract(b, k, self.sep), &k.opts);
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    }

    fn cmp(&self, a: &[u8], b: &[u8]) -> Ordering {
        let ord = self.keys_cmp(a, b);
        if ord != Ordering::Equal || !self.last_resort {
            return ord;
        }
        let last = a.cmp(b);
        if self.global.reverse {
            last.reverse()
        } else {
            last
        }
    }
}

pub struct Sort;

#[async_trait]
impl Command for Sort {
    fn name(&self) -> &'static str {
        "sort"
    }
    fn summary(&self) -> &'static str {
        "sort lines of text files"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let tuning = Tuning {
            run_bytes: RUN_BYTES,
            fan_in: MERGE_FAN_IN,
        };
        sort(ctx, args, tuning, &mut RunFiles::new(ctx.fs.clone())).await
    }
}

/// Runs `sort` with `args`, holding runs of `tuning.run_bytes` and keeping its run files
/// in `files`, which hold none once it returns.
async fn sort(ctx: &Context, args: Vec<String>, tuning: Tuning, files: &mut RunFiles) -> CmdResult {
    // `--check=quiet` (or `silent`) is -C, `--check=diagnose-first` -c.
    let args: Vec<String> = args
        .into_iter()
        .map(|a| match a.as_str() {
            "--check=quiet" | "--check=silent" => "-C".to_string(),
            "--check=diagnose-first" => "--check".to_string(),
            _ => a,
        })
        .collect();
    let args: Args = match parse_args(ctx, "sort", &args).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let global = Opts {
        blanks: args.ignore_blanks,
        dictionary: args.dictionary,
        fold: args.fold,
        nonprinting: args.nonprinting,
        general: args.general,
        human: args.human,
        month: args.month,
        numeric: args.numeric,
        reverse: args.reverse,
        version: args.version,
        random: args.random,
        salt: rand::random(),
    };
    let _ = &args.random_source;
    // One byte (one that is not UTF-8 too: `-t $'\xe9'`).
    let sep_bytes = args.separator.as_deref().map(crate::bytetext::encode);
    let sep = match (args.separator.as_deref(), sep_bytes.as_deref()) {
        (None, _) | (_, None) => None,
        (_, Some(&[b])) => Some(b),
        (Some("\\0"), _) => Some(0),
        (Some(s), _) => {
            ctx.warn("sort", format!("multi-character tab {}", quote(s)))
                .await;
            return Ok(2);
        }
    };
    let mut keys = Vec::new();
    for k in &args.keys {
        match parse_key(k, global) {
            Ok(mut k) => {
                k.opts.salt = global.salt;
                keys.push(k)
            }
            Err(msg) => {
                ctx.warn("sort", msg).await;
                return Ok(2);
            }
        }
    }
    let files_in = if let Some(from) = &args.files0_from {
        match super::wc::names_from(ctx, "sort", 2, from, &args.files).await {
            Ok(names) => names,
            Err(r) => return r,
        }
    } else if args.files.is_empty() {
        vec!["-".to_string()]
    } else {
        args.files.clone()
    };
    let _ = args.merge;
    let check = args.check || args.check_quiet;
    if check && files_in.len() > 1 {
        ctx.warn(
            "sort",
            format!("extra operand {} not allowed with -c", quote(&files_in[1])),
        )
        .await;
        return Ok(2);
    }
    let sorter = Arc::new(Sorter {
        keys,
        global,
        sep,
        last_resort: !(args.stable || args.unique),
    });
    let job = Job {
        sorter,
        unique: args.unique,
        delim: if args.zero { 0u8 } else { b'\n' },
        tuning: Tuning {
            run_bytes: tuning.run_bytes,
            fan_in: tuning.fan_in.max(2),
        },
    };
    let result = if let (true, Some(first)) = (check, files_in.first()) {
        job.check(ctx, first, !args.check_quiet).await
    } else {
        let sorted = job
            .sort(ctx, &files_in, args.output.as_deref(), files)
            .await;
        files.remove_all().await;
        sorted.map(|()| 0)
    };
    match result {
        Ok(status) => Ok(status),
        Err(SortError::Stop(interrupt)) => Err(interrupt),
        Err(e) => {
            if let Some(msg) = e.message() {
                ctx.warn("sort", msg).await;
            }
            Ok(2)
        }
    }
}

/// One sort's settings.
struct Job {
    sorter: Arc<Sorter>,
    unique: bool,
    delim: u8,
    tuning: Tuning,
}

impl Job {
    /// `-c`: reports the first line out of order (status 1), reading line by line.
    async fn check(&self, ctx: &Context, name: &str, report: bool) -> Result<Status, SortError> {
        let src = Reader::open(ctx, name)
            .await
            .map_err(|err| SortError::Open {
                name: name.to_string(),
                err,
            })?;
        let mut lines = LineReader::new(ctx, src, name, self.delim);
        let mut prev = Held::new(ctx);
        let mut lineno = 0u64;
        let mut pacer = Pacer::default();
        while lines.advance(ctx).await? {
            lineno += 1;
            let line = lines.line();
            if let Some(p) = prev.get() {
                let bad = self.sorter.cmp(p, line) == Ordering::Greater
                    || (self.unique && self.sorter.keys_cmp(p, line) == Ordering::Equal);
                if bad && !report {
                    return Ok(1);
                }
                if bad {
                    ctx.warn(
                        "sort",
                        format!(
                            "{name}:{lineno}: disorder: {}",
                            String::from_utf8_lossy(line)
                        ),
                    )
                    .await;
                    return Ok(1);
                }
            }
            prev.set(line)?;
            pacer.tick(ctx).await?;
        }
        Ok(0)
    }

    /// Sorts `inputs` to stdout or the `output` file. Input is read to the end before
    /// anything is written, so `-o` may name an input.
    async fn sort(
        &self,
        ctx: &Context,
        inputs: &[String],
        output: Option<&str>,
        files: &mut RunFiles,
    ) -> Result<(), SortError> {
        let mut run = Run::new(ctx, self.delim, self.tuning);
        // Run files written so far, in input order.
        let mut spilled: Vec<String> = Vec::new();
        let piece_len = crate::fs::READ_CHUNK.min(self.tuning.run_bytes.max(1));
        for name in inputs {
            let mut src = Reader::open(ctx, name)
                .await
                .map_err(|err| SortError::Open {
                    name: name.clone(),
                    err,
                })?;
            loop {
                let chunk = tokio::select! {
                    c = src.chunk() => c.map_err(|err| SortError::Read {
                        name: name.clone(),
                        err,
                    })?,
                    _ = ctx.cancel.cancelled() => return Err(Interrupt::Cancelled.into()),
                };
                let Some(mut chunk) = chunk else { break };
                while !chunk.is_empty() {
                    let piece = chunk.split_to(chunk.len().min(piece_len));
                    run.push(&piece)?;
                    if run.held() >= self.tuning.run_bytes {
                        run = self.spill(ctx, run, files, &mut spilled).await?;
                    }
                }
                ctx.checkpoint().await?;
            }
            run.end_input()?;
        }
        if spilled.is_empty() {
            let run = run.sort(ctx, &self.sorter).await?;
            let mut sink = self.open_output(ctx, output).await?;
            let written = run.write(ctx, &self.sorter, self.unique, &mut sink).await;
            return runs::finish_or_abandon(sink, written).await;
        }
        if !run.is_empty() {
            run = self.spill(ctx, run, files, &mut spilled).await?;
        }
        drop(run);
        while spilled.len() > self.tuning.fan_in {
            let mut next = Vec::new();
            for group in spilled.chunks(self.tuning.fan_in) {
                if let [one] = group {
                    next.push(one.clone());
                    continue;
                }
                let (path, handle) = files.create().await?;
                let mut sink = Sink::file(ctx, path.clone(), handle);
                let merged = self.merge(ctx, group, &mut sink).await;
                runs::finish_or_abandon(sink, merged).await?;
                for done in group {
                    files.remove(done).await;
                }
                next.push(path);
            }
            spilled = next;
        }
        let mut sink = self.open_output(ctx, output).await?;
        let merged = self.merge(ctx, &spilled, &mut sink).await;
        runs::finish_or_abandon(sink, merged).await
    }

    /// Sorts the complete lines of `run`, writes them to a new run file, and gives the
    /// run back holding only its line not ended yet.
    async fn spill(
        &self,
        ctx: &Context,
        run: Run,
        files: &mut RunFiles,
        spilled: &mut Vec<String>,
    ) -> Result<Run, SortError> {
        let mut run = run.sort(ctx, &self.sorter).await?;
        let (path, handle) = files.create().await?;
        let mut sink = Sink::file(ctx, path.clone(), handle);
        let written = run.write(ctx, &self.sorter, self.unique, &mut sink).await;
        runs::finish_or_abandon(sink, written).await?;
        spilled.push(path);
        run.clear_complete();
        Ok(run)
    }

    async fn merge(
        &self,
        ctx: &Context,
        inputs: &[String],
        sink: &mut Sink<'_>,
    ) -> Result<(), SortError> {
        runs::merge(ctx, inputs, &self.sorter, self.unique, self.delim, sink).await
    }

    /// Stdout, or the `-o` file truncated.
    async fn open_output<'a>(
        &self,
        ctx: &'a Context,
        output: Option<&str>,
    ) -> Result<Sink<'a>, SortError> {
        let Some(name) = output else {
            return Ok(Sink::stdout(ctx));
        };
        match ctx
            .fs
            .open_write(&ctx.path(name), WriteMode::Truncate)
            .await
        {
            Ok(handle) => Ok(Sink::file(ctx, name.to_string(), handle)),
            Err(err) => Err(SortError::OutputOpen {
                name: name.to_string(),
                err,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Budget;
    use crate::fs::FileSystem;
    use crate::io::{Input, pipe};
    use crate::testing::{Invocation, MemFs, QuotaFs, TestLauncher};
    use std::collections::BTreeMap;
    use tokio_util::sync::CancellationToken;

    async fn sort(stdin: &str, args: &[&str]) -> (i32, String, String) {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(&Sort, args)
        .await
    }

    #[tokio::test]
    async fn orders() {
        assert_eq!(sort("b\na\nc", &[]).await.1, "a\nb\nc\n");
        assert_eq!(sort("b\na\nc\n", &["-r"]).await.1, "c\nb\na\n");
        assert_eq!(sort("10\n9\n-1\nx\n", &["-n"]).await.1, "-1\nx\n9\n10\n");
        assert_eq!(sort("b\nB\na\n", &["-f"]).await.1, "a\nB\nb\n");
        assert_eq!(sort("a\nb\na\n", &["-u"]).await.1, "a\nb\n");
        assert_eq!(sort("1G\n2K\n3M\n", &["-h"]).await.1, "2K\n3M\n1G\n");
        assert_eq!(
            sort("v1.10\nv1.9\nv1.2\n", &["-V"]).await.1,
            "v1.2\nv1.9\nv1.10\n"
        );
        assert_eq!(sort("Feb\nJan\nDec\n", &["-M"]).await.1, "Jan\nFeb\nDec\n");
    }

    #[tokio::test]
    async fn keys_and_separators() {
        let data = "b 2\na 10\nc 1\n";
        assert_eq!(sort(data, &["-k", "2,2n"]).await.1, "c 1\nb 2\na 10\n");
        assert_eq!(sort(data, &["-k2nr"]).await.1, "a 10\nb 2\nc 1\n");
        assert_eq!(
            sort("x:3\ny:1\nz:2\n", &["-t", ":", "-k", "2"]).await.1,
            "y:1\nz:2\nx:3\n"
        );
        assert_eq!(
            sort("a 1\nb 1\n", &["-s", "-r", "-k2,2"]).await.1,
            "a 1\nb 1\n"
        );
        assert_eq!(sort("ab\nba\n", &["-k1.2"]).await.1, "ba\nab\n");
    }

    #[tokio::test]
    async fn output_file_check_and_errors() {
        let fs = MemFs::with_files(&[("/f", "2\n1\n")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        assert_eq!(inv.run(&Sort, &["-o", "f", "f"]).await.0, 0);
        assert_eq!(fs.text("/f").unwrap(), "1\n2\n");
        let (st, _, err) = sort("b\na\n", &["-c"]).await;
        assert_eq!((st, err.as_str()), (1, "sort: -:2: disorder: a\n"));
        assert_eq!(sort("a\nb\n", &["-c"]).await.0, 0);
        let (st, _, err) = inv.run(&Sort, &["nofile"]).await;
        assert_eq!(
            (st, err.as_str()),
            (2, "sort: cannot read: nofile: No such file or directory\n")
        );
        assert_eq!(sort("", &["-k", "0"]).await.0, 2);
        assert_eq!(sort("", &["-t", "ab"]).await.0, 2);
        assert_eq!(sort("", &["--bogus"]).await.0, 2);
        assert_eq!(sort("\u{ff}\x00\n\x01\n", &[]).await.0, 0);
    }

    #[tokio::test]
    async fn unique_keeps_the_first_of_equal_lines_like_gnu() {
        // GNU: -u turns off the last-resort comparison, so the first in input order stays.
        assert_eq!(sort("b\nB\n", &["-f", "-u"]).await.1, "b\n");
        assert_eq!(sort("B\nb\na\n", &["-f", "-u"]).await.1, "a\nB\n");
        assert_eq!(sort("b\nB\n", &["-f"]).await.1, "B\nb\n");
        assert_eq!(
            sort("a 2\nb 1\nc 2\n", &["-u", "-k2,2"]).await.1,
            "b 1\na 2\n"
        );
        assert_eq!(sort("a\na\n", &["-c", "-u"]).await.0, 1);
        assert_eq!(sort("a\nb\n", &["-c", "-u"]).await.0, 0);
    }

    #[tokio::test]
    async fn check_reads_one_operand_line_by_line() {
        let fs = MemFs::with_files(&[("/a", "1\n2\n3"), ("/b", "x\n"), ("/d/", "")]);
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        assert_eq!(inv.run(&Sort, &["-c", "a"]).await.0, 0);
        let (st, _, err) = inv.run(&Sort, &["-c", "a", "b"]).await;
        assert_eq!(
            (st, err.as_str()),
            (2, "sort: extra operand 'b' not allowed with -c\n")
        );
        fs.put("/a", b"1\n3\n2");
        let (st, _, err) = inv.run(&Sort, &["-c", "a"]).await;
        assert_eq!((st, err.as_str()), (1, "sort: a:3: disorder: 2\n"));
        let (st, _, err) = inv.run(&Sort, &["-c", "d"]).await;
        assert_eq!(
            (st, err.as_str()),
            (2, "sort: read failed: d: Is a directory\n")
        );
        let (st, _, err) = inv.run(&Sort, &["d"]).await;
        assert_eq!(
            (st, err.as_str()),
            (2, "sort: read failed: d: Is a directory\n")
        );
        let (st, _, err) = inv.run(&Sort, &["-o", "no/such", "a"]).await;
        assert_eq!(
            (st, err.as_str()),
            (2, "sort: open failed: no/such: No such file or directory\n")
        );
        assert!(!fs.exists("/tmp"), "an in-memory sort writes no run file");
    }

    /// `sort` with small runs, so tests see run files and multi-pass merges.
    struct Tuned(Tuning);

    #[async_trait]
    impl Command for Tuned {
        fn name(&self) -> &'static str {
            "sort"
        }
        fn summary(&self) -> &'static str {
            "sort with small runs"
        }
        async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
            super::sort(ctx, args, self.0, &mut RunFiles::new(ctx.fs.clone())).await
        }
    }

    const SMALL_RUNS: Tuned = Tuned(Tuning {
        run_bytes: 8 * 1024,
        fan_in: 4,
    });

    /// About `len` bytes of lines with many equal keys, mixed case, empty lines, numbers
    /// and a last line without its newline; the same for a given seed.
    fn lines(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let words = [
            "apple", "Apple", "b", "B", "cherry", "", "  lead", "Zed", "z", "10",
        ];
        let mut out = Vec::new();
        while out.len() < len {
            let r = next();
            let w = words[(r % words.len() as u64) as usize];
            let line = match r % 5 {
                0 => format!("{w}\n"),
                1 => format!("{w},{}\n", (r >> 8) % 50),
                2 => format!("{} {w},{}\n", (r >> 16) % 1000, (r >> 8) % 7),
                3 => format!("{w} {}K,{w}\n", (r >> 8) % 13),
                _ => format!("{w}{}\n", r >> 40),
            };
            out.extend_from_slice(line.as_bytes());
        }
        out.extend_from_slice(b"tail without newline");
        out
    }

    #[tokio::test]
    async fn spilled_sort_equals_the_in_memory_sort() {
        let input = lines(128 * 1024, 7);
        let mem = MemFs::new();
        mem.put("/in", &input);
        let fs = QuotaFs::new(mem.clone(), u64::MAX);
        // Charged memory never exceeds this, or the spilled sorts would fail.
        let budget = Budget::new(512 * 1024, 16);
        let spilled = Invocation {
            fs: fs.clone(),
            budget: budget.clone(),
            ..Invocation::default()
        };
        let in_memory = Invocation {
            fs: mem.clone(),
            ..Invocation::default()
        };
        let cases: &[&[&str]] = &[
            &[],
            &["-r"],
            &["-n"],
            &["-u"],
            &["-f"],
            &["-f", "-u"],
            &["-s", "-t", ",", "-k2,2n"],
            &["-t", ",", "-k2,2n"],
            &["-t", ",", "-k2,2nr", "-k1,1"],
            &["-b", "-k2,2h", "-s"],
            &["-r", "-u", "-k1,1"],
            &["-V"],
            &["-d", "-f", "-r"],
        ];
        for args in cases {
            let mut argv = args.to_vec();
            argv.push("in");
            let before = fs.created().len();
            let (st, out, err) = spilled.run_bytes(&SMALL_RUNS, &argv).await;
            let expected = in_memory.run_bytes(&Sort, &argv).await;
            assert_eq!((st, &err), (0, &Vec::new()), "{args:?}");
            assert!(out == expected.1, "{args:?}: spilled output differs");
            let runs = fs.created().len() - before;
            // 128 KiB in 8 KiB runs, merged 4 at a time: the runs plus merge passes.
            assert!(runs > 16, "{args:?}: only {runs} run files");
            assert_eq!(mem.read_dir("/tmp").await.unwrap(), vec![], "{args:?}");
            assert_eq!(budget.mem_used(), 0, "{args:?}");
        }
        // With no option the result is a plain byte sort.
        let mut want: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
        want.sort();
        let want: Vec<u8> = want.iter().flat_map(|l| [*l, b"\n"].concat()).collect();
        assert!(spilled.run_bytes(&SMALL_RUNS, &["in"]).await.1 == want);
    }

    #[tokio::test]
    async fn spilled_sort_handles_stdin_nul_lines_output_file_and_long_lines() {
        let mut input = lines(64 * 1024, 3);
        // A line longer than a run is held whole.
        input.extend_from_slice(b"\n");
        input.extend_from_slice(&[b'm'; 40 * 1024]);
        input.extend_from_slice(b"\n");
        let mem = MemFs::new();
        let fs = QuotaFs::new(mem.clone(), u64::MAX);
        let inv = Invocation {
            stdin: input.clone(),
            fs: fs.clone(),
            ..Invocation::default()
        };
        let reference = Invocation {
            stdin: input.clone(),
            ..Invocation::default()
        };
        let (st, out, _) = inv.run_bytes(&SMALL_RUNS, &[]).await;
        assert_eq!(st, 0);
        assert!(out == reference.run_bytes(&Sort, &[]).await.1);
        let zeroed: Vec<u8> = input
            .iter()
            .map(|b| if *b == b'\n' { 0 } else { *b })
            .collect();
        let inv_z = Invocation {
            stdin: zeroed.clone(),
            ..inv.clone()
        };
        let ref_z = Invocation {
            stdin: zeroed,
            ..Invocation::default()
        };
        let (st, out, _) = inv_z.run_bytes(&SMALL_RUNS, &["-z", "-r"]).await;
        assert_eq!(st, 0);
        assert!(out == ref_z.run_bytes(&Sort, &["-z", "-r"]).await.1);
        // -o may name the input: it is read whole (into run files) before it is opened.
        mem.put("/f", &input);
        let (st, out, _) = inv.run(&SMALL_RUNS, &["-o", "f", "f"]).await;
        assert_eq!((st, out.as_str()), (0, ""));
        assert!(mem.contents("/f").unwrap() == reference.run_bytes(&Sort, &[]).await.1);
        assert_eq!(mem.read_dir("/tmp").await.unwrap(), vec![]);
    }

    #[tokio::test]
    async fn a_full_quota_fails_like_gnu_and_leaves_no_run_file() {
        let mem = MemFs::with_files(&[("/tmp/keep", "mine")]);
        mem.put("/in", &lines(64 * 1024, 5));
        let inv = Invocation {
            fs: QuotaFs::new(mem.clone(), 20 * 1024),
            ..Invocation::default()
        };
        let (st, out, err) = inv.run(&SMALL_RUNS, &["in"]).await;
        assert_eq!((st, out.as_str()), (2, ""));
        assert!(
            err.starts_with("sort: write failed: /tmp/sort")
                && err.ends_with(": No space left on device\n"),
            "{err}"
        );
        let left: Vec<String> = mem
            .read_dir("/tmp")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(left, ["keep"]);
        assert_eq!(inv.budget.mem_used(), 0);
        // /tmp being a file: no run file can be made.
        let mem = MemFs::with_files(&[("/tmp", "")]);
        mem.put("/in", &lines(64 * 1024, 5));
        let inv = Invocation {
            fs: mem.clone(),
            ..Invocation::default()
        };
        let (st, _, err) = inv.run(&SMALL_RUNS, &["in"]).await;
        assert_eq!(
            (st, err.as_str()),
            (
                2,
                "sort: cannot create temporary file in '/tmp': Not a directory\n"
            )
        );
    }

    #[tokio::test]
    async fn over_the_budget_sort_fails_with_out_of_memory() {
        let input = lines(64 * 1024, 9);
        let budget = Budget::new(4096, 16);
        let inv = Invocation {
            stdin: input.clone(),
            budget: budget.clone(),
            ..Invocation::default()
        };
        let (st, out, err) = inv.run(&Sort, &[]).await;
        assert_eq!(
            (st, out.as_str(), err.as_str()),
            (1, "", "forkbox: sort: out of memory (session limit 4K)\n")
        );
        assert_eq!(budget.mem_used(), 0);
        // Spilling does not help a line larger than the budget, nor -c.
        let inv = Invocation {
            stdin: [b"b\n".as_slice(), &[b'a'; 8192], b"\n"].concat(),
            fs: MemFs::new(),
            ..inv
        };
        let (st, _, err) = inv.run(&SMALL_RUNS, &[]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "forkbox: sort: out of memory (session limit 4K)\n")
        );
        let (st, _, err) = inv.run(&Sort, &["-c"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "forkbox: sort: out of memory (session limit 4K)\n")
        );
        assert_eq!(budget.mem_used(), 0);
        // Within the default budget the same input is checked: the long line is out of order.
        let ok = Invocation {
            stdin: inv.stdin.clone(),
            ..Invocation::default()
        };
        let (st, _, err) = ok.run(&Sort, &["-c"]).await;
        assert!(
            st == 1 && err.starts_with("sort: -:2: disorder: aaaa"),
            "{err}"
        );
        assert_eq!(ok.run(&Sort, &["-r", "-c"]).await.0, 0);
    }

    /// A context whose stdin is `stdin`, over `fs`, cancelled by `cancel`.
    fn context(fs: Arc<QuotaFs>, stdin: Input, cancel: CancellationToken) -> Context {
        Context {
            stdin,
            stdout: crate::Output::null(),
            stderr: crate::Output::null(),
            env: BTreeMap::new(),
            env_last: Vec::new(),
            cwd: "/".to_string(),
            fs,
            cancel,
            tty: None,
            terminal: None,
            launcher: TestLauncher::new(),
            budget: Budget::default(),
        }
    }

    /// Polls `fut` until at least two run files exist (it is then waiting for more
    /// stdin); `fut` must not finish.
    async fn until_spilled<F: std::future::Future<Output = CmdResult>>(
        fut: &mut std::pin::Pin<&mut F>,
        fs: &QuotaFs,
    ) {
        for _ in 0..10_000 {
            if fs
                .created()
                .iter()
                .filter(|p| p.starts_with("/tmp/sort"))
                .count()
                >= 2
            {
                return;
            }
            tokio::select! {
                biased;
                r = fut.as_mut() => panic!("sort finished early: {r:?}"),
                () = tokio::task::yield_now() => {}
            }
        }
        panic!("no run files");
    }

    #[tokio::test]
    async fn cancelled_sort_removes_its_run_files() {
        let mem = MemFs::new();
        let fs = QuotaFs::new(mem.clone(), u64::MAX);
        let (writer, stdin) = pipe();
        writer.write_all(&lines(64 * 1024, 11)).await.unwrap();
        let cancel = CancellationToken::new();
        let ctx = context(fs.clone(), stdin, cancel.clone());
        let fut = SMALL_RUNS.run(&ctx, Vec::new());
        tokio::pin!(fut);
        until_spilled(&mut fut, &fs).await;
        cancel.cancel();
        assert!(matches!(fut.await, Err(Interrupt::Cancelled)));
        assert_eq!(mem.read_dir("/tmp").await.unwrap(), vec![]);
        assert_eq!(ctx.budget.mem_used(), 0);
        drop(writer);
    }

    #[tokio::test]
    async fn a_dropped_sort_hands_its_run_files_to_a_cleanup_task() {
        let mem = MemFs::new();
        let fs = QuotaFs::new(mem.clone(), u64::MAX);
        let (writer, stdin) = pipe();
        writer.write_all(&lines(64 * 1024, 13)).await.unwrap();
        let ctx = context(fs.clone(), stdin, CancellationToken::new());
        {
            let fut = SMALL_RUNS.run(&ctx, Vec::new());
            tokio::pin!(fut);
            until_spilled(&mut fut, &fs).await;
            assert!(!mem.read_dir("/tmp").await.unwrap().is_empty());
        }
        for _ in 0..100 {
            if mem.read_dir("/tmp").await.unwrap().is_empty() {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(mem.read_dir("/tmp").await.unwrap(), vec![]);
        assert_eq!(ctx.budget.mem_used(), 0);
        drop(writer);
    }

    #[tokio::test]
    async fn a_reader_gone_stops_the_merge_and_removes_the_run_files() {
        let mem = MemFs::new();
        mem.put("/in", &lines(64 * 1024, 17));
        let fs = QuotaFs::new(mem.clone(), u64::MAX);
        let (stdout, reader) = pipe();
        drop(reader);
        let ctx = Context {
            stdout,
            ..context(fs.clone(), Input::empty(), CancellationToken::new())
        };
        let result = SMALL_RUNS.run(&ctx, vec!["in".to_string()]).await;
        assert!(matches!(result, Err(Interrupt::BrokenPipe)), "{result:?}");
        assert!(fs.created().len() > 2);
        assert_eq!(mem.read_dir("/tmp").await.unwrap(), vec![]);
        assert_eq!(ctx.budget.mem_used(), 0);
    }
}

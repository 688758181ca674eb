//! Records and fields: lazy splitting into byte ranges, field assignment and the
//! rebuilding of `$0` with OFS.

use super::*;

impl Interp {
    // ---- records and fields ----

    pub(super) fn set_record(&mut self, text: Vec<u8>) {
        self.rec = text;
        self.rec_set = true;
        self.split_done = false;
        self.owned = None;
        self.rec_stale = false;
    }

    pub(super) fn ensure_split(&mut self) {
        if self.split_done {
            return;
        }
        self.split_done = true;
        self.ranges.clear();
        let mode = self.effective_fs();
        split_into(&self.rec, &mode, &mut self.ranges);
        self.nf = self.ranges.len();
        self.nf_assigned = None;
    }

    pub(super) fn effective_fs(&self) -> FsMode {
        self.fs_mode.clone()
    }

    pub(super) fn materialize(&mut self) {
        self.ensure_split();
        if self.owned.is_none() {
            let v: Vec<Value> = self
                .ranges
                .iter()
                .map(|&(a, b)| Value::strnum(&self.rec[a..b]))
                .collect();
            self.owned = Some(v);
        }
    }

    pub(super) fn record_bytes(&mut self) -> Vec<u8> {
        if self.rec_stale {
            self.rebuild_record();
        }
        self.rec.clone()
    }

    pub(super) fn rebuild_record(&mut self) {
        self.rec_stale = false;
        let mut out = Vec::new();
        if let Some(f) = &self.owned {
            for (i, v) in f.iter().take(self.nf).enumerate() {
                if i > 0 {
                    out.extend_from_slice(&self.ofs);
                }
                v.append_to(&mut out, &self.convfmt);
            }
        }
        // Fields stay as they are (no re-split): gawk keeps them.
        self.rec = out;
    }

    pub(super) fn get_field(&mut self, i: usize) -> Value {
        if self.lint != Lint::Off {
            self.lint_field(i);
        }
        if i == 0 {
            if self.rec_stale {
                self.rebuild_record();
            }
            return Value::strnum(&self.rec);
        }
        self.ensure_split();
        if i > self.nf {
            // A field past NF is the null string, compared as a string (`$9 == 0` is
            // false).
            return Value::Str(Rc::from(&b""[..]));
        }
        match &self.owned {
            Some(f) => f.get(i - 1).cloned().unwrap_or_default(),
            None => {
                let (a, b) = self.ranges[i - 1];
                Value::strnum(&self.rec[a..b])
            }
        }
    }

    /// `--lint`'s warnings on reading field `i`: in END, and of a field never set.
    pub(in super::super) fn lint_field(&mut self, i: usize) {
        if self.in_end && self.warned.insert("END fields".to_string()) {
            self.warn("accessing fields from an END rule may not be portable");
        }
        if if i == 0 {
            !self.rec_set
        } else {
            i > self.field_count()
        } {
            self.warn(&format!("reference to uninitialized field `${i}'"));
        }
    }

    /// NF, splitting the record if needed.
    pub(in super::super) fn field_count(&mut self) -> usize {
        self.ensure_split();
        self.nf
    }

    pub(super) fn set_field(&mut self, i: usize, v: Value) -> R<()> {
        if i == 0 {
            let mut s = Vec::new();
            v.append_to(&mut s, &self.convfmt);
            self.set_record(s);
            return Ok(());
        }
        if i > 10_000_000 {
            return Err(Fail::Fatal(format!("field index {i} is too large")));
        }
        self.materialize();
        let convfmt = self.convfmt.clone();
        if let Some(f) = self.owned.as_mut() {
            f.truncate(self.nf);
            while f.len() < i {
                f.push(Value::Uninit);
            }
            // Field values keep their string form.
            f[i - 1] = match v {
                Value::Num(n) => Value::Num(n),
                Value::Bool(b) => Value::Bool(b),
                Value::Uninit => Value::Uninit,
                Value::StrNum(s) => Value::StrNum(s),
                other => Value::Str(other.to_str_with(&convfmt)),
            };
            if i > self.nf {
                self.nf = i;
                self.nf_assigned = None;
            }
        }
        self.rec_stale = true;
        Ok(())
    }

    pub(super) fn set_nf(&mut self, n: f64) -> R<()> {
        if n < 0.0 {
            return Err(Fail::Fatal("NF set to negative value".into()));
        }
        let n = n as usize;
        if n > 10_000_000 {
            return Err(Fail::Fatal(format!("NF set to {n}: too large")));
        }
        self.materialize();
        if let Some(f) = self.owned.as_mut() {
            f.truncate(n.min(self.nf));
            while f.len() < n {
                f.push(Value::Uninit);
            }
        }
        self.nf = n;
        self.rec_stale = true;
        Ok(())
    }
}

/// Splits `s` into field ranges by `mode`.
pub(super) fn split_into(s: &[u8], mode: &FsMode, out: &mut Vec<(usize, usize)>) {
    match mode {
        FsMode::Space => {
            let mut i = 0;
            let n = s.len();
            loop {
                while i < n && matches!(s[i], b' ' | b'\t' | b'\n') {
                    i += 1;
                }
                if i >= n {
                    break;
                }
                let st = i;
                while i < n && !matches!(s[i], b' ' | b'\t' | b'\n') {
                    i += 1;
                }
                out.push((st, i));
            }
        }
        FsMode::Byte(c) => {
            if s.is_empty() {
                return;
            }
            let mut st = 0;
            for i in memchr::memchr_iter(*c, s) {
                out.push((st, i));
                st = i + 1;
            }
            out.push((st, s.len()));
        }
        FsMode::Chars => match super::super::value::as_chars(s) {
            Some(t) => {
                for (i, ch) in t.char_indices() {
                    out.push((i, i + ch.len_utf8()));
                }
            }
            None => {
                for i in 0..s.len() {
                    out.push((i, i + 1));
                }
            }
        },
        FsMode::Fpat(re) => {
            fpat_split(s, re, out, None);
        }
        FsMode::Widths(ws) => {
            let mut pos = 0;
            for &(skip, w) in ws.iter() {
                if pos >= s.len() {
                    break;
                }
                pos = advance_chars(s, pos, skip);
                let end = if w == usize::MAX {
                    s.len()
                } else {
                    advance_chars(s, pos, w)
                };
                out.push((pos, end));
                pos = end;
            }
        }
        FsMode::Regex(re) => {
            if s.is_empty() {
                return;
            }
            let mut st = 0;
            // A search that gives up (the backtracking budget) leaves the rest as one field.
            while let Ok(Some((ms, me))) = re.find_nonempty_at(s, st) {
                out.push((st, ms));
                st = me;
            }
            out.push((st, s.len()));
        }
    }
}

/// The offset `n` characters past `pos` (bytes outside UTF-8 text), at most the end.
fn advance_chars(s: &[u8], pos: usize, n: usize) -> usize {
    match super::super::value::as_chars(&s[pos..]) {
        Some(t) => t.char_indices().nth(n).map_or(s.len(), |(i, _)| pos + i),
        None => pos.saturating_add(n).min(s.len()),
    }
}

/// FPAT splitting (and `patsplit`): each field is a match of `re`, searched from where
/// the last one ended; an empty match right where a non-empty one ended is the boundary
/// between them, not a field. With `seps`, the text between fields is collected too:
/// `seps[0]` before the first field, `seps[i]` after field `i`.
pub fn fpat_split(
    s: &[u8],
    re: &Regex,
    out: &mut Vec<(usize, usize)>,
    mut seps: Option<&mut Vec<(usize, usize)>>,
) {
    if s.is_empty() {
        return;
    }
    let mut pos = 0;
    let mut last_end: Option<usize> = None;
    let mut sep_start = 0;
    while pos <= s.len() {
        let Ok(Some((ms, me))) = re.find_at(s, pos) else {
            break;
        };
        if ms == me {
            if last_end == Some(ms) {
                pos = ms + char_len(s, ms);
                continue;
            }
            pos = ms + char_len(s, ms);
        } else {
            pos = me;
            last_end = Some(me);
        }
        if let Some(seps) = seps.as_deref_mut() {
            seps.push((sep_start, ms));
        }
        sep_start = me;
        out.push((ms, me));
    }
    if let Some(seps) = seps {
        seps.push((sep_start.min(s.len()), s.len()));
    }
}

/// Bytes in the character at `i` (1 past the end, so a search moves on).
fn char_len(s: &[u8], i: usize) -> usize {
    match s.get(i) {
        Some(&b) if b >= 0xC0 && super::super::value::utf8_mode() => {
            let n = match b {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            n.min(s.len() - i)
        }
        _ => 1,
    }
}

/// `split()` and field splitting share this: the pieces of `s` for a separator string.
pub fn split_str(me: &mut Interp, s: &[u8], fs: Option<&Expr>) -> R<Vec<(usize, usize)>> {
    let mode = match fs {
        None => me.fs_split_mode()?,
        Some(Expr::Regex(i)) => FsMode::Regex(me.literal_regex(*i)?),
        Some(e) => {
            let v = me.eval(e)?.to_str_with(&me.convfmt).to_vec();
            me.fs_mode_for(&v, false)?
        }
    };
    let mut out = Vec::new();
    split_into(s, &mode, &mut out);
    Ok(out)
}

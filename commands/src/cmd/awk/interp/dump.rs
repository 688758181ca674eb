//! `--dump-variables`: gawk's listing of the global variables at exit, sorted by name,
//! built-in ones included (those the program never names with their initial values).

use super::{Cell, Interp, R, Value, sprintf};
use crate::cmd::awk::parse::{Redir, SPECIAL_ARRAYS, SPECIAL_SCALARS};

/// Initial values of the built-in scalars a program does not name (and so has no slot
/// for): what gawk lists for them.
fn default_of(name: &str) -> Value {
    match name {
        "ARGIND" | "BINMODE" | "LINT" | "NF" | "NR" | "FNR" | "RSTART" | "RLENGTH"
        | "IGNORECASE" | "ARGC" => Value::Num(0.0),
        "PREC" => Value::Num(53.0),
        "ROUNDMODE" => Value::str(&b"N"[..]),
        "TEXTDOMAIN" => Value::str(&b"messages"[..]),
        "CONVFMT" | "OFMT" => Value::str(&b"%.6g"[..]),
        "FS" | "OFS" => Value::str(&b" "[..]),
        "ORS" | "RS" => Value::str(&b"\n"[..]),
        "SUBSEP" => Value::str(&b"\x1c"[..]),
        "FPAT" => Value::str(&b"[^[:space:]]+"[..]),
        _ => Value::str(Vec::new()),
    }
}

/// A string as gawk's dump (and `--gen-pot`) shows it: in double quotes, with C escapes.
pub fn quoted(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x0b => out.extend_from_slice(b"\\v"),
            b if b < 0x20 || b == 0x7f => out.extend_from_slice(format!("\\{b:03o}").as_bytes()),
            b => out.push(b),
        }
    }
    out.push(b'"');
}

fn scalar_line(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Uninit => out.extend_from_slice(b"uninitialized scalar"),
        Value::Num(n) => {
            let text = sprintf(b"%.17g", &[Value::Num(*n)], b"%.6g").unwrap_or_default();
            out.extend_from_slice(&text);
        }
        Value::Bool(b) => out.push(if *b { b'1' } else { b'0' }),
        Value::Str(s) | Value::StrNum(s) => quoted(s, out),
        Value::Regex(s) => {
            out.extend_from_slice(b"@/");
            out.extend_from_slice(s);
            out.push(b'/');
        }
    }
}

impl Interp {
    /// The dump's text: one `name: value` line per global.
    fn dump_text(&mut self) -> R<Vec<u8>> {
        let mut names: Vec<(String, Option<usize>)> = Vec::new();
        for n in SPECIAL_SCALARS.iter().chain(SPECIAL_ARRAYS) {
            let slot = self.prog.globals.iter().position(|g| g == n);
            names.push(((*n).to_string(), slot));
        }
        for (i, g) in self.prog.globals.iter().enumerate() {
            if !names.iter().any(|(n, _)| n == g) {
                names.push((g.clone(), Some(i)));
            }
        }
        names.sort();
        let total = names.len();
        let mut out = Vec::new();
        for (name, slot) in names {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            let special = SPECIAL_SCALARS.contains(&name.as_str());
            match slot.map(|i| (i, &self.globals[i])) {
                Some((_, Cell::Arr(a))) => {
                    let n = a.borrow().len();
                    out.extend_from_slice(format!("array, {n} elements").as_bytes());
                }
                None if SPECIAL_ARRAYS.contains(&name.as_str()) => {
                    let n = match name.as_str() {
                        // gawk's SYMTAB holds every global but itself and FUNCTAB.
                        "SYMTAB" => total - 2,
                        "FUNCTAB" => super::BUILTIN_FUNCS.len() + self.defined_funcs(),
                        "ENVIRON" => self.ctx.env.len(),
                        _ => 0,
                    };
                    out.extend_from_slice(format!("array, {n} elements").as_bytes());
                }
                Some((_, Cell::Uninit)) if !special => out.extend_from_slice(b"untyped variable"),
                Some((i, _)) => {
                    let v = self.get_global(i)?;
                    scalar_line(&v, &mut out);
                }
                None => scalar_line(&default_of(&name), &mut out),
            }
            out.push(b'\n');
        }
        Ok(out)
    }

    fn defined_funcs(&self) -> usize {
        self.prog.funcs.iter().filter(|f| f.defined).count()
    }

    /// Writes the dump to `file` (`-` and `/dev/stdout` are standard output).
    pub fn dump_variables(&mut self, file: &str) -> R<()> {
        let text = self.dump_text()?;
        let lint = std::mem::replace(&mut self.lint, super::Lint::Off);
        self.sandbox = false;
        let r = if file == "-" || file == "/dev/stdout" {
            self.emit(None, &text)
        } else {
            self.emit(Some((Redir::File, file.as_bytes().to_vec())), &text)
        };
        let r = r.and_then(|()| self.finish());
        self.lint = lint;
        r
    }
}

//! Variables as bash keeps them: attributes (`declare -i -l -u -n -t`), name references,
//! assignment through both, subscripts of indexed and associative arrays, the special
//! variables a shell starts with, and the `declare -p` form of a variable.
//!
//! The storage primitives (`store_str`, `store_elem`, `store_key`, `store_value`) live in
//! `shell.rs` with the memory accounting; everything here goes through them.

use std::borrow::Cow;
use std::collections::BTreeMap;

use forkbox_commands::bytetext;

use super::error::ShellError;
use super::{AssocArray, Shell, Value, Var, arith};

type R<T> = Result<T, ShellError>;

/// How many name references a name may go through before bash calls it circular.
const MAX_REF_HOPS: usize = 8;

/// The bash release forkbox behaves as (`$BASH_VERSION`, `$BASH_VERSINFO`).
pub(crate) const BASH_VERSINFO: [&str; 6] = ["5", "2", "15", "1", "release", "x86_64-pc-linux-gnu"];

/// `$UID` and `$EUID` of a session's user.
const SESSION_UID: &str = "1000";

/// Attributes of a variable besides its value's kind, export and readonly.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Attrs {
    /// `-i`: assignments are evaluated as arithmetic.
    pub integer: bool,
    /// `-l`: assignments are lowercased.
    pub lower: bool,
    /// `-u`: assignments are uppercased.
    pub upper: bool,
    /// `-c` (undocumented in bash 5.2): assignments are capitalized (the first
    /// character uppercased, the rest lowercased).
    pub capcase: bool,
    /// `-n`: the value names another variable, which reads and assignments act on.
    pub nameref: bool,
    /// `-t`: shown by `declare -p`; there are no DEBUG traps to inherit it.
    pub trace: bool,
    /// Declared without a value (`declare x`, `local x`, `export x`): the variable exists
    /// with its attributes but expands as unset.
    pub unset: bool,
}

/// Splits `a[sub]` into `("a", "sub")`.
pub(crate) fn split_subscript(s: &str) -> Option<(&str, &str)> {
    let open = s.find('[')?;
    let sub = s[open + 1..].strip_suffix(']')?;
    Some((&s[..open], sub))
}

fn arith_error(e: arith::ArithError) -> ShellError {
    match e.unbound() {
        Some(name) => ShellError::Unbound(name.to_string()),
        None => ShellError::Arithmetic {
            expr: e.expr,
            message: e.message,
        },
    }
}

/// An arithmetic error in the value of an integer variable: the end of the script.
fn assign_error(e: arith::ArithError) -> ShellError {
    match e.unbound() {
        Some(name) => ShellError::Unbound(name.to_string()),
        None => ShellError::ArithmeticAssign {
            expr: e.expr,
            message: e.message,
        },
    }
}

/// The error for a name reference that leads back to itself.
fn circular(name: &str) -> ShellError {
    ShellError::Builtin(format!("{name}: circular name reference"))
}

impl Shell {
    /// The variable a name reaches through name references (itself if none); a target
    /// may be an element (`a[1]`). A circular chain gives `""`.
    pub(crate) fn resolve_ref<'a>(&self, name: &'a str) -> Cow<'a, str> {
        let mut cur: Cow<'a, str> = Cow::Borrowed(name);
        for _ in 0..MAX_REF_HOPS {
            match self.vars.get(cur.as_ref()) {
                Some(v) if v.attrs.nameref && !v.attrs.unset => match &v.value {
                    Value::Str(t) if !t.is_empty() => cur = Cow::Owned(t.clone()),
                    _ => return cur,
                },
                _ => return cur,
            }
        }
        Cow::Borrowed("")
    }

    /// Whether a name reference chain starting at `name` is circular.
    pub(crate) fn is_circular_ref(&self, name: &str) -> bool {
        self.vars.get(name).is_some_and(|v| v.attrs.nameref) && self.resolve_ref(name).is_empty()
    }

    /// Whether `name` (after references) is an associative array.
    pub(crate) fn is_assoc(&self, name: &str) -> bool {
        let t = self.resolve_ref(name);
        matches!(
            self.vars.get(t.as_ref()).map(|v| &v.value),
            Some(Value::Assoc(_))
        )
    }

    fn attrs_of(&self, name: &str) -> Attrs {
        self.vars.get(name).map(|v| v.attrs).unwrap_or_default()
    }

    /// Element `sub` of `base` without side effects (for a reference to an element).
    pub(crate) fn get_subscript(&self, base: &str, sub: &str) -> Option<String> {
        let v = self.vars.get(base)?;
        match &v.value {
            Value::Assoc(m) => m.get(sub).cloned(),
            Value::Array(m) => {
                let i = self.plain_index(sub)?;
                let i = if i < 0 {
                    super::next_index(m).wrapping_add(i)
                } else {
                    i
                };
                m.get(&i).cloned()
            }
            Value::Str(s) => (self.plain_index(sub)? == 0).then(|| s.clone()),
        }
    }

    /// A subscript read without evaluating arithmetic (a number or a variable holding one).
    fn plain_index(&self, sub: &str) -> Option<i64> {
        let t = sub.trim();
        t.parse::<i64>()
            .ok()
            .or_else(|| self.get_str(t).and_then(|v| v.trim().parse().ok()))
            .or(Some(0))
    }

    /// `unset 'a[sub]'`: the key of an associative array, the index of an indexed one.
    pub(crate) fn unset_subscript(&mut self, base: &str, sub: &str) -> R<()> {
        let base = self.resolve_ref(base).into_owned();
        if self.vars.get(&base).is_some_and(|v| v.readonly) {
            return Err(ShellError::Readonly(base));
        }
        if matches!(sub, "@" | "*") {
            // `unset 'a[@]'` empties an indexed array (an associative one loses the key).
            match self.vars.get_mut(&base).map(|v| &mut v.value) {
                Some(Value::Array(m)) => {
                    m.clear();
                    return Ok(());
                }
                Some(Value::Str(_)) => {
                    return Err(ShellError::Builtin(format!(
                        "unset: {base}: not an array variable"
                    )));
                }
                _ => {}
            }
        }
        let idx = match self.vars.get(&base).map(|v| &v.value) {
            Some(Value::Assoc(_)) | None => None,
            // A blank subscript is an empty expression: 0 (`unset 'a[ ]'`).
            Some(_) if sub.trim().is_empty() => Some(0),
            Some(_) => Some(self.eval_index(&base, sub)?),
        };
        let Some(var) = self.vars.get_mut(&base) else {
            return Ok(());
        };
        match (&mut var.value, idx) {
            (Value::Assoc(m), _) => {
                m.remove(sub);
            }
            (Value::Array(m), Some(i)) => {
                let i = if i < 0 {
                    let n = super::next_index(m).wrapping_add(i);
                    if n < 0 {
                        return Err(ShellError::BadSubscript(format!("{base}[{sub}]")));
                    }
                    n
                } else {
                    i
                };
                m.remove(&i);
            }
            (Value::Str(_), Some(0)) => {
                self.restore_var(base, None);
            }
            (Value::Str(_), Some(_)) => {
                return Err(ShellError::Builtin(format!(
                    "unset: {base}: not an array variable"
                )));
            }
            _ => {}
        }
        Ok(())
    }

    fn eval_index(&mut self, name: &str, sub: &str) -> R<i64> {
        if sub.trim().is_empty() {
            return Err(ShellError::BadSubscript(format!("{name}[{sub}]")));
        }
        arith::eval_str(self, sub).map_err(arith_error)
    }

    /// Assigns (or with `append`, appends) a scalar through references and attributes.
    pub(crate) fn assign_str(&mut self, name: &str, value: &str, append: bool) -> R<()> {
        // The common case in loops: a plain scalar (or a new variable) without attributes,
        // not a reference, an element or a special variable, is stored as it is.
        let plain = !append
            && !name.is_empty()
            && !name.contains('[')
            && !matches!(
                name,
                "RANDOM" | "SECONDS" | "BASH_ARGV0" | "POSIXLY_CORRECT"
            )
            && self.vars.get(name).is_none_or(|v| {
                matches!(v.value, Value::Str(_))
                    && !v.readonly
                    && !(v.attrs.nameref
                        || v.attrs.integer
                        || v.attrs.lower
                        || v.attrs.upper
                        || v.attrs.capcase)
            });
        if plain {
            return self.store_str(name, value);
        }
        let target = self.resolve_ref(name).into_owned();
        if target.is_empty() {
            return Err(circular(name));
        }
        if let Some((base, sub)) = split_subscript(&target) {
            let (base, sub) = (base.to_string(), sub.to_string());
            if self.is_assoc(&base) {
                return self.assign_key(&base, &sub, value, append);
            }
            let i = self.eval_index(&base, &sub)?;
            return self.assign_index(&base, i, value, append);
        }
        let special = !self.unspecial.contains(target.as_str());
        match target.as_str() {
            _ if !special => {}
            "RANDOM" if !append => {
                let seed = arith::eval_str(self, value).unwrap_or(0);
                self.seed_random(seed);
            }
            // Assigning BASH_ARGV0 sets `$0` too.
            "BASH_ARGV0" if !append => self.arg0 = value.to_string(),
            // Setting POSIXLY_CORRECT turns POSIX mode on, as `set -o posix` does.
            "POSIXLY_CORRECT" if !self.opts.posix => {
                self.opts.posix = true;
                self.posix_shopts(true);
            }
            "SECONDS" if !append => {
                let n = arith::eval_str(self, value).unwrap_or(0);
                self.seconds_base = (std::time::Instant::now(), n);
            }
            _ => {}
        }
        match self.vars.get(&target).map(|v| &v.value) {
            Some(Value::Array(_)) => return self.assign_index(&target, 0, value, append),
            Some(Value::Assoc(_)) => return self.assign_key(&target, "0", value, append),
            _ => {}
        }
        let attrs = self.attrs_of(&target);
        let old = if append {
            self.vars
                .get(&target)
                .filter(|v| !v.attrs.unset)
                .and_then(|v| v.value.as_str().map(str::to_string))
        } else {
            None
        };
        if self.vars.get(&target).is_some_and(|v| v.readonly) {
            return Err(ShellError::Readonly(target));
        }
        let v = self.apply_attrs(attrs, old, value, append)?;
        self.store_str(&target, &v)
    }

    /// Assigns element `index` of an indexed array (negative: from the end).
    pub(crate) fn assign_index(
        &mut self,
        name: &str,
        index: i64,
        value: &str,
        append: bool,
    ) -> R<()> {
        let target = self.resolve_ref(name).into_owned();
        if target.is_empty() {
            return Err(circular(name));
        }
        if self.is_assoc(&target) {
            return self.assign_key(&target, &index.to_string(), value, append);
        }
        let var = self.vars.get(&target);
        let idx = if index < 0 {
            let next = match var.map(|v| &v.value) {
                Some(Value::Array(m)) => super::next_index(m),
                Some(Value::Str(_)) if !var.is_some_and(|v| v.attrs.unset) => 1,
                _ => 0,
            };
            let i = next.wrapping_add(index);
            if i < 0 {
                return Err(ShellError::BadSubscript(format!("{target}[{index}]")));
            }
            i
        } else {
            index
        };
        if var.is_some_and(|v| v.readonly) {
            return Err(ShellError::Readonly(target));
        }
        let old = if append {
            match var.map(|v| &v.value) {
                Some(Value::Array(m)) => m.get(&idx).cloned(),
                Some(Value::Str(s)) if idx == 0 => Some(s.clone()),
                _ => None,
            }
        } else {
            None
        };
        let attrs = self.attrs_of(&target);
        let v = self.apply_attrs(attrs, old, value, append)?;
        self.store_elem(&target, idx, &v)
    }

    /// Assigns key `key` of an associative array.
    pub(crate) fn assign_key(&mut self, name: &str, key: &str, value: &str, append: bool) -> R<()> {
        let target = self.resolve_ref(name).into_owned();
        if target.is_empty() {
            return Err(circular(name));
        }
        if self.vars.get(&target).is_some_and(|v| v.readonly) {
            return Err(ShellError::Readonly(target));
        }
        let old = if append {
            match self.vars.get(&target).map(|v| &v.value) {
                Some(Value::Assoc(m)) => m.get(key).cloned(),
                _ => None,
            }
        } else {
            None
        };
        let attrs = self.attrs_of(&target);
        let v = self.apply_attrs(attrs, old, value, append)?;
        self.store_key(&target, key, &v)
    }

    /// The value an assignment stores once `-i`, `-l` and `-u` are applied; `append`
    /// adds (`-i`) or concatenates to `old`.
    pub(crate) fn apply_attrs(
        &mut self,
        attrs: Attrs,
        old: Option<String>,
        value: &str,
        append: bool,
    ) -> R<String> {
        if attrs.integer {
            let rhs = arith::eval_str(self, value).map_err(assign_error)?;
            let n = match old {
                Some(o) if append => {
                    let o = arith::eval_str(self, &o).map_err(assign_error)?;
                    o.wrapping_add(rhs)
                }
                _ => rhs,
            };
            return Ok(n.to_string());
        }
        let mut v = match old {
            Some(o) if append => format!("{o}{value}"),
            _ => value.to_string(),
        };
        let ascii = self.byte_locale();
        if attrs.upper && !attrs.lower {
            v = crate::shell::pattern::upper_str(&v, ascii);
        } else if attrs.lower && !attrs.upper {
            v = crate::shell::pattern::lower_str(&v, ascii);
        } else if attrs.capcase {
            let lower = crate::shell::pattern::lower_str(&v, ascii);
            let mut chars = lower.chars();
            v = match chars.next() {
                Some(c) => crate::shell::pattern::upper_str(&c.to_string(), ascii) + chars.as_str(),
                None => lower,
            };
        }
        Ok(v)
    }

    /// Applies the attributes of variable `name` to each element of a whole value.
    pub(crate) fn apply_attrs_value(&mut self, name: &str, value: Value) -> R<Value> {
        let attrs = self.attrs_of(name);
        if !(attrs.integer || attrs.lower || attrs.upper || attrs.capcase) {
            return Ok(value);
        }
        Ok(match value {
            Value::Str(s) => Value::Str(self.apply_attrs(attrs, None, &s, false)?),
            Value::Array(m) => {
                let mut out = BTreeMap::new();
                for (k, v) in m {
                    out.insert(k, self.apply_attrs(attrs, None, &v, false)?);
                }
                Value::Array(out)
            }
            Value::Assoc(m) => {
                let mut out = AssocArray::new();
                for (k, v) in m.iter() {
                    out.insert(k.clone(), self.apply_attrs(attrs, None, v, false)?);
                }
                Value::Assoc(out)
            }
        })
    }

    /// Declares `name` with the given attributes and no value, unless it exists.
    pub(crate) fn declare_unset(&mut self, name: &str, value: Value) {
        if self.vars.contains_key(name) {
            return;
        }
        let exported = self.opts.allexport;
        self.vars.insert(
            name.to_string(),
            Var {
                value,
                exported,
                readonly: false,
                attrs: Attrs {
                    unset: true,
                    ..Attrs::default()
                },
            },
        );
    }

    /// The variables bash sets at start-up that scripts look at.
    pub(crate) fn init_special_vars(&mut self) {
        let v = BASH_VERSINFO;
        let plain = |s: &str| Var {
            value: Value::Str(s.to_string()),
            exported: false,
            readonly: false,
            attrs: Attrs::default(),
        };
        let version = format!("{}.{}.{}({})-{}", v[0], v[1], v[2], v[3], v[4]);
        // A shell started by a shell is one level deeper.
        if let Some(v) = self.vars.get_mut("SHLVL")
            && let Value::Str(s) = &mut v.value
        {
            *s = (s.trim().parse::<i64>().unwrap_or(0) + 1).to_string();
        }
        for k in ["SHLVL", "OLDPWD"] {
            let value = if k == "SHLVL" { "1" } else { "" };
            self.vars.entry(k.to_string()).or_insert_with(|| Var {
                value: Value::Str(value.to_string()),
                exported: true,
                readonly: false,
                attrs: Attrs {
                    unset: k == "OLDPWD",
                    ..Attrs::default()
                },
            });
        }
        for (k, val) in [
            ("BASH_VERSION", version.as_str()),
            ("BASH", "/bin/bash"),
            ("OSTYPE", "linux-gnu"),
            ("MACHTYPE", v[5]),
            ("HOSTTYPE", "x86_64"),
            ("OPTERR", "1"),
            ("PS4", "+ "),
            ("HOSTNAME", "forkbox"),
            // `$_` starts as the name the shell was started by.
            ("_", "bash"),
        ] {
            self.vars.entry(k.to_string()).or_insert_with(|| plain(val));
        }
        // bash starts every shell with OPTIND=1 as an integer (an inherited value is
        // dropped, its export kept).
        let exported = self.vars.get("OPTIND").is_some_and(|v| v.exported);
        self.vars.insert(
            "OPTIND".to_string(),
            Var {
                exported,
                attrs: Attrs {
                    integer: true,
                    ..Attrs::default()
                },
                ..plain("1")
            },
        );
        let versinfo: BTreeMap<i64, String> = (0..).zip(v.iter().map(|s| s.to_string())).collect();
        let ppid = self.pid.saturating_sub(1).max(1).to_string();
        for (k, val) in [
            ("BASH_VERSINFO", Value::Array(versinfo)),
            ("UID", Value::Str(SESSION_UID.into())),
            ("EUID", Value::Str(SESSION_UID.into())),
            ("PPID", Value::Str(ppid)),
        ] {
            let integer = k != "BASH_VERSINFO";
            self.vars.insert(
                k.to_string(),
                Var {
                    value: val,
                    exported: false,
                    readonly: true,
                    attrs: Attrs {
                        integer,
                        ..Attrs::default()
                    },
                },
            );
        }
        // `$SHELLOPTS` and `$BASHOPTS` are readonly; their values follow the options (see
        // `dynamic_var` and `refresh_option_vars`).
        for k in ["SHELLOPTS", "BASHOPTS"] {
            // Given in the environment, they turn their options on, as in bash.
            let inherited = self
                .vars
                .get(k)
                .filter(|v| v.exported)
                .and_then(|v| match &v.value {
                    Value::Str(s) => Some(s.clone()),
                    _ => None,
                });
            for opt in inherited.iter().flat_map(|s| s.split(':')) {
                if k == "SHELLOPTS" {
                    let _ = self.set_option_name(opt, true);
                } else {
                    self.shopts.set(opt, true);
                }
            }
            self.vars.insert(
                k.to_string(),
                Var {
                    readonly: true,
                    exported: inherited.is_some(),
                    ..plain("")
                },
            );
        }
        self.refresh_option_vars();
        self.vars
            .entry("GROUPS".to_string())
            .or_insert_with(|| Var {
                value: Value::Array(BTreeMap::from([(0, SESSION_UID.to_string())])),
                ..plain("")
            });
    }

    /// Brings the stored values of `$SHELLOPTS` and `$BASHOPTS` up to the options, for
    /// the builtins that list variables from the table (`declare -p`, `set`).
    pub(crate) fn refresh_option_vars(&mut self) {
        for (k, value) in [
            ("SHELLOPTS", self.shellopts()),
            ("BASHOPTS", self.shopts.names_on()),
        ] {
            if let Some(v) = self.vars.get_mut(k)
                && let Value::Str(s) = &mut v.value
            {
                *s = value;
            }
        }
    }

    /// The value of a variable bash computes when it is read, if `name` is one.
    pub(crate) fn dynamic_var(&mut self, name: &str) -> Option<String> {
        if self.unspecial.contains(name) {
            return None;
        }
        let now = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
        };
        Some(match name {
            "RANDOM" => self.next_random().to_string(),
            "SECONDS" => {
                let (at, n) = self.seconds_base;
                let since = i64::try_from(at.elapsed().as_secs()).unwrap_or(i64::MAX);
                n.wrapping_add(since).to_string()
            }
            "SRANDOM" => rand::random::<u32>().to_string(),
            // No history is kept without a terminal: bash shows 0 there.
            "HISTCMD" if !self.interactive => "0".to_string(),
            "EPOCHSECONDS" => now().as_secs().to_string(),
            "EPOCHREALTIME" => {
                let t = now();
                format!("{}.{:06}", t.as_secs(), t.subsec_micros())
            }
            "BASHPID" => self.bashpid.to_string(),
            "BASH_SUBSHELL" => self.subshell_level.to_string(),
            "LINENO" if !self.lines.lineno_unset => self.lines.lineno.to_string(),
            "BASH_COMMAND" => self.bash_command.clone(),
            "SHELLOPTS" => self.shellopts(),
            "BASHOPTS" => self.shopts.names_on(),
            _ => return None,
        })
    }
}

/// The variables bash computes when read that `unset` turns into ordinary ones.
pub(crate) const DYNAMIC_VARS: [&str; 9] = [
    "RANDOM",
    "SRANDOM",
    "HISTCMD",
    "SECONDS",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "BASHPID",
    "BASH_SUBSHELL",
    "BASH_COMMAND",
];

/// The variables bash keeps readonly and computes from the options when read.
pub(crate) fn option_list_var(name: &str) -> bool {
    matches!(name, "SHELLOPTS" | "BASHOPTS")
}

/// The attribute letters `declare -p` shows, in bash's order.
pub(crate) fn attr_letters(v: &Var) -> String {
    let mut f = String::new();
    match v.value {
        Value::Array(_) => f.push('a'),
        Value::Assoc(_) => f.push('A'),
        Value::Str(_) => {}
    }
    let a = v.attrs;
    for (on, c) in [
        (a.integer, 'i'),
        (a.nameref, 'n'),
        (v.readonly, 'r'),
        (a.trace, 't'),
        (v.exported, 'x'),
        (a.lower, 'l'),
        (a.upper, 'u'),
        (a.capcase, 'c'),
    ] {
        if on {
            f.push(c);
        }
    }
    f
}

/// Whether `s` needs `$'…'` quoting: it holds a control character, or (`bytes`, a locale
/// that is not UTF-8) a character past ASCII, which does not print there.
fn needs_ansi_c(s: &str, bytes: bool) -> bool {
    s.chars()
        .any(|c| c.is_control() || (bytes && !c.is_ascii()) || bytetext::char_byte(c).is_some())
}

/// `$'…'` quoting, as bash's `ansic_quote`.
pub(crate) fn ansi_c_quote(s: &str, bytes: bool) -> String {
    let mut out = String::from("$'");
    for c in s.chars() {
        match c {
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x1b' => out.push_str("\\E"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            // A byte that is not UTF-8: its number (the low byte of its character).
            c if bytetext::char_byte(c).is_some() => {
                out.push_str(&format!("\\{:03o}", c as u32 & 0xff));
            }
            c if c.is_control() || (bytes && !c.is_ascii()) => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\{b:03o}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A value as `declare -p` shows it: `"…"` with `"` `\` `$` `` ` `` escaped, or `$'…'`.
pub(crate) fn decl_quote(s: &str, bytes: bool) -> String {
    if needs_ansi_c(s, bytes) {
        return ansi_c_quote(s, bytes);
    }
    let mut out = String::from("\"");
    for c in s.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `${x@Q}`: `'…'`, or `$'…'` when the value holds control characters.
pub(crate) fn single_quote(s: &str, bytes: bool) -> String {
    if needs_ansi_c(s, bytes) {
        return ansi_c_quote(s, bytes);
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Whether bash quotes an associative array's key in `declare -p` (its `sh_contains_shell_metas`).
fn has_shell_metas(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().enumerate().any(|(i, &c)| match c {
        b' ' | b'\t' | b'\n' | b'\'' | b'"' | b'\\' | b'|' | b'&' | b';' | b'(' | b')' | b'<'
        | b'>' | b'!' | b'{' | b'}' | b'*' | b'[' | b'?' | b']' | b'^' | b'$' | b'`' => true,
        b'~' => i == 0 || matches!(b[i - 1], b'=' | b':'),
        b'#' => i == 0,
        _ => false,
    })
}

/// A key of an associative array as `declare -p` shows it.
pub(crate) fn key_quote(k: &str, bytes: bool) -> String {
    if needs_ansi_c(k, bytes) {
        ansi_c_quote(k, bytes)
    } else if has_shell_metas(k) || k == "@" {
        // `[@]` alone would mean every element.
        decl_quote(k, bytes)
    } else {
        k.to_string()
    }
}

/// The `(…)` of an array as `declare -p` shows it.
pub(crate) fn array_body(value: &Value, bytes: bool) -> Option<String> {
    match value {
        Value::Array(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("[{k}]={}", decl_quote(v, bytes)))
                .collect();
            Some(format!("({})", items.join(" ")))
        }
        Value::Assoc(m) => {
            let mut s = String::from("(");
            for (k, v) in m.iter() {
                s.push_str(&format!(
                    "[{}]={} ",
                    key_quote(k, bytes),
                    decl_quote(v, bytes)
                ));
            }
            s.push(')');
            Some(s)
        }
        Value::Str(_) => None,
    }
}

/// A value as `set` shows it: as is when nothing in it is special to the shell.
pub(crate) fn reusable_quote(s: &str, bytes: bool) -> String {
    if needs_ansi_c(s, bytes) {
        ansi_c_quote(s, bytes)
    } else if s.is_empty() {
        "''".to_string()
    } else if has_shell_metas(s) || s.contains('=') && s.starts_with('~') {
        format!("'{}'", s.replace('\'', "'\\''"))
    } else {
        s.to_string()
    }
}

/// One line of `set` (and `declare` without arguments): `name=value`.
pub(crate) fn set_line(name: &str, v: &Var, bytes: bool) -> String {
    match &v.value {
        // bash leaves an empty value bare (`v=`).
        Value::Str(s) if s.is_empty() => format!("{name}=\n"),
        Value::Str(s) => format!("{name}={}\n", reusable_quote(s, bytes)),
        other => format!("{name}={}\n", array_body(other, bytes).unwrap_or_default()),
    }
}

/// One line of `declare -p`: `declare -FLAGS name=value`.
/// `bytes`: the locale is not UTF-8 (see [`needs_ansi_c`]).
pub(crate) fn declare_line(name: &str, v: &Var, bytes: bool) -> String {
    let flags = attr_letters(v);
    let flags = if flags.is_empty() {
        "-".to_string()
    } else {
        flags
    };
    if v.attrs.unset {
        return format!("declare -{flags} {name}\n");
    }
    match &v.value {
        Value::Str(s) => format!("declare -{flags} {name}={}\n", decl_quote(s, bytes)),
        other => format!(
            "declare -{flags} {name}={}\n",
            array_body(other, bytes).unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_like_bash() {
        assert_eq!(
            decl_quote("a \"b\" $c `d` \\e", false),
            r#""a \"b\" \$c \`d\` \\e""#
        );
        assert_eq!(decl_quote("a\nb", false), "$'a\\nb'");
        assert_eq!(single_quote("it's", false), r"'it'\''s'");
        assert_eq!(single_quote("\x01", false), r"$'\001'");
        assert_eq!(key_quote("a b", false), "\"a b\"");
        assert_eq!(key_quote("a=b", false), "a=b");
        assert_eq!(key_quote("~", false), "\"~\"");
        assert_eq!(key_quote("x$y", false), "\"x\\$y\"");
    }

    #[test]
    fn subscripts_split() {
        assert_eq!(split_subscript("a[1]"), Some(("a", "1")));
        assert_eq!(split_subscript("a[x y]"), Some(("a", "x y")));
        assert_eq!(split_subscript("a"), None);
    }
}

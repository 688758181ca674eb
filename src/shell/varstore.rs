//! Variable storage of the shell: what variables cost the session's memory budget,
//! reading and writing them (through name references and attributes, or raw), local
//! frames, unsetting, and the environment exported to commands and nested shells.

use super::*;

/// Memory one variable costs besides its name and value: its map entry and flags.
pub(crate) const VAR_OVERHEAD: usize = 64;

/// Memory one array element costs besides its value.
pub(crate) const ELEM_OVERHEAD: usize = 48;

/// Bytes variable `name` holding `v` costs.
pub(crate) fn var_size(name: &str, v: &Var) -> usize {
    name.len() + VAR_OVERHEAD + value_size(&v.value)
}

pub(crate) fn value_size(v: &Value) -> usize {
    match v {
        Value::Str(s) => s.len(),
        Value::Array(a) => a.values().map(|e| e.len() + ELEM_OVERHEAD).sum(),
        Value::Assoc(a) => a
            .iter()
            .map(|(k, e)| k.len() + e.len() + ELEM_OVERHEAD)
            .sum(),
    }
}

/// The saved variables of one function call's `local`s, or of the temporary bindings a
/// function is called with (`x=1 f`), which bash keeps in a scope of their own between
/// the caller's and the function's: `unset x` in the function removes the binding and
/// shows the caller's `x`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Frame {
    pub saved: Vec<(String, Option<Var>)>,
    /// A scope of temporary bindings.
    pub temp: bool,
    /// Temporary bindings the function exported or made readonly: bash keeps their
    /// values (and the attribute) after the call.
    pub propagate: Vec<String>,
    /// Variables bash computes (`RANDOM`, `SECONDS`) made local here: plain variables
    /// until the function returns (`local RANDOM=3` reads 3).
    pub plain: Vec<&'static str>,
}

impl std::ops::Deref for Frame {
    type Target = Vec<(String, Option<Var>)>;
    fn deref(&self) -> &Self::Target {
        &self.saved
    }
}

impl std::ops::DerefMut for Frame {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.saved
    }
}

/// The charge of a shell's variables; cloning it charges the copy.
#[derive(Debug)]
pub(crate) struct VarsCharge(pub(crate) forkbox_commands::Charge);

impl Clone for VarsCharge {
    fn clone(&self) -> Self {
        VarsCharge(self.0.duplicate())
    }
}

impl Shell {
    /// The scalar value of a variable, including the dynamic ones (`RANDOM`, ...).
    /// Follows a name reference (`declare -n`); an element target (`a[1]`) is read as one.
    pub(crate) fn get_str(&self, name: &str) -> Option<String> {
        let target = self.resolve_ref(name);
        if let Some((base, sub)) = vars::split_subscript(&target) {
            return self.get_subscript(base, sub);
        }
        self.vars
            .get(target.as_ref())
            .filter(|v| !v.attrs.unset)
            .and_then(|v| v.value.as_str().map(str::to_string))
    }

    /// `$RANDOM`: bash's own generator, so a seeded sequence (`RANDOM=42`) gives bash's
    /// numbers. `random_state` holds the generator's 32-bit seed in its low half and the
    /// last number given in its high half (bash never gives the same number twice in a
    /// row).
    pub(crate) fn next_random(&mut self) -> u32 {
        let last = (self.random_state >> 32) as u32;
        let mut seed = self.random_state as u32;
        let value = loop {
            seed = park_miller(seed);
            let v = ((seed >> 16) ^ (seed & 0xffff)) & 0x7fff;
            if v != last {
                break v;
            }
        };
        self.random_state = (u64::from(value) << 32) | u64::from(seed);
        value
    }

    /// Seeds `$RANDOM` as `RANDOM=seed` does (bash keeps the seed's low 32 bits).
    pub(crate) fn seed_random(&mut self, seed: i64) {
        self.random_state = u64::from(seed as u32);
    }

    /// Counts every variable's cost afresh (after changes made without accounting).
    pub(crate) fn recount_vars(&mut self) {
        let total = self.vars.iter().map(|(k, v)| var_size(k, v)).sum();
        self.vars_mem.0.force(total);
    }

    /// Accounts variable `name` going from `old` to `new` bytes; fails, changing nothing,
    /// when it would grow past the session's memory budget.
    pub(crate) fn charge_var(
        &mut self,
        name: &str,
        old: usize,
        new: usize,
    ) -> Result<(), ShellError> {
        let total = self.vars_mem.0.bytes().saturating_sub(old) + new;
        if new > old {
            self.vars_mem
                .0
                .resize(total)
                .map_err(|source| ShellError::OutOfMemory {
                    what: name.to_string(),
                    source,
                })
        } else {
            self.vars_mem.0.force(total);
            Ok(())
        }
    }

    /// What variable `name` costs now (0 when unset).
    pub(crate) fn var_cost(&self, name: &str) -> usize {
        self.vars.get(name).map_or(0, |v| var_size(name, v))
    }

    /// Puts back a saved variable (or removes it), accounting the change.
    pub(crate) fn restore_var(&mut self, name: String, saved: Option<Var>) {
        let old = self.var_cost(&name);
        let new = saved.as_ref().map_or(0, |v| var_size(&name, v));
        if name == "GLOBIGNORE" {
            // bash's `setup_glob_ignore`: patterns turn `dotglob` on, no variable off.
            match saved.as_ref().filter(|v| !v.attrs.unset).map(|v| &v.value) {
                Some(Value::Str(s)) if !s.is_empty() => {
                    self.shopts.set("dotglob", true);
                }
                None => {
                    self.shopts.set("dotglob", false);
                }
                _ => {}
            }
        }
        match saved {
            Some(v) => {
                self.vars.insert(name, v);
            }
            None => {
                self.vars.remove(&name);
            }
        }
        let total = self.vars_mem.0.bytes().saturating_sub(old) + new;
        self.vars_mem.0.force(total);
    }

    /// Assigns a scalar, keeping the export flag; fails on a readonly variable. Follows
    /// name references and applies the variable's attributes (`-i`, `-l`, `-u`); an array
    /// gets the value as its element 0.
    pub(crate) fn set_var(&mut self, name: &str, value: &str) -> Result<(), ShellError> {
        self.assign_str(name, value, false)
    }

    /// Stores a scalar as it is (after attributes and references were applied).
    pub(crate) fn store_str(&mut self, name: &str, value: &str) -> Result<(), ShellError> {
        // Bytes joined to bytes (`x+=$'\xa9'`) may spell a character again.
        let joined;
        let value = if forkbox_commands::bytetext::may_have_bytes(value) {
            joined = forkbox_commands::bytetext::normalise(value.to_string());
            joined.as_str()
        } else {
            value
        };
        if value.len() > MAX_VALUE {
            return Err(too_large(name));
        }
        if name == "PATH" {
            // bash forgets the paths it found when PATH changes.
            self.hashed.clear();
        }
        if vars::option_list_var(name) {
            return Err(ShellError::Readonly(name.to_string()));
        }
        if name == "GLOBIGNORE" && !value.is_empty() {
            // Setting GLOBIGNORE turns `dotglob` on (unsetting it turns it off again).
            self.shopts.set("dotglob", true);
        }
        let old = match self.vars.get(name) {
            Some(v) if v.readonly => return Err(ShellError::Readonly(name.to_string())),
            Some(v) => var_size(name, v),
            None => 0,
        };
        self.charge_var(name, old, name.len() + VAR_OVERHEAD + value.len())?;
        match self.vars.get_mut(name) {
            Some(v) if v.readonly => Err(ShellError::Readonly(name.to_string())),
            Some(v) => {
                match &mut v.value {
                    // Reuses the old value's buffer (a counter rewritten in a loop), unless
                    // it is much larger than the budget counts for the new value.
                    Value::Str(s) if s.capacity() <= 2 * value.len().max(32) => {
                        s.clear();
                        s.push_str(value);
                    }
                    other => *other = Value::Str(value.to_string()),
                }
                v.attrs.unset = false;
                Ok(())
            }
            None => {
                self.vars.insert(
                    name.to_string(),
                    Var {
                        value: Value::Str(value.to_string()),
                        exported: self.opts_allexport(),
                        readonly: false,
                        attrs: Attrs::default(),
                    },
                );
                Ok(())
            }
        }
    }

    pub(crate) fn opts_allexport(&self) -> bool {
        self.opts.allexport
    }

    /// Replaces a variable's whole value (`a=(…)`), following name references and
    /// applying its attributes to each element.
    pub(crate) fn set_value(&mut self, name: &str, value: Value) -> Result<(), ShellError> {
        let name = self.resolve_ref(name).into_owned();
        let value = self.apply_attrs_value(&name, value)?;
        self.store_value(&name, value)
    }

    /// Stores a whole value as it is.
    pub(crate) fn store_value(&mut self, name: &str, value: Value) -> Result<(), ShellError> {
        check_value_size(name, &value)?;
        if self.vars.get(name).is_some_and(|v| v.readonly) {
            return Err(ShellError::Readonly(name.to_string()));
        }
        let old = self.var_cost(name);
        self.charge_var(name, old, name.len() + VAR_OVERHEAD + value_size(&value))?;
        match self.vars.get_mut(name) {
            Some(v) if v.readonly => Err(ShellError::Readonly(name.to_string())),
            Some(v) => {
                v.value = value;
                v.attrs.unset = false;
                Ok(())
            }
            None => {
                self.vars.insert(
                    name.to_string(),
                    Var {
                        value,
                        exported: self.opts.allexport,
                        readonly: false,
                        attrs: Attrs::default(),
                    },
                );
                Ok(())
            }
        }
    }

    /// Sets element `index` of an indexed array (a negative index counts from the end),
    /// following name references and applying the variable's attributes.
    pub(crate) fn set_elem(
        &mut self,
        name: &str,
        index: i64,
        value: &str,
    ) -> Result<(), ShellError> {
        self.assign_index(name, index, value, false)
    }

    /// Stores element `index` as it is; `index` is already made non-negative.
    pub(crate) fn store_elem(
        &mut self,
        name: &str,
        index: i64,
        value: &str,
    ) -> Result<(), ShellError> {
        if value.len() > MAX_VALUE {
            return Err(too_large(name));
        }
        if self.vars.get(name).is_some_and(|v| matches!(&v.value, Value::Array(a) if a.len() >= MAX_ARRAY_LEN && !a.contains_key(&index))) {
            return Err(ShellError::Limit(format!("{name}: more than {MAX_ARRAY_LEN} array elements")));
        }
        if self.vars.get(name).is_some_and(|v| v.readonly) {
            return Err(ShellError::Readonly(name.to_string()));
        }
        // Over-counted when an element is replaced; subshells recount exactly.
        let old = self.var_cost(name);
        let grown = old.max(name.len() + VAR_OVERHEAD) + value.len() + ELEM_OVERHEAD;
        self.charge_var(name, old, grown)?;
        let allexport = self.opts.allexport;
        let var = self.vars.entry(name.to_string()).or_insert(Var {
            value: Value::Array(BTreeMap::new()),
            exported: allexport,
            readonly: false,
            attrs: Attrs::default(),
        });
        let was_unset = std::mem::replace(&mut var.attrs.unset, false);
        if let Value::Str(s) = &var.value {
            // A scalar becomes element 0, unless it is only declared (`local x`).
            let mut m = BTreeMap::new();
            if !was_unset {
                m.insert(0, s.clone());
            }
            var.value = Value::Array(m);
        }
        match &mut var.value {
            Value::Array(m) => {
                m.insert(index, value.to_string());
            }
            Value::Assoc(m) => m.insert(index.to_string(), value.to_string()),
            Value::Str(_) => {}
        }
        Ok(())
    }

    /// Stores key `key` of an associative array as it is.
    pub(crate) fn store_key(
        &mut self,
        name: &str,
        key: &str,
        value: &str,
    ) -> Result<(), ShellError> {
        if value.len() > MAX_VALUE || key.len() > MAX_VALUE {
            return Err(too_large(name));
        }
        if self.vars.get(name).is_some_and(|v| matches!(&v.value, Value::Assoc(a) if a.len() >= MAX_ARRAY_LEN && !a.contains_key(key))) {
            return Err(ShellError::Limit(format!("{name}: more than {MAX_ARRAY_LEN} array elements")));
        }
        if self.vars.get(name).is_some_and(|v| v.readonly) {
            return Err(ShellError::Readonly(name.to_string()));
        }
        let old = self.var_cost(name);
        let grown = old.max(name.len() + VAR_OVERHEAD) + key.len() + value.len() + ELEM_OVERHEAD;
        self.charge_var(name, old, grown)?;
        let allexport = self.opts.allexport;
        let var = self.vars.entry(name.to_string()).or_insert(Var {
            value: Value::Assoc(AssocArray::new()),
            exported: allexport,
            readonly: false,
            attrs: Attrs::default(),
        });
        var.attrs.unset = false;
        match &mut var.value {
            Value::Assoc(m) => m.insert(key.to_string(), value.to_string()),
            other => {
                let mut m = AssocArray::new();
                if let Some(s) = other.as_str() {
                    m.insert("0".to_string(), s.to_string());
                }
                m.insert(key.to_string(), value.to_string());
                *other = Value::Assoc(m);
            }
        }
        Ok(())
    }

    pub(crate) fn set_plain(&mut self, name: &str, value: &str) {
        let _ = self.set_var(name, value);
    }

    pub(crate) fn set_exported(&mut self, name: &str, value: &str) {
        if self.set_var(name, value).is_ok()
            && let Some(v) = self.vars.get_mut(name)
        {
            v.exported = true;
        }
    }

    /// Unsets a variable (what a name reference names, not the reference itself).
    pub(crate) fn unset_var(&mut self, name: &str) -> Result<(), ShellError> {
        let target = self.resolve_ref(name).into_owned();
        if let Some((base, sub)) = vars::split_subscript(&target) {
            let (base, sub) = (base.to_string(), sub.to_string());
            return self.unset_subscript(&base, &sub);
        }
        self.unset_plain(&target)
    }

    /// Unsets exactly `name`, even a name reference. A variable local to a function that
    /// called the running one is taken back to its value outside that function, as bash's
    /// dynamic scoping does; one local to the running function just loses its value.
    pub(crate) fn unset_plain(&mut self, name: &str) -> Result<(), ShellError> {
        if self.vars.get(name).is_some_and(|v| v.readonly) || vars::option_list_var(name) {
            return Err(ShellError::Readonly(name.to_string()));
        }
        if let Some(&dynamic) = vars::DYNAMIC_VARS.iter().find(|&&d| d == name) {
            self.unspecial.insert(dynamic);
        }
        if name == "LINENO" {
            self.lines.lineno_unset = true;
        }
        // Unsetting POSIXLY_CORRECT leaves POSIX mode, as `set +o posix` does.
        if name == "POSIXLY_CORRECT" && self.opts.posix {
            self.opts.posix = false;
            self.posix_shopts(false);
        }
        let n = self.local_frames.len();
        // It stays local, declared without a value or attributes (`declare -- x`).
        let placeholder = Var {
            value: Value::Str(String::new()),
            exported: false,
            readonly: false,
            attrs: Attrs {
                unset: true,
                ..Attrs::default()
            },
        };
        if let Some(i) = self
            .local_frames
            .iter()
            .rposition(|f| f.iter().any(|(v, _)| v == name))
            && i + 1 < n
            && !self.shopts.on("localvar_unset")
        {
            let frame = &mut self.local_frames[i];
            if let Some(pos) = frame.iter().position(|(v, _)| v == name) {
                let (_, saved) = frame.remove(pos);
                self.restore_var(name.to_string(), saved);
                return Ok(());
            }
        }
        let local_anywhere = self
            .local_frames
            .iter()
            .any(|f| !f.temp && f.iter().any(|(v, _)| v == name));
        if n > 0 && (self.is_local_here(name) || local_anywhere) {
            self.restore_var(name.to_string(), Some(placeholder));
            return Ok(());
        }
        self.restore_var(name.to_string(), None);
        Ok(())
    }

    /// While a local hides global `name`, puts the global in its place so that it can be
    /// set; [`Shell::leave_global`] puts both back. `None` when no local hides it.
    pub(crate) fn enter_global(&mut self, name: &str) -> Option<(usize, Option<Var>)> {
        let frame = self
            .local_frames
            .iter()
            .position(|f| f.iter().any(|(n, _)| n == name))?;
        let slot = self.local_frames[frame]
            .iter()
            .position(|(n, _)| n == name)?;
        let global = self.local_frames[frame][slot].1.take();
        let live = self.vars.get(name).cloned();
        self.restore_var(name.to_string(), global);
        Some((frame, live))
    }

    /// Ends [`Shell::enter_global`]: the global's new value is saved again under the
    /// local, which comes back.
    pub(crate) fn leave_global(&mut self, name: &str, (frame, live): (usize, Option<Var>)) {
        let global = self.vars.get(name).cloned();
        if let Some(slot) = self
            .local_frames
            .get_mut(frame)
            .and_then(|f| f.iter_mut().find(|(n, _)| n == name))
        {
            slot.1 = global;
        }
        self.restore_var(name.to_string(), live);
    }

    /// Makes `name` local to the running function (saving its outer value).
    pub(crate) fn make_local(&mut self, name: &str) {
        let old = self.vars.get(name).cloned();
        if let Some(frame) = self.local_frames.last_mut() {
            if frame.iter().any(|(n, _)| n == name) {
                return;
            }
            frame.push((name.to_string(), old));
            if let Some(&dynamic) = vars::DYNAMIC_VARS.iter().find(|&&d| d == name)
                && self.unspecial.insert(dynamic)
            {
                frame.plain.push(dynamic);
            }
        }
    }

    /// Whether `name` is already local to the running function.
    pub(crate) fn is_local_here(&self, name: &str) -> bool {
        self.local_frames
            .last()
            .is_some_and(|f| f.iter().any(|(n, _)| n == name))
    }

    pub(crate) fn pop_local_frame(&mut self) {
        if let Some(frame) = self.local_frames.pop() {
            for dynamic in &frame.plain {
                self.unspecial.remove(dynamic);
            }
            for (name, old) in frame.saved.into_iter().rev() {
                if !frame.propagate.contains(&name) {
                    self.restore_var(name, old);
                }
            }
        }
    }

    /// Binds the temporary assignments of a function call (`x=1 f`) in a scope of their
    /// own, exported; [`Shell::pop_local_frame`] ends it.
    pub(crate) fn push_temp_frame(&mut self, env: &[(String, String)]) {
        let mut frame = Frame {
            temp: true,
            ..Frame::default()
        };
        for (k, v) in env {
            if !frame.iter().any(|(n, _)| n == k) {
                frame.push((k.clone(), self.vars.get(k).cloned()));
            }
            self.set_exported(k, v);
        }
        self.local_frames.push(frame);
    }

    /// Whether `name` is a temporary binding of a function call being run (no `local`
    /// hides it).
    pub(crate) fn is_temp_binding(&self, name: &str) -> bool {
        self.local_frames
            .iter()
            .rev()
            .find(|f| f.iter().any(|(n, _)| n == name))
            .is_some_and(|f| f.temp)
    }

    /// `export NAME` or `readonly NAME` of a function's temporary binding: the value
    /// outlives the call (bash propagates it to the caller's scope).
    pub(crate) fn propagate_temp(&mut self, name: &str) {
        if !self.is_temp_binding(name) {
            return;
        }
        if let Some(frame) = self
            .local_frames
            .iter_mut()
            .rev()
            .find(|f| f.iter().any(|(n, _)| n == name))
            && !frame.propagate.iter().any(|n| n == name)
        {
            frame.propagate.push(name.to_string());
        }
    }

    /// Drops the export attribute of every variable and function (`exec -c`: the command
    /// gets an empty environment).
    pub(crate) fn unexport_all(&mut self) {
        for v in self.vars.values_mut() {
            v.exported = false;
        }
        for frame in &mut self.local_frames {
            for (_, v) in frame.iter_mut() {
                if let Some(v) = v {
                    v.exported = false;
                }
            }
        }
        self.exported_functions.clear();
    }

    /// The environment a command gets: exported variables plus `extra` assignments.
    pub(crate) fn exported_env(&self, extra: &[(String, String)]) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = self
            .vars
            .iter()
            .filter(|(_, v)| v.exported && !v.attrs.unset)
            .filter_map(|(k, v)| match &v.value {
                Value::Str(s) => Some((k.clone(), s.clone())),
                _ => None,
            })
            .collect();
        // A local that is not exported, or declared without a value, lets the exported
        // variable it hides through to commands: bash's environment holds, for each
        // name, the innermost exported variable that has a value.
        for frame in self.local_frames.iter().rev() {
            for (k, v) in frame.iter() {
                if let Some(v) = v
                    && v.exported
                    && !v.attrs.unset
                    && let Value::Str(s) = &v.value
                {
                    env.entry(k.clone()).or_insert_with(|| s.clone());
                }
            }
        }
        for (k, v) in extra {
            env.insert(k.clone(), v.clone());
        }
        for name in &self.exported_functions {
            if let Some(def) = self.functions.get(name) {
                // The body as `declare -f` prints it (which reads back the same,
                // here-documents included), behind bash's `() `.
                let text = crate::shell::printer::function(name, def);
                let body = text.strip_prefix(&format!("{name} () \n")).unwrap_or(&text);
                env.insert(
                    format!("BASH_FUNC_{name}%%"),
                    format!("() {}", env_body(body)),
                );
            }
        }
        env
    }

    /// Defines function `name` from an environment entry `() BODY` (see `export -f`).
    pub(crate) fn import_function(&mut self, name: &str, value: &str) {
        let Some(body) = value.strip_prefix("()") else {
            return;
        };
        // bash imports any name a function may have outside POSIX mode (`my-fn`, `a:b`),
        // but never one that reads as a path.
        if name.is_empty()
            || name.contains(['/', '$', '`', '='])
            || (self.opts.posix && !builtins::is_name(name))
        {
            return;
        }
        let Ok(program) = parse_program(&format!("{name} () {body}")) else {
            return;
        };
        let def = program
            .complete_commands
            .first()
            .and_then(|l| l.0.first())
            .map(|item| &item.0.first)
            .and_then(|p| p.seq.first());
        if let Some(ast::Command::Function(def)) = def {
            self.functions
                .insert(name.to_string(), Arc::new(def.clone()));
            self.exported_functions.insert(name.to_string());
        }
    }
}

/// One step of the Park–Miller "minimal standard" generator, x * 16807 mod (2^31 - 1),
/// computed as bash does (Schrage's method in 32-bit arithmetic; a zero seed is replaced).
fn park_miller(last: u32) -> u32 {
    let x = if last == 0 { 123_459_876 } else { last };
    let h = (x / 127_773) as i32;
    let l = (x - 127_773 * (h as u32)) as i32;
    let t = l.wrapping_mul(16_807).wrapping_sub(h.wrapping_mul(2_836));
    if t < 0 {
        t.wrapping_add(0x7fff_ffff) as u32
    } else {
        t as u32
    }
}

/// A function body as bash puts it in the environment: as `declare -f` prints it, but
/// without indentation (each line inside the braces starts with one space) and the first
/// line joined to the `{` (`{  echo a;\n echo b\n}`). A body with a here-document is
/// left as printed, so that its lines are not changed.
fn env_body(body: &str) -> String {
    let lines: Vec<&str> = body.lines().collect();
    let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
        return body.to_string();
    };
    if body.contains("<<") || lines.len() < 3 || !first.starts_with('{') {
        return body.to_string();
    }
    let mut out = first.to_string();
    for (i, line) in lines[1..lines.len() - 1].iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push(' ');
        out.push_str(line.trim_start());
    }
    out.push('\n');
    out.push_str(last);
    out
}

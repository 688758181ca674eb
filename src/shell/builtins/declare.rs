//! `declare`/`typeset [-aAfFgiIlnprtux] [name[=value] ...]`: set variable values and
//! attributes, or show them. `+x` turns attribute `x` off. Inside a function, names become
//! local unless `-g` is given; `local` is `declare` that must be in a function.

use crate::shell::exec::{Exec, Flow};
use crate::shell::redirect::Fds;
use crate::shell::vars::{declare_line, split_subscript};
use crate::shell::{Attrs, Shell, ShellError, Value, Var};

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let in_function = !sh.local_frames.is_empty();
    declare(sh, "declare", args, io, in_function).await
}

/// The options of one `declare` command: `on` turned on with `-`, `off` with `+`.
#[derive(Default, Clone, Copy)]
pub(crate) struct Flags {
    pub array: bool,
    pub assoc: bool,
    pub global: bool,
    pub print: bool,
    pub funcs: bool,
    pub func_names: bool,
    pub inherit: bool,
    /// `+a` or `+A`: bash refuses to turn an array back into a scalar.
    pub unarray: bool,
    pub on: Attr,
    pub off: Attr,
}

/// Attributes a flag sets or clears.
#[derive(Default, Clone, Copy, PartialEq)]
pub(crate) struct Attr {
    pub integer: bool,
    pub lower: bool,
    pub upper: bool,
    pub capcase: bool,
    pub nameref: bool,
    pub readonly: bool,
    pub trace: bool,
    pub export: bool,
}

impl Attr {
    fn any(&self) -> bool {
        *self != Attr::default()
    }

    /// Whether variable `v` has every attribute set here (for listing with flags).
    fn held_by(&self, v: &Var) -> bool {
        (!self.integer || v.attrs.integer)
            && (!self.lower || v.attrs.lower)
            && (!self.upper || v.attrs.upper)
            && (!self.capcase || v.attrs.capcase)
            && (!self.nameref || v.attrs.nameref)
            && (!self.readonly || v.readonly)
            && (!self.trace || v.attrs.trace)
            && (!self.export || v.exported)
    }
}

/// Parses leading option words; gives the flags and the index of the first name, or
/// the error message of an invalid option.
pub(crate) fn parse_flags(cmd: &str, args: &[String]) -> Result<(Flags, usize), String> {
    let mut f = Flags::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            return Ok((f, i + 1));
        }
        let Some(on) = (match a.chars().next() {
            Some('-') if a.len() > 1 => Some(true),
            Some('+') if a.len() > 1 => Some(false),
            _ => None,
        }) else {
            break;
        };
        for c in a[1..].chars() {
            let attr = if on { &mut f.on } else { &mut f.off };
            match c {
                'a' | 'A' if !on => f.unarray = true,
                'a' => f.array = true,
                'A' => f.assoc = true,
                'g' => f.global = true,
                'p' => f.print = true,
                // `+f` turns nothing on: the names stay variables.
                'f' => f.funcs |= on,
                'F' => f.func_names = true,
                'I' => f.inherit = true,
                'i' => attr.integer = true,
                'l' => attr.lower = true,
                'u' => attr.upper = true,
                'c' => attr.capcase = true,
                'n' => attr.nameref = true,
                'r' => attr.readonly = true,
                't' => attr.trace = true,
                'x' => attr.export = true,
                _ => {
                    return Err(format!(
                        "{cmd}: {}{c}: invalid option\n{cmd}: usage: {cmd} [-aAfFgiIlnrtux] [name[=value] ...] or {cmd} -p [-aAfFilnrtux] [name ...]",
                        if on { '-' } else { '+' }
                    ));
                }
            }
        }
        i += 1;
    }
    Ok((f, i))
}

/// Shared by `declare`, `typeset`, `local`, `readonly` and `export`.
pub(crate) async fn declare(
    sh: &mut Shell,
    cmd: &str,
    args: Vec<String>,
    io: &Fds,
    make_local: bool,
) -> Exec<i32> {
    sh.refresh_option_vars();
    let (flags, first) = match parse_flags(cmd, &args) {
        Ok(x) => x,
        Err(msg) => return super::fail(sh, io, msg, 2).await,
    };
    let names = &args[first..];
    if flags.funcs && !names.is_empty() && !flags.print && (flags.on.any() || flags.off.any()) {
        return function_attrs(sh, names, &flags);
    }
    if flags.funcs || flags.func_names {
        return print_functions(sh, names, &flags, io).await;
    }
    if flags.print || names.is_empty() {
        return print_vars(sh, cmd, names, &flags, make_local && !flags.global, io).await;
    }
    let mut status = 0;
    for arg in names {
        // `declare -g` in a function acts on the global variable even where a local of
        // the same name hides it (the local stays as it is).
        let hidden = if flags.global {
            let lhs = arg.split_once('=').map_or(arg.as_str(), |(l, _)| l);
            let lhs = lhs.strip_suffix('+').unwrap_or(lhs);
            let name = split_subscript(lhs).map_or(lhs, |(n, _)| n);
            sh.enter_global(name).map(|h| (name.to_string(), h))
        } else {
            None
        };
        let r = declare_one(sh, cmd, arg, &flags, make_local && !flags.global, io).await;
        if let Some((name, h)) = hidden {
            sh.leave_global(&name, h);
        }
        match r {
            Ok(()) => {}
            Err(Failure::Message(msg)) => {
                super::fail(sh, io, msg, 1).await?;
                status = 1;
            }
            Err(Failure::Fatal(msg)) => {
                super::fail(sh, io, msg, 1).await?;
                return Err(Flow::Abort(1));
            }
        }
    }
    Ok(status)
}

/// `declare -p` and `declare` with no names.
async fn print_vars(
    sh: &mut Shell,
    cmd: &str,
    names: &[String],
    flags: &Flags,
    local_only: bool,
    io: &Fds,
) -> Exec<i32> {
    let mut out = String::new();
    let mut status = 0;
    if names.is_empty() {
        let listed: Vec<String> = if local_only && cmd == "local" {
            sh.local_frames
                .last()
                .map(|f| f.iter().map(|(n, _)| n.clone()).collect())
                .unwrap_or_default()
        } else {
            let mut all: Vec<String> = sh.vars.keys().cloned().collect();
            all.sort();
            all
        };
        let filtered = flags.on.any() || flags.array || flags.assoc;
        let bytes = sh.byte_locale();
        // `local -` keeps the options in a variable named `-`, which these listings
        // show first (it sorts before every name) without a value.
        let dash = if local_only && cmd == "local" {
            sh.local_dash_here()
        } else {
            !sh.lines.local_opts.is_empty()
        };
        if dash && !filtered && (flags.print || cmd == "local") {
            out.push_str("local -\n");
        }
        for k in listed {
            let Some(v) = sh.vars.get(&k) else { continue };
            if filtered
                && !(flags.on.held_by(v)
                    && (!flags.array || matches!(v.value, Value::Array(_)))
                    && (!flags.assoc || matches!(v.value, Value::Assoc(_))))
            {
                continue;
            }
            if flags.print || filtered || cmd == "local" {
                out.push_str(&posix_listing(sh, cmd, declare_line(&k, v, bytes)));
            } else if !v.attrs.unset {
                out.push_str(&crate::shell::vars::set_line(&k, v, bytes));
            }
        }
        if !(flags.print || filtered || cmd == "local") {
            // `declare` alone lists the functions after the variables, as `set` does.
            let mut funcs: Vec<&String> = sh.functions.keys().collect();
            funcs.sort();
            for name in funcs {
                if let Some(f) = sh.functions.get(name) {
                    out.push_str(&crate::shell::printer::function(name, f));
                    out.push('\n');
                }
            }
        }
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
    }
    for n in names {
        // `RANDOM=3` stores a value, but the variable stays a computed integer.
        let computed =
            matches!(n.as_str(), "RANDOM" | "SECONDS") && !sh.unspecial.contains(n.as_str());
        match sh.vars.get(n.as_str()).filter(|_| !computed) {
            Some(v) => out.push_str(&declare_line(n, v, sh.byte_locale())),
            None if n == "-" && !sh.lines.local_opts.is_empty() => out.push_str("declare -- -\n"),
            None if n == "PIPESTATUS" || Shell::is_stack_array(n) => {
                // Arrays the shell computes when read: shown as they read now.
                let items: Vec<String> = if n == "PIPESTATUS" {
                    sh.pipestatus.iter().map(|s| s.to_string()).collect()
                } else {
                    sh.stack_array(n)
                };
                let var = Var {
                    attrs: Attrs {
                        unset: items.is_empty(),
                        ..Attrs::default()
                    },
                    value: Value::Array((0..).zip(items).collect()),
                    exported: false,
                    readonly: false,
                };
                out.push_str(&declare_line(n, &var, sh.byte_locale()));
            }
            None => match sh.dynamic_var(n) {
                Some(value) => {
                    // Variables the shell computes when read: shown as they read now,
                    // with bash's attributes for them.
                    let var = Var {
                        value: Value::Str(value),
                        exported: false,
                        readonly: crate::shell::vars::option_list_var(n),
                        attrs: Attrs {
                            integer: matches!(
                                n.as_str(),
                                "RANDOM" | "SRANDOM" | "SECONDS" | "BASHPID" | "HISTCMD"
                            ),
                            ..Attrs::default()
                        },
                    };
                    out.push_str(&declare_line(n, &var, sh.byte_locale()));
                }
                None => {
                    let _ = io.stdout().write_str(&out).await;
                    out.clear();
                    super::fail(sh, io, format!("{cmd}: {n}: not found"), 1).await?;
                    status = 1;
                }
            },
        }
    }
    let _ = io.stdout().write_str(&out).await;
    Ok(status)
}

/// A `declare -…` line as `export -p` or `readonly -p` list it in POSIX mode: their own
/// name, with only the kind of array as an option (`export -a arr=…`, `readonly x="1"`).
fn posix_listing(sh: &Shell, cmd: &str, line: String) -> String {
    if !matches!(cmd, "export" | "readonly") || !sh.opts.posix {
        return line;
    }
    let Some(rest) = line.strip_prefix("declare -") else {
        return line;
    };
    let (letters, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let kept: String = letters.chars().filter(|c| matches!(c, 'a' | 'A')).collect();
    if kept.is_empty() {
        format!("{cmd} {rest}")
    } else {
        format!("{cmd} -{kept} {rest}")
    }
}

/// `declare -fx NAME` (also `-r`, `-t`, `+x`): sets the functions' attributes instead of
/// printing them; 1 when one is not a function.
fn function_attrs(sh: &mut Shell, names: &[String], flags: &Flags) -> Exec<i32> {
    let mut status = 0;
    for n in names {
        if !sh.functions.contains_key(n) {
            status = 1;
            continue;
        }
        if flags.on.export {
            sh.exported_functions.insert(n.clone());
        }
        if flags.off.export {
            sh.exported_functions.remove(n);
        }
        if flags.on.readonly {
            sh.readonly_functions.insert(n.clone());
        }
        if flags.on.trace {
            sh.traced_functions.insert(n.clone());
        }
        if flags.off.trace {
            sh.traced_functions.remove(n);
        }
    }
    Ok(status)
}

/// `export -f` and `readonly -f` without names: each of the functions `names` that is
/// defined, as `declare -f` prints it, then its attributes as a `declare` line.
pub(crate) fn function_listing(sh: &Shell, names: &[String]) -> String {
    let mut out = String::new();
    for n in names {
        if let Some(f) = sh.functions.get(n) {
            out.push_str(&crate::shell::printer::function(n, f));
            out.push('\n');
            let flags = function_flags(sh, n);
            out.push_str(&format!("declare -{flags} {n}\n"));
        }
    }
    out
}

/// The letters `declare -F` shows for function `n`: `f`, then `r` (readonly), `t`
/// (traced) and `x` (exported) as they apply.
pub(crate) fn function_flags(sh: &Shell, n: &str) -> String {
    let mut f = String::from("f");
    if sh.readonly_functions.contains(n) {
        f.push('r');
    }
    if sh.traced_functions.contains(n) {
        f.push('t');
    }
    if sh.exported_functions.contains(n) {
        f.push('x');
    }
    f
}

/// `declare -f` / `declare -F`; with no names and attribute flags (`declare -Fx`,
/// `declare -ft`), the functions that have those attributes, each followed by them.
async fn print_functions(sh: &mut Shell, names: &[String], flags: &Flags, io: &Fds) -> Exec<i32> {
    let names_only = flags.func_names;
    let filtered = flags.on.readonly || flags.on.trace || flags.on.export;
    let with_attrs = flags.print || filtered;
    let mut out = String::new();
    let mut status = 0;
    let listed: Vec<String> = if names.is_empty() {
        let mut all: Vec<String> = sh
            .functions
            .keys()
            .filter(|n| {
                (!flags.on.readonly || sh.readonly_functions.contains(*n))
                    && (!flags.on.trace || sh.traced_functions.contains(*n))
                    && (!flags.on.export || sh.exported_functions.contains(*n))
            })
            .cloned()
            .collect();
        all.sort();
        all
    } else {
        names.to_vec()
    };
    for n in &listed {
        match sh.functions.get(n) {
            Some(_) if names_only && (names.is_empty() || flags.print) => {
                out.push_str(&format!("declare -{} {n}\n", function_flags(sh, n)));
            }
            Some(f) if names_only && sh.shopts.on("extdebug") => {
                // With extdebug: where it was defined, its line and file.
                let (base, source) = sh
                    .lines
                    .functions
                    .get(n)
                    .map_or((0, ""), |o| (o.line_base, o.source.as_str()));
                let line = brush_parser::ast::SourceLocation::location(f.as_ref())
                    .map_or(0, |l| l.start.line);
                out.push_str(&format!("{n} {} {source}\n", base + line));
            }
            Some(_) if names_only => out.push_str(&format!("{n}\n")),
            Some(f) => {
                out.push_str(&crate::shell::printer::function(n, f));
                out.push('\n');
                // `declare -pf`: a function with attributes is followed by them.
                let flags = function_flags(sh, n);
                if with_attrs && flags != "f" {
                    out.push_str(&format!("declare -{flags} {n}\n"));
                }
            }
            None => status = 1,
        }
    }
    let _ = io.stdout().write_str(&out).await;
    Ok(status)
}

/// Why one name of `declare` failed: a message after which the builtin goes on (status
/// 1), or an error that ends the script.
enum Failure {
    Message(String),
    Fatal(String),
}

/// One `name`, `name=value`, `name+=value` or `name=(…)` operand.
async fn declare_one(
    sh: &mut Shell,
    cmd: &str,
    arg: &str,
    flags: &Flags,
    local: bool,
    io: &Fds,
) -> Result<(), Failure> {
    let (lhs, value) = match arg.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (arg, None),
    };
    let (lhs, append) = match lhs.strip_suffix('+') {
        Some(l) if value.is_some() => (l, true),
        _ => (lhs, false),
    };
    let (name, subscript) = match split_subscript(lhs) {
        Some((n, s)) => (n, Some(s)),
        None => (lhs, None),
    };
    if !super::is_name(name) {
        return Err(Failure::Message(format!(
            "{cmd}: `{arg}': not a valid identifier"
        )));
    }
    if flags.on.nameref
        && value.is_none()
        && (!local || sh.is_local_here(name))
        && let Some(v) = sh.vars.get(name)
        && !v.attrs.unset
        && !v.attrs.nameref
        && let Value::Str(s) = &v.value
        && !super::is_name(split_subscript(s).map_or(s.as_str(), |(n, _)| n))
    {
        // The value a variable already has becomes the name it refers to.
        return Err(Failure::Message(format!(
            "{cmd}: `{s}': invalid variable name for name reference"
        )));
    }
    if flags.on.nameref
        && let Some(v) = value
    {
        let target = split_subscript(v).map_or(v, |(n, _)| n);
        if v.is_empty() {
            return Err(Failure::Message(format!(
                "{cmd}: `': not a valid identifier"
            )));
        }
        if !super::is_name(target) {
            return Err(Failure::Message(format!(
                "{cmd}: `{v}': invalid variable name for name reference"
            )));
        }
        if v == name {
            return Err(Failure::Message(format!(
                "{cmd}: {name}: nameref variable self references not allowed"
            )));
        }
    }
    if flags.unarray
        && sh
            .vars
            .get(name)
            .is_some_and(|v| matches!(v.value, Value::Array(_) | Value::Assoc(_)))
    {
        return Err(Failure::Message(format!(
            "{cmd}: {name}: cannot destroy array variables in this way"
        )));
    }
    if local && !sh.is_local_here(name) && sh.vars.get(name).is_some_and(|v| v.readonly) {
        // A readonly variable cannot be shadowed by a local one.
        return Err(Failure::Message(format!(
            "{cmd}: {name}: readonly variable"
        )));
    }
    if local && !sh.is_local_here(name) {
        let outer = sh.vars.get(name).cloned();
        let outer_exported = outer.as_ref().is_some_and(|o| o.exported);
        // A temporary binding of the call (`x=1 f`) is inherited, as bash does.
        let inherit = flags.inherit || sh.shopts.on("localvar_inherit") || sh.is_temp_binding(name);
        sh.make_local(name);
        sh.vars.remove(name);
        if inherit && let Some(o) = outer {
            sh.vars.insert(
                name.to_string(),
                // The value and attributes, but not what makes it a reference: the
                // local holds the name the reference held, as in bash.
                Var {
                    readonly: false,
                    attrs: Attrs {
                        nameref: false,
                        ..o.attrs
                    },
                    ..o
                },
            );
        } else if outer_exported {
            // A local of an exported variable is exported too, as in bash (the
            // environment of commands the function runs carries the local's value).
            sh.declare_unset(name, Value::Str(String::new()));
            if let Some(v) = sh.vars.get_mut(name) {
                v.exported = true;
            }
        }
    }
    // What the attributes apply to: the variable a reference names, unless it is `-n`.
    let target = if flags.on.nameref || flags.off.nameref {
        name.to_string()
    } else {
        let t = sh.resolve_ref(name).into_owned();
        if t.is_empty() {
            return Err(Failure::Message(format!(
                "{cmd}: {name}: circular name reference"
            )));
        }
        split_subscript(&t).map_or(t.clone(), |(b, _)| b.to_string())
    };
    let readonly_now = sh.vars.get(&target).is_some_and(|v| v.readonly);
    if readonly_now && (value.is_some() || flags.off.readonly) {
        // `export`/`readonly` word it as an assignment does, without their name.
        if matches!(cmd, "export" | "readonly") {
            // A special builtin's assignment error: fatal in POSIX mode.
            sh.special_failed = true;
            return Err(Failure::Message(format!("{target}: readonly variable")));
        }
        return Err(Failure::Message(format!(
            "{cmd}: {target}: readonly variable"
        )));
    }
    // The kind of value: `readonly -a x` and `export -A x` without a value leave it
    // as it is (a new variable is a plain one), as in bash.
    let existing = sh.vars.get(&target).map(|v| &v.value);
    let kinded = value.is_some() || !matches!(cmd, "readonly" | "export");
    if flags.assoc && kinded {
        match existing {
            Some(Value::Array(m)) if !m.is_empty() || value.is_none() => {
                // With a compound value bash names the command around the `declare`.
                let by = match value {
                    Some(v) if v.starts_with('(') => sh.enclosing_command(),
                    _ => Some(cmd),
                };
                let by = by.map(|c| format!("{c}: ")).unwrap_or_default();
                return Err(Failure::Message(format!(
                    "{by}{target}: cannot convert indexed to associative array"
                )));
            }
            Some(Value::Assoc(_)) => {}
            Some(Value::Str(s)) => {
                let mut m = crate::shell::AssocArray::new();
                if !sh.vars.get(&target).is_some_and(|v| v.attrs.unset) {
                    m.insert("0".into(), s.clone());
                }
                set_kind(sh, &target, Value::Assoc(m));
            }
            _ => set_kind(sh, &target, Value::Assoc(crate::shell::AssocArray::new())),
        }
    } else if flags.array && kinded {
        match existing {
            Some(Value::Assoc(_)) => {
                return Err(Failure::Message(format!(
                    "{cmd}: {target}: cannot convert associative to indexed array"
                )));
            }
            Some(Value::Array(_)) => {}
            Some(Value::Str(s)) => {
                let mut m = std::collections::BTreeMap::new();
                if !sh.vars.get(&target).is_some_and(|v| v.attrs.unset) {
                    m.insert(0, s.clone());
                }
                set_kind(sh, &target, Value::Array(m));
            }
            None => set_kind(sh, &target, Value::Array(Default::default())),
        }
    }
    if !sh.vars.contains_key(&target) && (value.is_none() || flags.on.any() || flags.off.any()) {
        sh.declare_unset(&target, Value::Str(String::new()));
    }
    if let Some(v) = sh.vars.get_mut(&target) {
        apply_flags(v, flags);
    }
    if let Some(v) = value {
        let r = if flags.on.nameref {
            sh.store_str(&target, v)
        } else if v.starts_with('(') && v.ends_with(')') && subscript.is_none() {
            compound(sh, &target, arg, append, io).await
        } else if let Some(sub) = subscript {
            let text = format!("{target}[{sub}]");
            sh.assign_str(&text, v, append)
        } else {
            sh.assign_str(&target, v, append)
        };
        r.map_err(|e| match e {
            ShellError::Readonly(n) => Failure::Message(format!("{cmd}: {n}: readonly variable")),
            // An integer variable's bad arithmetic ends the script, as in bash.
            e @ ShellError::ArithmeticAssign { .. } => Failure::Fatal(format!("{cmd}: {e}")),
            other => Failure::Message(other.to_string()),
        })?;
    }
    if flags.on.readonly
        && let Some(v) = sh.vars.get_mut(&target)
    {
        v.readonly = true;
    }
    if matches!(cmd, "export" | "readonly") && (flags.on.export || flags.on.readonly) {
        sh.propagate_temp(&target);
    }
    if flags.assoc && flags.array && kinded {
        // `-aA`: bash makes it associative, then refuses to make that indexed.
        return Err(Failure::Message(format!(
            "{cmd}: {target}: cannot convert associative to indexed array"
        )));
    }
    Ok(())
}

/// Gives `name` a value of a new kind, keeping its flags (or declaring it without value).
fn set_kind(sh: &mut Shell, name: &str, value: Value) {
    match sh.vars.get_mut(name) {
        Some(v) => v.value = value,
        None => sh.declare_unset(name, value),
    }
}

fn apply_flags(v: &mut Var, flags: &Flags) {
    let a: &mut Attrs = &mut v.attrs;
    let (on, off) = (flags.on, flags.off);
    if on.integer {
        a.integer = true;
    }
    if off.integer {
        a.integer = false;
    }
    // `-l`, `-u` and `-c` exclude one another; asked for together, none stays.
    match (on.lower, on.upper, on.capcase) {
        (false, false, false) => {}
        (l, u, c) if u8::from(l) + u8::from(u) + u8::from(c) > 1 => {
            (a.lower, a.upper, a.capcase) = (false, false, false);
        }
        (l, u, c) => (a.lower, a.upper, a.capcase) = (l, u, c),
    }
    if off.lower {
        a.lower = false;
    }
    if off.upper {
        a.upper = false;
    }
    if off.capcase {
        a.capcase = false;
    }
    if on.nameref {
        a.nameref = true;
    }
    if off.nameref {
        a.nameref = false;
    }
    if on.trace {
        a.trace = true;
    }
    if off.trace {
        a.trace = false;
    }
    if on.export {
        v.exported = true;
    }
    if off.export {
        v.exported = false;
    }
}

/// `declare a=(…)`: the operand is parsed as the assignment it reads as.
async fn compound(
    sh: &mut Shell,
    name: &str,
    arg: &str,
    append: bool,
    io: &Fds,
) -> Result<(), ShellError> {
    let eq = arg.find('=').unwrap_or(0);
    let text = format!("{name}{}{}", if append { "+" } else { "" }, &arg[eq..]);
    let program = crate::shell::parse_program(&text)?;
    let assignment = first_assignment(&program)
        .ok_or_else(|| ShellError::Builtin(format!("{name}: bad array assignment")))?;
    if let (
        brush_parser::ast::AssignmentName::VariableName(n),
        brush_parser::ast::AssignmentValue::Array(elems),
    ) = (&assignment.name, &assignment.value)
    {
        let elems: Vec<_> = elems
            .iter()
            .map(|(k, v)| (k.as_ref().map(|k| k.value.as_str()), v))
            .collect();
        return sh
            .assign_compound(n, &elems, assignment.append, true, io)
            .await;
    }
    sh.assign(&assignment, io).await
}

fn first_assignment(p: &brush_parser::ast::Program) -> Option<brush_parser::ast::Assignment> {
    use brush_parser::ast::{Command, CommandPrefixOrSuffixItem};
    let list = p.complete_commands.first()?;
    let item = list.0.first()?;
    let pipeline = &item.0.first.seq;
    let Command::Simple(sc) = pipeline.first()? else {
        return None;
    };
    sc.prefix.as_ref()?.0.iter().find_map(|i| match i {
        CommandPrefixOrSuffixItem::AssignmentWord(a, _) => Some(a.clone()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::{raw_var, run, run_on, shell, var};

    #[tokio::test]
    async fn declare_p_scalar() {
        let script = "x=1; declare -p x";
        let expected = (0, "declare -- x=\"1\"\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_p_quotes_value() {
        let script = "x='a b\"c'; declare -p x";
        let expected = (0, "declare -- x=\"a b\\\"c\"\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_p_indexed_array() {
        let script = "a=(x 'y z'); declare -p a";
        let expected = (
            0,
            "declare -a a=([0]=\"x\" [1]=\"y z\")\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_p_assoc_array() {
        let script = "declare -A m=([k]=v); declare -p m";
        let expected = (0, "declare -A m=([k]=\"v\" )\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_p_integer_export_readonly() {
        let script = "declare -ixr n=5; declare -p n";
        let expected = (0, "declare -irx n=\"5\"\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_p_declared_unset() {
        let script = "declare x; declare -p x";
        let expected = (0, "declare -- x\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_p_missing() {
        let script = "declare -p nope; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: declare: nope: not found\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_p_lower_upper() {
        let script = "declare -l lo=AbC; declare -u up=aBc; declare -p lo up";
        let expected = (
            0,
            "declare -l lo=\"abc\"\ndeclare -u up=\"ABC\"\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_i_evaluates_arithmetic() {
        let script = "declare -i n; n=2+3; echo $n; n+=4; echo $n";
        let expected = (0, "5\n9\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_l_lowercases() {
        let script = "declare -l v; v=HeLLo; echo $v";
        let expected = (0, "hello\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_u_uppercases() {
        let script = "declare -u v; v=HeLLo; echo $v";
        let expected = (0, "HELLO\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_r_blocks_assignment() {
        let script = "declare -r c=1; c=2; echo $? $c";
        let expected = (
            1,
            "".to_string(),
            "bash: line 1: c: readonly variable\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_r_blocks_unset() {
        let script = "declare -r c=1; unset c; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: unset: c: cannot unset: readonly variable\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_plus_r_on_readonly_fails() {
        let script = "declare -r c=1; declare +r c; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: declare: c: readonly variable\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_n_is_a_reference() {
        let script = "t=1; declare -n r=t; r=2; echo $t; echo $r";
        let expected = (0, "2\n2\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_n_p() {
        let script = "declare -n r=t; declare -p r";
        let expected = (0, "declare -n r=\"t\"\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_a_array_append() {
        let script = "declare -a a=(1 2); a+=(3); echo ${a[@]} ${#a[@]}";
        let expected = (0, "1 2 3 3\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_upper_a_keys() {
        let script = "declare -A m; m[x]=1; m[y]=2; echo ${m[x]} ${m[y]} ${#m[@]}";
        let expected = (0, "1 2 2\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_in_function_is_local() {
        let script = "f() { declare x=in; echo $x; }; x=out; f; echo $x";
        let expected = (0, "in\nout\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_g_in_function_is_global() {
        let script = "f() { declare -g x=in; }; x=out; f; echo $x";
        let expected = (0, "in\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_g_under_a_local_sets_the_global_and_keeps_the_local() {
        let script =
            "f() { local x=l; g; echo \"f:$x\"; }; g() { declare -g x=G; }; x=o; f; echo $x";
        let expected = (0, "f:l\nG\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_plus_x_unexports() {
        let script = "export e=1; declare +x e; declare -p e";
        let expected = (0, "declare -- e=\"1\"\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_x_exports_to_children() {
        let script = "declare -x e=1; env | grep '^e='";
        let expected = (0, "e=1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_f_prints_function() {
        let script = "f() { echo hi; }; declare -f f";
        let expected = (0, "f () \n{ \n    echo hi\n}\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_upper_f_lists_names() {
        let script = "f() { :; }; g() { :; }; declare -F";
        let expected = (
            0,
            "declare -f f\ndeclare -f g\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_f_missing_fails() {
        let script = "declare -f nope; echo $?";
        let expected = (0, "1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_bad_option() {
        let script = "declare -z x; echo $?";
        let expected = (0, "2\n".to_string(), "bash: line 1: declare: -z: invalid option\ndeclare: usage: declare [-aAfFgiIlnrtux] [name[=value] ...] or declare -p [-aAfFilnrtux] [name ...]\n".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_invalid_identifier() {
        let script = "declare 1x=2; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: declare: `1x=2': not a valid identifier\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_array_to_assoc_fails() {
        let script = "declare -a a=(1); declare -A a; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: declare: a: cannot convert indexed to associative array\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_typeset_alias() {
        let script = "typeset -i n=3*3; echo $n";
        let expected = (0, "9\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_p_lists_by_attribute() {
        let script = "declare -ri q=1; declare -r | grep ' q='";
        let expected = (0, "declare -ir q=\"1\"\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_plus_i_stops_arithmetic() {
        let script = "declare -i n=1; declare +i n; n=1+1; echo $n";
        let expected = (0, "1+1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_i_bad_expression() {
        let script = "declare -i n; n='1+'; echo $? $n";
        let expected = (
            1,
            "".to_string(),
            "bash: line 1: 1+: syntax error: operand expected (error token is \"+\")\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn declare_leaves_attributes_in_the_shell() {
        let mut sh = shell();
        let script = "declare -i n=2*3; declare -r r=x; declare -ax a=(1); f() { declare -g G=1; declare L=2; }; f";
        assert_eq!(
            run_on(&mut sh, script).await,
            (0, String::new(), String::new())
        );
        assert_eq!(var(&sh, "n").as_deref(), Some("6"));
        assert!(raw_var(&sh, "n").is_some_and(|v| v.attrs.integer && !v.readonly));
        assert!(raw_var(&sh, "r").is_some_and(|v| v.readonly));
        assert!(raw_var(&sh, "a").is_some_and(|v| v.exported));
        assert_eq!(var(&sh, "G").as_deref(), Some("1"));
        assert_eq!(var(&sh, "L"), None);
    }

    #[tokio::test]
    async fn declare_nameref_resolves_through_var() {
        let mut sh = shell();
        run_on(&mut sh, "t=1; declare -n r=t; r=5").await;
        assert_eq!(var(&sh, "t").as_deref(), Some("5"));
        assert_eq!(var(&sh, "r").as_deref(), Some("5"));
        assert!(raw_var(&sh, "r").is_some_and(|v| v.attrs.nameref));
    }
}

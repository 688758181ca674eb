//! `compgen` (generate completions) and `complete` (store completion specifications).
//!
//! forkbox's terminal completes names and paths on its own; `complete` keeps the
//! specifications a script declares so that `complete -p` shows them as bash does.

use std::collections::BTreeMap;

use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;
use crate::shell::{Shell, ShellError, Value};

/// Stored completion specifications: command name → its options in bash's order.
pub(crate) type Completions = BTreeMap<String, Vec<(char, String)>>;

/// The order `complete -p` prints options in.
const ORDER: &str = "oabcdefgjksuvAGWXPSFC";

/// Options taking a value.
const VALUED: &str = "oAGWXPSFC";

/// Parses compgen/complete options; the rest are the operands. `Err` names a bad option.
/// Options with their values, then the operands.
type Parsed = (Vec<(char, String)>, Vec<String>);

/// A bad option: its message, and whether bash adds the usage line (not for a bad `-A`
/// action or `-o` option name).
type BadOpt = (String, bool);

/// The names `-o` takes.
const COMP_OPTIONS: &[&str] = &[
    "bashdefault",
    "default",
    "dirnames",
    "filenames",
    "noquote",
    "nosort",
    "nospace",
    "plusdirs",
];

fn parse_opts(args: &[String], extra: &str) -> Result<Parsed, BadOpt> {
    let mut opts = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        for (at, c) in a[1..].char_indices() {
            if VALUED.contains(c) {
                let rest = &a[1 + at + 1..];
                let v = if !rest.is_empty() {
                    rest.to_string()
                } else {
                    i += 1;
                    args.get(i)
                        .cloned()
                        .ok_or_else(|| (format!("-{c}: option requires an argument"), true))?
                };
                if c == 'A' && !ACTION_ORDER.contains(&v.as_str()) {
                    return Err((format!("{v}: invalid action name"), false));
                }
                if c == 'o' && !COMP_OPTIONS.contains(&v.as_str()) {
                    return Err((format!("{v}: invalid option name"), false));
                }
                opts.push((c, v));
                break;
            } else if ORDER.contains(c) || extra.contains(c) {
                opts.push((c, String::new()));
            } else {
                return Err((format!("-{c}: invalid option"), true));
            }
        }
        i += 1;
    }
    Ok((opts, args[i..].to_vec()))
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The letter bash prints for an `-A` action that has one (`-A file` is `-f`).
fn action_letter(action: &str) -> Option<char> {
    Some(match action {
        "alias" => 'a',
        "builtin" => 'b',
        "command" => 'c',
        "directory" => 'd',
        "export" => 'e',
        "file" => 'f',
        "group" => 'g',
        "job" => 'j',
        "keyword" => 'k',
        "service" => 's',
        "user" => 'u',
        "variable" => 'v',
        _ => return None,
    })
}

/// The keys under which `complete -D`, `-E` and `-I` keep their specifications (no
/// command is named so).
const SPECIAL_SPECS: [(&str, char); 3] = [("\0D", 'D'), ("\0E", 'E'), ("\0I", 'I')];

/// How bash names the specification kept under `key` in its messages (`-D`, `-E` and
/// `-I` have names of their own).
fn spec_name(key: &str) -> &str {
    match key {
        "\0D" => "_DefaultCmD_",
        "\0E" => "_EmptycmD_",
        "\0I" => "_InitialWorD_",
        k => k,
    }
}

fn spec_line(name: &str, opts: &[(char, String)]) -> String {
    let mut opts: Vec<(char, String)> = opts
        .iter()
        .map(|(c, v)| match action_letter(v).filter(|_| *c == 'A') {
            Some(l) => (l, String::new()),
            None => (*c, v.clone()),
        })
        .collect();
    opts.sort_by_key(|(c, _)| ORDER.find(*c).unwrap_or(usize::MAX));
    let mut out = String::from("complete");
    for (c, v) in &opts {
        match c {
            'o' | 'A' | 'F' => out.push_str(&format!(" -{c} {v}")),
            c if VALUED.contains(*c) => out.push_str(&format!(" -{c} {}", quote(v))),
            c => out.push_str(&format!(" -{c}")),
        }
    }
    match SPECIAL_SPECS.iter().find(|(k, _)| *k == name) {
        Some((_, flag)) => format!("{out} -{flag}\n"),
        None => format!("{out} {name}\n"),
    }
}

pub(crate) async fn complete(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let (opts, names) = match parse_opts(&args, "prDEI") {
        Ok(x) => x,
        Err((e, false)) => return super::fail(sh, io, format!("complete: {e}"), 2).await,
        Err((e, true)) => {
            let msg = format!(
                "complete: {e}\ncomplete: usage: complete [-abcdefgjksuv] [-pr] [-DEI] [-o option] [-A action] [-G globpat] [-W wordlist] [-F function] [-C command] [-X filterpat] [-P prefix] [-S suffix] [name ...]"
            );
            return super::fail(sh, io, msg, 2).await;
        }
    };
    let has = |f: char| opts.iter().any(|(c, _)| *c == f);
    let (remove, print) = (has('r'), has('p'));
    // `-D`, `-E`, `-I`: the default, empty-line and initial-word specifications.
    let mut names = names;
    for (key, flag) in SPECIAL_SPECS {
        if has(flag) {
            names.push(key.to_string());
        }
    }
    if remove {
        if names.is_empty() {
            sh.completions.clear();
        }
        let mut status = 0;
        for n in &names {
            if sh.completions.remove(n).is_none() {
                super::fail(
                    sh,
                    io,
                    format!("complete: {}: no completion specification", spec_name(n)),
                    1,
                )
                .await?;
                status = 1;
            }
        }
        return Ok(status);
    }
    let spec: Vec<(char, String)> = opts
        .into_iter()
        .filter(|(c, _)| !"prDEI".contains(*c))
        .collect();
    if print || (spec.is_empty() && names.is_empty()) {
        let mut out = String::new();
        let mut status = 0;
        if names.is_empty() {
            for (n, s) in &sh.completions {
                out.push_str(&spec_line(n, s));
            }
        }
        for n in &names {
            match sh.completions.get(n) {
                Some(s) => out.push_str(&spec_line(n, s)),
                None => {
                    let _ = io.stdout().write_str(&std::mem::take(&mut out)).await;
                    super::fail(
                        sh,
                        io,
                        format!("complete: {}: no completion specification", spec_name(n)),
                        1,
                    )
                    .await?;
                    status = 1;
                }
            }
        }
        let _ = io.stdout().write_str(&out).await;
        return Ok(status);
    }
    if names.is_empty() {
        // A specification for no command: bash shows its usage.
        return super::usage(io, "complete").await;
    }
    for n in names {
        sh.completions.insert(n, spec.clone());
    }
    Ok(0)
}

/// `compopt [-o|+o OPTION] [-DEI] [NAME ...]`: changes the `-o` options of stored
/// specifications. Without a name it would change the running completion's, and no
/// completion function ever runs in a script.
pub(crate) async fn compopt(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut on: Vec<String> = Vec::new();
    let mut off: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-o" | "+o" => {
                let Some(v) = args.get(i + 1) else {
                    let msg = format!("compopt: {a}: option requires an argument");
                    super::fail(sh, io, msg, 2).await?;
                    return super::usage(io, "compopt").await;
                };
                if !COMP_OPTIONS.contains(&v.as_str()) {
                    return super::fail(sh, io, format!("compopt: {v}: invalid option name"), 2)
                        .await;
                }
                if a == "-o" {
                    on.push(v.clone());
                } else {
                    off.push(v.clone());
                }
                i += 2;
                continue;
            }
            "-D" | "-E" | "-I" => {
                let flag = a.chars().nth(1).unwrap_or('D');
                if let Some((k, _)) = SPECIAL_SPECS.iter().find(|(_, f)| *f == flag) {
                    names.push((*k).to_string());
                }
            }
            "--" => {
                names.extend(args[i + 1..].iter().cloned());
                break;
            }
            _ if a.starts_with('-') && a.len() > 1 => {
                let msg = format!("compopt: {}: invalid option", &a[..2]);
                super::fail(sh, io, msg, 2).await?;
                return super::usage(io, "compopt").await;
            }
            _ => names.push(a.to_string()),
        }
        i += 1;
    }
    if names.is_empty() {
        let msg = "compopt: not currently executing completion function".to_string();
        return super::fail(sh, io, msg, 1).await;
    }
    let mut status = 0;
    for n in names {
        let Some(spec) = sh.completions.get_mut(&n) else {
            let msg = format!("compopt: {n}: no completion specification");
            status = super::fail(sh, io, msg, 1).await?;
            continue;
        };
        spec.retain(|(c, v)| !(*c == 'o' && (on.contains(v) || off.contains(v))));
        spec.extend(on.iter().map(|v| ('o', v.clone())));
    }
    Ok(status)
}

pub(crate) async fn compgen(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let (opts, words) = match parse_opts(&args, "") {
        Ok(x) => x,
        Err((e, false)) => return super::fail(sh, io, format!("compgen: {e}"), 2).await,
        Err((e, true)) => {
            let msg = format!(
                "compgen: {e}\ncompgen: usage: compgen [-abcdefgjksuv] [-o option] [-A action] [-G globpat] [-W wordlist] [-F function] [-C command] [-X filterpat] [-P prefix] [-S suffix] [word]"
            );
            return super::fail(sh, io, msg, 2).await;
        }
    };
    let word = words.first().cloned().unwrap_or_default();
    let (mut prefix, mut suffix) = (String::new(), String::new());
    let mut filter: Option<String> = None;
    let (mut function, mut command): (Option<String>, Option<String>) = (None, None);
    let mut actions: Vec<&str> = Vec::new();
    let (mut globbed, mut listed) = (Vec::new(), Vec::new());
    for (c, v) in &opts {
        let action = match c {
            'A' => v.as_str(),
            'a' => "alias",
            'b' => "builtin",
            'c' => "command",
            'd' => "directory",
            'e' => "export",
            'f' => "file",
            'j' => "job",
            'k' => "keyword",
            'v' => "variable",
            'P' => {
                prefix = v.clone();
                continue;
            }
            'S' => {
                suffix = v.clone();
                continue;
            }
            'W' => {
                // The word list is split at IFS (quotes kept together), then each word
                // is expanded as a word of a command is.
                let ifs = sh.get_str("IFS").unwrap_or_else(|| " \t\n".into());
                for w in split_words(v, &ifs) {
                    let fields = match sh.expand_fields(&w, io).await {
                        Ok(f) => f,
                        Err(e) => return sh.fail(e, io).await,
                    };
                    listed.extend(fields.into_iter().filter(|f| f.starts_with(word.as_str())));
                }
                continue;
            }
            'G' => {
                globbed.extend(sh.glob(v).await);
                continue;
            }
            'X' => {
                filter = Some(v.clone());
                continue;
            }
            'F' => {
                function = Some(v.clone());
                continue;
            }
            'C' => {
                command = Some(v.clone());
                continue;
            }
            _ => continue,
        };
        actions.push(action);
    }
    // bash keeps the actions as a set and generates them in its own order, then the
    // glob's matches, then the word list's.
    let mut found: Vec<String> = Vec::new();
    for action in ACTION_ORDER.iter().filter(|a| actions.contains(a)) {
        found.extend(generate(sh, action, &word).await);
    }
    found.extend(globbed);
    found.extend(listed);
    if let Some(f) = function {
        match completion_function(sh, &f, &word, io).await? {
            Some(words) => found.extend(words),
            None => {
                let msg = format!("completion: function `{f}' not found");
                sh.report(&io.stderr(), &ShellError::Builtin(msg)).await;
            }
        }
    }
    if let Some(c) = command {
        warn_outside_completion(sh, 'C', io).await;
        // Run as bash runs it: the command, then the command name, the word and the
        // word before it (none here), quoted; each line of its output is a match.
        let text = format!(
            "{c} compgen {} ''",
            crate::shell::vars::single_quote(&word, false)
        );
        match sh.command_substitution(&text, io).await {
            Ok(out) => found.extend(out.lines().filter(|l| !l.is_empty()).map(String::from)),
            Err(e) => return sh.fail(e, io).await,
        }
    }
    if let Some(f) = filter {
        // `-X PAT` drops the matches of PAT (`!PAT`: keeps only them); `&` is the word.
        let (keep, pat) = match f.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, f.as_str()),
        };
        let pat = replace_ampersand(pat, &word);
        let pattern = sh.pattern(&pat, false);
        found.retain(|n| pattern.matches(n) == keep);
    }
    let mut found: Vec<String> = found
        .iter()
        .map(|w| format!("{prefix}{w}{suffix}"))
        .collect();
    // `-o dirnames`: directories when nothing else matched; `-o plusdirs`: directories
    // besides; `-o default`: file names when still nothing matched.
    let has_option = |name: &str| opts.iter().any(|(c, v)| *c == 'o' && v == name);
    if found.is_empty() && has_option("dirnames") {
        found = generate(sh, "directory", &word).await;
    }
    if has_option("plusdirs") {
        found.extend(generate(sh, "directory", &word).await);
    }
    if found.is_empty() && has_option("default") {
        found = generate(sh, "file", &word).await;
    }
    if found.is_empty() {
        // Nothing asked for at all is no failure.
        return Ok(i32::from(!opts.is_empty()));
    }
    let out: String = found.iter().map(|w| format!("{w}\n")).collect();
    let _ = io.stdout().write_str(&out).await;
    Ok(0)
}

/// bash's warning that `compgen -F`/`-C` run outside a completion.
async fn warn_outside_completion(sh: &Shell, opt: char, io: &Fds) {
    let msg = format!("compgen: warning: -{opt} option may not work as you expect");
    sh.report(&io.stderr(), &ShellError::Builtin(msg)).await;
}

/// `compgen -F FUNCTION`: runs the function as bash does outside a completion (with the
/// command name `compgen`, the word and an empty previous word) and takes `COMPREPLY`;
/// `None` when there is no such function.
async fn completion_function(
    sh: &mut Shell,
    function: &str,
    word: &str,
    io: &Fds,
) -> Exec<Option<Vec<String>>> {
    warn_outside_completion(sh, 'F', io).await;
    if !sh.functions.contains_key(function) {
        return Ok(None);
    }
    let _ = sh.unset_var("COMPREPLY");
    let argv = [function, "compgen", word, ""].map(String::from).to_vec();
    sh.run_command(argv, Vec::new(), io).await?;
    let words = match sh.vars.get("COMPREPLY").map(|v| &v.value) {
        Some(Value::Array(a)) => a.values().cloned().collect(),
        Some(Value::Str(s)) => vec![s.clone()],
        _ => Vec::new(),
    };
    let _ = sh.unset_var("COMPREPLY");
    Ok(Some(words))
}

/// A `-W` word list split at the characters of `ifs`, quoted parts kept whole (their
/// quotes too, for the expansion after).
fn split_words(list: &str, ifs: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    // Open `$(`/`${` (and parentheses or braces inside them), and whether a backquoted
    // substitution is open: no word ends inside one.
    let mut depth = 0usize;
    let mut backquoted = false;
    let mut chars = list.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\\') | (Some('"'), '\\') => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            (None | Some('"'), '$') if matches!(chars.peek(), Some('(' | '{')) => {
                cur.push(c);
                cur.extend(chars.next());
                depth += 1;
            }
            (None | Some('"'), '(' | '{') if depth > 0 => {
                depth += 1;
                cur.push(c);
            }
            (None | Some('"'), ')' | '}') if depth > 0 => {
                depth -= 1;
                cur.push(c);
            }
            (None, '`') => {
                backquoted = !backquoted;
                cur.push(c);
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (None, c) if ifs.contains(c) && depth == 0 && !backquoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A `-X` pattern with each unescaped `&` replaced by the word being completed.
fn replace_ampersand(pat: &str, word: &str) -> String {
    let mut out = String::new();
    let mut chars = pat.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('&') => out.push('&'),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            },
            '&' => out.push_str(&crate::shell::pattern::escape(word)),
            c => out.push(c),
        }
    }
    out
}

/// The actions in the order bash generates them, whatever order they were given in.
const ACTION_ORDER: &[&str] = &[
    "alias",
    "arrayvar",
    "binding",
    "builtin",
    "command",
    "directory",
    "disabled",
    "enabled",
    "export",
    "file",
    "function",
    "group",
    "helptopic",
    "hostname",
    "job",
    "keyword",
    "running",
    "service",
    "setopt",
    "shopt",
    "signal",
    "stopped",
    "user",
    "variable",
];

/// The topics of bash's `help` besides its builtins (`compgen -A helptopic` lists them
/// all, sorted).
const HELP_TOPICS: &[&str] = &[
    "%",
    "(( ... ))",
    "[[ ... ]]",
    "case",
    "coproc",
    "for",
    "for ((",
    "function",
    "if",
    "select",
    "time",
    "until",
    "variables",
    "while",
    "{ ... }",
];

/// The names of one `-A` action that start with `word`.
async fn generate(sh: &Shell, action: &str, word: &str) -> Vec<String> {
    let mut names: Vec<String> = match action {
        // bash's table of trap conditions: EXIT, every signal number (32 and 33 by
        // placeholder names), then its own conditions.
        "signal" => std::iter::once("EXIT".to_string())
            .chain((1..=64).map(|n| match crate::shell::jobs::signal_name(n) {
                Some(name) => format!("SIG{name}"),
                None => format!("SIGJUNK({n})"),
            }))
            .chain(["DEBUG", "ERR", "RETURN"].map(String::from))
            .collect(),
        "shopt" => super::shopt::SHOPTS
            .iter()
            .map(|(n, _)| (*n).to_string())
            .collect(),
        "setopt" => super::set::OPTIONS
            .iter()
            .map(|(n, _, _)| (*n).to_string())
            .collect(),
        "arrayvar" => {
            let mut v: Vec<String> = sh
                .vars
                .iter()
                .filter(|(_, v)| {
                    !v.attrs.unset
                        && matches!(
                            v.value,
                            crate::shell::Value::Array(_) | crate::shell::Value::Assoc(_)
                        )
                })
                .map(|(k, _)| k.clone())
                .collect();
            v.sort();
            v
        }
        "helptopic" => {
            let mut topics: Vec<String> = crate::registry::BASH_BUILTIN_NAMES
                .iter()
                .chain(HELP_TOPICS)
                .map(|t| t.to_string())
                .collect();
            topics.sort();
            topics
        }
        "alias" => sh.aliases.keys().cloned().collect(),
        // A job by the first word of its command; none is ever stopped.
        "job" | "running" => sh
            .jobs
            .visible()
            .iter()
            .filter_map(|j| j.text.split_whitespace().next().map(String::from))
            .collect(),
        // bash's builtins, whether `enable -n` turned them off or not; or those on; or
        // those off.
        "builtin" | "enabled" | "disabled" => crate::registry::BASH_BUILTIN_NAMES
            .iter()
            .filter(|n| match action {
                "enabled" => !sh.disabled_builtins.contains(**n),
                "disabled" => sh.disabled_builtins.contains(**n),
                _ => true,
            })
            .map(|n| n.to_string())
            .collect(),
        "keyword" => super::type_::KEYWORDS
            .iter()
            .map(|k| k.to_string())
            .collect(),
        "function" => {
            let mut f: Vec<String> = sh.functions.keys().cloned().collect();
            f.sort();
            f
        }
        "variable" | "export" => {
            let mut v: Vec<String> = sh
                .vars
                .iter()
                // A variable declared without a value is not set: not listed.
                .filter(|(_, v)| !v.attrs.unset && (action == "variable" || v.exported))
                .map(|(k, _)| k.clone())
                .collect();
            v.sort();
            v
        }
        "command" => {
            let mut c: Vec<String> = sh.aliases.keys().cloned().collect();
            c.extend(crate::registry::BUILTINS.iter().map(|(n, _)| n.to_string()));
            c.extend(sh.functions.keys().cloned());
            c.extend(super::type_::KEYWORDS.iter().map(|k| k.to_string()));
            c.extend(sh.registry.infos().into_iter().map(|i| i.name));
            c.dedup();
            c
        }
        "file" | "directory" => {
            let (dir, base) = match word.rfind('/') {
                Some(i) => (&word[..=i], &word[i + 1..]),
                None => ("", word),
            };
            let path = forkbox_commands::fs::join(&sh.cwd, if dir.is_empty() { "." } else { dir });
            // As readline's filename completion: hidden names match too, and `.` and
            // `..` match a word they start with (never the empty word).
            let mut out: Vec<String> = [".", ".."]
                .iter()
                .filter(|d| !base.is_empty() && d.starts_with(base))
                .map(|d| format!("{dir}{d}"))
                .collect();
            if let Ok(mut entries) = sh.fs.read_dir(&path).await {
                entries.sort_by(|a, b| a.name.cmp(&b.name));
                for e in entries {
                    if !e.name.starts_with(base) {
                        continue;
                    }
                    let child = forkbox_commands::fs::join(&path, &e.name);
                    let is_dir = matches!(sh.fs.stat(&child).await, Ok(m) if m.is_dir());
                    if action == "file" || is_dir {
                        out.push(format!("{dir}{}", e.name));
                    }
                }
            }
            return out;
        }
        _ => Vec::new(),
    };
    names.retain(|n| n.starts_with(word));
    names
}

/// Most names one Tab lists from a directory: a huge directory costs one bounded listing.
const MAX_PATH_CANDIDATES: usize = 10_000;

/// What the interactive terminal's Tab asks of the shell.
impl Shell {
    /// Command names (aliases, builtins, functions, keywords, native and WASI commands)
    /// starting with `prefix`, sorted, each once: what `compgen -c` gives.
    pub async fn command_candidates(&self, prefix: &str) -> Vec<String> {
        let mut names = generate(self, "command", prefix).await;
        names.sort();
        names.dedup();
        names
    }

    /// Shell variable names starting with `prefix`, sorted.
    pub async fn variable_candidates(&self, prefix: &str) -> Vec<String> {
        generate(self, "variable", prefix).await
    }

    /// Paths completing `word` as typed (relative to the working directory; a leading
    /// `~` stands for `$HOME` but stays in the names), each with whether it is a
    /// directory; dot files only when the typed name starts with a dot.
    pub async fn path_candidates(&self, word: &str) -> Vec<(String, bool)> {
        let (dir, base) = match word.rfind('/') {
            Some(i) => (&word[..=i], &word[i + 1..]),
            None => ("", word),
        };
        let lookup = match dir.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                format!("{}{rest}", self.get_str("HOME").unwrap_or_default())
            }
            _ if dir.is_empty() => ".".to_string(),
            _ => dir.to_string(),
        };
        let path = forkbox_commands::fs::join(&self.cwd, &lookup);
        let Ok(mut entries) = self.fs.read_dir(&path).await else {
            return Vec::new();
        };
        entries.retain(|e| {
            e.name.starts_with(base) && (base.starts_with('.') || !e.name.starts_with('.'))
        });
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        entries.truncate(MAX_PATH_CANDIDATES);
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            let is_dir = e.meta.is_dir()
                || (e.meta.is_symlink()
                    && matches!(
                        self.fs.stat(&forkbox_commands::fs::join(&path, &e.name)).await,
                        Ok(m) if m.is_dir()
                    ));
            out.push((format!("{dir}{}", e.name), is_dir));
        }
        out
    }

    /// Sets `$COLUMNS` and `$LINES` to the terminal's size (bash's `checkwinsize`).
    pub fn set_terminal_size(&mut self, size: forkbox_commands::TermSize) {
        self.set_plain("COLUMNS", &size.cols.to_string());
        self.set_plain("LINES", &size.rows.to_string());
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn compgen_words() {
        let script = "compgen -W 'alpha beta alps' al";
        let expected = (0, "alpha\nalps\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn compgen_variables() {
        let script = "abc1=1 abc2=2; compgen -v abc";
        let expected = (0, "abc1\nabc2\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn compgen_functions() {
        let script = "fa() { :; }; fb() { :; }; compgen -A function f";
        let expected = (0, "fa\nfb\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn compgen_no_match_fails() {
        let script = "compgen -W 'a b' z; echo $?";
        let expected = (0, "1\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn compgen_bad_option() {
        let script = "compgen -Z; echo $?";
        let expected = (0, "2\n".to_string(), "bash: line 1: compgen: -Z: invalid option\ncompgen: usage: compgen [-abcdefgjksuv] [-o option] [-A action] [-G globpat] [-W wordlist] [-F function] [-C command] [-X filterpat] [-P prefix] [-S suffix] [word]\n".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn complete_stores_and_prints() {
        let script =
            "complete -W 'x y' cmd; complete -p cmd; complete -r cmd; complete -p cmd; echo $?";
        let expected = (
            0,
            "complete -W 'x y' cmd\n1\n".to_string(),
            "bash: line 1: complete: cmd: no completion specification\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn complete_f_option() {
        let script = "complete -f foo; complete -p";
        let expected = (0, "complete -f foo\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}
